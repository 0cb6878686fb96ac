package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/wsrpc"
	"google.golang.org/grpc/codes"
)

// The maintenance commands (fsck, stats, gc, limit) work on a store no
// process holds by opening it, and on a store a daemon holds by asking
// that daemon over its control socket; the output is the same.

// workspaceArg is the store a command's WORKSPACE argument names: the
// store file itself, or a directory where a computerfs store is mounted.
func workspaceArg(arg string) (string, error) {
	fi, err := os.Stat(arg)
	if err != nil || !fi.IsDir() {
		return arg, nil // a store, or a missing one: the command says
	}
	if ws, ok := mountedStore(arg); ok {
		return ws, nil
	}
	return "", usageError{fmt.Errorf("%s is a directory, but no computerfs workspace is mounted there: give the store file (WS.cfs) or a mountpoint", arg)}
}

// daemonOf connects to the daemon serving ws; it returns nil, and no
// error, when no daemon does, and the caller opens the store itself.
func daemonOf(ctx context.Context, ws string) (*wsrpc.DaemonClient, func() error, error) {
	d, closeD, err := wsrpc.DialDaemon(ctx, ws)
	if errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return d, closeD, nil
}

func openStore(e *env, path string) (*chunkstore.Store, error) {
	if err := requireWorkspace(path); err != nil {
		return nil, err
	}
	return chunkstore.Open(path, chunkstore.Options{Logger: e.log, MustExist: true})
}

// onStore runs online with the daemon serving ws, or, when none does,
// offline on the store, opened for the call.
func onStore(ctx context.Context, e *env, ws string, online func(*wsrpc.DaemonClient) error, offline func(*chunkstore.Store) error) error {
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeD()
		return online(d)
	}
	st, err := openStore(e, ws)
	if err != nil {
		return err
	}
	defer st.Close()
	return offline(st)
}

func runFsck(ctx context.Context, e *env, o fsckOptions, args []string) error {
	repair, asJSON := o.repair, o.json
	ws, err := workspaceArg(args[0])
	if err != nil {
		return err
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	var rep *fs.CheckReport
	if d != nil {
		defer closeD()
		if repair {
			return fmt.Errorf("%s is in use by its daemon: --repair needs the store closed; unmount it (computerfs umount MOUNTPOINT) or stop the daemon, then run fsck --repair (fsck without --repair checks it while it is served)", ws)
		}
		bar := newProgress(e, "fsck", false)
		bar.set("through the daemon", 0, 0)
		rep, err = d.Check(ctx)
		bar.finish()
		if err != nil {
			return fmt.Errorf("check %s through its daemon: %w", ws, err)
		}
	} else if rep, err = fsckOffline(e, ws, repair, newProgress(e, "fsck", true)); err != nil {
		return err
	}
	if asJSON {
		printJSON(e, newFsckJSON(ws, rep))
	} else {
		fmt.Fprintf(e.stdout, "%s: %d inodes, %d entries, %d chunk references, %d chunks\n", ws, rep.Inodes, rep.Dirents, rep.FileChunks, rep.Chunks.Chunks)
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stdout, "damage: %s\n", p)
		}
		for _, r := range rep.Repaired {
			fmt.Fprintf(e.stdout, "repaired: %s\n", r)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stdout, "note: %s\n", n)
		}
		if rep.Clean() {
			fmt.Fprintln(e.stdout, "clean")
		}
	}
	if !rep.Clean() {
		if repair {
			return fmt.Errorf("%d problems found, %d repairs made: run fsck again to confirm", len(rep.Problems), len(rep.Repaired))
		}
		return fmt.Errorf("%d problems found (run with --repair to fix what is safe)", len(rep.Problems))
	}
	return nil
}

// fsckOffline opens the store and checks it, and repairs it if asked.
func fsckOffline(e *env, ws string, repair bool, bar *progress) (*fs.CheckReport, error) {
	defer bar.finish()
	// A store whose newest commit record may be damaged opens at the
	// previous commit: --repair accepts that, a plain fsck reports it
	// and checks the store read-only as bbolt would open it.
	if err := requireWorkspace(ws); err != nil {
		return nil, err
	}
	st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, AcceptRollback: repair})
	var rollback error
	if errors.Is(err, chunkstore.ErrRollback) {
		rollback = err
		st, err = chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true})
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rep, err := fs.CheckWith(st, fs.CheckOptions{Repair: repair, Progress: bar.set})
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", ws, err)
	}
	notes, problems, err := fs.CheckIntentLog(st)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", ws, err)
	}
	rep.Notes = append(rep.Notes, notes...)
	rep.Problems = append(rep.Problems, problems...)
	switch why := st.RolledBack(); {
	case rollback != nil:
		rep.Problems = append([]string{rollback.Error()}, rep.Problems...)
	case why != "" && repair:
		rep.Problems = append([]string{why}, rep.Problems...)
		// The repair's commit rewrote the invalid meta page.
		rep.Repaired = append(rep.Repaired, "accepted the rollback: the workspace is at the commit its valid meta page names")
	}
	return rep, nil
}

func runStats(ctx context.Context, e *env, o statsOptions, args []string) error {
	asJSON := o.json
	ws, err := workspaceArg(args[0])
	if err != nil {
		return err
	}
	var info *fs.WorkspaceInfo
	err = onStore(ctx, e, ws, func(d *wsrpc.DaemonClient) (err error) {
		if info, err = d.Info(ctx); err != nil {
			return fmt.Errorf("stats of %s through its daemon: %w", ws, err)
		}
		return nil
	}, func(st *chunkstore.Store) (err error) {
		info, err = fs.Info(st)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e, newStatsJSON(ws, info))
	}
	c := info.Chunks
	fmt.Fprintf(e.stdout, "workspace      %s\n", ws)
	fmt.Fprintf(e.stdout, "format         %d, chunk size %s\n", info.FormatVersion, size.Format(uint64(info.ChunkSize)))
	fmt.Fprintf(e.stdout, "limit          %s (%s used, %.1f%%)\n", size.Format(info.LimitBytes), size.Format(c.UniqueBytes), 100*float64(c.UniqueBytes)/float64(max(info.LimitBytes, 1)))
	fmt.Fprintf(e.stdout, "inodes         %d\n", info.Inodes)
	fmt.Fprintf(e.stdout, "chunks         %d\n", c.Chunks)
	fmt.Fprintf(e.stdout, "logical bytes  %s (file data, every reference)\n", size.Format(c.LogicalBytes))
	fmt.Fprintf(e.stdout, "unique bytes   %s (after deduplication, %.2fx)\n", size.Format(c.UniqueBytes), c.DedupRatio())
	fmt.Fprintf(e.stdout, "stored bytes   %s (after compression, %.2fx)\n", size.Format(c.StoredBytes), c.CompressionRatio())
	fmt.Fprintf(e.stdout, "file size      %s\n", size.Format(uint64(info.FileBytes)))
	return nil
}

func runGC(ctx context.Context, e *env, o gcOptions, args []string) error {
	asJSON := o.json
	ws, err := workspaceArg(args[0])
	if err != nil {
		return err
	}
	var rep *fs.GCReport
	err = onStore(ctx, e, ws, func(d *wsrpc.DaemonClient) (err error) {
		bar := newProgress(e, "gc", false)
		bar.set("through the daemon", 0, 0)
		rep, err = d.GC(ctx)
		bar.finish()
		if err != nil {
			return fmt.Errorf("gc %s through its daemon: %w", ws, err)
		}
		return nil
	}, func(st *chunkstore.Store) (err error) {
		bar := newProgress(e, "gc", false)
		rep, err = fs.GCWith(st, fs.GCOptions{Progress: bar.set})
		bar.finish()
		if err != nil {
			return fmt.Errorf("gc %s: %w", ws, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e, map[string]any{
			"chunks_freed": rep.ChunksFreed, "bytes_freed": rep.BytesFreed, "bodies_freed": rep.BodiesFreed,
			"body_bytes_freed": rep.BodyBytesFreed, "refs_corrected": rep.RefsCorrected,
		})
	}
	fmt.Fprintf(e.stdout, "freed %d unreferenced chunks (%s), %d unreachable bodies (%s); corrected %d reference counts\n",
		rep.ChunksFreed, size.Format(rep.BytesFreed), rep.BodiesFreed, size.Format(rep.BodyBytesFreed), rep.RefsCorrected)
	return nil
}

func runLimit(ctx context.Context, e *env, o limitOptions, args []string) error {
	asJSON := o.json
	ws, err := workspaceArg(args[0])
	if err != nil {
		return err
	}
	var set *uint64
	if len(args) == 2 {
		n, err := size.Parse(args[1])
		if err != nil {
			return usageError{err}
		}
		set = &n
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	var limit, used uint64
	if d != nil {
		defer closeD()
		limit, used, err = d.Limit(ctx, set)
		var ce *wsrpc.CallError
		if errors.As(err, &ce) && ce.Code == codes.InvalidArgument {
			return usageError{err}
		}
		if err != nil {
			return fmt.Errorf("limit of %s through its daemon: %w", ws, err)
		}
	} else if limit, used, err = limitOffline(e, ws, set); err != nil {
		return err
	}
	if asJSON {
		return printJSON(e, map[string]uint64{"limit_bytes": limit, "used_bytes": used})
	}
	fmt.Fprintf(e.stdout, "limit %s, used %s\n", size.Format(limit), size.Format(used))
	return nil
}

// limitOffline opens the workspace to read its limit, and set it if set
// is not nil.
func limitOffline(e *env, ws string, set *uint64) (limit, used uint64, err error) {
	st, err := openStore(e, ws)
	if err != nil {
		return 0, 0, err
	}
	st.Close()
	f, err := fs.Open(ws, fs.Options{Logger: e.log})
	if err != nil {
		return 0, 0, err
	}
	if set != nil {
		_, used := f.Limit()
		if err := wsrpc.CheckLimit(*set, used); err != nil {
			f.Close()
			return 0, 0, usageError{err}
		}
		f.SetLimit(*set)
	}
	limit, used = f.Limit()
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	return limit, used, nil
}
