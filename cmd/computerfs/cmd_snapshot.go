package main

import (
	"github.com/computerfs/computerfs/fs"
	"github.com/spf13/cobra"
)

// computerfs snapshot create|list|rm|restore|diff WORKSPACE [NAME ...].
type snapshotOptions struct {
	json, patch bool
	maxPatch    int64
}

// snapshotArgs are the positional arguments each operation takes: at
// least, and at most (-1: no bound), the operation included.
var snapshotArgs = map[string][2]int{"create": {3, 3}, "list": {2, 2}, "rm": {3, 3}, "restore": {3, -1}, "diff": {3, 4}}

func newSnapshotCmd(e *env) *cobra.Command {
	var o snapshotOptions
	c := &cobra.Command{
		Use:       "snapshot create|list|rm|restore|diff WORKSPACE [NAME [OTHER|PATH...]]",
		Short:     "named read-only states of a workspace: create (instant), list, rm, restore NAME [PATH...] (live, in one commit), diff NAME [OTHER] (OTHER: a later snapshot; none: now; --patch: unified diffs of text files)",
		ValidArgs: []string{"create", "list", "rm", "restore", "diff"},
		Args: func(c *cobra.Command, args []string) error {
			var op string
			if len(args) > 0 {
				op = args[0]
			}
			n, ok := snapshotArgs[op]
			if !ok { // no such operation
				c.Usage()
				return exitCode(exitUsage)
			}
			return argRange(n[0], n[1])(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error { return runSnapshot(c.Context(), e, o, args) },
	}
	f := c.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON for machines")
	f.BoolVar(&o.patch, "patch", false, "diff: a unified diff of each text file added, modified or deleted")
	f.Int64Var(&o.maxPatch, "max-patch-bytes", fs.DefaultMaxPatchFileBytes, "diff --patch: files larger than this get a notice, not a patch")
	return c
}
