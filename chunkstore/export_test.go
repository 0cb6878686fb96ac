package chunkstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// DowngradeToFormat2 rewrites a store as format 2 wrote it: every record
// unsealed, no sealed copy of the version, version 2. For upgrade tests.
func DowngradeToFormat2(tx *bolt.Tx) error {
	var names [][]byte
	tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, bytes.Clone(name))
		return nil
	})
	for _, name := range names {
		if bytes.Equal(name, bucketBodies) {
			continue
		}
		b := tx.Bucket(name)
		type kv struct{ k, v []byte }
		var recs []kv
		b.ForEach(func(k, v []byte) error {
			if !unsealed(name, k) {
				open, err := sealed.Open(name, k, v)
				if err != nil {
					return err
				}
				recs = append(recs, kv{bytes.Clone(k), bytes.Clone(open)})
			}
			return nil
		})
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Delete(keyFormatSeal); err != nil {
		return err
	}
	return meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, 2))
}

// LeafReads counts the bodies and ranges read by pread of their leaf.
func (s *Store) LeafReads() uint64 { return s.leafReads.Load() }

// CacheOutboard puts v in the store's outboard cache as chunk id's.
func (s *Store) CacheOutboard(id ID, v []byte) { s.outboards.put(id, v) }

// CachedOutboard returns the cached outboard of chunk id, or nil.
func (s *Store) CachedOutboard(id ID) []byte { return s.outboards.get(id) }

// DirectReads counts the bodies read with O_DIRECT.
func (s *Store) DirectReads() uint64 { return s.directReads.Load() }

// Warmed counts the chunks whose bodies ReadAt asked the kernel to read
// ahead.
func (s *Store) Warmed() uint64 { return s.warmed.Load() }

// MappedReads counts the ranges ReadAt read from bbolt's map.
func (s *Store) MappedReads() uint64 { return s.mappedReads.Load() }

// WarmAfter is warmAfter.
const WarmAfter = warmAfter

// BodyCached reports how many of the pages of chunk id's raw body (its
// plaintext in its leaf) are in the page cache, and how many it has.
func (s *Store) BodyCached(id ID) (cached, pages uint64, err error) {
	err = s.View(func(tx *Tx) error {
		v, err := tx.index().Get(id[:])
		if err != nil || v == nil {
			return fmt.Errorf("chunk %s: %v", id.Short(), err)
		}
		e, err := decodeIndexEntry(v)
		if err != nil {
			return err
		}
		pos, ok := tx.leafPos(e.Seq)
		if !ok {
			return fmt.Errorf("chunk %s: no leaf", id.Short())
		}
		at := pos + int64(rawLeafLayout(int(e.Len)).bodyAt)
		first, last := at/4096, (at+int64(e.Len)-1)/4096
		pages = uint64(last - first + 1)
		cached, err = cachedPages(s.rfile, at, int(e.Len))
		return err
	})
	return cached, pages, err
}

// SetClock sets the clock ReadAt warms chunks by.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// DropBodyPages drops the store file's clean pages from the page cache
// until none of chunk id's body is left there (pages under read-ahead
// are dropped only once it ends), keeping what the store holds in
// memory (unlike DropCaches). It gives up after 5 s.
func (s *Store) DropBodyPages(id ID) error {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if err := unix.Fadvise(int(s.rfile.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return err
		}
		cached, _, err := s.BodyCached(id)
		if err != nil || cached == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pages of chunk %s still cached", cached, id.Short())
		}
	}
}

// RewarmAfter is rewarmAfter.
const RewarmAfter = rewarmAfter
