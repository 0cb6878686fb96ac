package fs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on amd64 and arm64
// with 4 KiB base pages.
const hugePage = 2 << 20

// hugeArena hands out buffers of one size carved from a single
// allocation that the kernel is asked to back with transparent huge
// pages (madvise MADV_HUGEPAGE), for the chunk cache: a cold read reads
// a chunk per MiB into one of its buffers with O_DIRECT, verifies it
// there and hands it to the kernel in a READ reply. Over 4 KiB pages the
// kernel pins and walks 256 pages per chunk for the disk's read and
// again for the reply, and the disk's requests are built from as many
// segments (virtio allows 254 in one); over huge pages these are a few
// entries and a few segments. The gain is larger than the CPU time the
// walks take in a profile (5-7% of the daemon's), so it is likely the
// disk's requests that gain most. (fio's 1 MiB sequential cold read of
// 256 MiB, a daemon with a mapped arena against one without, 8 rounds
// interleaved: 1,169-1,430 MiB/s, median 1,280, against 818-1,143,
// median 1,044; the same arena without the madvise 928-1,196, median
// 1,037. In another 8 rounds, the arena in the Go heap: median 1,376
// against 1,171.)
//
// The arena is mapped apart from the Go heap (mmap), not made with
// make: a live allocation of its size in the heap counts against the
// daemon's soft memory limit for as long as the daemon runs, and the
// collector then works harder for everything else. (Measured: after
// the cold reads had taken the arena, fio's 4 KiB random writes ran at
// 0.71-0.81x the no-passthrough loopback's IOPS with the arena in the
// heap, 1.86x with it mapped, 1.48-1.81x without an arena.) The memory
// is taken lazily, at a buffer's first touch; trim returns the pages of
// the spare buffers, and release unmaps the arena once none of its
// buffers is out. Where the kernel has no transparent huge pages, or
// madvise fails, the buffers are ordinary pages and everything works as
// before, at the old speed.
//
// A hugeArena is not safe for concurrent use: the chunk cache calls it
// under its lock.
type hugeArena struct {
	size   int    // of each buffer
	stride int    // between buffers: size rounded up to whole pages
	n      int    // buffers in all
	raw    []byte // the mapping; nil until the first take
	mem    []byte // the hugePage-aligned part of raw the buffers lie in
	next   int    // buffers handed out from mem at least once
	spare  [][]byte
	// returned is how many of spare, from the bottom, have had their
	// pages returned (trim): trim runs on every quiet commit tick, and
	// returns each buffer's pages once.
	returned int
}

func newHugeArena(n, size int) *hugeArena {
	return &hugeArena{size: size, stride: (size + pageSize - 1) / pageSize * pageSize, n: n}
}

// take returns a buffer of size bytes (its contents are whatever its last
// user left), or nil when all n are out.
func (a *hugeArena) take() []byte {
	if k := len(a.spare); k > 0 {
		b := a.spare[k-1]
		a.spare[k-1] = nil
		a.spare = a.spare[:k-1]
		a.returned = min(a.returned, k-1)
		return b
	}
	if a.next >= a.n {
		return nil
	}
	if a.mem == nil {
		total := a.n * a.stride
		raw, err := unix.Mmap(-1, 0, total+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			a.n = 0
			return nil
		}
		off := 0
		if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % hugePage); r != 0 {
			off = hugePage - r
		}
		a.raw, a.mem = raw, raw[off:off+total:off+total]
		// Advice only: without it the buffers are ordinary pages.
		_ = unix.Madvise(a.mem, unix.MADV_HUGEPAGE)
	}
	i := a.next * a.stride
	a.next++
	return a.mem[i : i+a.size : i+a.size]
}

// owns reports whether b is one of the arena's buffers.
func (a *hugeArena) owns(b []byte) bool {
	if a.mem == nil || cap(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(a.mem)))
	return p >= lo && p < lo+uintptr(len(a.mem))
}

// put takes back buffer b (one of the arena's) for the next take,
// keeping its memory.
func (a *hugeArena) put(b []byte) {
	a.spare = append(a.spare, b[:a.size:a.size])
}

// trim returns the memory of the spare buffers to the kernel, but for
// the two that take hands out next.
func (a *hugeArena) trim() {
	keep := max(len(a.spare)-2, 0)
	for _, b := range a.spare[min(a.returned, keep):keep] {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
	a.returned = max(a.returned, keep)
}

// release unmaps the arena if none of its buffers is out, and makes it
// hand out no more; otherwise it returns its spare buffers' pages and
// leaves the mapping to the buffers still out.
func (a *hugeArena) release() {
	a.n = 0
	if a.raw == nil {
		return
	}
	if len(a.spare) < a.next {
		for _, b := range a.spare {
			_ = unix.Madvise(b, unix.MADV_DONTNEED)
		}
		a.spare, a.returned = nil, 0
		return
	}
	_ = unix.Munmap(a.raw)
	a.raw, a.mem, a.spare, a.next, a.returned = nil, nil, nil, 0, 0
}
