package fusefs

import (
	"errors"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The snapshot views: .snapshots/NAME/ at the root of the mount reads
// snapshot NAME, read-only, as ZFS's .zfs/snapshot does
// (fs/SNAPSHOTS.md).
//
// Node ids. Live inodes keep their numbers, all below fs.MaxIno (2^48).
// A node of a snapshot view is ino | slot<<48: the slot is a number this
// mount gives each snapshot it has shown, keyed by what makes the
// snapshot unique (name, epoch and creation time), not by its name, so
// that a snapshot deleted and made again under its name never shows the
// old one's cached nodes. Slots are given from 1 up and taken back only
// once their snapshot is gone and the kernel has forgotten every node of
// theirs; a slot taken back is given with the next generation. The
// .snapshots directory itself is snapDirID, in the last slot.
//
// Caching. What a snapshot holds never changes, so its nodes, names and
// misses are cached with snapTimeout. The .snapshots directory's listing
// changes as snapshots are made and deleted: SnapshotsChanged drops it,
// and a name missing from it is never cached.
//
// A real .snapshots. The root's listing does not show the view. If the
// workspace has a real file or directory named .snapshots at its root
// (made through the file API, or before views existed), the real one
// wins: lookup finds it, and the view is not reachable in the mount
// (the file API's --snapshot still reads the snapshots). The mount itself
// never makes a real one: the name is taken by the view, so creating,
// linking or renaming onto it fails (EEXIST, EROFS), as does removing or
// renaming the view.

// SnapshotsDir is the name of the snapshot views' directory at the root.
const SnapshotsDir = ".snapshots"

const (
	slotShift = 48
	lastSlot  = 1<<(64-slotShift) - 1
	// snapDirID is the .snapshots directory's node id and inode number.
	snapDirID = uint64(lastSlot)<<slotShift | uint64(fs.RootIno)
	// snapTimeout is how long the kernel keeps what it learnt of a
	// snapshot's nodes.
	snapTimeout = 24 * time.Hour
)

// snapKey is what makes a snapshot unique over the mount's life.
type snapKey struct {
	name    string
	epoch   uint64
	created int64
}

type snapSlot struct {
	view *fs.View
	gen  uint64
	refs uint64 // the kernel's lookups of this slot's nodes
}

// snapViews are the slots given to snapshots.
type snapViews struct {
	mu    sync.Mutex
	slots map[uint16]*snapSlot
	byKey map[snapKey]uint16
	next  uint16 // the last slot given, while the slots last
}

// isSnapNode says whether node id is in a snapshot view or is the
// .snapshots directory.
func isSnapNode(id uint64) bool { return id >= uint64(fs.MaxIno) }

func splitNode(id uint64) (uint16, fs.Ino) {
	return uint16(id >> slotShift), fs.Ino(id & (1<<slotShift - 1))
}

func nodeOf(slot uint16, ino fs.Ino) uint64 { return uint64(slot)<<slotShift | uint64(ino) }

// slotOf gives the slot of view, the one it had if it had one.
func (s *snapViews) slotOf(view *fs.View) (uint16, uint64, error) {
	k := snapKey{view.Name, view.Epoch, view.Created}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot, ok := s.byKey[k]; ok {
		sl := s.slots[slot]
		return slot, sl.gen, nil
	}
	if s.slots == nil {
		s.slots = make(map[uint16]*snapSlot)
		s.byKey = make(map[snapKey]uint16)
	}
	var slot uint16
	if s.next < lastSlot-1 {
		s.next++
		slot = s.next
	} else {
		// Every slot was given once: take back one whose snapshot is
		// gone and whose nodes the kernel forgot.
		for cand, sl := range s.slots {
			if sl.refs > 0 {
				continue
			}
			if _, err := sl.view.GetAttr(fs.RootIno); !errors.Is(err, syscall.ESTALE) {
				continue
			}
			slot = cand
			delete(s.byKey, snapKey{sl.view.Name, sl.view.Epoch, sl.view.Created})
			break
		}
		if slot == 0 {
			return 0, 0, syscall.ENOSPC
		}
	}
	gen := uint64(1)
	if old := s.slots[slot]; old != nil {
		gen = old.gen + 1
	}
	s.slots[slot] = &snapSlot{view: view, gen: gen}
	s.byKey[k] = slot
	return slot, gen, nil
}

// view is the view of slot, or ESTALE for a slot never given.
func (s *snapViews) view(slot uint16) (*fs.View, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[slot]
	if sl == nil {
		return nil, 0, syscall.ESTALE
	}
	return sl.view, sl.gen, nil
}

func (s *snapViews) ref(slot uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.slots[slot]; sl != nil {
		sl.refs++
	}
}

func (s *snapViews) forget(slot uint16, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.slots[slot]; sl != nil {
		sl.refs -= min(n, sl.refs)
	}
}

// SnapshotsChanged tells the mount that snapshot name was made or
// deleted (through the daemon, say), so that .snapshots shows it or
// stops showing it at once. The kernel drops the name and the listing.
func (s *Server) SnapshotsChanged(name string) {
	if name != "" {
		s.srv.EntryNotify(snapDirID, name)
	}
	s.srv.InodeNotify(snapDirID, 0, 0)
}

// snapDirAttr is the .snapshots directory's attributes: read-only,
// owned as the root is.
func (r *rawFS) snapDirAttr() (fs.Attr, error) {
	root, err := r.fs.GetAttr(fs.RootIno)
	if err != nil {
		return fs.Attr{}, err
	}
	t := r.base.UnixNano()
	return fs.Attr{Ino: fs.Ino(snapDirID), Mode: syscall.S_IFDIR | 0o555, Nlink: 2, Uid: root.Uid, Gid: root.Gid,
		Atime: t, Mtime: t, Ctime: t, Btime: t, Parent: fs.RootIno}, nil
}

// realSnapshotsDir says whether the workspace has a real .snapshots at
// its root, which then hides the view.
func (r *rawFS) realSnapshotsDir() bool {
	_, err := r.fs.Lookup(fs.Caller{}, fs.RootIno, SnapshotsDir)
	return err == nil
}

// takesSnapshotsName says whether a change naming name in parent would
// make or replace .snapshots at the root while the view holds it.
func (r *rawFS) takesSnapshotsName(parent uint64, name string) bool {
	return parent == uint64(fs.RootIno) && name == SnapshotsDir && !r.realSnapshotsDir()
}

// snapEntry fills out for a node of a snapshot view (or the .snapshots
// directory), taking a lookup reference.
func (r *rawFS) snapEntry(slot uint16, gen uint64, a *fs.Attr, out *fuse.EntryOut) {
	a.Ino = fs.Ino(nodeOf(slot, a.Ino))
	out.NodeId = uint64(a.Ino)
	out.Generation = gen
	out.SetEntryTimeout(snapTimeout)
	out.SetAttrTimeout(snapTimeout)
	r.fillAttr(a, &out.Attr)
	if slot != lastSlot {
		r.snaps.ref(slot)
	}
}

// snapLookup serves LOOKUP in .snapshots and in snapshot views.
func (r *rawFS) snapLookup(parent uint64, name string, out *fuse.EntryOut) fuse.Status {
	if parent == snapDirID {
		view, err := r.fs.SnapshotView(name)
		if errors.Is(err, syscall.ENOENT) {
			out.NodeId = 0
			out.SetEntryTimeout(0) // a snapshot may be made by that name
			return fuse.OK
		}
		if err != nil {
			return errStatus(err)
		}
		a, err := view.GetAttr(fs.RootIno)
		if err != nil {
			return errStatus(err)
		}
		slot, gen, err := r.snaps.slotOf(view)
		if err != nil {
			return errStatus(err)
		}
		r.snapEntry(slot, gen, &a, out)
		return fuse.OK
	}
	slot, ino := splitNode(parent)
	view, gen, err := r.snaps.view(slot)
	if err != nil {
		return errStatus(err)
	}
	a, err := view.Lookup(ino, name)
	if errors.Is(err, syscall.ENOENT) {
		out.NodeId = 0
		out.SetEntryTimeout(snapTimeout) // nothing is ever added there
		return fuse.OK
	}
	if err != nil {
		return errStatus(err)
	}
	r.snapEntry(slot, gen, &a, out)
	return fuse.OK
}

// snapAttr is the attributes of a node of a snapshot view, or of the
// .snapshots directory, as the kernel numbers them.
func (r *rawFS) snapAttr(id uint64) (fs.Attr, error) {
	if id == snapDirID {
		return r.snapDirAttr()
	}
	slot, ino := splitNode(id)
	view, _, err := r.snaps.view(slot)
	if err != nil {
		return fs.Attr{}, err
	}
	a, err := view.GetAttr(ino)
	if err != nil {
		return fs.Attr{}, err
	}
	a.Ino = fs.Ino(id)
	return a, nil
}

func (r *rawFS) snapView(id uint64) (*fs.View, fs.Ino, error) {
	if id == snapDirID {
		return nil, 0, syscall.EISDIR
	}
	slot, ino := splitNode(id)
	view, _, err := r.snaps.view(slot)
	return view, ino, err
}

// snapListing is the listing of directory id of a snapshot view, or of
// .snapshots, numbered as the kernel knows the nodes.
func (r *rawFS) snapListing(id uint64) (*listing, error) {
	if id == snapDirID {
		snaps, err := r.fs.Snapshots()
		if err != nil {
			return nil, err
		}
		entries := []fs.DirEntry{{Name: ".", Ino: fs.Ino(snapDirID), Type: syscall.S_IFDIR}, {Name: "..", Ino: fs.RootIno, Type: syscall.S_IFDIR}}
		for _, sn := range snaps {
			view, err := r.fs.SnapshotView(sn.Name)
			if err != nil {
				continue // deleted meanwhile
			}
			slot, _, err := r.snaps.slotOf(view)
			if err != nil {
				return nil, err
			}
			entries = append(entries, fs.DirEntry{Name: sn.Name, Ino: fs.Ino(nodeOf(slot, fs.RootIno)), Type: syscall.S_IFDIR})
		}
		return newListing(entries, 0), nil
	}
	slot, ino := splitNode(id)
	view, gen, err := r.snaps.view(slot)
	if err != nil {
		return nil, err
	}
	return r.dirs.getFixed(fs.Ino(id), gen, func() ([]fs.DirEntry, error) {
		a, err := view.GetAttr(ino)
		if err != nil {
			return nil, err
		}
		if !a.IsDir() {
			return nil, syscall.ENOTDIR
		}
		up := nodeOf(slot, a.Parent)
		if ino == fs.RootIno {
			up = snapDirID
		}
		list, err := view.ReadDir(ino)
		if err != nil {
			return nil, err
		}
		entries := make([]fs.DirEntry, 0, len(list)+2)
		entries = append(entries, fs.DirEntry{Name: ".", Ino: fs.Ino(id), Type: syscall.S_IFDIR}, fs.DirEntry{Name: "..", Ino: fs.Ino(up), Type: syscall.S_IFDIR})
		for _, e := range list {
			e.Ino = fs.Ino(nodeOf(slot, e.Ino))
			entries = append(entries, e)
		}
		return entries, nil
	})
}

// snapReadDir serves READDIR(PLUS) in .snapshots and in snapshot views.
func (r *rawFS) snapReadDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	l, err := r.snapListing(in.NodeId)
	if err != nil {
		return errStatus(err)
	}
	i := sort.Search(len(l.cookies), func(i int) bool { return l.cookies[i] > in.Offset })
	for ; i < len(l.entries); i++ {
		e := l.entries[i]
		de := fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Type, Off: l.cookies[i]}
		if !plus {
			if !out.AddDirEntry(de) {
				break
			}
			continue
		}
		eo := out.AddDirLookupEntry(de)
		if eo == nil {
			break
		}
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if st := r.snapLookup(in.NodeId, e.Name, eo); st != fuse.OK || eo.NodeId == 0 {
			*eo = fuse.EntryOut{} // gone meanwhile: the kernel skips nodeid 0
		}
	}
	return fuse.OK
}

// snapSeek serves SEEK_DATA and SEEK_HOLE in a snapshot: the whole file
// reads as data.
func (r *rawFS) snapSeek(id uint64, off uint64, whence uint32) (uint64, error) {
	a, err := r.snapAttr(id)
	if err != nil {
		return 0, err
	}
	if off >= a.Size {
		return 0, syscall.ENXIO
	}
	if whence == fs.SeekData {
		return off, nil
	}
	return a.Size, nil
}
