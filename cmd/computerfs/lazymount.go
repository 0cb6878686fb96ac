package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/computerfs/computerfs/lazyfs"
	"github.com/computerfs/computerfs/remote"
)

// lazyMountOpts are the options of computerfs mount --remote.
type lazyMountOpts struct {
	url, endpoint, region, keyFile, snapshot string
	noClone                                  bool
}

// isLazyMount says whether mount's arguments ask for a lazy mount of a
// remote snapshot (--remote), which has its own flags.
func isLazyMount(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--remote" || a == "-remote" || len(a) > 9 && (a[:9] == "--remote=" || a[:8] == "-remote=") {
			return true
		}
	}
	return false
}

// cmdLazyMount is computerfs mount --remote s3://BUCKET/PREFIX
// [--snapshot S] WS MNT: the snapshot mounted at once, read-only, its
// chunks fetched on first read (lazyfs), while WS is cloned in the
// background from the same downloads.
func cmdLazyMount(ctx context.Context, e *env, args []string) error {
	var o lazyMountOpts
	fl := newFlags(e, "mount", "--remote s3://BUCKET/PREFIX WS MOUNTPOINT", "mount a pushed snapshot at once, read-only, fetching its chunks on first read, while WS is cloned in the background")
	fl.StringVar(&o.url, "remote", "", "the remote: s3://BUCKET/PREFIX")
	fl.StringVar(&o.endpoint, "endpoint", "", "the S3 endpoint URL (default: AWS)")
	fl.StringVar(&o.region, "region", "", "the region")
	fl.StringVar(&o.keyFile, "key-file", "", "the key of an encrypted remote")
	fl.StringVar(&o.snapshot, "snapshot", "", "the pushed snapshot (default: the remote's HEAD)")
	fl.BoolVar(&o.noClone, "no-clone", false, "do not clone WS in the background: only what is read is fetched")
	fl.Bool("create", true, "accepted for symmetry with mount: a lazy mount always creates WS")
	if err := fl.Parse(interleave(fl, args)); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fl.NArg() != 2 {
		fl.Usage()
		return exitCode(2)
	}
	return runLazyMount(ctx, e, o, fl.Arg(0), fl.Arg(1))
}

func runLazyMount(ctx context.Context, e *env, o lazyMountOpts, ws, mnt string) error {
	ws, err := filepath.Abs(ws)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(ws); err == nil {
		return fmt.Errorf("%s exists: a lazy mount clones into a new workspace (mount it without --remote)", ws)
	}
	r := remote.Remote{URL: o.url, Endpoint: o.endpoint, Region: o.region}
	if o.keyFile != "" {
		if r.KeyFile, err = filepath.Abs(o.keyFile); err != nil {
			return err
		}
	}
	c, err := remote.ClientFor(ctx, r, remote.ClientOptions{})
	if err != nil {
		return err
	}
	m, err := c.Snapshot(ctx, o.snapshot)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return err
	}
	spool := remote.SpoolDir(ws)
	lm, err := lazyfs.New(m, c, mnt, lazyfs.Options{Spool: spool, Logger: e.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "computerfs: snapshot %s of %s mounted at %s (read-only; chunks fetched on first read)\n", m.Snapshot, o.url, mnt)
	cctx, cancel := context.WithCancel(ctx)
	cloned := make(chan error, 1)
	if o.noClone {
		cloned <- nil
	} else {
		go func() {
			_, err := remote.Clone(cctx, c, ws, remote.CloneOptions{Snapshot: o.snapshot, RemoteName: "origin", Remote: r, KeepSpool: true})
			if err == nil {
				fmt.Fprintf(e.stdout, "computerfs: cloned into %s (root %s verified); unmount and mount it for a writable workspace\n", ws, m.Root)
			} else if cctx.Err() == nil {
				fmt.Fprintf(e.stderr, "computerfs: background clone into %s failed: %v\n", ws, err)
			}
			cloned <- err
		}()
	}
	unmounted := make(chan struct{})
	go func() { lm.Wait(); close(unmounted) }()
	select {
	case <-sigs:
	case <-unmounted:
	case <-ctx.Done():
	}
	cancel()
	cerr := <-cloned
	uerr := lm.Unmount()
	if uerr == nil {
		<-unmounted
	}
	if cerr == nil && !o.noClone {
		os.RemoveAll(spool)
	}
	if uerr != nil {
		select {
		case <-unmounted:
			return nil // unmounted from outside
		default:
		}
		return fmt.Errorf("unmount %s: %w", mnt, uerr)
	}
	return nil
}
