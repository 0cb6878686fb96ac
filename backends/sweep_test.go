package backends_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"golang.org/x/sys/unix"
)

// pluginEnv is the environment of a plugin started by hand: the owner
// mark, and go-plugin's handshake so that it stays up.
func pluginEnv(owner string) []string {
	return []string{ownerEnv + "=" + owner, cookieEnv, "PLUGIN_PROTOCOL_VERSIONS=1", "PATH=/usr/local/bin:/usr/bin:/bin"}
}

// waitPluginUp waits until pid runs the plugin binary (not the shell that
// started it) and is still up a moment later.
func waitPluginUp(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if exe == pluginBin {
			break
		}
		if time.Now().After(deadline) || !alive(pid) {
			t.Fatalf("process %d does not run the plugin (exe %q)", pid, exe)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if !alive(pid) {
		t.Fatalf("the plugin %d started by hand exited by itself", pid)
	}
}

// spawnOrphan starts the plugin through a shell that exits at once, so
// that it is reparented (to init), as a plugin is when its host dies
// without killing it. With setsid it leads its own process group, as a
// plugin the runtime started does.
func spawnOrphan(t *testing.T, owner string, setsid bool) int {
	t.Helper()
	script := `"$0" </dev/null >/dev/null 2>&1 & echo $!`
	if setsid {
		script = `setsid "$0" </dev/null >/dev/null 2>&1 & echo $!`
	}
	cmd := exec.Command("sh", "-c", script, pluginBin)
	cmd.Env = pluginEnv(owner)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	waitPluginUp(t, pid)
	return pid
}

func TestSweep(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid to start a plugin in its own session")
	}
	ws, owner := newWS(t)

	// Its parent (this test) is alive: its host is alive, not ours to kill.
	child := exec.Command(pluginBin)
	child.Env = pluginEnv(owner)
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	waitPluginUp(t, child.Process.Pid)

	// Orphans: their host is gone.
	orphan := spawnOrphan(t, owner, false)
	leader := spawnOrphan(t, owner, true)
	// An orphan of another workspace (whose owner only starts like ours).
	stranger := spawnOrphan(t, owner+"-other", true)

	for _, pid := range []int{orphan, leader, stranger} {
		if pp := ppidOf(pid); pp == os.Getpid() || (pp != 1 && alive(pp)) {
			t.Skipf("an orphan was reparented to %d, a live subreaper, not init: the sweep only kills orphans of init", pp)
		}
	}

	logs := &lockedBuf{}
	rt, err := backends.New(backends.Options{WS: ws, Owner: owner, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	for _, pid := range []int{orphan, leader} {
		if !waitDead(pid, 5*time.Second) {
			t.Errorf("the orphaned plugin %d survived the sweep", pid)
		}
	}
	if !alive(child.Process.Pid) {
		t.Errorf("the sweep killed a plugin whose host is alive")
	}
	if !alive(stranger) {
		t.Errorf("the sweep killed another owner's plugin")
	}
	if !strings.Contains(logs.String(), "killed plugins left by a previous daemon") || !strings.Contains(logs.String(), "count=2") {
		t.Errorf("the sweep did not log what it killed:\n%s", logs.String())
	}
	// The sweep needs the mark: a runtime with no owner sweeps nothing.
	rt2, err := backends.New(backends.Options{WS: ws, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rt2.Close()
	if !alive(stranger) || !alive(child.Process.Pid) {
		t.Errorf("a runtime without an owner killed something")
	}
}

// A runtime's own plugins are not swept by a second runtime on the same
// owner while the first is alive (the host, this process, is their live
// parent).
func TestSweepSparesLiveHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	h.mustEcho(t, "test", "up")
	pid := onePlugin(t, h.owner)
	rt2, err := backends.New(backends.Options{WS: h.ws, Owner: h.owner, Logger: slog.New(slog.NewTextHandler(&lockedBuf{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rt2.Close()
	if !alive(pid) {
		t.Fatalf("a second runtime swept a live host's plugin")
	}
	h.mustEcho(t, "test", "still up")
}

// hostModeEnv makes the test binary a host that starts a plugin, prints
// its PID and waits to be killed (see TestHostDeath).
const hostModeEnv = "CFS_BACKENDS_TEST_HOST"

func hostMode() {
	dir, wsPath := os.Getenv("CFS_PLUGIN_DIR"), os.Getenv(hostModeEnv)
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rt, err := backends.New(backends.Options{Dirs: []string{dir}, WS: workspace.New(f, workspace.Options{}), Owner: wsPath,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	res, err := rt.Exec(context.Background(), &backends.Request{Backend: "test", Argv: []string{"signal-group"}}, nil, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("plugin", res.Exit.ExitCode)
	select {}
}

// A host killed with SIGKILL takes its plugins with it (the parent-death
// signal); what the signal missed, the next host's sweep kills.
func TestHostDeath(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	wsPath := filepath.Join(t.TempDir(), "ws.cfs")
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostModeEnv+"="+wsPath, "CFS_PLUGIN_DIR="+dir)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("host: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(line, "plugin %d", &pid); err != nil {
		t.Fatalf("host said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !alive(pid) || ppidOf(pid) != host.Process.Pid {
		t.Fatalf("plugin %d: not a live child of the host %d", pid, host.Process.Pid)
	}
	host.Process.Signal(syscall.SIGKILL)
	host.Wait()
	if !waitDead(pid, 5*time.Second) {
		t.Errorf("the plugin %d outlived its host", pid)
	}
	if pids := pluginPids(wsPath); len(pids) != 0 {
		t.Errorf("processes of the dead host: %v", pids)
	}
}

// reaperModeEnv makes the test binary a child subreaper (as systemd
// --user is) that starts the plugin through a shell that exits at once,
// prints the plugin's PID and waits to be killed.
const reaperModeEnv = "CFS_BACKENDS_TEST_REAPER"

func reaperMode() {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// The sh plays the host: it marks the plugin with its pid, as the
	// runtime does, and dies at once.
	cmd := exec.Command("sh", "-c", `COMPUTERFS_PLUGIN_HOST_PID=$$ "$0" </dev/null >/dev/null 2>&1 & echo $!`, os.Getenv(reaperModeEnv))
	cmd.Env = pluginEnv(os.Getenv("CFS_OWNER"))
	out, err := cmd.Output()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Print("plugin ", string(out))
	select {}
}

// An orphaned plugin reparented to a live subreaper rather than to init
// (a host run as a systemd --user service that died without its
// parent-death signal firing) is swept: its parent is no longer the host
// pid it was marked with.
func TestSweepOrphanOfSubreaper(t *testing.T) {
	t.Parallel()
	_, owner := newWS(t)
	reaper := exec.Command(os.Args[0], "-test.run=^$")
	reaper.Env = append(os.Environ(), reaperModeEnv+"="+pluginBin, "CFS_OWNER="+owner)
	reaper.Stderr = os.Stderr
	out, err := reaper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		reaper.Process.Kill()
		reaper.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reaper: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(line, "plugin %d", &pid); err != nil {
		t.Fatalf("reaper said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	waitPluginUp(t, pid)
	if pp := ppidOf(pid); pp != reaper.Process.Pid {
		t.Fatalf("the orphan's parent is %d, not the subreaper %d", pp, reaper.Process.Pid)
	}
	ws, _ := newWS(t)
	rt, err := backends.New(backends.Options{WS: ws, Owner: owner, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if !waitDead(pid, time.Second) {
		t.Fatalf("the orphaned plugin %d, reparented to the live subreaper %d, survived the sweep", pid, reaper.Process.Pid)
	}
}
