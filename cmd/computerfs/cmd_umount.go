package main

import "github.com/spf13/cobra"

// computerfs umount MOUNTPOINT: unmount, and wait for the daemon to end.
func newUmountCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "unmount a mounted workspace",
		Args:  argRange(1, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runUmount(c.Context(), e, args) },
	}
}
