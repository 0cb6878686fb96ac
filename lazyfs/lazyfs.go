// Package lazyfs mounts a snapshot pushed to a remote (package remote)
// at once, read-only, and fetches its chunks on first read (issue 18's
// lazy mounts): the tree comes from the snapshot's manifest, whose
// records sum to the snapshot's root; each chunk is downloaded when a
// read first needs it, checked against its content ID and kept in the
// workspace's clone spool (remote.SpoolDir), with read-ahead of the
// next chunks on sequential reads. Meanwhile a clone may build the
// workspace from the same spool, so nothing is downloaded twice.
//
// It owns only its FUSE mount and its fetches. It reads trees through
// fs's record decoders and chunks through remote; it never opens a
// store, and it never writes to the workspace (every change is EROFS).
package lazyfs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/remote"
)

// Fetcher gives a chunk's verified plaintext (remote.Client).
type Fetcher interface {
	FetchChunk(ctx context.Context, id chunkstore.ID, chunkSize int) ([]byte, error)
}

// tree is a manifest's tree, indexed.
type tree struct {
	attrs   map[fs.Ino]fs.Attr
	targets map[fs.Ino]string
	entries map[fs.Ino][]fs.DirEntry
	byName  map[fs.Ino]map[string]fs.DirEntry
	chunks  map[fs.Ino]map[uint64]chunkstore.ID
	xattrs  map[fs.Ino]map[string][]byte
}

func newTree(m *remote.Manifest) (*tree, error) {
	t := &tree{attrs: map[fs.Ino]fs.Attr{}, targets: map[fs.Ino]string{}, entries: map[fs.Ino][]fs.DirEntry{},
		byName: map[fs.Ino]map[string]fs.DirEntry{}, chunks: map[fs.Ino]map[uint64]chunkstore.ID{}, xattrs: map[fs.Ino]map[string][]byte{}}
	for _, r := range m.Records {
		switch r.Bucket {
		case fs.RecInodes:
			a, target, err := r.Inode()
			if err != nil {
				return nil, err
			}
			t.attrs[a.Ino], t.targets[a.Ino] = a, target
		case fs.RecDirents:
			parent, e, err := r.Dirent()
			if err != nil {
				return nil, err
			}
			t.entries[parent] = append(t.entries[parent], e)
			if t.byName[parent] == nil {
				t.byName[parent] = map[string]fs.DirEntry{}
			}
			t.byName[parent][e.Name] = e
		case fs.RecChunks:
			ino, idx, ok := r.ChunkIndex()
			if !ok {
				return nil, fmt.Errorf("chunk-list record %x: malformed", r.Key)
			}
			id, _ := r.Chunk()
			if t.chunks[ino] == nil {
				t.chunks[ino] = map[uint64]chunkstore.ID{}
			}
			t.chunks[ino][idx] = id
		case fs.RecXattrs:
			if len(r.Key) > 8 {
				ino := fs.Ino(uint64(r.Key[0])<<56 | uint64(r.Key[1])<<48 | uint64(r.Key[2])<<40 | uint64(r.Key[3])<<32 | uint64(r.Key[4])<<24 | uint64(r.Key[5])<<16 | uint64(r.Key[6])<<8 | uint64(r.Key[7]))
				if t.xattrs[ino] == nil {
					t.xattrs[ino] = map[string][]byte{}
				}
				t.xattrs[ino][string(r.Key[8:])] = r.Value
			}
		}
	}
	if _, ok := t.attrs[fs.RootIno]; !ok {
		return nil, fmt.Errorf("manifest has no root directory")
	}
	return t, nil
}

// Options configure a lazy mount.
type Options struct {
	// Spool is where fetched chunks are kept (remote.SpoolDir of the
	// workspace being cloned).
	Spool string
	// ReadAhead is how many chunks after one read sequentially are
	// fetched ahead (4 if 0).
	ReadAhead int
	Logger    *slog.Logger
	// AllowOther lets other users read the mount.
	AllowOther bool
}

// Mount is a lazy mount.
type Mount struct {
	t         *tree
	f         Fetcher
	chunkSize int
	opts      Options
	srv       *fuse.Server
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup // read-ahead fetches
	ahead     chan struct{}  // bounds them

	mu       sync.Mutex
	inflight map[chunkstore.ID]*fetch
	lastRead map[fs.Ino]uint64 // last chunk index read, for read-ahead
	fetches  int
}

type fetch struct {
	done chan struct{}
	data []byte
	err  error
}

// New mounts manifest m at mnt, reading chunks through f.
func New(m *remote.Manifest, f Fetcher, mnt string, opts Options) (*Mount, error) {
	t, err := newTree(m)
	if err != nil {
		return nil, err
	}
	if opts.ReadAhead == 0 {
		opts.ReadAhead = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.Spool, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	lm := &Mount{t: t, f: f, chunkSize: m.ChunkSize, opts: opts, ctx: ctx, cancel: cancel, ahead: make(chan struct{}, 4),
		inflight: map[chunkstore.ID]*fetch{}, lastRead: map[fs.Ino]uint64{}}
	root := &node{m: lm, ino: fs.RootIno}
	timeout := time.Hour // the tree never changes
	srv, err := gofs.Mount(mnt, root, &gofs.Options{
		EntryTimeout: &timeout, AttrTimeout: &timeout, NegativeTimeout: &timeout,
		MountOptions: fuse.MountOptions{FsName: "computerfs-lazy", Name: "computerfs", AllowOther: opts.AllowOther,
			Options: []string{"default_permissions", "ro"}, MaxWrite: 1 << 20, DisableSplice: true},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("lazy mount at %s: %w", mnt, err)
	}
	lm.srv = srv
	return lm, nil
}

// Fetches is how many chunks the mount has downloaded.
func (m *Mount) Fetches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fetches
}

// Wait blocks until the mount is unmounted.
func (m *Mount) Wait() { m.srv.Wait() }

// Unmount unmounts and stops the read-ahead.
func (m *Mount) Unmount() error {
	err := m.srv.Unmount()
	m.cancel()
	m.wg.Wait()
	return err
}

// chunk is chunk id's plaintext: from the spool, else fetched (once,
// whoever asks meanwhile waits for the same fetch) and spooled.
func (m *Mount) chunk(ctx context.Context, id chunkstore.ID) ([]byte, error) {
	if b, err := remote.ReadSpooled(m.opts.Spool, id); err == nil {
		return b, nil
	}
	m.mu.Lock()
	if f, ok := m.inflight[id]; ok {
		m.mu.Unlock()
		select {
		case <-f.done:
			return f.data, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &fetch{done: make(chan struct{})}
	m.inflight[id] = f
	m.fetches++
	m.mu.Unlock()
	f.data, f.err = m.f.FetchChunk(m.ctx, id, m.chunkSize)
	if f.err == nil {
		if err := remote.WriteSpooled(m.opts.Spool, id, f.data); err != nil {
			m.opts.Logger.Warn("lazy mount: spool a chunk", "chunk", id.String(), "err", err)
		}
	} else {
		m.opts.Logger.Error("lazy mount: fetch a chunk", "chunk", id.String(), "err", f.err)
	}
	close(f.done)
	m.mu.Lock()
	delete(m.inflight, id)
	m.mu.Unlock()
	return f.data, f.err
}

// readAhead fetches the chunks after idx of ino in the background when
// reads of ino go forward.
func (m *Mount) readAhead(ino fs.Ino, idx uint64) {
	m.mu.Lock()
	last, seen := m.lastRead[ino]
	m.lastRead[ino] = idx
	m.mu.Unlock()
	if seen && idx != last+1 && idx != last || !seen && idx != 0 {
		return
	}
	for i := idx + 1; i <= idx+uint64(m.opts.ReadAhead); i++ {
		id, ok := m.t.chunks[ino][i]
		if !ok {
			continue
		}
		select {
		case m.ahead <- struct{}{}:
		default:
			return // enough in flight
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer func() { <-m.ahead }()
			m.chunk(m.ctx, id)
		}()
	}
}

type node struct {
	gofs.Inode
	m   *Mount
	ino fs.Ino
}

var (
	_ gofs.NodeGetattrer  = (*node)(nil)
	_ gofs.NodeLookuper   = (*node)(nil)
	_ gofs.NodeReaddirer  = (*node)(nil)
	_ gofs.NodeOpener     = (*node)(nil)
	_ gofs.NodeReader     = (*node)(nil)
	_ gofs.NodeReadlinker = (*node)(nil)
	_ gofs.NodeGetxattrer = (*node)(nil)
)

func fill(a fs.Attr, out *fuse.Attr) {
	out.Ino = uint64(a.Ino)
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Uid, out.Gid, out.Rdev = a.Uid, a.Gid, a.Rdev
	out.Size = a.Size
	out.Blocks = (a.Size + 511) / 512
	out.Blksize = 4096
	out.SetTimes(ptime(a.Atime), ptime(a.Mtime), ptime(a.Ctime))
}

func ptime(ns int64) *time.Time { t := time.Unix(0, ns); return &t }

func (n *node) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	a, ok := n.m.t.attrs[n.ino]
	if !ok {
		return syscall.ENOENT
	}
	fill(a, &out.Attr)
	return 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	e, ok := n.m.t.byName[n.ino][name]
	if !ok {
		return nil, syscall.ENOENT
	}
	a, ok := n.m.t.attrs[e.Ino]
	if !ok {
		return nil, syscall.EIO
	}
	fill(a, &out.Attr)
	return n.NewInode(ctx, &node{m: n.m, ino: e.Ino}, gofs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: uint64(e.Ino)}), 0
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	list := make([]fuse.DirEntry, 0, len(n.m.t.entries[n.ino]))
	for _, e := range n.m.t.entries[n.ino] {
		list = append(list, fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Type})
	}
	return gofs.NewListDirStream(list), 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	a := n.m.t.attrs[n.ino]
	if !a.IsSymlink() {
		return nil, syscall.EINVAL
	}
	return []byte(n.m.t.targets[n.ino]), 0
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	v, ok := n.m.t.xattrs[n.ino][attr]
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (n *node) Read(ctx context.Context, _ gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	a := n.m.t.attrs[n.ino]
	if !a.IsRegular() {
		return nil, syscall.EISDIR
	}
	cs := int64(n.m.chunkSize)
	end := min(off+int64(len(dest)), int64(a.Size))
	for pos := off; pos < end; {
		idx := pos / cs
		piece := min(end-pos, cs-pos%cs)
		out := dest[pos-off : pos-off+piece]
		clear(out)
		if id, ok := n.m.t.chunks[n.ino][uint64(idx)]; ok {
			data, err := n.m.chunk(ctx, id)
			if err != nil {
				return nil, syscall.EIO
			}
			if s := pos % cs; s < int64(len(data)) {
				copy(out, data[s:])
			}
		}
		n.m.readAhead(n.ino, uint64(idx))
		pos += piece
	}
	return fuse.ReadResultData(dest[:max(end-off, 0)]), 0
}
