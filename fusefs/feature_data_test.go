package fusefs_test

// File data through the mount: truncation, sparse files, seeking, appends,
// mmap, copy_file_range, statfs, the size limit and durability.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

const chunk = 1 << 20 // the default chunk size

// ---------------------------------------------------------------------------
// 3. truncate, ftruncate, sparse files, SEEK_DATA/SEEK_HOLE, fallocate

// fileModel applies operations to a file in the mount and to a byte slice,
// and checks that they agree.
type fileModel struct {
	t    *testing.T
	path string
	want []byte
}

type modelOp struct {
	kind string // write, truncate, ftruncate, punch, falloc
	off  int64
	n    int64 // truncate size, write length, punch/falloc length
}

func (fm *fileModel) apply(op modelOp, seed uint64) {
	t := fm.t
	t.Helper()
	grow := func(size int64) {
		if size > int64(len(fm.want)) {
			fm.want = append(fm.want, make([]byte, size-int64(len(fm.want)))...)
		}
	}
	switch op.kind {
	case "write":
		data := randomBytes(seed, int(op.n))
		f, err := os.OpenFile(fm.path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(data, op.off); err != nil {
			t.Fatalf("pwrite %d@%d: %v", op.n, op.off, err)
		}
		grow(op.off + op.n)
		copy(fm.want[op.off:], data)
	case "truncate":
		if err := unix.Truncate(fm.path, op.n); err != nil {
			t.Fatalf("truncate %d: %v", op.n, err)
		}
		grow(op.n)
		fm.want = fm.want[:op.n]
	case "ftruncate":
		f, err := os.OpenFile(fm.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Ftruncate(int(f.Fd()), op.n); err != nil {
			t.Fatalf("ftruncate %d: %v", op.n, err)
		}
		grow(op.n)
		fm.want = fm.want[:op.n]
	case "punch", "falloc", "zero", "zero-keep":
		f, err := os.OpenFile(fm.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		mode := map[string]uint32{
			"punch":     unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE,
			"zero":      unix.FALLOC_FL_ZERO_RANGE,
			"zero-keep": unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE,
		}[op.kind]
		if err := unix.Fallocate(int(f.Fd()), mode, op.off, op.n); err != nil {
			t.Fatalf("fallocate %#x %d@%d: %v", mode, op.n, op.off, err)
		}
		end := min(op.off+op.n, int64(len(fm.want)))
		if op.kind != "falloc" && op.off < end {
			clear(fm.want[op.off:end])
		}
		if op.kind == "falloc" || op.kind == "zero" {
			grow(op.off + op.n)
		}
	default:
		t.Fatalf("bad op %q", op.kind)
	}
}

func (fm *fileModel) check(when string) {
	fm.t.Helper()
	got, err := os.ReadFile(fm.path)
	if err != nil {
		fm.t.Fatalf("%s: %v", when, err)
	}
	if !bytes.Equal(got, fm.want) {
		fm.t.Errorf("%s: %s", when, diffBytes(got, fm.want))
	}
	if st := lstat(fm.t, fm.path); st.Size != int64(len(fm.want)) {
		fm.t.Errorf("%s: stat size %d, want %d", when, st.Size, len(fm.want))
	}
}

func TestTruncate(t *testing.T) {
	w := func(off, n int64) modelOp { return modelOp{kind: "write", off: off, n: n} }
	tr := func(n int64) modelOp { return modelOp{kind: "truncate", n: n} }
	ftr := func(n int64) modelOp { return modelOp{kind: "ftruncate", n: n} }
	cases := []struct {
		name string
		ops  []modelOp
	}{
		{"shrink within a chunk", []modelOp{w(0, 5000), tr(100)}},
		{"shrink across chunks", []modelOp{w(0, 3*chunk+100), tr(chunk + chunk/2)}},
		{"shrink to a chunk boundary", []modelOp{w(0, 3*chunk), ftr(2 * chunk)}},
		{"shrink to zero", []modelOp{w(0, 2*chunk+1), tr(0)}},
		{"grow an empty file", []modelOp{tr(3*chunk + 17)}},
		{"grow with ftruncate", []modelOp{w(0, 10), ftr(2*chunk + 5)}},
		// The classic: bytes cut off by a shrink must read as zeros when
		// the file grows again, in the same chunk and in later ones.
		{"shrink then grow zeroes the tail", []modelOp{w(0, 3*chunk+100), tr(chunk + 1000), tr(3*chunk + 500)}},
		{"ftruncate shrink then grow", []modelOp{w(0, 2*chunk), ftr(100), ftr(2 * chunk)}},
		{"shrink, grow, write past the old end", []modelOp{w(0, 2*chunk), tr(10), tr(chunk), w(chunk+chunk/2, 100)}},
		{"write after shrink in the cut chunk", []modelOp{w(0, 2*chunk), tr(chunk + 10), w(chunk+chunk/2, 10)}},
		{"repeated shrinks", []modelOp{w(0, 4*chunk), tr(3 * chunk), tr(2*chunk + 7), tr(chunk - 7), tr(4 * chunk)}},
		{"punch a hole", []modelOp{w(0, 3*chunk), {kind: "punch", off: 1000, n: 2*chunk + 5}}},
		{"punch past the end keeps the size", []modelOp{w(0, chunk+3), {kind: "punch", off: chunk, n: 4 * chunk}}},
		{"fallocate grows", []modelOp{w(0, 100), {kind: "falloc", off: 0, n: 2*chunk + 3}}},
		{"zero a range", []modelOp{w(0, 3*chunk), {kind: "zero", off: 1000, n: chunk + 5}}},
		{"zero a range past the end grows", []modelOp{w(0, chunk+3), {kind: "zero", off: chunk, n: 2 * chunk}}},
		{"zero a range past the end, keep size", []modelOp{w(0, chunk+3), {kind: "zero-keep", off: 10, n: 4 * chunk}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := testmount.New(t, testmount.Options{})
			fm := &fileModel{t: t, path: filepath.Join(m.Dir, "f")}
			writeFile(t, fm.path, nil)
			for i, op := range tc.ops {
				fm.apply(op, uint64(100+i))
				fm.check(fmt.Sprintf("after op %d (%s)", i, op.kind))
			}
			// Once committed, and once more from the store alone.
			if err := m.FS.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			fm.check("after sync")
			m = remount(t, m)
			fm.path = filepath.Join(m.Dir, "f")
			fm.check("after remount")
		})
	}
}

// TestTruncateOpenFd: a shrink through one descriptor is seen by reads
// through another that was open all along.
func TestTruncateOpenFd(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "f")
	data := randomBytes(20, 2*chunk)
	writeFile(t, path, data)
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 2*chunk)
	if _, err := r.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	if err := unix.Truncate(path, 2*chunk); err != nil {
		t.Fatal(err)
	}
	n, err := unix.Pread(int(r.Fd()), buf, 0)
	if err != nil || n != 2*chunk {
		t.Fatalf("pread: %d, %v", n, err)
	}
	want := append(append([]byte{}, data[:4096]...), make([]byte, 2*chunk-4096)...)
	if !bytes.Equal(buf, want) {
		t.Errorf("read through an old fd after shrink+grow: %s", diffBytes(buf, want))
	}
}

func TestSparseFile(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "sparse")
	const off = 100 << 20
	payload := []byte("hello, far away")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteAt(payload, off); err != nil {
		t.Fatal(err)
	}
	size := int64(off + len(payload))
	fd := int(f.Fd())
	if st := fstat(t, fd); st.Size != size {
		t.Errorf("size %d, want %d", st.Size, size)
	}
	check := func(when string, fd int) {
		t.Helper()
		hole := make([]byte, chunk)
		for _, at := range []int64{0, 50 << 20, off - chunk} {
			if n, err := unix.Pread(fd, hole, at); err != nil || n != chunk {
				t.Fatalf("%s: pread at %d: %d, %v", when, at, n, err)
			}
			if i := bytes.IndexFunc(hole, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Errorf("%s: hole at %d reads non-zero at +%d", when, at, i)
			}
		}
		edge := make([]byte, 64)
		n, err := unix.Pread(fd, edge, off-10)
		if err != nil || n != 10+len(payload) {
			t.Fatalf("%s: pread across the edge: %d, %v", when, n, err)
		}
		if want := append(make([]byte, 10), payload...); !bytes.Equal(edge[:n], want) {
			t.Errorf("%s: across the edge %q, want %q", when, edge[:n], want)
		}
		// Seeking: chunk granularity, and 100 MiB is chunk-aligned.
		seeks := []struct {
			from   int64
			whence int
			want   int64
			err    error
		}{
			{0, unix.SEEK_DATA, off, nil},
			{0, unix.SEEK_HOLE, 0, nil},
			{off - 1, unix.SEEK_DATA, off, nil},
			{off, unix.SEEK_DATA, off, nil},
			{off + 3, unix.SEEK_DATA, off + 3, nil},
			{off, unix.SEEK_HOLE, size, nil},
			{size, unix.SEEK_DATA, 0, unix.ENXIO},
			{size, unix.SEEK_HOLE, 0, unix.ENXIO},
		}
		for _, s := range seeks {
			got, err := unix.Seek(fd, s.from, s.whence)
			what := fmt.Sprintf("%s: lseek(%d, %s)", when, s.from, map[int]string{unix.SEEK_DATA: "SEEK_DATA", unix.SEEK_HOLE: "SEEK_HOLE"}[s.whence])
			if s.err != nil {
				wantErrno(t, what, err, s.err.(unix.Errno))
				continue
			}
			if err != nil || got != s.want {
				t.Errorf("%s = %d, %v; want %d", what, got, err, s.want)
			}
		}
	}
	check("live", fd)
	// Holes cost nothing in the store.
	if st := storeStats(t, m); st.UniqueBytes > 64<<10 || st.LogicalBytes > 64<<10 {
		t.Errorf("a 100 MiB sparse file stores %d unique / %d logical bytes", st.UniqueBytes, st.LogicalBytes)
	}
	check("after sync", fd)
	f.Close()
	m = remount(t, m)
	g, err := os.Open(filepath.Join(m.Dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	check("after remount", int(g.Fd()))
}

// TestAppend: O_APPEND writes from two descriptors of this process and
// from two other processes, all at once, land whole and one after another.
func TestAppend(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "log")
	writeFile(t, path, nil)
	const count, size = 300, 1000 // 1000-byte records straddle chunk edges
	writers := []byte("abcd")
	var wg sync.WaitGroup
	errs := make(chan error, len(writers))
	for _, tag := range writers[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- appendRecords(path, count, size, tag)
		}()
	}
	var cmds []*cmdResult
	for _, tag := range writers[2:] {
		cmd := child(t, "append", path, fmt.Sprint(count), fmt.Sprint(size), string(tag))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, &cmdResult{cmd: cmd, out: &out})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, c := range cmds {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("append child: %v\n%s", err, c.out)
		}
	}
	check := func(when string, path string) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(writers) * count * size; len(data) != want {
			t.Fatalf("%s: size %d, want %d", when, len(data), want)
		}
		counts := map[byte]int{}
		for i := 0; i < len(data); i += size {
			rec := data[i : i+size]
			if bytes.Count(rec, rec[:1]) != size {
				t.Fatalf("%s: record at %d is torn: %q...", when, i, rec[:min(40, len(rec))])
			}
			counts[rec[0]]++
		}
		for _, tag := range writers {
			if counts[tag] != count {
				t.Errorf("%s: %d records of %q, want %d", when, counts[tag], tag, count)
			}
		}
	}
	check("live", path)
	m = remount(t, m)
	check("after remount", filepath.Join(m.Dir, "log"))
}

type cmdResult struct {
	cmd interface{ Wait() error }
	out *bytes.Buffer
}

// ---------------------------------------------------------------------------
// 9. shared writable mmap

func TestMmapShared(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "mapped")
	const size = 2*chunk + 12345
	orig := randomBytes(30, size)
	writeFile(t, path, orig)

	// The mapping is used by a child process (see mmapWrite).
	mmap := func(path string, size int, patches []mmapPatch) string {
		t.Helper()
		args := []string{"mmap", path, fmt.Sprint(size)}
		for _, p := range patches {
			args = append(args, fmt.Sprint(p.off), hex.EncodeToString(p.data))
		}
		cmd := child(t, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mmap child: %v\n%s", err, stderr.Bytes())
		}
		return strings.TrimSpace(string(out))
	}

	// Change scattered pages, including both chunk edges and the last
	// partial page.
	want := append([]byte{}, orig...)
	var patches []mmapPatch
	for _, off := range []int{0, 4095, chunk - 3, chunk + 7, 2*chunk - 1, size - 100} {
		patch := []byte(fmt.Sprintf("<mmap write at %d>", off))
		patch = patch[:min(len(patch), size-off)]
		patches = append(patches, mmapPatch{off, patch})
		copy(want[off:], patch)
	}
	if got := mmap(path, size, patches); got != fmt.Sprintf("%x", sha256.Sum256(orig)) {
		t.Errorf("the mapping did not show the file's contents")
	}
	checkFile(t, path, want)

	// Writes through a mapping of a file that ftruncate grew.
	grown := filepath.Join(m.Dir, "grown")
	writeFile(t, grown, nil)
	wantGrown := make([]byte, chunk+4096)
	patches = nil
	for i := 0; i < len(wantGrown); i += 4096 {
		b := byte(i/4096) | 1
		patches = append(patches, mmapPatch{i, []byte{b}})
		wantGrown[i] = b
	}
	if got := mmap(grown, len(wantGrown), patches); got != fmt.Sprintf("%x", sha256.Sum256(make([]byte, len(wantGrown)))) {
		t.Errorf("the grown file's mapping was not all zeros")
	}
	checkFile(t, grown, wantGrown)

	m = remount(t, m)
	checkFile(t, filepath.Join(m.Dir, "mapped"), want)
	checkFile(t, filepath.Join(m.Dir, "grown"), wantGrown)
}

// ---------------------------------------------------------------------------
// 10. copy_file_range

// copyRange copies n bytes with copy_file_range, looping over short copies.
func copyRange(t *testing.T, src, dst *os.File, srcOff, dstOff int64, n int) {
	t.Helper()
	for n > 0 {
		c, err := unix.CopyFileRange(int(src.Fd()), &srcOff, int(dst.Fd()), &dstOff, n, 0)
		if err != nil {
			t.Fatalf("copy_file_range: %v", err)
		}
		if c == 0 {
			t.Fatalf("copy_file_range: no progress with %d bytes left", n)
		}
		n -= c
	}
}

func TestCopyFileRange(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	src := filepath.Join(m.Dir, "src")
	const size = 16 << 20
	data := randomBytes(40, size)
	writeFile(t, src, data)
	before := storeStats(t, m)

	sf, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	df, err := os.Create(filepath.Join(m.Dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { df.Close() })
	copyRange(t, sf, df, 0, 0, size)
	df.Close()
	checkFile(t, filepath.Join(m.Dir, "dst"), data)

	after := storeStats(t, m)
	if grew := int64(after.UniqueBytes) - int64(before.UniqueBytes); grew > 256<<10 {
		t.Errorf("copy_file_range of %d bytes grew unique bytes by %d: chunks not shared", size, grew)
	}
	if grew := after.LogicalBytes - before.LogicalBytes; grew < size {
		t.Errorf("logical bytes grew by %d, want >= %d", grew, size)
	}

	// Unaligned ranges, onto existing data, into the middle of a file.
	dst2 := filepath.Join(m.Dir, "dst2")
	base := randomBytes(41, 5*chunk)
	writeFile(t, dst2, base)
	d2, err := os.OpenFile(dst2, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })
	want := append([]byte{}, base...)
	for _, c := range []struct{ from, to, n int64 }{
		{1000, 5, 3*chunk + 17},
		{chunk, 2 * chunk, chunk},          // aligned, whole chunk
		{0, 4*chunk + 100, 2 * chunk},      // past the end: grows
		{size - 10, 6*chunk + 100 - 3, 10}, // tail of the source
	} {
		copyRange(t, sf, d2, c.from, c.to, int(c.n))
		if end := c.to + c.n; end > int64(len(want)) {
			want = append(want, make([]byte, end-int64(len(want)))...)
		}
		copy(want[c.to:], data[c.from:c.from+c.n])
	}
	d2.Close()
	checkFile(t, dst2, want)

	// A copy of data not committed yet (still in memory).
	fresh := randomBytes(42, 3*chunk)
	writeFile(t, filepath.Join(m.Dir, "fresh"), fresh)
	ff, err := os.Open(filepath.Join(m.Dir, "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ff.Close() })
	fd3, err := os.Create(filepath.Join(m.Dir, "fresh.copy"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd3.Close() })
	copyRange(t, ff, fd3, 0, 0, len(fresh))
	fd3.Close()
	ff.Close()
	checkFile(t, filepath.Join(m.Dir, "fresh.copy"), fresh)

	// cp (coreutils) uses copy_file_range.
	if _, err := exec.LookPath("cp"); err != nil {
		t.Log("cp not found; skipping the cp part")
	} else {
		beforeCp := storeStats(t, m)
		run(t, command(t, "cp", src, filepath.Join(m.Dir, "cp.copy")))
		checkFile(t, filepath.Join(m.Dir, "cp.copy"), data)
		afterCp := storeStats(t, m)
		if grew := int64(afterCp.UniqueBytes) - int64(beforeCp.UniqueBytes); grew > 256<<10 {
			t.Errorf("cp grew unique bytes by %d", grew)
		}
	}

	sf.Close()
	m = remount(t, m)
	checkFile(t, filepath.Join(m.Dir, "dst"), data)
	checkFile(t, filepath.Join(m.Dir, "dst2"), want)
	checkFile(t, filepath.Join(m.Dir, "fresh.copy"), fresh)
}

// TestCopyFileRangeShared: after a copy shares chunks, writing to the copy
// must not change the original, and removing the original must not break
// the copy.
func TestCopyFileRangeShared(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	data := randomBytes(43, 4*chunk)
	writeFile(t, filepath.Join(m.Dir, "a"), data)
	storeStats(t, m) // committed: the copy shares by ID
	sf, err := os.Open(filepath.Join(m.Dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	df, err := os.Create(filepath.Join(m.Dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { df.Close() })
	copyRange(t, sf, df, 0, 0, len(data))
	if _, err := df.WriteAt([]byte("changed"), chunk+10); err != nil {
		t.Fatal(err)
	}
	df.Close()
	sf.Close()
	want := append([]byte{}, data...)
	copy(want[chunk+10:], "changed")
	checkFile(t, filepath.Join(m.Dir, "a"), data)
	checkFile(t, filepath.Join(m.Dir, "b"), want)
	if err := os.Remove(filepath.Join(m.Dir, "a")); err != nil {
		t.Fatal(err)
	}
	storeStats(t, m)
	m = remount(t, m)
	checkFile(t, filepath.Join(m.Dir, "b"), want)
}

// ---------------------------------------------------------------------------
// 6. statfs

func TestStatfs(t *testing.T) {
	const limit = 64 << 20
	m := testmount.New(t, testmount.Options{FS: fs.Options{Limit: limit}})
	statfs := func() unix.Statfs_t {
		t.Helper()
		var s unix.Statfs_t
		if err := unix.Statfs(m.Dir, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s0 := statfs()
	if got := s0.Blocks * uint64(s0.Bsize); got != limit {
		t.Errorf("f_blocks*f_bsize = %d, want the limit %d", got, limit)
	}
	if got := s0.Blocks * uint64(s0.Frsize); got != limit {
		t.Errorf("f_blocks*f_frsize = %d, want %d", got, limit)
	}
	if s0.Bfree > s0.Blocks || s0.Bavail > s0.Bfree {
		t.Errorf("free %d avail %d of %d blocks", s0.Bfree, s0.Bavail, s0.Blocks)
	}
	if s0.Namelen != 255 {
		t.Errorf("namelen %d", s0.Namelen)
	}
	const size = 8 << 20
	f, err := os.Create(filepath.Join(m.Dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(randomBytes(50, size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s1 := statfs()
	used := int64(s0.Bfree-s1.Bfree) * s1.Bsize
	if used < size-64<<10 || used > size+2*chunk {
		t.Errorf("free space fell by %d after writing %d", used, size)
	}
	if s1.Bavail != s1.Bfree {
		t.Errorf("avail %d != free %d", s1.Bavail, s1.Bfree)
	}
	// df shows the same (when df is present).
	if _, err := exec.LookPath("df"); err == nil {
		out := run(t, command(t, "df", "-B1", "--output=size,avail", m.Dir))
		fields := strings.Fields(out)
		if len(fields) != 4 || fields[2] != fmt.Sprint(limit) {
			t.Errorf("df output %q, want size %d", out, limit)
		} else if fields[3] != fmt.Sprint(s1.Bavail*uint64(s1.Bsize)) {
			t.Errorf("df avail %s, statfs %d", fields[3], s1.Bavail*uint64(s1.Bsize))
		}
	}
	if err := os.Remove(filepath.Join(m.Dir, "f")); err != nil {
		t.Fatal(err)
	}
	var s2 unix.Statfs_t
	for range 500 {
		storeStats(t, m)
		if s2 = statfs(); s2.Bfree >= s0.Bfree {
			break
		}
		sleep()
	}
	if s2.Bfree < s0.Bfree {
		t.Errorf("free blocks %d after removing the file, want %d", s2.Bfree, s0.Bfree)
	}
}

// ---------------------------------------------------------------------------
// 15. the size limit

func TestSizeLimit(t *testing.T) {
	if _, err := exec.LookPath("dd"); err != nil {
		t.Skip("dd not in PATH")
	}
	const limit = 16 << 20
	m := testmount.New(t, testmount.Options{FS: fs.Options{Limit: limit}})
	small := randomBytes(60, 2<<20+333)
	writeFile(t, filepath.Join(m.Dir, "small"), small)
	if err := os.Mkdir(filepath.Join(m.Dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.Dir, "d/tiny"), []byte("tiny"))

	src := filepath.Join(t.TempDir(), "big.src")
	bigData := randomBytes(61, 32<<20)
	writeFile(t, src, bigData)
	big := filepath.Join(m.Dir, "big")
	code, out := exitCode(t, command(t, "dd", "if="+src, "of="+big, "bs=1M", "count=32", "conv=fsync"))
	if code == 0 {
		t.Fatalf("dd of 32 MiB into a 16 MiB workspace succeeded:\n%s", out)
	}
	if !strings.Contains(out, "No space left on device") {
		t.Errorf("dd failed without ENOSPC:\n%s", out)
	}
	// What was written is intact, and within the limit.
	got, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) > limit {
		t.Errorf("big is %d bytes", len(got))
	}
	if !bytes.Equal(got, bigData[:len(got)]) {
		t.Errorf("big: %s", diffBytes(got, bigData[:len(got)]))
	}
	checkFile(t, filepath.Join(m.Dir, "small"), small)
	checkFile(t, filepath.Join(m.Dir, "d/tiny"), []byte("tiny"))
	// Metadata still works when full, and space comes back on removal.
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	ok := false
	for range 500 {
		if storeStats(t, m); os.WriteFile(filepath.Join(m.Dir, "again"), randomBytes(62, 4<<20), 0o644) == nil {
			ok = true
			break
		}
		sleep()
	}
	if !ok {
		t.Errorf("no space after removing the big file")
	}
	m = remount(t, m)
	checkFile(t, filepath.Join(m.Dir, "small"), small)
	checkFile(t, filepath.Join(m.Dir, "again"), randomBytes(62, 4<<20))
}

// ---------------------------------------------------------------------------
// 16. durability semantics visible through the mount

func TestDurability(t *testing.T) {
	m := testmount.New(t, testmount.Options{FS: fs.Options{CommitInterval: 1 << 40}})
	dir := filepath.Join(m.Dir, "dir")
	mkdir(t, dir)
	path := filepath.Join(dir, "f")
	data := randomBytes(70, 3*chunk+5)

	// write + close: any other descriptor, or process, sees it at once.
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r, err := os.Open(path) // opened before the data was written
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+10)
	if n, err := r.ReadAt(got, 0); n != len(data) || !bytes.Equal(got[:n], data) {
		t.Errorf("earlier fd reads %d bytes (%v): %s", n, err, diffBytes(got[:n], data))
	}
	checkFile(t, path, data)
	if _, err := exec.LookPath("cmp"); err == nil {
		src := filepath.Join(t.TempDir(), "f")
		writeFile(t, src, data)
		run(t, command(t, "cmp", src, path))
	}

	// fsync returns no error, and afterwards the data is in the store
	// without any other commit (the commit interval is effectively off).
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	extra := randomBytes(71, chunk/2)
	if _, err := f.WriteAt(extra, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fsync(int(f.Fd())); err != nil {
		t.Errorf("fsync: %v", err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Errorf("fdatasync: %v", err)
	}
	if st := rawStats(t, m); st.LogicalBytes < uint64(len(data)+len(extra)) {
		t.Errorf("after fsync the store holds %d logical bytes, want >= %d", st.LogicalBytes, len(data)+len(extra))
	}
	f.Close()
	for _, d := range []string{dir, m.Dir} {
		df, err := os.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Fsync(int(df.Fd())); err != nil {
			t.Errorf("fsync of directory %s: %v", d, err)
		}
		df.Close()
	}
	// A new name, then fsync of its directory: the entry is committed.
	writeFile(t, filepath.Join(dir, "named"), []byte("n"))
	df, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fsync(int(df.Fd())); err != nil {
		t.Errorf("fsync of directory: %v", err)
	}
	df.Close()
	if !direntStored(t, m, lstat(t, dir).Ino, "named") {
		t.Errorf("directory entry not in the store after fsync of its directory")
	}
	if err := unix.Syncfs(int(r.Fd())); err != nil {
		t.Errorf("syncfs: %v", err)
	}
	r.Close()
	m = remount(t, m)
	checkFile(t, filepath.Join(m.Dir, "dir/f"), append(append([]byte{}, data...), extra...))
	checkFile(t, filepath.Join(m.Dir, "dir/named"), []byte("n"))
}

// direntStored looks a directory entry up in the store's committed state.
func direntStored(t *testing.T, m *testmount.Mount, dir uint64, name string) bool {
	t.Helper()
	var found bool
	err := m.FS.Store().View(func(tx *chunkstore.Tx) error {
		b := tx.Bucket([]byte("dirents"))
		if b == nil {
			return errors.New("no dirents bucket")
		}
		key := append(be64(dir), name...)
		found = b.Get(key) != nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func be64(v uint64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[7-i] = byte(v >> (8 * i))
	}
	return b
}

// sleep pauses polling loops.
func sleep() { time.Sleep(20 * time.Millisecond) }

// TestCopyFileRangeDuringCommit copies files whose chunks are somewhere in
// the commit pipeline (sealed, prepared, being committed, committed), then
// reads the copy and patches it mid-chunk at once. A copy must never refer
// to a chunk the store does not hold yet: reads and partial writes of it
// would fail with EIO until the commit ends.
func TestCopyFileRangeDuringCommit(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	src, dst := filepath.Join(m.Dir, "src"), filepath.Join(m.Dir, "dst")
	for i := range 30 {
		data := randomBytes(uint64(1000+i), 2*chunk)
		writeFile(t, src, data)
		// Spread the copies over the commit interval (100ms).
		time.Sleep(time.Duration(i*11%110) * time.Millisecond)
		sf, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		df, err := os.Create(dst)
		if err != nil {
			sf.Close()
			t.Fatal(err)
		}
		copyRange(t, sf, df, 0, 0, len(data))
		sf.Close()
		_, werr := df.WriteAt([]byte("patch"), chunk+100)
		df.Close()
		if werr != nil {
			t.Fatalf("copy %d: write into the copy: %v", i, werr)
		}
		copy(data[chunk+100:], "patch")
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatalf("copy %d: read: %v", i, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("copy %d: %s", i, diffBytes(got, data))
		}
	}
}

// TestBlocksCountStoredChunks: st_blocks counts only what is stored, so
// du, cp --sparse=auto, tar --sparse and rsync -S see a sparse file as
// sparse; before and after the commit, and after a remount.
func TestBlocksCountStoredChunks(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	blocks := func(name string) int64 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(m.Dir, name), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks
	}
	tests := []struct {
		name     string
		make     func(path string)
		min, max int64 // st_blocks bounds
	}{
		{"a 1 GiB hole", func(p string) { writeFile(t, p, nil); unix.Truncate(p, 1<<30) }, 0, 0},
		{"10 bytes", func(p string) { writeFile(t, p, []byte("0123456789")) }, 8, 8},
		{"two chunks and a tail", func(p string) { writeFile(t, p, randomBytes(3, 2*chunk+100)) }, (2*chunk + 100) / 512, (2*chunk + 4096) / 512},
		{"data after a 64 MiB hole", func(p string) {
			writeFile(t, p, nil)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("tail"), 64<<20)
			f.Close()
		}, 8, chunk / 512},
	}
	for _, tt := range tests {
		tt.make(filepath.Join(m.Dir, tt.name))
		if b := blocks(tt.name); b < tt.min || b > tt.max {
			t.Errorf("%s: %d blocks before the commit, want %d..%d", tt.name, b, tt.min, tt.max)
		}
	}
	m.Close(t)
	m = testmount.New(t, testmount.Options{Store: m.Workspace})
	for _, tt := range tests {
		if b := blocks(tt.name); b < tt.min || b > tt.max {
			t.Errorf("%s: %d blocks after a remount, want %d..%d", tt.name, b, tt.min, tt.max)
		}
	}
	// du agrees.
	out, err := exec.Command("du", "-s", "--block-size=1", filepath.Join(m.Dir, "a 1 GiB hole")).Output()
	if err != nil || !strings.HasPrefix(string(out), "0\t") {
		t.Errorf("du of a 1 GiB hole: %q %v", out, err)
	}
}
