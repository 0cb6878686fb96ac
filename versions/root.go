package versions

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"

	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"
)

// Root is the root identifier of a store's live records (fs/SNAPSHOTS.md,
// "Root identifier"): the sum, modulo 2^256, of RecordHash over every
// record of the versioned buckets, without its birth epoch. A sum is a
// multiset hash: it does not depend on the order the records were
// written in, and a commit updates it from the records it changes alone
// (plus the new values, minus the old). Two stores whose versioned
// records hold the same keys and values have the same root, whatever
// their history: a restore or an undo that puts the values of a snapshot
// back gives the snapshot's root.
//
// It detects any loss or change by accident (a wrong record has
// probability 2^-256 to leave the sum unchanged). It is not a
// cryptographic commitment against someone who chooses records to
// collide: sums of many chosen hashes modulo 2^n fall to Wagner's
// generalized birthday attack far below 2^128 work. Whoever ships
// records by it verifies what it receives (chunks by their IDs).
//
// The zero Root is the sum of no records, and stands for "not known" in
// a record that has none (a snapshot from before roots): a workspace
// always holds its root directory's inode.
type Root [32]byte

// IsZero says whether r is zero (not known).
func (r Root) IsZero() bool { return r == Root{} }

// String is r in hex, the form users see.
func (r Root) String() string { return hex.EncodeToString(r[:]) }

// ParseRoot parses String's form.
func ParseRoot(s string) (Root, error) {
	var r Root
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(r) {
		return Root{}, fmt.Errorf("root %q: want %d hex digits", s, 2*len(r))
	}
	copy(r[:], b)
	return r, nil
}

// Add adds h to r (the 32 bytes are a little-endian number).
func (r *Root) Add(h Root) {
	var c uint64
	for i := 0; i < 32; i += 8 {
		var s uint64
		s, c = bits.Add64(binary.LittleEndian.Uint64(r[i:]), binary.LittleEndian.Uint64(h[i:]), c)
		binary.LittleEndian.PutUint64(r[i:], s)
	}
}

// Sub subtracts h from r.
func (r *Root) Sub(h Root) {
	var c uint64
	for i := 0; i < 32; i += 8 {
		var s uint64
		s, c = bits.Sub64(binary.LittleEndian.Uint64(r[i:]), binary.LittleEndian.Uint64(h[i:]), c)
		binary.LittleEndian.PutUint64(r[i:], s)
	}
}

// rootDomain starts every record's hash, so that no other BLAKE3 in the
// store (a chunk ID) is ever one.
const rootDomain = "computerfs root 1\x00"

// RecordHash is BLAKE3("computerfs root 1" NUL ‖ uvarint len(bucket) ‖
// bucket ‖ uvarint len(key) ‖ key ‖ val): val is the record's value
// without its envelope (no birth epoch, no seal). The lengths keep two
// (bucket, key, value) triples from hashing the same bytes.
func RecordHash(bucket, key, val []byte) Root {
	var buf [256]byte
	b := append(buf[:0], rootDomain...)
	b = binary.AppendUvarint(b, uint64(len(bucket)))
	b = append(b, bucket...)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, val...)
	return Root(blake3.Sum256(b))
}

// KeyRoot is the meta bucket's key of the stored root: 32 bytes, sealed.
// A store without it has not computed its root yet (older, or upgraded).
var KeyRoot = []byte("root")

// RootDelta is the change of the root in one transaction: the
// sealed.Watcher of the versioned buckets. Its zero value is ready.
type RootDelta struct {
	d       Root
	changes int
	// Lost counts the old versions it could not count out (damaged:
	// their seal does not verify). The stored root then no longer
	// matches its records, which fsck reports.
	Lost int
	// cache, if set (UseCache), holds the pending new values and the
	// hashes of values seen before; gen is the generation it gave r.
	cache *HashCache
	gen   uint64
}

// Watch implements sealed.Watcher.
func (r *RootDelta) Watch(bucket, key, old []byte, damaged bool, val []byte, deleted bool) {
	id := ID(bucket)
	if id == 0 {
		return
	}
	r.changes++
	if !damaged && !deleted && old != nil && bytes.Equal(old, val) {
		return // counted out and in again: no change (a new birth only)
	}
	if r.cache != nil {
		r.watchCached(id, bucket, key, old, damaged, val, deleted)
		return
	}
	switch {
	case damaged:
		r.Lost++
	case old != nil:
		r.d.Sub(RecordHash(bucket, key, old))
	}
	if !deleted {
		r.d.Add(RecordHash(bucket, key, val))
	}
}

// Changes is how many record changes it saw.
func (r *RootDelta) Changes() int { return r.changes }

// Apply returns root with the delta added.
func (r *RootDelta) Apply(root Root) Root {
	r.flush()
	root.Add(r.d)
	return root
}

// Reset forgets the changes seen (after the root was computed anew, or
// applied). It keeps the cache.
func (r *RootDelta) Reset() {
	r.drop()
	*r = RootDelta{cache: r.cache}
}

// ComputeRoot walks every record of the versioned buckets of tx and
// returns their root. Damaged records are left out and counted.
func ComputeRoot(tx *bolt.Tx) (root Root, damaged int, err error) {
	for _, name := range versionedNames() {
		err := sealed.In(tx, name).Walk(func(k, v []byte, damage error) error {
			if damage != nil {
				damaged++
				return nil
			}
			root.Add(RecordHash(name, k, v))
			return nil
		})
		if err != nil {
			return Root{}, 0, fmt.Errorf("root of %s: %w", name, err)
		}
	}
	return root, damaged, nil
}

// versionedNames are the versioned buckets' names, in id order.
func versionedNames() [][]byte {
	out := make([][]byte, 0, len(ids))
	for id := byte(1); int(id) <= len(ids); id++ {
		out = append(out, []byte(Name(id)))
	}
	return out
}

// StoredRoot reads the root stored in tx's meta bucket: ok is false if
// there is none.
func StoredRoot(tx *bolt.Tx, meta []byte) (root Root, ok bool, err error) {
	v, err := sealed.In(tx, meta).Get(KeyRoot)
	if err != nil || v == nil {
		return Root{}, false, err
	}
	if len(v) != len(root) {
		return Root{}, false, &sealed.DamageError{Bucket: string(meta), Key: KeyRoot, Why: fmt.Sprintf("root of %d bytes", len(v))}
	}
	copy(root[:], v)
	return root, true, nil
}
