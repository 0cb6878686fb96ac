package main

import (
	"context"
	"errors"
	"fmt"

	"strings"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/wsrpc"
)

// cmdUndo is computerfs undo [-w WS] [EXEC-ID] [--force]: revert exactly
// the records one exec changed (fs.FS.Undo), through the workspace's
// daemon (live, the mount told), or on the store when none serves it.
func runUndo(ctx context.Context, e *env, o undoOptions, args []string) error {
	ws, force, asJSON := o.ws, o.force, o.json
	opts := fs.UndoOptions{Force: force}
	if len(args) == 1 {
		opts.Exec = args[0]
	}
	var err error
	var rec *fs.ExecRecord
	var rep *fs.RewindReport
	err = onWorkspace(ctx, e, ws, func(d *wsrpc.DaemonClient) error {
		rec, rep, err = d.Undo(ctx, opts)
		return err
	}, func(f *fs.FS) error {
		var err error
		rec, rep, _, err = f.Undo(ctx, opts)
		return err
	})
	if err != nil {
		var ce *fs.ConflictError
		if errors.As(err, &ce) || strings.Contains(err.Error(), "changed again since") {
			return codedError{err, exitConflict}
		}
		return err
	}
	if asJSON {
		if rep.Paths == nil {
			rep.Paths = []string{}
		}
		return printJSON(e, map[string]any{"exec": execRecordJSON(rec), "records": rep.Records, "paths": rep.Paths, "epoch": rep.Epoch, "seconds": rep.Seconds})
	}
	fmt.Fprintf(e.stdout, "undid exec %s (%s: %s): %d records in %.3fs\n", rec.ID, rec.Backend, oneLine(rec.Command, 60), rep.Records, rep.Seconds)
	for _, p := range rep.Paths {
		fmt.Fprintf(e.stdout, "  %s\n", p)
	}
	return nil
}

// cmdExecs is computerfs execs [-w WS] [--json] [-n N]: the exec records.
func runExecs(ctx context.Context, e *env, o execsOptions, args []string) error {
	ws, asJSON, n := o.ws, o.json, o.last
	var err error
	var recs []fs.ExecRecord
	err = onWorkspace(ctx, e, ws, func(d *wsrpc.DaemonClient) error {
		recs, err = d.Execs(ctx)
		return err
	}, func(f *fs.FS) error {
		var err error
		recs, err = f.Execs()
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 && len(recs) > n {
		recs = recs[len(recs)-n:]
	}
	if asJSON {
		out := []map[string]any{}
		for i := range recs {
			out = append(out, execRecordJSON(&recs[i]))
		}
		return printJSON(e, out)
	}
	for _, r := range recs {
		state := "no changes"
		switch {
		case r.Running:
			state = "running"
		case r.Undone != 0:
			state = "undone"
		case r.Interrupted && r.Changed():
			state = "interrupted, undoable"
		case r.Changed():
			state = fmt.Sprintf("%d changed, undoable", len(r.Paths))
		}
		fmt.Fprintf(e.stdout, "%-16s %s %-9s exit %-3d %-22s %s\n", r.ID, time.Unix(0, r.Start).Format("15:04:05"), r.Backend, r.Exit, state, oneLine(r.Command, 50))
	}
	return nil
}

func execRecordJSON(r *fs.ExecRecord) map[string]any {
	paths := r.Paths
	if paths == nil {
		paths = []string{}
	}
	m := map[string]any{
		"id": r.ID, "backend": r.Backend, "command": r.Command, "exit": r.Exit,
		"start": time.Unix(0, r.Start).UTC().Format(time.RFC3339Nano), "duration_ms": float64(r.End-r.Start) / 1e6,
		"before_epoch": r.Before, "after_epoch": r.After, "changed": paths, "changed_truncated": r.PathsTruncated,
		"undoable": r.Changed() && r.Undone == 0 && !r.Running, "undone": r.Undone != 0,
		"running": r.Running, "interrupted": r.Interrupted,
	}
	if r.Undone != 0 {
		m["undone_at"] = time.Unix(0, r.Undone).UTC().Format(time.RFC3339Nano)
	}
	if r.RootBefore != "" {
		m["root_before"] = r.RootBefore
	}
	if r.RootAfter != "" {
		m["root_after"] = r.RootAfter
	}
	return m
}

// onWorkspace runs online with the daemon serving ws (a store or its
// mountpoint), or, when none does, on the workspace opened for the call.
func onWorkspace(ctx context.Context, e *env, ws string, online func(*wsrpc.DaemonClient) error, offline func(*fs.FS) error) error {
	ws, err := workspaceArg(ws)
	if err != nil {
		return err
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeD()
		return online(d)
	}
	f, err := openHere(e, ws)
	if err != nil {
		return err
	}
	err = offline(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}
