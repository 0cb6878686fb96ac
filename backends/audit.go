package backends

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/zeebo/blake3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"mvdan.cc/sh/v3/interp"
)

// The runtime's side of the audit log (package audit, issue 17): every
// exec, every refusal the runtime's policy makes (a disabled backend, an
// environment variable not allowed, a root that cannot be confined to,
// commands the shell's policy will refuse) and every refusal of a
// backend's HostFS calls (EROFS, EACCES or EPERM from its view of the
// workspace, a call without a valid token) goes to the workspace's log,
// riding with its commits. Environment values are never recorded: only
// names.

// auditState is what the runtime knows of the execs under way, for the
// verdicts of their HostFS calls.
type auditState struct {
	mu      sync.Mutex
	execs   map[string]*auditExec // by HostFS token
	version string                // the policy's version
	// The window of unattributed refusals (hostfsVerdict).
	windowStart             time.Time
	windowCount, suppressed int
	// coalesce bounds the records of path-rule refusals (pathDenial).
	coalesce audit.Coalescer
}

type auditExec struct {
	id, backend string
	denials     int
}

// PolicyVersion is the version the audit log gives pol: the first 16
// bytes of the BLAKE3 of its canonical JSON (keys sorted), in hex. Two
// files that parse to the same policy have the same version.
func PolicyVersion(pol Policy) string {
	b, _ := json.Marshal(pol)
	sum := blake3.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// auditPolicy records the policy as loaded (detail says how: "loaded"
// by New). A reload of the policy must call it too, after the swap, with
// what it read ("reloaded from PATH"): the log then shows the change (its
// record's PreviousPolicy is the version before).
func (r *Runtime) auditPolicy(detail string) {
	v := PolicyVersion(*r.policy())
	r.audit.mu.Lock()
	r.audit.version = v
	r.audit.mu.Unlock()
	r.auditRec(audit.Record{Kind: audit.KindPolicy, PolicyVersion: v, Detail: detail})
}

func (r *Runtime) policyVersion() string {
	r.audit.mu.Lock()
	defer r.audit.mu.Unlock()
	return r.audit.version
}

// deny records a refusal of the runtime's own policy checks.
func (r *Runtime) deny(req *Request, execID, backend, reason, rule string, err error) {
	rec := audit.Record{
		Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "exec", Backend: backend, Reason: reason, Rule: rule,
		ExecID: execID, Argv: req.Argv, File: req.File, Cwd: req.Cwd, EnvNames: envNames(req.Env), PolicyVersion: r.policyVersion(),
	}
	if err != nil {
		rec.Detail = err.Error()
	}
	r.auditRec(rec)
}

// envNames are the names of env, sorted: never their values.
func envNames(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for k := range env {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// shellRefusals are the commands of script that the shell's policy will
// refuse, as far as a parse can tell: literal command names that are
// not shell builtins and are not in Commands (notAllowed) or are in
// DenyCommands (denied).
func shellRefusals(pol BackendPolicy, script string) (notAllowed, denied []string) {
	if len(pol.Commands) == 0 && len(pol.DenyCommands) == 0 {
		return nil, nil
	}
	names, _, err := commandsOf(script)
	if err != nil {
		return nil, nil
	}
	allowed := map[string]bool{}
	for _, c := range pol.Commands {
		allowed[c] = true
	}
	deny := map[string]bool{}
	for _, c := range pol.DenyCommands {
		deny[c] = true
	}
	for _, n := range names {
		switch {
		case interp.IsBuiltin(n) || strings.HasPrefix(n, "__cfs_"):
		case deny[n]:
			denied = append(denied, n)
		case len(allowed) > 0 && !allowed[n]:
			notAllowed = append(notAllowed, n)
		}
	}
	return notAllowed, denied
}

func (r *Runtime) auditBegin(tok, execID, backend string) {
	r.audit.mu.Lock()
	defer r.audit.mu.Unlock()
	if r.audit.execs == nil {
		r.audit.execs = map[string]*auditExec{}
	}
	r.audit.execs[tok] = &auditExec{id: execID, backend: backend}
}

// auditEnd forgets the exec of tok and returns its count of denials.
func (r *Runtime) auditEnd(tok string) int {
	r.audit.mu.Lock()
	defer r.audit.mu.Unlock()
	e := r.audit.execs[tok]
	delete(r.audit.execs, tok)
	if e == nil {
		return 0
	}
	return e.denials
}

// hostfsVerdict records a HostFS call's refusal, if it was one: a gRPC
// PermissionDenied (no valid token), or a file error EROFS, EACCES or
// EPERM from the exec's view of the workspace. An exec's first
// audit.MaxDenialsPerExec refusals get a record each; the exec's own
// record counts them all.
func (r *Runtime) hostfsVerdict(ctx context.Context, method string, req, resp any, err error) {
	var rule, detail string
	switch {
	case err != nil:
		if status.Code(err) != codes.PermissionDenied {
			return
		}
		rule, detail = "token", status.Convert(err).Message()
	default:
		m, ok := resp.(interface{ GetError() *pb.Error })
		if !ok || m.GetError() == nil {
			return
		}
		e := m.GetError()
		switch syscall.Errno(e.Errno) {
		case syscall.EROFS:
			rule = "read_only"
		case syscall.EACCES, syscall.EPERM:
			rule = "access"
		default:
			return
		}
		detail = e.Message
		if strings.Contains(detail, workspace.RuleErrorMarker) {
			return // a path rule's: the view's denial hook recorded it (pathDenial)
		}
	}
	rec := audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "hostfs", Rule: rule,
		Detail: method + ": " + detail, PolicyVersion: r.policyVersion()}
	if p, ok := req.(interface{ GetPath() string }); ok {
		rec.Path = p.GetPath()
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var e *auditExec
	r.audit.mu.Lock()
	if toks := md.Get(pluginapi.TokenMetadata); len(toks) == 1 {
		e = r.audit.execs[toks[0]]
	}
	if e != nil {
		e.denials++
		rec.ExecID, rec.Backend = e.id, e.backend
		if e.denials > audit.MaxDenialsPerExec {
			r.audit.mu.Unlock()
			return
		}
	} else {
		// A call of no exec under way (a forged or expired token): at
		// most unattributedPerMinute records a minute, so that a plugin
		// cannot fill the log; the next record counts those left out.
		now := time.Now()
		if now.Sub(r.audit.windowStart) > time.Minute {
			r.audit.windowStart, r.audit.windowCount = now, 0
		}
		r.audit.windowCount++
		if r.audit.windowCount > unattributedPerMinute {
			r.audit.suppressed++
			r.audit.mu.Unlock()
			return
		}
		if r.audit.suppressed > 0 {
			rec.Detail += fmt.Sprintf(" (and %d refusals of no exec not recorded before this one)", r.audit.suppressed)
			r.audit.suppressed = 0
		}
	}
	r.audit.mu.Unlock()
	r.auditRec(rec)
}

// pathDenial records a refusal of a path rule at door ("hostfs": the
// exec of HostFS token tok; "mount": the policy view of backend, whose
// exec is named when exactly one of that backend's runs). The exec's
// record counts it; floods are coalesced (audit.Coalescer: the first
// refusal of each exec, rule and path in a minute is recorded, the
// repeats summed in one record when the minute ends, at most 120 paths
// a minute).
func (r *Runtime) pathDenial(door, backend, tok string, d workspace.Denial) {
	rec := workspace.DenialRecord(d, door)
	rec.Backend, rec.PolicyVersion = backend, r.policyVersion()
	r.audit.mu.Lock()
	var e *auditExec
	if tok != "" {
		e = r.audit.execs[tok]
	} else {
		e = r.execOfBackendLocked(backend)
	}
	if e != nil {
		e.denials++
		rec.ExecID = e.id
	}
	r.audit.mu.Unlock()
	for _, x := range r.audit.coalesce.Admit(rec, time.Now()) {
		r.auditRec(x)
	}
}

// execOfBackendLocked is the one exec under way on backend (nil if none
// or several: a shared door cannot tell them apart).
func (r *Runtime) execOfBackendLocked(backend string) *auditExec {
	var e *auditExec
	for _, x := range r.audit.execs {
		if x.backend != backend {
			continue
		}
		if e != nil {
			return nil
		}
		e = x
	}
	return e
}

// flushDenials writes the coalesced refusals' summaries (at close).
func (r *Runtime) flushDenials() {
	for _, x := range r.audit.coalesce.Flush(time.Now()) {
		r.auditRec(x)
	}
}

// unattributedPerMinute bounds the records of HostFS refusals that no
// exec under way made.
const unattributedPerMinute = 60

// registerHostFS registers the HostFS service on a plugin's broker
// server, each method wrapped so that its refusals reach the audit log.
func (r *Runtime) registerHostFS(g *grpc.Server) {
	desc := pb.Workspace_ServiceDesc
	desc.Methods = make([]grpc.MethodDesc, len(pb.Workspace_ServiceDesc.Methods))
	for i, m := range pb.Workspace_ServiceDesc.Methods {
		h, name := m.Handler, m.MethodName
		desc.Methods[i] = grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			var req any
			resp, err := h(srv, ctx, func(v any) error { req = v; return dec(v) }, ic)
			r.hostfsVerdict(ctx, name, req, resp, err)
			return resp, err
		}}
	}
	desc.Streams = make([]grpc.StreamDesc, len(pb.Workspace_ServiceDesc.Streams))
	for i, s := range pb.Workspace_ServiceDesc.Streams {
		h := s.Handler
		s.Handler = func(srv any, stream grpc.ServerStream) error {
			as := &auditStream{ServerStream: stream, r: r, method: s.StreamName}
			err := h(srv, as)
			if err != nil {
				r.hostfsVerdict(stream.Context(), s.StreamName, as.req, nil, err)
			}
			return err
		}
		desc.Streams[i] = s
	}
	g.RegisterService(&desc, r.rpc)
}

// auditStream watches a HostFS stream's messages for refusals.
type auditStream struct {
	grpc.ServerStream
	r      *Runtime
	method string
	req    any // the first request
	denied bool
}

func (s *auditStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.req == nil {
		s.req = m
	}
	return err
}

func (s *auditStream) SendMsg(m any) error {
	if e, ok := m.(interface{ GetError() *pb.Error }); ok && e.GetError() != nil && !s.denied {
		s.denied = true // one verdict per call
		s.r.hostfsVerdict(s.Context(), s.method, s.req, m, nil)
	}
	return s.ServerStream.SendMsg(m)
}

// execAudit is the audit record of an exec that ran.
func (r *Runtime) execAudit(req *Request, res *Result, env map[string]string, denials int) *audit.Record {
	exit := ExitStatus(res.Exit)
	rec := &audit.Record{
		Time: res.Start.UnixNano(), Kind: audit.KindExec, Verdict: audit.Allowed, Door: "exec", Backend: res.Backend, Reason: res.Reason,
		ExecID: res.ID, Argv: req.Argv, File: req.File, Cwd: req.Cwd, EnvNames: envNames(env), PolicyVersion: r.policyVersion(),
		Exit: &exit, ExitClass: ExitClass(res.Exit), Paths: changedPaths(res.Changes), PathsTruncated: res.ChangesTruncated,
		Denials: denials,
	}
	if res.Exit != nil {
		rec.DurationNs = res.Exit.DurationNs
		if res.Exit.Reason != "" {
			rec.Detail = res.Exit.Reason
		}
	}
	if rec.Cwd == "" {
		rec.Cwd = "/"
	}
	return rec
}
