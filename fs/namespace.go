package fs

import (
	"errors"
	"sort"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
)

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		return syscall.EINVAL
	}
	if len(name) > maxName {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// entryLocked finds name in directory d: the overlay first, then the store.
func (f *FS) entryLocked(d *node, name string) (dirent, bool, error) {
	if ch, ok := d.entries[name]; ok {
		return ch.d, ch.d.Ino != 0, nil
	}
	var de dirent
	var found bool
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		de, found, err = f.direntTx(tx, d.attr.Ino, name)
		return err
	})
	return de, found, err
}

// direntTx reads name's entry in directory dir from the store; a record
// that does not decode is logged and EIO.
func (f *FS) direntTx(tx *chunkstore.Tx, dir Ino, name string) (dirent, bool, error) {
	v, err := tx.Sealed(bucketDirents).Get(direntKey(dir, name))
	if err != nil || v == nil {
		return dirent{}, false, err
	}
	de, err := decodeDirent(v)
	if err != nil {
		f.log.Error("corrupt directory entry", "dir", dir, "name", name, "err", err)
		return dirent{}, false, syscall.EIO
	}
	return de, true, nil
}

// entryNodeLocked is entryLocked and, when name is found, getNodeLocked
// of its inode, both from one read transaction when neither is in
// memory. err with found true is the node's.
func (f *FS) entryNodeLocked(d *node, name string) (de dirent, n *node, found bool, err error) {
	if ch, ok := d.entries[name]; ok {
		if ch.d.Ino == 0 {
			return ch.d, nil, false, nil
		}
		n, err = f.getNodeLocked(ch.d.Ino)
		return ch.d, n, true, err
	}
	err = f.view(func(tx *chunkstore.Tx) error {
		var err error
		if de, found, err = f.direntTx(tx, d.attr.Ino, name); err != nil || !found {
			return err
		}
		if f.nodes[de.Ino] != nil || f.dead[de.Ino] {
			return nil
		}
		n, err = f.loadNodeTx(tx, de.Ino)
		return err
	})
	switch {
	case !found:
		return de, nil, false, err
	case err != nil:
		return de, nil, true, err
	case n != nil:
		f.addNodeLocked(n)
		return de, n, true, nil
	}
	n, err = f.getNodeLocked(de.Ino)
	return de, n, true, err
}

func (f *FS) setEntryLocked(d *node, name string, de dirent) {
	if d.entries == nil {
		d.entries = make(map[string]*entryChange)
	}
	d.entries[name] = &entryChange{d: de, gen: f.bump()}
	d.listGen = f.gen
	f.dirty[d.attr.Ino] = d
}

// dirLocked returns the node of a directory inode.
func (f *FS) dirLocked(ino Ino) (*node, error) {
	d, err := f.getNodeLocked(ino)
	if err != nil {
		return nil, err
	}
	if !d.attr.IsDir() {
		return nil, syscall.ENOTDIR
	}
	if d.attr.Nlink == 0 {
		return nil, syscall.ENOENT
	}
	return d, nil
}

// Lookup finds name in directory parent.
func (f *FS) Lookup(c Caller, parent Ino, name string) (Attr, error) {
	if len(name) > maxName {
		return Attr{}, syscall.ENAMETOOLONG
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.dirLocked(parent)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(d)
	switch name {
	case ".":
		return f.refLocked(c, d), nil
	case "..":
		p, err := f.getNodeLocked(d.attr.Parent)
		if err != nil {
			return Attr{}, err
		}
		return f.refLocked(c, p), nil
	}
	de, n, ok, err := f.entryNodeLocked(d, name)
	if !ok {
		if err == nil {
			err = syscall.ENOENT
		}
		return Attr{}, err
	}
	if err != nil {
		if err == syscall.ENOENT {
			f.log.Error("directory entry names a missing inode", "dir", parent, "name", name, "ino", de.Ino)
			return Attr{}, syscall.EIO
		}
		return Attr{}, err
	}
	nameNode(n, parent, name)
	return f.refLocked(c, n), nil
}

// refLocked takes a kernel reference on n when the kernel asks.
func (f *FS) refLocked(c Caller, n *node) Attr {
	if c.Kernel {
		n.lookups++
	} else {
		defer f.maybeForgetLocked(n)
	}
	return f.attrOfLocked(n)
}

// NewNode describes an inode to create.
type NewNode struct {
	Mode   uint32 // type and permission bits, stored exactly
	Rdev   uint32
	Target string // symlinks
	// Tmpfile makes an unnamed regular file (O_TMPFILE), returned open:
	// name is ignored, and Link can give it a name later.
	Tmpfile bool
}

// Create makes a new inode named name in parent. Mode is stored as given:
// the kernel has already applied the caller's umask.
func (f *FS) Create(c Caller, parent Ino, name string, nn NewNode) (Attr, error) {
	if nn.Tmpfile {
		name, nn.Mode = "tmpfile", nn.Mode&^uint32(syscall.S_IFMT)|syscall.S_IFREG
	}
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	switch nn.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK:
	case syscall.S_IFLNK:
		if len(nn.Target) > maxSymlink {
			return Attr{}, syscall.ENAMETOOLONG
		}
		if nn.Target == "" {
			return Attr{}, syscall.ENOENT
		}
	case 0:
		nn.Mode |= syscall.S_IFREG
	default:
		return Attr{}, syscall.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return Attr{}, syscall.EROFS
	}
	d, err := f.dirLocked(parent)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(d)
	if !nn.Tmpfile {
		if _, ok, err := f.entryLocked(d, name); err != nil {
			return Attr{}, err
		} else if ok {
			return Attr{}, syscall.EEXIST
		}
	}
	if f.nextIno >= f.inoLimit {
		// Inode numbers are never reused; above MaxIno they would clash
		// with the mount's snapshot nodes, and the workspace's stop below
		// the forks' ranges (fork.go).
		return Attr{}, syscall.ENOSPC
	}
	t := now()
	a := Attr{Ino: f.nextIno, Mode: nn.Mode, Nlink: 1, Uid: c.Uid, Gid: c.Gid, Rdev: nn.Rdev, Atime: t, Mtime: t, Ctime: t, Btime: t}
	f.nextIno++
	if d.attr.Mode&syscall.S_ISGID != 0 {
		// BSD group semantics of a setgid directory.
		a.Gid = d.attr.Gid
		if a.IsDir() {
			a.Mode |= syscall.S_ISGID
		}
	}
	// A directory's parent is the one directory that names it; any
	// other file's is a directory that names it, a hint that lets a
	// snapshot diff name the file without walking the tree.
	a.Parent = d.attr.Ino
	if a.IsDir() {
		a.Nlink = 2
		d.attr.Nlink++
	}
	if a.IsSymlink() {
		a.Size = uint64(len(nn.Target))
	}
	n := &node{attr: a, target: nn.Target, trunc: noTrunc, truncCommitting: noTrunc}
	f.nodes[a.Ino] = n
	if nn.Tmpfile {
		n.attr.Nlink, n.orphan, n.tmpfile = 0, true, true
		n.opens++ // the caller's open handle; Release drops it
		f.markDirtyLocked(n)
		return f.refLocked(c, n), nil
	}
	f.markDirtyLocked(n)
	f.setEntryLocked(d, name, dirent{Ino: a.Ino, Type: a.Mode & syscall.S_IFMT})
	d.attr.Mtime, d.attr.Ctime = t, t
	f.markDirtyLocked(d)
	nameNode(n, parent, name)
	f.recordLocked(OpCreate, n, f.childPathLocked(d, name), "")
	return f.refLocked(c, n), nil
}

// Readlink returns a symlink's target.
func (f *FS) Readlink(ino Ino) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return "", err
	}
	defer f.maybeForgetLocked(n)
	if !n.attr.IsSymlink() {
		return "", syscall.EINVAL
	}
	return n.target, nil
}

// Link adds a name for an existing non-directory inode.
func (f *FS) Link(c Caller, ino, parent Ino, name string) (Attr, error) {
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return Attr{}, syscall.EROFS
	}
	d, err := f.dirLocked(parent)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(d)
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(n)
	if n.attr.IsDir() {
		return Attr{}, syscall.EPERM
	}
	if n.attr.Nlink == 0 && !n.tmpfile {
		return Attr{}, syscall.ENOENT
	}
	if n.attr.Nlink >= 65000 {
		return Attr{}, syscall.EMLINK
	}
	if _, ok, err := f.entryLocked(d, name); err != nil {
		return Attr{}, err
	} else if ok {
		return Attr{}, syscall.EEXIST
	}
	// Only a link that succeeds uses up a tmpfile's right to be linked.
	f.flushFlagsLocked(n)
	if n.tmpfile {
		// Its data was written while it had no name: list it as created.
		defer f.recordLocked(OpCreate, n, f.childPathLocked(d, name), "")
	} else {
		defer f.recordLocked(OpLink, n, f.childPathLocked(d, name), "")
	}
	nameNode(n, parent, name)
	if n.tmpfile || n.attr.Parent == 0 {
		n.attr.Parent = parent // its first name, or a record written before files had parents
	}
	n.tmpfile = false
	n.attr.Nlink++
	f.touchLocked(n, false)
	f.setEntryLocked(d, name, dirent{Ino: ino, Type: n.attr.Mode & syscall.S_IFMT})
	f.touchLocked(d, true)
	return f.refLocked(c, n), nil
}

// Replace names the unnamed file ino (made by Create with Tmpfile) name
// in parent, atomically replacing the non-directory that held the name,
// if any (EEXIST instead when noReplace). It is how the file API writes a
// whole file: readers see the old content or the new, never a mix, and
// the journal records one create or write of the name.
func (f *FS) Replace(c Caller, ino, parent Ino, name string, noReplace bool) (Attr, error) {
	return f.replace(c, ino, parent, name, noReplace, nil)
}

// ErrChanged is ReplaceIf's error when the name no longer names the
// inode expected, or that inode changed since its version was taken.
var ErrChanged = errors.New("changed since its version was taken")

// ReplaceIf is Replace of an existing name that succeeds only while the
// name still names old and old is at version (from OpenVersion): a
// compare-and-swap against every door, the kernel's included. Otherwise
// it changes nothing and returns ErrChanged.
func (f *FS) ReplaceIf(c Caller, ino, parent Ino, name string, old Ino, version uint64) (Attr, error) {
	return f.replace(c, ino, parent, name, false, &expectation{ino: old, version: version})
}

// expectation is what ReplaceIf requires of the name it replaces.
type expectation struct {
	ino     Ino
	version uint64
}

// OpenVersion is Open, and also returns the inode's version: while the
// inode is open, the version changes with every change to it (data,
// size, attributes, links) and with nothing else.
func (f *FS) OpenVersion(ino Ino) (Attr, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, 0, err
	}
	n.opens++
	return f.attrOfLocked(n), n.version, nil
}

func (f *FS) replace(c Caller, ino, parent Ino, name string, noReplace bool, want *expectation) (Attr, error) {
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return Attr{}, syscall.EROFS
	}
	d, err := f.dirLocked(parent)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(d)
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, err
	}
	defer f.maybeForgetLocked(n)
	if !n.tmpfile || n.attr.Nlink != 0 {
		return Attr{}, syscall.EINVAL
	}
	old, exists, err := f.entryLocked(d, name)
	if err != nil {
		return Attr{}, err
	}
	if want != nil && (!exists || old.Ino != want.ino) {
		return Attr{}, ErrChanged
	}
	if exists {
		if noReplace {
			return Attr{}, syscall.EEXIST
		}
		on, err := f.getNodeLocked(old.Ino)
		if err != nil {
			return Attr{}, err
		}
		defer f.maybeForgetLocked(on)
		if want != nil && on.version != want.version {
			return Attr{}, ErrChanged
		}
		if on.attr.IsDir() {
			return Attr{}, syscall.EISDIR
		}
		f.flushFlagsLocked(on)
		if on.jparent == parent && on.jname == name {
			on.jname = ""
		}
		f.dropLinkLocked(d, on)
	}
	f.flushFlagsLocked(n) // changes made while unnamed are not recorded
	n.tmpfile, n.orphan = false, false
	n.attr.Nlink = 1
	n.attr.Parent = parent
	f.touchLocked(n, false)
	f.setEntryLocked(d, name, dirent{Ino: ino, Type: n.attr.Mode & syscall.S_IFMT})
	f.touchLocked(d, true)
	nameNode(n, parent, name)
	op := OpCreate
	if exists {
		op = OpWrite
	}
	f.recordLocked(op, n, f.childPathLocked(d, name), "")
	return f.refLocked(c, n), nil
}

// Unlink removes a non-directory name.
func (f *FS) Unlink(parent Ino, name string) error { return f.remove(parent, name, false) }

// Rmdir removes an empty directory.
func (f *FS) Rmdir(parent Ino, name string) error { return f.remove(parent, name, true) }

func (f *FS) remove(parent Ino, name string, dir bool) error {
	if len(name) > maxName {
		return syscall.ENAMETOOLONG
	}
	if name == "." {
		return syscall.EINVAL
	}
	if name == ".." {
		return syscall.ENOTEMPTY
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return syscall.EROFS
	}
	d, err := f.dirLocked(parent)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(d)
	_, n, ok, err := f.entryNodeLocked(d, name)
	if !ok {
		if err == nil {
			err = syscall.ENOENT
		}
		return err
	}
	if err != nil {
		return err
	}
	if dir != n.attr.IsDir() {
		f.maybeForgetLocked(n)
		if dir {
			return syscall.ENOTDIR
		}
		return syscall.EISDIR
	}
	if dir {
		empty, err := f.emptyLocked(n)
		if err != nil {
			return err
		}
		if !empty {
			return syscall.ENOTEMPTY
		}
	}
	f.flushFlagsLocked(n)
	f.recordLocked(OpRemove, n, f.childPathLocked(d, name), "")
	if n.jparent == parent && n.jname == name {
		n.jname = ""
	}
	f.setEntryLocked(d, name, dirent{})
	f.dropLinkLocked(d, n)
	f.touchLocked(d, true)
	f.maybeForgetLocked(n)
	return nil
}

// dropLinkLocked accounts for one name of n going away from directory d.
func (f *FS) dropLinkLocked(d, n *node) {
	if n.attr.IsDir() {
		n.attr.Nlink = 0
		d.attr.Nlink--
	} else {
		n.attr.Nlink--
	}
	f.touchLocked(n, false)
	if n.attr.Nlink == 0 {
		n.orphan = true
	}
}

// emptyLocked reports whether directory n has no entries.
func (f *FS) emptyLocked(n *node) (bool, error) {
	for _, ch := range n.entries {
		if ch.d.Ino != 0 {
			return false, nil
		}
	}
	empty := true
	err := f.view(func(tx *chunkstore.Tx) error {
		prefix := inoKey(n.attr.Ino)
		c := tx.Sealed(bucketDirents).Cursor()
		for k, _, err := c.SeekWithin(prefix, prefix); k != nil; k, _, err = c.NextWithin(prefix) {
			if err != nil {
				return err
			}
			if ch, ok := n.entries[string(k[8:])]; ok && ch.d.Ino == 0 {
				continue
			}
			empty = false
			return nil
		}
		return nil
	})
	return empty, err
}

// Rename flags (renameat2).
const (
	RenameNoReplace = 1 << 0
	RenameExchange  = 1 << 1
	RenameWhiteout  = 1 << 2
)

// Rename moves oldName in oldParent to newName in newParent, atomically.
func (f *FS) Rename(oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) error {
	if err := checkName(newName); err != nil {
		return err
	}
	if err := checkName(oldName); err != nil {
		return err
	}
	if flags&^(RenameNoReplace|RenameExchange) != 0 || flags == RenameNoReplace|RenameExchange {
		return syscall.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var walked []*node // ancestors loaded by the loop checks
	defer func() {
		for _, n := range walked {
			f.maybeForgetLocked(n)
		}
	}()
	if f.broken != nil {
		return syscall.EROFS
	}
	od, err := f.dirLocked(oldParent)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(od)
	nd, err := f.dirLocked(newParent)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(nd)
	src, ok, err := f.entryLocked(od, oldName)
	if err != nil {
		return err
	}
	if !ok {
		return syscall.ENOENT
	}
	dst, dstOK, err := f.entryLocked(nd, newName)
	if err != nil {
		return err
	}
	sn, err := f.getNodeLocked(src.Ino)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(sn)
	if sn.attr.IsDir() && od != nd {
		if loop, err := f.isAncestorLocked(sn.attr.Ino, nd, &walked); err != nil {
			return err
		} else if loop {
			return syscall.EINVAL
		}
	}
	if flags&RenameExchange != 0 {
		if !dstOK {
			return syscall.ENOENT
		}
		dn, err := f.getNodeLocked(dst.Ino)
		if err != nil {
			return err
		}
		defer f.maybeForgetLocked(dn)
		if dn.attr.IsDir() && od != nd {
			if loop, err := f.isAncestorLocked(dn.attr.Ino, od, &walked); err != nil {
				return err
			} else if loop {
				return syscall.EINVAL
			}
		}
		f.flushFlagsLocked(sn)
		f.flushFlagsLocked(dn)
		oldPath, newPath := f.childPathLocked(od, oldName), f.childPathLocked(nd, newName)
		f.recordLocked(OpRename, sn, oldPath, newPath)
		f.recordLocked(OpRename, dn, newPath, oldPath)
		f.setEntryLocked(od, oldName, dst)
		f.setEntryLocked(nd, newName, src)
		f.reparentLocked(sn, od, nd)
		f.reparentLocked(dn, nd, od)
		nameNode(sn, newParent, newName)
		nameNode(dn, oldParent, oldName)
		f.touchLocked(sn, false)
		f.touchLocked(dn, false)
		f.touchLocked(od, true)
		f.touchLocked(nd, true)
		return nil
	}
	if dstOK {
		if flags&RenameNoReplace != 0 {
			return syscall.EEXIST
		}
		if dst.Ino == src.Ino {
			return nil // two names of one inode: POSIX says do nothing
		}
		dn, err := f.getNodeLocked(dst.Ino)
		if err != nil {
			return err
		}
		defer f.maybeForgetLocked(dn)
		switch {
		case sn.attr.IsDir() && !dn.attr.IsDir():
			return syscall.ENOTDIR
		case !sn.attr.IsDir() && dn.attr.IsDir():
			return syscall.EISDIR
		case dn.attr.IsDir():
			empty, err := f.emptyLocked(dn)
			if err != nil {
				return err
			}
			if !empty {
				return syscall.ENOTEMPTY
			}
		}
		f.flushFlagsLocked(dn)
		if dn.jparent == newParent && dn.jname == newName {
			dn.jname = ""
		}
		f.dropLinkLocked(nd, dn)
	}
	f.flushFlagsLocked(sn)
	f.recordLocked(OpRename, sn, f.childPathLocked(od, oldName), f.childPathLocked(nd, newName))
	f.setEntryLocked(od, oldName, dirent{})
	f.setEntryLocked(nd, newName, src)
	f.reparentLocked(sn, od, nd)
	nameNode(sn, newParent, newName)
	f.touchLocked(sn, false)
	f.touchLocked(od, true)
	if nd != od {
		f.touchLocked(nd, true)
	}
	return nil
}

// reparentLocked moves a directory's ".." from one parent to another.
// Any other file takes the new directory as its parent hint.
func (f *FS) reparentLocked(n, from, to *node) {
	if !n.attr.IsDir() {
		n.attr.Parent = to.attr.Ino
		return
	}
	if from == to {
		return
	}
	n.attr.Parent = to.attr.Ino
	from.attr.Nlink--
	to.attr.Nlink++
}

// isAncestorLocked reports whether directory ino is d or one of d's
// ancestors: moving ino under d would then make a loop. The ancestors it
// visits are appended to *walked for the caller to forget once it is done
// with them: forgetting them here could drop a node the caller holds (d
// itself, or the other directory of a rename), whose changes would then be
// made to a node no longer in the cache.
func (f *FS) isAncestorLocked(ino Ino, d *node, walked *[]*node) (bool, error) {
	for cur := d; ; {
		if cur.attr.Ino == ino {
			return true, nil
		}
		if cur.attr.Ino == RootIno {
			return false, nil
		}
		p, err := f.getNodeLocked(cur.attr.Parent)
		if err != nil {
			return false, err
		}
		*walked = append(*walked, p)
		cur = p
	}
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string
	Ino  Ino
	Type uint32 // S_IFMT bits
}

// ReadDir lists a directory, "." and ".." first, then the entries in name
// order. It returns a snapshot: callers page through it.
func (f *FS) ReadDir(ino Ino) ([]DirEntry, error) {
	list, _, err := f.ListDir(ino)
	return list, err
}

// DirGen returns a number that changes whenever the entries of directory
// ino change, so that a caller can keep a listing until then.
func (f *FS) DirGen(ino Ino) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.dirLocked(ino)
	if err != nil {
		return 0, err
	}
	defer f.maybeForgetLocked(d)
	return f.listGenLocked(d), nil
}

func (f *FS) listGenLocked(d *node) uint64 {
	if d.listGen == 0 {
		// Loaded from the store since its last change: any number above
		// every generation handed out before will do.
		d.listGen = f.bump()
	}
	return d.listGen
}

// ListDir is ReadDir with the listing's DirGen.
func (f *FS) ListDir(ino Ino) ([]DirEntry, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.dirLocked(ino)
	if err != nil {
		return nil, 0, err
	}
	defer f.maybeForgetLocked(d)
	gen := f.listGenLocked(d)
	list := []DirEntry{
		{Name: ".", Ino: d.attr.Ino, Type: syscall.S_IFDIR},
		{Name: "..", Ino: d.attr.Parent, Type: syscall.S_IFDIR},
	}
	var stored []DirEntry
	err = f.view(func(tx *chunkstore.Tx) error {
		prefix := inoKey(ino)
		c := tx.Sealed(bucketDirents).Cursor()
		for k, v, err := c.SeekWithin(prefix, prefix); k != nil; k, v, err = c.NextWithin(prefix) {
			// A damaged entry fails the listing (EIO) rather than hide
			// a file from it.
			if err != nil {
				return err
			}
			name := string(k[8:])
			if _, ok := d.entries[name]; ok {
				continue
			}
			de, err := decodeDirent(v)
			if err != nil {
				f.log.Error("corrupt directory entry", "dir", ino, "name", name, "err", err)
				continue
			}
			stored = append(stored, DirEntry{Name: name, Ino: de.Ino, Type: de.Type})
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	for name, ch := range d.entries {
		if ch.d.Ino != 0 {
			stored = append(stored, DirEntry{Name: name, Ino: ch.d.Ino, Type: ch.d.Type})
		}
	}
	if len(d.entries) > 0 {
		sort.Slice(stored, func(i, j int) bool { return stored[i].Name < stored[j].Name })
	}
	return append(list, stored...), gen, nil
}

// Open takes an open reference on an inode; Release drops it.
func (f *FS) Open(ino Ino) (Attr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return Attr{}, err
	}
	n.opens++
	return f.attrOfLocked(n), nil
}

// Release drops an open reference. The last one hands the file's dirty
// chunks to the commit pipeline (without waiting) and frees an unlinked
// inode.
func (f *FS) Release(ino Ino) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[ino]
	if n == nil {
		return
	}
	if n.opens > 0 {
		n.opens--
	}
	if n.opens == 0 {
		f.sealAllLocked(n)
	}
	f.maybeForgetLocked(n)
}

// DirEntryAttr is a directory entry with the attributes of the inode it
// names, and a symlink's target.
type DirEntryAttr struct {
	DirEntry
	Attr   Attr
	Target string
}

// ReadDirAttrs lists up to limit entries (0: all) of directory ino whose
// names sort after after ("" from the first), in name order, without "."
// and "..", each with its inode's attributes (Blocks filled in) and a
// symlink's target: ReadDir and a GetAttr per entry, in one call. The
// listing and the attributes of every entry not in memory come from one
// read transaction under one hold of mu, so they agree: an entry never
// names an inode that is gone or unlinked. Paging by name (after = the
// last name returned) is stable while entries come and go. Inodes read
// for it are not kept in memory, and their chunk lists are not checked
// against their summaries (a read of the file does that).
func (f *FS) ReadDirAttrs(ino Ino, after string, limit int) ([]DirEntryAttr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.dirLocked(ino)
	if err != nil {
		return nil, err
	}
	defer f.maybeForgetLocked(d)
	// The uncommitted entries after after, in name order.
	var over []DirEntry
	for name, ch := range d.entries {
		if ch.d.Ino != 0 && name > after {
			over = append(over, DirEntry{Name: name, Ino: ch.d.Ino, Type: ch.d.Type})
		}
	}
	sort.Slice(over, func(i, j int) bool { return over[i].Name < over[j].Name })
	var out []DirEntryAttr
	err = f.view(func(tx *chunkstore.Tx) error {
		// The first limit stored entries not overlaid: with the first
		// limit of the overlay they hold the first limit of the listing.
		var stored []DirEntry
		prefix := inoKey(ino)
		c := tx.Sealed(bucketDirents).Cursor()
		for k, v, err := c.SeekWithin(direntKey(ino, after), prefix); k != nil; k, v, err = c.NextWithin(prefix) {
			if limit > 0 && len(stored) == limit {
				break
			}
			// A damaged entry fails the listing (EIO) rather than hide
			// a file from it.
			if err != nil {
				return err
			}
			name := string(k[8:])
			if name <= after {
				continue
			}
			if _, ok := d.entries[name]; ok {
				continue
			}
			de, err := decodeDirent(v)
			if err != nil {
				f.log.Error("corrupt directory entry", "dir", ino, "name", name, "err", err)
				continue
			}
			stored = append(stored, DirEntry{Name: name, Ino: de.Ino, Type: de.Type})
		}
		list := mergeEntries(stored, over, limit)
		out = make([]DirEntryAttr, 0, len(list))
		inodes := tx.Sealed(bucketInodes)
		for _, e := range list {
			if n := f.nodes[e.Ino]; n != nil {
				out = append(out, DirEntryAttr{DirEntry: e, Attr: f.attrOfLocked(n), Target: n.target})
				continue
			}
			if f.dead[e.Ino] {
				continue
			}
			v, err := inodes.Get(inoKey(e.Ino))
			if err != nil {
				return err
			}
			if v == nil {
				f.log.Error("directory entry names no inode", "dir", ino, "name", e.Name, "ino", e.Ino)
				continue
			}
			a, target, sum, err := decodeInodeSum(e.Ino, v)
			if err != nil {
				f.log.Error("corrupt inode record", "ino", e.Ino, "err", err)
				return syscall.EIO
			}
			if a.IsRegular() && !sum.Known {
				// A record without a summary (version 1): the list
				// as it is.
				sum.listSum, _ = scanListSum(tx, e.Ino)
			}
			a.Blocks = blocksOf(&a, sum.Count, f.chunkSize)
			out = append(out, DirEntryAttr{DirEntry: e, Attr: a, Target: target})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mergeEntries merges two lists sorted by name (no name in both) and
// keeps the first limit (0: all).
func mergeEntries(a, b []DirEntry, limit int) []DirEntry {
	if len(b) == 0 {
		return a
	}
	out := make([]DirEntry, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if limit > 0 && len(out) == limit {
			break
		}
		if len(b) == 0 || len(a) > 0 && a[0].Name < b[0].Name {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}
