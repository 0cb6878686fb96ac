package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
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
	close  func()
}

func openExecutor(ctx context.Context, e *env, ws string) (*executor, error) {
	conn, err := wsrpc.DialConn(ctx, ws)
	if err == nil {
		return &executor{client: pb.NewExecutorClient(conn), close: func() { conn.Close() }}, nil
	}
	if !errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, err
	}
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
	return &executor{rt: rt, close: func() {
		closeRT()
		f.Close()
	}}, nil
}

func cmdBackends(ctx context.Context, e *env, args []string) error {
	var ws string
	var asJSON, describe bool
	fl, err := parse(e, "backends", args, func(fl *flag.FlagSet) {
		fl.StringVar(&ws, "w", defaultWorkspace(), "workspace store")
		fl.BoolVar(&asJSON, "json", false, "print JSON")
		fl.BoolVar(&describe, "describe", true, "start backends not started yet to describe them")
	})
	if err != nil {
		return err
	}
	if fl.NArg() != 0 {
		fl.Usage()
		return exitCode(2)
	}
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
		type limits struct {
			TimeoutMs   int64 `json:"timeout_ms,omitempty"`
			OutputBytes int64 `json:"output_bytes,omitempty"`
			MemoryBytes int64 `json:"memory_bytes,omitempty"`
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
				// What an exec gets: the host's defaults where the
				// backend states none (its output limit, say).
				l := backends.EffectiveLimits(d)
				i.Defaults = &limits{l.TimeoutMs, l.OutputBytes, l.MemoryBytes}
				if l := d.MaxLimits; l != nil {
					i.Max = &limits{l.TimeoutMs, l.OutputBytes, l.MemoryBytes}
				}
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
			desc = d.Description
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

func (f envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, not %q", s)
	}
	f[k] = v
	return nil
}

func cmdExec(ctx context.Context, e *env, args []string) error {
	var (
		ws, backend, cwd, input, file, kind string
		timeout                             time.Duration
		outputLimit                         string
		record, noStdin                     bool
	)
	envs := envFlag{}
	fl, err := parse(e, "exec", args, func(fl *flag.FlagSet) {
		fl.StringVar(&ws, "w", defaultWorkspace(), "workspace store")
		fl.StringVar(&backend, "b", "", "backend ID (default: chosen by policy)")
		fl.StringVar(&cwd, "cwd", "/", "working directory, a workspace path")
		fl.DurationVar(&timeout, "timeout", 0, "time limit (default: the backend's)")
		fl.StringVar(&outputLimit, "output-limit", "", "stdout+stderr limit, e.g. 16M (default: the backend's)")
		fl.Var(envs, "env", "NAME=VALUE for the command's environment (repeatable)")
		fl.StringVar(&input, "input", "", "structured input: JSON")
		fl.StringVar(&file, "file", "", "run this workspace file (a script or module) instead of COMMAND")
		fl.StringVar(&kind, "kind", "", "what COMMAND is: script, argv or js-module (default: the backend's)")
		fl.BoolVar(&record, "record", false, "print the exec's record (backend, why, files changed) on stderr")
		fl.BoolVar(&noStdin, "no-stdin", false, "do not forward stdin")
	})
	if err != nil {
		return err
	}
	argv := fl.Args()
	if len(argv) == 0 && file == "" {
		fl.Usage()
		return exitCode(2)
	}
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
	if x.client != nil {
		exit, result, chosen, summary, err = execRemote(ctx, x.client, start, stdin, e.stdout, e.stderr, sigs)
	} else {
		exit, result, chosen, summary, err = execLocal(ctx, x.rt, start, stdin, e.stdout, e.stderr, sigs)
	}
	if err != nil {
		return err
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
	if code := backends.ExitStatus(exit); code != 0 {
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
	sum := &pb.Summary{ChangesTruncated: res.ChangesTruncated}
	for _, c := range res.Changes {
		sum.Changes = append(sum.Changes, &pb.Change{Seq: c.Seq, Op: c.Op, Path: c.Path, NewPath: c.NewPath})
	}
	return res.Exit, res.Result, &pb.Chosen{ExecId: res.ID, Backend: res.Backend, Reason: res.Reason}, sum, nil
}
