package main

import "github.com/spf13/cobra"

// computerfs serve [WORKSPACE]: the daemon without a mount.
type serveOptions struct {
	daemon, create  bool
	readOnly        bool
	limit, memLimit string
	metrics         metricsFlags
	sync            syncFlags
	child           []string // as mountOptions.child
}

func newServeCmd(e *env) *cobra.Command {
	var o serveOptions
	c := &cobra.Command{
		Use:   "serve [WORKSPACE]",
		Short: "serve a workspace's file API on its control socket, without a mount (--create makes a missing one)",
		Args:  argRange(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.child = childArgs(c, args)
			return runServe(c.Context(), e, o, args)
		},
	}
	f := c.Flags()
	f.BoolVar(&o.daemon, "daemon", false, "run in the background; return once the socket is live")
	f.BoolVar(&o.create, "create", false, "create the workspace if it does not exist (as computerfs init), and say so on stderr")
	f.StringVar(&o.limit, "limit", "", "workspace size limit, e.g. 10G")
	f.BoolVar(&o.readOnly, "read-only", false, "refuse every change (EROFS) through the file API and the backends")
	f.StringVar(&o.memLimit, "memory-limit", defaultMemoryLimit, "soft limit of the daemon's Go heap; 0 for none")
	o.metrics.register(f)
	o.sync.register(f)
	return c
}
