// Package boltcheck verifies the on-disk structure of a bbolt file before
// bbolt is allowed to open it.
//
// It owns one thing: deciding, from the bytes of the file alone, whether
// bbolt can follow every page id in it without leaving the file, looping or
// handing a live page out again. It reads the file with pread
// (os.File.ReadAt), one page span at a time; it never maps the file, never
// writes it, never opens it with bbolt and never calls bbolt's code. It
// knows bbolt's page format (go.etcd.io/bbolt v1.5.0, internal/common) and
// nothing of what the keys and values in the buckets mean.
//
// It is written by hand because nothing else verifies a bbolt file without
// trusting it: bbolt dereferences page ids in its mmap without bounds
// checks (a flipped byte is a SIGSEGV or SIGBUS), and its own Tx.Check
// reads each page before checking its id and recurses without a cycle
// guard (a page that points at its ancestor is a fatal stack overflow).
//
// Invariants checked, each a [Problem] when broken:
//
//   - Meta pages 0 and 1: magic, version 2 and FNV-64a checksum. The meta
//     and the page size are chosen exactly as bbolt.Open chooses them
//     (page size from meta 0, else the first valid meta found by bbolt's
//     probe, else the OS page size; then the valid meta with the higher
//     txid). One invalid meta is a Harmless problem: bbolt falls back to the
//     other one. Both invalid is an error wrapping [ErrInvalid]. The page
//     size must be a power of two in 512..64 KiB and equal to the meta's;
//     the file must hold every page below the high water mark.
//   - Every page reached, from the meta's root bucket, its buckets and the
//     freelist: its id and its last overflow page are below the high water
//     mark (and in the file); its header names the id it was reached by;
//     its type is branch or leaf in a tree (freelist for the freelist);
//     its element headers, keys and values lie inside its span (page size ×
//     (1+overflow)) and are laid out as bbolt lays them out (contiguous,
//     in element order); keys are non-empty, strictly sorted within the
//     page and within the range the parent branch gives (branch key i ≤
//     child keys < branch key i+1); branch pages are not empty; no more
//     than 64 page levels in a tree and 64 levels of nested buckets.
//   - No page is reached twice: tree pages, overflow pages, freelist pages
//     and the metas are each counted once. A cycle is a page reached twice,
//     so the walk ends.
//   - Buckets: a leaf element with the bucket flag holds a 16-byte header
//     (root page id, sequence; in bbolt's native byte order, little-endian
//     on every platform we build for). Root 0 is an inline bucket: its leaf
//     page follows in the value and is checked there, exactly filling it.
//   - The freelist (unless the meta says there is none, NoFreelistSync):
//     its count (0xFFFF: the count is the first id slot), its ids all ≥ 2,
//     below the high water mark, strictly increasing, and none of them a
//     page reached from the tree: bbolt would hand that page out again and
//     overwrite live data. Pages below the high water mark that are
//     neither reached nor free are leaked: a Harmless problem.
//
// Each page is read once, with at most two preads (its first KiB, then
// up to its last key), or with its siblings in one pread when a branch's
// children are consecutive pages; bytes after a page's last key are not
// read, so a leaf holding one 64 KiB value costs 1 KiB. The rest of the
// cost is comparing every key once. There is no page cache: the walk
// never comes back to a page (a second reference is a problem, not a
// read).
package boltcheck

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrInvalid is returned (wrapped) by Check when the file is not a bbolt
// file bbolt could open: no valid meta page.
var ErrInvalid = errors.New("not a valid bbolt file")

// ErrDamaged is wrapped by the error of [Report.Err].
var ErrDamaged = errors.New("bbolt file is damaged")

// A Problem is one broken invariant.
type Problem struct {
	Page   uint64 // the page id at fault (0 if none, or meta page 0: What says which)
	Bucket string // bucket path, e.g. "inodes" or "chunks/00000000000000a1"; "" for the root bucket
	What   string // what is wrong
	// Harmless is set when bbolt copes with the problem by itself: one
	// invalid meta page (it uses the other), leaked pages (space lost,
	// nothing read from them), a bad meta page header or unknown leaf
	// element flags (bbolt ignores both). Report.Err ignores these.
	Harmless bool
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Page != 0 {
		fmt.Fprintf(&b, "page %d: ", p.Page)
	}
	if p.Bucket != "" {
		fmt.Fprintf(&b, "bucket %s: ", p.Bucket)
	}
	b.WriteString(p.What)
	if p.Harmless {
		b.WriteString(" (harmless)")
	}
	return b.String()
}

// A Report is the outcome of a Check.
type Report struct {
	PageSize  int
	HighWater uint64 // the meta's high water mark (pgid): pages 0..HighWater-1 are in use or free
	TxID      uint64
	Meta      int // the meta page bbolt would use, 0 or 1
	Pages     int // pages reached: metas, freelist and tree pages, overflow pages included
	Free      int // pages the freelist lists (without a freelist: pages not reached)
	Problems  []Problem
	Omitted   int // problems found beyond Options.MaxProblems, not in Problems
	// MetaInvalid is the other meta page when it is invalid, else -1.
	// bbolt then opens the file at the commit Meta records, which is
	// the previous one if the invalid page held the newest.
	MetaInvalid int

	omittedHarmful int
}

// Err returns nil if the report has no problem other than Harmless ones;
// otherwise an error wrapping ErrDamaged that names the first few problems
// and says how many there are in all.
func (r *Report) Err() error {
	var bad []Problem
	for _, p := range r.Problems {
		if !p.Harmless {
			bad = append(bad, p)
		}
	}
	n := len(bad) + r.omittedHarmful
	if n == 0 {
		return nil
	}
	const show = 3
	var b strings.Builder
	for i, p := range bad {
		if i == show {
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	if n > show {
		fmt.Fprintf(&b, "; and %d more", n-show)
	}
	s := "problems"
	if n == 1 {
		s = "problem"
	}
	return fmt.Errorf("%w: %d %s: %s", ErrDamaged, n, s, b.String())
}

// Options tune Check. The zero value is the default.
type Options struct {
	MaxProblems int // stop collecting problems after this many (default 100); later ones are only counted

	// visit, for tests, is called for each tree page reached, with its
	// flags, its parent page (0 for a bucket's root) and its bucket.
	visit func(id uint64, flags uint16, parent uint64, bucket string)
}

// Check verifies the bbolt file at path, read-only, without bbolt. Damage
// is reported in the Report's Problems; the error is only for an I/O
// error, a cancelled ctx, or a file that is no bbolt file at all (no valid
// meta page: wraps ErrInvalid, with a Report saying why).
func Check(ctx context.Context, path string, opts Options) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", path, ErrInvalid)
	}
	rep, err := check(ctx, f, st.Size(), opts)
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return rep, err
}

// The on-disk format, from go.etcd.io/bbolt v1.5.0 internal/common.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	branchElemSize   = 16 // pos u32, ksize u32, pgid u64
	leafElemSize     = 16 // flags u32, pos u32, ksize u32, vsize u32
	bucketHeaderSize = 16 // root u64, sequence u64
	metaSize         = 64 // magic, version, pageSize, flags u32; root bucket; freelist, pgid, txid, checksum u64
	metaSumLen       = 56 // the checksum covers the meta up to itself

	branchFlag   = 0x01
	leafFlag     = 0x02
	metaFlag     = 0x04
	freelistFlag = 0x10

	bucketLeafFlag = 0x01

	magic      = 0xED0CDAED
	version    = 2
	noFreelist = ^uint64(0)

	maxKeySize   = 32768
	maxValueSize = 1<<31 - 2

	minPageSize = 512
	maxPageSize = 64 << 10

	maxLevels  = 64 // page levels in one tree
	maxBuckets = 64 // levels of nested buckets
)

// bbolt stores integers in the host's byte order (it casts its structs
// onto the mapped bytes).
var le = binary.NativeEndian

func u16(b []byte) uint16 { return le.Uint16(b) }
func u32(b []byte) uint32 { return le.Uint32(b) }
func u64(b []byte) uint64 { return le.Uint64(b) }

// A bucketRef names a bucket for problems: the chain of keys from the root.
type bucketRef struct {
	parent *bucketRef
	key    []byte
}

func (b *bucketRef) String() string {
	if b == nil {
		return ""
	}
	var parts []string
	for ; b != nil; b = b.parent {
		parts = append(parts, keyName(b.key))
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "/")
}

func (b *bucketRef) depth() int {
	n := 0
	for ; b != nil; b = b.parent {
		n++
	}
	return n
}

// keyName is key as text if it is printable ASCII without '/', else hex.
func keyName(key []byte) string {
	if len(key) == 0 {
		return `""`
	}
	for _, c := range key {
		if c <= ' ' || c >= 0x7f || c == '/' {
			return hex.EncodeToString(key)
		}
	}
	return string(key)
}

// shortKey is keyName cut to a length fit for a message.
func shortKey(key []byte) string {
	const max = 32
	if len(key) > max {
		return keyName(key[:max]) + "…"
	}
	return keyName(key)
}

type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (s bitset) has(i uint64) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s bitset) set(i uint64)      { s[i/64] |= 1 << (i % 64) }
func (s bitset) count() (n int) {
	for _, w := range s {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

type checker struct {
	ctx  context.Context
	r    io.ReaderAt
	size int64 // file size

	ps     int    // page size
	hw     uint64 // high water mark
	npages uint64 // pages in the bitsets: min(hw, pages in the file)
	used   bitset // pages reached
	free   bitset // pages in the freelist
	fl     bool   // free holds a parsed freelist

	rep   *Report
	max   int
	visit func(id uint64, flags uint16, parent uint64, bucket string)
	err   error // an I/O error or ctx's: stops the walk

	tick int
	bufs [][]byte   // one page buffer per recursion depth
	kids [][]kid    // one branch scratch per recursion depth
	pre  []prefetch // one run of sibling pages per recursion depth
}

type kid struct {
	key  []byte
	pgid uint64
}

// A prefetch is a run of consecutive pages read at once: the children of
// a branch page are often consecutive ids (bbolt allocates a transaction's
// pages in order), and one pread of a run costs little more than one of a
// page.
type prefetch struct {
	start uint64 // first page id
	n     int    // pages in buf
	buf   []byte
}

const maxRun = 16 // pages in a prefetch

// firstRead is how much of a page not prefetched is read first: enough
// for the header and a few elements. The rest of what the checks need is
// read in one more pread, once the element headers say how much that is.
const firstRead = 1024

func (c *checker) problem(page uint64, b *bucketRef, harmless bool, format string, args ...any) {
	if len(c.rep.Problems) >= c.max {
		c.rep.Omitted++
		if !harmless {
			c.rep.omittedHarmful++
		}
		return
	}
	c.rep.Problems = append(c.rep.Problems, Problem{
		Page:     page,
		Bucket:   b.String(),
		What:     fmt.Sprintf(format, args...),
		Harmless: harmless,
	})
}

// read fills p from the file at off. Callers only read inside the file,
// so a short read is an I/O error (or the file shrank under us).
func (c *checker) read(p []byte, off int64) bool {
	if c.err != nil {
		return false
	}
	n, err := c.r.ReadAt(p, off)
	if n == len(p) {
		return true
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	c.err = fmt.Errorf("read %d bytes at %d: %w", len(p), off, err)
	return false
}

func check(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*Report, error) {
	c := &checker{ctx: ctx, r: r, size: size, rep: &Report{MetaInvalid: -1}, max: opts.MaxProblems, visit: opts.visit}
	if c.max <= 0 {
		c.max = 100
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("%w: file is empty", ErrInvalid)
	}
	m, err := c.meta()
	if err != nil {
		return c.rep, err
	}
	if m == nil {
		return c.rep, c.err
	}
	c.walk(m)
	if c.err != nil {
		return c.rep, c.err
	}
	return c.rep, nil
}

// A meta is the decoded meta of one meta page.
type meta struct {
	magic, version, pageSize, flags uint32
	root, seq                       uint64
	freelist, pgid, txid, checksum  uint64
	sum                             uint64 // the checksum computed
}

func decodeMeta(b []byte) meta {
	m := meta{
		magic:    u32(b[0:]),
		version:  u32(b[4:]),
		pageSize: u32(b[8:]),
		flags:    u32(b[12:]),
		root:     u64(b[16:]),
		seq:      u64(b[24:]),
		freelist: u64(b[32:]),
		pgid:     u64(b[40:]),
		txid:     u64(b[48:]),
		checksum: u64(b[56:]),
	}
	m.sum = fnv64a(b[:metaSumLen])
	return m
}

// validate is bbolt's Meta.Validate.
func (m *meta) validate() error {
	switch {
	case m.magic != magic:
		return fmt.Errorf("bad magic %#08x", m.magic)
	case m.version != version:
		return fmt.Errorf("version %d, not %d", m.version, version)
	case m.checksum != m.sum:
		return fmt.Errorf("checksum %016x, its fields sum to %016x", m.checksum, m.sum)
	}
	return nil
}

func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// probeMeta is how bbolt's getPageSize reads a meta while it does not know
// the page size: 4 KiB at off into a zeroed buffer. It reports whether the
// read counts as readable and the meta found there.
func (c *checker) probeMeta(off int64, tailOK bool) (bool, meta) {
	var buf [0x1000]byte
	n, err := c.r.ReadAt(buf[:], off)
	ok := n == len(buf) || (tailOK && err == io.EOF && int64(n) == c.size-off)
	if !ok && err != nil && err != io.EOF {
		c.err = err
	}
	return ok, decodeMeta(buf[pageHeaderSize : pageHeaderSize+metaSize])
}

// pageSize is bbolt's DB.getPageSize.
func (c *checker) pageSize() (int, error) {
	canRead0, m := c.probeMeta(0, false)
	if canRead0 && m.validate() == nil {
		return int(m.pageSize), nil
	}
	canRead1 := false
	for i := 0; i <= 14 && c.err == nil; i++ {
		pos := int64(1024) << i
		if pos >= c.size-1024 {
			break
		}
		ok, m := c.probeMeta(pos, true)
		if ok {
			canRead1 = true
			if m.validate() == nil {
				return int(m.pageSize), nil
			}
		}
	}
	if c.err != nil {
		return 0, c.err
	}
	if canRead0 || canRead1 {
		return os.Getpagesize(), nil
	}
	return 0, fmt.Errorf("%w: no meta page can be read (file is %d bytes)", ErrInvalid, c.size)
}

// meta chooses the meta page as bbolt.Open and DB.meta do, and checks what
// bbolt does not. A nil meta with a nil error: nothing more can be checked
// (the problem is in the report).
func (c *checker) meta() (*meta, error) {
	ps, err := c.pageSize()
	if err != nil {
		return nil, err
	}
	c.rep.PageSize = ps
	if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		// bbolt would go on with it; we cannot.
		c.problem(0, nil, false, "meta: page size %d is not a power of two in %d..%d", ps, minPageSize, maxPageSize)
		return nil, nil
	}
	if c.size < 2*int64(ps) {
		return nil, fmt.Errorf("%w: file is %d bytes, less than two %d-byte meta pages", ErrInvalid, c.size, ps)
	}
	var pages [2][]byte
	var metas [2]meta
	var errs [2]error
	for i := range pages {
		pages[i] = make([]byte, pageHeaderSize+metaSize)
		if !c.read(pages[i], int64(i)*int64(ps)) {
			return nil, c.err
		}
		metas[i] = decodeMeta(pages[i][pageHeaderSize:])
		errs[i] = metas[i].validate()
	}
	if errs[0] != nil && errs[1] != nil {
		c.problem(0, nil, false, "meta 0: %v", errs[0])
		c.problem(1, nil, false, "meta 1: %v", errs[1])
		return nil, fmt.Errorf("%w: both meta pages are invalid: meta 0: %v; meta 1: %v", ErrInvalid, errs[0], errs[1])
	}
	// DB.meta: the higher txid if valid, else the other one.
	a, b := 0, 1
	if metas[1].txid > metas[0].txid {
		a, b = 1, 0
	}
	use, other := a, b
	if errs[a] != nil {
		use, other = b, a
	}
	m := &metas[use]
	c.rep.Meta = use
	c.rep.TxID = m.txid
	c.rep.HighWater = m.pgid
	c.rep.MetaInvalid = -1
	if errs[other] != nil {
		c.rep.MetaInvalid = other
		c.problem(uint64(other), nil, true, "meta %d: %v; bbolt uses meta %d (txid %d)", other, errs[other], use, m.txid)
	}
	for i := range pages {
		if errs[i] != nil {
			continue
		}
		if id, fl := u64(pages[i]), u16(pages[i][8:]); id != uint64(i) || fl != metaFlag {
			c.problem(uint64(i), nil, true, "meta %d: page header says id %d, flags %#x (bbolt ignores it)", i, id, fl)
		}
		if int(metas[i].pageSize) != ps {
			c.problem(uint64(i), nil, false, "meta %d: page size %d, but bbolt reads the file in pages of %d", i, metas[i].pageSize, ps)
		}
	}
	c.ps = ps
	c.hw = m.pgid
	switch {
	case m.pgid < 3:
		c.problem(uint64(use), nil, false, "meta %d: high water mark %d leaves no room for a root page", use, m.pgid)
		return nil, nil
	case m.root < 2 || m.root >= m.pgid:
		c.problem(uint64(use), nil, false, "meta %d: root page %d is not in 2..%d", use, m.root, m.pgid-1)
		return nil, nil
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		c.problem(uint64(use), nil, false, "meta %d: freelist page %d is not in 2..%d", use, m.freelist, m.pgid-1)
		return nil, nil
	}
	filePages := uint64(c.size) / uint64(ps)
	c.npages = m.pgid
	if filePages < m.pgid {
		c.problem(0, nil, false, "file is truncated: %d bytes, its high water mark (%d pages) needs %d", c.size, m.pgid, m.pgid*uint64(ps))
		c.npages = filePages
	}
	return m, nil
}

func (c *checker) walk(m *meta) {
	c.used = newBitset(c.npages)
	c.free = newBitset(c.npages)
	c.used.set(0)
	c.used.set(1)
	if m.freelist != noFreelist {
		c.freelist(m.freelist)
	}
	c.walkPage(m.root, 0, nil, 0, 0, nil, nil)
	if c.err != nil {
		return
	}
	c.rep.Pages = c.used.count()
	if !c.fl {
		if m.freelist == noFreelist {
			c.rep.Free = int(c.npages) - c.rep.Pages
		}
		return
	}
	c.rep.Free = c.free.count()
	// Leaked pages, in runs.
	for id := uint64(2); id < c.npages; id++ {
		if c.used.has(id) || c.free.has(id) {
			continue
		}
		end := id + 1
		for end < c.npages && !c.used.has(end) && !c.free.has(end) {
			end++
		}
		if end == id+1 {
			c.problem(id, nil, true, "leaked: neither reached nor free (the space is lost; a cut-off subtree looks like this)")
		} else {
			c.problem(id, nil, true, "pages %d..%d leaked: neither reached nor free (the space is lost; a cut-off subtree looks like this)", id, end-1)
		}
		id = end
	}
}

// A span is the bytes of one page and its overflow pages, or of an inline
// bucket's page.
type span struct {
	id      uint64 // the page's id; for an inline page, the id of the page holding it
	buf     []byte // the span's first len(buf) bytes
	size    int    // the span's length
	fileOff int64  // where the span starts in the file; -1 for an inline page
}

// elem names element i of s in problems.
func (s *span) elem(i int) string {
	if s.fileOff < 0 {
		return fmt.Sprintf("inline bucket: element %d", i)
	}
	return fmt.Sprintf("element %d", i)
}

// bytes returns the span's bytes [off, off+n), which the caller has
// checked lie in the span. Beyond buf they are read into a new slice.
func (c *checker) bytes(s *span, off, n int) []byte {
	if off+n <= len(s.buf) {
		return s.buf[off : off+n : off+n]
	}
	if s.fileOff < 0 {
		return nil // cannot happen: an inline span is all in buf
	}
	b := make([]byte, n)
	if !c.read(b, s.fileOff+int64(off)) {
		return nil
	}
	return b
}

func (c *checker) buf(depth, n int) []byte {
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, nil)
	}
	if cap(c.bufs[depth]) < n {
		c.bufs[depth] = make([]byte, n)
	}
	return c.bufs[depth][:n]
}

// openSpan reads the first page of the span at id, checks its header
// against the id and the high water mark, and claims its pages as
// reached. It returns false (after reporting why) if the span is not to
// be parsed.
func (c *checker) openSpan(s *span, id uint64, bk *bucketRef, depth int, what string) bool {
	if c.err != nil {
		return false
	}
	if c.tick++; c.tick%64 == 0 {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			return false
		}
	}
	switch {
	case id < 2:
		c.problem(id, bk, false, "%s points at meta page %d", what, id)
		return false
	case id >= c.hw:
		c.problem(id, bk, false, "%s points past the high water mark %d", what, c.hw)
		return false
	case id >= c.npages:
		c.problem(id, bk, false, "%s points past the end of the file", what)
		return false
	case c.used.has(id):
		c.problem(id, bk, false, "%s points at a page already reached (a cycle, or a page used twice)", what)
		return false
	}
	var b []byte
	off := int64(id) * int64(c.ps)
	if pf := c.prefetched(depth); pf != nil && id >= pf.start && id < pf.start+uint64(pf.n) {
		i := int(id-pf.start) * c.ps
		b = pf.buf[i : i+c.ps : i+c.ps]
	} else {
		b = c.buf(depth, min(c.ps, firstRead))
		if !c.read(b, off) {
			return false
		}
	}
	if hid := u64(b); hid != id {
		c.problem(id, bk, false, "%s: its page header says id %d (a misrouted pointer or a damaged header)", what, hid)
		return false
	}
	ov := uint64(u32(b[12:]))
	last := id + ov
	switch {
	case last >= c.hw:
		c.problem(id, bk, false, "%s: its %d overflow pages run past the high water mark %d", what, ov, c.hw)
		return false
	case last >= c.npages:
		c.problem(id, bk, false, "%s: its %d overflow pages run past the end of the file", what, ov)
		return false
	}
	for p := id; p <= last; p++ {
		if c.used.has(p) {
			c.problem(id, bk, false, "%s: its overflow page %d is also reached elsewhere", what, p)
			return false
		}
	}
	for p := id; p <= last; p++ {
		c.used.set(p)
		if c.fl && c.free.has(p) {
			c.problem(id, bk, false, "%s: page %d is live but in the freelist: bbolt would hand it out again and overwrite it", what, p)
		}
	}
	*s = span{id: id, buf: b, size: int(ov+1) * c.ps, fileOff: off}
	return true
}

func (c *checker) prefetched(depth int) *prefetch {
	if depth < len(c.pre) && c.pre[depth].n > 0 {
		return &c.pre[depth]
	}
	return nil
}

// prefetch reads, for the walk at depth, the run of kids from kids[0]
// whose page ids are consecutive, if there are at least two.
func (c *checker) prefetch(depth int, kids []kid) {
	for len(c.pre) <= depth {
		c.pre = append(c.pre, prefetch{})
	}
	pf := &c.pre[depth]
	if pf.n > 0 && kids[0].pgid >= pf.start && kids[0].pgid < pf.start+uint64(pf.n) {
		return
	}
	pf.n = 0
	first := kids[0].pgid
	n := 0
	for n < len(kids) && n < maxRun && kids[n].pgid == first+uint64(n) &&
		first+uint64(n) >= 2 && first+uint64(n) < c.npages && !c.used.has(first+uint64(n)) {
		n++
	}
	if n < 2 {
		return
	}
	if cap(pf.buf) < n*c.ps {
		pf.buf = make([]byte, maxRun*c.ps)
	}
	pf.buf = pf.buf[:n*c.ps]
	if c.read(pf.buf, int64(first)*int64(c.ps)) {
		pf.start, pf.n = first, n
	}
}

// extend makes s.buf hold at least the first n bytes of s (n ≤ s.size).
func (c *checker) extend(s *span, depth, n int) bool {
	if n <= len(s.buf) {
		return true
	}
	b := c.buf(depth, n)
	// buf may have moved: keep what was read.
	have := len(s.buf)
	if &b[0] != &s.buf[0] {
		copy(b, s.buf)
	}
	if !c.read(b[have:], s.fileOff+int64(have)) {
		return false
	}
	s.buf = b
	return true
}

func (c *checker) freelist(id uint64) {
	var s span
	if !c.openSpan(&s, id, nil, 0, "the meta's freelist") {
		return
	}
	b := s.buf
	if fl := u16(b[8:]); fl != freelistFlag {
		c.problem(id, nil, false, "freelist: page flags %#x, not a freelist page", fl)
		return
	}
	idx, count := uint64(0), uint64(u16(b[10:]))
	if count == 0xFFFF {
		idx, count = 1, u64(b[pageHeaderSize:])
	}
	if room := uint64(s.size-pageHeaderSize) / 8; idx > room || count > room-idx {
		c.problem(id, nil, false, "freelist: %d ids do not fit in its %d pages", count, s.size/c.ps)
		return
	}
	start := pageHeaderSize + int(idx)*8
	end := start + int(count)*8
	if !c.extend(&s, 0, end) {
		return
	}
	var prev uint64
	bad := 0
	for off := start; off < end; off += 8 {
		p := u64(s.buf[off:])
		var what string
		switch {
		case p < 2:
			what = "a meta page"
		case p >= c.hw:
			what = fmt.Sprintf("past the high water mark %d", c.hw)
		case off > start && p <= prev:
			what = fmt.Sprintf("out of order (after %d)", prev)
		case p >= c.npages:
			// Past the end of a truncated file: already reported.
		case c.used.has(p):
			what = "the freelist's own page"
		}
		if what != "" {
			c.problem(id, nil, false, "freelist: entry %d is page %d: %s", (off-start)/8, p, what)
			bad++
		} else if p < c.npages {
			c.free.set(p)
		}
		prev = p
	}
	c.fl = bad == 0
}

// walkPage checks the tree page id of bucket bk, level levels below the
// bucket's root, whose keys must lie in [lo, hi) (nil: unbounded).
func (c *checker) walkPage(id, parent uint64, bk *bucketRef, level, depth int, lo, hi []byte) {
	what := "the bucket's root"
	if bk == nil {
		what = "the meta's root bucket"
	}
	if level > 0 {
		what = "a branch element"
	}
	if level >= maxLevels {
		c.problem(id, bk, false, "the tree is more than %d pages deep", maxLevels)
		return
	}
	var s span
	if !c.openSpan(&s, id, bk, depth, what) {
		return
	}
	flags, count := u16(s.buf[8:]), int(u16(s.buf[10:]))
	if c.visit != nil {
		c.visit(id, flags, parent, bk.String())
	}
	if flags != branchFlag && flags != leafFlag {
		c.problem(id, bk, false, "page flags %#x: not a branch or leaf page", flags)
		return
	}
	if count == 0xFFFF {
		c.problem(id, bk, false, "count %d: bbolt never writes a page that full", count)
		return
	}
	hdrEnd := pageHeaderSize + count*16
	if hdrEnd > s.size {
		c.problem(id, bk, false, "%d elements do not fit in the page's %d bytes", count, s.size)
		return
	}
	if !c.extend(&s, depth, hdrEnd) || !c.extend(&s, depth, keysEnd(&s, flags, count, c.ps)) {
		return
	}
	if flags == leafFlag {
		used, ok := c.leaf(&s, bk, depth, count, lo, hi)
		if ok {
			c.checkOverflow(&s, bk, used)
		}
		return
	}
	if count == 0 {
		c.problem(id, bk, false, "empty branch page")
		return
	}
	for len(c.kids) <= depth {
		c.kids = append(c.kids, nil)
	}
	kids := c.kids[depth][:0]
	next := hdrEnd
	for i := 0; i < count; i++ {
		eo := pageHeaderSize + i*branchElemSize
		e := s.buf[eo : eo+branchElemSize]
		pos, ksize, pgid := int(u32(e)), uint64(u32(e[4:])), u64(e[8:])
		var prev []byte
		if i > 0 {
			prev = kids[i-1].key
		}
		key, ok := c.key(&s, bk, i, count-1, eo, pos, ksize, 0, next, prev, lo, hi)
		if !ok {
			return
		}
		next = eo + pos + int(ksize)
		kids = append(kids, kid{key: key, pgid: pgid})
	}
	c.kids[depth] = kids
	c.checkOverflow(&s, bk, next)
	for i, k := range kids {
		khi := hi
		if i+1 < len(kids) {
			khi = kids[i+1].key
		}
		c.prefetch(depth+1, kids[i:])
		c.walkPage(k.pgid, id, bk, level+1, depth+1, k.key, khi)
		if c.err != nil {
			return
		}
	}
}

// keysEnd returns how much of the span s of a page, whose element headers
// are in s.buf, the checks read: up to the end of its last key, and of the
// header (or the inline page) of each bucket value. Not more: the values
// of a leaf holding one big value are not read.
func keysEnd(s *span, flags uint16, count, ps int) int {
	end := uint64(pageHeaderSize + count*16)
	for i := 0; i < count; i++ {
		eo := pageHeaderSize + i*16
		e := s.buf[eo : eo+16]
		var k uint64
		if flags == leafFlag {
			k = uint64(eo) + uint64(u32(e[4:])) + uint64(u32(e[8:]))
			if u32(e)&bucketLeafFlag != 0 {
				v := uint64(u32(e[12:]))
				if v > uint64(ps) {
					v = bucketHeaderSize // too big to be inline
				}
				k += v
			}
		} else {
			k = uint64(eo) + uint64(u32(e)) + uint64(u32(e[4:]))
		}
		end = max(end, k)
	}
	return int(min(end, uint64(s.size)))
}

// checkOverflow: bbolt allocates a tree page ceil(used/page size) pages
// (bbolt before 1.4: used/page size + 1).
func (c *checker) checkOverflow(s *span, bk *bucketRef, used int) {
	if ov := s.size/c.ps - 1; used < ov*c.ps {
		c.problem(s.id, bk, false, "%d overflow pages for %d bytes: bbolt would have allocated fewer", ov, used)
	}
}

// key checks the layout of element i (header at eo) of s, whose key
// (ksize bytes) and value (vsize bytes) are at eo+pos, where bbolt would
// have put them at next, and returns the key. The key must be after prev,
// the previous key of the page (nil for the first), and, for the first
// key, not before lo; for the last (i == last), before hi.
func (c *checker) key(s *span, bk *bucketRef, i, last, eo, pos int, ksize, vsize uint64, next int, prev, lo, hi []byte) ([]byte, bool) {
	switch {
	case eo+pos != next:
		c.problem(s.id, bk, false, "%s: its key is at offset %d; bbolt writes it at %d", s.elem(i), eo+pos, next)
		return nil, false
	case ksize == 0:
		c.problem(s.id, bk, false, "%s: empty key (bbolt refuses to write one, and panics reading one)", s.elem(i))
		return nil, false
	case ksize > maxKeySize:
		c.problem(s.id, bk, false, "%s: key of %d bytes, more than bbolt allows", s.elem(i), ksize)
		return nil, false
	case vsize > maxValueSize:
		c.problem(s.id, bk, false, "%s: value of %d bytes, more than bbolt allows", s.elem(i), vsize)
		return nil, false
	case uint64(next)+ksize+vsize > uint64(s.size):
		c.problem(s.id, bk, false, "%s: key and value (%d+%d bytes at offset %d) run past the page's %d bytes", s.elem(i), ksize, vsize, next, s.size)
		return nil, false
	}
	key := c.bytes(s, next, int(ksize))
	if key == nil {
		return nil, false
	}
	if i > 0 {
		if bytes.Compare(key, prev) <= 0 {
			c.problem(s.id, bk, false, "%s: key %s is not after the previous key %s", s.elem(i), shortKey(key), shortKey(prev))
			return nil, false
		}
	} else if lo != nil && bytes.Compare(key, lo) < 0 {
		c.problem(s.id, bk, false, "%s: key %s is before %s, where the parent branch starts this page", s.elem(i), shortKey(key), shortKey(lo))
		return nil, false
	}
	if i == last && hi != nil && bytes.Compare(key, hi) >= 0 {
		c.problem(s.id, bk, false, "%s: key %s is not before %s, where the parent branch starts the next page", s.elem(i), shortKey(key), shortKey(hi))
		return nil, false
	}
	return key, true
}

// leaf checks the count elements of the leaf span s, and the buckets in
// it. It returns the bytes the elements use, and false if it gave up on
// the page.
func (c *checker) leaf(s *span, bk *bucketRef, depth, count int, lo, hi []byte) (int, bool) {
	next := pageHeaderSize + count*leafElemSize
	var prev []byte
	for i := 0; i < count; i++ {
		eo := pageHeaderSize + i*leafElemSize
		e := s.buf[eo : eo+leafElemSize]
		flags, pos, ksize, vsize := u32(e), int(u32(e[4:])), uint64(u32(e[8:])), uint64(u32(e[12:]))
		key, ok := c.key(s, bk, i, count-1, eo, pos, ksize, vsize, next, prev, lo, hi)
		if !ok {
			return 0, false
		}
		voff := next + int(ksize)
		next = voff + int(vsize)
		prev = key
		if flags&^bucketLeafFlag != 0 {
			c.problem(s.id, bk, true, "%s (key %s): unknown flags %#x (bbolt ignores them)", s.elem(i), shortKey(key), flags)
		}
		if flags&bucketLeafFlag == 0 {
			continue
		}
		if s.fileOff < 0 {
			c.problem(s.id, bk, false, "%s (key %s): a bucket inside an inline bucket (bbolt never writes one)", s.elem(i), shortKey(key))
			return 0, false
		}
		c.bucket(s, &bucketRef{parent: bk, key: append([]byte(nil), key...)}, depth, voff, int(vsize))
		if c.err != nil {
			return 0, false
		}
	}
	return next, true
}

// bucket checks the bucket whose header is the value [voff, voff+vsize)
// of s.
func (c *checker) bucket(s *span, bk *bucketRef, depth, voff, vsize int) {
	if bk.depth() > maxBuckets {
		c.problem(s.id, bk, false, "buckets nested more than %d deep", maxBuckets)
		return
	}
	if vsize < bucketHeaderSize {
		c.problem(s.id, bk, false, "bucket value of %d bytes, shorter than a bucket header", vsize)
		return
	}
	h := c.bytes(s, voff, bucketHeaderSize)
	if h == nil {
		return
	}
	if root := u64(h); root != 0 {
		c.walkPage(root, 0, bk, 0, depth+1, nil, nil)
		return
	}
	if vsize < bucketHeaderSize+pageHeaderSize {
		c.problem(s.id, bk, false, "inline bucket value of %d bytes, too short for its page", vsize)
		return
	}
	v := c.bytes(s, voff, vsize)
	if v == nil {
		return
	}
	// The inline page: its id and overflow are not used.
	p := v[bucketHeaderSize:]
	in := span{id: s.id, buf: p, size: len(p), fileOff: -1}
	flags, count := u16(p[8:]), int(u16(p[10:]))
	if flags != leafFlag {
		c.problem(s.id, bk, false, "inline bucket: page flags %#x, not a leaf page", flags)
		return
	}
	if pageHeaderSize+count*leafElemSize > len(p) {
		c.problem(s.id, bk, false, "inline bucket: %d elements do not fit in its %d bytes", count, len(p))
		return
	}
	used, ok := c.leaf(&in, bk, depth+1, count, nil, nil)
	if ok && used != len(p) {
		c.problem(s.id, bk, false, "inline bucket: its elements use %d of its %d bytes (bbolt sizes it exactly)", used, len(p))
	}
}
