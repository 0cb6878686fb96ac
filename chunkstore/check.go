package chunkstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ChunkInfo describes one stored chunk, for fsck and gc.
type ChunkInfo struct {
	ID     ID
	Refs   uint64
	Len    uint32
	Stored uint32
}

// Problem is one piece of damage found by Check.
type Problem struct {
	ID     ID     // zero for a body without an index entry
	Seq    uint64 // body key, when known
	Detail string
	// Outboard says only the body's outboard is damaged: the body
	// verifies whole, reads of it fall back to whole reads, and
	// RebuildOutboard mends it.
	Outboard bool
}

func (p Problem) String() string {
	if p.ID == (ID{}) {
		return fmt.Sprintf("body %d: %s", p.Seq, p.Detail)
	}
	return fmt.Sprintf("chunk %s: %s", p.ID.Short(), p.Detail)
}

// Check verifies every chunk: index records decode, bodies exist, decode
// and hash to their ID, and every body is reachable from the index. visit,
// if not nil, receives each readable chunk so that a caller can compare
// reference counts with its own references.
func (t *Tx) Check(visit func(ChunkInfo)) ([]Problem, error) {
	var problems []Problem
	bodies := t.Bucket(bucketBodies)
	reachable := make(map[uint64]bool)
	var buf []byte
	err := t.index().Walk(func(k, v []byte, damage error) error {
		ci, seq, p := t.verifyEntry(bodies, k, v, damage, &buf)
		if seq != 0 {
			reachable[seq] = true
		}
		if p != nil {
			problems = append(problems, *p)
		}
		if (p == nil || p.Outboard) && visit != nil {
			visit(ci) // a damaged outboard leaves the chunk readable
		}
		return nil
	})
	if err != nil {
		return problems, err
	}
	err = bodies.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			problems = append(problems, Problem{Detail: fmt.Sprintf("body key of %d bytes", len(k))})
			return nil
		}
		seq := bytesToSeq(k)
		switch {
		case !reachable[seq]:
			problems = append(problems, Problem{Seq: seq, Detail: "body not in the index (unreachable)"})
		case v != nil:
			problems = append(problems, Problem{Seq: seq, Detail: "body stored as a plain value, not in its own bucket"})
		}
		return nil
	})
	return problems, err
}

// verifyEntry verifies one index record and its body. seq is the body
// key it names (0 if unknown); p, if not nil, is what is wrong.
func (t *Tx) verifyEntry(bodies *bolt.Bucket, k, v []byte, damage error, buf *[]byte) (ci ChunkInfo, seq uint64, p *Problem) {
	var id ID
	if len(k) != IDSize {
		return ci, 0, &Problem{Detail: fmt.Sprintf("index key of %d bytes", len(k))}
	}
	copy(id[:], k)
	if damage != nil {
		return ci, 0, &Problem{ID: id, Detail: damage.Error()}
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return ci, 0, &Problem{ID: id, Detail: err.Error()}
	}
	raw := BodyValue(bodies, seqKey(e.Seq))
	if raw == nil {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: "body missing"}
	}
	h, err := decodeBodyHeader(raw)
	if err != nil {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: err.Error()}
	}
	if h.ID != id {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: "body header names chunk " + h.ID.Short()}
	}
	out, err := decodeBody(raw, *buf)
	if err != nil {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: err.Error()}
	}
	*buf = out
	if Sum(out) != id {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: "hash mismatch"}
	}
	ci = ChunkInfo{ID: id, Refs: e.Refs, Len: e.Len, Stored: e.Stored}
	if why := checkOutboard(bodyOutboard(bodies, seqKey(e.Seq)), h.Codec, out, id); why != "" {
		return ci, e.Seq, &Problem{ID: id, Seq: e.Seq, Detail: "outboard: " + why + " (the body verifies)", Outboard: true}
	}
	return ChunkInfo{ID: id, Refs: e.Refs, Len: e.Len, Stored: e.Stored}, e.Seq, nil
}

// VerifyRange verifies up to n chunks whose IDs come after after (all
// from the first if after is nil), as Check does each: for a scrub that
// goes through the index a transaction at a time. It returns the last ID
// it looked at (nil when the index is done), the chunks it verified and
// what it found wrong.
func (t *Tx) VerifyRange(after []byte, n int) (last []byte, ok []ChunkInfo, problems []Problem, err error) {
	bodies := t.Bucket(bucketBodies)
	c := t.index().Cursor()
	k, v, damage := c.First()
	if after != nil {
		k, v, damage = c.Seek(after)
		if bytes.Equal(k, after) {
			k, v, damage = c.Next()
		}
	}
	var buf []byte
	for i := 0; k != nil && i < n; i++ {
		ci, _, p := t.verifyEntry(bodies, k, v, damage, &buf)
		if p != nil {
			problems = append(problems, *p)
		}
		if p == nil || p.Outboard {
			ok = append(ok, ci)
		}
		last = bytes.Clone(k)
		k, v, damage = c.Next()
	}
	if k == nil {
		return nil, ok, problems, nil // the index is done
	}
	return last, ok, problems, nil
}

func bytesToSeq(k []byte) uint64 {
	var s uint64
	for _, b := range k {
		s = s<<8 | uint64(b)
	}
	return s
}

// SetRefs rewrites a chunk's reference count; zero deletes the chunk. It is
// for fsck --repair and gc, which compute the true count from the files.
func (t *Tx) SetRefs(id ID, refs uint64) error {
	idx := t.index()
	v, err := idx.Get(id[:])
	if err == nil && v == nil {
		return fmt.Errorf("set refs %s: %w", id.Short(), ErrNotFound)
	}
	var e indexEntry
	if err == nil {
		e, err = decodeIndexEntry(v)
	}
	if err != nil {
		// A damaged index record: drop the chunk entirely.
		refs = 0
	}
	if refs == 0 {
		if e.Seq != 0 {
			if err := DeleteBodyValue(t.Bucket(bucketBodies), seqKey(e.Seq)); err != nil {
				return err
			}
		}
		if err := idx.Delete(id[:]); err != nil {
			return err
		}
		return t.RecomputeStats()
	}
	e.Refs = refs
	if err := idx.Put(id[:], e.encode()); err != nil {
		return err
	}
	return t.RecomputeStats()
}

// DeleteUnreachableBodies removes bodies that no index entry points to
// and returns how many bytes they held.
func (t *Tx) DeleteUnreachableBodies() (n int, bytesFreed uint64, err error) {
	reachable := make(map[string]bool)
	err = t.index().Walk(func(k, v []byte, damage error) error {
		if damage != nil {
			return nil
		}
		if e, err := decodeIndexEntry(v); err == nil {
			reachable[string(seqKey(e.Seq))] = true
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	var dead [][]byte
	bodies := t.Bucket(bucketBodies)
	err = bodies.ForEach(func(k, v []byte) error {
		if !reachable[string(k)] {
			dead = append(dead, bytes.Clone(k))
			if v == nil {
				v = BodyValue(bodies, k)
			}
			bytesFreed += uint64(len(v))
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	for _, k := range dead {
		if err := DeleteBodyValue(bodies, k); err != nil {
			return 0, 0, err
		}
	}
	return len(dead), bytesFreed, nil
}

// DeleteChunk removes a chunk whatever its count (repair of a damaged one).
func (t *Tx) DeleteChunk(id ID) error { return t.SetRefs(id, 0) }

// RecomputeStats rebuilds the counters from the index.
func (t *Tx) RecomputeStats() error {
	var st Stats
	err := t.index().Walk(func(k, v []byte, damage error) error {
		if damage != nil {
			return nil
		}
		e, err := decodeIndexEntry(v)
		if err != nil {
			return nil
		}
		st.Chunks++
		st.LogicalBytes += uint64(e.Len) * e.Refs
		st.UniqueBytes += uint64(e.Len)
		st.StoredBytes += uint64(e.Stored)
		return nil
	})
	if err != nil {
		return err
	}
	return t.putStats(st)
}

// ForEachChunk visits the index without reading bodies.
func (t *Tx) ForEachChunk(fn func(ChunkInfo) error) error {
	return t.index().Walk(func(k, v []byte, damage error) error {
		if damage != nil {
			return nil
		}
		e, err := decodeIndexEntry(v)
		if err != nil || len(k) != IDSize {
			return nil
		}
		var id ID
		copy(id[:], k)
		return fn(ChunkInfo{ID: id, Refs: e.Refs, Len: e.Len, Stored: e.Stored})
	})
}

// Reindex gives an index entry back to every body that has none (its
// entry was damaged, or lost with a page) and whose header names a chunk
// whose plaintext hashes to that name: the body itself proves what it
// is. The entry gets one reference; the caller (fsck) sets the true count
// from the files. A damaged entry is replaced. It returns how many bodies
// it indexed. Bodies that do not verify are left for
// DeleteUnreachableBodies.
func (t *Tx) Reindex() (int, error) {
	idx := t.index()
	reachable := make(map[uint64]bool)
	err := idx.Walk(func(k, v []byte, damage error) error {
		if damage == nil {
			if e, err := decodeIndexEntry(v); err == nil {
				reachable[e.Seq] = true
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	bodies := t.Bucket(bucketBodies)
	type found struct {
		id ID
		e  indexEntry
	}
	var adopt []found
	var buf []byte
	err = bodies.ForEach(func(k, _ []byte) error {
		if len(k) != 8 || reachable[bytesToSeq(k)] {
			return nil
		}
		raw := BodyValue(bodies, k)
		h, err := decodeBodyHeader(raw)
		if err != nil {
			return nil
		}
		out, err := decodeBody(raw, buf)
		if err != nil || Sum(out) != h.ID {
			return nil
		}
		buf = out
		if v, err := idx.Get(h.ID[:]); err == nil && v != nil {
			if _, err := decodeIndexEntry(v); err == nil {
				return nil // a duplicate body: its chunk is indexed
			}
		}
		adopt = append(adopt, found{h.ID, indexEntry{Seq: bytesToSeq(k), Refs: 1, Len: h.Len, Stored: uint32(len(raw) - bodyHeaderSize)}})
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, a := range adopt {
		if err := idx.Put(a.id[:], a.e.encode()); err != nil {
			return 0, err
		}
	}
	if len(adopt) > 0 {
		return len(adopt), t.RecomputeStats()
	}
	return 0, nil
}

// checkOutboard says what is wrong with the outboard value obv (nil for
// none) stored beside a body of codec codec whose verified plaintext is
// data; "" if nothing is.
func checkOutboard(obv []byte, codec byte, data []byte, id ID) string {
	if obv == nil {
		return ""
	}
	if codec != CodecRaw {
		return "beside a compressed body"
	}
	ob, err := decodeOutboard(obv, len(data))
	if err != nil {
		return err.Error()
	}
	if !ob.verify(data, 0, id) {
		return "its nodes do not hash to the chunk's ID"
	}
	return ""
}

// RebuildOutboard replaces the outboard of a stored chunk whose body
// verifies by one computed from the body (fsck --repair), or deletes it
// if the body is compressed. It rewrites the body's leaf.
func (t *Tx) RebuildOutboard(id ID) error {
	v, err := t.index().Get(id[:])
	if err != nil {
		return t.damaged(err)
	}
	if v == nil {
		return fmt.Errorf("rebuild outboard %s: %w", id.Short(), ErrNotFound)
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return t.corrupt(id, err)
	}
	b := t.Bucket(bucketBodies).Bucket(seqKey(e.Seq))
	if b == nil {
		return t.corrupt(id, fmt.Errorf("body %d missing", e.Seq))
	}
	h, err := decodeBodyHeader(b.Get(keyBody))
	if err != nil {
		return t.corrupt(id, err)
	}
	data, err := t.Get(id, nil)
	if err != nil {
		return err
	}
	if h.Codec != CodecRaw || len(data) < outboardMin {
		return b.Delete(keyOutboard)
	}
	ob, root := encodeOutboard(data)
	if root != id {
		return t.corrupt(id, fmt.Errorf("body hashes to %s", root.Short()))
	}
	if ob == nil {
		return b.Delete(keyOutboard)
	}
	return b.Put(keyOutboard, ob)
}
