package main

// End-to-end tests of `computerfs fs` and `computerfs serve`: one table of
// subcommand runs, replayed against a serve daemon (no mount), a mount
// daemon and no daemon at all (the CLI opens the store itself); then the
// change feed, bad input, a dead daemon's socket and concurrent clients.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// runCfs runs the binary with stdin and extra environment, COMPUTERFS_HOME
// set to home and any COMPUTERFS_WORKSPACE of ours dropped. It does not
// touch t, so goroutines may call it.
func runCfs(home, stdin string, env []string, args ...string) (result, error) {
	return runCfsWithin(time.Minute, home, stdin, env, args...)
}

// runCfsWithin is runCfs with another time limit than a minute.
func runCfsWithin(limit time.Duration, home, stdin string, env []string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfsBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPUTERFS_WORKSPACE=") && !strings.HasPrefix(kv, "COMPUTERFS_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "COMPUTERFS_HOME="+home)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		return r, fmt.Errorf("computerfs %s timed out\n%v", strings.Join(args, " "), r)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return r, fmt.Errorf("computerfs %s: %v", strings.Join(args, " "), err)
		}
		r.code = ee.ExitCode()
	}
	return r, nil
}

// fsArgs puts "-w ws" after the subcommand's name.
func fsArgs(ws string, args ...string) []string {
	if len(args) == 0 {
		return []string{"fs"}
	}
	return append([]string{"fs", args[0], "-w", ws}, args[1:]...)
}

// fsRun runs `computerfs fs ARGS` on ws with stdin.
func fsRun(t *testing.T, home, ws, stdin string, args ...string) result {
	t.Helper()
	full := fsArgs(ws, args...)
	r, err := runCfs(home, stdin, nil, full...)
	if err != nil {
		t.Fatal(err)
	}
	noCrash(t, r, full...)
	return r
}

// fsMust runs `computerfs fs ARGS` and fails unless it exits 0.
func fsMust(t *testing.T, home, ws, stdin string, args ...string) result {
	t.Helper()
	r := fsRun(t, home, ws, stdin, args...)
	if r.code != 0 {
		t.Fatalf("computerfs fs %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// jsonErr parses the JSON error object --json prints on stderr.
func jsonErr(t *testing.T, r result) (errno, msg string, exit int) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
		Errno string `json:"errno"`
		Exit  int    `json:"exit"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil {
		t.Fatalf("stderr is not one JSON error object: %v\n%v", err, r)
	}
	if e.Error == "" {
		t.Errorf("JSON error has no message: %s", r.stderr)
	}
	return e.Errno, e.Error, e.Exit
}

func decodeJSON(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%v", err, r)
	}
}

// socketPath is where the daemon of ws listens.
func socketPath(t *testing.T, ws string) string {
	t.Helper()
	p, err := wsrpc.SocketPath(ws)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serveDaemon is a `computerfs serve WS --daemon`.
type serveDaemon struct {
	pid          int
	home, ws     string
	sock         string
	stopped      bool
	stoppedClean bool
	started      string // what serve --daemon printed
}

// startServe starts a serve daemon on ws and returns once its socket is
// live. Cleanup SIGKILLs it if the test has not stopped it.
func startServe(t *testing.T, home, ws string) *serveDaemon {
	t.Helper()
	r, err := runCfs(home, "", nil, "serve", ws, "--daemon", "--create")
	if err != nil {
		t.Fatal(err)
	}
	m := daemonPID.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("serve --daemon printed no pid: %v", r)
	}
	pid, _ := strconv.Atoi(m[1])
	d := &serveDaemon{pid: pid, home: home, ws: ws, sock: socketPath(t, ws), started: r.stdout}
	t.Cleanup(func() {
		// The test stops it; if it has not (it failed early), SIGTERM,
		// then SIGKILL.
		if processAlive(pid) {
			syscall.Kill(pid, syscall.SIGTERM)
			if !waitGone(pid, 10*time.Second) {
				t.Errorf("serve daemon %d still running 10s after SIGTERM", pid)
				syscall.Kill(pid, syscall.SIGKILL)
				if !waitGone(pid, 20*time.Second) {
					t.Errorf("serve daemon %d survived SIGKILL", pid)
				}
			}
		}
		if t.Failed() {
			if log, err := os.ReadFile(ws + ".log"); err == nil {
				t.Logf("%s.log:\n%s", ws, log)
			}
		}
	})
	if r.code != 0 {
		t.Fatalf("serve --daemon: %v", r)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("serve daemon %d: process group %d (%v), want its own session", pid, pgid, err)
	}
	if fi, err := os.Stat(d.sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket %s after serve --daemon: %v %v, want a 0600 socket", d.sock, fi, err)
	}
	if !strings.Contains(r.stdout, "serving") {
		t.Errorf("serve --daemon: %v", r)
	}
	return d
}

// stop SIGTERMs the daemon and waits until it has exited and removed its
// socket.
func (d *serveDaemon) stop(t *testing.T) {
	t.Helper()
	if d.stopped {
		return
	}
	d.stopped = true
	if err := syscall.Kill(d.pid, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM serve daemon %d: %v", d.pid, err)
	}
	if !waitGone(d.pid, 20*time.Second) {
		t.Fatalf("serve daemon %d still running 20s after SIGTERM", d.pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(d.sock); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve daemon %d exited but left its socket %s", d.pid, d.sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.stoppedClean = true
}

// createStore makes an empty workspace at ws without a daemon.
func createStore(t *testing.T, ws string) {
	t.Helper()
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatalf("create %s: %v", ws, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", ws, err)
	}
}

// fsHarness is one workspace the table runs against, in one mode.
type fsHarness struct {
	mode          string // serve, mount or direct
	home, ws, mnt string
	tmp           string
	vars          map[string]string
}

func (h *fsHarness) expand(s string) string {
	for k, v := range h.vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// symlink makes linkPath point to target, by whatever way the mode offers.
func (h *fsHarness) symlink(t *testing.T, target, linkPath string) {
	t.Helper()
	switch h.mode {
	case "mount":
		if err := os.Symlink(target, filepath.Join(h.mnt, linkPath)); err != nil {
			t.Fatal(err)
		}
	case "serve":
		c, closeConn, err := wsrpc.Dial(context.Background(), h.ws)
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn()
		if err := c.Symlink(context.Background(), target, linkPath); err != nil {
			t.Fatal(err)
		}
	default:
		f, err := fs.Open(h.ws, fs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = workspace.New(f, workspace.Options{}).Symlink(context.Background(), target, linkPath)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fsStep is one row of the table: a run of `computerfs fs` and what it
// must do, or a custom step.
type fsStep struct {
	name  string
	args  []string // after "fs"; "-w WS" goes after the command; {var} expands
	stdin string
	code  int
	// out is the exact stdout (a string) or a pattern it must match
	// (*regexp.Regexp); nil checks nothing.
	out    any
	errHas string // stderr must contain this
	// errno, if set, runs the step again with --json and checks the errno
	// of the JSON error on stderr.
	errno string
	check func(t *testing.T, h *fsHarness, r result)
	// fn replaces the run of the binary.
	fn func(t *testing.T, h *fsHarness)
	// only names the one mode the step runs in.
	only string
}

func (s fsStep) run(t *testing.T, h *fsHarness) {
	if s.fn != nil {
		s.fn(t, h)
		return
	}
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = h.expand(a)
	}
	// A failure with an errno and no message to look for runs with
	// --json only: that checks the exit status as well.
	var r result
	if s.errno == "" || s.errHas != "" {
		r = fsRun(t, h.home, h.ws, h.expand(s.stdin), args...)
		if r.code != s.code {
			t.Fatalf("computerfs fs %q: exit %d, want %d\n%v", args, r.code, s.code, r)
		}
		switch want := s.out.(type) {
		case string:
			if r.stdout != want {
				t.Errorf("computerfs fs %q: stdout\n%q\nwant\n%q\n%v", args, r.stdout, want, r)
			}
		case *regexp.Regexp:
			if !want.MatchString(r.stdout) {
				t.Errorf("computerfs fs %q: stdout\n%q\ndoes not match %s\n%v", args, r.stdout, want, r)
			}
		}
		if want := h.expand(s.errHas); want != "" && !strings.Contains(r.stderr, want) {
			t.Errorf("computerfs fs %q: stderr lacks %q\n%v", args, want, r)
		}
		if s.code >= exitFailed && !strings.HasPrefix(r.stderr, "computerfs fs: ") {
			t.Errorf("computerfs fs %q: failure message %q lacks the prefix", args, r.stderr)
		}
	}
	if s.errno != "" {
		jr := fsRun(t, h.home, h.ws, h.expand(s.stdin), append([]string{args[0], "--json"}, args[1:]...)...)
		if jr.code != s.code {
			t.Fatalf("computerfs fs %q --json: exit %d, want %d\n%v", args, jr.code, s.code, jr)
		}
		if jr.stdout != "" {
			t.Errorf("computerfs fs %q --json failed but printed on stdout: %v", args, jr)
		}
		errno, _, exit := jsonErr(t, jr)
		if errno != s.errno || exit != s.code {
			t.Errorf("computerfs fs %q --json: errno %q exit %d, want %q %d\n%v", args, errno, exit, s.errno, s.code, jr)
		}
	}
	if s.check != nil {
		s.check(t, h, r)
	}
}

// catIs checks a file's content with `fs cat`.
func catIs(path, want string) func(t *testing.T, h *fsHarness, r result) {
	return func(t *testing.T, h *fsHarness, _ result) {
		t.Helper()
		r := fsMust(t, h.home, h.ws, "", "cat", path)
		if r.stdout != want {
			t.Errorf("fs cat %s after the step: %q, want %q", path, r.stdout, want)
		}
	}
}

// catFails checks that path does not exist.
func catFails(path string) func(t *testing.T, h *fsHarness, r result) {
	return func(t *testing.T, h *fsHarness, _ result) {
		t.Helper()
		r := fsRun(t, h.home, h.ws, "", "cat", "--json", path)
		if r.code != exitFailed {
			t.Fatalf("fs cat %s after the step: exit %d, want %d\n%v", path, r.code, exitFailed, r)
		}
		if errno, _, _ := jsonErr(t, r); errno != "ENOENT" {
			t.Errorf("fs cat %s after the step: errno %s, want ENOENT", path, errno)
		}
	}
}

func both(fns ...func(t *testing.T, h *fsHarness, r result)) func(t *testing.T, h *fsHarness, r result) {
	return func(t *testing.T, h *fsHarness, r result) {
		t.Helper()
		for _, f := range fns {
			f(t, h, r)
		}
	}
}

// mountFile checks a file's content through the mount.
func mountFile(t *testing.T, h *fsHarness, p, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(h.mnt, p))
	if err != nil {
		t.Fatalf("read %s through the mount: %v", p, err)
	}
	if string(got) != want {
		t.Errorf("read %s through the mount: %q, want %q", p, got, want)
	}
	fi, err := os.Stat(filepath.Join(h.mnt, p))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(want)) {
		t.Errorf("stat %s through the mount: size %d, want %d", p, fi.Size(), len(want))
	}
}

func mountGone(t *testing.T, h *fsHarness, p string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(h.mnt, p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lstat %s through the mount: %v, want ENOENT", p, err)
	}
}

// The table's data.
const (
	fileA  = "alpha\nbeta\ngamma\ndelta\nepsilon\n"
	fileA2 = "alpha\nBETA\ngamma\ndelta\nepsilon\n"
	fileA3 = "aLpha\nBETA\ngamma\ndeLta\nepsiLon\n"
	fileA4 = "aLpha\nBETA\nGAMMA\nDELTA\nepsiLon\n"
	fileA5 = "aLpha\nBETA\nGAMMA\nDELTA\nEPSILON\n"
	fileB  = "# Title\nSome Alpha text\nmore alpha\n"
	fileB2 = "# Title\nrewritten\n"
	fileB3 = "# Title\nR\n"
	gOne   = "foo\nbar\nbaz\nfoo bar\nqux\nquux\ncorge\nfoo\n"
	gTwo   = "Foo\nFOO\nnothing\n"
	gThree = "xfooy\n"
)

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func fsTable() []fsStep {
	rx := regexp.MustCompile
	gSize := len(gOne) + len(gTwo) + len(gThree)
	return []fsStep{
		// Usage.
		{name: "no command", fn: func(t *testing.T, h *fsHarness) {
			r, err := runCfs(h.home, "", nil, "fs")
			if err != nil || r.code != exitUsage || !strings.Contains(r.stderr, "Exit status") {
				t.Errorf("computerfs fs: %v %v, want usage and exit 2", err, r)
			}
			r, err = runCfs(h.home, "", nil, "fs", "bogus")
			if err != nil || r.code != exitUsage || !strings.Contains(r.stderr, `unknown command "bogus"`) {
				t.Errorf("computerfs fs bogus: %v %v, want exit 2", err, r)
			}
			r, err = runCfs(h.home, "", nil, "fs", "help")
			if err != nil || r.code != 0 || !strings.Contains(r.stdout, "changes") {
				t.Errorf("computerfs fs help: %v %v, want usage and exit 0", err, r)
			}
		}},
		{name: "bad flag", args: []string{"cat", "--nope", "/x"}, code: exitUsage, out: "", errHas: "unknown flag: --nope"},
		{name: "cat without path", args: []string{"cat"}, code: exitUsage, out: "", errHas: "Usage: computerfs fs cat"},
		{name: "cat two paths", args: []string{"cat", "/a", "/b"}, code: exitUsage, out: ""},

		// write
		{name: "write without parent", args: []string{"write", "/src/a.txt"}, stdin: fileA, code: exitFailed, out: "", errHas: "no such file or directory", errno: "ENOENT"},
		{name: "write -p", args: []string{"write", "-p", "/src/a.txt"}, stdin: fileA, out: rx(`^/src/a\.txt: wrote 31 bytes, hash [0-9a-f]{64}\n$`), check: catIs("/src/a.txt", fileA)},
		{name: "write json", args: []string{"write", "--json", "/src/b.md"}, stdin: fileB, check: func(t *testing.T, h *fsHarness, r result) {
			var w workspace.WriteResult
			decodeJSON(t, r, &w)
			if w.Path != "/src/b.md" || w.Size != int64(len(fileB)) || w.Written != int64(len(fileB)) || !w.Created || !hexHash.MatchString(w.Hash) {
				t.Errorf("write --json: %+v", w)
			}
			h.vars["bhash"] = w.Hash
		}},
		{name: "cat json", args: []string{"cat", "--json", "/src/b.md"}, check: func(t *testing.T, h *fsHarness, r result) {
			var c struct {
				Path    string `json:"path"`
				Size    int64  `json:"size"`
				Hash    string `json:"hash"`
				Content *string
			}
			decodeJSON(t, r, &c)
			if c.Path != "/src/b.md" || c.Size != int64(len(fileB)) || c.Hash != h.vars["bhash"] || c.Content == nil || *c.Content != fileB {
				t.Errorf("cat --json: %+v, want hash %s and content %q", c, h.vars["bhash"], fileB)
			}
		}},
		{name: "write exclusive existing", args: []string{"write", "--exclusive", "/src/a.txt"}, stdin: "no", code: exitFailed, errHas: "file exists", errno: "EEXIST", check: catIs("/src/a.txt", fileA)},
		{name: "write exclusive new", args: []string{"write", "--exclusive", "/src/new.txt"}, stdin: "n\n", out: rx(`^/src/new\.txt: wrote 2 bytes, hash [0-9a-f]{64}\n$`)},
		{name: "write append", args: []string{"write", "--append", "/src/new.txt"}, stdin: "m\n", out: "/src/new.txt: wrote 2 bytes\n", check: catIs("/src/new.txt", "n\nm\n")},
		{name: "write mode", args: []string{"write", "-p", "--mode", "0750", "/bin/run.sh"}, stdin: "#!/bin/sh\n"},
		{name: "stat mode", args: []string{"stat", "--json", "/bin/run.sh"}, check: func(t *testing.T, h *fsHarness, r result) {
			var fi workspace.FileInfo
			decodeJSON(t, r, &fi)
			if fi.Path != "/bin/run.sh" || fi.Name != "run.sh" || fi.Type != "file" || fi.Mode != 0o750 || fi.Size != 10 || fi.Nlink != 1 {
				t.Errorf("stat --json: %+v", fi)
			}
		}},
		{name: "write bad mode", args: []string{"write", "--mode", "9z", "/x"}, code: exitUsage, errHas: "--mode", check: catFails("/x")},
		{name: "write if-match mismatch", args: []string{"write", "--if-match", "00ff", "/src/b.md"}, stdin: fileB2, code: exitConflict, errno: "CONFLICT", errHas: "content hash differs", check: catIs("/src/b.md", fileB)},
		{name: "write if-match", args: []string{"write", "--json", "--if-match", "{bhash}", "/src/b.md"}, stdin: fileB2, check: func(t *testing.T, h *fsHarness, r result) {
			var w workspace.WriteResult
			decodeJSON(t, r, &w)
			if w.Path != "/src/b.md" || w.Size != int64(len(fileB2)) || w.Created || !hexHash.MatchString(w.Hash) || w.Hash == h.vars["bhash"] {
				t.Errorf("write --if-match --json: %+v", w)
			}
			h.vars["bhash2"] = w.Hash
			catIs("/src/b.md", fileB2)(t, h, r)
		}},
		{name: "write if-match stale", args: []string{"write", "--if-match", "{bhash}", "/src/b.md"}, stdin: "x", code: exitConflict, errno: "CONFLICT", check: catIs("/src/b.md", fileB2)},

		// cat
		{name: "cat", args: []string{"cat", "/src/a.txt"}, out: fileA},
		{name: "cat offset length", args: []string{"cat", "--offset", "6", "--length", "4", "/src/a.txt"}, out: "beta"},
		{name: "cat offset", args: []string{"cat", "/src/a.txt", "--offset", "23"}, out: "epsilon\n"},
		{name: "cat offset past end", args: []string{"cat", "--offset", "100", "/src/a.txt"}, out: ""},
		{name: "cat line lines", args: []string{"cat", "--line", "2", "--lines", "2", "/src/a.txt"}, out: "beta\ngamma\n"},
		{name: "cat line", args: []string{"cat", "--line", "4", "/src/a.txt"}, out: "delta\nepsilon\n"},
		{name: "cat missing", args: []string{"cat", "/nope"}, code: exitFailed, out: "", errHas: "no such file or directory", errno: "ENOENT"},
		{name: "cat dir", args: []string{"cat", "/src"}, code: exitFailed, out: "", errno: "EISDIR"},
		{name: "cat escape", args: []string{"cat", "../../etc/passwd"}, code: exitFailed, out: "", errHas: "escapes the workspace", errno: "EACCES"},
		{name: "workspace from env", fn: func(t *testing.T, h *fsHarness) {
			r, err := runCfs(h.home, "", []string{"COMPUTERFS_WORKSPACE=" + h.ws}, "fs", "cat", "/src/a.txt")
			if err != nil || r.code != 0 || r.stdout != fileA {
				t.Errorf("fs cat with COMPUTERFS_WORKSPACE: %v %v", err, r)
			}
			// -w wins over the environment.
			r, err = runCfs(h.home, "", []string{"COMPUTERFS_WORKSPACE=" + filepath.Join(h.tmp, "none.cfs")}, "fs", "cat", "-w", h.ws, "/src/a.txt")
			if err != nil || r.code != 0 || r.stdout != fileA {
				t.Errorf("fs cat -w with another COMPUTERFS_WORKSPACE: %v %v", err, r)
			}
		}},

		// edit
		{name: "edit without old", args: []string{"edit", "/src/a.txt"}, code: exitUsage, errHas: "--old", check: catIs("/src/a.txt", fileA)},
		{name: "edit", args: []string{"edit", "/src/a.txt", "--old", "beta", "--new", "BETA"},
			out: "--- /src/a.txt\n+++ /src/a.txt\n@@ -1,5 +1,5 @@\n alpha\n-beta\n+BETA\n gamma\n delta\n epsilon\n", check: catIs("/src/a.txt", fileA2)},
		{name: "edit ambiguous", args: []string{"edit", "--old", "a", "--new", "A", "/src/a.txt"}, code: exitFailed, out: "", errHas: "occurs 5 times", check: catIs("/src/a.txt", fileA2)},
		{name: "edit missing old", args: []string{"edit", "--old", "zeta", "--new", "Z", "/src/a.txt"}, code: exitFailed, out: "", check: catIs("/src/a.txt", fileA2)},
		{name: "edit replace-all dry-run", args: []string{"edit", "--json", "--dry-run", "--replace-all", "--old", "a", "--new", "A", "/src/a.txt"}, check: func(t *testing.T, h *fsHarness, r result) {
			var e workspace.EditResult
			decodeJSON(t, r, &e)
			if e.Path != "/src/a.txt" || len(e.Counts) != 1 || e.Counts[0] != 5 || !strings.Contains(e.Diff, "+AlphA\n") || e.Size != int64(len(fileA2)) {
				t.Errorf("edit --dry-run --json: %+v", e)
			}
			catIs("/src/a.txt", fileA2)(t, h, r)
		}},
		{name: "edit replace-all", args: []string{"edit", "--replace-all", "--old", "l", "--new", "L", "/src/a.txt"}, out: rx(`(?s)^--- /src/a\.txt\n\+\+\+ /src/a\.txt\n@@ .*-alpha\n\+aLpha\n.*`), check: catIs("/src/a.txt", fileA3)},
		{name: "edit edits file", fn: func(t *testing.T, h *fsHarness) {
			p := filepath.Join(h.tmp, "edits.json")
			if err := os.WriteFile(p, []byte(`[{"old":"gamma","new":"GAMMA"},{"old":"deLta","new":"DELTA"}]`), 0o644); err != nil {
				t.Fatal(err)
			}
			r := fsMust(t, h.home, h.ws, "", "edit", "--json", "--edits", p, "/src/a.txt")
			var e workspace.EditResult
			decodeJSON(t, r, &e)
			if len(e.Counts) != 2 || e.Counts[0] != 1 || e.Counts[1] != 1 || !hexHash.MatchString(e.Hash) {
				t.Errorf("edit --edits --json: %+v", e)
			}
			catIs("/src/a.txt", fileA4)(t, h, r)
		}},
		{name: "edit edits stdin all or none", args: []string{"edit", "--edits", "-", "/src/a.txt"}, stdin: `[{"old":"epsiLon","new":"E"},{"old":"missing","new":"x"}]`,
			code: exitFailed, out: "", check: catIs("/src/a.txt", fileA4)},
		{name: "edit edits stdin", args: []string{"edit", "--edits", "-", "/src/a.txt"}, stdin: `[{"old":"epsiLon","new":"EPSILON"}]`,
			out: rx(`-epsiLon\n\+EPSILON\n$`), check: catIs("/src/a.txt", fileA5)},
		{name: "edit bad edits", args: []string{"edit", "--edits", "-", "/src/a.txt"}, stdin: `{not json`, code: exitUsage, errHas: "--edits", check: catIs("/src/a.txt", fileA5)},
		{name: "edit if-match stale", args: []string{"edit", "--if-match", "{bhash}", "--old", "rewritten", "--new", "R", "/src/b.md"}, code: exitConflict, errno: "CONFLICT", check: catIs("/src/b.md", fileB2)},
		{name: "edit if-match", args: []string{"edit", "--if-match", "{bhash2}", "--old", "rewritten", "--new", "R", "/src/b.md"}, out: rx(`-rewritten\n\+R\n$`), check: catIs("/src/b.md", fileB3)},
		{name: "edit missing file", args: []string{"edit", "--old", "a", "--new", "b", "/nope"}, code: exitFailed, errno: "ENOENT"},

		// mkdir
		{name: "mkdir without parent", args: []string{"mkdir", "/x/y"}, code: exitFailed, errno: "ENOENT"},
		{name: "mkdir -p", args: []string{"mkdir", "-p", "/dst/sub", "/empty"}, out: ""},
		{name: "mkdir existing", args: []string{"mkdir", "/empty"}, code: exitFailed, errHas: "file exists", errno: "EEXIST"},
		{name: "mkdir -p existing", args: []string{"mkdir", "-p", "/empty", "/dst"}, out: ""},
		{name: "mkdir json mode", args: []string{"mkdir", "--json", "--mode", "0700", "/made"}, check: func(t *testing.T, h *fsHarness, r result) {
			var made []workspace.FileInfo
			decodeJSON(t, r, &made)
			if len(made) != 1 || made[0].Path != "/made" || made[0].Type != "dir" || made[0].Mode != 0o700 {
				t.Errorf("mkdir --json: %+v", made)
			}
		}},

		// stat and lstat
		{name: "symlink", fn: func(t *testing.T, h *fsHarness) { h.symlink(t, "a.txt", "/src/link") }},
		{name: "stat", args: []string{"stat", "/src/a.txt"},
			out: rx(`^  Path: /src/a\.txt\n  Type: file\n  Size: 31\n  Mode: -rw-r--r-- \(0644\)\n Inode: \d+  Links: 1  Uid: \d+  Gid: \d+\nModify: \S+\n$`)},
		{name: "stat follows", args: []string{"stat", "--json", "/src/link"}, check: func(t *testing.T, h *fsHarness, r result) {
			var fi workspace.FileInfo
			decodeJSON(t, r, &fi)
			if fi.Type != "file" || fi.Size != 31 || fi.Target != "" {
				t.Errorf("stat --json of a symlink: %+v, want its target a.txt", fi)
			}
		}},
		{name: "lstat", args: []string{"stat", "--lstat", "/src/link"}, out: rx(`(?m)^  Path: /src/link\n  Type: symlink\n(.*\n)*Target: a\.txt\n$`)},
		{name: "lstat json", args: []string{"stat", "--lstat", "--json", "/src/link"}, check: func(t *testing.T, h *fsHarness, r result) {
			var fi workspace.FileInfo
			decodeJSON(t, r, &fi)
			if fi.Path != "/src/link" || fi.Type != "symlink" || fi.Target != "a.txt" {
				t.Errorf("stat --lstat --json: %+v", fi)
			}
		}},
		{name: "cat through symlink", args: []string{"cat", "/src/link"}, out: fileA5},
		{name: "rm symlink", args: []string{"rm", "/src/link"}, out: "", check: both(catIs("/src/a.txt", fileA5), catFails("/src/link"))},
		{name: "stat missing", args: []string{"stat", "/nope"}, code: exitFailed, errno: "ENOENT"},

		// ls
		{name: "ls", args: []string{"ls"}, out: "bin/\ndst/\nempty/\nmade/\nsrc/\n"},
		{name: "ls dir", args: []string{"ls", "/src"}, out: "a.txt\nb.md\nnew.txt\n"},
		{name: "ls relative", args: []string{"ls", "src/"}, out: "a.txt\nb.md\nnew.txt\n"},
		{name: "ls -R", args: []string{"ls", "-R"}, out: "/bin/\n/bin/run.sh\n/dst/\n/dst/sub/\n/empty/\n/made/\n/src/\n/src/a.txt\n/src/b.md\n/src/new.txt\n"},
		{name: "ls -R depth", args: []string{"ls", "-R", "--depth", "1", "/"}, out: "/bin/\n/dst/\n/empty/\n/made/\n/src/\n"},
		{name: "ls -R dir", args: []string{"ls", "/dst", "-R"}, out: "/dst/sub/\n"},
		{name: "ls limit", args: []string{"ls", "--limit", "2"}, out: "bin/\ndst/\n", errHas: "more results: pass --offset 2"},
		{name: "ls offset", args: []string{"ls", "--limit", "2", "--offset", "2"}, out: "empty/\nmade/\n", errHas: "pass --offset 4"},
		{name: "ls last page", args: []string{"ls", "--limit", "2", "--offset", "4"}, out: "src/\n", check: func(t *testing.T, h *fsHarness, r result) {
			if r.stderr != "" {
				t.Errorf("ls on the last page says %q", r.stderr)
			}
		}},
		{name: "ls all", args: []string{"ls", "--limit", "2", "--all"}, out: "bin/\ndst/\nempty/\nmade/\nsrc/\n"},
		{name: "ls -l", args: []string{"ls", "-l", "/src"}, out: rx(`^ *-rw-r--r-- +31 +\d{4}-\d\d-\d\d \d\d:\d\d +a\.txt *\n *-rw-r--r-- +10 +\S+ \S+ +b\.md *\n *-rw-r--r-- +4 +\S+ \S+ +new\.txt *\n$`)},
		{name: "ls -l dirs", args: []string{"ls", "-l"}, out: rx(`(?m)^ *drwx------ +\d+ +\S+ \S+ +made/ *$`)},
		{name: "ls json", args: []string{"ls", "--json", "/src"}, check: func(t *testing.T, h *fsHarness, r result) {
			var l workspace.ListResult
			decodeJSON(t, r, &l)
			var got []string
			for _, e := range l.Entries {
				got = append(got, fmt.Sprintf("%s %s %s %d", e.Name, e.Path, e.Type, e.Size))
			}
			want := []string{"a.txt /src/a.txt file 31", "b.md /src/b.md file 10", "new.txt /src/new.txt file 4"}
			if strings.Join(got, "|") != strings.Join(want, "|") || l.Next != 0 {
				t.Errorf("ls --json: %q next %d, want %q", got, l.Next, want)
			}
		}},
		{name: "ls json empty", args: []string{"ls", "--json", "/empty"}, out: "{\n  \"entries\": []\n}\n"},
		{name: "ls missing", args: []string{"ls", "/nope"}, code: exitFailed, out: "", errno: "ENOENT"},

		// mv
		{name: "mv into dir", args: []string{"mv", "/src/new.txt", "/dst"}, out: "", check: both(catIs("/dst/new.txt", "n\nm\n"), catFails("/src/new.txt"))},
		{name: "mv json", args: []string{"mv", "--json", "/bin/run.sh", "/bin/run2.sh"}, check: func(t *testing.T, h *fsHarness, r result) {
			var m map[string]string
			decodeJSON(t, r, &m)
			if m["src"] != "/bin/run.sh" || m["dst"] != "/bin/run2.sh" {
				t.Errorf("mv --json: %v", m)
			}
			catIs("/bin/run2.sh", "#!/bin/sh\n")(t, h, r)
		}},
		{name: "mv -n existing", args: []string{"mv", "-n", "/bin/run2.sh", "/dst/new.txt"}, code: exitFailed, errno: "EEXIST", check: catIs("/dst/new.txt", "n\nm\n")},
		{name: "mv missing", args: []string{"mv", "/nope", "/dst"}, code: exitFailed, errno: "ENOENT"},
		{name: "mv one arg", args: []string{"mv", "/src"}, code: exitUsage},

		// cp
		{name: "cp dir without -r", args: []string{"cp", "/src", "/dst"}, code: exitFailed, errno: "EISDIR", check: catFails("/dst/src/a.txt")},
		{name: "cp -r into dir", args: []string{"cp", "-r", "/src", "/dst"}, out: "", check: both(catIs("/dst/src/a.txt", fileA5), catIs("/dst/src/b.md", fileB3), catIs("/src/a.txt", fileA5))},
		{name: "ls after cp", args: []string{"ls", "-R", "/dst"}, out: "/dst/new.txt\n/dst/src/\n/dst/src/a.txt\n/dst/src/b.md\n/dst/sub/\n"},
		{name: "cp json into dir", args: []string{"cp", "--json", "/src/b.md", "/made"}, check: func(t *testing.T, h *fsHarness, r result) {
			var m struct {
				Src, Dst string
				Copied   int
			}
			decodeJSON(t, r, &m)
			if m.Src != "/src/b.md" || m.Dst != "/made/b.md" || m.Copied != 1 {
				t.Errorf("cp --json: %+v", m)
			}
			catIs("/made/b.md", fileB3)(t, h, r)
		}},
		{name: "cp -n existing", args: []string{"cp", "-n", "/src/a.txt", "/made/b.md"}, code: exitFailed, errno: "EEXIST", check: catIs("/made/b.md", fileB3)},
		{name: "cp copy is independent", args: []string{"write", "/dst/src/a.txt"}, stdin: "changed\n", check: both(catIs("/dst/src/a.txt", "changed\n"), catIs("/src/a.txt", fileA5))},

		// glob
		{name: "glob **", args: []string{"glob", "**/*.md"}, out: "/dst/src/b.md\n/made/b.md\n/src/b.md\n"},
		{name: "glob braces", args: []string{"glob", "/src/*.{txt,md}"}, out: "/src/a.txt\n/src/b.md\n"},
		{name: "glob dir", args: []string{"glob", "--dir", "/dst", "*"}, out: "/dst/new.txt\n/dst/src\n/dst/sub\n"},
		{name: "glob ?", args: []string{"glob", "/src/?.txt"}, out: "/src/a.txt\n"},
		{name: "glob json", args: []string{"glob", "--json", "/src/[ab].*"}, check: func(t *testing.T, h *fsHarness, r result) {
			var g workspace.GlobResult
			decodeJSON(t, r, &g)
			if strings.Join(g.Paths, " ") != "/src/a.txt /src/b.md" {
				t.Errorf("glob --json: %+v", g)
			}
		}},
		{name: "glob no match", args: []string{"glob", "*.nothing"}, code: exitNoMatch, out: ""},
		{name: "glob no match json", args: []string{"glob", "--json", "*.nothing"}, code: exitNoMatch, out: "{\n  \"paths\": []\n}\n"},
		{name: "glob limit", args: []string{"glob", "--limit", "1", "**/*.md"}, out: "/dst/src/b.md\n", errHas: "pass --offset 1"},
		{name: "glob all", args: []string{"glob", "--limit", "1", "--all", "**/*.md"}, out: "/dst/src/b.md\n/made/b.md\n/src/b.md\n"},

		// grep
		{name: "grep setup one", args: []string{"write", "-p", "/g/one.txt"}, stdin: gOne},
		{name: "grep setup two", args: []string{"write", "-p", "/g/two.log"}, stdin: gTwo},
		{name: "grep setup three", args: []string{"write", "-p", "/g/sub/three.txt"}, stdin: gThree},
		{name: "grep", args: []string{"grep", "foo", "/g"}, out: "/g/one.txt:1:foo\n/g/one.txt:4:foo bar\n/g/one.txt:8:foo\n/g/sub/three.txt:1:xfooy\n"},
		{name: "grep root", args: []string{"grep", "xfooy"}, out: "/g/sub/three.txt:1:xfooy\n"},
		{name: "grep file", args: []string{"grep", "ba", "/g/one.txt"}, out: "/g/one.txt:2:bar\n/g/one.txt:3:baz\n/g/one.txt:4:foo bar\n"},
		{name: "grep literal", args: []string{"grep", "fo+", "/g"}, code: exitNoMatch, out: ""},
		{name: "grep -i", args: []string{"grep", "-i", "foo", "/g"},
			out: "/g/one.txt:1:foo\n/g/one.txt:4:foo bar\n/g/one.txt:8:foo\n/g/sub/three.txt:1:xfooy\n/g/two.log:1:Foo\n/g/two.log:2:FOO\n"},
		{name: "grep -E", args: []string{"grep", "-E", "^fo+$", "/g"}, out: "/g/one.txt:1:foo\n/g/one.txt:8:foo\n"},
		{name: "grep -E -i", args: []string{"grep", "-E", "-i", "^fo+$", "/g"}, out: "/g/one.txt:1:foo\n/g/one.txt:8:foo\n/g/two.log:1:Foo\n/g/two.log:2:FOO\n"},
		{name: "grep -l", args: []string{"grep", "-l", "-i", "foo", "/g"}, out: "/g/one.txt\n/g/sub/three.txt\n/g/two.log\n"},
		{name: "grep -c", args: []string{"grep", "-c", "-i", "foo", "/g"}, out: "/g/one.txt:3\n/g/sub/three.txt:1\n/g/two.log:2\n"},
		{name: "grep include", args: []string{"grep", "-i", "--include", "*.log", "foo", "/g"}, out: "/g/two.log:1:Foo\n/g/two.log:2:FOO\n"},
		{name: "grep includes", args: []string{"grep", "-i", "--include", "*.log", "--include", "three.*", "foo", "/g"}, out: "/g/sub/three.txt:1:xfooy\n/g/two.log:1:Foo\n/g/two.log:2:FOO\n"},
		{name: "grep exclude", args: []string{"grep", "-i", "--exclude", "*.txt", "foo", "/g"}, out: "/g/two.log:1:Foo\n/g/two.log:2:FOO\n"},
		{name: "grep excludes", args: []string{"grep", "-i", "--exclude", "*.txt", "--exclude", "*.log", "foo", "/g"}, code: exitNoMatch, out: ""},
		{name: "grep -C", args: []string{"grep", "-C", "1", "baz", "/g"}, out: "/g/one.txt-2-bar\n/g/one.txt:3:baz\n/g/one.txt-4-foo bar\n"},
		{name: "grep -A separators", args: []string{"grep", "-A", "1", "foo", "/g/one.txt"},
			out: "/g/one.txt:1:foo\n/g/one.txt-2-bar\n--\n/g/one.txt:4:foo bar\n/g/one.txt-5-qux\n--\n/g/one.txt:8:foo\n"},
		{name: "grep -A merged", args: []string{"grep", "-A", "1", "bar", "/g/one.txt"}, out: "/g/one.txt:2:bar\n/g/one.txt-3-baz\n/g/one.txt:4:foo bar\n/g/one.txt-5-qux\n"},
		{name: "grep -B", args: []string{"grep", "-B", "2", "qux", "/g/one.txt"}, out: "/g/one.txt-3-baz\n/g/one.txt-4-foo bar\n/g/one.txt:5:qux\n"},
		{name: "grep -C groups", args: []string{"grep", "-C", "1", "-E", "baz|corge", "/g/one.txt"},
			out: "/g/one.txt-2-bar\n/g/one.txt:3:baz\n/g/one.txt-4-foo bar\n--\n/g/one.txt-6-quux\n/g/one.txt:7:corge\n/g/one.txt-8-foo\n"},
		{name: "grep -B across files", args: []string{"grep", "-B", "1", "-E", "nothing|xfooy", "/g"},
			out: "/g/sub/three.txt:1:xfooy\n--\n/g/two.log-2-FOO\n/g/two.log:3:nothing\n"},
		{name: "grep json", args: []string{"grep", "--json", "-C", "1", "baz", "/g/one.txt"}, check: func(t *testing.T, h *fsHarness, r result) {
			var g workspace.GrepResult
			decodeJSON(t, r, &g)
			want := []workspace.GrepLine{{Path: "/g/one.txt", Line: 2, Text: "bar", Context: true}, {Path: "/g/one.txt", Line: 3, Text: "baz"}, {Path: "/g/one.txt", Line: 4, Text: "foo bar", Context: true}}
			if fmt.Sprint(g.Lines) != fmt.Sprint(want) || len(g.Files) != 0 || g.Next != 0 {
				t.Errorf("grep --json: %+v, want lines %+v", g, want)
			}
		}},
		{name: "grep json count", args: []string{"grep", "--json", "-c", "-i", "foo", "/g"}, check: func(t *testing.T, h *fsHarness, r result) {
			var g workspace.GrepResult
			decodeJSON(t, r, &g)
			var files []string
			for _, f := range g.Files {
				files = append(files, fmt.Sprintf("%s %d", f.Path, f.Count))
				if f.Mtime.IsZero() {
					t.Errorf("grep --json -c: %s without its mtime", f.Path)
				}
			}
			if fmt.Sprint(files) != "[/g/one.txt 3 /g/sub/three.txt 1 /g/two.log 2]" || len(g.Lines) != 0 {
				t.Errorf("grep --json -c: %+v", g)
			}
		}},
		{name: "grep limit", args: []string{"grep", "--limit", "2", "foo", "/g"}, out: "/g/one.txt:1:foo\n/g/one.txt:4:foo bar\n", errHas: "pass --offset 2"},
		{name: "grep offset", args: []string{"grep", "--limit", "2", "--offset", "2", "foo", "/g"}, out: "/g/one.txt:8:foo\n/g/sub/three.txt:1:xfooy\n"},
		{name: "grep no match", args: []string{"grep", "nomatch", "/g"}, code: exitNoMatch, out: ""},
		{name: "grep -l -c", args: []string{"grep", "-l", "-c", "foo", "/g"}, code: exitUsage, out: "", errHas: "exclude each other"},
		{name: "grep -E -F", args: []string{"grep", "-E", "-F", "foo", "/g"}, code: exitUsage, out: "", errHas: "exclude each other"},
		{name: "grep no pattern", args: []string{"grep"}, code: exitUsage, out: ""},
		{name: "grep bad regexp", args: []string{"grep", "-E", "(", "/g"}, code: exitFailed, out: "", errno: "EINVAL"},
		{name: "grep missing", args: []string{"grep", "foo", "/nope"}, code: exitFailed, out: "", errno: "ENOENT"},

		// tree and du
		{name: "tree", args: []string{"tree", "/g"},
			out: fmt.Sprintf("/g  [%d B, 3 files, 1 dirs]\n├── one.txt  [%d B]\n├── sub/  [6 B]\n│   └── three.txt  [6 B]\n└── two.log  [%d B]\n", gSize, len(gOne), len(gTwo))},
		{name: "tree depth", args: []string{"tree", "--depth", "1", "/g"},
			out: fmt.Sprintf("/g  [%d B, 3 files, 1 dirs]\n├── one.txt  [%d B]\n├── sub/  [6 B]\n└── two.log  [%d B]\n", gSize, len(gOne), len(gTwo))},
		{name: "tree json", args: []string{"tree", "--json", "/g"}, check: func(t *testing.T, h *fsHarness, r result) {
			var n workspace.TreeNode
			decodeJSON(t, r, &n)
			var names []string
			for _, c := range n.Children {
				names = append(names, c.Name)
			}
			if n.Path != "/g" || n.Type != "dir" || n.Size != int64(gSize) || n.Files != 3 || n.Dirs != 1 || strings.Join(names, " ") != "one.txt sub two.log" {
				t.Errorf("tree --json: %+v children %q", n, names)
			}
		}},
		{name: "tree missing", args: []string{"tree", "/nope"}, code: exitFailed, errno: "ENOENT"},
		{name: "du", args: []string{"du", "/g", "/g/sub"}, out: fmt.Sprintf("%d\t/g\t(%d B, 3 files, 1 dirs)\n6\t/g/sub\t(6 B, 1 files, 0 dirs)\n", gSize, gSize)},
		{name: "du json", args: []string{"du", "--json", "/g"}, check: func(t *testing.T, h *fsHarness, r result) {
			var ns []workspace.TreeNode
			decodeJSON(t, r, &ns)
			if len(ns) != 1 || ns[0].Path != "/g" || ns[0].Size != int64(gSize) || ns[0].Files != 3 || ns[0].Dirs != 1 {
				t.Errorf("du --json: %+v", ns)
			}
		}},
		{name: "du missing", args: []string{"du", "/g", "/nope"}, code: exitFailed, errno: "ENOENT"},

		// changes
		{name: "changes all", args: []string{"changes", "--json"}, check: func(t *testing.T, h *fsHarness, r result) {
			var c workspace.ChangesResult
			decodeJSON(t, r, &c)
			if c.Last == 0 || c.Next != c.Last || len(c.Changes) == 0 {
				t.Fatalf("changes --json: %+v", c)
			}
			found := false
			for i, ch := range c.Changes {
				if i > 0 && ch.Seq <= c.Changes[i-1].Seq {
					t.Errorf("changes out of order: %+v", c.Changes)
				}
				found = found || (ch.Op == "create" && ch.Path == "/src/a.txt" && ch.Type == "file")
			}
			if !found {
				t.Errorf("changes --json lacks the creation of /src/a.txt: %+v", c.Changes)
			}
			h.vars["L"] = strconv.FormatUint(c.Last, 10)
			h.vars["L3"] = strconv.FormatUint(c.Last+3, 10)
		}},
		{name: "changes make", fn: func(t *testing.T, h *fsHarness) {
			fsMust(t, h.home, h.ws, "c\n", "write", "/chg.txt")
			fsMust(t, h.home, h.ws, "", "mv", "/chg.txt", "/chg2.txt")
			fsMust(t, h.home, h.ws, "", "rm", "/chg2.txt")
		}},
		{name: "changes since", args: []string{"changes", "--json", "--since", "{L}"}, check: func(t *testing.T, h *fsHarness, r result) {
			var c workspace.ChangesResult
			decodeJSON(t, r, &c)
			l, _ := strconv.ParseUint(h.vars["L"], 10, 64)
			var got []string
			for i, ch := range c.Changes {
				got = append(got, fmt.Sprintf("%d %s %s %s %s", ch.Seq-l, ch.Op, ch.Type, ch.Path, ch.NewPath))
				if ch.Time <= 0 || (i > 0 && ch.Time < c.Changes[i-1].Time) {
					t.Errorf("change times: %+v", c.Changes)
				}
			}
			want := []string{"1 create file /chg.txt ", "2 rename file /chg.txt /chg2.txt", "3 remove file /chg2.txt "}
			if strings.Join(got, "|") != strings.Join(want, "|") || c.Next != l+3 || c.Last != l+3 {
				t.Errorf("changes --since %d --json: %q next %d last %d, want %q", l, got, c.Next, c.Last, want)
			}
		}},
		{name: "changes since text", args: []string{"changes", "--since", "{L}"}, errHas: "last change {L3}",
			out: rx(`^\d+\t\S+\tcreate\s*\t/chg\.txt\n\d+\t\S+\trename\s*\t/chg\.txt -> /chg2\.txt\n\d+\t\S+\tremove\s*\t/chg2\.txt\n$`)},
		{name: "changes limit", args: []string{"changes", "--json", "--limit", "1", "--since", "{L}"}, check: func(t *testing.T, h *fsHarness, r result) {
			var c workspace.ChangesResult
			decodeJSON(t, r, &c)
			l, _ := strconv.ParseUint(h.vars["L"], 10, 64)
			if len(c.Changes) != 1 || c.Changes[0].Seq != l+1 || c.Next != l+1 || c.Last != l+3 {
				t.Errorf("changes --limit 1: %+v", c)
			}
		}},
		{name: "changes none", args: []string{"changes", "--since", "{L3}"}, out: "", errHas: "last change {L3}"},
		{name: "changes future", args: []string{"changes", "--since", "999999"}, code: exitFailed, errno: "EINVAL"},
		{name: "changes arg", args: []string{"changes", "x"}, code: exitUsage},

		// rm
		{name: "rm dir", args: []string{"rm", "/dst"}, code: exitFailed, errHas: "not empty", errno: "ENOTEMPTY", check: catIs("/dst/new.txt", "n\nm\n")},
		{name: "rm missing", args: []string{"rm", "/nope"}, code: exitFailed, errno: "ENOENT"},
		{name: "rm -f missing", args: []string{"rm", "-f", "/nope"}, out: ""},
		{name: "rm -r json", args: []string{"rm", "-r", "--json", "/dst"}, out: "{\n  \"removed\": 6\n}\n", check: catFails("/dst/new.txt")},
		{name: "rm -r -f", args: []string{"rm", "-r", "-f", "/empty", "/nope", "/made"}, out: ""},
		{name: "rm root", args: []string{"rm", "-r", "/"}, code: exitFailed, errno: "EBUSY"},
		{name: "rm no args", args: []string{"rm"}, code: exitUsage},
		{name: "ls at the end", args: []string{"ls", "-R"}, out: "/bin/\n/bin/run2.sh\n/g/\n/g/one.txt\n/g/sub/\n/g/sub/three.txt\n/g/two.log\n/src/\n/src/a.txt\n/src/b.md\n"},

		// Mount only: what `fs` does shows through the mount at once, and
		// what the mount does shows through `fs`.
		{name: "mount sees fs write", only: "mount", fn: func(t *testing.T, h *fsHarness) {
			if _, err := os.Stat(filepath.Join(h.mnt, "viz")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stat /viz through the mount: %v", err) // a negative entry the kernel may cache
			}
			fsMust(t, h.home, h.ws, "one\n", "write", "-p", "/viz/m1.txt")
			mountFile(t, h, "viz/m1.txt", "one\n")
			fsMust(t, h.home, h.ws, "two two\n", "write", "/viz/m1.txt")
			mountFile(t, h, "viz/m1.txt", "two two\n")
			fsMust(t, h.home, h.ws, "three\n", "write", "--append", "/viz/m1.txt")
			mountFile(t, h, "viz/m1.txt", "two two\nthree\n")
			fsMust(t, h.home, h.ws, "", "edit", "--replace-all", "--old", "two", "--new", "2", "/viz/m1.txt")
			mountFile(t, h, "viz/m1.txt", "2 2\nthree\n")
			fsMust(t, h.home, h.ws, "", "cp", "/viz/m1.txt", "/viz/copy.txt")
			mountFile(t, h, "viz/copy.txt", "2 2\nthree\n")
			fsMust(t, h.home, h.ws, "", "mv", "/viz/m1.txt", "/viz/m2.txt")
			mountGone(t, h, "viz/m1.txt")
			mountFile(t, h, "viz/m2.txt", "2 2\nthree\n")
			fsMust(t, h.home, h.ws, "", "rm", "/viz/m2.txt")
			mountGone(t, h, "viz/m2.txt")
			if _, err := os.Stat(filepath.Join(h.mnt, "viz/neg.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stat viz/neg.txt through the mount: %v", err)
			}
			fsMust(t, h.home, h.ws, "now here\n", "write", "/viz/neg.txt")
			mountFile(t, h, "viz/neg.txt", "now here\n")
			fsMust(t, h.home, h.ws, "", "mkdir", "/viz/d")
			if fi, err := os.Stat(filepath.Join(h.mnt, "viz/d")); err != nil || !fi.IsDir() {
				t.Errorf("stat viz/d through the mount after fs mkdir: %v %v", fi, err)
			}
			ents, err := os.ReadDir(filepath.Join(h.mnt, "viz"))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if err != nil || strings.Join(names, " ") != "copy.txt d neg.txt" {
				t.Errorf("readdir viz through the mount: %q %v", names, err)
			}
		}},
		{name: "fs sees mount write", only: "mount", fn: func(t *testing.T, h *fsHarness) {
			p := filepath.Join(h.mnt, "viz/k.txt")
			writeFile(t, p, []byte("from the kernel\n"))
			if r := fsMust(t, h.home, h.ws, "", "cat", "/viz/k.txt"); r.stdout != "from the kernel\n" {
				t.Errorf("fs cat after a write through the mount: %q", r.stdout)
			}
			writeFile(t, p, []byte("short\n"))
			if r := fsMust(t, h.home, h.ws, "", "cat", "/viz/k.txt"); r.stdout != "short\n" {
				t.Errorf("fs cat after a rewrite through the mount: %q", r.stdout)
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Still open: fs sees the data once it is written.
			if _, err := f.WriteString("more\n"); err != nil {
				t.Fatal(err)
			}
			if r := fsMust(t, h.home, h.ws, "", "cat", "/viz/k.txt"); r.stdout != "short\nmore\n" {
				t.Errorf("fs cat while the mount has the file open: %q", r.stdout)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(h.mnt, "viz/kd"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p, filepath.Join(h.mnt, "viz/kd/k2.txt")); err != nil {
				t.Fatal(err)
			}
			if r := fsMust(t, h.home, h.ws, "", "ls", "-R", "/viz"); r.stdout != "/viz/copy.txt\n/viz/d/\n/viz/kd/\n/viz/kd/k2.txt\n/viz/neg.txt\n" {
				t.Errorf("fs ls -R /viz after changes through the mount: %q", r.stdout)
			}
			if r := fsMust(t, h.home, h.ws, "", "grep", "more", "/viz"); r.stdout != "/viz/kd/k2.txt:2:more\n" {
				t.Errorf("fs grep after changes through the mount: %q", r.stdout)
			}
			// The edit shows through the mount, and fs sees the mount's
			// view of it.
			fsMust(t, h.home, h.ws, "", "edit", "--old", "short", "--new", "longer text", "/viz/kd/k2.txt")
			mountFile(t, h, "viz/kd/k2.txt", "longer text\nmore\n")
			fsMust(t, h.home, h.ws, "", "rm", "-r", "/viz")
			mountGone(t, h, "viz")
		}},
	}
}

// runFSTable runs the table against h, each step a subtest; a failed step
// does not stop those after it.
func runFSTable(t *testing.T, h *fsHarness) {
	for _, s := range fsTable() {
		if s.only != "" && s.only != h.mode {
			continue
		}
		t.Run(strings.ReplaceAll(s.name, " ", "_"), func(t *testing.T) { s.run(t, h) })
	}
}

func newHarness(t *testing.T, mode string) *fsHarness {
	home, ws, mnt := tempWorkspace(t)
	return &fsHarness{mode: mode, home: home, ws: ws, mnt: mnt, tmp: t.TempDir(), vars: map[string]string{}}
}

// TestFSCommands runs every `computerfs fs` subcommand against a serve
// daemon, a mount daemon and the store itself.
func TestFSCommands(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "serve")
		d := startServe(t, h.home, h.ws)
		runFSTable(t, h)
		if !processAlive(d.pid) {
			t.Fatalf("serve daemon %d died during the table", d.pid)
		}
		d.stop(t)
		fsckClean(t, h.home, h.ws)
	})
	t.Run("mount", func(t *testing.T) {
		needFUSE(t)
		t.Parallel()
		h := newHarness(t, "mount")
		p := startMount(t, h.home, h.ws, h.mnt)
		sock := socketPath(t, h.ws)
		if _, err := os.Stat(sock); err != nil {
			t.Fatalf("mount has no control socket: %v", err)
		}
		runFSTable(t, h)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("mount exited %d after SIGTERM\n%s", code, p.output())
		}
		if isMounted(h.mnt) {
			t.Errorf("%s still mounted after the daemon exited", h.mnt)
		}
		if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mount left its socket: %v", err)
		}
		fsckClean(t, h.home, h.ws)
	})
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "direct")
		createStore(t, h.ws)
		runFSTable(t, h)
		if _, err := os.Lstat(socketPath(t, h.ws)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a socket appeared without a daemon: %v", err)
		}
		fsckClean(t, h.home, h.ws)
	})
}

// TestFSNoWorkspace: the CLI does not create a store; it says how to.
func TestFSNoWorkspace(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	r := fsRun(t, home, ws, "", "ls")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no computerfs workspace at "+ws) || !strings.Contains(r.stderr, "computerfs init") {
		t.Errorf("fs ls on a missing workspace: %v", r)
	}
	r = fsRun(t, home, ws, "x", "write", "--json", "/x")
	if r.code != exitFailed {
		t.Errorf("fs write on a missing workspace: %v", r)
	} else if errno, _, _ := jsonErr(t, r); errno != "ENOENT" {
		t.Errorf("fs write --json on a missing workspace: errno %s, want ENOENT", errno)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fs created the store: %v", err)
	}
}

// TestFSChangesFollow streams changes from a serve daemon.
func TestFSChangesFollow(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	d := startServe(t, home, ws)
	fsMust(t, home, ws, "0\n", "write", "/before.txt")
	var c workspace.ChangesResult
	r := fsMust(t, home, ws, "", "changes", "--json")
	decodeJSON(t, r, &c)
	if c.Last == 0 {
		t.Fatalf("no changes after a write: %v", r)
	}

	cmd := exec.Command(cfsBin, fsArgs(ws, "changes", "--follow", "--json", "--since", strconv.FormatUint(c.Last, 10))...)
	cmd.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := newLineWriter("")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	stopFollow := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("changes --follow %d survived SIGKILL", cmd.Process.Pid)
		}
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(stopFollow) })

	fsMust(t, home, ws, "one\n", "write", "/f1.txt")
	fsMust(t, home, ws, "two\n", "write", "-p", "/dir/f2.txt")
	want := []string{"create file /f1.txt", "create dir /dir", "create file /dir/f2.txt"}
	for i, w := range want {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("changes --follow ended after %d lines\n%s", i, stderr.String())
			}
			var ch workspace.Change
			if err := json.Unmarshal([]byte(line), &ch); err != nil {
				t.Fatalf("changes --follow printed %q: %v", line, err)
			}
			if got := fmt.Sprintf("%s %s %s", ch.Op, ch.Type, ch.Path); got != w || ch.Seq != c.Last+uint64(i)+1 || ch.Time == 0 {
				t.Errorf("change %d: %+v, want %q seq %d", i, ch, w, c.Last+uint64(i)+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change %d from changes --follow within 10s\n%s", i, stderr.String())
		}
	}
	select {
	case line := <-lines:
		t.Errorf("changes --follow printed more: %q", line)
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case err := <-exited:
		t.Fatalf("changes --follow exited: %v\n%s", err, stderr.String())
	default:
	}
	once.Do(stopFollow)
	d.stop(t)
	fsckClean(t, home, ws)
}

// TestFSBadInput: paths that leave the workspace or are not UTF-8 fail
// and change nothing, through a daemon and without one.
func TestFSBadInput(t *testing.T) {
	for _, mode := range []string{"serve", "direct"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			home, ws, _ := tempWorkspace(t)
			var d *serveDaemon
			if mode == "serve" {
				d = startServe(t, home, ws)
			} else {
				createStore(t, ws)
			}
			fsMust(t, home, ws, "ok\n", "write", "/ok.txt")
			outside := filepath.Join(filepath.Dir(ws), "stolen.txt")
			last := func() uint64 {
				var c workspace.ChangesResult
				decodeJSON(t, fsMust(t, home, ws, "", "changes", "--json"), &c)
				return c.Last
			}
			before := last()
			for _, tc := range []struct {
				args  []string
				stdin string
				errno string
				msg   string
			}{
				{[]string{"cat", "../../etc/passwd"}, "", "EACCES", "escapes the workspace"},
				{[]string{"cat", "/../../../etc/passwd"}, "", "EACCES", "escapes the workspace"},
				{[]string{"cat", "/ok.txt/../../etc/passwd"}, "", "", ""}, // ENOTDIR or EACCES
				{[]string{"write", "../stolen.txt"}, "evil", "EACCES", "escapes the workspace"},
				{[]string{"write", "-p", "/a/../../stolen.txt"}, "evil", "EACCES", "escapes the workspace"},
				{[]string{"mkdir", "-p", "/a/../../b"}, "", "EACCES", "escapes the workspace"},
				{[]string{"cp", "/ok.txt", "../stolen.txt"}, "", "EACCES", "escapes the workspace"},
				{[]string{"mv", "/ok.txt", "../../stolen.txt"}, "", "EACCES", "escapes the workspace"},
				{[]string{"rm", "-r", "-f", ".."}, "", "EACCES", "escapes the workspace"},
				{[]string{"ls", ".."}, "", "EACCES", "escapes the workspace"},
				{[]string{"grep", "root", "../../etc"}, "", "EACCES", "escapes the workspace"},
				{[]string{"edit", "--old", "ok", "--new", "ko", "../ok.txt"}, "", "EACCES", "escapes the workspace"},
				{[]string{"cat", "/bad\xff.txt"}, "", "EINVAL", "UTF-8"},
				{[]string{"write", "/bad\xff.txt"}, "evil", "EINVAL", "UTF-8"},
				{[]string{"mkdir", "/bad\xff"}, "", "EINVAL", "UTF-8"},
				{[]string{"mv", "/ok.txt", "/bad\xff.txt"}, "", "EINVAL", "UTF-8"},
				{[]string{"cp", "/ok.txt", "/bad\xff.txt"}, "", "EINVAL", "UTF-8"},
				{[]string{"ls", "/\xfe"}, "", "EINVAL", "UTF-8"},
				{[]string{"stat", "/\xfe"}, "", "EINVAL", "UTF-8"},
			} {
				r := fsRun(t, home, ws, tc.stdin, append([]string{tc.args[0], "--json"}, tc.args[1:]...)...)
				if r.code != exitFailed || r.stdout != "" {
					t.Errorf("fs %q: exit %d, want %d\n%v", tc.args, r.code, exitFailed, r)
					continue
				}
				errno, msg, _ := jsonErr(t, r)
				if tc.errno != "" && errno != tc.errno {
					t.Errorf("fs %q: errno %s (%s), want %s", tc.args, errno, msg, tc.errno)
				}
				if !strings.Contains(msg, tc.msg) {
					t.Errorf("fs %q: message %q lacks %q", tc.args, msg, tc.msg)
				}
				if tc.msg == "escapes the workspace" {
					r := fsRun(t, home, ws, tc.stdin, tc.args...)
					if r.code != exitFailed || !strings.Contains(r.stderr, "escapes the workspace") {
						t.Errorf("fs %q without --json: %v", tc.args, r)
					}
				}
			}
			if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists: %v", outside, err)
			}
			if after := last(); after != before {
				var c workspace.ChangesResult
				decodeJSON(t, fsMust(t, home, ws, "", "changes", "--json", "--since", strconv.FormatUint(before, 10)), &c)
				t.Errorf("bad input changed the workspace: %+v", c.Changes)
			}
			if r := fsMust(t, home, ws, "", "ls", "-R"); r.stdout != "/ok.txt\n" {
				t.Errorf("fs ls -R after bad input: %q", r.stdout)
			}
			if r := fsMust(t, home, ws, "", "cat", "/ok.txt"); r.stdout != "ok\n" {
				t.Errorf("fs cat /ok.txt after bad input: %q", r.stdout)
			}
			if d != nil {
				if !processAlive(d.pid) {
					t.Fatalf("serve daemon died of bad input")
				}
				d.stop(t)
			}
			fsckClean(t, home, ws)
		})
	}
}

// TestFSDeadSocket: a daemon killed with SIGKILL leaves its socket; the
// CLI falls back to the store, and the next daemon takes the socket over.
func TestFSDeadSocket(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	d := startServe(t, home, ws)
	// --sync: a write without it may be lost to SIGKILL (it waits up to
	// the commit interval).
	fsMust(t, home, ws, "kept\n", "write", "--sync", "-p", "/d/kept.txt")
	if err := syscall.Kill(d.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(d.pid, 10*time.Second) {
		t.Fatalf("daemon %d survived SIGKILL", d.pid)
	}
	d.stopped = true
	if fi, err := os.Lstat(d.sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the killed daemon left no socket (%v %v): nothing to test", fi, err)
	}
	if r := fsMust(t, home, ws, "", "ls"); r.stdout != "d/\n" {
		t.Errorf("fs ls over a dead socket: %v", r)
	}
	if r := fsMust(t, home, ws, "", "ls", "-R", "/d"); r.stdout != "/d/kept.txt\n" {
		t.Errorf("fs ls -R over a dead socket: %v", r)
	}
	if r := fsMust(t, home, ws, "", "cat", "/d/kept.txt"); r.stdout != "kept\n" {
		t.Errorf("fs cat over a dead socket: %v", r)
	}
	fsMust(t, home, ws, "direct\n", "write", "/d/direct.txt")
	if r := fsMust(t, home, ws, "", "cat", "/d/direct.txt"); r.stdout != "direct\n" {
		t.Errorf("fs cat of a direct write over a dead socket: %v", r)
	}
	fsckClean(t, home, ws)

	// A new daemon replaces the stale socket.
	d2 := startServe(t, home, ws)
	if r := fsMust(t, home, ws, "", "grep", "-l", "e", "/d"); r.stdout != "/d/direct.txt\n/d/kept.txt\n" {
		t.Errorf("fs grep through the new daemon: %v", r)
	}
	// While it runs, the store is its: a direct open would fail, so a
	// working fs write went through it.
	fsMust(t, home, ws, "via daemon\n", "write", "/d/via.txt")
	d2.stop(t)
	if r := fsMust(t, home, ws, "", "cat", "/d/via.txt"); r.stdout != "via daemon\n" {
		t.Errorf("fs cat after the daemon stopped: %v", r)
	}
	fsckClean(t, home, ws)
}

// TestFSConcurrentClients: 8 clients write and read back through one
// daemon at once.
func TestFSConcurrentClients(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	d := startServe(t, home, ws)
	fsMust(t, home, ws, "", "mkdir", "/c")
	const clients = 8
	contents := make([]string, clients)
	for i := range contents {
		n := 1000 + i*5000
		if i == clients-1 {
			n = 1<<20 + 300000 // more than one stream message each way
		}
		if i%2 == 0 {
			contents[i] = string(textData(n))
		} else {
			contents[i] = string(randomData(n, uint64(i)))
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := fmt.Sprintf("/c/f%d", i)
			for round := 0; round < 2; round++ {
				data := contents[i] + strings.Repeat("+", round)
				w, err := runCfs(home, data, nil, fsArgs(ws, "write", "--json", p)...)
				if err != nil || w.code != 0 {
					t.Errorf("client %d: fs write: %v %v", i, err, w)
					return
				}
				var wr workspace.WriteResult
				if err := json.Unmarshal([]byte(w.stdout), &wr); err != nil || wr.Written != int64(len(data)) {
					t.Errorf("client %d: fs write --json: %v %q", i, err, w.stdout)
					return
				}
				r, err := runCfs(home, "", nil, fsArgs(ws, "cat", p)...)
				if err != nil || r.code != 0 {
					t.Errorf("client %d: fs cat: %v %v", i, err, r)
					return
				}
				if r.stdout != data {
					t.Errorf("client %d round %d: fs cat gave %d bytes, want %d", i, round, len(r.stdout), len(data))
				}
				j, err := runCfs(home, "", nil, fsArgs(ws, "cat", "--json", "--offset", "100", "--length", "50", p)...)
				var c struct {
					Content       *string `json:"content"`
					ContentBase64 []byte  `json:"content_base64"`
				}
				if err != nil || j.code != 0 || json.Unmarshal([]byte(j.stdout), &c) != nil {
					t.Errorf("client %d: fs cat --json: %v %v", i, err, j)
					return
				}
				got := string(c.ContentBase64)
				if c.Content != nil {
					got = *c.Content
				}
				if got != data[100:150] {
					t.Errorf("client %d: fs cat --json range: %q, want %q", i, got, data[100:150])
				}
			}
		}(i)
	}
	wg.Wait()
	r := fsMust(t, home, ws, "", "ls", "/c")
	if r.stdout != "f0\nf1\nf2\nf3\nf4\nf5\nf6\nf7\n" {
		t.Errorf("fs ls /c: %q", r.stdout)
	}
	d.stop(t)
	fsckClean(t, home, ws)
}
