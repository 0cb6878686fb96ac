package backends_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	dir1 := pluginDir(t, "test", "other", "a_b-9")
	// Not plugins: bad IDs, not executable, not a regular file, a broken
	// link, another name.
	for _, name := range []string{backends.Prefix + "Bad", backends.Prefix, backends.Prefix + "a.b", backends.Prefix + "sp ace", "notaplugin", "computerfs-plugin"} {
		if err := os.Symlink(pluginBin, filepath.Join(dir1, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir1, backends.Prefix+"noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir1, backends.Prefix+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir1, "missing"), filepath.Join(dir1, backends.Prefix+"dangling")); err != nil {
		t.Fatal(err)
	}
	// A second directory with a duplicate ID (loses) and a new one.
	dir2 := pluginDir(t, "test", "third")
	missing := filepath.Join(t.TempDir(), "does-not-exist")

	h := newHarness(t, []string{dir1, missing, dir2}, nil)
	ctx := context.Background()

	list := h.rt.List(ctx, false)
	var ids []string
	for _, bi := range list {
		ids = append(ids, bi.Id)
		if bi.State != backends.StateNotStarted {
			t.Errorf("%s: state %q before any exec, want %q", bi.Id, bi.State, backends.StateNotStarted)
		}
		if bi.Description != nil {
			t.Errorf("%s: described before it was started", bi.Id)
		}
	}
	if want := []string{"a_b-9", "other", "test", "third"}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("found %v, want %v", ids, want)
	}
	if p := h.info(t, "test").Path; p != filepath.Join(dir1, backends.Prefix+"test") {
		t.Errorf("test: path %s, want the first directory's", p)
	}
	if p := h.info(t, "third").Path; p != filepath.Join(dir2, backends.Prefix+"third") {
		t.Errorf("third: path %s", p)
	}

	// Lazy: nothing runs until the first exec.
	if pids := pluginPids(h.owner); len(pids) != 0 {
		t.Fatalf("plugin processes before any exec: %v", pids)
	}

	h.mustEcho(t, "test", "hi")
	bi := h.info(t, "test")
	if bi.State != backends.StateReady || bi.Execs != 1 || bi.Restarts != 0 || bi.Description.GetId() != "test" {
		t.Errorf("test after an exec: %v", bi)
	}
	if s := h.info(t, "other").State; s != backends.StateNotStarted {
		t.Errorf("other: state %q after an exec on test", s)
	}
	if pids := pluginPids(h.owner); len(pids) != 1 {
		t.Errorf("plugin processes after one exec: %v, want one", pids)
	}

	// Describe starts one more.
	desc, err := h.rt.Describe(ctx, "other")
	if err != nil || desc.Id != "other" || desc.Version != "0" {
		t.Fatalf("Describe(other) = %v, %v", desc, err)
	}
	if _, err := h.rt.Describe(ctx, "nope"); !errors.Is(err, backends.ErrNoBackend) {
		t.Errorf("Describe(nope): %v, want ErrNoBackend", err)
	}

	// List(describe) starts and describes the rest.
	for _, bi := range h.rt.List(ctx, true) {
		if bi.State != backends.StateReady || bi.Description.GetId() != bi.Id || bi.LastError != "" {
			t.Errorf("List(describe): %v", bi)
		}
	}
	if pids := pluginPids(h.owner); len(pids) != 4 {
		t.Errorf("plugin processes after List(describe): %v, want 4", pids)
	}
}

func TestNewWithoutWorkspace(t *testing.T) {
	if _, err := backends.New(backends.Options{}); err == nil {
		t.Fatal("New without a workspace succeeded")
	}
}

func TestExecBasics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // several stdin chunks
	tests := []struct {
		name    string
		req     backends.Request
		status  int
		stdout  string
		result  string
		stderrH string
	}{
		{name: "echo", req: backends.Request{Argv: []string{"echo", "hello", "world"}}, stdout: "hello world\n"},
		{name: "exit", req: backends.Request{Argv: []string{"exit", "7"}}, status: 7},
		{name: "cat", req: backends.Request{Argv: []string{"cat"}, Stdin: strings.NewReader("some input\n")}, stdout: "some input\n"},
		{name: "cat big", req: backends.Request{Argv: []string{"cat"}, Stdin: bytes.NewReader(big)}, stdout: string(big)},
		{name: "cat no stdin", req: backends.Request{Argv: []string{"cat"}}},
		{name: "env minimal", req: backends.Request{Argv: []string{"env"}},
			stdout: "HOME=/\nLANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\n"},
		{name: "env request", req: backends.Request{Argv: []string{"env"}, Env: map[string]string{"FOO": "bar", "LANG": "fr_FR.UTF-8"}},
			stdout: "FOO=bar\nHOME=/\nLANG=fr_FR.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\n"},
		{name: "result", req: backends.Request{Argv: []string{"result", `{"a":1}`}}, result: `{"a":1}`},
		{name: "unknown command", req: backends.Request{Argv: []string{"frobnicate"}}, status: 2, stdout: "unknown test command frobnicate\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Backend = "test"
			res, out, errOut, err := h.exec(t, &req)
			if err != nil {
				t.Fatal(err)
			}
			if got := backends.ExitStatus(res.Exit); got != tc.status {
				t.Errorf("exit status %d (%v), want %d", got, res.Exit, tc.status)
			}
			if out != tc.stdout {
				if len(out) > 200 {
					t.Errorf("stdout is %d bytes, want %d", len(out), len(tc.stdout))
				} else {
					t.Errorf("stdout %q, want %q", out, tc.stdout)
				}
			}
			if errOut != "" {
				t.Errorf("stderr %q", errOut)
			}
			if string(res.Result) != tc.result {
				t.Errorf("result %q, want %q", res.Result, tc.result)
			}
			if res.Backend != "test" || res.Reason != "named by the caller" || res.ID == "" || res.Start.IsZero() {
				t.Errorf("result record: %+v", res)
			}
			if res.Exit.TimedOut || res.Exit.Truncated {
				t.Errorf("exit %v", res.Exit)
			}
		})
	}
	if n := h.info(t, "test").Execs; n != int64(len(tests)) {
		t.Errorf("Execs = %d, want %d", n, len(tests))
	}
	if n := len(pluginPids(h.owner)); n != 1 {
		t.Errorf("%d plugin processes, want one for every exec", n)
	}
}

// TestStdinNotReadPastExec gives execs a stdin nobody writes to or
// closes: the exec must end anyway, and take its read of stdin with it.
func TestStdinNotReadPastExec(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	tests := []struct {
		name   string
		argv   []string
		status int
	}{
		{"a command that does not read", []string{"echo", "hi"}, 0},
		{"a command that fails", []string{"exit", "3"}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: tc.argv, Stdin: stdinR})
			if err != nil {
				t.Fatal(err)
			}
			if got := backends.ExitStatus(res.Exit); got != tc.status {
				t.Errorf("exit status %d, want %d", got, tc.status)
			}
			// Exec returned: its reader of stdin is gone, so a write
			// fails at once instead of blocking for a reader.
			written := make(chan error, 1)
			go func() {
				_, err := stdinW.Write([]byte("late"))
				written <- err
			}()
			select {
			case err := <-written:
				if err == nil {
					t.Error("a write to stdin after the exec found a reader")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a write to stdin after the exec blocked: stdin is still open")
			}
		})
	}
}

func TestExecIDsUnique(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	a := h.mustEcho(t, "test", "a")
	b := h.mustEcho(t, "test", "b")
	if a.ID == b.ID {
		t.Errorf("two execs share ID %s", a.ID)
	}
}

// The plugin process sees none of the host's environment, has stdin
// /dev/null and runs in its own process group.
func TestPluginProcess(t *testing.T) {
	t.Setenv("CFS_TEST_SECRET", "x")
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)

	_, out, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"procenv"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "CFS_TEST_SECRET") {
		t.Errorf("the plugin process sees the host's environment:\n%s", out)
	}
	vars := map[string]string{}
	inCert := false
	for _, kv := range strings.Split(strings.TrimSpace(out), "\n") {
		// go-plugin's PLUGIN_CLIENT_CERT spans lines.
		if inCert {
			inCert = kv != "-----END CERTIFICATE-----"
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		inCert = k == "PLUGIN_CLIENT_CERT"
		if kv == "" {
			continue
		}
		vars[k] = v
		switch {
		case k == "PATH", k == "LANG", k == "HOME", k == ownerEnv, k == "COMPUTERFS_PLUGIN_HOST_PID", k == "COMPUTERFS_PLUGIN", strings.HasPrefix(k, "PLUGIN_"):
		default:
			t.Errorf("unexpected variable in the plugin's environment: %s", kv)
		}
	}
	if vars[ownerEnv] != h.owner || vars["HOME"] != "/" || vars["PATH"] != "/usr/local/bin:/usr/bin:/bin" {
		t.Errorf("plugin environment: %v", vars)
	}

	_, out, _, err = h.exec(t, &backends.Request{Backend: "test", Argv: []string{"stdin-fd"}})
	if err != nil {
		t.Fatal(err)
	}
	if out != "/dev/null\n" {
		t.Errorf("the plugin's stdin is %q, want /dev/null", out)
	}

	res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"signal-group"}})
	if err != nil {
		t.Fatal(err)
	}
	pgid := int(res.Exit.ExitCode)
	if pgid == syscall.Getpgrp() {
		t.Errorf("the plugin runs in the host's process group %d", pgid)
	}
	if pid := onePlugin(t, h.owner); pgid != pid {
		t.Errorf("the plugin's process group is %d, want its own (%d)", pgid, pid)
	}
	if ppid := ppidOf(onePlugin(t, h.owner)); ppid != os.Getpid() {
		t.Errorf("the plugin's parent is %d, want the host %d", ppid, os.Getpid())
	}
}

// Each misbehaviour fails its exec only: the next exec on the same
// runtime succeeds, on a restarted plugin when the old one was killed.
func TestMisbehavingPlugins(t *testing.T) {
	type check func(t *testing.T, res *backends.Result, stdout, stderr string, elapsed time.Duration)
	reasonHas := func(subs ...string) check {
		return func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
			for _, s := range subs {
				if !strings.Contains(res.Exit.Reason, s) {
					t.Errorf("reason %q does not mention %q", res.Exit.Reason, s)
				}
			}
		}
	}
	status := func(want int) check {
		return func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
			if got := backends.ExitStatus(res.Exit); got != want {
				t.Errorf("exit status %d (%v), want %d", got, res.Exit, want)
			}
		}
	}
	stdoutIs := func(want string) check {
		return func(t *testing.T, _ *backends.Result, out, _ string, _ time.Duration) {
			if out != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
		}
	}
	within := func(d time.Duration) check {
		return func(t *testing.T, _ *backends.Result, _, _ string, elapsed time.Duration) {
			if elapsed > d {
				t.Errorf("took %s, want at most %s", elapsed, d)
			}
		}
	}
	tests := []struct {
		name   string
		req    backends.Request
		cancel time.Duration // cancel the Exec's ctx after this long
		signal time.Duration // send SIGKILL through Request.Signals after this long
		crash  bool          // the plugin process is killed and restarted
		checks []check
	}{
		{name: "crash", req: backends.Request{Argv: []string{"crash"}}, crash: true,
			checks: []check{status(126), reasonHas("backend test", "exec stream broke"), stdoutIs("")}},
		{name: "crash-after-output", req: backends.Request{Argv: []string{"crash-after-output"}}, crash: true,
			checks: []check{status(126), reasonHas("exec stream broke"), stdoutIs("partial\n")}},
		{name: "hang", req: backends.Request{Argv: []string{"hang"}, Timeout: 300 * time.Millisecond}, crash: true,
			checks: []check{reasonHas("timed out after 300ms"), within(6 * time.Second),
				func(t *testing.T, res *backends.Result, _, _ string, elapsed time.Duration) {
					if !res.Exit.TimedOut {
						t.Errorf("exit %v: not timed out", res.Exit)
					}
					if backends.ExitStatus(res.Exit) == 0 {
						t.Errorf("a timed-out exec exits 0")
					}
					if elapsed < 300*time.Millisecond {
						t.Errorf("timed out after %s, before the timeout", elapsed)
					}
				}}},
		{name: "flood", req: backends.Request{Argv: []string{"flood"}, OutputLimit: 100000}, crash: true,
			checks: []check{reasonHas("output went past the limit of 100000 bytes"), within(10 * time.Second),
				func(t *testing.T, res *backends.Result, out, _ string, _ time.Duration) {
					if !res.Exit.Truncated {
						t.Errorf("exit %v: not truncated", res.Exit)
					}
					if len(out) != 100000 || strings.Trim(out, "x") != "" {
						t.Errorf("stdout is %d bytes, want exactly 100000 x", len(out))
					}
				}}},
		{name: "bigchunk", req: backends.Request{Argv: []string{"bigchunk"}}, crash: true,
			checks: []check{status(126), reasonHas("output chunk of 65537 bytes"), stdoutIs("")}},
		{name: "early-output", req: backends.Request{Argv: []string{"early-output"}}, crash: true,
			checks: []check{status(126), reasonHas("output before started"), stdoutIs("")}},
		{name: "noexit", req: backends.Request{Argv: []string{"noexit"}}, crash: true,
			checks: []check{status(126), reasonHas("without an exit message"), stdoutIs("bye\n")}},
		{name: "badjson", req: backends.Request{Argv: []string{"badjson"}}, crash: true,
			checks: []check{status(126), reasonHas("not valid JSON"),
				func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
					if res.Result != nil {
						t.Errorf("an invalid result was delivered: %q", res.Result)
					}
				}}},
		{name: "after-exit", req: backends.Request{Argv: []string{"after-exit"}}, crash: true,
			checks: []check{status(126), reasonHas("message after exit"), stdoutIs("")}},
		{name: "result", req: backends.Request{Argv: []string{"result", `{"a":1}`}},
			checks: []check{status(0), func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
				if string(res.Result) != `{"a":1}` {
					t.Errorf("result %q", res.Result)
				}
			}}},
		{name: "signal SIGKILL", req: backends.Request{Argv: []string{"sleep", "10s"}}, signal: 200 * time.Millisecond,
			checks: []check{status(137), within(3 * time.Second), func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
				if res.Exit.Signal != 9 {
					t.Errorf("exit %v, want signal 9", res.Exit)
				}
			}}},
		{name: "ctx cancel", req: backends.Request{Argv: []string{"sleep", "10s"}}, cancel: 200 * time.Millisecond,
			checks: []check{status(137), reasonHas("cancelled"), within(3 * time.Second)}},
		{name: "ctx cancel hang", req: backends.Request{Argv: []string{"hang"}}, cancel: 200 * time.Millisecond, crash: true,
			checks: []check{within(6 * time.Second), func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
				if backends.ExitStatus(res.Exit) == 0 {
					t.Errorf("a cancelled hung exec exits 0")
				}
			}}},
		{name: "sleep times out", req: backends.Request{Argv: []string{"sleep", "10s"}, Timeout: 300 * time.Millisecond},
			checks: []check{within(3 * time.Second), reasonHas("timed out after 300ms"),
				func(t *testing.T, res *backends.Result, _, _ string, _ time.Duration) {
					if !res.Exit.TimedOut || res.Exit.Signal == 0 {
						t.Errorf("exit %v: want timed out by a signal", res.Exit)
					}
				}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, []string{pluginDir(t, "test")}, nil)
			h.mustEcho(t, "test", "warm")
			pid := onePlugin(t, h.owner)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			req := tc.req
			req.Backend = "test"
			if tc.signal > 0 {
				sigs := make(chan syscall.Signal, 1)
				req.Signals = sigs
				time.AfterFunc(tc.signal, func() { sigs <- syscall.SIGKILL })
			}
			var stdout, stderr bytes.Buffer
			t0 := time.Now()
			res, err := h.rt.Exec(ctx, &req, &stdout, &stderr)
			elapsed := time.Since(t0)
			if err != nil {
				t.Fatalf("Exec: %v (the error is for failing to run at all)", err)
			}
			if res.Exit == nil {
				t.Fatal("no exit")
			}
			for _, c := range tc.checks {
				c(t, res, stdout.String(), stderr.String(), elapsed)
			}

			bi := h.info(t, "test")
			if tc.crash {
				if bi.State != backends.StateCrashed || bi.LastError == "" {
					t.Errorf("after %s: state %q, last error %q; want crashed with an error", tc.name, bi.State, bi.LastError)
				}
				if !waitDead(pid, 5*time.Second) {
					t.Errorf("the misbehaving plugin process %d is still alive", pid)
				}
			} else if bi.State != backends.StateReady {
				t.Errorf("after %s: state %q, want ready", tc.name, bi.State)
			}

			// The runtime recovers.
			h.mustEcho(t, "test", "again")
			bi = h.info(t, "test")
			wantRestarts := int64(0)
			if tc.crash {
				wantRestarts = 1
			}
			if bi.State != backends.StateReady || bi.Restarts != wantRestarts || bi.LastError != "" || bi.Execs != 3 {
				t.Errorf("after recovery: %v; want ready with %d restarts and 3 execs", bi, wantRestarts)
			}
			if tc.crash {
				if pids := pluginPids(h.owner); len(pids) != 1 || pids[0] == pid {
					t.Errorf("plugin processes after a restart: %v (old %d)", pids, pid)
				}
			} else if !alive(pid) {
				t.Errorf("the plugin process %d was killed though it behaved", pid)
			}
		})
	}
}

// A plugin process that dies between execs is noticed and restarted.
func TestPluginKilledBetweenExecs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	h.mustEcho(t, "test", "one")
	pid := onePlugin(t, h.owner)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.info(t, "test").State != backends.StateCrashed {
		if time.Now().After(deadline) {
			t.Fatalf("state %q after the plugin was killed, want crashed", h.info(t, "test").State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if bi := h.info(t, "test"); bi.LastError == "" {
		t.Errorf("crashed without a last error: %v", bi)
	}
	h.mustEcho(t, "test", "two")
	if bi := h.info(t, "test"); bi.State != backends.StateReady || bi.Restarts != 1 {
		t.Errorf("after the restart: %v", bi)
	}
}

// Execs run concurrently on one plugin process.
func TestConcurrentExecs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test", "other")}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := []string{"test", "other"}[i%2]
			in := strings.Repeat(strconv.Itoa(i), 1000+i)
			var stdout bytes.Buffer
			res, err := h.rt.Exec(context.Background(), &backends.Request{Backend: id, Argv: []string{"cat"}, Stdin: strings.NewReader(in)}, &stdout, nil)
			switch {
			case err != nil:
				errs <- err
			case backends.ExitStatus(res.Exit) != 0 || stdout.String() != in:
				errs <- errors.New("exec " + strconv.Itoa(i) + ": " + res.Exit.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if pids := pluginPids(h.owner); len(pids) != 2 {
		t.Errorf("plugin processes: %v, want one per backend", pids)
	}
	for _, id := range []string{"test", "other"} {
		if bi := h.info(t, id); bi.Execs != 8 || bi.Restarts != 0 {
			t.Errorf("%s: %v", id, bi)
		}
	}
}

// A closed Signals channel is no signal: it must not spin or disturb the
// exec.
func TestClosedSignalsChannel(t *testing.T) {
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	h.mustEcho(t, "test", "warm")
	sigs := make(chan syscall.Signal)
	close(sigs)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"sleep", "500ms"}, Signals: sigs})
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		t.Fatal(err)
	}
	if backends.ExitStatus(res.Exit) != 0 {
		t.Errorf("exit %v, want 0", res.Exit)
	}
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	t.Logf("host CPU during the exec: %s", cpu)
	if cpu > 150*time.Millisecond { // about 10ms when idle; a spin takes 250ms and more
		t.Errorf("the host used %s of CPU during a 500ms idle exec: it spins on the closed channel", cpu)
	}
}

func TestWrongID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "wrongid", "test")}, nil)
	for i := range 2 {
		_, _, _, err := h.exec(t, &backends.Request{Backend: "wrongid", Argv: []string{"echo", "x"}})
		if err == nil || !strings.Contains(err.Error(), `says its ID is "someone-else"`) || !strings.Contains(err.Error(), `"wrongid"`) {
			t.Fatalf("exec %d on a plugin that lies about its ID: %v", i, err)
		}
		var se *backends.StartError
		if !errors.As(err, &se) || se.Stage != backends.StageDescribe || se.Desc.GetId() != "someone-else" {
			t.Errorf("exec %d: %#v, want a StartError at %q with the description", i, se, backends.StageDescribe)
		}
		if left := waitNoPlugins(h.owner, 5*time.Second); len(left) != 0 {
			t.Fatalf("processes left after a failed start: %v", left)
		}
	}
	bi := h.info(t, "wrongid")
	if bi.State != backends.StateFailed || !strings.Contains(bi.LastError, "someone-else") || bi.Execs != 0 {
		t.Errorf("wrongid: %v", bi)
	}
	// The others are unaffected.
	h.mustEcho(t, "test", "fine")
	// List(describe) reports the failure instead of failing.
	for _, bi := range h.rt.List(context.Background(), true) {
		if bi.Id == "wrongid" && bi.State != backends.StateFailed {
			t.Errorf("List(describe): wrongid %v", bi)
		}
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test", "other")}, nil)
	pgids := map[string]int{}
	for _, id := range []string{"test", "other"} {
		res, _, _, err := h.exec(t, &backends.Request{Backend: id, Argv: []string{"signal-group"}})
		if err != nil {
			t.Fatal(err)
		}
		pgids[id] = int(res.Exit.ExitCode)
	}
	pids := pluginPids(h.owner)
	sort.Ints(pids)
	if len(pids) != 2 {
		t.Fatalf("plugin processes %v, want 2", pids)
	}
	for id, pg := range pgids {
		if pg != pids[0] && pg != pids[1] {
			t.Errorf("%s: process group %d is not one of the plugins' own %v", id, pg, pids)
		}
	}
	// A process the plugin "started": a member of its process group. It
	// must die with the plugin.
	child := exec.Command("sleep", "60")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgids["test"]}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan error, 1)
	go func() { childDone <- child.Wait() }()
	defer child.Process.Kill()

	t0 := time.Now()
	h.rt.Close()
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	for _, pid := range pids {
		if !waitDead(pid, 5*time.Second) {
			t.Errorf("plugin process %d survived Close", pid)
		}
	}
	select {
	case <-childDone:
	case <-time.After(5 * time.Second):
		t.Errorf("a process in the plugin's process group survived Close")
	}
	h.rt.Close() // twice is fine
	_, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"echo"}})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Exec after Close: %v", err)
	}
	if _, err := h.rt.Describe(context.Background(), "test"); err == nil {
		t.Errorf("Describe after Close succeeded")
	}
	if pids := pluginPids(h.owner); len(pids) != 0 {
		t.Errorf("processes after Close: %v", pids)
	}
}

func TestChoose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type want struct {
		id     string
		reason string // substring
		noBack bool   // errors.Is ErrNoBackend
	}
	tests := []struct {
		name    string
		plugins []string
		policy  backends.Policy
		req     backends.Request
		want    want
	}{
		{"named", []string{"test"}, backends.Policy{}, backends.Request{Backend: "test"}, want{id: "test", reason: "named by the caller"}},
		{"named unknown", []string{"test"}, backends.Policy{}, backends.Request{Backend: "nope"}, want{noBack: true}},
		{"default shell missing", []string{"test"}, backends.Policy{}, backends.Request{Argv: []string{"echo hi"}}, want{noBack: true}},
		{"default shell", []string{"test", "shell"}, backends.Policy{}, backends.Request{Argv: []string{"echo hi"}}, want{id: "shell", reason: "default backend"}},
		{"policy default", []string{"test", "shell"}, backends.Policy{Default: "test"}, backends.Request{Argv: []string{"echo hi"}}, want{id: "test", reason: "default backend"}},
		{"policy default missing", []string{"test"}, backends.Policy{Default: "gone"}, backends.Request{Argv: []string{"x"}}, want{noBack: true}},
		{"argv kind skips the shell rules", []string{"test", "shell", "container"}, backends.Policy{Default: "test"}, backends.Request{Kind: "argv", Argv: []string{"ls"}}, want{id: "test", reason: "default backend"}},
		// The test plugin installed as "shell" describes no commands, so
		// every command is missing from it and goes to container.
		{"container for binaries", []string{"shell", "container"}, backends.Policy{}, backends.Request{Argv: []string{"ls -l | wc"}}, want{id: "container", reason: "ls, wc are not a shell command"}},
		{"unparsable script", []string{"shell", "container"}, backends.Policy{}, backends.Request{Argv: []string{"echo 'unterminated"}}, want{id: "shell", reason: "default backend"}},
		{"js module", []string{"test", "js"}, backends.Policy{}, backends.Request{Kind: "js-module"}, want{id: "js", reason: "JavaScript"}},
		{"js file", []string{"test", "js"}, backends.Policy{}, backends.Request{File: "/a/b.mjs"}, want{id: "js"}},
		{"js missing", []string{"test", "shell"}, backends.Policy{}, backends.Request{File: "/a/b.js"}, want{noBack: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []string{pluginDir(t, tc.plugins...)}, func(o *backends.Options) { o.Policy = tc.policy })
			id, reason, err := h.rt.Choose(ctx, &tc.req)
			if tc.want.noBack {
				if !errors.Is(err, backends.ErrNoBackend) {
					t.Fatalf("Choose = %q, %q, %v; want ErrNoBackend", id, reason, err)
				}
				_, _, _, err := h.exec(t, &tc.req)
				if !errors.Is(err, backends.ErrNoBackend) {
					t.Errorf("Exec: %v, want ErrNoBackend", err)
				}
				return
			}
			if err != nil || id != tc.want.id || !strings.Contains(reason, tc.want.reason) {
				t.Fatalf("Choose = %q, %q, %v; want %q, %q", id, reason, err, tc.want.id, tc.want.reason)
			}
		})
	}

	// An exec that names no backend runs where Choose says.
	h := newHarness(t, []string{pluginDir(t, "test", "shell")}, nil)
	res, out, _, err := h.exec(t, &backends.Request{Argv: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != "shell" || !strings.Contains(res.Reason, "default backend") || out != "hi\n" {
		t.Errorf("exec without a backend: %q %q %q", res.Backend, res.Reason, out)
	}
}

func TestPolicyEnvAndDisabled(t *testing.T) {
	t.Parallel()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{
		"test":  {Env: map[string]string{"POLICY_VAR": "1", "LANG": "C"}, AllowEnv: []string{"FOO", "LANG"}},
		"other": {Disabled: true},
	}}
	h := newHarness(t, []string{pluginDir(t, "test", "other")}, func(o *backends.Options) { o.Policy = pol })

	_, out, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"env"}, Env: map[string]string{"FOO": "bar"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "FOO=bar\nHOME=/\nLANG=C\nPATH=/usr/local/bin:/usr/bin:/bin\nPOLICY_VAR=1\n"; out != want {
		t.Errorf("env:\n%s\nwant:\n%s", out, want)
	}
	_, out, _, err = h.exec(t, &backends.Request{Backend: "test", Argv: []string{"env"}, Env: map[string]string{"LANG": "de"}})
	if err != nil || !strings.Contains(out, "LANG=de\n") {
		t.Errorf("the request's value does not win over the policy's: %q %v", out, err)
	}
	for _, env := range []map[string]string{{"SECRET": "x"}, {"A=B": "x"}, {"": "x"}, {"FOO": "a\x00b"}} {
		if _, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"env"}, Env: env}); err == nil {
			t.Errorf("env %q accepted", env)
		}
	}
	if _, _, _, err := h.exec(t, &backends.Request{Backend: "other", Argv: []string{"echo"}}); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("exec on a disabled backend: %v", err)
	}
	if s := h.info(t, "other").State; s != backends.StateNotStarted {
		t.Errorf("a disabled backend was started: %s", s)
	}
}

// The policy's root and read_only reach Configure: the mount path is the
// root's directory of the mount, and read_only is a setting. Only a
// backend that says needs_mount is given the mount (the test plugin does
// under IDs mnt-*).
func TestPolicyReachesConfigure(t *testing.T) {
	t.Parallel()
	mnt, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(mnt, "sub", "deeper"), 0o755)
	os.Symlink("sub/deeper", filepath.Join(mnt, "inside"))
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{
		"mnt-test":   {Root: "/sub", ReadOnly: true, Settings: map[string]string{"network": "host"}},
		"mnt-other":  {Root: "/sub/../inside"},
		"needsmount": {Root: "sub/deeper/.."},
		"hostfsonly": {Root: "/wsonly"}, // in the workspace, not on this mount
		"mnt-ro":     {ReadOnly: true, Settings: map[string]string{"read_only": "false"}},
	}}
	ids := []string{"mnt-test", "mnt-other", "needsmount", "hostfsonly", "mnt-ro", "mnt-plain", "plain"}
	h := newHarness(t, []string{pluginDir(t, ids...)}, func(o *backends.Options) { o.Policy = pol; o.MountPath = mnt })
	for _, d := range []string{"/sub/deeper/f", "/inside/f", "/wsonly/f"} {
		writeWS(t, h.ws, d, "x")
	}
	for _, tc := range []struct{ id, want string }{
		{"mnt-test", "mount=" + mnt + "/sub\nnetwork=host\nread_only=true\n"},
		{"mnt-other", "mount=" + mnt + "/sub/deeper\n"},
		{"needsmount", "mount=" + mnt + "/sub\n"},
		{"hostfsonly", "mount=\n"},
		{"mnt-ro", "mount=" + mnt + "\nread_only=true\n"},
		{"mnt-plain", "mount=" + mnt + "\n"},
		{"plain", "mount=\n"}, // does not need the mount: none
	} {
		res, out, errOut, err := h.exec(t, &backends.Request{Backend: tc.id, Argv: []string{"configure"}})
		if err != nil || backends.ExitStatus(res.Exit) != 0 {
			t.Errorf("%s: %v %v %q", tc.id, err, res, errOut)
			continue
		}
		if out != tc.want {
			t.Errorf("%s: Configure got\n%s\nwant\n%s", tc.id, out, tc.want)
		}
	}
	if s := pol.Backends["mnt-ro"].Settings["read_only"]; s != "false" {
		t.Errorf("For changed the policy's own settings: read_only=%q", s)
	}
}

// A backend that needs the mount does not start with a policy root that
// is missing, not a directory, or outside the mount.
func TestPolicyRootRefused(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	os.WriteFile(filepath.Join(mnt, "file"), nil, 0o644)
	os.Symlink(t.TempDir(), filepath.Join(mnt, "escape"))
	os.Symlink("..", filepath.Join(mnt, "up"))
	for _, tc := range []struct{ root, want string }{
		{"/missing", "not on the workspace mount"},
		{"/file", "is not a directory"},
		{"/escape", "outside the workspace mount"},
		{"/up", "outside the workspace mount"},
	} {
		t.Run(tc.root, func(t *testing.T) {
			t.Parallel()
			pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"needsmount": {Root: tc.root}}}
			h := newHarness(t, []string{pluginDir(t, "needsmount")}, func(o *backends.Options) { o.Policy = pol; o.MountPath = mnt })
			_, _, _, err := h.exec(t, &backends.Request{Backend: "needsmount", Argv: []string{"configure"}})
			if err == nil || !strings.Contains(err.Error(), "policy root "+tc.root) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("root %s: %v; want an error saying %q", tc.root, err, tc.want)
			}
			if s := h.info(t, "needsmount").State; s != backends.StateFailed {
				t.Errorf("state %s, want failed", s)
			}
		})
	}
}

// The backend's limits apply within its maximums.
func TestStructuredInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"echo"}, Input: []byte("{bad")})
	if err != nil {
		t.Fatal(err)
	}
	if backends.ExitStatus(res.Exit) != 2 || !strings.Contains(res.Exit.Reason, "not valid JSON") {
		t.Errorf("invalid structured input: %v", res.Exit)
	}
	h.mustEcho(t, "test", "ok")
	res, _, _, err = h.exec(t, &backends.Request{Backend: "test", Argv: []string{"echo"}, Input: []byte(`{"ok":true}`)})
	if err != nil || backends.ExitStatus(res.Exit) != 0 {
		t.Errorf("valid structured input: %v %v", res.Exit, err)
	}
}

func TestExecLog(t *testing.T) {
	t.Parallel()
	var log lockedBuf
	var mu sync.Mutex
	var seen []*backends.Result
	h := newHarness(t, []string{pluginDir(t, "test")}, func(o *backends.Options) {
		o.ExecLog = &log
		o.OnExec = func(r *backends.Result) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r)
		}
	})
	h.mustEcho(t, "test", "a")
	if _, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/logged", "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"exit", "3"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("exec log has %d lines, want 3:\n%s", len(lines), log.String())
	}
	var recs []map[string]any
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("exec log line %q: %v", l, err)
		}
		recs = append(recs, rec)
	}
	if recs[0]["backend"] != "test" || recs[0]["reason"] != "named by the caller" || recs[0]["id"] == "" {
		t.Errorf("record: %v", recs[0])
	}
	changed, _ := recs[1]["changed"].([]any)
	found := false
	for _, p := range changed {
		found = found || p == "/logged"
	}
	if !found {
		t.Errorf("the write's record does not list /logged: %v", recs[1])
	}
	if recs[2]["exit_code"] != float64(3) || recs[2]["exit"] != float64(3) || recs[2]["oom_killed"] != false {
		t.Errorf("record: %v", recs[2])
	}
	// OnExec saw each exec once recorded, in order.
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0].ID != recs[0]["id"] || seen[2].ID != recs[2]["id"] || backends.ExitStatus(seen[2].Exit) != 3 {
		t.Errorf("OnExec saw %d results: %+v", len(seen), seen)
	}
	// The list shows the running plugin's pid.
	for _, b := range h.rt.List(context.Background(), false) {
		if b.Id == "test" && (b.State != backends.StateReady || b.Pid <= 0 || !alive(int(b.Pid))) {
			t.Errorf("backend info of a ready plugin: %+v", b)
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		e     *pb.Exit
		want  int
		class string
	}{
		{nil, 1, "error"},
		{&pb.Exit{}, 0, "ok"},
		{&pb.Exit{ExitCode: 3}, 3, "error"},
		{&pb.Exit{ExitCode: 124}, 124, "error"}, // by itself, not the limit
		{&pb.Exit{Signal: 9}, 137, "error"},
		{&pb.Exit{Signal: 15, ExitCode: 1}, 143, "error"},
		{&pb.Exit{TimedOut: true, Signal: 9}, 124, "timeout"},
		{&pb.Exit{Truncated: true}, 141, "output_cut"},
		{&pb.Exit{OomKilled: true, Signal: 9}, 137, "memory"},
	} {
		if got := backends.ExitStatus(tc.e); got != tc.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", tc.e, got, tc.want)
		}
		if got := backends.ExitClass(tc.e); got != tc.class {
			t.Errorf("ExitClass(%v) = %q, want %q", tc.e, got, tc.class)
		}
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	p, err := backends.LoadPolicy(filepath.Join(dir, "missing.json"))
	if err != nil || p.Default != "" || p.Backends != nil {
		t.Errorf("missing policy: %+v, %v", p, err)
	}
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"default":"test","backends":{"test":{"root":"/sub","read_only":true,"commands":["ls","cat"],"settings":{"network":"none"}}}}`), 0o644)
	p, err = backends.LoadPolicy(good)
	if err != nil {
		t.Fatal(err)
	}
	bp := p.For("test")
	if p.Default != "test" || bp.Root != "/sub" || !bp.ReadOnly || bp.Settings["network"] != "none" || bp.Settings["commands"] != "ls,cat" {
		t.Errorf("policy: %+v, For(test) = %+v", p, bp)
	}
	if bp.Settings["read_only"] != "true" {
		t.Errorf("For(test) has no read_only setting: %v", bp.Settings)
	}
	if p.Backends["test"].Settings["commands"] != "" || p.Backends["test"].Settings["read_only"] != "" {
		t.Errorf("For modified the policy's own settings: %v", p.Backends["test"].Settings)
	}
	if z := p.For("nope"); z.Root != "" || z.ReadOnly || z.Settings != nil {
		t.Errorf("For(unknown) = %+v", z)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"defualt":"x"}`), 0o644)
	if _, err := backends.LoadPolicy(bad); err == nil {
		t.Errorf("a policy with an unknown field loaded")
	}
	os.WriteFile(bad, []byte(`{`), 0o644)
	if _, err := backends.LoadPolicy(bad); err == nil {
		t.Errorf("a malformed policy loaded")
	}
}

func TestDefaultDirs(t *testing.T) {
	t.Setenv("COMPUTERFS_PLUGIN_PATH", "/a:/b")
	dirs := backends.DefaultDirs("/home/x")
	if len(dirs) != 3 || dirs[1] != "/a" || dirs[2] != "/b" {
		t.Errorf("DefaultDirs = %v", dirs)
	}
	t.Setenv("COMPUTERFS_PLUGIN_PATH", "")
	dirs = backends.DefaultDirs("/home/x")
	if len(dirs) != 2 || dirs[1] != "/home/x/plugins" {
		t.Errorf("DefaultDirs = %v", dirs)
	}
}

// Close while List(describe) is starting plugins one after another: no
// plugin may be started after Close, and none may be left running.
func TestCloseDuringStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "a", "b", "c", "d", "e", "f")}, nil)
	listed := make(chan []*pb.BackendInfo, 1)
	go func() { listed <- h.rt.List(context.Background(), true) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(pluginPids(h.owner)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no plugin started")
		}
		time.Sleep(time.Millisecond)
	}
	h.rt.Close()
	var list []*pb.BackendInfo
	select {
	case list = <-listed:
	case <-time.After(30 * time.Second):
		t.Fatal("List(describe) did not return after Close")
	}
	if left := waitNoPlugins(h.owner, 5*time.Second); len(left) != 0 {
		var states []string
		for _, bi := range list {
			states = append(states, bi.Id+": "+bi.State)
		}
		t.Errorf("plugins started after Close are left running: %v (states %v)", left, states)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if _, err := h.rt.Describe(context.Background(), "f"); err == nil {
		t.Errorf("Describe after Close succeeded")
	}
}

// When a plugin dies by itself, what is left of its process group dies
// with it at once, not at the next exec or at Close.
func TestGroupKilledWhenPluginDies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"signal-group"}})
	if err != nil {
		t.Fatal(err)
	}
	pgid := int(res.Exit.ExitCode)
	child := exec.Command("sleep", "60")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan error, 1)
	go func() { childDone <- child.Wait() }()
	defer child.Process.Kill()
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil { // the plugin alone
		t.Fatal(err)
	}
	select {
	case <-childDone:
	case <-time.After(5 * time.Second):
		t.Errorf("a process in the group of a plugin that died is still running")
	}
	h.mustEcho(t, "test", "restarted")
}

// One table of exit statuses for every backend: a limit gives the same
// status whatever the plugin reported with it.
func TestExitStatusTable(t *testing.T) {
	for _, tc := range []struct {
		exit *pb.Exit
		want int
	}{
		{nil, 1},
		{&pb.Exit{ExitCode: 3}, 3},
		{&pb.Exit{TimedOut: true, Signal: 15, ExitCode: 143}, backends.StatusTimedOut},
		{&pb.Exit{TimedOut: true, ExitCode: 124}, backends.StatusTimedOut},
		{&pb.Exit{Truncated: true, ExitCode: 0}, backends.StatusOutputCut},
		{&pb.Exit{Truncated: true, Signal: 9}, backends.StatusOutputCut},
		{&pb.Exit{Truncated: true, ExitCode: 1}, backends.StatusOutputCut},
		{&pb.Exit{OomKilled: true, ExitCode: 137}, backends.StatusMemory},
		{&pb.Exit{Signal: 2}, 130},
	} {
		if got := backends.ExitStatus(tc.exit); got != tc.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", tc.exit, got, tc.want)
		}
	}
}
