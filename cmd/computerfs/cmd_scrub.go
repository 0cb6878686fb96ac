package main

import "github.com/spf13/cobra"

// computerfs scrub WORKSPACE: verify every chunk and record, read-only.
type scrubOptions struct {
	json bool
	rate string
}

func newScrubCmd(e *env) *cobra.Command {
	var o scrubOptions
	c := &cobra.Command{
		Use:   "scrub WORKSPACE",
		Short: "read and verify every chunk and record, at a bounded rate (--rate); read-only",
		Args:  argRange(1, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runScrub(c.Context(), e, o, args) },
	}
	f := c.Flags()
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.StringVar(&o.rate, "rate", "0", "read at most this much chunk data per second, e.g. 200M; 0 for no bound")
	return c
}
