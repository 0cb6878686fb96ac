package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"syscall"

	"github.com/computerfs/computerfs/pluginapi/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// HostFS is an exec's view of the workspace: the host's file API, scoped
// by the exec's token to what its policy grants. Relative paths resolve
// against the exec's working directory. Errors are *io/fs.PathError with
// a syscall.Errno cause (FSError), so errors.Is(err, syscall.ENOENT)
// works.
type HostFS struct {
	c     pb.WorkspaceClient
	token string
	cwd   string
}

// NewHostFS wraps a Workspace client for one token; hosts and tests use
// it, plugins get theirs in Exec.FS.
func NewHostFS(c pb.WorkspaceClient, token, cwd string) *HostFS {
	return &HostFS{c: c, token: token, cwd: cwd}
}

// Client is the raw gRPC client; call it with Context(ctx).
func (h *HostFS) Client() pb.WorkspaceClient { return h.c }

// Context adds the exec's token to ctx.
func (h *HostFS) Context(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, TokenMetadata, h.token)
}

// Abs resolves p against the exec's working directory.
func (h *HostFS) Abs(p string) string {
	if path.IsAbs(p) || h.cwd == "" {
		return p
	}
	return path.Join(h.cwd, p)
}

// FSError is the cause of a file-system error from the host.
type FSError = pb.FSError

// Error turns a response's Error field into a Go error (nil for none).
func Error(e *pb.Error) error {
	c := e.Cause()
	if c == nil {
		return nil
	}
	return &iofs.PathError{Op: e.Op, Path: e.Path, Err: c}
}

func callError(op, p string, err error) error {
	return &iofs.PathError{Op: op, Path: p, Err: fmt.Errorf("host file API: %w", err)}
}

// Stat describes p, following symlinks.
func (h *HostFS) Stat(ctx context.Context, p string) (*pb.FileInfo, error) {
	return h.stat(ctx, p, false)
}

// Lstat describes p itself.
func (h *HostFS) Lstat(ctx context.Context, p string) (*pb.FileInfo, error) {
	return h.stat(ctx, p, true)
}

func (h *HostFS) stat(ctx context.Context, p string, lstat bool) (*pb.FileInfo, error) {
	r, err := h.c.Stat(h.Context(ctx), &pb.StatRequest{Path: h.Abs(p), Lstat: lstat})
	if err != nil {
		return nil, callError("stat", p, err)
	}
	if err := Error(r.Error); err != nil {
		return nil, err
	}
	return r.Info, nil
}

// ReadFile reads a whole file.
func (h *HostFS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	rd, _, err := h.Open(ctx, p, nil)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// Open streams a file (or the range req asks for; nil for all of it).
func (h *HostFS) Open(ctx context.Context, p string, req *pb.ReadRequest) (io.ReadCloser, *pb.FileInfo, error) {
	if req == nil {
		req = &pb.ReadRequest{}
	}
	req.Path = h.Abs(p)
	ctx, cancel := context.WithCancel(h.Context(ctx))
	stream, err := h.c.Read(ctx, req)
	if err != nil {
		cancel()
		return nil, nil, callError("read", p, err)
	}
	first, err := stream.Recv()
	if err != nil {
		cancel()
		return nil, nil, callError("read", p, err)
	}
	if err := Error(first.Error); err != nil {
		cancel()
		return nil, nil, err
	}
	return &hostReader{stream: stream, cancel: cancel, buf: first.Data, path: p}, first.Info, nil
}

type hostReader struct {
	stream grpc.ServerStreamingClient[pb.ReadResponse]
	cancel context.CancelFunc
	buf    []byte
	path   string
	err    error
}

func (r *hostReader) Read(b []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		m, err := r.stream.Recv()
		if err == io.EOF {
			r.err = io.EOF
			continue
		}
		if err != nil {
			r.err = callError("read", r.path, err)
			continue
		}
		if err := Error(m.Error); err != nil {
			r.err = err
			continue
		}
		r.buf = m.Data
	}
	n := copy(b, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *hostReader) Close() error {
	r.cancel()
	return nil
}

// WriteOptions qualify Create and WriteFile.
type WriteOptions struct {
	Append    bool
	Exclusive bool
	Perm      uint32 // 0: 0644 for a new file, unchanged for an existing one
	Parents   bool
	IfMatch   string
}

// WriteFile writes data to p (atomically replacing it unless appending).
func (h *HostFS) WriteFile(ctx context.Context, p string, data []byte, opt WriteOptions) (*pb.WriteResponse, error) {
	w, err := h.Create(ctx, p, opt)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.(*hostWriter).resp, nil
}

// Create returns a writer whose data lands in p when Close returns nil:
// the content replaces p's atomically (or is appended). Data streams to
// the host as it is written.
func (h *HostFS) Create(ctx context.Context, p string, opt WriteOptions) (io.WriteCloser, error) {
	ctx, cancel := context.WithCancel(h.Context(ctx))
	stream, err := h.c.Write(ctx)
	if err != nil {
		cancel()
		return nil, callError("write", p, err)
	}
	head := &pb.WriteRequest{Path: h.Abs(p), Append: opt.Append, Exclusive: opt.Exclusive, Perm: opt.Perm, Parents: opt.Parents, IfMatch: opt.IfMatch}
	if err := stream.Send(head); err != nil {
		cancel()
		return nil, h.writeFailure(stream, p, err)
	}
	return &hostWriter{h: h, stream: stream, cancel: cancel, path: p}, nil
}

// writeFailure fetches the host's answer after a failed send: it says why.
func (h *HostFS) writeFailure(stream grpc.ClientStreamingClient[pb.WriteRequest, pb.WriteResponse], p string, sendErr error) error {
	r, err := stream.CloseAndRecv()
	if err == nil {
		if e := Error(r.Error); e != nil {
			return e
		}
	}
	return callError("write", p, sendErr)
}

type hostWriter struct {
	h      *HostFS
	stream grpc.ClientStreamingClient[pb.WriteRequest, pb.WriteResponse]
	cancel context.CancelFunc
	path   string
	buf    []byte
	err    error
	resp   *pb.WriteResponse
	closed bool
}

// writeChunk is the data one write message carries.
const writeChunk = 256 << 10

func (w *hostWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	for len(w.buf) >= writeChunk {
		if err := w.flush(writeChunk); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *hostWriter) flush(n int) error {
	if err := w.stream.Send(&pb.WriteRequest{Data: w.buf[:n]}); err != nil {
		w.err = w.h.writeFailure(w.stream, w.path, err)
		w.cancel()
		return w.err
	}
	w.buf = append(w.buf[:0], w.buf[n:]...)
	return nil
}

func (w *hostWriter) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.cancel()
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		if err := w.flush(len(w.buf)); err != nil {
			return err
		}
	}
	r, err := w.stream.CloseAndRecv()
	if err != nil {
		w.err = callError("write", w.path, err)
		return w.err
	}
	if err := Error(r.Error); err != nil {
		w.err = err
		return err
	}
	w.resp = r
	return nil
}

// List lists a directory (every page).
func (h *HostFS) List(ctx context.Context, p string) ([]*pb.FileInfo, error) {
	var out []*pb.FileInfo
	for off := int32(0); ; {
		r, err := h.c.List(h.Context(ctx), &pb.ListRequest{Path: h.Abs(p), Limit: 10000, Offset: off})
		if err != nil {
			return nil, callError("list", p, err)
		}
		if err := Error(r.Error); err != nil {
			return nil, err
		}
		out = append(out, r.Entries...)
		if r.Next == 0 {
			return out, nil
		}
		off = r.Next
	}
}

// Mkdir makes a directory (and its parents, if asked).
func (h *HostFS) Mkdir(ctx context.Context, p string, perm uint32, parents bool) error {
	r, err := h.c.Mkdir(h.Context(ctx), &pb.MkdirRequest{Path: h.Abs(p), Perm: perm, Parents: parents})
	if err != nil {
		return callError("mkdir", p, err)
	}
	return Error(r.Error)
}

// Remove removes p (a whole tree if recursive).
func (h *HostFS) Remove(ctx context.Context, p string, recursive bool) error {
	r, err := h.c.Remove(h.Context(ctx), &pb.RemoveRequest{Path: h.Abs(p), Recursive: recursive})
	if err != nil {
		return callError("remove", p, err)
	}
	return Error(r.Error)
}

// Rename moves src to dst atomically.
func (h *HostFS) Rename(ctx context.Context, src, dst string) error {
	r, err := h.c.Rename(h.Context(ctx), &pb.RenameRequest{Src: h.Abs(src), Dst: h.Abs(dst)})
	if err != nil {
		return callError("rename", src, err)
	}
	return Error(r.Error)
}

// Copy copies src to dst, sharing data.
func (h *HostFS) Copy(ctx context.Context, src, dst string, recursive bool) error {
	r, err := h.c.Copy(h.Context(ctx), &pb.CopyRequest{Src: h.Abs(src), Dst: h.Abs(dst), Recursive: recursive})
	if err != nil {
		return callError("copy", src, err)
	}
	return Error(r.Error)
}

// Symlink makes p a symlink to target.
func (h *HostFS) Symlink(ctx context.Context, target, p string) error {
	r, err := h.c.Symlink(h.Context(ctx), &pb.SymlinkRequest{Target: target, Path: h.Abs(p)})
	if err != nil {
		return callError("symlink", p, err)
	}
	return Error(r.Error)
}

// Readlink returns a symlink's target.
func (h *HostFS) Readlink(ctx context.Context, p string) (string, error) {
	r, err := h.c.Readlink(h.Context(ctx), &pb.ReadlinkRequest{Path: h.Abs(p)})
	if err != nil {
		return "", callError("readlink", p, err)
	}
	return r.Target, Error(r.Error)
}

// SetAttr changes permission, size or times (req.Path is set from p).
func (h *HostFS) SetAttr(ctx context.Context, p string, req *pb.SetAttrRequest) (*pb.FileInfo, error) {
	req.Path = h.Abs(p)
	r, err := h.c.SetAttr(h.Context(ctx), req)
	if err != nil {
		return nil, callError("setattr", p, err)
	}
	if err := Error(r.Error); err != nil {
		return nil, err
	}
	return r.Info, nil
}

// Glob lists the paths matching pattern (every page).
func (h *HostFS) Glob(ctx context.Context, pattern string) ([]string, error) {
	var out []string
	for off := int32(0); ; {
		r, err := h.c.Glob(h.Context(ctx), &pb.GlobRequest{Pattern: pattern, Dir: h.cwd, Limit: 10000, Offset: off})
		if err != nil {
			return nil, callError("glob", pattern, err)
		}
		if err := Error(r.Error); err != nil {
			return nil, err
		}
		out = append(out, r.Paths...)
		if r.Next == 0 {
			return out, nil
		}
		off = r.Next
	}
}

// Grep runs one page of a grep (req.Path is resolved against the cwd).
func (h *HostFS) Grep(ctx context.Context, req *pb.GrepRequest) (*pb.GrepResponse, error) {
	req.Path = h.Abs(req.Path)
	if req.Path == "" {
		req.Path = h.Abs(".")
	}
	r, err := h.c.Grep(h.Context(ctx), req)
	if err != nil {
		return nil, callError("grep", req.Path, err)
	}
	if err := Error(r.Error); err != nil {
		return nil, err
	}
	return r, nil
}

// IsNotExist reports whether err says a file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, syscall.ENOENT) }
