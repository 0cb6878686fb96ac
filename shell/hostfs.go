package shell

import (
	"context"
	"io"
	iofs "io/fs"
	"path"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/shell/coreutils"
)

// HostFS adapts the host's file API (pluginapi.HostFS) to coreutils.FS.
type HostFS struct{ H *pluginapi.HostFS }

var _ coreutils.FS = HostFS{}

func modeOf(fi *pb.FileInfo) iofs.FileMode {
	m := iofs.FileMode(fi.Mode & 0o777)
	if fi.Mode&0o4000 != 0 {
		m |= iofs.ModeSetuid
	}
	if fi.Mode&0o2000 != 0 {
		m |= iofs.ModeSetgid
	}
	if fi.Mode&0o1000 != 0 {
		m |= iofs.ModeSticky
	}
	switch fi.Type {
	case "dir":
		m |= iofs.ModeDir
	case "symlink":
		m |= iofs.ModeSymlink
	case "fifo":
		m |= iofs.ModeNamedPipe
	case "socket":
		m |= iofs.ModeSocket
	case "char":
		m |= iofs.ModeDevice | iofs.ModeCharDevice
	case "block":
		m |= iofs.ModeDevice
	}
	return m
}

func toInfo(fi *pb.FileInfo) coreutils.FileInfo {
	return coreutils.FileInfo{
		Name: fi.Name, Size: fi.Size, Mode: modeOf(fi), ModTime: time.Unix(0, fi.MtimeNs),
		Ino: fi.Ino, Nlink: fi.Nlink, Uid: fi.Uid, Gid: fi.Gid, Target: fi.Target,
	}
}

func (h HostFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, _, err := h.H.Open(ctx, name, nil)
	return rc, err
}

// Create truncates at once, as O_TRUNC does (so that `cat f > f` empties
// f, as in bash), then appends what is written.
func (h HostFS) Create(ctx context.Context, name string, appendMode bool, perm iofs.FileMode) (io.WriteCloser, error) {
	if appendMode {
		// The host answers a streamed write when it is closed, which a
		// redirection does not check: a missing directory fails here.
		if fi, err := h.H.Stat(ctx, path.Dir(name)); err != nil {
			return nil, err
		} else if fi.Type != "dir" {
			return nil, syscall.ENOTDIR
		}
	} else {
		zero := int64(0)
		if _, err := h.H.SetAttr(ctx, name, &pb.SetAttrRequest{Size: &zero, Create: true}); err != nil {
			return nil, err
		}
	}
	return h.H.Create(ctx, name, pluginapi.WriteOptions{Append: true, Perm: uint32(perm.Perm())})
}

func (h HostFS) Stat(ctx context.Context, name string) (coreutils.FileInfo, error) {
	fi, err := h.H.Stat(ctx, name)
	if err != nil {
		return coreutils.FileInfo{}, err
	}
	return toInfo(fi), nil
}

func (h HostFS) Lstat(ctx context.Context, name string) (coreutils.FileInfo, error) {
	fi, err := h.H.Lstat(ctx, name)
	if err != nil {
		return coreutils.FileInfo{}, err
	}
	return toInfo(fi), nil
}

func (h HostFS) ReadDir(ctx context.Context, name string) ([]coreutils.FileInfo, error) {
	list, err := h.H.List(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]coreutils.FileInfo, len(list))
	for i, fi := range list {
		out[i] = toInfo(fi)
	}
	return out, nil
}

func (h HostFS) Mkdir(ctx context.Context, name string, perm iofs.FileMode) error {
	return h.H.Mkdir(ctx, name, uint32(perm.Perm()), false)
}

func (h HostFS) Remove(ctx context.Context, name string) error {
	return h.H.Remove(ctx, name, false)
}

func (h HostFS) Rename(ctx context.Context, oldname, newname string) error {
	return h.H.Rename(ctx, oldname, newname)
}

func (h HostFS) CopyFile(ctx context.Context, src, dst string) error {
	return h.H.Copy(ctx, src, dst, false)
}

func (h HostFS) Symlink(ctx context.Context, target, name string) error {
	return h.H.Symlink(ctx, target, name)
}

func (h HostFS) Readlink(ctx context.Context, name string) (string, error) {
	return h.H.Readlink(ctx, name)
}

func (h HostFS) Chmod(ctx context.Context, name string, mode iofs.FileMode) error {
	perm := uint32(mode.Perm())
	if mode&iofs.ModeSetuid != 0 {
		perm |= 0o4000
	}
	if mode&iofs.ModeSetgid != 0 {
		perm |= 0o2000
	}
	if mode&iofs.ModeSticky != 0 {
		perm |= 0o1000
	}
	_, err := h.H.SetAttr(ctx, name, &pb.SetAttrRequest{Perm: &perm})
	return err
}

func (h HostFS) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	req := &pb.SetAttrRequest{}
	if !atime.IsZero() {
		a := atime.UnixNano()
		req.AtimeNs = &a
	}
	if !mtime.IsZero() {
		m := mtime.UnixNano()
		req.MtimeNs = &m
	}
	_, err := h.H.SetAttr(ctx, name, req)
	return err
}
