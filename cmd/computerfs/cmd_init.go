package main

import (
	"fmt"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/spf13/cobra"
)

// computerfs init [WORKSPACE]: create a new workspace.
type initOptions struct {
	limit string
}

func newInitCmd(e *env) *cobra.Command {
	var o initOptions
	c := &cobra.Command{
		Use:   "init [WORKSPACE]",
		Short: "create a new workspace (--limit SIZE); refuses a path that exists",
		Args:  argRange(0, 1),
		RunE:  func(c *cobra.Command, args []string) error { return runInit(c.Context(), e, o, args) },
	}
	c.Flags().StringVar(&o.limit, "limit", "", fmt.Sprintf("workspace size limit, e.g. 20G (default %s; computerfs limit changes it later)", size.Format(fs.DefaultLimit)))
	return c
}
