package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// ApplyTree moves a workspace's live tree to a tree exported from
// another store (a pull: package remote), keeping its history: the
// tree is written as a rewind is (rewind.go), in one commit, with the
// versions its snapshots and exec records pin kept, and named as a
// snapshot in that same commit. It must not touch anything but the
// tree buckets, the chunks the tree names, the snapshot it names and
// the inode allocator.

// ApplyTreeOptions say what ApplyTree checks and names.
type ApplyTreeOptions struct {
	// Root is the root identifier the records sum to; checked before
	// anything is written, and against the store's root in the commit.
	Root versions.Root
	// Snapshot names the new state (a snapshot taken in the same
	// commit); it must not exist.
	Snapshot string
	// BatchBytes bounds the chunk bytes put per transaction before the
	// commit that applies the tree (64 MiB if 0).
	BatchBytes int
	// Batched, if not nil, is called after each batch's commit with the
	// batches committed and the chunks left (progress; tests stop a
	// pull between batches with it).
	Batched func(batches, left int)
}

// ApplyTree puts the tree of recs (ExportSnapshot's records, possibly of
// another store, of the same chunk size) in place of the served
// workspace's, while it is in use, as Restore does: every record that
// differs is replaced, every record not in recs removed, in one commit
// that also takes snapshot opts.Snapshot of the result. The workspace's
// snapshots and exec records are kept (the versions they pin survive).
// chunk gives the plaintext of a chunk the store lacks, verified against
// its ID. Chunks are first put in the store in batches, held by a
// reference each that the applying commit drops, recorded in the
// batch's commit (holds.go): a pull killed between leaves a consistent
// store, whose next open (or pull) releases them.
func (f *FS) ApplyTree(ctx context.Context, recs []TreeRecord, chunk func(chunkstore.ID) ([]byte, error), opts ApplyTreeOptions) (*RewindReport, *Touched, Snapshot, error) {
	fail := func(err error) (*RewindReport, *Touched, Snapshot, error) {
		return nil, nil, Snapshot{}, fmt.Errorf("apply tree: %w", err)
	}
	if f.fork != nil {
		return fail(ErrInFork)
	}
	if err := checkSnapshotName(opts.Snapshot); err != nil {
		return fail(err)
	}
	root, err := TreeRoot(recs)
	if err != nil {
		return fail(err)
	}
	if root != opts.Root {
		return fail(fmt.Errorf("the records sum to root %s, not %s: %w", root, opts.Root, ErrRootMismatch))
	}
	if err := CheckTree(recs, f.store.ChunkSize()); err != nil {
		return fail(err)
	}
	if opts.BatchBytes == 0 {
		opts.BatchBytes = 64 << 20
	}
	var maxIno Ino
	var ids []chunkstore.ID
	seen := make(map[chunkstore.ID]bool)
	for _, r := range recs {
		if treeBucket(r.Bucket) == nil || len(r.Key) < 8 {
			return fail(fmt.Errorf("record of bucket %d, key %x: %w", r.Bucket, r.Key, errBadRecord))
		}
		maxIno = max(maxIno, keyIno(r.Key))
		if r.Bucket == RecChunks {
			id, ok := r.Chunk()
			if !ok {
				return fail(fmt.Errorf("chunk-list record %x: %w", r.Key, errBadRecord))
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	f.mu.Lock()
	limit := f.inoLimit
	f.mu.Unlock()
	if maxIno >= limit {
		return fail(fmt.Errorf("inode %d is past this workspace's inode range (%d): %w", maxIno, limit, errBadRecord))
	}

	// Every chunk the tree names is held by one reference of ours until
	// the applying commit: a chunk the store has now could otherwise go
	// before that commit refers to it. Each batch records what it holds
	// in the same transaction (holds.go), so that a pull killed before
	// its commit leaves nothing that fsck counts wrong, and the next
	// open releases it. Holds of pulls that died are released first.
	if h, n, err := f.releaseDeadHolds(); err != nil {
		f.log.Warn("apply tree: chunks held by a pull that did not finish stay held", "err", err)
	} else if h > 0 {
		f.log.Info("apply tree: released the chunks held by pulls that did not finish", "pulls", h, "chunks", n)
	}
	hold := f.newHold()
	defer f.endHold(hold)
	var held []chunkstore.ID
	release := func() {
		if len(held) == 0 {
			return
		}
		if err := f.update(func(tx *chunkstore.Tx) error {
			for _, id := range held {
				if err := tx.Unref(id); err != nil && !errors.Is(err, chunkstore.ErrNotFound) {
					return err
				}
			}
			return dropHold(tx, hold)
		}); err != nil {
			f.log.Warn("apply tree: release the chunks held (the next open or pull releases them)", "err", err)
		}
	}
	var batchNo uint32
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			release()
			return fail(err)
		}
		var batch []chunkstore.ID
		var data [][]byte
		size := 0
		for len(ids) > 0 && size < opts.BatchBytes && len(batch) < holdIDs {
			id := ids[0]
			ids = ids[1:]
			var has bool
			if err := f.view(func(tx *chunkstore.Tx) error { var err error; has, err = tx.Has(id); return err }); err != nil {
				release()
				return fail(err)
			}
			var d []byte
			if !has {
				if d, err = chunk(id); err != nil {
					release()
					return fail(fmt.Errorf("chunk %s: %w", id, err))
				}
				if chunkstore.Sum(d) != id {
					release()
					return fail(fmt.Errorf("chunk %s: content does not match its ID: %w", id, chunkstore.ErrCorrupt))
				}
				size += len(d)
			}
			batch = append(batch, id)
			data = append(data, d)
		}
		err := f.update(func(tx *chunkstore.Tx) error {
			for i, id := range batch {
				if data[i] != nil {
					p := chunkstore.Prepare(data[i], nil)
					if _, err := tx.Put(&p); err != nil {
						return err
					}
				} else if err := tx.Ref(id); errors.Is(err, chunkstore.ErrNotFound) {
					return fmt.Errorf("chunk %s went meanwhile: %w", id, syscall.EAGAIN)
				} else if err != nil {
					return err
				}
			}
			return putHold(tx, hold, batchNo, batch)
		})
		if err != nil {
			release()
			return fail(err)
		}
		held = append(held, batch...)
		batchNo++
		if opts.Batched != nil {
			opts.Batched(int(batchNo), len(ids))
		}
	}

	want := make(map[string][]byte, len(recs))
	for _, r := range recs {
		want[string([]byte{r.Bucket})+string(r.Key)] = r.Value
	}
	var snap Snapshot
	rep, touched, err := f.rewindLiveThen(ctx, func(tx *chunkstore.Tx) (*rewindPlan, error) {
		plan := &rewindPlan{}
		for i, b := range treeBuckets {
			id := byte(i + 1)
			if err := tx.Sealed(b).ForEach(func(k, _ []byte) error {
				if _, ok := want[string([]byte{id})+string(k)]; !ok {
					plan.targets = append(plan.targets, rewindTarget{bucket: b, key: bytes.Clone(k)})
				}
				return nil
			}); err != nil {
				return nil, err
			}
		}
		for _, r := range recs {
			plan.targets = append(plan.targets, rewindTarget{bucket: treeBucket(r.Bucket), key: r.Key, then: r.Value})
		}
		return plan, nil
	}, func(tx *chunkstore.Tx) error {
		for _, id := range held {
			if err := tx.Unref(id); err != nil {
				return fmt.Errorf("release chunk %s: %w", id, err)
			}
		}
		if err := dropHold(tx, hold); err != nil {
			return err
		}
		got, _, err := tx.Root()
		if err != nil {
			return err
		}
		if got != opts.Root {
			return fmt.Errorf("the workspace's root would be %s, not %s: %w", got, opts.Root, ErrRootMismatch)
		}
		meta := tx.Sealed(bucketMeta)
		if next := maxIno + 1; next > f.nextIno {
			// mu is held (rewindLiveThen): the next inode made is past
			// every inode of the tree.
			f.nextIno = next
			if err := meta.Put(keyNextIno, inoKey(next)); err != nil {
				return err
			}
		}
		ev, err := meta.Get(keyEpoch)
		if err != nil {
			return err
		}
		last, _ := u64(ev)
		sb := tx.Sealed(bucketSnapshots)
		if v, err := sb.Get([]byte(opts.Snapshot)); err != nil {
			return err
		} else if v != nil {
			return fmt.Errorf("snapshot %s: %w", opts.Snapshot, ErrSnapshotExists)
		}
		snap = Snapshot{Name: opts.Snapshot, Epoch: last + 1, Created: time.Now().UnixNano(), Root: got}
		if err := sb.Put([]byte(snap.Name), encodeSnapshot(snap)); err != nil {
			return err
		}
		return tx.Bucket(versions.BucketSnapEpochs).Put(append(binary.BigEndian.AppendUint64(nil, snap.Epoch), snap.Name...), nil)
	})
	if err != nil {
		release()
		return fail(err)
	}
	if snap.Epoch != rep.Epoch {
		// Not reached: post runs in the rewind's commit, whose epoch is
		// the last plus one.
		return fail(fmt.Errorf("snapshot %s at epoch %d, the commit was %d", snap.Name, snap.Epoch, rep.Epoch))
	}
	return rep, touched, snap, nil
}
