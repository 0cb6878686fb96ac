package main

import "github.com/spf13/cobra"

// computerfs fsck WORKSPACE: check a store, offline or through its daemon.
type fsckOptions struct {
	repair, json bool
}

func newFsckCmd(e *env) *cobra.Command {
	var o fsckOptions
	c := &cobra.Command{
		Use:   "fsck WORKSPACE",
		Short: "check every chunk, reference count, inode and entry; --repair fixes what is safe",
		Args:  argRange(1, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runFsck(c.Context(), e, o, args) },
	}
	f := c.Flags()
	f.BoolVar(&o.repair, "repair", false, "fix what can be fixed safely (the store must not be in use: unmount it first)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	return c
}
