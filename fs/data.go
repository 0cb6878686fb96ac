package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
)

type slotState uint8

const (
	slotDirty      slotState = iota // buf is being written
	slotSealed                      // with a worker; buf immutable
	slotPrepared                    // hashed and compressed, waiting for a commit
	slotCommitting                  // in a commit's snapshot
)

// slot is one chunk of a file that differs from the store.
type slot struct {
	ino   Ino
	idx   uint64
	state slotState
	gen   uint64
	buf   []byte // chunk plaintext up to hi; nil for holes and shared chunks
	frame []byte // buf with the stored header's room in front
	// A slot made by a partial write over a stored chunk does not read
	// that chunk first (a 4 KiB write must not cost a 1 MiB decode): the
	// base chunk shows through every page not marked present, up to
	// baseLen, until a worker (or a reader) merges it into buf.
	base       chunkstore.ID
	hasBase    bool
	baseLen    int
	present    []uint64 // bitmap of pages of buf written whole
	hi         int      // bytes of buf in use: past it the chunk reads as zeros
	prep       chunkstore.Prepared
	hole       bool // all zeros: committed as the absence of a chunk
	shared     bool // refers to a stored chunk by ID (copy_file_range)
	superseded bool // replaced or dropped; buf returns to the pool when free
}

// reserveBufLocked makes sure a buffer can be taken without waiting, waiting
// (and releasing mu) while the pool is exhausted.
func (f *FS) reserveBufLocked(ctx context.Context) error {
	for len(f.freeBufs) == 0 && f.bufCount >= f.bufMax {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.broken != nil {
			return syscall.EIO
		}
		// Push everything dirty through the pipeline to free buffers.
		for _, n := range f.dirty {
			f.sealAllLocked(n)
		}
		f.kickCommit()
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitLocked waits on cond, waking early when ctx is cancelled.
func (f *FS) waitLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	f.cond.Wait()
	stop()
	return ctx.Err()
}

// takeBufLocked gives s a chunk buffer from the pool. Each buffer sits in
// a frame with room for the stored header in front, so that a chunk kept
// raw is stored straight from it (see chunkstore.PrepareFramed).
func (f *FS) takeBufLocked(s *slot) {
	var frame []byte
	if n := len(f.freeBufs); n > 0 {
		frame = f.freeBufs[n-1]
		f.freeBufs = f.freeBufs[:n-1]
	} else {
		frame = make([]byte, chunkstore.HeaderSize+f.chunkSize)
	}
	f.bufCount++
	s.frame, s.buf = frame, frame[chunkstore.HeaderSize:]
}

// freeBufLocked returns s's buffer, if it has one, to the pool.
func (f *FS) freeBufLocked(s *slot) {
	if s.frame == nil {
		return
	}
	f.bufCount--
	if len(f.freeBufs) < f.bufMax {
		f.freeBufs = append(f.freeBufs, s.frame)
	}
	s.frame, s.buf = nil, nil
	f.cond.Broadcast()
}

// supersedeLocked retires a slot that is no longer the newest version of
// its chunk. Its buffer is freed now, or by whoever still uses it.
func (f *FS) supersedeLocked(s *slot) {
	s.superseded = true
	switch s.state {
	case slotDirty, slotPrepared:
		f.freeBufLocked(s)
	}
	// slotSealed: the worker frees it; slotCommitting: the committer does.
}

// sealLocked hands a dirty slot to the workers.
func (f *FS) sealLocked(s *slot) {
	if s.state != slotDirty {
		return
	}
	s.state = slotSealed
	f.pending++
	// The queue is a slice under mu, not a channel: sealing must never
	// block or release mu, since callers iterate over maps while they seal.
	f.queue = append(f.queue, s)
	select {
	case f.work <- struct{}{}:
	default:
	}
}

func (f *FS) sealAllLocked(n *node) {
	for _, s := range n.slots {
		f.sealLocked(s)
	}
}

// prepare hashes and compresses one chunk; all-zero chunks are holes.
// Trailing zeros are not stored: a chunk's plaintext ends at its last
// non-zero byte, so that a small file costs only its bytes.
func prepare(s *slot, scratch []byte) (chunkstore.Prepared, bool) {
	n := len(trimZeros(s.buf[:s.hi]))
	if n == 0 {
		return chunkstore.Prepared{}, true
	}
	return chunkstore.PrepareFramed(s.frame[:chunkstore.HeaderSize+n], scratch), false
}

func (f *FS) finishPrepareLocked(s *slot, p chunkstore.Prepared, hole bool) {
	f.pending--
	defer f.cond.Broadcast()
	if s.superseded {
		f.freeBufLocked(s)
		return
	}
	s.state = slotPrepared
	s.prep, s.hole = p, hole
	if hole {
		f.freeBufLocked(s)
	}
}

func (f *FS) worker() {
	defer f.wg.Done()
	scratch := make([]byte, 0, f.chunkSize+f.chunkSize/4+64)
	for {
		f.mu.Lock()
		var s *slot
		var hasBase bool
		if n := len(f.queue); n > 0 {
			s = f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			hasBase = s.hasBase
		}
		f.mu.Unlock()
		if s == nil {
			select {
			case <-f.stop:
				return
			case <-f.work:
			}
			continue
		}
		if !hasBase || f.mergeBase(s) {
			p, hole := prepare(s, scratch)
			f.mu.Lock()
			f.finishPrepareLocked(s, p, hole)
			f.mu.Unlock()
		}
	}
}

// pageSize is the granularity of a slot's present bitmap.
const pageSize = 4096

func (s *slot) isPresent(p int) bool { return s.present[p/64]&(1<<(p%64)) != 0 }

// mergeBase reads a sealed slot's base chunk and merges it into buf. It
// reports false if the slot was superseded meanwhile (and then freed).
func (f *FS) mergeBase(s *slot) bool {
	f.mu.Lock()
	id, ok := s.base, s.hasBase && !s.superseded
	f.mu.Unlock()
	var data []byte
	if ok {
		d, release, err := f.loadChunk(id)
		if err == nil {
			data = d
			defer release() // after the merge below
		}
		// Otherwise the base is damaged (loadChunk has logged it): its
		// bytes read as zeros from now on, the rest of the write survives.
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.superseded {
		f.pending--
		f.freeBufLocked(s)
		f.cond.Broadcast()
		return false
	}
	if s.hasBase {
		s.merge(data)
		f.cond.Broadcast()
	}
	return true
}

// merge copies the visible bytes of the base chunk into the pages of buf
// not written whole, and forgets the base.
func (s *slot) merge(base []byte) {
	base = base[:min(len(base), s.baseLen)]
	for p := 0; p*pageSize < s.hi; p++ {
		if s.isPresent(p) {
			continue
		}
		start := p * pageSize
		end := min(start+pageSize, s.hi)
		// Bytes past baseLen were written (or zero-filled) into buf.
		m := 0
		if start < len(base) {
			m = copy(s.buf[start:min(end, len(base))], base[start:])
		}
		if start+m < min(end, s.baseLen) {
			clear(s.buf[start+m : min(end, s.baseLen)])
		}
	}
	s.hasBase, s.present, s.baseLen = false, nil, 0
}

// settleBaseLocked merges the base of a slot a reader or a partial writer
// needs whole: it reads the base itself for a dirty slot, or waits for the
// worker that owns a sealed one. mu may be released: callers start over.
func (f *FS) settleBaseLocked(ctx context.Context, n *node, s *slot) error {
	if s.state != slotDirty {
		for s.hasBase && !s.superseded && n.slots[s.idx] == s {
			if err := f.waitLocked(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	id := s.base
	data, release, err := f.loadChunkLocked(id)
	if err != nil {
		return err
	}
	defer release()
	if s.hasBase && s.base == id && !s.superseded {
		s.merge(data)
	}
	return nil
}

// trimZeros returns b without its trailing zero bytes.
func trimZeros(b []byte) []byte {
	n := len(b)
	for n >= 8 && binary.NativeEndian.Uint64(b[n-8:n]) == 0 {
		n -= 8
	}
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n]
}

// storedChunkLocked returns the ID of chunk idx of n as committed, if any.
func (f *FS) storedChunkLocked(n *node, idx uint64) (chunkstore.ID, bool, error) {
	if idx >= min(n.trunc, n.truncCommitting) {
		return chunkstore.ID{}, false, nil
	}
	if n.damaged != nil {
		return chunkstore.ID{}, false, n.damaged
	}
	var id chunkstore.ID
	var ok bool
	err := f.view(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketChunks).Get(chunkKey(n.attr.Ino, idx))
		if err != nil {
			return err
		}
		if v == nil {
			return nil
		}
		if len(v) != chunkstore.IDSize {
			return syscall.EIO
		}
		id, ok = chunkstore.ID(v), true
		return nil
	})
	return id, ok, err
}

// loadChunk returns the verified plaintext of a stored chunk, which the
// caller must not modify, and must stop using when it calls release.
func (f *FS) loadChunk(id chunkstore.ID) (data []byte, release func(), err error) {
	for {
		e, wait := f.cache.acquire(id)
		if wait != nil {
			<-wait // somebody else is decoding it: look again
			continue
		}
		if e == nil {
			if e, err = f.decodeClaimed(id); err != nil {
				return nil, nil, err
			}
		}
		return e.data, func() { f.cache.release(e) }, nil
	}
}

// decodeClaimed decodes and verifies a chunk the caller has claimed in the
// cache, and ends the claim.
func (f *FS) decodeClaimed(id chunkstore.ID) (*cacheEntry, error) {
	buf := f.cache.buffer(f.chunkSize)
	var out []byte
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		out, err = tx.Get(id, buf)
		return err
	})
	if err != nil {
		f.cache.recycle(buf)
		f.cache.unclaim(id)
		return nil, err
	}
	return f.cache.putClaimed(id, out), nil
}

// readAheadChunks is how many stored chunks past a sequential read are
// decoded ahead, so that reading the store, decompressing and verifying
// the next chunk overlap with the kernel copying this one out.
const readAheadChunks = 2

// readAheadMin is the smallest read that counts as sequential when it
// does not start exactly where the last one ended: the kernel's
// read-ahead sends large READs, several at once, which may arrive out of
// order; a program reading small pieces at random does not.
const readAheadMin = 64 << 10

// readAheadLocked queues the chunks that follow a read of [off, end) for
// the prefetcher, if the node is being read sequentially. It only
// queues: finding out which chunks are stored, and decoding them, is the
// prefetcher's work, off the request path.
func (f *FS) readAheadLocked(n *node, off, end int64) {
	cs := int64(f.chunkSize)
	d := off - n.nextRead
	sequential := d == 0 || (end-off >= readAheadMin && d >= -cs && d <= cs)
	if sequential {
		n.nextRead = max(n.nextRead, end)
	} else {
		n.nextRead, n.aheadTo = end, 0
	}
	if !sequential || n.nextRead >= int64(n.attr.Size) {
		return
	}
	first := uint64((n.nextRead + cs - 1) / cs)
	last := uint64((int64(n.attr.Size) - 1) / cs)
	idx := max(first, n.aheadTo)
	for ; idx < first+readAheadChunks && idx <= last; idx++ {
		if n.slots[idx] != nil {
			continue // in memory, or about to change
		}
		select {
		case f.readAhead <- aheadChunk{n.attr.Ino, idx}:
		default: // the prefetcher is behind: reading on will load it
			n.aheadTo = idx
			return
		}
	}
	n.aheadTo = idx
}

// aheadChunk is a chunk queued for read-ahead.
type aheadChunk struct {
	ino Ino
	idx uint64
}

// prefetcher decodes the chunks readAheadLocked queues into the cache.
func (f *FS) prefetcher() {
	defer f.wg.Done()
	for {
		var c aheadChunk
		select {
		case <-f.stop:
			return
		case c = <-f.readAhead:
		}
		f.mu.Lock()
		var id chunkstore.ID
		var ok bool
		// A node dropped since, or a chunk written since, is not worth it.
		if n := f.nodes[c.ino]; n != nil && n.slots[c.idx] == nil {
			id, ok, _ = f.storedChunkLocked(n, c.idx)
		}
		f.mu.Unlock()
		if !ok {
			continue
		}
		e, wait := f.cache.acquire(id)
		switch {
		case e != nil:
			f.cache.release(e)
		case wait != nil: // being decoded already
		default:
			// A chunk deleted meanwhile, or damaged, is the reader's to
			// report when it gets there.
			if e, err := f.decodeClaimed(id); err == nil {
				f.cache.release(e)
			}
		}
	}
}

// dirtySlotLocked returns a writable slot for chunk idx holding its current
// contents (from an older slot or from the store). The caller has reserved
// a buffer. It may release mu while it reads the store.
func (f *FS) dirtySlotLocked(n *node, idx uint64) (*slot, error) {
	old := n.slots[idx]
	if old != nil && old.state == slotDirty {
		return old, nil
	}
	truncs := n.truncs
	s := &slot{ino: n.attr.Ino, idx: idx, state: slotDirty}
	f.takeBufLocked(s)
	var data []byte
	var err error
	switch {
	case old != nil && old.buf != nil:
		data = old.buf[:old.hi]
		if old.hasBase {
			s.base, s.hasBase, s.baseLen = old.base, true, old.baseLen
			s.present = append([]uint64(nil), old.present...)
		}
	case old != nil && old.shared:
		err = f.setBaseLocked(s, old.prep.ID)
	case old != nil: // a hole
	case idx*uint64(f.chunkSize) < n.attr.Size:
		var id chunkstore.ID
		var ok bool
		id, ok, err = f.storedChunkLocked(n, idx)
		if ok && err == nil {
			err = f.setBaseLocked(s, id)
		}
	}
	if err != nil {
		f.freeBufLocked(s)
		return nil, err
	}
	if !s.hasBase || data != nil {
		s.hi = copy(s.buf, data)
	}
	if cur := n.slots[idx]; cur != old || n.truncs != truncs {
		// Someone else made a slot while mu was released: use theirs.
		// Or truncated the file: what was read may be gone.
		f.freeBufLocked(s)
		if cur != old && cur != nil && cur.state == slotDirty {
			return cur, nil
		}
		return nil, errRetry
	}
	if old != nil {
		f.supersedeLocked(old)
	}
	if n.slots == nil {
		n.slots = make(map[uint64]*slot)
	}
	n.slots[idx] = s
	f.dirty[n.attr.Ino] = n
	return s, nil
}

var errRetry = errors.New("retry")

// setBaseLocked makes stored chunk id the base of a new slot, reading only
// its length.
func (f *FS) setBaseLocked(s *slot, id chunkstore.ID) error {
	var l int
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		l, err = tx.Len(id)
		return err
	})
	if err != nil {
		return err
	}
	s.base, s.hasBase, s.baseLen, s.hi = id, true, l, l
	s.present = make([]uint64, (f.chunkSize/pageSize+63)/64)
	return nil
}

// needsBase reports whether writing [off, off+len) into s would leave a
// page partly written over base bytes that are not in buf yet.
func (s *slot) needsBase(off, length int) bool {
	if !s.hasBase {
		return false
	}
	for _, b := range [2]int{off, off + length - 1} {
		p := b / pageSize
		start := p * pageSize
		whole := off <= start && off+length >= start+pageSize
		if !whole && !s.isPresent(p) && start < s.baseLen {
			return true
		}
	}
	return false
}

// writeSlot copies data into s at off, zero-filling any gap past hi.
func (s *slot) write(off int, data []byte) {
	if off > s.hi {
		clear(s.buf[s.hi:off])
	}
	copy(s.buf[off:], data)
	s.hi = max(s.hi, off+len(data))
	if s.hasBase {
		for p := (off + pageSize - 1) / pageSize; (p+1)*pageSize <= off+len(data); p++ {
			s.present[p/64] |= 1 << (p % 64)
		}
	}
}

// read copies the slot's bytes at off into out, zeros past hi.
func (s *slot) read(off int, out []byte) {
	m := 0
	if off < s.hi {
		m = copy(out, s.buf[off:s.hi])
	}
	clear(out[m:])
}

// wholeSlotLocked returns a fresh slot for a write that covers chunk idx
// whole: its old contents are not needed.
func (f *FS) wholeSlotLocked(n *node, idx uint64) *slot {
	old := n.slots[idx]
	if old != nil && old.state == slotDirty {
		return old
	}
	if old != nil {
		f.supersedeLocked(old)
	}
	s := &slot{ino: n.attr.Ino, idx: idx, state: slotDirty}
	f.takeBufLocked(s)
	if n.slots == nil {
		n.slots = make(map[uint64]*slot)
	}
	n.slots[idx] = s
	f.dirty[n.attr.Ino] = n
	return s
}

// holeSlotLocked makes chunk idx a hole, ready for the next commit.
func (f *FS) holeSlotLocked(n *node, idx uint64) {
	if old := n.slots[idx]; old != nil {
		f.supersedeLocked(old)
	}
	if n.slots == nil {
		n.slots = make(map[uint64]*slot)
	}
	n.slots[idx] = &slot{ino: n.attr.Ino, idx: idx, state: slotPrepared, hole: true, gen: f.bump()}
	f.dirty[n.attr.Ino] = n
}

// loadChunkLocked reads a stored chunk with mu released: decoding a chunk
// is too slow to hold everyone up. Content addressing makes it safe.
func (f *FS) loadChunkLocked(id chunkstore.ID) ([]byte, func(), error) {
	f.mu.Unlock()
	defer f.mu.Lock()
	return f.loadChunk(id)
}

// Write writes data at off (or at the end when appending) and returns the
// bytes written. Full chunks are sealed at once; the rest wait for close,
// fsync or the committer's tick.
func (f *FS) Write(ctx context.Context, ino Ino, off int64, data []byte, appendMode bool) (int, error) {
	return f.write(ctx, ino, off, data, appendMode, nil)
}

// WriteIf is Write that happens only while ino is at version (from
// OpenVersion): checked when the first byte is applied, under the same
// lock, so nothing else can come between. Otherwise it writes nothing and
// returns ErrChanged.
func (f *FS) WriteIf(ctx context.Context, ino Ino, version uint64, off int64, data []byte, appendMode bool) (int, error) {
	return f.write(ctx, ino, off, data, appendMode, &version)
}

func (f *FS) write(ctx context.Context, ino Ino, off int64, data []byte, appendMode bool, want *uint64) (int, error) {
	if off < 0 {
		return 0, syscall.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return 0, syscall.EROFS
	}
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return 0, err
	}
	// mu may be released below (waiting for a buffer, loading a chunk).
	defer f.pinLocked(n)()
	if !n.attr.IsRegular() {
		return 0, syscall.EINVAL
	}
	if appendMode {
		off = int64(n.attr.Size)
	}
	cs := int64(f.chunkSize)
	written := 0
	// A write that stops early has still changed the size and data: that
	// must be committed too.
	fail := func(err error) (int, error) {
		if written > 0 {
			f.touchLocked(n, true)
		}
		return f.writeResult(written, err)
	}
	for written < len(data) {
		if appendMode && int64(n.attr.Size) != off+int64(written) {
			// mu was released (a buffer, a slot, a base to read) and
			// another write moved the end: go on at the end, never over
			// what it wrote.
			off = int64(n.attr.Size) - int64(written)
		}
		pos := off + int64(written)
		idx := uint64(pos / cs)
		inChunk := int(pos % cs)
		piece := min(len(data)-written, int(cs)-inChunk)
		if piece == int(cs) && len(trimZeros(data[written:written+piece])) == 0 {
			if written == 0 && want != nil && n.version != *want {
				return 0, ErrChanged
			}
			// A whole chunk of zeros is a hole: no buffer, no hashing.
			f.holeSlotLocked(n, idx)
			n.version = f.bump() // mu may be released before the touch below
			written += piece
			if end := uint64(pos) + uint64(piece); end > n.attr.Size {
				n.attr.Size = end
			}
			continue
		}
		if s := n.slots[idx]; s == nil || s.state != slotDirty {
			if err := f.reserveBufLocked(ctx); err != nil {
				return fail(err)
			}
			if f.usedLocked()+uint64(cs) > f.limit {
				return fail(syscall.ENOSPC)
			}
			if appendMode && int64(n.attr.Size) != pos {
				// The file grew while we waited for a buffer.
				off = int64(n.attr.Size) - int64(written)
				continue
			}
		}
		if written == 0 && want != nil && n.version != *want {
			// Checked after every wait that released mu, before the
			// first change: a wait further on starts the loop over.
			return 0, ErrChanged
		}
		var s *slot
		if piece == int(cs) {
			s = f.wholeSlotLocked(n, idx)
		} else {
			var err error
			s, err = f.dirtySlotLocked(n, idx)
			if err == errRetry {
				continue
			}
			if err != nil {
				return fail(err)
			}
		}
		// Getting the slot may have released mu (reading the chunk list,
		// or another writer's slot taken over): an append whose end
		// moved starts over at the new end, and a compare-and-swap is
		// checked again, before anything changes.
		if appendMode && int64(n.attr.Size) != pos {
			continue
		}
		if written == 0 && want != nil && n.version != *want {
			return 0, ErrChanged
		}
		if s.needsBase(inChunk, piece) {
			// A page partly written over bytes not read yet: read them.
			if err := f.settleBaseLocked(ctx, n, s); err != nil {
				return fail(err)
			}
			continue // mu was released: look again
		}
		s.write(inChunk, data[written:written+piece])
		s.gen = f.bump()
		n.version = s.gen // mu may be released before the touch below
		written += piece
		if end := uint64(pos) + uint64(piece); end > n.attr.Size {
			n.attr.Size = end
		}
		if inChunk+piece == int(cs) {
			f.sealLocked(s)
		}
	}
	f.touchLocked(n, true)
	return written, nil
}

func (f *FS) writeResult(written int, err error) (int, error) {
	if written > 0 {
		return written, nil
	}
	return 0, err
}

// Read reads up to len(dest) bytes at off. Chunks not yet committed are read
// from memory; committed ones are decoded and verified outside mu.
func (f *FS) Read(ctx context.Context, ino Ino, off int64, dest []byte) (int, error) {
	if off < 0 {
		return 0, syscall.EINVAL
	}
	for attempt := 0; ; attempt++ {
		n, retry, err := f.readOnce(ctx, ino, off, dest)
		if !retry || attempt >= 50 {
			return n, err
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

type pendingRead struct {
	id      chunkstore.ID
	dest    []byte
	inChunk int
}

func (f *FS) readOnce(ctx context.Context, ino Ino, off int64, dest []byte) (int, bool, error) {
	f.mu.Lock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		f.mu.Unlock()
		return 0, false, err
	}
	if n.attr.IsDir() {
		f.maybeForgetLocked(n)
		f.mu.Unlock()
		return 0, false, syscall.EISDIR
	}
	size := int64(n.attr.Size)
	if off >= size {
		f.maybeForgetLocked(n)
		f.mu.Unlock()
		return 0, false, nil
	}
	total := int(min(int64(len(dest)), size-off))
	cs := int64(f.chunkSize)
	var loads []pendingRead
	for done := 0; done < total; {
		pos := off + int64(done)
		idx := uint64(pos / cs)
		inChunk := int(pos % cs)
		piece := min(total-done, int(cs)-inChunk)
		out := dest[done : done+piece]
		if s := n.slots[idx]; s != nil {
			switch {
			case s.hasBase:
				err := f.settleBaseLocked(ctx, n, s)
				f.maybeForgetLocked(n)
				f.mu.Unlock()
				return 0, err == nil, err
			case s.buf != nil:
				s.read(inChunk, out)
			case s.shared:
				loads = append(loads, pendingRead{id: s.prep.ID, dest: out, inChunk: inChunk})
			default:
				clear(out)
			}
		} else {
			id, ok, err := f.storedChunkLocked(n, idx)
			if err != nil {
				f.mu.Unlock()
				return 0, false, err
			}
			if ok {
				loads = append(loads, pendingRead{id: id, dest: out, inChunk: inChunk})
			} else {
				clear(out)
			}
		}
		done += piece
	}
	f.readAheadLocked(n, off, off+int64(total))
	f.maybeForgetLocked(n)
	f.mu.Unlock()
	for _, l := range loads {
		data, release, err := f.loadChunk(l.id)
		if errors.Is(err, chunkstore.ErrNotFound) {
			return 0, true, syscall.EIO // overwritten meanwhile: read again
		}
		if err != nil {
			return 0, false, syscall.EIO
		}
		m := 0
		if l.inChunk < len(data) {
			m = copy(l.dest, data[l.inChunk:])
		}
		release()
		clear(l.dest[m:])
	}
	return total, false, nil
}

// truncateLocked sets the size of a regular file, dropping chunks past the
// end and zeroing the tail of the last one.
func (f *FS) truncateLocked(n *node, size uint64) error {
	if size > f.limit*2+1<<40 {
		return syscall.EFBIG
	}
	cs := uint64(f.chunkSize)
	if size < n.attr.Size {
		keep := (size + cs - 1) / cs // chunks [0, keep) survive
		// Get the tail chunk's slot first: that may release mu, and the
		// rest must then happen at once, or a write meanwhile could land
		// past the new end and resurface when the file grows again.
		var tailSlot *slot
		if tail := size % cs; tail != 0 {
			idx := size / cs
			if err := f.reserveBufLocked(context.Background()); err != nil {
				return err
			}
			s, err := f.dirtySlotLocked(n, idx)
			for err == errRetry {
				s, err = f.dirtySlotLocked(n, idx)
			}
			if err != nil {
				return err
			}
			tailSlot = s
		}
		for idx, s := range n.slots {
			if idx >= keep {
				f.supersedeLocked(s)
				delete(n.slots, idx)
			}
		}
		n.trunc = min(n.trunc, keep)
		n.truncs++
		f.bump()
		f.dirty[n.attr.Ino] = n
		if tailSlot != nil {
			tailSlot.hi = min(tailSlot.hi, int(size%cs))
			tailSlot.baseLen = min(tailSlot.baseLen, tailSlot.hi)
			tailSlot.gen = f.bump()
		}
	}
	n.attr.Size = size
	f.touchLocked(n, true)
	return nil
}

// Fsync makes the file's data and metadata durable: it seals its dirty
// chunks, waits for them to be prepared, then for a commit taken after.
func (f *FS) Fsync(ctx context.Context, ino Ino) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.nodes[ino]; n != nil {
		f.sealAllLocked(n)
		if err := f.waitPreparedLocked(ctx, n); err != nil {
			return err
		}
	}
	return f.waitCommitLocked(ctx)
}

// waitPreparedLocked waits until no slot of n (of any node if n is nil) is
// with a worker.
func (f *FS) waitPreparedLocked(ctx context.Context, n *node) error {
	busy := func() bool {
		if n == nil {
			return f.pending > 0
		}
		for _, s := range n.slots {
			if s.state == slotSealed {
				return true
			}
		}
		return false
	}
	for busy() {
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitCommitLocked waits for a commit whose snapshot is taken from now on.
func (f *FS) waitCommitLocked(ctx context.Context) error {
	target := f.snapTaken + 1
	f.kickCommit()
	for f.snapDone < target {
		if f.broken != nil {
			return f.broken
		}
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	if f.broken != nil {
		return f.broken
	}
	return nil
}

func (f *FS) kickCommit() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}
