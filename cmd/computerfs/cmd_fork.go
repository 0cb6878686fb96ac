package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// computerfs fork create [ID]|list|changes ID|merge ID|discard ID: a
// workspace's copy-on-write branches (forkcmd.go does the work).
var forkArgs = map[string][2]int{"list": {1, 1}, "create": {1, 2}, "changes": {2, 2}, "merge": {2, 2}, "discard": {2, 2}}

func newForkCmd(e *env) *cobra.Command {
	var o forkOptions
	c := &cobra.Command{
		Use:       "fork create [ID]|list|changes ID|merge ID|discard ID",
		Short:     "copy-on-write branches of a workspace: exec --fork runs a command in a new one; merge applies one in one commit (refused, naming the files, if the workspace changed them meanwhile); discard drops it",
		ValidArgs: []string{"create", "list", "changes", "merge", "discard"},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				c.Usage()
				return exitCode(exitUsage)
			}
			n, ok := forkArgs[args[0]]
			if !ok {
				return usageError{fmt.Errorf("unknown command %q (create, list, changes, merge, discard)", args[0])}
			}
			return argRange(n[0], n[1])(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Op = args[0]
			if len(args) > 1 {
				o.ID = args[1]
			}
			return runFork(c.Context(), e, o)
		},
	}
	f := c.Flags()
	workspaceFlag(f, &o.WS, "workspace store (or its mountpoint)")
	f.BoolVar(&o.JSON, "json", false, "print JSON for machines")
	return c
}
