package versions

import (
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

func TestRootArithmetic(t *testing.T) {
	a := RecordHash([]byte("inodes"), []byte("k1"), []byte("v1"))
	b := RecordHash([]byte("dirents"), []byte("k2"), []byte("v2"))
	var r1, r2 Root
	r1.Add(a)
	r1.Add(b)
	r2.Add(b)
	r2.Add(a)
	if r1 != r2 || r1.IsZero() {
		t.Errorf("order matters: %s %s", r1, r2)
	}
	r1.Sub(a)
	r1.Sub(b)
	if !r1.IsZero() {
		t.Errorf("a + b - a - b = %s", r1)
	}
	// Carries cross the 64-bit words: 2^64-1 + 1.
	var x, one Root
	for i := range 8 {
		x[i] = 0xff
	}
	one[0] = 1
	x.Add(one)
	if want := (Root{8: 1}); x != want {
		t.Errorf("carry: %s", x)
	}
	x.Sub(one)
	if x[8] != 0 || x[0] != 0xff {
		t.Errorf("borrow: %s", x)
	}
	// Parts are length-prefixed: moving bytes between them changes the hash.
	if RecordHash([]byte("ab"), []byte("c"), nil) == RecordHash([]byte("a"), []byte("bc"), nil) ||
		RecordHash(nil, []byte("ab"), []byte("c")) == RecordHash(nil, []byte("a"), []byte("bc")) {
		t.Error("ambiguous parts")
	}
	if p, err := ParseRoot(b.String()); err != nil || p != b {
		t.Errorf("parse: %s %v", p, err)
	}
}

// TestRootDelta: the delta of a transaction's writes through watched
// buckets, added to the root before, is the root ComputeRoot walks to;
// birth epochs are not in it; other buckets are not summed.
func TestRootDelta(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var before Root
	err = db.Update(func(tx *bolt.Tx) error {
		for _, n := range [][]byte{[]byte("inodes"), []byte("dirents"), []byte("fchunks"), []byte("meta")} {
			if _, err := tx.CreateBucket(n); err != nil {
				return err
			}
		}
		in := sealed.InAt(tx, []byte("inodes"), 1)
		in.Put([]byte("1"), []byte("root"))
		in.Put([]byte("2"), []byte("file"))
		sealed.InAt(tx, []byte("dirents"), 1).Put([]byte("1/a"), []byte("2"))
		var err error
		before, _, err = ComputeRoot(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		var d RootDelta
		// One Bucket per name for every write, as chunkstore keeps
		// them: its cursor finds old values after the writes between.
		bs := map[string]sealed.Bucket{}
		w := func(name string) sealed.Bucket {
			if _, ok := bs[name]; !ok {
				bs[name] = sealed.InAt(tx, []byte(name), 2).WithWatcher(&d)
			}
			return bs[name]
		}
		w("inodes").Put([]byte("2"), []byte("file, changed"))
		w("inodes").Put([]byte("3"), []byte("new"))
		w("dirents").Delete([]byte("1/a"))
		w("dirents").Delete([]byte("1/none"))
		w("fchunks").Put([]byte("3/0"), []byte("chunk"))
		c := w("fchunks").Cursor()
		c.First()
		c.Delete()
		w("meta").Put([]byte("x"), []byte("not summed"))
		w("inodes").Put([]byte("1"), []byte("root")) // the same value, a new birth
		after, _, err := ComputeRoot(tx)
		if err != nil {
			return err
		}
		if got := d.Apply(before); got != after || got == before {
			t.Errorf("before %s + delta = %s, computed %s", before, got, after)
		}
		if d.Changes() != 6 || d.Lost != 0 {
			t.Errorf("changes %d, lost %d", d.Changes(), d.Lost)
		}
		// Back to the first values: the first root.
		w("inodes").Put([]byte("2"), []byte("file"))
		w("inodes").Delete([]byte("3"))
		w("dirents").Put([]byte("1/a"), []byte("2"))
		if got := d.Apply(before); got != before {
			t.Errorf("the same records again: %s, want %s", got, before)
		}
		// Writes over records Find read: the same delta.
		for _, k := range []string{"1", "2", "9"} {
			found, _, err := w("inodes").Find([]byte(k))
			if err != nil {
				return err
			}
			if _, err := w("inodes").PutFound([]byte(k), []byte("found "+k), found); err != nil {
				return err
			}
		}
		found, v, err := w("inodes").Find([]byte("9"))
		if err != nil || string(v) != "found 9" {
			t.Errorf("Find 9: %q, %v", v, err)
		}
		if _, err := w("inodes").DeleteFound([]byte("9"), found); err != nil {
			return err
		}
		found, _, _ = w("inodes").Find([]byte("none"))
		if _, err := w("inodes").DeleteFound([]byte("none"), found); err != nil {
			return err
		}
		if after, _, err = ComputeRoot(tx); err != nil {
			return err
		}
		if got := d.Apply(before); got != after {
			t.Errorf("after PutFound and DeleteFound: %s, computed %s", got, after)
		}
		for _, k := range []string{"1", "2"} {
			found, _, _ := w("inodes").Find([]byte(k))
			w("inodes").PutFound([]byte(k), []byte(map[string]string{"1": "root", "2": "file"}[k]), found)
		}
		if got := d.Apply(before); got != before {
			t.Errorf("the same records again after PutFound: %s, want %s", got, before)
		}
		// A damaged old value cannot be counted out.
		tx.Bucket([]byte("inodes")).Put([]byte("2"), []byte("garbage!"))
		w("inodes").Delete([]byte("2"))
		if d.Lost != 1 {
			t.Errorf("lost %d", d.Lost)
		}
		tx.Bucket([]byte("inodes")).Put([]byte("1"), []byte("garbage!"))
		found, _, err = w("inodes").Find([]byte("1"))
		if err == nil {
			t.Error("Find of a damaged record: no error")
		}
		w("inodes").PutFound([]byte("1"), []byte("root"), found)
		if d.Lost != 2 {
			t.Errorf("lost %d after PutFound over a damaged record", d.Lost)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRecordHash is the root's cost per record written, counted in
// or out: an inode record's size.
func BenchmarkRecordHash(b *testing.B) {
	key, val := make([]byte, 8), make([]byte, 69)
	b.ReportAllocs()
	var r Root
	for b.Loop() {
		r.Add(RecordHash([]byte("inodes"), key, val))
	}
}
