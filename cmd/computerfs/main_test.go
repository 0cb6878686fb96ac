package main

// End-to-end tests of the computerfs binary: TestMain builds it once and the
// tests run it as a subprocess, as a user would. The helpers here start and
// stop mounts and make sure no mount or daemon outlives its test.

import (
	"bytes"
	"context"
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

	"github.com/computerfs/computerfs/internal/mountinfo"
)

// cfsBin is the binary built by TestMain.
var cfsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "computerfs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfsBin = filepath.Join(dir, "computerfs")
	build := exec.Command("go", "build", "-o", cfsBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building computerfs:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The built-in shell backend goes beside the binary, where the daemon
	// looks first.
	build = exec.Command("go", "build", "-o", filepath.Join(dir, "computerfs-plugin-shell"), "../plugin-shell")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building computerfs-plugin-shell:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The container plugin goes elsewhere: beside the binary it would take
	// every command the shell cannot run, in every test.
	containerPluginBin = filepath.Join(dir, "extra", "computerfs-plugin-container")
	build = exec.Command("go", "build", "-o", containerPluginBin, "../plugin-container")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make builds it
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building computerfs-plugin-container:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	build = exec.Command("go", "build", "-o", filepath.Join(dir, "extra", "computerfs-container-init"), "../computerfs-container-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building computerfs-container-init:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needFUSE skips tests that mount when this process cannot.
func needFUSE(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mount tests run as root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout:\n%s--- stderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// cli runs the binary with COMPUTERFS_HOME set to home and waits for it
// (two minutes at most).
func cli(t *testing.T, home string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfsBin, args...)
	cmd.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("computerfs %s: %v\n%v", strings.Join(args, " "), err, r)
		}
		r.code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("computerfs %s timed out\n%v", strings.Join(args, " "), r)
	}
	noCrash(t, r, args...)
	return r
}

// noCrash fails the test if the binary died of a Go panic or fault.
func noCrash(t *testing.T, r result, args ...string) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "fatal error", "SIGBUS", "SIGSEGV", "runtime."} {
		if strings.Contains(r.stderr, s) || strings.Contains(r.stdout, s) {
			t.Errorf("computerfs %s crashed (output contains %q)\n%v", strings.Join(args, " "), s, r)
			return
		}
	}
}

// mustCLI runs the binary and fails unless it exits 0.
func mustCLI(t *testing.T, home string, args ...string) result {
	t.Helper()
	r := cli(t, home, args...)
	if r.code != 0 {
		t.Fatalf("computerfs %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// fsckClean runs fsck and fails unless the store is clean.
func fsckClean(t *testing.T, home, ws string) result {
	t.Helper()
	r := cli(t, home, "fsck", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "\nclean\n") || strings.Contains(r.stdout, "damage:") {
		t.Fatalf("fsck %s not clean: %v", ws, r)
	}
	return r
}

// isMounted reports whether mnt is a mount point in this mount namespace.
func isMounted(mnt string) bool {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return false
	}
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if m.Point == abs {
			return true
		}
	}
	return false
}

// detach lazily unmounts mnt if it is still mounted.
func detach(t *testing.T, mnt string) {
	t.Helper()
	for i := 0; i < 3 && isMounted(mnt); i++ {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			if out, ferr := exec.Command("fusermount3", "-uz", mnt).CombinedOutput(); ferr != nil {
				t.Logf("detach %s: %v; fusermount3: %v %s", mnt, err, ferr, out)
			}
		}
	}
}

// waitGone waits for pid to exit.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// lineWriter collects a process's output and reports when a line
// containing want appears.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	found chan struct{}
	seen  bool
}

func newLineWriter(want string) *lineWriter {
	return &lineWriter{want: want, found: make(chan struct{})}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && w.want != "" {
		// Only a complete line counts.
		b := w.buf.Bytes()
		if i := bytes.Index(b, []byte(w.want)); i >= 0 && bytes.IndexByte(b[i:], '\n') >= 0 {
			w.seen = true
			close(w.found)
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// mountProc is a foreground `computerfs mount` in its own process group.
type mountProc struct {
	cmd            *exec.Cmd
	ws, mnt        string
	stdout, stderr *lineWriter
	exited         chan struct{}
	waitErr        error
}

// startMount runs `computerfs mount WS MNT ARGS...` in the foreground and
// returns once it has printed its "mounted at" line. Cleanup kills it and
// detaches the mount, however the test ends.
func startMount(t *testing.T, home, ws, mnt string, args ...string) *mountProc {
	t.Helper()
	p := &mountProc{ws: ws, mnt: mnt, stdout: newLineWriter("mounted at"), stderr: newLineWriter(""), exited: make(chan struct{})}
	p.cmd = exec.Command(cfsBin, append([]string{"mount", ws, mnt, "--create"}, args...)...)
	p.cmd.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start mount: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	select {
	case <-p.stdout.found:
	case <-p.exited:
		t.Fatalf("mount exited before mounting: %v\n%s", p.waitErr, p.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("mount not live after 30s\n%s", p.output())
	}
	if !isMounted(mnt) {
		t.Fatalf("mount printed its line but %s is not in mountinfo\n%s", mnt, p.output())
	}
	return p
}

func (p *mountProc) pid() int { return p.cmd.Process.Pid }

func (p *mountProc) output() string {
	return fmt.Sprintf("--- stdout:\n%s--- stderr:\n%s", p.stdout.String(), p.stderr.String())
}

// kill SIGKILLs the process group if it is still running, waits for it and
// detaches the mount.
func (p *mountProc) kill(t *testing.T) {
	select {
	case <-p.exited:
	default:
		syscall.Kill(-p.pid(), syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			t.Errorf("mount process %d survived SIGKILL", p.pid())
		}
	}
	detach(t, p.mnt)
	// A killed daemon leaves its policy views mounted too (their source
	// is the mountpoint's path and the backend's view).
	abs, _ := filepath.Abs(p.mnt)
	if entries, err := mountinfo.Read("/proc/self/mountinfo"); err == nil {
		for _, e := range entries {
			if e.FSType == "fuse.computerfs" && strings.HasPrefix(e.Source, abs+" (") {
				detach(t, e.Point)
			}
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *mountProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("mount process %d still running after %v\n%s", p.pid(), timeout, p.output())
	}
	if p.waitErr == nil {
		return 0
	}
	if ee, ok := p.waitErr.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatalf("wait: %v", p.waitErr)
	return -1
}

var daemonPID = regexp.MustCompile(`daemon (\d+) serving`)

// runDaemon runs `computerfs mount WS MNT --daemon ARGS...`, which must
// return with the mount live, and returns the daemon's pid. Cleanup kills
// its process group (it runs in its own session) and detaches the mount.
func runDaemon(t *testing.T, home, ws, mnt string, args ...string) int {
	t.Helper()
	r := cli(t, home, append([]string{"mount", ws, mnt, "--daemon", "--create"}, args...)...)
	m := daemonPID.FindStringSubmatch(r.stdout)
	if m != nil {
		pid, _ := strconv.Atoi(m[1])
		t.Cleanup(func() {
			if processAlive(pid) {
				syscall.Kill(-pid, syscall.SIGKILL)
				syscall.Kill(pid, syscall.SIGKILL)
				if !waitGone(pid, 20*time.Second) {
					t.Errorf("daemon %d survived SIGKILL", pid)
				}
			}
			detach(t, mnt)
		})
	} else {
		t.Cleanup(func() { detach(t, mnt) })
	}
	if r.code != 0 || m == nil {
		t.Fatalf("mount --daemon: %v", r)
	}
	pid, _ := strconv.Atoi(m[1])
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("daemon %d: process group %d (%v), want its own", pid, pgid, err)
	}
	return pid
}

// workspace makes a temporary directory with a home, a store path and a
// mountpoint for one test.
func tempWorkspace(t *testing.T) (home, ws, mnt string) {
	dir := t.TempDir()
	home = filepath.Join(dir, "home")
	ws = filepath.Join(dir, "ws.cfs")
	mnt = filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return home, ws, mnt
}
