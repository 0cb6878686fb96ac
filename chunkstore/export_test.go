package chunkstore

import (
	"bytes"
	"encoding/binary"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
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
