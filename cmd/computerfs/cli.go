package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commands are the top-level commands, in the order the usage lists
// them: each is made by its cmd_NAME.go.
func commands(e *env) []*cobra.Command {
	return []*cobra.Command{
		newInitCmd(e),
		newMountCmd(e),
		newServeCmd(e),
		newUmountCmd(e),
		newFSCmd(e),
		newBackendsCmd(e),
		newExecCmd(e),
		newPluginCmd(e),
		newMCPCmd(e),
		newStatusCmd(e),
		newFsckCmd(e),
		newSnapshotCmd(e),
		newExecsCmd(e),
		newForkCmd(e),
		newUndoCmd(e),
		newAuditCmd(e),
		newScrubCmd(e),
		newStatsCmd(e),
		newGCCmd(e),
		newLimitCmd(e),
		newRemoteCmd(e),
		newPushCmd(e),
		newCloneCmd(e),
		newPullCmd(e),
		newPublishCmd(e),
		newBenchCmd(e),
	}
}

// newRootCmd is the computerfs command with every command under it.
func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "computerfs",
		Short:         "a durable, content-addressed workspace mounted with FUSE",
		SilenceErrors: true, // run reports errors, with their exit status
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				rootUsage(c, e.stderr)
				return exitCode(2)
			}
			fmt.Fprintf(e.stderr, "computerfs: unknown command %q (commands: %s)\n", args[0], strings.Join(commandNames(), ", "))
			return exitCode(2)
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.AddCommand(commands(e)...)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			rootUsage(c, e.stdout)
			return
		}
		fmt.Fprint(e.stdout, commandUsage(c))
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		if c == root {
			rootUsage(c, e.stderr)
		} else {
			fmt.Fprint(e.stderr, commandUsage(c))
		}
		return nil
	})
	// A flag that does not parse: the message, the command's usage, exit 2.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(e.stderr, "%s: %v\n", c.CommandPath(), err)
		c.Usage()
		return exitCode(exitUsage)
	})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	return root
}

// rootUsage lists the commands.
func rootUsage(root *cobra.Command, w io.Writer) {
	fmt.Fprintf(w, "computerfs: %s\n\nUsage:\n", root.Short)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		_, args, _ := strings.Cut(c.Use, " ")
		fmt.Fprintf(w, "  computerfs %-7s %-26s %s\n", c.Name(), args, c.Short)
	}
	fmt.Fprintf(w, "\nmount(8) and /etc/fstab (type fuse.computerfs) run it as mount.fuse3 does:\n  computerfs /path/ws.cfs MOUNTPOINT -o allow_other,limit=SIZE,memory-limit=SIZE,create,ro,noexec\n")
	fmt.Fprintf(w, "\nFlags are GNU-style: --long, -s, combined -rf; words after -- are arguments.\nRun 'computerfs COMMAND --help' for a command's options.\n")
}

// commandUsage is a command's usage: its synopsis, what it does, its
// subcommands if any, and its options.
func commandUsage(c *cobra.Command) string {
	var b strings.Builder
	_, args, _ := strings.Cut(c.Use, " ")
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "Usage: %s COMMAND [options] ARGS\n\n", c.CommandPath())
	} else {
		fmt.Fprintf(&b, "Usage: %s [options] %s\n\n", c.CommandPath(), args)
	}
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, "%s\n", strings.TrimRight(desc, "\n"))
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nCommands:\n")
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				_, sargs, _ := strings.Cut(s.Use, " ")
				fmt.Fprintf(&b, "  %-8s %-15s %s\n", s.Name(), sargs, s.Short)
			}
		}
	}
	all := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	all.AddFlagSet(c.LocalFlags())
	all.AddFlagSet(c.InheritedFlags())
	if fl := all.FlagUsages(); fl != "" {
		fmt.Fprintf(&b, "\nOptions:\n%s", fl)
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	return b.String()
}

// commandNames are the top-level command names, sorted.
func commandNames() []string {
	var names []string
	for _, c := range commands(&env{}) {
		names = append(names, c.Name())
	}
	names = append(names, "completion", "help")
	sort.Strings(names)
	return names
}

// argRange checks a command's count of positional arguments: a wrong one
// prints the usage and exits 2. max < 0 means no bound.
func argRange(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			c.Usage()
			return exitCode(exitUsage)
		}
		return nil
	}
}

func run(ctx context.Context, e *env, args []string) int {
	if src, mnt, opts, ok := helperArgs(args); ok {
		// mount(8) by way of mount.fuse3: see fstab.go.
		margs, err := helperMountArgs(src, mnt, opts)
		if err != nil {
			fmt.Fprintf(e.stderr, "computerfs: %v\n", err)
			return 2
		}
		args = append([]string{"mount"}, margs...)
	}
	args = compatArgs(args)
	root := newRootCmd(e)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if ec, ok := err.(exitCode); ok {
		return int(ec) // the command has said why (usage)
	}
	name := strings.TrimPrefix(c.CommandPath(), "computerfs")
	if name == "" && len(args) > 0 {
		name = " " + args[0]
	}
	fmt.Fprintf(e.stderr, "computerfs%s: %v\n", name, userError(err))
	var ec exitCode
	if errors.As(err, &ec) {
		return int(ec)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// compatArgs keeps the one single-dash long flag scripts are sure to
// use, -help, working as the flag package took it.
func compatArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-help" {
			a = "--help"
		}
		out = append(out, a)
	}
	return out
}

// exitCode lets a command choose its exit status along with its message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command line that does not parse (exit status 2, as for
// a wrong number of arguments).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// listValue is a repeatable string flag whose values keep their commas
// (pflag's StringSlice splits them).
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }
func (l *listValue) Type() string       { return "string" }

var _ pflag.Value = (*listValue)(nil)

// rpcFraming is what grpc-go puts before a status's message.
var rpcFraming = regexp.MustCompile(`rpc error: code = [A-Za-z]+ desc = `)

// userError is err as a person reads it: the daemon's or plugin's message
// without gRPC's framing, wherever in the chain it was wrapped.
func userError(err error) string {
	return rpcFraming.ReplaceAllString(err.Error(), "")
}

// workspaceFlag declares -w/--workspace, the store a command works on
// ($COMPUTERFS_WORKSPACE, else the default one).
func workspaceFlag(f *pflag.FlagSet, ws *string, usage string) {
	f.StringVarP(ws, "workspace", "w", defaultWorkspace(), usage)
}
