package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Path rules through the daemon, every door: the container (on its
// policy view of the mount), the shell (HostFS) and the file API refuse
// what the policy denies; the container's writes reach the plain mount
// at once, and the daemon's own mount is the host user's, unruled.
func TestPathRulesThroughDaemon(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	const secret = "DAEMON-PATHRULE-SECRET-93ab"
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(`{
		"paths": {"**/.env": "deny"},
		"backends": {"container": {"paths": {"/proj/vendor/**": "read_only"}}}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	startMount(t, home, ws, mnt)
	for p, data := range map[string]string{"proj/.env": secret, "proj/vendor/lib.go": "package lib\n", "proj/main.go": "package main\n"} {
		full := filepath.Join(mnt, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(backend, script string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", backend, "--cwd", "/proj", "--", script)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("%s: the denied file's content came out: %v", backend, r)
		}
		return r
	}
	r := exec("container", "cat .env; ls -a; echo pwned > vendor/lib.go; echo fine > out.txt; cat out.txt")
	for _, want := range []string{".env: No such file", "vendor/lib.go: Read-only file system", "fine"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("container: lacks %q: %v", want, r)
		}
	}
	if strings.Contains(r.stdout, ".env") {
		t.Errorf("container: ls shows .env: %v", r)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "proj/out.txt")); err != nil || string(b) != "fine\n" {
		t.Errorf("the container's write through the mount: %q, %v", b, err)
	}
	r = exec("shell", "cat .env; echo pwned > .env")
	if r.code == 0 || !strings.Contains(r.stderr, "No such file") {
		t.Errorf("shell: %v", r)
	}
	if r := fsRun(t, home, ws, "", "cat", "/proj/.env"); r.code == 0 || strings.Contains(r.stdout, secret) {
		t.Errorf("file API cat .env: %v", r)
	}
	// The shell's rules are the top level's only: vendor is writable there.
	if r := exec("shell", "echo changed > vendor/lib.go"); r.code != 0 {
		t.Errorf("shell writes vendor: %v", r)
	}
	for p, want := range map[string]string{"proj/.env": secret, "proj/vendor/lib.go": "changed\n"} {
		if b, err := os.ReadFile(filepath.Join(mnt, p)); err != nil || string(b) != want {
			t.Errorf("%s on the mount: %q, %v", p, b, err)
		}
	}
	// A snapshot diff through the daemon leaves denied paths out, with
	// their patches.
	if r := cli(t, home, "snapshot", "create", mnt, "before"); r.code != 0 {
		t.Fatalf("snapshot: %v", r)
	}
	os.WriteFile(filepath.Join(mnt, "proj/.env"), []byte(secret+"-2"), 0o644)
	os.WriteFile(filepath.Join(mnt, "proj/main.go"), []byte("package main // 2\n"), 0o644)
	if r := cli(t, home, "snapshot", "diff", "--patch", mnt, "before"); r.code != 0 || strings.Contains(r.stdout, ".env") || strings.Contains(r.stdout, secret) || !strings.Contains(r.stdout, "main.go") {
		t.Errorf("snapshot diff: %v", r)
	}
	// And the container sees the shell's change (the file API's changes
	// reach its view's kernel cache).
	if r := exec("container", "cat vendor/lib.go"); r.stdout != "changed\n" {
		t.Errorf("container after the shell's write: %v", r)
	}

	// Every door's refusal of .env is in `audit --denied`, with its rule
	// and door: the container's `cat .env` (its policy view), the
	// shell's (HostFS), the file API's; vendor's EROFS in the container.
	r = cli(t, home, "audit", "-w", ws, "--denied", "--json")
	var denied []struct {
		Door, Backend, Rule, Path, Detail string
		ExecID                            string `json:"exec_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &denied); err != nil {
		t.Fatalf("audit --denied --json: %v %v", err, r)
	}
	seen := map[string]bool{}
	for _, d := range denied {
		seen[d.Door+" "+d.Backend+" "+d.Rule+" "+d.Path] = true
		if strings.Contains(d.Detail, secret) {
			t.Errorf("a secret in the log: %+v", d)
		}
		if d.Door == "mount" && d.ExecID == "" {
			t.Errorf("the container's refusal names no exec: %+v", d)
		}
	}
	for _, want := range []string{
		`mount container paths["**/.env"]=deny /proj/.env`,
		`mount container paths["/proj/vendor/**"]=read_only /proj/vendor/lib.go`,
		`hostfs shell paths["**/.env"]=deny /proj/.env`,
		`api  paths["**/.env"]=deny /proj/.env`,
	} {
		if !seen[want] {
			t.Errorf("audit --denied lacks %q: %v", want, seen)
		}
	}
	if r := cli(t, home, "audit", "-w", ws, "--denied"); r.code != 0 || !strings.Contains(r.stdout, `paths["**/.env"]=deny`) {
		t.Errorf("audit --denied: %v", r)
	}
}

// TestDenialFloodOffline: a script looping on a denied path with one-off
// CLI runs (no daemon: each run opens the store itself) leaves one
// record of it in the audit log, not one a run.
func TestDenialFloodOffline(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	createStore(t, ws)
	if r := fsRun(t, home, ws, "SECRET\n", "write", "/.env"); r.code != 0 {
		t.Fatalf("write: %v", r)
	}
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(`{"paths": {"**/.env": "deny"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if r := fsRun(t, home, ws, "", "cat", "/.env"); r.code == 0 || strings.Contains(r.stdout, "SECRET") {
			t.Fatalf("cat .env: %v", r)
		}
	}
	r := cli(t, home, "audit", "-w", ws, "--denied", "--json")
	var recs []struct{ Door, Rule, Path string }
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit: %v %v", err, r)
	}
	if len(recs) != 1 || recs[0].Door != "api" || recs[0].Rule != `paths["**/.env"]=deny` || recs[0].Path != "/.env" {
		t.Errorf("records of 5 refusals in a loop: %+v", recs)
	}
}
