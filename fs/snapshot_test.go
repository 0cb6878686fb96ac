package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// TestSnapshotView: a snapshot reads the workspace as it was, through
// overwrites, truncations, removals, renames and new files made after
// it, across a reopen; the live tree is untouched by it; fsck and gc
// count the chunks it keeps, and gc frees none of them.
func TestSnapshotView(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	var err error
	c := Caller{}
	mk := func(parent Ino, name string, data []byte) Attr { return putFile(t, f, parent, name, data) }
	dir, err := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Repeat([]byte("version one "), 1000) // 3 chunks
	a := mk(dir.Ino, "a", v1)
	b := mk(RootIno, "b", []byte("bee"))
	if _, err := f.Create(c, RootIno, "ln", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "dir/a"}); err != nil {
		t.Fatal(err)
	}
	s1, err := f.CreateSnapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "s1"); !errors.Is(err, ErrSnapshotExists) {
		t.Errorf("a second s1: %v", err)
	}
	// After it: overwrite, truncate, remove, rename, create.
	if _, err := f.Write(ctx, a.Ino, 100, []byte("CHANGED"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Unlink(RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(RootIno, "ln", dir.Ino, "ln2", 0); err != nil {
		t.Fatal(err)
	}
	mk(RootIno, "new", []byte("born after"))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(f *FS) {
		t.Helper()
		view, err := f.SnapshotView("s1")
		if err != nil {
			t.Fatal(err)
		}
		if view.Epoch != s1.Epoch {
			t.Errorf("epoch %d, want %d", view.Epoch, s1.Epoch)
		}
		names := func(ino Ino) string {
			list, err := view.ReadDir(ino)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, d := range list {
				out = append(out, d.Name)
			}
			return string(bytes.Join(func() [][]byte {
				var b [][]byte
				for _, s := range out {
					b = append(b, []byte(s))
				}
				return b
			}(), []byte(" ")))
		}
		if got := names(RootIno); got != "b dir ln" {
			t.Errorf("snapshot / lists %q", got)
		}
		if got := names(dir.Ino); got != "a" {
			t.Errorf("snapshot /dir lists %q", got)
		}
		got := make([]byte, len(v1)+10)
		n, err := view.Read(a.Ino, 0, got)
		if err != nil || !bytes.Equal(got[:n], v1) {
			t.Errorf("snapshot /dir/a: %d bytes, equal %v, %v", n, bytes.Equal(got[:n], v1), err)
		}
		if ba, err := view.Lookup(RootIno, "b"); err != nil || ba.Ino != b.Ino {
			t.Errorf("snapshot /b: %+v %v", ba, err)
		} else if n, err := view.Read(b.Ino, 0, got); err != nil || string(got[:n]) != "bee" {
			t.Errorf("snapshot /b reads %q %v", got[:n], err)
		}
		ln, err := view.Lookup(RootIno, "ln")
		if err != nil {
			t.Fatal(err)
		}
		if tgt, err := view.Readlink(ln.Ino); err != nil || tgt != "dir/a" {
			t.Errorf("snapshot /ln: %q %v", tgt, err)
		}
		if _, err := view.Lookup(RootIno, "new"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("snapshot /new: %v, want ENOENT", err)
		}
		// The live tree is today's.
		if _, err := f.Lookup(c, RootIno, "b"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("live /b: %v", err)
		}
		live := make([]byte, len(v1))
		f.Open(a.Ino)
		f.Read(ctx, a.Ino, 0, live)
		f.Release(a.Ino)
		if !bytes.Equal(live[100:107], []byte("CHANGED")) {
			t.Errorf("live /dir/a lost its change")
		}
	}
	check(f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// gc keeps what the snapshot holds; fsck counts it.
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := GC(st); err != nil || rep.ChunksFreed != 0 || rep.RefsCorrected != 0 {
		t.Errorf("gc: %+v %v", rep, err)
	}
	if rep, err := Check(st, false); err != nil || !rep.Clean() {
		t.Errorf("fsck: %v %q", err, rep.Problems)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check(f)
	list, err := f.Snapshots()
	if err != nil || len(list) != 1 || list[0].Name != "s1" || list[0].Epoch != s1.Epoch {
		t.Errorf("snapshots: %+v %v", list, err)
	}
}

// manifest describes the whole tree of f: every path's type, mode,
// size, times, link target, xattrs and content hash.
func manifest(t *testing.T, f *FS) string {
	t.Helper()
	var lines []string
	var walk func(dir Ino, path string)
	walk = func(dir Ino, path string) {
		list, err := f.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			if d.Name == "." || d.Name == ".." {
				continue
			}
			a, err := f.Lookup(Caller{}, dir, d.Name)
			if err != nil {
				t.Fatal(err)
			}
			p := path + "/" + d.Name
			line := fmt.Sprintf("%s ino=%d mode=%#o nlink=%d size=%d mtime=%d", p, a.Ino, a.Mode, a.Nlink, a.Size, a.Mtime)
			switch {
			case a.IsRegular():
				buf := make([]byte, a.Size)
				f.Open(a.Ino)
				n, err := f.Read(context.Background(), a.Ino, 0, buf)
				f.Release(a.Ino)
				if err != nil {
					t.Fatal(err)
				}
				line += fmt.Sprintf(" sha=%x", sha256.Sum256(buf[:n]))
			case a.IsSymlink():
				tg, _ := f.Readlink(a.Ino)
				line += " -> " + tg
			}
			names, _ := f.ListXattr(a.Ino)
			for _, n := range names {
				v, _ := f.GetXattr(a.Ino, n)
				line += fmt.Sprintf(" %s=%q", n, v)
			}
			lines = append(lines, line)
			if a.IsDir() {
				walk(a.Ino, p)
			}
		}
	}
	walk(RootIno, "")
	return strings.Join(lines, "\n")
}

// TestRestoreSnapshot: after overwrites, truncations, removals, renames,
// new files and xattr changes, a restore puts back exactly the tree the
// snapshot saw (every attribute and byte), in proportion to what changed,
// and leaves a store fsck finds clean; gc then frees the chunks only the
// undone changes used.
func TestRestoreSnapshot(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	var err error
	c := Caller{}
	write := func(parent Ino, name string, data []byte) Attr { return putFile(t, f, parent, name, data) }
	dir, _ := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	for i := range 20 {
		write(dir.Ino, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte{byte(i)}, 5000+i))
	}
	keep := write(RootIno, "keep", []byte("never touched"))
	if err := f.SetXattr(keep.Ino, "user.x", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	f.Create(c, RootIno, "ln", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "keep"})
	if _, err := f.CreateSnapshot(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	want := manifest(t, f)
	// The agent's mistakes.
	write(dir.Ino, "f03", []byte("overwritten"))
	fa, _ := f.Lookup(c, dir.Ino, "f04")
	if _, err := f.SetAttr(c, fa.Ino, SetAttrIn{Size: ptr(uint64(10))}); err != nil {
		t.Fatal(err)
	}
	f.Unlink(dir.Ino, "f05")
	f.Rename(dir.Ino, "f06", RootIno, "moved", 0)
	write(RootIno, "junk", bytes.Repeat([]byte("junk"), 3000))
	f.SetXattr(keep.Ino, "user.x", []byte("2"), 0)
	f.SetXattr(keep.Ino, "user.y", []byte("new"), 0)
	f.Unlink(RootIno, "ln")
	if _, err := f.CreateSnapshot(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	wantAfter := manifest(t, f)
	if wantAfter == want {
		t.Fatal("the changes changed nothing")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RestoreSnapshot(st, "before")
	if err != nil {
		t.Fatal(err)
	}
	// 20 files, a few records each, and only a handful changed.
	if rep.Records == 0 || rep.Records > 40 {
		t.Errorf("restore touched %d records", rep.Records)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck after the restore: %v %q", err, r.Problems)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, f); got != want {
		t.Errorf("restored tree differs:\n got %s\nwant %s", got, want)
	}
	// The later snapshot still sees the state it was taken of: restore
	// to it, and back.
	f.Close()
	st, _ = chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if _, err := RestoreSnapshot(st, "after"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f, _ = Open(path, Options{Logger: quietLog()})
	if got := manifest(t, f); got != wantAfter {
		t.Errorf("restored to the later snapshot:\n got %s\nwant %s", got, wantAfter)
	}
	f.Close()
	st, _ = chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	defer st.Close()
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck at the end: %v %q", err, r.Problems)
	}
}

func ptr[T any](v T) *T { return &v }

const restoreWorkerEnv = "COMPUTERFS_RESTORE_WORKER"

// TestRestoreWorker is TestRestoreKill's child: it restores the store
// named in its environment to "a", then "b", then "a"... until killed.
func TestRestoreWorker(t *testing.T) {
	path := os.Getenv(restoreWorkerEnv)
	if path == "" {
		t.Skip("TestRestoreKill's child process")
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := RestoreSnapshot(st, []string{"a", "b"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoreKill: kill -9 during restores leaves the tree of one
// snapshot or the other, never a mix, and a store fsck finds clean.
func TestRestoreKill(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	files := func(gen byte) {
		for i := range 30 {
			name := fmt.Sprintf("f%02d", i)
			a, err := f.Lookup(c, RootIno, name)
			if err != nil {
				a, err = f.Create(c, RootIno, name, NewNode{Mode: syscall.S_IFREG | 0o644})
			} else {
				_, err = f.Open(a.Ino)
			}
			if err != nil {
				t.Fatal(err)
			}
			f.Write(ctx, a.Ino, 0, bytes.Repeat([]byte{gen, byte(i)}, 3000+int(gen)*100), false)
			f.Release(a.Ino)
		}
	}
	files(1)
	f.CreateSnapshot(ctx, "a")
	wantA := manifest(t, f)
	files(2)
	f.Unlink(RootIno, "f07")
	f.CreateSnapshot(ctx, "b")
	wantB := manifest(t, f)
	f.Close()
	killRounds(t, path, "TestRestoreWorker", restoreWorkerEnv, 20, 13, 80, func(round int, f *FS) {
		if got := manifest(t, f); got != wantA && got != wantB {
			t.Fatalf("round %d: the tree is neither snapshot's:\n%s", round, got)
		}
	})
}

// TestDeleteSnapshot: deleting a snapshot frees the versions and chunks
// only it held, keeps what another snapshot still needs, and leaves a
// store fsck finds clean.
func TestDeleteSnapshot(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	var err error
	a, _ := f.Create(Caller{}, RootIno, "a", NewNode{Mode: syscall.S_IFREG | 0o644})
	put := func(b byte) {
		f.Open(a.Ino)
		f.Write(ctx, a.Ino, 0, bytes.Repeat([]byte{b}, 8192), false)
		f.Release(a.Ino)
	}
	put(1)
	f.CreateSnapshot(ctx, "one")
	put(2)
	f.CreateSnapshot(ctx, "two")
	put(3)
	f.Close()
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chunks := func() uint64 {
		var n uint64
		st.View(func(tx *chunkstore.Tx) error { s, _ := tx.Stats(); n = s.Chunks; return nil })
		return n
	}
	if n := chunks(); n != 3 { // the 1s, the 2s, the 3s: one distinct chunk each
		t.Fatalf("%d chunks with two snapshots", n)
	}
	rep, err := DeleteSnapshot(st, "one")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chunks != 2 || chunks() != 2 {
		t.Errorf("deleting one: %+v, %d chunks left, want 2 released and 2 left", rep, chunks())
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck: %v %q", err, r.Problems)
	}
	if _, err := DeleteSnapshot(st, "one"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("a second delete: %v", err)
	}
	if _, err := RestoreSnapshot(st, "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := DeleteSnapshot(st, "two"); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck at the end: %v %q", err, r.Problems)
	}
	if gc, err := GC(st); err != nil || gc.ChunksFreed != 0 || gc.RefsCorrected != 0 {
		t.Errorf("gc found leftovers: %+v %v", gc, err)
	}
	list, _ := ListSnapshots(st)
	if len(list) != 0 {
		t.Errorf("snapshots left: %+v", list)
	}
}

// TestDiffSnapshots: added, deleted, modified and renamed files between
// two snapshots and between a snapshot and the last commit, by path.
func TestDiffSnapshots(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	var err error
	c := Caller{}
	put := func(parent Ino, name, data string) Attr { return putFile(t, f, parent, name, []byte(data)) }
	dir, _ := f.Create(c, RootIno, "src", NewNode{Mode: syscall.S_IFDIR | 0o755})
	put(dir.Ino, "main.go", "package main\n")
	put(dir.Ino, "util.go", "package util\n")
	put(RootIno, "README", "hello\n")
	put(RootIno, "same", "unchanged\n")
	f.CreateSnapshot(ctx, "a")
	put(dir.Ino, "main.go", "package main // edited\n")
	f.Unlink(dir.Ino, "util.go")
	f.Rename(RootIno, "README", dir.Ino, "README.md", 0)
	put(RootIno, "new.txt", "new\n")
	f.CreateSnapshot(ctx, "b")
	put(RootIno, "later", "after b\n")
	f.Close()
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	show := func(d []DiffEntry) string {
		var out []string
		for _, e := range d {
			out = append(out, e.Kind+" "+e.OldPath+" "+e.Path)
		}
		return strings.Join(out, "\n")
	}
	d, err := DiffSnapshots(st, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	want := "added  /new.txt\nrenamed /README /src/README.md\nmodified /src/main.go /src/main.go\ndeleted /src/util.go "
	if got := show(d); got != want {
		t.Errorf("diff a b:\n%s\nwant\n%s", got, want)
	}
	d, err = DiffSnapshots(st, "b", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := show(d); got != "added  /later" {
		t.Errorf("diff b and now:\n%s", got)
	}
	if _, err := DiffSnapshots(st, "b", "a"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("diff b a: %v", err)
	}
}

// putFile writes data at the start of parent/name, made if missing, and
// closes it.
func putFile(t testing.TB, f *FS, parent Ino, name string, data []byte) Attr {
	t.Helper()
	c := Caller{}
	a, err := f.Lookup(c, parent, name)
	if err != nil {
		a, err = f.Create(c, parent, name, NewNode{Mode: syscall.S_IFREG | 0o644})
	} else {
		_, err = f.Open(a.Ino)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(context.Background(), a.Ino, 0, data, false); err != nil {
		t.Fatal(err)
	}
	f.Release(a.Ino)
	return a
}

// openSmallChunks opens a new workspace of 4 KiB chunks in a temporary
// directory, and returns it and its store's path.
func openSmallChunks(t testing.TB) (*FS, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

const snapCreateWorkerEnv = "COMPUTERFS_SNAPCREATE_WORKER"

// snapCreateFiles writes generation gen of TestSnapshotCreateKill's
// files: 10 files whose bytes say their generation and index.
func snapCreateFiles(t *testing.T, f *FS, gen int) {
	for i := range 10 {
		a := putFile(t, f, RootIno, fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte(gen), byte(i)}, 2000+gen%7*100))
		size := uint64(2 * (2000 + gen%7*100)) // putFile writes over, and does not truncate
		if _, err := f.SetAttr(Caller{}, a.Ino, SetAttrIn{Size: &size}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotCreateWorker is TestSnapshotCreateKill's child: it writes
// a generation of files and snapshots it as "gGEN", and so on, until
// killed.
func TestSnapshotCreateWorker(t *testing.T) {
	path := os.Getenv(snapCreateWorkerEnv)
	if path == "" {
		t.Skip("TestSnapshotCreateKill's child process")
	}
	f, err := Open(path, Options{Logger: quietLog(), CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for gen := len(list) + 1; ; gen++ {
		snapCreateFiles(t, f, gen)
		if _, err := f.CreateSnapshot(context.Background(), fmt.Sprintf("g%d", gen)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotCreateKill: kill -9 while snapshots are created leaves a
// store fsck finds clean, and every snapshot it lists holds exactly the
// generation of files it was taken of (none half made, none of a later
// generation's bytes).
func TestSnapshotCreateKill(t *testing.T) {
	f, path := openSmallChunks(t)
	f.Close()
	most := 0
	killRounds(t, path, "TestSnapshotCreateWorker", snapCreateWorkerEnv, 20, 11, 70, func(round int, f *FS) {
		list, err := f.Snapshots()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		most = max(most, len(list))
		for _, s := range list {
			var gen int
			if _, err := fmt.Sscanf(s.Name, "g%d", &gen); err != nil {
				t.Fatalf("round %d: snapshot %q", round, s.Name)
			}
			v, err := f.SnapshotView(s.Name)
			if err != nil {
				t.Fatalf("round %d: view of %s: %v", round, s.Name, err)
			}
			for i := range 10 {
				a, err := v.Lookup(RootIno, fmt.Sprintf("f%d", i))
				if err != nil {
					t.Fatalf("round %d: %s: f%d: %v", round, s.Name, i, err)
				}
				want := bytes.Repeat([]byte{byte(gen), byte(i)}, 2000+gen%7*100)
				got := make([]byte, a.Size+1)
				n, err := v.Read(a.Ino, 0, got)
				if err != nil || !bytes.Equal(got[:n], want) {
					t.Fatalf("round %d: %s: f%d holds %d bytes (%v), not generation %d's", round, s.Name, i, n, err, gen)
				}
			}
		}
	})
	if most == 0 {
		t.Fatal("no round left a snapshot: the kills came before any create")
	}
	t.Logf("%d snapshots after the last round", most)
}
