package main

import (
	"time"

	"github.com/spf13/cobra"
)

// The remote commands (issue 18; remotecmd.go does the work):
//
//	computerfs remote add NAME s3://BUCKET/PREFIX | list
//	computerfs push [NAME]
//	computerfs clone s3://BUCKET/PREFIX WS
//	computerfs pull [NAME]
//	computerfs publish PATH

var remoteArgs = map[string][2]int{"add": {3, 3}, "list": {1, 1}}

func newRemoteCmd(e *env) *cobra.Command {
	var o remoteOpts
	c := &cobra.Command{
		Use:       "remote add NAME s3://BUCKET/PREFIX | list",
		Short:     "a workspace's remotes on S3-compatible storage (--endpoint URL, --region R; credentials from the AWS variables and files)",
		ValidArgs: []string{"add", "list"},
		Args: func(c *cobra.Command, args []string) error {
			var op string
			if len(args) > 0 {
				op = args[0]
			}
			n, ok := remoteArgs[op]
			if !ok {
				c.Usage()
				return exitCode(exitUsage)
			}
			return argRange(n[0], n[1])(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] == "add" {
				return runRemoteAdd(e, o, args[1], args[2])
			}
			return runRemoteList(e, o)
		},
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store (or its mountpoint)")
	f.StringVar(&o.endpoint, "endpoint", "", "add: the S3 endpoint URL (default: AWS)")
	f.StringVar(&o.region, "region", "", "add: the region (default: $AWS_REGION, the AWS config, else us-east-1)")
	f.BoolVar(&o.asJSON, "json", false, "list: print JSON for machines")
	f.StringVar(&o.keyFile, "key-file", "", "add: encrypt everything pushed with the key in this file (64 hex digits; it never leaves this host)")
	f.BoolVar(&o.newKey, "new-key", false, "add: make a new random key in --key-file (mode 0600); keep a copy: without it nothing pushed can be read")
	return c
}

func newPushCmd(e *env) *cobra.Command {
	var o remoteOpts
	c := &cobra.Command{
		Use:   "push [NAME]",
		Short: "upload a snapshot (--snapshot S; default: a new one) to a remote: only the chunks it lacks, then its manifest; refused if another host pushed since",
		Args:  argRange(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			return runPush(c.Context(), e, o, optArg(args, 0))
		},
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store")
	f.StringVar(&o.snapshot, "snapshot", "", "push this snapshot (default: take one now, named push-TIME)")
	f.BoolVar(&o.force, "force", false, "push even if the remote's HEAD is older than the newest seen there (rolled back)")
	f.BoolVar(&o.asJSON, "json", false, "print JSON for machines")
	return c
}

func newCloneCmd(e *env) *cobra.Command {
	var o remoteOpts
	c := &cobra.Command{
		Use:   "clone s3://BUCKET/PREFIX WS",
		Short: "build a new workspace from a remote (--snapshot S), every chunk and the root verified",
		Args:  argRange(2, 2),
		RunE: func(c *cobra.Command, args []string) error {
			return runClone(c.Context(), e, o, args[0], args[1])
		},
	}
	f := c.Flags()
	f.StringVar(&o.endpoint, "endpoint", "", "the S3 endpoint URL (default: AWS)")
	f.StringVar(&o.region, "region", "", "the region")
	f.StringVar(&o.snapshot, "snapshot", "", "clone this pushed snapshot (default: the remote's HEAD)")
	f.StringVar(&o.name, "name", "origin", "the remote's name in the new workspace")
	f.StringVar(&o.keyFile, "key-file", "", "the key of an encrypted remote")
	f.BoolVar(&o.force, "force", false, "clone even if the remote's HEAD is older than the newest this user has seen there (rolled back)")
	f.BoolVar(&o.asJSON, "json", false, "print JSON for machines")
	return c
}

func newPullCmd(e *env) *cobra.Command {
	var o remoteOpts
	c := &cobra.Command{
		Use:   "pull [NAME]",
		Short: "bring the remote's newest push in as a snapshot of the workspace and move the workspace to it, live if a daemon serves it (its snapshots and exec records stay; --force: replace local changes)",
		Args:  argRange(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			return runPull(c.Context(), e, o, optArg(args, 0))
		},
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store")
	f.StringVar(&o.snapshot, "snapshot", "", "pull this pushed snapshot (default: the remote's HEAD)")
	f.BoolVar(&o.force, "force", false, "replace changes made since the workspace last synced with the remote (they stay in its snapshots, if any hold them), and accept a HEAD older than the newest seen")
	f.BoolVar(&o.asJSON, "json", false, "print JSON for machines")
	return c
}

func newPublishCmd(e *env) *cobra.Command {
	var o remoteOpts
	c := &cobra.Command{
		Use:   "publish PATH",
		Short: "upload one file to the remote and print a presigned GET URL (--expires 1h)",
		Args:  argRange(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			return runPublish(c.Context(), e, o, args[0])
		},
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store (or its mountpoint)")
	f.StringVar(&o.name, "remote", "", "the remote to upload to (default: the only one, or origin)")
	f.DurationVar(&o.expires, "expires", time.Hour, "how long the link works (at most 168h)")
	return c
}

// optArg is args[i], or "" when there are fewer.
func optArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
