package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// Rewinding puts records of the versioned buckets back as an earlier
// epoch had them: the engine under snapshot restore (whole or some
// paths) and exec undo (fs/SNAPSHOTS.md, "diff, restore and undo").
//
// A rewind is a plan (each record to put back, or to delete) applied in
// one commit. Applying checks what it leaves: every entry names an inode
// that exists and has the entry's type in a directory that exists, and
// no directory it removes keeps entries. A plan that would break that
// (an undo whose files a later change built upon) fails whole and
// changes nothing.
//
// On a served workspace (FS.rewindLive) the rewind runs with every
// change committed and mu held across its transaction, so that no door
// changes anything meanwhile; mu is otherwise never held across a write
// transaction, and nothing that runs inside one takes mu, so this cannot
// deadlock. Afterwards the cached nodes it touched are reloaded. An inode
// the rewind would delete while a handle has it open is unlinked
// instead (nlink 0, an orphan): the open handle keeps reading what it
// read, as after an unlink, and the inode goes at its last close. Open
// handles are those of the doors that take them (the file API, a policy
// view's mount); the plain mount takes none, since the kernel sends it
// no RELEASE (fusefs openCreated): a file open there is deleted.

// rewindTarget is one record to put back: then is its value at the
// earlier epoch, nil to delete it.
type rewindTarget struct {
	bucket []byte
	key    []byte
	then   []byte
}

// rewindPlan is what a rewind puts back.
type rewindPlan struct {
	targets []rewindTarget
	// merge are directories whose inode record is not put back but kept
	// as it is, with its link count adjusted by the subdirectory entries
	// the rewind adds and removes and its times set to now: their
	// entries changed for reasons outside the rewind too.
	merge map[Ino]bool
	// mergeBase is a merged directory's record to start from (its
	// version to put back, whose link count and times are then
	// adjusted); the live record when absent.
	mergeBase map[Ino][]byte
}

// entryEffect is a directory entry a rewind changed.
type entryEffect struct {
	parent   Ino
	name     string
	old, new dirent // Ino 0: none
}

// rewindEffects is what a rewind changed, for the caches and the journal.
type rewindEffects struct {
	records int
	inos    map[Ino]bool
	entries []entryEffect
	// orphaned are inodes the rewind unlinked rather than deleted,
	// because a handle has them open.
	orphaned []Ino
}

// ErrRewindInconsistent is the cause of a rewind refused because what it
// would leave is not a consistent tree.
var ErrRewindInconsistent = errors.New("the result would not be a consistent tree")

// RewindReport says what a restore or an undo changed.
type RewindReport struct {
	Records int      `json:"records"` // records put back or removed
	Paths   []string `json:"paths"`   // paths of the entries it added, removed or replaced, and of files it changed in place (where known)
	Epoch   uint64   `json:"epoch"`   // the commit that made the change
	Seconds float64  `json:"seconds"`
}

func isInodeKeyed(bucket []byte) bool {
	return bytes.Equal(bucket, bucketInodes) || bytes.Equal(bucket, bucketChunks) || bytes.Equal(bucket, bucketXattrs) || bytes.Equal(bucket, bucketSums)
}

// applyRewind applies plan in tx, whose epoch and recorder are set.
// isOpen says whether a handle has an inode open (nil: none has).
func applyRewind(tx *chunkstore.Tx, plan *rewindPlan, isOpen func(Ino) bool) (*rewindEffects, error) {
	eff := &rewindEffects{inos: make(map[Ino]bool)}
	inodes := tx.Sealed(bucketInodes)
	// Inodes to unlink instead of deleting: open ones whose record the
	// plan deletes.
	keep := make(map[Ino]bool)
	if isOpen != nil {
		for _, t := range plan.targets {
			if t.then == nil && bytes.Equal(t.bucket, bucketInodes) && len(t.key) == 8 && isOpen(keyIno(t.key)) {
				keep[keyIno(t.key)] = true
			}
		}
	}
	// Entries first, then the data and attribute records, inodes last:
	// merged directories need the entries' changes.
	order := func(b []byte) int {
		switch {
		case bytes.Equal(b, bucketDirents):
			return 0
		case bytes.Equal(b, bucketInodes):
			return 2
		}
		return 1
	}
	targets := append([]rewindTarget(nil), plan.targets...)
	sort.SliceStable(targets, func(i, j int) bool { return order(targets[i].bucket) < order(targets[j].bucket) })

	var ref, unref []chunkstore.ID
	subdirs := make(map[Ino]int) // merged directories: subdirectory entries added minus removed
	var deletedDirs []Ino
	var restoredInodes []Ino
	for _, t := range targets {
		if isInodeKeyed(t.bucket) && len(t.key) >= 8 && keep[keyIno(t.key)] {
			continue
		}
		b := tx.Sealed(t.bucket)
		now, err := b.Get(t.key)
		if err != nil {
			return nil, err
		}
		now = bytes.Clone(now)
		if now == nil && t.then == nil || now != nil && t.then != nil && bytes.Equal(now, t.then) {
			continue
		}
		if bytes.Equal(t.bucket, bucketInodes) && t.then != nil && len(t.key) == 8 {
			if _, _, err := decodeInode(keyIno(t.key), t.then); err != nil {
				return nil, err
			}
		}
		var kept bool
		if t.then == nil {
			kept, err = b.DeleteKept(t.key)
		} else {
			kept, err = b.PutKept(t.key, t.then)
		}
		if err != nil {
			return nil, err
		}
		eff.records++
		switch {
		case bytes.Equal(t.bucket, bucketChunks):
			if now != nil && len(now) == chunkstore.IDSize && !kept {
				unref = append(unref, chunkstore.ID(now))
			}
			if t.then != nil && len(t.then) == chunkstore.IDSize {
				ref = append(ref, chunkstore.ID(t.then))
			}
		case bytes.Equal(t.bucket, bucketDirents):
			if len(t.key) <= 8 {
				return nil, fmt.Errorf("dirent key %x: %w", t.key, errBadRecord)
			}
			e := entryEffect{parent: keyIno(t.key), name: string(t.key[8:])}
			if now != nil {
				if e.old, err = decodeDirent(now); err != nil {
					return nil, err
				}
			}
			if t.then != nil {
				if e.new, err = decodeDirent(t.then); err != nil {
					return nil, err
				}
			}
			if plan.merge[e.parent] {
				if e.old.Ino != 0 && e.old.Type == syscall.S_IFDIR {
					subdirs[e.parent]--
				}
				if e.new.Ino != 0 && e.new.Type == syscall.S_IFDIR {
					subdirs[e.parent]++
				}
			}
			eff.entries = append(eff.entries, e)
			eff.inos[e.parent] = true
		case bytes.Equal(t.bucket, bucketInodes):
			ino := keyIno(t.key)
			if t.then == nil {
				if a, _, err := decodeInode(ino, now); err == nil && a.IsDir() {
					deletedDirs = append(deletedDirs, ino)
				}
				if err := tx.Sealed(bucketOrphans).Delete(t.key); err != nil {
					return nil, err
				}
			} else {
				restoredInodes = append(restoredInodes, ino)
			}
			eff.inos[ino] = true
		default:
			eff.inos[keyIno(t.key)] = true
		}
	}
	// Directories kept and adjusted.
	t := time.Now().UnixNano()
	for ino := range plan.merge {
		k := inoKey(ino)
		v, err := inodes.Get(k)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		a, target, err := decodeInode(ino, v)
		if err != nil {
			return nil, err
		}
		d := subdirs[ino]
		base, hasBase := plan.mergeBase[ino]
		if !hasBase && !entriesTouched(eff.entries, ino) {
			continue
		}
		links := int64(a.Nlink) + int64(d)
		if hasBase {
			if a, target, err = decodeInode(ino, base); err != nil {
				return nil, err
			}
		}
		if links < 2 {
			return nil, fmt.Errorf("directory %d: link count %d: %w", ino, links, ErrRewindInconsistent)
		}
		a.Nlink = uint32(links)
		a.Mtime, a.Ctime = t, t
		if err := inodes.Put(k, encodeInode(&a, target, inodeSum{Known: true})); err != nil { // a directory: no summary
			return nil, err
		}
		eff.records++
		eff.inos[ino] = true
	}
	// Open inodes the plan deletes: unlinked, kept until their last close.
	for ino := range keep {
		k := inoKey(ino)
		v, err := inodes.Get(k)
		if err != nil || v == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		a, target, sum, err := decodeInodeSum(ino, v)
		if err != nil {
			return nil, err
		}
		a.Nlink, a.Ctime = 0, t
		if err := inodes.Put(k, encodeInode(&a, target, sum)); err != nil { // its list is left as it is
			return nil, err
		}
		if err := tx.Sealed(bucketOrphans).Put(k, nil); err != nil {
			return nil, err
		}
		eff.records++
		eff.inos[ino] = true
		eff.orphaned = append(eff.orphaned, ino)
	}
	// An inode put back linked is not an orphan of the state it
	// replaced; one put back unlinked (open when the earlier state was
	// taken) is, and goes at the next open of the store.
	for _, ino := range restoredInodes {
		v, err := inodes.Get(inoKey(ino))
		if err != nil || v == nil {
			continue
		}
		a, _, err := decodeInode(ino, v)
		if err != nil {
			return nil, err
		}
		if a.Nlink > 0 || a.IsDir() {
			err = tx.Sealed(bucketOrphans).Delete(inoKey(ino))
		} else {
			err = tx.Sealed(bucketOrphans).Put(inoKey(ino), nil)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := checkRewind(tx, eff, deletedDirs); err != nil {
		return nil, err
	}
	// References: the new ones first, so that a chunk moving from one
	// record to another survives.
	for _, id := range ref {
		if err := tx.Ref(id); err != nil {
			return nil, fmt.Errorf("a chunk the earlier state needs: %w", err)
		}
	}
	for _, id := range unref {
		if err := tx.Unref(id); err != nil {
			return nil, err
		}
	}
	return eff, nil
}

func entriesTouched(es []entryEffect, dir Ino) bool {
	for _, e := range es {
		if e.parent == dir {
			return true
		}
	}
	return false
}

// checkRewind verifies what a rewind leaves around what it touched.
func checkRewind(tx *chunkstore.Tx, eff *rewindEffects, deletedDirs []Ino) error {
	inodes := tx.Sealed(bucketInodes)
	var bad []string
	attr := func(ino Ino) (*Attr, error) {
		v, err := inodes.Get(inoKey(ino))
		if err != nil || v == nil {
			return nil, err
		}
		a, _, err := decodeInode(ino, v)
		if err != nil {
			return nil, err
		}
		return &a, nil
	}
	for _, e := range eff.entries {
		if e.new.Ino == 0 {
			continue
		}
		p, err := attr(e.parent)
		if err != nil {
			return err
		}
		if p == nil || !p.IsDir() {
			bad = append(bad, fmt.Sprintf("entry %q of inode %d: its directory is gone", e.name, e.parent))
			continue
		}
		c, err := attr(e.new.Ino)
		if err != nil {
			return err
		}
		if c == nil {
			bad = append(bad, fmt.Sprintf("entry %q of directory %d names inode %d, which is gone", e.name, e.parent, e.new.Ino))
		} else if c.Mode&syscall.S_IFMT != e.new.Type {
			bad = append(bad, fmt.Sprintf("entry %q of directory %d: type %#o, inode %d has %#o", e.name, e.parent, e.new.Type, e.new.Ino, c.Mode&syscall.S_IFMT))
		}
	}
	dirents := tx.Sealed(bucketDirents)
	for _, ino := range deletedDirs {
		if a, err := attr(ino); err != nil {
			return err
		} else if a != nil {
			continue
		}
		prefix := inoKey(ino)
		c := dirents.Cursor()
		if k, _, err := c.Seek(prefix); err != nil {
			return err
		} else if k != nil && hasPrefix(k, prefix) {
			bad = append(bad, fmt.Sprintf("directory %d would go but still holds %q", ino, k[8:]))
		}
	}
	for ino := range eff.inos {
		a, err := attr(ino)
		if err != nil {
			return err
		}
		if a == nil || !a.IsDir() || ino == RootIno {
			continue
		}
		if p, err := attr(a.Parent); err != nil {
			return err
		} else if p == nil || !p.IsDir() {
			bad = append(bad, fmt.Sprintf("directory %d: its parent %d is gone", ino, a.Parent))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("and %d more", len(bad)-10))
		}
		return fmt.Errorf("%w: %s", ErrRewindInconsistent, strings.Join(bad, "; "))
	}
	return nil
}

// changedKeys lists each versioned key whose value may differ between
// epoch and now, once.
func changedKeys(tx *chunkstore.Tx, epoch uint64) ([]rewindTarget, error) {
	seen := make(map[string]bool)
	var out []rewindTarget
	err := versions.Changed(tx.Tx, epoch, func(id byte, key []byte) error {
		bn := versions.Name(id)
		if bn == "" {
			return fmt.Errorf("change of unknown bucket id %d: %w", id, errBadRecord)
		}
		if bn == string(bucketSums) {
			// A summary of format 6 and before, kept for a snapshot
			// from before the upgrade: from format 7 a file's summary
			// is in its inode record, and an inode record put back
			// from then has none (version 1: its list is taken as
			// it is).
			return nil
		}
		if k := string(id) + string(key); !seen[k] {
			seen[k] = true
			out = append(out, rewindTarget{bucket: []byte(bn), key: bytes.Clone(key)})
		}
		return nil
	})
	return out, err
}

// beginRewindTx sets tx up as the commit after last: its epoch and its
// recorder. It returns the epoch.
func beginRewindTx(tx *chunkstore.Tx) (uint64, error) {
	ev, err := tx.Sealed(bucketMeta).Get(keyEpoch)
	if err != nil {
		return 0, err
	}
	last, _ := u64(ev)
	epoch := last + 1
	tx.SetEpoch(epoch)
	rec, err := versions.NewRecorder(tx.Tx, epoch)
	if err != nil {
		return 0, err
	}
	tx.SetRecorder(rec)
	return epoch, nil
}

func endRewindTx(tx *chunkstore.Tx, epoch uint64) error {
	return tx.Sealed(bucketMeta).Put(keyEpoch, inoKey(Ino(epoch)))
}

// snapshotEpoch reads snapshot name's record in tx.
func snapshotEpoch(tx *chunkstore.Tx, name string) (Snapshot, error) {
	v, err := tx.Sealed(bucketSnapshots).Get([]byte(name))
	if err != nil {
		return Snapshot{}, err
	}
	if v == nil || name == "" || name[0] == 0 {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", name, ErrNoSnapshot)
	}
	return decodeSnapshot(name, v)
}

// quiesceLocked commits every change and waits until nothing is pending
// or being committed, with mu held on return (on success and failure).
func (f *FS) quiesceLocked(ctx context.Context) error {
	for {
		if f.closed {
			return errWorkspaceClosed
		}
		if f.broken != nil {
			return f.broken
		}
		if len(f.dirty) == 0 && len(f.dead) == 0 && len(f.jn.mem) == 0 && len(f.jn.flagged) == 0 &&
			f.limitGen == 0 && f.snapTaken == f.snapDone && !f.cps.hasRecords() {
			return nil
		}
		if err := f.syncAllLocked(ctx); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// rewindLive runs a rewind on the served workspace: plan builds it in
// the rewind's transaction (epoch set); the caches are refreshed after.
func (f *FS) rewindLive(ctx context.Context, plan func(tx *chunkstore.Tx) (*rewindPlan, error)) (*RewindReport, *Touched, error) {
	return f.rewindLiveThen(ctx, plan, nil)
}

// rewindLiveThen is rewindLive that runs post in the rewind's
// transaction once the plan is applied (nil: nothing).
func (f *FS) rewindLiveThen(ctx context.Context, plan func(tx *chunkstore.Tx) (*rewindPlan, error), post func(tx *chunkstore.Tx) error) (*RewindReport, *Touched, error) {
	if f.fork != nil {
		return nil, nil, ErrInFork
	}
	start := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.quiesceLocked(ctx); err != nil {
		return nil, nil, err
	}
	var eff *rewindEffects
	var epoch uint64
	var st chunkstore.Stats
	isOpen := func(ino Ino) bool { n := f.nodes[ino]; return n != nil && n.opens > 0 }
	// Exec pins waiting for a commit go first: the rewind's recorder
	// must keep what they pin.
	ops := f.cps.pending
	f.cps.pending = nil
	err := f.update(func(tx *chunkstore.Tx) error {
		var err error
		if _, err = writeCheckpointsTx(tx, ops, f.cps.records, f.epoch); err != nil {
			return err
		}
		if epoch, err = beginRewindTx(tx); err != nil {
			return err
		}
		p, err := plan(tx)
		if err != nil {
			return err
		}
		if eff, err = applyRewind(tx, p, isOpen); err != nil {
			return err
		}
		if post != nil {
			if err := post(tx); err != nil {
				return err
			}
		}
		if err := endRewindTx(tx, epoch); err != nil {
			return err
		}
		st, err = tx.Stats()
		return err
	})
	if err != nil {
		f.cps.pending = append(ops, f.cps.pending...)
		return nil, nil, err
	}
	f.epoch = epoch
	f.used = st.UniqueBytes
	publishAfterPinsLocked(ops)
	rep := &RewindReport{Records: eff.records, Epoch: epoch}
	rep.Paths = f.afterRewindLocked(eff)
	rep.Seconds = time.Since(start).Seconds()
	return rep, eff.touched(), nil
}

// touched is what the doors must tell the kernel to forget.
func (eff *rewindEffects) touched() *Touched {
	t := &Touched{}
	inos := make(map[Ino]bool, len(eff.inos))
	for ino := range eff.inos {
		inos[ino] = true
	}
	for _, e := range eff.entries {
		t.Entries = append(t.Entries, TouchedEntry{Parent: e.parent, Name: e.name})
		for _, ino := range []Ino{e.parent, e.old.Ino, e.new.Ino} {
			if ino != 0 {
				inos[ino] = true
			}
		}
	}
	for ino := range inos {
		t.Inodes = append(t.Inodes, ino)
	}
	sort.Slice(t.Inodes, func(i, j int) bool { return t.Inodes[i] < t.Inodes[j] })
	return t
}

// afterRewindLocked refreshes the cached nodes a rewind touched, journals
// what it changed and returns the paths.
func (f *FS) afterRewindLocked(eff *rewindEffects) []string {
	// Paths of removed entries, from the tree before the refresh.
	seen := make(map[string]bool)
	var paths []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	type rec struct {
		op  ChangeOp
		ino Ino
		typ uint32
		p   string
	}
	var recs []rec
	for _, e := range eff.entries {
		if e.old.Ino != 0 && e.old.Ino != e.new.Ino {
			p := f.entryPathLocked(e.parent, e.name)
			recs = append(recs, rec{OpRemove, e.old.Ino, e.old.Type, p})
			add(p)
		}
	}
	orphaned := make(map[Ino]bool)
	for _, ino := range eff.orphaned {
		orphaned[ino] = true
	}
	for ino := range eff.inos {
		n := f.nodes[ino]
		if n == nil {
			continue
		}
		if orphaned[ino] {
			n.attr.Nlink, n.orphan = 0, !n.attr.IsDir()
			n.version = f.bump()
			continue
		}
		var a Attr
		var target string
		var stored uint64
		var damaged error
		found := false
		err := f.view(func(tx *chunkstore.Tx) error {
			v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
			if err != nil || v == nil {
				return err
			}
			var sum inodeSum
			if a, target, sum, err = decodeInodeSum(ino, v); err != nil {
				return err
			}
			found = true
			if a.IsRegular() {
				stored, damaged = verifyListSum(tx, ino, sum)
			}
			return nil
		})
		if err != nil || !found {
			// Gone (or unreadable: the next load says why). Kernel
			// references lapse: the kernel is told the entry is gone.
			delete(f.nodes, ino)
			delete(f.jn.flagged, ino)
			continue
		}
		n.attr, n.target, n.stored, n.damaged, n.listUnchecked = a, target, stored, damaged, false
		n.orphan = a.Nlink == 0 && !a.IsDir()
		n.version = f.bump()
		if n.listGen != 0 {
			n.listGen = f.bump()
		}
		n.jparent, n.jname = 0, ""
		n.nextRead, n.aheadTo, n.smallRun = 0, 0, 0
		if damaged != nil {
			f.reportDamage(damaged)
		}
	}
	for _, e := range eff.entries {
		if e.new.Ino != 0 && e.new.Ino != e.old.Ino {
			p := f.entryPathLocked(e.parent, e.name)
			recs = append(recs, rec{OpCreate, e.new.Ino, e.new.Type, p})
			add(p)
		}
	}
	entryInos := make(map[Ino]bool)
	for _, e := range eff.entries {
		entryInos[e.parent] = true
		entryInos[e.new.Ino] = true
		entryInos[e.old.Ino] = true
	}
	for ino := range eff.inos {
		if entryInos[ino] {
			continue
		}
		n, loaded, err := f.peekNodeLocked(ino)
		if err != nil {
			continue
		}
		if p := f.nodePathLocked(n); p != "" {
			recs = append(recs, rec{OpWrite, ino, n.attr.Mode & syscall.S_IFMT, p})
			add(p)
		}
		if loaded {
			f.maybeForgetLocked(n)
		}
	}
	for _, r := range recs {
		f.jn.seq++
		f.jn.mem = append(f.jn.mem, Change{Seq: f.jn.seq, Time: now(), Op: r.op, Ino: r.ino, Type: r.typ, Path: r.p})
	}
	if len(recs) > 0 {
		if f.jn.wake != nil {
			close(f.jn.wake)
			f.jn.wake = nil
		}
		f.kickCommit()
	}
	f.cond.Broadcast()
	sort.Strings(paths)
	return paths
}

// entryPathLocked is the path of name in directory dir ("" if unknown).
func (f *FS) entryPathLocked(dir Ino, name string) string {
	d, loaded, err := f.peekNodeLocked(dir)
	if err != nil {
		return ""
	}
	p := f.childPathLocked(d, name)
	if loaded {
		f.maybeForgetLocked(d)
	}
	return p
}

// Touched is what a rewind changed, for the doors: the entries and
// inodes whose cached state the kernel must drop.
type Touched struct {
	Entries []TouchedEntry
	Inodes  []Ino
}

// TouchedEntry is a directory entry a rewind changed.
type TouchedEntry struct {
	Parent Ino
	Name   string
}

// RestoreOptions say what a restore puts back.
type RestoreOptions struct {
	// Paths limits the restore to these subtrees (workspace paths,
	// resolved at the snapshot and now); empty: the whole tree.
	Paths []string
}

// Restore puts the served workspace back as snapshot name has it, in one
// commit, while it is in use: every record changed since gets its
// version then back, and what did not exist then is removed. With
// opts.Paths, only the files under those paths (at the snapshot or now)
// are put back; directories outside them keep their other changes. The
// whole-tree restore costs in proportion to what changed since the
// snapshot; a path restore also reads the entries of the subtrees named.
func (f *FS) Restore(ctx context.Context, name string, opts RestoreOptions) (*RewindReport, *Touched, error) {
	if err := f.Sync(ctx); err != nil {
		return nil, nil, err
	}
	rep, touched, err := f.rewindLive(ctx, func(tx *chunkstore.Tx) (*rewindPlan, error) {
		snap, err := snapshotEpoch(tx, name)
		if err != nil {
			return nil, err
		}
		return restorePlan(tx, snap.Epoch, opts.Paths)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", name, err)
	}
	return rep, touched, nil
}

// restorePlan is the plan that puts back the state at epoch: of every
// changed record, or of those under paths.
func restorePlan(tx *chunkstore.Tx, epoch uint64, paths []string) (*rewindPlan, error) {
	keys, err := changedKeys(tx, epoch)
	if err != nil {
		return nil, err
	}
	at := versions.NewAt(tx.Tx, epoch)
	plan := &rewindPlan{}
	var in *subtreeSet
	if len(paths) > 0 {
		if in, err = subtrees(tx, at, paths); err != nil {
			return nil, err
		}
		plan.merge = make(map[Ino]bool)
	}
	for _, k := range keys {
		then, err := at.Get(k.bucket, k.key)
		if err != nil {
			return nil, err
		}
		k.then = bytes.Clone(then)
		if in != nil {
			ok, err := in.holds(tx, k)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		plan.targets = append(plan.targets, k)
	}
	if in != nil {
		// Directories outside the subtrees whose entries the restore
		// changes (the parents of the paths, or where a file was moved
		// to) keep their record, adjusted.
		for _, t := range plan.targets {
			if bytes.Equal(t.bucket, bucketDirents) && !in.inos[keyIno(t.key)] {
				plan.merge[keyIno(t.key)] = true
			}
		}
	}
	return plan, nil
}

// subtreeSet is the inodes under some paths, at an epoch and now.
type subtreeSet struct {
	inos  map[Ino]bool
	roots map[string]bool // the paths' own entries: parent ‖ name
}

func (s *subtreeSet) holds(tx *chunkstore.Tx, k rewindTarget) (bool, error) {
	if len(k.key) < 8 {
		return false, nil
	}
	if !bytes.Equal(k.bucket, bucketDirents) {
		return s.inos[keyIno(k.key)], nil
	}
	if s.inos[keyIno(k.key)] || s.roots[string(k.key)] {
		return true, nil
	}
	// An entry elsewhere that names a file of the subtrees, then or now:
	// the file moved in or out.
	for _, v := range [][]byte{k.then, nil} {
		if v == nil {
			now, err := tx.Sealed(bucketDirents).Get(k.key)
			if err != nil {
				return false, err
			}
			v = now
		}
		if v == nil {
			continue
		}
		if d, err := decodeDirent(v); err == nil && s.inos[d.Ino] {
			return true, nil
		}
	}
	return false, nil
}

// subtrees walks the subtrees paths name, at epoch and now.
func subtrees(tx *chunkstore.Tx, at *versions.At, paths []string) (*subtreeSet, error) {
	s := &subtreeSet{inos: make(map[Ino]bool), roots: make(map[string]bool)}
	live := func(bucket, key []byte) ([]byte, error) { return tx.Sealed(bucket).Get(key) }
	liveList := func(dir Ino, fn func(name string, d dirent) error) error {
		prefix := inoKey(dir)
		c := tx.Sealed(bucketDirents).Cursor()
		for k, v, err := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v, err = c.Next() {
			if err != nil {
				return err
			}
			d, err := decodeDirent(v)
			if err != nil {
				return err
			}
			if err := fn(string(k[8:]), d); err != nil {
				return err
			}
		}
		return nil
	}
	atList := func(dir Ino, fn func(name string, d dirent) error) error {
		return at.Prefix(bucketDirents, inoKey(dir), func(k, v []byte) error {
			d, err := decodeDirent(v)
			if err != nil {
				return err
			}
			return fn(string(k[8:]), d)
		})
	}
	for _, p := range paths {
		clean := path.Clean("/" + p)
		if clean == "/" {
			return nil, fmt.Errorf("path %s: the whole tree is a restore without paths: %w", p, syscall.EINVAL)
		}
		found := false
		for _, state := range []struct {
			get  func(bucket, key []byte) ([]byte, error)
			list func(Ino, func(string, dirent) error) error
		}{{live, liveList}, {at.Get, atList}} {
			parent, d, ok, err := resolveIn(state.get, clean)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			found = true
			s.roots[string(direntKey(parent, path.Base(clean)))] = true
			if err := walkIn(state.list, d, s.inos); err != nil {
				return nil, err
			}
		}
		if !found {
			return nil, fmt.Errorf("path %s: not in the snapshot nor now: %w", p, syscall.ENOENT)
		}
	}
	return s, nil
}

// resolveIn resolves a clean absolute path by its entries (symlinks are
// not followed: a path names what it names), returning the parent and
// the entry.
func resolveIn(get func(bucket, key []byte) ([]byte, error), p string) (Ino, dirent, bool, error) {
	cur := RootIno
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var d dirent
	for i, name := range parts {
		v, err := get(bucketDirents, direntKey(cur, name))
		if err != nil {
			return 0, dirent{}, false, err
		}
		if v == nil {
			return 0, dirent{}, false, nil
		}
		if d, err = decodeDirent(v); err != nil {
			return 0, dirent{}, false, err
		}
		if i < len(parts)-1 {
			if d.Type != syscall.S_IFDIR {
				return 0, dirent{}, false, nil
			}
			cur = d.Ino
		}
	}
	return cur, d, true, nil
}

// walkIn adds d and everything under it to set.
func walkIn(list func(Ino, func(string, dirent) error) error, d dirent, set map[Ino]bool) error {
	stack := []dirent{d}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		set[d.Ino] = true
		if d.Type != syscall.S_IFDIR {
			continue
		}
		if err := list(d.Ino, func(_ string, c dirent) error {
			stack = append(stack, c)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
