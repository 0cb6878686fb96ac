package versions

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// HashCache spares RootDelta the BLAKE3 of record values it has seen
// before. Counting a record out of the root needs RecordHash of its old
// value, and that value is most often one this process wrote itself a
// moment before (a directory's inode at every commit, a file's inode at
// its create and again when its data commits, every record of a file
// removed soon after it was made). The cache keeps, for the last records
// written, the value and its RecordHash, keyed by bucket and key; a hash
// is taken from it only when the old value is byte for byte the value
// cached, so a stale entry (a transaction rolled back, a record written
// around the watcher) is a miss, never a wrong hash.
//
// It also holds a transaction's pending values: the new value of a
// record is hashed once, when the transaction's delta is applied, so a
// record written several times in one transaction (a file's inode at
// each attribute change) costs one hash in and one out in all.
//
// One belongs to a store and serves its write transactions, which bbolt
// runs one at a time: it has no lock of its own. The zero HashCache is
// ready; it takes hashCacheSlots × ~190 bytes at the first write, with
// no pointers for the collector to scan.
type HashCache struct {
	slots []hashSlot
	shift uint // 64 - log2(len(slots))
	// gen numbers the deltas bound to it (bind): a pending slot of
	// another generation is a transaction's that ended without applying
	// (rolled back), whose value is not hashed and so not usable.
	gen uint64
	// owner is the delta bound now, and pending the slots it holds
	// pending values in (a slot may be listed twice).
	owner   *RootDelta
	pending []int32
	// names are the buckets' names by id, as the watcher was given them.
	names [8][]byte
	// size, if not zero, is the number of slots (a power of two) instead
	// of hashCacheSlots: tests make collisions with a few.
	size int
}

// hashCacheSlots is how many records the cache holds (direct-mapped by
// a hash of bucket and key), and slotBytes how many bytes of key and
// value a slot holds: larger records are hashed at once, never cached.
// Inode records are ~70-100 bytes with their 8-byte keys, entries and
// chunk-list records under 64.
const (
	hashCacheSlots = 8192
	slotBytes      = 144
)

type slotState uint8

const (
	slotEmpty   slotState = iota
	slotHashed            // hash is RecordHash of the key and value
	slotPending           // a transaction's new value, not hashed yet
)

type hashSlot struct {
	kh    uint64 // hash of bucket id and key
	gen   uint64 // the generation of a pending value
	hash  Root
	state slotState
	id    byte  // bucket id
	klen  uint8 // key length
	vlen  uint8 // value length
	buf   [slotBytes]byte
}

func (s *hashSlot) key() []byte { return s.buf[:s.klen] }
func (s *hashSlot) val() []byte { return s.buf[s.klen : int(s.klen)+int(s.vlen)] }

// holds says whether s holds bucket id's key.
func (s *hashSlot) holds(kh uint64, id byte, key []byte) bool {
	return s.state != slotEmpty && s.kh == kh && s.id == id && bytes.Equal(s.key(), key)
}

// fits says whether a record of key and val fits a slot.
func fits(key, val []byte) bool { return len(key)+len(val) <= slotBytes }

// set makes s hold key and val, pending in generation gen.
func (s *hashSlot) set(kh uint64, id byte, key, val []byte, gen uint64) {
	s.kh, s.id, s.gen, s.state = kh, id, gen, slotPending
	s.klen, s.vlen = uint8(len(key)), uint8(len(val))
	copy(s.buf[copy(s.buf[:], key):], val)
}

// setVal replaces the value of s, which holds its key.
func (s *hashSlot) setVal(val []byte) {
	s.vlen = uint8(len(val))
	copy(s.buf[s.klen:], val)
}

// UseCache has r keep its pending values in c and take old values'
// hashes from it. Give each transaction's delta the store's cache; only
// one delta may write to it at a time (bbolt's one writer).
func (r *RootDelta) UseCache(c *HashCache) { r.cache = c }

// bind makes r the cache's owner, with a new generation, if it is not.
func (r *RootDelta) bind() *HashCache {
	c := r.cache
	if c.owner != r || r.gen != c.gen {
		if c.slots == nil {
			n := hashCacheSlots
			if c.size > 0 {
				n = c.size
			}
			c.slots = make([]hashSlot, n)
			c.shift = uint(64 - bits.TrailingZeros(uint(n)))
		}
		c.gen++
		c.owner, r.gen = r, c.gen
		c.pending = c.pending[:0]
	}
	return c
}

// slot is the slot of bucket id's key, and the key's hash: Fibonacci
// hashing of the key's first and last 8 bytes (our keys start with an
// inode number and end with a name or an index), the slot chosen by the
// product's top bits, which every bit of the key reaches. That is all a
// slot's choice needs: keys that collide only evict each other.
func (c *HashCache) slot(id byte, key []byte) (*hashSlot, int32, uint64) {
	const m = 0x9e3779b97f4a7c15
	kh := (uint64(id)<<8 | uint64(len(key))) * m
	if len(key) >= 8 {
		kh = (kh ^ binary.BigEndian.Uint64(key)) * m
		kh = (kh ^ binary.BigEndian.Uint64(key[len(key)-8:])) * m
	} else {
		for _, b := range key {
			kh = (kh ^ uint64(b)) * m
		}
	}
	i := int32(kh >> c.shift)
	return &c.slots[i], i, kh
}

// watchCached is Watch with r's cache (bucket's id is id).
func (r *RootDelta) watchCached(id byte, bucket, key, old []byte, damaged bool, val []byte, deleted bool) {
	c := r.bind()
	c.names[id&7] = bucket
	s, i, kh := c.slot(id, key)
	match := s.holds(kh, id, key)
	if match && s.state == slotPending && s.gen == r.gen {
		if !damaged && old != nil && bytes.Equal(old, s.val()) {
			// The value this transaction put, whose hash is not
			// counted in yet: the new one takes its place.
			switch {
			case deleted:
				s.state = slotEmpty
			case fits(key, val):
				s.setVal(val)
			default:
				s.state = slotEmpty
				r.d.Add(RecordHash(bucket, key, val))
			}
			return
		}
		// Written around the watcher since: count it in as it was.
		r.flushSlot(bucket, s)
	}
	switch {
	case damaged:
		r.Lost++
	case old != nil:
		if match && s.state == slotHashed && bytes.Equal(old, s.val()) {
			r.d.Sub(s.hash)
		} else {
			r.d.Sub(RecordHash(bucket, key, old))
		}
	}
	switch {
	case deleted:
		if match {
			s.state = slotEmpty
		}
	case !fits(key, val):
		if match {
			s.state = slotEmpty
		}
		r.d.Add(RecordHash(bucket, key, val))
	default:
		if !match && s.state == slotPending && s.gen == r.gen {
			// Another record's pending value: counted in now.
			r.flushSlot(c.names[s.id&7], s)
		}
		s.set(kh, id, key, val, r.gen)
		c.pending = append(c.pending, i)
	}
}

// flushSlot counts in the pending value of s, which keeps its hash.
func (r *RootDelta) flushSlot(bucket []byte, s *hashSlot) {
	s.hash = RecordHash(bucket, s.key(), s.val())
	s.state = slotHashed
	r.d.Add(s.hash)
}

// flush counts in every pending value of r.
func (r *RootDelta) flush() {
	c := r.cache
	if c == nil || c.owner != r || r.gen != c.gen {
		return
	}
	for _, i := range c.pending {
		if s := &c.slots[i]; s.state == slotPending && s.gen == r.gen {
			r.flushSlot(c.names[s.id&7], s)
		}
	}
	c.pending = c.pending[:0]
}

// drop forgets r's pending values, not counted in (Reset).
func (r *RootDelta) drop() {
	c := r.cache
	if c == nil || c.owner != r || r.gen != c.gen {
		return
	}
	for _, i := range c.pending {
		if s := &c.slots[i]; s.state == slotPending && s.gen == r.gen {
			s.state = slotEmpty
		}
	}
	c.pending = c.pending[:0]
	c.owner = nil
}
