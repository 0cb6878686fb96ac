package fs

import (
	"fmt"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
)

// node is an inode in memory: its attributes and the overlays of its
// uncommitted changes. Nodes are cached while the kernel references them,
// while they are open, and while they have uncommitted changes.
type node struct {
	attr   Attr
	target string // symlink target

	attrGen uint64 // gen of the last uncommitted attribute change, 0 if clean
	// version changes with every change to the inode (data, size,
	// attributes): the gen of the last one, or a fresh gen when the node
	// was loaded, so that a node dropped and reloaded never matches a
	// version taken before (see OpenVersion, ReplaceIf).
	version uint64

	lookups uint64 // kernel references (FUSE lookup count)
	opens   int    // open handles

	// entries overlays a directory's committed entries: name → change.
	// A change with Ino 0 is a removal.
	entries map[string]*entryChange
	// listGen changes with the directory's entries (see DirGen); 0 until
	// asked for. It is not stored: a reloaded node gets a fresh one.
	listGen uint64
	// xattrs overlays committed extended attributes.
	xattrs map[string]*xattrChange
	// nextRead is where a sequential read would go on, and chunks below
	// aheadTo have been queued for read-ahead since the reading became
	// sequential (see readAheadLocked). smallRun counts the reads
	// smaller than readAheadMin in a row that each began where the last
	// one ended.
	nextRead int64
	aheadTo  uint64
	smallRun int
	// slots are the chunks of a file that differ from the store.
	slots map[uint64]*slot
	// trunc: committed chunks at or past this index are stale (the file
	// was truncated); noTrunc when there is no such truncation.
	// truncCommitting is the same for the truncation in the commit under
	// way; reads honour both.
	trunc           uint64
	truncCommitting uint64
	// truncs counts truncations that shrank the file, so that a chunk
	// loaded from the store while mu was released can tell it went stale.
	truncs uint64
	// nlink 0 and persisted as an orphan: the inode is kept until released.
	orphan bool
	// tmpfile: made by O_TMPFILE and not linked yet, so Link may name it.
	tmpfile bool
	// stored is how many chunks of a regular file the store holds, as
	// of the last commit (its chunk list's records).
	stored uint64
	// damaged is why the file's committed data cannot be trusted (its
	// chunk list disagrees with its summary, or holds a damaged record):
	// every read of a committed chunk fails with it (EIO).
	damaged error
	// listUnchecked: the file's chunk list has not been checked against
	// the summary in its inode record since the node was loaded. The
	// check is one walk of the list; it runs before the first read of a
	// committed chunk (storedChunkLocked), not at the load, which a stat
	// or a lookup makes and which needs only the summary's count.
	listUnchecked bool

	// jflags are coalesced changes not yet in the journal; jparent and
	// jname the last name the node was known by, for journal paths.
	jflags  uint8
	jparent Ino
	jname   string
}

type entryChange struct {
	d   dirent
	gen uint64
}

type xattrChange struct {
	val []byte // nil: removed
	gen uint64
}

func (n *node) isDirty() bool {
	return n.attrGen != 0 || len(n.entries) > 0 || len(n.xattrs) > 0 || len(n.slots) > 0 || n.trunc != noTrunc || n.truncCommitting != noTrunc
}

// getNodeLocked returns the cached node or loads it from the store.
func (f *FS) getNodeLocked(ino Ino) (*node, error) {
	if n := f.nodes[ino]; n != nil {
		return n, nil
	}
	if f.dead[ino] {
		return nil, syscall.ENOENT
	}
	var n *node
	err := f.view(func(tx *chunkstore.Tx) (err error) {
		n, err = f.loadNodeTx(tx, ino)
		return err
	})
	if err != nil {
		return nil, err
	}
	f.addNodeLocked(n)
	return n, nil
}

// loadNodeTx reads ino's node from the store, for addNodeLocked. Call
// with mu held.
func (f *FS) loadNodeTx(tx *chunkstore.Tx, ino Ino) (*node, error) {
	v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, syscall.ENOENT
	}
	a, target, sum, err := decodeInodeSum(ino, v)
	if err != nil {
		f.log.Error("corrupt inode record", "ino", ino, "err", err)
		return nil, syscall.EIO
	}
	n := &node{attr: a, target: target, trunc: noTrunc, truncCommitting: noTrunc, version: f.bump()}
	n.orphan = a.Nlink == 0 && !a.IsDir()
	switch {
	case !a.IsRegular():
	case sum.Known:
		// Sealed with the record: the count st_blocks needs. The list
		// is checked against it before it is read.
		n.stored, n.listUnchecked = sum.Count, true
	default:
		// A record without a summary (version 1): the list is counted,
		// and taken as it is.
		n.stored, n.damaged = verifyListSum(tx, ino, sum)
	}
	return n, nil
}

// addNodeLocked caches a node loadNodeTx read.
func (f *FS) addNodeLocked(n *node) {
	if n.damaged != nil {
		f.reportDamage(n.damaged)
	}
	f.nodes[n.attr.Ino] = n
}

// attrOfLocked is n's attributes as the FS hands them out: Blocks
// filled in.
func (f *FS) attrOfLocked(n *node) Attr {
	a := n.attr
	a.Blocks = f.blocksLocked(n)
	return a
}

// blocksLocked is st_blocks (512-byte units) of n: for a regular file,
// its stored chunks, a hole counting nothing, each chunk counted whole
// but the total never above the size rounded up to 4 KiB (the last chunk
// is short). Chunks written since the last commit count as if each filled
// a hole, until that commit: the count is then exact. Other types: their
// size.
func (f *FS) blocksLocked(n *node) uint64 {
	chunks := n.stored
	if len(n.slots) == 0 {
		return blocksOf(&n.attr, chunks, f.chunkSize) // spares a map iterator's setup
	}
	for _, s := range n.slots {
		if !s.hole {
			chunks++
		}
	}
	return blocksOf(&n.attr, chunks, f.chunkSize)
}

// blocksOf is st_blocks of a file of attributes a whose list holds
// chunks chunks (see blocksLocked).
func blocksOf(a *Attr, chunks uint64, chunkSize int) uint64 {
	if !a.IsRegular() {
		return (a.Size + 511) / 512
	}
	bytes := min(chunks*uint64(chunkSize), (a.Size+4095)&^4095)
	return bytes / 512
}

// checkListTx checks n's chunk list against the summary its inode
// record holds now, in tx, once after the node's load (listUnchecked): a
// list that disagrees, or holds a damaged record, makes n.damaged, which
// every read of a committed chunk then returns (EIO). The count is not
// taken from the walk: n.stored follows the commits since the load, and
// matches the summary when the list does. Call with mu held.
func (f *FS) checkListTx(tx *chunkstore.Tx, n *node) error {
	ino := n.attr.Ino
	v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
	if err != nil {
		return err
	}
	if v == nil {
		// Not committed yet, or gone since: no committed list to read.
		n.listUnchecked = false
		return nil
	}
	_, _, sum, err := decodeInodeSum(ino, v)
	if err != nil {
		f.log.Error("corrupt inode record", "ino", ino, "err", err)
		return syscall.EIO
	}
	_, damaged := verifyListSum(tx, ino, sum)
	n.listUnchecked = false
	if damaged != nil {
		n.damaged = damaged
		f.reportDamage(damaged)
	}
	return nil
}

// verifyListSum checks ino's chunk list against its summary (from its
// inode record) and returns its number of records, and what is wrong if
// they disagree. A record without a summary (version 1) takes the list
// as it is.
func verifyListSum(tx *chunkstore.Tx, ino Ino, want inodeSum) (uint64, error) {
	got, err := scanListSum(tx, ino)
	if err != nil || !want.Known {
		return got.Count, err
	}
	if got != want.listSum {
		return got.Count, &sealed.DamageError{Bucket: string(bucketInodes), Key: inoKey(ino),
			Why: fmt.Sprintf("the file's chunk list has %d records (mix %016x), its inode's summary says %d (mix %016x): a record was lost or changed", got.Count, got.Mix, want.Count, want.Mix)}
	}
	return got.Count, nil
}

// markDirtyLocked records an attribute change of n.
func (f *FS) markDirtyLocked(n *node) {
	if n.attr.Parent == 0 && n.jname != "" && !n.attr.IsDir() {
		n.attr.Parent = n.jparent // a record from before files had parent hints
	}
	n.attrGen = f.bump()
	n.version = n.attrGen
	f.dirty[n.attr.Ino] = n
}

// touchLocked sets ctime (and mtime when modified) to now and marks n dirty.
func (f *FS) touchLocked(n *node, modified bool) {
	t := now()
	n.attr.Ctime = t
	if modified {
		n.attr.Mtime = t
		if !n.attr.IsDir() {
			f.flagLocked(n, jWrite)
		}
	}
	f.markDirtyLocked(n)
}

// maybeForgetLocked drops n from memory, or schedules its deletion, once
// nothing references it.
func (f *FS) maybeForgetLocked(n *node) {
	if n.lookups > 0 || n.opens > 0 || n.attr.Ino == RootIno {
		return
	}
	if n.attr.Nlink == 0 {
		f.killLocked(n)
		return
	}
	if !n.isDirty() {
		f.flushFlagsLocked(n)
		delete(f.nodes, n.attr.Ino)
	}
}

// killLocked schedules the deletion of an unlinked, unreferenced inode.
func (f *FS) killLocked(n *node) {
	ino := n.attr.Ino
	for idx, s := range n.slots {
		f.supersedeLocked(s)
		delete(n.slots, idx)
	}
	n.attrGen = 0
	n.entries, n.xattrs = nil, nil
	n.jflags = 0
	delete(f.jn.flagged, ino)
	delete(f.dirty, ino)
	delete(f.nodes, ino)
	f.dead[ino] = true
	f.bump()
}

// pinLocked keeps n in the cache until the returned func runs (with mu
// held). A call that releases mu in the middle needs it: a node dropped
// from the cache meanwhile would take the call's changes with it, out of
// sight of everyone else.
func (f *FS) pinLocked(n *node) func() {
	n.opens++
	return func() {
		if n.opens > 0 {
			n.opens--
		}
		f.maybeForgetLocked(n)
	}
}

// Forget drops kernel references (FUSE FORGET).
func (f *FS) Forget(ino Ino, nlookup uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[ino]
	if n == nil {
		return
	}
	if nlookup >= n.lookups {
		n.lookups = 0
	} else {
		n.lookups -= nlookup
	}
	f.maybeForgetLocked(n)
}

// GetAttr returns an inode's attributes.
func (f *FS) GetAttr(ino Ino) (Attr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, err
	}
	a := f.attrOfLocked(n)
	f.maybeForgetLocked(n)
	return a, nil
}

// SetAttrIn says which attributes to change; nil fields stay as they are.
type SetAttrIn struct {
	Mode  *uint32 // permission bits (type bits are ignored)
	Uid   *uint32
	Gid   *uint32
	Size  *uint64
	Atime *int64 // nanoseconds; UtimeNow for the current time
	Mtime *int64
	Ctime *int64
	// KillSuidGid clears setuid and setgid (a write or truncate by an
	// unprivileged caller).
	KillSuidGid bool
}

// UtimeNow asks SetAttr for the current time.
const UtimeNow int64 = -1 << 62

// SetAttr changes attributes (chmod, chown, truncate, utimens).
func (f *FS) SetAttr(c Caller, ino Ino, in SetAttrIn) (Attr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return Attr{}, syscall.EROFS
	}
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, err
	}
	// A truncation may release mu.
	defer f.pinLocked(n)()
	if in.Size != nil {
		if n.attr.IsDir() {
			return Attr{}, syscall.EISDIR
		}
		if !n.attr.IsRegular() {
			return Attr{}, syscall.EINVAL
		}
		if err := f.truncateLocked(n, *in.Size); err != nil {
			return Attr{}, err
		}
	}
	t := now()
	if in.Mode != nil {
		n.attr.Mode = n.attr.Mode&syscall.S_IFMT | *in.Mode&^uint32(syscall.S_IFMT)
	}
	if in.Uid != nil {
		n.attr.Uid = *in.Uid
	}
	if in.Gid != nil {
		n.attr.Gid = *in.Gid
	}
	if (in.Uid != nil || in.Gid != nil) && in.Mode == nil && !n.attr.IsDir() {
		// chown by anyone clears setuid, and setgid when group-executable,
		// as the kernel does for local filesystems.
		n.attr.Mode &^= syscall.S_ISUID
		if n.attr.Mode&0o010 != 0 {
			n.attr.Mode &^= syscall.S_ISGID
		}
	}
	if in.KillSuidGid {
		n.attr.Mode &^= syscall.S_ISUID
		if n.attr.Mode&0o010 != 0 {
			n.attr.Mode &^= syscall.S_ISGID
		}
	}
	pick := func(v int64) int64 {
		if v == UtimeNow {
			return t
		}
		return v
	}
	if in.Atime != nil {
		n.attr.Atime = pick(*in.Atime)
	}
	if in.Mtime != nil {
		n.attr.Mtime = pick(*in.Mtime)
	}
	n.attr.Ctime = t
	if in.Ctime != nil {
		n.attr.Ctime = pick(*in.Ctime)
	}
	if in.Mode != nil || in.Uid != nil || in.Gid != nil || in.Atime != nil || in.Mtime != nil || in.Ctime != nil {
		f.flagLocked(n, jAttr)
	}
	if in.Size != nil && n.trunc != noTrunc {
		f.intentTruncLocked(n)
	}
	f.markDirtyLocked(n)
	return f.attrOfLocked(n), nil
}
