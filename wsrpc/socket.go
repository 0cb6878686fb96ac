package wsrpc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// maxSocketPath keeps within sun_path (108 bytes with its NUL).
const maxSocketPath = 104

// SocketPath is where the daemon holding workspace ws serves its control
// socket: beside the store as WS.sock, or, when that path is too long for
// a unix socket, in the runtime directory (see RuntimeDir) named by a
// hash of the store's absolute path.
//
// A runtime directory that exists but is not private to this user is an
// error (an *UnsafeDirError), for clients as for the daemon: whoever else
// can write there could put their own socket in the daemon's place and
// read every file call, content included. A missing one is no error: no
// daemon listens there.
func SocketPath(ws string) (string, error) {
	path, inRuntimeDir, err := socketPath(ws)
	if err != nil || !inRuntimeDir {
		return path, err
	}
	if err := CheckPrivateDir(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("control socket of %s: %w", ws, err)
	}
	return path, nil
}

// socketPath is SocketPath unchecked; inRuntimeDir says the socket is not
// beside the store.
func socketPath(ws string) (path string, inRuntimeDir bool, err error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", false, fmt.Errorf("workspace path %s: %w", ws, err)
	}
	if p := abs + ".sock"; len(p) <= maxSocketPath {
		return p, false, nil
	}
	sum := blake3.Sum256([]byte(abs))
	return filepath.Join(RuntimeDirPath(), hex.EncodeToString(sum[:8])+".sock"), true, nil
}

// RuntimeDirPath is the directory of this user's runtime files (control
// sockets whose path beside the store would be too long):
// $XDG_RUNTIME_DIR/computerfs when XDG_RUNTIME_DIR is absolute and
// private to this user (owned by the effective uid, writable by nobody
// else), else computerfs-EUID in $TMPDIR (or /tmp). It is not created
// nor checked; RuntimeDir does both.
func RuntimeDirPath() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		if fi, err := os.Stat(x); err == nil && fi.IsDir() && ownedByMe(fi) && fi.Mode().Perm()&0o022 == 0 {
			return filepath.Join(filepath.Clean(x), "computerfs")
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("computerfs-%d", os.Geteuid()))
}

// RuntimeDir returns RuntimeDirPath, created (mode 0700) if missing, once
// CheckPrivateDir accepts it.
func RuntimeDir() (string, error) {
	dir := RuntimeDirPath()
	return dir, ensurePrivateDir(dir)
}

// ensurePrivateDir makes dir (0700) if missing, and checks it.
func ensurePrivateDir(dir string) error {
	// The parent first, so as to make nothing in one others can write.
	if err := checkParent(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("runtime directory %s: %w", dir, err)
	}
	return CheckPrivateDir(dir)
}

// UnsafeDirError refuses a directory for runtime files that is not
// private to the daemon's user.
type UnsafeDirError struct {
	Dir    string
	Mode   fs.FileMode
	UID    int    // its owner
	Reason string // why it is refused
}

func (e *UnsafeDirError) Error() string {
	what := "not made yet"
	if e.UID >= 0 {
		what = fmt.Sprintf("owner uid %d, mode %s (%04o)", e.UID, e.Mode, e.Mode.Perm())
	}
	return fmt.Sprintf("refusing runtime directory %s (%s): %s; another user could put their own control socket there and read the traffic. Remove it, or set XDG_RUNTIME_DIR or TMPDIR to a directory of your own", e.Dir, what, e.Reason)
}

// CheckPrivateDir accepts dir, as ssh-agent and tmux accept their socket
// directories, when it is a directory itself (not a symlink to one),
// owned by the effective uid, with no permission for group or others
// (0700), in a parent that others cannot rename it out of (not writable
// by others, or sticky as /tmp is). Its error for a missing dir wraps
// fs.ErrNotExist; any other refusal is an *UnsafeDirError.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("runtime directory %s: %w", dir, err)
	}
	refuse := func(fi fs.FileInfo, format string, args ...any) error {
		return &UnsafeDirError{Dir: dir, Mode: fi.Mode(), UID: ownerOf(fi), Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(dir)
		return refuse(fi, "it is a symlink (to %s), not a directory", target)
	case !fi.IsDir():
		return refuse(fi, "it is not a directory")
	case !ownedByMe(fi):
		return refuse(fi, "it is not owned by uid %d, who runs computerfs", os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return refuse(fi, "group or others have access to it (want mode 0700)")
	}
	return checkParent(dir)
}

// checkParent refuses dir when others can rename it away (or make it
// first) in its parent: a parent writable by group or others that is not
// sticky.
func checkParent(dir string) error {
	parent := filepath.Dir(dir)
	pfi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("runtime directory %s: %w", dir, err)
	}
	if pfi.Mode().Perm()&0o022 != 0 && pfi.Mode()&fs.ModeSticky == 0 {
		e := &UnsafeDirError{Dir: dir, UID: -1, Reason: fmt.Sprintf("its parent %s (owner uid %d, mode %s) is writable by others and not sticky, so they can rename it away", parent, ownerOf(pfi), pfi.Mode())}
		if fi, err := os.Lstat(dir); err == nil {
			e.Mode, e.UID = fi.Mode(), ownerOf(fi)
		}
		return e
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func ownedByMe(fi fs.FileInfo) bool { return ownerOf(fi) == os.Geteuid() }

// trustedUID says whether a control socket owned by, or served by, uid
// may be used: ours, or root's (root can read our traffic anyway).
func trustedUID(uid int) bool { return uid == os.Geteuid() || uid == 0 }

// ControlServer serves the file API on a workspace's control socket.
type ControlServer struct {
	path string
	sock fs.FileInfo // the socket file made at path
	lis  net.Listener
	grpc *grpc.Server
	log  *slog.Logger
	done chan struct{}
	once sync.Once
	// mux sorts the socket's connections: gRPC's, and handoffs (see
	// HandleHandoff), served under ctx, which Close cancels.
	mux     *muxListener
	handoff atomic.Pointer[HandoffHandler]
	ctx     context.Context
	cancel  context.CancelFunc
}

// Listen creates the control socket of workspace ws, owner-only, and
// serves srv and the services register adds on it until Close. The
// caller must hold the workspace (its store lock): a socket left at the
// path by a dead daemon is replaced.
func Listen(ws string, srv *Server, log *slog.Logger, register ...func(*grpc.Server)) (*ControlServer, error) {
	path, inRuntimeDir, err := socketPath(ws)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if inRuntimeDir {
		if err := ensurePrivateDir(dir); err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	// Bind in a private directory and rename into place, so that the
	// socket is never reachable before its mode is 0600.
	tmpDir, err := os.MkdirTemp(dir, ".cfs-sock-")
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	lis, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		lis.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	mine, err := os.Lstat(tmp)
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		lis.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	// The socket at the path must be the one just bound: in a store
	// directory that others can write, it could be replaced at once (the
	// clients check whose it is, but say it here too).
	if fi, err := os.Lstat(path); err != nil || !os.SameFile(fi, mine) {
		lis.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, errReplaced(err))
	}
	g := grpc.NewServer(grpc.MaxRecvMsgSize(4<<20 + 4096))
	srv.Register(g)
	for _, r := range register {
		r(g)
	}
	cs := &ControlServer{path: path, sock: mine, lis: lis, grpc: g, log: log, done: make(chan struct{})}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	cs.mux = newMuxListener(lis, cs)
	go func() {
		defer close(cs.done)
		if err := g.Serve(cs.mux); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("control socket stopped", "socket", path, "err", err)
		}
	}()
	log.Info("control socket", "socket", path)
	return cs, nil
}

// Path is the socket's path.
func (cs *ControlServer) Path() string { return cs.path }

// Close stops serving, ending calls in flight after a grace period, and
// removes the socket.
func (cs *ControlServer) Close() {
	cs.once.Do(func() {
		cs.cancel() // the handoffs' sessions end
		stopped := make(chan struct{})
		go func() {
			cs.grpc.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			cs.grpc.Stop() // followers of the change feed would wait forever
		}
		<-cs.done
		cs.mux.Close()
		cs.mux.wg.Wait()
		// Remove the socket only if it is still ours.
		if fi, err := os.Lstat(cs.path); err == nil && os.SameFile(fi, cs.sock) {
			os.Remove(cs.path)
		}
	})
}

// ErrNoDaemon says no daemon answers on the workspace's control socket.
var ErrNoDaemon = errors.New("no daemon holds the workspace")

// Dial connects to the daemon holding workspace ws. It returns
// ErrNoDaemon (wrapped) when the socket is missing or nobody listens on
// it, so that the caller can open the store itself.
func Dial(ctx context.Context, ws string) (*Client, func() error, error) {
	conn, err := DialConn(ctx, ws)
	if err != nil {
		return nil, nil, err
	}
	return NewClient(conn), conn.Close, nil
}

// ErrUntrustedSocket says the control socket is not one the daemon of
// this user could have made: it belongs to, or is served by, another user
// than this one or root.
var ErrUntrustedSocket = errors.New("control socket not owned by this user or root")

// DialConn is Dial for callers that want the connection itself (for the
// daemon's other services).
//
// It talks only to a daemon of this user or of root: the runtime
// directory must pass CheckPrivateDir (see SocketPath), the socket must be
// a socket owned by the effective uid or root, and so must the process
// serving it (SO_PEERCRED, checked on every connection, so a socket
// swapped after the check is caught too). Otherwise it fails with
// ErrUntrustedSocket or an *UnsafeDirError, never ErrNoDaemon: the caller
// must not take the workspace for free.
func DialConn(ctx context.Context, ws string) (*grpc.ClientConn, error) {
	// Probe first: grpc connects lazily, and a dead socket must be told
	// apart from a slow call.
	path, c, _, err := probe(ctx, ws)
	if err != nil {
		return nil, err
	}
	c.Close()
	conn, err := grpc.NewClient("passthrough:///localhost",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			c, _, err := dialTrusted(ctx, path)
			return c, err
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<20+4096)))
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return conn, nil
}

// DaemonPID is the pid of the daemon serving workspace ws, as the kernel
// tells of the process at the other end of its control socket, checked
// as DialConn checks it. It is ErrNoDaemon (wrapped) when none serves.
func DaemonPID(ctx context.Context, ws string) (int, error) {
	_, c, pid, err := probe(ctx, ws)
	if err != nil {
		return 0, err
	}
	c.Close()
	return pid, nil
}

// probe connects once to the control socket of ws, with DialConn's
// checks, and returns its path, the connection and the peer's pid.
func probe(ctx context.Context, ws string) (string, net.Conn, int, error) {
	path, err := SocketPath(ws)
	if err != nil {
		return "", nil, 0, err
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, fmt.Errorf("%w (%s: %v)", ErrNoDaemon, path, err)
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return "", nil, 0, fmt.Errorf("control socket %s: %w: it is not a socket (mode %s)", path, ErrUntrustedSocket, fi.Mode())
	}
	if uid := ownerOf(fi); !trustedUID(uid) {
		return "", nil, 0, fmt.Errorf("control socket %s: %w: it belongs to uid %d", path, ErrUntrustedSocket, uid)
	}
	c, pid, err := dialTrusted(ctx, path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return "", nil, 0, fmt.Errorf("%w (%s: %v)", ErrNoDaemon, path, err)
		}
		return "", nil, 0, fmt.Errorf("control socket %s: %w", path, err)
	}
	return path, c, pid, nil
}

// dialTrusted connects to the unix socket at path and checks that the
// process on the other end runs as this user or root; it returns the
// connection and that process's pid.
func dialTrusted(ctx context.Context, path string) (net.Conn, int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, 0, err
	}
	cred, err := peerCred(c.(*net.UnixConn))
	if err != nil {
		c.Close()
		return nil, 0, fmt.Errorf("control socket %s: peer credentials: %w", path, err)
	}
	if uid := int(cred.Uid); !trustedUID(uid) {
		c.Close()
		return nil, 0, fmt.Errorf("control socket %s: %w: it is served by uid %d", path, ErrUntrustedSocket, uid)
	}
	return c, int(cred.Pid), nil
}

// peerCred is who made the other end of c.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, serr
}

func errReplaced(err error) error {
	if err != nil {
		return err
	}
	return errors.New("replaced by another file right after it was made")
}
