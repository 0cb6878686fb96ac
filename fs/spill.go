package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"golang.org/x/sys/unix"
)

// The spill file is the write path's second buffer: prepared chunks
// (hashed, raw) that wait for a commit are written to it when the buffer
// pool fills, and their buffers go back to the pool, so that a long
// write runs at the speed of hashing and copying instead of waiting for
// the commits' fdatasyncs: the commits then store the chunks from the
// file's page cache, at the disk's pace, behind the writer. It is what
// the kernel's page cache is to a write to ext4 without fsync, with the
// same promise: nothing in it is durable until fsync (or any commit that
// takes it) returns, which waits for the commit as before. The file is
// unlinked (O_TMPFILE where the filesystem allows it), so that a crash
// leaves nothing behind, and it never touches the store: a power cut or
// kill -9 finds the store at its last commit, as without it.
//
// The file is a row of fixed slots, one chunk's stored value each. A
// commit puts a spilled chunk from a read-only shared map of the file (no
// copy: bbolt copies the value into its page as for a pool buffer); the
// slot is freed after the commit, its pages dropped from the map.
//
// A freed slot keeps its pages in the file for keep (spillKeep), and the
// newest freed is taken first: a long write, or the next one, writes
// over pages the page cache holds instead of allocating new ones (a
// 1 MiB pwrite then costs about 85 us here instead of 145, the slot's
// share of the writer's time). A slot free for longer is punched out of
// the file, so that its dirty pages are never written back: the kernel
// writes back a file's pages once they have been dirty for
// dirty_expire_centisecs (30 s by default), long after keep.
type spill struct {
	file     *os.File
	mem      []byte // read-only shared map of the whole file
	slotSize int
	slots    int
	free     []int // free slot numbers, the newest freed last
	// released are slots freed whose pages are not yet dropped from the
	// map, and cleaning counts those cleanSpill is working on.
	released []int
	cleaning int
	// kept[i] is when free slot i was freed with its pages left in the
	// file (0: punched, never written, or in use); keep is how long a
	// free slot keeps them.
	kept []int64
	keep time.Duration
}

// openSpill makes an unlinked spill file of slots slots for chunks of
// chunkSize bytes in dir.
func openSpill(dir string, chunkSize, slots int) (*spill, error) {
	slotSize := (chunkstore.HeaderSize + chunkSize + 4095) &^ 4095
	fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	var file *os.File
	if err == nil {
		file = os.NewFile(uintptr(fd), filepath.Join(dir, "(spill)"))
	} else {
		// A filesystem without O_TMPFILE: a named file, unlinked at once.
		file, err = os.CreateTemp(dir, ".computerfs-spill-*")
		if err != nil {
			return nil, fmt.Errorf("spill file in %s: %w", dir, err)
		}
		if err := os.Remove(file.Name()); err != nil {
			file.Close()
			return nil, fmt.Errorf("spill file in %s: %w", dir, err)
		}
	}
	size := slots * slotSize
	// A sparse file: its blocks are allocated as slots are written.
	if err := file.Truncate(int64(size)); err != nil {
		file.Close()
		return nil, fmt.Errorf("spill file in %s: %w", dir, err)
	}
	mem, err := unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("spill file in %s: map: %w", dir, err)
	}
	sp := &spill{file: file, mem: mem, slotSize: slotSize, slots: slots, kept: make([]int64, slots), keep: spillKeep}
	for i := slots - 1; i >= 0; i-- {
		sp.free = append(sp.free, i)
	}
	return sp, nil
}

// take returns a free slot (under f.mu).
func (sp *spill) take() (int, bool) {
	n := len(sp.free)
	if n == 0 {
		return 0, false
	}
	i := sp.free[n-1]
	sp.free = sp.free[:n-1]
	sp.kept[i] = 0
	return i, true
}

// write stores a chunk's value in slot i (f.mu not held).
func (sp *spill) write(i int, value []byte) error {
	if len(value) > sp.slotSize {
		return errors.New("value larger than a spill slot")
	}
	_, err := sp.file.WriteAt(value, int64(i)*int64(sp.slotSize))
	return err
}

// value returns the n bytes of slot i, from the map.
func (sp *spill) value(i, n int) []byte {
	off := i * sp.slotSize
	return sp.mem[off : off+n : off+n]
}

// spillKeep is how long a free spill slot keeps its pages in the file.
const spillKeep = 5 * time.Second

// release frees slot i once nothing uses its bytes (under f.mu). It is
// taken again only after cleanSpill dropped its pages from the map.
func (sp *spill) release(i int) {
	sp.released = append(sp.released, i)
}

// unmap drops slot i's pages from this process's map (not from the
// file), so that they are not counted in its memory. Nothing uses the
// slot: f.mu need not be held.
func (sp *spill) unmap(i int) {
	off := i * sp.slotSize
	_ = unix.Madvise(sp.mem[off:off+sp.slotSize], unix.MADV_DONTNEED)
}

// punch drops free slot i's pages from the file, so that they are never
// written back. f.mu need not be held.
func (sp *spill) punch(i int) {
	off := i * sp.slotSize
	_ = unix.Fallocate(int(sp.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(sp.slotSize))
}

// cleanSpill drops the released slots' pages from the map and frees the
// slots, and punches the pages of slots free for longer than keep out of
// the file, with mu released while it makes the system calls (tens of
// microseconds a slot: a commit's batch under mu held every writer up
// for milliseconds). The committer calls it after each commit, and so at
// each of its ticks, with commitMu held, so that Close cannot close the
// file meanwhile.
func (f *FS) cleanSpill() {
	f.mu.Lock()
	sp := f.spill
	if sp == nil {
		f.mu.Unlock()
		return
	}
	released := sp.released
	sp.released = nil
	var stale []int
	if now := time.Now().UnixNano(); len(sp.free) > 0 {
		sp.free = slices.DeleteFunc(sp.free, func(i int) bool {
			if sp.kept[i] != 0 && now-sp.kept[i] > int64(sp.keep) {
				stale = append(stale, i)
				return true
			}
			return false
		})
	}
	if len(released)+len(stale) == 0 {
		f.mu.Unlock()
		return
	}
	sp.cleaning += len(released) + len(stale)
	f.mu.Unlock()
	for _, i := range released {
		sp.unmap(i)
	}
	for _, i := range stale {
		sp.punch(i)
	}
	f.mu.Lock()
	sp.cleaning -= len(released) + len(stale)
	now := time.Now().UnixNano()
	for _, i := range released {
		sp.kept[i] = now
	}
	for _, i := range stale {
		sp.kept[i] = 0
	}
	// Punched slots go to the bottom of the stack, the newest freed to
	// its top: take finds the pages still in the page cache first.
	sp.free = append(append(stale, sp.free...), released...)
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (sp *spill) close() error {
	err := unix.Munmap(sp.mem)
	if cerr := sp.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBody stores a chunk's plaintext in slot i behind the header's
// room (f.mu not held): a whole-chunk write spilled before it is hashed.
func (sp *spill) writeBody(i int, data []byte) error {
	if chunkstore.HeaderSize+len(data) > sp.slotSize {
		return errors.New("chunk larger than a spill slot")
	}
	_, err := sp.file.WriteAt(data, int64(i)*int64(sp.slotSize)+chunkstore.HeaderSize)
	return err
}

// plain returns the n plaintext bytes of slot i, from the map: the body
// of a raw value, or what writeBody wrote.
func (sp *spill) plain(i, n int) []byte {
	return sp.value(i, chunkstore.HeaderSize+n)[chunkstore.HeaderSize:]
}

// inUse reports whether any slot is taken.
func (sp *spill) inUse() bool { return sp != nil && len(sp.free) < sp.slots }

// taken counts the slots taken and not yet released: chunks that count
// against the workspace's limit until their commit (usedLocked), as a
// pool buffer's do. Slots released or being cleaned are not taken.
func (sp *spill) taken() int {
	return sp.slots - len(sp.free) - len(sp.released) - sp.cleaning
}

// A whole-chunk write during a long write goes straight into the spill
// file (writeSpilledLocked), where the chunk would otherwise have been
// copied into a pool buffer, hashed there, then written to the spill
// file by a worker: the write costs what a loopback filesystem's
// pwrite does, the pool buffer is never waited for, and one copy of
// every byte is saved. A worker then hashes the chunk where it lies (in
// the map) and writes its header in front of it (prepareSpilled), once
// the write pauses or anything waits for it (holdLocked); the commit
// stores it from the map as any spilled chunk. Until then reads find it
// in the map too. Nothing about durability changes: the chunk
// is in a commit only after it is hashed, and fsync waits for that.

// writeSpilledLocked writes data, a whole chunk, as chunk idx of n
// through the spill file, and returns its slot (sealed), or nil when it
// is not spilled (no long write under way, the spill full or broken, or
// the write over the size limit): the caller then writes it the
// ordinary way. mu is released while the bytes are written; the caller
// sets the slot's generation and the file's size.
func (f *FS) writeSpilledLocked(n *node, idx uint64, data []byte) *slot {
	if f.spillSlots == 0 || f.usedLocked()+uint64(len(data)) > f.limit {
		return nil
	}
	// As takeSpillLocked: while the pool is less than half taken a
	// buffer is cheaper; but once a long write spills, its chunks go on
	// through the spill while anything of it waits there.
	if f.bufCount < f.bufMax/2 && !f.spill.inUse() {
		return nil
	}
	i := -1
	if f.bufCount >= f.bufMax/2 {
		i = f.takeSpillLocked()
	} else if j, ok := f.spill.take(); ok {
		i = j
	}
	if i < 0 {
		return nil
	}
	// The spill writer writes the slot behind the reply (stage.go) if a
	// frame is at hand; otherwise it is written here.
	frame := f.stageLocked(data)
	if frame == nil {
		f.mu.Unlock()
		err := f.spill.writeBody(i, data)
		f.mu.Lock()
		if err != nil {
			f.spillFailedLocked(i, err)
			return nil
		}
	}
	if f.broken != nil {
		f.spill.release(i)
		if frame != nil {
			f.staged--
			f.putFrameLocked(frame)
		}
		return nil
	}
	if old := n.slots[idx]; old != nil {
		f.supersedeLocked(old)
	}
	s := &slot{ino: n.attr.Ino, idx: idx, state: slotDirty, hi: len(data), spilled: true, spillSlot: i, rawSpill: true}
	if frame != nil {
		s.frame, s.buf, s.staged = frame, frame[chunkstore.HeaderSize:], true
	}
	s.prep.Len = len(data)
	if n.slots == nil {
		n.slots = make(map[uint64]*slot)
	}
	n.slots[idx] = s
	f.dirty[n.attr.Ino] = n
	f.spilledRaw++
	f.sealLocked(s)
	if s.staged {
		f.queueStagedLocked(s)
	}
	return s
}

// spillFailedLocked frees spill slot i, whose write failed (a full disk,
// say), and stops spilling (logged once): what is in the spill file is
// committed as before, and chunks wait in the buffer pool from now on.
func (f *FS) spillFailedLocked(i int, err error) {
	f.spill.release(i)
	if f.spillSlots != 0 {
		f.log.Warn("spill file write failed: chunks wait in the buffer pool from now on", "err", err)
		f.spillSlots = 0
	}
}

// prepareSpilled hashes (and compresses, if that pays) a chunk that
// writeSpilledLocked wrote into the spill file, where it lies, and
// writes its header in front of it; mu is not held.
func (f *FS) prepareSpilled(s *slot, scratch []byte) {
	// The slot is the worker's: nothing else writes or frees its bytes
	// until finishPrepareLocked.
	data := f.spill.plain(s.spillSlot, s.hi)
	n := len(trimZeros(data))
	var p chunkstore.Prepared
	if n > 0 {
		var header []byte
		p, header = chunkstore.PrepareInPlace(data[:n], scratch)
		if header != nil {
			if _, err := f.spill.file.WriteAt(header, int64(s.spillSlot)*int64(f.spill.slotSize)); err != nil {
				// The page is in memory already: unlikely. The value
				// is then stored from a copy.
				f.log.Warn("spill file header write failed", "err", err)
				p.SetValue(append(header, data[:n]...))
			} else {
				p.SetValue(f.spill.value(s.spillSlot, chunkstore.HeaderSize+n))
			}
		}
	}
	// The hashing faulted the slot's pages into this process's map:
	// they leave it (not the page cache, where the commit finds them),
	// or a long write would hold up to half the spill file in RSS
	// while its chunks wait for commits.
	sp := f.spill
	off := s.spillSlot * sp.slotSize
	_ = unix.Madvise(sp.mem[off:off+sp.slotSize], unix.MADV_DONTNEED)
	f.mu.Lock()
	f.finishPrepareLocked(s, p, n == 0, -1)
	f.mu.Unlock()
}
