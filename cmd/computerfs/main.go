// Command computerfs is the workspace daemon and its command-line tools:
// mount a workspace, check it, collect its garbage and report on it.
//
// The daemon (mount, serve) holds the store, so no other process can
// open it meanwhile: the tools that work on a store (fsck, stats, gc,
// limit) ask a running daemon over its control socket instead, through
// wsrpc's Daemon service, and print the same output; status asks it how
// it is doing. The daemon keeps its metrics in one registry of its own
// (internal/metrics), fed by fusefs's Observer and backends' OnExec, and
// serves them over HTTP with --metrics.
//
// # The command line
//
// The CLI is built on spf13/cobra with GNU-style flags (spf13/pflag):
// long flags take two dashes (--json), one-letter flags one and combine
// (fs rm -rf, fs grep -il), flags may follow the positional arguments,
// and the words after "--" are positional arguments, each kept whole
// (exec -- sh -c 'exit 7'). cli.go has the root command, the usage text,
// and run, which maps errors to exit statuses: exitCode(N) exits N
// silently (the command has said why), codedError carries a message and
// its status, usageError exits 2, anything else prints
// "computerfs CMD: error" and exits 1. mount(8)'s helper command line
// (computerfs SRC MNT -o OPTS, fstab.go) is recognized before cobra sees
// the arguments.
//
// # Adding a command
//
// One command, one file: cmd_NAME.go holds the command's options struct
// and newNAMECmd(e *env) *cobra.Command, which declares the flags into
// the struct (pflag: f.BoolVar(&o.json, "json", ...), f.StringVarP(&o.ws,
// "workspace", "w", ...)) and whose RunE calls the work function,
// runNAME(ctx, e, o, args), in whatever file holds the work (it may be
// cmd_NAME.go itself). The work function never parses flags: it takes
// the options struct and the positional arguments, and returns an error
// as above. Set Args to argRange(min, max) (wrong counts print the usage
// and exit 2), Use to "NAME ARGS" and Short to the one-line summary the
// top-level usage lists; then add newNAMECmd to commands() in cli.go
// (the usage lists commands by name). A command written for the old flag
// package ports by moving its fl.XVar calls into newNAMECmd (fl.Var values
// need a Type() string method for pflag) and replacing fl.Arg(i),
// fl.NArg() and fl.Args() with args. Commands with subcommands (fs) add
// them with AddCommand; completion (computerfs completion bash|zsh|fish)
// then knows them all.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
)

// env carries what every command writes to; nothing global.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	// oneOff logs what a command runs in its own process for one call
	// (backends without a daemon): warnings and errors only, unless
	// COMPUTERFS_LOG sets a level. nil: log.
	oneOff *slog.Logger
}

func main() {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	level, set := logLevel()
	e.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !set {
		e.oneOff = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	os.Exit(run(context.Background(), e, os.Args[1:]))
}

// logLevel is COMPUTERFS_LOG's level (debug, info, warn, error), and
// whether it set one; INFO by default.
func logLevel() (slog.Level, bool) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("COMPUTERFS_LOG"))); err != nil {
		return slog.LevelInfo, false
	}
	return l, true
}

// quiet is e for work done once for this command: a daemon's INFO lines
// (a backend started, an exec ran) are noise there.
func (e *env) quiet() *env {
	if e.oneOff == nil {
		return e
	}
	q := *e
	q.log, q.oneOff = e.oneOff, nil
	return &q
}
