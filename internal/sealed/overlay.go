package sealed

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Overlays: a Bucket whose writes go to a bucket of its own and whose
// reads fall through to a Base where it has no record (a fork of the
// workspace, fs/fork.go). A delete of a record the base has is a
// tombstone in the overlay. The overlay's values are sealed like any
// other, under the overlay's own name, with a one-byte tag in front of
// the value: 1 a value, 0 a tombstone.

// Base is what an overlay shows where it has no record of its own: a
// read-only source of verified values in key order.
type Base interface {
	Get(key []byte) ([]byte, error)
	// Seek returns the first record at or after key (after key, if
	// after), or a nil key when there is none.
	Seek(key []byte, after bool) (k, v []byte, err error)
}

const (
	tagTombstone = 0
	tagValue     = 1
)

// Overlay returns the sealed bucket b (its values sealed under name,
// birth epoch epoch) as an overlay over base.
func Overlay(b *bolt.Bucket, name []byte, epoch uint64, base Base) Bucket {
	return Bucket{b: b, name: name, epoch: epoch, base: base}
}

// Wrap returns b, a bucket reached some other way than by name from the
// transaction (a nested one), as a sealed bucket whose values are sealed
// under name.
func Wrap(b *bolt.Bucket, name []byte, epoch uint64) Bucket {
	return Bucket{b: b, name: name, epoch: epoch}
}

// IsOverlay says whether b is an overlay.
func (b Bucket) IsOverlay() bool { return b.base != nil }

// ovGet is the overlay's own record of key: present says it has one,
// and then v is its value or nil for a tombstone.
func (b Bucket) ovGet(key []byte) (v []byte, present bool, err error) {
	if b.b == nil {
		return nil, false, nil
	}
	k, raw := b.b.Cursor().Seek(key)
	if !bytes.Equal(k, key) {
		return nil, false, nil
	}
	return b.ovOpen(k, raw)
}

func (b Bucket) ovOpen(k, raw []byte) ([]byte, bool, error) {
	if raw == nil {
		return nil, false, &DamageError{Bucket: string(b.name), Key: bytes.Clone(k), Why: "a nested bucket where a value belongs"}
	}
	val, err := Open(b.name, k, raw)
	if err != nil {
		return nil, false, err
	}
	if len(val) == 0 || val[0] > tagValue || val[0] == tagTombstone && len(val) != 1 {
		return nil, false, &DamageError{Bucket: string(b.name), Key: bytes.Clone(k), Why: "overlay record without its tag"}
	}
	if val[0] == tagTombstone {
		return nil, true, nil
	}
	return val[1:], true, nil
}

func (b Bucket) ovGetMerged(key []byte) ([]byte, error) {
	v, present, err := b.ovGet(key)
	if err != nil || present {
		return v, err
	}
	return b.base.Get(key)
}

// ovPut stores val (nil: a tombstone) in the overlay.
func (b Bucket) ovPut(key, val []byte) error {
	if b.b == nil {
		return fmt.Errorf("put into %s: %w", b.name, ErrNoBucket)
	}
	out := make([]byte, 0, 1+len(val)+Size)
	if val == nil {
		out = append(out, tagTombstone)
	} else {
		out = append(append(out, tagValue), val...)
	}
	return b.b.Put(key, Append(b.name, key, out, b.epoch))
}

// ovChange writes key (val, or a delete) and says whether the value it
// replaced was the base's: the base's holder keeps whatever that value
// references, as a recorder's kept version does.
func (b Bucket) ovChange(key, val []byte, deleted bool) (bool, error) {
	own, present, err := b.ovGet(key)
	if err != nil {
		return false, err
	}
	baseVal, err := b.base.Get(key)
	if err != nil {
		return false, err
	}
	fromBase := !present && baseVal != nil
	_ = own
	switch {
	case !deleted:
		return fromBase, b.ovPut(key, val)
	case baseVal != nil:
		if present && own == nil {
			return false, nil // already a tombstone
		}
		return fromBase, b.ovPut(key, nil)
	case present:
		return false, b.b.Delete(key)
	}
	return false, nil
}

// OverlayRecords calls fn with every record of an overlay's own bucket
// b, sealed under name: its key and value, nil for a tombstone.
func OverlayRecords(b *bolt.Bucket, name []byte, fn func(k, v []byte, tombstone bool) error) error {
	ob := Bucket{b: b, name: name}
	c := b.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		v, _, err := ob.ovOpen(k, raw)
		if err != nil {
			return err
		}
		if err := fn(k, v, v == nil); err != nil {
			return err
		}
	}
	return nil
}

// mergeCursor walks an overlay and its base together, the overlay's
// records winning and its tombstones hiding the base's. Each step seeks
// both afresh, so writes between steps are safe.
type mergeCursor struct {
	b   Bucket
	cur []byte
}

func (m *mergeCursor) seek(key []byte, after bool) ([]byte, []byte, error) {
	oc := m.b.b.Cursor()
	for {
		ok, oraw := oc.Seek(key)
		if after && ok != nil && bytes.Equal(ok, key) {
			ok, oraw = oc.Next()
		}
		bk, bv, err := m.b.base.Seek(key, after)
		if err != nil {
			return bk, nil, err
		}
		if ok == nil && bk == nil {
			m.cur = nil
			return nil, nil, nil
		}
		if ok != nil && (bk == nil || bytes.Compare(ok, bk) <= 0) {
			ov, _, err := m.b.ovOpen(ok, oraw)
			if err != nil {
				m.cur = bytes.Clone(ok)
				return m.cur, nil, err
			}
			if ov == nil {
				// A tombstone: it hides the base's record of the key.
				key, after = bytes.Clone(ok), true
				continue
			}
			m.cur = bytes.Clone(ok)
			return m.cur, ov, nil
		}
		m.cur = bytes.Clone(bk)
		return m.cur, bv, nil
	}
}

// Epoch is the birth epoch Put gives values.
func (b Bucket) Epoch() uint64 { return b.epoch }

// OverlayGet is an overlay's own record of key, verified: present says it
// has one, and then v is its value or nil for a tombstone.
func (b Bucket) OverlayGet(key []byte) (v []byte, present bool, err error) { return b.ovGet(key) }
