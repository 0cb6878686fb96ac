package fs

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// TestExportImport: a snapshot's records, exported from one store and
// imported into a new one, give the same root, the same files and a
// clean fsck; a record changed in transit is refused before anything is
// written; PathsOf names every link of a file holding a chunk.
func TestExportImport(t *testing.T) {
	ctx := context.Background()
	f, _ := openSmallChunks(t)
	c := Caller{}
	dir, err := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 4 chunks
	a := putFile(t, f, dir.Ino, "a", big)
	putFile(t, f, RootIno, "b", []byte("bee"))
	putFile(t, f, RootIno, "same", big) // shares a's chunks
	if _, err := f.Link(c, a.Ino, RootIno, "a-link"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(c, RootIno, "ln", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "dir/a"}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetXattr(a.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	snap, err := f.CreateSnapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "later", []byte("after the snapshot")) // not exported
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var recs []TreeRecord
	if _, err := ExportSnapshot(f.Store(), "s1", func(r TreeRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if root, err := TreeRoot(recs); err != nil || root != snap.Root {
		t.Fatalf("exported records sum to %v (%v), snapshot root %v", root, err, snap.Root)
	}
	chunkOf := func(id chunkstore.ID) ([]byte, error) {
		var out []byte
		err := f.Store().View(func(tx *chunkstore.Tx) error {
			d, err := tx.Get(id, nil)
			out = bytes.Clone(d)
			return err
		})
		return out, err
	}
	newStore := func() *chunkstore.Store {
		path := filepath.Join(t.TempDir(), "clone.cfs")
		g, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	// A record changed in transit: refused, nothing written.
	bad := append([]TreeRecord(nil), recs...)
	for i, r := range bad {
		if r.Bucket == RecInodes {
			v := bytes.Clone(r.Value)
			v[len(v)-1] ^= 1
			bad[i].Value = v
			break
		}
	}
	s0 := newStore()
	if _, err := ImportTree(s0, bad, chunkOf, ImportOptions{Root: snap.Root}); !errors.Is(err, ErrRootMismatch) {
		t.Errorf("import of a changed record: %v, want ErrRootMismatch", err)
	}

	// A tree made consistent with its root by whoever altered it, but
	// not servable: refused by CheckTree.
	for _, tc := range []struct {
		name string
		edit func(r *TreeRecord) bool
	}{
		{"name with a slash", func(r *TreeRecord) bool {
			if r.Bucket != RecDirents {
				return false
			}
			r.Key = append(bytes.Clone(r.Key[:8]), "x/y"...)
			return true
		}},
		{"name ..", func(r *TreeRecord) bool {
			if r.Bucket != RecDirents {
				return false
			}
			r.Key = append(bytes.Clone(r.Key[:8]), ".."...)
			return true
		}},
		{"chunk past the end", func(r *TreeRecord) bool {
			if r.Bucket != RecChunks {
				return false
			}
			r.Key = chunkKey(keyIno(r.Key), 1000)
			return true
		}},
		{"entry to a missing inode", func(r *TreeRecord) bool {
			if r.Bucket != RecDirents {
				return false
			}
			v := bytes.Clone(r.Value)
			v[0] = 0x7f
			r.Value = v
			return true
		}},
	} {
		bad := append([]TreeRecord(nil), recs...)
		for i := range bad {
			if tc.edit(&bad[i]) {
				break
			}
		}
		root, err := TreeRoot(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ImportTree(newStore(), bad, chunkOf, ImportOptions{Root: root}); !errors.Is(err, errBadRecord) {
			t.Errorf("%s: import %v, want errBadRecord", tc.name, err)
		}
	}

	s := newStore()
	got, err := ImportTree(s, recs, chunkOf, ImportOptions{Root: snap.Root, Snapshot: "s1", BatchBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != snap.Root {
		t.Errorf("imported snapshot root %v, want %v", got.Root, snap.Root)
	}
	rep, err := Check(s, false)
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck of the import: %v %v", err, rep.Problems)
	}
	s.Close()
	g, err := Open(s.Path(), Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if r, err := g.Root(ctx); err != nil || r != snap.Root {
		t.Errorf("reopened import: root %v (%v), want %v", r, err, snap.Root)
	}
	for path, want := range map[string][]byte{"dir/a": big, "a-link": big, "same": big, "b": []byte("bee")} {
		ino := RootIno
		for _, name := range bytes.Split([]byte(path), []byte("/")) {
			at, err := g.Lookup(c, ino, string(name))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			ino = at.Ino
		}
		buf := make([]byte, len(want)+10)
		n, err := g.Read(ctx, ino, 0, buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Errorf("%s: read %d bytes (%v), want %d", path, n, err, len(want))
		}
	}
	if _, err := g.Lookup(c, RootIno, "later"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("later: %v, want ENOENT", err)
	}
	// New files in the import get fresh inode numbers.
	n := putFile(t, g, RootIno, "new", []byte("x"))
	for _, r := range recs {
		if r.Bucket == RecInodes && keyIno(r.Key) == n.Ino {
			t.Errorf("new file reuses inode %d", n.Ino)
		}
	}

	id, _ := func() (chunkstore.ID, bool) {
		for _, r := range recs {
			if id, ok := r.Chunk(); ok && keyIno(r.Key) == a.Ino {
				return id, true
			}
		}
		return chunkstore.ID{}, false
	}()
	paths := PathsOf(recs, map[chunkstore.ID]bool{id: true})
	if want := []string{"/a-link", "/dir/a", "/same"}; !equalStrings(paths, want) {
		t.Errorf("PathsOf: %q, want %q", paths, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
