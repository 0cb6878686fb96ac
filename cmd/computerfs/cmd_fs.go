package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// computerfs fs COMMAND: the file API from the command line. Each
// subcommand is a row of fsCommands (fscmd.go): its flags, its argument
// count and its work function.
func newFSCmd(e *env) *cobra.Command {
	o := &fsOpts{}
	c := &cobra.Command{
		Use:   "fs COMMAND ...",
		Short: "read, write, edit, list and search a workspace (computerfs fs help)",
		Long: "Works through the daemon holding the workspace, or on the store directly when\n" +
			"none does. WORKSPACE defaults to $COMPUTERFS_WORKSPACE, else the default one.",
		Example: "--snapshot NAME makes cat, ls, stat, glob, grep, tree and du read snapshot NAME\n" +
			"(computerfs snapshot) instead of the live tree.\n" +
			"--fork ID makes every command work on fork ID (computerfs fork) instead of the workspace.\n\n" +
			"Exit status: 0 success, 1 nothing found (grep, glob), 2 usage, 3 failure, 4 conflict (--if-match).",
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				c.Usage()
				return exitCode(exitUsage)
			case args[0] == "help":
				fmt.Fprint(e.stdout, commandUsage(c))
				return nil
			}
			fmt.Fprintf(e.stderr, "computerfs fs: unknown command %q\n", args[0])
			c.Usage()
			return exitCode(exitUsage)
		},
	}
	pf := c.PersistentFlags()
	workspaceFlag(pf, &o.ws, "workspace store")
	pf.BoolVar(&o.json, "json", false, "print JSON for machines")
	pf.StringVar(&o.snapshot, "snapshot", "", "read snapshot `NAME` instead of the live tree (cat, ls, stat, glob, grep, tree, du)")
	pf.StringVar(&o.fork, "fork", "", "work on fork `ID` of the workspace (computerfs fork) instead of the workspace")
	for _, fc := range fsCommands() {
		sub := &cobra.Command{
			Use:   fc.name + " " + fc.args,
			Short: fc.summary,
			Args:  argRange(fc.minArgs, fc.maxArgs),
			RunE: func(c *cobra.Command, args []string) error {
				return runFS(c.Context(), e, fc, o, args, func(name string) bool { return c.Flags().Changed(name) })
			},
		}
		if fc.flags != nil {
			fc.flags(sub.Flags(), o)
		}
		c.AddCommand(sub)
	}
	return c
}
