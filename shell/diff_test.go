package shell

// The differential test: every script of the corpus runs in real bash on
// one copy of a tree and in this interpreter on another copy; stdout,
// stderr, exit status and the resulting trees must agree.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/shell/coreutils"
)

var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sourceTree copies the Go files and docs of this repository's fs,
// workspace and shell packages: a real tree, with real TODOs.
func sourceTree(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"fs", "workspace", "chunkstore", "shell", "pluginapi"} {
		filepath.Walk(filepath.Join(root, dir), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() || strings.Contains(p, "testdata") {
				return nil
			}
			if ext := filepath.Ext(p); ext != ".go" && ext != ".md" && ext != ".proto" {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			target := filepath.Join(dst, rel)
			os.MkdirAll(filepath.Dir(target), 0o755)
			return os.WriteFile(target, b, 0o644)
		})
	}
	os.WriteFile(filepath.Join(dst, "notes.txt"), []byte("TODO: one\nfine\ntodo: lower\nTODO two\n"), 0o644)
	os.WriteFile(filepath.Join(dst, "data.csv"), []byte("name,qty\napple,3\npear,10\nfig,7\napple,2\n"), 0o644)
	os.WriteFile(filepath.Join(dst, "config.json"), []byte(`{"name":"x","deps":{"a":"1.0","b":"2.1"},"list":[3,1,2]}`+"\n"), 0o644)
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			os.Chtimes(p, fixedNow.Add(-time.Hour), fixedNow.Add(-time.Hour))
		}
		return nil
	})
	return dst
}

func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout (%d bytes)\n%s--- stderr\n%s", r.code, len(r.stdout), clip(r.stdout), r.stderr)
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "...\n"
	}
	return s
}

func runBash(t testing.TB, dir, script, stdin string) result {
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=/", "PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "TZ=UTC"}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bash: %v", err)
	}
	return result{out.String(), errb.String(), code}
}

func runOurs(dir, script, stdin string) result {
	var out, errb bytes.Buffer
	o := Run(context.Background(), script, Options{
		FS: coreutils.DirFS{Root: dir}, Dir: "/", Env: map[string]string{"HOME": "/", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "TZ": "UTC"},
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Now: func() time.Time { return fixedNow },
	})
	return result{out.String(), errb.String(), o.ExitCode}
}

func treeOf(dir string) string {
	var lines []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d", rel, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", b)
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// corpus is what coding agents run every day.
var corpus = []struct {
	name, script, stdin string
}{
	{"grep todo sorted", `grep -rn TODO . | sort | head`, ""},
	{"grep count", `grep -rc func fs | sort | tail -5`, ""},
	{"grep files", `grep -rl "package workspace" . | sort`, ""},
	{"grep include", `grep -rn --include='*.md' -i journal . | sort | head -20`, ""},
	{"grep word", `grep -rnw Ino fs/records.go | head -5`, ""},
	{"grep invert count", `grep -vc '^$' notes.txt`, ""},
	{"grep no match", `grep -r NOSUCHSTRINGANYWHERE .; echo "status $?"`, ""},
	{"find names", `find . -name '*.proto' | sort`, ""},
	{"find type dirs", `find . -maxdepth 1 -type d | sort`, ""},
	{"find wc", `find fs -name '*_test.go' | sort | xargs wc -l | tail -1`, ""},
	{"ls", `ls; ls -1 fs | head -3; ls -a shell | head`, ""},
	{"ls missing", `ls nothere; echo "status $?"`, ""},
	{"cat head tail", `cat notes.txt | head -2; tail -n 1 notes.txt; head -c 10 data.csv; echo`, ""},
	{"wc", `wc -l notes.txt data.csv; wc -w < notes.txt`, ""},
	{"sort uniq", `cut -d, -f1 data.csv | tail -n +2 | sort | uniq -c | sort -rn`, ""},
	{"sort numeric", `tail -n +2 data.csv | sort -t, -k2,2n`, ""},
	{"awk sum", `awk -F, 'NR>1 {s[$1]+=$2} END {for (k in s) print k, s[k]}' data.csv | sort`, ""},
	{"sed", `sed -n '2,3p' data.csv; sed 's/apple/APPLE/g' data.csv | head -3`, ""},
	{"sed in place", `cp data.csv d2.csv && sed -i 's/,/;/g' d2.csv && cat d2.csv`, ""},
	{"tr", `echo "Hello World" | tr a-z A-Z; echo "a  b   c" | tr -s ' '`, ""},
	{"jq", `jq -r '.deps | keys[]' config.json; jq '.list | sort' config.json; jq -c '.deps' config.json`, ""},
	{"mkdir write", `mkdir -p out/a/b && echo hi > out/a/b/f.txt && cat out/a/b/f.txt && ls -R out`, ""},
	{"append", `echo one > o.txt; echo two >> o.txt; cat o.txt; wc -l < o.txt`, ""},
	{"truncating redirect", `cp notes.txt n.txt; cat n.txt > n.txt; wc -c < n.txt`, ""},
	{"rm mv cp", `cp -r fs fs2 && mv fs2 fs3 && ls fs3 | head -2 && rm -r fs3 && ls | grep -c fs3`, ""},
	{"variables loops", `for f in a b c; do echo "item $f"; done; i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i`, ""},
	{"functions", `greet() { echo "hi $1"; return 3; }; greet you; echo "rc $?"`, ""},
	{"conditionals", `if [ -f notes.txt ]; then echo file; fi; [ -d fs ] && echo dir; test -e nope || echo missing`, ""},
	{"subshell cd", `(cd fs && ls | head -1); basename "$(pwd)" >/dev/null; cd shell && basename "$PWD" && ls -d ../fs && cd .. && ls -d shell`, ""},
	{"command not found", `nosuchcommand arg; echo "rc $?"`, ""},
	{"stdin", `cat | tr a-z A-Z`, "piped input\n"},
	{"here doc", "cat <<EOF\nline $((2*3))\nEOF", ""},
	{"pipefail-ish", `false | true; echo $?; set -e; true; echo ok`, ""},
	{"basename dirname", `basename /a/b/c.txt .txt; dirname /a/b/c.txt; basename "$(realpath -m a/../b)"`, ""},
	{"seq", `seq 3; seq -s, 1 2 9`, ""},
	{"sha256", `printf abc | sha256sum; printf abc | md5sum; echo hi | base64`, ""},
	{"printf %q", `for s in 'a b=c' '~x' '#c' 'a,b' $'tab\tx' "it's" 'a{b}' $'\x01a' ''; do printf '%q\n' "$s"; done`, ""},
	{"type", `type -t ls echo if; type ls cd; command -v cat; command -V cd; type -p cat; which ls; hash ls; echo "rc $?"`, ""},
	{"process substitution", `diff <(printf 'a\nb\n') <(printf 'a\nc\n'); echo "rc $?"; paste_in=$(cat <(echo one)); echo "$paste_in"`, ""},
	{"yes", `yes | head -3; yes ab cd | head -2`, ""},
	{"paste", `printf 'a\nb\nc\n' > f1; printf '1\n2\n' > f2; paste f1 f2; paste -d, f1 f2; paste -s f1; paste -s -d'|,' f1 f2; paste - - < f1; paste -d '\n' f1 f2`, ""},
	{"timeout", `timeout 0.2 sleep 5; echo "rc $?"; timeout 5 echo hi; echo "rc $?"; timeout 1 bash -c 'exit 3'; echo "rc $?"; timeout --preserve-status 0.1 sleep 3; echo "rc $?"; timeout x sleep 1; echo "rc $?"`, ""},
	{"bc", `echo "scale=2; 10/3" | bc; echo '2^64' | bc; echo "3 > 2; 1 == 1" | bc; echo "obase=16; 255" | bc; echo "ibase=16; FF" | bc; echo "x=5; x+=2; x; -2^2; scale=4; 2^-2; 0.1+0.2; -0.5; 5.5 % 2" | bc; echo "2^300" | bc`, ""},
	{"bc -l", `bc -l <<< 's(1)'; bc -l <<< 'c(1)'; bc -l <<< 'a(1)'; bc -l <<< 'l(2)'; bc -l <<< 'e(1)'; bc -l <<< 'e(10)'; bc -l <<< 'l(1000)'; bc -l <<< 's(100)'; bc -l <<< 'scale=50; 4*a(1)'; echo "sqrt(2)" | bc -l`, ""},
	{"dev null", `cat /dev/null; echo x > /dev/null; head -c 4 /dev/zero | wc -c`, ""},
	{"diff", `printf 'a\nb\n' > x1; printf 'a\nc\n' > x2; diff x1 x2; echo "rc $?"`, ""},
	{"diff -u", `printf 'a\nb\nc\n' > x1; printf 'a\nB\nc\n' > x2; diff -u x1 x2 | tail -n +3`, ""},
	{"xargs", `printf 'a\nb\n' | xargs echo got; printf 'x y' | xargs -n1 echo`, ""},
	{"find exec", `find . -name '*.csv' -exec wc -l {} \;`, ""},
	{"tee", `echo data | tee t1.txt t2.txt; cat t2.txt`, ""},
	{"test strings", `[ "a" = "a" ] && echo eq; [ -z "" ] && echo empty; [[ "abc" == a* ]] && echo glob`, ""},
	{"globs", `echo *.txt; echo fs/*.go | wc -w; ls shell/*.go | head -2`, ""},
	{"arith", `echo $((7/2)) $((7%3)) $((2**10)); x=5; echo $((x*x))`, ""},
	{"string ops", `s=hello.tar.gz; echo ${s%.gz} ${s%%.*} ${s#*.} ${#s} ${s^^}`, ""},
	{"arrays", `a=(x y z); echo ${a[1]} ${#a[@]}; for e in "${a[@]}"; do printf '%s-' "$e"; done; echo`, ""},
	{"printf", `printf '%5s|%-5s|%03d|%.2f\n' ab cd 7 3.14159`, ""},
	{"exit code", `ls nothere 2>/dev/null; echo "rc=$?"; exit 4`, ""},
	{"stderr redirect", `ls nothere 2>&1 | head -1; echo err >&2`, ""},
	{"touch stat", `touch new.txt && [ -e new.txt ] && echo made; stat -c '%s %n' data.csv`, ""},
	{"chmod", `cp notes.txt run.sh; chmod +x run.sh; [ -x run.sh ] && echo exec; stat -c %a run.sh`, ""},
	{"date fixed", `date -u -d @0 +%Y-%m-%d`, ""},
	{"cut fields", `cut -d, -f2 data.csv | tail -n +2 | awk '{s+=$1} END {print s}'`, ""},
	{"uniq dup", `printf 'b\na\nb\n' | sort | uniq -d`, ""},
	{"env", `FOO=bar env | grep ^FOO; export X=1; env | grep -c '^X=1$'`, ""},
	{"bash -c", `bash -c 'echo inner $0 $1' zero one; sh -c 'exit 3'; echo $?`, ""},
	{"script file", `printf 'echo from script $1\nexit 2\n' > s.sh; bash s.sh arg; echo "rc $?"`, ""},
	{"case", `x=foo.go; case $x in *.go) echo go;; *) echo other;; esac`, ""},
	{"read loop", `while IFS=, read -r name qty; do echo "$name=$qty"; done < data.csv`, ""},
	{"command substitution", "n=$(grep -c TODO notes.txt); echo \"todos: $n\"; echo \"files: $(ls fs | wc -l)\"", ""},
}

func TestDifferentialAgainstBash(t *testing.T) {
	tree := sourceTree(t)
	for _, c := range corpus {
		t.Run(c.name, func(t *testing.T) {
			bashDir, ourDir := copyDir(t, tree), copyDir(t, tree)
			want := runBash(t, bashDir, c.script, c.stdin)
			got := runOurs(ourDir, c.script, c.stdin)
			// bash names itself in errors as "bash: line 1:"; we say "bash:".
			want.stderr = normBashErr(want.stderr)
			if got.stdout != want.stdout || got.stderr != want.stderr || got.code != want.code {
				t.Errorf("%s\n=== bash:\n%s\n=== ours:\n%s", c.script, want, got)
			}
			if a, b := treeOf(bashDir), treeOf(ourDir); a != b {
				t.Errorf("trees differ after %s:\nbash:\n%s\nours:\n%s", c.script, clip(a), clip(b))
			}
		})
	}
}

// normBashErr drops bash's "line N: " from its own messages.
func normBashErr(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if rest, ok := strings.CutPrefix(l, "bash: line "); ok {
			if i := strings.Index(rest, ": "); i > 0 {
				l = "bash: " + rest[i+2:]
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
