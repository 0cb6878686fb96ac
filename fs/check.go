package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
)

// CheckReport is what fsck found, and what it mended when asked to.
type CheckReport struct {
	Inodes, Dirents, FileChunks int
	Chunks                      chunkstore.Stats
	Problems                    []string
	Repaired                    []string
	// Notes are neither damage nor repairs: what the next open will do
	// (CheckIntentLog).
	Notes []string
}

// Clean reports whether no damage was found.
func (r *CheckReport) Clean() bool { return len(r.Problems) == 0 }

// Check verifies a closed workspace: every chunk hash and reference count,
// and the consistency of inodes, entries and chunk lists. With repair it
// fixes what can be fixed without guessing: reference counts, unreachable
// bodies, entries and chunk references to missing objects, link counts,
// and inodes no directory reaches (moved to /lost+found).
func Check(store *chunkstore.Store, repair bool) (*CheckReport, error) {
	return CheckWith(store, CheckOptions{Repair: repair})
}

// CheckOptions are CheckWith's options.
type CheckOptions struct {
	Repair bool
	// Progress, if not nil, hears how far the check is: phase "chunks"
	// with the stored bytes of the chunk bodies verified so far and their
	// total, then each later phase once as it starts (done and total 0).
	Progress func(phase string, done, total uint64)
}

// CheckWith is Check with options.
func CheckWith(store *chunkstore.Store, o CheckOptions) (*CheckReport, error) {
	rep := &CheckReport{}
	run := store.View
	if o.Repair {
		run = store.Update
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, uint64, uint64) {}
	}
	err := run(func(tx *chunkstore.Tx) error {
		c := checker{tx: tx, store: store, rep: rep, repair: o.Repair, cs: uint64(store.ChunkSize()), lostWhy: make(map[Ino]string), progress: progress}
		return c.run()
	})
	return rep, err
}

type checker struct {
	tx    *chunkstore.Tx
	store *chunkstore.Store
	// forks are the forks found (checkForks), their records recovered
	// where damaged; nil until checked.
	forks  map[string]ForkInfo
	rep    *CheckReport
	repair bool
	cs     uint64

	inodes   map[Ino]*Attr
	sums     map[Ino]inodeSum // regular files' summaries, from their records
	names    map[Ino]dirName  // one name of each named inode
	lostWhy  map[Ino]string   // why an inode goes to /lost+found
	rebuilt  []Ino            // rebuilt records, sent to /lost+found
	deferred []func() error   // writes held until a walk ends
	progress func(phase string, done, total uint64)
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
	if c.repair {
		// Bodies whose index record is damaged or lost are indexed
		// again from their own (verified) headers before anything
		// else: their files then lose nothing.
		if n, err := c.tx.Reindex(); err != nil {
			return err
		} else if n > 0 {
			c.fixed("indexed %d chunk bodies again from their verified contents (their index records were damaged or missing)", n)
		}
	}
	if err := c.checkVersions(); err != nil {
		return err
	}
	stored := make(map[chunkstore.ID]uint64)
	var verified, total uint64
	if st, err := c.tx.Stats(); err == nil {
		total = st.StoredBytes
	}
	c.progress("chunks", 0, total)
	problems, err := c.tx.Check(func(ci chunkstore.ChunkInfo) {
		stored[ci.ID] = ci.Refs
		verified += uint64(ci.Stored)
		c.progress("chunks", verified, max(total, verified))
	})
	if err != nil {
		return err
	}
	damaged := make(map[chunkstore.ID]bool)
	var outboards []chunkstore.ID
	for _, p := range problems {
		c.problem("%s", p)
		switch {
		case p.Outboard:
			outboards = append(outboards, p.ID)
		case p.ID != (chunkstore.ID{}):
			damaged[p.ID] = true
		}
	}
	if c.repair {
		for _, id := range outboards {
			if err := c.tx.RebuildOutboard(id); err != nil {
				return err
			}
			c.fixed("rebuilt the outboard of chunk %s from its verified body", id.Short())
		}
		for id := range damaged {
			if err := c.tx.DeleteChunk(id); err != nil {
				return err
			}
			c.fixed("deleted damaged chunk %s (the files that used it are moved to /lost+found, below)", id.Short())
		}
		if n, freed, err := c.tx.DeleteUnreachableBodies(); err != nil {
			return err
		} else if n > 0 {
			c.fixed("deleted %d unreachable bodies (%d bytes)", n, freed)
		}
	}

	// Inodes.
	c.progress("inodes", 0, 0)
	c.inodes = make(map[Ino]*Attr)
	c.sums = make(map[Ino]inodeSum)
	var maxIno Ino
	var badInodes [][]byte
	damagedInodes := make(map[Ino]bool)
	c.tx.Sealed(bucketInodes).Walk(func(k, v []byte, damage error) error {
		if len(k) != 8 {
			c.problem("inode key of %d bytes", len(k))
			badInodes = append(badInodes, bytes.Clone(k))
			return nil
		}
		ino := keyIno(k)
		if ino < forkInoFloor {
			// Inodes made in a fork and merged keep the fork's
			// numbers, above every number the workspace hands out.
			maxIno = max(maxIno, ino)
		}
		if damage != nil {
			c.problem("inode %d: %v", ino, damage)
			damagedInodes[ino] = true
			badInodes = append(badInodes, bytes.Clone(k))
			return nil
		}
		a, _, sum, err := decodeInodeSum(ino, v)
		if err != nil {
			c.problem("%v", err)
			badInodes = append(badInodes, bytes.Clone(k))
			return nil
		}
		c.inodes[ino] = &a
		if a.IsRegular() {
			c.sums[ino] = sum
		}
		return nil
	})
	c.rep.Inodes = len(c.inodes)
	if c.repair {
		for _, k := range badInodes {
			if err := c.tx.Sealed(bucketInodes).Delete(k); err != nil {
				return err
			}
			c.fixed("deleted damaged inode record %s", describeKey(string(bucketInodes), k))
		}
	}
	root := c.inodes[RootIno]
	if root == nil || !root.IsDir() {
		c.problem("root directory missing, damaged or not a directory")
		if !c.repair || root != nil {
			return nil
		}
		t := now()
		root = &Attr{Ino: RootIno, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Atime: t, Mtime: t, Ctime: t, Btime: t, Parent: RootIno}
		c.inodes[RootIno] = root
		if err := c.putAttr(root); err != nil {
			return err
		}
		c.fixed("made a new root directory (mode 0755, owner root): its entries are kept")
	}
	next, nerr := c.tx.Sealed(bucketMeta).Get(keyNextIno)
	if n, ok := u64(next); nerr != nil || !ok || Ino(n) <= maxIno {
		if nerr != nil {
			c.problem("next inode number: %v", nerr)
		} else {
			c.problem("next inode number %d is not above the largest in use (%d)", n, maxIno)
		}
		if c.repair {
			if err := c.tx.Sealed(bucketMeta).Put(keyNextIno, inoKey(maxIno+1)); err != nil {
				return err
			}
			c.fixed("set next inode number to %d", maxIno+1)
		}
	}
	if _, err := c.tx.Sealed(bucketMeta).Get(keyLimit); err != nil {
		c.problem("workspace size limit: %v", err)
		if c.repair {
			if err := c.tx.Sealed(bucketMeta).Put(keyLimit, inoKey(Ino(DefaultLimit))); err != nil {
				return err
			}
			c.fixed("set the workspace size limit to the default, %d bytes (set yours again with computerfs limit)", uint64(DefaultLimit))
		}
	}

	// Directory entries.
	links := make(map[Ino]uint32)
	subdirs := make(map[Ino]uint32)
	children := make(map[Ino][]Ino)
	c.names = make(map[Ino]dirName)
	var badDirents [][]byte
	type retype struct {
		key []byte
		d   dirent
	}
	var retyped []retype
	reparented := make(map[Ino][]Ino) // directory → the directories naming it
	namedDamaged := make(map[Ino][]dirent)
	var damagedDirents []string
	type naming struct {
		key []byte
		d   dirent
	}
	var all []naming
	c.progress("entries", 0, 0)
	c.tx.Sealed(bucketDirents).Walk(func(k, v []byte, damage error) error {
		c.rep.Dirents++
		if len(k) <= 8 {
			c.problem("directory entry key of %d bytes", len(k))
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		if damage != nil {
			damagedDirents = append(damagedDirents, string(k))
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		d, err := decodeDirent(v)
		if err != nil {
			c.problem("entry %q in directory %d: %v", k[8:], keyIno(k), err)
			badDirents = append(badDirents, bytes.Clone(k))
			return nil
		}
		all = append(all, naming{bytes.Clone(k), d})
		if _, ok := c.names[d.Ino]; !ok {
			c.names[d.Ino] = dirName{parent: keyIno(k), name: string(k[8:])}
		}
		return nil
	})
	for _, k := range damagedDirents {
		c.problem("%s: the directory entry is damaged (%s); the file it named is found below if it is intact",
			c.pathOf(keyIno([]byte(k[:8])), k[8:]), describeKey(string(bucketDirents), []byte(k)))
	}
	for _, n := range all {
		k, d := n.key, n.d
		parent, name := keyIno(k), string(k[8:])
		if err := checkName(name); err != nil {
			c.problem("entry %q in directory %d: invalid name", name, parent)
		}
		pa := c.inodes[parent]
		if pa == nil || !pa.IsDir() {
			c.problem("entry %q is in %d, which is not a directory", name, parent)
			badDirents = append(badDirents, k)
			continue
		}
		ca := c.inodes[d.Ino]
		if ca == nil && damagedInodes[d.Ino] {
			c.problem("%s: its inode %d is damaged", c.pathOf(parent, name), d.Ino)
			namedDamaged[d.Ino] = append(namedDamaged[d.Ino], dirent{Ino: parent, Type: d.Type})
			if !c.repair {
				continue
			}
			// Rebuilt below from what survives (its type, its names
			// and its chunk list); until then the entry stands.
		} else if ca == nil {
			c.problem("entry %q in directory %d names missing inode %d", name, parent, d.Ino)
			badDirents = append(badDirents, k)
			continue
		}
		if ca == nil {
			ca = c.rebuildInode(d.Ino, d.Type, parent)
		}
		if ca.Mode&syscall.S_IFMT != d.Type {
			c.problem("entry %q in directory %d has type %#o, inode %d is %#o", name, parent, d.Type, d.Ino, ca.Mode&syscall.S_IFMT)
			retyped = append(retyped, retype{k, dirent{Ino: d.Ino, Type: ca.Mode & syscall.S_IFMT}})
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
	}
	if c.repair {
		for _, k := range badDirents {
			if err := c.tx.Sealed(bucketDirents).Delete(k); err != nil {
				return err
			}
			c.fixed("deleted bad directory entry %s", describeKey(string(bucketDirents), k))
		}
		for _, r := range retyped {
			if err := c.tx.Sealed(bucketDirents).Put(r.key, encodeDirent(r.d)); err != nil {
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

	// Chunk lists: a file whose list is damaged, or names a damaged or
	// missing chunk, cannot be trusted where it is: on repair it goes to
	// /lost+found, never left in place reading zeros.
	counted := make(map[chunkstore.ID]uint64)
	sums := make(map[Ino]*listSum) // of the good records, by file
	var badChunks [][]byte
	quarantine := make(map[Ino]string)
	c.progress("chunk lists", 0, 0)
	c.tx.Sealed(bucketChunks).Walk(func(k, v []byte, damage error) error {
		c.rep.FileChunks++
		if len(k) != 16 {
			c.problem("chunk list record %x is malformed", k)
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		}
		ino, idx := keyIno(k), keyIno(k[8:])
		a := c.inodes[ino]
		switch {
		case damage != nil:
			c.problem("%s: bytes %d to %d: the chunk list record is damaged (%v)", c.path(ino), uint64(idx)*c.cs, uint64(idx+1)*c.cs, damage)
			badChunks = append(badChunks, bytes.Clone(k))
			if a != nil {
				quarantine[ino] = fmt.Sprintf("bytes %d to %d were lost (a damaged chunk list record) and read as zeros", uint64(idx)*c.cs, uint64(idx+1)*c.cs)
			}
			return nil
		case len(v) != chunkstore.IDSize:
			c.problem("chunk list record %x is malformed", k)
			badChunks = append(badChunks, bytes.Clone(k))
			return nil
		}
		id := chunkstore.ID(v)
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
			c.problem("%s: bytes %d to %d: chunk %s is missing or damaged", c.path(ino), uint64(idx)*c.cs, uint64(idx+1)*c.cs, id.Short())
			badChunks = append(badChunks, bytes.Clone(k))
			quarantine[ino] = fmt.Sprintf("bytes %d to %d were lost (chunk %s damaged or missing) and read as zeros", uint64(idx)*c.cs, uint64(idx+1)*c.cs, id.Short())
			return nil
		}
		counted[id]++
		if sums[ino] == nil {
			sums[ino] = &listSum{}
		}
		sums[ino].add(uint64(idx), v, +1)
		return nil
	})
	// The chunk-list versions snapshots keep hold references too.
	if err := historyChunkRefs(c.tx, func(id chunkstore.ID) { counted[id]++ }); err != nil {
		c.problem("snapshot history: %v", err)
	}
	// So do the forks' chunk-list records (fork.go); each fork's records
	// are checked against the tree it sees.
	forkRefsKnown := true
	if err := forkChunkRefs(c.tx, func(id chunkstore.ID) { counted[id]++ }); err != nil {
		forkRefsKnown = false
		if !errors.Is(err, errForkRefs) {
			c.problem("forks: %v", err)
		}
	}
	if err := c.checkForkTrees(func(id chunkstore.ID) bool { return stored[id] != 0 && !damaged[id] }); err != nil {
		return err
	}
	// And the holds of a pull in progress, or of one killed before it
	// applied its tree (holds.go).
	if _, err := c.checkHolds(stored, damaged, counted); err != nil {
		return err
	}
	// Summaries (in the inode records) against the lists: a record lost
	// or changed (its key damaged, its page misrouted) shows only here.
	for ino, want := range c.sums {
		got := listSum{}
		if s := sums[ino]; s != nil {
			got = *s
		}
		if _, ok := quarantine[ino]; ok || !want.Known {
			continue // a record of version 1 has no summary to check
		}
		if got != want.listSum {
			c.problem("%s: its chunk list has %d records, its summary %d: a record was lost or changed", c.path(ino), got.Count, want.Count)
			quarantine[ino] = "its chunk list disagreed with its summary (a record was lost or changed): ranges may read as zeros"
		}
	}
	if c.repair {
		for _, k := range badChunks {
			if err := c.tx.Sealed(bucketChunks).Delete(k); err != nil {
				return err
			}
			c.fixed("dropped chunk list record %s", describeKey(string(bucketChunks), k))
		}
		if err := c.rebuildSums(); err != nil {
			return err
		}
		for _, ino := range c.rebuilt {
			if _, ok := quarantine[ino]; !ok {
				quarantine[ino] = "" // lostWhy says why
			}
		}
		// Out of every directory: reachability below moves them.
		for ino, why := range quarantine {
			if why != "" {
				c.lostWhy[ino] = why + "; it was " + c.path(ino)
			}
			for d, kids := range children {
				kept := kids[:0]
				for _, k := range kids {
					if k != ino {
						kept = append(kept, k)
						continue
					}
					links[ino]--
					if err := c.deleteNamesOf(d, ino); err != nil {
						return err
					}
				}
				children[d] = kept
			}
		}
	}

	// Orphans and reachability.
	orphans := make(map[Ino]bool)
	c.tx.Sealed(bucketOrphans).Walk(func(k, _ []byte, damage error) error {
		if damage != nil {
			c.problem("orphan record %s: %v", describeKey(string(bucketOrphans), k), damage)
			if c.repair {
				c.deferred = append(c.deferred, func() error { return c.tx.Sealed(bucketOrphans).Delete(bytes.Clone(k)) })
			}
			return nil
		}
		if len(k) == 8 {
			orphans[keyIno(k)] = true
		}
		return nil
	})
	for _, fn := range c.deferred {
		if err := fn(); err != nil {
			return err
		}
	}
	c.deferred = nil
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
			if _, ok := quarantine[ino]; !ok {
				c.problem("inode %d (mode %#o) is not reachable from the root", ino, a.Mode)
			}
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
				if err := c.tx.Sealed(bucketOrphans).Delete(inoKey(ino)); err != nil {
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

	// Reference counts.
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
			if c.repair && refs > counted[id] && !forkRefsKnown {
				c.fixed("left the reference count of chunk %s at %d: a fork's damaged chunk list records may hold it (discard or repair the fork first)", id.Short(), refs)
				continue
			}
			if c.repair {
				if err := c.tx.SetRefs(id, counted[id]); err != nil {
					return err
				}
				c.fixed("set reference count of chunk %s to %d", id.Short(), counted[id])
			}
		}
	}
	var badXattrs [][]byte
	c.tx.Sealed(bucketXattrs).Walk(func(k, _ []byte, damage error) error {
		switch {
		case len(k) <= 8 || c.inodes[keyIno(k)] == nil && damage == nil:
			c.problem("extended attribute %q of a missing inode", k)
		case damage != nil:
			c.problem("%s: extended attribute %q is damaged (%v)", c.path(keyIno(k)), k[8:], damage)
		default:
			return nil
		}
		badXattrs = append(badXattrs, bytes.Clone(k))
		return nil
	})
	if c.repair {
		for _, k := range badXattrs {
			if err := c.tx.Sealed(bucketXattrs).Delete(k); err != nil {
				return err
			}
			c.fixed("dropped extended attribute %s", describeKey(string(bucketXattrs), k))
		}
	}
	if err := c.checkJournal(); err != nil {
		return err
	}
	if err := c.checkAudit(); err != nil {
		return err
	}
	if err := c.checkRoot(); err != nil {
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
		if c.repair {
			if err := c.tx.RecomputeStats(); err != nil {
				return err
			}
			c.fixed("recomputed the chunk statistics")
			st, _ = c.tx.Stats()
		}
	}
	c.rep.Chunks = st
	return nil
}

// checkRoot recomputes the root identifier from the records (after the
// repairs above, which count in the stored one as they write) and
// compares it with the stored one; repair stores the computed one. A
// store that has none yet (older, upgraded, never opened by fs since) is
// not damaged: repair stores it, a check says nothing.
func (c *checker) checkRoot() error {
	want, _, err := versions.ComputeRoot(c.tx.Tx)
	if err != nil {
		return err
	}
	have, ok, err := c.tx.Root()
	switch {
	case err != nil:
		c.problem("root identifier: %v", err)
	case !ok:
		if c.repair {
			return c.tx.SetRoot(want)
		}
		return nil
	case have == want:
		return nil
	default:
		c.problem("root identifier is %s, but the records sum to %s", have, want)
	}
	if c.repair {
		if err := c.tx.SetRoot(want); err != nil {
			return err
		}
		c.fixed("stored the root identifier the records sum to, %s", want)
	}
	return nil
}

// rebuildSums writes every chunk list summary (in the regular files'
// inode records) anew from the lists as repaired (the files whose lists
// could not be trusted are in /lost+found by then, or about to be).
func (c *checker) rebuildSums() error {
	fresh := make(map[Ino]*listSum)
	if err := c.tx.Sealed(bucketChunks).Walk(func(k, v []byte, damage error) error {
		if damage == nil && len(k) == 16 && len(v) == chunkstore.IDSize {
			ino := keyIno(k)
			if fresh[ino] == nil {
				fresh[ino] = &listSum{}
			}
			fresh[ino].add(binary.BigEndian.Uint64(k[8:]), v, +1)
		}
		return nil
	}); err != nil {
		return err
	}
	inodes := c.tx.Sealed(bucketInodes)
	changed := false
	for ino, a := range c.inodes {
		if !a.IsRegular() {
			continue
		}
		v, err := inodes.Get(inoKey(ino))
		if err != nil || v == nil {
			continue
		}
		ra, target, cur, err := decodeInodeSum(ino, v)
		if err != nil {
			continue
		}
		want := inodeSum{Known: true}
		if s := fresh[ino]; s != nil {
			want.listSum = *s
		}
		if cur == want {
			continue
		}
		if err := inodes.Put(inoKey(ino), encodeInode(&ra, target, want)); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		c.fixed("rewrote the chunk list summaries from the lists")
	}
	return nil
}

// dirName is one name of an inode, for paths in reports.
type dirName struct {
	parent Ino
	name   string
}

// path is a workspace path of ino for a report, from the entries read so
// far; "inode N" where none is known.
func (c *checker) path(ino Ino) string {
	if ino == RootIno {
		return "/"
	}
	n, ok := c.names[ino]
	if !ok {
		return fmt.Sprintf("inode %d", ino)
	}
	return c.pathOf(n.parent, n.name)
}

// pathOf is the path of name in directory dir.
func (c *checker) pathOf(dir Ino, name string) string {
	parts := []string{name}
	for i := 0; dir != RootIno; i++ {
		n, ok := c.names[dir]
		if !ok || i > 4096 {
			return fmt.Sprintf("(directory inode %d)/%s", dir, strings.Join(parts, "/"))
		}
		parts = append([]string{n.name}, parts...)
		dir = n.parent
	}
	return "/" + strings.Join(parts, "/")
}

// deleteNamesOf deletes every entry of directory d that names ino.
func (c *checker) deleteNamesOf(d, ino Ino) error {
	prefix := inoKey(d)
	var keys [][]byte
	err := c.tx.Sealed(bucketDirents).Walk(func(k, v []byte, damage error) error {
		if damage == nil && bytes.HasPrefix(k, prefix) {
			if de, err := decodeDirent(v); err == nil && de.Ino == ino {
				keys = append(keys, bytes.Clone(k))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := c.tx.Sealed(bucketDirents).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// rebuildInode makes a new record for an inode whose own is damaged, from
// what survives of it: the type its entry names and its chunk list (a
// regular file's size is where its last stored chunk ends, which misses
// zeros stored after it). Its mode is 0700 for a directory (its entries
// are kept), 0600 otherwise, owner root; a symlink's target is lost, so a
// symlink comes back as an empty regular file. Anything but a directory
// is then moved to /lost+found: its attributes are guesses.
func (c *checker) rebuildInode(ino Ino, typ uint32, parent Ino) *Attr {
	t := now()
	a := &Attr{Ino: ino, Mode: typ | 0o600, Nlink: 1, Atime: t, Mtime: t, Ctime: t, Btime: t, Parent: parent}
	switch typ {
	case syscall.S_IFDIR:
		a.Mode, a.Nlink = syscall.S_IFDIR|0o700, 2
	case syscall.S_IFLNK:
		a.Mode = syscall.S_IFREG | 0o600
	}
	if a.IsRegular() {
		prefix := inoKey(ino)
		cur := c.tx.Sealed(bucketChunks).Cursor()
		for k, v, err := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v, err = cur.Next() {
			if err != nil || len(k) != 16 || len(v) != chunkstore.IDSize {
				continue
			}
			if n, err := c.tx.Len(chunkstore.ID(v)); err == nil {
				a.Size = max(a.Size, binary.BigEndian.Uint64(k[8:])*c.cs+uint64(n))
			}
		}
	}
	c.inodes[ino] = a
	if err := c.putAttr(a); err != nil {
		c.problem("rebuild inode %d: %v", ino, err)
	}
	if a.IsDir() {
		c.fixed("rebuilt the damaged record of directory %s (inode %d) with mode 0700, owner root: its entries are kept", c.path(ino), ino)
	} else {
		c.lostWhy[ino] = fmt.Sprintf("its record was damaged and rebuilt: mode 0600, owner root, size %d from its chunk list; it was %s", a.Size, c.path(ino))
		c.rebuilt = append(c.rebuilt, ino)
	}
	return a
}

func (c *checker) putAttr(a *Attr) error {
	// A symlink keeps its target; a damaged record has none to keep.
	// A file keeps its summary; a damaged record has none (version 1),
	// until rebuildSums writes it.
	v, _ := c.tx.Sealed(bucketInodes).Get(inoKey(a.Ino))
	_, target, sum, err := decodeInodeSum(a.Ino, v)
	if err != nil {
		target, sum = "", inodeSum{}
	}
	return c.tx.Sealed(bucketInodes).Put(inoKey(a.Ino), encodeInode(a, target, sum))
}

// relinkLost names unreachable inodes in /lost+found, creating it if needed.
func (c *checker) relinkLost(lost []Ino, children map[Ino][]Ino, links map[Ino]uint32) error {
	dirents := c.tx.Sealed(bucketDirents)
	var lf Ino
	if v, _ := dirents.Get(direntKey(RootIno, "lost+found")); v != nil {
		if d, err := decodeDirent(v); err == nil && d.Type == syscall.S_IFDIR {
			lf = d.Ino
		}
	}
	meta := c.tx.Sealed(bucketMeta)
	if lf == 0 {
		v, _ := meta.Get(keyNextIno)
		next, _ := u64(v)
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
		if why := c.lostWhy[ino]; why != "" {
			c.fixed("moved inode %d to /lost+found/%s: %s", ino, name, why)
		} else {
			c.fixed("moved unreachable inode %d to /lost+found/%s", ino, name)
		}
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
	return GCWith(store, GCOptions{})
}

// GCOptions are GCWith's options.
type GCOptions struct {
	// Progress, if not nil, hears how far GC is: phase "references"
	// with the chunk references counted so far (total 0: unknown), then
	// "chunks" with the chunks compared of their total.
	Progress func(phase string, done, total uint64)
}

// GCWith is GC with options.
func GCWith(store *chunkstore.Store, o GCOptions) (*GCReport, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, uint64, uint64) {}
	}
	rep := &GCReport{}
	err := store.Update(func(tx *chunkstore.Tx) error {
		counted := make(map[chunkstore.ID]uint64)
		var refs uint64
		// A damaged chunk list hides references: counting without them
		// would free chunks files still use. fsck first.
		if err := tx.Sealed(bucketChunks).ForEach(func(k, v []byte) error {
			if len(v) == chunkstore.IDSize {
				counted[chunkstore.ID(v)]++
			}
			if refs++; refs%1024 == 0 {
				progress("references", refs, 0)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("gc stopped, nothing freed: %w (run computerfs fsck)", err)
		}
		if err := historyChunkRefs(tx, func(id chunkstore.ID) { counted[id]++ }); err != nil {
			return fmt.Errorf("gc stopped, nothing freed: snapshot history: %w (run computerfs fsck)", err)
		}
		if err := forkChunkRefs(tx, func(id chunkstore.ID) { counted[id]++ }); err != nil {
			return fmt.Errorf("gc stopped, nothing freed: forks: %w (run computerfs fsck)", err)
		}
		// A pull's holds (holds.go) are references until its commit, or
		// until the next open releases those of a pull that died.
		if err := holdChunkRefs(tx, func(_ holdRecord, id chunkstore.ID) { counted[id]++ }); err != nil {
			return fmt.Errorf("gc stopped, nothing freed: %w (run computerfs fsck)", err)
		}
		var fix []chunkstore.ChunkInfo
		var chunks, seen uint64
		if st, err := tx.Stats(); err == nil {
			chunks = st.Chunks
		}
		if err := tx.ForEachChunk(func(ci chunkstore.ChunkInfo) error {
			if seen++; seen%1024 == 0 {
				progress("chunks", seen, max(chunks, seen))
			}
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
		if !tx.Sealed(bucketInodes).Exists() {
			return fmt.Errorf("%w: no inode bucket", chunkstore.ErrNotWorkspace)
		}
		v, err := tx.Sealed(bucketMeta).Get(keyLimit)
		if err != nil {
			return err
		}
		info.LimitBytes, _ = u64(v)
		// Damaged records are fsck's to report: stats counts what it can
		// read.
		tx.Sealed(bucketInodes).Walk(func(k, v []byte, damage error) error {
			info.Inodes++
			if len(k) == 8 && damage == nil {
				if a, _, err := decodeInode(keyIno(k), v); err == nil && a.IsRegular() {
					info.FileBytes += a.Size
				}
			}
			return nil
		})
		info.Chunks, err = tx.Stats()
		return err
	})
	return info, err
}

// checkJournal decodes every journal record. A damaged record is dropped
// on repair: the journal is history, nothing else depends on it.
func (c *checker) checkJournal() error {
	b := c.tx.Sealed(bucketJournal)
	if !b.Exists() {
		return nil // made by a build before the journal; created at open
	}
	var bad [][]byte
	b.Walk(func(k, v []byte, damage error) error {
		if damage != nil {
			c.problem("%s: %v", describeKey(string(bucketJournal), k), damage)
			bad = append(bad, bytes.Clone(k))
			return nil
		}
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

// historyChunkRefs calls fn with the chunk of every chunk-list version
// that snapshots keep (package versions): each holds a reference.
func historyChunkRefs(tx *chunkstore.Tx, fn func(chunkstore.ID)) error {
	b := tx.Bucket(versions.BucketHistory)
	if b == nil {
		return nil
	}
	id := versions.ID(bucketChunks)
	c := b.Cursor()
	for k, v := c.Seek([]byte{id}); k != nil && k[0] == id; k, v = c.Next() {
		if len(k) != 1+16+8 {
			return fmt.Errorf("history key %x: %w", k, errBadRecord)
		}
		val, err := sealed.Open(bucketChunks, k[1:17], v)
		if err != nil {
			return err
		}
		if len(val) == chunkstore.IDSize {
			fn(chunkstore.ID(val))
		}
	}
	return nil
}

// forkChunkRefs calls fn with the chunk of every chunk-list record of
// every fork (fork.go): each holds a reference. Damaged records are
// passed over and then reported (errForkRefs): their references cannot
// be told.
func forkChunkRefs(tx *chunkstore.Tx, fn func(chunkstore.ID)) error {
	fb := tx.Bucket(bucketForks)
	if fb == nil {
		return nil
	}
	var damaged []string
	err := fb.ForEach(func(k, v []byte) error {
		if v != nil {
			return fmt.Errorf("%w: a value %q where a fork's bucket belongs", errBadRecord, k)
		}
		b := fb.Bucket(k).Bucket(bucketChunks)
		if b == nil {
			return fmt.Errorf("fork %s: %w: no chunk list bucket", k, errBadRecord)
		}
		w := sealed.Wrap(b, forkSealName(string(k), bucketChunks), 0)
		return b.ForEach(func(ck, _ []byte) error {
			v, _, err := w.OverlayGet(ck)
			switch {
			case err != nil:
				damaged = append(damaged, fmt.Sprintf("fork %s: %s", k, describeKey(string(bucketChunks), ck)))
			case len(v) == chunkstore.IDSize:
				fn(chunkstore.ID(v))
			}
			return nil
		})
	})
	if err == nil && len(damaged) > 0 {
		err = fmt.Errorf("%w: %s", errForkRefs, strings.Join(damaged, "; "))
	}
	return err
}

// checkForks verifies every fork's record and the seals of its records
// (each fork's inode range and pin are checked with the pins:
// checkVersions). A damaged record is recovered from the fork's pin and
// meta where they tell it (rewritten on repair), so that its pin is not
// taken for a stray one.
func (c *checker) checkForks() (map[string]ForkInfo, error) {
	forks := make(map[string]ForkInfo)
	c.forks = forks
	ids, values := forkIDs(c.tx.Tx)
	for _, k := range values {
		c.problem("forks: a value %q where a fork's bucket belongs", k)
	}
	for _, id := range ids {
		fi, b, recovered, err := readForkRecordOrRecover(c.tx.Tx, id)
		if err != nil {
			c.problem("fork %s: its record: %v (discard the fork: computerfs fork discard)", id, err)
			continue
		}
		if recovered {
			c.problem("fork %s: its record is damaged; rebuilt from its pin and its inode numbers, it branched at commit %d", id, fi.Epoch)
			if c.repair {
				if err := sealed.Wrap(b, bucketForks, fi.Epoch).Put(keyForkRecord, encodeForkRecord(&fi)); err != nil {
					return nil, err
				}
				c.fixed("rewrote the record of fork %s (branched at commit %d; its root at that commit is not known again)", id, fi.Epoch)
			}
		}
		forks[id] = fi
		var namer *forkNamer
		forkRecordDamage(id, b, func(bucket, k []byte, err error) {
			what := string(bucket)
			if k != nil {
				if namer == nil {
					if fx, ferr := forkView(c.store, c.tx.Tx, fi); ferr == nil {
						n := newForkNamer(fx, fi, c.cs)
						namer = &n
					}
				}
				if namer != nil {
					what = namer.key(string(bucket), k)
				} else {
					what = string(bucket) + " " + describeKey(string(bucket), k)
				}
			}
			c.problem("fork %s: %s: %v (the fork fails there with EIO; discard it, or write the file again in it)", id, what, err)
		})
	}
	return forks, nil
}

// checkForkTrees checks each fork's records against the tree the fork
// sees (forkTreeProblems).
func (c *checker) checkForkTrees(chunkOK func(chunkstore.ID) bool) error {
	if c.forks == nil {
		if _, err := c.checkForks(); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(c.forks))
	for id := range c.forks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fi := c.forks[id]
		b := forkBucket(c.tx.Tx, id)
		if b == nil {
			continue
		}
		fx, err := forkView(c.store, c.tx.Tx, fi)
		if err != nil {
			c.problem("fork %s: %v", id, err)
			continue
		}
		for _, p := range forkTreeProblems(fx, fi, b, c.cs, chunkOK) {
			c.problem("%s", p)
		}
	}
	return nil
}
