package main

import "github.com/spf13/cobra"

// computerfs gc WORKSPACE: delete unreferenced chunks.
type gcOptions struct {
	json bool
}

func newGCCmd(e *env) *cobra.Command {
	var o gcOptions
	c := &cobra.Command{
		Use:   "gc WORKSPACE",
		Short: "delete chunks no file refers to",
		Args:  argRange(1, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runGC(c.Context(), e, o, args) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print what was freed as JSON")
	return c
}
