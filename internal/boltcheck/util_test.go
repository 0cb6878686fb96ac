package boltcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A dbSpec describes a bbolt file for buildDB.
type dbSpec struct {
	pageSize       int  // 0: the OS's
	noFreelistSync bool // bbolt writes no freelist
	keys           int  // keys in each of the buckets a, b and c
	valSize        int  // their values' size (about)
	nested         int  // buckets in "chunks", each with one bigVal-byte value
	bigVal         int
	inline         int  // small (inline) buckets in "inline"
	deep           int  // levels of buckets under "deep"
	bigKeys        int  // keys of 2,000 bytes in "bigkeys"
	deletes        bool // delete a third of everything, in later transactions
}

func (s dbSpec) options() *bolt.Options {
	return &bolt.Options{
		PageSize:       s.pageSize,
		NoFreelistSync: s.noFreelistSync,
		NoSync:         true,
		FreelistType:   bolt.FreelistArrayType, // allocates in order: the same file every time
	}
}

// buildDB writes the bbolt file of spec at path, in several transactions.
func buildDB(t testing.TB, path string, spec dbSpec) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, spec.options())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	val := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	seqKey := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	update := func(f func(tx *bolt.Tx) error) {
		t.Helper()
		if err := db.Update(f); err != nil {
			t.Fatal(err)
		}
	}
	const batch = 5000
	for _, name := range []string{"a", "b", "c"} {
		for lo := 0; lo < spec.keys; lo += batch {
			update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte(name))
				if err != nil {
					return err
				}
				for i := lo; i < min(lo+batch, spec.keys); i++ {
					if err := b.Put(fmt.Appendf(nil, "%s-key-%08d", name, i), val(spec.valSize)); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	// One nested bucket a transaction: bbolt spills the buckets changed in
	// a transaction in map order, so more would allocate their pages in a
	// different order every time.
	for i := 0; i < spec.nested; i++ {
		update(func(tx *bolt.Tx) error {
			chunks, err := tx.CreateBucketIfNotExists([]byte("chunks"))
			if err != nil {
				return err
			}
			b, err := chunks.CreateBucket(seqKey(i + 1))
			if err != nil {
				return err
			}
			return b.Put([]byte("body"), val(spec.bigVal))
		})
	}
	if spec.inline > 0 {
		update(func(tx *bolt.Tx) error {
			in, err := tx.CreateBucket([]byte("inline"))
			if err != nil {
				return err
			}
			for i := 0; i < spec.inline; i++ {
				b, err := in.CreateBucket(seqKey(i))
				if err != nil {
					return err
				}
				for j := 0; j < i%4; j++ {
					if err := b.Put(seqKey(j), val(20)); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if spec.deep > 0 {
		update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("deep"))
			if err != nil {
				return err
			}
			for i := 0; i < spec.deep; i++ {
				if err := b.Put([]byte("v"), val(300)); err != nil {
					return err
				}
				if b, err = b.CreateBucket(fmt.Appendf(nil, "level-%d", i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if spec.bigKeys > 0 {
		update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("bigkeys"))
			if err != nil {
				return err
			}
			for i := 0; i < spec.bigKeys; i++ {
				k := append(fmt.Appendf(nil, "%06d", i), bytes.Repeat([]byte{'k'}, 2000)...)
				if err := b.Put(k, val(10)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if !spec.deletes {
		return
	}
	for _, name := range []string{"a", "b", "c"} {
		update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return nil
			}
			for i := 0; i < spec.keys; i += 3 {
				if err := b.Delete(fmt.Appendf(nil, "%s-key-%08d", name, i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	update(func(tx *bolt.Tx) error {
		chunks := tx.Bucket([]byte("chunks"))
		for i := 0; i < spec.nested; i += 3 {
			if err := chunks.DeleteBucket(seqKey(i + 1)); err != nil {
				return err
			}
		}
		return nil
	})
	update(func(tx *bolt.Tx) error {
		if in := tx.Bucket([]byte("inline")); in != nil {
			for i := 0; i < spec.inline; i += 3 {
				if err := in.DeleteBucket(seqKey(i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	update(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("bigkeys")); b != nil {
			for i := 0; i < spec.bigKeys; i += 2 {
				if err := b.Delete(append(fmt.Appendf(nil, "%06d", i), bytes.Repeat([]byte{'k'}, 2000)...)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// digestDB hashes every bucket path, key and value of db, except keys for
// which skip says so, and counts the keys.
func digestDB(db *bolt.DB, skip func(key []byte) bool) (string, int, error) {
	h := sha256.New()
	n := 0
	var walk func(b *bolt.Bucket, path string)
	walk = func(b *bolt.Bucket, path string) {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if skip != nil && skip(k) {
				continue
			}
			n++
			fmt.Fprintf(h, "%s/%x=", path, k)
			if v != nil {
				h.Write(v)
				h.Write([]byte{'\n'})
				continue
			}
			if sub := b.Bucket(k); sub != nil {
				h.Write([]byte("bucket\n"))
				walk(sub, path+"/"+hex.EncodeToString(k))
			}
		}
	}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if skip != nil && skip(name) {
				return nil
			}
			n++
			fmt.Fprintf(h, "/%x bucket\n", name)
			walk(b, "/"+hex.EncodeToString(name))
			return nil
		})
	})
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// checkBytes runs check on data in memory.
func checkBytes(data []byte, opts Options) (*Report, error) {
	return check(context.Background(), bytes.NewReader(data), int64(len(data)), opts)
}

// A pageInfo is a tree page the checker reached.
type pageInfo struct {
	id, parent uint64
	flags      uint16
	bucket     string
}

// treePages lists the tree pages of a clean file, in walk order.
func treePages(t testing.TB, data []byte) []pageInfo {
	t.Helper()
	var pages []pageInfo
	rep, err := checkBytes(data, Options{visit: func(id uint64, flags uint16, parent uint64, bucket string) {
		pages = append(pages, pageInfo{id, parent, flags, bucket})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("base file has problems: %v", rep.Problems)
	}
	return pages
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixMeta recomputes the checksum of the meta on page id.
func fixMeta(data []byte, ps int, id int) {
	m := data[id*ps+pageHeaderSize:]
	le.PutUint64(m[metaSumLen:], fnv64a(m[:metaSumLen]))
}
