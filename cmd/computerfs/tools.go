package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
)

func oneWorkspace(e *env, name string, args []string, setup func(*flag.FlagSet)) (string, error) {
	fl, err := parse(e, name, args, setup)
	if err != nil {
		return "", err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return "", exitCode(2)
	}
	return fl.Arg(0), nil
}

func openStore(e *env, path string) (*chunkstore.Store, error) {
	return chunkstore.Open(path, chunkstore.Options{Logger: e.log, MustExist: true})
}

func cmdFsck(ctx context.Context, e *env, args []string) error {
	var repair, asJSON bool
	ws, err := oneWorkspace(e, "fsck", args, func(fl *flag.FlagSet) {
		fl.BoolVar(&repair, "repair", false, "fix what can be fixed safely")
		fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	})
	if err != nil {
		return err
	}
	// A store whose newest commit record may be damaged opens at the
	// previous commit: --repair accepts that, a plain fsck reports it
	// and checks the store read-only as bbolt would open it.
	st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, AcceptRollback: repair})
	var rollback error
	if errors.Is(err, chunkstore.ErrRollback) {
		rollback = err
		st, err = chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := fs.Check(st, repair)
	if err != nil {
		return fmt.Errorf("check %s: %w", ws, err)
	}
	switch why := st.RolledBack(); {
	case rollback != nil:
		rep.Problems = append([]string{rollback.Error()}, rep.Problems...)
	case why != "" && repair:
		rep.Problems = append([]string{why}, rep.Problems...)
		// The repair's commit rewrote the invalid meta page.
		rep.Repaired = append(rep.Repaired, "accepted the rollback: the workspace is at the commit its valid meta page names")
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Fprintf(e.stdout, "%s: %d inodes, %d entries, %d chunk references, %d chunks\n", ws, rep.Inodes, rep.Dirents, rep.FileChunks, rep.Chunks.Chunks)
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stdout, "damage: %s\n", p)
		}
		for _, r := range rep.Repaired {
			fmt.Fprintf(e.stdout, "repaired: %s\n", r)
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

func cmdStats(ctx context.Context, e *env, args []string) error {
	var asJSON bool
	ws, err := oneWorkspace(e, "stats", args, func(fl *flag.FlagSet) {
		fl.BoolVar(&asJSON, "json", false, "print as JSON")
	})
	if err != nil {
		return err
	}
	st, err := openStore(e, ws)
	if err != nil {
		return err
	}
	defer st.Close()
	info, err := fs.Info(st)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
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

func cmdGC(ctx context.Context, e *env, args []string) error {
	ws, err := oneWorkspace(e, "gc", args, nil)
	if err != nil {
		return err
	}
	st, err := openStore(e, ws)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := fs.GC(st)
	if err != nil {
		return fmt.Errorf("gc %s: %w", ws, err)
	}
	fmt.Fprintf(e.stdout, "freed %d unreferenced chunks (%s), %d unreachable bodies (%s); corrected %d reference counts\n",
		rep.ChunksFreed, size.Format(rep.BytesFreed), rep.BodiesFreed, size.Format(rep.BodyBytesFreed), rep.RefsCorrected)
	return nil
}

func cmdLimit(ctx context.Context, e *env, args []string) error {
	fl, err := parse(e, "limit", args, nil)
	if err != nil {
		return err
	}
	if fl.NArg() < 1 || fl.NArg() > 2 {
		fl.Usage()
		return exitCode(2)
	}
	ws := fl.Arg(0)
	st, err := openStore(e, ws)
	if err != nil {
		return err
	}
	st.Close()
	f, err := fs.Open(ws, fs.Options{Logger: e.log})
	if err != nil {
		return err
	}
	if fl.NArg() == 2 {
		limit, err := size.Parse(fl.Arg(1))
		if err == nil {
			_, used := f.Limit()
			err = checkLimit(limit, used)
		}
		if err != nil {
			f.Close()
			return usageError{err}
		}
		f.SetLimit(limit)
	}
	limit, used := f.Limit()
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "limit %s, used %s\n", size.Format(limit), size.Format(used))
	return nil
}

// checkLimit refuses a size limit the workspace is already over: every
// write would fail with ENOSPC, and 0 is no way to say "unlimited".
func checkLimit(limit, used uint64) error {
	if limit < used || limit == 0 {
		return fmt.Errorf("a limit of %s is below the %s the workspace already stores", size.Format(limit), size.Format(used))
	}
	return nil
}
