package main

import "github.com/spf13/cobra"

// computerfs status [WORKSPACE|MOUNTPOINT]: ask a daemon how it is doing.
type statusOptions struct {
	json  bool
	execs int
}

func newStatusCmd(e *env) *cobra.Command {
	var o statusOptions
	c := &cobra.Command{
		Use:   "status [WORKSPACE|MOUNTPOINT]",
		Short: "ask a workspace's daemon how it is doing: pid, uptime, sizes, commit lag, FUSE traffic, backends, last execs",
		Args:  argRange(0, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runStatus(c.Context(), e, o, args) },
	}
	f := c.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON (snake_case keys)")
	f.IntVar(&o.execs, "execs", 5, "how many of the last execs to show")
	return c
}
