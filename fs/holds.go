package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
)

// Holds: the references a pull (ApplyTree) keeps on the chunks of the
// tree it brings in, from the batch that puts them until the commit
// that applies the tree. Each batch writes, in its own transaction, a
// record naming the chunks it gave a reference to; the applying commit
// drops the records and the references together (the tree's chunk
// lists then hold them), and so does a pull that fails. A pull killed
// between leaves its records, which the next open of the workspace
// (and the next pull) releases: the count of every chunk they name is
// set to the references the store's records hold, recounted, never
// lowered by subtraction (a format-8 binary from before holds, which
// sees no holds bucket in its counts, may have "corrected" the counts
// with fsck --repair or gc meanwhile). fsck and gc count the records
// as references while they exist, so a store is consistent at every
// point of a pull, killed or not.
//
// Bucket holds (sealed): key hold(8) ‖ batch(4), hold the pull's start
// time in nanoseconds (unique per FS), batch from 0; value the 32-byte
// IDs of the chunks the batch holds, at least one. Made by the first
// batch, deleted with the last record (chunkstore/FORMAT.md).

var bucketHolds = []byte("holds")

// holdIDs bounds the chunk IDs one batch record names (256 KiB).
const holdIDs = 8192

func holdKey(hold uint64, batch uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(make([]byte, 0, 12), hold), batch)
}

// newHold numbers a pull's holds (its start time, unique among the FS's
// holds) and marks it live: releaseDeadHolds leaves it.
func (f *FS) newHold() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.liveHolds == nil {
		f.liveHolds = make(map[uint64]bool)
	}
	h := max(uint64(time.Now().UnixNano()), f.lastHold+1)
	f.lastHold = h
	f.liveHolds[h] = true
	return h
}

func (f *FS) endHold(h uint64) {
	f.mu.Lock()
	delete(f.liveHolds, h)
	f.mu.Unlock()
}

// putHold records batch of hold as holding ids (one reference each,
// given in the same transaction).
func putHold(tx *chunkstore.Tx, hold uint64, batch uint32, ids []chunkstore.ID) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.CreateBucketIfNotExists(bucketHolds); err != nil {
		return err
	}
	v := make([]byte, 0, len(ids)*chunkstore.IDSize)
	for _, id := range ids {
		v = append(v, id[:]...)
	}
	return tx.Sealed(bucketHolds).Put(holdKey(hold, batch), v)
}

// dropHold deletes the records of hold, and the bucket with its last
// record. The references they held are the caller's to drop.
func dropHold(tx *chunkstore.Tx, hold uint64) error {
	b := tx.Sealed(bucketHolds)
	if !b.Exists() {
		return nil
	}
	prefix := binary.BigEndian.AppendUint64(nil, hold)
	var keys [][]byte
	c := b.Raw().Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return dropHoldsBucketIfEmpty(tx)
}

func dropHoldsBucketIfEmpty(tx *chunkstore.Tx) error {
	b := tx.Bucket(bucketHolds)
	if b == nil {
		return nil
	}
	if k, _ := b.Cursor().First(); k != nil {
		return nil
	}
	return tx.DeleteBucket(bucketHolds)
}

// holdRecord is one record of the holds bucket, decoded.
type holdRecord struct {
	Hold  uint64
	Batch uint32
	IDs   []chunkstore.ID
}

// decodeHold decodes a holds record's key and (verified) value.
func decodeHold(k, v []byte) (holdRecord, error) {
	if len(k) != 12 {
		return holdRecord{}, fmt.Errorf("pull hold key %x: %w", k, errBadRecord)
	}
	r := holdRecord{Hold: binary.BigEndian.Uint64(k), Batch: binary.BigEndian.Uint32(k[8:])}
	if len(v) == 0 || len(v)%chunkstore.IDSize != 0 || len(v)/chunkstore.IDSize > holdIDs {
		return r, fmt.Errorf("%s: %d bytes, not a list of chunk IDs: %w", r.name(), len(v), errBadRecord)
	}
	for i := 0; i < len(v); i += chunkstore.IDSize {
		r.IDs = append(r.IDs, chunkstore.ID(v[i:i+chunkstore.IDSize]))
	}
	return r, nil
}

func (r holdRecord) name() string {
	return fmt.Sprintf("pull hold %s batch %d", time.Unix(0, int64(r.Hold)).UTC().Format(time.RFC3339Nano), r.Batch)
}

// errHoldRefs is the cause of a holds record whose seal or shape is
// damaged: the references it holds cannot be told.
var errHoldRefs = errors.New("damaged pull hold records")

// holdChunkRefs calls fn with every chunk every holds record names (one
// reference each). Damaged records are passed over and reported at the
// end (errHoldRefs).
func holdChunkRefs(tx *chunkstore.Tx, fn func(r holdRecord, id chunkstore.ID)) error {
	b := tx.Sealed(bucketHolds)
	if !b.Exists() {
		return nil
	}
	var damaged []string
	err := b.Walk(func(k, v []byte, damage error) error {
		if damage != nil {
			damaged = append(damaged, fmt.Sprintf("%s: %v", sealed.KeyString(k), damage))
			return nil
		}
		r, err := decodeHold(k, v)
		if err != nil {
			damaged = append(damaged, err.Error())
			return nil
		}
		for _, id := range r.IDs {
			fn(r, id)
		}
		return nil
	})
	if err == nil && len(damaged) > 0 {
		err = fmt.Errorf("%w: %v", errHoldRefs, damaged)
	}
	return err
}

// releaseDeadHolds releases the holds of pulls that are not running
// (all but the FS's live ones): each chunk they name gets the reference
// count the store's other records give it (0 deletes it), and their
// records go. A damaged record, or damaged records elsewhere that hide
// references, leave everything in place for fsck (whose counts include
// the holds): nothing is freed on a guess. It reports how many holds
// and chunks it released.
func (f *FS) releaseDeadHolds() (holds, chunks int, err error) {
	// Most opens and pulls find none: a read transaction says so
	// without a commit (and its fsync).
	var any bool
	if err := f.view(func(tx *chunkstore.Tx) error { any = tx.Bucket(bucketHolds) != nil; return nil }); err != nil || !any {
		return 0, 0, err
	}
	f.mu.Lock()
	live := make(map[uint64]bool, len(f.liveHolds))
	for h := range f.liveHolds {
		live[h] = true
	}
	f.mu.Unlock()
	err = f.update(func(tx *chunkstore.Tx) error {
		if tx.Bucket(bucketHolds) == nil {
			return nil
		}
		dead := make(map[uint64]bool)
		held := make(map[chunkstore.ID]bool)
		counted := make(map[chunkstore.ID]uint64)
		if err := holdChunkRefs(tx, func(r holdRecord, id chunkstore.ID) {
			if live[r.Hold] {
				counted[id]++
				return
			}
			dead[r.Hold] = true
			held[id] = true
		}); err != nil {
			return err
		}
		if len(dead) == 0 {
			return nil
		}
		if err := tx.Sealed(bucketChunks).ForEach(func(_, v []byte) error {
			if len(v) == chunkstore.IDSize && held[chunkstore.ID(v)] {
				counted[chunkstore.ID(v)]++
			}
			return nil
		}); err != nil {
			return fmt.Errorf("chunk lists: %w", err)
		}
		count := func(id chunkstore.ID) {
			if held[id] {
				counted[id]++
			}
		}
		if err := historyChunkRefs(tx, count); err != nil {
			return fmt.Errorf("snapshot history: %w", err)
		}
		if err := forkChunkRefs(tx, count); err != nil {
			return err
		}
		for id := range held {
			refs, err := tx.Refs(id)
			if err != nil {
				return err
			}
			if refs == 0 {
				continue // gone already (an older binary's gc)
			}
			// One step at a time: Unref and Ref keep the chunk
			// statistics as they go (SetRefs recomputes them from every
			// chunk, per call).
			for ; refs > counted[id]; refs-- {
				if err := tx.Unref(id); err != nil {
					return err
				}
			}
			for ; refs < counted[id]; refs++ {
				if err := tx.Ref(id); err != nil {
					return err
				}
			}
		}
		for h := range dead {
			if err := dropHold(tx, h); err != nil {
				return err
			}
		}
		holds, chunks = len(dead), len(held)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("release the chunks held by a pull that did not finish: %w", err)
	}
	return holds, chunks, nil
}

// checkHolds checks the holds records (a damaged one, or one naming a
// chunk not stored, is damage) and counts their references. With
// repair, the store is closed (fsck --repair runs offline), so no pull
// is running: the holds are released instead of counted, and the
// reference counts then set to what the other records hold.
func (c *checker) checkHolds(stored map[chunkstore.ID]uint64, damaged map[chunkstore.ID]bool, counted map[chunkstore.ID]uint64) (known bool, err error) {
	b := c.tx.Sealed(bucketHolds)
	if !b.Exists() {
		return true, nil
	}
	known = true
	var keys [][]byte
	b.Walk(func(k, v []byte, damage error) error {
		keys = append(keys, bytes.Clone(k))
		if damage != nil {
			c.problem("pull hold record %s: %v", sealed.KeyString(k), damage)
			known = false
			return nil
		}
		r, err := decodeHold(k, v)
		if err != nil {
			c.problem("%v", err)
			known = false
			return nil
		}
		for _, id := range r.IDs {
			if stored[id] == 0 && !damaged[id] {
				c.problem("%s holds chunk %s, which is not stored", r.name(), id.Short())
				continue
			}
			if !c.repair {
				counted[id]++
			}
		}
		return nil
	})
	if c.repair {
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return false, err
			}
		}
		if err := c.tx.DeleteBucket(bucketHolds); err != nil {
			return false, err
		}
		c.fixed("released the chunks held by %d pull hold records of pulls that did not finish", len(keys))
		return true, nil
	}
	return known, nil
}
