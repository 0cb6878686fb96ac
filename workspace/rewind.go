package workspace

import (
	"context"
	"fmt"
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

// wholeWritable refuses whole-workspace changes through a read-only view
// or one confined to a subtree.
func (w *WS) wholeWritable(op, what string) error {
	if w.opts.ReadOnly {
		return pathErr(op, what, syscall.EROFS)
	}
	if w.rootIno != fs.RootIno {
		return pathErr(op, what, syscall.EACCES)
	}
	if w.rules != nil {
		// It would put back paths the rules deny or make read-only.
		return pathErr(op, what, fmt.Errorf("a view under path rules cannot change the whole workspace: %w", syscall.EACCES))
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
