package coreutils

import (
	"context"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// DirFS is an FS over a directory of the host, for tests that compare the
// commands with GNU's on the same tree. Workspace path "/" is root.
// It does not confine symlinks: it is not a sandbox.
type DirFS struct{ Root string }

func (d DirFS) host(name string) string {
	return filepath.Join(d.Root, filepath.FromSlash(path.Clean("/"+name)))
}

// rename makes errors name the workspace path, not the host's.
func (d DirFS) fix(err error, name string) error {
	if pe, ok := err.(*iofs.PathError); ok {
		return &iofs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	if le, ok := err.(*os.LinkError); ok {
		return &iofs.PathError{Op: le.Op, Path: name, Err: le.Err}
	}
	return err
}

func (d DirFS) Open(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := os.Open(d.host(name))
	if err != nil {
		return nil, d.fix(err, name)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, &iofs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return f, nil
}

func (d DirFS) Create(_ context.Context, name string, appendMode bool, perm iofs.FileMode) (io.WriteCloser, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendMode {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(d.host(name), flags, perm)
	if err != nil {
		return nil, d.fix(err, name)
	}
	return f, nil
}

func infoOf(name string, fi os.FileInfo, target string) FileInfo {
	out := FileInfo{Name: name, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime(), Target: target}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Ino, out.Nlink, out.Uid, out.Gid = st.Ino, uint32(st.Nlink), st.Uid, st.Gid
	}
	return out
}

func (d DirFS) Stat(_ context.Context, name string) (FileInfo, error) {
	fi, err := os.Stat(d.host(name))
	if err != nil {
		return FileInfo{}, d.fix(err, name)
	}
	return infoOf(path.Base(name), fi, ""), nil
}

func (d DirFS) Lstat(_ context.Context, name string) (FileInfo, error) {
	fi, err := os.Lstat(d.host(name))
	if err != nil {
		return FileInfo{}, d.fix(err, name)
	}
	target := ""
	if fi.Mode()&iofs.ModeSymlink != 0 {
		target, _ = os.Readlink(d.host(name))
	}
	return infoOf(path.Base(name), fi, target), nil
}

func (d DirFS) ReadDir(_ context.Context, name string) ([]FileInfo, error) {
	ents, err := os.ReadDir(d.host(name))
	if err != nil {
		return nil, d.fix(err, name)
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		target := ""
		if fi.Mode()&iofs.ModeSymlink != 0 {
			target, _ = os.Readlink(filepath.Join(d.host(name), e.Name()))
		}
		out = append(out, infoOf(e.Name(), fi, target))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d DirFS) Mkdir(_ context.Context, name string, perm iofs.FileMode) error {
	return d.fix(os.Mkdir(d.host(name), perm), name)
}

func (d DirFS) Remove(_ context.Context, name string) error {
	return d.fix(os.Remove(d.host(name)), name)
}

func (d DirFS) Rename(_ context.Context, oldname, newname string) error {
	return d.fix(os.Rename(d.host(oldname), d.host(newname)), oldname)
}

func (d DirFS) CopyFile(_ context.Context, src, dst string) error {
	in, err := os.Open(d.host(src))
	if err != nil {
		return d.fix(err, src)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return d.fix(err, src)
	}
	out, err := os.OpenFile(d.host(dst), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return d.fix(err, dst)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return d.fix(err, dst)
	}
	return d.fix(out.Close(), dst)
}

func (d DirFS) Symlink(_ context.Context, target, name string) error {
	return d.fix(os.Symlink(target, d.host(name)), name)
}

func (d DirFS) Readlink(_ context.Context, name string) (string, error) {
	t, err := os.Readlink(d.host(name))
	return t, d.fix(err, name)
}

func (d DirFS) Chmod(_ context.Context, name string, mode iofs.FileMode) error {
	return d.fix(os.Chmod(d.host(name), mode), name)
}

func (d DirFS) Chtimes(_ context.Context, name string, atime, mtime time.Time) error {
	return d.fix(os.Chtimes(d.host(name), atime, mtime), name)
}

var _ FS = DirFS{}
