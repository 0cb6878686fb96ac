package backends

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Request is one exec.
type Request struct {
	// Backend names the backend; empty lets the policy choose.
	Backend string
	// Argv is the command: for a script backend, Argv[0] (or all of Argv
	// joined by spaces) is the script.
	Argv []string
	Kind string // "script", "argv", "js-module"; empty: the backend's first
	File string // a workspace path to the source, instead of Argv
	Cwd  string // a workspace path ("/" if empty)
	Env  map[string]string
	// Timeout and OutputLimit override the backend's defaults, within its
	// maximums.
	Timeout     time.Duration
	OutputLimit int64
	Input       []byte // structured input (JSON)
	// Stdin is read until EOF or the end of the exec. A read still
	// blocked when the exec ends is interrupted if Stdin allows it (an
	// *io.PipeReader is closed, a reader with SetReadDeadline gets a past
	// deadline), and Exec returns only once it has ended; any other
	// reader must not block past the exec, or its reader goroutine waits
	// for it.
	Stdin io.Reader
	// Signals forwards signals (SIGINT, SIGTERM, SIGKILL) to the command.
	Signals <-chan syscall.Signal
	// Reason says why Backend was chosen, when the caller chose it with
	// Choose before Exec (the daemon's exec service does, to announce
	// the backend first); empty: Exec chooses, and says.
	Reason string
	// ID is the exec's ID in its record, from NewExecID; empty: Exec
	// makes one. Callers that announce the exec before it runs set it.
	ID string
	// Fork runs the exec in that fork of the workspace (fs/fork.go):
	// its files are the fork's, its changes the fork's, to merge or
	// discard; empty: the workspace.
	Fork string
}

// Result is how an exec ended, and its record.
type Result struct {
	ID      string
	Backend string
	Reason  string // why this backend
	Exit    *pb.Exit
	Result  []byte // structured result (JSON), if any
	// Changes are the workspace changes made while the exec ran (through
	// any door: a concurrent writer's show up too).
	Changes          []workspace.Change
	ChangesTruncated bool
	Start            time.Time
	// Before and After are the workspace's states (commit epochs) the
	// exec started from and left: After == Before when it changed
	// nothing, 0 when no checkpoint could be taken. `computerfs undo ID`
	// reverts what changed between them.
	Before, After uint64
	// Fork is the fork the exec ran in, "" for the workspace.
	Fork string
	// Sync, when the daemon syncs to a remote (--push-every), says
	// whether the workspace as the exec left it is pushed yet or
	// pending; set by the daemon's Options.OnExec.
	Sync *pb.SyncStatus
}

// Host-side bounds, whatever a backend describes.
const (
	defaultTimeout     = 60 * time.Second
	hardMaxTimeout     = 24 * time.Hour
	defaultOutputLimit = 16 << 20
	hardMaxOutput      = 1 << 30
	maxResultBytes     = 16 << 20
	killGrace          = 2 * time.Second
	timeoutGrace       = 500 * time.Millisecond
	// termGrace is how long a command that timed out has between the
	// host's SIGTERM and its SIGKILL.
	termGrace  = 2 * time.Second
	maxChanges = 10000
)

// Exit statuses that mean the same on every backend, whatever the
// plugin reported: a limit ended the exec.
const (
	StatusTimedOut  = 124 // the time limit, as GNU timeout's
	StatusMemory    = 137 // a memory limit: killed, as by the OOM killer
	StatusOutputCut = 141 // the output limit: as a writer whose pipe closed (SIGPIPE)
)

// ExitStatus is the status a command line gives for an exit, one table
// for every backend: StatusTimedOut, StatusOutputCut or StatusMemory when
// a limit ended it (the first that applies, in that order), else the
// code, or 128+signal when a signal ended it. An exec whose output was
// cut never exits 0.
func ExitStatus(e *pb.Exit) int {
	switch {
	case e == nil:
		return 1
	case e.TimedOut:
		return StatusTimedOut
	case e.Truncated:
		return StatusOutputCut
	case e.OomKilled:
		return StatusMemory
	case e.Signal != 0:
		return 128 + int(e.Signal)
	}
	return int(e.ExitCode)
}

// ExitClass names how an exec ended, in ExitStatus's order: "timeout"
// (124), "output_cut" (141), "memory" (137), "ok" (0), else "error" (any
// other status, a signal's included). It tells a limit from a command
// that exits 124 by itself, which the status alone cannot.
func ExitClass(e *pb.Exit) string {
	switch {
	case e == nil:
		return "error"
	case e.TimedOut:
		return "timeout"
	case e.Truncated:
		return "output_cut"
	case e.OomKilled:
		return "memory"
	case ExitStatus(e) == 0:
		return "ok"
	}
	return "error"
}

// Choose picks the backend for req, and says why. A refusal is a
// verdict in the audit log.
func (r *Runtime) Choose(ctx context.Context, req *Request) (string, string, error) {
	id, reason, err := r.choose(ctx, req)
	if err != nil {
		r.deny(req, req.ID, req.Backend, "", "backend", err)
	}
	return id, reason, err
}

func (r *Runtime) choose(ctx context.Context, req *Request) (string, string, error) {
	if req.Backend != "" {
		if _, err := r.get(req.Backend); err != nil {
			return "", "", err
		}
		return req.Backend, "named by the caller", nil
	}
	has := func(id string) bool { _, err := r.get(id); return err == nil }
	isJS := req.Kind == "js-module" || strings.HasSuffix(req.File, ".js") || strings.HasSuffix(req.File, ".mjs") ||
		(req.Kind == "" && req.File == "" && isESModule(scriptOf(req.Argv)))
	if isJS {
		if has("js") {
			return "js", "policy: a JavaScript module runs on js", nil
		}
		return "", "", fmt.Errorf("%w: no js backend for a JavaScript module", ErrNoBackend)
	}
	if req.Kind == "" || req.Kind == "script" {
		if has("shell") {
			script := scriptOf(req.Argv)
			if req.File != "" {
				script = ""
			}
			cmds, certain, err := commandsOf(script)
			if err == nil {
				supported, serr := r.shellCommands(ctx)
				if serr == nil {
					var missing []string
					for _, c := range cmds {
						if !supported[c] {
							missing = append(missing, c)
						}
					}
					switch {
					case len(missing) == 0 && certain:
						return "shell", fmt.Sprintf("policy: every command (%s) runs in process on the shell", strings.Join(cmds, ", ")), nil
					case len(missing) > 0 && has("container"):
						return "container", fmt.Sprintf("policy: %s not a shell command; container runs real binaries", strings.Join(missing, ", ")+pluralIs(len(missing))), nil
					}
				}
			}
		}
	}
	def := r.policy().Default
	if def == "" {
		def = "shell"
	}
	if !has(def) {
		return "", "", fmt.Errorf("%w: the default backend %q is not installed", ErrNoBackend, def)
	}
	return def, "policy: the default backend", nil
}

func pluralIs(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// shellCommands returns the commands the shell backend describes.
func (r *Runtime) shellCommands(ctx context.Context) (map[string]bool, error) {
	desc, err := r.Describe(ctx, "shell")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range desc.Features {
		if list, ok := strings.CutPrefix(f, "commands:"); ok {
			for _, c := range strings.Split(list, ",") {
				out[c] = true
			}
		}
	}
	shellPol := r.policy().For("shell")
	if allowed := shellPol.Commands; len(allowed) > 0 {
		only := map[string]bool{}
		for _, c := range allowed {
			if out[c] {
				only[c] = true
			}
		}
		out = only
	}
	for _, c := range shellPol.DenyCommands {
		delete(out, c)
	}
	return out, nil
}

// maxCheckedScript bounds the script file the runtime reads to check
// its commands.
const maxCheckedScript = 4 << 20

// Exec runs req, streaming its output to stdout and stderr as it comes.
// The error is for a failure to run at all (no such backend, a plugin
// that cannot start); how the command ended, crashes and limits included,
// is in Result.Exit.
func (r *Runtime) Exec(ctx context.Context, req *Request, stdout, stderr io.Writer) (*Result, error) {
	id, reason := req.Backend, req.Reason
	if id == "" || reason == "" {
		var err error
		if id, reason, err = r.Choose(ctx, req); err != nil {
			return nil, err
		}
	}
	b, err := r.get(id)
	if err != nil {
		r.deny(req, req.ID, id, reason, "backend", err)
		return nil, err
	}
	policy := r.policy() // read once: a reload does not change an exec under way
	compiled := r.compiled.Load()
	pol := policy.For(id)
	if pol.Disabled {
		err := fmt.Errorf("backend %s is disabled by policy", id)
		r.deny(req, req.ID, id, reason, "disabled", err)
		return nil, err
	}
	pc, desc, err := b.ensure(ctx)
	if err != nil {
		return nil, err
	}
	execID := req.ID
	if execID == "" {
		execID = r.NewExecID()
	}
	res := &Result{ID: execID, Backend: id, Reason: reason, Start: time.Now(), Fork: req.Fork}

	// The workspace the exec works on: the workspace, or one of its
	// forks (whose checkpoints are the fork itself: merge or discard).
	ws := r.opts.WS
	if req.Fork != "" {
		if ws, err = ws.Fork(req.Fork); err != nil {
			return nil, fmt.Errorf("exec in fork %s: %w", req.Fork, err)
		}
		if desc.GetNeedsMount() {
			// It works on a mount: an instance of its own on the
			// fork's.
			if b, err = r.forkBackend(b, req.Fork); err != nil {
				return nil, err
			}
			if pc, desc, err = b.ensure(ctx); err != nil {
				return nil, fmt.Errorf("backend %s in fork %s: %w", id, req.Fork, err)
			}
		}
	}
	// The exec's view of the workspace, and its token.
	view := ws
	if pol.Root != "" && pol.Root != "/" || pol.ReadOnly {
		root := pol.Root
		if root == "" {
			root = "/"
		}
		if view, err = view.Sub(ctx, root, pol.ReadOnly); err != nil {
			err = fmt.Errorf("backend %s: policy root %s: %w", id, pol.Root, err)
			r.deny(req, execID, id, reason, "root", err)
			return nil, err
		}
	}
	// Its path rules: the top level's, then the backend's (HostFS checks
	// them on every path, after symlinks).
	rules, err := policy.PathRules(id)
	if err != nil {
		return nil, err
	}
	var tok string
	if rules != nil {
		view = view.WithRules(rules).WithDenialHook(func(d workspace.Denial) { r.pathDenial("hostfs", id, tok, d) })
	}
	tok = r.newToken(view)
	defer r.dropToken(tok)

	env, err := buildEnv(pol, req.Env)
	if err == nil {
		compiled.secretEnv(id, env)
	}
	if err != nil {
		rule := "env"
		if strings.Contains(err.Error(), "not allowed") {
			rule = "allow_env"
		}
		r.deny(req, execID, id, reason, rule, err)
		return nil, err
	}
	kind, err := resolveKind(id, desc, req.Kind)
	if err != nil {
		r.deny(req, execID, id, reason, "kind", err)
		return nil, err
	}
	if !checksCommands(id, desc) && (len(pol.Commands) > 0 || len(pol.DenyCommands) > 0) {
		// The runtime checks what the exec starts (commandVerdict).
		script := kind == "script"
		started := req.Argv
		if script && req.File != "" {
			// The script is the file's: read through the exec's view.
			src, _, err := view.ReadFile(ctx, req.File, maxCheckedScript)
			if err != nil {
				err = fmt.Errorf("backend %s: the policy lists its commands, and its script %s cannot be read to check them: %w", id, req.File, err)
				r.deny(req, execID, id, reason, "commands", err)
				return nil, err
			}
			started = []string{string(src)}
		}
		if rule, err := commandVerdict(pol, started, script); err != nil {
			err = fmt.Errorf("backend %s: %w", id, err)
			r.deny(req, execID, id, reason, rule, err)
			return nil, err
		}
	}
	limits := resolveLimits(desc, req)
	cwd := req.Cwd
	if cwd == "" {
		cwd = "/"
	}
	argv := req.Argv
	if kind == "script" && req.File == "" {
		argv = []string{scriptOf(argv)}
	}
	start := &pb.ExecStart{
		ExecId: res.ID, Argv: argv, Kind: kind, Cwd: path.Clean("/" + cwd), Env: env,
		Limits: limits, InputJson: req.Input, HostfsToken: tok, File: req.File,
	}
	if id == "shell" && req.File == "" {
		notAllowed, denied := shellRefusals(pol, scriptOf(req.Argv))
		for _, x := range []struct {
			rule, why string
			names     []string
		}{{"commands", "not in the shell's allowed commands: ", notAllowed}, {"deny_commands", "denied to the shell: ", denied}} {
			if len(x.names) == 0 {
				continue
			}
			// The shell refuses them as it meets them (exit 126); the
			// verdict is the policy's, recorded as the exec starts.
			r.auditRec(audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "shell", Backend: id, Reason: reason,
				Rule: x.rule, Detail: x.why + strings.Join(x.names, ", "), ExecID: execID,
				Argv: req.Argv, Cwd: req.Cwd, EnvNames: envNames(env), PolicyVersion: r.policyVersion()})
		}
	}
	// The checkpoint before: what is pending is committed, and the state
	// the exec starts from is pinned, so that undo can put it back.
	cp, err := ws.BeginExec(ctx, execID)
	if err != nil {
		return nil, fmt.Errorf("exec %s: %w", execID, err)
	}
	r.auditBegin(tok, execID, id)
	before := ws.LastChange()
	b.mu.Lock()
	b.execs++
	b.mu.Unlock()

	// Secrets' values never leave in the output.
	stdout, stderr = newRedactor(stdout, compiled), newRedactor(stderr, compiled)
	res.Exit, res.Result = r.run(ctx, b, pc, start, limits, req, stdout, stderr)
	flushOutput(stdout)
	flushOutput(stderr)
	if res.Exit != nil && len(compiled.secrets) > 0 {
		res.Exit.Reason = compiled.redact(res.Exit.Reason)
	}

	// The exec has ended even if its caller has gone: record it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if ch, err := ws.Changes(rctx, before, maxChanges); err == nil {
		res.Changes = coalesceChanges(ch.Changes)
		res.ChangesTruncated = ch.Next < ch.Last && len(ch.Changes) == maxChanges
	}
	cmd := req.File
	if cmd == "" {
		cmd = scriptOf(req.Argv)
	}
	cmd = compiled.redact(cmd)
	arec := r.execAudit(req, res, env, r.auditEnd(tok))
	if len(compiled.secrets) > 0 {
		argv := make([]string, len(arec.Argv))
		for i, a := range arec.Argv {
			argv[i] = compiled.redact(a)
		}
		arec.Argv = argv
		arec.Detail = compiled.redact(arec.Detail)
	}
	rec, err := ws.EndExec(rctx, cp, fs.ExecRecord{
		Backend: id, Command: cmd, Exit: ExitStatus(res.Exit), Paths: changedPaths(res.Changes), PathsTruncated: res.ChangesTruncated,
		Audit: arec,
	})
	if err != nil {
		r.log.Error("exec checkpoint after", "id", execID, "err", err)
		// Recorded without its states.
		arec.Before = cp.Before()
		r.auditRec(*arec)
	} else {
		res.Before, res.After = rec.Before, rec.After
	}
	r.record(res)
	return res, nil
}

// ErrKind is the cause of an exec whose kind its backend does not accept.
var ErrKind = errors.New("kind not accepted")

// resolveKind is the kind an exec is sent with: the one asked for, which
// the backend must list in accepts, or the first it lists. A plugin is
// never sent a kind it did not list, nor an empty one.
func resolveKind(id string, desc *pb.Description, kind string) (string, error) {
	accepts := desc.GetAccepts()
	if kind == "" {
		if len(accepts) == 0 {
			return "", fmt.Errorf("%w: backend %s accepts no kind of command", ErrKind, id)
		}
		return accepts[0], nil
	}
	for _, k := range accepts {
		if k == kind {
			return kind, nil
		}
	}
	return "", fmt.Errorf("%w: backend %s runs %s, not %q", ErrKind, id, strings.Join(accepts, " or "), kind)
}

// recordTimeout bounds the commit that records an exec's end.
const recordTimeout = time.Minute

// changedPaths are the paths changes name, each once, in order.
func changedPaths(changes []workspace.Change) []string {
	paths := make([]string, 0, len(changes))
	seen := map[string]bool{}
	for _, c := range changes {
		for _, p := range []string{c.Path, c.NewPath} {
			if p != "" && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	return paths
}

func buildEnv(pol BackendPolicy, reqEnv map[string]string) (map[string]string, error) {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"}
	for k, v := range pol.Env {
		env[k] = v
	}
	allowed := map[string]bool{}
	for _, k := range pol.AllowEnv {
		allowed[k] = true
	}
	for k, v := range reqEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("bad environment variable %q", k)
		}
		if len(allowed) > 0 && !allowed[k] {
			return nil, fmt.Errorf("environment variable %s is not allowed by the backend's policy", k)
		}
		env[k] = v
	}
	return env, nil
}

// resolveLimits applies the request within the backend's maximums, and
// the host's own bounds within those.
// EffectiveLimits are the limits an exec on a backend described by desc
// gets when it asks for none: its defaults, the host's where it has
// none, within its maximums and the host's.
func EffectiveLimits(desc *pb.Description) *pb.Limits {
	return resolveLimits(desc, &Request{})
}

// EffectiveMaxLimits are the most an exec on a backend described by desc
// may ask for: its maximums, within the host's own caps (which apply
// where it states none: the output limit, the timeout).
func EffectiveMaxLimits(desc *pb.Description) *pb.Limits {
	l := &pb.Limits{}
	if desc.MaxLimits != nil {
		l = proto.Clone(desc.MaxLimits).(*pb.Limits)
	}
	if l.TimeoutMs <= 0 || l.TimeoutMs > hardMaxTimeout.Milliseconds() {
		l.TimeoutMs = hardMaxTimeout.Milliseconds()
	}
	if l.OutputBytes <= 0 || l.OutputBytes > hardMaxOutput {
		l.OutputBytes = hardMaxOutput
	}
	if l.ResultBytes <= 0 || l.ResultBytes > maxResultBytes {
		l.ResultBytes = maxResultBytes
	}
	return l
}

func resolveLimits(desc *pb.Description, req *Request) *pb.Limits {
	l := &pb.Limits{}
	if desc.DefaultLimits != nil {
		l = proto.Clone(desc.DefaultLimits).(*pb.Limits)
	}
	if req.Timeout > 0 {
		l.TimeoutMs = req.Timeout.Milliseconds()
	}
	if req.OutputLimit > 0 {
		l.OutputBytes = req.OutputLimit
	}
	if l.TimeoutMs <= 0 {
		l.TimeoutMs = defaultTimeout.Milliseconds()
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = defaultOutputLimit
	}
	if m := desc.MaxLimits; m != nil {
		if m.TimeoutMs > 0 && l.TimeoutMs > m.TimeoutMs {
			l.TimeoutMs = m.TimeoutMs
		}
		if m.OutputBytes > 0 && l.OutputBytes > m.OutputBytes {
			l.OutputBytes = m.OutputBytes
		}
		if m.MemoryBytes > 0 && (l.MemoryBytes == 0 || l.MemoryBytes > m.MemoryBytes) {
			l.MemoryBytes = m.MemoryBytes
		}
	}
	l.TimeoutMs = min(l.TimeoutMs, hardMaxTimeout.Milliseconds())
	l.OutputBytes = min(l.OutputBytes, hardMaxOutput)
	return l
}

// run drives one exec's stream. Every way it can end becomes an Exit.
func (r *Runtime) run(ctx context.Context, b *backend, pc *pluginapi.Client, start *pb.ExecStart, limits *pb.Limits, req *Request, stdout, stderr io.Writer) (*pb.Exit, []byte) {
	t0 := time.Now()
	exitWith := func(code int32, reason string) *pb.Exit {
		return &pb.Exit{ExitCode: code, Reason: reason, DurationNs: int64(time.Since(t0))}
	}
	if limits.InputBytes > 0 && int64(len(req.Input)) > limits.InputBytes {
		return exitWith(2, fmt.Sprintf("structured input is %d bytes, over the limit of %d", len(req.Input), limits.InputBytes)), nil
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return exitWith(2, "structured input is not valid JSON"), nil
	}
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStream()
	stream, err := pc.Backend.Exec(streamCtx)
	if err != nil {
		b.crashed(pc, fmt.Sprintf("open exec stream: %v", err))
		return exitWith(126, fmt.Sprintf("backend %s: %v", b.id, err)), nil
	}
	var sendMu sync.Mutex
	send := func(m *pb.ExecInput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: start}}); err != nil {
		b.crashed(pc, fmt.Sprintf("send start: %v", err))
		return exitWith(126, fmt.Sprintf("backend %s: %v", b.id, err)), nil
	}

	// Outcome of the receive loop.
	type outcome struct {
		exit     *pb.Exit
		result   []byte
		err      error // protocol violation or stream failure
		overflow bool
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		var written int64
		started := false
		for {
			m, err := stream.Recv()
			if err != nil {
				if o.exit == nil {
					if o.overflow && status.Code(err) == codes.Canceled {
						// The host's own cancel, killGrace after the cut.
						o.err = fmt.Errorf("the backend did not end an exec it was told to kill (its output went past the limit; SIGKILL was sent %s before)", killGrace)
					} else if err == io.EOF {
						o.err = errors.New("the backend ended the exec without an exit message")
					} else {
						o.err = fmt.Errorf("exec stream broke: %w", err)
					}
				}
				done <- o
				return
			}
			if o.exit != nil {
				o.exit, o.err = nil, errors.New("the backend sent a message after exit")
				done <- o
				return
			}
			switch msg := m.Msg.(type) {
			case *pb.ExecOutput_Started:
				started = true
			case *pb.ExecOutput_Stdout, *pb.ExecOutput_Stderr:
				var data []byte
				w := stdout
				if so, ok := msg.(*pb.ExecOutput_Stdout); ok {
					data = so.Stdout
				} else {
					data, w = msg.(*pb.ExecOutput_Stderr).Stderr, stderr
				}
				if !started {
					o.err = errors.New("the backend sent output before started")
					done <- o
					return
				}
				if len(data) > pluginapi.MaxChunk {
					o.err = fmt.Errorf("the backend sent an output chunk of %d bytes (at most %d)", len(data), pluginapi.MaxChunk)
					done <- o
					return
				}
				if o.overflow {
					continue // drain until the kill lands
				}
				if rest := limits.OutputBytes - written; int64(len(data)) > rest {
					data = data[:max(rest, 0)]
					o.overflow = true
				}
				written += int64(len(data))
				if len(data) > 0 && w != nil {
					w.Write(data)
				}
				if o.overflow {
					// Past the cap: stop the command, keep what fit.
					send(&pb.ExecInput{Msg: &pb.ExecInput_Signal{Signal: int32(syscall.SIGKILL)}})
					go func() {
						time.Sleep(killGrace)
						cancelStream()
					}()
				}
			case *pb.ExecOutput_ResultJson:
				if o.result != nil {
					o.err = errors.New("the backend sent two results")
					done <- o
					return
				}
				lim := int64(maxResultBytes)
				if limits.ResultBytes > 0 {
					lim = min(lim, limits.ResultBytes)
				}
				if int64(len(msg.ResultJson)) > lim {
					o.err = fmt.Errorf("the backend sent a result of %d bytes (at most %d)", len(msg.ResultJson), lim)
					done <- o
					return
				}
				if !json.Valid(msg.ResultJson) {
					o.err = errors.New("the backend sent a result that is not valid JSON")
					done <- o
					return
				}
				o.result = msg.ResultJson
			case *pb.ExecOutput_Exit:
				if msg.Exit == nil {
					o.err = errors.New("the backend sent an empty exit")
					done <- o
					return
				}
				o.exit = msg.Exit
			default:
				o.err = fmt.Errorf("the backend sent an unexpected message %T", m.Msg)
				done <- o
				return
			}
		}
	}()

	// Stdin, then signals, until the exec ends.
	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		if req.Stdin != nil {
			buf := make([]byte, pluginapi.MaxChunk)
			for {
				n, err := req.Stdin.Read(buf)
				if n > 0 {
					if send(&pb.ExecInput{Msg: &pb.ExecInput_Stdin{Stdin: append([]byte(nil), buf[:n]...)}}) != nil {
						return
					}
				}
				if err != nil {
					break
				}
			}
		}
		send(&pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
	}()

	// The backend is told the limit and may end the command itself (then
	// it says so, with its own status); the host's timer, a grace later,
	// is the backstop that does not depend on the backend.
	timeout := time.Duration(limits.TimeoutMs) * time.Millisecond
	timer := time.NewTimer(timeout + timeoutGrace)
	defer timer.Stop()
	var killTimer, termTimer <-chan time.Time
	timedOut, cancelled := false, false
	lastSignal := syscall.Signal(0) // the last the host sent for the timeout
	signal := func(s syscall.Signal) {
		send(&pb.ExecInput{Msg: &pb.ExecInput_Signal{Signal: int32(s)}})
	}
	ctxDone := ctx.Done()
	sigs := req.Signals
	for {
		select {
		case o := <-done:
			cancelStream()
			if interruptRead(req.Stdin) {
				<-stdinDone
			}
			exit := o.exit
			if o.err != nil {
				// A lying or broken plugin: its process is suspect.
				b.crashed(pc, o.err.Error())
				exit = &pb.Exit{ExitCode: 126, Reason: fmt.Sprintf("backend %s: %v", b.id, o.err)}
			}
			if timedOut {
				// Stopped by the host's signals: the command did not end by
				// itself. Keep the signal the backend reports (15 when it
				// honoured SIGTERM), else it took SIGKILL.
				exit.TimedOut = true
				if exit.Signal == 0 {
					exit.Signal = int32(lastSignal)
				}
				exit.Reason = fmt.Sprintf("timed out after %s", timeout)
			} else if exit.TimedOut && exit.Reason == "" {
				exit.Reason = fmt.Sprintf("timed out after %s", timeout)
			}
			if cancelled && exit.Reason == "" {
				exit.Reason = "cancelled"
			}
			if o.overflow {
				// The host's cut is why the command ended, whatever the
				// backend says of the kill it was sent ("cancelled").
				exit.Truncated = true
				exit.Reason = fmt.Sprintf("output went past the limit of %d bytes", limits.OutputBytes)
			}
			if exit.Signal > 0 && exit.Signal < 128 {
				// One convention whatever the plugin says: a command a
				// signal ended has the status a shell gives it.
				exit.ExitCode = 128 + exit.Signal
			}
			exit.DurationNs = int64(time.Since(t0))
			return exit, o.result
		case s, ok := <-sigs:
			if !ok {
				sigs = nil // closed: no more signals (a closed channel must not spin)
				continue
			}
			signal(s)
			if s == syscall.SIGKILL && killTimer == nil {
				killTimer = time.After(killGrace)
			}
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			signal(syscall.SIGKILL)
			if killTimer == nil {
				killTimer = time.After(killGrace)
			}
		case <-timer.C:
			// SIGTERM first, SIGKILL termGrace later if the command is
			// still running, and the plugin's process group killGrace
			// after that if the plugin has not ended the exec.
			timedOut = true
			lastSignal = syscall.SIGTERM
			signal(syscall.SIGTERM)
			termTimer = time.After(termGrace)
		case <-termTimer:
			termTimer = nil
			lastSignal = syscall.SIGKILL
			signal(syscall.SIGKILL)
			if killTimer == nil {
				killTimer = time.After(killGrace)
			}
		case <-killTimer:
			// The backend ignored the kill: it hangs. Kill its process
			// group; the next exec starts a fresh one.
			b.crashed(pc, "the backend did not end an exec it was told to kill")
			cancelStream()
			killTimer = nil
		}
	}
}

// errExecEnded ends a read of an exec's stdin that outlived the exec.
var errExecEnded = errors.New("exec ended")

// interruptRead ends a Read blocked on r, or about to be, if r allows it,
// and reports whether it could.
func interruptRead(r io.Reader) bool {
	switch r := r.(type) {
	case *io.PipeReader:
		r.CloseWithError(errExecEnded)
		return true
	case interface{ SetReadDeadline(time.Time) error }:
		return r.SetReadDeadline(time.Now()) == nil
	}
	return false
}

// NewExecID makes a new exec ID, unique in this runtime.
func (r *Runtime) NewExecID() string {
	r.mu.Lock()
	r.execSeq++
	n := r.execSeq
	r.mu.Unlock()
	return fmt.Sprintf("x%d-%d", time.Now().Unix(), n)
}

// record logs the exec and appends it to the exec log.
func (r *Runtime) record(res *Result) {
	paths := changedPaths(res.Changes)
	r.log.Info("exec", "id", res.ID, "backend", res.Backend, "reason", res.Reason,
		"exit", ExitStatus(res.Exit), "duration", time.Duration(res.Exit.DurationNs), "changed", len(paths), "why_ended", res.Exit.Reason)
	if r.opts.OnExec != nil {
		defer r.opts.OnExec(res)
	}
	if r.opts.ExecLog == nil {
		return
	}
	rec := map[string]any{
		"id": res.ID, "time": res.Start.UTC().Format(time.RFC3339Nano), "backend": res.Backend, "reason": res.Reason,
		"exit": ExitStatus(res.Exit), "exit_code": res.Exit.ExitCode, "signal": res.Exit.Signal, "timed_out": res.Exit.TimedOut,
		"truncated": res.Exit.Truncated, "oom_killed": res.Exit.OomKilled, "duration_ms": float64(res.Exit.DurationNs) / 1e6, "ended": res.Exit.Reason,
		"changed": paths, "changes_truncated": res.ChangesTruncated,
		"before_epoch": res.Before, "after_epoch": res.After, "undoable": res.After > res.Before,
	}
	if res.Fork != "" {
		rec["fork"] = res.Fork
	}
	line, _ := json.Marshal(rec)
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.opts.ExecLog.Write(append(line, '\n'))
}

// scriptOf is a script exec's source: its one word, or several words
// quoted so that each keeps its boundaries (`exec -- sh -c 'exit 7'`
// exits 7).
func scriptOf(argv []string) string {
	if len(argv) == 1 {
		return argv[0]
	}
	return pluginapi.ScriptOf(argv)
}
