package containerbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// startModes are the three ways a container starts: warm from the pool,
// cold with the init (pool off), and cold without an init.
var startModes = []struct {
	name     string
	settings map[string]string
	noInit   bool
}{
	{name: "warm"},
	{name: "cold", settings: map[string]string{"pool": "0"}},
	{name: "no init", noInit: true},
}

func newModeBackend(t *testing.T, settings map[string]string, noInit bool) (*Backend, string) {
	return newBackendWith(t, settings, func(b *Backend) {
		if noInit {
			b.Init = ""
		}
	})
}

// waitWarm waits until the pool has a warm container ready.
func waitWarm(t *testing.T, b *Backend) {
	t.Helper()
	if b.pool == nil {
		return
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.pool.mu.Lock()
		n := len(b.pool.ready)
		b.pool.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no warm container after 20s")
		}
	}
}

// Every start mode runs the same commands the same way.
func TestStartModes(t *testing.T) {
	type check func(t *testing.T, r result)
	cases := []struct {
		name   string
		kind   string
		argv   []string
		cwd    string
		stdin  string
		env    map[string]string
		lim    *pb.Limits
		signal syscall.Signal // sent once "ready" is out
		ctxTO  time.Duration
		check  check
	}{
		{name: "exit code and output", argv: []string{"echo out; echo err >&2; exit 3"}, check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "argv and cwd", kind: "argv", argv: []string{"sh", "-c", `pwd; printf '%s|' "$@"`, "sh", "a b", "c"}, cwd: "/sub", check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 0 || r.stdout != "/workspace/sub\na b|c|" {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "environment", argv: []string{"env | sort"}, env: map[string]string{"PATH": defaultPath, "FOO": "bar"}, check: func(t *testing.T, r result) {
			for _, kv := range []string{"FOO=bar\n", "PATH=" + defaultPath + "\n"} {
				if !strings.Contains(r.stdout, kv) {
					t.Errorf("no %q in %q", kv, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "COMPUTERFS") {
				t.Errorf("environment beyond the request's: %q", r.stdout)
			}
		}},
		{name: "stdin", argv: []string{"tr a-z A-Z"}, stdin: "piped\n", check: func(t *testing.T, r result) {
			if r.stdout != "PIPED\n" {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "command not found", kind: "argv", argv: []string{"no-such-command"}, check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 127 && r.exit.ExitCode != 1 {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "signal", argv: []string{"trap 'echo int; exit 7' INT; echo ready; sleep 60 & wait"}, signal: syscall.SIGINT, check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 7 || !strings.Contains(r.stdout, "int") {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "cancel", argv: []string{"sleep 60"}, ctxTO: 300 * time.Millisecond, check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 137 || r.elapsed > 5*time.Second {
				t.Errorf("%v in %v", r.exit, r.elapsed)
			}
		}},
		{name: "timeout", argv: []string{"trap 'echo term; exit 5' TERM; sleep 60 & wait"}, lim: &pb.Limits{TimeoutMs: 300}, check: func(t *testing.T, r result) {
			if !r.exit.TimedOut || r.exit.ExitCode != 5 || r.stdout != "term\n" {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "oom", argv: []string{"head -c 600M /dev/zero | tail; echo after $?"}, lim: &pb.Limits{MemoryBytes: 64 << 20}, check: func(t *testing.T, r result) {
			if !r.exit.OomKilled || !strings.Contains(r.stdout, "after 137") {
				t.Errorf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
		}},
		{name: "workspace write", argv: []string{"echo made > made.txt"}, check: func(t *testing.T, r result) {
			if r.exit.ExitCode != 0 {
				t.Errorf("%v %q", r.exit, r.stderr)
			}
		}},
	}
	for _, mode := range startModes {
		t.Run(mode.name, func(t *testing.T) {
			b, ws := newModeBackend(t, mode.settings, mode.noInit)
			os.Mkdir(filepath.Join(ws, "sub"), 0o755)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					waitWarm(t, b)
					env := tc.env
					if env == nil {
						env = testEnv
					}
					kind := tc.kind
					if kind == "" {
						kind = "script"
					}
					var out, errb syncBuffer
					sigs := make(chan syscall.Signal, 1)
					x := &pluginapi.Exec{
						Start:  &pb.ExecStart{Argv: tc.argv, Kind: kind, Cwd: tc.cwd, Env: env, Limits: tc.lim},
						Stdin:  strings.NewReader(tc.stdin),
						Stdout: &out, Stderr: &errb, Signals: sigs,
					}
					ctx := context.Background()
					if tc.ctxTO > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, tc.ctxTO)
						defer cancel()
					}
					if tc.signal != 0 {
						go func() {
							for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "ready") && time.Now().Before(deadline); {
								time.Sleep(5 * time.Millisecond)
							}
							sigs <- tc.signal
						}()
					}
					t0 := time.Now()
					exit, err := b.Exec(ctx, x)
					if err != nil {
						t.Fatal(err)
					}
					tc.check(t, result{exit: exit, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(t0)})
				})
			}
			if got, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(got) != "made\n" {
				t.Errorf("the container's file on the workspace: %q %v", got, err)
			}
		})
	}
}

// A warm container that died while it waited is not used: the exec
// starts its own, and nothing of the dead one is left.
func TestWarmContainerDied(t *testing.T) {
	b, _ := newBackend(t)
	waitWarm(t, b)
	b.pool.mu.Lock()
	dead := b.pool.ready[0]
	b.pool.mu.Unlock()
	dead.kill()
	<-dead.waited
	if r := run(t, b, "echo fine", nil, "", nil); r.exit.ExitCode != 0 || r.stdout != "fine\n" {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(dead.bundle); err == nil {
		t.Errorf("the dead warm container's bundle is left")
	}
}

// Warm and cold start-up side by side (a log, not a check: speed is the
// benchmarks' to measure).
func TestStartupLatency(t *testing.T) {
	for _, mode := range startModes {
		t.Run(mode.name, func(t *testing.T) {
			b, _ := newModeBackend(t, mode.settings, mode.noInit)
			var ds []time.Duration
			for range 10 {
				waitWarm(t, b)
				t0 := time.Now()
				r := run(t, b, "true", nil, "", nil)
				if r.exit.ExitCode != 0 {
					t.Fatalf("%v %q", r.exit, r.stderr)
				}
				ds = append(ds, time.Since(t0))
			}
			slicesSort(ds)
			t.Logf("%s: exec of true, 10 runs: min %v median %v max %v", mode.name, ds[0], ds[len(ds)/2], ds[len(ds)-1])
		})
	}
}

// A container whose init cannot start fails its exec at once, with what
// runc said, and leaves nothing behind.
func TestInitFailsToStart(t *testing.T) {
	b, _ := newBackendWith(t, nil, func(b *Backend) {
		b.Init = filepath.Join(t.TempDir(), "no-such-init")
	})
	done := make(chan error, 1)
	go func() {
		_, err := b.Exec(context.Background(), &pluginapi.Exec{
			Start: &pb.ExecStart{Argv: []string{"true"}, Kind: "argv", Env: testEnv},
			Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &syncBuffer{},
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not start") {
			t.Errorf("exec with a missing init: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("exec with a missing init hangs")
	}
}
