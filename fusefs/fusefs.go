// Package fusefs serves an fs.FS to the kernel over FUSE.
//
// It is a thin door: it translates FUSE requests to fs calls and fs errors
// to errno values, and owns only what FUSE needs and fs must not know:
// handles of files opened in a policy view, the readdir cookies and the
// listings cached for them, kernel cache timeouts and invalidation. It
// uses go-fuse's raw API so that FUSE node IDs are the store's inode
// numbers, with no second inode tree.
//
// Every change to the workspace made through this mount passes through the
// kernel, so the kernel may cache entries, attributes and pages for long;
// changes made through another door (the file API, a plugin) must call
// Invalidate, and snapshots made or deleted must call SnapshotsChanged.
//
// # Snapshot views
//
// .snapshots/NAME/ at the root reads snapshot NAME, read-only (every
// change fails with EROFS), as ZFS's .zfs/snapshot does. .snapshots is
// not in the root's listing, but looking it up works (ls /mnt/.snapshots).
// A real file or directory named .snapshots at the root, which only
// another door can make (the mount refuses to: the name is the view's),
// wins: the mount shows it, and the views are not reachable there until
// it goes. The nodes of a view are numbered ino | slot<<48, above every
// live inode number (fs.MaxIno); see snapshots.go.
//
// An Observer (Options.Observer) sees every request it answers: its op,
// how long it took, its errno and the bytes it moved. That is how the
// daemon's metrics count FUSE traffic without this package knowing of
// them; without one, serving a request reads no clock.
package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/workspace"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options tune the mount.
type Options struct {
	// AllowOther lets users other than the mounting one use the mount;
	// the kernel then checks permissions (default_permissions), which
	// costs a GETATTR after every change to a directory. It also lets
	// the mount be cloned with an id mapping (FUSE_ALLOW_IDMAP, Linux
	// 6.12+), as the container backend does for its user namespace,
	// whose root is an unprivileged host uid; the kernel then sends
	// uid -1 on requests other than those that create an inode.
	AllowOther bool
	// EntryTimeout and AttrTimeout bound the kernel's caching (1h if 0).
	EntryTimeout time.Duration
	AttrTimeout  time.Duration
	// NegativeTimeout caches failed lookups (1h if 0).
	NegativeTimeout time.Duration
	Debug           bool
	Logger          *slog.Logger
	// FsName is shown by df (the workspace path, say).
	FsName string
	// Observer, if set, sees every request served (metrics).
	Observer Observer
	// ReadOnly mounts read-only (the kernel refuses every change with
	// EROFS); NoExec forbids executing its files (noexec).
	ReadOnly, NoExec bool
	// Rules, if set, make the mount a policy view (rules.go): denied
	// paths do not exist, read-only ones refuse changes.
	Rules *workspace.Rules
	// OnDeny, if set, hears of every refusal the Rules make (a lookup of
	// a denied name, a change to a read-only path...), for the audit
	// log. It is called on the request's goroutine, without locks held,
	// and must be quick. The kernel caches a denied lookup's answer for
	// NegativeTimeout, so a loop on one denied name reaches it once.
	OnDeny func(workspace.Denial)
	// Changed, if set, hears of every change made through this mount,
	// as a Notifier does (entry name of parent, inode ino; zero parts
	// unset): other mounts of the same workspace (policy views) must drop
	// what their kernel cached. It is called without locks held, after
	// the change.
	Changed func(parent fs.Ino, name string, ino fs.Ino)
}

// Server is a live mount.
type Server struct {
	fs     *fs.FS
	srv    *fuse.Server
	mnt    string
	log    *slog.Logger
	opts   Options
	served chan struct{}
	// dev is the mount's device (major:minor as in mountinfo); detached
	// is closed once the mount is gone from this mount namespace.
	dev      uint64
	detached chan struct{}
	raw      *rawFS
}

// Mount mounts f at mountpoint and serves it until Unmount. It returns once
// the mount is live.
func Mount(f *fs.FS, mountpoint string, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.EntryTimeout == 0 {
		opts.EntryTimeout = time.Hour
	}
	if opts.AttrTimeout == 0 {
		opts.AttrTimeout = time.Hour
	}
	if opts.NegativeTimeout == 0 {
		opts.NegativeTimeout = time.Hour
	}
	raw := &rawFS{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		fs:            f,
		opts:          opts,
		obs:           opts.Observer,
		base:          time.Now(),
		log:           opts.Logger,
		handles:       make(map[uint64]*handle),
	}
	if opts.Rules != nil {
		raw.view = newViewPaths(opts.Rules)
	}
	mopts := &fuse.MountOptions{
		AllowOther:               opts.AllowOther,
		IDMappedMount:            opts.AllowOther,
		FsName:                   opts.FsName,
		Name:                     "computerfs",
		MaxWrite:                 1 << 20,
		DisableSplice:            true,
		EnableLocks:              false,
		ExplicitDataCacheControl: true,
		EnableSymlinkCaching:     true,
		DirectMount:              os.Geteuid() == 0,
		ExtraCapabilities:        fuse.CAP_HANDLE_KILLPRIV_V2,
		Debug:                    opts.Debug,
		MaxBackground:            64,
		Options:                  mountFlags(opts),
		PanicHandler: func(p any) fuse.Status {
			opts.Logger.Error("panic serving a FUSE request", "panic", fmt.Sprint(p))
			return fuse.EIO
		},
	}
	if opts.AllowOther {
		mopts.Options = append(mopts.Options, "default_permissions")
	}
	if mopts.FsName == "" {
		mopts.FsName = "computerfs"
	}
	srv, err := fuse.NewServer(raw, mountpoint, mopts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	s := &Server{fs: f, srv: srv, mnt: mountpoint, log: opts.Logger, opts: opts, served: make(chan struct{}), detached: make(chan struct{}), raw: raw}
	raw.server = srv
	go func() {
		defer close(s.served)
		srv.Serve()
	}()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		<-s.served
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	// Direct writes for write-only created files (createdFlags) only
	// where a direct write drops the cached pages it covers, as kernels
	// that offer DIRECT_IO_ALLOW_MMAP (6.6 on) do.
	raw.directWrites.Store(srv.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	var st syscall.Stat_t
	if err := syscall.Stat(mountpoint, &st); err == nil {
		s.dev = st.Dev
	}
	go s.watchMountinfo()
	raiseReadAhead(mountpoint, opts.Logger)
	return s, nil
}

// raiseReadAhead asks for 1 MiB READs instead of the default 128-256 KiB
// (root only; go-fuse can only lower it).
func raiseReadAhead(mnt string, log *slog.Logger) {
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return
	}
	major, minor := (st.Dev>>8)&0xfff, (st.Dev&0xff)|((st.Dev>>12)&0xfff00)
	path := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", major, minor)
	if err := os.WriteFile(path, []byte("1024"), 0); err != nil {
		log.Debug("could not raise read-ahead", "path", path, "err", err)
	}
}

// Mountpoint is where the server is mounted.
func (s *Server) Mountpoint() string { return s.mnt }

// Detached is closed once the mount is gone from this process's mount
// namespace (umount from outside, lazy ones included) or the kernel has
// ended the connection. The connection may outlive the first: a mount
// namespace that has a copy of the mount (a container's) keeps it open
// until its last user goes; see Shutdown.
func (s *Server) Detached() <-chan struct{} { return s.detached }

// watchMountinfo closes detached when the mount's device is no longer in
// /proc/self/mountinfo, which the kernel flags (POLLPRI) on every change
// to the namespace's mounts.
func (s *Server) watchMountinfo() {
	defer close(s.detached)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		s.log.Warn("cannot watch for umount from outside", "err", err)
		<-s.served
		return
	}
	defer f.Close()
	dev := fmt.Sprintf("%d:%d", unix.Major(s.dev), unix.Minor(s.dev))
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
	for {
		select {
		case <-s.served:
			return
		default:
		}
		if s.dev != 0 && !mountinfoHas(f, dev) {
			s.log.Debug("the mount is gone from this namespace", "mountpoint", s.mnt)
			return
		}
		// Woken by a change to the mounts, else once a second to notice
		// served.
		unix.Poll(fds, 1000)
	}
}

// mountinfoHas says whether the mountinfo table f lists device dev.
func mountinfoHas(f *os.File, dev string) bool {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return true
	}
	mounts, err := mountinfo.Parse(f)
	if err != nil {
		return true // unknown: keep serving
	}
	for _, m := range mounts {
		if m.Dev == dev {
			return true
		}
	}
	return false
}

// Shutdown ends the mount: it unmounts it (lazily if busy), waits until
// the kernel ends the connection or ctx is done, and then aborts the
// connection, failing whatever requests still wait. Whoever holds a copy
// of the mount in another mount namespace (a backend's container) must
// be stopped first, or the connection lasts until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	select {
	case <-s.detached:
		// Gone from this namespace already: nothing to unmount.
	default:
		unmounted := make(chan error, 1)
		go func() { unmounted <- s.Unmount() }()
		select {
		case err = <-unmounted:
			return err
		case <-ctx.Done():
		}
	}
	select {
	case <-s.served:
		return err
	case <-ctx.Done():
	}
	s.log.Warn("the kernel kept the FUSE connection; aborting it", "mountpoint", s.mnt, "err", ctx.Err())
	if aerr := s.Abort(); aerr != nil {
		return fmt.Errorf("unmount %s: %w; abort: %w", s.mnt, ctx.Err(), aerr)
	}
	select {
	case <-s.served:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("unmount %s: the connection still serves after its abort", s.mnt)
	}
}

// Abort ends the FUSE connection at once, as fusectl's abort does:
// requests in flight and to come fail with ENOTCONN, and Serve returns.
// The mount, dead then, is detached lazily.
func (s *Server) Abort() error {
	err := s.abort()
	select {
	case <-s.detached:
	default:
		syscall.Unmount(s.mnt, syscall.MNT_DETACH)
	}
	return err
}

func (s *Server) abort() error {
	if s.dev == 0 {
		return errors.New("the mount's device is unknown")
	}
	const fusectl = "/sys/fs/fuse/connections"
	abort := filepath.Join(fusectl, strconv.FormatUint(s.dev, 10), "abort")
	if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
		// fusectl is not mounted here; it is the only door to a
		// connection that has no mount left in this namespace.
		if merr := syscall.Mount("fusectl", fusectl, "fusectl", 0, ""); merr != nil && !errors.Is(merr, syscall.EBUSY) {
			// On the mount itself, a forced umount aborts too.
			if ferr := syscall.Unmount(s.mnt, syscall.MNT_FORCE); ferr != nil {
				return fmt.Errorf("mount fusectl: %w; forced umount: %w", merr, ferr)
			}
			return nil
		}
	}
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort the FUSE connection: %w", err)
	}
	return nil
}

// Unmount detaches the mount and waits until every request is served.
func (s *Server) Unmount() error {
	err := s.srv.Unmount()
	if err != nil {
		// Busy: detach lazily so that the daemon can still close the store.
		if lerr := syscall.Unmount(s.mnt, syscall.MNT_DETACH); lerr == nil {
			err = nil
		}
	}
	<-s.served
	return err
}

// Wait blocks until the mount goes away (umount from outside).
func (s *Server) Wait() { <-s.served }

// Done is closed when the mount has gone away.
func (s *Server) Done() <-chan struct{} { return s.served }

// Invalidate drops the kernel's cached name parent/name and the data and
// attributes of ino, after a change made through another door. Zero
// arguments skip that part.
func (s *Server) Invalidate(parent fs.Ino, name string, ino fs.Ino) {
	s.raw.viewInvalidate(parent, name)
	if parent != 0 && name != "" {
		s.srv.EntryNotify(uint64(parent), name)
		// The directory's attributes and cached listing changed too.
		s.srv.InodeNotify(uint64(parent), 0, 0)
	}
	if ino != 0 {
		s.srv.InodeNotify(uint64(ino), 0, 0)
	}
}

type handle struct {
	ino   fs.Ino
	flags uint32
}

type rawFS struct {
	fuse.RawFileSystem
	fs     *fs.FS
	opts   Options
	obs    Observer  // nil: none, and no clock reads
	base   time.Time // requests are timed from it
	log    *slog.Logger
	server *fuse.Server
	// directWrites: write-only created files are written past the
	// page cache (createdFlags).
	directWrites atomic.Bool

	mu      sync.Mutex
	handles map[uint64]*handle
	nextFh  uint64

	dirs listings
	// snaps are the snapshot views' slots (snapshots.go).
	snaps snapViews
	// view is the policy view's paths (rules.go), nil for a plain mount.
	view *viewPaths
}

func (r *rawFS) String() string { return "computerfs" }

// changed tells Options.Changed of a change served.
func (r *rawFS) changed(parent uint64, name string, ino uint64) {
	if r.opts.Changed != nil {
		r.opts.Changed(fs.Ino(parent), name, fs.Ino(ino))
	}
}

func errStatus(err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	return fuse.Status(fs.Errno(err))
}

func caller(h *fuse.InHeader) fs.Caller {
	return fs.Caller{Uid: h.Uid, Gid: h.Gid, Kernel: true}
}

// dirBlksize is a directory's st_blksize, as ext4's. glibc sizes a
// directory stream's buffer by it (at least 32 KiB, at most 1 MiB), and
// each getdents64 asks the kernel for that much, which asks us for as
// much in READDIR(PLUS). With a file's 1 MiB, every opendir mapped 1 MiB
// and every READDIR asked for a 1 MiB reply: a find over a fresh
// 10x10x10 tree took 1.9x as long as with 4 KiB (TestBlksize).
const dirBlksize = 4096

func (r *rawFS) fillAttr(a *fs.Attr, out *fuse.Attr) {
	out.Ino = uint64(a.Ino)
	out.Size = a.Size
	out.Blocks = a.Blocks
	out.Blksize = 1 << 20
	if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		out.Blksize = dirBlksize
	}
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Rdev = a.Rdev
	out.Atime, out.Atimensec = splitNano(a.Atime)
	out.Mtime, out.Mtimensec = splitNano(a.Mtime)
	out.Ctime, out.Ctimensec = splitNano(a.Ctime)
}

// splitNano splits nanoseconds since the epoch into seconds and a
// nanosecond part in [0, 1e9), flooring so that times before 1970 keep
// their value (the kernel reads the seconds as signed).
func splitNano(ns int64) (uint64, uint32) {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return uint64(sec), uint32(nsec)
}

func (r *rawFS) fillEntry(a *fs.Attr, out *fuse.EntryOut) {
	out.NodeId = uint64(a.Ino)
	out.Generation = 1
	out.SetEntryTimeout(r.opts.EntryTimeout)
	out.SetAttrTimeout(r.opts.AttrTimeout)
	r.fillAttr(a, &out.Attr)
}

func (r *rawFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) (code fuse.Status) {
	defer r.end(OpLookup, r.begin(), &code, nil)
	var p string
	if r.view != nil {
		// Before the store is asked: a denied name must not show.
		if p = r.view.child(h.NodeId, name); p == "" {
			return fuse.Status(syscall.ESTALE) // a directory renamed by another door
		}
		if isSnapNode(h.NodeId) {
			return denyLookup(out, r)
		}
		if r.view.verdict(p) == workspace.Deny {
			r.denied("lookup", p, syscall.ENOENT)
			return denyLookup(out, r)
		}
	}
	if isSnapNode(h.NodeId) {
		return r.snapLookup(h.NodeId, name, out)
	}
	a, err := r.fs.Lookup(caller(h), fs.Ino(h.NodeId), name)
	if err == syscall.ENOENT && h.NodeId == uint64(fs.RootIno) && name == SnapshotsDir && r.view == nil {
		// No real .snapshots: the views' directory.
		d, err := r.snapDirAttr()
		if err != nil {
			return errStatus(err)
		}
		r.fillEntry(&d, out)
		return fuse.OK
	}
	if err == syscall.ENOENT {
		// A cached negative entry: the kernel will not ask again.
		out.NodeId = 0
		out.SetEntryTimeout(r.opts.NegativeTimeout)
		return fuse.OK
	}
	if err != nil {
		return errStatus(err)
	}
	if r.view != nil {
		r.view.add(uint64(a.Ino), p)
	}
	r.fillEntry(&a, out)
	return fuse.OK
}

func (r *rawFS) Forget(nodeid, nlookup uint64) {
	defer r.end(OpForget, r.begin(), nil, nil)
	if isSnapNode(nodeid) {
		if slot, _ := splitNode(nodeid); slot != lastSlot {
			r.snaps.forget(slot, nlookup)
		}
		return
	}
	if r.view != nil {
		r.view.forget(nodeid, nlookup)
	}
	r.fs.Forget(fs.Ino(nodeid), nlookup)
}

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) (code fuse.Status) {
	defer r.end(OpGetAttr, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		a, err := r.snapAttr(in.NodeId)
		if err != nil {
			return errStatus(err)
		}
		r.fillAttr(&a, &out.Attr)
		out.SetTimeout(snapTimeout)
		if in.NodeId == snapDirID {
			out.SetTimeout(r.opts.AttrTimeout)
		}
		return fuse.OK
	}
	a, err := r.fs.GetAttr(fs.Ino(in.NodeId))
	if err != nil {
		return errStatus(err)
	}
	r.fillAttr(&a, &out.Attr)
	out.SetTimeout(r.opts.AttrTimeout)
	return fuse.OK
}

func (r *rawFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) (code fuse.Status) {
	defer r.end(OpSetAttr, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.EROFS
	}
	if st := r.changeStatus(in.NodeId); st != fuse.OK {
		return st
	}
	var sa fs.SetAttrIn
	if m, ok := in.GetMode(); ok {
		sa.Mode = &m
	}
	if uid, ok := in.GetUID(); ok {
		sa.Uid = &uid
	}
	if gid, ok := in.GetGID(); ok {
		sa.Gid = &gid
	}
	if size, ok := in.GetSize(); ok {
		sa.Size = &size
	}
	if in.Valid&fuse.FATTR_ATIME != 0 {
		t := fs.UtimeNow
		if in.Valid&fuse.FATTR_ATIME_NOW == 0 {
			t = int64(in.Atime)*1e9 + int64(in.Atimensec)
		}
		sa.Atime = &t
	}
	if in.Valid&fuse.FATTR_MTIME != 0 {
		t := fs.UtimeNow
		if in.Valid&fuse.FATTR_MTIME_NOW == 0 {
			t = int64(in.Mtime)*1e9 + int64(in.Mtimensec)
		}
		sa.Mtime = &t
	}
	if in.Valid&fuse.FATTR_CTIME != 0 {
		t := int64(in.Ctime)*1e9 + int64(in.Ctimensec)
		sa.Ctime = &t
	}
	sa.KillSuidGid = in.Valid&fuse.FATTR_KILL_SUIDGID != 0
	a, err := r.fs.SetAttr(caller(&in.InHeader), fs.Ino(in.NodeId), sa)
	if err != nil {
		return errStatus(err)
	}
	r.changed(0, "", in.NodeId)
	r.fillAttr(&a, &out.Attr)
	out.SetTimeout(r.opts.AttrTimeout)
	return fuse.OK
}

func (r *rawFS) create(h *fuse.InHeader, name string, nn fs.NewNode, out *fuse.EntryOut) fuse.Status {
	if isSnapNode(h.NodeId) {
		return fuse.EROFS
	}
	if r.takesSnapshotsName(h.NodeId, name) {
		return fuse.Status(syscall.EEXIST)
	}
	p, st := r.createStatus(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	a, err := r.fs.Create(caller(h), fs.Ino(h.NodeId), name, nn)
	if err != nil {
		return errStatus(err)
	}
	if r.view != nil {
		r.view.add(uint64(a.Ino), p)
	}
	r.changed(h.NodeId, name, 0)
	r.fillEntry(&a, out)
	return fuse.OK
}

func (r *rawFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) (code fuse.Status) {
	defer r.end(OpMknod, r.begin(), &code, nil)
	return r.create(&in.InHeader, name, fs.NewNode{Mode: in.Mode, Rdev: in.Rdev}, out)
}

func (r *rawFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) (code fuse.Status) {
	defer r.end(OpMkdir, r.begin(), &code, nil)
	return r.create(&in.InHeader, name, fs.NewNode{Mode: in.Mode&^uint32(syscall.S_IFMT) | syscall.S_IFDIR}, out)
}

func (r *rawFS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) (code fuse.Status) {
	defer r.end(OpSymlink, r.begin(), &code, nil)
	return r.create(h, name, fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: target}, out)
}

func (r *rawFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) (_ []byte, code fuse.Status) {
	defer r.end(OpReadlink, r.begin(), &code, nil)
	if isSnapNode(h.NodeId) {
		view, ino, err := r.snapView(h.NodeId)
		if err != nil {
			return nil, errStatus(err)
		}
		t, err := view.Readlink(ino)
		if err != nil {
			return nil, errStatus(err)
		}
		return []byte(t), fuse.OK
	}
	t, err := r.fs.Readlink(fs.Ino(h.NodeId))
	if err != nil {
		return nil, errStatus(err)
	}
	return []byte(t), fuse.OK
}

func (r *rawFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) (code fuse.Status) {
	defer r.end(OpLink, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) || isSnapNode(in.Oldnodeid) || r.takesSnapshotsName(in.NodeId, name) {
		return fuse.EROFS
	}
	if st := r.changeStatus(in.Oldnodeid); st != fuse.OK {
		return st // a new name would unprotect it
	}
	p, st := r.createStatus(in.NodeId, name)
	if st != fuse.OK {
		return st
	}
	a, err := r.fs.Link(caller(&in.InHeader), fs.Ino(in.Oldnodeid), fs.Ino(in.NodeId), name)
	if err != nil {
		return errStatus(err)
	}
	r.changed(in.NodeId, name, in.Oldnodeid)
	if r.view != nil {
		r.view.add(uint64(a.Ino), p)
	}
	r.fillEntry(&a, out)
	return fuse.OK
}

func (r *rawFS) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) (code fuse.Status) {
	defer r.end(OpUnlink, r.begin(), &code, nil)
	if isSnapNode(h.NodeId) || r.takesSnapshotsName(h.NodeId, name) {
		return fuse.EROFS
	}
	p, st := r.removeStatus(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	if err := r.fs.Unlink(fs.Ino(h.NodeId), name); err != nil {
		return errStatus(err)
	}
	r.changed(h.NodeId, name, 0)
	if r.view != nil {
		r.view.drop(p)
	}
	return fuse.OK
}

func (r *rawFS) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) (code fuse.Status) {
	defer r.end(OpRmdir, r.begin(), &code, nil)
	if isSnapNode(h.NodeId) || r.takesSnapshotsName(h.NodeId, name) {
		return fuse.EROFS
	}
	p, st := r.removeStatus(h.NodeId, name)
	if st != fuse.OK {
		return st
	}
	if err := r.fs.Rmdir(fs.Ino(h.NodeId), name); err != nil {
		return errStatus(err)
	}
	r.changed(h.NodeId, name, 0)
	if r.view != nil {
		r.view.drop(p)
	}
	return fuse.OK
}

func (r *rawFS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) (code fuse.Status) {
	defer r.end(OpRename, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) || isSnapNode(in.Newdir) || r.takesSnapshotsName(in.NodeId, oldName) || r.takesSnapshotsName(in.Newdir, newName) {
		return fuse.EROFS
	}
	from, to, st := r.renameStatus(&in.InHeader, in.NodeId, oldName, in.Newdir, newName, in.Flags)
	if st != fuse.OK {
		return st
	}
	if err := r.fs.Rename(fs.Ino(in.NodeId), oldName, fs.Ino(in.Newdir), newName, in.Flags); err != nil {
		return errStatus(err)
	}
	r.changed(in.NodeId, oldName, 0)
	r.changed(in.Newdir, newName, 0)
	if r.view != nil {
		if in.Flags&fs.RenameExchange != 0 {
			tmp := "\x00exchange"
			r.view.move(to, tmp)
			r.view.move(from, to)
			r.view.move(tmp, from)
		} else {
			r.view.drop(to)
			r.view.move(from, to)
		}
	}
	return fuse.OK
}

// Access is not implemented (ENOSYS), on purpose: the kernel then stops
// sending ACCESS and allows access(2) and chdir(2) itself, the same
// answer as ours would be (permissions are the kernel's with
// default_permissions, and with an owner-only mount there is nothing to
// check), without a round trip per chdir. It also keeps a process that
// serves the mount and forks (the benchmarks) from deadlocking: a child
// between fork and exec that waits on a request of ours would hold up
// the garbage collector's stop-the-world, which waits for the forking
// thread.

func (r *rawFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (_ uint32, code fuse.Status) {
	defer r.end(OpGetXAttr, r.begin(), &code, nil)
	var val []byte
	var err error
	if h.NodeId == snapDirID {
		err = syscall.ENODATA
	} else if isSnapNode(h.NodeId) {
		var view *fs.View
		var ino fs.Ino
		if view, ino, err = r.snapView(h.NodeId); err == nil {
			val, err = view.GetXattr(ino, name)
		}
	} else {
		val, err = r.fs.GetXattr(fs.Ino(h.NodeId), name)
	}
	if err != nil {
		return 0, errStatus(err)
	}
	if len(dest) < len(val) {
		return uint32(len(val)), fuse.ERANGE
	}
	return uint32(copy(dest, val)), fuse.OK
}

func (r *rawFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (_ uint32, code fuse.Status) {
	defer r.end(OpListXAttr, r.begin(), &code, nil)
	var names []string
	var err error
	if h.NodeId == snapDirID {
		// none
	} else if isSnapNode(h.NodeId) {
		var view *fs.View
		var ino fs.Ino
		if view, ino, err = r.snapView(h.NodeId); err == nil {
			names, err = view.ListXattr(ino)
		}
	} else {
		names, err = r.fs.ListXattr(fs.Ino(h.NodeId))
	}
	if err != nil {
		return 0, errStatus(err)
	}
	var b []byte
	for _, n := range names {
		b = append(append(b, n...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), fuse.ERANGE
	}
	return uint32(copy(dest, b)), fuse.OK
}

func (r *rawFS) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, name string, data []byte) (code fuse.Status) {
	defer r.end(OpSetXAttr, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.EROFS
	}
	if name == "system.posix_acl_access" || name == "system.posix_acl_default" {
		// POSIX ACLs are not negotiated (CAP_POSIX_ACL): the kernel would
		// neither enforce a stored ACL nor fold it into the mode. Refuse
		// them as a filesystem without ACLs does, so that cp -a, tar and
		// rsync fall back to chmod instead of losing the permissions.
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	if st := r.changeStatus(in.NodeId); st != fuse.OK {
		return st
	}
	if err := r.fs.SetXattr(fs.Ino(in.NodeId), name, data, in.Flags); err != nil {
		return errStatus(err)
	}
	r.changed(0, "", in.NodeId)
	return fuse.OK
}

func (r *rawFS) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, name string) (code fuse.Status) {
	defer r.end(OpRemoveXAttr, r.begin(), &code, nil)
	if isSnapNode(h.NodeId) {
		return fuse.EROFS
	}
	if st := r.changeStatus(h.NodeId); st != fuse.OK {
		return st
	}
	if err := r.fs.RemoveXattr(fs.Ino(h.NodeId), name); err != nil {
		return errStatus(err)
	}
	r.changed(0, "", h.NodeId)
	return fuse.OK
}

func (r *rawFS) newHandle(hd *handle) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextFh++
	r.handles[r.nextFh] = hd
	return r.nextFh
}

func (r *rawFS) handle(fh uint64) *handle {
	if fh&fhUntracked != 0 {
		return &handle{flags: uint32(fh)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handles[fh]
}

// dropHandle removes a table handle (nil: none, or an untracked one,
// which holds nothing to release).
func (r *rawFS) dropHandle(fh uint64) *handle {
	if fh&fhUntracked != 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hd := r.handles[fh]
	delete(r.handles, fh)
	return hd
}

// openFlags: pages stay cached across opens (every write passes through
// this mount), and close sends no FLUSH.
const openFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH

func (r *rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (code fuse.Status) {
	defer r.end(OpCreate, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.EROFS
	}
	if r.takesSnapshotsName(in.NodeId, name) {
		return fuse.Status(syscall.EEXIST)
	}
	p, st := r.createStatus(in.NodeId, name)
	if st != fuse.OK {
		return st
	}
	a, err := r.fs.Create(caller(&in.InHeader), fs.Ino(in.NodeId), name, fs.NewNode{Mode: in.Mode&^uint32(syscall.S_IFMT) | syscall.S_IFREG})
	if err != nil {
		return errStatus(err)
	}
	if r.view != nil {
		r.view.add(uint64(a.Ino), p)
	}
	r.changed(in.NodeId, name, 0)
	fh, err := r.openCreated(a.Ino, in.Flags, false)
	if err != nil {
		return errStatus(err)
	}
	r.fillEntry(&a, &out.EntryOut)
	out.Fh = fh
	out.OpenFlags = r.createdFlags(in.Flags)
	return fuse.OK
}

// createdFlags are the open flags of a file made by CREATE and opened
// with flags: openFlags, and FOPEN_DIRECT_IO if it was opened write-only
// (and the kernel keeps a direct write coherent: directWrites).
//
// A write through the page cache (FUSE without a writeback cache
// writes through it) copies each byte into a page of the file's cache
// before the daemon reads it from there: a file being written whole
// (cp, tar, dd, a compiler's output, a download) fills pages nobody
// asked to keep, and on a VM that gives freed memory back to its host
// every such page costs a fault there too. A direct write hands the
// daemon the writer's own pages instead. A write-only handle reads
// nothing and cannot be mapped, so it loses no cached read; the kernel
// drops the cached pages a direct write covers, so a reader of the same
// file through another handle reads what was written
// (TestDirectWriteCoherent).
func (r *rawFS) createdFlags(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY && r.directWrites.Load() {
		return openFlags | fuse.FOPEN_DIRECT_IO
	}
	return openFlags
}

// fhUntracked marks a file handle number that is in no table: it carries
// the open flags (uint32) in its low bits. Table handles count up from 1
// and never reach it.
const fhUntracked = 1 << 63

// openCreated is the handle of a file made by CREATE or TMPFILE (held
// says fs.Create already took an open reference on it, as a tmpfile's).
//
// A plain mount answers OPEN with ENOSYS, and from the first such answer
// the kernel sends no RELEASE for the regular files of the connection,
// those made by CREATE after it included (fuse_file_put skips it when
// no_open is set; TestCreatedFileFreedAfterOpen). An open reference taken here would then never be
// dropped: the inode, unlinked or deleted by an undo, would live on as an
// orphan, in the store and in its root, until the store's next open. So
// on a plain mount a created file holds no open reference and no table
// entry (the handle number carries its flags), as every file it opens:
// the kernel's lookup reference from CREATE keeps an unlinked file alive
// until its FORGET. A policy view answers OPEN, so RELEASE always comes:
// its handles are counted opens, dropped by Release.
func (r *rawFS) openCreated(ino fs.Ino, flags uint32, held bool) (uint64, error) {
	if r.view == nil {
		if held {
			r.fs.Release(ino)
		}
		return fhUntracked | uint64(flags), nil
	}
	if !held {
		if _, err := r.fs.Open(ino); err != nil {
			return 0, err
		}
	}
	return r.newHandle(&handle{ino: ino, flags: flags}), nil
}

func (r *rawFS) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) (code fuse.Status) {
	defer r.end(OpTmpfile, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.EROFS
	}
	a, err := r.fs.Create(caller(&in.InHeader), fs.Ino(in.NodeId), "", fs.NewNode{Mode: in.Mode, Tmpfile: true})
	if err != nil {
		return errStatus(err)
	}
	if r.view != nil {
		r.view.add(uint64(a.Ino), unnamed) // writable until linked
	}
	fh, err := r.openCreated(a.Ino, in.Flags, true)
	if err != nil {
		return errStatus(err)
	}
	r.fillEntry(&a, &out.EntryOut)
	out.Fh = fh
	out.OpenFlags = openFlags
	return fuse.OK
}

// Open and OpenDir answer ENOSYS: the kernel then never sends OPEN,
// OPENDIR, RELEASE or RELEASEDIR again, opens cost no round trip, and it
// keeps file pages and directory listings cached across opens
// (FOPEN_KEEP_CACHE and FOPEN_CACHE_DIR are its defaults without open).
// Nothing is lost: an unlinked open file stays alive through the kernel's
// lookup reference, O_APPEND offsets come from the kernel, and dirty
// chunks reach the store by the committer's tick or by fsync.
//
// A policy view (rules.go) answers OPEN, so that opening a read-only
// file for writing fails there, as on a read-only file system, rather
// than at its first write.
func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if r.view == nil {
		return fuse.ENOSYS
	}
	if in.Flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		if st := r.changeStatus(in.NodeId); st != fuse.OK {
			return st
		}
	}
	if _, err := r.fs.Open(fs.Ino(in.NodeId)); err != nil {
		return errStatus(err)
	}
	out.Fh = r.newHandle(&handle{ino: fs.Ino(in.NodeId), flags: in.Flags})
	out.OpenFlags = openFlags
	return fuse.OK
}

func (r *rawFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (_ fuse.ReadResult, code fuse.Status) {
	var n int
	defer r.end(OpRead, r.begin(), &code, &n)
	if isSnapNode(in.NodeId) {
		view, ino, err := r.snapView(in.NodeId)
		if err == nil {
			n, err = view.Read(ino, int64(in.Offset), buf[:in.Size])
		}
		if err != nil {
			return nil, errStatus(err)
		}
		return fuse.ReadResultData(buf[:n]), fuse.OK
	}
	data, release, err := r.fs.ReadHeld(ctxOf(cancel), fs.Ino(in.NodeId), int64(in.Offset), buf[:in.Size])
	n = len(data)
	if err != nil {
		return nil, errStatus(err)
	}
	if release != nil {
		return &heldResult{data: data, release: release}, fuse.OK
	}
	return fuse.ReadResultData(data), fuse.OK
}

// heldResult replies to a READ straight from the workspace's chunk cache
// (fs.FS.ReadHeld), without copying the bytes into the request's buffer.
// go-fuse writes a result that has Slices with writev from the slices
// themselves and calls Done after the write, which lets go of the cache
// entry. Bytes, for a result written by other means, copies: go-fuse
// calls Done on that path before it writes the bytes.
type heldResult struct {
	data    []byte
	release func()
}

func (h *heldResult) Slices() ([][]byte, fuse.Status) { return [][]byte{h.data}, fuse.OK }
func (h *heldResult) Bytes(buf []byte) ([]byte, fuse.Status) {
	if cap(buf) < len(h.data) {
		buf = make([]byte, len(h.data))
	}
	return buf[:copy(buf[:len(h.data)], h.data)], fuse.OK
}
func (h *heldResult) Size() int { return len(h.data) }
func (h *heldResult) Done() {
	if h.release != nil {
		h.release()
		h.release = nil
	}
}

func (r *rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (_ uint32, code fuse.Status) {
	var n int
	defer r.end(OpWrite, r.begin(), &code, &n)
	if isSnapNode(in.NodeId) {
		return 0, fuse.EROFS
	}
	if st := r.changeStatus(in.NodeId); st != fuse.OK {
		return 0, st
	}
	appendMode := false
	if hd := r.handle(in.Fh); hd != nil {
		appendMode = hd.flags&syscall.O_APPEND != 0
	}
	n, err := r.fs.Write(ctxOf(cancel), fs.Ino(in.NodeId), int64(in.Offset), data, appendMode)
	if err == nil && in.WriteFlags&fuse.WRITE_KILL_SUIDGID != 0 {
		_, err = r.fs.SetAttr(caller(&in.InHeader), fs.Ino(in.NodeId), fs.SetAttrIn{KillSuidGid: true})
	}
	if n > 0 {
		r.changed(0, "", in.NodeId)
	}
	if err != nil && n == 0 {
		return 0, errStatus(err)
	}
	return uint32(n), fuse.OK
}

func (r *rawFS) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (_ uint32, code fuse.Status) {
	var n int
	defer r.end(OpCopyFileRange, r.begin(), &code, &n)
	if isSnapNode(in.NodeIdOut) {
		return 0, fuse.EROFS
	}
	if st := r.changeStatus(in.NodeIdOut); st != fuse.OK {
		return 0, st
	}
	if isSnapNode(in.NodeId) {
		// The kernel copies from a snapshot by reading it.
		return 0, fuse.Status(syscall.EOPNOTSUPP)
	}
	copied, err := r.fs.CopyRange(ctxOf(cancel), fs.Ino(in.NodeId), int64(in.OffIn), fs.Ino(in.NodeIdOut), int64(in.OffOut), int64(min(in.Len, 1<<30)))
	if err != nil {
		return 0, errStatus(err)
	}
	n = int(copied)
	r.changed(0, "", in.NodeIdOut)
	return uint32(copied), fuse.OK
}

func (r *rawFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) (code fuse.Status) {
	defer r.end(OpLseek, r.begin(), &code, nil)
	if in.Whence != fs.SeekData && in.Whence != fs.SeekHole {
		return fuse.ENOSYS
	}
	if isSnapNode(in.NodeId) {
		off, err := r.snapSeek(in.NodeId, in.Offset, in.Whence)
		if err != nil {
			return errStatus(err)
		}
		out.Offset = off
		return fuse.OK
	}
	off, err := r.fs.SeekData(fs.Ino(in.NodeId), int64(in.Offset), int(in.Whence))
	if err != nil {
		return errStatus(err)
	}
	out.Offset = uint64(off)
	return fuse.OK
}

// Flush answers ENOSYS so that the kernel stops sending FLUSH on close:
// locks are the kernel's, and close does not wait for durability.
func (r *rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

func (r *rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	defer r.end(OpRelease, r.begin(), nil, nil)
	if hd := r.dropHandle(in.Fh); hd != nil {
		r.fs.Release(hd.ino)
	}
}

func (r *rawFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) (code fuse.Status) {
	defer r.end(OpFsync, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.OK // nothing to write
	}
	// Not interruptible, as on ext4: a signal to the caller (the
	// kernel's FUSE_INTERRUPT) would otherwise make fsync fail with
	// EINTR, which few programs retry (SQLite fails its transaction).
	return errStatus(r.fs.Fsync(context.WithoutCancel(ctxOf(cancel)), fs.Ino(in.NodeId)))
}

func (r *rawFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) (code fuse.Status) {
	defer r.end(OpFsyncDir, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.OK
	}
	return errStatus(r.fs.Fsync(context.WithoutCancel(ctxOf(cancel)), fs.Ino(in.NodeId))) // as Fsync
}

func (r *rawFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) (code fuse.Status) {
	defer r.end(OpFallocate, r.begin(), &code, nil)
	if isSnapNode(in.NodeId) {
		return fuse.EROFS
	}
	if st := r.changeStatus(in.NodeId); st != fuse.OK {
		return st
	}
	if err := r.fs.Fallocate(ctxOf(cancel), fs.Ino(in.NodeId), int64(in.Offset), int64(in.Length), in.Mode); err != nil {
		return errStatus(err)
	}
	r.changed(0, "", in.NodeId)
	return fuse.OK
}

func (r *rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS // see Open
}

// readDir serves READDIR(PLUS) without open handles. Offsets are cookies
// derived from the names and the listing is sorted by cookie, so a reader
// resumes correctly wherever it stopped, whatever changed meanwhile, as in
// ext4's hash order. Listings are cached per directory until it changes.
func (r *rawFS) readDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	if isSnapNode(in.NodeId) {
		return r.snapReadDir(in, out, plus)
	}
	dir := fs.Ino(in.NodeId)
	l, err := r.dirs.get(r.fs, dir)
	if err != nil {
		return errStatus(err)
	}
	i := sort.Search(len(l.cookies), func(i int) bool { return l.cookies[i] > in.Offset })
	for ; i < len(l.entries); i++ {
		e := l.entries[i]
		if r.view != nil && r.hides(in.NodeId, e.Name) {
			continue
		}
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
			continue // the kernel takes no reference on these
		}
		a, err := r.fs.Lookup(fs.Caller{Uid: in.Uid, Gid: in.Gid, Kernel: true}, dir, e.Name)
		if err != nil {
			continue // gone since the listing was taken; the kernel skips nodeid 0
		}
		if r.view != nil {
			r.view.add(uint64(a.Ino), r.view.child(in.NodeId, e.Name))
		}
		r.fillEntry(&a, eo)
	}
	return fuse.OK
}

func (r *rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (code fuse.Status) {
	defer r.end(OpReadDir, r.begin(), &code, nil)
	return r.readDir(in, out, false)
}

func (r *rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (code fuse.Status) {
	defer r.end(OpReadDirPlus, r.begin(), &code, nil)
	return r.readDir(in, out, true)
}

func (r *rawFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) (code fuse.Status) {
	defer r.end(OpStatFs, r.begin(), &code, nil)
	st := r.fs.StatFS()
	out.Bsize = st.BlockSize
	out.Frsize = st.BlockSize
	out.Blocks = st.Blocks
	out.Bfree = st.BlocksFree
	out.Bavail = st.BlocksFree
	out.Files = st.Files
	out.Ffree = st.FilesFree
	out.NameLen = st.NameMax
	return fuse.OK
}

func (r *rawFS) Init(s *fuse.Server) { r.server = s }

// ctxOf turns go-fuse's cancel channel into a context for fs calls.
func ctxOf(cancel <-chan struct{}) context.Context {
	if cancel == nil {
		return context.Background()
	}
	return cancelCtx{cancel}
}

type cancelCtx struct{ c <-chan struct{} }

func (c cancelCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c cancelCtx) Done() <-chan struct{}       { return c.c }
func (c cancelCtx) Err() error {
	select {
	case <-c.c:
		return context.Canceled
	default:
		return nil
	}
}
func (c cancelCtx) Value(any) any { return nil }

// mountFlags are the generic mount options opts asks for: go-fuse turns
// noexec into MS_NOEXEC and passes ro on as the superblock's read-only
// flag (fusermount3 takes both).
func mountFlags(opts Options) []string {
	var o []string
	if opts.ReadOnly {
		o = append(o, "ro")
	}
	if opts.NoExec {
		o = append(o, "noexec")
	}
	return o
}
