package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"golang.org/x/sys/unix"
)

// policyPath is the backend policy file.
func policyPath() string {
	if p := os.Getenv("COMPUTERFS_POLICY"); p != "" {
		return p
	}
	return filepath.Join(defaultHome(), "policy.json")
}

// execLogPath is the exec log of workspace ws, beside its store.
func execLogPath(ws string) string {
	abs, _ := filepath.Abs(ws)
	return abs + ".execs.jsonl"
}

// fileView is api as the file API (CLI, daemon socket, MCP) serves it:
// under the policy's top-level path rules, whose refusals go to the
// audit log (door "api", coalesced: audit.Coalescer).
func fileView(api *workspace.WS) (*workspace.WS, error) {
	pol, err := backends.LoadPolicy(policyPath())
	if err != nil {
		return nil, err
	}
	return fileViewOf(api, pol, &audit.Coalescer{})
}

// fileViewOf is fileView under policy pol, its refusals through c.
func fileViewOf(api *workspace.WS, pol backends.Policy, c *audit.Coalescer) (*workspace.WS, error) {
	rs, err := pol.FileRules()
	if err != nil || rs == nil {
		return api, err
	}
	return api.WithRules(rs).AuditDenials("api", "", backends.PolicyVersion(pol), c), nil
}

// newRuntime makes the backend runtime of a daemon (or of a CLI holding
// the store itself); onExec, if not nil, sees every exec's result.
func newRuntime(e *env, ws string, api *workspace.WS, mnt string, onExec func(*backends.Result), viewMount func(string, *workspace.Rules, func(workspace.Denial)) (string, error)) (*backends.Runtime, func(), error) {
	pol, err := backends.LoadPolicy(policyPath())
	if err != nil {
		return nil, nil, err
	}
	abs, _ := filepath.Abs(ws)
	var execLog *os.File
	if f, err := os.OpenFile(execLogPath(ws), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		execLog = f
	} else {
		e.log.Warn("no exec log", "err", err)
	}
	opts := backends.Options{Dirs: backends.DefaultDirs(defaultHome()), WS: api, MountPath: mnt, ViewMount: viewMount, Owner: abs, Policy: pol, Logger: e.log, OnExec: onExec}
	if execLog != nil {
		opts.ExecLog = execLog
	}
	rt, err := backends.New(opts)
	if err != nil {
		if execLog != nil {
			execLog.Close()
		}
		return nil, nil, err
	}
	return rt, func() {
		rt.Close()
		if execLog != nil {
			execLog.Close()
		}
	}, nil
}

// executor reaches the daemon's Executor service, or runs a runtime in
// this process on the store when no daemon holds it.
type executor struct {
	client pb.ExecutorClient
	rt     *backends.Runtime
	forks  forkOps // the workspace's forks, by the same way
	close  func()
}

func openExecutor(ctx context.Context, e *env, ws string) (*executor, error) {
	conn, err := wsrpc.DialConn(ctx, ws)
	if err == nil {
		return &executor{client: pb.NewExecutorClient(conn), forks: wsrpc.NewDaemonClient(conn), close: func() { conn.Close() }}, nil
	}
	if !errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, err
	}
	e = e.quiet() // no daemon: this process runs the backends, for one call
	f, err := openHere(e, ws)
	if err != nil {
		return nil, err
	}
	api := workspace.New(f, workspace.Options{})
	rt, closeRT, err := newRuntime(e, ws, api, "", nil, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &executor{rt: rt, forks: localForks{api}, close: func() {
		closeRT()
		f.Close()
	}}, nil
}

func runBackends(ctx context.Context, e *env, o backendsOptions, args []string) error {
	ws, asJSON, describe := o.ws, o.json, o.describe
	x, err := openExecutor(ctx, e, ws)
	if err != nil {
		return err
	}
	defer x.close()
	var list []*pb.BackendInfo
	if x.client != nil {
		r, err := x.client.Backends(ctx, &pb.BackendsRequest{Describe: describe})
		if err != nil {
			return fmt.Errorf("daemon: %w", wsrpc.PlainError(err))
		}
		list = r.Backends
	} else {
		list = x.rt.List(ctx, describe)
	}
	if asJSON {
		// Every field of Limits; every field of Description below.
		type limits struct {
			TimeoutMs         int64 `json:"timeout_ms,omitempty"`
			OutputBytes       int64 `json:"output_bytes,omitempty"`
			MemoryBytes       int64 `json:"memory_bytes,omitempty"`
			MaxCommands       int64 `json:"max_commands,omitempty"`
			MaxLoopIterations int64 `json:"max_loop_iterations,omitempty"`
			InputBytes        int64 `json:"input_bytes,omitempty"`
			ResultBytes       int64 `json:"result_bytes,omitempty"`
			CPUMillis         int64 `json:"cpu_millis,omitempty"`
			MaxPids           int64 `json:"max_pids,omitempty"`
		}
		toLimits := func(l *pb.Limits) *limits {
			return &limits{l.TimeoutMs, l.OutputBytes, l.MemoryBytes, l.MaxCommands, l.MaxLoopIterations, l.InputBytes, l.ResultBytes, l.CpuMillis, l.MaxPids}
		}
		type info struct {
			ID          string   `json:"id"`
			Name        string   `json:"name,omitempty"`
			Version     string   `json:"version,omitempty"`
			State       string   `json:"state"`
			Path        string   `json:"path"`
			Description string   `json:"description,omitempty"`
			Accepts     []string `json:"accepts,omitempty"`
			Features    []string `json:"features,omitempty"`
			Defaults    *limits  `json:"default_limits,omitempty"`
			Max         *limits  `json:"max_limits,omitempty"`
			NeedsMount  *bool    `json:"needs_mount,omitempty"`
			LastError   string   `json:"last_error,omitempty"`
			Execs       int64    `json:"execs"`
			Restarts    int64    `json:"restarts"`
			Pid         int64    `json:"pid,omitempty"`
		}
		out := []info{}
		for _, b := range list {
			i := info{ID: b.Id, State: b.State, Path: b.Path, LastError: b.LastError, Execs: b.Execs, Restarts: b.Restarts, Pid: b.Pid}
			if d := b.Description; d != nil {
				i.Name, i.Version, i.Description, i.Accepts, i.Features = d.Name, d.Version, d.Description, d.Accepts, d.Features
				i.NeedsMount = &d.NeedsMount
				// What is enforced: the host's defaults and caps where the
				// backend states none (the container's output limit, say).
				i.Defaults = toLimits(backends.EffectiveLimits(d))
				i.Max = toLimits(backends.EffectiveMaxLimits(d))
			}
			out = append(out, i)
		}
		return printJSON(e, out)
	}
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "no backends found (looked beside %s and in %s)\n", filepath.Dir(selfPath()), strings.Join(backends.DefaultDirs(defaultHome())[1:], ", "))
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTIMEOUT\tOUTPUT\tDESCRIPTION")
	for _, b := range list {
		timeout, output, desc := "-", "-", b.LastError
		if d := b.Description; d != nil {
			if b.LastError == "" {
				desc = d.Description
			}
			l := backends.EffectiveLimits(d)
			timeout = fmt.Sprintf("%s", time.Duration(l.TimeoutMs)*time.Millisecond)
			output = humanBytes(l.OutputBytes)
		}
		if len(desc) > 100 {
			desc = desc[:97] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Id, b.State, timeout, output, desc)
	}
	return tw.Flush()
}

func selfPath() string {
	p, _ := os.Executable()
	return p
}

type envFlag map[string]string

func (f envFlag) String() string {
	var keys []string
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (f envFlag) Type() string { return "NAME=VALUE" }

func (f envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, not %q", s)
	}
	f[k] = v
	return nil
}

func runExec(ctx context.Context, e *env, o execOptions, args []string) error {
	ws, backend, cwd, input, file, kind := o.ws, o.backend, o.cwd, o.input, o.file, o.kind
	timeout, outputLimit, record, noStdin, envs := o.timeout, o.outputLimit, o.record, o.noStdin, o.env
	argv, fork := args, o.fork
	if err := fork.check(); err != nil {
		return err
	}
	var err error
	if input != "" && !json.Valid([]byte(input)) {
		return usageError{fmt.Errorf("--input is not valid JSON")}
	}
	start := &pb.ExecStart{Backend: backend, Argv: argv, Kind: kind, Cwd: cwd, Env: envs, File: file, Limits: &pb.Limits{TimeoutMs: timeout.Milliseconds()}}
	if input != "" {
		start.InputJson = []byte(input)
	}
	if outputLimit != "" {
		n, err := size.Parse(outputLimit)
		if err != nil {
			return usageError{fmt.Errorf("--output-limit: %w", err)}
		}
		start.Limits.OutputBytes = int64(n)
	}
	x, err := openExecutor(ctx, e, ws)
	if err != nil {
		return err
	}
	defer x.close()
	if fork.active() {
		if start.Fork, err = beginExecFork(ctx, e, x.forks, fork); err != nil {
			return err
		}
	}
	var stdin io.Reader = e.stdin
	if noStdin {
		stdin = nil
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	var (
		exit    *pb.Exit
		result  []byte
		chosen  *pb.Chosen
		summary *pb.Summary
	)
	// With --json the command's output is captured into the one JSON
	// document printed at the end (the output limit bounds it).
	stdout, stderr := e.stdout, e.stderr
	var outBuf, errBuf bytes.Buffer
	if o.json {
		stdout, stderr = &outBuf, &errBuf
	}
	if x.client != nil {
		exit, result, chosen, summary, err = execRemote(ctx, x.client, start, stdin, stdout, stderr, sigs)
	} else {
		exit, result, chosen, summary, err = execLocal(ctx, x.rt, start, stdin, stdout, stderr, sigs)
	}
	if err != nil {
		return err
	}
	if o.json {
		if err := printJSON(e, newExecResultJSON(exit, result, chosen, summary, outBuf.Bytes(), errBuf.Bytes())); err != nil {
			return err
		}
		if code := backends.ExitStatus(exit); code != 0 {
			return exitCode(code)
		}
		return nil
	}
	if result != nil {
		e.stdout.Write(result)
		if len(result) == 0 || result[len(result)-1] != '\n' {
			fmt.Fprintln(e.stdout)
		}
	}
	if exit.Reason != "" && (exit.TimedOut || exit.Truncated || exit.ExitCode != 0 || exit.Signal != 0) {
		fmt.Fprintf(e.stderr, "computerfs exec: %s\n", exit.Reason)
	}
	if record {
		rec := map[string]any{"backend": chosen.GetBackend(), "reason": chosen.GetReason(), "exit": backends.ExitStatus(exit),
			"duration_ms": float64(exit.DurationNs) / 1e6, "timed_out": exit.TimedOut, "truncated": exit.Truncated}
		var changed []string
		for _, c := range summary.GetChanges() {
			line := c.Op + " " + c.Path
			if c.NewPath != "" {
				line += " -> " + c.NewPath
			}
			changed = append(changed, line)
		}
		rec["changes"] = changed
		b, _ := json.Marshal(rec)
		fmt.Fprintf(e.stderr, "%s\n", b)
	}
	code := backends.ExitStatus(exit)
	if fork.active() {
		if err := endExecFork(context.WithoutCancel(ctx), e, x.forks, fork, start.Fork, code == 0); err != nil {
			return err
		}
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

func execLocal(ctx context.Context, rt *backends.Runtime, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) (*pb.Exit, []byte, *pb.Chosen, *pb.Summary, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := backends.RequestFromStart(start)
	req.Stdin = stdin
	req.Signals = forwardSignals(ctx, sigs)
	return outcome(rt.Exec(ctx, req, stdout, stderr))
}

func execRemote(ctx context.Context, c pb.ExecutorClient, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) (*pb.Exit, []byte, *pb.Chosen, *pb.Summary, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return outcome(backends.ExecRemote(ctx, c, start, stdin, forwardSignals(ctx, sigs), stdout, stderr))
}

// forwardSignals passes the signals this process gets on to the command,
// until ctx ends.
func forwardSignals(ctx context.Context, sigs <-chan os.Signal) <-chan syscall.Signal {
	fwd := make(chan syscall.Signal, 4)
	go func() {
		for {
			select {
			case s := <-sigs:
				select {
				case fwd <- s.(syscall.Signal):
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return fwd
}

// outcome is what cmdExec prints of an exec's result.
func outcome(res *backends.Result, err error) (*pb.Exit, []byte, *pb.Chosen, *pb.Summary, error) {
	if err != nil {
		return nil, nil, nil, nil, err
	}
	sum := &pb.Summary{ChangesTruncated: res.ChangesTruncated, Sync: res.Sync}
	for _, c := range res.Changes {
		sum.Changes = append(sum.Changes, &pb.Change{Seq: c.Seq, Op: c.Op, Path: c.Path, NewPath: c.NewPath})
	}
	return res.Exit, res.Result, &pb.Chosen{ExecId: res.ID, Backend: res.Backend, Reason: res.Reason}, sum, nil
}

// execResultJSON is exec --json's result: how the exec went, its output, and
// what it changed. exit is the status computerfs exits with (the one
// table of backends.ExitStatus: 124 timeout, 141 output cut, 137 memory,
// 128+N for signal N); exit_code is what the command itself returned.
type execResultJSON struct {
	ExecID           string          `json:"exec_id"`
	Backend          string          `json:"backend"`
	Why              string          `json:"why"`
	Exit             int             `json:"exit"`
	ExitClass        string          `json:"exit_class"`
	ExitCode         int32           `json:"exit_code"`
	Signal           *string         `json:"signal"`
	DurationMs       float64         `json:"duration_ms"`
	TimedOut         bool            `json:"timed_out"`
	Truncated        bool            `json:"truncated"`
	OOMKilled        bool            `json:"oom_killed"`
	Reason           string          `json:"reason,omitempty"` // why it ended, when not normally
	Stdout           *string         `json:"stdout,omitempty"`
	StdoutBase64     []byte          `json:"stdout_base64,omitempty"`
	Stderr           *string         `json:"stderr,omitempty"`
	StderrBase64     []byte          `json:"stderr_base64,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	FilesChanged     []changeJSON    `json:"files_changed"`
	ChangesTruncated bool            `json:"changes_truncated"`
	// Sync is set when the daemon syncs to a remote (--push-every):
	// whether what the exec left is pushed yet, or pending.
	Sync *syncJSON `json:"sync,omitempty"`
}

// syncJSON is pb.SyncStatus for exec --json and the MCP exec result.
type syncJSON struct {
	Remote         string `json:"remote"`
	URL            string `json:"url"`
	State          string `json:"state"` // pushed, pending, conflict
	Root           string `json:"root,omitempty"`
	PushedRoot     string `json:"pushed_root,omitempty"`
	PushedManifest string `json:"pushed_manifest,omitempty"`
	PushedSnapshot string `json:"pushed_snapshot,omitempty"`
	Error          string `json:"error,omitempty"`
}

func syncOf(s *pb.SyncStatus) *syncJSON {
	if s == nil {
		return nil
	}
	return &syncJSON{Remote: s.Remote, URL: s.Url, State: s.State, Root: s.Root, PushedRoot: s.PushedRoot,
		PushedManifest: s.PushedManifest, PushedSnapshot: s.PushedSnapshot, Error: s.Error}
}

type changeJSON struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	NewPath string `json:"new_path,omitempty"`
}

func newExecResultJSON(exit *pb.Exit, result []byte, chosen *pb.Chosen, sum *pb.Summary, stdout, stderr []byte) execResultJSON {
	out := execResultJSON{
		ExecID: chosen.GetExecId(), Backend: chosen.GetBackend(), Why: chosen.GetReason(),
		Exit: backends.ExitStatus(exit), ExitClass: backends.ExitClass(exit), ExitCode: exit.GetExitCode(),
		DurationMs: float64(exit.GetDurationNs()) / 1e6, TimedOut: exit.GetTimedOut(), Truncated: exit.GetTruncated(),
		OOMKilled: exit.GetOomKilled(), Reason: exit.GetReason(), ChangesTruncated: sum.GetChangesTruncated(),
		FilesChanged: []changeJSON{}, Sync: syncOf(sum.GetSync()),
	}
	if n := exit.GetSignal(); n != 0 {
		name := unix.SignalName(syscall.Signal(n))
		if name == "" {
			name = fmt.Sprintf("signal %d", n)
		}
		out.Signal = &name
	}
	text := func(b []byte) (*string, []byte) {
		if utf8.Valid(b) {
			s := string(b)
			return &s, nil
		}
		return nil, b
	}
	out.Stdout, out.StdoutBase64 = text(stdout)
	out.Stderr, out.StderrBase64 = text(stderr)
	if len(result) > 0 && json.Valid(result) {
		out.Result = result
	}
	for _, c := range sum.GetChanges() {
		out.FilesChanged = append(out.FilesChanged, changeJSON{c.Op, c.Path, c.NewPath})
	}
	return out
}
