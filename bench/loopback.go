package bench

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// TargetNopt1m is the no-passthrough loopback: go-fuse's loopback over an
// ext4 directory with kernel passthrough off and 1 MiB writes, so that
// every byte goes through its daemon, as computerfs's do. It is the limit
// a daemon-served filesystem is measured against (issue 19's "nopt1m").
const TargetNopt1m = "nopt1m"

// nopt1mFile is a loopback file that offers the kernel no backing file:
// without it, go-fuse run as root registers the file for FUSE
// passthrough and the kernel reads and writes ext4 itself.
type nopt1mFile struct{ *gofs.LoopbackFile }

func (nopt1mFile) PassthroughFd() (int, bool) { return 0, false }

// nopt1mNode is a loopback node whose open files are nopt1mFiles.
type nopt1mNode struct{ gofs.LoopbackNode }

func wrapNopt1m(fh gofs.FileHandle) gofs.FileHandle {
	if lf, ok := fh.(*gofs.LoopbackFile); ok {
		return nopt1mFile{lf}
	}
	return fh
}

func (n *nopt1mNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	return wrapNopt1m(fh), fl, errno
}

func (n *nopt1mNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, wrapNopt1m(fh), fl, errno
}

var (
	_ gofs.NodeOpener  = (*nopt1mNode)(nil)
	_ gofs.NodeCreater = (*nopt1mNode)(nil)
)

// Nopt1mTarget mounts the no-passthrough loopback, in this process, over
// a fresh directory under root (on ext4 when root is). Kernel timeouts
// are go-fuse's loopback example's (1 s); writes up to 1 MiB.
func Nopt1mTarget(root string) (*Target, error) {
	dir, err := os.MkdirTemp(root, "nopt1m-")
	if err != nil {
		return nil, fmt.Errorf("nopt1m target: %w", err)
	}
	t := &Target{Name: TargetNopt1m}
	t.closers = append(t.closers, func() error { return removeAll(dir) })
	under, mnt := dir+"/under", dir+"/mnt"
	for _, d := range []string{under, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Close()
			return nil, fmt.Errorf("nopt1m target: %w", err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(under, &st); err != nil {
		t.Close()
		return nil, fmt.Errorf("nopt1m target: %w", err)
	}
	lr := &gofs.LoopbackRoot{Path: under, Dev: uint64(st.Dev)}
	lr.NewNode = func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
		return &nopt1mNode{gofs.LoopbackNode{RootData: r}}
	}
	rootNode := &nopt1mNode{gofs.LoopbackNode{RootData: lr}}
	lr.RootNode = rootNode
	sec := time.Second
	srv, err := gofs.Mount(mnt, rootNode, &gofs.Options{
		AttrTimeout:  &sec,
		EntryTimeout: &sec,
		MountOptions: fuse.MountOptions{
			FsName:        "nopt1m",
			Name:          "loopback",
			MaxWrite:      1 << 20,
			DisableSplice: true, // 1 MiB replies pass the pipe limit
		},
	})
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("nopt1m target: mount %s: %w", mnt, err)
	}
	t.closers = append(t.closers, func() error {
		if err := srv.Unmount(); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return nil
	})
	t.Dir = mnt
	t.Note = "go-fuse loopback over " + under + ", kernel passthrough off, 1 MiB writes, 1 s timeouts"
	if t.FSType, _, err = FSType(mnt); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}
