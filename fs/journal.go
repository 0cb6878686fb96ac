package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// The change journal gives every mutation, whichever door it came through,
// a sequence number, and keeps the recent ones in the store's journal
// bucket: the base of `computerfs fs changes`, of per-backend cursors and
// of exec audit.
//
// Namespace changes (create, remove, rename, link) are recorded as they
// happen, with the path they had then. Data, attribute and xattr changes
// are coalesced: a node carries flags, and one record per flag is made
// when the committer takes its snapshot, when a namespace change is about
// to move or remove the node, or when someone reads the journal. So a
// million small writes to one file cost one record, and the write path
// pays a flag test.
//
// Records reach the store in the same transaction as the changes they
// describe: a record is durable exactly when its change is. Pruning
// deletes the oldest records once there are more than JournalKeep, and a
// reader who asks for pruned ones gets ErrJournalPruned, never a silent
// gap.

// ChangeOp says what a journal record describes.
type ChangeOp uint8

// Change operations.
const (
	OpCreate ChangeOp = iota + 1 // a new inode: file, directory, symlink, node
	OpRemove                     // a name removed (unlink, rmdir, replaced by rename)
	OpRename                     // Path moved to NewPath
	OpLink                       // a new name (Path) for an existing inode
	OpWrite                      // file data changed: write, truncate, fallocate, copy
	OpAttr                       // mode, owner or times changed
	OpXattr                      // extended attributes changed
)

var opNames = [...]string{OpCreate: "create", OpRemove: "remove", OpRename: "rename", OpLink: "link", OpWrite: "write", OpAttr: "attr", OpXattr: "xattr"}

func (o ChangeOp) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", o)
}

// ParseChangeOp is the inverse of ChangeOp.String.
func ParseChangeOp(s string) (ChangeOp, bool) {
	for i, n := range opNames {
		if n == s && n != "" {
			return ChangeOp(i), true
		}
	}
	return 0, false
}

// Change is one journal record.
type Change struct {
	Seq  uint64
	Time int64 // unix nanoseconds
	Op   ChangeOp
	Ino  Ino
	Type uint32 // S_IFMT bits of the inode
	// Path is the workspace path ("/a/b") when the change was recorded;
	// "" when the inode had no name the journal knew.
	Path string
	// NewPath is the destination of a rename. For RENAME_EXCHANGE two
	// records are made, one per direction.
	NewPath string
}

// JournalKeep is how many records the journal keeps at least; pruning
// starts once it holds an eighth more.
const JournalKeep = 200_000

// ErrJournalPruned says records after the asked sequence number were
// pruned: the reader must rescan what it tracks, then resume from
// ChangeList.First-1.
var ErrJournalPruned = errors.New("journal records were pruned")

var bucketJournal = []byte("journal")

const (
	jWrite uint8 = 1 << iota
	jAttr
	jXattr
)

// journal is the in-memory side of the change journal, under FS.mu.
type journal struct {
	seq     uint64        // last sequence number handed out
	first   uint64        // oldest record in the store, 0 if none
	mem     []Change      // records not yet committed, in order
	flagged map[Ino]*node // nodes with coalesced changes pending
	wake    chan struct{} // closed when records are added; nil if no one waits
	keep    uint64
}

func (j *journal) init() {
	j.flagged = make(map[Ino]*node)
	j.keep = JournalKeep
}

// loadJournal reads the journal's bounds. Called from load's transaction.
func (f *FS) loadJournal(tx *chunkstore.Tx) error {
	var b *bolt.Bucket
	if f.fork != nil {
		b = tx.Sealed(bucketJournal).Raw() // the fork's own
	} else {
		var err error
		if b, err = tx.CreateBucketIfNotExists(bucketJournal); err != nil {
			return err
		}
	}
	c := b.Cursor()
	if k, _ := c.First(); k != nil {
		f.jn.first, _ = u64(k)
	}
	if k, _ := c.Last(); k != nil {
		f.jn.seq, _ = u64(k)
	}
	return nil
}

// recordLocked appends a record.
func (f *FS) recordLocked(op ChangeOp, n *node, p, newPath string) {
	f.jn.seq++
	f.jn.mem = append(f.jn.mem, Change{Seq: f.jn.seq, Time: now(), Op: op, Ino: n.attr.Ino, Type: n.attr.Mode & syscall.S_IFMT, Path: p, NewPath: newPath})
	if f.jn.wake != nil {
		close(f.jn.wake)
		f.jn.wake = nil
	}
}

// flagLocked notes a coalesced change of n.
func (f *FS) flagLocked(n *node, bit uint8) {
	if n.jflags&bit == 0 {
		n.jflags |= bit
		f.jn.flagged[n.attr.Ino] = n
	}
}

// flushFlagsLocked turns n's coalesced changes into records, with the
// path n has now. Changes to an inode with no name left are not recorded:
// nobody can see them.
func (f *FS) flushFlagsLocked(n *node) {
	flags := n.jflags
	if flags == 0 {
		return
	}
	n.jflags = 0
	delete(f.jn.flagged, n.attr.Ino)
	if n.attr.Nlink == 0 {
		return
	}
	p := f.nodePathLocked(n)
	for _, c := range [...]struct {
		bit uint8
		op  ChangeOp
	}{{jWrite, OpWrite}, {jAttr, OpAttr}, {jXattr, OpXattr}} {
		if flags&c.bit != 0 {
			f.recordLocked(c.op, n, p, "")
		}
	}
}

func (f *FS) flushAllFlagsLocked() {
	for _, n := range f.jn.flagged {
		f.flushFlagsLocked(n)
	}
}

// nameLocked remembers that n is called name in directory parent, for the
// paths of its later records.
func nameNode(n *node, parent Ino, name string) {
	n.jparent, n.jname = parent, name
}

// nodePathLocked returns n's workspace path, or "" when it has no name
// the journal can find.
func (f *FS) nodePathLocked(n *node) string {
	if n.attr.IsDir() {
		return f.dirPathLocked(n)
	}
	if n.jname == "" {
		return ""
	}
	d, loaded, err := f.peekNodeLocked(n.jparent)
	if err != nil {
		return ""
	}
	p := f.dirPathLocked(d)
	if loaded {
		f.maybeForgetLocked(d)
	}
	if p == "" {
		return ""
	}
	return path.Join(p, n.jname)
}

// childPathLocked is the path of name in directory d.
func (f *FS) childPathLocked(d *node, name string) string {
	p := f.dirPathLocked(d)
	if p == "" {
		return ""
	}
	return path.Join(p, name)
}

// peekNodeLocked returns the node of ino, and whether this call loaded it
// into the cache (the caller then forgets it when done).
func (f *FS) peekNodeLocked(ino Ino) (*node, bool, error) {
	if n := f.nodes[ino]; n != nil {
		return n, false, nil
	}
	n, err := f.getNodeLocked(ino)
	return n, err == nil, err
}

// dirPathLocked walks up from directory d through the parents that
// directories record. A directory's own name comes from its node when
// known, else from a scan of its parent.
func (f *FS) dirPathLocked(d *node) string {
	var parts []string
	var loaded []*node
	defer func() {
		for _, n := range loaded {
			f.maybeForgetLocked(n)
		}
	}()
	cur := d
	for depth := 0; cur.attr.Ino != RootIno; depth++ {
		if depth > maxDepth || cur.attr.Nlink == 0 {
			return ""
		}
		parent := cur.attr.Parent
		name := ""
		if cur.jname != "" && cur.jparent == parent {
			name = cur.jname
		} else {
			name = f.nameInDirLocked(parent, cur.attr.Ino)
			if name == "" {
				return ""
			}
			nameNode(cur, parent, name)
		}
		parts = append(parts, name)
		p, wasLoaded, err := f.peekNodeLocked(parent)
		if err != nil {
			return ""
		}
		if wasLoaded {
			loaded = append(loaded, p)
		}
		cur = p
	}
	var b strings.Builder
	if len(parts) == 0 {
		return "/"
	}
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(parts[i])
	}
	return b.String()
}

// maxDepth bounds path walks: a longer chain of parents means damage.
const maxDepth = 4096

// nameInDirLocked finds the name of ino in directory dir, overlay first.
func (f *FS) nameInDirLocked(dir, ino Ino) string {
	d := f.nodes[dir]
	if d != nil {
		for name, ch := range d.entries {
			if ch.d.Ino == ino {
				return name
			}
		}
	}
	found := ""
	f.view(func(tx *chunkstore.Tx) error {
		prefix := inoKey(dir)
		c := tx.Sealed(bucketDirents).Cursor()
		for k, v, err := c.SeekWithin(prefix, prefix); k != nil; k, v, err = c.NextWithin(prefix) {
			if err != nil {
				f.reportDamage(err) // a path is a hint: look on
				continue
			}
			de, err := decodeDirent(v)
			if err != nil || de.Ino != ino {
				continue
			}
			name := string(k[8:])
			if d != nil {
				if ch, ok := d.entries[name]; ok && ch.d.Ino != ino {
					continue // overwritten or removed since
				}
			}
			found = name
			return nil
		}
		return nil
	})
	return found
}

// encodeChange is a record's value in the journal bucket (the key is the
// big-endian sequence number): uvarint time, op, uvarint ino, uvarint
// type, then the two paths, each a uvarint length and its bytes.
func encodeChange(c *Change) []byte {
	b := make([]byte, 0, 24+len(c.Path)+len(c.NewPath))
	b = binary.AppendUvarint(b, uint64(c.Time))
	b = append(b, byte(c.Op))
	b = binary.AppendUvarint(b, uint64(c.Ino))
	b = binary.AppendUvarint(b, uint64(c.Type))
	b = binary.AppendUvarint(b, uint64(len(c.Path)))
	b = append(b, c.Path...)
	b = binary.AppendUvarint(b, uint64(len(c.NewPath)))
	b = append(b, c.NewPath...)
	return b
}

func decodeChange(seq uint64, b []byte) (Change, error) {
	c := Change{Seq: seq}
	bad := fmt.Errorf("%w: bad journal record %d", chunkstore.ErrCorrupt, seq)
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	t, ok := next()
	if !ok || len(b) == 0 {
		return c, bad
	}
	c.Time = int64(t)
	c.Op = ChangeOp(b[0])
	b = b[1:]
	ino, ok1 := next()
	typ, ok2 := next()
	if !ok1 || !ok2 {
		return c, bad
	}
	c.Ino, c.Type = Ino(ino), uint32(typ)
	str := func() (string, bool) {
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return "", false
		}
		s := string(b[:l])
		b = b[l:]
		return s, true
	}
	if c.Path, ok = str(); !ok {
		return c, bad
	}
	if c.NewPath, ok = str(); !ok {
		return c, bad
	}
	return c, nil
}

// applyJournal writes a snapshot's records and prunes old ones. It returns
// the oldest record kept.
func applyJournal(tx *chunkstore.Tx, recs []Change, keep uint64) (first uint64, err error) {
	b := tx.Sealed(bucketJournal)
	if len(recs) > 0 {
		// Keys grow: filling pages completely costs less space.
		b.Raw().FillPercent = 1.0
	}
	for i := range recs {
		if err := b.Put(inoKey(Ino(recs[i].Seq)), encodeChange(&recs[i])); err != nil {
			return 0, err
		}
	}
	c := b.Raw().Cursor() // keys only
	k, _ := c.First()
	if k == nil {
		return 0, nil
	}
	first, _ = u64(k)
	lk, _ := c.Last()
	last, _ := u64(lk)
	if last-first+1 <= keep+keep/8 {
		return first, nil
	}
	// The keys to drop are listed first, then deleted one by one by key.
	// Deleting at a cursor and asking First again, as this did, is
	// quadratic: bbolt removes emptied leaves only when the transaction
	// commits, and First walks over every one emptied so far (a prune of
	// keep/8 = 25,000 records took ~100 ms of CPU in one commit).
	cut := last - keep + 1
	var keys []byte // copies: k points into the store's pages
	var ends []int
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		seq, _ := u64(k)
		if seq >= cut {
			break
		}
		keys = append(keys, k...)
		ends = append(ends, len(keys))
	}
	raw := b.Raw()
	start := 0
	for _, end := range ends {
		if err := raw.Delete(keys[start:end]); err != nil {
			return 0, err
		}
		start = end
	}
	return cut, nil
}

// ChangeList is a page of the journal.
type ChangeList struct {
	Changes []Change
	// Next is the sequence number to pass as since for the next page.
	Next uint64
	// Last is the newest sequence number handed out so far.
	Last uint64
	// First is the oldest record still kept (0 when there is none).
	First uint64
}

// Changes returns up to limit records after sequence number since,
// committed or not: a change shows up as soon as it is made. Coalesced
// data changes are recorded first, so that a write that returned is
// listed.
func (f *FS) Changes(since uint64, limit int) (ChangeList, error) {
	if limit <= 0 {
		limit = 1000
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushAllFlagsLocked()
	out := ChangeList{Next: since, Last: f.jn.seq, First: f.jn.first}
	if since > f.jn.seq {
		return out, fmt.Errorf("sequence %d is in the future (last is %d): %w", since, f.jn.seq, syscall.EINVAL)
	}
	memFirst := f.jn.seq + 1
	if len(f.jn.mem) > 0 {
		memFirst = f.jn.mem[0].Seq
	}
	oldest := f.jn.first
	if oldest == 0 {
		oldest = memFirst
	}
	if since+1 < oldest && since < f.jn.seq {
		return out, fmt.Errorf("changes after %d: the oldest kept is %d: %w", since, oldest, ErrJournalPruned)
	}
	if since+1 < memFirst {
		err := f.view(func(tx *chunkstore.Tx) error {
			c := tx.Sealed(bucketJournal).Cursor()
			for k, v, err := c.Seek(inoKey(Ino(since + 1))); k != nil && len(out.Changes) < limit; k, v, err = c.Next() {
				if err != nil {
					return err
				}
				seq, _ := u64(k)
				if seq >= memFirst {
					break
				}
				ch, err := decodeChange(seq, v)
				if err != nil {
					return err
				}
				out.Changes = append(out.Changes, ch)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	for i := range f.jn.mem {
		if len(out.Changes) >= limit {
			break
		}
		if f.jn.mem[i].Seq > since && (len(out.Changes) == 0 || f.jn.mem[i].Seq > out.Changes[len(out.Changes)-1].Seq) {
			out.Changes = append(out.Changes, f.jn.mem[i])
		}
	}
	if len(out.Changes) > 0 {
		out.Next = out.Changes[len(out.Changes)-1].Seq
	}
	return out, nil
}

// LastChange returns the newest sequence number, recording pending
// coalesced changes first.
func (f *FS) LastChange() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushAllFlagsLocked()
	return f.jn.seq
}

// WaitChanges blocks until a record newer than since exists, or ctx ends.
// Coalesced changes are recorded at the latest by the next commit tick.
func (f *FS) WaitChanges(ctx context.Context, since uint64) error {
	for {
		f.mu.Lock()
		if f.jn.seq > since {
			f.mu.Unlock()
			return nil
		}
		if f.closed {
			f.mu.Unlock()
			return syscall.EIO
		}
		if f.jn.wake == nil {
			f.jn.wake = make(chan struct{})
		}
		wake := f.jn.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-f.stop:
			return syscall.EIO
		}
	}
}
