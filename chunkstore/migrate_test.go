package chunkstore_test

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// TestUpgradeFromFormat1 writes a store in the layout of format 1 (bodies
// as plain values of the chunks bucket) and checks that opening it moves
// every body into its own bucket, keeps every chunk readable and the
// sequence growing, and leaves a store that Check finds clean.
func TestUpgradeFromFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	s, err := chunkstore.Open(path, chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	datas := [][]byte{
		bytes.Repeat([]byte("compressible "), 5000),
		randBytes(3, 70000),
		[]byte("small"),
	}
	var ids []chunkstore.ID
	for _, d := range datas {
		p, _ := put(t, s, d)
		ids = append(ids, p.ID)
	}
	// Rewrite it as format 1.
	if err := s.DB().Update(func(tx *bolt.Tx) error {
		if err := chunkstore.DowngradeToFormat2(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketBodies)
		var keys, vals [][]byte
		b.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			vals = append(vals, bytes.Clone(chunkstore.BodyValue(b, k)))
			return nil
		})
		for i, k := range keys {
			if err := b.DeleteBucket(k); err != nil {
				return err
			}
			if err := b.Put(k, vals[i]); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, binary.BigEndian.AppendUint32(nil, 1))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = chunkstore.Open(path, chunkstore.Options{})
	if err != nil {
		t.Fatalf("open a format 1 store: %v", err)
	}
	defer s.Close()
	for i, id := range ids {
		if out, err := get(s, id); err != nil || !bytes.Equal(out, datas[i]) {
			t.Errorf("chunk %d after the upgrade: %v", i, err)
		}
	}
	s.DB().View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyFormat); binary.BigEndian.Uint32(v) != chunkstore.FormatVersion {
			t.Errorf("format after the upgrade: %d", binary.BigEndian.Uint32(v))
		}
		return tx.Bucket(bucketBodies).ForEach(func(k, v []byte) error {
			if v != nil {
				t.Errorf("body %x is still a plain value", k)
			}
			return nil
		})
	})
	before := bucketLen(t, s, bucketBodies)
	put(t, s, []byte("after the upgrade"))
	if bucketLen(t, s, bucketBodies) != before+1 {
		t.Error("a new body replaced an old one: the sequence was lost")
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check: %v", problems)
	}
}
