package workspace

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
)

// MkdirOptions qualify Mkdir.
type MkdirOptions struct {
	// Parents creates missing parents and accepts an existing directory.
	Parents bool   `json:"parents,omitempty"`
	Perm    uint32 `json:"perm,omitempty"` // 0755 if 0
}

// Mkdir makes a directory.
func (w *WS) Mkdir(ctx context.Context, p string, opt MkdirOptions) (FileInfo, error) {
	const op = "mkdir"
	if w.opts.ReadOnly {
		return FileInfo{}, pathErr(op, p, syscall.EROFS)
	}
	perm := opt.Perm
	if perm == 0 {
		perm = 0o755
	}
	if perm&^0o7777 != 0 {
		return FileInfo{}, pathErr(op, p, fmt.Errorf("bad permission %o: %w", perm, syscall.EINVAL))
	}
	if opt.Parents {
		if err := w.mkParents(ctx, op, p); err != nil {
			return FileInfo{}, err
		}
	}
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		return FileInfo{}, asCreate(err)
	}
	if r.ino != 0 {
		if opt.Parents && r.attr.IsDir() {
			return w.info(r.path, &r.attr), nil
		}
		return FileInfo{}, pathErr(op, p, syscall.EEXIST)
	}
	if err := w.canChange(op, p, r); err != nil {
		return FileInfo{}, err
	}
	a, err := w.f.Create(w.opts.Caller, r.parent, r.name, fs.NewNode{Mode: syscall.S_IFDIR | perm})
	if err == syscall.EEXIST && opt.Parents {
		return w.Stat(ctx, p)
	}
	if err != nil {
		return FileInfo{}, pathErr(op, p, err)
	}
	w.invalidate(r.parent, r.name, 0)
	return w.info(r.path, &a), nil
}

// mkParents makes the missing directories above p's last name.
func (w *WS) mkParents(ctx context.Context, op, p string) error {
	clean, err := CleanPath(p)
	if err != nil {
		return pathErr(op, p, err)
	}
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for i := 1; i < len(parts); i++ {
		dir := "/" + strings.Join(parts[:i], "/")
		r, err := w.resolve(ctx, op, dir, true)
		if err != nil {
			return asCreate(err)
		}
		if r.ino != 0 {
			if !r.attr.IsDir() {
				return pathErr(op, dir, syscall.ENOTDIR)
			}
			continue
		}
		if err := w.canChange(op, dir, r); err != nil {
			return err
		}
		_, err = w.f.Create(w.opts.Caller, r.parent, r.name, fs.NewNode{Mode: syscall.S_IFDIR | 0o755})
		if err != nil && err != syscall.EEXIST {
			return pathErr(op, dir, err)
		}
		w.invalidate(r.parent, r.name, 0)
	}
	return nil
}

// RemoveOptions qualify Remove.
type RemoveOptions struct {
	Recursive bool `json:"recursive,omitempty"`
	// Force makes a missing path no error.
	Force bool `json:"force,omitempty"`
}

// Remove deletes p: a file, a symlink (not what it points to), an empty
// directory, or with Recursive a whole tree. It returns how many names it
// removed.
func (w *WS) Remove(ctx context.Context, p string, opt RemoveOptions) (int, error) {
	const op = "remove"
	if w.opts.ReadOnly {
		return 0, pathErr(op, p, syscall.EROFS)
	}
	r, err := w.resolve(ctx, op, p, false)
	if err != nil {
		if opt.Force && Errno(err) == syscall.ENOENT {
			return 0, nil
		}
		return 0, err
	}
	if r.ino == 0 {
		if opt.Force {
			return 0, nil
		}
		return 0, pathErr(op, p, syscall.ENOENT)
	}
	if r.name == "" || r.ino == w.rootIno {
		return 0, pathErr(op, p, fmt.Errorf("cannot remove the workspace root: %w", syscall.EBUSY))
	}
	if err := w.canChange(op, p, r); err != nil {
		return 0, err
	}
	if !r.attr.IsDir() {
		if err := w.f.Unlink(r.parent, r.name); err != nil {
			return 0, pathErr(op, p, err)
		}
		w.invalidate(r.parent, r.name, r.ino)
		return 1, nil
	}
	if !opt.Recursive {
		if err := w.f.Rmdir(r.parent, r.name); err != nil {
			if err == syscall.ENOTEMPTY {
				return 0, pathErr(op, p, fmt.Errorf("directory not empty (remove it recursively): %w", syscall.ENOTEMPTY))
			}
			return 0, pathErr(op, p, err)
		}
		w.invalidate(r.parent, r.name, r.ino)
		return 1, nil
	}
	n, err := w.removeTree(ctx, r.parent, r.name, r.ino, r.path)
	if err != nil {
		return n, pathErr(op, p, err)
	}
	return n, nil
}

func (w *WS) removeTree(ctx context.Context, parent fs.Ino, name string, ino fs.Ino, p string) (int, error) {
	list, err := w.t.ReadDir(ino)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if w.rules != nil {
			// A denied entry is not there to remove (so the directory
			// stays, not empty); a read-only one may not be removed.
			switch v, by := w.verdict(p + "/" + e.Name); v {
			case Deny:
				continue
			case ReadOnly:
				return n, fmt.Errorf("%s/%s: %w", p, e.Name, w.ruleErr("remove", p+"/"+e.Name, p+"/"+e.Name, by, syscall.EROFS))
			}
		}
		if e.Type == syscall.S_IFDIR {
			m, err := w.removeTree(ctx, ino, e.Name, e.Ino, p+"/"+e.Name)
			n += m
			if err != nil {
				return n, err
			}
			continue
		}
		if err := w.f.Unlink(ino, e.Name); err != nil && err != syscall.ENOENT {
			return n, fmt.Errorf("%s/%s: %w", p, e.Name, err)
		}
		w.invalidate(ino, e.Name, e.Ino)
		n++
	}
	if err := w.f.Rmdir(parent, name); err != nil {
		return n, fmt.Errorf("%s: %w", p, err)
	}
	w.invalidate(parent, name, ino)
	return n + 1, nil
}

// RenameOptions qualify Rename.
type RenameOptions struct {
	// NoReplace fails with EEXIST when dst exists.
	NoReplace bool `json:"no_replace,omitempty"`
	// Exchange swaps src and dst atomically; both must exist.
	Exchange bool `json:"exchange,omitempty"`
}

// Rename moves src to dst atomically, with rename(2)'s semantics: an
// existing dst is replaced (an empty directory only by a directory).
func (w *WS) Rename(ctx context.Context, src, dst string, opt RenameOptions) error {
	const op = "rename"
	if w.opts.ReadOnly {
		return pathErr(op, src, syscall.EROFS)
	}
	s, err := w.resolve(ctx, op, src, false)
	if err != nil {
		return err
	}
	if s.ino == 0 {
		return pathErr(op, src, syscall.ENOENT)
	}
	if s.name == "" || s.ino == w.rootIno {
		return pathErr(op, src, fmt.Errorf("cannot move the workspace root: %w", syscall.EBUSY))
	}
	if err := w.canChange(op, src, s); err != nil {
		return err
	}
	d, err := w.resolveChange(ctx, op, dst, false)
	if err != nil {
		return err
	}
	if d.name == "" || d.ino == w.rootIno {
		return pathErr(op, dst, syscall.EBUSY)
	}
	if err := w.canMove(ctx, op, src, s, d); err != nil {
		return err
	}
	if opt.Exchange && d.ino != 0 {
		if err := w.canMove(ctx, op, dst, d, s); err != nil {
			return err
		}
	}
	var flags uint32
	if opt.NoReplace {
		flags |= fs.RenameNoReplace
	}
	if opt.Exchange {
		flags |= fs.RenameExchange
	}
	if err := w.f.Rename(s.parent, s.name, d.parent, d.name, flags); err != nil {
		return pathErr(op, src+" -> "+dst, err)
	}
	w.invalidate(s.parent, s.name, s.ino)
	w.invalidate(d.parent, d.name, d.ino)
	return nil
}

// canMove refuses to move what s resolved (p as given) to where d did
// when the rules protect something it holds: a directory's entries change
// paths too, so each must be allowed where it is and where it goes (a
// denied one is EACCES: the move would carry what the view cannot see).
// Without rules that could apply below either place, nothing is walked.
func (w *WS) canMove(ctx context.Context, op, p string, s, d resolved) error {
	if w.rules == nil || !s.attr.IsDir() || !w.rules.Restricts(w.full(s.path)) && !w.rules.Restricts(w.full(d.path)) {
		return nil
	}
	return w.checkMoved(ctx, op, p, s.ino, s.path, d.path)
}

// checkMoved checks the entries of directory ino, at sp, that would move
// to dp: all of them, those the view hides too.
func (w *WS) checkMoved(ctx context.Context, op, p string, ino fs.Ino, sp, dp string) error {
	if err := ctx.Err(); err != nil {
		return pathErr(op, p, err)
	}
	list, err := w.t.ReadDir(ino)
	if err != nil {
		return pathErr(op, p, err)
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		esp, edp := joinPath(sp, e.Name), joinPath(dp, e.Name)
		for _, q := range []string{esp, edp} {
			switch v, by := w.verdict(q); v {
			case Deny:
				return pathErr(op, p, fmt.Errorf("the directory holds a path the rules protect: %w", w.ruleErr(op, p, "", by, syscall.EACCES)))
			case ReadOnly:
				return pathErr(op, p, fmt.Errorf("%s: %w", q, w.ruleErr(op, p, q, by, syscall.EROFS)))
			}
		}
		if e.Type == syscall.S_IFDIR {
			if err := w.checkMoved(ctx, op, p, e.Ino, esp, edp); err != nil {
				return err
			}
		}
	}
	return nil
}

// CopyOptions qualify Copy.
type CopyOptions struct {
	Recursive bool `json:"recursive,omitempty"`
	// NoReplace fails with EEXIST when dst exists.
	NoReplace bool `json:"no_replace,omitempty"`
}

// Copy copies src to dst. File data is shared, not copied: a copy costs
// O(1) data whatever the size, and the two files part ways on their
// first write. A symlink given as src is followed; symlinks inside a
// copied tree are copied as symlinks. A directory needs Recursive, and
// its dst must not exist. It returns the number of names created.
func (w *WS) Copy(ctx context.Context, src, dst string, opt CopyOptions) (int, error) {
	const op = "copy"
	if w.opts.ReadOnly {
		return 0, pathErr(op, dst, syscall.EROFS)
	}
	s, err := w.resolve(ctx, op, src, true)
	if err != nil {
		return 0, err
	}
	if s.ino == 0 {
		return 0, pathErr(op, src, syscall.ENOENT)
	}
	d, err := w.resolveChange(ctx, op, dst, true)
	if err != nil {
		return 0, err
	}
	if d.name == "" {
		return 0, pathErr(op, dst, syscall.EEXIST)
	}
	if s.attr.IsDir() {
		if !opt.Recursive {
			return 0, pathErr(op, src, fmt.Errorf("is a directory (copy it recursively): %w", syscall.EISDIR))
		}
		if d.ino != 0 {
			return 0, pathErr(op, dst, syscall.EEXIST)
		}
		if strings.HasPrefix(d.path+"/", s.path+"/") {
			return 0, pathErr(op, dst, fmt.Errorf("cannot copy a directory into itself: %w", syscall.EINVAL))
		}
		n, err := w.copyTree(ctx, s.ino, &s.attr, s.path, d.parent, d.name, d.path)
		if err != nil {
			return n, pathErr(op, src+" -> "+dst, err)
		}
		return n, nil
	}
	if d.ino != 0 {
		if opt.NoReplace {
			return 0, pathErr(op, dst, syscall.EEXIST)
		}
		if d.attr.IsDir() {
			return 0, pathErr(op, dst, syscall.EISDIR)
		}
		if d.ino == s.ino {
			return 0, pathErr(op, dst, fmt.Errorf("source and destination are the same file: %w", syscall.EINVAL))
		}
	}
	if err := w.copyNode(ctx, s.ino, &s.attr, d.parent, d.name, !opt.NoReplace && d.ino != 0); err != nil {
		return 0, pathErr(op, src+" -> "+dst, err)
	}
	w.invalidate(d.parent, d.name, d.ino)
	return 1, nil
}

// copyNode copies one non-directory inode to name in dir.
func (w *WS) copyNode(ctx context.Context, src fs.Ino, a *fs.Attr, dir fs.Ino, name string, replace bool) error {
	c := fs.Caller{Uid: w.opts.Caller.Uid, Gid: w.opts.Caller.Gid}
	perm := a.Mode &^ syscall.S_IFMT
	switch {
	case a.IsSymlink():
		target, err := w.t.Readlink(src)
		if err != nil {
			return err
		}
		_, err = w.f.Create(c, dir, name, fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: target})
		return err
	case !a.IsRegular():
		_, err := w.f.Create(c, dir, name, fs.NewNode{Mode: a.Mode, Rdev: a.Rdev})
		return err
	}
	tmp, err := w.tempFile(dir, perm, c.Uid, c.Gid)
	if err != nil {
		return err
	}
	defer w.f.Release(tmp.Ino)
	for off := int64(0); off < int64(a.Size); {
		n, err := w.f.CopyRange(ctx, src, off, tmp.Ino, off, int64(a.Size)-off)
		if err != nil {
			return err
		}
		if n == 0 {
			break // the source shrank meanwhile
		}
		off += n
	}
	_, err = w.f.Replace(c, tmp.Ino, dir, name, !replace)
	return err
}

// copyTree copies directory src (at sp in the view) to name in dir (at dp):
// the entries the rules deny at sp are not there to copy, and an entry
// that would land on a denied or read-only path fails the copy.
func (w *WS) copyTree(ctx context.Context, src fs.Ino, a *fs.Attr, sp string, dir fs.Ino, name, dp string) (int, error) {
	c := fs.Caller{Uid: w.opts.Caller.Uid, Gid: w.opts.Caller.Gid}
	nd, err := w.f.Create(c, dir, name, fs.NewNode{Mode: syscall.S_IFDIR | a.Mode&^syscall.S_IFMT})
	if err != nil {
		return 0, err
	}
	w.invalidate(dir, name, 0)
	n := 1
	list, err := w.t.ReadDir(src)
	if err != nil {
		return n, err
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		esp, edp := joinPath(sp, e.Name), joinPath(dp, e.Name)
		if w.rules != nil {
			if w.hidden(esp) {
				continue
			}
			if v, by := w.verdict(edp); v != Allow {
				return n, fmt.Errorf("%s: %w", edp, w.ruleErr("copy", edp, edp, by, map[Verdict]syscall.Errno{ReadOnly: syscall.EROFS, Deny: syscall.EACCES}[v]))
			}
		}
		ea, err := w.entryAttr(src, e.Name, e.Ino)
		if err != nil {
			if err == syscall.ENOENT {
				continue // removed meanwhile
			}
			return n, err
		}
		if ea.IsDir() {
			m, err := w.copyTree(ctx, ea.Ino, &ea, esp, nd.Ino, e.Name, edp)
			n += m
			if err != nil {
				return n, err
			}
			continue
		}
		if err := w.copyNode(ctx, ea.Ino, &ea, nd.Ino, e.Name, false); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Symlink makes linkPath a symlink to target. The target is stored as
// given, as symlink(2) does; an absolute one names a host path on the
// mount, so the API refuses to follow it (EACCES).
func (w *WS) Symlink(ctx context.Context, target, linkPath string) error {
	const op = "symlink"
	if w.opts.ReadOnly {
		return pathErr(op, linkPath, syscall.EROFS)
	}
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return pathErr(op, linkPath, fmt.Errorf("bad target: %w", syscall.EINVAL))
	}
	r, err := w.resolve(ctx, op, linkPath, false)
	if err != nil {
		return asCreate(err)
	}
	if r.ino != 0 || r.name == "" {
		return pathErr(op, linkPath, syscall.EEXIST)
	}
	if err := w.canChange(op, linkPath, r); err != nil {
		return err
	}
	if _, err := w.f.Create(w.opts.Caller, r.parent, r.name, fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: target}); err != nil {
		return pathErr(op, linkPath, err)
	}
	w.invalidate(r.parent, r.name, 0)
	return nil
}

// Readlink returns a symlink's target.
func (w *WS) Readlink(ctx context.Context, p string) (string, error) {
	const op = "readlink"
	r, err := w.resolve(ctx, op, p, false)
	if err != nil {
		return "", err
	}
	if r.ino == 0 {
		return "", pathErr(op, p, syscall.ENOENT)
	}
	t, err := w.t.Readlink(r.ino)
	if err != nil {
		return "", pathErr(op, p, err)
	}
	return t, nil
}

// SetAttrOptions say which attributes SetAttr changes; nil fields stay.
type SetAttrOptions struct {
	Perm  *uint32    `json:"perm,omitempty"`
	Size  *int64     `json:"size,omitempty"`
	Mtime *time.Time `json:"mtime,omitempty"`
	Atime *time.Time `json:"atime,omitempty"`
	// Create makes an empty file first if p is missing (touch).
	Create bool `json:"create,omitempty"`
}

// SetAttr changes a node's permission, size or times (chmod, truncate,
// touch), following symlinks.
func (w *WS) SetAttr(ctx context.Context, p string, opt SetAttrOptions) (FileInfo, error) {
	const op = "setattr"
	if w.opts.ReadOnly {
		return FileInfo{}, pathErr(op, p, syscall.EROFS)
	}
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		if opt.Create {
			err = asCreate(err)
		}
		return FileInfo{}, err
	}
	if err := w.canChange(op, p, r); err != nil {
		return FileInfo{}, err
	}
	if r.ino == 0 {
		if !opt.Create {
			return FileInfo{}, pathErr(op, p, syscall.ENOENT)
		}
		a, err := w.f.Create(w.opts.Caller, r.parent, r.name, fs.NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			return FileInfo{}, pathErr(op, p, err)
		}
		w.invalidate(r.parent, r.name, 0)
		r.ino, r.attr = a.Ino, a
	}
	var in fs.SetAttrIn
	if opt.Perm != nil {
		if *opt.Perm&^0o7777 != 0 {
			return FileInfo{}, pathErr(op, p, fmt.Errorf("bad permission %o: %w", *opt.Perm, syscall.EINVAL))
		}
		in.Mode = opt.Perm
	}
	if opt.Size != nil {
		if *opt.Size < 0 {
			return FileInfo{}, pathErr(op, p, syscall.EINVAL)
		}
		sz := uint64(*opt.Size)
		in.Size = &sz
	}
	if opt.Mtime != nil {
		t := opt.Mtime.UnixNano()
		in.Mtime = &t
	}
	if opt.Atime != nil {
		t := opt.Atime.UnixNano()
		in.Atime = &t
	}
	a, err := w.f.SetAttr(w.opts.Caller, r.ino, in)
	if err != nil {
		return FileInfo{}, pathErr(op, p, err)
	}
	w.invalidate(0, "", r.ino)
	return w.info(r.path, &a), nil
}

// ensure io is used for the Reader interface assertion.
var _ io.ReadCloser = (*Reader)(nil)
