package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// TestCheckVersions: fsck finds each way the snapshot indexes can go
// wrong (an index entry lost, a pin lost or left behind), names it, and
// --repair makes the store clean again without touching the tree.
func TestCheckVersions(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage edits the store's raw buckets.
		damage func(t *testing.T, tx *chunkstore.Tx)
		want   string
	}{
		{"a births entry lost", func(t *testing.T, tx *chunkstore.Tx) {
			deleteLast(t, tx, versions.BucketBirths)
		}, "has no births entry"},
		{"a deaths entry lost", func(t *testing.T, tx *chunkstore.Tx) {
			deleteLast(t, tx, versions.BucketDeaths)
		}, "has no deaths entry"},
		{"a kept version lost", func(t *testing.T, tx *chunkstore.Tx) {
			deleteLast(t, tx, versions.BucketHistory)
		}, "has no kept version"},
		{"a snapshot's pin lost", func(t *testing.T, tx *chunkstore.Tx) {
			b := tx.Bucket(versions.BucketSnapEpochs)
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if bytes.HasSuffix(k, []byte("s1")) {
					if err := b.Delete(bytes.Clone(k)); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatal("no pin of s1")
		}, "snapshot s1 (commit"},
		{"a pin of nothing", func(t *testing.T, tx *chunkstore.Tx) {
			k := binary.BigEndian.AppendUint64(nil, 1)
			k = append(k, "\x00gone\x00b"...)
			if err := tx.Bucket(versions.BucketSnapEpochs).Put(k, nil); err != nil {
				t.Fatal(err)
			}
		}, "no exec record has it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f, path := openSmallChunks(t)
			a := putFile(t, f, RootIno, "a", []byte("one"))
			if _, err := f.CreateSnapshot(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
			putFile(t, f, RootIno, "a", []byte("two"))
			putFile(t, f, RootIno, "b", []byte("born after"))
			f.SetXattr(a.Ino, "user.x", []byte("1"), 0)
			want := manifest(t, f)
			fsckClosed(t, f, path)

			st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Update(func(tx *chunkstore.Tx) error { tc.damage(t, tx); return nil }); err != nil {
				t.Fatal(err)
			}
			r, err := Check(st, false)
			if err != nil || r.Clean() || !strings.Contains(strings.Join(r.Problems, "\n"), tc.want) {
				t.Fatalf("fsck: %v %q, want a problem saying %q", err, r.Problems, tc.want)
			}
			if r, err := Check(st, true); err != nil || len(r.Repaired) == 0 {
				t.Fatalf("fsck --repair: %v %+v", err, r)
			}
			if r, err := Check(st, false); err != nil || !r.Clean() {
				t.Fatalf("fsck after the repair: %v %q", err, r.Problems)
			}
			st.Close()
			f, err = Open(path, Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := manifest(t, f); got != want {
				t.Errorf("the repair changed the tree:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func deleteLast(t *testing.T, tx *chunkstore.Tx, bucket []byte) {
	t.Helper()
	b := tx.Bucket(bucket)
	k, _ := b.Cursor().Last()
	if k == nil {
		t.Fatalf("%s is empty", bucket)
	}
	if err := b.Delete(bytes.Clone(k)); err != nil {
		t.Fatal(err)
	}
}
