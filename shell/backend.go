package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/shell/coreutils"
	"mvdan.cc/sh/v3/interp"
)

// Version is the shell backend's version.
const Version = "0.1.0"

// Backend serves the shell as a plugin.
type Backend struct {
	allowed   map[string]bool
	denied    map[string]bool
	heapLimit int64 // the plugin's heap, all execs together
	watch     watchdog
}

var _ pluginapi.Backend = (*Backend)(nil)

// Commands lists what scripts can run: the interpreter's builtins and
// our commands.
func Commands() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range builtins {
		if interp.IsBuiltin(c) && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, c := range append(coreutils.Names(), "bash", "sh", "type", "command", "which") {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// builtins are the interpreter's builtins that work here.
var builtins = []string{
	":", ".", "[", "alias", "break", "builtin", "cd", "continue", "declare", "dirs", "echo", "eval", "exit", "export",
	"false", "getopts", "let", "local", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly",
	"return", "set", "shift", "shopt", "source", "test", "trap", "true", "typeset", "umask", "unalias", "unset",
}

func (b *Backend) Describe(context.Context) (*pb.Description, error) {
	return &pb.Description{
		Id:      "shell",
		Name:    "Interpreted shell",
		Version: Version,
		Description: "A bash-like shell interpreted in process, with the common coreutils (cat, ls, grep, sed, awk, jq, find, " +
			"sort, head, diff, ...) built in and working directly on the workspace. No processes start, so a command " +
			"runs in milliseconds. Use it for file inspection, search and text processing; use the container backend " +
			"for real binaries (git, node, make, compilers). Not supported: background jobs, coproc, file descriptors " +
			"above 2, printf -v, PIPESTATUS, >(...); <(...) runs its list to the end before the command reads it. " +
			"~user is not expanded. An exec's variables and captured output are bounded by its memory limit.",
		Accepts:       []string{"script", "argv"},
		Features:      []string{"stdin", "memory-limit", "commands:" + strings.Join(Commands(), ",")},
		DefaultLimits: &pb.Limits{TimeoutMs: DefaultTimeout.Milliseconds(), OutputBytes: DefaultOutputBytes, MaxCommands: DefaultMaxCommands, MaxLoopIterations: DefaultMaxLoopIterations, MemoryBytes: DefaultMemoryBytes},
		MaxLimits:     &pb.Limits{TimeoutMs: time.Hour.Milliseconds(), OutputBytes: 1 << 30, MaxCommands: 100_000_000, MaxLoopIterations: 1_000_000_000, MemoryBytes: 4 << 30},
	}, nil
}

func (b *Backend) Configure(_ context.Context, cfg *pluginapi.Config) error {
	for k := range cfg.Settings {
		if k != "commands" && k != "deny_commands" && k != "memory" {
			return fmt.Errorf("shell backend: unknown setting %q (known: commands, deny_commands, memory)", k)
		}
	}
	b.heapLimit = DefaultHeapLimit
	if v := cfg.Settings["memory"]; v != "" {
		n, err := size.Parse(v)
		if err != nil || n < 16<<20 || n > 1<<40 {
			return fmt.Errorf("shell backend: setting memory: want a size from 16M to 1T (such as 512M or 2G), not %q", v)
		}
		b.heapLimit = int64(n)
	}
	if err := limitPlugin(b.heapLimit); err != nil {
		return fmt.Errorf("shell backend: %w", err)
	}
	if list := cfg.Settings["commands"]; list != "" {
		b.allowed = map[string]bool{}
		for _, c := range strings.Split(list, ",") {
			b.allowed[strings.TrimSpace(c)] = true
		}
	}
	if list := cfg.Settings["deny_commands"]; list != "" {
		b.denied = map[string]bool{}
		for _, c := range strings.Split(list, ",") {
			b.denied[strings.TrimSpace(c)] = true
		}
	}
	return nil
}

func (b *Backend) Exec(ctx context.Context, x *pluginapi.Exec) (*pb.Exit, error) {
	if x.FS == nil {
		return nil, errors.New("the host serves no file API to this backend")
	}
	st := x.Start
	if st.Kind != "" && st.Kind != "script" && st.Kind != "argv" {
		return &pb.Exit{ExitCode: 2, Reason: fmt.Sprintf("the shell runs scripts, not %q", st.Kind)}, nil
	}
	fsys := HostFS{H: x.FS}
	script := strings.Join(st.Argv, " ")
	if st.Kind == "argv" {
		script = pluginapi.ScriptOf(st.Argv)
	}
	if st.File != "" {
		rc, err := fsys.Open(ctx, x.FS.Abs(st.File))
		if err != nil {
			fmt.Fprintf(x.Stderr, "bash: %s: %s\n", st.File, errnoText(err))
			return &pb.Exit{ExitCode: 127}, nil
		}
		src, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return nil, err
		}
		script = string(src)
	}
	lim := st.Limits
	if lim == nil {
		lim = &pb.Limits{}
	}
	// SIGINT and SIGTERM end the script: there is no process to signal.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stoppedBy atomic.Int32 // the signal that ended the script
	go func() {
		select {
		case s := <-x.Signals:
			stoppedBy.Store(int32(s))
			cancel(&limitError{reason: fmt.Sprintf("stopped by %s", s)})
		case <-ctx.Done():
		}
	}()
	heapLimit := b.heapLimit
	if heapLimit == 0 {
		heapLimit = DefaultHeapLimit
	}
	out := Run(ctx, script, Options{
		FS: fsys, Dir: st.Cwd, Env: st.Env, Stdin: x.Stdin, Stdout: x.Stdout, Stderr: x.Stderr,
		Timeout: time.Duration(lim.TimeoutMs) * time.Millisecond, OutputBytes: lim.OutputBytes,
		MaxCommands: lim.MaxCommands, MaxLoopIterations: lim.MaxLoopIterations, Allowed: b.allowed, Denied: b.denied,
		MemoryBytes: lim.MemoryBytes,
		watch:       &b.watch, heapLimit: heapLimit,
	})
	exit := &pb.Exit{ExitCode: int32(out.ExitCode), TimedOut: out.TimedOut, Truncated: out.Truncated, Reason: out.Reason, OomKilled: out.MemoryLimit}
	var le *limitError
	if cause := context.Cause(ctx); errors.As(cause, &le) && strings.HasPrefix(le.reason, "stopped by ") {
		// Ended by the signal, as a process would be: 128+signal.
		exit.Signal = stoppedBy.Load()
		if exit.Signal == 0 {
			exit.Signal = int32(syscall.SIGTERM)
		}
		exit.ExitCode = 128 + exit.Signal
		exit.Reason = le.reason
	}
	return exit, nil
}
