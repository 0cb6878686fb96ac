package fs

// Unit tests of the POSIX model, without FUSE. This file holds the test
// harness and the namespace tests; unit_*_test.go hold the rest.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

var (
	user  = Caller{Uid: 1000, Gid: 1000}
	other = Caller{Uid: 1001, Gid: 2000}
	bg    = context.Background()
)

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness is one workspace under test.
type harness struct {
	t    testing.TB
	path string
	opts Options
	f    *FS
	logs *lockedBuffer
	// allowErrorLogs: the test damages the store on purpose.
	allowErrorLogs bool
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "ws.cfs"), opts: opts, logs: &lockedBuffer{}}
	h.opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h.open()
	t.Cleanup(func() {
		if h.f != nil {
			h.f.Close()
		}
		if !h.allowErrorLogs && strings.Contains(h.logs.String(), "level=ERROR") {
			t.Errorf("errors were logged:\n%s", h.logs.String())
		}
	})
	return h
}

// small returns a harness with 4 KiB chunks, so that tests cross many
// chunk boundaries cheaply.
func small(t testing.TB) *harness { return newHarness(t, Options{ChunkSize: 4096}) }

func (h *harness) open() {
	h.t.Helper()
	f, err := Open(h.path, h.opts)
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	h.f = f
}

// closeFS closes the workspace; the store must then check clean.
func (h *harness) closeFS() {
	h.t.Helper()
	if err := h.f.Close(); err != nil {
		h.t.Fatalf("Close: %v", err)
	}
	h.f = nil
	h.fsck()
}

func (h *harness) reopen() {
	h.t.Helper()
	h.closeFS()
	h.open()
}

// fsck checks the closed store and fails the test on any problem.
func (h *harness) fsck() *CheckReport {
	h.t.Helper()
	st, err := chunkstore.Open(h.path, chunkstore.Options{MustExist: true, Logger: h.opts.Logger})
	if err != nil {
		h.t.Fatalf("open for fsck: %v", err)
	}
	defer st.Close()
	rep, err := Check(st, false)
	if err != nil {
		h.t.Fatalf("Check: %v", err)
	}
	if !rep.Clean() {
		h.t.Errorf("fsck found problems:\n%s", strings.Join(rep.Problems, "\n"))
	}
	return rep
}

// fsckOpen checks the committed state of the open workspace.
func (h *harness) fsckOpen() *CheckReport {
	h.t.Helper()
	h.sync()
	rep, err := Check(h.f.Store(), false)
	if err != nil {
		h.t.Fatalf("Check: %v", err)
	}
	if !rep.Clean() {
		h.t.Errorf("fsck of the open workspace found problems:\n%s", strings.Join(rep.Problems, "\n"))
	}
	return rep
}

func (h *harness) sync() {
	h.t.Helper()
	if err := h.f.Sync(bg); err != nil {
		h.t.Fatalf("Sync: %v", err)
	}
	// Everything is committed: no buffer may be held, nothing may wait.
	// (A chunk overwritten while the spill writer wrote it is freed by
	// the spill writer when its write ends, maybe just after the sync.)
	h.f.mu.Lock()
	for deadline := time.Now().Add(10 * time.Second); h.f.staged > 0 && time.Now().Before(deadline); {
		h.f.mu.Unlock()
		time.Sleep(time.Millisecond)
		h.f.mu.Lock()
	}
	bufs, small, pending := h.f.bufCount, h.f.small.bytes, h.f.pending
	spilled := h.f.spillReady
	if h.f.spill != nil {
		// Released slots hold nothing; their pages are dropped
		// after the next commit (cleanSpill).
		spilled += h.f.spill.slots - len(h.f.spill.free) - len(h.f.spill.released) - h.f.spill.cleaning
	}
	h.f.mu.Unlock()
	if bufs != 0 || small != 0 || pending != 0 || spilled != 0 {
		h.t.Errorf("after Sync: %d buffers and %d bytes of small frames in use, %d slots pending, %d spilled", bufs, small, pending, spilled)
	}
}

func (h *harness) stats() chunkstore.Stats {
	h.t.Helper()
	var st chunkstore.Stats
	if err := h.f.Store().View(func(tx *chunkstore.Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) create(parent Ino, name string, mode uint32) Attr {
	h.t.Helper()
	a, err := h.f.Create(user, parent, name, NewNode{Mode: mode})
	if err != nil {
		h.t.Fatalf("Create %q mode %#o: %v", name, mode, err)
	}
	return a
}

func (h *harness) file(parent Ino, name string) Attr {
	h.t.Helper()
	return h.create(parent, name, syscall.S_IFREG|0o644)
}

func (h *harness) mkdir(parent Ino, name string) Attr {
	h.t.Helper()
	return h.create(parent, name, syscall.S_IFDIR|0o755)
}

func (h *harness) symlink(parent Ino, name, target string) Attr {
	h.t.Helper()
	a, err := h.f.Create(user, parent, name, NewNode{Mode: syscall.S_IFLNK | 0o777, Target: target})
	if err != nil {
		h.t.Fatalf("symlink %q: %v", name, err)
	}
	return a
}

func (h *harness) lookup(parent Ino, name string) Attr {
	h.t.Helper()
	a, err := h.f.Lookup(user, parent, name)
	if err != nil {
		h.t.Fatalf("Lookup %q: %v", name, err)
	}
	return a
}

func (h *harness) attr(ino Ino) Attr {
	h.t.Helper()
	a, err := h.f.GetAttr(ino)
	if err != nil {
		h.t.Fatalf("GetAttr %d: %v", ino, err)
	}
	return a
}

func (h *harness) write(ino Ino, off int64, data []byte) {
	h.t.Helper()
	n, err := h.f.Write(bg, ino, off, data, false)
	if err != nil || n != len(data) {
		h.t.Fatalf("Write %d bytes at %d: %d, %v", len(data), off, n, err)
	}
}

func (h *harness) read(ino Ino, off int64, n int) []byte {
	h.t.Helper()
	buf := bytes.Repeat([]byte{0xee}, n) // stale bytes a read must overwrite
	got, err := h.f.Read(bg, ino, off, buf)
	if err != nil {
		h.t.Fatalf("Read %d bytes at %d: %v", n, off, err)
	}
	return buf[:got]
}

func (h *harness) readAll(ino Ino) []byte {
	h.t.Helper()
	a := h.attr(ino)
	data := h.read(ino, 0, int(a.Size)+10)
	if len(data) != int(a.Size) {
		h.t.Fatalf("read %d bytes of a %d-byte file", len(data), a.Size)
	}
	return data
}

func (h *harness) names(dir Ino) []string {
	h.t.Helper()
	list, err := h.f.ReadDir(dir)
	if err != nil {
		h.t.Fatalf("ReadDir %d: %v", dir, err)
	}
	var names []string
	for _, e := range list[2:] {
		names = append(names, e.Name)
	}
	return names
}

// wantErr fails unless err is the errno want (0 for success).
func wantErr(t testing.TB, what string, err error, want syscall.Errno) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// pattern returns n bytes that differ with seed and position and are never
// zero, so that no chunk of it is a hole and no chunk ends in zeros. It
// avoids byte loops: the race detector makes them slow.
func pattern(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	for i := bytes.IndexByte(b, 0); i >= 0; {
		b[i] = byte(i) | 1
		j := bytes.IndexByte(b[i+1:], 0)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return b
}

func TestCreateLookupReadDir(t *testing.T) {
	h := small(t)
	root := h.attr(RootIno)
	if !root.IsDir() || root.Nlink != 2 || root.Parent != RootIno || root.Mode&0o7777 != 0o755 {
		t.Fatalf("root %+v", root)
	}
	want := map[string]Attr{}
	for _, name := range []string{"b", "a", "c"} {
		want[name] = h.file(RootIno, name)
	}
	want["d"] = h.mkdir(RootIno, "d")
	want["l"] = h.symlink(RootIno, "l", "a")
	check := func(stage string, extra ...string) {
		t.Helper()
		list, err := h.f.ReadDir(RootIno)
		if err != nil {
			t.Fatalf("%s: ReadDir: %v", stage, err)
		}
		if len(list) < 2 || list[0] != (DirEntry{".", RootIno, syscall.S_IFDIR}) || list[1] != (DirEntry{"..", RootIno, syscall.S_IFDIR}) {
			t.Fatalf("%s: listing does not start with . and ..: %v", stage, list)
		}
		var names []string
		for _, e := range list[2:] {
			names = append(names, e.Name)
			a, ok := want[e.Name]
			if !ok {
				t.Errorf("%s: unexpected entry %q", stage, e.Name)
				continue
			}
			if e.Ino != a.Ino || e.Type != a.Mode&syscall.S_IFMT {
				t.Errorf("%s: entry %v, want ino %d type %#o", stage, e, a.Ino, a.Mode&syscall.S_IFMT)
			}
			if got := h.lookup(RootIno, e.Name); got != a {
				t.Errorf("%s: Lookup %q = %+v, want %+v", stage, e.Name, got, a)
			}
		}
		if !sort.StringsAreSorted(names) || len(names) != len(want) {
			t.Errorf("%s: names %v not sorted or not %d", stage, names, len(want))
		}
	}
	check("in memory")
	h.sync()
	check("committed")
	// Mixed: some entries committed, some only in memory, one removal
	// not yet committed.
	want["0"] = h.file(RootIno, "0")
	want["bb"] = h.file(RootIno, "bb")
	if err := h.f.Unlink(RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	delete(want, "b")
	check("mixed")
	h.reopen()
	check("reopened")

	// "." and ".." resolve; the root is its own parent.
	if a := h.lookup(RootIno, "."); a.Ino != RootIno {
		t.Errorf(". of root is %d", a.Ino)
	}
	if a := h.lookup(RootIno, ".."); a.Ino != RootIno {
		t.Errorf(".. of root is %d", a.Ino)
	}
	d := want["d"]
	sub := h.mkdir(d.Ino, "sub")
	if a := h.lookup(sub.Ino, ".."); a.Ino != d.Ino {
		t.Errorf(".. of d/sub is %d, want %d", a.Ino, d.Ino)
	}
	list, _ := h.f.ReadDir(sub.Ino)
	if len(list) != 2 || list[0].Ino != sub.Ino || list[1].Ino != d.Ino {
		t.Errorf("empty directory lists %v", list)
	}

	for _, tt := range []struct {
		parent Ino
		name   string
		want   syscall.Errno
	}{
		{RootIno, "missing", syscall.ENOENT},
		{want["a"].Ino, "x", syscall.ENOTDIR},
		{RootIno, strings.Repeat("n", 256), syscall.ENAMETOOLONG},
		{RootIno, strings.Repeat("n", 255), syscall.ENOENT},
		{9999, "x", syscall.ENOENT},
	} {
		_, err := h.f.Lookup(user, tt.parent, tt.name)
		wantErr(t, "Lookup "+tt.name[:min(len(tt.name), 10)], err, tt.want)
	}
	if _, err := h.f.ReadDir(want["a"].Ino); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("ReadDir of a file: %v", err)
	}
	h.closeFS()
}

func TestCreateAttributes(t *testing.T) {
	h := small(t)
	before := time.Now().UnixNano()
	a := h.create(RootIno, "f", 0o640) // no type bits: a regular file
	after := time.Now().UnixNano()
	if a.Mode != syscall.S_IFREG|0o640 || a.Nlink != 1 || a.Uid != user.Uid || a.Gid != user.Gid || a.Size != 0 {
		t.Errorf("new file %+v", a)
	}
	for _, ts := range []int64{a.Atime, a.Mtime, a.Ctime, a.Btime} {
		if ts < before || ts > after {
			t.Errorf("timestamp %d not between %d and %d", ts, before, after)
		}
	}
	if a.Ino <= RootIno {
		t.Errorf("ino %d", a.Ino)
	}
	root := h.attr(RootIno)
	if root.Mtime < before || root.Ctime < before {
		t.Errorf("creating did not update the parent's times: %+v", root)
	}
	b, err := h.f.Create(other, RootIno, "g", NewNode{Mode: syscall.S_IFREG | 0o600})
	if err != nil || b.Uid != other.Uid || b.Gid != other.Gid {
		t.Errorf("file of another caller: %+v %v", b, err)
	}
	if b.Ino <= a.Ino {
		t.Errorf("inode numbers not increasing: %d then %d", a.Ino, b.Ino)
	}
	h.closeFS()
}

func TestCreateErrors(t *testing.T) {
	h := small(t)
	f := h.f
	file := h.file(RootIno, "file")
	h.file(RootIno, "exists")
	gone := h.mkdir(RootIno, "gone")
	if _, err := f.Open(gone.Ino); err != nil {
		t.Fatal(err)
	}
	if err := f.Rmdir(RootIno, "gone"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		parent Ino
		entry  string
		nn     NewNode
		want   syscall.Errno
	}{
		{"empty name", RootIno, "", NewNode{Mode: 0o644}, syscall.EINVAL},
		{"dot", RootIno, ".", NewNode{Mode: 0o644}, syscall.EINVAL},
		{"dotdot", RootIno, "..", NewNode{Mode: syscall.S_IFDIR | 0o755}, syscall.EINVAL},
		{"slash", RootIno, "a/b", NewNode{Mode: 0o644}, syscall.EINVAL},
		{"NUL", RootIno, "a\x00b", NewNode{Mode: 0o644}, syscall.EINVAL},
		{"256 bytes", RootIno, strings.Repeat("x", 256), NewNode{Mode: 0o644}, syscall.ENAMETOOLONG},
		{"255 bytes", RootIno, strings.Repeat("x", 255), NewNode{Mode: 0o644}, 0},
		{"exists", RootIno, "exists", NewNode{Mode: 0o644}, syscall.EEXIST},
		{"exists as dir", RootIno, "exists", NewNode{Mode: syscall.S_IFDIR | 0o755}, syscall.EEXIST},
		{"parent is a file", file.Ino, "x", NewNode{Mode: 0o644}, syscall.ENOTDIR},
		{"parent missing", 9999, "x", NewNode{Mode: 0o644}, syscall.ENOENT},
		{"parent removed", gone.Ino, "x", NewNode{Mode: 0o644}, syscall.ENOENT},
		{"symlink without target", RootIno, "l", NewNode{Mode: syscall.S_IFLNK | 0o777}, syscall.ENOENT},
		{"symlink target too long", RootIno, "l", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: strings.Repeat("t", 4096)}, syscall.ENAMETOOLONG},
		{"symlink target 4095 bytes", RootIno, "l", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: strings.Repeat("t", 4095)}, 0},
		{"bad file type", RootIno, "t", NewNode{Mode: 0o030000 | 0o644}, syscall.EINVAL},
		{"all type bits", RootIno, "t2", NewNode{Mode: syscall.S_IFMT | 0o644}, syscall.EINVAL},
	}
	for _, tt := range tests {
		_, err := f.Create(user, tt.parent, tt.entry, tt.nn)
		wantErr(t, tt.name, err, tt.want)
	}
	// Failed creates leave nothing behind.
	if got := h.names(RootIno); !reflect.DeepEqual(got, []string{"exists", "file", "l", strings.Repeat("x", 255)}) {
		t.Errorf("root holds %v", got)
	}
	f.Release(gone.Ino)
	h.closeFS()
}

func TestMkdirNlink(t *testing.T) {
	h := small(t)
	nlink := func(ino Ino) uint32 { t.Helper(); return h.attr(ino).Nlink }
	a := h.mkdir(RootIno, "a")
	if nlink(RootIno) != 3 || a.Nlink != 2 || a.Parent != RootIno {
		t.Fatalf("after mkdir a: root %d, a %+v", nlink(RootIno), a)
	}
	b := h.mkdir(a.Ino, "b")
	h.mkdir(a.Ino, "c")
	h.file(a.Ino, "file") // files do not count
	if nlink(a.Ino) != 4 || nlink(RootIno) != 3 || b.Parent != a.Ino {
		t.Errorf("after mkdir a/b a/c: a %d root %d", nlink(a.Ino), nlink(RootIno))
	}
	h.sync()
	h.reopen()
	if nlink(a.Ino) != 4 || nlink(RootIno) != 3 {
		t.Errorf("after reopen: a %d root %d", nlink(a.Ino), nlink(RootIno))
	}
	if err := h.f.Rmdir(a.Ino, "b"); err != nil {
		t.Fatal(err)
	}
	if err := h.f.Rmdir(a.Ino, "b"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("second rmdir: %v", err)
	}
	if nlink(a.Ino) != 3 {
		t.Errorf("after rmdir a/b: a %d", nlink(a.Ino))
	}
	if _, err := h.f.GetAttr(b.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("GetAttr of a removed directory: %v", err)
	}
	h.closeFS()
}

func TestUnlinkRmdir(t *testing.T) {
	tests := []struct {
		name string
		// setup makes /d (a directory), /f (a file) and whatever else.
		do   func(h *harness) error
		want syscall.Errno
	}{
		{"unlink file", func(h *harness) error { return h.f.Unlink(RootIno, "f") }, 0},
		{"unlink missing", func(h *harness) error { return h.f.Unlink(RootIno, "nope") }, syscall.ENOENT},
		{"unlink a directory", func(h *harness) error { return h.f.Unlink(RootIno, "d") }, syscall.EISDIR},
		{"unlink a symlink", func(h *harness) error {
			h.symlink(RootIno, "l", "f")
			return h.f.Unlink(RootIno, "l")
		}, 0},
		{"unlink in a file", func(h *harness) error { return h.f.Unlink(h.lookup(RootIno, "f").Ino, "x") }, syscall.ENOTDIR},
		{"unlink 256-byte name", func(h *harness) error { return h.f.Unlink(RootIno, strings.Repeat("z", 256)) }, syscall.ENAMETOOLONG},
		{"rmdir empty", func(h *harness) error { return h.f.Rmdir(RootIno, "d") }, 0},
		{"rmdir a file", func(h *harness) error { return h.f.Rmdir(RootIno, "f") }, syscall.ENOTDIR},
		{"rmdir missing", func(h *harness) error { return h.f.Rmdir(RootIno, "nope") }, syscall.ENOENT},
		{"rmdir dot", func(h *harness) error { return h.f.Rmdir(RootIno, ".") }, syscall.EINVAL},
		{"rmdir dotdot", func(h *harness) error { return h.f.Rmdir(h.lookup(RootIno, "d").Ino, "..") }, syscall.ENOTEMPTY},
		{"rmdir non-empty (in memory)", func(h *harness) error {
			h.file(h.lookup(RootIno, "d").Ino, "child")
			return h.f.Rmdir(RootIno, "d")
		}, syscall.ENOTEMPTY},
		{"rmdir non-empty (committed)", func(h *harness) error {
			h.mkdir(h.lookup(RootIno, "d").Ino, "child")
			h.sync()
			return h.f.Rmdir(RootIno, "d")
		}, syscall.ENOTEMPTY},
		{"rmdir emptied but not committed", func(h *harness) error {
			d := h.lookup(RootIno, "d").Ino
			h.file(d, "child")
			h.sync()
			if err := h.f.Unlink(d, "child"); err != nil {
				return err
			}
			return h.f.Rmdir(RootIno, "d")
		}, 0},
		{"rmdir emptied by rename", func(h *harness) error {
			d := h.lookup(RootIno, "d").Ino
			h.file(d, "child")
			h.sync()
			if err := h.f.Rename(d, "child", RootIno, "moved", 0); err != nil {
				return err
			}
			return h.f.Rmdir(RootIno, "d")
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			d := h.mkdir(RootIno, "d")
			fa := h.file(RootIno, "f")
			h.write(fa.Ino, 0, pattern(1, 10000))
			before := h.names(RootIno)
			rootBefore := h.attr(RootIno)
			err := tt.do(h)
			wantErr(t, tt.name, err, tt.want)
			after := h.names(RootIno)
			if tt.want != 0 {
				if !reflect.DeepEqual(before, after) {
					t.Errorf("failed removal changed the directory: %v -> %v", before, after)
				}
				h.closeFS()
				return
			}
			// The name is gone, and so is the inode.
			for _, n := range []string{"f", "d", "l"} {
				if !contains(before, n) || contains(after, n) {
					continue
				}
				if _, err := h.f.Lookup(user, RootIno, n); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("Lookup of removed %q: %v", n, err)
				}
			}
			if !contains(after, "f") {
				if _, err := h.f.GetAttr(fa.Ino); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("GetAttr of removed file: %v", err)
				}
				h.sync()
				if st := h.stats(); st.Chunks != 0 {
					t.Errorf("removed file's chunks remain: %+v", st)
				}
			}
			if !contains(after, "d") {
				if got := h.attr(RootIno).Nlink; got != rootBefore.Nlink-1 {
					t.Errorf("root nlink %d after rmdir, want %d", got, rootBefore.Nlink-1)
				}
				if _, err := h.f.GetAttr(d.Ino); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("GetAttr of removed dir: %v", err)
				}
			}
			if h.attr(RootIno).Mtime <= rootBefore.Mtime {
				t.Errorf("removal did not update the parent's mtime")
			}
			names := h.names(RootIno)
			h.reopen()
			if got := h.names(RootIno); !reflect.DeepEqual(got, names) {
				t.Errorf("after reopen %v, want %v", got, names)
			}
			h.closeFS()
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tree is a small namespace for rename tests:
//
//	/d1/f1   (file, "one")
//	/d1/sub/ (dir)
//	/d2/f2   (file, "two")
//	/d2/g/   (dir, holding g/inner)
//	/d2/e/   (empty dir)
//	/top     (file)
type tree struct {
	d1, d2, sub, g, e, f1, f2, top Attr
}

func makeTree(h *harness) tree {
	var tr tree
	tr.d1 = h.mkdir(RootIno, "d1")
	tr.d2 = h.mkdir(RootIno, "d2")
	tr.f1 = h.file(tr.d1.Ino, "f1")
	h.write(tr.f1.Ino, 0, []byte("one"))
	tr.sub = h.mkdir(tr.d1.Ino, "sub")
	tr.f2 = h.file(tr.d2.Ino, "f2")
	h.write(tr.f2.Ino, 0, []byte("two"))
	tr.g = h.mkdir(tr.d2.Ino, "g")
	h.file(tr.g.Ino, "inner")
	tr.e = h.mkdir(tr.d2.Ino, "e")
	tr.top = h.file(RootIno, "top")
	return tr
}

func TestRename(t *testing.T) {
	type expect struct {
		dir  func(tr tree) Ino
		name string
		ino  func(tr tree) Ino // 0: the name must not exist
	}
	ino := func(get func(tr tree) Attr) func(tree) Ino { return func(tr tree) Ino { return get(tr).Ino } }
	none := func(tree) Ino { return 0 }
	d1 := func(tr tree) Ino { return tr.d1.Ino }
	d2 := func(tr tree) Ino { return tr.d2.Ino }
	root := func(tree) Ino { return RootIno }
	tests := []struct {
		name      string
		from      func(tr tree) Ino
		oldName   string
		to        func(tr tree) Ino
		newName   string
		flags     uint32
		committed bool // sync before renaming
		want      syscall.Errno
		expect    []expect
		nlinks    map[string]uint32 // "d1", "d2", "root" → nlink after
		parents   map[string]string // dir → its parent after ("d1", "d2", "root")
		gone      []string          // inodes that must be deleted: "f1", "f2", "e", ...
	}{
		{name: "same dir", from: d1, oldName: "f1", to: d1, newName: "renamed",
			expect: []expect{{d1, "f1", none}, {d1, "renamed", ino(func(tr tree) Attr { return tr.f1 })}}},
		{name: "same dir committed", from: d1, oldName: "f1", to: d1, newName: "renamed", committed: true,
			expect: []expect{{d1, "f1", none}, {d1, "renamed", ino(func(tr tree) Attr { return tr.f1 })}}},
		{name: "to itself", from: d1, oldName: "f1", to: d1, newName: "f1",
			expect: []expect{{d1, "f1", ino(func(tr tree) Attr { return tr.f1 })}}},
		{name: "overwrite file", from: d1, oldName: "f1", to: d2, newName: "f2",
			expect: []expect{{d1, "f1", none}, {d2, "f2", ino(func(tr tree) Attr { return tr.f1 })}},
			gone:   []string{"f2"}},
		{name: "overwrite file committed", from: d1, oldName: "f1", to: d2, newName: "f2", committed: true,
			expect: []expect{{d1, "f1", none}, {d2, "f2", ino(func(tr tree) Attr { return tr.f1 })}},
			gone:   []string{"f2"}},
		{name: "dir across dirs", from: d1, oldName: "sub", to: d2, newName: "moved",
			expect:  []expect{{d1, "sub", none}, {d2, "moved", ino(func(tr tree) Attr { return tr.sub })}},
			nlinks:  map[string]uint32{"d1": 2, "d2": 5, "root": 4},
			parents: map[string]string{"sub": "d2"}},
		{name: "dir across non-root dirs committed", from: d1, oldName: "sub", to: d2, newName: "moved", committed: true,
			expect:  []expect{{d1, "sub", none}, {d2, "moved", ino(func(tr tree) Attr { return tr.sub })}},
			nlinks:  map[string]uint32{"d1": 2, "d2": 5, "root": 4},
			parents: map[string]string{"sub": "d2"}},
		{name: "dir across dirs committed", from: d1, oldName: "sub", to: root, newName: "moved", committed: true,
			expect:  []expect{{d1, "sub", none}, {root, "moved", ino(func(tr tree) Attr { return tr.sub })}},
			nlinks:  map[string]uint32{"d1": 2, "d2": 4, "root": 5},
			parents: map[string]string{"sub": "root"}},
		{name: "dir over empty dir", from: d1, oldName: "sub", to: d2, newName: "e",
			expect:  []expect{{d1, "sub", none}, {d2, "e", ino(func(tr tree) Attr { return tr.sub })}},
			nlinks:  map[string]uint32{"d1": 2, "d2": 4, "root": 4},
			parents: map[string]string{"sub": "d2"},
			gone:    []string{"e"}},
		{name: "dir over empty dir same parent", from: d2, oldName: "g", to: d2, newName: "e",
			expect:  []expect{{d2, "g", none}, {d2, "e", ino(func(tr tree) Attr { return tr.g })}},
			nlinks:  map[string]uint32{"d1": 3, "d2": 3, "root": 4},
			parents: map[string]string{"g": "d2"},
			gone:    []string{"e"}},
		{name: "dir over non-empty dir", from: d1, oldName: "sub", to: d2, newName: "g", want: syscall.ENOTEMPTY},
		{name: "dir over non-empty dir committed", from: d1, oldName: "sub", to: d2, newName: "g", committed: true, want: syscall.ENOTEMPTY},
		{name: "file over dir", from: d1, oldName: "f1", to: d2, newName: "e", want: syscall.EISDIR},
		{name: "dir over file", from: d1, oldName: "sub", to: d2, newName: "f2", want: syscall.ENOTDIR},
		{name: "missing source", from: d1, oldName: "nope", to: d2, newName: "x", want: syscall.ENOENT},
		{name: "source dir is a file", from: func(tr tree) Ino { return tr.f1.Ino }, oldName: "x", to: d2, newName: "x", want: syscall.ENOTDIR},
		{name: "bad new name", from: d1, oldName: "f1", to: d2, newName: "a/b", want: syscall.EINVAL},
		{name: "new name dotdot", from: d1, oldName: "f1", to: d2, newName: "..", want: syscall.EINVAL},
		{name: "long new name", from: d1, oldName: "f1", to: d2, newName: strings.Repeat("n", 256), want: syscall.ENAMETOOLONG},
		{name: "bad flags", from: d1, oldName: "f1", to: d2, newName: "x", flags: RenameNoReplace | RenameExchange, want: syscall.EINVAL},
		{name: "whiteout", from: d1, oldName: "f1", to: d2, newName: "x", flags: RenameWhiteout, want: syscall.EINVAL},
		{name: "noreplace existing", from: d1, oldName: "f1", to: d2, newName: "f2", flags: RenameNoReplace, want: syscall.EEXIST},
		{name: "noreplace existing committed", from: d1, oldName: "f1", to: d2, newName: "f2", flags: RenameNoReplace, committed: true, want: syscall.EEXIST},
		{name: "noreplace new", from: d1, oldName: "f1", to: d2, newName: "fresh", flags: RenameNoReplace,
			expect: []expect{{d1, "f1", none}, {d2, "fresh", ino(func(tr tree) Attr { return tr.f1 })}}},
		{name: "exchange files", from: d1, oldName: "f1", to: d2, newName: "f2", flags: RenameExchange,
			expect: []expect{{d1, "f1", ino(func(tr tree) Attr { return tr.f2 })}, {d2, "f2", ino(func(tr tree) Attr { return tr.f1 })}}},
		{name: "exchange file and dir across dirs", from: d1, oldName: "f1", to: d2, newName: "g", flags: RenameExchange,
			expect:  []expect{{d1, "f1", ino(func(tr tree) Attr { return tr.g })}, {d2, "g", ino(func(tr tree) Attr { return tr.f1 })}},
			nlinks:  map[string]uint32{"d1": 4, "d2": 3, "root": 4},
			parents: map[string]string{"g": "d1"}},
		{name: "exchange dir and file across dirs committed", from: d2, oldName: "g", to: d1, newName: "f1", flags: RenameExchange, committed: true,
			expect:  []expect{{d1, "f1", ino(func(tr tree) Attr { return tr.g })}, {d2, "g", ino(func(tr tree) Attr { return tr.f1 })}},
			nlinks:  map[string]uint32{"d1": 4, "d2": 3, "root": 4},
			parents: map[string]string{"g": "d1"}},
		{name: "exchange dirs across dirs", from: d1, oldName: "sub", to: d2, newName: "g", flags: RenameExchange,
			expect:  []expect{{d1, "sub", ino(func(tr tree) Attr { return tr.g })}, {d2, "g", ino(func(tr tree) Attr { return tr.sub })}},
			nlinks:  map[string]uint32{"d1": 3, "d2": 4, "root": 4},
			parents: map[string]string{"g": "d1", "sub": "d2"}},
		{name: "exchange with missing", from: d1, oldName: "f1", to: d2, newName: "nope", flags: RenameExchange, want: syscall.ENOENT},
		{name: "dir into itself", from: root, oldName: "d1", to: d1, newName: "x", want: syscall.EINVAL},
		{name: "dir into its own subdir", from: root, oldName: "d1", to: func(tr tree) Ino { return tr.sub.Ino }, newName: "x", want: syscall.EINVAL},
		{name: "dir into its own subdir committed", from: root, oldName: "d2", to: func(tr tree) Ino { return tr.g.Ino }, newName: "x", committed: true, want: syscall.EINVAL},
		{name: "exchange dir with its own subdir", from: root, oldName: "d1", to: func(tr tree) Ino { return tr.d1.Ino }, newName: "sub", flags: RenameExchange, want: syscall.EINVAL},
		{name: "exchange subdir with its ancestor", from: d1, oldName: "sub", to: root, newName: "d1", flags: RenameExchange, want: syscall.EINVAL},
		{name: "dir up to root", from: d2, oldName: "g", to: root, newName: "g",
			expect:  []expect{{d2, "g", none}, {root, "g", ino(func(tr tree) Attr { return tr.g })}},
			nlinks:  map[string]uint32{"d1": 3, "d2": 3, "root": 5},
			parents: map[string]string{"g": "root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			tr := makeTree(h)
			if tt.committed {
				h.sync()
			}
			byName := map[string]Attr{"d1": tr.d1, "d2": tr.d2, "sub": tr.sub, "g": tr.g, "e": tr.e, "f1": tr.f1, "f2": tr.f2, "root": h.attr(RootIno)}
			for name, a := range byName {
				byName[name] = h.attr(a.Ino)
			}
			listings := func() map[string][]string {
				return map[string][]string{"root": h.names(RootIno), "d1": h.names(tr.d1.Ino), "d2": h.names(tr.d2.Ino)}
			}
			// An old ctime, so that the rename's update shows.
			one := int64(1)
			if _, err := h.f.SetAttr(user, tr.f1.Ino, SetAttrIn{Ctime: &one}); err != nil {
				t.Fatal(err)
			}
			byName["f1"] = h.attr(tr.f1.Ino)
			before := listings()
			err := h.f.Rename(tt.from(tr), tt.oldName, tt.to(tr), tt.newName, tt.flags)
			wantErr(t, "Rename", err, tt.want)
			if tt.want != 0 {
				if after := listings(); !reflect.DeepEqual(before, after) {
					t.Errorf("failed rename changed the tree: %v -> %v", before, after)
				}
				for name, a := range byName {
					if got := h.attr(a.Ino); got.Nlink != a.Nlink && name != "root" {
						t.Errorf("failed rename changed nlink of %s: %d -> %d", name, a.Nlink, got.Nlink)
					}
				}
				h.closeFS()
				return
			}
			verify := func(stage string) {
				t.Helper()
				for _, e := range tt.expect {
					a, err := h.f.Lookup(user, e.dir(tr), e.name)
					want := e.ino(tr)
					if want == 0 {
						if !errors.Is(err, syscall.ENOENT) {
							t.Errorf("%s: %q still exists: %v", stage, e.name, err)
						}
						continue
					}
					if err != nil || a.Ino != want {
						t.Errorf("%s: %q is %d (%v), want %d", stage, e.name, a.Ino, err, want)
					}
				}
				for name, n := range tt.nlinks {
					if got := h.attr(byName[name].Ino).Nlink; got != n {
						t.Errorf("%s: nlink of %s = %d, want %d", stage, name, got, n)
					}
				}
				for name, p := range tt.parents {
					a := h.attr(byName[name].Ino)
					if a.Parent != byName[p].Ino {
						t.Errorf("%s: parent of %s = %d, want %s (%d)", stage, name, a.Parent, p, byName[p].Ino)
					}
					if dd := h.lookup(a.Ino, ".."); dd.Ino != byName[p].Ino {
						t.Errorf("%s: .. of %s is %d", stage, name, dd.Ino)
					}
				}
				for _, name := range tt.gone {
					if _, err := h.f.GetAttr(byName[name].Ino); !errors.Is(err, syscall.ENOENT) {
						t.Errorf("%s: replaced inode %s still exists: %v", stage, name, err)
					}
				}
			}
			verify("in memory")
			if tt.oldName != tt.newName || tt.from(tr) != tt.to(tr) {
				if got := h.attr(tr.f1.Ino); got.Ctime == 1 && tt.oldName == "f1" {
					t.Errorf("rename did not update ctime")
				}
			}
			// Contents follow the inode.
			if got := string(h.readAll(tr.f1.Ino)); got != "one" {
				t.Errorf("f1 holds %q", got)
			}
			h.sync()
			verify("committed")
			h.reopen()
			verify("reopened")
			h.closeFS()
		})
	}
}

func TestRenameSameInode(t *testing.T) {
	// Renaming one name of an inode onto another name of it does nothing.
	h := small(t)
	a := h.file(RootIno, "a")
	if _, err := h.f.Link(user, a.Ino, RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	if err := h.f.Rename(RootIno, "a", RootIno, "b", 0); err != nil {
		t.Fatal(err)
	}
	if got := h.names(RootIno); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("names %v", got)
	}
	if got := h.attr(a.Ino).Nlink; got != 2 {
		t.Errorf("nlink %d", got)
	}
	h.closeFS()
}

func TestHardLinks(t *testing.T) {
	h := small(t)
	f := h.f
	a := h.file(RootIno, "a")
	data := pattern(3, 3*4096+5)
	h.write(a.Ino, 0, data)
	dir := h.mkdir(RootIno, "dir")
	l, err := f.Link(user, a.Ino, dir.Ino, "b")
	if err != nil {
		t.Fatal(err)
	}
	if l.Ino != a.Ino || l.Nlink != 2 {
		t.Errorf("Link returned %+v", l)
	}
	if b := h.lookup(dir.Ino, "b"); b.Ino != a.Ino || b.Nlink != 2 {
		t.Errorf("second name %+v", b)
	}
	if h.attr(dir.Ino).Nlink != 2 {
		t.Errorf("a hard link changed the directory's nlink")
	}
	tests := []struct {
		name   string
		ino    Ino
		parent Ino
		entry  string
		want   syscall.Errno
	}{
		{"existing name", a.Ino, RootIno, "dir", syscall.EEXIST},
		{"existing name in target", a.Ino, dir.Ino, "b", syscall.EEXIST},
		{"directory", dir.Ino, RootIno, "dirlink", syscall.EPERM},
		{"missing inode", 9999, RootIno, "x", syscall.ENOENT},
		{"parent not a dir", a.Ino, a.Ino, "x", syscall.ENOTDIR},
		{"bad name", a.Ino, RootIno, "x/y", syscall.EINVAL},
		{"long name", a.Ino, RootIno, strings.Repeat("y", 256), syscall.ENAMETOOLONG},
	}
	for _, tt := range tests {
		_, err := f.Link(user, tt.ino, tt.parent, tt.entry)
		wantErr(t, "Link "+tt.name, err, tt.want)
	}
	if h.attr(a.Ino).Nlink != 2 {
		t.Errorf("failed links changed nlink to %d", h.attr(a.Ino).Nlink)
	}
	h.sync()
	h.reopen()
	f = h.f
	if h.attr(a.Ino).Nlink != 2 {
		t.Errorf("nlink after reopen %d", h.attr(a.Ino).Nlink)
	}
	if err := f.Unlink(RootIno, "a"); err != nil {
		t.Fatal(err)
	}
	if got := h.attr(a.Ino); got.Nlink != 1 {
		t.Errorf("after unlinking one name: nlink %d", got.Nlink)
	}
	if !bytes.Equal(h.readAll(a.Ino), data) {
		t.Error("data lost with one of two names")
	}
	h.sync()
	if st := h.stats(); st.Chunks != 4 {
		t.Errorf("chunks %d, want 4", st.Chunks)
	}
	// A link to an unlinked (but open) file is refused.
	if _, err := f.Open(a.Ino); err != nil {
		t.Fatal(err)
	}
	if err := f.Unlink(dir.Ino, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Link(user, a.Ino, RootIno, "resurrect"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Link of an unlinked file: %v, want ENOENT", err)
	}
	f.Release(a.Ino)
	h.sync()
	if st := h.stats(); st.Chunks != 0 {
		t.Errorf("chunks %d after the last name went", st.Chunks)
	}
	h.closeFS()
}

func TestSymlinkReadlink(t *testing.T) {
	h := small(t)
	targets := []string{"a", "../up/../x", "/absolute/path", strings.Repeat("long/", 819), "with space\nand newline", "ünïcødé"}
	var inos []Ino
	for i, target := range targets {
		a := h.symlink(RootIno, string(rune('a'+i)), target)
		if !a.IsSymlink() || a.Size != uint64(len(target)) || a.Mode != syscall.S_IFLNK|0o777 {
			t.Errorf("symlink %+v", a)
		}
		inos = append(inos, a.Ino)
	}
	check := func(stage string) {
		for i, ino := range inos {
			got, err := h.f.Readlink(ino)
			if err != nil || got != targets[i] {
				t.Errorf("%s: Readlink = %q, %v; want %q", stage, got, err, targets[i])
			}
		}
		list, _ := h.f.ReadDir(RootIno)
		for _, e := range list[2:] {
			if e.Type != syscall.S_IFLNK {
				t.Errorf("%s: entry %v is not a symlink", stage, e)
			}
		}
	}
	check("in memory")
	h.reopen()
	check("reopened")
	file := h.file(RootIno, "file")
	if _, err := h.f.Readlink(file.Ino); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Readlink of a file: %v", err)
	}
	if _, err := h.f.Readlink(RootIno); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Readlink of a directory: %v", err)
	}
	if _, err := h.f.Write(bg, inos[0], 0, []byte("x"), false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Write to a symlink: %v", err)
	}
	h.closeFS()
}

func TestMknod(t *testing.T) {
	h := small(t)
	tests := []struct {
		name string
		mode uint32
		rdev uint32
	}{
		{"fifo", syscall.S_IFIFO | 0o644, 0},
		{"socket", syscall.S_IFSOCK | 0o755, 0},
		{"char device", syscall.S_IFCHR | 0o600, 0x0501},
		{"block device", syscall.S_IFBLK | 0o660, 0x0803},
		{"fifo with odd bits", syscall.S_IFIFO | 0o7001, 0},
	}
	inos := map[string]Ino{}
	for _, tt := range tests {
		a, err := h.f.Create(user, RootIno, tt.name, NewNode{Mode: tt.mode, Rdev: tt.rdev})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		inos[tt.name] = a.Ino
	}
	check := func(stage string) {
		for _, tt := range tests {
			a := h.attr(inos[tt.name])
			if a.Mode != tt.mode || a.Rdev != tt.rdev || a.Nlink != 1 || a.Size != 0 {
				t.Errorf("%s: %s: mode %#o rdev %#x nlink %d, want %#o %#x", stage, tt.name, a.Mode, a.Rdev, a.Nlink, tt.mode, tt.rdev)
			}
			if e := h.lookup(RootIno, tt.name); e.Mode&syscall.S_IFMT != tt.mode&syscall.S_IFMT {
				t.Errorf("%s: lookup type %#o", stage, e.Mode)
			}
		}
	}
	check("in memory")
	h.reopen()
	check("reopened")
	// Special files hold no data and cannot be truncated.
	if _, err := h.f.Write(bg, inos["fifo"], 0, []byte("x"), false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Write to a fifo: %v", err)
	}
	size := uint64(10)
	if _, err := h.f.SetAttr(user, inos["socket"], SetAttrIn{Size: &size}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("truncate of a socket: %v", err)
	}
	h.closeFS()
}

func TestModeBitsStoredExactly(t *testing.T) {
	modes := []uint32{0, 0o644, 0o4755, 0o2755, 0o1777, 0o6755, 0o7777, 0o4000, 0o2010, 0o1000}
	h := small(t)
	type made struct {
		ino  Ino
		mode uint32
	}
	var all []made
	for i, m := range modes {
		for _, typ := range []uint32{syscall.S_IFREG, syscall.S_IFDIR} {
			a := h.create(RootIno, string(rune('a'+i))+map[uint32]string{syscall.S_IFREG: "f", syscall.S_IFDIR: "d"}[typ], typ|m)
			if a.Mode != typ|m {
				t.Errorf("created %#o, got %#o", typ|m, a.Mode)
			}
			all = append(all, made{a.Ino, typ | m})
		}
	}
	// chmod to every mode, including type bits that must be ignored.
	f := h.file(RootIno, "chmod")
	for _, m := range modes {
		for _, extra := range []uint32{0, syscall.S_IFDIR} {
			mode := m | extra
			a, err := h.f.SetAttr(user, f.Ino, SetAttrIn{Mode: &mode})
			if err != nil || a.Mode != syscall.S_IFREG|m {
				t.Errorf("chmod %#o: %#o %v", mode, a.Mode, err)
			}
		}
	}
	h.reopen()
	for _, m := range all {
		if got := h.attr(m.ino).Mode; got != m.mode {
			t.Errorf("after reopen %#o, want %#o", got, m.mode)
		}
	}
	if got := h.attr(f.Ino).Mode; got != syscall.S_IFREG|modes[len(modes)-1] {
		t.Errorf("chmod result after reopen %#o", got)
	}
	h.closeFS()
}

func TestSetgidDirectory(t *testing.T) {
	h := small(t)
	plain := h.mkdir(RootIno, "plain")
	sgid := h.create(RootIno, "sgid", syscall.S_IFDIR|syscall.S_ISGID|0o775)
	gid := uint32(500)
	if _, err := h.f.SetAttr(user, sgid.Ino, SetAttrIn{Gid: &gid}); err != nil {
		t.Fatal(err)
	}
	if a := h.attr(sgid.Ino); a.Mode&syscall.S_ISGID == 0 {
		t.Fatalf("chown of a directory cleared its setgid bit: %#o", a.Mode)
	}
	tests := []struct {
		name     string
		parent   Ino
		mode     uint32
		wantGid  uint32
		wantMode uint32
	}{
		{"file in plain dir", plain.Ino, syscall.S_IFREG | 0o644, user.Gid, syscall.S_IFREG | 0o644},
		{"dir in plain dir", plain.Ino, syscall.S_IFDIR | 0o755, user.Gid, syscall.S_IFDIR | 0o755},
		{"file in setgid dir", sgid.Ino, syscall.S_IFREG | 0o644, 500, syscall.S_IFREG | 0o644},
		{"dir in setgid dir inherits the bit", sgid.Ino, syscall.S_IFDIR | 0o755, 500, syscall.S_IFDIR | syscall.S_ISGID | 0o755},
		{"fifo in setgid dir", sgid.Ino, syscall.S_IFIFO | 0o600, 500, syscall.S_IFIFO | 0o600},
	}
	for i, tt := range tests {
		a := h.create(tt.parent, string(rune('a'+i)), tt.mode)
		if a.Gid != tt.wantGid || a.Mode != tt.wantMode || a.Uid != user.Uid {
			t.Errorf("%s: uid %d gid %d mode %#o, want gid %d mode %#o", tt.name, a.Uid, a.Gid, a.Mode, tt.wantGid, tt.wantMode)
		}
	}
	// Grandchildren of a setgid dir inherit through the new subdir.
	sub := h.lookup(sgid.Ino, "d")
	g := h.file(sub.Ino, "grandchild")
	if g.Gid != 500 {
		t.Errorf("grandchild gid %d", g.Gid)
	}
	h.closeFS()
}

func TestSetAttr(t *testing.T) {
	ptr32 := func(v uint32) *uint32 { return &v }
	ptr64 := func(v int64) *int64 { return &v }
	const t1, t2, t3 int64 = 1234567890123456789, -86400_000000001, 1
	tests := []struct {
		name  string
		start uint32 // mode of the file before
		dir   bool
		in    SetAttrIn
		check func(t *testing.T, a Attr, before, after int64)
	}{
		{"chmod", 0o644, false, SetAttrIn{Mode: ptr32(0o4711)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFREG|0o4711 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"chown", 0o644, false, SetAttrIn{Uid: ptr32(0), Gid: ptr32(42)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Uid != 0 || a.Gid != 42 {
				t.Errorf("owner %d:%d", a.Uid, a.Gid)
			}
		}},
		{"chown clears setuid and group-exec setgid", 0o6755, false, SetAttrIn{Uid: ptr32(7)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFREG|0o755 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"chown keeps setgid without group exec (mandatory locking)", 0o6745, false, SetAttrIn{Gid: ptr32(7)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFREG|0o2745 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"chown of a directory keeps its bits", 0o3775, true, SetAttrIn{Uid: ptr32(7), Gid: ptr32(8)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFDIR|0o3775 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"chown with chmod keeps the new mode", 0o644, false, SetAttrIn{Uid: ptr32(7), Mode: ptr32(0o6755)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFREG|0o6755 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"kill suid", 0o6755, false, SetAttrIn{KillSuidGid: true}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Mode != syscall.S_IFREG|0o755 {
				t.Errorf("mode %#o", a.Mode)
			}
		}},
		{"times in nanoseconds", 0o644, false, SetAttrIn{Atime: ptr64(t1), Mtime: ptr64(t2)}, func(t *testing.T, a Attr, before, after int64) {
			if a.Atime != t1 || a.Mtime != t2 {
				t.Errorf("atime %d mtime %d", a.Atime, a.Mtime)
			}
			if a.Ctime < before || a.Ctime > after {
				t.Errorf("ctime %d not now", a.Ctime)
			}
		}},
		{"explicit ctime", 0o644, false, SetAttrIn{Ctime: ptr64(t3)}, func(t *testing.T, a Attr, _, _ int64) {
			if a.Ctime != t3 {
				t.Errorf("ctime %d", a.Ctime)
			}
		}},
		{"UtimeNow", 0o644, false, SetAttrIn{Atime: ptr64(UtimeNow), Mtime: ptr64(UtimeNow)}, func(t *testing.T, a Attr, before, after int64) {
			for _, ts := range []int64{a.Atime, a.Mtime, a.Ctime} {
				if ts < before || ts > after {
					t.Errorf("time %d not between %d and %d", ts, before, after)
				}
			}
			if a.Atime != a.Mtime {
				t.Errorf("atime %d != mtime %d", a.Atime, a.Mtime)
			}
		}},
		{"nothing changes only ctime", 0o640, false, SetAttrIn{}, func(t *testing.T, a Attr, before, after int64) {
			if a.Mode != syscall.S_IFREG|0o640 || a.Uid != user.Uid || a.Ctime < before {
				t.Errorf("attr %+v", a)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			typ := uint32(syscall.S_IFREG)
			if tt.dir {
				typ = syscall.S_IFDIR
			}
			a := h.create(RootIno, "x", typ|tt.start)
			orig := a
			before := time.Now().UnixNano()
			got, err := h.f.SetAttr(user, a.Ino, tt.in)
			after := time.Now().UnixNano()
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got, before, after)
			if got.Btime != orig.Btime || got.Ino != orig.Ino || got.Nlink != orig.Nlink {
				t.Errorf("unrelated fields changed: %+v -> %+v", orig, got)
			}
			if a := h.attr(got.Ino); a != got {
				t.Errorf("GetAttr %+v, SetAttr returned %+v", a, got)
			}
			h.reopen()
			if a := h.attr(got.Ino); a != got {
				t.Errorf("after reopen %+v, want %+v", a, got)
			}
			h.closeFS()
		})
	}
}

func TestSetAttrErrors(t *testing.T) {
	h := small(t)
	dir := h.mkdir(RootIno, "d")
	link := h.symlink(RootIno, "l", "d")
	size := uint64(5)
	if _, err := h.f.SetAttr(user, dir.Ino, SetAttrIn{Size: &size}); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("truncate of a directory: %v", err)
	}
	if _, err := h.f.SetAttr(user, link.Ino, SetAttrIn{Size: &size}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("truncate of a symlink: %v", err)
	}
	if _, err := h.f.SetAttr(user, 9999, SetAttrIn{}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("SetAttr of a missing inode: %v", err)
	}
	f := h.file(RootIno, "f")
	huge := uint64(1) << 62
	if _, err := h.f.SetAttr(user, f.Ino, SetAttrIn{Size: &huge}); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("truncate to 2^62: %v", err)
	}
	if a := h.attr(f.Ino); a.Size != 0 {
		t.Errorf("failed truncate changed size to %d", a.Size)
	}
	h.closeFS()
}

func TestInodeNumbersNeverReused(t *testing.T) {
	h := small(t)
	seen := map[Ino]bool{RootIno: true}
	last := RootIno
	fresh := func(name string) Attr {
		t.Helper()
		a := h.file(RootIno, name)
		if seen[a.Ino] || a.Ino <= last {
			t.Fatalf("inode %d reused or not increasing (last %d)", a.Ino, last)
		}
		seen[a.Ino], last = true, a.Ino
		return a
	}
	fresh("a")
	fresh("b")
	if err := h.f.Unlink(RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	fresh("c")
	h.sync()
	fresh("d")
	if err := h.f.Unlink(RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	// The highest inode is gone and nothing was synced explicitly: its
	// number must still not come back after a reopen.
	h.reopen()
	fresh("e")
	h.f.Unlink(RootIno, "e")
	h.sync()
	h.reopen()
	fresh("f")
	tmp, err := h.f.Create(user, RootIno, "", NewNode{Mode: 0o600, Tmpfile: true})
	if err != nil || seen[tmp.Ino] || tmp.Ino <= last {
		t.Fatalf("tmpfile ino %d: %v", tmp.Ino, err)
	}
	last = tmp.Ino
	h.f.Release(tmp.Ino)
	h.reopen()
	fresh("g")
	h.closeFS()
}
