package main

import (
	"context"
	"fmt"

	"strings"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// cmdSnapshot is computerfs snapshot create|list|rm|restore|diff WS [NAME [OTHER]]:
// named, read-only states of a workspace (fs/SNAPSHOTS.md). Each goes
// through the daemon of a served workspace (restore live, in one
// commit), or opens the store itself when none serves it. diff --patch adds
// unified diffs of text files.
func runSnapshot(ctx context.Context, e *env, o snapshotOptions, args []string) error {
	asJSON, patch, maxPatch := o.json, o.patch, o.maxPatch
	op := args[0]
	ws, err := workspaceArg(args[1])
	if err != nil {
		return err
	}
	name := ""
	if len(args) > 2 {
		name = args[2]
	}
	if err := requireWorkspace(ws); err != nil {
		return err
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeD()
	}
	switch op {
	case "create":
		var sn fs.Snapshot
		if d != nil {
			r, err := d.Snapshot(ctx, "create", name, "")
			if err != nil {
				return err
			}
			s := r.Snapshots[0]
			sn = snapshotOf(s)
		} else {
			f, err := fs.Open(ws, fs.Options{Logger: e.log})
			if err != nil {
				return err
			}
			sn, err = f.CreateSnapshot(ctx, name)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		if asJSON {
			printJSON(e, snapshotJSON(sn))
		} else {
			fmt.Fprintf(e.stdout, "snapshot %s: commit %d, root %s\n", sn.Name, sn.Epoch, sn.Root)
		}
	case "list":
		var list []fs.Snapshot
		if d != nil {
			r, err := d.Snapshot(ctx, "list", "", "")
			if err != nil {
				return err
			}
			for _, s := range r.Snapshots {
				list = append(list, snapshotOf(s))
			}
		} else {
			st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true})
			if err != nil {
				return err
			}
			list, err = fs.ListSnapshots(st)
			st.Close()
			if err != nil {
				return err
			}
		}
		if asJSON {
			out := []map[string]any{}
			for _, s := range list {
				out = append(out, snapshotJSON(s))
			}
			printJSON(e, out)
			return nil
		}
		for _, s := range list {
			root := "-" // taken before roots
			if !s.Root.IsZero() {
				root = s.Root.String()
			}
			fmt.Fprintf(e.stdout, "%-24s commit %-8d %s root %s\n", s.Name, s.Epoch, time.Unix(0, s.Created).Format(time.RFC3339), root)
		}
	case "rm":
		var versions, chunks int64
		if d != nil {
			r, err := d.Snapshot(ctx, "delete", name, "")
			if err != nil {
				return err
			}
			versions, chunks = r.VersionsDropped, r.ChunksReleased
		} else {
			st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true})
			if err != nil {
				return err
			}
			rep, err := fs.DeleteSnapshot(st, name)
			st.Close()
			if err != nil {
				return err
			}
			versions, chunks = int64(rep.Versions), int64(rep.Chunks)
		}
		fmt.Fprintf(e.stdout, "deleted snapshot %s: %d versions dropped, %d chunk references released\n", name, versions, chunks)
	case "diff":
		other := ""
		if len(args) > 3 {
			other = args[3]
		}
		var diff []fs.DiffEntry
		if d != nil {
			diff, err = d.SnapshotDiff(ctx, name, other, patch, maxPatch)
			if err != nil {
				return err
			}
		} else {
			st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true})
			if err != nil {
				return err
			}
			diff, err = fs.DiffSnapshotsWith(st, name, other, fs.DiffOptions{Patch: patch, MaxFileBytes: maxPatch})
			st.Close()
			if err != nil {
				return err
			}
		}
		if asJSON {
			if diff == nil {
				diff = []fs.DiffEntry{}
			}
			printJSON(e, diff)
			return nil
		}
		for _, x := range diff {
			switch x.Kind {
			case "added":
				fmt.Fprintf(e.stdout, "A %s (%d bytes)\n", x.Path, x.Size)
			case "deleted":
				fmt.Fprintf(e.stdout, "D %s (%d bytes)\n", x.OldPath, x.OldSize)
			case "modified":
				fmt.Fprintf(e.stdout, "M %s (%d -> %d bytes)\n", x.Path, x.OldSize, x.Size)
			case "renamed":
				fmt.Fprintf(e.stdout, "R %s -> %s (%d -> %d bytes)\n", x.OldPath, x.Path, x.OldSize, x.Size)
			}
			fmt.Fprint(e.stdout, x.Patch)
		}
	case "restore":
		paths := args[3:]
		var rep *fs.RewindReport
		if d != nil {
			// Live: the daemon puts the records back in one commit and
			// the mount forgets what it cached of them.
			if rep, err = d.Restore(ctx, name, paths); err != nil {
				return err
			}
		} else {
			st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true})
			if err != nil {
				return err
			}
			r, err := fs.RestoreSnapshotPaths(st, name, paths)
			if cerr := st.Close(); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			rep = &fs.RewindReport{Records: r.Records, Seconds: r.Seconds}
		}
		if asJSON {
			if rep.Paths == nil {
				rep.Paths = []string{}
			}
			printJSON(e, rep)
			return nil
		}
		what := "snapshot " + name
		if len(paths) > 0 {
			what = fmt.Sprintf("snapshot %s (%s)", name, strings.Join(paths, ", "))
		}
		fmt.Fprintf(e.stdout, "restored %s to %s: %d records in %.3fs\n", ws, what, rep.Records, rep.Seconds)
		for _, p := range rep.Paths {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
	}
	return nil
}

// snapshotJSON is a snapshot for machines: "root" is its root identifier
// in hex (absent for a snapshot from before roots).
func snapshotJSON(s fs.Snapshot) map[string]any {
	m := map[string]any{"name": s.Name, "epoch": s.Epoch, "created": time.Unix(0, s.Created).UTC().Format(time.RFC3339Nano)}
	if !s.Root.IsZero() {
		m["root"] = s.Root.String()
	}
	return m
}

// snapshotOf is a snapshot as the daemon describes it.
func snapshotOf(s *pb.SnapshotInfo) fs.Snapshot {
	sn := fs.Snapshot{Name: s.Name, Epoch: s.Epoch, Created: s.CreatedUnixNs}
	copy(sn.Root[:], s.Root) // none, or 32 bytes
	return sn
}
