package fs

import (
	"github.com/computerfs/computerfs/chunkstore"
)

// Staging: a whole-chunk write that goes to the spill file
// (writeSpilledLocked) copies the chunk into a frame of the buffer pool
// and answers at once; the spill writer (spillWriter, one goroutine)
// writes the frame into the chunk's spill slot behind it and gives the
// frame back. A program writing a large file waits for each write's
// reply before it sends the next (fio psync, cp, dd, tar): with the
// spill file's pwrite in the reply's path, each 1 MiB write waited for
// the kernel's copy into the request, the daemon's read of it, and that
// pwrite (about 270 us a MiB here, against 55-120 us for a copy into a
// frame the pool already holds); now the pwrite runs beside the next
// write's copies, on the other CPU. It is what the kernel's page cache
// does for a write to ext4, and what nopt1m, which forwards each write to
// ext4 with one pwrite, cannot do without holding the bytes itself.
//
// Invariants (all under mu):
//   - A staged slot (s.staged) is sealed, raw and spilled: its spill
//     slot is taken and its frame holds the chunk's bytes, which reads
//     serve (the frame is checked before the spill's map). Nothing
//     writes the frame: a later write of the chunk takes a new slot.
//   - Only the spill writer clears s.staged, after its pwrite; it then
//     gives the frame back to the pool. Whoever needs the spill slot's
//     bytes (prepareSpilled, through prepareSlot) waits for that first.
//   - A staged slot superseded while held is freed by the spill writer
//     (s.freeStaged), never before its pwrite ends: its spill slot
//     could otherwise be taken and written by another chunk while the
//     pwrite still writes it.
//   - If the pwrite fails, the slot becomes an ordinary buffered slot
//     (its frame kept, its spill slot freed) and spilling stops, as for
//     a failed pwrite in the writer's own path.
//   - At most maxStaged slots are staged; past that, or with no pool
//     frame to spare, the writer writes the spill slot itself.
//   - The spill writer ends (once f.stop is closed) only with nothing
//     queued, and sets stagerDone as it does, after which nothing is
//     staged: a worker waiting for a staged slot is never left waiting.

// maxStaged bounds the chunks whose spill writes are under way: enough
// to cover a pwrite that takes longer than a write's round trip.
const maxStaged = 4

// stageLocked copies data, a whole chunk on its way to a spill slot,
// into a pool frame and counts it staged, returning the frame (the
// caller makes the slot and queues it: queueStagedLocked), or nil when
// the writer must write the slot itself (maxStaged staged, the spill
// writer gone, or no frame to spare). mu is released while the bytes
// are copied.
func (f *FS) stageLocked(data []byte) []byte {
	if f.staged >= maxStaged || f.stagerDone || !f.canTakeBufLocked() {
		return nil
	}
	frame := f.takeFrameLocked()
	f.staged++
	f.mu.Unlock()
	copy(frame[chunkstore.HeaderSize:], data)
	f.mu.Lock()
	return frame
}

// queueStagedLocked hands a staged slot to the spill writer.
func (f *FS) queueStagedLocked(s *slot) {
	f.stageQ = append(f.stageQ, s)
	select {
	case f.stageWork <- struct{}{}:
	default:
	}
}

// spillWriter writes staged chunks into their spill slots.
func (f *FS) spillWriter() {
	defer f.wg.Done()
	stopped := false
	for {
		f.mu.Lock()
		var s *slot
		if len(f.stageQ) > 0 {
			s = f.stageQ[0]
			f.stageQ[0] = nil
			f.stageQ = f.stageQ[1:]
		} else if stopped {
			// Nothing is staged from now on (stageLocked): no worker
			// can be left waiting for a spill write.
			f.stagerDone = true
			f.mu.Unlock()
			return
		}
		sp, gate := f.spill, f.stageGate
		f.mu.Unlock()
		if s != nil && gate != nil {
			<-gate
		}
		if s == nil {
			select {
			case <-f.stop:
				stopped = true
			case <-f.stageWork:
			}
			continue
		}
		// The slot's frame and spill slot are its own until
		// finishStagedLocked (see the invariants above).
		f.beginHeavy(s.hi)
		err := sp.writeBody(s.spillSlot, s.buf[:s.hi])
		f.endHeavy()
		f.mu.Lock()
		f.finishStagedLocked(s, err)
		f.mu.Unlock()
	}
}

// finishStagedLocked ends a staged slot's spill write.
func (f *FS) finishStagedLocked(s *slot, err error) {
	s.staged = false
	f.staged--
	f.stagedTotal++
	defer f.cond.Broadcast()
	if s.freeStaged {
		// Superseded while held: nobody else has it.
		s.freeStaged = false
		f.freeBufLocked(s)
		return
	}
	if err != nil {
		// The bytes are in the frame: the slot is hashed and committed
		// from it, as a chunk that was never spilled.
		f.spillFailedLocked(s.spillSlot, err)
		s.spilled, s.rawSpill = false, false
		f.spilledRaw--
		if s.held {
			f.unholdLocked(s)
			f.queue = append(f.queue, s)
			select {
			case f.work <- struct{}{}:
			default:
			}
		}
		return
	}
	f.freeFrameLocked(s)
}

// waitStagedLocked waits until s's spill write, if any, has ended.
func (f *FS) waitStagedLocked(s *slot) {
	for s.staged {
		f.cond.Wait()
	}
}
