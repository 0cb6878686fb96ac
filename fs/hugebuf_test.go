package fs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeArena checks the arena's buffers: as many as asked, apart, of
// the size asked, taken back with their bytes (put),
// backed by huge pages where the kernel offers them, and their memory
// returned to the kernel when trimmed.
func TestHugeArena(t *testing.T) {
	const n, size = 3, 1<<20 + 100
	a := newHugeArena(n, size)
	fallbacks := thpFaultFallbacks(t)
	var bufs [][]byte
	for i := range n {
		b := a.take()
		if b == nil {
			t.Fatalf("take %d of %d: nil", i+1, n)
		}
		if len(b) != size || cap(b) != size {
			t.Fatalf("buffer %d: len %d cap %d, want %d", i, len(b), cap(b), size)
		}
		if !a.owns(b) {
			t.Fatalf("buffer %d: not owned", i)
		}
		for j := range b {
			b[j] = byte(i + 1)
		}
		bufs = append(bufs, b)
	}
	if b := a.take(); b != nil {
		t.Fatalf("take %d of %d: got a buffer", n+1, n)
	}
	for i, b := range bufs { // no buffer wrote over another
		if bytes.Count(b, []byte{byte(i + 1)}) != size {
			t.Fatalf("buffer %d was overwritten", i)
		}
	}
	if a.owns(make([]byte, size)) {
		t.Fatal("a heap buffer counts as the arena's")
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(a.mem))); p%hugePage != 0 {
		t.Fatalf("the arena starts at %#x, not on a huge page", p)
	}
	if thpOffered(t) {
		switch kb := anonHugeKB(t, a.mem); {
		case kb >= 2048:
		case thpFaultFallbacks(t) > fallbacks:
			// Asked, but the kernel had no huge page at hand then.
			t.Logf("the kernel fell back to small pages (thp_fault_fallback rose): %d KiB in huge pages", kb)
		default:
			t.Errorf("the arena's mapping has %d KiB in huge pages after touching %d MiB of it", kb, n)
		}
	}

	a.put(bufs[0])
	if b := a.take(); &b[0] != &bufs[0][0] || b[0] != 1 {
		t.Fatal("put: the next take is not the buffer put back with its bytes")
	}
	for _, b := range bufs {
		a.put(b)
	}
	a.trim() // all but the two taken next: bufs[0]
	if bytes.Count(bufs[0], []byte{0}) != size {
		t.Fatal("trim: the buffer taken last kept its bytes; its memory was not returned")
	}
	if bufs[1][0] != 2 || bufs[2][size-1] != 3 {
		t.Fatal("trim: a buffer taken next lost its bytes")
	}
	if a.returned != 1 {
		t.Fatalf("trim: %d buffers' pages returned, want 1", a.returned)
	}
	bufs[0][0] = 9
	a.trim() // again: nothing more to return
	if bufs[0][0] != 9 {
		t.Fatal("a second trim returned the same buffer's pages again")
	}
	if b := a.take(); &b[0] != &bufs[2][0] {
		t.Fatal("take after put: not the buffer put last")
	}
	a.take()
	a.take() // bufs[0]: the returned one
	if a.returned != 0 {
		t.Fatalf("after taking every spare buffer, %d counted as returned", a.returned)
	}
}

// TestCacheBuffers checks that the chunk cache reads chunks into its
// arena's buffers first, keeps other buffers apart from it, returns the
// spare buffers' pages when trimmed, and unmaps the arena at close once
// its buffers are back.
func TestCacheBuffers(t *testing.T) {
	var c chunkCache
	const bufCap = 64 << 10
	c.init(4, bufCap)
	var got [][]byte
	for range c.arena.n + 2 {
		got = append(got, c.readBuffer(bufCap))
	}
	for i, b := range got {
		if owned := c.arena.owns(b); owned != (i < c.arena.n) {
			t.Fatalf("read buffer %d: owned by the arena %v, want %v", i, owned, i < c.arena.n)
		}
	}
	if b := c.readBuffer(bufCap + 1); c.arena.owns(b) {
		t.Fatal("a buffer larger than the arena's came from it")
	}
	if b := c.buffer(bufCap); c.arena.owns(b) {
		t.Fatal("a buffer for a copy came from the arena")
	}
	for _, b := range got[:4] {
		b[0] = 1
		c.recycle(b)
	}
	if len(c.arena.spare) != 4 || len(c.free) != 0 {
		t.Fatalf("recycled: %d back in the arena, %d free; want 4 and 0", len(c.arena.spare), len(c.free))
	}
	c.trim()
	if got[0][0] != 0 || got[3][0] != 1 {
		t.Fatal("trim: the spare buffers but two did not return their pages")
	}
	c.close()
	if c.arena.raw == nil {
		t.Fatal("close unmapped the arena while buffers of it were out")
	}
	got[len(got)-3][0] = 2 // still mapped
	if b := c.readBuffer(bufCap); c.arena.owns(b) {
		t.Fatal("a closed arena handed out a buffer")
	}

	var d chunkCache
	d.init(4, bufCap)
	d.recycle(d.readBuffer(bufCap))
	d.close()
	if d.arena.raw != nil {
		t.Fatal("close left the arena mapped with all its buffers back")
	}
}

// thpOffered reports whether the kernel backs madvised memory with
// transparent huge pages.
func thpOffered(t *testing.T) bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Logf("no transparent huge pages: %v", err)
		return false
	}
	s := string(b)
	return strings.Contains(s, "[always]") || strings.Contains(s, "[madvise]")
}

// thpFaultFallbacks returns the count of faults that asked for a huge
// page and got small ones (/proc/vmstat thp_fault_fallback), or -1.
func thpFaultFallbacks(t *testing.T) int {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Logf("no /proc/vmstat: %v", err)
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "thp_fault_fallback "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return -1
}

// anonHugeKB returns the AnonHugePages of the mapping holding mem.
func anonHugeKB(t *testing.T, mem []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			var lo, hi uint64
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err == nil {
				in = p >= lo && p < hi
			}
			continue
		}
		if in && fields[0] == "AnonHugePages:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("no mapping in /proc/self/smaps holds the arena")
	return 0
}
