package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/intentlog"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
)

// snapshot is every uncommitted change at one instant, taken under mu.
type snapshot struct {
	seq     uint64
	nextIno Ino
	limit   uint64
	hasLim  bool
	inodes  []inodeSnap
	entries []entrySnap
	xattrs  []xattrSnap
	truncs  []truncSnap
	slots   []*slot
	dead    []Ino
	journal []Change
	// journalFirst is set by apply: the oldest journal record kept.
	journalFirst uint64
	// stored is set by apply: the change of each file's count of stored
	// chunks, for its node once the commit is done.
	stored map[Ino]int64
	// epoch is set by apply: the commit's epoch.
	epoch uint64
	// cps are the exec checkpoint ops that ride with this commit, and
	// cpRecords the count of records after it (set by apply).
	cps       []cpOp
	cpRecords int
	// audit are the audit records that ride with this commit.
	audit []auditOp
	// spilled counts the spilled slots it took.
	spilled int
	// The intent log's part (intent.go): the covers to write, or a new
	// generation to start (the old log closed once committed); a log to
	// sync up to intentLSN before the commit (a truncation's record).
	covers        []intentCover
	intentRestart bool
	intentGen     uint64
	intentOld     *intentlog.Log
	intentSync    *intentlog.Log
	intentLSN     uint64
}

type inodeSnap struct {
	attr   Attr
	target string
	gen    uint64
}

type entrySnap struct {
	parent Ino
	name   string
	d      dirent
	gen    uint64
}

type xattrSnap struct {
	ino  Ino
	name string
	val  []byte
	gen  uint64
}

type truncSnap struct {
	ino  Ino
	from uint64
}

func (s *snapshot) empty() bool {
	return len(s.inodes)+len(s.entries)+len(s.xattrs)+len(s.truncs)+len(s.slots)+len(s.dead)+len(s.journal) == 0 && !s.hasLim
}

// sparseIdleTicks is how many commit ticks a sparse slot must go
// unwritten before the committer seals it (one for other slots).
const sparseIdleTicks = 10

// committer is the one goroutine that writes to the store. It commits when
// kicked (fsync, buffer pressure) and on every tick while changes wait.
func (f *FS) committer() {
	defer f.wg.Done()
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	// tickGens[t%len] is f.gen at tick t: the gens of the last
	// sparseIdleTicks ticks.
	var tickGens [sparseIdleTicks]uint64
	for t := uint64(1); ; {
		select {
		case <-f.stop:
			return
		case <-f.kick:
		case <-tick.C:
			f.mu.Lock()
			// Seal slots nobody wrote since the last tick, so that data
			// reaches the store without waiting for close. A sparse
			// slot (a few pages over a stored chunk) waits longer: its
			// merge costs a whole chunk's work, and a program writing
			// here and there over a large file comes back to each
			// chunk only now and then.
			last, older := tickGens[(t-1)%sparseIdleTicks], tickGens[t%sparseIdleTicks]
			for _, n := range f.dirty {
				for _, s := range n.slots {
					if s.state == slotDirty && (s.gen <= older || !s.hasBase && s.gen <= last) {
						f.sealLocked(s)
					}
				}
			}
			// Quiet: nothing changed since the last tick.
			f.quiet = f.gen == last
			if f.quiet {
				// The writes paused: hash what they left (holdLocked).
				f.holdOff = false
				f.releaseHeldLocked()
			}
			if f.quiet && f.gen == older {
				f.trimPoolsLocked()
			}
			tickGens[t%sparseIdleTicks] = f.gen
			t++
			f.mu.Unlock()
		}
		f.commitMu.Lock()
		f.commitOnce()
		f.commitMu.Unlock()
	}
}

func (f *FS) takeSnapshotLocked() *snapshot {
	f.snapTaken++
	f.flushAllFlagsLocked()
	snap := &snapshot{seq: f.snapTaken, nextIno: f.nextIno}
	snap.journal = f.jn.mem[:len(f.jn.mem):len(f.jn.mem)]
	if f.limitGen != 0 {
		snap.limit, snap.hasLim = f.limit, true
	}
	// Dead inodes stay in f.dead until the commit that deletes them is
	// done: until then the store still holds them, and getNodeLocked would
	// bring them back to life (see cleanAfterCommitLocked).
	for ino := range f.dead {
		snap.dead = append(snap.dead, ino)
	}
	// How many slots holding pool frames it may take: all of them for a
	// waiter or at close, batchBufs otherwise. bbolt copies every value
	// of a commit into pages of its own before writing them, so a commit
	// of the whole pool held the pool twice (eight writers: 74 MiB of
	// bbolt's copies at the peak; with batchBufs, 15). The rest is left
	// for the next commit, kicked at once below.
	frames, took := math.MaxInt, 0
	background := f.syncWaiters == 0 && !f.closed
	if background {
		frames = f.batchBufs
	}
	// How many spilled slots this snapshot may take: all of them if
	// anyone waits for a commit (an fsync: it must find its chunks in
	// the commit after it), spillBatch otherwise.
	// A background commit leaves them while writes stream in, until
	// half the spill file is taken: the commits' work (bbolt's copies,
	// writes and fdatasyncs) then runs after the writer, or when it
	// must, as the kernel writes back a file written without fsync.
	spilled := 0
	switch {
	case f.draining > 0:
		spilled = f.spillBatch
	case f.syncWaiters > 0 || f.closed:
		spilled = math.MaxInt
	case f.quiet || f.spillReady >= f.spillSlots/2:
		spilled = f.spillBatch
	}
	for ino, n := range f.dirty {
		if n.attrGen != 0 {
			snap.inodes = append(snap.inodes, inodeSnap{attr: n.attr, target: n.target, gen: n.attrGen})
		}
		for name, ch := range n.entries {
			snap.entries = append(snap.entries, entrySnap{parent: ino, name: name, d: ch.d, gen: ch.gen})
		}
		for name, ch := range n.xattrs {
			snap.xattrs = append(snap.xattrs, xattrSnap{ino: ino, name: name, val: ch.val, gen: ch.gen})
		}
		if n.trunc != noTrunc {
			snap.truncs = append(snap.truncs, truncSnap{ino: ino, from: n.trunc})
			n.truncCommitting = n.trunc
			n.trunc = noTrunc
		}
		for _, s := range n.slots {
			if s.state == slotPrepared {
				pool := s.holdsPoolFrame()
				if s.spilled && spilled == 0 || pool && frames == 0 {
					continue // left for the next commit
				}
				if s.spilled {
					spilled--
					f.spillReady--
					snap.spilled++
				}
				if pool {
					frames--
					took++
					f.readyBufs--
				}
				s.state = slotCommitting
				snap.slots = append(snap.slots, s)
			}
		}
	}
	f.intentSnapLocked(snap)
	f.mostSpilled = max(f.mostSpilled, snap.spilled)
	if background {
		f.mostFrames = max(f.mostFrames, took)
	}
	if f.readyBufs >= f.batchBufs {
		f.kickCommit()
	}
	return snap
}

func (f *FS) commitOnce() {
	// After the commit (and mu released): the slots it freed.
	defer f.cleanSpill()
	f.mu.Lock()
	if f.broken != nil {
		f.mu.Unlock()
		return
	}
	snap := f.takeSnapshotLocked()
	if snap.empty() && !f.cps.hasRecords() && !snap.intentRestart {
		f.snapDone = snap.seq
		f.cond.Broadcast()
		f.mu.Unlock()
		return
	}
	// Exec pins ride with a commit that happens anyway (or one a record
	// asks for): taken only now, so that an empty snapshot drops none.
	snap.cps, f.cps.pending = f.cps.pending, nil
	snap.audit, f.cps.audit = f.cps.audit, nil
	snap.cpRecords = f.cps.records
	f.mu.Unlock()

	var st chunkstore.Stats
	var err error
	if snap.intentSync != nil {
		// Write-ahead: a truncation the store has is in the log too.
		if err = snap.intentSync.Sync(context.Background(), snap.intentLSN); err != nil {
			err = fmt.Errorf("intent log: %w", err)
		}
	}
	if err == nil {
		err = f.update(func(tx *chunkstore.Tx) error {
			if err := f.apply(tx, snap); err != nil {
				return err
			}
			var err error
			st, err = tx.Stats()
			return err
		})
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.cond.Broadcast()
	f.snapDone = snap.seq
	if err != nil {
		f.broken = fmt.Errorf("commit to %s failed, workspace is now read-only: %w", f.store.Path(), err)
		f.log.Error("commit failed", "err", err)
		return
	}
	f.used = st.UniqueBytes
	f.epoch = snap.epoch
	f.cps.records = snap.cpRecords
	publishAfterPinsLocked(snap.cps)
	f.cleanAfterCommitLocked(snap)
	f.intentCommittedLocked(snap)
	if f.spillReady > 0 && (f.spillReady >= f.spillSlots/2 || f.quiet) {
		// A long write has more in the spill file than a commit takes:
		// the next commit follows at once, not at the next tick.
		f.kickCommit()
	}
}

// apply writes a snapshot in one transaction. New chunk references are
// added before old ones are dropped, so a chunk shared by a change and a
// removal in the same snapshot survives.
func (f *FS) apply(tx *chunkstore.Tx, snap *snapshot) error {
	// Every record this commit writes is born at its epoch.
	epoch := f.epoch + 1
	tx.SetEpoch(epoch)
	// Exec pins first: this commit's recorder must keep what they pin.
	var err error
	if snap.cpRecords, err = writeCheckpointsTx(tx, snap.cps, snap.cpRecords, epoch); err != nil {
		return fmt.Errorf("exec checkpoints: %w", err)
	}
	if err := writeAuditTx(tx, snap.audit, epoch); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if f.fork == nil {
		// A fork's commits keep no versions: the workspace's indexes
		// are the workspace's (fork.go).
		rec, err := versions.Attach(tx.Tx, epoch)
		if err != nil {
			return err
		}
		tx.SetRecorder(rec)
	}
	var unref []chunkstore.ID
	// sums are the changes to chunk list summaries (in the inode
	// records), written with the inodes after the lists: a record's old
	// value counts out, its new one in. A damaged old record cannot be
	// counted out, so its file's summary stops matching, as it must: the
	// file is damaged.
	sums := make(map[Ino]*listSum)
	sum := func(ino Ino) *listSum {
		s := sums[ino]
		if s == nil {
			s = &listSum{}
			sums[ino] = s
		}
		return s
	}
	// Inode numbers only grow, and a file's chunk list grows at its
	// end: these buckets take new records at their end, where bbolt's
	// default fill of 50% would leave every leaf half empty and a commit
	// write twice the pages it fills (records updated in place keep
	// their size).
	for _, name := range [][]byte{bucketInodes, bucketChunks} {
		if b := tx.Bucket(name); b != nil {
			b.FillPercent = 1.0
		}
	}
	dirents := tx.Sealed(bucketDirents)
	for _, e := range snap.entries {
		k := direntKey(e.parent, e.name)
		var err error
		if e.d.Ino == 0 {
			err = dirents.Delete(k)
		} else {
			err = dirents.Put(k, encodeDirent(e.d))
		}
		if err != nil {
			return err
		}
	}
	xattrs := tx.Sealed(bucketXattrs)
	for _, x := range snap.xattrs {
		k := xattrKey(x.ino, x.name)
		var err error
		if x.val == nil {
			err = xattrs.Delete(k)
		} else {
			err = xattrs.Put(k, x.val)
		}
		if err != nil {
			return err
		}
	}
	chunks := tx.Sealed(bucketChunks)
	for _, t := range snap.truncs {
		c := chunks.Cursor()
		prefix := inoKey(t.ino)
		start := chunkKey(t.ino, t.from)
		for k, v, err := c.SeekWithin(start, prefix); k != nil; k, v, err = c.SeekWithin(start, prefix) {
			// A damaged record's chunk keeps a reference too many
			// (fsck repairs counts): never unreference a misread ID.
			var old []byte
			if err != nil {
				f.reportDamage(err)
			} else if len(v) == chunkstore.IDSize {
				old = v
				sum(t.ino).add(binary.BigEndian.Uint64(k[8:]), v, -1)
			}
			kept, err := c.DeleteKept()
			if err != nil {
				return err
			}
			// A version a snapshot keeps keeps its chunk too.
			if old != nil && !kept {
				unref = append(unref, chunkstore.ID(old))
			}
		}
	}
	for _, s := range snap.slots {
		k := chunkKey(s.ino, s.idx)
		var old *chunkstore.ID
		found, v, err := chunks.Find(k)
		if err != nil {
			f.reportDamage(err) // as above
		} else if len(v) == chunkstore.IDSize {
			id := chunkstore.ID(v)
			old = &id
			sum(s.ino).add(s.idx, v, -1)
		}
		dropOld := func(kept bool) {
			if old != nil && !kept {
				unref = append(unref, *old)
			}
		}
		switch {
		case s.hole:
			kept, err := chunks.DeleteFound(k, found)
			if err != nil {
				return err
			}
			dropOld(kept)
			continue
		case s.shared:
			if err := tx.Ref(s.prep.ID); err != nil {
				return fmt.Errorf("share chunk of inode %d: %w", s.ino, err)
			}
		default:
			if _, err := tx.Put(&s.prep); err != nil {
				return err
			}
		}
		kept, err := chunks.PutFound(k, s.prep.ID[:], found)
		if err != nil {
			return err
		}
		dropOld(kept)
		sum(s.ino).add(s.idx, s.prep.ID[:], +1)
	}
	if err := f.applyInodes(tx, snap, sums); err != nil {
		return err
	}
	for _, ino := range snap.dead {
		if err := f.deleteInode(tx, ino, &unref); err != nil {
			return err
		}
	}
	first, err := applyJournal(tx, snap.journal, f.jn.keep)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	snap.journalFirst = first
	meta := f.meta(tx)
	if err := meta.Put(keyNextIno, inoKey(snap.nextIno)); err != nil {
		return err
	}
	if err := meta.Put(keyEpoch, inoKey(Ino(epoch))); err != nil {
		return err
	}
	snap.epoch = epoch
	if snap.hasLim {
		if err := tx.Sealed(bucketMeta).Put(keyLimit, inoKey(Ino(snap.limit))); err != nil {
			return err
		}
	}
	for _, id := range unref {
		if err := tx.Unref(id); err != nil {
			if errors.Is(err, chunkstore.ErrNotFound) {
				f.log.Error("dropping a reference to a missing chunk", "chunk", id.String())
				continue
			}
			return err
		}
	}
	if err := f.applyIntent(tx, snap); err != nil {
		return err
	}
	if err := endCheckpointRootsTx(tx, snap.cps); err != nil {
		return fmt.Errorf("exec checkpoints: %w", err)
	}
	return nil
}

// applyInodes writes the snapshot's inode records, and the chunk list
// summaries of the files whose lists changed (sums: the changes) into
// their records, rewriting the records of files whose attributes did not
// change. A record with no summary yet (version 1: see inodeSum) gets
// the summary of its list as the commit leaves it.
func (f *FS) applyInodes(tx *chunkstore.Tx, snap *snapshot, sums map[Ino]*listSum) error {
	inodes := tx.Sealed(bucketInodes)
	orphans := tx.Sealed(bucketOrphans)
	snap.stored = make(map[Ino]int64, len(sums))
	dead := make(map[Ino]bool, len(snap.dead))
	for _, ino := range snap.dead {
		dead[ino] = true
	}
	// summed gives ino's summary after this commit from its record now
	// (old: nil for a new inode).
	summed := func(ino Ino, old []byte) (inodeSum, error) {
		cur := inodeSum{Known: true}
		if old != nil {
			var err error
			if _, _, cur, err = decodeInodeSum(ino, old); err != nil {
				f.log.Error("corrupt inode record", "ino", ino, "err", err)
				cur = inodeSum{}
			}
		}
		d := sums[ino]
		if d != nil {
			snap.stored[ino] = int64(d.Count)
		}
		switch {
		case !cur.Known:
			s, err := scanListSum(tx, ino)
			if err != nil {
				return inodeSum{}, nil // left unknown: the list is damaged, fsck's to tell
			}
			return inodeSum{listSum: s, Known: true}, nil
		case d != nil:
			cur.Count += d.Count // wraps for removals: d counts them as -1s
			cur.Mix ^= d.Mix
		}
		return cur, nil
	}
	for _, in := range snap.inodes {
		ino := in.attr.Ino
		k := inoKey(ino)
		sum := inodeSum{Known: true}
		var found sealed.Found // the record replaced, when read here
		if in.attr.IsRegular() && !dead[ino] {
			var old []byte
			var err error
			found, old, err = inodes.Find(k)
			if err != nil {
				// The summary it held is lost with it: the list is
				// taken as it is (the record written is version 1).
				f.reportDamage(err)
				old = nil
				sum = inodeSum{}
				if d := sums[ino]; d != nil {
					snap.stored[ino] = int64(d.Count)
				}
			} else if sum, err = summed(ino, old); err != nil {
				return err
			}
		}
		delete(sums, ino)
		var err error
		if found.Known() {
			_, err = inodes.PutFound(k, encodeInode(&in.attr, in.target, sum), found)
		} else {
			err = inodes.Put(k, encodeInode(&in.attr, in.target, sum))
		}
		if err != nil {
			return err
		}
		if in.attr.Nlink == 0 {
			err = orphans.Put(k, nil)
		} else {
			err = orphans.Delete(k)
		}
		if err != nil {
			return err
		}
	}
	// Files whose lists changed and attributes did not (a chunk
	// prepared after the commit of its write's attributes).
	for ino, d := range sums {
		if dead[ino] {
			continue
		}
		k := inoKey(ino)
		old, err := inodes.Get(k)
		if err != nil || old == nil {
			// Damaged: left as it is, it no longer matches, which is
			// the truth. Missing: nothing to summarise.
			f.reportDamage(err)
			snap.stored[ino] = int64(d.Count)
			continue
		}
		a, target, err := decodeInode(ino, old)
		if err != nil {
			f.log.Error("corrupt inode record", "ino", ino, "err", err)
			continue
		}
		sum, err := summed(ino, old)
		if err != nil {
			return err
		}
		if err := inodes.Put(k, encodeInode(&a, target, sum)); err != nil {
			return err
		}
	}
	return nil
}

// cleanAfterCommitLocked drops the overlays a commit made durable, unless
// they changed again since the snapshot.
func (f *FS) cleanAfterCommitLocked(snap *snapshot) {
	if snap.hasLim && f.limitGen != 0 && f.limit == snap.limit {
		f.limitGen = 0
	}
	for _, ino := range snap.dead {
		delete(f.dead, ino)
	}
	if n := len(snap.journal); n > 0 {
		f.jn.mem = append([]Change(nil), f.jn.mem[n:]...)
	}
	f.jn.first = snap.journalFirst
	for ino, d := range snap.stored {
		if n := f.nodes[ino]; n != nil {
			n.stored = uint64(int64(n.stored) + d)
		}
	}
	touched := make(map[Ino]*node)
	for _, in := range snap.inodes {
		if n := f.nodes[in.attr.Ino]; n != nil {
			if n.attrGen == in.gen {
				n.attrGen = 0
			}
			touched[in.attr.Ino] = n
		}
	}
	for _, e := range snap.entries {
		if n := f.nodes[e.parent]; n != nil {
			if ch := n.entries[e.name]; ch != nil && ch.gen == e.gen {
				delete(n.entries, e.name)
			}
			touched[e.parent] = n
		}
	}
	for _, x := range snap.xattrs {
		if n := f.nodes[x.ino]; n != nil {
			if ch := n.xattrs[x.name]; ch != nil && ch.gen == x.gen {
				delete(n.xattrs, x.name)
			}
			touched[x.ino] = n
		}
	}
	for _, t := range snap.truncs {
		if n := f.nodes[t.ino]; n != nil {
			n.truncCommitting = noTrunc
			touched[t.ino] = n
		}
	}
	for _, s := range snap.slots {
		n := f.nodes[s.ino]
		if !s.superseded && n != nil && n.slots[s.idx] == s {
			delete(n.slots, s.idx)
			touched[s.ino] = n
		}
		if s.merged && s.buf != nil && !s.hole {
			// A chunk written in parts (a database, a log) is likely
			// to be written again: its next merge finds its base here
			// instead of reading and verifying it from the store.
			f.cache.add(s.prep.ID, s.buf[:s.prep.Len])
		}
		f.freeBufLocked(s)
	}
	for ino, n := range touched {
		if !n.isDirty() {
			delete(f.dirty, ino)
			f.maybeForgetLocked(n)
		}
	}
}

// commitOnceIfClosedNot runs commitOnce unless the FS is closed (Close
// waits for commitMu before it closes the store). commitMu is held.
func (f *FS) commitOnceIfClosedNot() {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if !closed {
		f.commitOnce()
	}
}
