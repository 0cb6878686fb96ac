// Package wsrpc carries the workspace file API over gRPC: the server side
// (on the daemon's control socket, and to plugins as HostFS), the client
// side (a workspace.API across a socket), and the control socket itself.
//
// It also serves the daemon's own service (DaemonServer, DaemonClient,
// pluginapi/proto/daemon.proto): status, and stats, fsck (read-only), gc
// and limit on the store the daemon holds, which no other process can
// open meanwhile. What the layers above know (backends, FUSE traffic)
// comes in as functions (DaemonOptions), so that wsrpc imports none of
// them. Errors of calls to the daemon reach people through PlainError,
// without gRPC's framing.
//
// It owns the translation between workspace types and the messages of
// pluginapi/proto/workspace.proto, and the socket's location and
// permissions. It must not add semantics: every call is one call of a
// workspace.WS, so the API means the same here and in process.
//
// File-system errors travel in each response's Error field with their
// errno; gRPC status errors are kept for failures of the call itself.
//
// The read calls (read, stat, list, readlink, glob, grep, tree) carry a
// snapshot field: set, the call reads that snapshot of the view
// (workspace.WS.Snapshot) instead of the live tree. A Client made by
// Snapshot sets it, and refuses every change itself (EROFS).
package wsrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
)

// chunkBytes is the most data one stream message carries: well under
// gRPC's 4 MiB default cap.
const chunkBytes = 1 << 20

// Resolver picks the workspace view a call works on: the whole workspace
// for the control socket, a scoped view for a plugin's exec token.
type Resolver func(ctx context.Context) (*workspace.WS, error)

// Server implements the Workspace service.
type Server struct {
	pb.UnimplementedWorkspaceServer
	resolve Resolver
}

// NewServer returns a Workspace service over the views resolve gives.
func NewServer(resolve Resolver) *Server { return &Server{resolve: resolve} }

// Register adds the service to a gRPC server.
func (s *Server) Register(g *grpc.Server) { pb.RegisterWorkspaceServer(g, s) }

// toPBError turns an API error into its wire form (nil for nil).
func toPBError(err error) *pb.Error {
	if err == nil {
		return nil
	}
	e := &pb.Error{Message: valid(err.Error())}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		e.Op, e.Path, e.Message = pe.Op, valid(pe.Path), valid(pe.Err.Error())
	}
	if errors.Is(err, workspace.ErrConflict) {
		e.Code = "CONFLICT"
		e.Errno = int32(syscall.ESTALE)
		return e
	}
	errno := workspace.Errno(err)
	e.Errno = int32(errno)
	e.Code = unix.ErrnoName(errno)
	return e
}

// valid makes s fit a proto string: names written through the mount need
// not be UTF-8.
func valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func toPBInfo(fi *workspace.FileInfo) *pb.FileInfo {
	return &pb.FileInfo{
		Path: valid(fi.Path), Name: valid(fi.Name), Type: fi.Type, Size: fi.Size, Mode: fi.Mode,
		MtimeNs: fi.Mtime.UnixNano(), Ino: fi.Ino, Nlink: fi.Nlink, Uid: fi.Uid, Gid: fi.Gid, Target: valid(fi.Target),
	}
}

func fromPBInfo(p *pb.FileInfo) workspace.FileInfo {
	if p == nil {
		return workspace.FileInfo{}
	}
	return workspace.FileInfo{
		Path: p.Path, Name: p.Name, Type: p.Type, Size: p.Size, Mode: p.Mode,
		Mtime: time.Unix(0, p.MtimeNs), Ino: p.Ino, Nlink: p.Nlink, Uid: p.Uid, Gid: p.Gid, Target: p.Target,
	}
}

func (s *Server) Read(req *pb.ReadRequest, stream grpc.ServerStreamingServer[pb.ReadResponse]) error {
	ctx := stream.Context()
	w, err := s.resolve(ctx)
	if err != nil {
		return err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return stream.Send(&pb.ReadResponse{Error: toPBError(err)})
		}
	}
	rd, err := w.Read(ctx, req.Path, workspace.ReadOptions{Offset: req.Offset, Length: req.Length, Line: int(req.Line), Lines: int(req.Lines)})
	if err != nil {
		return stream.Send(&pb.ReadResponse{Error: toPBError(err)})
	}
	defer rd.Close()
	info := rd.Info()
	first := &pb.ReadResponse{Info: toPBInfo(&info)}
	// A small file needs no 1 MiB buffer (fresh memory is slow here):
	// room for the whole of it, and one byte to see its end.
	buf := make([]byte, min(chunkBytes, max(info.Size, 0)+1))
	for {
		n, rerr := io.ReadFull(rd, buf)
		msg := first
		if msg == nil {
			msg = &pb.ReadResponse{}
		}
		first = nil
		msg.Data = buf[:n]
		end := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !end {
			msg.Error = toPBError(rerr)
			return stream.Send(msg)
		}
		if end {
			msg.Hash = rd.Hash()
		}
		if n > 0 || end || msg.Info != nil {
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
		if end {
			return nil
		}
	}
}

func (s *Server) Write(stream grpc.ClientStreamingServer[pb.WriteRequest, pb.WriteResponse]) error {
	ctx := stream.Context()
	w, err := s.resolve(ctx)
	if err != nil {
		return err
	}
	head, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("write: the first message: %w", err)
	}
	r := &writeStream{stream: stream, pending: head.Data}
	res, err := w.Write(ctx, head.Path, r, workspace.WriteOptions{
		Append: head.Append, Exclusive: head.Exclusive, Perm: head.Perm, IfMatch: head.IfMatch, Parents: head.Parents, Sync: head.Sync,
	})
	if r.err != nil && r.err != io.EOF && err == nil {
		err = r.err // the stream broke, yet the data read so far was written: say so
	}
	if err != nil {
		// Answer at once, without draining what the client still sends:
		// its next Send fails with io.EOF and its CloseAndRecv gets this
		// answer. Draining would take as long as the rest of the data (a
		// write past the size limit would stream on to its end).
		return stream.SendAndClose(&pb.WriteResponse{Error: toPBError(err)})
	}
	return stream.SendAndClose(&pb.WriteResponse{Path: valid(res.Path), Size: res.Size, Written: res.Written, Hash: res.Hash, Created: res.Created})
}

// writeStream reads the data messages of a Write call.
type writeStream struct {
	stream  grpc.ClientStreamingServer[pb.WriteRequest, pb.WriteResponse]
	pending []byte
	err     error
}

func (r *writeStream) Read(b []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		m, err := r.stream.Recv()
		if err != nil {
			r.err = err
			if err == io.EOF {
				return 0, io.EOF
			}
			return 0, fmt.Errorf("receive data: %w", err)
		}
		if m.Path != "" {
			r.err = fmt.Errorf("a data message carries a path: %w", syscall.EINVAL)
			return 0, r.err
		}
		r.pending = m.Data
	}
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (s *Server) Edit(ctx context.Context, req *pb.EditRequest) (*pb.EditResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	edits := make([]workspace.Edit, len(req.Edits))
	for i, e := range req.Edits {
		edits[i] = workspace.Edit{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll}
	}
	res, err := w.Edit(ctx, req.Path, edits, workspace.EditOptions{IfMatch: req.IfMatch, DryRun: req.DryRun})
	if err != nil {
		return &pb.EditResponse{Error: toPBError(err)}, nil
	}
	out := &pb.EditResponse{Path: valid(res.Path), Diff: valid(res.Diff), Hash: res.Hash, Size: res.Size}
	for _, c := range res.Counts {
		out.Counts = append(out.Counts, int32(c))
	}
	return out, nil
}

func (s *Server) Stat(ctx context.Context, req *pb.StatRequest) (*pb.StatResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.StatResponse{Error: toPBError(err)}, nil
		}
	}
	var fi workspace.FileInfo
	if req.Lstat {
		fi, err = w.Lstat(ctx, req.Path)
	} else {
		fi, err = w.Stat(ctx, req.Path)
	}
	if err != nil {
		return &pb.StatResponse{Error: toPBError(err)}, nil
	}
	return &pb.StatResponse{Info: toPBInfo(&fi)}, nil
}

func (s *Server) List(ctx context.Context, req *pb.ListRequest) (*pb.ListResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.ListResponse{Error: toPBError(err)}, nil
		}
	}
	res, err := w.List(ctx, req.Path, workspace.ListOptions{Recursive: req.Recursive, Depth: int(req.Depth), Limit: int(req.Limit), Offset: int(req.Offset)})
	if err != nil {
		return &pb.ListResponse{Error: toPBError(err)}, nil
	}
	out := &pb.ListResponse{Next: int32(res.Next), Entries: make([]*pb.FileInfo, len(res.Entries))}
	for i := range res.Entries {
		out.Entries[i] = toPBInfo(&res.Entries[i])
	}
	return out, nil
}

func (s *Server) Mkdir(ctx context.Context, req *pb.MkdirRequest) (*pb.MkdirResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	fi, err := w.Mkdir(ctx, req.Path, workspace.MkdirOptions{Parents: req.Parents, Perm: req.Perm})
	if err != nil {
		return &pb.MkdirResponse{Error: toPBError(err)}, nil
	}
	return &pb.MkdirResponse{Info: toPBInfo(&fi)}, nil
}

func (s *Server) Remove(ctx context.Context, req *pb.RemoveRequest) (*pb.RemoveResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	n, err := w.Remove(ctx, req.Path, workspace.RemoveOptions{Recursive: req.Recursive, Force: req.Force})
	return &pb.RemoveResponse{Error: toPBError(err), Removed: int64(n)}, nil
}

func (s *Server) Rename(ctx context.Context, req *pb.RenameRequest) (*pb.RenameResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	err = w.Rename(ctx, req.Src, req.Dst, workspace.RenameOptions{NoReplace: req.NoReplace, Exchange: req.Exchange})
	return &pb.RenameResponse{Error: toPBError(err)}, nil
}

func (s *Server) Copy(ctx context.Context, req *pb.CopyRequest) (*pb.CopyResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	n, err := w.Copy(ctx, req.Src, req.Dst, workspace.CopyOptions{Recursive: req.Recursive, NoReplace: req.NoReplace})
	return &pb.CopyResponse{Error: toPBError(err), Copied: int64(n)}, nil
}

func (s *Server) Symlink(ctx context.Context, req *pb.SymlinkRequest) (*pb.SymlinkResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.SymlinkResponse{Error: toPBError(w.Symlink(ctx, req.Target, req.Path))}, nil
}

func (s *Server) Readlink(ctx context.Context, req *pb.ReadlinkRequest) (*pb.ReadlinkResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.ReadlinkResponse{Error: toPBError(err)}, nil
		}
	}
	t, err := w.Readlink(ctx, req.Path)
	return &pb.ReadlinkResponse{Error: toPBError(err), Target: valid(t)}, nil
}

func (s *Server) SetAttr(ctx context.Context, req *pb.SetAttrRequest) (*pb.SetAttrResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	opt := workspace.SetAttrOptions{Perm: req.Perm, Size: req.Size, Create: req.Create}
	if req.MtimeNs != nil {
		t := time.Unix(0, *req.MtimeNs)
		opt.Mtime = &t
	}
	if req.AtimeNs != nil {
		t := time.Unix(0, *req.AtimeNs)
		opt.Atime = &t
	}
	fi, err := w.SetAttr(ctx, req.Path, opt)
	if err != nil {
		return &pb.SetAttrResponse{Error: toPBError(err)}, nil
	}
	return &pb.SetAttrResponse{Info: toPBInfo(&fi)}, nil
}

func (s *Server) Glob(ctx context.Context, req *pb.GlobRequest) (*pb.GlobResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.GlobResponse{Error: toPBError(err)}, nil
		}
	}
	res, err := w.Glob(ctx, req.Pattern, workspace.GlobOptions{Dir: req.Dir, Limit: int(req.Limit), Offset: int(req.Offset)})
	if err != nil {
		return &pb.GlobResponse{Error: toPBError(err)}, nil
	}
	out := &pb.GlobResponse{Next: int32(res.Next), Paths: make([]string, len(res.Paths))}
	for i, p := range res.Paths {
		out.Paths[i] = valid(p)
	}
	return out, nil
}

func (s *Server) Grep(ctx context.Context, req *pb.GrepRequest) (*pb.GrepResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.GrepResponse{Error: toPBError(err)}, nil
		}
	}
	res, err := w.Grep(ctx, req.Path, workspace.GrepOptions{
		Pattern: req.Pattern, Regex: req.Regex, IgnoreCase: req.IgnoreCase, Include: req.Include, Exclude: req.Exclude,
		Before: int(req.Before), After: int(req.After), Mode: req.Mode, Limit: int(req.Limit), Offset: int(req.Offset),
	})
	if err != nil {
		return &pb.GrepResponse{Error: toPBError(err)}, nil
	}
	out := &pb.GrepResponse{Next: int32(res.Next), SkippedBinary: int32(res.Skipped)}
	for _, l := range res.Lines {
		out.Lines = append(out.Lines, &pb.GrepLine{Path: valid(l.Path), Line: int32(l.Line), Text: valid(l.Text), Context: l.Context})
	}
	for _, f := range res.Files {
		g := &pb.GrepFile{Path: valid(f.Path), Count: int32(f.Count)}
		if !f.Mtime.IsZero() {
			g.MtimeNs = f.Mtime.UnixNano()
		}
		out.Files = append(out.Files, g)
	}
	return out, nil
}

func toPBTree(n *workspace.TreeNode) *pb.TreeNode {
	out := &pb.TreeNode{Name: valid(n.Name), Path: valid(n.Path), Type: n.Type, Size: n.Size, Files: n.Files, Dirs: n.Dirs, Omitted: int32(n.Omitted)}
	for _, c := range n.Children {
		out.Children = append(out.Children, toPBTree(c))
	}
	return out
}

func fromPBTree(n *pb.TreeNode) *workspace.TreeNode {
	if n == nil {
		return nil
	}
	out := &workspace.TreeNode{Name: n.Name, Path: n.Path, Type: n.Type, Size: n.Size, Files: n.Files, Dirs: n.Dirs, Omitted: int(n.Omitted)}
	for _, c := range n.Children {
		out.Children = append(out.Children, fromPBTree(c))
	}
	return out
}

func (s *Server) Tree(ctx context.Context, req *pb.TreeRequest) (*pb.TreeResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if w, err = w.Snapshot(ctx, req.Snapshot); err != nil {
			return &pb.TreeResponse{Error: toPBError(err)}, nil
		}
	}
	var n *workspace.TreeNode
	if req.Du {
		n, err = w.Du(ctx, req.Path)
	} else {
		n, err = w.Tree(ctx, req.Path, workspace.TreeOptions{Depth: int(req.Depth), MaxEntries: int(req.MaxEntries)})
	}
	if err != nil {
		return &pb.TreeResponse{Error: toPBError(err)}, nil
	}
	return &pb.TreeResponse{Root: toPBTree(n)}, nil
}

func (s *Server) Changes(ctx context.Context, req *pb.ChangesRequest) (*pb.ChangesResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	res, err := w.Changes(ctx, req.Since, int(req.Limit))
	if err != nil {
		e := toPBError(err)
		if errors.Is(err, fs.ErrJournalPruned) {
			e.Code = "PRUNED"
		}
		return &pb.ChangesResponse{Error: e, Last: res.Last}, nil
	}
	out := &pb.ChangesResponse{Next: res.Next, Last: res.Last}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, &pb.Change{Seq: c.Seq, TimeNs: c.Time, Op: c.Op, Type: c.Type, Path: valid(c.Path), NewPath: valid(c.NewPath)})
	}
	return out, nil
}

func (s *Server) WaitChanges(ctx context.Context, req *pb.WaitChangesRequest) (*pb.WaitChangesResponse, error) {
	w, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.WaitChanges(ctx, req.Since); err != nil {
		if ctx.Err() != nil {
			return &pb.WaitChangesResponse{}, nil
		}
		return &pb.WaitChangesResponse{Error: toPBError(err)}, nil
	}
	return &pb.WaitChangesResponse{Waited: true}, nil
}

// ValidUTF8 makes s fit a proto string field, replacing invalid bytes.
func ValidUTF8(s string) string { return valid(s) }
