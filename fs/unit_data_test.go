package fs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// model is the expected content of a file.
type model []byte

func (m *model) write(off int64, data []byte) {
	if end := int(off) + len(data); end > len(*m) {
		*m = append(*m, make([]byte, end-len(*m))...)
	}
	copy((*m)[off:], data)
}

func (m *model) truncate(size int) {
	if size <= len(*m) {
		*m = (*m)[:size]
		return
	}
	*m = append(*m, make([]byte, size-len(*m))...)
}

// verify compares the whole file and a few slices of it with the model.
func (h *harness) verify(stage string, ino Ino, m model) {
	h.t.Helper()
	if a := h.attr(ino); a.Size != uint64(len(m)) {
		h.t.Fatalf("%s: size %d, want %d", stage, a.Size, len(m))
	}
	got := h.readAll(ino)
	if i := firstDiff(got, m); i >= 0 {
		h.t.Fatalf("%s: content differs at byte %d (chunk %d): got %#x want %#x", stage, i, i/h.f.ChunkSize(), got[i], m[i])
	}
	cs := h.f.ChunkSize()
	size := len(m)
	for _, off := range []int{0, 1, cs - 1, cs, cs + 1, 2*cs - 3, size / 2, size - 1, size, size + 100} {
		for _, n := range []int{1, 7, min(cs, 16<<10) + 3} {
			if off < 0 {
				continue
			}
			got := h.read(ino, int64(off), n)
			want := []byte{}
			if off < size {
				want = m[off:min(size, off+n)]
			}
			if !bytes.Equal(got, want) {
				h.t.Fatalf("%s: read %d at %d: got %d bytes, differing at %d", stage, n, off, len(got), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func TestWriteReadRoundTrip(t *testing.T) {
	type w struct {
		off  int64 // in units of chunks (c) plus bytes: off = c*cs + b
		c, n int   // length = n*cs + extra
		b    int64
		ext  int
		sync bool // sync after this write
	}
	tests := []struct {
		name   string
		writes []w
	}{
		{"small at 0", []w{{ext: 100}}},
		{"one byte", []w{{ext: 1}}},
		{"exactly one chunk", []w{{n: 1}}},
		{"across a chunk boundary", []w{{c: 1, b: -10, ext: 20}}},
		{"one chunk at an unaligned offset", []w{{b: 100, n: 1}}},
		{"three and a half chunks unaligned", []w{{b: 100, n: 3, ext: 2000}}},
		{"sparse: data after a gap of chunks", []w{{c: 5, b: 7, ext: 10}}},
		{"sparse: two islands", []w{{b: 3, ext: 5}, {c: 4, b: 9, ext: 5}}},
		{"overwrite the middle of committed data", []w{{n: 4, sync: true}, {c: 1, b: 500, n: 1, ext: 100}}},
		{"overwrite a committed chunk in part", []w{{n: 2, sync: true}, {b: 10, ext: 10}}},
		{"extend a committed tail", []w{{ext: 1000, sync: true}, {b: 1000, ext: 5000}}},
		{"rewrite a chunk twice before commit", []w{{n: 2}, {b: 5, ext: 5}, {b: 5, ext: 3}}},
		{"overwrite after overwrite, committed each time", []w{{n: 3, sync: true}, {c: 1, n: 1, sync: true}, {c: 1, b: 1, ext: 1, sync: true}}},
		{"write far past the end", []w{{ext: 10, sync: true}, {c: 9, b: 9, ext: 9}}},
	}
	// The default chunk size on a few cases: the race detector makes
	// every megabyte slow.
	big := map[string]bool{
		"across a chunk boundary":                true,
		"three and a half chunks unaligned":      true,
		"sparse: two islands":                    true,
		"overwrite the middle of committed data": true,
	}
	for _, cs := range []int{4096, 1 << 20} {
		for _, tt := range tests {
			if cs > 4096 && !big[tt.name] {
				continue
			}
			t.Run(fmt.Sprintf("%s/%dK", tt.name, cs>>10), func(t *testing.T) {
				h := newHarness(t, Options{ChunkSize: cs})
				a := h.file(RootIno, "f")
				var m model
				for i, wr := range tt.writes {
					off := int64(wr.c)*int64(cs) + wr.b
					data := pattern(uint64(i+1), wr.n*cs+wr.ext)
					h.write(a.Ino, off, data)
					m.write(off, data)
					if wr.sync {
						h.sync()
					}
				}
				h.verify("in memory", a.Ino, m)
				h.sync()
				h.verify("committed", a.Ino, m)
				h.reopen()
				h.verify("reopened", a.Ino, m)
				h.closeFS()
			})
		}
	}
}

func TestWriteAtManyOffsetsAndSizes(t *testing.T) {
	// Every offset near a chunk boundary, every size around a chunk, on a
	// file that already holds committed data.
	h := small(t)
	cs := 4096
	a := h.file(RootIno, "f")
	var m model
	base := pattern(1, 4*cs)
	h.write(a.Ino, 0, base)
	m.write(0, base)
	h.sync()
	seed := uint64(2)
	for _, off := range []int{0, 1, cs - 1, cs, cs + 1, 2*cs - 1, 3*cs + 17} {
		for _, n := range []int{1, 2, cs - 1, cs, cs + 1, 2*cs + 1} {
			seed++
			data := pattern(seed, n)
			h.write(a.Ino, int64(off), data)
			m.write(int64(off), data)
			if got := h.read(a.Ino, int64(off), n); !bytes.Equal(got, data) {
				t.Fatalf("read back %d at %d differs at %d", n, off, firstDiff(got, data))
			}
		}
		h.sync()
	}
	h.verify("final", a.Ino, m)
	h.reopen()
	h.verify("reopened", a.Ino, m)
	h.closeFS()
}

func TestReadEdges(t *testing.T) {
	h := small(t)
	a := h.file(RootIno, "f")
	h.write(a.Ino, 0, []byte("hello"))
	if n, err := h.f.Read(bg, a.Ino, 5, make([]byte, 10)); n != 0 || err != nil {
		t.Errorf("read at EOF: %d %v", n, err)
	}
	if n, err := h.f.Read(bg, a.Ino, 100, make([]byte, 10)); n != 0 || err != nil {
		t.Errorf("read past EOF: %d %v", n, err)
	}
	if _, err := h.f.Read(bg, a.Ino, -1, make([]byte, 10)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("read at -1: %v", err)
	}
	if _, err := h.f.Write(bg, a.Ino, -1, []byte("x"), false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("write at -1: %v", err)
	}
	if _, err := h.f.Read(bg, RootIno, 0, make([]byte, 10)); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("read of a directory: %v", err)
	}
	if _, err := h.f.Write(bg, RootIno, 0, []byte("x"), false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("write to a directory: %v", err)
	}
	if _, err := h.f.Read(bg, 9999, 0, make([]byte, 10)); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("read of a missing inode: %v", err)
	}
	if n, err := h.f.Write(bg, a.Ino, 2, nil, false); n != 0 || err != nil {
		t.Errorf("empty write: %d %v", n, err)
	}
	if got := h.readAll(a.Ino); string(got) != "hello" {
		t.Errorf("content %q", got)
	}
	before := h.attr(a.Ino)
	if _, err := h.f.Write(bg, a.Ino, 0, []byte("J"), false); err != nil {
		t.Fatal(err)
	}
	after := h.attr(a.Ino)
	if after.Mtime < before.Mtime || after.Ctime < before.Ctime || after.Size != 5 {
		t.Errorf("write did not update times or changed size: %+v -> %+v", before, after)
	}
	h.closeFS()
}

func TestSparseFileReadsZeros(t *testing.T) {
	h := newHarness(t, Options{}) // 1 MiB chunks
	a := h.file(RootIno, "sparse")
	off := int64(10<<20 + 5)
	h.write(a.Ino, off, []byte{0x5a})
	check := func(stage string) {
		t.Helper()
		if got := h.attr(a.Ino).Size; got != uint64(off+1) {
			t.Fatalf("%s: size %d", stage, got)
		}
		data := h.readAll(a.Ino)
		if data[off] != 0x5a {
			t.Errorf("%s: last byte %#x", stage, data[off])
		}
		if i := bytes.IndexFunc(data[:off], func(r rune) bool { return r != 0 }); i >= 0 {
			t.Errorf("%s: hole holds data at %d", stage, i)
		}
	}
	check("in memory")
	h.sync()
	check("committed")
	// One chunk holds the byte, its leading zeros and no trailing ones.
	if st := h.stats(); st.Chunks != 1 || st.UniqueBytes != 6 {
		t.Errorf("stats %+v, want one 6-byte chunk", st)
	}
	h.reopen()
	check("reopened")
	h.closeFS()
}

func TestZerosMakeNoChunks(t *testing.T) {
	h := newHarness(t, Options{})
	cs := 1 << 20
	a := h.file(RootIno, "zeros")
	h.write(a.Ino, 0, make([]byte, 3*cs+100))
	h.sync()
	if st := h.stats(); st.Chunks != 0 || st.LogicalBytes != 0 {
		t.Errorf("zeros stored: %+v", st)
	}
	if got := h.attr(a.Ino).Size; got != uint64(3*cs+100) {
		t.Errorf("size %d", got)
	}
	if _, err := h.f.SeekData(a.Ino, 0, SeekData); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("SEEK_DATA in a file of zeros: %v", err)
	}
	// Data, then zeros over it: the chunk goes away.
	data := pattern(1, 2*cs)
	h.write(a.Ino, int64(cs), data)
	h.sync()
	if st := h.stats(); st.Chunks != 2 {
		t.Fatalf("chunks %d, want 2", st.Chunks)
	}
	h.write(a.Ino, int64(cs), make([]byte, cs)) // whole chunk
	h.sync()
	if st := h.stats(); st.Chunks != 1 || st.UniqueBytes != uint64(cs) {
		t.Errorf("after zeroing a whole chunk: %+v", st)
	}
	h.write(a.Ino, int64(2*cs), make([]byte, cs-1)) // all but the last byte
	h.write(a.Ino, int64(3*cs-1), []byte{0})
	h.sync()
	if st := h.stats(); st.Chunks != 0 {
		t.Errorf("after zeroing a chunk piecewise: %+v", st)
	}
	if got := h.readAll(a.Ino); bytes.IndexFunc(got, func(r rune) bool { return r != 0 }) >= 0 {
		t.Error("zeroed file holds data")
	}
	// Trailing zeros of a chunk are not stored.
	h.write(a.Ino, 0, append([]byte("abc"), make([]byte, 5000)...))
	h.sync()
	if st := h.stats(); st.Chunks != 1 || st.UniqueBytes != 3 {
		t.Errorf("chunk with trailing zeros: %+v", st)
	}
	h.closeFS()
}

func TestTruncate(t *testing.T) {
	cs := 4096
	tests := []struct {
		name      string
		start     int  // bytes of data
		commit    bool // commit the data before truncating
		sizes     []int
		syncEach  bool
		reopenMid bool
	}{
		{"shrink mid-chunk then regrow", 3 * cs, false, []int{cs + cs/2, 3 * cs}, false, false},
		{"shrink committed mid-chunk then regrow", 3 * cs, true, []int{cs + cs/2, 3 * cs}, false, false},
		{"shrink, commit, regrow", 3 * cs, true, []int{cs + 10, 4 * cs}, true, false},
		{"shrink, reopen, regrow", 3 * cs, true, []int{cs + 10, 4 * cs}, true, true},
		{"to zero and back", 2*cs + 5, true, []int{0, 2 * cs}, false, false},
		{"to zero, commit, back", 2*cs + 5, true, []int{0, 2 * cs}, true, false},
		{"exact chunk boundary", 3 * cs, true, []int{2 * cs, 3 * cs}, false, false},
		{"grow only", 100, true, []int{5 * cs, 5*cs + 1}, false, false},
		{"shrink in steps", 5 * cs, true, []int{4*cs + 7, 3 * cs, 2*cs + 1, cs - 1, 1, 0, 6 * cs}, false, false},
		{"shrink in steps committing", 5 * cs, true, []int{4*cs + 7, 3 * cs, 2*cs + 1, cs - 1, 1, 0, 6 * cs}, true, false},
		{"to the same size", 2*cs + 3, true, []int{2*cs + 3}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			a := h.file(RootIno, "f")
			var m model
			data := pattern(1, tt.start)
			h.write(a.Ino, 0, data)
			m.write(0, data)
			if tt.commit {
				h.sync()
			}
			for i, size := range tt.sizes {
				sz := uint64(size)
				got, err := h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &sz})
				if err != nil || got.Size != sz {
					t.Fatalf("truncate to %d: %+v %v", size, got, err)
				}
				m.truncate(size)
				h.verify(fmt.Sprintf("after truncate %d", i), a.Ino, m)
				if tt.syncEach {
					h.sync()
					h.verify(fmt.Sprintf("after truncate %d committed", i), a.Ino, m)
				}
				if tt.reopenMid && i == 0 {
					h.reopen()
				}
			}
			// A write past the end after all that leaves a gap of zeros.
			tail := pattern(9, 100)
			off := int64(len(m) + cs + 3)
			h.write(a.Ino, off, tail)
			m.write(off, tail)
			h.verify("after write past the end", a.Ino, m)
			h.sync()
			// Only the chunks the model needs are referenced.
			var chunks int
			for c := 0; c*cs < len(m); c++ {
				if bytes.IndexFunc(m[c*cs:min(len(m), (c+1)*cs)], func(r rune) bool { return r != 0 }) >= 0 {
					chunks++
				}
			}
			if st := h.stats(); int(st.Chunks) != chunks {
				t.Errorf("%d chunks stored, the content needs %d", st.Chunks, chunks)
			}
			h.reopen()
			h.verify("reopened", a.Ino, m)
			h.closeFS()
		})
	}
}

func TestAppend(t *testing.T) {
	h := small(t)
	a := h.file(RootIno, "log")
	var m model
	for i := range 50 {
		line := pattern(uint64(i), 100+i*37)
		// The offset is ignored in append mode.
		n, err := h.f.Write(bg, a.Ino, 3, line, true)
		if err != nil || n != len(line) {
			t.Fatalf("append %d: %d %v", i, n, err)
		}
		m.write(int64(len(m)), line)
		if i%7 == 0 {
			h.sync()
		}
	}
	h.verify("appended", a.Ino, m)
	h.reopen()
	h.verify("reopened", a.Ino, m)
	h.closeFS()
}

func TestSeekDataHole(t *testing.T) {
	cs := int64(4096)
	// chunk 0 data, 1 hole, 2 data, 3 hole up to size 3*cs+100.
	setup := func(h *harness) Ino {
		a := h.file(RootIno, "f")
		h.write(a.Ino, 10, []byte("data"))
		h.write(a.Ino, 2*cs+cs/2, []byte("more"))
		size := uint64(3*cs + 100)
		if _, err := h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &size}); err != nil {
			h.t.Fatal(err)
		}
		return a.Ino
	}
	size := 3*cs + 100
	tests := []struct {
		off    int64
		whence int
		want   int64
		err    syscall.Errno
	}{
		{0, SeekData, 0, 0},
		{10, SeekData, 10, 0},
		{cs, SeekData, 2 * cs, 0},
		{cs + 1, SeekData, 2 * cs, 0},
		{2*cs + 5, SeekData, 2*cs + 5, 0},
		{3 * cs, SeekData, 0, syscall.ENXIO},
		{size - 1, SeekData, 0, syscall.ENXIO},
		{size, SeekData, 0, syscall.ENXIO},
		{-1, SeekData, 0, syscall.ENXIO},
		{0, SeekHole, cs, 0},
		{cs - 1, SeekHole, cs, 0},
		{cs + 3, SeekHole, cs + 3, 0},
		{2 * cs, SeekHole, 3 * cs, 0},
		{3*cs + 1, SeekHole, 3*cs + 1, 0},
		{size - 1, SeekHole, size - 1, 0},
		{size, SeekHole, 0, syscall.ENXIO},
	}
	h := small(t)
	ino := setup(h)
	run := func(stage string) {
		for _, tt := range tests {
			got, err := h.f.SeekData(ino, tt.off, tt.whence)
			if tt.err != 0 {
				if !errors.Is(err, tt.err) {
					t.Errorf("%s: seek(%d, %d) = %d, %v; want %v", stage, tt.off, tt.whence, got, err, tt.err)
				}
				continue
			}
			if err != nil || got != tt.want {
				t.Errorf("%s: seek(%d, %d) = %d, %v; want %d", stage, tt.off, tt.whence, got, err, tt.want)
			}
		}
	}
	run("in memory")
	h.sync()
	run("committed")
	h.reopen()
	run("reopened")
	// A file without holes: SEEK_HOLE finds the end.
	b := h.file(RootIno, "full")
	h.write(b.Ino, 0, pattern(1, int(2*cs+7)))
	if got, err := h.f.SeekData(b.Ino, 5, SeekHole); err != nil || got != 2*cs+7 {
		t.Errorf("SEEK_HOLE in a full file: %d %v", got, err)
	}
	h.closeFS()
}

func TestFallocate(t *testing.T) {
	cs := int64(4096)
	t.Run("mode 0 grows", func(t *testing.T) {
		h := small(t)
		a := h.file(RootIno, "f")
		h.write(a.Ino, 0, []byte("abc"))
		if err := h.f.Fallocate(bg, a.Ino, 100, 3*cs, 0); err != nil {
			t.Fatal(err)
		}
		m := model("abc")
		m.truncate(int(100 + 3*cs))
		h.verify("grown", a.Ino, m)
		// Allocating inside the file changes nothing.
		if err := h.f.Fallocate(bg, a.Ino, 0, 10, 0); err != nil {
			t.Fatal(err)
		}
		h.verify("inside", a.Ino, m)
		// KEEP_SIZE does not grow.
		if err := h.f.Fallocate(bg, a.Ino, 0, 10*cs, FallocKeepSize); err != nil {
			t.Fatal(err)
		}
		h.verify("keep size", a.Ino, m)
		h.reopen()
		h.verify("reopened", a.Ino, m)
		h.closeFS()
	})
	t.Run("punch hole", func(t *testing.T) {
		h := small(t)
		a := h.file(RootIno, "f")
		var m model
		data := pattern(1, int(4*cs))
		h.write(a.Ino, 0, data)
		m.write(0, data)
		h.sync()
		if err := h.f.Fallocate(bg, a.Ino, cs/2, cs+cs/2, FallocPunchHole|FallocKeepSize); err != nil {
			t.Fatal(err)
		}
		m.write(cs/2, make([]byte, cs+cs/2))
		h.verify("punched", a.Ino, m)
		h.sync()
		if st := h.stats(); st.Chunks != 3 {
			t.Errorf("chunks after punching one whole chunk: %d, want 3", st.Chunks)
		}
		if got, _ := h.f.SeekData(a.Ino, cs, SeekHole); got != cs {
			t.Errorf("the punched chunk is not a hole: SEEK_HOLE %d", got)
		}
		// Punching past the end changes nothing, not even the size.
		if err := h.f.Fallocate(bg, a.Ino, 3*cs+10, 5*cs, FallocPunchHole|FallocKeepSize); err != nil {
			t.Fatal(err)
		}
		m.write(3*cs+10, make([]byte, cs-10))
		h.verify("punched past the end", a.Ino, m)
		h.reopen()
		h.verify("reopened", a.Ino, m)
		h.closeFS()
	})
	t.Run("errors", func(t *testing.T) {
		h := newHarness(t, Options{ChunkSize: 4096, Limit: 1 << 20})
		a := h.file(RootIno, "f")
		tests := []struct {
			name      string
			ino       Ino
			off, n    int64
			mode      uint32
			want      syscall.Errno
			wantSize  uint64
			checkSize bool
		}{
			{"zero length", a.Ino, 0, 0, 0, syscall.EINVAL, 0, true},
			{"negative offset", a.Ino, -1, 10, 0, syscall.EINVAL, 0, true},
			{"punch without keep size", a.Ino, 0, 10, FallocPunchHole, syscall.EOPNOTSUPP, 0, true},
			{"collapse range", a.Ino, 0, cs, 0x8, syscall.EOPNOTSUPP, 0, true},
			{"directory", RootIno, 0, 10, 0, syscall.ENODEV, 0, false},
			{"beyond the limit", a.Ino, 0, 2 << 20, 0, syscall.ENOSPC, 0, true},
			{"within the limit", a.Ino, 0, 512 << 10, 0, 0, 512 << 10, true},
		}
		for _, tt := range tests {
			err := h.f.Fallocate(bg, tt.ino, tt.off, tt.n, tt.mode)
			wantErr(t, tt.name, err, tt.want)
			if tt.checkSize {
				if got := h.attr(a.Ino).Size; got != tt.wantSize {
					t.Errorf("%s: size %d, want %d", tt.name, got, tt.wantSize)
				}
			}
		}
		h.closeFS()
	})
}

func refsOf(h *harness, data []byte) uint64 {
	h.t.Helper()
	var n uint64
	h.f.Store().View(func(tx *chunkstore.Tx) error {
		n, _ = tx.Refs(chunkstore.Sum(data))
		return nil
	})
	return n
}

func TestCopyRangeSharesAlignedChunks(t *testing.T) {
	h := small(t)
	cs := 4096
	src := h.file(RootIno, "src")
	dst := h.file(RootIno, "dst")
	data := pattern(1, 4*cs+100)
	h.write(src.Ino, 0, data)
	h.sync()
	before := h.stats()
	n, err := h.f.CopyRange(bg, src.Ino, 0, dst.Ino, 0, int64(len(data)))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("CopyRange = %d, %v", n, err)
	}
	h.verify("copied", dst.Ino, model(data))
	h.sync()
	after := h.stats()
	// The four whole chunks are shared; only the 100-byte tail is the
	// same content again, so it is deduplicated too.
	if after.UniqueBytes != before.UniqueBytes || after.Chunks != before.Chunks {
		t.Errorf("copy stored new data: %+v -> %+v", before, after)
	}
	if after.LogicalBytes != 2*before.LogicalBytes {
		t.Errorf("logical bytes %d, want %d", after.LogicalBytes, 2*before.LogicalBytes)
	}
	for c := range 4 {
		if r := refsOf(h, data[c*cs:(c+1)*cs]); r != 2 {
			t.Errorf("chunk %d has %d references, want 2", c, r)
		}
	}
	// Copy on write: changing the source leaves the copy alone.
	h.write(src.Ino, 10, []byte("changed"))
	h.sync()
	h.verify("after the source changed", dst.Ino, model(data))
	if r := refsOf(h, data[:cs]); r != 1 {
		t.Errorf("first chunk has %d references after the source changed, want 1", r)
	}
	h.f.Unlink(RootIno, "src")
	h.sync()
	h.reopen()
	h.verify("reopened", dst.Ino, model(data))
	h.closeFS()
}

func TestCopyRange(t *testing.T) {
	cs := 4096
	tests := []struct {
		name           string
		srcLen         int
		commit         bool
		dstStart       int // bytes already in dst
		srcOff, dstOff int64
		length         int64
		wantN          int64
	}{
		{"aligned committed", 3 * cs, true, 0, 0, 0, int64(3 * cs), int64(3 * cs)},
		{"aligned uncommitted", 3 * cs, false, 0, 0, 0, int64(3 * cs), int64(3 * cs)},
		{"aligned over existing data", 3 * cs, true, 4 * cs, int64(cs), int64(cs), int64(2 * cs), int64(2 * cs)},
		{"unaligned source", 3 * cs, true, 0, 100, 0, int64(2 * cs), int64(2 * cs)},
		{"unaligned destination", 3 * cs, true, 0, 0, 7, int64(2*cs + 5), int64(2*cs + 5)},
		{"both unaligned, different phase", 5 * cs, true, cs, 1000, 3, int64(3*cs + 1), int64(3*cs + 1)},
		{"past the source's end is clipped", 2*cs + 10, true, 0, int64(cs), 0, int64(10 * cs), int64(cs + 10)},
		{"source offset at the end", 2 * cs, true, 0, int64(2 * cs), 0, 100, 0},
		{"to a far offset", cs + 1, true, 0, 0, int64(20 * cs), int64(cs + 1), int64(cs + 1)},
		{"zero length", cs, true, 0, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := small(t)
			src := h.file(RootIno, "src")
			dst := h.file(RootIno, "dst")
			sdata := pattern(1, tt.srcLen)
			// A hole in the source: chunk 1 is zeros.
			if tt.srcLen > 2*cs {
				clear(sdata[cs : 2*cs])
			}
			h.write(src.Ino, 0, sdata)
			var m model
			if tt.dstStart > 0 {
				d := pattern(2, tt.dstStart)
				h.write(dst.Ino, 0, d)
				m.write(0, d)
			}
			if tt.commit {
				h.sync()
			}
			n, err := h.f.CopyRange(bg, src.Ino, tt.srcOff, dst.Ino, tt.dstOff, tt.length)
			if err != nil || n != tt.wantN {
				t.Fatalf("CopyRange = %d, %v; want %d", n, err, tt.wantN)
			}
			if n > 0 {
				m.write(tt.dstOff, sdata[tt.srcOff:tt.srcOff+n])
			}
			h.verify("copied", dst.Ino, m)
			h.verify("source unchanged", src.Ino, model(sdata))
			h.sync()
			h.verify("committed", dst.Ino, m)
			h.reopen()
			h.verify("reopened", dst.Ino, m)
			h.closeFS()
		})
	}
}

func TestCopyRangeErrors(t *testing.T) {
	h := small(t)
	a := h.file(RootIno, "a")
	h.write(a.Ino, 0, []byte("data"))
	d := h.mkdir(RootIno, "d")
	tests := []struct {
		name                   string
		src, dst               Ino
		srcOff, dstOff, length int64
		want                   syscall.Errno
	}{
		{"negative source offset", a.Ino, a.Ino, -1, 0, 1, syscall.EINVAL},
		{"negative length", a.Ino, a.Ino, 0, 10, -1, syscall.EINVAL},
		{"source is a directory", d.Ino, a.Ino, 0, 0, 1, syscall.EINVAL},
		{"destination is a directory", a.Ino, d.Ino, 0, 0, 4, syscall.EINVAL},
		{"missing source", 9999, a.Ino, 0, 0, 1, syscall.ENOENT},
	}
	for _, tt := range tests {
		_, err := h.f.CopyRange(bg, tt.src, tt.srcOff, tt.dst, tt.dstOff, tt.length)
		wantErr(t, tt.name, err, tt.want)
	}
	// Within one file, to a range that does not overlap.
	n, err := h.f.CopyRange(bg, a.Ino, 0, a.Ino, 10, 4)
	if err != nil || n != 4 {
		t.Fatalf("copy within a file: %d %v", n, err)
	}
	if got := string(h.readAll(a.Ino)); got != "data\x00\x00\x00\x00\x00\x00data" {
		t.Errorf("content %q", got)
	}
	h.closeFS()
}

func TestXattrs(t *testing.T) {
	big := bytes.Repeat([]byte{7}, maxXattrValue)
	type step struct {
		op    string // set, get, remove, list, sync
		name  string
		val   []byte
		flags uint32
		want  syscall.Errno
		list  []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"set get list remove", []step{
			{op: "set", name: "user.a", val: []byte("1")},
			{op: "set", name: "user.b", val: []byte("two")},
			{op: "get", name: "user.a", val: []byte("1")},
			{op: "list", list: []string{"user.a", "user.b"}},
			{op: "remove", name: "user.a"},
			{op: "get", name: "user.a", want: syscall.ENODATA},
			{op: "list", list: []string{"user.b"}},
		}},
		{"committed then changed", []step{
			{op: "set", name: "user.z", val: []byte("z")},
			{op: "set", name: "user.y", val: []byte("y")},
			{op: "sync"},
			{op: "remove", name: "user.z"},
			{op: "set", name: "user.y", val: []byte("Y")},
			{op: "set", name: "user.x", val: []byte("x")},
			{op: "list", list: []string{"user.x", "user.y"}},
			{op: "get", name: "user.y", val: []byte("Y")},
			{op: "get", name: "user.z", want: syscall.ENODATA},
			{op: "sync"},
			{op: "list", list: []string{"user.x", "user.y"}},
			{op: "get", name: "user.z", want: syscall.ENODATA},
		}},
		{"flags", []step{
			{op: "set", name: "user.a", val: []byte("1"), flags: XattrReplace, want: syscall.ENODATA},
			{op: "set", name: "user.a", val: []byte("1"), flags: XattrCreate},
			{op: "set", name: "user.a", val: []byte("2"), flags: XattrCreate, want: syscall.EEXIST},
			{op: "get", name: "user.a", val: []byte("1")},
			{op: "set", name: "user.a", val: []byte("3"), flags: XattrReplace},
			{op: "sync"},
			{op: "set", name: "user.a", val: []byte("4"), flags: XattrCreate, want: syscall.EEXIST},
			{op: "get", name: "user.a", val: []byte("3")},
			{op: "remove", name: "user.a"},
			{op: "set", name: "user.a", val: []byte("5"), flags: XattrReplace, want: syscall.ENODATA},
			{op: "set", name: "user.a", val: []byte("6"), flags: XattrCreate},
			{op: "get", name: "user.a", val: []byte("6")},
		}},
		{"errors", []step{
			{op: "remove", name: "user.none", want: syscall.ENODATA},
			{op: "get", name: "user.none", want: syscall.ENODATA},
			{op: "set", name: "", val: []byte("x"), want: syscall.ERANGE},
			{op: "set", name: "user." + string(bytes.Repeat([]byte("n"), 251)), val: []byte("x"), want: syscall.ERANGE},
			{op: "set", name: "user." + string(bytes.Repeat([]byte("n"), 250)), val: []byte("x")},
			{op: "set", name: "user.big", val: append(bytes.Clone(big), 1), want: syscall.E2BIG},
			{op: "set", name: "user.big", val: big},
			{op: "get", name: "user.big", val: big},
			{op: "list", list: []string{"user.big", "user." + string(bytes.Repeat([]byte("n"), 250))}},
		}},
		{"empty and binary values", []step{
			{op: "set", name: "user.empty", val: []byte{}},
			{op: "set", name: "security.bin", val: []byte{0, 1, 2, 0, 255}},
			{op: "get", name: "user.empty", val: []byte{}},
			{op: "sync"},
			{op: "get", name: "user.empty", val: []byte{}},
			{op: "get", name: "security.bin", val: []byte{0, 1, 2, 0, 255}},
			{op: "list", list: []string{"security.bin", "user.empty"}},
		}},
	}
	for _, tt := range tests {
		for _, kind := range []string{"file", "dir", "symlink"} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				h := small(t)
				var a Attr
				switch kind {
				case "file":
					a = h.file(RootIno, "x")
				case "dir":
					a = h.mkdir(RootIno, "x")
				case "symlink":
					a = h.symlink(RootIno, "x", "target")
				}
				values := map[string][]byte{}
				for i, s := range tt.steps {
					what := fmt.Sprintf("step %d (%s %s)", i, s.op, s.name)
					switch s.op {
					case "set":
						before := h.attr(a.Ino).Ctime
						err := h.f.SetXattr(a.Ino, s.name, s.val, s.flags)
						wantErr(t, what, err, s.want)
						if err == nil {
							values[s.name] = s.val
							if h.attr(a.Ino).Ctime < before {
								t.Errorf("%s: ctime went back", what)
							}
						}
					case "get":
						got, err := h.f.GetXattr(a.Ino, s.name)
						wantErr(t, what, err, s.want)
						if err == nil && (!bytes.Equal(got, s.val) || got == nil) {
							t.Errorf("%s: got %q, want %q", what, got, s.val)
						}
					case "remove":
						err := h.f.RemoveXattr(a.Ino, s.name)
						wantErr(t, what, err, s.want)
						if err == nil {
							delete(values, s.name)
						}
					case "list":
						got, err := h.f.ListXattr(a.Ino)
						if err != nil || fmt.Sprint(got) != fmt.Sprint(s.list) {
							t.Errorf("%s: %q %v, want %q", what, got, err, s.list)
						}
					case "sync":
						h.sync()
					}
				}
				h.reopen()
				names, _ := h.f.ListXattr(a.Ino)
				if len(names) != len(values) {
					t.Errorf("after reopen %q, want %d names", names, len(values))
				}
				for name, val := range values {
					got, err := h.f.GetXattr(a.Ino, name)
					if err != nil || !bytes.Equal(got, val) {
						t.Errorf("after reopen %s = %q %v, want %q", name, got, err, val)
					}
				}
				h.closeFS()
			})
		}
	}
}

func TestXattrValueIsCopied(t *testing.T) {
	h := small(t)
	a := h.file(RootIno, "f")
	val := []byte("original")
	if err := h.f.SetXattr(a.Ino, "user.k", val, 0); err != nil {
		t.Fatal(err)
	}
	copy(val, "CHANGED!")
	got, _ := h.f.GetXattr(a.Ino, "user.k")
	if string(got) != "original" {
		t.Errorf("stored value aliases the caller's buffer: %q", got)
	}
	if _, err := h.f.GetXattr(9999, "user.k"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("GetXattr of a missing inode: %v", err)
	}
	h.closeFS()
}

func TestLimit(t *testing.T) {
	const limit = 8 << 20
	h := newHarness(t, Options{Limit: limit})
	cs := 1 << 20
	if l, used := h.f.Limit(); l != limit || used != 0 {
		t.Fatalf("Limit = %d, %d", l, used)
	}
	a := h.file(RootIno, "big")
	var m model
	var stopped bool
	for i := range 16 {
		data := pattern(uint64(i), cs)
		n, err := h.f.Write(bg, a.Ino, int64(i*cs), data, false)
		m.write(int64(i*cs), data[:n])
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) || n != 0 {
				t.Fatalf("write %d: %d, %v; want ENOSPC", i, n, err)
			}
			stopped = true
			break
		}
		if n != cs {
			t.Fatalf("write %d: short write of %d", i, n)
		}
	}
	if !stopped {
		t.Fatal("16 MiB written under an 8 MiB limit")
	}
	if len(m) > limit || len(m) < limit/2 {
		t.Errorf("%d bytes written before ENOSPC, limit %d", len(m), limit)
	}
	h.verify("written", a.Ino, m)
	st := h.f.StatFS()
	if st.LimitBytes != limit || st.UsedBytes > limit || st.BlocksFree > st.Blocks {
		t.Errorf("StatFS %+v", st)
	}
	h.sync()
	if _, used := h.f.Limit(); used > limit {
		t.Errorf("used %d over the limit", used)
	}
	// Freeing space lets writes succeed again; one large write stops
	// short at the limit rather than failing.
	if err := h.f.Unlink(RootIno, "big"); err != nil {
		t.Fatal(err)
	}
	h.sync()
	c := h.file(RootIno, "c")
	h.sync() // the short write must commit the new size itself
	var mc model
	data := pattern(5, 12*cs)
	n, err := h.f.Write(bg, c.Ino, 0, data, false)
	if err != nil || n == 0 || n >= len(data) {
		t.Fatalf("12 MiB write under an 8 MiB limit: %d, %v; want a short write", n, err)
	}
	mc.write(0, data[:n])
	if _, err := h.f.Write(bg, c.Ino, int64(n), data[n:], false); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write after a short write: %v, want ENOSPC", err)
	}
	h.verify("short write", c.Ino, mc)
	// Raising the limit persists.
	h.f.SetLimit(64 << 20)
	h.reopen()
	if l, _ := h.f.Limit(); l != 64<<20 {
		t.Errorf("limit after reopen %d", l)
	}
	h.write(c.Ino, int64(n), data[n:])
	mc.write(int64(n), data[n:])
	h.verify("after raising the limit", c.Ino, mc)
	// Lowering it below use refuses new data but keeps the old.
	h.f.SetLimit(1 << 20)
	if _, err := h.f.Write(bg, c.Ino, int64(20*cs), pattern(7, cs), false); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write over a lowered limit: %v", err)
	}
	h.verify("after lowering the limit", c.Ino, mc)
	h.closeFS()
}

func TestStatFS(t *testing.T) {
	h := newHarness(t, Options{Limit: 100 << 20, ChunkSize: 4096})
	st := h.f.StatFS()
	if st.BlockSize != 4096 || st.Blocks != (100<<20)/4096 || st.BlocksFree != st.Blocks || st.NameMax != 255 || st.UsedBytes != 0 {
		t.Errorf("empty StatFS %+v", st)
	}
	a := h.file(RootIno, "f")
	h.write(a.Ino, 0, pattern(1, 10*4096+5))
	h.write(a.Ino, 20*4096, make([]byte, 4096)) // a hole costs nothing
	for i := range 10 {
		h.file(RootIno, fmt.Sprint("n", i))
	}
	h.sync()
	st = h.f.StatFS()
	unique := h.stats().UniqueBytes
	if st.UsedBytes != unique || unique != 10*4096+5 {
		t.Errorf("UsedBytes %d, unique %d, want %d", st.UsedBytes, unique, 10*4096+5)
	}
	if st.BlocksFree != (100<<20-unique)/4096 {
		t.Errorf("BlocksFree %d", st.BlocksFree)
	}
	if st.FilesFree == 0 || st.Files < st.FilesFree+12 {
		t.Errorf("Files %d FilesFree %d", st.Files, st.FilesFree)
	}
	h.closeFS()
}

func TestBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MiB")
	}
	h := newHarness(t, Options{BufferBytes: 8 << 20})
	cs := 1 << 20
	a := h.file(RootIno, "big")
	if _, err := h.f.Open(a.Ino); err != nil {
		t.Fatal(err)
	}
	// Every chunk differs only in its first bytes: cheap to make, and
	// nothing deduplicates.
	block := pattern(1, cs)
	chunk := func(i int) []byte {
		copy(block, fmt.Sprintf("chunk %08d", i))
		return block
	}
	const total = 100
	maxBufs := 0
	const piece = 128 << 10 // the kernel's usual write size
	for i := range total {
		c := chunk(i)
		for off := 0; off < cs; off += piece {
			h.write(a.Ino, int64(i*cs+off), c[off:off+piece])
		}
		h.f.mu.Lock()
		maxBufs = max(maxBufs, h.f.bufCount)
		h.f.mu.Unlock()
	}
	if maxBufs > h.f.bufMax {
		t.Errorf("%d buffers in use, pool of %d", maxBufs, h.f.bufMax)
	}
	if err := h.f.Fsync(bg, a.Ino); err != nil {
		t.Fatal(err)
	}
	h.f.Release(a.Ino)
	check := func(stage string) {
		if got := h.attr(a.Ino).Size; got != total*uint64(cs) {
			t.Fatalf("%s: size %d", stage, got)
		}
		buf := make([]byte, cs)
		for i := range total {
			if stage == "reopened" && i%10 != 3 {
				continue // a sample: the race detector makes reading slow
			}
			n, err := h.f.Read(bg, a.Ino, int64(i*cs), buf)
			if err != nil || n != cs || !bytes.Equal(buf, chunk(i)) {
				t.Fatalf("%s: chunk %d: %d %v, differs at %d", stage, i, n, err, firstDiff(buf, chunk(i)))
			}
		}
	}
	check("written")
	h.sync()
	if st := h.stats(); st.Chunks != total || st.UniqueBytes != total*uint64(cs) {
		t.Errorf("stats %+v", st)
	}
	h.reopen()
	check("reopened")
	h.closeFS()
}

// TestRandomOpsAgainstModel applies random writes, truncations, punches,
// syncs and reopens to a file and compares it with a model after each.
func TestRandomOpsAgainstModel(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	// "open" holds an open handle as FUSE does; "bare" calls with the inode
	// number alone, so that nodes may leave the cache between calls.
	for _, mode := range []string{"open", "bare"} {
		for seed := range seeds {
			t.Run(fmt.Sprint(mode, "/seed", seed), func(t *testing.T) {
				randomOps(t, seed, mode == "open")
			})
		}
	}
}

func randomOps(t *testing.T, seed int, pin bool) {
	h := newHarness(t, Options{ChunkSize: 4096, BufferBytes: 1})
	cs := 4096
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	a := h.file(RootIno, "f")
	if pin {
		h.f.Open(a.Ino)
	}
	var m model
	for step := range 250 {
		op := r.IntN(20)
		switch {
		case op < 9: // write
			off := int64(r.IntN(len(m) + 3*cs))
			n := 1 + r.IntN(3*cs)
			data := pattern(r.Uint64(), n)
			if r.IntN(5) == 0 {
				data = make([]byte, n)
			}
			h.write(a.Ino, off, data)
			m.write(off, data)
		case op < 12: // truncate
			size := r.IntN(len(m) + 2*cs + 1)
			sz := uint64(size)
			if _, err := h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &sz}); err != nil {
				t.Fatal(err)
			}
			m.truncate(size)
		case op < 13: // punch a hole
			if len(m) == 0 {
				continue
			}
			off := r.IntN(len(m))
			n := 1 + r.IntN(2*cs)
			if err := h.f.Fallocate(bg, a.Ino, int64(off), int64(n), FallocPunchHole|FallocKeepSize); err != nil {
				t.Fatal(err)
			}
			clear(m[off:min(len(m), off+n)])
		case op < 14: // grow by fallocate
			off := int64(r.IntN(len(m) + cs))
			n := int64(1 + r.IntN(cs))
			if err := h.f.Fallocate(bg, a.Ino, off, n, 0); err != nil {
				t.Fatal(err)
			}
			if int(off+n) > len(m) {
				m.truncate(int(off + n))
			}
		case op < 16: // append
			data := pattern(r.Uint64(), 1+r.IntN(cs))
			if _, err := h.f.Write(bg, a.Ino, 0, data, true); err != nil {
				t.Fatal(err)
			}
			m.write(int64(len(m)), data)
		case op < 18:
			h.sync()
		case op < 19:
			h.reopen()
			if pin {
				h.f.Open(a.Ino)
			}
		default:
			if err := h.f.Fsync(bg, a.Ino); err != nil {
				t.Fatal(err)
			}
		}
		if step%10 == 0 {
			h.verify(fmt.Sprint("step ", step), a.Ino, m)
		}
	}
	h.verify("end", a.Ino, m)
	h.reopen()
	h.verify("reopened", a.Ino, m)
	h.closeFS()
}
