package main

import "github.com/spf13/cobra"

// computerfs execs [-w WS]: the recent exec records.
type execsOptions struct {
	ws   string
	json bool
	last int
}

func newExecsCmd(e *env) *cobra.Command {
	var o execsOptions
	c := &cobra.Command{
		Use:   "execs",
		Short: "list the recent execs: backend, command, exit, files changed, whether they can be undone",
		Args:  argRange(0, 0),
		RunE:  func(c *cobra.Command, args []string) error { return runExecs(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store (or its mountpoint)")
	f.BoolVar(&o.json, "json", false, "print JSON for machines")
	f.IntVarP(&o.last, "last", "n", 20, "show the last N execs (0: all kept)")
	return c
}
