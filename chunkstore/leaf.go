package chunkstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"lukechampine.com/blake3/bao"
)

// Reading a body's leaf with pread, never through bbolt's map.
//
// Each body has a bucket of its own (BodyValue) whose root is a single
// leaf page with its overflow pages, contiguous in the file. For a raw
// body stored with an outboard (format 8) bbolt lays it out as
//
//	page header (16) | 2 element headers (16 each) | "bao" | outboard | "body" | body header (37) | plaintext
//
// Touching that leaf through bbolt's map faults its first page in. bbolt
// maps the file with MADV_RANDOM, so a fault on a cold page is a
// synchronous read of that one page, and the chunk's own pread could only
// start after it: one more disk round trip per chunk on the path of every
// cold read (a cold 64 MiB read took 67-69 major faults in the daemon
// through the map, 25-32 without; the rest are B-tree pages). The bucket's
// root page id is in the bodies bucket's own leaf (which the lookup reads
// anyway), so the leaf's place in the file is known without touching it;
// these functions read it with pread instead, and check every field they
// rely on (page id, leaf flag, element count, keys, lengths, the body
// header) before trusting it. Anything else, such as a body stored before
// format 8 without an outboard, a compressed body, or a layout that does
// not match, makes them report false and the caller takes the path through
// the map, which names any damage. What they read is verified against the
// chunk ID like every body.

const (
	leafPageHeaderSize = 16 // bbolt's page header: id, flags, count, overflow
	leafElementSize    = 16 // bbolt's leaf element: flags, pos, ksize, vsize
	leafPageFlag       = 0x02
)

// leafLayout is where a raw body with an outboard lies in its leaf.
type leafLayout struct {
	obLen   int // the outboard value's length (group size byte included)
	obStart int // offset of the outboard value in the leaf
	hdrAt   int // offset of the body header
	bodyAt  int // offset of the plaintext
}

// rawLeafLayout is the layout of a raw body of n bytes whose outboard has
// this package's group size.
func rawLeafLayout(n int) leafLayout {
	ob := 1 + bao.EncodedSize(n, outboardGroupLog, true)
	l := leafLayout{obLen: ob}
	l.obStart = leafPageHeaderSize + 2*leafElementSize + len(keyOutboard)
	l.hdrAt = l.obStart + ob + len(keyBody)
	l.bodyAt = l.hdrAt + bodyHeaderSize
	return l
}

// leafPos returns where body seq's leaf begins in the file, from its
// bucket's root page id; false for a bucket stored inline or a page id
// past the transaction's end.
func (t *Tx) leafPos(seq uint64) (int64, bool) {
	bodies := t.Bucket(bucketBodies)
	if bodies == nil {
		return 0, false
	}
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], seq)
	b := bodies.Bucket(key[:])
	if b == nil {
		return 0, false
	}
	root := uint64(b.Root())
	ps := uint64(t.DB().Info().PageSize)
	if root == 0 || ps == 0 || root >= uint64(t.Size())/ps {
		return 0, false
	}
	return int64(root * ps), true
}

// checkLeafPrefix reports whether head, the first bytes of the leaf at
// pos (at least up to the end of the outboard), is the leaf of a raw body
// of dataLen bytes laid out as l says.
func checkLeafPrefix(head []byte, pos int64, pageSize int, l leafLayout, dataLen int) bool {
	if len(head) < l.obStart+l.obLen {
		return false
	}
	ne := binary.NativeEndian
	if ne.Uint64(head[0:]) != uint64(pos)/uint64(pageSize) || ne.Uint16(head[8:]) != leafPageFlag || ne.Uint16(head[10:]) != 2 {
		return false
	}
	if (int(ne.Uint32(head[12:]))+1)*pageSize < l.bodyAt+dataLen {
		return false
	}
	// element 0: "bao" and the outboard; element 1: "body" and the body.
	e0, e1 := leafPageHeaderSize, leafPageHeaderSize+leafElementSize
	if ne.Uint32(head[e0:]) != 0 || e0+int(ne.Uint32(head[e0+4:])) != l.obStart-len(keyOutboard) ||
		int(ne.Uint32(head[e0+8:])) != len(keyOutboard) || int(ne.Uint32(head[e0+12:])) != l.obLen {
		return false
	}
	if ne.Uint32(head[e1:]) != 0 || e1+int(ne.Uint32(head[e1+4:])) != l.hdrAt-len(keyBody) ||
		int(ne.Uint32(head[e1+8:])) != len(keyBody) || int(ne.Uint32(head[e1+12:])) != bodyHeaderSize+dataLen {
		return false
	}
	return bytes.Equal(head[l.obStart-len(keyOutboard):l.obStart], keyOutboard)
}

// preadLeaf reads raw body e (of chunk id) into dst with one preadv of
// its leaf, header and outboard included, without touching the leaf
// through bbolt's map. It reports false when it cannot (see above); the
// caller then reads the body through the map. The plaintext is not yet
// verified against id.
func (t *Tx) preadLeaf(id ID, e indexEntry, dst []byte) ([]byte, bool) {
	n := int(e.Len)
	if e.Stored != e.Len || n < outboardMin || t.Writable() || t.s.rfile == nil {
		return nil, false
	}
	pos, ok := t.leafPos(e.Seq)
	if !ok {
		return nil, false
	}
	l := rawLeafLayout(n)
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	headp := t.s.blockBuf(l.bodyAt)
	defer t.s.putBlockBuf(headp)
	head := (*headp)[:l.bodyAt]
	got, err := unix.Preadv(int(t.s.rfile.Fd()), [][]byte{head, dst}, pos)
	if err != nil || got != l.bodyAt+n {
		return nil, false
	}
	if !checkLeafPrefix(head, pos, t.DB().Info().PageSize, l, n) || !bytes.Equal(head[l.hdrAt-len(keyBody):l.hdrAt], keyBody) {
		return nil, false
	}
	h, err := decodeBodyHeader(head[l.hdrAt:l.bodyAt])
	if err != nil || h.Codec != CodecRaw || int(h.Len) != n || h.ID != id {
		return nil, false
	}
	t.s.leafReads.Add(1)
	return dst, true
}

// outboardCacheMax is how many outboards the store keeps in memory: about
// 4 KiB each for 1 MiB chunks, so 4 MiB for a working set of 1 GiB.
const outboardCacheMax = 1024

// warmAfter is how many distinct parts of a chunk (sixty-fourths: its
// 16 KiB groups, for 1 MiB chunks) ReadAt reads before it asks the
// kernel to read the rest of the chunk's body into the page cache
// (FADV_WILLNEED), so that the reads still to come find it there instead
// of waiting for the disk one group at a time. A chunk read this much at
// random is likely to be read more, as the kernel's own read-ahead
// reckons when the pages around a miss are cached; a chunk read at
// fewer places costs no more than before. At most the rest of the body
// is read for nothing: 15x what was read of it, once per rewarmAfter.
// (On the bench's 4 KiB random cold reads of 256 MiB, against a loopback
// through the same kernel: 0.71-0.76x without, 0.95-0.96x with 4,
// 0.90-0.98x with 2, 0.89-1.06x with 8, 0.90-0.93x with 16.)
const warmAfter = 4

// rewarmAfter is how long after a chunk was warmed its reads are counted
// again, so that a chunk whose pages the kernel has let go since is
// warmed again when it is read at warmAfter new places; a chunk read
// on and on in the meantime costs nothing more.
const rewarmAfter = 10 * time.Second

// outboardCache keeps the outboard values of chunks ReadAt read, by chunk
// ID, so that a random read of a chunk read before costs one pread (its
// groups) instead of two. An outboard is a function of the chunk's
// plaintext, so an entry never goes stale, and it is verified with the
// groups on every use (outboard.verify), so a damaged one is never
// trusted: a range that does not verify through a cached outboard drops
// it and is read again from the leaf. Each entry also counts the parts of
// the chunk read (warmAfter).
type outboardCache struct {
	mu sync.Mutex
	m  map[ID]*outboardEntry
}

type outboardEntry struct {
	v        []byte
	seen     uint64    // the parts of the chunk read since it was last warmed, one bit per 64th
	warmedAt time.Time // when the rest of the body was last asked for (zero: never)
}

func (c *outboardCache) get(id ID) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[id]; e != nil {
		return e.v
	}
	return nil
}

func (c *outboardCache) put(id ID, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[ID]*outboardEntry, outboardCacheMax)
	}
	if e := c.m[id]; e != nil {
		e.v = v
		return
	}
	if len(c.m) >= outboardCacheMax {
		for k := range c.m { // an arbitrary entry: map order is random
			delete(c.m, k)
			break
		}
	}
	c.m[id] = &outboardEntry{v: v}
}

// noteRead records that bytes [lo, hi) of chunk id's dataLen bytes were
// read at now, and reports whether the chunk is to be warmed: read at
// warmAfter places, never warmed or warmed rewarmAfter ago and read at
// warmAfter new places since.
func (c *outboardCache) noteRead(id ID, lo, hi, dataLen int, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[id]
	if e == nil || dataLen <= 0 || (!e.warmedAt.IsZero() && now.Sub(e.warmedAt) < rewarmAfter) {
		return false
	}
	for p := lo * 64 / dataLen; p <= (hi-1)*64/dataLen && p < 64; p++ {
		e.seen |= 1 << p
	}
	if bits.OnesCount64(e.seen) < warmAfter {
		return false
	}
	e.seen, e.warmedAt = 0, now
	return true
}

func (c *outboardCache) drop(id ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

func (c *outboardCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

// directAlign is the alignment of O_DIRECT reads (buffer, offset and
// length): the logical block size of the disks we run on is at most this.
const directAlign = 4096

// ReadBufSize is the size of a buffer that GetInto can read a chunk of
// up to chunkSize bytes into from the disk directly: the whole leaf,
// rounded to directAlign, from an aligned place in the buffer.
func ReadBufSize(chunkSize int) int {
	return rawLeafLayout(chunkSize).bodyAt + chunkSize + 2*directAlign
}

// preadLeafDirect is preadLeaf for a leaf that is not in the page cache:
// it reads the leaf, rounded up to whole blocks, with O_DIRECT into an
// aligned part of buf, and returns the plaintext where it lies there (not
// yet verified against id). A buffered pread of a cold leaf has the kernel
// allocate page cache for it, read into that and copy it out again: one
// more pass over every byte, on the CPU that a cold read is short of, and
// memory for pages nobody reads again (the daemon keeps the chunk). A leaf
// that is partly or wholly in the page cache (written recently, or read
// by others) is left to preadLeaf, which copies it from there. It reports
// false when it did nothing.
func (t *Tx) preadLeafDirect(id ID, e indexEntry, buf []byte) ([]byte, bool) {
	n := int(e.Len)
	if e.Stored != e.Len || n < outboardMin || t.Writable() || t.s.rdirect == nil {
		return nil, false
	}
	pos, ok := t.leafPos(e.Seq)
	ps := t.DB().Info().PageSize
	if !ok || pos%directAlign != 0 || ps%directAlign != 0 {
		return nil, false
	}
	l := rawLeafLayout(n)
	total := (l.bodyAt + n + directAlign - 1) / directAlign * directAlign
	if pos+int64(total) > t.Size() {
		return nil, false
	}
	buf = buf[:cap(buf)]
	a := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))) % directAlign); r != 0 {
		a = directAlign - r
	}
	if len(buf) < a+total || inPageCache(t.s.rdirect, pos, total) {
		return nil, false
	}
	got, err := unix.Pread(int(t.s.rdirect.Fd()), buf[a:a+total], pos)
	if err != nil || got != total {
		return nil, false
	}
	head := buf[a : a+l.bodyAt]
	if !checkLeafPrefix(head, pos, ps, l, n) || !bytes.Equal(head[l.hdrAt-len(keyBody):l.hdrAt], keyBody) {
		return nil, false
	}
	h, err := decodeBodyHeader(head[l.hdrAt:l.bodyAt])
	if err != nil || h.Codec != CodecRaw || int(h.Len) != n || h.ID != id {
		return nil, false
	}
	t.s.leafReads.Add(1)
	t.s.directReads.Add(1)
	return buf[a+l.bodyAt : a+l.bodyAt+n], true
}

// inPageCache reports whether any of bytes [off, off+n) of f are in the
// page cache (cachestat(2)); true if it cannot tell, so that the caller
// reads through the page cache as before.
func inPageCache(f *os.File, off int64, n int) bool {
	cached, err := cachedPages(f, off, n)
	return err != nil || cached > 0
}

// cachedPages counts the pages of bytes [off, off+n) of f that are in
// the page cache (cachestat(2)).
func cachedPages(f *os.File, off int64, n int) (uint64, error) {
	r := unix.CachestatRange{Off: uint64(off), Len: uint64(n)}
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &r, &st, 0); err != nil {
		return 0, fmt.Errorf("cachestat %s: %w", f.Name(), err)
	}
	return st.Cache, nil
}
