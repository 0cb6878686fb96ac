package main

import "github.com/spf13/cobra"

// computerfs backends: the execution backends and their limits.
type backendsOptions struct {
	ws             string
	json, describe bool
}

func newBackendsCmd(e *env) *cobra.Command {
	var o backendsOptions
	c := &cobra.Command{
		Use:   "backends",
		Short: "list the execution backends: ID, state, limits, description",
		Args:  argRange(0, 0),
		RunE:  func(c *cobra.Command, args []string) error { return runBackends(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.BoolVar(&o.describe, "describe", true, "start backends not started yet to describe them")
	return c
}
