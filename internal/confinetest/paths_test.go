package confinetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// pathSecret is the content of the files path rules deny.
const pathSecret = "PATHRULE-SECRET-7d41a0"

// pathsPolicy denies .env and .pem files to every door, makes
// /work/vendor read-only to the shell and lets js write under /work/out
// only.
const pathsPolicy = `{
	"paths": {"**/.env": "deny", "**/*.pem": "deny"},
	"backends": {
		"shell": {"paths": {"/work/vendor/**": "read_only"}},
		"js": {"paths": {"/**": "read_only", "/work/out/**": "allow"}}
	}
}`

// TestPathRules is the matrix of backend × door × rule: each backend
// (the shell, js and the Python plugin, all through HostFS; the container
// has its own suite) and the file API try to read, list, find, write,
// move and copy denied and read-only paths, directly, through symlinks
// and "..", and the workspace is judged from the host afterwards: no
// secret in any output, the protected files as they were.
func TestPathRules(t *testing.T) {
	withPython := python(t)
	base := t.TempDir()
	polPath := filepath.Join(base, "policy.json")
	writeHost(t, polPath, pathsPolicy)
	pol, err := backends.LoadPolicy(polPath)
	if err != nil {
		t.Fatal(err)
	}
	wsPath := filepath.Join(base, "ws.cfs")
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	ctx := context.Background()
	protected := map[string]string{
		"/work/.env": pathSecret + "-top\n", "/work/app/.env": pathSecret + "-app\n", "/work/app/k.pem": pathSecret + "-pem\n",
		"/.env": pathSecret + "-root\n", "/work/vendor/lib.go": "package lib\n",
	}
	for p, data := range protected {
		if _, err := ws.WriteFile(ctx, p, []byte(data), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{"/work/app/main.go": "package main\n", "/work/ok.txt": "ok\n"} {
		if _, err := ws.WriteFile(ctx, p, []byte(data), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ws.Mkdir(ctx, "/work/out", workspace.MkdirOptions{}); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"/work/env-link": ".env", "/work/app-link": "app", "/work/up-env": "app/../../.env"} {
		if err := ws.Symlink(ctx, target, link); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := backends.New(backends.Options{Dirs: []string{pluginDir}, WS: ws, Owner: wsPath, Policy: pol,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	jsRead := func(paths ...string) string {
		return `import { readFile, readdir } from "node:fs/promises";
export default async () => { const out = []; for (const p of ` + jsonList(paths) + `) { try { out.push(await readFile(p, "utf8")); } catch (e) { out.push(p + ": " + e.code); } }
for (const d of ["/work", "/work/app", "/work/app-link", "/"]) { try { out.push((await readdir(d)).join(",")); } catch (e) { out.push(d + ": " + e.code); } } return out; }`
	}
	jsWrite := `import { writeFile, appendFile, rename, rm, mkdir, copyFile, symlink } from "node:fs/promises";
export default async () => { const out = []; for (const [n, f] of [
 ["write .env", () => writeFile("/work/.env", "pwned")], ["append app/.env", () => appendFile("/work/app/.env", "pwned")],
 ["new .env", () => writeFile("/work/out/.env", "pwned")], ["via link", () => writeFile("/work/env-link", "pwned")],
 ["rename app", () => rename("/work/app", "/work/out/app")], ["copy pem", () => copyFile("/work/app/k.pem", "/work/out/k")],
 ["write outside out", () => writeFile("/work/ok.txt", "pwned")], ["mkdir outside out", () => mkdir("/work/newdir")],
 ["rm vendor", () => rm("/work/vendor/lib.go")], ["rename out", () => rename("/work/out", "/work/out2")],
 ["write in out", () => writeFile("/work/out/ok", "fine")]]) {
 try { await f(); out.push(n + ": ok"); } catch (e) { out.push(n + ": " + e.code); } } return out; }`

	type cell struct {
		backend, name string
		argv          []string
		// want must be in the output (the refusals expected).
		want []string
	}
	cells := []cell{
		{"shell", "cat .env", []string{"cat .env"}, []string{"No such file"}},
		{"shell", "cat through links and dotdot", []string{"cat env-link app-link/.env up-env app/k.pem ../.env app/../.env; cat app/*"}, nil},
		{"shell", "list and find", []string{"ls -a . app; find / -name '.env' -o -name '*.pem'; du -a /; echo *; echo app/.*"}, nil},
		{"shell", "grep", []string{"grep -r " + pathSecret + " /; grep -rl SECRET ."}, nil},
		{"shell", "write .env", []string{"echo pwned > .env; echo pwned >> app/.env; echo pwned > env-link; mkdir -p new && echo pwned > new/.env; touch out/.env"}, []string{"ermission denied"}},
		{"shell", "move and copy", []string{"mv app app2; mv app/k.pem app/k.txt; cp -r app app3; cp app/.env app/plain; ln app/.env hard 2>&1; mv ok.txt x.pem"}, nil},
		{"shell", "read-only vendor", []string{"echo pwned > vendor/lib.go; rm vendor/lib.go; mv vendor v2; touch vendor/new; chmod 600 vendor/lib.go"}, []string{"ead-only file system"}},
		{"js", "read", []string{jsRead("/work/.env", "/work/env-link", "/work/app/.env", "/work/app-link/.env", "/work/up-env", "/work/app/k.pem", "/.env")}, []string{"ENOENT"}},
		{"js", "write", []string{jsWrite}, []string{"write in out: ok", "write outside out: EROFS", "write .env: EACCES"}},
		// A flood: the log gets one record of it (audit.Coalescer).
		{"shell", "loop on .env", []string{"i=0; while [ $i -lt 500 ]; do cat .env 2>/dev/null; i=$((i+1)); done; echo looped"}, []string{"looped"}},
	}
	if withPython {
		cells = append(cells,
			cell{"pyupper", "read .env", []string{"read", "/work/.env"}, nil},
			cell{"pyupper", "read link", []string{"read", "/work/env-link"}, nil},
			cell{"pyupper", "read dotdot", []string{"read", "/work/app/../app/.env"}, nil},
			cell{"pyupper", "read pem", []string{"read", "/work/app-link/k.pem"}, nil},
			cell{"pyupper", "write .env", []string{"write", "/work/.env", "pwned"}, nil},
			cell{"pyupper", "write new .env", []string{"write", "/work/out/.env", "pwned"}, nil},
		)
	}
	for _, c := range cells {
		t.Run(c.backend+"/"+c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			res, err := rt.Exec(ctx, &backends.Request{Backend: c.backend, Argv: c.argv, Cwd: "/work"}, &stdout, &stderr)
			if err != nil {
				t.Fatalf("exec: %v (stderr %q)", err, stderr.String())
			}
			all := stdout.String() + stderr.String() + string(res.Result) + res.Exit.GetReason()
			if strings.Contains(strings.ToUpper(all), strings.ToUpper(pathSecret)) {
				t.Errorf("a denied file reached the %s backend:\n%s", c.backend, all)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, "panic") || strings.Contains(all, "internal error") {
				t.Errorf("the backend broke: %s", all)
			}
			t.Logf("exit %d: %s", backends.ExitStatus(res.Exit), strings.TrimSpace(all))
		})
	}

	// The file API, under the top level's rules.
	rs, err := pol.FileRules()
	if err != nil {
		t.Fatal(err)
	}
	api := ws.WithRules(rs).AuditDenials("api", "", backends.PolicyVersion(pol), &audit.Coalescer{})
	for _, p := range []string{"/work/.env", "/work/env-link", "/work/app-link/.env", "/work/up-env", "/work/app/k.pem"} {
		if _, _, err := api.ReadFile(ctx, p, 0); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("file API read %s: %v", p, err)
		}
	}
	if _, err := api.WriteFile(ctx, "/work/.env", []byte("pwned"), workspace.WriteOptions{}); !errors.Is(err, syscall.EACCES) {
		t.Errorf("file API write .env: %v", err)
	}
	if g, err := api.Grep(ctx, "/", workspace.GrepOptions{Pattern: pathSecret, Mode: "files"}); err != nil || len(g.Files) != 0 {
		t.Errorf("file API grep: %+v, %v", g.Files, err)
	}

	checkDenialsAudited(t, ws, withPython)

	// Judged from the host: the protected files as they were, where they
	// were, and no new file the rules deny.
	for p, data := range protected {
		if b, _, err := ws.ReadFile(ctx, p, 0); err != nil || string(b) != data {
			t.Errorf("%s: %q, %v; want %q", p, b, err, data)
		}
	}
	all, err := ws.List(ctx, "/", workspace.ListOptions{Recursive: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range all.Entries {
		paths = append(paths, e.Path)
		if e.Type == "file" && (strings.HasSuffix(e.Path, "/.env") || strings.HasSuffix(e.Path, ".pem")) && protected[e.Path] == "" {
			t.Errorf("a denied path was created: %s", e.Path)
		}
		if e.Type == "file" && !strings.HasSuffix(e.Path, "/.env") && !strings.HasSuffix(e.Path, ".pem") {
			if b, _, _ := ws.ReadFile(ctx, e.Path, 0); strings.Contains(string(b), pathSecret) {
				t.Errorf("%s holds a denied file's content", e.Path)
			}
		}
	}
	for _, p := range []string{"/work/app", "/work/out/ok", "/work/ok.txt"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s is missing (moved?)", p)
		}
	}
	if b, _, _ := ws.ReadFile(ctx, "/work/ok.txt", 0); string(b) != "ok\n" {
		t.Errorf("js wrote outside /work/out: ok.txt is %q", b)
	}
	if slices.Contains(paths, "/work/newdir") || slices.Contains(paths, "/work/out2") {
		t.Errorf("js changed what its rules make read-only: %v", paths)
	}
}

func jsonList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func writeHost(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkDenialsAudited: every door's refusals of the ".env" rule are in
// the audit log, with their rule, door, backend and exec; the shell's
// loop of 500 refusals left one record (and its exec counts them all).
func checkDenialsAudited(t *testing.T, ws *workspace.WS, withPython bool) {
	t.Helper()
	recs, err := ws.AuditRecords(context.Background(), audit.Query{Denied: true})
	if err != nil {
		t.Fatal(err)
	}
	const envRule = `paths["**/.env"]=deny`
	seen := map[string]bool{}
	loopExec := ""
	execs, err := ws.AuditRecords(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range execs {
		if r.Kind == audit.KindExec && len(r.Argv) > 0 && strings.Contains(r.Argv[0], "looped") {
			loopExec = r.ExecID
			if r.Denials < 500 {
				t.Errorf("the loop's exec record counts %d denials, want >= 500", r.Denials)
			}
		}
	}
	loopRecs := 0
	for _, r := range recs {
		if strings.Contains(r.Detail, pathSecret) {
			t.Errorf("a secret in the log: %+v", r)
		}
		if r.Rule != envRule {
			continue
		}
		if r.Door == "hostfs" && r.ExecID == "" {
			t.Errorf("a HostFS refusal names no exec: %+v", r)
		}
		if r.Path == "" || !strings.HasPrefix(r.Path, "/") {
			t.Errorf("a refusal of the .env rule names no path: %+v", r)
		}
		seen[r.Door+"/"+r.Backend] = true
		if loopExec != "" && r.ExecID == loopExec {
			loopRecs++
		}
	}
	want := []string{"hostfs/shell", "hostfs/js", "api/"}
	if withPython {
		want = append(want, "hostfs/pyupper")
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no refusal of %s by %s in the audit log (seen %v)", envRule, w, seen)
		}
	}
	if loopExec == "" || loopRecs != 1 {
		t.Errorf("the loop's refusals: %d records (exec %q), want 1", loopRecs, loopExec)
	}
}
