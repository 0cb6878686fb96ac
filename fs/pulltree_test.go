package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestApplyTreeKilledAt: the store as a pull killed after each of its
// batches leaves it (a copy of the file taken between batches, as a
// kill -9 leaves it: every commit durable, nothing after) is consistent
// at once (fsck, which counts the pull's recorded holds, is clean); its
// next open releases the holds (fsck clean, no holds left, gc finds
// nothing to free or correct, the chunk count back to what it was before
// the pull); and the next apply lands on the tree's root. One copy is
// then treated as a format-8 binary from before holds treats it (its
// gc sets the held chunks' counts to the tree's references, freeing
// those only held): the next open still releases exactly, by recount.
func TestApplyTreeKilledAt(t *testing.T) {
	ctx := context.Background()
	src, _ := openSmallChunks(t)
	defer src.Close()
	for i := range 6 {
		putFile(t, src, RootIno, string(rune('a'+i)), bytes.Repeat([]byte{byte(i + 1), byte(i)}, 3*2048+i*100))
	}
	snap, err := src.CreateSnapshot(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var recs []TreeRecord
	if _, err := ExportSnapshot(src.Store(), "s", func(r TreeRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
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
	dir := t.TempDir()
	path := filepath.Join(dir, "dst.cfs")
	dst, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, dst, RootIno, "a", bytes.Repeat([]byte{1, 0}, 3*2048)) // shares chunks with the tree
	putFile(t, dst, RootIno, "mine", []byte("local"))
	if _, err := dst.CreateSnapshot(ctx, "local"); err != nil {
		t.Fatal(err)
	}
	if err := dst.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	copyFile := func(to string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var images []string
	_, _, _, err = dst.ApplyTree(ctx, recs, chunkOf, ApplyTreeOptions{Root: snap.Root, Snapshot: "p", BatchBytes: 4096, Batched: func(n, _ int) {
		img := filepath.Join(dir, fmt.Sprintf("killed-%02d.cfs", n))
		copyFile(img)
		images = append(images, img)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if len(images) < 5 {
		t.Fatalf("%d batches, want several", len(images))
	}
	withStore := func(p string, fn func(st *chunkstore.Store)) {
		t.Helper()
		st, err := chunkstore.Open(p, chunkstore.Options{Logger: quietLog(), MustExist: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fn(st)
	}
	fsck := func(p, when string) {
		t.Helper()
		withStore(p, func(st *chunkstore.Store) {
			cr, err := Check(st, false)
			if err != nil || len(cr.Problems) > 0 {
				t.Errorf("%s: fsck %s: %v %v", filepath.Base(p), when, err, cr.Problems)
			}
		})
	}
	holdRecords := func(p string) (n int, held []chunkstore.ID) {
		withStore(p, func(st *chunkstore.Store) {
			st.View(func(tx *chunkstore.Tx) error {
				return holdChunkRefs(tx, func(r holdRecord, id chunkstore.ID) {
					if r.Batch+1 > uint32(n) {
						n = int(r.Batch + 1)
					}
					held = append(held, id)
				})
			})
		})
		return n, held
	}
	chunks := func(p string) uint64 {
		var n uint64
		withStore(p, func(st *chunkstore.Store) {
			st.View(func(tx *chunkstore.Tx) error { s, err := tx.Stats(); n = s.Chunks; return err })
		})
		return n
	}
	for i, img := range images {
		if n, _ := holdRecords(img); n != i+1 {
			t.Errorf("%s: %d batches held, want %d", filepath.Base(img), n, i+1)
		}
	}
	// The chunks before the pull: a copy of the first image, its holds
	// released by an open.
	base := filepath.Join(dir, "base.cfs")
	b, err := os.ReadFile(images[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f0, err := Open(base, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	f0.Close()
	want := chunks(base)

	for i, img := range images {
		fsck(img, "as killed")
		if i == len(images)/2 {
			// A format-8 binary from before holds: its gc counts only
			// the tree's references.
			_, held := holdRecords(img)
			withStore(img, func(st *chunkstore.Store) {
				if err := st.Update(func(tx *chunkstore.Tx) error {
					for _, id := range held {
						refs, err := tx.Refs(id)
						if err != nil {
							return err
						}
						if refs > 0 {
							if err := tx.SetRefs(id, refs-1); err != nil {
								return err
							}
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			})
		}
		f, err := Open(img, Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := f.Root(ctx); r == snap.Root {
			t.Errorf("%s: a killed pull applied its tree", filepath.Base(img))
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fsck(img, "after the open released the holds")
		if n, _ := holdRecords(img); n != 0 {
			t.Errorf("%s: %d hold records after the open", filepath.Base(img), n)
		}
		if got := chunks(img); got != want {
			t.Errorf("%s: %d chunks after the release, %d before the pull", filepath.Base(img), got, want)
		}
		withStore(img, func(st *chunkstore.Store) {
			rep, err := GC(st)
			if err != nil || rep.ChunksFreed+rep.RefsCorrected+rep.BodiesFreed > 0 {
				t.Errorf("%s: gc after the release: %+v, %v", filepath.Base(img), rep, err)
			}
		})
		f, err = Open(img, Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := f.ApplyTree(ctx, recs, chunkOf, ApplyTreeOptions{Root: snap.Root, Snapshot: "p", BatchBytes: 4096}); err != nil {
			t.Fatalf("%s: the next apply: %v", filepath.Base(img), err)
		}
		if r, _ := f.Root(ctx); r != snap.Root {
			t.Errorf("%s: root %s after the next apply, want %s", filepath.Base(img), r, snap.Root)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fsck(img, "after the next apply")
	}
}

// TestHoldsCheck: fsck reports a damaged holds record and one that
// names a chunk not stored; fsck --repair releases every hold (the
// store is closed: no pull runs) and leaves the store clean.
func TestHoldsCheck(t *testing.T) {
	f, path := openSmallChunks(t)
	putFile(t, f, RootIno, "x", bytes.Repeat([]byte{9}, 4096))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var x chunkstore.ID
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog(), MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Update(func(tx *chunkstore.Tx) error {
		if err := tx.Sealed(bucketChunks).ForEach(func(_, v []byte) error { x = chunkstore.ID(v); return nil }); err != nil {
			return err
		}
		if err := tx.Ref(x); err != nil {
			return err
		}
		return putHold(tx, 1, 0, []chunkstore.ID{x})
	}); err != nil {
		t.Fatal(err)
	}
	if cr, err := Check(st, false); err != nil || len(cr.Problems) > 0 {
		t.Fatalf("a hold with its reference: %v %v", err, cr.Problems)
	}
	tests := []struct {
		name   string
		damage func(tx *chunkstore.Tx) error
		want   string
	}{
		{"a flipped byte", func(tx *chunkstore.Tx) error {
			b := tx.Bucket(bucketHolds)
			v := bytes.Clone(b.Get(holdKey(1, 0)))
			v[3] ^= 1
			return b.Put(holdKey(1, 0), v)
		}, "pull hold record"},
		{"a chunk not stored", func(tx *chunkstore.Tx) error {
			return putHold(tx, 2, 0, []chunkstore.ID{chunkstore.Sum([]byte("nowhere"))})
		}, "which is not stored"},
		{"not a list of IDs", func(tx *chunkstore.Tx) error {
			return tx.Sealed(bucketHolds).Put(holdKey(3, 0), []byte("short"))
		}, "not a list of chunk IDs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each case on its own copy.
			p := filepath.Join(t.TempDir(), "c.cfs")
			b, _ := os.ReadFile(path)
			st.View(func(tx *chunkstore.Tx) error {
				var buf bytes.Buffer
				_, err := tx.WriteTo(&buf)
				b = buf.Bytes()
				return err
			})
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			cs, err := chunkstore.Open(p, chunkstore.Options{Logger: quietLog(), MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := cs.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			cr, err := Check(cs, false)
			if err != nil || !strings.Contains(strings.Join(cr.Problems, "\n"), tc.want) {
				t.Errorf("fsck: %v %q, want %q", err, cr.Problems, tc.want)
			}
			if _, err := Check(cs, true); err != nil {
				t.Fatal(err)
			}
			if cr, err := Check(cs, false); err != nil || len(cr.Problems) > 0 {
				t.Errorf("fsck after --repair: %v %v", err, cr.Problems)
			}
			cs.View(func(tx *chunkstore.Tx) error {
				if tx.Bucket(bucketHolds) != nil {
					t.Error("holds left after --repair")
				}
				if refs, _ := tx.Refs(x); refs != 1 {
					t.Errorf("x has %d references after --repair, want 1", refs)
				}
				return nil
			})
		})
	}
}

// TestHoldsReleasedByNextApply: holds a pull left in an open workspace
// (its own release failed) are released by the next apply, by recount,
// while that apply's own holds stay until its commit.
func TestHoldsReleasedByNextApply(t *testing.T) {
	ctx := context.Background()
	src, _ := openSmallChunks(t)
	defer src.Close()
	putFile(t, src, RootIno, "s", bytes.Repeat([]byte{3}, 2*4096))
	snap, err := src.CreateSnapshot(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var recs []TreeRecord
	if _, err := ExportSnapshot(src.Store(), "s", func(r TreeRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
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
	dst, path := openSmallChunks(t)
	putFile(t, dst, RootIno, "x", bytes.Repeat([]byte{7}, 4096))
	if err := dst.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// A dead hold on x's chunk and on a chunk only it holds.
	orphan := bytes.Repeat([]byte{8}, 4096)
	if err := dst.Store().Update(func(tx *chunkstore.Tx) error {
		var x chunkstore.ID
		if err := tx.Sealed(bucketChunks).ForEach(func(_, v []byte) error { x = chunkstore.ID(v); return nil }); err != nil {
			return err
		}
		if err := tx.Ref(x); err != nil {
			return err
		}
		p := chunkstore.Prepare(orphan, nil)
		if _, err := tx.Put(&p); err != nil {
			return err
		}
		return putHold(tx, 42, 0, []chunkstore.ID{x, p.ID})
	}); err != nil {
		t.Fatal(err)
	}
	var during []uint64
	if _, _, _, err := dst.ApplyTree(ctx, recs, chunkOf, ApplyTreeOptions{Root: snap.Root, Snapshot: "p", Batched: func(int, int) {
		dst.Store().View(func(tx *chunkstore.Tx) error {
			return holdChunkRefs(tx, func(r holdRecord, _ chunkstore.ID) { during = append(during, r.Hold) })
		})
	}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range during {
		if h == 42 {
			t.Error("the dead hold was still there during the next apply")
		}
	}
	if len(during) == 0 {
		t.Error("the apply's own hold was not recorded")
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog(), MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if cr, err := Check(st, false); err != nil || len(cr.Problems) > 0 {
		t.Fatalf("fsck: %v %v", err, cr.Problems)
	}
	st.View(func(tx *chunkstore.Tx) error {
		if tx.Bucket(bucketHolds) != nil {
			t.Error("holds left")
		}
		if ok, _ := tx.Has(chunkstore.Sum(orphan)); ok {
			t.Error("the chunk only the dead hold held was kept")
		}
		return nil
	})
}
