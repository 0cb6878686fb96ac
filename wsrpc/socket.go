package wsrpc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/zeebo/blake3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// maxSocketPath keeps within sun_path (108 bytes with its NUL).
const maxSocketPath = 104

// SocketPath is where the daemon holding workspace ws serves its control
// socket: beside the store as WS.sock, or, when that path is too long for
// a unix socket, under /tmp/computerfs-UID/ named by a hash of the
// store's absolute path.
func SocketPath(ws string) (string, error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fmt.Errorf("workspace path %s: %w", ws, err)
	}
	if p := abs + ".sock"; len(p) <= maxSocketPath {
		return p, nil
	}
	sum := blake3.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), fmt.Sprintf("computerfs-%d", os.Geteuid()), hex.EncodeToString(sum[:8])+".sock"), nil
}

// ControlServer serves the file API on a workspace's control socket.
type ControlServer struct {
	path string
	lis  net.Listener
	grpc *grpc.Server
	log  *slog.Logger
	done chan struct{}
	once sync.Once
}

// Listen creates the control socket of workspace ws, owner-only, and
// serves srv and the services register adds on it until Close. The
// caller must hold the workspace (its store lock): a socket left at the
// path by a dead daemon is replaced.
func Listen(ws string, srv *Server, log *slog.Logger, register ...func(*grpc.Server)) (*ControlServer, error) {
	path, err := SocketPath(ws)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
	if err := os.Rename(tmp, path); err != nil {
		lis.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	g := grpc.NewServer(grpc.MaxRecvMsgSize(4<<20 + 4096))
	srv.Register(g)
	for _, r := range register {
		r(g)
	}
	cs := &ControlServer{path: path, lis: lis, grpc: g, log: log, done: make(chan struct{})}
	go func() {
		defer close(cs.done)
		if err := g.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
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
		// Remove the socket only if it is still ours.
		if fi, err := os.Stat(cs.path); err == nil && fi.Mode()&os.ModeSocket != 0 {
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

// DialConn is Dial for callers that want the connection itself (for the
// daemon's other services).
func DialConn(ctx context.Context, ws string) (*grpc.ClientConn, error) {
	path, err := SocketPath(ws)
	if err != nil {
		return nil, err
	}
	// Probe first: grpc connects lazily, and a dead socket must be told
	// apart from a slow call.
	var d net.Dialer
	probe, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (%s: %v)", ErrNoDaemon, path, err)
		}
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	probe.Close()
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<20+4096)))
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return conn, nil
}
