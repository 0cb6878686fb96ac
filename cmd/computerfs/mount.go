package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/metrics"
	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/internal/procs"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/remote"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/spf13/pflag"
	"github.com/zeebo/blake3"
)

// readyFDEnv names the descriptor on which a --daemon child reports that
// its mount is live (or why it failed).
const readyFDEnv = "COMPUTERFS_READY_FD"

func defaultHome() string {
	if h := os.Getenv("COMPUTERFS_HOME"); h != "" {
		return h
	}
	return filepath.Join(userHome(), ".local", "share", "computerfs")
}

// userHome is $HOME, else the user's home in the user database, else the
// root directory: never a directory that others can write, such as /tmp,
// where another user could make the store's or the log's directory first.
func userHome() string {
	if home, err := os.UserHomeDir(); err == nil {
		return home
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return "/"
}

func defaultMountpoint() string {
	return filepath.Join(userHome(), "computerfs")
}

func runMount(ctx context.Context, e *env, o mountOptions, args []string) error {
	daemon, create, limitStr, allowOther, memLimit := o.daemon, o.create, o.limit, o.allowOther, o.memLimit
	c := daemonConfig{debug: o.debug, metrics: o.metrics, sync: o.sync, readOnly: o.readOnly, noExec: o.noExec}
	var err error
	c.ws = filepath.Join(defaultHome(), "default.cfs")
	c.mnt = defaultMountpoint()
	switch len(args) {
	case 1:
		c.ws = args[0]
	case 2:
		c.ws, c.mnt = args[0], args[1]
	}
	if limitStr != "" {
		if c.limit, err = parseLimit(limitStr); err != nil {
			return usageError{err}
		}
	}
	switch allowOther {
	case "yes", "true":
		c.allowOther = true
	case "no", "false":
	case "auto":
		c.autoAllowOther = true
	default:
		return fmt.Errorf("--allow-other: want yes or no, not %q", allowOther)
	}
	if err := setMemoryLimit(memLimit); err != nil {
		return err
	}
	raiseProcs()
	if err := c.metrics.check(); err != nil {
		return usageError{err}
	}
	// Before a daemon starts, so that what is created is said here.
	if err := ensureWorkspace(e, c.ws, create, c.limit); err != nil {
		return err
	}
	if daemon {
		return startDaemon(e, c.ws, o.child)
	}
	ready := readyReporter()
	err = serve(ctx, e, c, ready)
	if err != nil {
		ready(err)
	}
	return err
}

// daemonConfig is what a daemon serves, from mount's or serve's flags.
type daemonConfig struct {
	ws, mnt           string // mnt "" serves the control socket alone
	limit             uint64
	allowOther, debug bool
	// readOnly refuses every change (EROFS) through the mount, the file
	// API and the backends; noExec mounts noexec.
	readOnly, noExec bool
	// autoAllowOther makes allowOther yes when the container backend is
	// installed.
	autoAllowOther bool
	// policyPoll is how often the policy file is checked (a second if 0).
	policyPoll time.Duration
	metrics    metricsFlags
	sync       syncFlags
}

// metricsFlags are the flags of the daemon's metrics listener.
type metricsFlags struct {
	addr       string
	anyAddress bool
	pprof      bool
}

func (m *metricsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&m.addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464 (a loopback address: metrics tell file paths, timings and activity to whoever connects)")
	fl.BoolVar(&m.anyAddress, "metrics-any-address", false, "let --metrics listen on an address that is not loopback (anyone who reaches it sees the workspace's activity, and with --pprof its memory)")
	fl.BoolVar(&m.pprof, "pprof", false, "with --metrics, also serve net/http/pprof at /debug/pprof/ (heap, goroutines, CPU profiles: they show paths and file contents)")
}

// check refuses flags that do not go together, or an address that is
// not loopback unless forced, before a daemon is started.
func (m *metricsFlags) check() error {
	if m.addr == "" {
		if m.pprof || m.anyAddress {
			return errors.New("--pprof and --metrics-any-address need --metrics ADDR")
		}
		return nil
	}
	return metrics.CheckAddress(m.addr, m.anyAddress)
}

// readyReporter returns how to tell a waiting parent the outcome: a nil
// error means the mount is live.
func readyReporter() func(error) {
	fdStr := os.Getenv(readyFDEnv)
	if fdStr == "" {
		return func(error) {}
	}
	os.Unsetenv(readyFDEnv)
	var fd int
	fmt.Sscan(fdStr, &fd)
	f := os.NewFile(uintptr(fd), "ready")
	done := false
	return func(err error) {
		if done || f == nil {
			return
		}
		done = true
		if err == nil {
			fmt.Fprintln(f, "ok")
		} else {
			fmt.Fprintln(f, "error:", err)
		}
		f.Close()
	}
}

// commitInterval is the longest a change waits for a commit when no fsync
// asks for one: fs's default, said here so that status can tell it.
const commitInterval = 100 * time.Millisecond

func serve(ctx context.Context, e *env, c daemonConfig, ready func(error)) (err error) {
	started := time.Now()
	sd := newNotifier()
	// Catch signals before the mount is live: one that arrives just after
	// must unmount, not kill the process and leave a dead mount behind.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ws, mnt := c.ws, c.mnt
	if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	if mnt != "" {
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			return fmt.Errorf("mountpoint %s: %w", mnt, err)
		}
	}
	// undo stops what was started, last first, when serving fails before
	// the daemon is live.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	// The governor holds the Go runtime to one P while no background work
	// wants a second CPU (internal/procs); it starts once the daemon is
	// live, after fs.Open sized its workers by the full count.
	gov := procs.New(e.log)
	f, err := fs.Open(ws, fs.Options{Limit: c.limit, Logger: e.log, CommitInterval: commitInterval, Heavy: gov})
	if err != nil {
		return err
	}
	undo = append(undo, func() { f.Close() }, gov.Stop)
	if c.limit != 0 {
		if cur, used := f.Limit(); cur != c.limit {
			if err := wsrpc.CheckLimit(c.limit, used); err != nil {
				return fmt.Errorf("--limit: %w", err)
			}
			f.SetLimit(c.limit)
		}
	}
	// A read-only daemon (mount --read-only, -o ro) refuses changes at
	// every door: the mount (the kernel), the file API and the backends
	// (through api), restore and undo.
	api := workspace.New(f, workspace.Options{ReadOnly: c.readOnly})
	absMnt := ""
	if mnt != "" {
		absMnt, _ = filepath.Abs(mnt)
	}
	var rt *backends.Runtime // set before anything lists it
	listBackends := func(ctx context.Context) []*pb.BackendInfo { return rt.List(ctx, false) }
	m := metrics.New(metrics.Sources{FS: f, Backends: listBackends})
	// Backends with path rules that need the mount get policy views of it.
	views := newPolicyViews(f, c.allowOther, absMnt, e.log)
	views.readOnly, views.noExec = c.readOnly, c.noExec
	var viewMount func(string, *workspace.Rules, func(workspace.Denial)) (string, error)
	if absMnt != "" {
		viewMount = views.mount
	}
	kick := make(chan struct{}, 1) // execs kick the syncer (--push-every)
	var syncer atomic.Pointer[remote.Syncer]
	rt, closeRT, err := newRuntime(e, ws, api, absMnt, afterExec(m.Exec, kick, &syncer), viewMount)
	if err != nil {
		return err
	}
	undo = append(undo, func() { views.close(context.WithoutCancel(ctx)) }, closeRT)
	var msrv *metrics.Server
	if c.metrics.addr != "" {
		msrv, err = m.Listen(c.metrics.addr, metrics.ServeOptions{Pprof: c.metrics.pprof, AnyAddress: c.metrics.anyAddress, Logger: e.log})
		if err != nil {
			return err // "metrics: ...", and why
		}
		undo = append(undo, func() { closeMetrics(ctx, e, msrv) })
	}
	dopts := wsrpc.DaemonOptions{FS: f, WS: api, Mountpoint: absMnt, Started: started, CommitInterval: commitInterval, ExecLog: execLogPath(ws), Backends: listBackends}
	if msrv != nil {
		dopts.MetricsAddr = msrv.Addr()
	}
	if mnt != "" {
		dopts.Fuse = m.FuseStats
	}
	dopts.Commits = m.Commits
	// The mount, once it is up, hears of snapshots made and deleted.
	var mounted atomic.Pointer[fusefs.Server]
	dopts.SnapshotsChanged = func(name string) {
		if srv := mounted.Load(); srv != nil {
			srv.SnapshotsChanged(name)
		}
	}
	// The file API's view: the policy's top-level rules, swapped when
	// the policy file changes (WatchPolicy below).
	var files atomic.Pointer[workspace.WS]
	apiDenials := &audit.Coalescer{}
	if fv, err := fileViewOf(api, rt.Policy(), apiDenials); err != nil {
		return err
	} else {
		files.Store(fv)
	}
	// Forks: a backend that needs the mount gets a mount of the fork it
	// runs in; before a fork is merged or discarded, they let go of it.
	if absMnt != "" {
		rt.SetForkMount(views.mountFork(api))
	}
	api.SetForkCloser(func(fork string) {
		rt.CloseFork(fork)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unmountWait)
		defer cancel()
		views.closeFork(uctx, fork)
	})
	dopts.Files = files.Load // restore, undo and diffs obey the file API's rules
	// Push and pull through the daemon, on its open store; a pull moves
	// the live tree through api, which tells the mount.
	host := &remote.Host{FS: f, WS: ws, Apply: api.ApplyTree, Options: clientOptions()}
	dopts.Remote = host
	ctl, err := wsrpc.Listen(ws, wsrpc.NewServer(wsrpc.WithForks(func(context.Context) (*workspace.WS, error) { return files.Load(), nil })), e.log,
		backends.NewService(rt).Register, wsrpc.NewDaemonServer(dopts).Register)
	if err != nil {
		return err
	}
	undo = append(undo, ctl.Close)
	// computerfs mcp over stdio hands its session to the daemon.
	ctl.HandleHandoff(func(ctx context.Context, c *net.UnixConn) {
		mcpserver.ServeHandoff(ctx, c, func(ctx context.Context, req mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
			return handoffServer(ctx, e, ws, files.Load, req)
		}, e.log)
	})
	var srv *fusefs.Server
	var detached <-chan struct{}
	if c.autoAllowOther && !c.allowOther {
		// The container backend's root is an unprivileged uid in a user
		// namespace, which a mount without allow_other refuses.
		for _, b := range rt.List(ctx, false) {
			c.allowOther = c.allowOther || b.Id == "container"
		}
	}
	if mnt != "" {
		abs, _ := filepath.Abs(ws)
		// Views a killed daemon left at this mountpoint go first.
		detachStaleViews(mnt, e.log)
		srv, err = fusefs.Mount(f, mnt, fusefs.Options{AllowOther: c.allowOther, ReadOnly: c.readOnly, NoExec: c.noExec, Debug: c.debug, Logger: e.log, FsName: abs, Observer: m, Changed: views.fromMain})
		if err != nil {
			return err
		}
		views.setMain(srv, c.allowOther)
		api.SetNotifier(views)
		mounted.Store(srv)
		detached = srv.Detached()
		fmt.Fprintf(e.stdout, "computerfs: %s mounted at %s\n", ws, mnt)
		e.log.Info("mounted", "workspace", ws, "mountpoint", mnt, "allow_other", c.allowOther, "socket", ctl.Path())
	} else {
		fmt.Fprintf(e.stdout, "computerfs: serving %s on %s\n", ws, ctl.Path())
		e.log.Info("serving", "workspace", ws, "socket", ctl.Path())
	}
	gov.Start()
	stopSync, err := startSync(ctx, e, c.sync, host, kick, &syncer)
	if err != nil {
		return err
	}
	// The policy file is watched: a change is checked and swapped in
	// (backends.Runtime.WatchPolicy), a bad file refused.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		rt.WatchPolicy(watchCtx, policyPath(), c.policyPoll, func(pol backends.Policy) {
			fv, err := fileViewOf(api, pol, apiDenials)
			if err != nil {
				e.log.Error("file API rules of the new policy", "err", err) // checked by SetPolicy: not reached
				return
			}
			files.Store(fv)
		})
	}()
	ready(nil)
	undo = nil // live: the shutdown below stops it all
	live := "serving " + ws + " on " + ctl.Path()
	if mnt != "" {
		live = ws + " mounted at " + mnt
	}
	if err := sd.notify(fmt.Sprintf("READY=1\nMAINPID=%d\nSTATUS=%s", os.Getpid(), live)); err != nil {
		e.log.Warn("readiness not sent", "err", err)
	}

	select {
	case s := <-sigs:
		e.log.Info("stopping", "signal", s.String())
	case <-detached:
		e.log.Info("stopping: unmounted from outside", "mountpoint", mnt)
	case <-ctx.Done():
		e.log.Info("stopping", "err", context.Cause(ctx))
	}
	stopWatch()
	<-watchDone
	if err := sd.notify("STOPPING=1\nSTATUS=stopping: backends, then the mount, then the store"); err != nil {
		e.log.Warn("stopping not sent", "err", err)
	}
	start := time.Now()
	// Shutting down (backends, commits) may use every CPU again.
	gov.Stop()
	// A second signal forces the exit: the connection is aborted, and the
	// store, which bbolt keeps consistent at every commit, is left as the
	// last commit made it.
	shutDown := make(chan struct{})
	defer close(shutDown)
	go func() {
		select {
		case s := <-sigs:
			e.log.Warn("second signal: exiting at once", "signal", s.String())
			if srv != nil {
				if err := srv.Abort(); err != nil {
					e.log.Error("abort the FUSE connection", "mountpoint", mnt, "err", err)
				}
			}
			os.Exit(exitForced)
		case <-shutDown:
		}
	}()
	// The backends first: a container that a backend keeps warm holds the
	// mount in its own mount namespace, and the kernel keeps the FUSE
	// connection until it is gone, so waiting for the kernel first would
	// wait forever.
	closeRT()
	e.log.Info("backends stopped", "took", time.Since(start).Round(time.Millisecond))
	// Then the policy views they bound.
	vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), unmountWait)
	views.close(vctx)
	vcancel()
	if srv != nil {
		mounted.Store(nil)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unmountWait)
		err := srv.Shutdown(uctx)
		cancel()
		if err != nil {
			e.log.Error("unmount", "mountpoint", mnt, "err", err)
		}
	}
	if msrv != nil {
		closeMetrics(ctx, e, msrv)
	}
	ctl.Close()
	stopSync()
	api.SetNotifier(nil)
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", ws, err)
	}
	e.log.Info("workspace closed", "workspace", ws, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// metricsWait bounds the wait for scrapes (and pprof profiles) in flight
// when the daemon stops.
const metricsWait = 2 * time.Second

func closeMetrics(ctx context.Context, e *env, msrv *metrics.Server) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsWait)
	defer cancel()
	if err := msrv.Close(mctx); err != nil {
		e.log.Warn("metrics: requests in flight cut short", "err", err)
	}
}

// unmountWait bounds the wait for the kernel to end the FUSE connection
// once the backends are stopped; then it is aborted.
const unmountWait = 2 * time.Second

// exitForced is the exit status after a second SIGINT or SIGTERM.
const exitForced = 130

// startDaemon re-runs this command in a new session without --daemon and
// waits until the child reports its mount live.
func startDaemon(e *env, ws string, childArgs []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	logPath := daemonLogPath(ws)
	logf, err := openDaemonLog(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(self, childArgs...)
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start daemon: %w", err)
	}
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		switch {
		case s == "ok":
			fmt.Fprintf(e.stdout, "computerfs: daemon %d serving; log in %s\n", cmd.Process.Pid, logPath)
			cmd.Process.Release()
			return nil
		case strings.HasPrefix(s, "error: "):
			cmd.Wait()
			return errors.New(strings.TrimPrefix(s, "error: "))
		default:
			cmd.Wait()
			return fmt.Errorf("daemon exited before mounting; see %s", logPath)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("daemon did not mount within 60s; see %s", logPath)
	}
}

// daemonLogPath is where the --daemon child serving workspace ws logs:
// WS.log beside the store, one log per workspace, when the store's
// directory is private to this user; else (a directory others can write,
// where they could make that file first) a log named after the store in
// $COMPUTERFS_HOME/logs.
func daemonLogPath(ws string) string {
	abs, err := filepath.Abs(ws)
	if err != nil {
		abs = ws
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0 {
			return abs + ".log"
		}
	}
	sum := blake3.Sum256([]byte(abs))
	return filepath.Join(defaultHome(), "logs", fmt.Sprintf("%s-%x.log", filepath.Base(abs), sum[:6]))
}

// openDaemonLog opens the daemon's log for appending, making its
// directory (0700) if needed. It refuses a directory that is not the
// user's or that others can write, and a log that is a symlink: the
// daemon, often root, would append to whatever file another user chose.
func openDaemonLog(logPath string) (*os.File, error) {
	dir := filepath.Dir(logPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon log directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("daemon log directory: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		uid := -1
		if st != nil {
			uid = int(st.Uid)
		}
		return nil, fmt.Errorf("refusing daemon log directory %s (owner uid %d, mode %s): it must be owned by uid %d and writable by nobody else, or another user could replace the log; set COMPUTERFS_HOME to a directory of your own", dir, uid, fi.Mode(), os.Geteuid())
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon log %s: %w", logPath, err)
	}
	return logf, nil
}

func runUmount(ctx context.Context, e *env, args []string) error {
	mnt := args[0]
	// The daemon, found before the mount goes: umount returns once it has
	// stopped its backends and closed the store.
	daemon := 0
	if ws, ok := mountedStore(mnt); ok {
		if pid, err := wsrpc.DaemonPID(ctx, ws); err == nil {
			daemon = pid
		} else if !errors.Is(err, wsrpc.ErrNoDaemon) {
			e.log.Warn("umount: the daemon's control socket", "workspace", ws, "err", err)
		}
	}
	if err := syscall.Unmount(mnt, 0); err != nil {
		if !errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		if out, ferr := exec.CommandContext(ctx, "fusermount3", "-u", mnt).CombinedOutput(); ferr != nil {
			return fmt.Errorf("unmount %s: %w: %s", mnt, err, strings.TrimSpace(string(out)))
		}
	}
	// A killed daemon's policy views stay mounted, dead, as its main
	// mount did: they go too (a live daemon unmounts its own as it stops).
	defer detachStaleViews(mnt, e.log)
	if daemon == 0 {
		return nil
	}
	// The daemon sees the mount go from its namespace; if it does not
	// (another namespace), it is told with SIGTERM.
	if waitExit(ctx, daemon, umountWait) {
		return nil
	}
	e.log.Warn("umount: the daemon is still running; sending SIGTERM", "pid", daemon)
	syscall.Kill(daemon, syscall.SIGTERM)
	if waitExit(ctx, daemon, umountWait) {
		return nil
	}
	return fmt.Errorf("unmounted %s, but its daemon (pid %d) is still running", mnt, daemon)
}

// umountWait is how long umount waits for the daemon to exit, before and
// after a SIGTERM.
const umountWait = 5 * time.Second

// waitExit waits until process pid is gone (or a zombie), for d at most.
func waitExit(ctx context.Context, pid int, d time.Duration) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(d)
	for {
		if !processAlive(pid) {
			return true
		}
		select {
		case <-t.C:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// processAlive says whether pid is a process that has not finished
// exiting. A killed multithreaded process's leader turns zombie while its
// other threads still tear down, holding the files they share (the
// store's lock, the control socket, which then accepts a connection and
// resets it): it is alive until its last thread is gone.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X') {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return err == nil && len(tasks) > 1
	}
	return true
}

// mountedStore is the store of the computerfs mount at mnt, from
// /proc/self/mountinfo (the mount's source is the store's absolute path).
func mountedStore(mnt string) (string, bool) {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return "", false
	}
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	store := ""
	for _, m := range mounts {
		if m.FSType == "fuse.computerfs" && m.Point == abs {
			store = m.Source // the last one is on top
		}
	}
	return store, store != ""
}

// fuseProcs is the fewest Ps (GOMAXPROCS) a process that serves FUSE
// mounts runs with. go-fuse's request readers (as many as GOMAXPROCS, at
// least 2) wait in read(2) on /dev/fuse, each holding its P in a system
// call; with only as many Ps as the 2 CPUs of our machines, every P is in
// a system call whenever a request's handler blocks too (a pread of the
// store), so the runtime's monitor wakes every 20 µs to take Ps back and
// hand them to other threads. Cold random 4 KiB reads (fio, 5 s, a daemon
// remounted each time, load 3.6-3.9) cost 3.1-3.4 thread switches and
// 76-83 µs of daemon CPU per READ with 2 Ps, 2.4-2.6 and 51-63 µs with
// 4, at 7,536-9,120 against 9,264-12,287 IOPS. Sequential 1 MiB reads
// showed no difference. An explicit GOMAXPROCS in the environment wins.
// While the daemon serves, internal/procs holds it to 1 whenever no
// background work streams, and raises it back to this when some does.
const fuseProcs = 4

// raiseProcs gives a process that serves FUSE mounts fuseProcs Ps.
func raiseProcs() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < fuseProcs {
		runtime.GOMAXPROCS(fuseProcs)
	}
}

// defaultMemoryLimit keeps the heap, chunk buffers included, well under the
// 256 MiB the daemon aims for while large writes stream through it.
const defaultMemoryLimit = "160M"

// setMemoryLimit sets the Go runtime's soft memory limit: without it, the
// heap grows to twice what is live between collections, and bbolt's
// per-commit page buffers make that a lot.
func setMemoryLimit(s string) error {
	n, err := size.Parse(s)
	if err != nil {
		return fmt.Errorf("--memory-limit: %w", err)
	}
	if n > 0 {
		debug.SetMemoryLimit(int64(n))
	}
	return nil
}
