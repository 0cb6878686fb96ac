package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pluginPids lists the running shell plugins started for workspace ws.
func pluginPids(ws string) []int {
	abs, _ := filepath.Abs(ws)
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte("COMPUTERFS_PLUGIN_OWNER="+abs+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitNoPlugins(t *testing.T, ws string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := pluginPids(ws)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes left running: %v", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// repoTree copies real source trees of this repository into dst.
func repoTree(t *testing.T, dst string) {
	t.Helper()
	for _, d := range []string{"fs", "workspace", "shell", "pluginapi"} {
		out, err := exec.Command("cp", "-r", filepath.Join("..", "..", d), filepath.Join(dst, d)).CombinedOutput()
		if err != nil {
			t.Fatalf("cp %s: %v: %s", d, err, out)
		}
	}
	os.WriteFile(filepath.Join(dst, "NOTES"), []byte("TODO: one\ndone\nTODO: two\n"), 0o644)
}

// The shell backend, through the daemon and the real plugin, on a real
// source tree in the workspace, gives exactly what bash gives on a copy.
func TestExecShellMatchesBash(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	// Registered first, so that it runs after the daemon's own cleanup.
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	startMount(t, home, ws, mnt)
	repo := filepath.Join(mnt, "repo")
	os.Mkdir(repo, 0o755)
	repoTree(t, repo)
	host := t.TempDir()
	repoTree(t, host)
	scripts := []string{
		`grep -rn TODO . | sort | head`,
		`grep -rl "func " fs | sort | head -5; grep -c TODO NOTES`,
		`find . -name '*.proto' | sort`,
		`wc -l fs/journal.go workspace/glob.go | sort -n`,
		`cat NOTES | awk '/TODO/ {n++} END {print n}'`,
		`sed -n '1,3p' fs/journal.go | tr a-z A-Z`,
		`ls shell | head -3; ls nothere; echo "rc $?"`,
		`for f in NOTES fs; do [ -d $f ] && echo "$f dir" || echo "$f file"; done`,
		`jq -n '[1,2,3] | add'`,
	}
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", s)
			cmd.Dir = host
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
			var wantOut, wantErr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &wantOut, &wantErr
			wantCode := 0
			if err := cmd.Run(); err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatal(err)
				}
				wantCode = ee.ExitCode()
			}
			r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", "shell", "--cwd", "/repo", "--", s)
			if err != nil {
				t.Fatal(err)
			}
			if r.stdout != wantOut.String() || r.code != wantCode {
				t.Errorf("%s:\nbash (exit %d):\n%s\ncomputerfs exec (exit %d):\n%s\nstderr: %s", s, wantCode, wantOut.String(), r.code, r.stdout, r.stderr)
			}
		})
	}
}

// The lifecycle through a daemon: exit codes, stdin, limits, a plugin
// killed mid-exec, and no orphan after the daemon itself is killed.
func TestExecLifecycle(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	d := startServe(t, home, ws)
	run := func(stdin string, args ...string) result {
		t.Helper()
		r, err := runCfs(home, stdin, nil, append([]string{"exec", "-w", ws}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	healthy := func(what string) {
		t.Helper()
		if r := run("", "--", "echo ok"); r.code != 0 || r.stdout != "ok\n" {
			t.Fatalf("after %s the next exec fails: %v", what, r)
		}
	}
	if r := run("", "--", "exit 3"); r.code != 3 {
		t.Errorf("exit 3 gave %d", r.code)
	}
	if r := run("piped data\n", "--", "tr a-z A-Z"); r.stdout != "PIPED DATA\n" {
		t.Errorf("stdin: %v", r)
	}
	if r := run("", "--record", "--", "echo hi > /made.txt"); !strings.Contains(r.stderr, `"backend":"shell"`) || !strings.Contains(r.stderr, "/made.txt") {
		t.Errorf("the exec record names neither the backend nor the file: %s", r.stderr)
	}
	if r := run("", "--timeout", "500ms", "--", "while true; do sleep 0.01; done"); r.code == 0 || !strings.Contains(r.stderr, "timed out") {
		t.Errorf("a loop past the timeout: %v", r)
	}
	if r := run("", "--", "while true; do :; done"); r.code == 0 || !strings.Contains(r.stderr, "limit reached") {
		t.Errorf("a busy loop past the command limit: %v", r)
	}
	healthy("a timeout")
	if r := run("", "--output-limit", "1M", "--", "seq 1 100000000"); r.code == 0 || len(r.stdout) != 1<<20 || !strings.Contains(r.stderr, "limit") {
		t.Errorf("output past the cap: exit %d, %d bytes, %s", r.code, len(r.stdout), r.stderr)
	}
	healthy("1 GiB of output")
	if r := run("", "--", "sleep 1 &"); r.code != 2 || !strings.Contains(r.stderr, "not supported") {
		t.Errorf("a background job: %v", r)
	}

	// Kill the plugin while an exec runs: that exec fails, the next works.
	done := make(chan result, 1)
	go func() {
		r, _ := runCfs(home, "", nil, "exec", "-w", ws, "--", "echo > /running; sleep 30")
		done <- r
	}()
	// Wait until the exec runs, then kill its plugin.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, err := runCfs(home, "", nil, "fs", "stat", "-w", ws, "/running"); err == nil && r.code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec did not start")
		}
	}
	pids := pluginPids(ws)
	if len(pids) == 0 {
		t.Fatal("no plugin process")
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	select {
	case r := <-done:
		if r.code == 0 {
			t.Errorf("the exec whose plugin was killed succeeded: %v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the exec whose plugin was killed did not end")
	}
	healthy("a killed plugin")
	r, err := runCfs(home, "", nil, "backends", "-w", ws, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ID, State, Description string
		Restarts               int64
		Features               []string
		Defaults               struct {
			TimeoutMs   int64 `json:"timeout_ms"`
			OutputBytes int64 `json:"output_bytes"`
		} `json:"default_limits"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) == 0 || list[0].ID != "shell" || list[0].State != "ready" || list[0].Restarts < 1 || list[0].Description == "" ||
		len(list[0].Features) == 0 || list[0].Defaults.OutputBytes != 16<<20 || list[0].Defaults.TimeoutMs == 0 {
		t.Errorf("backends --json: %v %s", err, r.stdout)
	}

	// kill -9 of the daemon takes its plugins with it.
	if len(pluginPids(ws)) == 0 {
		t.Fatal("no plugin running before the daemon's kill")
	}
	syscall.Kill(d.pid, syscall.SIGKILL)
	waitNoPlugins(t, ws, 5*time.Second)
}

// Without a daemon, exec hosts the runtime itself on the store.
func TestExecWithoutDaemon(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	createStore(t, ws)
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	r, err := runCfs(home, "", nil, "exec", "-w", ws, "--", "mkdir -p /a && echo made > /a/f && cat /a/f && ls /")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stdout != "made\na\n" {
		t.Fatalf("exec without a daemon: %v", r)
	}
	r, err = runCfs(home, "", nil, "fs", "cat", "-w", ws, "/a/f")
	if err != nil || r.stdout != "made\n" {
		t.Fatalf("the exec's file through the file API: %v %v", r, err)
	}
	if r, _ := runCfs(home, "", nil, "exec", "-w", ws, "-b", "nosuch", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "no such backend") {
		t.Errorf("an unknown backend: %v", r)
	}
}

// Words after -- keep their boundaries: a script of several words runs
// them as one command, each word as given.
func TestExecWordsKeepBoundaries(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	startServe(t, home, ws)
	for _, tc := range []struct {
		args []string
		out  string
		code int
	}{
		{[]string{"sh", "-c", "exit 7"}, "", 7},
		{[]string{"echo", "a  b", "$HOME", "it's"}, "a  b $HOME it's\n", 0},
		{[]string{"echo one | tr a-z A-Z"}, "ONE\n", 0},
		{[]string{"bash", "-c", `echo "$0:$1"`, "x", "y z"}, "x:y z\n", 0},
	} {
		r, err := runCfs(home, "", nil, append([]string{"exec", "-w", ws, "-b", "shell", "--"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if r.stdout != tc.out || r.code != tc.code {
			t.Errorf("exec -- %q: exit %d, stdout %q; want exit %d, %q (stderr %q)", tc.args, r.code, r.stdout, tc.code, tc.out, r.stderr)
		}
	}
}

// The exec record says why the policy chose the backend, through a
// daemon too (it said "named by the caller" for every exec there).
func TestExecRecordSaysWhy(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	startServe(t, home, ws)
	r, err := runCfs(home, "", nil, "exec", "-w", ws, "--record", "--", "echo hi | tr a-z A-Z")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stdout != "HI\n" || !strings.Contains(r.stderr, "policy: every command") || strings.Contains(r.stderr, "named by the caller") {
		t.Errorf("exec --record through the daemon: %v", r)
	}
	r, err = runCfs(home, "", nil, "exec", "-w", ws, "--record", "-b", "shell", "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "named by the caller") {
		t.Errorf("exec -b shell --record: %v", r)
	}
}
