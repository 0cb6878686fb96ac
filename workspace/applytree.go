package workspace

import (
	"context"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
)

// ApplyTree moves the live tree to a pulled one (fs.FS.ApplyTree: one
// commit, the workspace's snapshots and exec records kept) and tells
// the kernel, as Restore does, to drop what it cached of every entry and
// inode that changed. A pull is an operator's command, as the offline
// commands are: the path rules, which bound what the doors change, are
// not asked; a read-only workspace or a view of a subtree refuses it.
func (w *WS) ApplyTree(ctx context.Context, recs []fs.TreeRecord, chunk func(chunkstore.ID) ([]byte, error), opts fs.ApplyTreeOptions) (*fs.RewindReport, fs.Snapshot, error) {
	if err := w.wholeWritable("pull", opts.Snapshot); err != nil {
		return nil, fs.Snapshot{}, err
	}
	rep, touched, snap, err := w.f.ApplyTree(ctx, recs, chunk, opts)
	if err != nil {
		return nil, fs.Snapshot{}, err
	}
	w.invalidateTouched(touched)
	return rep, snap, nil
}
