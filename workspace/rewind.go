package workspace

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/fs"
)

// Restore puts the workspace back as snapshot name has it (only the files
// under paths, if any are given), in one commit, while it is in use
// (fs.FS.Restore); the kernel is told to drop what it cached of every
// entry and inode that changed.
func (w *WS) Restore(ctx context.Context, name string, paths []string) (*fs.RewindReport, error) {
	if err := w.wholeWritable("restore", name); err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := checkPath(p); err != nil {
			return nil, pathErr("restore", p, err)
		}
	}
	if w.rules != nil {
		// What the restore would change: the snapshot's differences from
		// the last commit (after what is pending is committed).
		if err := w.f.Sync(ctx); err != nil {
			return nil, pathErr("restore", name, err)
		}
		diff, err := fs.DiffSnapshots(w.f.Store(), name, "")
		if err != nil {
			return nil, pathErr("restore", name, err)
		}
		var changed []string
		for _, e := range diff {
			for _, p := range []string{e.Path, e.OldPath} {
				if p != "" && underAny(p, paths) {
					changed = append(changed, p)
				}
			}
		}
		if err := w.rewindAllowed("restore", name, changed); err != nil {
			return nil, err
		}
	}
	rep, touched, err := w.f.Restore(ctx, name, fs.RestoreOptions{Paths: paths})
	if err != nil {
		return nil, err
	}
	w.invalidateTouched(touched)
	return rep, nil
}

// Undo reverts the records one exec changed (fs.FS.Undo), and tells the
// kernel as Restore does.
func (w *WS) Undo(ctx context.Context, opts fs.UndoOptions) (*fs.ExecRecord, *fs.RewindReport, error) {
	if err := w.wholeWritable("undo", opts.Exec); err != nil {
		return nil, nil, err
	}
	if w.rules != nil {
		// What the undo would change: the paths its exec changed.
		recs, err := w.f.Execs()
		if err != nil {
			return nil, nil, pathErr("undo", opts.Exec, err)
		}
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if opts.Exec == "" && r.Changed() && r.Undone == 0 || opts.Exec != "" && r.ID == opts.Exec {
				if r.PathsTruncated || r.Interrupted {
					return nil, nil, pathErr("undo", r.ID, fmt.Errorf("the exec's paths are not all known, so the view's path rules cannot be checked: %w", syscall.EACCES))
				}
				if err := w.rewindAllowed("undo", r.ID, r.Paths); err != nil {
					return nil, nil, err
				}
				break
			}
		}
	}
	rec, rep, touched, err := w.f.Undo(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	w.invalidateTouched(touched)
	return rec, rep, nil
}

// Execs lists the execs the workspace keeps records of, oldest first.
func (w *WS) Execs() ([]fs.ExecRecord, error) { return w.f.Execs() }

// BeginExec and EndExec bracket an exec with checkpoints (fs.FS.BeginExec).
func (w *WS) BeginExec(ctx context.Context, id string) (*fs.ExecCheckpoint, error) {
	return w.f.BeginExec(ctx, id)
}

// EndExec: see BeginExec.
func (w *WS) EndExec(ctx context.Context, c *fs.ExecCheckpoint, rec fs.ExecRecord) (*fs.ExecRecord, error) {
	return w.f.EndExec(ctx, c, rec)
}

// underAny says whether p is one of roots or below one (every path when
// roots is empty).
func underAny(p string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		c, err := CleanPath(r)
		if err == nil && (c == "/" || p == c || strings.HasPrefix(p, c+"/")) {
			return true
		}
	}
	return false
}

// rewindAllowed refuses a restore or undo that would change a path the
// view's rules deny (EACCES) or make read-only (EROFS), naming none of
// the denied ones.
func (w *WS) rewindAllowed(op, what string, paths []string) error {
	for _, p := range paths {
		switch v, by := w.rules.Verdict(p); v {
		case Deny:
			return pathErr(op, what, fmt.Errorf("it would change a path the rules deny: %w", w.ruleErr(op, what, "", by, syscall.EACCES)))
		case ReadOnly:
			return pathErr(op, what, fmt.Errorf("it would change %s: %w", p, w.ruleErr(op, what, "", by, syscall.EROFS)))
		}
	}
	return nil
}

// wholeWritable refuses whole-workspace changes through a read-only view
// or one confined to a subtree.
func (w *WS) wholeWritable(op, what string) error {
	if w.opts.ReadOnly {
		return pathErr(op, what, syscall.EROFS)
	}
	if w.rootIno != fs.RootIno {
		return pathErr(op, what, syscall.EACCES)
	}
	return nil
}

func (w *WS) invalidateTouched(t *fs.Touched) {
	if t == nil {
		return
	}
	for _, e := range t.Entries {
		w.invalidate(e.Parent, e.Name, 0)
	}
	for _, ino := range t.Inodes {
		w.invalidate(0, "", ino)
	}
}
