// Package versions keeps the old versions of records that snapshots
// still need, and the indexes that make changes cheap to find
// (fs/SNAPSHOTS.md): it is the sealed.Recorder of fs's commits, and the
// reader of a store as it was at a past epoch.
//
// It owns four buckets:
//
//   - snapepochs: epoch(8) ‖ name → empty, one per snapshot: the
//     epochs that pin versions;
//   - history: id(1) ‖ key ‖ death(8) → the old sealed envelope, as
//     stored (its seal covers its bucket, key, value and birth);
//   - deaths: death(8) ‖ id(1) ‖ key → empty;
//   - births: birth(8) ‖ id(1) ‖ key → empty, one per live record of a
//     versioned bucket.
//
// It knows which buckets are versioned and their one-byte ids, and
// nothing of what their records mean: fs decides what a snapshot is made
// of, this package keeps and finds versions. It never changes a record of
// a versioned bucket itself.
package versions

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// Bucket names of this package.
var (
	BucketSnapEpochs = []byte("snapepochs")
	BucketHistory    = []byte("history")
	BucketDeaths     = []byte("deaths")
	BucketBirths     = []byte("births")
)

// Buckets lists them, for whoever creates or checks a store's buckets.
var Buckets = [][]byte{BucketSnapEpochs, BucketHistory, BucketDeaths, BucketBirths}

// ids are the versioned buckets' one-byte ids, fixed by the format.
var ids = map[string]byte{"inodes": 1, "dirents": 2, "fchunks": 3, "xattrs": 4, "fsums": 5}

// ID is the id of a versioned bucket, or 0 if name is not one. It is
// asked of every record a commit writes and of every sealed bucket a
// transaction opens: a switch on the length and the bytes costs a few
// comparisons where the map's lookup hashed the name each time.
func ID(name []byte) byte {
	switch len(name) {
	case 5:
		if string(name) == "fsums" {
			return 5
		}
	case 6:
		switch string(name) {
		case "inodes":
			return 1
		case "xattrs":
			return 4
		}
	case 7:
		switch string(name) {
		case "dirents":
			return 2
		case "fchunks":
			return 3
		}
	}
	return 0
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// Recorder is the sealed.Recorder of one commit at epoch Epoch.
type Recorder struct {
	tx    *bolt.Tx
	epoch uint64
	snaps []uint64 // snapshot epochs, sorted
}

// NewRecorder reads the snapshot epochs of tx for a commit at epoch.
func NewRecorder(tx *bolt.Tx, epoch uint64) (*Recorder, error) {
	r := &Recorder{tx: tx, epoch: epoch}
	if b := tx.Bucket(BucketSnapEpochs); b != nil {
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) < 8 {
				return nil, fmt.Errorf("snapshot epoch key %x: %w", k, sealed.ErrDamaged)
			}
			if e := binary.BigEndian.Uint64(k); len(r.snaps) == 0 || r.snaps[len(r.snaps)-1] != e {
				r.snaps = append(r.snaps, e)
			}
		}
	}
	return r, nil
}

// Attach returns the recorder for a commit at epoch, or nil when the
// store has no snapshot: then nothing needs keeping, and the indexes are
// not kept either (a snapshot needs births entries only for records born
// after it, and deaths only of versions alive at it), so a workspace
// without snapshots pays nothing for them.
func Attach(tx *bolt.Tx, epoch uint64) (sealed.Recorder, error) {
	r, err := NewRecorder(tx, epoch)
	if err != nil || len(r.snaps) == 0 {
		return nil, err
	}
	return r, nil
}

// pinned says whether a snapshot was taken at an epoch in [birth, death).
func (r *Recorder) pinned(birth, death uint64) bool {
	for _, s := range r.snaps { // few: a binary search when they are many
		if s >= birth && s < death {
			return true
		}
	}
	return false
}

// Change implements sealed.Recorder.
func (r *Recorder) Change(bucket, key, old []byte, deleted bool) (bool, error) {
	id := ID(bucket)
	if id == 0 {
		return false, nil
	}
	ik := append([]byte{id}, key...)
	kept := false
	if old != nil {
		_, birth, err := sealed.OpenBirth(bucket, key, old)
		if err != nil {
			// A damaged version cannot be kept: fsck reports it.
			return false, nil
		}
		if err := r.tx.Bucket(BucketBirths).Delete(append(be64(birth), ik...)); err != nil {
			return false, err
		}
		if birth != r.epoch && r.pinned(birth, r.epoch) {
			// A copy: old is the map's, which a remap in this commit
			// may unmap before the page is written.
			if err := r.tx.Bucket(BucketHistory).Put(append(bytes.Clone(ik), be64(r.epoch)...), bytes.Clone(old)); err != nil {
				return false, err
			}
			if err := r.tx.Bucket(BucketDeaths).Put(append(be64(r.epoch), ik...), nil); err != nil {
				return false, err
			}
			kept = true
		}
	}
	if !deleted {
		if err := r.tx.Bucket(BucketBirths).Put(append(be64(r.epoch), ik...), nil); err != nil {
			return false, err
		}
	}
	return kept, nil
}

// At reads the versioned buckets of tx as they were at epoch.
type At struct {
	tx    *bolt.Tx
	epoch uint64
}

// NewAt reads tx at epoch.
func NewAt(tx *bolt.Tx, epoch uint64) *At { return &At{tx: tx, epoch: epoch} }

// Get returns the value key of bucket had at the epoch (verified), or
// nil if it had none.
func (a *At) Get(bucket, key []byte) ([]byte, error) {
	if v, birth, err := a.live(bucket, key); err != nil || v != nil && birth <= a.epoch {
		return v, err
	}
	id := ID(bucket)
	if id == 0 {
		return nil, fmt.Errorf("bucket %s is not versioned", bucket)
	}
	// The first version that died after the epoch.
	ik := append([]byte{id}, key...)
	c := a.tx.Bucket(BucketHistory).Cursor()
	k, v := c.Seek(append(bytes.Clone(ik), be64(a.epoch+1)...))
	if k == nil || len(k) != len(ik)+8 || !bytes.Equal(k[:len(ik)], ik) {
		return nil, nil
	}
	val, birth, err := sealed.OpenBirth(bucket, key, v)
	if err != nil || birth > a.epoch {
		return nil, err
	}
	return val, nil
}

// live is the live record and its birth.
func (a *At) live(bucket, key []byte) ([]byte, uint64, error) {
	b := a.tx.Bucket(bucket)
	if b == nil {
		return nil, 0, nil
	}
	v := b.Get(key)
	if v == nil {
		return nil, 0, nil
	}
	return sealed.OpenBirth(bucket, key, v)
}

// Prefix calls fn for every key under prefix in bucket as it was at the
// epoch, in key order, with its value then: the live records born by
// then, merged with the history versions alive then.
func (a *At) Prefix(bucket, prefix []byte, fn func(k, v []byte) error) error {
	seen := make(map[string][]byte)
	var keys []string
	if b := a.tx.Bucket(bucket); b != nil {
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			val, birth, err := sealed.OpenBirth(bucket, k, v)
			if err != nil {
				return err
			}
			if birth <= a.epoch {
				seen[string(k)] = val
				keys = append(keys, string(k))
			}
		}
	}
	id := ID(bucket)
	hp := append([]byte{id}, prefix...)
	c := a.tx.Bucket(BucketHistory).Cursor()
	for k, v := c.Seek(hp); k != nil && bytes.HasPrefix(k, hp); k, v = c.Next() {
		if len(k) < 9 {
			continue
		}
		key, death := k[1:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:])
		if death <= a.epoch {
			continue
		}
		if _, ok := seen[string(key)]; ok {
			continue
		}
		val, birth, err := sealed.OpenBirth(bucket, key, v)
		if err != nil {
			return err
		}
		if birth <= a.epoch {
			seen[string(key)] = val
			keys = append(keys, string(key))
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn([]byte(k), seen[k]); err != nil {
			return err
		}
	}
	return nil
}

// Changed calls fn with every versioned (bucket id, key) whose value may
// differ between the epoch and now: live records born after it, and
// versions that died after it. A key can come twice.
func Changed(tx *bolt.Tx, epoch uint64, fn func(id byte, key []byte) error) error {
	for _, name := range [][]byte{BucketBirths, BucketDeaths} {
		c := tx.Bucket(name).Cursor()
		for k, _ := c.Seek(be64(epoch + 1)); k != nil; k, _ = c.Next() {
			if len(k) < 9 {
				return fmt.Errorf("%s key %x: %w", name, k, sealed.ErrDamaged)
			}
			if err := fn(k[8], k[9:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ChangedBetween is Changed for the keys whose value may differ between
// epoch from and epoch to, where to is a snapshot's epoch or the last
// commit's: live records born in (from, to], and versions that died after
// from. A live record born after to needs no look: the version it
// replaced, if that one was alive at to, was kept for the snapshot at to,
// and its deaths entry names the key. A key can come twice.
func ChangedBetween(tx *bolt.Tx, from, to uint64, fn func(id byte, key []byte) error) error {
	c := tx.Bucket(BucketBirths).Cursor()
	for k, _ := c.Seek(be64(from + 1)); k != nil; k, _ = c.Next() {
		if len(k) < 9 {
			return fmt.Errorf("%s key %x: %w", BucketBirths, k, sealed.ErrDamaged)
		}
		if binary.BigEndian.Uint64(k) > to {
			break
		}
		if err := fn(k[8], k[9:]); err != nil {
			return err
		}
	}
	c = tx.Bucket(BucketDeaths).Cursor()
	for k, _ := c.Seek(be64(from + 1)); k != nil; k, _ = c.Next() {
		if len(k) < 9 {
			return fmt.Errorf("%s key %x: %w", BucketDeaths, k, sealed.ErrDamaged)
		}
		if err := fn(k[8], k[9:]); err != nil {
			return err
		}
	}
	return nil
}

// Name is the bucket name of a versioned bucket id ("" if none).
func Name(id byte) string {
	for n, i := range ids {
		if i == id {
			return n
		}
	}
	return ""
}

// Unpinned deletes every kept version that no snapshot needs any more
// (after a snapshot was deleted), with its deaths entry, showing each to
// fn first (its bucket id, key and sealed value) so that whoever holds
// references for it can drop them. It returns how many it deleted.
func Unpinned(tx *bolt.Tx, fn func(id byte, key, sealedVal []byte) error) (int, error) {
	r, err := NewRecorder(tx, 0)
	if err != nil {
		return 0, err
	}
	h := tx.Bucket(BucketHistory)
	type gone struct{ hk, dk []byte }
	var drop []gone
	c := h.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) < 1+8 {
			return 0, fmt.Errorf("history key %x: %w", k, sealed.ErrDamaged)
		}
		id, key, death := k[0], k[1:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:])
		name := Name(id)
		_, birth, err := sealed.OpenBirth([]byte(name), key, v)
		if err != nil {
			continue // damaged: fsck's to report; kept
		}
		if r.pinned(birth, death) {
			continue
		}
		if err := fn(id, bytes.Clone(key), bytes.Clone(v)); err != nil {
			return 0, err
		}
		drop = append(drop, gone{bytes.Clone(k), append(be64(death), append([]byte{id}, key...)...)})
	}
	for _, g := range drop {
		if err := h.Delete(g.hk); err != nil {
			return 0, err
		}
		if err := tx.Bucket(BucketDeaths).Delete(g.dk); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}

// Problem is an inconsistency Verify found in the indexes.
type Problem struct {
	What string
	// Fixed says that Verify repaired it (repair was asked).
	Fixed bool
}

// Verify checks this package's indexes against each other and against
// the live records: every kept version has its deaths entry and every
// deaths entry its version; every kept version is pinned by a snapshot
// epoch (else it is space no snapshot can reach: Unpinned drops it,
// which Verify leaves to its caller, who holds the chunk references);
// and every live record born after the earliest pin has its births entry
// (a commit after a pin always runs a recorder, so one missing means a
// change a diff, restore or undo would not see). With repair, missing
// index entries are added and entries without a version deleted. It
// returns the problems and how many unpinned versions there are.
func Verify(tx *bolt.Tx, repair bool) (problems []Problem, unpinned int, err error) {
	r, err := NewRecorder(tx, 0)
	if err != nil {
		return nil, 0, err
	}
	add := func(fixed bool, format string, args ...any) {
		problems = append(problems, Problem{What: fmt.Sprintf(format, args...), Fixed: fixed})
	}
	hist, deaths, births := tx.Bucket(BucketHistory), tx.Bucket(BucketDeaths), tx.Bucket(BucketBirths)
	if hist == nil || deaths == nil || births == nil {
		return nil, 0, nil // a store from before snapshots: nothing kept
	}
	var putDeaths, dropDeaths, putBirths [][]byte
	c := hist.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) < 1+8 || Name(k[0]) == "" {
			add(false, "kept version key %x is malformed", k)
			continue
		}
		id, key, death := k[0], k[1:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:])
		dk := append(be64(death), append([]byte{id}, key...)...)
		if deaths.Get(dk) == nil {
			add(repair, "kept version of %s key %x (replaced at commit %d) has no deaths entry: diffs, restores and undos would miss it", Name(id), key, death)
			putDeaths = append(putDeaths, dk)
		}
		_, birth, err := sealed.OpenBirth([]byte(Name(id)), key, v)
		if err != nil {
			add(false, "kept version of %s key %x: %v", Name(id), key, err)
			continue
		}
		if !r.pinned(birth, death) {
			unpinned++
		}
	}
	c = deaths.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < 9 {
			add(repair, "deaths entry %x is malformed", k)
			dropDeaths = append(dropDeaths, bytes.Clone(k))
			continue
		}
		hk := append(append([]byte{k[8]}, k[9:]...), k[:8]...)
		if hist.Get(hk) == nil {
			add(repair, "deaths entry of %s key %x (commit %d) has no kept version: the version snapshots before that commit saw is lost, and they read the record as absent", Name(k[8]), k[9:], binary.BigEndian.Uint64(k))
			dropDeaths = append(dropDeaths, bytes.Clone(k))
		}
	}
	if len(r.snaps) > 0 {
		minPin := r.snaps[0]
		for name, id := range ids {
			b := tx.Bucket([]byte(name))
			if b == nil {
				continue
			}
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if v == nil {
					continue // a nested bucket
				}
				_, birth, err := sealed.OpenBirth([]byte(name), k, v)
				if err != nil || birth <= minPin {
					continue // damage is the record check's to report
				}
				bk := append(be64(birth), append([]byte{id}, k...)...)
				if births.Get(bk) == nil {
					add(repair, "live %s record %x (born at commit %d, after the snapshot at %d) has no births entry: diffs, restores and undos would miss it", name, k, birth, minPin)
					putBirths = append(putBirths, bk)
				}
			}
		}
	}
	if repair {
		for _, k := range putDeaths {
			if err := deaths.Put(k, nil); err != nil {
				return problems, unpinned, err
			}
		}
		for _, k := range dropDeaths {
			if err := deaths.Delete(k); err != nil {
				return problems, unpinned, err
			}
		}
		for _, k := range putBirths {
			if err := births.Put(k, nil); err != nil {
				return problems, unpinned, err
			}
		}
	}
	return problems, unpinned, nil
}

// Base is bucket as it was at an epoch, as a sealed.Base: what a fork
// made at that epoch reads where it has no record of its own.
func (a *At) Base(bucket []byte) sealed.Base { return &atBase{a: a, bucket: bucket} }

type atBase struct {
	a      *At
	bucket []byte
}

func (b *atBase) Get(key []byte) ([]byte, error) { return b.a.Get(b.bucket, key) }

// Seek is the first key at or after key (after it, if after) that had a
// value at the epoch: the live records born by then, and the kept
// versions alive then (a key has at most one of either).
func (b *atBase) Seek(key []byte, after bool) ([]byte, []byte, error) {
	var lk, lv []byte
	if lb := b.a.tx.Bucket(b.bucket); lb != nil {
		c := lb.Cursor()
		k, v := c.Seek(key)
		if after && k != nil && bytes.Equal(k, key) {
			k, v = c.Next()
		}
		for ; k != nil; k, v = c.Next() {
			if v == nil {
				continue // a nested bucket: none in a versioned bucket
			}
			val, birth, err := sealed.OpenBirth(b.bucket, k, v)
			if err != nil {
				return k, nil, err
			}
			if birth <= b.a.epoch {
				lk, lv = k, val
				break
			}
		}
	}
	id := ID(b.bucket)
	hk, hv, err := b.historySeek(id, key, after, lk)
	if err != nil {
		return hk, nil, err
	}
	if hk != nil && (lk == nil || bytes.Compare(hk, lk) < 0) {
		return hk, hv, nil
	}
	return lk, lv, nil
}

// historySeek is the first key at or after key (after it, if after),
// and before stop if stop is not nil, whose kept version was alive at
// the epoch. A key's versions follow each other in the history bucket,
// oldest death first (their keys differ only in it: names hold no NUL,
// and deaths stay below 2^56).
func (b *atBase) historySeek(id byte, key []byte, after bool, stop []byte) ([]byte, []byte, error) {
	h := b.a.tx.Bucket(BucketHistory)
	if h == nil {
		return nil, nil, nil
	}
	c := h.Cursor()
	for k, v := c.Seek(append([]byte{id}, key...)); k != nil && k[0] == id; k, v = c.Next() {
		if len(k) < 1+8 {
			return nil, nil, fmt.Errorf("history key %x: %w", k, sealed.ErrDamaged)
		}
		hk, death := k[1:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:])
		if c := bytes.Compare(hk, key); c < 0 || c == 0 && after {
			continue
		}
		if stop != nil && bytes.Compare(hk, stop) >= 0 {
			return nil, nil, nil
		}
		if death <= b.a.epoch {
			continue
		}
		val, birth, err := sealed.OpenBirth(b.bucket, hk, v)
		if err != nil {
			return hk, nil, err
		}
		if birth <= b.a.epoch {
			return bytes.Clone(hk), val, nil
		}
	}
	return nil, nil, nil
}

// UnpinnedAfter is Unpinned for a pin at epoch that was just deleted: it
// looks only at the versions that pin could have kept (born by epoch,
// died after it), through the deaths index, so its cost is the changes
// since epoch rather than the whole history.
func UnpinnedAfter(tx *bolt.Tx, epoch uint64, fn func(id byte, key, sealedVal []byte) error) (int, error) {
	r, err := NewRecorder(tx, 0)
	if err != nil {
		return 0, err
	}
	h, deaths := tx.Bucket(BucketHistory), tx.Bucket(BucketDeaths)
	if h == nil || deaths == nil {
		return 0, nil
	}
	type gone struct{ hk, dk []byte }
	var drop []gone
	c := deaths.Cursor()
	for k, _ := c.Seek(be64(epoch + 1)); k != nil; k, _ = c.Next() {
		if len(k) < 9 {
			return 0, fmt.Errorf("%s key %x: %w", BucketDeaths, k, sealed.ErrDamaged)
		}
		death, id, key := binary.BigEndian.Uint64(k), k[8], k[9:]
		hk := append(append([]byte{id}, key...), be64(death)...)
		v := h.Get(hk)
		if v == nil {
			continue // fsck's to report
		}
		_, birth, err := sealed.OpenBirth([]byte(Name(id)), key, v)
		if err != nil || birth > epoch || r.pinned(birth, death) {
			continue
		}
		if err := fn(id, bytes.Clone(key), bytes.Clone(v)); err != nil {
			return 0, err
		}
		drop = append(drop, gone{hk, bytes.Clone(k)})
	}
	for _, g := range drop {
		if err := h.Delete(g.hk); err != nil {
			return 0, err
		}
		if err := deaths.Delete(g.dk); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}
