package backends

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"
)

// ownerEnv marks a plugin process with the host that started it, so that
// a host restarted after a crash can find and kill what it left behind.
const ownerEnv = "COMPUTERFS_PLUGIN_OWNER"

// hostPidEnv names the host's pid: a plugin whose parent is no longer that
// pid was orphaned, even when a subreaper, not init, adopted it.
const hostPidEnv = "COMPUTERFS_PLUGIN_HOST_PID"

// procRunner starts a plugin in its own process group, with stdin
// /dev/null and a parent-death signal, and kills the whole group. It
// replaces go-plugin's runner, which inherits the host's stdin and kills
// only the plugin's own PID.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	pgid   int
	// exited is closed as soon as the plugin has exited, before its group
	// is killed and before go-plugin learns of it: whoever sees the group
	// gone can rely on the backend seeing its plugin gone.
	exited chan struct{}
	// forced is set when Kill found the plugin still running: it did not
	// exit by itself, nor on go-plugin's graceful Shutdown.
	forced atomic.Bool
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(cmd *exec.Cmd) (*procRunner, error) {
	// go-plugin hands us the host's stdin: a plugin must never read it.
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{cmd: cmd, stdout: stdout, stderr: stderr, exited: make(chan struct{})}, nil
}

func (r *procRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.pgid = r.cmd.Process.Pid
	return nil
}

// Wait waits for the plugin to exit, then kills what is left of its
// process group before reaping it: whatever the plugin started dies with
// it even when the plugin exits by itself, or gracefully on go-plugin's
// Kill (which then never calls our Kill). The plugin is reaped last, so
// that its PID, the group's ID, cannot be reused before the group is
// killed.
func (r *procRunner) Wait(context.Context) error {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, r.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	close(r.exited)
	if r.pgid > 0 {
		syscall.Kill(-r.pgid, syscall.SIGKILL)
	}
	return r.cmd.Wait()
}

// Kill kills the plugin's whole process group: whatever it started dies
// with it.
func (r *procRunner) Kill(context.Context) error {
	if r.pgid <= 0 {
		return nil
	}
	if !r.hasExited() {
		r.forced.Store(true)
	}
	if err := syscall.Kill(-r.pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill plugin process group %d: %w", r.pgid, err)
	}
	return nil
}

// hasExited reports whether the plugin process has exited.
func (r *procRunner) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }
func (r *procRunner) ID() string            { return strconv.Itoa(r.pgid) }
func (r *procRunner) Diagnose(context.Context) string {
	return "the plugin did not complete go-plugin's handshake: is it a computerfs backend built for this machine?"
}
func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// sweep kills the process groups of plugins that a previous host with
// this owner mark left running (a kill -9 of the daemon, when the
// parent-death signal did not fire). It returns how many it killed.
func sweep(owner string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	killed := 0
	want := ownerEnv + "=" + owner
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !hasEnv(env, want) {
			continue
		}
		ppid := parentOf(pid)
		if host, ok := envValue(env, hostPidEnv); ok {
			if strconv.Itoa(ppid) == host {
				continue // its host is alive and still its parent
			}
		} else if alive(ppid) && ppid != 1 {
			continue // started by hand under a live parent: not ours
		}
		pgid, err := syscall.Getpgid(pid)
		if err == nil && pgid == pid {
			syscall.Kill(-pgid, syscall.SIGKILL)
		} else {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		killed++
	}
	return killed
}

func envValue(environ []byte, name string) (string, bool) {
	for _, v := range strings.Split(string(environ), "\x00") {
		if val, ok := strings.CutPrefix(v, name+"="); ok {
			return val, true
		}
	}
	return "", false
}

func hasEnv(environ []byte, kv string) bool {
	for _, v := range strings.Split(string(environ), "\x00") {
		if v == kv {
			return true
		}
	}
	return false
}

func parentOf(pid int) int {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// staleAfter is how old a plugin socket directory must be before the
// sweep removes it: one that another daemon is starting a plugin in may
// not have its listener yet.
const staleAfter = time.Minute

// sweepSockets removes the socket directories (go-plugin's plugin-dir*,
// the egress proxies' egress-*)
// that plugins of killed daemons left in the runtime directory dir: those
// older than staleAfter where no socket answers. Daemons of other
// workspaces share dir; their live sockets answer, and stay.
func sweepSockets(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "plugin-dir") && !strings.HasPrefix(e.Name(), "egress-") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		socks, _ := os.ReadDir(p)
		live := false
		for _, s := range socks {
			c, err := net.DialTimeout("unix", filepath.Join(p, s.Name()), 100*time.Millisecond)
			if err == nil {
				c.Close()
				live = true
				break
			}
		}
		if !live && os.RemoveAll(p) == nil {
			n++
		}
	}
	return n
}
