package mcpserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// routingCorpus is what agents send to exec, with the backend that runs
// each correctly at the least cost: the in-process shell when it has every
// command, js for an ES module, the container for real binaries (git,
// builds, package managers, interpreters). bash marks the commands whose
// shell output must be bash's, byte for byte, on the same tree.
var routingCorpus = []struct {
	backend string
	bash    bool
	cmd     string
}{
	// Looking at files.
	{"shell", true, "cat README.md"},
	{"shell", true, "head -n 5 src/main.go"},
	{"shell", true, "tail -n 3 logs/app.log"},
	{"shell", true, "wc -l src/*.go"},
	{"shell", true, "ls"},
	{"shell", true, "ls -1 src"},
	{"shell", false, "ls -la"},
	{"shell", true, "find . -name '*.go' | sort"},
	{"shell", true, "find src -type f | sort"},
	{"shell", true, "find . -name '*.txt' -o -name '*.md' | sort"},
	{"shell", false, "du -sh ."},
	{"shell", false, "stat src/main.go"},
	{"shell", true, "basename src/main.go .go"},
	{"shell", true, "dirname src/main.go"},
	{"shell", false, "realpath src/../README.md"}, // a workspace path: /README.md
	{"shell", true, "test -f README.md && echo yes || echo no"},
	{"shell", true, "[ -d src ] && echo dir"},
	{"shell", false, "pwd"}, // a workspace path: /
	// Searching.
	{"shell", true, "grep -rn TODO . | sort"},
	{"shell", true, "grep -rl 'func ' src | sort"},
	{"shell", true, "grep -c TODO notes.txt"},
	{"shell", true, "grep -i error logs/app.log"},
	{"shell", true, "grep -v '^#' notes.txt"},
	{"shell", true, "grep -E 'WARN|ERROR' logs/app.log | wc -l"},
	{"shell", true, "grep -o '[0-9]\\+ms' logs/app.log"},
	{"shell", true, "grep -rn --include='*.go' 'fmt\\.' . | sort"},
	{"shell", true, "grep -A1 -n TODO notes.txt"},
	{"shell", true, "grep -rh TODO . | sort | uniq -c | sort -rn"},
	// Text work.
	{"shell", true, "sort data.csv"},
	{"shell", true, "sort -t, -k2 -n data.csv"},
	{"shell", true, "cut -d, -f1 data.csv"},
	{"shell", true, "cut -d, -f2 data.csv | sort -n | tail -1"},
	{"shell", true, "awk -F, '{s+=$2} END {print s}' data.csv"},
	{"shell", true, "awk -F, 'NR>1 {print $1}' data.csv"},
	{"shell", true, "awk '{print NR\": \"$0}' notes.txt"},
	{"shell", true, "sed -n '2,3p' notes.txt"},
	{"shell", true, "sed 's/TODO/DONE/g' notes.txt"},
	{"shell", true, "tr a-z A-Z < notes.txt"},
	{"shell", true, "tr -d ',' < data.csv"},
	{"shell", true, "uniq -c logs/app.log | sort -rn | head -3"},
	{"shell", true, "sort -u logs/app.log | wc -l"},
	{"shell", true, "paste -d: data.csv data.csv | head -2"},
	{"shell", true, "seq 1 5"},
	{"shell", true, "seq 10 | xargs -n 3 echo"},
	{"shell", true, "printf '%s\\n' b a c | sort"},
	{"shell", true, "echo hello | base64"},
	{"shell", true, "echo aGVsbG8K | base64 -d"},
	{"shell", true, "sha256sum data.csv"},
	{"shell", true, "md5sum README.md"},
	{"shell", true, "diff notes.txt README.md; echo status $?"},
	{"shell", true, "jq .name package.json"},
	{"shell", true, "jq -r '.scripts | keys[]' package.json"},
	{"shell", true, "cat package.json | jq '.version'"},
	{"shell", true, "for f in src/*.go; do echo \"== $f\"; head -1 \"$f\"; done"},
	{"shell", true, "x=$(wc -l < notes.txt); echo \"notes: $x\""},
	{"shell", true, "while read -r line; do echo \"> $line\"; done < notes.txt"},
	{"shell", true, "if grep -q TODO notes.txt; then echo todo; fi"},
	{"shell", true, "case README.md in *.md) echo markdown;; esac"},
	{"shell", true, "echo $((6 * 7))"},
	{"shell", false, "date +%Y"},
	{"shell", true, "cat notes.txt | tee /tmp-copy.txt | wc -l"},
	// Changing files.
	{"shell", true, "mkdir -p build/out && touch build/out/.keep && ls -a build/out"},
	{"shell", true, "cp -r src src.bak && ls src.bak | sort"},
	{"shell", true, "mv src.bak src.old && ls -d src.*"},
	{"shell", true, "rm -rf src.old build && ls"},
	{"shell", true, "echo 'new line' >> notes.txt && tail -1 notes.txt"},
	{"shell", true, "printf 'a\\nb\\n' > list.txt && cat list.txt"},
	{"shell", true, "sed -i 's/DONE/TODO/' notes.txt && grep -c TODO notes.txt"},
	{"shell", true, "ln -s README.md readme.link && cat readme.link | head -1"},
	{"shell", true, "chmod +x list.txt && test -x list.txt && echo executable"},
	{"shell", true, "rm -f list.txt readme.link; ls"},
	{"shell", true, "cat > gen.txt <<'EOF'\nline one\nline two\nEOF\nwc -l gen.txt"},
	{"shell", true, "find . -name '*.log' -exec wc -l {} \\;"},
	{"shell", true, "find . -name 'gen.txt' | xargs rm -f; ls"},
	// JavaScript transforms: an ES module goes to the js backend.
	{"js", false, "export default (input) => input.n * 2"},
	{"js", false, "export default async function (input) {\n  return { sum: input.xs.reduce((a, b) => a + b, 0) };\n}"},
	{"js", false, "import { readFile } from 'node:fs/promises';\nexport default async () => JSON.parse(await readFile('/package.json', 'utf8')).name;"},
	{"js", false, "import * as path from 'node:path';\nexport default () => path.join('a', 'b')"},
	{"js", false, "export default function () {\n  return [3, 1, 2].sort();\n}"},
	{"js", false, "// count the lines\nconst n = (s) => s.split('\\n').length;\nexport default (input) => n(input.text)"},
	{"shell", true, "cat > gen.js <<'EOF'\nexport default () => 1\nEOF\ncat gen.js; rm gen.js"},
	{"container", false, "cat > gen.js <<'EOF'\nconsole.log(1)\nEOF\nnode gen.js"},
	// git: a real binary.
	{"container", false, "git status"},
	{"container", false, "git init -q && git add -A && git commit -qm init"},
	{"container", false, "git diff --stat"},
	{"container", false, "git log --oneline -5"},
	{"container", false, "git checkout -b feature/x"},
	{"container", false, "git stash && git pull --rebase && git stash pop"},
	{"container", false, "git grep -n TODO"},
	{"container", false, "git blame src/main.go | head"},
	{"container", false, "git rev-parse HEAD"},
	{"container", false, "git clone https://example.com/repo.git"},
	// Builds and tests.
	{"container", false, "go build ./..."},
	{"container", false, "go test ./... -run TestMain"},
	{"container", false, "go vet ./... && gofmt -l ."},
	{"container", false, "make"},
	{"container", false, "make test"},
	{"container", false, "cargo build --release"},
	{"container", false, "cargo test"},
	{"container", false, "npm run build"},
	{"container", false, "npm test"},
	{"container", false, "npx tsc --noEmit"},
	{"container", false, "gcc -O2 -o app main.c && ./app"},
	{"container", false, "cmake -B build && cmake --build build"},
	{"container", false, "mvn -q package"},
	{"container", false, "pytest -q"},
	{"container", false, "python3 -m unittest discover"},
	// Package installs.
	{"container", false, "npm install"},
	{"container", false, "npm install lodash"},
	{"container", false, "pip install -r requirements.txt"},
	{"container", false, "go get github.com/google/uuid"},
	{"container", false, "yarn add react"},
	{"container", false, "apt-get install -y jq"},
	// Interpreters and other real binaries.
	{"container", false, "python3 -c 'print(1+1)'"},
	{"container", false, "python3 scripts/report.py"},
	{"container", false, "node -e 'console.log(process.version)'"},
	{"container", false, "node scripts/build.js"},
	{"container", false, "./run.sh"},
	{"container", false, "curl -s https://example.com"},
	{"container", false, "tar czf out.tgz src"},
	{"container", false, "file README.md"},
	{"container", false, "find . -name '*.go' | xargs gofmt -l"},
	{"container", false, "grep -rl TODO . | xargs -I{} git log -1 --format=%h {}"},
	{"container", false, "cat data.csv | python3 -c 'import sys; print(len(sys.stdin.readlines()))'"},
	{"container", false, "rg TODO"},
	{"container", false, "tree -L 2"},
	{"container", false, "sqlite3 db.sqlite 'select 1'"},
}

// routingTree is the small project the corpus runs on.
var routingTree = map[string]string{
	"README.md":    "# demo\n\nA demo project.\n",
	"notes.txt":    "# notes\nTODO write tests\nship it\nTODO update docs\n",
	"data.csv":     "name,count\nb,20\na,10\nc,5\n",
	"package.json": "{\n  \"name\": \"demo\",\n  \"version\": \"1.2.3\",\n  \"scripts\": {\"build\": \"tsc\", \"test\": \"jest\"}\n}\n",
	"src/main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\") // TODO greet\n}\n",
	"src/util.go":  "package main\n\nfunc add(a, b int) int { return a + b }\n",
	"logs/app.log": "INFO start 12ms\nWARN slow 340ms\nINFO start 12ms\nERROR failed 7ms\nINFO start 12ms\n",
}

// TestRouting: the policy sends every command of the corpus where it
// belongs (at least 100 of them), and the commands routed to the shell
// that bash can run print what bash prints, with its exit status.
func TestRouting(t *testing.T) {
	if len(routingCorpus) < 100 {
		t.Fatalf("the corpus has %d commands, want at least 100", len(routingCorpus))
	}
	// The real shell; js and container are present (executables that are
	// never started: choosing does not start a backend).
	dir := t.TempDir()
	for _, id := range []string{"shell"} {
		if err := os.Symlink(filepath.Join(bins(t), backends.Prefix+id), filepath.Join(dir, backends.Prefix+id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"js", "container"} {
		if err := os.WriteFile(filepath.Join(dir, backends.Prefix+id), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	rt, err := backends.New(backends.Options{Dirs: []string{dir}, WS: ws, Owner: "routing-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	counts := map[string]int{}
	for _, c := range routingCorpus {
		got, why, err := rt.Choose(ctx, &backends.Request{Argv: []string{c.cmd}})
		counts[c.backend]++
		if err != nil || got != c.backend {
			t.Errorf("%q: routed to %q (%s, %v), want %s", c.cmd, got, why, err, c.backend)
		}
	}
	t.Logf("%d commands: %v", len(routingCorpus), counts)

	// The shell's output against bash's, on the same tree, in order (the
	// commands that change files change both trees alike).
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to compare with")
	}
	host := t.TempDir()
	for p, content := range routingTree {
		if err := os.MkdirAll(filepath.Join(host, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WriteFile(ctx, "/"+p, []byte(content), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	exe := mcpLocalExecutor(rt)
	for _, c := range routingCorpus {
		if c.backend != "shell" || !c.bash {
			continue
		}
		// Absolute paths name the tree's root on both sides.
		hostCmd := strings.ReplaceAll(c.cmd, "/tmp-copy.txt", filepath.Join(host, "tmp-copy.txt"))
		b := exec.Command(bash, "-c", hostCmd)
		b.Dir = host
		b.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=/"}
		want, _ := b.Output()
		wantCode := b.ProcessState.ExitCode()
		got, code, err := exe(ctx, c.cmd)
		if err != nil {
			t.Errorf("%q: %v", c.cmd, err)
			continue
		}
		if got != string(want) || code != wantCode {
			t.Errorf("%q: the shell printed\n%s(exit %d)\nbash printed\n%s(exit %d)", c.cmd, got, code, want, wantCode)
		}
	}
}

// mcpLocalExecutor runs a command through the exec tool's executor and
// returns its stdout and exit status.
func mcpLocalExecutor(rt *backends.Runtime) func(ctx context.Context, cmd string) (string, int, error) {
	return func(ctx context.Context, cmd string) (string, int, error) {
		var out, errb strings.Builder
		res, err := rt.Exec(ctx, &backends.Request{Backend: "shell", Argv: []string{cmd}, Env: map[string]string{"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}}, &out, &errb)
		if err != nil {
			return "", 0, fmt.Errorf("exec: %w", err)
		}
		return out.String(), backends.ExitStatus(res.Exit), nil
	}
}
