// Package jsbackend is the JavaScript execution backend: it runs an ES
// module on the workspace, in process, and returns its default export's
// value as the exec's structured result. cmd/plugin-js serves it as the
// plugin "js".
//
// It owns the engine and everything a module sees: a fresh VM per exec,
// the module loader (relative and absolute imports come from the
// workspace through HostFS, never from the host's disk; bare names only
// resolve to the built-in modules node:fs/promises, node:path and
// computerfs), console, process (whose env is only the exec's env),
// timers, URL and URLSearchParams (a WHATWG-shaped polyfill in the
// prelude), and the limits: wall time, memory, stack depth, input, result
// and output size, and the number of modules (MaxModules) and depth of
// imports (MaxImportDepth) per exec. It imports only pluginapi and the
// engine.
//
// A thrown error exits 1 with "Uncaught ..." on stderr; a rejection of the
// default export's promise (or of a default export that is a promise)
// exits 1 with "Uncaught (in promise) ...". A stray rejection, a promise
// the module rejects and never awaits, is not detected: modernc.org/quickjs
// v0.27.0 does not expose QuickJS's host promise rejection tracker
// (JS_SetHostPromiseRejectionTracker is only in its internal lib package),
// and the prelude cannot see promises that async functions create.
//
// # Why modernc.org/quickjs
//
// The engine is modernc.org/quickjs v0.27.0, QuickJS translated to pure
// Go (no cgo, so the plugin builds like the rest). It was chosen over
// github.com/dop251/goja because it gives us, as engine features, exactly
// the contract this backend must keep:
//
//   - native ES modules (import/export, dynamic import, top-level await)
//     through VM.SetModuleLoader, so a module's imports load from the
//     workspace with the engine's own resolution; goja has no module
//     system and would need a bundler or a loader of our own;
//   - VM.SetMemoryLimit: an allocation past the limit throws "out of
//     memory" inside the VM instead of growing the plugin (tested with a
//     1 GiB allocation under the 256 MiB default);
//   - VM.SetMaxStackSize's default: runaway recursion throws a catchable
//     "stack overflow" instead of killing the goroutine (tested);
//   - VM.Interrupt, callable from any goroutine, which stops a busy loop
//     (the timeout and cancellation use it; tested with while(true));
//   - a fresh VM costs little: NewVM is about 0.2 ms and the prelude,
//     compiled to bytecode once per process, about 0.6 ms; a trivial
//     module's whole exec round trip on a warm plugin is 2-3 ms
//     (bench.BenchmarkJSExec; evaluating the prelude from source instead
//     cost about 3 ms more).
//
// A host function that panics abandons a quickjs VM, so every host
// callback here recovers and turns the panic into a JavaScript exception.
package jsbackend

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"modernc.org/quickjs"
)

// Version is the backend's version.
const Version = "0.1.0"

// Defaults and maximums of the limits.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMemory      = 256 << 20
	DefaultInputBytes  = 1 << 20
	DefaultResultBytes = 1 << 20
	DefaultOutputBytes = 16 << 20
	MaxSourceBytes     = 16 << 20
	// MaxModules is how many modules one exec may load (the main module
	// and the built-ins included), and MaxImportDepth how deep a chain of
	// imports may go (the main module is depth 0). pb.Limits has no field
	// for either, so they are fixed.
	MaxModules     = 256
	MaxImportDepth = 64
)

//go:embed prelude.js
var prelude string

// Backend serves JavaScript as a plugin.
type Backend struct{}

var _ pluginapi.Backend = (*Backend)(nil)

// Describe says what the backend is.
func (b *Backend) Describe(context.Context) (*pb.Description, error) {
	return &pb.Description{
		Id:      "js",
		Name:    "JavaScript (QuickJS)",
		Version: Version,
		Description: "Runs an ES module in a fresh QuickJS engine, in process, in milliseconds. The module's default export " +
			"(a value, or a function, possibly async) is called as f(input, {cwd, env}) with the exec's structured input " +
			"(null if none); what it returns is JSON-serialized as the structured result. console.log/info/debug go to " +
			"stdout, console.error/warn to stderr; a thrown error or a rejected default-export promise exits 1 with its stack on stderr. The workspace is " +
			"reachable through 'node:fs/promises' (readFile, writeFile, appendFile, mkdir, readdir, stat, lstat, rm, " +
			"rename, copyFile, cp, symlink, readlink, access, chmod, plus glob(pattern) and grep(pattern, path?, " +
			"{regex, ignoreCase, include, exclude, mode})), 'node:path', and the 'computerfs' module (glob, grep). " +
			"Relative and absolute imports load modules from the workspace. There is no network, no npm packages, no " +
			"child processes and no host file system (URL and URLSearchParams are there for parsing); process.env holds only the exec's environment. " +
			"At most 256 modules per exec and imports at most 64 deep. Use it for data " +
			"transformation, JSON work and scripted edits of many files; use the shell for quick file inspection and " +
			"the container backend for real node/npm.",
		Accepts:  []string{"js-module"},
		Features: []string{"structured-input", "structured-result", "es-modules", "modules:node:fs/promises,node:path,computerfs", "timers"},
		DefaultLimits: &pb.Limits{TimeoutMs: DefaultTimeout.Milliseconds(), MemoryBytes: DefaultMemory, InputBytes: DefaultInputBytes,
			ResultBytes: DefaultResultBytes, OutputBytes: DefaultOutputBytes},
		MaxLimits: &pb.Limits{TimeoutMs: time.Hour.Milliseconds(), MemoryBytes: 4 << 30, InputBytes: 64 << 20,
			ResultBytes: 64 << 20, OutputBytes: 1 << 30},
	}, nil
}

// Configure takes no settings.
func (b *Backend) Configure(context.Context, *pluginapi.Config) error { return nil }

// Exec runs one module.
func (b *Backend) Exec(ctx context.Context, x *pluginapi.Exec) (*pb.Exit, error) {
	if x.FS == nil {
		return nil, errors.New("the host serves no file API to this backend")
	}
	st := x.Start
	if st.Kind != "" && st.Kind != "js-module" {
		return &pb.Exit{ExitCode: 2, Reason: fmt.Sprintf("the js backend runs ES modules, not %q", st.Kind)}, nil
	}
	lim := limitsOf(st.Limits)
	if int64(len(st.InputJson)) > lim.InputBytes {
		return &pb.Exit{ExitCode: 2, Reason: fmt.Sprintf("structured input is %d bytes, over the limit of %d", len(st.InputJson), lim.InputBytes)}, nil
	}
	cwd := path.Clean("/" + st.Cwd)
	var src, main string
	if st.File != "" {
		main = path.Clean(x.FS.Abs(st.File))
		if !path.IsAbs(main) {
			main = path.Join(cwd, main)
		}
		data, err := readSource(ctx, x.FS, main)
		if err != nil {
			fmt.Fprintf(x.Stderr, "Error: cannot read module %s: %s\n", st.File, errText(err))
			return &pb.Exit{ExitCode: 1, Reason: "cannot read the module"}, nil
		}
		src = data
	} else {
		src = strings.Join(st.Argv, " ")
		main = path.Join(cwd, "[inline].mjs")
	}
	r := &run{ctx: ctx, x: x, lim: lim, cwd: cwd, main: main, mainSrc: src, stopCh: make(chan struct{})}
	return r.exec(), nil
}

// limitsOf fills the limits the host left zero.
func limitsOf(l *pb.Limits) *pb.Limits {
	out := &pb.Limits{TimeoutMs: DefaultTimeout.Milliseconds(), MemoryBytes: DefaultMemory, InputBytes: DefaultInputBytes,
		ResultBytes: DefaultResultBytes, OutputBytes: DefaultOutputBytes}
	if l == nil {
		return out
	}
	if l.TimeoutMs > 0 {
		out.TimeoutMs = l.TimeoutMs
	}
	if l.MemoryBytes > 0 {
		out.MemoryBytes = max(l.MemoryBytes, 4<<20)
	}
	if l.InputBytes > 0 {
		out.InputBytes = l.InputBytes
	}
	if l.ResultBytes > 0 {
		out.ResultBytes = l.ResultBytes
	}
	if l.OutputBytes > 0 {
		out.OutputBytes = l.OutputBytes
	}
	return out
}

func readSource(ctx context.Context, fs *pluginapi.HostFS, p string) (string, error) {
	rc, _, err := fs.Open(ctx, p, nil)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxSourceBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > MaxSourceBytes {
		return "", fmt.Errorf("the module is over %d bytes", MaxSourceBytes)
	}
	return string(data), nil
}

// run is one exec: its VM and how it ended.
type run struct {
	ctx     context.Context
	x       *pluginapi.Exec
	lim     *pb.Limits
	cwd     string
	main    string
	mainSrc string
	vm      *quickjs.VM

	mu        sync.Mutex
	stopped   string        // why the exec was stopped from outside the VM
	stopCh    chan struct{} // closed when stopped is set: wakes a wait for a timer
	timedOut  bool
	signal    syscall.Signal
	outLeft   int64
	truncated bool

	// Set by __cfs_done.
	done     bool
	outcome  string // ok, error, exit
	result   string
	hasRes   bool
	exitCode int
	errText  string
	errName  string

	// The module loader's accounting.
	modules int            // modules loaded
	depth   map[string]int // a module's import depth, by its normalized name
}

// stop ends the exec from any goroutine.
func (r *run) stop(reason string) {
	r.mu.Lock()
	if r.stopped == "" {
		r.stopped = reason
		if r.stopCh != nil {
			close(r.stopCh)
		}
	}
	r.mu.Unlock()
	r.vm.Interrupt()
}

func (r *run) stopReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

func (r *run) exec() (exit *pb.Exit) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return &pb.Exit{ExitCode: 126, Reason: "cannot start the engine: " + err.Error()}
	}
	r.vm = vm
	defer func() {
		if p := recover(); p != nil {
			// The VM is abandoned; Close would panic or leak, so only
			// report. The next exec gets a new VM.
			exit = &pb.Exit{ExitCode: 70, Reason: fmt.Sprintf("the engine failed: %v", p)}
			return
		}
		vm.Close()
	}()
	vm.SetMemoryLimit(uintptr(r.lim.MemoryBytes))
	r.outLeft = r.lim.OutputBytes

	// Timeout, cancellation and signals interrupt the VM.
	watchDone := make(chan struct{})
	defer close(watchDone)
	timeout := time.Duration(r.lim.TimeoutMs) * time.Millisecond
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C:
			r.mu.Lock()
			r.timedOut = r.stopped == ""
			r.mu.Unlock()
			r.stop(fmt.Sprintf("timed out after %s", timeout))
		case <-r.ctx.Done():
			r.stop("cancelled")
		case s := <-r.x.Signals:
			r.mu.Lock()
			r.signal = s
			r.mu.Unlock()
			r.stop(fmt.Sprintf("stopped by %s", s))
		case <-watchDone:
		}
	}()

	if err := r.setup(); err != nil {
		return &pb.Exit{ExitCode: 126, Reason: "cannot set up the engine: " + err.Error()}
	}
	mainJSON, _ := json.Marshal(r.main)
	runErr := r.loop(string(mainJSON))
	return r.exit(runErr)
}

// setup registers the host functions and runs the prelude.
func (r *run) setup() error {
	vm := r.vm
	vm.SetModuleLoader(r.load, r.normalize)
	for name, f := range map[string]quickjs.HostFunc{
		"__cfs_write": r.hostWrite,
		"__cfs_fs":    r.hostFS,
		"__cfs_done":  r.hostDone,
		"__cfs_env":   r.hostEnv,
	} {
		if err := vm.RegisterHostFunc(name, guard(name, f)); err != nil {
			return err
		}
	}
	var err error
	if bc := preludeBytecode(); bc != nil {
		_, err = vm.EvalBytecode(bc)
	} else {
		_, err = vm.Eval(prelude, quickjs.EvalGlobal)
	}
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	return nil
}

// preludeBytecode is the prelude compiled once per process: evaluating
// bytecode saves about 2 ms of parsing in every exec. It is our own code,
// compiled by this engine, so it is trusted bytecode. nil if it could not
// be compiled (the source is evaluated instead).
var preludeBytecode = sync.OnceValue(func() []byte {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil
	}
	defer vm.Close()
	bc, err := vm.Compile(prelude, quickjs.EvalGlobal)
	if err != nil {
		return nil
	}
	return bc
})

// guard turns a host function's panic into a JavaScript exception: a
// panic through the engine would abandon the VM.
func guard(name string, f quickjs.HostFunc) quickjs.HostFunc {
	return func(args []any) (res any, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("internal error in %s: %v", name, p)
			}
		}()
		return f(args)
	}
}

// loop starts the module and drives its jobs and timers until it
// settles, is stopped, or can make no more progress.
func (r *run) loop(mainJSON string) error {
	vm := r.vm
	inputJSON, _ := json.Marshal(string(r.x.Start.InputJson))
	if _, err := vm.Eval("__cfs_run("+mainJSON+", "+string(inputJSON)+")", quickjs.EvalGlobal); err != nil {
		return err
	}
	for {
		if r.stopReason() != "" {
			return nil
		}
		n, err := vm.ExecutePendingJobs()
		if err != nil && r.stopReason() == "" && !r.done {
			// An exception in a job no one awaits (an unhandled
			// rejection is not an error here, but a throw is).
			return err
		}
		if r.done || r.stopReason() != "" {
			return nil
		}
		if n > 0 {
			continue
		}
		next, err := vm.Call("__cfs_next_timer")
		if err != nil {
			return err
		}
		d, _ := next.(int)
		if f, ok := next.(float64); ok {
			d = int(f)
		}
		if d < 0 {
			return nil // nothing left to run: the promise never settles
		}
		if d > 0 {
			t := time.NewTimer(time.Duration(d) * time.Millisecond)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
				r.stop("cancelled")
				return nil
			case <-r.stopCh: // a signal or the time limit
				t.Stop()
				return nil
			}
			if r.stopReason() != "" {
				return nil
			}
		}
		if _, err := vm.Call("__cfs_fire_timer"); err != nil {
			return err
		}
	}
}

// exit says how the exec ended.
func (r *run) exit(runErr error) *pb.Exit {
	r.mu.Lock()
	stopped, timedOut, sig, truncated := r.stopped, r.timedOut, r.signal, r.truncated
	r.mu.Unlock()
	exit := &pb.Exit{Truncated: truncated}
	switch {
	case stopped != "":
		exit.Reason = stopped
		exit.ExitCode = 1
		if timedOut {
			exit.TimedOut = true
			exit.ExitCode = 124
		}
		if sig != 0 {
			exit.Signal = int32(sig)
			exit.ExitCode = 128 + int32(sig)
		}
		return exit
	case runErr != nil:
		// An error outside the module's promise (the prelude's driver).
		r.errText, r.errName = "Uncaught "+runErr.Error(), runErr.Error()
		fallthrough
	case r.done && r.outcome == "error":
		exit.ExitCode = 1
		fmt.Fprintln(r.x.Stderr, r.errText)
		exit.Reason = classify(r.errName, r.lim)
		return exit
	case !r.done:
		exit.ExitCode = 1
		exit.Reason = "the module's promise never settled (nothing left to wait for)"
		return exit
	case r.outcome == "exit":
		exit.ExitCode = int32(r.exitCode)
		return exit
	}
	exit.ExitCode = int32(r.exitCode)
	if r.hasRes {
		if int64(len(r.result)) > r.lim.ResultBytes {
			exit.ExitCode = 1
			exit.Reason = fmt.Sprintf("the result is %d bytes, over the limit of %d", len(r.result), r.lim.ResultBytes)
			return exit
		}
		r.x.SetResult([]byte(r.result))
	}
	return exit
}

// classify gives the reason for an uncaught error that is a limit.
func classify(name string, lim *pb.Limits) string {
	switch {
	case strings.Contains(name, "out of memory"):
		return fmt.Sprintf("memory limit: the module needed more than %d MiB", lim.MemoryBytes>>20)
	case strings.Contains(name, "stack overflow"):
		return "stack overflow: recursion too deep"
	case strings.Contains(name, "interrupted"):
		return "interrupted"
	}
	return ""
}

// ---- host functions

func argString(args []any, i int) string {
	if i >= len(args) {
		return ""
	}
	switch v := args[i].(type) {
	case string:
		return v
	case nil, quickjs.Undefined:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (r *run) hostWrite(args []any) (any, error) {
	fd := argString(args, 0)
	s := argString(args, 1)
	w := r.x.Stdout
	if fd == "2" {
		w = r.x.Stderr
	}
	r.mu.Lock()
	left := r.outLeft
	n := int64(len(s))
	full := n > left
	if full {
		s = s[:left]
		r.truncated = true
	}
	r.outLeft -= int64(len(s))
	r.mu.Unlock()
	if len(s) > 0 {
		if _, err := io.WriteString(w, s); err != nil {
			r.stop("the output stream broke: " + err.Error())
			return nil, err
		}
	}
	if full {
		reason := fmt.Sprintf("output went past the limit of %d bytes", r.lim.OutputBytes)
		r.stop(reason)
		return nil, errors.New(reason)
	}
	return quickjs.Undefined{}, nil
}

func (r *run) hostDone(args []any) (any, error) {
	if r.done {
		return quickjs.Undefined{}, nil
	}
	r.done = true
	r.outcome = argString(args, 0)
	switch r.outcome {
	case "ok":
		if len(args) > 1 {
			if s, ok := args[1].(string); ok {
				r.result, r.hasRes = s, true
			}
		}
		fmt.Sscan(argString(args, 2), &r.exitCode)
	case "exit":
		fmt.Sscan(argString(args, 1), &r.exitCode)
	case "error":
		r.errText = argString(args, 1)
		r.errName = argString(args, 2)
	}
	return quickjs.Undefined{}, nil
}

func (r *run) hostEnv(args []any) (any, error) {
	switch argString(args, 0) {
	case "env":
		env := r.x.Start.Env
		if env == nil {
			env = map[string]string{}
		}
		b, err := json.Marshal(env)
		return string(b), err
	case "cwd":
		return r.cwd, nil
	case "argv":
		b, err := json.Marshal(append([]string{"computerfs-js", r.main}, r.x.Start.Argv...)[:2])
		return string(b), err
	}
	return nil, errors.New("unknown")
}

// ---- modules

// builtins are the modules that are not files, by every name they go by,
// with the names they export.
var builtins = map[string]string{
	"node:fs/promises": "node:fs/promises", "fs/promises": "node:fs/promises",
	"node:path": "node:path", "path": "node:path", "node:path/posix": "node:path", "path/posix": "node:path",
	"computerfs": "computerfs",
}

var builtinExports = map[string][]string{
	"node:fs/promises": {"readFile", "writeFile", "appendFile", "mkdir", "readdir", "stat", "lstat", "rm", "rmdir", "unlink",
		"rename", "copyFile", "cp", "symlink", "readlink", "realpath", "access", "chmod", "truncate", "glob", "grep", "constants"},
	"node:path":  {"join", "dirname", "basename", "extname", "resolve", "relative", "normalize", "isAbsolute", "parse", "format", "sep", "delimiter", "posix", "toNamespacedPath"},
	"computerfs": {"glob", "grep", "fs", "path"},
}

// normalize resolves an import specifier against the importing module's
// workspace path.
func (r *run) normalize(_ *quickjs.VM, base, name string) (res string, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = "", fmt.Errorf("internal error resolving %s: %v", name, p)
		}
	}()
	res, err = r.resolve(base, name)
	if err != nil {
		return "", err
	}
	if r.depth == nil {
		r.depth = map[string]int{}
	}
	d := 0 // the main module, imported by the prelude's driver
	if bd, ok := r.depth[base]; ok {
		d = bd + 1
	}
	if old, ok := r.depth[res]; !ok || d < old {
		r.depth[res] = d
	}
	if d > MaxImportDepth {
		return "", r.moduleLimit(fmt.Sprintf("import depth over %d", MaxImportDepth))
	}
	return res, nil
}

// moduleLimit ends the exec for a module limit: the reason goes to
// stderr and becomes the exit's reason, whether or not the module
// catches the failed import.
func (r *run) moduleLimit(reason string) error {
	if r.stopReason() == "" {
		r.hostWrite([]any{"2", "Error: " + reason + "\n"})
	}
	r.stop(reason)
	return errors.New(reason)
}

// resolve is normalize's resolution, without the accounting.
func (r *run) resolve(base, name string) (string, error) {
	if b, ok := builtins[name]; ok {
		return b, nil
	}
	switch {
	case strings.HasPrefix(name, "/"):
		return path.Clean(name), nil
	case strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || name == "." || name == "..":
		dir := r.cwd
		if strings.HasPrefix(base, "/") {
			dir = path.Dir(base)
		}
		return path.Join(dir, name), nil
	case strings.HasPrefix(name, "node:"):
		return "", fmt.Errorf("cannot find module '%s': the js backend has only node:fs/promises and node:path", name)
	}
	return "", fmt.Errorf("cannot find module '%s': there are no packages; import workspace files by a relative or absolute path, or node:fs/promises, node:path, computerfs", name)
}

// load returns a module's source: a built-in's, or a workspace file's.
func (r *run) load(_ *quickjs.VM, name string) (src string, err error) {
	defer func() {
		if p := recover(); p != nil {
			src, err = "", fmt.Errorf("internal error loading %s: %v", name, p)
		}
	}()
	if name != r.main {
		r.modules++
		if r.modules > MaxModules {
			return "", r.moduleLimit(fmt.Sprintf("module limit: more than %d modules imported", MaxModules))
		}
	}
	if exports, ok := builtinExports[name]; ok {
		q, _ := json.Marshal(name)
		return fmt.Sprintf("const m = globalThis.__cfs_modules[%s];\nexport default m;\nexport const { %s } = m;\n", q, strings.Join(exports, ", ")), nil
	}
	if name == r.main {
		return r.mainSrc, nil
	}
	data, err := readSource(r.ctx, r.x.FS, name)
	if err != nil {
		return "", fmt.Errorf("cannot load module '%s' from the workspace: %s (imports resolve inside the workspace only)", name, errText(err))
	}
	if strings.HasSuffix(name, ".json") {
		return "export default " + data + ";\n", nil
	}
	return data, nil
}

// errText is an error's cause, without Go's wrapping.
func errText(err error) string {
	var fe *pluginapi.FSError
	if errors.As(err, &fe) {
		if fe.Code != "" {
			return fe.Code + ": " + fe.Message
		}
		return fe.Message
	}
	return err.Error()
}
