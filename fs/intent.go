package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/intentlog"
)

// The intent log makes an fsync of a file cheap: instead of merging,
// hashing and compressing the file's changed chunks and committing them
// (a bbolt transaction and its two fdatasyncs, about 1.2 ms for a chunk
// of a database), the fsync appends the pages written since the file's
// last record, with its attributes, to a log file beside the store
// (package intentlog) and syncs that (one fdatasync of a few pages). The
// chunks reach the store in a later ordinary commit. Opening the store
// after a crash replays the log. ZFS's ZIL does the same for its
// transaction groups.
//
// What a record says, and when it is replayed:
//
//   - A data record of inode I holds I's attributes and the bytes of the
//     pages written since I's previous record (the slots' logged
//     bitsets), relative to the store as its last commit of each chunk
//     left it. An fsync makes one only while every slot of I is dirty
//     (not with a worker or a commit: a chunk has one slot at a time, so
//     no record of I is made between a slot's seal and the end of its
//     commit), I's creation is committed, no truncation of I waits for a
//     commit and no xattr change does; otherwise the fsync commits, as
//     before the log.
//   - A truncation of an inode that has records appends a truncation
//     record (its new attributes), not synced; a commit that carries that
//     truncation syncs the log first (write-ahead), so a truncation the
//     store has is in the log too.
//   - Covers: a commit that stores a chunk of an inode with records
//     writes, in the bucket `intent`, key ino‖idx, the lsn of the last
//     record appended when its snapshot was taken; for the inode's
//     attributes key ino‖2^64-1. A record's pages of a chunk are replayed
//     only if its lsn is past the chunk's cover, its attributes only if
//     past the attributes' cover: a commit's chunk holds every write made
//     before its slot was sealed, which is every record of the inode up
//     to the snapshot (see above), and often writes made since that no
//     record holds; replaying an older record over it would lose them.
//   - Replay builds, per inode and in lsn order, the pages to write and
//     the attributes to set; a truncation record drops the pages past its
//     size from what earlier records gave (whether or not its attributes
//     are replayed: the store has the truncation, or it comes next). The
//     result is written through the ordinary write path and committed
//     with a new generation in one transaction (`meta/intent_gen`): the
//     log's old records are then ignored. An inode the store no longer
//     has is skipped (inode numbers are never reused).
//   - The log (re)starts with a commit that bumps the generation and
//     drops the covers, which it may do only if its snapshot holds all
//     that is not committed of every inode with records: the first fsync
//     of a session that could use the log commits as before and asks for
//     that; a log past intentRestartAt restarts at the first commit that
//     can (the file is then written again from its start); one past
//     maxIntentLog makes fsyncs commit until then. Close does the same
//     (the log file is then removed), so a closed store never needs its
//     log.
//
// The log belongs to the workspace's own FS, never to a fork's.
// Lock order: intentlog's locks are taken under mu (Append) or without
// it (Sync); mu is never taken under them.

var (
	// bucketIntent holds the covers while the log has records; it exists
	// only then (FORMAT.md).
	bucketIntent = []byte("intent")
	// keyIntentGen is the generation of the intent log's records.
	keyIntentGen = []byte("intent_gen")
)

// intentAttrIdx is the cover key's index for an inode's attributes.
const intentAttrIdx = ^uint64(0)

// maxIntentRecord bounds one record's payload: an fsync with more to
// write commits instead (a large write gains nothing from being written
// twice).
const maxIntentRecord = 2 << 20

// maxIntentLog is the log's size past which an fsync commits instead and
// restarts it.
const maxIntentLog = 64 << 20

// intentRestartAt is the log's size past which a commit that can end its
// generation does.
const intentRestartAt = 4 << 20

// Record kinds.
const (
	intentData  = 1
	intentTrunc = 2
)

// intentState is the FS's side of the log, under mu.
type intentState struct {
	path string
	log  *intentlog.Log // nil until started, and while restarting
	gen  uint64         // the generation of log's records
	// logged are the inodes with records in this generation: their
	// commits write covers, their truncations records.
	logged map[Ino]bool
	// restart: the next snapshot starts a new generation.
	restart bool
	// off: the log is not used (a fork, a failure, a closed FS).
	off bool
	// records counts records appended (for tests and metrics).
	records uint64
}

// logBits is a slot's set of pages written since the file's last record.
type logBits []uint64

func (b *logBits) set(first, last int) {
	for p := first; p <= last; p++ {
		w := p / 64
		for len(*b) <= w {
			*b = append(*b, 0)
		}
		(*b)[w] |= 1 << (p % 64)
	}
}

// markLogged records that bytes [off, end) of the slot changed.
func (s *slot) markLogged(off, end int) {
	if end > off {
		s.logged.set(off/pageSize, (end-1)/pageSize)
	}
}

// intentRecordAttr is what a record says of the inode's attributes.
type intentRecordAttr struct {
	Mode, Uid, Gid      uint32
	Size                uint64
	Atime, Mtime, Ctime int64
}

type intentPage struct {
	off  uint64 // file offset, page aligned
	data []byte // up to pageSize bytes
}

type intentRecord struct {
	kind  byte
	ino   Ino
	attr  intentRecordAttr
	pages []intentPage // data records; sorted by offset
}

const intentHeader = 1 + 8 + 3*4 + 8 + 3*8

func encodeIntent(r *intentRecord, chunkSize int) []byte {
	b := make([]byte, intentHeader, intentHeader+len(r.pages)*(pageSize+8)+8)
	b[0] = r.kind
	binary.LittleEndian.PutUint64(b[1:], uint64(r.ino))
	binary.LittleEndian.PutUint32(b[9:], r.attr.Mode)
	binary.LittleEndian.PutUint32(b[13:], r.attr.Uid)
	binary.LittleEndian.PutUint32(b[17:], r.attr.Gid)
	binary.LittleEndian.PutUint64(b[21:], r.attr.Size)
	binary.LittleEndian.PutUint64(b[29:], uint64(r.attr.Atime))
	binary.LittleEndian.PutUint64(b[37:], uint64(r.attr.Mtime))
	binary.LittleEndian.PutUint64(b[45:], uint64(r.attr.Ctime))
	b = binary.AppendUvarint(b, uint64(len(r.pages)))
	for _, p := range r.pages {
		b = binary.AppendUvarint(b, p.off/pageSize)
		b = binary.AppendUvarint(b, uint64(len(p.data)))
		b = append(b, p.data...)
	}
	return b
}

var errIntentRecord = errors.New("bad intent record")

// decodeIntent is the inverse of encodeIntent.
func decodeIntent(b []byte) (*intentRecord, error) {
	if len(b) < intentHeader {
		return nil, fmt.Errorf("%w: %d bytes", errIntentRecord, len(b))
	}
	r := &intentRecord{kind: b[0], ino: Ino(binary.LittleEndian.Uint64(b[1:]))}
	if r.kind != intentData && r.kind != intentTrunc {
		return nil, fmt.Errorf("%w: kind %d", errIntentRecord, r.kind)
	}
	r.attr = intentRecordAttr{
		Mode:  binary.LittleEndian.Uint32(b[9:]),
		Uid:   binary.LittleEndian.Uint32(b[13:]),
		Gid:   binary.LittleEndian.Uint32(b[17:]),
		Size:  binary.LittleEndian.Uint64(b[21:]),
		Atime: int64(binary.LittleEndian.Uint64(b[29:])),
		Mtime: int64(binary.LittleEndian.Uint64(b[37:])),
		Ctime: int64(binary.LittleEndian.Uint64(b[45:])),
	}
	b = b[intentHeader:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: page count", errIntentRecord)
	}
	b = b[k:]
	var last uint64
	for i := uint64(0); i < n; i++ {
		pg, k := binary.Uvarint(b)
		if k <= 0 || pg > (1<<63)/pageSize {
			return nil, fmt.Errorf("%w: page %d: offset", errIntentRecord, i)
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > pageSize || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: page %d: length", errIntentRecord, i)
		}
		b = b[k:]
		off := pg * pageSize
		if i > 0 && off <= last {
			return nil, fmt.Errorf("%w: page %d: out of order", errIntentRecord, i)
		}
		last = off
		r.pages = append(r.pages, intentPage{off: off, data: b[:l:l]})
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes past the pages", errIntentRecord, len(b))
	}
	return r, nil
}

func recordAttr(a *Attr) intentRecordAttr {
	return intentRecordAttr{Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Size: a.Size, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
}

// initIntent sets up the log's state at open and replays what a crash
// left in it.
func (f *FS) initIntent() error {
	f.in.logged = make(map[Ino]bool)
	if f.fork != nil {
		f.in.off = true
		return nil
	}
	f.in.path = f.store.Path() + "-intent"
	var gen uint64
	covers := make(map[[2]uint64]uint64)
	err := f.view(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketMeta).Get(keyIntentGen)
		if err != nil {
			return err
		}
		if len(v) == 8 {
			gen = binary.BigEndian.Uint64(v)
		}
		if tx.Bucket(bucketIntent) == nil {
			return nil
		}
		return tx.Sealed(bucketIntent).ForEach(func(k, v []byte) error {
			if len(k) != 16 || len(v) != 8 {
				return fmt.Errorf("%w: intent cover %x", chunkstore.ErrCorrupt, k)
			}
			covers[[2]uint64{binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])}] = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("intent log: %w", err)
	}
	f.in.gen = gen
	if _, err := os.Stat(f.in.path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	recs, rerr := intentlog.Read(f.in.path, gen)
	if rerr != nil && !errors.Is(rerr, intentlog.ErrDamaged) {
		return fmt.Errorf("intent log: %w", rerr)
	}
	if rerr != nil {
		keep := fmt.Sprintf("%s.damaged-%d", f.in.path, time.Now().Unix())
		f.log.Error("intent log damaged: replaying the records before the damage; the log is kept", "log", f.in.path, "kept", keep, "err", rerr)
		if err := keepCopy(f.in.path, keep); err != nil {
			return fmt.Errorf("intent log: keep a copy of the damaged log: %w", err)
		}
	}
	ctx := context.Background()
	if err := f.replayIntent(ctx, recs, covers); err != nil {
		return fmt.Errorf("intent log %s: replay: %w", f.in.path, err)
	}
	if len(recs) > 0 {
		f.log.Info("intent log replayed", "log", f.in.path, "records", len(recs))
	}
	// Commit the replay with a new generation: the old records are done.
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in.restart = true
	if err := f.syncAllLocked(ctx); err != nil {
		return fmt.Errorf("intent log: commit the replay: %w", err)
	}
	return nil
}

func keepCopy(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// CheckIntentLog reports what the intent log beside a closed store
// holds (fsck): notes say how many records the next open replays and
// whether a bad record stops them early (damage, or a power cut's
// writeback: the store is not damaged by either); problems name records
// the replay could not read, which would make the next open fail.
func CheckIntentLog(store *chunkstore.Store) (notes, problems []string, err error) {
	path := store.Path() + "-intent"
	var gen uint64
	err = store.View(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketMeta).Get(keyIntentGen)
		if len(v) == 8 {
			gen = binary.BigEndian.Uint64(v)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("intent log: %w", err)
	}
	recs, rerr := intentlog.Read(path, gen)
	if rerr != nil && !errors.Is(rerr, intentlog.ErrDamaged) {
		return nil, nil, fmt.Errorf("intent log: %w", rerr)
	}
	if len(recs) > 0 {
		notes = append(notes, fmt.Sprintf("the intent log %s holds %d records of fsyncs not committed yet: the next open of the workspace replays them", path, len(recs)))
	}
	if rerr != nil {
		notes = append(notes, fmt.Sprintf("%v: the next open replays the records before it and keeps the log as %s.damaged-TIME", rerr, path))
	}
	for _, rec := range recs {
		if _, err := decodeIntent(rec.Payload); err != nil {
			problems = append(problems, fmt.Sprintf("intent log %s: record %d: %v: the workspace will not open until the log is moved aside (its fsyncs are then lost)", path, rec.LSN, err))
		}
	}
	return notes, problems, nil
}

// replayNode is what the replay gathers for one inode.
type replayNode struct {
	attr  *intentRecordAttr
	pages map[uint64][]byte
}

func (f *FS) replayIntent(ctx context.Context, recs []intentlog.Record, covers map[[2]uint64]uint64) error {
	cs := uint64(f.chunkSize)
	nodes := make(map[Ino]*replayNode)
	for _, rec := range recs {
		r, err := decodeIntent(rec.Payload)
		if err != nil {
			// Checksummed, so written so by us: a decoder that cannot
			// read its own records must not guess.
			return fmt.Errorf("record %d: %w", rec.LSN, err)
		}
		rn := nodes[r.ino]
		if rn == nil {
			rn = &replayNode{pages: make(map[uint64][]byte)}
			nodes[r.ino] = rn
		}
		if r.kind == intentTrunc {
			for off, p := range rn.pages {
				switch {
				case off >= r.attr.Size:
					delete(rn.pages, off)
				case off+uint64(len(p)) > r.attr.Size:
					rn.pages[off] = p[:r.attr.Size-off]
				}
			}
		}
		for _, p := range r.pages {
			if rec.LSN > covers[[2]uint64{uint64(r.ino), p.off / cs}] {
				rn.pages[p.off] = p.data
			}
		}
		if rec.LSN > covers[[2]uint64{uint64(r.ino), intentAttrIdx}] {
			a := r.attr
			rn.attr = &a
		}
	}
	inos := make([]Ino, 0, len(nodes))
	for ino := range nodes {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	for _, ino := range inos {
		rn := nodes[ino]
		a, err := f.GetAttr(ino)
		if errors.Is(err, syscall.ENOENT) {
			continue // removed since: its records are moot
		}
		if err != nil {
			return fmt.Errorf("inode %d: %w", ino, err)
		}
		if !a.IsRegular() {
			continue
		}
		if rn.attr == nil {
			// The store's attributes are newer than every record's:
			// they stay as they are, whatever the writes below do.
			rn.attr = &intentRecordAttr{Mode: a.Mode, Uid: a.Uid, Gid: a.Gid, Size: a.Size, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
		}
		size := rn.attr.Size
		offs := make([]uint64, 0, len(rn.pages))
		for off := range rn.pages {
			offs = append(offs, off)
		}
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for _, off := range offs {
			p := rn.pages[off]
			if off >= size {
				continue
			}
			p = p[:min(uint64(len(p)), size-off)]
			if _, err := f.Write(ctx, ino, int64(off), p, false); err != nil {
				return fmt.Errorf("inode %d at %d: %w", ino, off, err)
			}
		}
		at := rn.attr
		in := SetAttrIn{Size: &at.Size, Mode: &at.Mode, Uid: &at.Uid, Gid: &at.Gid, Atime: &at.Atime, Mtime: &at.Mtime, Ctime: &at.Ctime}
		if _, err := f.SetAttr(Caller{}, ino, in); err != nil {
			return fmt.Errorf("inode %d: attributes: %w", ino, err)
		}
	}
	return nil
}

// IntentRecords is how many records were appended to the intent log
// since the FS was opened: fsyncs made durable without a commit, and
// truncations of files with records.
func (f *FS) IntentRecords() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.in.records
}

// intentFsyncLocked appends a record of n's changes if n's fsync can be
// one (see the comment at the top), and returns the log and the lsn to
// sync. ok is false when the fsync must commit instead.
func (f *FS) intentFsyncLocked(n *node) (l *intentlog.Log, lsn uint64, ok bool) {
	if f.in.off || f.in.restart || f.closed || f.broken != nil || !n.attr.IsRegular() {
		return nil, 0, false
	}
	if f.in.log == nil {
		// Started by the commit this fsync makes.
		f.in.restart = true
		return nil, 0, false
	}
	if f.in.log.Size() > maxIntentLog {
		f.in.restart = true
		return nil, 0, false
	}
	ino := n.attr.Ino
	if f.dead[ino] || n.orphan || n.tmpfile || n.trunc != noTrunc || n.truncCommitting != noTrunc || len(n.xattrs) > 0 {
		return nil, 0, false
	}
	bytes := 0
	for _, s := range n.slots {
		if s.state != slotDirty || s.hole || s.shared || s.spilled || s.rawSpill || s.noLog || (!s.hasBase && s.buf == nil) {
			return nil, 0, false
		}
		for _, w := range s.logged {
			bytes += bits.OnesCount64(w) * pageSize
		}
	}
	if bytes > maxIntentRecord {
		return nil, 0, false
	}
	if !f.in.logged[ino] && !f.inodeStoredLocked(ino) {
		return nil, 0, false
	}
	cs := uint64(f.chunkSize)
	r := &intentRecord{kind: intentData, ino: ino, attr: recordAttr(&n.attr)}
	for _, s := range n.slots {
		for w, word := range s.logged {
			for word != 0 {
				p := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				start := p * pageSize
				end := min(start+pageSize, s.hi)
				if end <= start {
					continue // past the slot's end: reads as zeros, the size says so
				}
				var data []byte
				if s.hasBase {
					pg := s.pages[p]
					if pg == nil {
						continue
					}
					data = pg[:end-start]
				} else {
					data = s.buf[start:end]
				}
				r.pages = append(r.pages, intentPage{off: s.idx*cs + uint64(start), data: data})
			}
		}
	}
	sort.Slice(r.pages, func(i, j int) bool { return r.pages[i].off < r.pages[j].off })
	lsn, err := f.in.log.Append(encodeIntent(r, f.chunkSize))
	if err != nil {
		// The generation ends at the first commit that can end it:
		// until then a truncation of a logged file cannot be recorded
		// and makes the workspace read-only (intentTruncLocked), as a
		// failed commit does.
		f.log.Error("intent log append failed: fsyncs commit from now on", "log", f.in.path, "err", err)
		f.in.off, f.in.restart = true, true
		return nil, 0, false
	}
	for _, s := range n.slots {
		clear(s.logged)
	}
	f.in.logged[ino] = true
	f.in.records++
	return f.in.log, lsn, true
}

// inodeStoredLocked reports whether the store has ino's record: its
// creation is committed.
func (f *FS) inodeStoredLocked(ino Ino) bool {
	found := false
	f.view(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
		found = err == nil && v != nil
		return nil
	})
	return found
}

// intentTruncLocked appends a truncation record for n, just truncated,
// if n has records: a commit that carries the truncation syncs it first.
func (f *FS) intentTruncLocked(n *node) {
	if f.in.log == nil || !f.in.logged[n.attr.Ino] {
		return
	}
	r := &intentRecord{kind: intentTrunc, ino: n.attr.Ino, attr: recordAttr(&n.attr)}
	if _, err := f.in.log.Append(encodeIntent(r, f.chunkSize)); err != nil {
		// The truncation cannot be in the log, and no commit may carry
		// it while older records of n would be replayed over it: as
		// when a commit fails.
		if f.broken == nil {
			f.broken = fmt.Errorf("intent log %s: record a truncation: %w: workspace is now read-only", f.in.path, err)
			f.log.Error("intent log append failed", "err", f.broken)
		}
		return
	}
	f.in.records++
}

// intentSnapLocked adds the log's part to a snapshot being taken.
func (f *FS) intentSnapLocked(snap *snapshot) {
	// A log past intentRestartAt starts anew whenever that is safe (a
	// quiet moment, most often): the file is rewritten from its start,
	// and the covers go.
	grown := f.in.log != nil && f.in.log.Size() >= intentRestartAt
	if (f.in.restart || grown) && f.intentRestartSafeLocked() {
		f.in.restart = false
		snap.intentRestart = true
		snap.intentGen = f.in.gen + 1
		f.in.logged = make(map[Ino]bool)
		snap.intentOld, f.in.log = f.in.log, nil // closed when the commit is done
		return
	}
	if f.in.log == nil || len(f.in.logged) == 0 {
		return
	}
	lsn := f.in.log.LastLSN()
	for _, s := range snap.slots {
		if f.in.logged[s.ino] {
			snap.covers = append(snap.covers, intentCover{s.ino, s.idx, lsn})
		}
	}
	for _, in := range snap.inodes {
		if f.in.logged[in.attr.Ino] {
			snap.covers = append(snap.covers, intentCover{in.attr.Ino, intentAttrIdx, lsn})
		}
	}
	for _, t := range snap.truncs {
		if f.in.logged[t.ino] {
			snap.intentSync, snap.intentLSN = f.in.log, lsn
		}
	}
}

// intentRestartSafeLocked reports whether the snapshot being taken holds
// everything of every inode with records: only then may its commit drop
// them (a new generation). Its slots were taken before this is called.
func (f *FS) intentRestartSafeLocked() bool {
	for ino := range f.in.logged {
		n := f.nodes[ino]
		if n == nil {
			continue // clean: forgotten
		}
		if n.trunc != noTrunc {
			return false
		}
		for _, s := range n.slots {
			if s.state != slotCommitting {
				return false
			}
		}
	}
	return true
}

type intentCover struct {
	ino Ino
	idx uint64
	lsn uint64
}

// applyIntent writes a snapshot's covers, or starts a new generation.
func (f *FS) applyIntent(tx *chunkstore.Tx, snap *snapshot) error {
	if snap.intentRestart {
		if tx.Bucket(bucketIntent) != nil {
			if err := tx.DeleteBucket(bucketIntent); err != nil {
				return fmt.Errorf("intent log: drop covers: %w", err)
			}
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], snap.intentGen)
		return tx.Sealed(bucketMeta).Put(keyIntentGen, v[:])
	}
	if len(snap.covers) == 0 {
		return nil
	}
	if _, err := tx.CreateBucketIfNotExists(bucketIntent); err != nil {
		return fmt.Errorf("intent log: covers: %w", err)
	}
	b := tx.Sealed(bucketIntent)
	for _, c := range snap.covers {
		var k [16]byte
		var v [8]byte
		binary.BigEndian.PutUint64(k[:], uint64(c.ino))
		binary.BigEndian.PutUint64(k[8:], c.idx)
		binary.BigEndian.PutUint64(v[:], c.lsn)
		if err := b.Put(k[:], v[:]); err != nil {
			return fmt.Errorf("intent log: cover: %w", err)
		}
	}
	return nil
}

// intentCommittedLocked finishes a snapshot's part once its commit is
// done: a new generation's log is created (or, at close, the file goes).
func (f *FS) intentCommittedLocked(snap *snapshot) {
	if !snap.intentRestart {
		return
	}
	if snap.intentOld != nil {
		snap.intentOld.Close()
	}
	f.in.gen = snap.intentGen
	if f.in.off || f.closing {
		if err := intentlog.Remove(f.in.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.log.Warn("intent log: remove", "log", f.in.path, "err", err)
		}
		return
	}
	l, err := intentlog.Create(f.in.path, f.in.gen)
	if err != nil {
		f.log.Error("intent log: create failed: fsyncs commit from now on", "log", f.in.path, "err", err)
		f.in.off = true
		return
	}
	f.in.log = l
}
