package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// downgradeToFormat6 rewrites a closed store as format 6 laid it out:
// every inode record in version 1, each regular file's summary in a
// record of fsums (birth epoch of its inode), with a births entry where
// the store keeps them, and the root of format 6's records. skewed
// names files whose fsums record is written wrong (count + 1), as a lost
// chunk list record would leave it.
func downgradeToFormat6(t *testing.T, path string, skewed map[Ino]bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		sums, err := tx.CreateBucket(bucketSums)
		if err != nil {
			return err
		}
		births := tx.Bucket(versions.BucketBirths)
		keepBirths := births != nil && births.Stats().KeyN > 0
		b := tx.Bucket(bucketInodes)
		type kv struct{ k, v []byte }
		var recs, sumRecs []kv
		if err := b.ForEach(func(k, v []byte) error {
			val, birth, err := sealed.OpenBirth(bucketInodes, k, v)
			if err != nil {
				return err
			}
			a, target, sum, err := decodeInodeSum(keyIno(k), val)
			if err != nil {
				return err
			}
			v1 := encodeInode(&a, target, inodeSum{})
			v1[0] = inodeRecordV1
			recs = append(recs, kv{bytes.Clone(k), sealed.Seal(bucketInodes, k, v1, birth)})
			if a.IsRegular() && (sum.listSum != listSum{} || skewed[a.Ino]) {
				s := sum.listSum
				if skewed[a.Ino] {
					s.Count++
				}
				sumRecs = append(sumRecs, kv{bytes.Clone(k), sealed.Seal(bucketSums, k, s.encode(), birth)})
				if keepBirths {
					bk := append(binary.BigEndian.AppendUint64(nil, birth), versions.ID(bucketSums))
					if err := births.Put(append(bk, k...), nil); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		for _, r := range sumRecs {
			if err := sums.Put(r.k, r.v); err != nil {
				return err
			}
		}
		root, _, err := versions.ComputeRoot(tx)
		if err != nil {
			return err
		}
		meta := sealed.In(tx, bucketMeta)
		if err := meta.Put(versions.KeyRoot, root[:]); err != nil {
			return err
		}
		if err := meta.Put([]byte("format_sealed"), binary.BigEndian.AppendUint32(nil, 6)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte("format"), binary.BigEndian.AppendUint32(nil, 6))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromFormat6: a store with a snapshot and versions it keeps,
// rewritten as format 6 laid it out (summaries in fsums), opens: every
// inode record holds its summary again, fsums is gone, the root is the
// one the store had before it was rewritten, the live tree and the
// snapshot read the same, fsck is clean, and a file whose summary
// disagreed with its list still fails its reads (EIO) and fsck.
func TestUpgradeFromFormat6(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	buildFaultStore(t, path)
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Repeat([]byte("version one "), 1000)
	a := putFile(t, f, RootIno, "up-a", v1)
	putFile(t, f, RootIno, "up-b", []byte("bee"))
	if _, err := f.CreateSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(a.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(ctx, a.Ino, 100, []byte("CHANGED"), false); err != nil {
		t.Fatal(err)
	}
	f.Release(a.Ino)
	if err := f.Unlink(RootIno, "up-b"); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "up-new", []byte("born after"))
	bad := putFile(t, f, RootIno, "skewed", []byte("its summary will disagree"))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToFormat6(t, path, map[Ino]bool{bad.Ino: true})
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup(Caller{}, RootIno, "skewed"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(ctx, bad.Ino, 0, make([]byte, 100)); err == nil || Errno(err) != syscall.EIO {
		t.Errorf("read of a file whose summary disagreed: %v, want EIO", err)
	}
	// The damaged file goes; the rest must come out as it was.
	if err := f.Unlink(RootIno, "skewed"); err != nil {
		t.Fatal(err)
	}
	live := manifest(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		f, err := Open(path, Options{Logger: quietLog()})
		if err != nil {
			t.Fatalf("open (round %d): %v", round, err)
		}
		if got := manifest(t, f); got != live {
			t.Errorf("round %d: live tree after the upgrade:\n%s\nwant:\n%s", round, got, live)
		}
		v, err := f.SnapshotView("s1")
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{"up-a": v1, "up-b": []byte("bee")} {
			at, err := v.Lookup(RootIno, name)
			if err != nil {
				t.Fatalf("round %d: snapshot lookup %s: %v", round, name, err)
			}
			buf := make([]byte, len(want)+10)
			n, err := v.Read(at.Ino, 0, buf)
			if err != nil || !bytes.Equal(buf[:n], want) {
				t.Errorf("round %d: snapshot %s: %d bytes, %v", round, name, n, err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		st.DB().View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketSums) != nil {
				t.Errorf("round %d: fsums is still there", round)
			}
			return tx.Bucket(bucketInodes).ForEach(func(k, v []byte) error {
				if val, _, err := sealed.OpenBirth(bucketInodes, k, v); err != nil || val[0] != inodeRecordVersion {
					t.Errorf("round %d: inode %d: record %x, %v", round, keyIno(k), val, err)
				}
				return nil
			})
		})
		rep, err := Check(st, false)
		st.Close()
		if err != nil || !rep.Clean() {
			t.Fatalf("fsck after the upgrade (round %d): %v %q", round, err, rep.Problems)
		}
	}
}

// TestUpgradeFromFormat6Root: the upgrade of a store rewritten as format
// 6 gives back the root it had in format 7 (the fold is exact).
func TestUpgradeFromFormat6Root(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	buildFaultStore(t, path)
	root := func() versions.Root {
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		r, err := StoreRoot(st)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := root()
	downgradeToFormat6(t, path, nil)
	if after := root(); after != before {
		t.Errorf("root after the upgrade %s, before the downgrade %s", after, before)
	}
}
