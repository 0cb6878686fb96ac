package workspace

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/fs"
)

// tree is what the file API reads: the live tree (*fs.FS) or a
// snapshot's (snapTree).
type tree interface {
	Lookup(c fs.Caller, parent fs.Ino, name string) (fs.Attr, error)
	GetAttr(ino fs.Ino) (fs.Attr, error)
	Readlink(ino fs.Ino) (string, error)
	// ReadDir lists a directory, "." and ".." first, then by name.
	ReadDir(ino fs.Ino) ([]fs.DirEntry, error)
	// ReadDirAttrs lists up to limit entries (0: all) named after
	// after, by name, without "." and "..", with their attributes and
	// symlink targets (fs.FS.ReadDirAttrs: one transaction for all).
	ReadDirAttrs(ino fs.Ino, after string, limit int) ([]fs.DirEntryAttr, error)
	Read(ctx context.Context, ino fs.Ino, off int64, dest []byte) (int, error)
	// Open, OpenVersion and Release hold a file open while it is read.
	Open(ino fs.Ino) (fs.Attr, error)
	OpenVersion(ino fs.Ino) (fs.Attr, uint64, error)
	Release(ino fs.Ino)
}

var _ tree = (*fs.FS)(nil)

// errSnapshotStill is the cause of a change feed asked of a snapshot.
var errSnapshotStill = fmt.Errorf("a snapshot does not change: %w", syscall.EINVAL)

// CheckSnapshotName refuses what cannot name a snapshot: empty, "." or
// "..", a slash or a NUL, over 255 bytes.
func CheckSnapshotName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 255 || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("snapshot name %q: want 1 to 255 bytes, no / or NUL, not . or ..: %w", name, syscall.EINVAL)
	}
	return nil
}

// Snapshot returns the file API over snapshot name, read-only: every
// read (stat, read, list, glob, grep, tree, du, readlink) sees the
// workspace as the snapshot does, and every change fails with EROFS. A
// view of a subtree (Sub) gives the same subtree of the snapshot, as
// the snapshot has it. Paths resolve inside the snapshot, never into
// the live tree.
func (w *WS) Snapshot(ctx context.Context, name string) (*WS, error) {
	if w.snap != "" {
		return nil, pathErr("snapshot", name, fmt.Errorf("already a view of snapshot %s: %w", w.snap, syscall.EINVAL))
	}
	if err := CheckSnapshotName(name); err != nil {
		return nil, pathErr("snapshot", name, err)
	}
	v, err := w.f.SnapshotView(name)
	if err != nil {
		return nil, pathErr("snapshot", name, err)
	}
	s := &WS{f: w.f, t: snapTree{v}, snap: name, opts: w.opts, notify: w.notify, rootIno: fs.RootIno, rootDir: "/", rules: w.rules, writeMu: w.writeMu, bufs: w.bufs, onDeny: w.onDeny, forks: w.forks}
	s.opts.ReadOnly = true
	if w.rootDir != "/" {
		return s.Sub(ctx, w.rootDir, true)
	}
	return s, nil
}

// SnapshotReader is an API that gives read-only views of the
// workspace's snapshots (WS, and wsrpc.Client across the daemon's
// socket).
type SnapshotReader interface {
	// SnapshotAPI is the API over snapshot name: reads see the
	// snapshot, changes fail with EROFS. A missing snapshot is ENOENT.
	SnapshotAPI(ctx context.Context, name string) (API, error)
}

var _ SnapshotReader = (*WS)(nil)

// SnapshotAPI is Snapshot as an API.
func (w *WS) SnapshotAPI(ctx context.Context, name string) (API, error) {
	s, err := w.Snapshot(ctx, name)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// SnapshotName is the snapshot w reads, "" for the live tree.
func (w *WS) SnapshotName() string { return w.snap }

// snapTree reads a snapshot: nothing there changes, so opening holds
// nothing.
type snapTree struct{ v *fs.View }

func (s snapTree) Lookup(_ fs.Caller, parent fs.Ino, name string) (fs.Attr, error) {
	switch name {
	case ".":
		return s.dir(parent)
	case "..":
		d, err := s.dir(parent)
		if err != nil {
			return fs.Attr{}, err
		}
		return s.v.GetAttr(d.Parent)
	}
	if len(name) > 255 {
		return fs.Attr{}, syscall.ENAMETOOLONG
	}
	if _, err := s.dir(parent); err != nil {
		return fs.Attr{}, err
	}
	return s.v.Lookup(parent, name)
}

func (s snapTree) dir(ino fs.Ino) (fs.Attr, error) {
	a, err := s.v.GetAttr(ino)
	if err == nil && !a.IsDir() {
		err = syscall.ENOTDIR
	}
	return a, err
}

func (s snapTree) GetAttr(ino fs.Ino) (fs.Attr, error) { return s.v.GetAttr(ino) }
func (s snapTree) Readlink(ino fs.Ino) (string, error) { return s.v.Readlink(ino) }

func (s snapTree) ReadDir(ino fs.Ino) ([]fs.DirEntry, error) {
	d, err := s.dir(ino)
	if err != nil {
		return nil, err
	}
	list, err := s.v.ReadDir(ino)
	if err != nil {
		return nil, err
	}
	return append([]fs.DirEntry{{Name: ".", Ino: ino, Type: syscall.S_IFDIR}, {Name: "..", Ino: d.Parent, Type: syscall.S_IFDIR}}, list...), nil
}

func (s snapTree) ReadDirAttrs(ino fs.Ino, after string, limit int) ([]fs.DirEntryAttr, error) {
	if _, err := s.dir(ino); err != nil {
		return nil, err
	}
	list, err := s.v.ReadDir(ino)
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntryAttr
	for _, e := range list {
		if e.Name <= after || e.Name == "." || e.Name == ".." {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		a, err := s.v.GetAttr(e.Ino)
		if err == syscall.ENOENT {
			continue
		}
		if err != nil {
			return nil, err
		}
		ea := fs.DirEntryAttr{DirEntry: e, Attr: a}
		if a.IsSymlink() {
			if ea.Target, err = s.v.Readlink(e.Ino); err != nil {
				return nil, err
			}
		}
		out = append(out, ea)
	}
	return out, nil
}

func (s snapTree) Read(ctx context.Context, ino fs.Ino, off int64, dest []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.v.Read(ino, off, dest)
}

func (s snapTree) Open(ino fs.Ino) (fs.Attr, error) { return s.v.GetAttr(ino) }

func (s snapTree) OpenVersion(ino fs.Ino) (fs.Attr, uint64, error) {
	a, err := s.v.GetAttr(ino)
	return a, 0, err
}

func (s snapTree) Release(fs.Ino) {}
