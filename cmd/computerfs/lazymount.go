package main

import (
	"context"
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
	noClone, force                           bool
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
	c, err := remote.ClientFor(ctx, r, clientOptions())
	if err != nil {
		return err
	}
	m, err := c.Snapshot(ctx, o.snapshot, o.force)
	if err != nil {
		return transferError(err)
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
			_, err := remote.Clone(cctx, c, ws, remote.CloneOptions{Snapshot: o.snapshot, RemoteName: "origin", Remote: r, KeepSpool: true, Force: o.force})
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
