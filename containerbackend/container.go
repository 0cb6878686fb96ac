package containerbackend

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/internal/tailbuf"
	"golang.org/x/sys/unix"
)

// limitsKey is what a container's cgroups were made with: a warm
// container serves only an exec that asks for the same.
type limitsKey struct {
	memory, pids, cpuMillis int64
}

// container is one runc container: `runc run` in the foreground, a child
// of the plugin with a parent-death signal, its stdio pipes of ours.
// With an init, the container starts before its command is known: the
// init waits for it on the control pipe (warm start, see pool).
type container struct {
	id     string
	bundle string
	cg     *execCgroup
	limits limitsKey
	cmd    *exec.Cmd

	// Without an init, runc's stdio is the command's: our ends of the
	// pipes. With one, the command's stdio is sent to the init when the
	// command is (see attach), and runc's own output goes to runcLog.
	stdin          *os.File        // write end
	stdout, stderr *os.File        // read ends
	ctl            *net.UnixConn   // the init's control socket; nil without an init
	ctlr           *bufio.Reader   // reads ctl
	status         chan int        // the command's exit code, from the init
	runcLog        *tailbuf.Buffer // what runc itself printed (init mode)
	runcLogDone    chan struct{}

	// waited is closed once `runc run` has exited, with waitErr.
	waited  chan struct{}
	waitErr error
}

// startContainer starts a container. With p.init set, its process is the
// init waiting on the control pipe; p.args are ignored.
func (b *Backend) startContainer(p specParams, lim limitsKey) (_ *container, err error) {
	c := &container{
		id:     fmt.Sprintf("%s%d-%08x-%d", idPrefix, os.Getpid(), b.tag, b.seq.Add(1)),
		limits: lim,
		waited: make(chan struct{}),
	}
	c.bundle = filepath.Join(b.bundles, c.id)
	c.cg = &execCgroup{v2: b.v2, rel: filepath.Join(cgroupParent, c.id), efd: -1, ofd: -1}
	p.cgroupsPath = "/" + c.cg.rel + "/ctr"
	p.maxPids, p.cpuMillis = lim.pids, lim.cpuMillis
	if b.v2 {
		p.memoryBytes = lim.memory
	}
	var childEnds []*os.File // runc's ends of the pipes: ours to close once it has them
	closeChildEnds := func() {
		for _, f := range childEnds {
			f.Close()
		}
		childEnds = nil
	}
	started := false
	defer func() {
		closeChildEnds()
		if err != nil {
			if !started {
				close(c.waited) // nothing runs: cleanup need not wait
			}
			c.cleanup(b)
		}
	}()
	if err := os.MkdirAll(c.bundle, 0o700); err != nil {
		return nil, err
	}
	js, err := json.Marshal(makeSpec(p))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.bundle, "config.json"), js, 0o600); err != nil {
		return nil, err
	}
	if err := c.cg.setup(lim.memory); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	pipe := func(childReads bool) (mine, child *os.File, err error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		if childReads {
			childEnds = append(childEnds, r)
			return w, r, nil
		}
		childEnds = append(childEnds, w)
		return r, w, nil
	}
	args := []string{"--root", b.runcRoot, "run", "--bundle", c.bundle}
	var stdin, stdout, stderr, ctlChild *os.File
	if p.init == "" {
		if c.stdin, stdin, err = pipe(true); err != nil {
			return nil, err
		}
		if c.stdout, stdout, err = pipe(false); err != nil {
			return nil, err
		}
		if c.stderr, stderr, err = pipe(false); err != nil {
			return nil, err
		}
	} else {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
		mine := os.NewFile(uintptr(fds[0]), "control")
		ctlChild = os.NewFile(uintptr(fds[1]), "control")
		childEnds = append(childEnds, ctlChild)
		fc, err := net.FileConn(mine)
		mine.Close()
		if err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
		c.ctl = fc.(*net.UnixConn)
		c.ctlr = bufio.NewReader(c.ctl)
		c.status = make(chan int, 1)
		var logR *os.File
		if logR, stdout, err = pipe(false); err != nil {
			return nil, err
		}
		stderr = stdout
		c.runcLog = tailbuf.New(4096)
		c.runcLogDone = make(chan struct{})
		go func() {
			defer close(c.runcLogDone)
			io.Copy(c.runcLog, logR)
			logR.Close()
		}()
		args = append(args, "--preserve-fds", "1")
	}
	chownToRoot(stdin, stdout, stderr)
	c.cmd = exec.Command(b.Runc, append(args, c.id)...)
	// runc dies with the plugin, and the container's init with runc.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = stdin, stdout, stderr
	if ctlChild != nil {
		c.cmd.ExtraFiles = []*os.File{ctlChild} // fd 3 in the container
	}
	if err := b.stage.start(c.cmd); err != nil {
		return nil, fmt.Errorf("start runc: %w", err)
	}
	started = true
	// Only runc holds them now: its exit, or the init's, is EOF for us.
	closeChildEnds()
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.waited)
	}()
	if c.ctl != nil {
		// Ready once the init runs: runc has made the namespaces, mounts
		// and cgroups. A container that never gets there is killed.
		c.ctl.SetReadDeadline(time.Now().Add(startTimeout))
		line, rerr := c.ctlr.ReadString('\n')
		c.ctl.SetReadDeadline(time.Time{})
		if rerr != nil || line != "ready\n" {
			c.kill()
			<-c.waited
			<-c.runcLogDone
			return nil, fmt.Errorf("container did not start: %s", strings.TrimSpace(string(c.runcLog.Bytes())))
		}
	}
	return c, nil
}

// startTimeout bounds a container's creation.
const startTimeout = 60 * time.Second

// exited says whether `runc run` has exited.
func (c *container) exited() bool {
	select {
	case <-c.waited:
		return true
	default:
		return false
	}
}

// signal asks the init to pass sig to the command's process group.
func (c *container) signal(sig syscall.Signal) error {
	c.ctl.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.ctl.Write(fmt.Appendf(nil, "signal %d\n", int(sig)))
	return err
}

// attach sends the init the command with its stdin, stdout and stderr,
// made here: runc never holds them, so the output ends with the command.
// It then reads the init's "exit N" into status.
func (c *container) attach(cmd initCommand) error {
	line, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return err
	}
	c.stdin, c.stdout, c.stderr = inW, outR, errR
	chownToRoot(inR, outW, errW)
	c.ctl.SetWriteDeadline(time.Now().Add(5 * time.Second))
	n, _, err := c.ctl.WriteMsgUnix(line, unix.UnixRights(int(inR.Fd()), int(outW.Fd()), int(errW.Fd())), nil)
	if err == nil && n < len(line) {
		_, err = c.ctl.Write(line[n:])
	}
	// The init has its copies now (or never will).
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		return fmt.Errorf("send the command: %w", err)
	}
	go func() {
		for {
			line, err := c.ctlr.ReadString('\n')
			if err != nil {
				return
			}
			var code int
			if _, err := fmt.Sscanf(line, "exit %d", &code); err == nil {
				c.status <- code
				return
			}
		}
	}()
	return nil
}

// kill ends the container: runc and, through their parent-death
// signals, the init and everything in the pid namespace.
func (c *container) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
}

// cleanup ends the container if it still runs, waits for runc, and
// removes the container's runc state, cgroups and bundle. Whatever
// happened, nothing of it is left.
func (c *container) cleanup(b *Backend) {
	select {
	case <-c.waited:
	case <-time.After(10 * time.Second):
		c.kill()
		<-c.waited
	}
	// A `runc run` that saw its container exit has deleted it: only one
	// that failed or was killed leaves its state for us to delete (which
	// costs another runc start, ~25 ms).
	if _, err := os.Stat(filepath.Join(b.runcRoot, c.id)); err == nil {
		exec.Command(b.Runc, "--root", b.runcRoot, "delete", "--force", c.id).Run()
	}
	c.cg.remove()
	os.RemoveAll(c.bundle)
	for _, f := range []*os.File{c.stdin, c.stdout, c.stderr} {
		if f != nil {
			f.Close()
		}
	}
	if c.ctl != nil {
		c.ctl.Close()
	}
}
