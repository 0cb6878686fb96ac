// Package backends hosts the execution backends: it finds the plugin
// executables, starts each one lazily over go-plugin under its stable ID,
// serves it the workspace (HostFS) scoped to each exec by a token, runs
// execs under the host's own limits, picks a backend by policy when the
// caller names none, and records every exec: which backend, why, and
// which files changed while it ran.
//
// It owns the plugin processes: every one runs in its own process group
// with a parent-death signal, is killed as a group on shutdown, and is
// swept at start if a previous host died without killing it. It must not
// trust a plugin: every message is checked, every limit enforced here,
// and a plugin that crashes, hangs or lies fails its exec and nothing
// else.
//
// What it knows of itself is for the daemon's status and metrics: List
// gives each backend's state, pid, execs and restarts, Options.OnExec
// sees every exec's result, and ExitClass names how an exec ended.
//
// # Locking
//
// Runtime.mu guards the backend table and the token table; each
// backend's mu guards its process state. Runtime.mu is never held while
// a backend's mu is taken, nor across a call to a plugin (it may be
// taken, briefly, while a backend's mu is held).
package backends

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// Prefix is how plugin executables are named: computerfs-plugin-ID.
const Prefix = "computerfs-plugin-"

// Options configure a Runtime.
type Options struct {
	// Dirs are searched for plugins in order; the first executable named
	// computerfs-plugin-ID wins for each ID.
	Dirs []string
	// WS is the workspace the backends work on.
	WS *workspace.WS
	// MountPath is the workspace's FUSE mount, "" if none.
	MountPath string
	// ViewMount, if set, gives the mountpoint of a policy view of the
	// workspace under rules (a FUSE mount in which denied paths do not
	// exist and read-only ones refuse changes: fusefs, rules.go), for a
	// backend that needs the mount and has path rules: it is given that
	// mount instead of MountPath. Without it such a backend fails to
	// start rather than see what its rules deny. The view calls onDeny
	// with each refusal its rules make (for the audit log).
	ViewMount func(id string, rules *workspace.Rules, onDeny func(workspace.Denial)) (string, error)
	// ForkMount, if set, gives the mountpoint of a FUSE mount of a fork
	// of the workspace (under rules, if not nil), for a backend that
	// needs the mount and runs an exec in that fork: it gets an instance
	// of its own, configured with that mount (CloseFork stops it).
	// Without it such execs are refused.
	ForkMount func(fork, backend string, rules *workspace.Rules) (string, error)
	// Owner marks plugin processes (the workspace's absolute path), for
	// the sweep of leftovers.
	Owner string
	// Policy says what each backend may reach, and how to choose one.
	Policy Policy
	// ExecLog, if set, receives one JSON record per exec.
	ExecLog io.Writer
	// OnExec, if set, is called with every exec's result once it has
	// ended and been recorded (metrics). It must not block.
	OnExec func(*Result)
	Logger *slog.Logger
}

// DefaultDirs are the plugin directories: beside the computerfs binary,
// then COMPUTERFS_PLUGIN_PATH (colon-separated), else
// ~/.local/share/computerfs/plugins.
func DefaultDirs(home string) []string {
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	if p := os.Getenv("COMPUTERFS_PLUGIN_PATH"); p != "" {
		dirs = append(dirs, filepath.SplitList(p)...)
	} else {
		dirs = append(dirs, filepath.Join(home, "plugins"))
	}
	return dirs
}

// Runtime runs execs on the backends it found.
type Runtime struct {
	opts Options
	log  *slog.Logger
	rpc  *wsrpc.Server

	mu       sync.Mutex
	backends map[string]*backend
	// forkBackends are the instances of backends that need the mount
	// serving a fork, by fork ‖ NUL ‖ backend ID.
	forkBackends map[string]*backend
	tokens       map[string]*workspace.WS
	closed       bool
	execSeq      uint64
	logMu        sync.Mutex
	audit        auditState // the audit log's side (audit.go)
	// pol is the policy in force: opts.Policy, then what SetPolicy
	// swapped in (reload.go). An exec reads it once, as it starts.
	pol atomic.Pointer[Policy]
	// compiled is what pol gives the proxies and the secrets.
	compiled atomic.Pointer[compiledPolicy]
	egress   proxies // the egress proxies (network.go)
}

// New finds the plugins in opts.Dirs and sweeps leftovers of a previous
// host; it starts nothing.
func New(opts Options) (*Runtime, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WS == nil {
		return nil, errors.New("backends: no workspace")
	}
	r := &Runtime{opts: opts, log: opts.Logger, backends: map[string]*backend{}, forkBackends: map[string]*backend{}, tokens: map[string]*workspace.WS{}}
	pol := opts.Policy
	r.pol.Store(&pol)
	c, err := compile(pol)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	r.compiled.Store(c)
	r.rpc = wsrpc.NewServer(r.resolveToken)
	if opts.Owner != "" {
		if n := sweep(opts.Owner); n > 0 {
			r.log.Warn("killed plugins left by a previous daemon", "count", n)
		}
	}
	if dir, err := wsrpc.RuntimeDir(); err == nil {
		if n := sweepSockets(dir); n > 0 {
			r.log.Debug("removed plugin socket directories of killed daemons", "count", n, "dir", dir)
		}
	}
	for _, dir := range opts.Dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			id, ok := ParseName(e.Name())
			if !ok {
				continue
			}
			if _, dup := r.backends[id]; dup {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
				continue
			}
			r.backends[id] = &backend{id: id, path: p, rt: r, state: StateNotStarted}
		}
	}
	r.log.Debug("backends found", "ids", r.ids())
	r.auditPolicy("loaded")
	return r, nil
}

// ParseName returns the ID a plugin executable's file name gives it:
// computerfs-plugin-ID, with ID of lower-case letters, digits, '-' and
// '_'. ok is false for any other name, which discovery ignores.
func ParseName(name string) (id string, ok bool) {
	id, ok = strings.CutPrefix(name, Prefix)
	if !ok || id == "" || !validID(id) {
		return "", false
	}
	return id, true
}

// validID accepts the IDs a file name can carry: lower-case letters,
// digits, '-' and '_'.
func validID(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (r *Runtime) ids() []string {
	out := make([]string, 0, len(r.backends))
	for id := range r.backends {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Backend states.
const (
	StateNotStarted = "not started"
	StateStarting   = "starting"
	StateReady      = "ready"
	StateCrashed    = "crashed"
	StateFailed     = "failed"
)

// backend is one plugin and, once started, its process.
type backend struct {
	id   string
	path string
	rt   *Runtime
	fork string // the fork whose mount this instance works on, "" for the workspace's

	mu       sync.Mutex
	state    string
	client   *plugin.Client
	proc     *procRunner // of client
	pc       *pluginapi.Client
	desc     *pb.Description
	lastErr  string
	execs    int64
	restarts int64
	started  bool // started at least once
	pid      int  // of the plugin process last started
	// stopped is the process Close stopped, for Stopped.
	stopped *procRunner
	// stale says the policy changed since the plugin started (SetPolicy):
	// the next exec restarts it under the new one.
	stale bool
}

// List describes every backend; with describe, backends not started yet
// are started to describe themselves.
func (r *Runtime) List(ctx context.Context, describe bool) []*pb.BackendInfo {
	r.mu.Lock()
	ids := r.ids()
	bs := make([]*backend, len(ids))
	for i, id := range ids {
		bs[i] = r.backends[id]
	}
	r.mu.Unlock()
	out := make([]*pb.BackendInfo, 0, len(bs))
	for _, b := range bs {
		if describe {
			b.ensure(ctx) // the error is in the info
		}
		out = append(out, b.info())
	}
	return out
}

func (b *backend) info() *pb.BackendInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.checkAliveLocked()
	info := &pb.BackendInfo{Id: b.id, Path: b.path, State: b.state, Description: b.desc, LastError: b.lastErr, Execs: b.execs, Restarts: b.restarts}
	if b.state == StateReady {
		info.Pid = int64(b.pid)
	}
	return info
}

// checkAliveLocked notices a plugin process that died since we last
// looked.
func (b *backend) checkAliveLocked() {
	if b.state == StateReady && b.client != nil && (b.client.Exited() || b.proc != nil && b.proc.hasExited()) {
		b.state = StateCrashed
		if b.lastErr == "" {
			b.lastErr = "the plugin process exited"
		}
	}
}

// Describe returns a backend's description, starting it if needed.
func (r *Runtime) Describe(ctx context.Context, id string) (*pb.Description, error) {
	b, err := r.get(id)
	if err != nil {
		return nil, err
	}
	_, desc, err := b.ensure(ctx)
	return desc, err
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// ErrNoBackend is the cause of an exec naming an unknown backend.
var ErrNoBackend = errors.New("no such backend")

func (r *Runtime) get(id string) (*backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("backends: runtime closed")
	}
	b := r.backends[id]
	if b == nil {
		return nil, fmt.Errorf("%w %q (have: %s)", ErrNoBackend, id, strings.Join(r.ids(), ", "))
	}
	return b, nil
}

// The steps of a plugin's start, in order, as StartError names them.
const (
	StageHandshake = "handshake" // run, go-plugin's handshake line, the TLS connection
	StageHealth    = "health"    // grpc.health.v1.Health/Check("plugin") says SERVING
	StageDescribe  = "describe"  // Describe, its ID, its accepts
	StageConfigure = "configure" // the policy's mount and root, then Configure
)

// StartError is why a plugin failed to start: the step (Stage*), the
// description if Describe answered, and the cause.
type StartError struct {
	Stage string
	Desc  *pb.Description
	Err   error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// startTimeout bounds a plugin's start, handshake, Describe and Configure.
const startTimeout = 20 * time.Second

// ensure starts the plugin if it is not running, and returns its client.
func (b *backend) ensure(ctx context.Context) (*pluginapi.Client, *pb.Description, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.checkAliveLocked()
	if b.state == StateReady && !b.stale {
		return b.pc, b.desc, nil
	}
	if b.stale && b.state == StateReady {
		b.rt.log.Info("backend restarted: its policy changed", "backend", b.id)
	}
	b.stale = false
	// Checked under b.mu: Close marks the runtime closed before it takes
	// each backend's mu, so a plugin is either started before Close kills
	// it, or not at all.
	if b.rt.isClosed() {
		return nil, nil, errors.New("backends: runtime closed")
	}
	if b.client != nil {
		b.client.Kill()
		b.client, b.proc = nil, nil
	}
	b.pc = nil
	if b.started {
		b.restarts++
	}
	b.started = true
	b.state = StateStarting
	pc, desc, client, proc, err := b.start(ctx)
	if err != nil {
		b.state, b.lastErr = StateFailed, err.Error()
		// A plugin that described itself under its ID and failed later
		// (a host without the mount it needs) is still described.
		var se *StartError
		if errors.As(err, &se) && se.Stage == StageConfigure && se.Desc != nil {
			b.desc = se.Desc
		}
		b.rt.log.Error("backend failed to start", "backend", b.id, "path", b.path, "err", err)
		return nil, nil, fmt.Errorf("backend %s: %w", b.id, err)
	}
	b.client, b.proc, b.pc, b.desc, b.state, b.lastErr = client, proc, pc, desc, StateReady, ""
	b.rt.log.Info("backend started", "backend", b.id, "version", desc.Version, "pid", b.pid)
	return pc, desc, nil
}

func (b *backend) start(ctx context.Context) (*pluginapi.Client, *pb.Description, *plugin.Client, *procRunner, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	baseEnv := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/", ownerEnv + "=" + b.rt.opts.Owner, hostPidEnv + "=" + strconv.Itoa(os.Getpid())}
	logw := &logWriter{log: b.rt.log, backend: b.id}
	// go-plugin makes a directory for the plugin's sockets in TempDir;
	// in our private runtime directory, not in whatever TMPDIR is, which
	// may be a directory that others can write.
	sockDir, err := wsrpc.RuntimeDir()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("plugin sockets: %w", err)
	}
	var proc *procRunner // set by RunnerFunc, called within client.Client()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: pluginapi.HostPlugins(),
		// go-plugin hands the runner func a command that carries only the
		// handshake's environment (SkipHostEnv): run the plugin with that
		// and a minimal base, never the host's environment.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd := exec.Command(b.path)
			cmd.Env = append(append([]string(nil), baseEnv...), spec.Env...)
			cmd.Dir = "/"
			pr, err := newProcRunner(cmd)
			proc = pr
			return pr, err
		},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: sockDir},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     startTimeout,
		Stderr:           logw,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin." + b.id, Output: logw, Level: hclog.Warn}),
		GRPCDialOptions: []grpc.DialOption{
			// Room for the largest result the host accepts.
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResultBytes + 64<<10)),
		},
	})
	var desc *pb.Description
	fail := func(stage string, err error) (*pluginapi.Client, *pb.Description, *plugin.Client, *procRunner, error) {
		client.Kill()
		return nil, nil, nil, nil, &StartError{Stage: stage, Desc: desc, Err: err}
	}
	rpc, err := client.Client()
	if err != nil {
		return fail(StageHandshake, fmt.Errorf("start %s: %w", b.path, err))
	}
	if proc != nil && proc.cmd.Process != nil {
		b.pid = proc.cmd.Process.Pid
	}
	// The health service, as go-plugin's Ping asks it, but bounded by
	// the start's deadline: a plugin that does not serve it, or does not
	// say SERVING, is not a go-plugin plugin we can rely on.
	if gc, ok := rpc.(*plugin.GRPCClient); ok {
		hr, err := healthpb.NewHealthClient(gc.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName})
		if err != nil {
			return fail(StageHealth, fmt.Errorf("grpc.health.v1.Health/Check(%q): %w", plugin.GRPCServiceName, err))
		}
		if hr.Status != healthpb.HealthCheckResponse_SERVING {
			return fail(StageHealth, fmt.Errorf("grpc.health.v1.Health/Check(%q) says %s, not SERVING", plugin.GRPCServiceName, hr.Status))
		}
	}
	raw, err := rpc.Dispense(pluginapi.PluginName)
	if err != nil {
		return fail(StageHandshake, fmt.Errorf("dispense: %w", err))
	}
	pc, ok := raw.(*pluginapi.Client)
	if !ok {
		return fail(StageHandshake, fmt.Errorf("dispense: unexpected %T", raw))
	}
	desc, err = pc.Backend.Describe(ctx, &pb.DescribeRequest{HostProtocol: uint32(client.NegotiatedVersion())})
	if err != nil {
		desc = nil
		return fail(StageDescribe, fmt.Errorf("describe: %w", err))
	}
	if desc.Id != b.id {
		return fail(StageDescribe, fmt.Errorf("the plugin says its ID is %q, but its file name says %q", desc.Id, b.id))
	}
	if len(desc.Accepts) == 0 {
		return fail(StageDescribe, errors.New("the plugin describes no kind of command it accepts (accepts is empty)"))
	}
	policy := b.rt.policy()
	pol := policy.For(b.id)
	// Path rules bind the mount too: a backend under them gets a view of
	// the workspace under them, never the plain mount; one that does not
	// need the mount gets none (HostFS, its door, checks them).
	// Only a backend that says needs_mount is given the mount: one that
	// works through HostFS must not reach around it (path rules, tokens).
	base := b.rt.opts.MountPath
	if !desc.NeedsMount {
		base = ""
	}
	rules, err := policy.PathRules(b.id)
	if err != nil {
		return fail(StageConfigure, err)
	}
	if b.fork != "" {
		// An instance for a fork: the fork's own mount, under the
		// backend's rules.
		if b.rt.opts.ForkMount == nil {
			return fail(StageConfigure, fmt.Errorf("this host cannot mount fork %s for %s", b.fork, b.id))
		}
		if base, err = b.rt.opts.ForkMount(b.fork, b.id, rules); err != nil {
			return fail(StageConfigure, fmt.Errorf("mount fork %s: %w", b.fork, err))
		}
	} else if rules != nil && base != "" {
		switch {
		case b.rt.opts.ViewMount == nil:
			return fail(StageConfigure, fmt.Errorf("the policy gives %s path rules, and this host cannot mount a policy view of the workspace for it", b.id))
		default:
			id := b.id
			if base, err = b.rt.opts.ViewMount(b.id, rules, func(d workspace.Denial) { b.rt.pathDenial("mount", id, "", d) }); err != nil {
				return fail(StageConfigure, fmt.Errorf("policy view of the workspace: %w", err))
			}
		}
	}
	mountPath, err := policyMountPath(base, pol.Root)
	if err != nil {
		if desc.NeedsMount {
			return fail(StageConfigure, fmt.Errorf("policy root %s: %w", pol.Root, err))
		}
		// A backend that works through HostFS gets no mount rather than
		// more of it than its root; its execs fail on the root there.
		b.rt.log.Warn("policy root not on the mount", "backend", b.id, "root", pol.Root, "err", err)
		mountPath = ""
	}
	brokerID := pc.ServeHostFS(b.rt.registerHostFS)
	settings := pol.Settings
	if pol.Network != nil && pol.Network.Mode == "proxy" {
		sock, err := b.rt.proxyFor(b.id)
		if err != nil {
			return fail(StageConfigure, fmt.Errorf("network: %w", err))
		}
		settings = maps.Clone(settings)
		settings["proxy_socket"] = sock
	}
	if !checksCommands(b.id, desc) && (settings["commands"] != "" || settings["deny_commands"] != "") {
		// The runtime checks them (commandVerdict); the backend need
		// not know them.
		settings = maps.Clone(settings)
		delete(settings, "commands")
		delete(settings, "deny_commands")
	}
	if _, err := pc.Backend.Configure(ctx, &pb.ConfigureRequest{Settings: settings, MountPath: mountPath, HostfsBrokerId: brokerID}); err != nil {
		return fail(StageConfigure, fmt.Errorf("configure: %w", err))
	}
	return pc, desc, client, proc, nil
}

// policyMountPath is the directory of the mount a backend with policy
// root root is given: the mount itself for "/" (or no root), else the
// root's directory in it, symlinks resolved, which must be a directory
// inside the mount.
func policyMountPath(mount, root string) (string, error) {
	clean := path.Clean("/" + root)
	if mount == "" || clean == "/" {
		return mount, nil
	}
	base, err := filepath.EvalSymlinks(mount)
	if err != nil {
		return "", fmt.Errorf("workspace mount: %w", err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(base, filepath.FromSlash(clean)))
	if err != nil {
		return "", fmt.Errorf("not on the workspace mount: %w", err)
	}
	if rel, err := filepath.Rel(base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("resolves to %s, outside the workspace mount %s", dir, base)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return dir, nil
}

// logWriter turns plugin stderr lines into log records.
type logWriter struct {
	log     *slog.Logger
	backend string
}

// Write logs a plugin's stderr: the JSON lines of go-plugin's logger
// (hclog) at their own level, with their message and fields; anything
// else (a panic, a library's print) as a warning, line by line.
func (w *logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec["@message"] != nil {
			level := slog.LevelInfo
			switch rec["@level"] {
			case "trace", "debug":
				level = slog.LevelDebug
			case "warn":
				level = slog.LevelWarn
			case "error":
				level = slog.LevelError
			}
			attrs := []any{"backend", w.backend}
			for k, v := range rec {
				if !strings.HasPrefix(k, "@") {
					attrs = append(attrs, k, v)
				}
			}
			w.log.Log(context.Background(), level, fmt.Sprint(rec["@message"]), attrs...)
			continue
		}
		w.log.Warn("plugin stderr", "backend", w.backend, "line", line)
	}
	return len(p), nil
}

// crashed marks the backend's process as gone, killing what is left. pc
// is the client of the process the exec ran on: if another process has
// replaced it meanwhile, that one is not this exec's to kill.
func (b *backend) crashed(pc *pluginapi.Client, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pc != pc {
		return
	}
	if b.client != nil {
		b.client.Kill()
		b.client, b.proc = nil, nil
	}
	b.state, b.lastErr = StateCrashed, reason
	b.rt.log.Error("backend crashed", "backend", b.id, "reason", reason)
}

// SetForkMount sets Options.ForkMount, before any exec runs (a daemon
// knows how to mount a fork only once the runtime exists).
func (r *Runtime) SetForkMount(fn func(fork, backend string, rules *workspace.Rules) (string, error)) {
	r.mu.Lock()
	r.opts.ForkMount = fn
	r.mu.Unlock()
}

// forkBackend is the instance of backend b that works on fork's mount,
// made the first time.
func (r *Runtime) forkBackend(b *backend, fork string) (*backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("backends: runtime closed")
	}
	k := fork + "\x00" + b.id
	fb := r.forkBackends[k]
	if fb == nil {
		fb = &backend{id: b.id, path: b.path, rt: r, fork: fork, state: StateNotStarted}
		r.forkBackends[k] = fb
	}
	return fb, nil
}

// CloseFork stops the backend instances working on fork's mount (before
// the fork is merged or discarded, and its mount goes).
func (r *Runtime) CloseFork(fork string) {
	r.mu.Lock()
	var bs []*backend
	for k, b := range r.forkBackends {
		if b.fork == fork {
			bs = append(bs, b)
			delete(r.forkBackends, k)
		}
	}
	r.mu.Unlock()
	killAll(bs)
}

// Close kills every plugin, with its process group.
func (r *Runtime) Close() {
	r.flushDenials()
	r.mu.Lock()
	r.closed = true
	bs := make([]*backend, 0, len(r.backends)+len(r.forkBackends))
	for _, b := range r.backends {
		bs = append(bs, b)
	}
	for _, b := range r.forkBackends {
		bs = append(bs, b)
	}
	r.mu.Unlock()
	killAll(bs)
	r.closeProxies()
}

// killAll kills the plugins of bs, with their process groups.
func killAll(bs []*backend) {
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.client != nil {
				b.client.Kill()
				b.stopped = b.proc
				b.client, b.proc = nil, nil
			}
			if b.state == StateReady {
				b.state = StateNotStarted
			}
		}()
	}
	wg.Wait()
}

// Plugin starts backend id if it is not running and returns its client
// and description: the plugin itself, without the host's checks of
// each exec. It is for tools that test a plugin against the protocol
// (computerfs plugin check), not for running commands: use Exec.
func (r *Runtime) Plugin(ctx context.Context, id string) (*pluginapi.Client, *pb.Description, error) {
	b, err := r.get(id)
	if err != nil {
		return nil, nil, err
	}
	return b.ensure(ctx)
}

// Stopped says, after Close, how backend id's plugin process ended:
// graceful when it exited by itself on go-plugin's Shutdown, before the
// host had to kill its process group; ok is false when Close found no
// process to stop.
func (r *Runtime) Stopped(id string) (pid int, graceful, ok bool) {
	r.mu.Lock()
	b := r.backends[id]
	r.mu.Unlock()
	if b == nil {
		return 0, false, false
	}
	b.mu.Lock()
	p := b.stopped
	b.mu.Unlock()
	if p == nil || p.cmd.Process == nil {
		return 0, false, false
	}
	return p.cmd.Process.Pid, !p.forced.Load(), true
}

// newToken registers an exec's view of the workspace for HostFS.
func (r *Runtime) newToken(view *workspace.WS) string {
	var b [16]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	r.mu.Lock()
	r.tokens[tok] = view
	r.mu.Unlock()
	return tok
}

func (r *Runtime) dropToken(tok string) {
	r.mu.Lock()
	delete(r.tokens, tok)
	r.mu.Unlock()
}

// resolveToken maps a HostFS call to its exec's view of the workspace.
func (r *Runtime) resolveToken(ctx context.Context) (*workspace.WS, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	toks := md.Get(pluginapi.TokenMetadata)
	if len(toks) != 1 {
		return nil, errPermission("HostFS call without an exec token")
	}
	r.mu.Lock()
	view := r.tokens[toks[0]]
	r.mu.Unlock()
	if view == nil {
		return nil, errPermission("HostFS call with an unknown or expired exec token")
	}
	return view, nil
}
