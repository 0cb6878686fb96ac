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

// TestApplyTree: a tree exported from one store is applied to another
// that has files, snapshots and exec records of its own: the live tree
// becomes the exported one (root-identical, same bytes), a snapshot of
// it is taken in the same commit, the local snapshots and exec records
// survive (readable, undoable), new inodes do not collide, fsck is
// clean, and it holds after a reopen. A second, later tree applies on
// top; a tampered record is refused with nothing changed.
func TestApplyTree(t *testing.T) {
	ctx := context.Background()
	c := Caller{}
	src, _ := openSmallChunks(t)
	defer src.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1300)
	dir, err := src.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		putFile(t, src, dir.Ino, string(rune('a'+i)), big[:1000*(i+1)])
	}
	putFile(t, src, RootIno, "top", []byte("from the source"))
	export := func(name string) ([]TreeRecord, Snapshot) {
		t.Helper()
		snap, err := src.CreateSnapshot(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var recs []TreeRecord
		if _, err := ExportSnapshot(src.Store(), name, func(r TreeRecord) error { recs = append(recs, r); return nil }); err != nil {
			t.Fatal(err)
		}
		return recs, snap
	}
	chunkOf := func(id chunkstore.ID) ([]byte, error) {
		var out []byte
		err := src.Store().View(func(tx *chunkstore.Tx) error {
			d, err := tx.Get(id, nil)
			out = bytes.Clone(d)
			return err
		})
		return out, err
	}
	recs1, snap1 := export("s1")

	path := filepath.Join(t.TempDir(), "dst.cfs")
	dst, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { dst.Close() }()
	local := putFile(t, dst, RootIno, "local", []byte("local bytes"))
	if _, err := dst.CreateSnapshot(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	rec := execAs(t, dst, "e1", func() { putFile(t, dst, RootIno, "byexec", []byte("exec")) })

	// Tampered: refused before anything changes.
	bad := append([]TreeRecord(nil), recs1...)
	bad[len(bad)-1].Value = append(bytes.Clone(bad[len(bad)-1].Value), 0)
	rootBefore, _ := dst.Root(ctx)
	if _, _, _, err := dst.ApplyTree(ctx, bad, chunkOf, ApplyTreeOptions{Root: snap1.Root, Snapshot: "pulled"}); !errors.Is(err, ErrRootMismatch) {
		t.Fatalf("tampered tree: %v", err)
	}
	if r, _ := dst.Root(ctx); r != rootBefore {
		t.Fatal("a refused apply changed the root")
	}

	rep, touched, snap, err := dst.ApplyTree(ctx, recs1, chunkOf, ApplyTreeOptions{Root: snap1.Root, Snapshot: "pulled", BatchBytes: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Root != snap1.Root || rep.Records == 0 || len(touched.Inodes) == 0 {
		t.Errorf("apply: snapshot %+v, report %+v", snap, rep)
	}
	if r, _ := dst.Root(ctx); r != snap1.Root {
		t.Fatalf("root after apply %s, want %s", r, snap1.Root)
	}
	check := func(f *FS) {
		t.Helper()
		d, err := f.Lookup(c, RootIno, "dir")
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.Lookup(c, d.Ino, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAllOf(t, f, a.Ino); !bytes.Equal(got, big[:20000]) {
			t.Errorf("dir/t: %d bytes", len(got))
		}
		if _, err := f.Lookup(c, RootIno, "local"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("local file after apply: %v", err)
		}
		v, err := f.SnapshotView("mine")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := v.Read(local.Ino, 0, buf)
		if err != nil || string(buf[:n]) != "local bytes" {
			t.Errorf("the local snapshot's file: %q, %v", buf[:n], err)
		}
		execs, err := f.Execs()
		if err != nil || len(execs) != 1 || execs[0].ID != rec.ID {
			t.Errorf("exec records after apply: %+v, %v", execs, err)
		}
	}
	check(dst)
	// New inodes come after the tree's.
	n := putFile(t, dst, RootIno, "new", []byte("new"))
	for _, r := range recs1 {
		if keyIno(r.Key) >= n.Ino {
			t.Fatalf("new file got inode %d, the tree has %d", n.Ino, keyIno(r.Key))
		}
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := Check(st, false)
	st.Close()
	if err != nil || len(cr.Problems) > 0 {
		t.Fatalf("fsck after apply: %v %v", err, cr.Problems)
	}
	if dst, err = Open(path, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	check(dst)
	if err := dst.Unlink(RootIno, "new"); err != nil {
		t.Fatal(err)
	}

	// A later tree, on top: only what changed moves.
	if err := src.Unlink(RootIno, "top"); err != nil {
		t.Fatal(err)
	}
	putFile(t, src, dir.Ino, "z2", []byte("later"))
	recs2, snap2 := export("s2")
	rep, _, _, err = dst.ApplyTree(ctx, recs2, chunkOf, ApplyTreeOptions{Root: snap2.Root, Snapshot: "pulled2"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dst.Root(ctx); r != snap2.Root {
		t.Fatalf("root after the second apply %s, want %s", r, snap2.Root)
	}
	if rep.Records > 10 {
		t.Errorf("second apply rewrote %d records; want only what changed", rep.Records)
	}
	// The first pulled state is a snapshot: restoring it brings "top" back.
	if _, _, err := dst.Restore(ctx, "pulled", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, _ := dst.Root(ctx); r != snap1.Root {
		t.Errorf("restore of the pulled snapshot: root %s, want %s", r, snap1.Root)
	}
}

// TestApplyTreeFails: an apply whose chunks stop coming after the first
// batch is put fails with nothing changed, the chunks it held released
// (fsck finds every reference count right), and a second try applies.
func TestApplyTreeFails(t *testing.T) {
	ctx := context.Background()
	src, _ := openSmallChunks(t)
	defer src.Close()
	for i := range 8 {
		putFile(t, src, RootIno, string(rune('a'+i)), bytes.Repeat([]byte{byte(i + 1)}, 3*4096))
	}
	snap, err := src.CreateSnapshot(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var recs []TreeRecord
	if _, err := ExportSnapshot(src.Store(), "s", func(r TreeRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	calls := 0
	errGone := errors.New("the server went away")
	chunkOf := func(fail bool) func(chunkstore.ID) ([]byte, error) {
		return func(id chunkstore.ID) ([]byte, error) {
			calls++
			if fail && calls > 3 {
				return nil, errGone
			}
			var out []byte
			err := src.Store().View(func(tx *chunkstore.Tx) error {
				d, err := tx.Get(id, nil)
				out = bytes.Clone(d)
				return err
			})
			return out, err
		}
	}
	path := filepath.Join(t.TempDir(), "dst.cfs")
	dst, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, dst, RootIno, "a", bytes.Repeat([]byte{1}, 3*4096)) // a chunk the tree shares
	before, _ := dst.Root(ctx)
	if _, _, _, err := dst.ApplyTree(ctx, recs, chunkOf(true), ApplyTreeOptions{Root: snap.Root, Snapshot: "p", BatchBytes: 4096}); !errors.Is(err, errGone) {
		t.Fatalf("apply with chunks failing: %v", err)
	}
	if r, _ := dst.Root(ctx); r != before {
		t.Fatal("a failed apply changed the tree")
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	fsckStore := func() {
		t.Helper()
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		cr, err := Check(st, false)
		if err != nil || len(cr.Problems) > 0 {
			t.Fatalf("fsck: %v %v", err, cr.Problems)
		}
	}
	fsckStore()
	if dst, err = Open(path, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := dst.ApplyTree(ctx, recs, chunkOf(false), ApplyTreeOptions{Root: snap.Root, Snapshot: "p"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := dst.Root(ctx); r != snap.Root {
		t.Fatalf("root %s, want %s", r, snap.Root)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	fsckStore()
}
