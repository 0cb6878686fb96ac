package fs

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/textdiff"
	"github.com/computerfs/computerfs/versions"
)

// DiffEntry is one file that differs between two states.
type DiffEntry struct {
	Kind    string `json:"kind"` // "added", "deleted", "modified", "renamed"
	Path    string `json:"path"` // in the later state ("" if deleted)
	OldPath string `json:"old_path,omitempty"`
	Type    uint32 `json:"type"` // S_IFMT bits
	OldSize uint64 `json:"old_size"`
	Size    uint64 `json:"size"`
	Ino     Ino    `json:"ino"`
	// Patch is, when asked for, a unified diff of the file's content
	// (a symlink's target) from the earlier state to the later, with
	// "a/" and "b/" labels as git gives them, or a line saying why there
	// is none: "Binary files ... differ", as git says, or that the files
	// are too large. It is "" for directories and other special files,
	// and where only attributes or the path changed.
	Patch string `json:"patch,omitempty"`
}

// DiffOptions asks DiffSnapshotsWith for more than the list of changes.
type DiffOptions struct {
	Patch bool // fill in each entry's Patch
	// MaxFileBytes: a file larger than this at either state gets a
	// notice instead of a patch (0: DefaultMaxPatchFileBytes).
	MaxFileBytes int64
	// MaxTotalBytes: once the patches passed this many bytes, the
	// entries after get a notice instead (0: DefaultMaxPatchTotalBytes,
	// which fits a daemon's reply; negative: no limit).
	MaxTotalBytes int64
	Context       int // lines of context around a change (0: 3)
}

// The default limits of patches.
const (
	DefaultMaxPatchFileBytes  = 1 << 20
	DefaultMaxPatchTotalBytes = 3 << 20
)

// DiffSnapshots lists what differs between snapshot a and snapshot b ("" for
// the store's last commit), without patches: see DiffSnapshotsWith.
func DiffSnapshots(store *chunkstore.Store, a, b string) ([]DiffEntry, error) {
	return DiffSnapshotsWith(store, a, b, DiffOptions{})
}

// DiffSnapshotsWith lists what differs between snapshot a and snapshot b
// ("" for the store's last commit): files added, deleted, modified
// (content or attributes) and renamed (the same inode under another
// path), by inode, in path order.
//
// It costs in proportion to what changed, not to the workspace: the
// changed records come from the change indexes, and the path of each
// changed inode from the directory entries that changed, or from its
// record's parent and one read of that directory's entries (once per
// directory and state). Only an inode whose record has no parent hint (a
// file last written before files had them) or whose hinted directory no
// longer names it (a removed hard link) costs one walk of the whole tree
// at that state.
func DiffSnapshotsWith(store *chunkstore.Store, a, b string, o DiffOptions) ([]DiffEntry, error) {
	var out []DiffEntry
	err := store.View(func(tx *chunkstore.Tx) error {
		snapOf := func(name string) (Snapshot, error) {
			if name == "" {
				v, err := tx.Sealed(bucketMeta).Get(keyEpoch)
				e, _ := u64(v)
				return Snapshot{Epoch: e, Created: math.MaxInt64}, err
			}
			v, err := tx.Sealed(bucketSnapshots).Get([]byte(name))
			if err != nil {
				return Snapshot{}, err
			}
			if v == nil {
				return Snapshot{}, fmt.Errorf("snapshot %s: %w", name, ErrNoSnapshot)
			}
			return decodeSnapshot(name, v)
		}
		sa, err := snapOf(a)
		if err != nil {
			return err
		}
		sb, err := snapOf(b)
		if err != nil {
			return err
		}
		ea, eb := sa.Epoch, sb.Epoch
		if eb < ea {
			return fmt.Errorf("diff %s %s: the second is older than the first: %w", a, b, syscall.EINVAL)
		}
		atA, atB := versions.NewAt(tx.Tx, ea), versions.NewAt(tx.Tx, eb)
		inos := make(map[Ino]bool)
		jp := &journalPaths{tx: tx, from: sa.Created, to: sb.Created, inos: inos}
		nA := newNamer(atA, nil, jp)
		nB := newNamer(atB, nA, jp)
		err = versions.ChangedBetween(tx.Tx, ea, eb, func(id byte, key []byte) error {
			if len(key) < 8 {
				return nil
			}
			switch versions.Name(id) {
			case string(bucketDirents):
				// What the entry names then and now; the entry itself is
				// a name of it at that state.
				for _, n := range []*namer{nA, nB} {
					v, err := n.at.Get(bucketDirents, key)
					if err != nil {
						return fmt.Errorf("diff: entry %q of directory %d: %w", key[8:], keyIno(key[:8]), err)
					}
					if v == nil {
						continue
					}
					d, err := decodeDirent(v)
					if err != nil {
						return fmt.Errorf("diff: entry %q of directory %d: %w", key[8:], keyIno(key[:8]), err)
					}
					inos[d.Ino] = true
					n.hint(d.Ino, dirName{parent: keyIno(key[:8]), name: string(key[8:])})
				}
			default:
				inos[keyIno(key[:8])] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		sorted := make([]Ino, 0, len(inos))
		for ino := range inos {
			sorted = append(sorted, ino)
		}
		slices.Sort(sorted)
		p := patcher{tx: tx, atA: atA, atB: atB, cs: int64(store.ChunkSize()), o: o}
		for _, ino := range sorted {
			ra, err := atA.Get(bucketInodes, inoKey(ino))
			if err != nil {
				return fmt.Errorf("diff: inode %d: %w", ino, err)
			}
			rb, err := atB.Get(bucketInodes, inoKey(ino))
			if err != nil {
				return fmt.Errorf("diff: inode %d: %w", ino, err)
			}
			var aa, ab Attr
			var ta, tb string
			if ra != nil {
				if aa, ta, err = decodeInode(ino, ra); err != nil {
					return fmt.Errorf("diff: %w", err)
				}
			}
			if rb != nil {
				if ab, tb, err = decodeInode(ino, rb); err != nil {
					return fmt.Errorf("diff: %w", err)
				}
			}
			if ra != nil && rb != nil && !nA.hinted(ino) && !nB.hinted(ino) {
				// No entry that names it changed: only its content could
				// have, and nothing did if its records are the same (a
				// change after the later state, say, or one undone).
				same, err := sameContent(atA, atB, ino, ra, rb)
				if err != nil {
					return err
				}
				if same {
					continue
				}
			}
			pathA, namedA, err := nA.path(ino)
			if err != nil {
				return err
			}
			pathB, namedB, err := nB.path(ino)
			if err != nil {
				return err
			}
			e := DiffEntry{Ino: ino, OldSize: aa.Size, Size: ab.Size}
			switch {
			case !namedA && !namedB:
				continue // born and gone between, or unnamed (an orphan)
			case !namedA:
				e.Kind, e.Path, e.Type, e.OldSize = "added", pathB, ab.Mode&syscall.S_IFMT, 0
			case !namedB:
				e.Kind, e.OldPath, e.Type, e.Size = "deleted", pathA, aa.Mode&syscall.S_IFMT, 0
			default:
				e.Path, e.OldPath, e.Type = pathB, pathA, ab.Mode&syscall.S_IFMT
				same, err := sameContent(atA, atB, ino, ra, rb)
				if err != nil {
					return err
				}
				switch {
				case e.Path != e.OldPath:
					e.Kind = "renamed" // and maybe modified: the sizes tell
				case !same:
					e.Kind = "modified"
				default:
					continue
				}
			}
			if o.Patch {
				var fa, fb *Attr
				if e.Kind != "added" {
					fa = &aa
				}
				if e.Kind != "deleted" {
					fb = &ab
				}
				if e.Patch, err = p.patch(&e, fa, fb, ta, tb); err != nil {
					return err
				}
			}
			out = append(out, e)
		}
		return nil
	})
	key := func(e DiffEntry) string {
		if e.Path == "" {
			return e.OldPath
		}
		return e.Path
	}
	slices.SortStableFunc(out, func(x, y DiffEntry) int { return strings.Compare(key(x), key(y)) })
	return out, err
}

// namesAtWalks counts the walks of a whole tree that diffs made, for the
// tests that check that a diff needs none.
var namesAtWalks atomic.Int64

// diffDirReads counts the directories that diffs read whole, for the
// same tests.
var diffDirReads atomic.Int64

// namesAt is one name of every named inode at a state: a walk of every
// directory entry.
func namesAt(at *versions.At) (map[Ino]dirName, error) {
	namesAtWalks.Add(1)
	names := make(map[Ino]dirName)
	err := at.Prefix(bucketDirents, nil, func(k, v []byte) error {
		if len(k) <= 8 {
			return nil
		}
		d, err := decodeDirent(v)
		if err != nil {
			return err
		}
		if _, ok := names[d.Ino]; !ok {
			names[d.Ino] = dirName{parent: keyIno(k[:8]), name: string(k[8:])}
		}
		return nil
	})
	return names, err
}

// namer finds the names of inodes at one state, reading only what it
// needs: the inodes' records, and the entries of their parents.
type namer struct {
	at *versions.At
	// other is the namer of the other state, whose name for an inode is
	// taken when it names the inode here too: a file keeps its path
	// unless it was renamed, even if it has other names.
	other   *namer
	journal *journalPaths          // paths the change journal gives, shared
	seeded  bool                   // the directories on them named
	hints   map[Ino]dirName        // changed entries that name an inode here
	names   map[Ino]dirName        // resolved
	unnamed map[Ino]bool           // resolved: nothing names it here
	dirs    map[Ino]map[Ino]string // entries read of a directory: child → its first name
	all     map[Ino]dirName        // the walk of the tree, if one was needed
}

func newNamer(at *versions.At, other *namer, jp *journalPaths) *namer {
	return &namer{at: at, other: other, journal: jp, hints: map[Ino]dirName{}, names: map[Ino]dirName{}, unnamed: map[Ino]bool{}, dirs: map[Ino]map[Ino]string{}}
}

// hint records that entry d names ino at the namer's state; of several,
// the first in key order stays.
func (n *namer) hint(ino Ino, d dirName) {
	if h, ok := n.hints[ino]; !ok || d.parent < h.parent || d.parent == h.parent && d.name < h.name {
		n.hints[ino] = d
	}
}

// hinted says whether a changed entry names ino at the state.
func (n *namer) hinted(ino Ino) bool {
	_, ok := n.hints[ino]
	return ok
}

// name is one entry that names ino at the state: its directory and name;
// false if none does.
func (n *namer) name(ino Ino) (dirName, bool, error) {
	if !n.seeded && n.journal != nil {
		// The directories on the journal's paths, named at once: a
		// directory changed for its entries' sake has no record of its
		// own there.
		n.seeded = true
		all, err := n.journal.all()
		if err != nil {
			return dirName{}, false, err
		}
		for ino, paths := range all {
			for _, p := range paths {
				if _, _, err := n.follow(p, ino); err != nil {
					return dirName{}, false, err
				}
			}
		}
	}
	if d, ok := n.names[ino]; ok {
		return d, true, nil
	}
	if n.unnamed[ino] {
		return dirName{}, false, nil
	}
	d, ok, err := n.resolve(ino)
	if err != nil {
		return dirName{}, false, err
	}
	if ok {
		n.names[ino] = d
	} else {
		n.unnamed[ino] = true
	}
	return d, ok, nil
}

func (n *namer) resolve(ino Ino) (dirName, bool, error) {
	rec, err := n.at.Get(bucketInodes, inoKey(ino))
	if err != nil || rec == nil {
		return dirName{}, false, err
	}
	a, _, err := decodeInode(ino, rec)
	if err != nil {
		return dirName{}, false, err
	}
	if a.Nlink == 0 {
		return dirName{}, false, nil // an orphan, open but unlinked
	}
	if n.other != nil {
		d, ok, err := n.other.name(ino)
		if err != nil {
			return dirName{}, false, err
		}
		if ok {
			if v, err := n.at.Get(bucketDirents, direntKey(d.parent, d.name)); err != nil {
				return dirName{}, false, err
			} else if v != nil {
				if de, err := decodeDirent(v); err == nil && de.Ino == ino {
					return d, true, nil
				}
			}
		}
	}
	if d, ok := n.hints[ino]; ok {
		return d, true, nil
	}
	if n.journal != nil {
		paths, err := n.journal.of(ino)
		if err != nil {
			return dirName{}, false, err
		}
		for i := len(paths) - 1; i >= 0; i-- { // the latest first
			if d, ok, err := n.follow(paths[i], ino); err != nil || ok {
				return d, ok, err
			}
		}
	}
	if a.Parent != 0 {
		kids, err := n.entries(a.Parent)
		if err != nil {
			return dirName{}, false, err
		}
		if name, ok := kids[ino]; ok {
			return dirName{parent: a.Parent, name: name}, true, nil
		}
	}
	// No parent hint (a record from before files had them), or a hard
	// link whose hinted directory names it no more.
	if n.all == nil {
		if n.all, err = namesAt(n.at); err != nil {
			return dirName{}, false, fmt.Errorf("diff: the names of every inode: %w", err)
		}
	}
	d, ok := n.all[ino]
	return d, ok, nil
}

// follow says whether path names ino at the state, by a lookup of each
// of its names; if so, it is the entry that names it. The directories on
// the way are named either way.
func (n *namer) follow(path string, ino Ino) (dirName, bool, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	type step struct {
		ino Ino
		dirName
	}
	steps := make([]step, 0, len(parts))
	dir := RootIno
	for _, p := range parts {
		if p == "" || len(steps) > 4096 {
			return dirName{}, false, nil
		}
		v, err := n.at.Get(bucketDirents, direntKey(dir, p))
		if err != nil {
			return dirName{}, false, fmt.Errorf("diff: entry %q of directory %d: %w", p, dir, err)
		}
		if v == nil {
			return dirName{}, false, nil
		}
		de, err := decodeDirent(v)
		if err != nil {
			return dirName{}, false, nil
		}
		steps = append(steps, step{de.Ino, dirName{parent: dir, name: p}})
		dir = de.Ino
	}
	for _, s := range steps[:len(steps)-1] {
		if _, ok := n.names[s.ino]; !ok {
			n.names[s.ino] = s.dirName
		}
	}
	if dir != ino {
		return dirName{}, false, nil
	}
	return steps[len(steps)-1].dirName, true, nil
}

// journalPaths are the paths that the change journal's records between
// two snapshots' times give the changed inodes: hints, which a namer
// follows at its state before it reads a directory. Read once, when a
// namer first needs one: a binary search of the journal for the first
// record after the earlier snapshot, then the records up to the later
// one, in proportion to the changes (fewer if the journal was pruned
// since; records made while a snapshot was taken may be missed, which
// costs a read of a directory, not a wrong name).
type journalPaths struct {
	tx       *chunkstore.Tx
	from, to int64 // the snapshots' creation times, nanoseconds
	inos     map[Ino]bool
	read     bool
	paths    map[Ino][]string
}

func (j *journalPaths) of(ino Ino) ([]string, error) {
	all, err := j.all()
	return all[ino], err
}

func (j *journalPaths) all() (map[Ino][]string, error) {
	if !j.read {
		j.read = true
		j.paths = make(map[Ino][]string)
		if err := j.load(); err != nil {
			return nil, err
		}
	}
	return j.paths, nil
}

func (j *journalPaths) load() error {
	b := j.tx.Sealed(bucketJournal)
	if !b.Exists() {
		return nil
	}
	c := b.Cursor()
	first, _, err := c.First()
	if err != nil || first == nil {
		return nil // hints only: a damaged journal is fsck's to report
	}
	last, _, err := c.Last()
	if err != nil || last == nil {
		return nil
	}
	// The first record made after the earlier snapshot.
	lo, hi := keyIno(first), keyIno(last)+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		k, v, err := c.Seek(inoKey(mid))
		if err != nil || k == nil {
			return nil
		}
		ch, err := decodeChange(uint64(keyIno(k)), v)
		if err != nil {
			return nil
		}
		if ch.Time <= j.from {
			lo = keyIno(k) + 1
		} else {
			hi = mid
		}
	}
	for k, v, err := c.Seek(inoKey(lo)); k != nil; k, v, err = c.Next() {
		if err != nil {
			return nil
		}
		ch, err := decodeChange(uint64(keyIno(k)), v)
		if err != nil || ch.Time > j.to {
			return nil
		}
		if j.inos[ch.Ino] {
			for _, p := range []string{ch.Path, ch.NewPath} {
				if p != "" {
					j.paths[ch.Ino] = append(j.paths[ch.Ino], p)
				}
			}
		}
	}
	return nil
}

// entries reads directory dir's entries once: child → its first name.
func (n *namer) entries(dir Ino) (map[Ino]string, error) {
	if kids, ok := n.dirs[dir]; ok {
		return kids, nil
	}
	diffDirReads.Add(1)
	kids := make(map[Ino]string)
	err := n.at.Prefix(bucketDirents, inoKey(dir), func(k, v []byte) error {
		d, err := decodeDirent(v)
		if err != nil {
			return err
		}
		if _, ok := kids[d.Ino]; !ok {
			kids[d.Ino] = string(k[8:])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("diff: the entries of directory %d: %w", dir, err)
	}
	n.dirs[dir] = kids
	return kids, nil
}

// path is a workspace path of ino at the state, false if nothing names
// it. A directory on the way that has no name gives "(directory inode
// N)/..." as fsck does.
func (n *namer) path(ino Ino) (string, bool, error) {
	if ino == RootIno {
		return "/", true, nil
	}
	d, ok, err := n.name(ino)
	if err != nil || !ok {
		return "", false, err
	}
	parts := []string{d.name}
	for dir, i := d.parent, 0; dir != RootIno; i++ {
		pd, ok, err := n.name(dir)
		if err != nil {
			return "", false, err
		}
		if !ok || i > 4096 {
			slices.Reverse(parts)
			return fmt.Sprintf("(directory inode %d)/%s", dir, strings.Join(parts, "/")), true, nil
		}
		parts = append(parts, pd.name)
		dir = pd.parent
	}
	slices.Reverse(parts)
	return "/" + strings.Join(parts, "/"), true, nil
}

// sameContent says whether inode ino's record and chunk list are the
// same at two states (ra, rb: its records there).
func sameContent(atA, atB *versions.At, ino Ino, ra, rb []byte) (bool, error) {
	aa, ta, suma, err := decodeInodeSum(ino, ra)
	if err != nil {
		return false, err
	}
	ab, tb, sumb, err := decodeInodeSum(ino, rb)
	if err != nil {
		return false, err
	}
	// ctime and atime move without a change a user would call one, nlink
	// with a link made elsewhere, and the parent with a rename, which
	// shows as one.
	aa.Ctime, ab.Ctime, aa.Atime, ab.Atime, aa.Nlink, ab.Nlink, aa.Parent, ab.Parent = 0, 0, 0, 0, 0, 0, 0, 0
	if aa.IsDir() && ab.IsDir() {
		// A directory's mtime and size follow its entries, which show
		// as the files added, deleted and renamed.
		aa.Mtime, ab.Mtime, aa.Size, ab.Size = 0, 0, 0, 0
	}
	if aa != ab || ta != tb {
		return false, nil
	}
	sa, err := summaryAt(atA, ino, suma)
	if err != nil {
		return false, err
	}
	sb, err := summaryAt(atB, ino, sumb)
	if err != nil {
		return false, err
	}
	return sa == sb, nil
}

// summaryAt is the chunk list summary of file ino at a state, given the
// one its inode record there holds: a record of version 1 (format 6 and
// before) has it in the fsums bucket of then.
func summaryAt(at *versions.At, ino Ino, s inodeSum) (listSum, error) {
	if s.Known {
		return s.listSum, nil
	}
	v, err := at.Get(bucketSums, inoKey(ino))
	if err != nil || v == nil {
		return listSum{}, err
	}
	return decodeListSum(v)
}

// patcher makes the patches of one diff.
type patcher struct {
	tx       *chunkstore.Tx
	atA, atB *versions.At
	cs       int64
	o        DiffOptions
	total    int64 // bytes of patches so far
}

// patch is entry e's patch: fa and fb are its attributes at the earlier
// and the later state (nil where it has none), ta and tb its symlink
// targets.
func (p *patcher) patch(e *DiffEntry, fa, fb *Attr, ta, tb string) (string, error) {
	diffable := func(a *Attr) bool { return a == nil || a.IsRegular() || a.IsSymlink() }
	if !diffable(fa) || !diffable(fb) {
		return "", nil
	}
	la, lb := "/dev/null", "/dev/null"
	if fa != nil {
		la = "a" + e.OldPath
	}
	if fb != nil {
		lb = "b" + e.Path
	}
	maxFile, maxTotal := p.o.MaxFileBytes, p.o.MaxTotalBytes
	if maxFile <= 0 {
		maxFile = DefaultMaxPatchFileBytes
	}
	if maxTotal == 0 {
		maxTotal = DefaultMaxPatchTotalBytes
	}
	if maxTotal > 0 && p.total >= maxTotal {
		return fmt.Sprintf("Files %s and %s differ (no patch: this diff's patches passed %d bytes)\n", la, lb, maxTotal), nil
	}
	var sizeA, sizeB uint64
	if fa != nil {
		sizeA = fa.Size
	}
	if fb != nil {
		sizeB = fb.Size
	}
	if sizeA > uint64(maxFile) || sizeB > uint64(maxFile) {
		return fmt.Sprintf("Large files %s and %s differ (%d -> %d bytes; patches stop at %d bytes)\n", la, lb, sizeA, sizeB, maxFile), nil
	}
	a, err := p.content(p.atA, e.Ino, fa, ta)
	if err != nil {
		return "", err
	}
	b, err := p.content(p.atB, e.Ino, fb, tb)
	if err != nil {
		return "", err
	}
	var out string
	switch {
	case bytes.Equal(a, b):
		return "", nil
	case looksBinary(a) || looksBinary(b):
		out = fmt.Sprintf("Binary files %s and %s differ\n", la, lb)
	default:
		ctx := p.o.Context
		if ctx <= 0 {
			ctx = 3
		}
		out = textdiff.Unified(la, lb, a, b, ctx)
	}
	p.total += int64(len(out))
	return out, nil
}

// looksBinary says whether data looks binary, as git decides it: a NUL in the
// first 8,000 bytes.
func looksBinary(data []byte) bool { return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 }

// content is a file's content at a state: a regular file's bytes, a
// symlink's target, nothing for a file that is not there.
func (p *patcher) content(at *versions.At, ino Ino, a *Attr, target string) ([]byte, error) {
	switch {
	case a == nil:
		return nil, nil
	case a.IsSymlink():
		return []byte(target), nil
	}
	out := make([]byte, a.Size)
	for idx := int64(0); idx*p.cs < int64(a.Size); idx++ {
		b, err := at.Get(bucketChunks, chunkKey(ino, uint64(idx)))
		if err != nil {
			return nil, fmt.Errorf("diff: chunk %d of inode %d: %w", idx, ino, err)
		}
		if b == nil {
			continue // a hole
		}
		if len(b) != chunkstore.IDSize {
			return nil, fmt.Errorf("diff: chunk %d of inode %d: %w", idx, ino, errBadRecord)
		}
		data, err := p.tx.Get(chunkstore.ID(b), nil)
		if err != nil {
			return nil, fmt.Errorf("diff: chunk %d of inode %d: %w", idx, ino, err)
		}
		copy(out[idx*p.cs:], data)
	}
	return out, nil
}
