package versions

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// teeWatcher shows every change to a delta with the store's cache and to
// one without, which hashes every value as it comes.
type teeWatcher struct{ cached, plain *RootDelta }

func (w teeWatcher) Watch(bucket, key, old []byte, damaged bool, val []byte, deleted bool) {
	w.cached.Watch(bucket, key, old, damaged, val, deleted)
	w.plain.Watch(bucket, key, old, damaged, val, deleted)
}

var errRollback = errors.New("rolled back on purpose")

// runRootOps plays ops (3 bytes each: what, key, value) as writes in
// transactions over three versioned buckets and one that is not, and
// checks at every commit and every mid-transaction look that the root
// kept with a HashCache of slots slots equals the root kept by hashing
// every value, and, while no write went around the watcher or replaced a
// damaged record, the root ComputeRoot walks to. After such a write both
// start again from ComputeRoot's, as fsck --repair does.
func runRootOps(t *testing.T, db *bolt.DB, slots int, ops []byte) {
	t.Helper()
	names := [][]byte{[]byte("inodes"), []byte("dirents"), []byte("fchunks"), []byte("meta")}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return err
			}
			if _, err := tx.CreateBucket(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := &HashCache{size: slots}
	var root, plainRoot Root // both start at no records
	inSync := true           // root should equal ComputeRoot's
	value := func(v byte, k int) []byte {
		switch v % 8 {
		case 0:
			return []byte{} // empty, not missing
		case 1:
			return bytes.Repeat([]byte{v, byte(k)}, 100) // does not fit a slot
		default:
			return []byte(fmt.Sprintf("value %d of key %d", v%5, k))
		}
	}
	epoch := uint64(1)
	for len(ops) >= 3 {
		wasInSync := inSync
		err := db.Update(func(tx *bolt.Tx) error {
			var cached, plain RootDelta
			cached.UseCache(cache)
			w := teeWatcher{&cached, &plain}
			bs := make([]sealed.Bucket, len(names))
			for i, n := range names {
				bs[i] = sealed.InAt(tx, n, epoch).WithWatcher(w)
			}
			check := func(when string) {
				t.Helper()
				got, want := cached.Apply(root), plain.Apply(plainRoot)
				if got != want {
					t.Fatalf("%s: root with the cache %s, without %s", when, got, want)
				}
				if cached.Lost != plain.Lost {
					t.Fatalf("%s: lost %d with the cache, %d without", when, cached.Lost, plain.Lost)
				}
				if inSync && cached.Lost == 0 {
					whole, _, err := ComputeRoot(tx)
					if err != nil {
						t.Fatal(err)
					}
					if got != whole {
						t.Fatalf("%s: kept root %s, computed %s", when, got, whole)
					}
				}
			}
			commit := func() error {
				check("commit")
				root, plainRoot = cached.Apply(root), plain.Apply(plainRoot)
				if cached.Lost > 0 {
					inSync = false
				}
				cached.Reset()
				plain.Reset()
				if !inSync {
					// fsck --repair: the root computed whole.
					whole, _, err := ComputeRoot(tx)
					if err != nil {
						return err
					}
					root, plainRoot, inSync = whole, whole, true
				}
				return nil
			}
			for len(ops) >= 3 {
				op, kb, vb := ops[0], ops[1], ops[2]
				ops = ops[3:]
				b := bs[int(kb>>4)%len(names)]
				k := int(kb & 7)
				key := []byte(fmt.Sprintf("key%d", k))
				val := value(vb, k)
				var err error
				switch op % 16 {
				case 0, 1, 2, 3:
					err = b.Put(key, val)
				case 4:
					err = b.Delete(key)
				case 5:
					f, _, ferr := b.Find(key)
					if ferr == nil {
						_, err = b.PutFound(key, val, f)
					}
				case 6:
					f, _, ferr := b.Find(key)
					if ferr == nil {
						_, err = b.DeleteFound(key, f)
					}
				case 7:
					// Damage: a value whose seal does not verify.
					err = tx.Bucket(b.Name()).Put(key, []byte("garbage!"))
					inSync = false
				case 8:
					// A valid value written around the watcher.
					err = b.PutSealed(key, sealed.Seal(b.Name(), key, val, epoch))
					inSync = false
				case 9:
					c := b.Cursor()
					if k, _, _ := c.Seek(key); k != nil {
						err = c.Delete()
					}
				case 10:
					check("mid-transaction")
				case 11:
					return errRollback
				case 12:
					return commit()
				default:
					// Several writes of one key in one transaction.
					for j := range int(vb%4) + 1 {
						if err = b.Put(key, value(vb+byte(j), k)); err != nil {
							break
						}
					}
				}
				if err != nil {
					return err
				}
			}
			return commit()
		})
		if errors.Is(err, errRollback) {
			inSync = wasInSync
		} else if err != nil {
			t.Fatal(err)
		}
		epoch++
	}
}

// TestHashCacheRoot: with the cache (many slots, and few so that records
// evict each other, pending ones included) the kept root is the one kept
// by hashing every value, and the one computed whole, after random
// workloads with rewrites in one transaction, deletes, cursor deletes,
// rolled-back transactions, damaged records and writes around the
// watcher.
func TestHashCacheRoot(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Rewrites of a pending value after a write around the watcher and
	// after damage, then a delete of it.
	for _, slots := range []int{1, 0} {
		runRootOps(t, db, slots, []byte{0, 0x01, 2, 8, 0x01, 3, 0, 0x01, 4, 10, 0, 0, 7, 0x01, 0, 0, 0x01, 5, 4, 0x01, 0, 12, 0, 0})
	}
	for _, slots := range []int{1, 4, 64, 0} {
		for seed := range uint64(60) {
			rng := rand.New(rand.NewPCG(seed, uint64(slots)))
			ops := make([]byte, 3*400)
			for i := range ops {
				ops[i] = byte(rng.Uint32())
			}
			// Fewer rollbacks and damage than 1 in 16 ops: long runs.
			for i := 0; i < len(ops); i += 3 {
				if o := ops[i] % 16; (o == 7 || o == 8 || o == 11) && rng.IntN(4) != 0 {
					ops[i] = 0
				}
			}
			t.Run(fmt.Sprintf("slots%d/seed%d", slots, seed), func(t *testing.T) {
				runRootOps(t, db, slots, ops)
			})
		}
	}
}

// FuzzHashCacheRoot is TestHashCacheRoot's check over any ops.
func FuzzHashCacheRoot(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 1, 3, 12, 0, 0, 4, 1, 0, 10, 0, 0}, uint8(2))
	f.Add([]byte{13, 0x11, 3, 7, 0x11, 0, 0, 0x11, 4, 12, 0, 0, 9, 0x11, 0}, uint8(0))
	f.Add([]byte{0, 0x21, 2, 8, 0x21, 5, 0, 0x21, 2, 11, 0, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, ops []byte, slots uint8) {
		if len(ops) > 3*300 {
			ops = ops[:3*300]
		}
		db, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, &bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		runRootOps(t, db, 1<<(slots%4), ops)
	})
}
