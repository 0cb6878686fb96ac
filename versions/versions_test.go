package versions

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// TestVersions: with snapshots at epochs 2 and 4, a record written at 1,
// 3 and 5 and deleted at 6 reads as its version of each epoch; versions
// no snapshot pins are not kept; Changed lists what changed after an
// epoch; Unpinned drops what a deleted snapshot alone needed.
func TestVersions(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inodes := []byte("inodes")
	key := []byte{0, 0, 0, 0, 0, 0, 0, 9}
	other := []byte{0, 0, 0, 0, 0, 0, 0, 10}
	commit := func(epoch uint64, fn func(b sealed.Bucket) error) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, n := range append(Buckets, inodes) {
				if _, err := tx.CreateBucketIfNotExists(n); err != nil {
					return err
				}
			}
			rec, err := Attach(tx, epoch)
			if err != nil {
				return err
			}
			b := sealed.InAt(tx, inodes, epoch)
			if rec != nil {
				b = b.WithRecorder(rec)
			}
			return fn(b)
		}); err != nil {
			t.Fatal(err)
		}
	}
	snap := func(epoch uint64, name string) {
		db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(BucketSnapEpochs).Put(append(binary.BigEndian.AppendUint64(nil, epoch), name...), nil)
		})
	}
	commit(1, func(b sealed.Bucket) error { return b.Put(key, []byte("v1")) })
	commit(1, func(b sealed.Bucket) error { return b.Put(other, []byte("o1")) })
	snap(2, "two")
	commit(3, func(b sealed.Bucket) error { return b.Put(key, []byte("v3")) })
	snap(4, "four")
	commit(5, func(b sealed.Bucket) error {
		kept, err := b.PutKept(key, []byte("v5"))
		if !kept {
			t.Error("v3 (pinned by four) not kept")
		}
		return err
	})
	commit(5, func(b sealed.Bucket) error {
		// v5 was born at 5: no snapshot saw it.
		kept, err := b.PutKept(key, []byte("v5b"))
		if kept {
			t.Error("a version no snapshot saw was kept")
		}
		return err
	})
	commit(6, func(b sealed.Bucket) error { return b.Delete(key) })
	read := func(epoch uint64, k []byte) string {
		var out string
		db.View(func(tx *bolt.Tx) error {
			v, err := NewAt(tx, epoch).Get(inodes, k)
			if err != nil {
				t.Fatal(err)
			}
			out = string(v)
			return nil
		})
		return out
	}
	for _, tc := range []struct {
		epoch uint64
		want  string
	}{{2, "v1"}, {3, "v3"}, {4, "v3"}, {6, ""}, {0, ""}} { // 5 no snapshot pins: not kept
		if got := read(tc.epoch, key); got != tc.want {
			t.Errorf("at %d: %q, want %q", tc.epoch, got, tc.want)
		}
	}
	if got := read(2, other); got != "o1" {
		t.Errorf("an unchanged record at 2: %q", got)
	}
	var changed int
	db.View(func(tx *bolt.Tx) error {
		return Changed(tx, 2, func(id byte, k []byte) error {
			if id != ID(inodes) || string(k) != string(key) {
				t.Errorf("changed: %d %x", id, k)
			}
			changed++
			return nil
		})
	})
	if changed == 0 {
		t.Error("nothing changed after 2")
	}
	// Without snapshot four, v3 is pinned by nothing; v1 still by two.
	db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(BucketSnapEpochs).Delete(append(binary.BigEndian.AppendUint64(nil, 4), "four"...))
		n, err := Unpinned(tx, func(id byte, k, v []byte) error { return nil })
		if err != nil || n != 1 {
			t.Errorf("unpinned %d %v, want 1 (v3)", n, err)
		}
		return nil
	})
	if got := read(2, key); got != "v1" {
		t.Errorf("at 2 after four is gone: %q", got)
	}
}

// TestBaseAndUnpinnedAfter: At.Base walks the records alive at an epoch
// in key order (live ones born by then, kept versions alive then), and
// UnpinnedAfter, once that epoch's pin is gone, drops exactly what
// Unpinned would.
func TestBaseAndUnpinnedAfter(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inodes := []byte("inodes")
	k := func(i byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, i} }
	commit := func(epoch uint64, fn func(b sealed.Bucket) error) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, n := range append(Buckets, inodes) {
				if _, err := tx.CreateBucketIfNotExists(n); err != nil {
					return err
				}
			}
			rec, err := Attach(tx, epoch)
			if err != nil {
				return err
			}
			b := sealed.InAt(tx, inodes, epoch)
			if rec != nil {
				b = b.WithRecorder(rec)
			}
			return fn(b)
		}); err != nil {
			t.Fatal(err)
		}
	}
	pin := func(epoch uint64, name string, put bool) {
		db.Update(func(tx *bolt.Tx) error {
			pk := append(binary.BigEndian.AppendUint64(nil, epoch), name...)
			if put {
				return tx.Bucket(BucketSnapEpochs).Put(pk, nil)
			}
			return tx.Bucket(BucketSnapEpochs).Delete(pk)
		})
	}
	commit(1, func(b sealed.Bucket) error {
		for _, i := range []byte{1, 2, 3, 4} {
			if err := b.Put(k(i), []byte{'a', i}); err != nil {
				return err
			}
		}
		return nil
	})
	pin(1, "fork", true)
	pin(1, "other", true)
	commit(2, func(b sealed.Bucket) error {
		b.Put(k(2), []byte("b2")) // replaced: the old kept
		b.Delete(k(3))            // deleted: kept
		return b.Put(k(5), []byte("b5"))
	})
	want := "1=a\x01 2=a\x02 3=a\x03 4=a\x04 "
	db.View(func(tx *bolt.Tx) error {
		base := NewAt(tx, 1).Base(inodes)
		got := ""
		for key, v, err := base.Seek(nil, false); key != nil; key, v, err = base.Seek(key, true) {
			if err != nil {
				t.Fatal(err)
			}
			got += string('0'+key[7]) + "=" + string(v) + " "
		}
		if got != want {
			t.Errorf("base at 1 walks %q, want %q", got, want)
		}
		return nil
	})
	pin(1, "fork", false)
	db.Update(func(tx *bolt.Tx) error {
		n, err := UnpinnedAfter(tx, 1, func(byte, []byte, []byte) error { return nil })
		if err != nil || n != 0 {
			t.Errorf("with another pin at 1: dropped %d, %v", n, err)
		}
		return nil
	})
	pin(1, "other", false)
	db.Update(func(tx *bolt.Tx) error {
		n, err := UnpinnedAfter(tx, 1, func(byte, []byte, []byte) error { return nil })
		if err != nil || n != 2 {
			t.Errorf("no pin left: dropped %d, %v; want the 2 versions", n, err)
		}
		if m, _ := Unpinned(tx, func(byte, []byte, []byte) error { return nil }); m != 0 {
			t.Errorf("Unpinned finds %d more", m)
		}
		return nil
	})
}

// TestIDMatchesTable checks ID's switch against the table of ids.
func TestIDMatchesTable(t *testing.T) {
	for name, id := range ids {
		if got := ID([]byte(name)); got != id {
			t.Errorf("ID(%q) = %d, want %d", name, got, id)
		}
	}
	for _, name := range []string{"", "inode", "inodesx", "chunks", "journal", "orphans", "meta", "fsumz", "Inodes"} {
		if got := ID([]byte(name)); got != 0 {
			t.Errorf("ID(%q) = %d, want 0", name, got)
		}
	}
}
