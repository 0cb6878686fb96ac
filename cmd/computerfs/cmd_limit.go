package main

import "github.com/spf13/cobra"

// computerfs limit WORKSPACE [SIZE]: show or change the size limit.
type limitOptions struct {
	json bool
}

func newLimitCmd(e *env) *cobra.Command {
	var o limitOptions
	c := &cobra.Command{
		Use:   "limit WORKSPACE [SIZE]",
		Short: "show or change the workspace size limit",
		Args:  argRange(1, 2),
		RunE:  func(c *cobra.Command, args []string) error { return runLimit(c.Context(), e, o, args) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the limit and use as JSON")
	return c
}
