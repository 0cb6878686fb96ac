package containerbackend

import (
	"bytes"
	"context"
	"fmt"
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

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// syncBuffer is a bytes.Buffer safe for the output goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var testEnv = map[string]string{"PATH": defaultPath, "HOME": "/tmp", "LANG": "C.UTF-8"}

// newBackend configures a backend on a temp workspace, or skips.
func newBackend(t *testing.T) (*Backend, string) {
	t.Helper()
	return newBackendWith(t, nil, nil)
}

// testStateDir is shared by the tests of every test binary: checkClean
// counts only what this process made.
var testStateDir = filepath.Join("/run", "computerfs-container-test")

// skipUnlessRunc skips a test where the backend cannot run.
func skipUnlessRunc(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the container backend needs root")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		if _, err := os.Stat("/usr/sbin/runc"); err != nil {
			t.Skip("runc is not installed (apt-get install runc)")
		}
	}
	if err := CgroupsAvailable(); err != nil {
		t.Skipf("cgroups unavailable: %v", err)
	}
}

// newBackendWith configures a backend with the policy's settings (mod,
// if set, changes it before Configure) on a temp workspace, or skips.
func newBackendWith(t *testing.T, settings map[string]string, mod func(*Backend)) (*Backend, string) {
	t.Helper()
	skipUnlessRunc(t)
	ws := t.TempDir()
	b := &Backend{StateDir: testStateDir, Init: initBin}
	if mod != nil {
		mod(b)
	}
	if err := b.Configure(context.Background(), &pluginapi.Config{MountPath: ws, Settings: settings}); err != nil {
		t.Fatalf("Configure %v: %v", settings, err)
	}
	t.Cleanup(func() {
		b.Close()
		checkClean(t, b)
	})
	return b, ws
}

// checkClean fails if a container, bundle or cgroup of ours is left.
// Other test binaries (another checkout, cmd/computerfs, bench) may run
// containers under the same state directory at the same time: only the
// entries whose owner pid is this process count.
func checkClean(t *testing.T, b *Backend) {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	ours := func(names []string) []string {
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, idPrefix) && idOwner(n) == me {
				out = append(out, n)
			}
		}
		return out
	}
	out, err := exec.Command(b.Runc, "--root", b.runcRoot, "list", "-q").Output()
	if err != nil {
		t.Errorf("runc list: %v", err)
	}
	if left := ours(strings.Fields(string(out))); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	var bundles []string
	ents, _ := os.ReadDir(b.bundles)
	for _, e := range ents {
		bundles = append(bundles, e.Name())
	}
	if left := ours(bundles); len(left) > 0 {
		t.Errorf("bundles left: %v", left)
	}
	if left := ours(leftoverCgroups()); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

type result struct {
	exit           *pb.Exit
	stdout, stderr string
	elapsed        time.Duration
}

func run(t *testing.T, b *Backend, script string, lim *pb.Limits, stdin string, env map[string]string) result {
	t.Helper()
	if env == nil {
		env = testEnv
	}
	var out, errb syncBuffer
	var in *strings.Reader
	if stdin != "" {
		in = strings.NewReader(stdin)
	} else {
		in = strings.NewReader("")
	}
	x := &pluginapi.Exec{
		Start:   &pb.ExecStart{ExecId: "t", Argv: []string{script}, Kind: "script", Cwd: "/", Env: env, Limits: lim},
		Stdin:   in,
		Stdout:  &out,
		Stderr:  &errb,
		Signals: make(chan syscall.Signal),
	}
	t0 := time.Now()
	exit, err := b.Exec(context.Background(), x)
	el := time.Since(t0)
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return result{exit: exit, stdout: out.String(), stderr: errb.String(), elapsed: el}
}

func TestEchoAndExit(t *testing.T) {
	b, _ := newBackend(t)
	r := run(t, b, "echo hi; hostname; pwd", nil, "", nil)
	if r.exit.ExitCode != 0 || r.stdout != "hi\ncomputerfs\n/workspace\n" {
		t.Fatalf("exit %v stdout %q stderr %q", r.exit, r.stdout, r.stderr)
	}
	r = run(t, b, "exit 3", nil, "", nil)
	if r.exit.ExitCode != 3 {
		t.Fatalf("exit 3: %v %q", r.exit, r.stderr)
	}
	r = run(t, b, "echo err >&2; bash -c 'kill -9 $$'; exit $?", nil, "", nil)
	if r.exit.ExitCode != 137 || !strings.HasPrefix(r.stderr, "err\n") {
		t.Fatalf("killed: %v %q", r.exit, r.stderr)
	}
}

func TestArgvAndCwd(t *testing.T) {
	b, ws := newBackend(t)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	var out syncBuffer
	x := &pluginapi.Exec{
		Start: &pb.ExecStart{Argv: []string{"pwd"}, Kind: "argv", Cwd: "/sub", Env: map[string]string{}},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
	}
	exit, err := b.Exec(context.Background(), x)
	if err != nil || exit.ExitCode != 0 || out.String() != "/workspace/sub\n" {
		t.Fatalf("%v %v %q", exit, err, out.String())
	}
}

func TestStdin(t *testing.T) {
	b, _ := newBackend(t)
	r := run(t, b, "cat; echo done", nil, "line1\nline2\n", nil)
	if r.exit.ExitCode != 0 || r.stdout != "line1\nline2\ndone\n" {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
}

func TestEnvOnly(t *testing.T) {
	b, _ := newBackend(t)
	r := run(t, b, "env | sort", nil, "", map[string]string{"PATH": defaultPath, "FOO": "bar"})
	if r.stdout != "FOO=bar\nPATH="+defaultPath+"\nPWD=/workspace\nSHLVL=0\n_=/usr/bin/env\n" && !strings.Contains(r.stdout, "FOO=bar") {
		t.Fatalf("%q", r.stdout)
	}
	if strings.Contains(r.stdout, "HOSTNAME=") || strings.Contains(r.stdout, "TERM=") {
		t.Fatalf("extra env: %q", r.stdout)
	}
}

func TestWorkspaceWrite(t *testing.T) {
	b, ws := newBackend(t)
	r := run(t, b, "mkdir -p d && echo content > d/f.txt && echo tmp > /tmp/x && cat /tmp/x", nil, "", nil)
	if r.exit.ExitCode != 0 || r.stdout != "tmp\n" {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(filepath.Join(ws, "d", "f.txt"))
	if err != nil || string(got) != "content\n" {
		t.Fatalf("%q %v", got, err)
	}
	// /tmp is private to each exec.
	r = run(t, b, "ls /tmp", nil, "", nil)
	if r.stdout != "" {
		t.Fatalf("/tmp not private: %q", r.stdout)
	}
}

func TestGit(t *testing.T) {
	b, ws := newBackend(t)
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("git is not installed")
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)
	env := map[string]string{"PATH": defaultPath, "HOME": "/tmp",
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
	r := run(t, b, "git init -q && git add . && git commit -qm first && git log --format=%s", nil, "", env)
	if r.exit.ExitCode != 0 || r.stdout != "first\n" {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "HEAD")); err != nil {
		t.Fatal(err)
	}
}

func TestNoNetwork(t *testing.T) {
	b, _ := newBackend(t)
	r := run(t, b, "ip -o link 2>/dev/null | wc -l; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "+
		"(echo > /dev/tcp/1.1.1.1/80) 2>/dev/null && echo connected; getent hosts example.com && echo resolved; exit 0",
		&pb.Limits{TimeoutMs: 10000}, "", nil)
	if strings.Contains(r.stdout, "connected") || strings.Contains(r.stdout, "resolved") {
		t.Fatalf("network reachable: %q", r.stdout)
	}
	if !strings.Contains(r.stdout, "lo") || strings.Contains(r.stdout, "eth") {
		t.Fatalf("interfaces: %q", r.stdout)
	}
}

func TestReadOnlyRoot(t *testing.T) {
	b, _ := newBackend(t)
	for _, p := range []string{"/x", "/etc/x", "/usr/x", "/bin/x", "/proc/sys/kernel/hostname"} {
		r := run(t, b, "echo > "+p, nil, "", nil)
		if r.exit.ExitCode == 0 {
			t.Errorf("writing %s succeeded", p)
		}
	}
	if _, err := os.Stat("/etc/x"); err == nil {
		t.Fatal("/etc/x written on the host")
	}
}

// initBin is the init the tests' backends use: the small binary, built
// by TestMain as make builds it.
var initBin string

func TestMain(m *testing.M) {
	MaybeRunInit()
	dir, err := os.MkdirTemp("", "computerfs-init-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	initBin = filepath.Join(dir, InitBinary)
	build := exec.Command("go", "build", "-o", initBin, "../cmd/computerfs-container-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build %s: %v\n%s", InitBinary, err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noInit   bool
		sig      syscall.Signal
		atLeast  time.Duration
		atMost   time.Duration
		exitCode int32
	}{
		// The init passes SIGTERM to the command, which ends at once.
		{name: "init", sig: syscall.SIGTERM, atMost: 300*time.Millisecond + KillGrace - 500*time.Millisecond, exitCode: 128 + 15},
		// PID 1 without a handler ignores SIGTERM: SIGKILL after the grace.
		{name: "no init", noInit: true, sig: syscall.SIGKILL, atLeast: KillGrace, atMost: 300*time.Millisecond + KillGrace + 3*time.Second, exitCode: 128 + 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBackendWith(t, nil, func(b *Backend) {
				if tc.noInit {
					b.Init = ""
				}
			})
			r := run(t, b, "echo start; exec sleep 60", &pb.Limits{TimeoutMs: 300}, "", nil)
			if !r.exit.TimedOut || r.exit.ExitCode != tc.exitCode || r.exit.Signal != int32(tc.sig) || r.stdout != "start\n" {
				t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
			if r.elapsed < tc.atLeast || r.elapsed > tc.atMost {
				t.Fatalf("took %v, want between %v and %v", r.elapsed, tc.atLeast, tc.atMost)
			}
		})
	}
	b, _ := newBackend(t)
	// A process that handles SIGTERM ends at once.
	r := run(t, b, "trap 'echo term; exit 5' TERM; sleep 60 & wait", &pb.Limits{TimeoutMs: 300}, "", nil)
	if !r.exit.TimedOut || r.exit.ExitCode != 5 || r.stdout != "term\n" || r.elapsed > 2*time.Second {
		t.Fatalf("%v %q %q %v", r.exit, r.stdout, r.stderr, r.elapsed)
	}
}

func TestSignal(t *testing.T) {
	b, _ := newBackend(t)
	sigs := make(chan syscall.Signal, 1)
	var out syncBuffer
	x := &pluginapi.Exec{
		Start: &pb.ExecStart{Argv: []string{"trap 'echo int; exit 7' INT; echo ready; sleep 60 & wait"}, Env: testEnv},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Signals: sigs,
	}
	go func() {
		for !strings.Contains(out.String(), "ready") {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
	}()
	exit, err := b.Exec(context.Background(), x)
	if err != nil || exit.ExitCode != 7 || !strings.Contains(out.String(), "int") {
		t.Fatalf("%v %v %q", exit, err, out.String())
	}
}

func TestCancel(t *testing.T) {
	b, _ := newBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	x := &pluginapi.Exec{
		Start: &pb.ExecStart{Argv: []string{"sleep 60"}, Env: testEnv},
		Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &syncBuffer{},
	}
	t0 := time.Now()
	exit, err := b.Exec(ctx, x)
	if err != nil || exit.ExitCode != 137 || time.Since(t0) > 3*time.Second {
		t.Fatalf("%v %v %v", exit, err, time.Since(t0))
	}
}

func TestPidsLimit(t *testing.T) {
	b, _ := newBackend(t)
	// A real fork bomb: forks fail once the cgroup holds 64 tasks, and the
	// timeout ends what is left.
	r := run(t, b, "bomb() { bomb | bomb & }; bomb; sleep 30", &pb.Limits{MaxPids: 64, TimeoutMs: 1500}, "", nil)
	if !strings.Contains(r.stderr, "Resource temporarily unavailable") {
		t.Fatalf("no fork failure: %v %q %q", r.exit, r.stdout, r.stderr[:min(len(r.stderr), 500)])
	}
	if r.elapsed > 1500*time.Millisecond+KillGrace+3*time.Second {
		t.Fatalf("the fork bomb ran %v", r.elapsed)
	}
	t.Logf("pids: %v after %v", r.exit, r.elapsed)
	// And the next exec runs normally.
	if r := run(t, b, "echo fine", nil, "", nil); r.exit.ExitCode != 0 || r.stdout != "fine\n" {
		t.Fatalf("after the fork bomb: %v %q %q", r.exit, r.stdout, r.stderr)
	}
}

func TestOOM(t *testing.T) {
	b, _ := newBackend(t)
	r := run(t, b, "head -c 600M /dev/zero | tail; echo after $?", &pb.Limits{MemoryBytes: 64 << 20, TimeoutMs: 30000}, "", nil)
	if !r.exit.OomKilled || !strings.Contains(r.stdout, "after 137") {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
	t.Logf("oom: %v", r.exit)
	// A run within the limit is not reported.
	r = run(t, b, "head -c 10M /dev/zero | tail | wc -c", &pb.Limits{MemoryBytes: 64 << 20}, "", nil)
	if r.exit.OomKilled || r.exit.ExitCode != 0 {
		t.Fatalf("%v %q", r.exit, r.stderr)
	}
}

func TestConcurrent(t *testing.T) {
	b, _ := newBackend(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := run(t, b, "echo ok", nil, "", nil)
			if r.stdout != "ok\n" {
				errs <- r.stdout + r.stderr
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestSweep(t *testing.T) {
	b, _ := newBackend(t)
	// A container left by a dead plugin (pid 1 is never us, but is alive:
	// use an impossible pid instead).
	id := idPrefix + "999999999-1"
	bundle := filepath.Join(b.bundles, id)
	os.MkdirAll(bundle, 0o700)
	os.MkdirAll(filepath.Join(cgroupMount, "pids", cgroupParent, id), 0o755)
	// A stage left by a dead plugin, with a workspace mounted in it: the
	// sweep unmounts it and leaves the workspace's files alone.
	stage := filepath.Join(StageDir, stagePrefix+"999999999-00000000")
	leftWS := t.TempDir()
	os.WriteFile(filepath.Join(leftWS, "keep"), []byte("x"), 0o644)
	os.MkdirAll(stage, 0o755)
	if err := syscall.Mount("tmpfs", stage, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(stage, "priv", "ws"), 0o700)
	if err := syscall.Mount(leftWS, filepath.Join(stage, "priv", "ws"), "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountStage(stage) })
	b2 := &Backend{StateDir: b.StateDir}
	t.Cleanup(func() { os.RemoveAll(bundle) })
	if err := b2.Configure(context.Background(), &pluginapi.Config{MountPath: b.mountPath}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b2.Close)
	if _, err := os.Stat(bundle); err == nil {
		t.Fatal("bundle not swept")
	}
	if _, err := os.Stat(stage); err == nil {
		t.Error("stage not swept")
	}
	if _, err := os.Stat(filepath.Join(leftWS, "keep")); err != nil {
		t.Errorf("the sweep of a stage reached the workspace mounted in it: %v", err)
	}
}

func slicesSort(ds []time.Duration) { sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] }) }
