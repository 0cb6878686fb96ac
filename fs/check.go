package fs

import (
	"bytes"
	"fmt"
	"sort"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
)

// CheckReport is what fsck found, and what it mended when asked to.
type CheckReport struct {
	Inodes, Dirents, FileChunks int
	Chunks                      chunkstore.Stats
	Problems                    []string
	Repaired                    []string
}

// Clean reports whether no damage was found.
func (r *CheckReport) Clean() bool { return len(r.Problems) == 0 }

// Check verifies a closed workspace: every chunk hash and reference count,
// and the consistency of inodes, entries and chunk lists. With repair it
// fixes what can be fixed without guessing: reference counts, unreachable
// bodies, entries and chunk references to missing objects, link counts,
// and inodes no directory reaches (moved to /lost+found).
func Check(store *chunkstore.Store, repair bool) (*CheckReport, error) {
	rep := &CheckReport{}
	run := store.View
	if repair {
		run = store.Update
	}
	err := run(func(tx *chunkstore.Tx) error {
		c := checker{tx: tx, rep: rep, repair: repair, cs: uint64(store.ChunkSize())}
		return c.run()
	})
	return rep, err
}

type checker struct {
	tx     *chunkstore.Tx
	rep    *CheckReport
	repair bool
	cs     uint64

	inodes map[Ino]*Attr
}

func (c *checker) problem(format string, args ...any) {
	c.rep.Problems = append(c.rep.Problems, fmt.Sprintf(format, args...))
}

func (c *checker) fixed(format string, args ...any) {
	c.rep.Repaired = append(c.rep.Repaired, fmt.Sprintf(format, args...))
}

func (c *checker) run() error {
	for _, b := range [][]byte{bucketInodes, bucketDirents, bucketChunks, bucketXattrs, bucketOrphans} {
		if c.tx.Bucket(b) == nil {
			c.problem("bucket %q missing", b)
			return nil
		}
	}
	stored := make(map[chunkstore.ID]uint64)
	problems, err := c.tx.Check(func(ci chunkstore.ChunkInfo) { stored[ci.ID] = ci.Refs })
	if err != nil {
		return err
	}
	damaged := make(map[chunkstore.ID]bool)
	for _, p := range problems {
		c.problem("%s", p)
		if p.ID != (chunkstore.ID{}) {
			damaged[p.ID] = true
		}
	}
	if c.repair {
		for id := range damaged {
			if err := c.tx.DeleteChunk(id); err != nil {
				return err
			}
			c.fixed("deleted damaged chunk %s (files referring to it now read zeros there)", id.Short())
		}
		if n, freed, err := c.tx.DeleteUnreachableBodies(); err != nil {
			return err
		} else if n > 0 {
			c.fixed("deleted %d unreachable bodies (%d bytes)", n, freed)
		}
	}

	// Inodes.
	c.inodes = make(map[Ino]*Attr)
	var maxIno Ino
	var badInodes [][]byte
	c.tx.Bucket(bucketInodes).ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			c.problem("inode key of %d bytes", len(k))
			badInodes = append(badInodes, bytes.Clone(k))
			return nil
		}
		ino := keyIno(k)
		a, _, err := decodeInode(ino, v)
		if err != nil {
			c.problem("%v", err)
			badInodes = append(badInodes, bytes.Clone(k))
			return nil
		}
		c.inodes[ino] = &a
		maxIno = max(maxIno, ino)
		return nil
	})
	c.rep.Inodes = len(c.inodes)
	if c.repair {
		for _, k := range badInodes {
			if err := c.tx.Bucket(bucketInodes).Delete(k); err != nil {
				return err
			}
			c.fixed("deleted undecodable inode record %x", k)
		}
	}
	root := c.inodes[RootIno]
	if root == nil || !root.IsDir() {
		c.problem("root directory missing or not a directory")
		return nil
	}
	if next, ok := u64(c.tx.Bucket(bucketMeta).Get(keyNextIno)); !ok || Ino(next) <= maxIno {
		c.problem("next inode number %d is not above the largest in use (%d)", next, maxIno)
		if c.repair {
			if err := c.tx.Bucket(bucketMeta).Put(keyNextIno, inoKey(maxIno+1)); err != nil {
				return err
			}
			c.fixed("set next inode number to %d", maxIno+1)
		}
	}

	// Directory entries.
	links := make(map[Ino]uint32)
	subdirs := make(map[Ino]uint32)
	children := make(map[Ino][]Ino)
	var badDirents [][]byte
	type retype struct {
		key []byte
		d   dirent
	}
	var retyped []retype
	reparented := make(map[Ino][]Ino) // directory → the directories naming it
	c.tx.Bucket(bucketDirents).ForEach(func(k, v []byte) error {
		c.rep.Dirents++
		if len(k) <= 8 {
			c.problem("directory entry key of %d bytes", len(k))
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		parent, name := keyIno(k), string(k[8:])
		d, err := decodeDirent(v)
		if err != nil {
			c.problem("entry %q in directory %d: %v", name, parent, err)
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		if err := checkName(name); err != nil {
			c.problem("entry %q in directory %d: invalid name", name, parent)
		}
		pa := c.inodes[parent]
		if pa == nil || !pa.IsDir() {
			c.problem("entry %q is in %d, which is not a directory", name, parent)
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		ca := c.inodes[d.Ino]
		if ca == nil {
			c.problem("entry %q in directory %d names missing inode %d", name, parent, d.Ino)
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		if ca.Mode&syscall.S_IFMT != d.Type {
			c.problem("entry %q in directory %d has type %#o, inode %d is %#o", name, parent, d.Type, d.Ino, ca.Mode&syscall.S_IFMT)
			retyped = append(retyped, retype{bytes.Clone(k), dirent{Ino: d.Ino, Type: ca.Mode & syscall.S_IFMT}})
		}
		links[d.Ino]++
		if ca.IsDir() {
			subdirs[parent]++
			if ca.Parent != parent {
				c.problem("directory %d is named in %d but its parent is %d", d.Ino, parent, ca.Parent)
				reparented[d.Ino] = append(reparented[d.Ino], parent)
			}
		}
		children[parent] = append(children[parent], d.Ino)
		return nil
	})
	if c.repair {
		for _, k := range badDirents {
			if err := c.tx.Bucket(bucketDirents).Delete(k); err != nil {
				return err
			}
			c.fixed("deleted bad directory entry %q", k)
		}
		for _, r := range retyped {
			if err := c.tx.Bucket(bucketDirents).Put(r.key, encodeDirent(r.d)); err != nil {
				return err
			}
			c.fixed("set the type of entry %q to that of inode %d", r.key[8:], r.d.Ino)
		}
		// The inode's parent is the hint; a directory named exactly once
		// takes the directory that names it as its parent.
		for ino, parents := range reparented {
			if a := c.inodes[ino]; a != nil && len(parents) == 1 && links[ino] == 1 {
				a.Parent = parents[0]
				if err := c.putAttr(a); err != nil {
					return err
				}
				c.fixed("set the parent of directory %d to %d", ino, parents[0])
			}
		}
	}

	// Orphans and reachability.
	orphans := make(map[Ino]bool)
	c.tx.Bucket(bucketOrphans).ForEach(func(k, _ []byte) error {
		if len(k) == 8 {
			orphans[keyIno(k)] = true
		}
		return nil
	})
	reached := map[Ino]bool{RootIno: true}
	queue := []Ino{RootIno}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, ch := range children[d] {
			if !reached[ch] {
				reached[ch] = true
				if a := c.inodes[ch]; a != nil && a.IsDir() {
					queue = append(queue, ch)
				}
			}
		}
	}
	inos := make([]Ino, 0, len(c.inodes))
	for ino := range c.inodes {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	var lost []Ino
	for _, ino := range inos {
		a := c.inodes[ino]
		want := links[ino]
		if a.IsDir() {
			want = 2 + subdirs[ino]
			if ino != RootIno && links[ino] > 1 {
				c.problem("directory %d has %d names", ino, links[ino])
			}
		}
		switch {
		case orphans[ino] && a.Nlink == 0 && links[ino] == 0:
			// Unlinked while open; purged at the next mount.
		case !reached[ino]:
			c.problem("inode %d (mode %#o) is not reachable from the root", ino, a.Mode)
			lost = append(lost, ino)
		case a.Nlink != want:
			c.problem("inode %d has link count %d, but %d names", ino, a.Nlink, want)
			if c.repair {
				a.Nlink = want
				if err := c.putAttr(a); err != nil {
					return err
				}
				c.fixed("set link count of inode %d to %d", ino, want)
			}
		}
	}
	for ino := range orphans {
		if a := c.inodes[ino]; a == nil || a.Nlink != 0 {
			c.problem("orphan record for inode %d, which is missing or linked", ino)
			if c.repair {
				if err := c.tx.Bucket(bucketOrphans).Delete(inoKey(ino)); err != nil {
					return err
				}
				c.fixed("dropped orphan record of inode %d", ino)
			}
		}
	}
	if c.repair && len(lost) > 0 {
		if err := c.relinkLost(lost, children, links); err != nil {
			return err
		}
	}

	// Chunk lists and reference counts.
	counted := make(map[chunkstore.ID]uint64)
	var badChunks [][]byte
	c.tx.Bucket(bucketChunks).ForEach(func(k, v []byte) error {
		c.rep.FileChunks++
		if len(k) != 16 || len(v) != chunkstore.IDSize {
			c.problem("chunk list record %x is malformed", k)
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		}
		ino, idx := keyIno(k), keyIno(k[8:])
		id := chunkstore.ID(v)
		a := c.inodes[ino]
		switch {
		case a == nil || !a.IsRegular():
			c.problem("chunk %d of inode %d: not a regular file", idx, ino)
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		case uint64(idx)*c.cs >= a.Size:
			c.problem("chunk %d of inode %d lies past its size %d", idx, ino, a.Size)
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		case stored[id] == 0 || damaged[id]:
			c.problem("chunk %d of inode %d refers to missing or damaged chunk %s", idx, ino, id.Short())
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		}
		counted[id]++
		return nil
	})
	if c.repair {
		for _, k := range badChunks {
			if err := c.tx.Bucket(bucketChunks).Delete(k); err != nil {
				return err
			}
			c.fixed("dropped chunk list record %x", k)
		}
	}
	ids := make([]chunkstore.ID, 0, len(stored))
	for id := range stored {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	for _, id := range ids {
		if damaged[id] {
			continue
		}
		if refs := stored[id]; refs != counted[id] {
			c.problem("chunk %s has reference count %d, but %d references", id.Short(), refs, counted[id])
			if c.repair {
				if err := c.tx.SetRefs(id, counted[id]); err != nil {
					return err
				}
				c.fixed("set reference count of chunk %s to %d", id.Short(), counted[id])
			}
		}
	}
	var badXattrs [][]byte
	c.tx.Bucket(bucketXattrs).ForEach(func(k, _ []byte) error {
		if len(k) <= 8 || c.inodes[keyIno(k)] == nil {
			c.problem("extended attribute %q of a missing inode", k)
			badXattrs = append(badXattrs, bytes.Clone(k))
		}
		return nil
	})
	if c.repair {
		for _, k := range badXattrs {
			if err := c.tx.Bucket(bucketXattrs).Delete(k); err != nil {
				return err
			}
			c.fixed("dropped extended attribute %q of a missing inode", k)
		}
	}
	if err := c.checkJournal(); err != nil {
		return err
	}
	if c.repair && len(c.rep.Repaired) > 0 {
		if err := c.tx.RecomputeStats(); err != nil {
			return err
		}
	}
	st, err := c.tx.Stats()
	if err != nil {
		c.problem("chunk statistics: %v", err)
	}
	c.rep.Chunks = st
	return nil
}

func (c *checker) putAttr(a *Attr) error {
	v := c.tx.Bucket(bucketInodes).Get(inoKey(a.Ino))
	_, target, _ := decodeInode(a.Ino, v)
	return c.tx.Bucket(bucketInodes).Put(inoKey(a.Ino), encodeInode(a, target))
}

// relinkLost names unreachable inodes in /lost+found, creating it if needed.
func (c *checker) relinkLost(lost []Ino, children map[Ino][]Ino, links map[Ino]uint32) error {
	dirents := c.tx.Bucket(bucketDirents)
	var lf Ino
	if v := dirents.Get(direntKey(RootIno, "lost+found")); v != nil {
		if d, err := decodeDirent(v); err == nil && d.Type == syscall.S_IFDIR {
			lf = d.Ino
		}
	}
	meta := c.tx.Bucket(bucketMeta)
	if lf == 0 {
		next, _ := u64(meta.Get(keyNextIno))
		for c.inodes[Ino(next)] != nil || next <= uint64(RootIno) {
			next++
		}
		lf = Ino(next)
		t := now()
		a := &Attr{Ino: lf, Mode: syscall.S_IFDIR | 0o700, Nlink: 2, Atime: t, Mtime: t, Ctime: t, Btime: t, Parent: RootIno}
		c.inodes[lf] = a
		if err := c.putAttr(a); err != nil {
			return err
		}
		if err := dirents.Put(direntKey(RootIno, "lost+found"), encodeDirent(dirent{Ino: lf, Type: syscall.S_IFDIR})); err != nil {
			return err
		}
		c.inodes[RootIno].Nlink++
		if err := c.putAttr(c.inodes[RootIno]); err != nil {
			return err
		}
		if err := meta.Put(keyNextIno, inoKey(lf+1)); err != nil {
			return err
		}
	}
	lfa := c.inodes[lf]
	for _, ino := range lost {
		a := c.inodes[ino]
		// Only the tops of unreachable subtrees need a name: the rest come
		// along with them.
		if a.IsDir() && containsIno(lost, a.Parent) && containsIno(children[a.Parent], ino) {
			continue
		}
		if !a.IsDir() && links[ino] > 0 {
			continue
		}
		name := fmt.Sprintf("#%d", ino)
		if err := dirents.Put(direntKey(lf, name), encodeDirent(dirent{Ino: ino, Type: a.Mode & syscall.S_IFMT})); err != nil {
			return err
		}
		if a.IsDir() {
			a.Parent = lf
			a.Nlink = 2 + countDirs(children[ino], c.inodes)
			lfa.Nlink++
		} else {
			a.Nlink = 1
		}
		if err := c.putAttr(a); err != nil {
			return err
		}
		c.fixed("moved unreachable inode %d to /lost+found/%s", ino, name)
	}
	return c.putAttr(lfa)
}

func containsIno(list []Ino, ino Ino) bool {
	for _, x := range list {
		if x == ino {
			return true
		}
	}
	return false
}

func countDirs(list []Ino, inodes map[Ino]*Attr) uint32 {
	var n uint32
	for _, x := range list {
		if a := inodes[x]; a != nil && a.IsDir() {
			n++
		}
	}
	return n
}

// GCReport says what a garbage collection freed.
type GCReport struct {
	ChunksFreed    int
	BytesFreed     uint64
	RefsCorrected  int
	BodiesFreed    int
	BodyBytesFreed uint64
}

// GC recounts every chunk's references from the chunk lists, deletes chunks
// no file refers to, corrects counts that drifted, and deletes bodies no
// index entry reaches. It runs on a closed workspace.
func GC(store *chunkstore.Store) (*GCReport, error) {
	rep := &GCReport{}
	err := store.Update(func(tx *chunkstore.Tx) error {
		counted := make(map[chunkstore.ID]uint64)
		tx.Bucket(bucketChunks).ForEach(func(k, v []byte) error {
			if len(v) == chunkstore.IDSize {
				counted[chunkstore.ID(v)]++
			}
			return nil
		})
		var fix []chunkstore.ChunkInfo
		if err := tx.ForEachChunk(func(ci chunkstore.ChunkInfo) error {
			if ci.Refs != counted[ci.ID] {
				fix = append(fix, ci)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, ci := range fix {
			if err := tx.SetRefs(ci.ID, counted[ci.ID]); err != nil {
				return err
			}
			if counted[ci.ID] == 0 {
				rep.ChunksFreed++
				rep.BytesFreed += uint64(ci.Stored)
			} else {
				rep.RefsCorrected++
			}
		}
		n, freed, err := tx.DeleteUnreachableBodies()
		rep.BodiesFreed, rep.BodyBytesFreed = n, freed
		return err
	})
	return rep, err
}

// WorkspaceInfo summarises a workspace for `computerfs stats`.
type WorkspaceInfo struct {
	FormatVersion int
	ChunkSize     int
	LimitBytes    uint64
	Inodes        int
	FileBytes     uint64 // sum of regular file sizes
	Chunks        chunkstore.Stats
}

// Info reads a workspace's summary without changing it.
func Info(store *chunkstore.Store) (*WorkspaceInfo, error) {
	info := &WorkspaceInfo{FormatVersion: chunkstore.FormatVersion, ChunkSize: store.ChunkSize()}
	err := store.View(func(tx *chunkstore.Tx) error {
		if tx.Bucket(bucketInodes) == nil {
			return fmt.Errorf("%w: no inode bucket", chunkstore.ErrNotWorkspace)
		}
		limit, _ := u64(tx.Bucket(bucketMeta).Get(keyLimit))
		info.LimitBytes = limit
		tx.Bucket(bucketInodes).ForEach(func(k, v []byte) error {
			info.Inodes++
			if len(k) == 8 {
				if a, _, err := decodeInode(keyIno(k), v); err == nil && a.IsRegular() {
					info.FileBytes += a.Size
				}
			}
			return nil
		})
		var err error
		info.Chunks, err = tx.Stats()
		return err
	})
	return info, err
}

// checkJournal decodes every journal record. A damaged record is dropped
// on repair: the journal is history, nothing else depends on it.
func (c *checker) checkJournal() error {
	b := c.tx.Bucket(bucketJournal)
	if b == nil {
		return nil // made by a build before the journal; created at open
	}
	var bad [][]byte
	b.ForEach(func(k, v []byte) error {
		seq, ok := u64(k)
		if !ok {
			c.problem("journal key %x is not a sequence number", k)
			bad = append(bad, bytes.Clone(k))
			return nil
		}
		if _, err := decodeChange(seq, v); err != nil {
			c.problem("%v", err)
			bad = append(bad, bytes.Clone(k))
		}
		return nil
	})
	if c.repair {
		for _, k := range bad {
			if err := b.Delete(k); err != nil {
				return err
			}
			c.fixed("dropped damaged journal record %x", k)
		}
	}
	return nil
}
