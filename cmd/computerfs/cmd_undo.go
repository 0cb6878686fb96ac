package main

import "github.com/spf13/cobra"

// computerfs undo [-w WS] [EXEC-ID]: revert what one exec changed.
type undoOptions struct {
	ws          string
	force, json bool
}

func newUndoCmd(e *env) *cobra.Command {
	var o undoOptions
	c := &cobra.Command{
		Use:   "undo [EXEC-ID]",
		Short: "revert exactly what an exec changed (the last one by default), refusing if later changes touched the same files (--force)",
		Args:  argRange(0, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runUndo(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store (or its mountpoint)")
	f.BoolVar(&o.force, "force", false, "put back files that later changes touched too")
	f.BoolVar(&o.json, "json", false, "print JSON for machines")
	return c
}
