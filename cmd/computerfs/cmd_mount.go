package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// computerfs mount [WORKSPACE [MOUNTPOINT]]: mount and serve a workspace.
type mountOptions struct {
	daemon, create, debug       bool
	readOnly, noExec            bool
	limit, allowOther, memLimit string
	metrics                     metricsFlags
	sync                        syncFlags
	lazy                        lazyMountOpts // --remote: a lazy mount (lazymount.go)
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
			if o.lazy.url != "" {
				if len(args) != 2 {
					c.Usage()
					return exitCode(exitUsage)
				}
				return runLazyMount(c.Context(), e, o.lazy, args[0], args[1])
			}
			if o.lazy.force {
				return usageError{fmt.Errorf("--force applies to mount --remote (a rolled-back remote ref)")}
			}
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
	o.sync.register(f)
	// mount --remote s3://BUCKET/PREFIX WS MOUNTPOINT: a pushed snapshot
	// mounted at once, read-only, its chunks fetched on first read, while
	// WS is cloned in the background.
	f.StringVar(&o.lazy.url, "remote", "", "mount a pushed snapshot of this remote (s3://BUCKET/PREFIX) at once, read-only, fetching chunks on first read, while WORKSPACE is cloned in the background")
	f.StringVar(&o.lazy.endpoint, "endpoint", "", "--remote: the S3 endpoint URL (default: AWS)")
	f.StringVar(&o.lazy.region, "region", "", "--remote: the region")
	f.StringVar(&o.lazy.keyFile, "key-file", "", "--remote: the key of an encrypted remote")
	f.StringVar(&o.lazy.snapshot, "snapshot", "", "--remote: the pushed snapshot (default: the remote's HEAD)")
	f.BoolVar(&o.lazy.noClone, "no-clone", false, "--remote: do not clone WORKSPACE in the background: only what is read is fetched")
	f.BoolVar(&o.lazy.force, "force", false, "--remote: mount even if the remote's HEAD is older than the newest seen there, or the snapshot's ref is not the one seen (rolled back)")
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
