package main

import "github.com/spf13/cobra"

// computerfs stats WORKSPACE: sizes, deduplication and compression.
type statsOptions struct {
	json bool
}

func newStatsCmd(e *env) *cobra.Command {
	var o statsOptions
	c := &cobra.Command{
		Use:   "stats WORKSPACE",
		Short: "report sizes, deduplication and compression",
		Args:  argRange(1, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runStats(c.Context(), e, o, args) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print as JSON")
	return c
}
