package fs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// rootOf is f's root once pending changes are committed.
func rootOf(t *testing.T, f *FS) versions.Root {
	t.Helper()
	r, err := f.Root(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.IsZero() {
		t.Fatal("no root")
	}
	return r
}

// computedRoot walks f's records for their root.
func computedRoot(t *testing.T, f *FS) versions.Root {
	t.Helper()
	var r versions.Root
	if err := f.store.View(func(tx *chunkstore.Tx) error {
		var err error
		r, _, err = versions.ComputeRoot(tx.Tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRootChanges: every committed change moves the root to one never
// seen before; the root kept by commits is always the one the records
// sum to; a snapshot records it; a restore brings it back; it survives a
// reopen.
func TestRootChanges(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	seen := map[versions.Root]string{}
	step := func(what string) versions.Root {
		t.Helper()
		r := rootOf(t, f)
		if prev, ok := seen[r]; ok {
			t.Errorf("after %s the root is the one after %s", what, prev)
		}
		seen[r] = what
		if got := computedRoot(t, f); got != r {
			t.Errorf("after %s: stored root %s, the records sum to %s", what, r, got)
		}
		return r
	}
	step("open")
	dir, _ := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	step("mkdir")
	a := putFile(t, f, dir.Ino, "a", bytes.Repeat([]byte("a"), 10000))
	step("write a")
	putFile(t, f, dir.Ino, "a", bytes.Repeat([]byte("b"), 10000))
	step("rewrite a")
	f.SetXattr(a.Ino, "user.x", []byte("1"), 0)
	step("setxattr")
	snap, err := f.CreateSnapshot(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := rootOf(t, f)
	if snap.Root != want {
		t.Errorf("snapshot root %s, the workspace's %s", snap.Root, want)
	}
	if list, err := f.Snapshots(); err != nil || len(list) != 1 || list[0].Root != want {
		t.Errorf("listed %+v, %v", list, err)
	}
	f.SetAttr(c, a.Ino, SetAttrIn{Mode: ptr(uint32(0o600))})
	step("chmod")
	f.Rename(dir.Ino, "a", RootIno, "b", 0)
	step("rename")
	f.RemoveXattr(a.Ino, "user.x")
	step("removexattr")
	f.SetAttr(c, a.Ino, SetAttrIn{Size: ptr(uint64(100))})
	step("truncate")
	putFile(t, f, RootIno, "new", []byte("new"))
	step("create")
	f.Unlink(RootIno, "b")
	step("unlink")
	if _, _, err := f.Restore(ctx, "s", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rootOf(t, f); got != want {
		t.Errorf("after the restore the root is %s, the snapshot's %s", got, want)
	}
	if got := computedRoot(t, f); got != want {
		t.Errorf("after the restore the records sum to %s, the snapshot's %s", got, want)
	}
	fsckClosed(t, f, path)
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := rootOf(t, f); got != want {
		t.Errorf("after a reopen the root is %s, want %s", got, want)
	}
}

// TestRootUndo: undoing every exec gives back the root from before the
// first, the root of a snapshot taken then.
func TestRootUndo(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	src, _ := f.Create(c, RootIno, "src", NewNode{Mode: syscall.S_IFDIR | 0o755})
	main := putFile(t, f, src.Ino, "main.go", bytes.Repeat([]byte("package main\n"), 700))
	putFile(t, f, src.Ino, "util.go", []byte("package main // util\n"))
	snap, err := f.CreateSnapshot(ctx, "before")
	if err != nil {
		t.Fatal(err)
	}
	roots := []versions.Root{rootOf(t, f)}
	if roots[0] != snap.Root {
		t.Fatalf("snapshot root %s, live %s", snap.Root, roots[0])
	}
	execAs(t, f, "e1", func() {
		putFile(t, f, src.Ino, "main.go", bytes.Repeat([]byte("package mine\n"), 700))
	})
	roots = append(roots, rootOf(t, f))
	execAs(t, f, "e2", func() {
		out, _ := f.Create(c, RootIno, "out", NewNode{Mode: syscall.S_IFDIR | 0o755})
		putFile(t, f, out.Ino, "bin", bytes.Repeat([]byte{0x7f, 'E', 'L', 'F'}, 3000))
		f.Unlink(src.Ino, "util.go")
		f.SetXattr(main.Ino, "user.built", []byte("yes"), 0)
	})
	roots = append(roots, rootOf(t, f))
	execAs(t, f, "e3", func() {
		f.Rename(src.Ino, "main.go", src.Ino, "app.go", 0)
		f.SetAttr(c, src.Ino, SetAttrIn{Mode: ptr(uint32(0o700))})
	})
	roots = append(roots, rootOf(t, f))
	for i := range 3 {
		rec, _, _, err := f.Undo(ctx, UndoOptions{})
		if err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
		if got, want := rootOf(t, f), roots[len(roots)-2-i]; got != want {
			t.Errorf("after undoing %s the root is %s, want %s", rec.ID, got, want)
		}
	}
	if got := computedRoot(t, f); got != snap.Root {
		t.Errorf("after undoing every exec the records sum to %s, the snapshot's %s", got, snap.Root)
	}
	fsckClosed(t, f, path)
}

// TestRootFsck: fsck finds a wrong root and --repair stores the right
// one; a store without one (older) gets it when fs opens it.
func TestRootFsck(t *testing.T) {
	f, path := openSmallChunks(t)
	putFile(t, f, RootIno, "a", []byte("a"))
	want := rootOf(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(func(tx *chunkstore.Tx) error {
		wrong := want
		wrong[0]++
		return tx.SetRoot(wrong)
	}); err != nil {
		t.Fatal(err)
	}
	r, err := Check(st, false)
	if err != nil || r.Clean() || !strings.Contains(strings.Join(r.Problems, "\n"), "root identifier") {
		t.Errorf("fsck of a wrong root: %v %q", err, r.Problems)
	}
	if r, err = Check(st, true); err != nil || len(r.Repaired) != 1 {
		t.Errorf("fsck --repair: %v %q", err, r.Repaired)
	}
	if r, err = Check(st, false); err != nil || !r.Clean() {
		t.Errorf("fsck after the repair: %v %q", err, r.Problems)
	}
	if got, err := StoreRoot(st); err != nil || got != want {
		t.Errorf("repaired root %s, %v; want %s", got, err, want)
	}
	// As an older store: no root. fsck says nothing; fs computes it.
	if err := st.Update(func(tx *chunkstore.Tx) error {
		return tx.Bucket(bucketMeta).Delete(versions.KeyRoot)
	}); err != nil {
		t.Fatal(err)
	}
	if r, err = Check(st, false); err != nil || !r.Clean() {
		t.Errorf("fsck of a store without a root: %v %q", err, r.Problems)
	}
	if got, err := StoreRoot(st); err != nil || !got.IsZero() {
		t.Errorf("root %s, %v; want none", got, err)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got := rootOf(t, f); got != want {
		t.Errorf("computed at open: %s, want %s", got, want)
	}
	putFile(t, f, RootIno, "b", []byte("b"))
	if got := rootOf(t, f); got == want || got != computedRoot(t, f) {
		t.Errorf("root after a write: %s (before %s, computed %s)", got, want, computedRoot(t, f))
	}
	fsckClosed(t, f, path)
}

// TestRootOldSnapshot: a snapshot record from before roots reads, with
// no root.
func TestRootOldSnapshot(t *testing.T) {
	s, err := decodeSnapshot("old", encodeSnapshot(Snapshot{Epoch: 7, Created: 9}))
	if err != nil || s.Epoch != 7 || s.Created != 9 || !s.Root.IsZero() {
		t.Errorf("%+v %v", s, err)
	}
	r := versions.RecordHash([]byte("b"), []byte("k"), []byte("v"))
	s, err = decodeSnapshot("new", encodeSnapshot(Snapshot{Epoch: 7, Created: 9, Root: r}))
	if err != nil || s.Root != r {
		t.Errorf("%+v %v", s, err)
	}
	_ = fmt.Sprint
	_ = bolt.Open
}

// TestExecRoots: an exec's record carries the root identifiers of its
// before and after states (the one before the exec's first commit, the
// one its last commit left), an exec that changed nothing one root for
// both; after an undo the workspace's root is the exec's root before.
func TestExecRoots(t *testing.T) {
	ctx := context.Background()
	f, _ := openSmallChunks(t)
	putFile(t, f, RootIno, "a", []byte("a"))
	before := rootOf(t, f)
	rec := execAs(t, f, "e1", func() {
		putFile(t, f, RootIno, "a", []byte("changed"))
		putFile(t, f, RootIno, "b", []byte("b"))
	})
	after := rootOf(t, f)
	if rec.RootAfter != after.String() {
		t.Errorf("EndExec's record: root after %q, want %s", rec.RootAfter, after)
	}
	idle := execAs(t, f, "e2", func() {})
	f.Sync(ctx)
	recs, err := f.Execs()
	if err != nil || len(recs) != 2 {
		t.Fatalf("execs %+v %v", recs, err)
	}
	if recs[0].RootBefore != before.String() || recs[0].RootAfter != after.String() {
		t.Errorf("exec e1: roots %q → %q, want %s → %s", recs[0].RootBefore, recs[0].RootAfter, before, after)
	}
	if recs[1].ID != idle.ID || recs[1].RootBefore != after.String() || recs[1].RootAfter != after.String() {
		t.Errorf("exec e2, which changed nothing: %+v, want root %s", recs[1], after)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: "e1"}); err != nil {
		t.Fatal(err)
	}
	if got := rootOf(t, f); got.String() != recs[0].RootBefore {
		t.Errorf("after the undo the root is %s, want the exec's root before %s", got, recs[0].RootBefore)
	}
}
