package containerbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/containerbackend/containerinit"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Version is the container backend's version.
const Version = "0.1.0"

// Defaults and bounds of the limits.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultMemoryBytes = 1 << 30
	DefaultMaxPids     = 512
	DefaultCPUMillis   = 1000
	// KillGrace is how long a timed-out container has between SIGTERM and
	// SIGKILL.
	KillGrace = 2 * time.Second
	// DefaultPool is how many warm containers are kept ready.
	DefaultPool = 1
	maxPool     = 8
)

// DefaultStateDir holds runc's state root, the bundles and the rootfs.
const DefaultStateDir = "/run/computerfs-container"

// idPrefix starts the IDs of our containers: cfs-<plugin pid>-<tag>-<n>.
const idPrefix = "cfs-"

// Backend runs each exec in a runc container.
type Backend struct {
	// Runc is the runc binary; empty: "runc" from PATH.
	Runc string
	// StateDir replaces DefaultStateDir (tests, benchmarks).
	StateDir string
	// ExtraBinds are host directories every container sees read-only at
	// the same path (the benchmarks' inputs). Plugins started by the
	// daemon have none: what a container reaches is the policy's.
	ExtraBinds []string
	// Init is a static binary that serves as each container's PID 1 when
	// started with InitArg (package containerinit): computerfs-container-init,
	// or a binary that calls MaybeRunInit first. It also makes warm
	// containers possible. Empty, the command is PID 1 itself: no pool, a
	// plain sleep ignores the timeout's SIGTERM, and a plugin killed with
	// SIGKILL leaves its containers' processes running until the next
	// start sweeps them.
	Init string
	// Logger gets the backend's warnings (slog's default if nil).
	Logger *slog.Logger

	pool      *pool          // warm containers; nil without an init or with "pool": "0"
	stage     *stage         // the binds' sources (userns.go)
	bg        sync.WaitGroup // teardowns of finished execs
	set       settings
	init      string // Init, if it can run in the rootfs
	mountPath string // canonical: the workspace (or its policy root)
	runcRoot  string
	bundles   string
	rootfs    string
	binds     []string
	path      string // PATH when the exec sets none
	seccomp   *specs.LinuxSeccomp
	v2        bool
	seq       atomic.Uint64
	tag       uint32 // random: Backends in one process make distinct IDs
}

// settings are the policy's settings for the backend (Config.Settings).
type settings struct {
	hostNetwork bool   // "network": "host"
	proxySocket string // "network": "proxy": the egress proxy's socket ("proxy_socket")
	userland    string // "rootfs": the configured root, "" for the host's
	noSeccomp   bool   // "seccomp": "off"
	readOnly    bool   // "read_only": "true" (from the policy's read_only)
	pool        int    // "pool": warm containers kept (default 1)
}

// parseSettings checks every setting; an unknown key is an error, so a
// misspelt restriction is not silently dropped.
func parseSettings(s map[string]string) (settings, error) {
	st := settings{pool: DefaultPool}
	for k, v := range s {
		switch k {
		case "network":
			switch v {
			case "", "none":
			case "host":
				st.hostNetwork = true
			case "proxy":
				st.proxySocket = s["proxy_socket"]
				if !filepath.IsAbs(st.proxySocket) {
					return st, errors.New(`setting "network": "proxy" needs "proxy_socket", the absolute path of the egress proxy's socket (the runtime gives it)`)
				}
			default:
				return st, fmt.Errorf(`setting "network": %q is neither "none" (the default: loopback only), "host" nor "proxy"`, v)
			}
		case "proxy_socket":
			if s["network"] != "proxy" {
				return st, errors.New(`setting "proxy_socket" without "network": "proxy"`)
			}
		case "seccomp":
			switch v {
			case "", "default":
			case "off":
				st.noSeccomp = true
			default:
				return st, fmt.Errorf(`setting "seccomp": %q is neither "default" nor "off"`, v)
			}
		case "read_only":
			ro, err := strconv.ParseBool(v)
			if err != nil {
				return st, fmt.Errorf(`setting "read_only": %q is neither "true" nor "false"`, v)
			}
			st.readOnly = ro
		case "rootfs":
			st.userland = v
		case "pool":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxPool {
				return st, fmt.Errorf(`setting "pool": %q is not a number of warm containers from 0 to %d`, v, maxPool)
			}
			st.pool = n
		case "commands":
			return st, errors.New(`the container backend cannot limit commands: the policy's "commands" is for the shell backend`)
		default:
			return st, fmt.Errorf(`unknown setting %q (the container backend knows "network", "proxy_socket", "rootfs", "seccomp", "pool" and "read_only")`, k)
		}
	}
	return st, nil
}

var _ pluginapi.Backend = (*Backend)(nil)

func (b *Backend) Describe(context.Context) (*pb.Description, error) {
	return &pb.Description{
		Id:      "container",
		Name:    "Container",
		Version: Version,
		Description: "Runs real binaries (git, make, compilers, python, node if installed on the host) in a runc " +
			"container as an unprivileged user namespace's root: the host's /usr read-only, an /etc of its own, the workspace read-write at /workspace (the default " +
			"directory), a private /tmp, no network (unless the policy configures another userland, the host's " +
			"network or a read-only workspace). Starting a container costs tens of milliseconds; use the shell " +
			"backend for plain file inspection and text processing.",
		Accepts:  []string{"script", "argv"},
		Features: []string{"stdin", "signals", "oom"},
		DefaultLimits: &pb.Limits{
			TimeoutMs: DefaultTimeout.Milliseconds(), MemoryBytes: DefaultMemoryBytes,
			MaxPids: DefaultMaxPids, CpuMillis: DefaultCPUMillis,
		},
		MaxLimits: &pb.Limits{
			TimeoutMs: (24 * time.Hour).Milliseconds(), MemoryBytes: 64 << 30, MaxPids: 65536, CpuMillis: 64_000,
		},
		NeedsMount: true,
	}, nil
}

// FindRunc finds the runc binary: on PATH, or where Debian and the
// upstream installer put it (root's PATH may lack the sbin directories).
func FindRunc() (string, error) {
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	for _, c := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", errors.New("runc not found: install it (apt-get install runc)")
}

func (b *Backend) Configure(_ context.Context, cfg *pluginapi.Config) (err error) {
	set, err := parseSettings(cfg.Settings)
	if err != nil {
		return err
	}
	if cfg.MountPath == "" {
		return errors.New("the container backend needs the workspace mounted (no mount path)")
	}
	if fi, err := os.Stat(cfg.MountPath); err != nil || !fi.IsDir() {
		return fmt.Errorf("workspace mount %s: not a directory (%v)", cfg.MountPath, err)
	}
	// Canonical, so that each exec can check that it still resolves to
	// itself (see checkWorkspace).
	mountPath, err := filepath.EvalSymlinks(cfg.MountPath)
	if err != nil {
		return fmt.Errorf("workspace mount %s: %w", cfg.MountPath, err)
	}
	var ul *userland
	if set.userland != "" {
		if ul, err = loadUserland(set.userland); err != nil {
			return fmt.Errorf(`setting "rootfs": %w`, err)
		}
	}
	if b.Runc == "" {
		p, err := FindRunc()
		if err != nil {
			return err
		}
		b.Runc = p
	}
	if err := CgroupsAvailable(); err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	b.seccomp = nil
	if !set.noSeccomp {
		archs, err := runcSeccomp(b.Runc)
		if err != nil {
			return fmt.Errorf(`seccomp: %v; set "seccomp": "off" in the policy's settings to run without it`, err)
		}
		b.seccomp = seccompProfile(archs)
	}
	if b.StateDir == "" {
		b.StateDir = DefaultStateDir
	}
	b.set = set
	b.mountPath = mountPath
	b.runcRoot = filepath.Join(b.StateDir, "runc")
	b.bundles = filepath.Join(b.StateDir, "bundles")
	b.v2 = cgroupV2()
	for _, d := range []string{b.runcRoot, b.bundles} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// A previous configuration's warm containers and stage go first.
	if b.pool != nil {
		b.pool.close()
		b.pool = nil
	}
	b.stage.close()
	b.stage = nil
	b.sweep()
	b.tag = rand.Uint32()
	if b.stage, err = newStage(b.tag); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			b.stage.close()
			b.stage = nil
		}
	}()
	if err := b.stage.mountWorkspace(mountPath); err != nil {
		return err
	}
	if set.proxySocket != "" {
		if b.Init == "" {
			return errors.New(`setting "network": "proxy" needs the container init (computerfs-container-init), which forwards the proxy into the container`)
		}
		if err := b.stage.bindProxy(set.proxySocket); err != nil {
			return fmt.Errorf("egress proxy: %w", err)
		}
	}
	stageInit := func(ok bool) error {
		b.init = ""
		if b.Init == "" || !ok {
			return nil
		}
		b.init = b.stage.init()
		if err := b.stage.copyInit(b.Init); err != nil {
			// Bound from where it is: runc says what is wrong with it
			// when a container starts.
			b.log().Warn("container backend: init not copied", "init", b.Init, "err", err)
			b.init = b.Init
		}
		return nil
	}
	if ul != nil {
		// Runc creates missing mount points in the root, before making
		// it read-only: they are made here, where a failure is clear.
		if err := ul.mountPoints(b.ExtraBinds); err != nil {
			return fmt.Errorf(`setting "rootfs": %w`, err)
		}
		// Bound into the stage: the container's root (host uid
		// HostIDBase) may have no way through the directories above it.
		if err := b.stage.bindRootfs(ul.root); err != nil {
			return fmt.Errorf(`setting "rootfs": %w`, err)
		}
		b.rootfs, b.binds, b.path = b.stage.rootfs(), nil, ul.path
		// A dynamically linked init cannot start in a root without its
		// loader: run without one rather than fail every exec.
		if err := stageInit(b.Init != "" && runsIn(b.Init, ul.root)); err != nil {
			return err
		}
		b.startPool()
		return nil
	}
	if err := stageInit(true); err != nil {
		return err
	}
	b.rootfs = b.stage.rootfs()
	binds, err := b.stage.makeRootfs()
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	b.binds, b.path = binds, defaultPath
	b.startPool()
	return nil
}

// startPool starts keeping warm containers, which need an init to take
// their command.
func (b *Backend) startPool() {
	if b.pool != nil {
		b.pool.close()
		b.pool = nil
	}
	if b.init == "" || b.set.pool == 0 {
		return
	}
	b.pool = newPool(b, b.set.pool, b.specParams(), limitsKey{memory: DefaultMemoryBytes, pids: DefaultMaxPids, cpuMillis: DefaultCPUMillis})
}

// RuncRoot is runc's --root for this backend.
func (b *Backend) RuncRoot() string { return b.runcRoot }

// ownerAlive says whether the plugin process that made container id (or
// bundle, rootfs dir) still runs. Our own pid counts as alive: other
// Backends in this process (tests, benchmarks) may be using them.
func ownerAlive(pidText string) bool {
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie is dead: a plugin killed with its daemon waits to be reaped
	// by whatever adopted it, which may take its time.
	stat, err := os.ReadFile("/proc/" + pidText + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

func idOwner(id string) string {
	s := strings.TrimPrefix(id, idPrefix)
	owner, _, _ := strings.Cut(s, "-")
	return owner
}

// sweep deletes what plugin processes that are gone left behind.
func (b *Backend) sweep() {
	out, _ := exec.Command(b.Runc, "--root", b.runcRoot, "list", "-q").Output()
	for _, id := range strings.Fields(string(out)) {
		if strings.HasPrefix(id, idPrefix) && !ownerAlive(idOwner(id)) {
			exec.Command(b.Runc, "--root", b.runcRoot, "delete", "--force", id).Run()
		}
	}
	if ents, err := os.ReadDir(b.bundles); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), idPrefix) && !ownerAlive(idOwner(e.Name())) {
				os.RemoveAll(filepath.Join(b.bundles, e.Name()))
			}
		}
	}
	for _, id := range leftoverCgroups() {
		if strings.HasPrefix(id, idPrefix) && !ownerAlive(idOwner(id)) {
			removeCgroup(filepath.Join(cgroupParent, id))
		}
	}
	stages, _ := os.ReadDir(StageDir)
	for _, e := range stages {
		if p, ok := strings.CutPrefix(e.Name(), stagePrefix); ok {
			if owner, _, _ := strings.Cut(p, "-"); !ownerAlive(owner) {
				// Unmounted, then removed once empty: never a RemoveAll,
				// which would descend into the workspace's clone.
				unmountStage(filepath.Join(StageDir, e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir(b.StateDir); err == nil {
		for _, e := range ents {
			// rootfs-<pid>: where older plugins built their root.
			if p, ok := strings.CutPrefix(e.Name(), "rootfs-"); ok && !ownerAlive(p) {
				// Only empty directories and symlinks: mounts happen in the
				// containers' own mount namespaces.
				os.RemoveAll(filepath.Join(b.StateDir, e.Name()))
			}
		}
	}
}

// command turns the start message into the container's argv.
func command(st *pb.ExecStart) ([]string, error) {
	switch st.Kind {
	case "", "script":
		if st.File != "" {
			return append([]string{"/bin/bash", path.Join("/workspace", path.Clean("/"+st.File))}, st.Argv...), nil
		}
		if len(st.Argv) == 0 {
			return nil, errors.New("no script")
		}
		return []string{"/bin/bash", "-c", strings.Join(st.Argv, " ")}, nil
	case "argv":
		if len(st.Argv) == 0 {
			return nil, errors.New("empty argv")
		}
		return st.Argv, nil
	default:
		return nil, fmt.Errorf("the container backend runs scripts and argv, not %q", st.Kind)
	}
}

func orDefault(v, d int64) int64 {
	if v > 0 {
		return v
	}
	return d
}

func (b *Backend) Exec(ctx context.Context, x *pluginapi.Exec) (*pb.Exit, error) {
	if b.rootfs == "" {
		return nil, errors.New("container backend: not configured")
	}
	t0 := time.Now()
	st := x.Start
	args, err := command(st)
	if err != nil {
		return &pb.Exit{ExitCode: 2, Reason: err.Error()}, nil
	}
	if err := checkWorkspace(b.mountPath); err != nil {
		return nil, err
	}
	cwd := path.Clean("/" + st.Cwd)
	if fi, err := os.Stat(filepath.Join(b.mountPath, filepath.FromSlash(cwd))); err != nil || !fi.IsDir() {
		fmt.Fprintf(x.Stderr, "cd: %s: No such directory\n", cwd)
		return &pb.Exit{ExitCode: 1, Reason: "no such working directory"}, nil
	}
	lim := st.Limits
	if lim == nil {
		lim = &pb.Limits{}
	}
	limits := limitsKey{
		memory:    orDefault(lim.MemoryBytes, DefaultMemoryBytes),
		pids:      orDefault(lim.MaxPids, DefaultMaxPids),
		cpuMillis: orDefault(lim.CpuMillis, DefaultCPUMillis),
	}
	timeout := time.Duration(orDefault(lim.TimeoutMs, DefaultTimeout.Milliseconds())) * time.Millisecond
	p := b.specParams()
	p.env = containerEnv(st.Env)
	if p.proxy != "" {
		// The proxy is the only way out: its forwarder in the container
		// (the init's, on loopback) is every client's proxy.
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
			p.env[k] = "http://" + containerinit.ProxyAddr
		}
		p.env["NO_PROXY"], p.env["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	}
	p.cwd = path.Join("/workspace", cwd)
	env := p.envList()

	var c *container
	if b.pool != nil {
		if c = b.pool.take(ctx, limits); c != nil && c.attach(initCommand{Argv: args, Env: env, Dir: p.cwd}) != nil {
			// It died after take looked: start one of our own.
			c.kill()
			c.cleanup(b)
			c = nil
		}
	}
	if c == nil {
		if p.init == "" {
			p.args = args
		}
		if c, err = b.startContainer(p, limits); err != nil {
			return nil, err
		}
		if c.ctl != nil {
			if err := c.attach(initCommand{Argv: args, Env: env, Dir: p.cwd}); err != nil {
				c.kill()
				c.cleanup(b)
				return nil, fmt.Errorf("container init: %w", err)
			}
		}
	}
	// Whatever happens from here, the container, its bundle and cgroups
	// go; then the pool makes up for what it lent. With an init, the exit
	// is known before runc has torn the container down (~0.1 s): that
	// happens in the background, and Close waits for it.
	background := false
	defer func() {
		if !background {
			c.cleanup(b)
			b.refill()
			return
		}
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			c.cleanup(b)
			b.refill()
		}()
	}()
	// Output: copied until every process in the container has closed the
	// pipes, which they do by exiting.
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(x.Stdout, c.stdout) }()
	go func() { defer copies.Done(); io.Copy(x.Stderr, c.stderr) }()
	// Input is not waited for: the host may never close it. The copy ends
	// at the host's EOF, or at the first write after cleanup closed the
	// pipe.
	go func() {
		if x.Stdin != nil {
			io.Copy(c.stdin, x.Stdin)
		}
		c.stdin.Close()
	}()

	var (
		mu       sync.Mutex
		timedOut bool
		lastSig  syscall.Signal
	)
	kill := func(sig syscall.Signal) {
		mu.Lock()
		lastSig = sig
		mu.Unlock()
		if sig == syscall.SIGKILL {
			// runc dies, the init with it (parent-death signal), and the
			// pid namespace with its init; cleanup deletes the rest.
			c.kill()
			return
		}
		if c.ctl != nil {
			// The init passes it to the command's process group, as a
			// terminal would.
			if c.signal(sig) == nil {
				return
			}
		}
		if err := exec.Command(b.Runc, "--root", b.runcRoot, "kill", "--all", c.id, strconv.Itoa(int(sig))).Run(); err != nil {
			b.log().Warn("container backend: signal", "container", c.id, "signal", sig, "err", err)
		}
	}
	// ended is closed when the command is over: the init reported its
	// exit, or runc exited (without an init, or when the init died).
	ended := make(chan struct{})
	code, gotStatus := 0, false
	go func() {
		defer close(ended)
		select {
		case code = <-c.status: // nil without an init: never
			gotStatus = true
		case <-c.waited:
			select {
			case code = <-c.status:
				gotStatus = true
			default:
			}
		}
	}()
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		var grace <-chan time.Time
		for {
			select {
			case <-ended:
				return
			case <-ctx.Done():
				kill(syscall.SIGKILL)
				return
			case <-timer.C:
				mu.Lock()
				timedOut = true
				mu.Unlock()
				kill(syscall.SIGTERM)
				grace = time.After(KillGrace)
			case <-grace:
				kill(syscall.SIGKILL)
				return
			case s := <-x.Signals:
				kill(s)
			}
		}
	}()
	<-ended
	<-watcherDone
	copies.Wait()
	background = gotStatus

	exit := &pb.Exit{DurationNs: int64(time.Since(t0))}
	var ee *exec.ExitError
	var werr error // runc's exit, when the command's is not known
	if !gotStatus {
		<-c.waited
		werr = c.waitErr
		if c.runcLog != nil {
			// The container failed to start, or its init died: what runc
			// said is the command's stderr.
			<-c.runcLogDone
			x.Stderr.Write(c.runcLog.Bytes())
		}
	}
	switch {
	case gotStatus:
		exit.ExitCode = int32(code)
	case werr == nil:
	case errors.As(werr, &ee):
		exit.ExitCode = int32(ee.ExitCode())
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// runc itself was killed.
			exit.ExitCode = 128 + int32(ws.Signal())
			exit.Signal = int32(ws.Signal())
		}
	default:
		return nil, fmt.Errorf("runc: %w", werr)
	}
	mu.Lock()
	exit.TimedOut = timedOut
	sig := lastSig
	mu.Unlock()
	if sig != 0 && exit.ExitCode == 128+int32(sig) {
		exit.Signal = int32(sig)
	} else if sig != 0 && exit.ExitCode == 128+int32(syscall.SIGKILL) {
		exit.Signal = int32(syscall.SIGKILL)
	}
	if c.cg.oomKills() > 0 {
		exit.OomKilled = true
		exit.Reason = fmt.Sprintf("memory limit: %d bytes", limits.memory)
		if exit.ExitCode == 128+int32(syscall.SIGKILL) {
			exit.Signal = int32(syscall.SIGKILL)
		}
	}
	if exit.TimedOut {
		exit.Reason = "timeout: " + timeout.String()
	} else if ctx.Err() != nil && exit.Reason == "" {
		exit.Reason = "cancelled"
	}
	return exit, nil
}

// containerEnv is the request's environment, with a writable HOME and
// TMPDIR: the root is read-only, so a HOME of / (the runtime's default)
// or none becomes /tmp, the container's private tmpfs, where caches
// (git, go, npm) can live.
func containerEnv(req map[string]string) map[string]string {
	env := maps.Clone(req)
	if env == nil {
		env = map[string]string{}
	}
	if h, ok := env["HOME"]; !ok || h == "/" {
		env["HOME"] = "/tmp"
	}
	if _, ok := env["TMPDIR"]; !ok {
		env["TMPDIR"] = "/tmp"
	}
	return env
}

// proxySource is the stage's binding of the egress proxy's socket, ""
// without one.
func (b *Backend) proxySource() string {
	if b.set.proxySocket == "" || b.stage == nil {
		return ""
	}
	return b.stage.proxy()
}

// specParams is what every container of this backend shares.
func (b *Backend) specParams() specParams {
	return specParams{
		rootfs: b.rootfs, binds: b.binds, extraBinds: b.ExtraBinds,
		workspace:   b.stage.ws(),
		init:        b.init,
		workspaceRO: b.set.readOnly,
		hostNetwork: b.set.hostNetwork,
		proxy:       b.proxySource(),
		seccomp:     b.seccomp,
		defaultPath: b.path,
		cwd:         "/workspace",
	}
}

// Close removes the warm containers and waits for the teardown of
// finished execs. Execs under way are not affected.
func (b *Backend) Close() {
	if b.pool != nil {
		b.pool.close()
	}
	b.bg.Wait() // teardowns, which refill the pool: only then is it nil
	b.pool = nil
	b.stage.close()
	b.stage = nil
}

// refill has the pool make up for a container it lent.
func (b *Backend) refill() {
	if b.pool != nil {
		b.pool.fill()
	}
}

func (b *Backend) log() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}
