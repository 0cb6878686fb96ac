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

// TestSnapshotView: a snapshot reads the workspace as it was, through
// overwrites, truncations, removals, renames and new files made after
// it, across a reopen; the live tree is untouched by it; fsck and gc
// count the chunks it keeps, and gc frees none of them.
func TestSnapshotView(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	c := Caller{}
	mk := func(parent Ino, name string, data []byte) Attr {
		t.Helper()
		a, err := f.Create(c, parent, name, NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(ctx, a.Ino, 0, data, false); err != nil {
			t.Fatal(err)
		}
		f.Release(a.Ino)
		return a
	}
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
