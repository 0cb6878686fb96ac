// Package shell is the interpreted shell backend: bash-like scripts run
// by mvdan.cc/sh's interpreter, every command one of package coreutils',
// every file access through a coreutils.FS (the workspace, through the
// host's file API, in the plugin). No process is ever spawned: the exec
// handler chain ends with our commands and refuses the rest with
// "command not found".
//
// It owns the interpreter's configuration, the limits (time, output,
// commands, loop iterations, nesting, memory: see memory.go) and the
// refusal of bash features the interpreter would get silently wrong. It
// must not touch the host: no os file calls, no environment but the one
// given. The interpreter itself does I/O of its own in a few places
// (its temp dir, process substitution, source, command lookup, ~user):
// confine.go lists each, from the module's source, and what shuts it.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/shell/coreutils"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Options configure one run.
type Options struct {
	FS     coreutils.FS
	Dir    string // working directory, a workspace path
	Env    map[string]string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Limits; zero means the default.
	Timeout           time.Duration
	OutputBytes       int64
	MaxCommands       int64
	MaxLoopIterations int64
	// Allowed, when not nil, lists the only commands that may run.
	Allowed map[string]bool
	// Denied, when set, lists commands refused even if allowed.
	Denied map[string]bool
	Now    func() time.Time
	// Args are the positional parameters ($1...), $0 is "bash".
	Args []string
	// MemoryBytes bounds what the script's own state may hold: its
	// variables, the output of a command substitution being captured,
	// its process substitutions. Zero means DefaultMemoryBytes.
	MemoryBytes int64
	// watch, when set, tracks the run while it runs: the backend's
	// memory watchdog.
	watch     *watchdog
	heapLimit int64
}

// Defaults, after just-bash's hardened ones.
const (
	DefaultTimeout           = 60 * time.Second
	DefaultOutputBytes       = 16 << 20
	DefaultMaxCommands       = 100_000
	DefaultMaxLoopIterations = 1_000_000
	DefaultMemoryBytes       = 256 << 20
	maxNesting               = 16 // bash -c / bash FILE within a script
)

// Outcome is how a run ended.
type Outcome struct {
	ExitCode    int
	TimedOut    bool
	Truncated   bool
	MemoryLimit bool   // ended by a memory limit, with ExitCode 137
	Reason      string // set when a limit or an unsupported feature ended the run
}

// limitError stops the interpreter.
type limitError struct {
	reason string
	memory bool // a memory limit: the run ends as if killed (137)
}

func (e *limitError) Error() string { return e.reason }

// run is the state shared by a script and the scripts it runs (bash -c).
type run struct {
	opts     Options
	commands atomic.Int64
	loops    atomic.Int64
	cancel   context.CancelCauseFunc
	out      *cappedWriter
	errw     *cappedWriter
	fs       coreutils.FS // opts.FS with the process substitutions
	psubs    psubs
	mem      memWatch
	// memStopped: the watchdog ended the run.
	memStopped atomic.Bool
}

// Run runs script and reports how it ended. Errors of the script itself
// (syntax, unsupported features, failing commands) are on Stderr and in
// the exit code, as bash would give them.
func Run(ctx context.Context, script string, opts Options) Outcome {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.OutputBytes <= 0 {
		opts.OutputBytes = DefaultOutputBytes
	}
	if opts.MaxCommands <= 0 {
		opts.MaxCommands = DefaultMaxCommands
	}
	if opts.MaxLoopIterations <= 0 {
		opts.MaxLoopIterations = DefaultMaxLoopIterations
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dir == "" {
		opts.Dir = "/"
	}
	if opts.Stdin == nil {
		opts.Stdin = strings.NewReader("")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeoutCause(ctx, opts.Timeout, &limitError{reason: fmt.Sprintf("timed out after %s", opts.Timeout)})
	defer stop()
	rn := &run{opts: opts, cancel: cancel}
	rn.fs = runFS{FS: opts.FS, p: &rn.psubs}
	rn.mem.init(opts.MemoryBytes)
	rn.mem.stop = func(err error) { cancel(err) }
	if opts.watch != nil {
		opts.watch.track(rn, opts.heapLimit)
		defer opts.watch.untrack(rn)
	}
	budget := &atomic.Int64{}
	budget.Store(opts.OutputBytes)
	rn.out = &cappedWriter{w: opts.Stdout, left: budget, onFull: func() {
		cancel(&limitError{reason: fmt.Sprintf("output went past the limit of %d bytes", opts.OutputBytes)})
	}}
	rn.errw = &cappedWriter{w: opts.Stderr, left: budget, onFull: rn.out.onFull}
	code := rn.script(ctx, script, "bash", opts.Args, opts.Dir, opts.Env, opts.Stdin, rn.out, rn.errw, 0)
	out := Outcome{ExitCode: code, Truncated: rn.out.full.Load() || rn.errw.full.Load()}
	if cause := context.Cause(ctx); cause != nil {
		var le *limitError
		if errors.As(cause, &le) {
			out.Reason = le.reason
			if le.memory {
				out.MemoryLimit = true
				out.ExitCode = 137
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				out.TimedOut = true
				out.ExitCode = 124
			}
		} else if cause != context.Canceled {
			out.Reason = cause.Error()
		}
	}
	return out
}

// script parses and runs one script; depth counts nested bash calls.
func (rn *run) script(ctx context.Context, src, name string, args []string, dir string, env map[string]string, stdin io.Reader, stdout, stderr io.Writer, depth int) int {
	// The parse name is $0.
	file, err := parseScript(src, name)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", name, err)
		return 2
	}
	r, err := rn.runner(dir, env, stdin, stdout, stderr, depth, append([]string{"--"}, args...))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	err = r.Run(ctx, file)
	return rn.status(ctx, err, name, stderr)
}

// status turns the interpreter's result into an exit code.
func (rn *run) status(ctx context.Context, err error, name string, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if st, ok := interp.IsExitStatus(err); ok {
		return int(st)
	}
	var le *limitError
	if errors.As(err, &le) {
		fmt.Fprintf(stderr, "%s: %s\n", name, le.reason)
		rn.cancel(le)
		return 1
	}
	if cause := context.Cause(ctx); cause != nil {
		if errors.As(cause, &le) {
			fmt.Fprintf(stderr, "%s: %s\n", name, le.reason)
		}
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}

func (rn *run) runner(dir string, env map[string]string, stdin io.Reader, stdout, stderr io.Writer, depth int, params []string) (*interp.Runner, error) {
	vars := make([]string, 0, len(env)+2)
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	sort.Strings(vars)
	vars = append(vars, "PWD="+dir)
	senv := newSandboxEnv(vars)
	r, err := interp.New(
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(senv),
		interp.Params(params...),
		interp.OpenHandler(rn.open),
		interp.StatHandler(rn.stat),
		interp.ReadDirHandler2(rn.readDir),
		interp.AccessHandler(rn.access),
		interp.CallHandler(rn.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(ctx context.Context, args []string) error { return rn.exec(ctx, args, depth) }
		}),
	)
	if err != nil {
		return nil, err
	}
	// interp.Dir would stat the host's disk: set the field instead.
	r.Dir = dir
	// The runner takes its temp dir (noHostTemp) from the first Reset;
	// the script sees its own TMPDIR after it.
	r.Reset()
	senv.reset = true
	return r, nil
}

// call counts commands and refuses what the interpreter would silently
// get wrong or do on the host.
func (rn *run) call(ctx context.Context, args []string) ([]string, error) {
	if n := rn.commands.Add(1); n > rn.opts.MaxCommands {
		return nil, &limitError{reason: fmt.Sprintf("more than %d commands run: limit reached", rn.opts.MaxCommands)}
	}
	hc := interp.HandlerCtx(ctx)
	if err := rn.mem.check(hc); err != nil {
		return nil, err
	}
	// builtin NAME and command NAME run NAME: look through them, so that
	// what NAME is decides what happens below.
	for len(args) > 1 && (args[0] == "builtin" || args[0] == "command" && !strings.HasPrefix(args[1], "-")) {
		args = args[1:]
	}
	switch args[0] {
	case "eval":
		// Parsed when it runs, past the checks on the script.
		src, err := rewriteWords(strings.Join(args[1:], " "), "eval")
		if err != nil {
			return nil, &limitError{reason: err.Error()}
		}
		return []string{"eval", src}, nil
	case "source", ".":
		if len(args) > 1 {
			// The interpreter would look for the file on the host.
			out := append([]string{args[0], rn.sourcePath(ctx, hc.Dir, hc.Env.Get("PATH").String(), args[1])}, args[2:]...)
			return out, nil
		}
	case "alias":
		out := []string{"alias"}
		for _, a := range args[1:] {
			if name, val, ok := strings.Cut(a, "="); ok {
				v, err := rewriteWords(val, "alias")
				if err != nil {
					return nil, &limitError{reason: err.Error()}
				}
				a = name + "=" + v
			}
			out = append(out, a)
		}
		return out, nil
	case "printf":
		if len(args) > 1 && strings.HasPrefix(args[1], "-v") {
			return nil, &limitError{reason: "printf -v is not supported"}
		}
		// The interpreter's printf lacks much of bash's (%.2f, %b, %q):
		// ours is GNU's.
		return append([]string{"__cfs_printf"}, args[1:]...), nil
	case "type", "command", "which", "hash":
		// The interpreter would look for binaries on the host's PATH.
		if args[0] == "command" && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			return args[1:], nil // command NAME ARGS: run NAME
		}
		return append([]string{"__cfs_type"}, args...), nil
	case "exec":
		if len(args) > 1 {
			return args[1:], nil // no process to replace: just run it
		}
	case "trap":
		// trap ACTION SIGNAL...: the action is parsed when it runs.
		if len(args) > 2 && args[1] != "-" && !strings.HasPrefix(args[1], "-") && args[1] != "" {
			act, err := rewriteWords(args[1], "trap")
			if err != nil {
				return nil, &limitError{reason: err.Error()}
			}
			return append([]string{"trap", act}, args[2:]...), nil
		}
	case "wait", "jobs", "bg", "fg", "disown", "kill", "ulimit", "times", "suspend", "coproc":
		return nil, &limitError{reason: fmt.Sprintf("%s is not supported (no background jobs or processes here)", args[0])}
	}
	return args, nil
}

// exec runs one of our commands: the end of the exec handler chain.
func (rn *run) exec(ctx context.Context, args []string, depth int) (err error) {
	hc := interp.HandlerCtx(ctx)
	name := args[0]
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(hc.Stderr, "%s: internal error: %v\n", name, r)
			err = interp.NewExitStatus(70)
		}
	}()
	switch name {
	case "__cfs_tick":
		if n := rn.loops.Add(1); n > rn.opts.MaxLoopIterations {
			return &limitError{reason: fmt.Sprintf("more than %d loop iterations: limit reached", rn.opts.MaxLoopIterations)}
		}
		if err := rn.mem.check(hc); err != nil {
			return err
		}
		return exitStatus(hc.LastExitStatus)
	case "__cfs_psub":
		return rn.psub(hc.Stdin, hc.Stdout)
	case "__cfs_printf":
		args = append([]string{"printf"}, args[1:]...)
		name = "printf"
	case "__cfs_type":
		return exitStatus(rn.typeCmd(hc, args[1:]))
	case "bash", "sh":
		return exitStatus(rn.nested(ctx, hc, args, depth))
	}
	if strings.Contains(name, "/") {
		return exitStatus(rn.nested(ctx, hc, append([]string{"bash"}, args...), depth))
	}
	if rn.opts.Allowed != nil && !rn.opts.Allowed[name] || rn.opts.Denied[name] {
		fmt.Fprintf(hc.Stderr, "bash: %s: command not allowed by the backend's policy\n", name)
		return interp.NewExitStatus(126)
	}
	f, ok := coreutils.Lookup(name)
	if !ok {
		fmt.Fprintf(hc.Stderr, "bash: %s: command not found\n", name)
		return interp.NewExitStatus(127)
	}
	code := f(ctx, rn.env(hc, hc.Dir, hc.Stdin, rn.mem.capture(hc.Stdout), hc.Stderr, depth), args)
	return exitStatus(code)
}

// exitStatus is a command's result for the interpreter: nil for 0 (the
// interpreter refuses an exit status error of 0).
func exitStatus(code int) error {
	if code == 0 {
		return nil
	}
	return interp.NewExitStatus(uint8(code))
}

// env builds a command's environment from the interpreter's state.
func (rn *run) env(hc interp.HandlerContext, dir string, stdin io.Reader, stdout, stderr io.Writer, depth int) *coreutils.Env {
	vars := map[string]string{}
	hc.Env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.Kind == expand.String {
			vars[name] = vr.Str
		}
		return true
	})
	e := &coreutils.Env{FS: rn.fs, Dir: dir, Vars: vars, Stdin: stdin, Stdout: stdout, Stderr: stderr, Now: rn.opts.Now}
	e.RunIn = func(ctx context.Context, args []string, vars map[string]string, dir string, in io.Reader, out, errw io.Writer) int {
		sub := *e
		sub.Vars, sub.Dir = vars, dir
		return rn.runCommand(ctx, &sub, args, in, out, errw, depth)
	}
	e.Run = func(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
		return rn.runCommand(ctx, e, args, in, out, errw, depth)
	}
	return e
}

// runCommand runs one command for xargs, find -exec and env: ours, or a
// builtin in a one-command interpreter.
func (rn *run) runCommand(ctx context.Context, e *coreutils.Env, args []string, in io.Reader, out, errw io.Writer, depth int) int {
	if n := rn.commands.Add(1); n > rn.opts.MaxCommands {
		fmt.Fprintf(errw, "bash: more than %d commands run: limit reached\n", rn.opts.MaxCommands)
		rn.cancel(&limitError{reason: fmt.Sprintf("more than %d commands run: limit reached", rn.opts.MaxCommands)})
		return 1
	}
	if len(args) == 0 {
		return 0
	}
	if rn.opts.Allowed != nil && !rn.opts.Allowed[args[0]] || rn.opts.Denied[args[0]] {
		fmt.Fprintf(errw, "%s: command not allowed by the backend's policy\n", args[0])
		return 126
	}
	switch args[0] {
	case "bash", "sh":
		return rn.nestedArgs(ctx, e, args, in, out, errw, depth)
	case "echo", "true", "false", "test", "[", "pwd":
		// Builtins in bash, but xargs and find -exec run the binaries:
		// run them in a one-command interpreter.
		return rn.nestedArgs(ctx, e, []string{"bash", "-c", `"$@"`, "bash"}, in, out, errw, depth, args...)
	}
	f, ok := coreutils.Lookup(args[0])
	if !ok {
		fmt.Fprintf(errw, "%s: command not found\n", args[0])
		return 127
	}
	sub := *e
	sub.Stdin, sub.Stdout, sub.Stderr = in, out, errw
	return f(ctx, &sub, args)
}

// nested runs `bash -c SCRIPT [ARGS]`, `bash FILE [ARGS]` or `./FILE`.
func (rn *run) nested(ctx context.Context, hc interp.HandlerContext, args []string, depth int) int {
	e := rn.env(hc, hc.Dir, hc.Stdin, hc.Stdout, hc.Stderr, depth)
	return rn.nestedArgs(ctx, e, args, hc.Stdin, hc.Stdout, hc.Stderr, depth)
}

func (rn *run) nestedArgs(ctx context.Context, e *coreutils.Env, args []string, in io.Reader, out, errw io.Writer, depth int, extra ...string) int {
	args = append(args, extra...)
	if depth+1 > maxNesting {
		fmt.Fprintf(errw, "bash: scripts nested more than %d deep\n", maxNesting)
		return 1
	}
	name := args[0]
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-c" {
		switch rest[0] {
		case "-e", "-u", "-x", "-o", "--norc", "--noprofile":
			rest = rest[1:]
			continue
		}
		break
	}
	var src, scriptName string
	var params []string
	switch {
	case len(rest) >= 2 && rest[0] == "-c":
		src, scriptName = rest[1], name
		if len(rest) > 2 {
			scriptName, params = rest[2], rest[3:]
		}
	case len(rest) >= 1 && name != "bash" && name != "sh":
		// ./script ARGS: name is the file.
		return rn.nestedArgs(ctx, e, append([]string{"bash"}, args...), in, out, errw, depth)
	case len(rest) >= 1:
		p := e.Abs(rest[0])
		fh, err := rn.fs.Open(ctx, p)
		if err != nil {
			fmt.Fprintf(errw, "%s: %s: %s\n", name, rest[0], errnoText(err))
			return 127
		}
		b, err := io.ReadAll(io.LimitReader(fh, 16<<20))
		fh.Close()
		if err != nil {
			fmt.Fprintf(errw, "%s: %s: %v\n", name, rest[0], err)
			return 126
		}
		src, scriptName, params = string(b), rest[0], rest[1:]
	case len(args) >= 1 && (name == "bash" || name == "sh"):
		b, err := io.ReadAll(io.LimitReader(in, 16<<20))
		if err != nil {
			return 1
		}
		src, scriptName = string(b), name
		in = strings.NewReader("")
	}
	// $0, and the prefix of the script's errors, as in bash.
	return rn.script(ctx, src, scriptName, params, e.Dir, e.Vars, in, out, errw, depth+1)
}

// binaryBuiltins are builtins that a minimal system also has as
// binaries in /usr/bin (which and type -P find those).
var binaryBuiltins = map[string]bool{"echo": true, "true": true, "false": true, "test": true, "[": true, "pwd": true, "printf": true}

// typeCmd answers type, command -v/-V, which and hash without looking
// at the host: keywords and builtins are the interpreter's, our commands
// are files in /usr/bin. Functions are not visible to a handler: type
// reports them as not found.
func (rn *run) typeCmd(hc interp.HandlerContext, args []string) int {
	name := args[0]
	args = args[1:]
	mode := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		for _, c := range args[0][1:] {
			switch c {
			case 't', 'p', 'P', 'v', 'V':
				mode = string(c)
			}
		}
		args = args[1:]
	}
	if name == "command" && mode == "" {
		mode = "v"
	}
	status := 0
	for _, a := range args {
		_, isCmd := coreutils.Lookup(a)
		if rn.opts.Allowed != nil && !rn.opts.Allowed[a] {
			isCmd = false
		}
		kind := ""
		switch {
		case name != "which" && name != "hash" && mode != "P" && syntax.IsKeyword(a):
			kind = "keyword"
		case name != "which" && name != "hash" && mode != "P" && (interp.IsBuiltin(a) || a == "type" || a == "command" || a == "which"):
			kind = "builtin"
		case isCmd || a == "bash" || a == "sh" || binaryBuiltins[a]:
			kind = "file"
		}
		if kind == "" {
			status = 1
			if name == "type" && mode != "t" && mode != "p" && mode != "P" || name == "command" && mode == "V" {
				fmt.Fprintf(hc.Stderr, "bash: %s: %s: not found\n", name, a)
			}
			continue
		}
		switch {
		case name == "hash":
		case name == "which" || mode == "p" || mode == "P":
			if kind == "file" {
				fmt.Fprintf(hc.Stdout, "/usr/bin/%s\n", a)
			}
		case mode == "t":
			fmt.Fprintln(hc.Stdout, kind)
		case name == "command" && mode == "v":
			if kind == "file" {
				fmt.Fprintf(hc.Stdout, "/usr/bin/%s\n", a)
			} else {
				fmt.Fprintln(hc.Stdout, a)
			}
		default: // type, command -V
			switch kind {
			case "keyword":
				fmt.Fprintf(hc.Stdout, "%s is a shell keyword\n", a)
			case "builtin":
				fmt.Fprintf(hc.Stdout, "%s is a shell builtin\n", a)
			default:
				fmt.Fprintf(hc.Stdout, "%s is /usr/bin/%s\n", a, a)
			}
		}
	}
	return status
}

func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// unsupported refuses the bash features the interpreter cannot do right.
func unsupported(f *syntax.File) error {
	var err error
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *syntax.CoprocClause:
			err = errors.New("coproc is not supported")
		case *syntax.ProcSubst:
			if x.Op != syntax.CmdIn {
				err = errors.New("process substitution >(...) is not supported (<(...) is)")
			}
		case *syntax.Stmt:
			if x.Background {
				err = errors.New("background jobs (&) are not supported")
			}
		case *syntax.Redirect:
			if x.N != nil {
				if fd := x.N.Value; fd != "0" && fd != "1" && fd != "2" {
					err = fmt.Errorf("file descriptor %s is not supported (only 0, 1 and 2)", fd)
				}
			}
			if x.Op == syntax.DplOut || x.Op == syntax.DplIn {
				if w := x.Word.Lit(); w != "" && w != "0" && w != "1" && w != "2" && w != "-" {
					err = fmt.Errorf("file descriptor %s is not supported (only 0, 1 and 2)", w)
				}
			}
		case *syntax.ParamExp:
			if x.Param != nil && x.Param.Value == "PIPESTATUS" {
				err = errors.New("PIPESTATUS is not supported")
			}
		case *syntax.BinaryTest:
			if x.Op == syntax.TsReMatch {
				var b strings.Builder
				syntax.NewPrinter().Print(&b, x.Y)
				for i := 1; i <= 9; i++ {
					if strings.Contains(b.String(), fmt.Sprintf(`\%d`, i)) {
						err = errors.New("back-references in =~ are not supported")
					}
				}
			}
		case *syntax.CallExpr:
			if len(x.Args) > 1 && x.Args[0].Lit() == "printf" && strings.HasPrefix(x.Args[1].Lit(), "-v") {
				err = errors.New("printf -v is not supported")
			}
		}
		return true
	})
	return err
}

// addLoopTicks puts a counting command at the head of every loop body, so
// that loop iterations can be bounded: the interpreter has no hook for
// them. The tick keeps $? as it was.
func addLoopTicks(f *syntax.File) {
	tick := func() *syntax.Stmt {
		return &syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: "__cfs_tick"}}}}}}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.WhileClause:
			x.Do = append([]*syntax.Stmt{tick()}, x.Do...)
		case *syntax.ForClause:
			x.Do = append([]*syntax.Stmt{tick()}, x.Do...)
		}
		return true
	})
}

// cappedWriter passes writes through until the shared budget runs out.
type cappedWriter struct {
	w      io.Writer
	left   *atomic.Int64
	full   atomic.Bool
	onFull func()
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.w == nil {
		return len(p), nil
	}
	rest := c.left.Add(-int64(len(p)))
	if rest < 0 {
		keep := int64(len(p)) + rest
		if keep > 0 {
			c.w.Write(p[:keep])
		}
		if !c.full.Swap(true) {
			c.onFull()
		}
		return 0, errors.New("output limit reached")
	}
	return c.w.Write(p)
}

// The interpreter's file handlers, onto the FS.

// access answers test -r/-w/-x and cd's checks the way they come out for
// root, which the workspace's owner is: reading and writing are allowed,
// executing needs an x bit (directories can always be entered).
func (rn *run) access(ctx context.Context, p string, mode interp.AccessMode) error {
	fi, err := rn.fs.Stat(ctx, rn.abs(ctx, p))
	if err != nil {
		return pathErr(p, err)
	}
	if mode&interp.AccessExec != 0 && !fi.Mode.IsDir() && fi.Mode.Perm()&0o111 == 0 {
		return &os.PathError{Op: "access", Path: p, Err: syscall.EACCES}
	}
	return nil
}

func (rn *run) abs(ctx context.Context, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(interp.HandlerCtx(ctx).Dir, p)
}

func (rn *run) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	switch p {
	case "/dev/null":
		return devNull{}, nil
	case "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.ENOTSUP}
	}
	if src, ok := strings.CutSuffix(p, sourceMark); ok && path.IsAbs(src) && flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return rn.openSource(ctx, src)
	}
	name := rn.abs(ctx, p)
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		rc, err := rn.fs.Open(ctx, name)
		if err != nil {
			return nil, pathErr(p, err)
		}
		return readOnly{rc}, nil
	}
	if flag&os.O_EXCL != 0 {
		if _, err := rn.fs.Lstat(ctx, name); err == nil {
			return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EEXIST}
		}
	}
	wc, err := rn.fs.Create(ctx, name, flag&os.O_APPEND != 0 || flag&os.O_TRUNC == 0, perm)
	if err != nil {
		return nil, pathErr(p, err)
	}
	return writeOnly{wc}, nil
}

func pathErr(p string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &os.PathError{Op: "open", Path: p, Err: errno}
	}
	return &os.PathError{Op: "open", Path: p, Err: err}
}

func (rn *run) stat(ctx context.Context, p string, follow bool) (iofs.FileInfo, error) {
	name := rn.abs(ctx, p)
	var fi coreutils.FileInfo
	var err error
	if follow {
		fi, err = rn.fs.Stat(ctx, name)
	} else {
		fi, err = rn.fs.Lstat(ctx, name)
	}
	if err != nil {
		return nil, pathErr(p, err)
	}
	return fileInfo{fi}, nil
}

func (rn *run) readDir(ctx context.Context, p string) ([]iofs.DirEntry, error) {
	list, err := rn.fs.ReadDir(ctx, rn.abs(ctx, p))
	if err != nil {
		return nil, pathErr(p, err)
	}
	out := make([]iofs.DirEntry, len(list))
	for i := range list {
		out[i] = iofs.FileInfoToDirEntry(fileInfo{list[i]})
	}
	return out, nil
}

type fileInfo struct{ fi coreutils.FileInfo }

func (f fileInfo) Name() string             { return f.fi.Name }
func (f fileInfo) Size() int64              { return f.fi.Size }
func (f fileInfo) Mode() iofs.FileMode      { return f.fi.Mode }
func (f fileInfo) ModTime() time.Time       { return f.fi.ModTime }
func (f fileInfo) IsDir() bool              { return f.fi.Mode.IsDir() }
func (f fileInfo) String() string           { return iofs.FormatFileInfo(f) }
func (f fileInfo) Info() coreutils.FileInfo { return f.fi }

// Sys answers the interpreter's test -O and -G, which read the owner
// from a *syscall.Stat_t, from the workspace's attributes.
func (f fileInfo) Sys() any {
	return &syscall.Stat_t{Ino: f.fi.Ino, Nlink: uint64(f.fi.Nlink), Uid: f.fi.Uid, Gid: f.fi.Gid, Size: f.fi.Size}
}

type devNull struct{}

func (devNull) Read([]byte) (int, error)    { return 0, io.EOF }
func (devNull) Write(p []byte) (int, error) { return len(p), nil }
func (devNull) Close() error                { return nil }

type readOnly struct{ io.ReadCloser }

func (readOnly) Write([]byte) (int, error) { return 0, syscall.EBADF }

type writeOnly struct{ io.WriteCloser }

func (writeOnly) Read([]byte) (int, error) { return 0, syscall.EBADF }
