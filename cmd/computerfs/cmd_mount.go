package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// computerfs mount [WORKSPACE [MOUNTPOINT]]: mount and serve a workspace.
type mountOptions struct {
	daemon, create, debug       bool
	readOnly, noExec            bool
	limit, allowOther, memLimit string
	metrics                     metricsFlags
	// child is the command line a --daemon child runs: this one without
	// --daemon.
	child []string
}

func newMountCmd(e *env) *cobra.Command {
	var o mountOptions
	c := &cobra.Command{
		Use:   "mount [WORKSPACE [MOUNTPOINT]]",
		Short: "mount a workspace (--create makes a missing one) and serve it until unmounted",
		Args:  argRange(0, 2),
		RunE: func(c *cobra.Command, args []string) error {
			o.child = childArgs(c, args)
			return runMount(c.Context(), e, o, args)
		},
	}
	f := c.Flags()
	f.BoolVar(&o.daemon, "daemon", false, "run in the background; return once the mount is live")
	f.BoolVar(&o.create, "create", false, "create the workspace if it does not exist (as computerfs init), and say so on stderr")
	f.StringVar(&o.limit, "limit", "", "workspace size limit, e.g. 10G (set at creation; changes an existing one)")
	f.BoolVar(&o.debug, "debug", false, "log every FUSE request")
	f.BoolVar(&o.readOnly, "read-only", false, "refuse every change (EROFS) through the mount, the file API and the backends (fstab: ro)")
	f.BoolVar(&o.noExec, "noexec", false, "mount noexec: files in the mount cannot be executed from it (fstab: noexec)")
	f.StringVar(&o.allowOther, "allow-other", "auto", "let other users use the mount, with kernel permission checks (allow_other, default_permissions): yes, no or auto; no serves the mounting user alone and saves a round trip after every directory change; auto (the default) is yes when the container backend is installed (its containers' root is an unprivileged host uid in a user namespace), else no")
	f.StringVar(&o.memLimit, "memory-limit", defaultMemoryLimit, "soft limit of the daemon's Go heap (GC works harder near it); 0 for none")
	o.metrics.register(f)
	return c
}

// childArgs is c's command line as parsed, without --daemon: the flags
// set, each as --name=value, then "--" and the positional arguments.
func childArgs(c *cobra.Command, args []string) []string {
	out := []string{c.Name()}
	c.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "daemon" {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return append(append(out, "--"), args...)
}
