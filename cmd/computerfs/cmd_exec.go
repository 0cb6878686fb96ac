package main

import (
	"time"

	"github.com/spf13/cobra"
)

// computerfs exec [-b BACKEND] -- COMMAND...: run a command on a backend.
type execOptions struct {
	ws, backend, cwd, input, file, kind string
	timeout                             time.Duration
	outputLimit                         string
	record, noStdin, json               bool
	env                                 envFlag
	fork                                execForkOptions
}

func newExecCmd(e *env) *cobra.Command {
	o := execOptions{env: envFlag{}}
	c := &cobra.Command{
		Use:   "exec [-b BACKEND] -- COMMAND...",
		Short: "run a command on a backend against the workspace",
		Long: "Run a command on a backend against the workspace. The words after -- are the\n" +
			"command, each kept whole: one word is a script; several are an argv, quoted\n" +
			"when a backend joins them into a script (exec -- sh -c 'exit 7' exits 7).",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 && o.file == "" {
				c.Usage()
				return exitCode(exitUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return runExec(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store")
	f.StringVarP(&o.backend, "backend", "b", "", "backend ID (default: chosen by policy)")
	f.StringVar(&o.cwd, "cwd", "/", "working directory, a workspace path")
	f.DurationVar(&o.timeout, "timeout", 0, "time limit (default: the backend's)")
	f.StringVar(&o.outputLimit, "output-limit", "", "stdout+stderr limit, e.g. 16M (default: the backend's)")
	f.Var(o.env, "env", "NAME=VALUE for the command's environment (repeatable)")
	f.StringVar(&o.input, "input", "", "structured input: JSON")
	f.StringVar(&o.file, "file", "", "run this workspace file (a script or module) instead of COMMAND")
	f.StringVar(&o.kind, "kind", "", "what COMMAND is: script, argv or js-module (default: the backend's)")
	f.BoolVar(&o.record, "record", false, "print the exec's record (backend, why, files changed) on stderr")
	f.BoolVar(&o.noStdin, "no-stdin", false, "do not forward stdin")
	f.BoolVar(&o.fork.Fork, "fork", false, "run in a new fork of the workspace (a copy-on-write branch): print what it changed, then keep it, or --merge or --discard it")
	f.StringVar(&o.fork.In, "in-fork", "", "run in this existing fork")
	f.BoolVar(&o.fork.Merge, "merge", false, "with --fork: merge the fork into the workspace if the command succeeds (refused, naming the files, if the workspace changed them meanwhile)")
	f.BoolVar(&o.fork.Discard, "discard", false, "with --fork: discard the fork after")
	f.BoolVar(&o.json, "json", false, "print one JSON object when the command ends: backend, why, exit (and exit_class, signal), duration, truncated, stdout and stderr (captured), files changed")
	return c
}
