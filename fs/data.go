package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
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
	buf   []byte // chunk plaintext up to hi; nil for holes, shared and sparse slots
	frame []byte // buf with the stored header's room in front
	// A slot made by a write over part of a stored chunk is sparse: it
	// neither reads that chunk nor takes a chunk buffer (a 4 KiB write
	// must cost about 4 KiB, not a 1 MiB decode, copy and re-hash). It
	// keeps the pages written, and the base chunk shows through every
	// other page, up to baseLen; past baseLen, pages not kept read as
	// zeros. A worker merges base and pages into a chunk buffer when the
	// slot is sealed. Page bytes at or past hi are always zero.
	base    chunkstore.ID
	hasBase bool // sparse: base and pages, no buf
	baseLen int
	pages   map[int][]byte // page index → the page's bytes
	hi      int            // bytes in use: past it the chunk reads as zeros
	prep    chunkstore.Prepared
	hole    bool // all zeros: committed as the absence of a chunk
	shared  bool // refers to a stored chunk by ID (copy_file_range)
	// relieve: sealed to relieve the page budget (relievePagesLocked).
	relieve bool
	// merged: was sparse, merged by a worker.
	merged bool
	// superseded: replaced or dropped; its memory returns to the pools
	// when nobody uses it any more.
	superseded bool
	// spilled: prepared and raw, its value is in spill slot spillSlot
	// (spill.go) instead of a buffer; prep's value is the spill's map.
	spilled   bool
	spillSlot int
	// rawSpill: written straight into spill slot spillSlot by a whole-
	// chunk write (writeSpilledLocked), hashed there (prepareSpilled).
	rawSpill bool
	// staged: rawSpill, its bytes in frame while the spill writer
	// writes them into the spill slot (stage.go); freeStaged: superseded
	// meanwhile, freed by the spill writer.
	staged     bool
	freeStaged bool
	// held: sealed, in f.held instead of the workers' queue (holdLocked).
	held bool
	// small: frame is a small frame (small.go), not one of the pool's.
	small bool
	// logged: the pages written since the file's last intent record;
	// noLog: the slot's bytes are not the stored chunk's plus its logged
	// pages (it replaced a hole or a shared chunk not committed yet, or
	// a truncation cut it): the file's fsync commits (intent.go).
	logged logBits
	noLog  bool
}

// holdsPoolFrame reports whether the slot holds a frame of the buffer
// pool (counted in readyBufs once prepared), not a small one.
func (s *slot) holdsPoolFrame() bool { return s.frame != nil && !s.small }

// takenLocked returns the bytes of the buffer budget in use: the pool's
// frames and the small frames.
func (f *FS) takenLocked() int {
	return f.bufCount*f.chunkSize + f.small.bytes
}

// canTakeLocked reports whether a writer may take need more bytes of
// buffers now. Writers leave bufReserve chunks' worth to the workers,
// which merge sealed sparse slots into chunk buffers: a worker waiting
// for one then always has a commit to wait for (see mergeBase).
func (f *FS) canTakeLocked(need int) bool {
	return f.takenLocked()+need <= (f.bufMax-f.bufReserve)*f.chunkSize
}

// canTakeBufLocked reports whether a writer may take a chunk buffer now.
func (f *FS) canTakeBufLocked() bool {
	return f.canTakeLocked(f.chunkSize)
}

// reserveBufLocked makes sure a chunk buffer can be taken without
// waiting, waiting (and releasing mu) while the pool is exhausted.
func (f *FS) reserveBufLocked(ctx context.Context) error {
	return f.reserveLocked(ctx, f.chunkSize, nil)
}

// reserveLocked makes sure need bytes of buffers can be taken without
// waiting, waiting (and releasing mu) while the budget is exhausted. It
// pushes every dirty slot but keep (if not nil: the slot a writer is
// growing, which would otherwise have to wait for its own commit)
// through the pipeline.
func (f *FS) reserveLocked(ctx context.Context, need int, keep *slot) error {
	for !f.canTakeLocked(need) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.broken != nil {
			return syscall.EIO
		}
		f.bufWaits++
		// Push everything dirty through the pipeline to free buffers.
		for _, n := range f.dirty {
			for _, s := range n.slots {
				if s != keep {
					f.sealLocked(s)
				}
			}
		}
		f.kickCommit()
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// reservePagesLocked waits (releasing mu) until need more pages fit in
// the page budget, pushing the sparse slots through the pipeline: the
// workers free their pages as they merge them.
func (f *FS) reservePagesLocked(ctx context.Context, need int) error {
	for f.pageCount+need > f.pageMax && f.pageCount > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.broken != nil {
			return syscall.EIO
		}
		if !f.relievePagesLocked() && f.pagesSealed == 0 {
			// Pages held by slots that are not sparse any more cannot
			// be: nothing to wait for.
			return nil
		}
		f.kickCommit()
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	return nil
}

// relievePagesLocked seals the sparse slots holding the most pages while
// the pages of dirty slots fill more than half the budget, so that the
// workers merge them in the background and writers rarely wait for the
// budget. It reports whether it sealed any.
func (f *FS) relievePagesLocked() bool {
	sealed := false
	for f.pageCount-f.pagesSealed > f.pageMax*3/4 {
		var big *slot
		for _, n := range f.dirty {
			for _, s := range n.slots {
				if s.state == slotDirty && s.hasBase && (big == nil || len(s.pages) > len(big.pages)) {
					big = s
				}
			}
		}
		if big == nil || len(big.pages) == 0 {
			return sealed
		}
		big.relieve = true
		f.sealLocked(big)
		sealed = true
	}
	return sealed
}

// waitLocked waits on cond, waking early when ctx is cancelled. The held
// chunks go to the workers first: what the caller waits for may need them
// (holdLocked).
func (f *FS) waitLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.releaseHeldLocked()
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	f.cond.Wait()
	stop()
	return ctx.Err()
}

// takeFrameLocked takes a chunk buffer from the pool. Each buffer sits in
// a frame with room for the stored header in front, so that a chunk kept
// raw is stored straight from it (see chunkstore.PrepareFramed).
func (f *FS) takeFrameLocked() []byte {
	var frame []byte
	if n := len(f.freeBufs); n > 0 {
		frame = f.freeBufs[n-1]
		f.freeBufs = f.freeBufs[:n-1]
	} else {
		frame = make([]byte, chunkstore.HeaderSize+f.chunkSize)
	}
	f.bufCount++
	return frame
}

// takeBufLocked gives s a chunk buffer from the pool.
func (f *FS) takeBufLocked(s *slot) {
	s.frame = f.takeFrameLocked()
	s.buf = s.frame[chunkstore.HeaderSize:]
	s.small = false
}

// frameBytes returns the bytes of budget a slot's frame for a plaintext
// of end bytes takes: a small frame's, or a chunk frame's.
func (f *FS) frameBytes(end int) int {
	if i := f.small.class(chunkstore.HeaderSize + end); i >= 0 {
		return f.small.classes[i]
	}
	return f.chunkSize
}

// takeSlotBufLocked gives s, which has no buffer, one for a plaintext of
// end bytes: a small frame if one is large enough, otherwise a chunk
// buffer. The caller has made sure there is room (canTakeLocked with
// frameBytes(end)).
func (f *FS) takeSlotBufLocked(s *slot, end int) {
	i := f.small.class(chunkstore.HeaderSize + end)
	if i < 0 {
		f.takeBufLocked(s)
		return
	}
	s.frame = f.small.take(i)
	s.buf = s.frame[chunkstore.HeaderSize:]
	s.small = true
}

// growLocked gives a dirty slot with a small frame one that holds a
// plaintext of end bytes (a small frame or a chunk buffer), keeping its
// bytes. It reports false, changing nothing, when the budget has no room
// for the new frame beside the old.
func (f *FS) growLocked(s *slot, end int) bool {
	if !f.canTakeLocked(f.frameBytes(end)) {
		return false
	}
	old := *s
	s.frame, s.buf = nil, nil
	f.takeSlotBufLocked(s, end)
	copy(s.buf, old.buf[:old.hi])
	f.freeFrameLocked(&old)
	return true
}

// freeBufLocked returns s's buffer, if it has one, to the pool, and its
// spill slot to the spill file.
func (f *FS) freeBufLocked(s *slot) {
	if s.spilled {
		f.spill.release(s.spillSlot)
		s.spilled = false
		f.cond.Broadcast()
	}
	f.freeFrameLocked(s)
}

// freeFrameLocked returns s's buffer, if it has one, to the pool.
func (f *FS) freeFrameLocked(s *slot) {
	if s.frame == nil {
		return
	}
	if s.small {
		f.small.give(s.frame)
		s.frame, s.buf, s.small = nil, nil, false
		f.cond.Broadcast()
		return
	}
	f.putFrameLocked(s.frame)
	s.frame, s.buf = nil, nil
}

// putFrameLocked returns a frame taken by takeFrameLocked to the pool.
func (f *FS) putFrameLocked(frame []byte) {
	f.bufCount--
	if len(f.freeBufs) < f.bufMax {
		f.freeBufs = append(f.freeBufs, frame)
	}
	f.cond.Broadcast()
}

// takeSpillLocked returns a spill slot for a prepared chunk's value, or
// -1 when it should stay in its buffer: while the pool is less than half
// taken (a database's few chunks, small files: the spill's write would
// be work for nothing), when the spill file is full, or when there is
// none (it is made at the first need; if that fails, never again).
func (f *FS) takeSpillLocked() int {
	if f.bufCount < f.bufMax/2 || f.spillSlots == 0 {
		return -1
	}
	if f.spill == nil {
		sp, err := openSpill(filepath.Dir(f.store.Path()), f.chunkSize, f.spillSlots)
		if err != nil {
			f.log.Warn("no spill file: long writes wait for commits", "err", err)
			f.spillSlots = 0
			return -1
		}
		f.spill = sp
	}
	i, ok := f.spill.take()
	if !ok {
		return -1
	}
	return i
}

// Kept free while writes pause (trimPoolsLocked): frames for the
// writers a burst starts with, a few hundred sparse pages.
const (
	keepFreeFrames = 4
	keepFreePages  = 256
)

// trimPoolsLocked lets the garbage collector have the free buffers the
// pools keep past a few, once nothing has been written for
// sparseIdleTicks ticks. Without it a burst of writes left up to the
// whole buffer pool, the page pool and the chunk cache's spare buffers
// free but held (142 MiB of heap after a bench's random writes), which
// kept the heap at the soft memory limit: the collector then ran every
// few hundred milliseconds for as long as the daemon lived, and a
// SQLite round after them took 2.6-2.8 s of CPU against 1.2-1.3 s.
func (f *FS) trimPoolsLocked() {
	if len(f.freeBufs) > keepFreeFrames {
		clear(f.freeBufs[keepFreeFrames:])
		f.freeBufs = f.freeBufs[:keepFreeFrames:keepFreeFrames]
	}
	if len(f.freePages) > keepFreePages {
		clear(f.freePages[keepFreePages:])
		f.freePages = f.freePages[:keepFreePages:keepFreePages]
	}
	f.small.trim()
	f.cache.trim()
}

// newPageLocked returns a zeroed page from the page pool.
func (f *FS) newPageLocked() []byte {
	f.pageCount++
	if n := len(f.freePages); n > 0 {
		p := f.freePages[n-1]
		f.freePages = f.freePages[:n-1]
		clear(p)
		return p
	}
	return make([]byte, pageSize)
}

// freePagesLocked returns a sparse slot's pages to the pool.
func (f *FS) freePagesLocked(s *slot) {
	if len(s.pages) == 0 {
		return
	}
	if s.state == slotSealed {
		f.pagesSealed -= len(s.pages)
	}
	for _, p := range s.pages {
		f.pageCount--
		if len(f.freePages) < f.pageMax {
			f.freePages = append(f.freePages, p)
		}
	}
	s.pages = nil
	f.cond.Broadcast()
}

// supersedeLocked retires a slot that is no longer the newest version of
// its chunk. Its memory is freed now, or by whoever still uses it.
func (f *FS) supersedeLocked(s *slot) {
	s.superseded = true
	switch s.state {
	case slotSealed:
		if s.held {
			// No worker has it: it is freed now, unhashed, or once
			// its spill write has ended.
			f.unholdLocked(s)
			f.pending--
			if s.staged {
				s.freeStaged = true
			} else {
				f.freeBufLocked(s)
			}
			f.cond.Broadcast()
		}
	case slotDirty, slotPrepared:
		if s.state == slotPrepared && s.holdsPoolFrame() {
			f.readyBufs--
		}
		if s.state == slotPrepared && s.spilled {
			f.spillReady--
		}
		f.freeBufLocked(s)
		f.freePagesLocked(s)
	}
	// slotSealed with a worker: the worker frees it; slotCommitting: the
	// committer does.
}

// sealLocked hands a dirty slot to the workers.
func (f *FS) sealLocked(s *slot) {
	if s.state != slotDirty {
		return
	}
	s.state = slotSealed
	f.pending++
	if s.hasBase {
		f.pagesSealed += len(s.pages)
	}
	if f.holdLocked(s) {
		return
	}
	// The queue is a slice under mu, not a channel: sealing must never
	// block or release mu, since callers iterate over maps while they seal.
	f.queue = append(f.queue, s)
	select {
	case f.work <- struct{}{}:
	default:
	}
}

// holdLocked keeps a sealed chunk that a long write put straight into
// the spill file (rawSpill) away from the workers while writes go on,
// and reports whether it did.
//
// Hashing is a third of the daemon's CPU in a long write, and on a small
// machine it runs beside the writer, the kernel's copies and the
// program, making every write wait (BENCHMARKS.md, session 16). The
// page cache holds back a write to ext4 too: it writes the pages back
// later (once dirty for dirty_expire_centisecs, or past its background
// threshold), not while the program writes them. The chunks are as safe
// held as queued: nothing in the spill file is durable before a commit,
// and no commit takes a sealed slot. They go to the workers
// (releaseHeldLocked):
//   - at the committer's first tick with nothing changed (f.quiet);
//   - when anyone waits for anything under mu (waitLocked): a writer for
//     a buffer, an fsync, a sync, Close, a checkpoint, a quiesce, a
//     write to a chunk in the pipeline. Whatever it waits for may need
//     them prepared, so a held chunk can never hold anyone up;
//   - when an fsync prepares its file's chunks (prepareQueuedLocked);
//   - when half the spill file is held: from then on until the writes
//     pause, chunks go to the workers at once (holdOff), as the kernel
//     starts writeback at its background threshold.
//
// A held chunk that is overwritten, truncated away or unlinked is freed
// unhashed (supersedeLocked).
func (f *FS) holdLocked(s *slot) bool {
	if !s.rawSpill || f.holdOff {
		return false
	}
	if len(f.held) >= f.spillSlots/2 {
		f.holdOff = true
		f.releaseHeldLocked()
		return false
	}
	s.held = true
	f.held = append(f.held, s)
	return true
}

// releaseHeldLocked gives the held chunks to the workers.
func (f *FS) releaseHeldLocked() {
	if len(f.held) == 0 {
		return
	}
	for _, s := range f.held {
		s.held = false
	}
	f.queue = append(f.queue, f.held...)
	clear(f.held)
	f.held = f.held[:0]
	for range cap(f.work) {
		select {
		case f.work <- struct{}{}:
		default:
			return
		}
	}
}

// unholdLocked takes s out of f.held.
func (f *FS) unholdLocked(s *slot) {
	if i := slices.Index(f.held, s); i >= 0 {
		f.held = slices.Delete(f.held, i, i+1)
	}
	s.held = false
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

func (f *FS) finishPrepareLocked(s *slot, p chunkstore.Prepared, hole bool, spillSlot int) {
	f.pending--
	defer f.cond.Broadcast()
	if spillSlot >= 0 {
		s.spilled, s.spillSlot = true, spillSlot
	}
	if s.superseded {
		f.freeBufLocked(s)
		return
	}
	s.state = slotPrepared
	s.prep, s.hole = p, hole
	if hole {
		f.freeBufLocked(s)
	}
	if s.spilled {
		// Its buffer goes back to the pool now: the commit stores the
		// value from the spill file.
		if !s.rawSpill { // prepareSpilled set it
			s.prep.SetValue(f.spill.value(s.spillSlot, len(p.Value())))
		}
		f.spilledTotal++
		f.freeFrameLocked(s)
		if f.spillReady++; f.spillReady == f.spillSlots/2 {
			f.kickCommit()
		}
	}
	if s.holdsPoolFrame() {
		if f.readyBufs++; f.readyBufs == f.batchBufs {
			f.kickCommit()
		}
	}
	if s.small && !f.small.kicked && f.small.bytes >= f.small.batch {
		// Small chunks fill a quarter of the budget: commit them before
		// writers have to wait for room.
		f.small.kicked = true
		f.kickCommit()
	}
	if s.relieve {
		// Sealed to relieve the page budget: nobody else asks for its
		// commit, and a writer may be waiting for it.
		f.kickCommit()
	}
}

// prepareQueuedLocked prepares the sealed slots of n that no worker has
// taken yet in this goroutine, one at a time (the workers woken by the
// sealing take others meanwhile), releasing mu while it works: an fsync
// (a database commits a few pages and waits) then waits for no worker
// to wake and no wake-up of its own.
func (f *FS) prepareQueuedLocked(n *node) {
	f.releaseHeldLocked()
	var scratch []byte
	for {
		i := slices.IndexFunc(f.queue, func(s *slot) bool { return s.ino == n.attr.Ino && n.slots[s.idx] == s })
		if i < 0 {
			break
		}
		s := f.queue[i]
		f.queue = slices.Delete(f.queue, i, i+1)
		if scratch == nil {
			if k := len(f.scratch); k > 0 {
				scratch, f.scratch = f.scratch[k-1], f.scratch[:k-1]
			} else {
				scratch = f.newScratch()
			}
		}
		f.mu.Unlock()
		f.prepareSlot(s, scratch)
		f.mu.Lock()
	}
	if scratch != nil {
		f.scratch = append(f.scratch, scratch)
	}
}

// newScratch returns a buffer for a chunk's compression.
func (f *FS) newScratch() []byte {
	return make([]byte, 0, f.chunkSize+f.chunkSize/4+64)
}

// prepareSlot merges (if sparse), hashes and compresses a sealed slot
// taken from the queue; mu is not held.
func (f *FS) prepareSlot(s *slot, scratch []byte) {
	f.mu.Lock()
	f.waitStagedLocked(s)
	hasBase, rawSpill := s.hasBase, s.rawSpill
	f.mu.Unlock()
	if rawSpill {
		f.prepareSpilled(s, scratch)
		return
	}
	if !hasBase || f.mergeBase(s) {
		p, hole := prepare(s, scratch)
		f.mu.Lock()
		spillSlot := -1
		// A merged slot (written in parts over a stored chunk: a
		// database) stays in its buffer: the cache keeps it after its
		// commit for the next merge (cleanAfterCommitLocked).
		if !hole && p.Codec == chunkstore.CodecRaw && p.Value() != nil && !s.superseded && !s.merged && !s.small {
			spillSlot = f.takeSpillLocked()
		}
		f.mu.Unlock()
		if spillSlot >= 0 {
			if err := f.spill.write(spillSlot, p.Value()); err != nil {
				f.mu.Lock()
				f.spillFailedLocked(spillSlot, err)
				f.mu.Unlock()
				spillSlot = -1
			}
		}
		f.mu.Lock()
		f.finishPrepareLocked(s, p, hole, spillSlot)
		f.mu.Unlock()
	}
}

func (f *FS) worker() {
	defer f.wg.Done()
	scratch := f.newScratch()
	for {
		f.mu.Lock()
		var s *slot
		work := 0
		if n := len(f.queue); n > 0 {
			s = f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			work = max(s.hi, s.baseLen)
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
		f.beginHeavy(work)
		f.prepareSlot(s, scratch)
		f.endHeavy()
		// Let a goroutine back from a system call (a FUSE request
		// just read) have this P: with every P hashing, it would wait
		// in the global queue for the scheduler's 10 ms preemption.
		runtime.Gosched()
	}
}

// streamWrite is the least a write holds to be told to Options.Heavy.
const streamWrite = 128 << 10

// pageSize is the granularity of a sparse slot's pages.
const pageSize = 4096

// coversBase reports whether the slot's pages hide its whole base, so
// that merging needs no read of it.
func (s *slot) coversBase() bool {
	for p := 0; p*pageSize < s.baseLen; p++ {
		if s.pages[p] == nil {
			return false
		}
	}
	return true
}

// mergeBase turns a sealed sparse slot into an ordinary one: it reads the
// base chunk (unless the pages hide it all) and merges it and the pages
// into a chunk buffer. It reports false if the slot was superseded
// meanwhile (and then freed).
//
// It waits for a buffer while the pool is exhausted. That cannot
// deadlock: writers leave bufReserve buffers to the workers, so when
// every worker waits, the buffers past the writers' share are held by
// prepared chunks, which the commit it kicks frees.
func (f *FS) mergeBase(s *slot) bool {
	f.mu.Lock()
	id, need := s.base, !s.superseded && !s.coversBase()
	f.mu.Unlock()
	var base []byte
	if need {
		d, release, err := f.loadChunk(id)
		if err == nil {
			base = d
			defer release() // after the merge below
		}
		// Otherwise the base is damaged (loadChunk has logged it): its
		// bytes read as zeros from now on, the rest of the write survives.
	}
	f.mu.Lock()
	for !s.superseded && f.takenLocked()+f.chunkSize > f.bufMax*f.chunkSize && f.broken == nil && !f.closed {
		f.kickCommit()
		f.cond.Wait()
	}
	if s.superseded {
		f.pending--
		f.freePagesLocked(s)
		f.cond.Broadcast()
		f.mu.Unlock()
		return false
	}
	frame := f.takeFrameLocked()
	f.mu.Unlock()
	// A sealed slot's pages and length do not change, and nobody else
	// sees frame yet: merge without mu.
	buf := frame[chunkstore.HeaderSize:]
	s.mergeInto(buf[:s.hi], base)
	f.mu.Lock()
	defer f.mu.Unlock()
	s.frame, s.buf = frame, buf
	f.freePagesLocked(s)
	s.hasBase, s.baseLen, s.merged = false, 0, true
	f.cond.Broadcast()
	return true
}

// mergeInto writes the slot's contents, base and pages, into out (hi
// bytes).
func (s *slot) mergeInto(out, base []byte) {
	base = base[:min(len(base), s.baseLen)]
	m := copy(out, base)
	clear(out[m:])
	for p, pg := range s.pages {
		if start := p * pageSize; start < len(out) {
			copy(out[start:], pg[:min(pageSize, len(out)-start)])
		}
	}
}

// fillPagesLocked gives a dirty sparse slot the pages that a write of
// [off, off+length) would change only in part, filled from the base
// chunk. mu is released while the base is read: callers start over.
func (f *FS) fillPagesLocked(n *node, s *slot, off, length int) error {
	id := s.base
	data, release, err := f.loadChunkLocked(id)
	if err != nil {
		return err
	}
	defer release()
	if n.slots[s.idx] != s || s.state != slotDirty || s.superseded || s.base != id {
		return nil
	}
	for _, b := range [2]int{off, off + length - 1} {
		p := b / pageSize
		if s.pages[p] != nil || s.wholePage(p, off, length) || p*pageSize >= s.baseLen {
			continue
		}
		pg := f.newPageLocked()
		start := p * pageSize
		if start < len(data) {
			copy(pg, data[start:min(len(data), start+pageSize, s.baseLen)])
		}
		s.pages[p] = pg
	}
	return nil
}

// wholePage reports whether a write of [off, off+length) covers page p
// whole.
func (s *slot) wholePage(p, off, length int) bool {
	start := p * pageSize
	return off <= start && off+length >= start+pageSize
}

// sparseNeeds reports how many new pages a write of [off, off+length)
// into a sparse slot needs, and whether one of them would be written in
// part over base bytes (which must then be read first).
func (s *slot) sparseNeeds(off, length int) (pages int, partial bool) {
	for p := off / pageSize; p*pageSize < off+length; p++ {
		if s.pages[p] != nil {
			continue
		}
		pages++
		if !s.wholePage(p, off, length) && p*pageSize < s.baseLen {
			partial = true
		}
	}
	return pages, partial
}

// writeSparse copies data into a sparse slot at off. Every page it
// changes in part over base bytes is there already (fillPagesLocked).
func (f *FS) writeSparseLocked(s *slot, off int, data []byte) {
	end := off + len(data)
	for pos := off; pos < end; {
		p := pos / pageSize
		in := pos % pageSize
		k := min(pageSize-in, end-pos)
		pg := s.pages[p]
		if pg == nil {
			pg = f.newPageLocked()
			s.pages[p] = pg
		}
		copy(pg[in:], data[pos-off:pos-off+k])
		pos += k
	}
	s.hi = max(s.hi, end)
	s.markLogged(off, end)
}

// readSparse copies the slot's bytes at off into out, and returns the
// ranges to read from the base chunk.
func (s *slot) readSparse(off int, out []byte, loads []pendingRead) []pendingRead {
	end := off + len(out)
	run := -1 // the load of base bytes this call is extending, if any
	for pos := off; pos < end; {
		p := pos / pageSize
		in := pos % pageSize
		k := min(pageSize-in, end-pos)
		dst := out[pos-off : pos-off+k]
		switch pg := s.pages[p]; {
		case pg != nil:
			copy(dst, pg[in:])
			run = -1
		case pos < s.baseLen:
			b := min(k, s.baseLen-pos)
			if run >= 0 {
				l := &loads[run]
				l.dest = out[l.inChunk-off : pos-off+b]
			} else {
				loads = append(loads, pendingRead{id: s.base, dest: dst[:b], inChunk: pos})
				run = len(loads) - 1
			}
			clear(dst[b:])
			if b < k {
				run = -1
			}
		default:
			clear(dst)
			run = -1
		}
		pos += k
	}
	return loads
}

// truncateSparse cuts a sparse slot at hi: pages past it go, the one
// across it keeps zeros past it.
func (f *FS) truncateSparseLocked(s *slot, hi int) {
	for p, pg := range s.pages {
		start := p * pageSize
		switch {
		case start >= hi:
			delete(s.pages, p)
			f.pageCount--
			if len(f.freePages) < f.pageMax {
				f.freePages = append(f.freePages, pg)
			}
		case start+pageSize > hi:
			clear(pg[hi-start:])
		}
	}
	s.hi = min(s.hi, hi)
	s.baseLen = min(s.baseLen, s.hi)
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
		if n.listUnchecked {
			if err := f.checkListTx(tx, n); err != nil {
				return err
			}
			if n.damaged != nil {
				return n.damaged
			}
		}
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
	buf := f.cache.readBuffer(chunkstore.ReadBufSize(f.chunkSize))
	var out []byte
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		out, err = tx.GetInto(id, buf)
		return err
	})
	if err != nil {
		f.cache.recycle(buf)
		f.cache.unclaim(id)
		return nil, err
	}
	return f.cache.putClaimed(id, out, buf), nil
}

// rangedReadMax is the largest piece of a chunk that a read which is
// not sequential reads on its own (chunkstore.Tx.ReadAt: only the blocks
// it covers, verified through the body's outboard) rather than by
// decoding the whole chunk into the cache: a 4 KiB read at random then
// costs a 16 KiB read of the store, not 1 MiB.
const rangedReadMax = 128 << 10

// rangedWeight is what a ranged read of the store tells Options.Heavy:
// more than its bytes, because its handler may block in a pread (when
// its group is not in the page cache; one that is is verified in
// bbolt's map since session 20, chunkstore's resident, and is counted
// all the same: it is not known before the read), and with one P the
// runtime's monitor likely hands the P that pread holds to a thread it
// wakes on the other CPU. 16 within 20 ms (800 a second) raise
// internal/procs's GOMAXPROCS. fio's cold 4 KiB random reads, in-process,
// 2 rounds of 3 runs: 13,476 and 12,321 IOPS (nopt1m 12,438, 12,058)
// against 13,421 and 11,674 at 4 Ps (13,133, 10,503); not counted at
// all (one P throughout), 0.90-1.03x of nopt1m over session 19's rounds.
const rangedWeight = 256 << 10

// readRange copies bytes [off, off+len(dest)) of stored chunk id into
// dest, from the cache if the chunk is there, otherwise reading only the
// blocks that cover them. It returns how many bytes the chunk's
// plaintext had there (the rest reads as zeros), or
// chunkstore.ErrNoOutboard for a chunk that must be read whole.
func (f *FS) readRange(id chunkstore.ID, off int, dest []byte) (int, error) {
	if e := f.cache.lookup(id); e != nil {
		m := 0
		if off < len(e.data) {
			m = copy(dest, e.data[off:])
		}
		f.cache.release(e)
		return m, nil
	}
	var m int
	f.beginHeavy(rangedWeight)
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		m, err = tx.ReadAt(id, off, dest)
		return err
	})
	f.endHeavy()
	if err == nil {
		f.cache.ranged.Add(1)
	}
	return m, err
}

// prefetchers is how many goroutines decode chunks ahead of sequential
// reads: each waits on the disk for its chunk's pread most of the time,
// then verifies it, so that several keep several reads in flight. With
// readAheadChunks, measured on the bench's 256 MiB cold read (in-process,
// three runs of 4-6 rounds, medians): 3 and 4 gave 1,006, 1,208 and
// 1,284 MiB/s; 5 and 8 gave 1,290, 1,255 and 1,416; 6 and 10 1,280
// (the disk alone, O_DIRECT 1 MiB at depth 3: 1.1-1.8 GB/s that hour).
const prefetchers = 5

// readAheadChunks is how many stored chunks past a sequential read are
// decoded ahead, so that reading the store, decompressing and verifying
// the next chunk overlap with the kernel copying this one out. The chunk
// cache holds twice as many and 8 more: 24 chunks, 25 MiB at most (16
// with 4).
const readAheadChunks = 8

// readAheadMin is the smallest read that counts as sequential when it
// does not start exactly where the last one ended: the kernel's
// read-ahead sends large READs, several at once, which may arrive out of
// order; a program reading small pieces at random does not.
const readAheadMin = 64 << 10

// readAheadLocked queues the chunks that follow a read of [off, end) for
// the prefetcher, if the node is being read sequentially. It only
// queues: finding out which chunks are stored, and decoding them, is the
// prefetcher's work, off the request path.
//
// It reports whether the read counts as sequential.
func (f *FS) readAheadLocked(n *node, off, end int64) (sequential bool) {
	cs := int64(f.chunkSize)
	d := off - n.nextRead
	if end-off >= readAheadMin {
		sequential = d >= -cs && d <= cs
		n.smallRun = 0
	} else if d == 0 {
		// A small read where the last one ended counts once two in a
		// row did (or from the file's start): reads at random land next
		// to the last one now and then (fio's, near the end of a pass
		// over a file, often), and each would decode its chunk whole
		// and queue readAheadChunks more for nothing.
		n.smallRun++
		sequential = off == 0 || n.smallRun >= 2
	} else {
		n.smallRun = 0
	}
	if sequential {
		n.nextRead = max(n.nextRead, end)
	} else {
		n.nextRead, n.aheadTo = end, 0
	}
	if !sequential || n.nextRead >= int64(n.attr.Size) {
		return sequential
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
			return sequential
		}
	}
	n.aheadTo = idx
	return sequential
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
			f.beginHeavy(f.chunkSize)
			e, err := f.decodeClaimed(id)
			f.endHeavy()
			if err == nil {
				f.cache.release(e)
			}
		}
	}
}

// dirtySlotLocked returns a writable slot for chunk idx holding its current
// contents: a sparse one over the stored chunk (or a shared one), or one
// with a buffer over a hole. A chunk still in the pipeline (sealed,
// prepared or being committed) is waited for and then started from the
// store: copying it would cost a buffer and a re-hash of the whole chunk
// per write, where a sparse slot costs the pages written. mu may be
// released (waiting for that, or for a buffer): then it returns errRetry
// and the caller looks again.
//
// end is how far into the chunk the caller will write: a slot with a
// buffer gets one that holds that much (a small frame if it can).
func (f *FS) dirtySlotLocked(ctx context.Context, n *node, idx uint64, end int) (*slot, error) {
	old := n.slots[idx]
	if old != nil && old.state == slotDirty {
		return old, nil
	}
	if old != nil && !old.hole && !old.shared {
		if f.broken != nil {
			return nil, syscall.EROFS
		}
		f.kickCommit()
		if err := f.waitLocked(ctx); err != nil {
			return nil, err
		}
		return nil, errRetry
	}
	var base chunkstore.ID
	var hasBase bool
	switch {
	case old != nil && old.shared:
		base, hasBase = old.prep.ID, true
	case old != nil: // a hole
	case idx*uint64(f.chunkSize) < n.attr.Size:
		id, ok, err := f.storedChunkLocked(n, idx)
		if err != nil {
			return nil, err
		}
		base, hasBase = id, ok
	}
	s := &slot{ino: n.attr.Ino, idx: idx, state: slotDirty, noLog: old != nil}
	if hasBase {
		if err := f.setBaseLocked(s, base); err != nil {
			return nil, err
		}
	} else {
		if need := f.frameBytes(end); !f.canTakeLocked(need) {
			if err := f.reserveLocked(ctx, need, nil); err != nil {
				return nil, err
			}
			return nil, errRetry
		}
		f.takeSlotBufLocked(s, end)
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

// setBaseLocked makes stored chunk id the base of a new sparse slot,
// reading only its length.
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
	s.pages = make(map[int][]byte)
	return nil
}

// write copies data into a slot with a buffer at off, zero-filling any
// gap past hi.
func (s *slot) write(off int, data []byte) {
	if off > s.hi {
		clear(s.buf[s.hi:off])
	}
	copy(s.buf[off:], data)
	s.hi = max(s.hi, off+len(data))
	s.markLogged(off, off+len(data))
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
// whole: its old contents are not needed. The caller has reserved a
// buffer unless the chunk has a dirty slot with one.
func (f *FS) wholeSlotLocked(n *node, idx uint64) *slot {
	old := n.slots[idx]
	if old != nil && old.state == slotDirty && !old.hasBase && !old.small {
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
	if len(data) >= streamWrite {
		// Large writes are work to come in the background (hashing,
		// spill writes): counted now, a stream of them has a second P
		// (Options.Heavy) before the workers fall behind.
		f.beginHeavy(len(data))
		f.endHeavy()
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
		if piece == int(cs) && !appendMode && want == nil {
			if s := f.writeSpilledLocked(n, idx, data[written:written+piece]); s != nil {
				s.gen = f.bump()
				n.version = s.gen
				written += piece
				if end := uint64(pos) + uint64(piece); end > n.attr.Size {
					n.attr.Size = end
				}
				continue
			}
		}
		if s := n.slots[idx]; s == nil || s.state != slotDirty || (piece == int(cs) && (s.hasBase || s.small)) {
			// A partial write may need no buffer (a sparse slot):
			// dirtySlotLocked reserves one if it does.
			if piece == int(cs) {
				if err := f.reserveBufLocked(ctx); err != nil {
					return fail(err)
				}
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
			// Only a file's first chunk starts in a small frame: past
			// it the file is large, and its chunks fill their frames.
			end := int(cs)
			if idx == 0 {
				end = inChunk + piece
			}
			s, err = f.dirtySlotLocked(ctx, n, idx, end)
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
		if s.hasBase {
			pages, partial := s.sparseNeeds(inChunk, piece)
			if partial {
				// A page written in part over base bytes: read them.
				if err := f.fillPagesLocked(n, s, inChunk, piece); err != nil {
					return fail(err)
				}
				continue // mu was released: look again
			}
			if pages > 0 && f.pageCount+pages > f.pageMax {
				if err := f.reservePagesLocked(ctx, pages); err != nil {
					return fail(err)
				}
				continue
			}
			f.writeSparseLocked(s, inChunk, data[written:written+piece])
			if f.pageCount-f.pagesSealed > f.pageMax*3/4 {
				f.relievePagesLocked()
			}
		} else {
			if end := inChunk + piece; end > len(s.buf) {
				// A small frame too small for this write.
				if !f.growLocked(s, end) {
					if err := f.reserveLocked(ctx, f.frameBytes(end), s); err != nil {
						return fail(err)
					}
					continue // mu was released: look again
				}
			}
			s.write(inChunk, data[written:written+piece])
		}
		s.gen = f.bump()
		n.version = s.gen // mu may be released before the touch below
		written += piece
		if end := uint64(pos) + uint64(piece); end > n.attr.Size {
			n.attr.Size = end
		}
		if inChunk+piece == int(cs) && !s.hasBase {
			// A chunk written to its end is done with, most likely;
			// not one written here and there (a database's, whose
			// last page is written as often as any).
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
	n, _, _, err := f.read(ctx, ino, off, dest, false)
	return n, err
}

// ReadHeld is Read for a caller that can use the bytes where they are:
// when the whole range lies in one stored chunk that the read decodes
// whole into the chunk cache (a sequential read), data is a slice of the
// cache's plaintext, which the caller must not modify and must stop using
// when it calls release (exactly once); otherwise data is dest[:n],
// copied as Read copies, and release is nil. It saves a copy of every
// byte of a large sequential read.
func (f *FS) ReadHeld(ctx context.Context, ino Ino, off int64, dest []byte) (data []byte, release func(), err error) {
	n, held, release, err := f.read(ctx, ino, off, dest, true)
	if err != nil || release != nil {
		return held, release, err
	}
	return dest[:n], nil, nil
}

func (f *FS) read(ctx context.Context, ino Ino, off int64, dest []byte, hold bool) (int, []byte, func(), error) {
	if off < 0 {
		return 0, nil, nil, syscall.EINVAL
	}
	for attempt := 0; ; attempt++ {
		n, held, release, retry, err := f.readOnce(ctx, ino, off, dest, hold)
		if !retry || attempt >= 50 {
			return n, held, release, err
		}
		if err := ctx.Err(); err != nil {
			return 0, nil, nil, err
		}
	}
}

type pendingRead struct {
	id      chunkstore.ID
	dest    []byte
	inChunk int
}

func (f *FS) readOnce(ctx context.Context, ino Ino, off int64, dest []byte, hold bool) (int, []byte, func(), bool, error) {
	f.mu.Lock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		f.mu.Unlock()
		return 0, nil, nil, false, err
	}
	if n.attr.IsDir() {
		f.maybeForgetLocked(n)
		f.mu.Unlock()
		return 0, nil, nil, false, syscall.EISDIR
	}
	size := int64(n.attr.Size)
	if off >= size {
		f.maybeForgetLocked(n)
		f.mu.Unlock()
		return 0, nil, nil, false, nil
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
				loads = s.readSparse(inChunk, out, loads)
			case s.buf != nil:
				s.read(inChunk, out)
			case s.spilled:
				// The plaintext up to prep.Len is in the map.
				m := 0
				if inChunk < s.prep.Len {
					m = copy(out, f.spill.plain(s.spillSlot, s.prep.Len)[inChunk:])
				}
				clear(out[m:])
			case s.shared:
				loads = append(loads, pendingRead{id: s.prep.ID, dest: out, inChunk: inChunk})
			default:
				clear(out)
			}
		} else {
			id, ok, err := f.storedChunkLocked(n, idx)
			if err != nil {
				f.mu.Unlock()
				return 0, nil, nil, false, err
			}
			if ok {
				loads = append(loads, pendingRead{id: id, dest: out, inChunk: inChunk})
			} else {
				clear(out)
			}
		}
		done += piece
	}
	sequential := f.readAheadLocked(n, off, off+int64(total))
	f.maybeForgetLocked(n)
	f.mu.Unlock()
	for _, l := range loads {
		if !sequential && len(l.dest) <= rangedReadMax {
			m, err := f.readRange(l.id, l.inChunk, l.dest)
			if err == nil {
				clear(l.dest[m:])
				continue
			}
			if errors.Is(err, chunkstore.ErrNotFound) {
				return 0, nil, nil, true, syscall.EIO // overwritten meanwhile: read again
			}
			if !errors.Is(err, chunkstore.ErrNoOutboard) {
				return 0, nil, nil, false, syscall.EIO
			}
		}
		data, release, err := f.loadChunk(l.id)
		if errors.Is(err, chunkstore.ErrNotFound) {
			return 0, nil, nil, true, syscall.EIO // overwritten meanwhile: read again
		}
		if err != nil {
			return 0, nil, nil, false, syscall.EIO
		}
		if hold && len(loads) == 1 && len(l.dest) == total && l.inChunk+total <= len(data) {
			// The whole reply, in the cache: lend it.
			return total, data[l.inChunk : l.inChunk+total], release, false, nil
		}
		m := 0
		if l.inChunk < len(data) {
			m = copy(l.dest, data[l.inChunk:])
		}
		release()
		clear(l.dest[m:])
	}
	return total, nil, nil, false, nil
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
			end := f.chunkSize
			if idx == 0 {
				end = 0
			}
			s, err := f.dirtySlotLocked(context.Background(), n, idx, end)
			for err == errRetry {
				s, err = f.dirtySlotLocked(context.Background(), n, idx, end)
			}
			if err != nil {
				return err
			}
			tailSlot = s
			s.noLog = true
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
			if tailSlot.hasBase {
				f.truncateSparseLocked(tailSlot, int(size%cs))
			} else {
				tailSlot.hi = min(tailSlot.hi, int(size%cs))
			}
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
		if l, lsn, ok := f.intentFsyncLocked(n); ok {
			f.mu.Unlock()
			err := l.Sync(ctx, lsn)
			f.mu.Lock()
			if err == nil || ctx.Err() != nil {
				return err
			}
			// The log failed: commit instead, and the log goes once a
			// commit can end its generation.
			f.log.Error("intent log sync failed: fsyncs commit from now on", "log", f.in.path, "err", err)
			f.in.off, f.in.restart = true, true
		}
		f.sealAllLocked(n)
		f.prepareQueuedLocked(n)
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
// It runs that commit itself (releasing mu) unless one is under way:
// handing it to the committer and waiting for its wake-up cost an fsync
// two thread switches, each up to a scheduler tick on a loaded machine.
func (f *FS) waitCommitLocked(ctx context.Context) error {
	f.drainSpillLocked()
	// Every snapshot taken while anyone waits here takes every prepared
	// chunk, spilled or not (see takeSnapshotLocked).
	f.syncWaiters++
	defer func() { f.syncWaiters-- }()
	target := f.snapTaken + 1
	for f.snapDone < target {
		if f.broken != nil {
			return f.broken
		}
		if f.closed {
			// Close committed everything queued before it set
			// closed, and no commit runs after: what was queued
			// since (an exec's record, a change) is never written.
			if f.treeCleanLocked() && !f.cps.hasRecords() {
				return nil
			}
			return errWorkspaceClosed
		}
		if f.commitMu.TryLock() {
			f.mu.Unlock()
			f.commitOnceIfClosedNot()
			f.commitMu.Unlock()
			f.mu.Lock()
			continue
		}
		// The committer (or another waiter) is committing: the commit
		// after it is ours, which the committer runs when kicked.
		f.kickCommit()
		if err := f.waitLocked(ctx); err != nil {
			return err
		}
	}
	if f.broken != nil {
		return f.broken
	}
	return nil
}

// drainSpillLocked commits the spilled chunks in commits of spillBatch
// before a waiter's commit, which takes all of them: one commit of the
// whole spill file would map all of it and have bbolt copy all of it
// into pages of its own at once (512 MiB twice, where a commit of the
// pool's chunks holds at most the pool). It gives up to a commit under
// way first, and stops after as many commits as the spill held batches
// when it began, so that a writer filling the spill as fast as it drains
// cannot hold the waiter (its commit then takes the rest).
func (f *FS) drainSpillLocked() {
	for rounds := f.spillReady / max(f.spillBatch, 1); rounds > 0 && f.spillReady > f.spillBatch; rounds-- {
		if f.broken != nil || f.closed {
			return
		}
		// commitMu is taken before mu.
		f.mu.Unlock()
		f.commitMu.Lock()
		f.mu.Lock()
		if f.spillReady > f.spillBatch && f.broken == nil && !f.closed {
			f.draining++
			f.mu.Unlock()
			f.commitOnce()
			f.mu.Lock()
			f.draining--
		}
		f.commitMu.Unlock()
	}
}

func (f *FS) kickCommit() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// DropCaches empties the cache of decoded chunks and drops the store's
// pages from memory (chunkstore.Store.DropCaches), so that the next reads
// are cold: for benchmarks. Only what can be read again is dropped.
func (f *FS) DropCaches() error {
	f.cache.dropAll()
	return f.store.DropCaches()
}
