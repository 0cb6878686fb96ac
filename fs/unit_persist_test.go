package fs

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// entryState is everything observable about one name in the tree.
type entryState struct {
	Attr   Attr
	Data   []byte
	Target string
	Xattrs map[string]string
}

// snapshotTree walks the tree from the root and records every entry.
func (h *harness) snapshotTree() map[string]entryState {
	h.t.Helper()
	out := map[string]entryState{}
	var walk func(dir Ino, path string)
	walk = func(dir Ino, path string) {
		list, err := h.f.ReadDir(dir)
		if err != nil {
			h.t.Fatalf("ReadDir %s: %v", path, err)
		}
		for _, e := range list[2:] {
			p := path + "/" + e.Name
			a := h.lookup(dir, e.Name)
			if a.Ino != e.Ino || a.Mode&syscall.S_IFMT != e.Type {
				h.t.Errorf("%s: entry %v, inode %+v", p, e, a)
			}
			st := entryState{Attr: a, Xattrs: map[string]string{}}
			switch {
			case a.IsRegular():
				st.Data = h.readAll(a.Ino)
			case a.IsSymlink():
				st.Target, err = h.f.Readlink(a.Ino)
				if err != nil {
					h.t.Fatal(err)
				}
			}
			names, err := h.f.ListXattr(a.Ino)
			if err != nil {
				h.t.Fatal(err)
			}
			for _, n := range names {
				v, err := h.f.GetXattr(a.Ino, n)
				if err != nil {
					h.t.Fatal(err)
				}
				st.Xattrs[n] = string(v)
			}
			out[p] = st
			if a.IsDir() {
				walk(a.Ino, p)
			}
		}
	}
	out["/"] = entryState{Attr: h.attr(RootIno), Xattrs: map[string]string{}}
	walk(RootIno, "")
	return out
}

func diffTrees(t *testing.T, stage string, got, want map[string]entryState) {
	t.Helper()
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s: %s missing", stage, p)
			continue
		}
		w := want[p]
		if g.Attr != w.Attr {
			t.Errorf("%s: %s attr\n got %+v\nwant %+v", stage, p, g.Attr, w.Attr)
		}
		if !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: %s data differs at %d", stage, p, firstDiff(g.Data, w.Data))
		}
		if g.Target != w.Target || !reflect.DeepEqual(g.Xattrs, w.Xattrs) {
			t.Errorf("%s: %s target %q xattrs %v, want %q %v", stage, p, g.Target, g.Xattrs, w.Target, w.Xattrs)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected %s", stage, p)
		}
	}
}

// buildTree makes a varied tree and returns nothing: snapshotTree records it.
func buildTree(h *harness) {
	cs := h.f.ChunkSize()
	docs := h.mkdir(RootIno, "docs")
	deep := h.mkdir(h.mkdir(docs.Ino, "a").Ino, "b")
	small := h.file(docs.Ino, "small.txt")
	h.write(small.Ino, 0, []byte("hello, world\n"))
	big := h.file(deep.Ino, "big.bin")
	h.write(big.Ino, 0, pattern(1, 5*cs+123))
	sparse := h.file(RootIno, "sparse")
	h.write(sparse.Ino, int64(7*cs+5), []byte("tail"))
	empty := h.create(RootIno, "empty", syscall.S_IFREG|0o4750)
	_ = empty
	h.symlink(docs.Ino, "link", "../sparse")
	h.create(RootIno, "fifo", syscall.S_IFIFO|0o600)
	h.create(RootIno, "sock", syscall.S_IFSOCK|0o777)
	h.create(RootIno, "tty", syscall.S_IFCHR|0o620)
	if _, err := h.f.Link(user, small.Ino, deep.Ino, "hardlink"); err != nil {
		h.t.Fatal(err)
	}
	h.f.SetXattr(small.Ino, "user.mime", []byte("text/plain"), 0)
	h.f.SetXattr(docs.Ino, "user.dir", []byte{}, 0)
	h.f.SetXattr(big.Ino, "security.selinux", []byte("system_u:object_r:x:s0\x00"), 0)
	at, mt := int64(1_000_000_000_123_456_789), int64(-5)
	gid := uint32(77)
	if _, err := h.f.SetAttr(user, big.Ino, SetAttrIn{Atime: &at, Mtime: &mt, Gid: &gid}); err != nil {
		h.t.Fatal(err)
	}
	sgid := h.create(RootIno, "shared", syscall.S_IFDIR|syscall.S_ISGID|syscall.S_ISVTX|0o2777)
	h.file(sgid.Ino, "inherits")
	// Something created and removed leaves no trace.
	h.file(RootIno, "ephemeral")
	h.f.Unlink(RootIno, "ephemeral")
	h.mkdir(docs.Ino, "gone")
	h.f.Rmdir(docs.Ino, "gone")
	// A copy that shares chunks.
	cp := h.file(RootIno, "copy.bin")
	h.sync()
	if _, err := h.f.CopyRange(bg, big.Ino, 0, cp.Ino, 0, int64(5*cs+123)); err != nil {
		h.t.Fatal(err)
	}
}

func TestPersistence(t *testing.T) {
	for _, cs := range []int{4096, 1 << 20} {
		t.Run(fmt.Sprint(cs), func(t *testing.T) {
			h := newHarness(t, Options{ChunkSize: cs})
			buildTree(h)
			want := h.snapshotTree()
			h.reopen()
			diffTrees(t, "reopened", h.snapshotTree(), want)
			// Reading changes nothing: a second reopen sees the same.
			h.reopen()
			diffTrees(t, "reopened twice", h.snapshotTree(), want)
			if h.f.ChunkSize() != cs {
				t.Errorf("chunk size %d", h.f.ChunkSize())
			}
			h.closeFS()
			// Info summarises the closed store.
			st, err := chunkstore.Open(h.path, chunkstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			info, err := Info(st)
			if err != nil {
				t.Fatal(err)
			}
			var files uint64
			inodes := map[Ino]bool{}
			for _, e := range want {
				if e.Attr.IsRegular() && !inodes[e.Attr.Ino] {
					files += e.Attr.Size
				}
				inodes[e.Attr.Ino] = true
			}
			if info.ChunkSize != cs || info.LimitBytes != DefaultLimit || info.FileBytes != files || info.Inodes != len(inodes) {
				t.Errorf("Info %+v; want %d bytes in files, %d inodes", info, files, len(inodes))
			}
		})
	}
}

func TestFsyncIsDurable(t *testing.T) {
	// A crash right after fsync is a copy of the file as it is then.
	h := small(t)
	a := h.file(RootIno, "f")
	data := pattern(1, 3*4096+10)
	h.write(a.Ino, 0, data)
	if err := h.f.Fsync(bg, a.Ino); err != nil {
		t.Fatal(err)
	}
	crash := filepath.Join(t.TempDir(), "crash.cfs")
	if err := h.f.Store().DB().View(func(tx *bolt.Tx) error { return tx.CopyFile(crash, 0o600) }); err != nil {
		t.Fatal(err)
	}
	c := &harness{t: t, path: crash, opts: h.opts, logs: h.logs}
	c.open()
	if got := c.readAll(c.lookup(RootIno, "f").Ino); !bytes.Equal(got, data) {
		t.Errorf("fsynced data lost: differs at %d", firstDiff(got, data))
	}
	c.closeFS()
	// And after a clean close.
	h.reopen()
	if got := h.readAll(a.Ino); !bytes.Equal(got, data) {
		t.Errorf("data after Fsync and Close differs at %d", firstDiff(got, data))
	}
	h.closeFS()
}

func TestKernelLookupKeepsUnlinkedInode(t *testing.T) {
	// The kernel's lookup references keep an unlinked inode alive until
	// it forgets them, as open handles do.
	h := small(t)
	kernel := Caller{Uid: 0, Gid: 0, Kernel: true}
	a := h.file(RootIno, "f")
	h.write(a.Ino, 0, []byte("data"))
	for range 2 {
		if _, err := h.f.Lookup(kernel, RootIno, "f"); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.f.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if got := string(h.readAll(a.Ino)); got != "data" {
		t.Errorf("unlinked file referenced by the kernel reads %q", got)
	}
	if n := orphanCount(h); n != 1 {
		t.Errorf("%d orphan records", n)
	}
	h.f.Forget(a.Ino, 1)
	if _, err := h.f.GetAttr(a.Ino); err != nil {
		t.Errorf("inode gone with one kernel reference left: %v", err)
	}
	h.f.Forget(a.Ino, 1)
	h.sync()
	if _, err := h.f.GetAttr(a.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("inode after the last Forget: %v", err)
	}
	if n := orphanCount(h); n != 0 || h.stats().Chunks != 0 {
		t.Errorf("%d orphan records, %d chunks left", n, h.stats().Chunks)
	}
	// Forgetting more than was looked up, or an unknown inode, is harmless.
	b := h.file(RootIno, "g")
	h.f.Lookup(kernel, RootIno, "g")
	h.f.Forget(b.Ino, 10)
	h.f.Forget(9999, 1)
	if _, err := h.f.GetAttr(b.Ino); err != nil {
		t.Errorf("linked inode after Forget: %v", err)
	}
	h.closeFS()
}

func orphanCount(h *harness) int {
	n := 0
	h.f.Store().View(func(tx *chunkstore.Tx) error {
		return tx.Sealed(bucketOrphans).ForEach(func(k, v []byte) error { n++; return nil })
	})
	return n
}

func TestUnlinkedOpenFile(t *testing.T) {
	for _, how := range []string{"release", "close", "crash"} {
		t.Run(how, func(t *testing.T) {
			h := small(t)
			keep := h.file(RootIno, "keep")
			h.write(keep.Ino, 0, []byte("kept"))
			a := h.file(RootIno, "f")
			data := pattern(1, 3*4096)
			h.write(a.Ino, 0, data)
			h.sync()
			if _, err := h.f.Open(a.Ino); err != nil {
				t.Fatal(err)
			}
			if err := h.f.Unlink(RootIno, "f"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.f.Lookup(user, RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
				t.Errorf("Lookup of an unlinked name: %v", err)
			}
			// The open file lives on: it can be read, written and stat'ed.
			if got := h.attr(a.Ino); got.Nlink != 0 {
				t.Errorf("nlink %d", got.Nlink)
			}
			if got := h.readAll(a.Ino); !bytes.Equal(got, data) {
				t.Error("data of an unlinked open file lost")
			}
			h.write(a.Ino, 10, []byte("still writable"))
			copy(data[10:], "still writable")
			h.sync()
			if n := orphanCount(h); n != 1 {
				t.Errorf("%d orphan records, want 1", n)
			}
			h.fsckOpen()
			if got := h.readAll(a.Ino); !bytes.Equal(got, data) {
				t.Error("data of an unlinked open file lost after a commit")
			}
			switch how {
			case "release":
				h.f.Release(a.Ino)
				h.sync()
			case "close":
				h.reopen()
			case "crash":
				// The store as a crash would leave it: the orphan is
				// purged when it is opened.
				crash := filepath.Join(t.TempDir(), "crash.cfs")
				if err := h.f.Store().DB().View(func(tx *bolt.Tx) error { return tx.CopyFile(crash, 0o600) }); err != nil {
					t.Fatal(err)
				}
				h.f.Release(a.Ino)
				h.closeFS()
				h.path = crash
				h.open()
				if !strings.Contains(h.logs.String(), "purged orphaned inodes") {
					t.Error("no log of the purge")
				}
			}
			if _, err := h.f.GetAttr(a.Ino); !errors.Is(err, syscall.ENOENT) {
				t.Errorf("GetAttr after the last reference: %v", err)
			}
			if n := orphanCount(h); n != 0 {
				t.Errorf("%d orphan records left", n)
			}
			if st := h.stats(); st.Chunks != 1 || st.UniqueBytes != 4 {
				t.Errorf("the unlinked file's chunks remain: %+v", st)
			}
			if got := string(h.readAll(keep.Ino)); got != "kept" {
				t.Errorf("other file %q", got)
			}
			h.closeFS()
		})
	}
}

func TestTmpfile(t *testing.T) {
	h := small(t)
	a, err := h.f.Create(user, RootIno, "ignored", NewNode{Mode: 0o600, Tmpfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Nlink != 0 || !a.IsRegular() || a.Mode&0o777 != 0o600 {
		t.Errorf("tmpfile %+v", a)
	}
	if names := h.names(RootIno); len(names) != 0 {
		t.Errorf("a tmpfile has a name: %v", names)
	}
	data := pattern(1, 2*4096+1)
	h.write(a.Ino, 0, data)
	h.sync()
	if n := orphanCount(h); n != 1 {
		t.Errorf("%d orphan records for an unnamed tmpfile", n)
	}
	h.fsckOpen()
	// A failed link (the name exists) does not use up the right to link.
	h.file(RootIno, "taken")
	if _, err := h.f.Link(user, a.Ino, RootIno, "taken"); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("Link to an existing name: %v", err)
	}
	l, err := h.f.Link(user, a.Ino, RootIno, "named")
	if err != nil {
		t.Fatalf("Link of a tmpfile after a failed Link: %v", err)
	}
	if l.Nlink != 1 {
		t.Errorf("linked tmpfile nlink %d", l.Nlink)
	}
	h.f.Release(a.Ino)
	h.sync()
	if n := orphanCount(h); n != 0 {
		t.Errorf("%d orphan records after linking", n)
	}
	h.reopen()
	if got := h.readAll(h.lookup(RootIno, "named").Ino); !bytes.Equal(got, data) {
		t.Error("linked tmpfile lost its data")
	}
	// A tmpfile never linked vanishes when released.
	b, err := h.f.Create(user, RootIno, "", NewNode{Mode: 0o600, Tmpfile: true})
	if err != nil {
		t.Fatal(err)
	}
	h.write(b.Ino, 0, pattern(2, 5000))
	h.sync()
	h.f.Release(b.Ino)
	h.sync()
	if _, err := h.f.GetAttr(b.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("released tmpfile: %v", err)
	}
	if _, err := h.f.Link(user, b.Ino, RootIno, "late"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Link of a released tmpfile: %v", err)
	}
	if st := h.stats(); st.Chunks != 3 {
		t.Errorf("chunks %d, want the named file's 3", st.Chunks)
	}
	h.closeFS()
}

func TestRenameDirThenChangeTarget(t *testing.T) {
	// A directory moved between two committed directories, then more
	// changes to both before the next commit: nothing may be lost.
	h := small(t)
	d1 := h.mkdir(RootIno, "d1")
	d2 := h.mkdir(RootIno, "d2")
	sub := h.mkdir(d1.Ino, "sub")
	h.file(sub.Ino, "inside")
	h.sync()
	if err := h.f.Rename(d1.Ino, "sub", d2.Ino, "moved", 0); err != nil {
		t.Fatal(err)
	}
	h.file(d2.Ino, "new-in-d2")
	h.file(d1.Ino, "new-in-d1")
	h.sync()
	if got := h.names(d2.Ino); !reflect.DeepEqual(got, []string{"moved", "new-in-d2"}) {
		t.Errorf("d2 holds %v", got)
	}
	if got := h.names(d1.Ino); !reflect.DeepEqual(got, []string{"new-in-d1"}) {
		t.Errorf("d1 holds %v", got)
	}
	if a := h.attr(sub.Ino); a.Parent != d2.Ino {
		t.Errorf("parent %d", a.Parent)
	}
	h.closeFS()
}

// damage is one way of breaking a closed store.
type damage struct {
	name        string
	inject      func(t *testing.T, tx *bolt.Tx, w *world)
	wantProblem string
	wantRepair  string // in the repair report, if set
	// after checks the repaired workspace.
	after func(t *testing.T, h *harness, w *world)
}

// world is the workspace the damage tests break.
type world struct {
	file, other, dir, inner Attr
	fileData, innerData     []byte
	chunkIDs                []chunkstore.ID // of file
}

func buildWorld(h *harness) *world {
	w := &world{}
	w.file = h.file(RootIno, "file")
	w.fileData = pattern(1, 3*4096)
	h.write(w.file.Ino, 0, w.fileData)
	h.f.SetXattr(w.file.Ino, "user.a", []byte("xa"), 0)
	h.f.SetXattr(w.file.Ino, "user.b", []byte("xb"), 0)
	w.other = h.file(RootIno, "other")
	h.write(w.other.Ino, 0, []byte("other data"))
	w.dir = h.mkdir(RootIno, "dir")
	w.inner = h.file(w.dir.Ino, "inner")
	w.innerData = pattern(2, 5000)
	h.write(w.inner.Ino, 0, w.innerData)
	h.mkdir(w.dir.Ino, "subdir")
	for c := range 3 {
		w.chunkIDs = append(w.chunkIDs, chunkstore.Sum(w.fileData[c*4096:(c+1)*4096]))
	}
	return w
}

func putIndexRefs(t *testing.T, tx *bolt.Tx, id chunkstore.ID, delta int64) {
	t.Helper()
	idx := sealed.In(tx, []byte("chunkidx"))
	v, _ := idx.Get(id[:])
	v = bytes.Clone(v)
	if len(v) != 24 {
		t.Fatalf("index entry of %s: %d bytes", id.Short(), len(v))
	}
	refs := int64(beUint64(v[8:]))
	putBeUint64(v[8:], uint64(refs+delta))
	if err := idx.Put(id[:], v); err != nil {
		t.Fatal(err)
	}
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, x := range b[:8] {
		v = v<<8 | uint64(x)
	}
	return v
}

func putBeUint64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func modifyInode(t *testing.T, tx *bolt.Tx, ino Ino, fn func(a *Attr)) {
	t.Helper()
	b := sealed.In(tx, bucketInodes)
	v, _ := b.Get(inoKey(ino))
	a, target, sum, err := decodeInodeSum(ino, v)
	if err != nil {
		t.Fatal(err)
	}
	fn(&a)
	if err := b.Put(inoKey(ino), encodeInode(&a, target, sum)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckDetectsAndRepairs(t *testing.T) {
	tests := []damage{
		{
			name: "inode record of a named file deleted",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketInodes).Delete(inoKey(w.file.Ino))
			},
			wantProblem: "names missing inode",
			after: func(t *testing.T, h *harness, w *world) {
				if _, err := h.f.Lookup(user, RootIno, "file"); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("entry of the lost inode: %v", err)
				}
				// other's one chunk and inner's two remain.
				if st := h.stats(); st.Chunks != 3 || st.UniqueBytes != 10+5000 {
					t.Errorf("the lost inode's chunks remain: %+v", st)
				}
			},
		},
		{
			name: "reference count too high",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				putIndexRefs(t, tx, w.chunkIDs[1], +3)
			},
			wantProblem: "has reference count 4, but 1 references",
		},
		{
			name: "reference count too low",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				// Make chunk 0 referenced twice, with a count of 1.
				sealed.In(tx, bucketChunks).Put(chunkKey(w.file.Ino, 2), w.chunkIDs[0][:])
			},
			wantProblem: "has reference count 1, but 2 references",
			after: func(t *testing.T, h *harness, w *world) {
				want := bytes.Clone(w.fileData)
				copy(want[2*4096:], w.fileData[:4096])
				if got := h.readAll(w.file.Ino); !bytes.Equal(got, want) {
					t.Error("file content after repair")
				}
			},
		},
		{
			name: "link count wrong",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				modifyInode(t, tx, w.other.Ino, func(a *Attr) { a.Nlink = 5 })
				modifyInode(t, tx, w.dir.Ino, func(a *Attr) { a.Nlink = 2 })
			},
			wantProblem: "has link count 5, but 1 names",
			after: func(t *testing.T, h *harness, w *world) {
				if h.attr(w.other.Ino).Nlink != 1 || h.attr(w.dir.Ino).Nlink != 3 {
					t.Errorf("nlinks %d %d", h.attr(w.other.Ino).Nlink, h.attr(w.dir.Ino).Nlink)
				}
			},
		},
		{
			name: "entry type wrong",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				k := direntKey(RootIno, "other")
				if err := sealed.In(tx, bucketDirents).Put(k, encodeDirent(dirent{Ino: w.other.Ino, Type: syscall.S_IFIFO})); err != nil {
					t.Fatal(err)
				}
			},
			wantProblem: `entry "other" in directory 1 has type`,
			after: func(t *testing.T, h *harness, w *world) {
				entries, err := h.f.ReadDir(RootIno)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if e.Name == "other" && e.Type != syscall.S_IFREG {
						t.Errorf("entry type after repair: %#o", e.Type)
					}
				}
			},
		},
		{
			name: "directory parent wrong",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				modifyInode(t, tx, w.dir.Ino, func(a *Attr) { a.Parent = w.file.Ino })
			},
			wantProblem: "but its parent is",
			after: func(t *testing.T, h *harness, w *world) {
				if p := h.attr(w.dir.Ino).Parent; p != RootIno {
					t.Errorf("parent after repair: %d", p)
				}
			},
		},
		{
			name: "entry of a file deleted",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketDirents).Delete(direntKey(w.dir.Ino, "inner"))
			},
			wantProblem: "is not reachable from the root",
			after: func(t *testing.T, h *harness, w *world) {
				lf := h.lookup(RootIno, "lost+found")
				a := h.lookup(lf.Ino, fmt.Sprintf("#%d", w.inner.Ino))
				if got := h.readAll(a.Ino); !bytes.Equal(got, w.innerData) {
					t.Error("relinked file lost its data")
				}
			},
		},
		{
			name: "entry of a directory deleted",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketDirents).Delete(direntKey(RootIno, "dir"))
			},
			wantProblem: "is not reachable from the root",
			after: func(t *testing.T, h *harness, w *world) {
				lf := h.lookup(RootIno, "lost+found")
				d := h.lookup(lf.Ino, fmt.Sprintf("#%d", w.dir.Ino))
				if d.Parent != lf.Ino {
					t.Errorf("relinked directory's parent %d", d.Parent)
				}
				if got := h.readAll(h.lookup(d.Ino, "inner").Ino); !bytes.Equal(got, w.innerData) {
					t.Error("relinked subtree lost its data")
				}
				if h.attr(RootIno).Nlink != 3 {
					t.Errorf("root nlink %d", h.attr(RootIno).Nlink)
				}
			},
		},
		{
			name: "chunk body corrupted",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				idx := tx.Bucket([]byte("chunkidx")).Get(w.chunkIDs[1][:])
				bodies := tx.Bucket([]byte("chunks"))
				v := bytes.Clone(chunkstore.BodyValue(bodies, idx[:8]))
				v[37+100] ^= 0xff
				chunkstore.PutBodyValue(bodies, idx[:8], v)
			},
			wantProblem: "hash mismatch",
			after: func(t *testing.T, h *harness, w *world) {
				// Never left in place reading zeros: moved to
				// /lost+found, with the lost range in the report.
				if _, err := h.f.Lookup(user, RootIno, "file"); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("the damaged file is still at /file: %v", err)
				}
				lf := h.lookup(RootIno, "lost+found")
				if got := h.lookup(lf.Ino, fmt.Sprintf("#%d", w.file.Ino)); got.Ino != w.file.Ino {
					t.Errorf("/lost+found/#%d is inode %d", w.file.Ino, got.Ino)
				}
				want := bytes.Clone(w.fileData)
				clear(want[4096 : 2*4096])
				if got := h.readAll(w.file.Ino); !bytes.Equal(got, want) {
					t.Errorf("file after dropping its damaged chunk differs at %d", firstDiff(got, want))
				}
			},
			wantRepair: "bytes 4096 to 8192 were lost",
		},
		{
			name: "chunk list names a missing chunk",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				id := chunkstore.Sum([]byte("never stored"))
				sealed.In(tx, bucketChunks).Put(chunkKey(w.inner.Ino, 0), id[:])
			},
			wantProblem: "/dir/inner: bytes 0 to 4096: chunk",
		},
		{
			name: "chunk past the end of the file",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketChunks).Put(chunkKey(w.other.Ino, 7), w.chunkIDs[0][:])
				putIndexRefs(t, tx, w.chunkIDs[0], +1)
			},
			wantProblem: "lies past its size",
		},
		{
			name: "next inode number too low",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketMeta).Put(keyNextIno, inoKey(w.file.Ino))
			},
			wantProblem: "next inode number",
			after: func(t *testing.T, h *harness, w *world) {
				if a := h.file(RootIno, "fresh"); a.Ino <= w.inner.Ino+1 {
					t.Errorf("new inode %d reuses a number", a.Ino)
				}
			},
		},
		{
			name: "orphan record of a linked inode",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketOrphans).Put(inoKey(w.other.Ino), nil)
			},
			wantProblem: "orphan record for inode",
		},
		{
			name: "inode record bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				flipRecord(t, tx, bucketInodes, inoKey(w.other.Ino), 30)
			},
			wantProblem: "inode " + fmt.Sprint(3) + ": workspace record damaged",
			wantRepair:  "its record was damaged and rebuilt",
			after: func(t *testing.T, h *harness, w *world) {
				lf := h.lookup(RootIno, "lost+found")
				ino := h.lookup(lf.Ino, fmt.Sprintf("#%d", w.other.Ino)).Ino
				if a := h.attr(ino); a.Size != 10 || a.Mode != syscall.S_IFREG|0o600 {
					t.Errorf("rebuilt inode: size %d mode %#o", a.Size, a.Mode)
				}
				if got := h.readAll(ino); string(got) != "other data" {
					t.Errorf("rebuilt file reads %q", got)
				}
			},
		},
		{
			name: "directory entry bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				flipRecord(t, tx, bucketDirents, direntKey(w.dir.Ino, "inner"), 3)
			},
			wantProblem: "/dir/inner: the directory entry is damaged",
			wantRepair:  "moved unreachable inode",
		},
		{
			name: "chunk list record bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				flipRecord(t, tx, bucketChunks, chunkKey(w.file.Ino, 1), 5)
			},
			wantProblem: "/file: bytes 4096 to 8192: the chunk list record is damaged",
			wantRepair:  "were lost (a damaged chunk list record)",
			after: func(t *testing.T, h *harness, w *world) {
				if _, err := h.f.Lookup(user, RootIno, "file"); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("the damaged file is still at /file: %v", err)
				}
			},
		},
		{
			name: "chunk index record bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				flipRecord(t, tx, []byte("chunkidx"), w.chunkIDs[1][:], 10)
			},
			wantProblem: "workspace record damaged: bucket chunkidx",
			wantRepair:  "indexed 1 chunk bodies again",
			after: func(t *testing.T, h *harness, w *world) {
				// Nothing lost: the body proved what it was.
				if got := h.readAll(w.file.Ino); !bytes.Equal(got, w.fileData) {
					t.Errorf("file after reindexing differs at %d", firstDiff(got, w.fileData))
				}
			},
		},
		{
			name: "extended attribute bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				k := xattrKey(w.other.Ino, "user.test")
				sealed.In(tx, bucketXattrs).Put(k, []byte("value"))
				flipRecord(t, tx, bucketXattrs, k, 1)
			},
			wantProblem: `/other: extended attribute "user.test" is damaged`,
		},
		{
			name: "next inode number bit flip",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				flipRecord(t, tx, bucketMeta, keyNextIno, 7)
			},
			wantProblem: "next inode number: workspace record damaged",
		},
		{
			name: "undecodable inode record",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketInodes).Put(inoKey(w.other.Ino), []byte{9, 9, 9})
			},
			wantProblem: "malformed record",
		},
		{
			name: "undecodable directory entry",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				sealed.In(tx, bucketDirents).Put(direntKey(RootIno, "junk"), []byte{1, 2, 3})
			},
			wantProblem: `entry "junk"`,
		},
		{
			name: "unreachable body",
			inject: func(t *testing.T, tx *bolt.Tx, w *world) {
				chunkstore.PutBodyValue(tx.Bucket([]byte("chunks")), inoKey(1<<40), []byte("orphaned body bytes"))
			},
			wantProblem: "unreachable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			h.allowErrorLogs = true
			w := buildWorld(h)
			h.closeFS()
			st, err := chunkstore.Open(h.path, chunkstore.Options{Logger: h.opts.Logger})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.DB().Update(func(tx *bolt.Tx) error { tt.inject(t, tx, w); return nil }); err != nil {
				t.Fatal(err)
			}
			rep, err := Check(st, false)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Clean() || !strings.Contains(strings.Join(rep.Problems, "\n"), tt.wantProblem) {
				t.Fatalf("Check found %q, want a problem containing %q", rep.Problems, tt.wantProblem)
			}
			if len(rep.Repaired) != 0 {
				t.Errorf("Check without repair repaired %v", rep.Repaired)
			}
			// Without repair nothing changes.
			if again, _ := Check(st, false); !reflect.DeepEqual(again.Problems, rep.Problems) {
				t.Errorf("a second Check found %q", again.Problems)
			}
			rep, err = Check(st, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Repaired) == 0 {
				t.Errorf("repair did nothing about %q", rep.Problems)
			}
			if tt.wantRepair != "" && !strings.Contains(strings.Join(rep.Repaired, "\n"), tt.wantRepair) {
				t.Errorf("repairs %q, want one saying %q", rep.Repaired, tt.wantRepair)
			}
			rep, err = Check(st, false)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean() {
				t.Errorf("after repair Check still finds:\n%s", strings.Join(rep.Problems, "\n"))
			}
			st.Close()
			h.open()
			h.snapshotTree() // everything reachable reads without error
			if tt.after != nil {
				tt.after(t, h, w)
			}
			h.closeFS()
		})
	}
}

func TestGC(t *testing.T) {
	h := small(t)
	w := buildWorld(h)
	before := h.snapshotTree()
	h.closeFS()
	st, err := chunkstore.Open(h.path, chunkstore.Options{Logger: h.opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to do on a clean store.
	rep, err := GC(st)
	if err != nil || *rep != (GCReport{}) {
		t.Errorf("GC of a clean store: %+v %v", rep, err)
	}
	junk := chunkstore.Prepare(pattern(9, 3000), nil)
	var stats chunkstore.Stats
	err = st.Update(func(tx *chunkstore.Tx) error {
		if _, err := tx.Put(&junk); err != nil { // referenced by no file
			return err
		}
		if err := tx.Ref(w.chunkIDs[0]); err != nil { // a count that drifted
			return err
		}
		if err := tx.Ref(w.chunkIDs[0]); err != nil {
			return err
		}
		if err := chunkstore.PutBodyValue(tx.Bucket([]byte("chunks")), inoKey(1<<40), []byte("body nobody indexes")); err != nil {
			return err
		}
		stats, err = tx.Stats()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = GC(st)
	if err != nil {
		t.Fatal(err)
	}
	want := GCReport{ChunksFreed: 1, BytesFreed: uint64(len(junk.Body)), RefsCorrected: 1, BodiesFreed: 1, BodyBytesFreed: uint64(len("body nobody indexes"))}
	if *rep != want {
		t.Errorf("GC %+v, want %+v", *rep, want)
	}
	var after chunkstore.Stats
	st.View(func(tx *chunkstore.Tx) error { after, _ = tx.Stats(); return nil })
	if after.Chunks != stats.Chunks-1 || after.LogicalBytes != stats.LogicalBytes-3000-2*4096 {
		t.Errorf("stats after GC %+v (before %+v)", after, stats)
	}
	if rep, err := Check(st, false); err != nil || !rep.Clean() {
		t.Errorf("Check after GC: %v %v", rep.Problems, err)
	}
	st.Close()
	h.open()
	diffTrees(t, "after GC", h.snapshotTree(), before)
	h.closeFS()
}

func TestCheckReportCounts(t *testing.T) {
	h := small(t)
	buildWorld(h)
	h.closeFS()
	rep := h.fsck()
	// root, file, other, dir, inner, subdir
	if rep.Inodes != 6 || rep.Dirents != 5 || rep.FileChunks != 3+1+2 {
		t.Errorf("report %+v", rep)
	}
	if rep.Chunks.Chunks != 6 || rep.Chunks.UniqueBytes != 3*4096+10+5000 {
		t.Errorf("chunk stats %+v", rep.Chunks)
	}
}

func TestOpenErrors(t *testing.T) {
	h := small(t)
	h.opts.LockTimeout = 50e6
	if f, err := Open(h.path, h.opts); err == nil {
		f.Close()
		t.Fatal("second Open of a workspace in use succeeded")
	} else if !errors.Is(err, chunkstore.ErrInUse) {
		t.Errorf("second Open: %v, want ErrInUse", err)
	}
	h.closeFS()
	// A store without the fs buckets' root is refused, not recreated.
	st, err := chunkstore.Open(h.path, chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.DB().Update(func(tx *bolt.Tx) error { return sealed.In(tx, bucketInodes).Delete(inoKey(RootIno)) })
	st.Close()
	if f, err := Open(h.path, h.opts); err == nil {
		f.Close()
		t.Error("Open without a root inode succeeded")
	} else if !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Errorf("Open without a root inode: %v", err)
	}
}

// flipRecord flips one bit of the stored (sealed) value of key in
// bucket, as damage on disk would.
func flipRecord(t *testing.T, tx *bolt.Tx, bucket, key []byte, at int) {
	t.Helper()
	b := tx.Bucket(bucket)
	v := bytes.Clone(b.Get(key))
	if len(v) == 0 {
		t.Fatalf("no record %x in %s", key, bucket)
	}
	v[at%len(v)] ^= 0x10
	if err := b.Put(key, v); err != nil {
		t.Fatal(err)
	}
}
