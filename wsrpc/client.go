package wsrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc"
)

// Client is the file API of a workspace across a gRPC connection. It
// implements workspace.API.
type Client struct {
	c    pb.WorkspaceClient
	snap string // the snapshot read, "" for the live tree
	conn grpc.ClientConnInterface
}

// Snapshot returns the file API over snapshot name, read-only, on the
// same connection: the read calls carry the name, and every change
// fails here with EROFS. A missing snapshot fails the calls (ENOENT).
func (c *Client) Snapshot(name string) *Client { return &Client{c: c.c, snap: name, conn: c.conn} }

// SnapshotAPI is Snapshot, checked: it fails at once if the daemon has
// no snapshot name.
func (c *Client) SnapshotAPI(ctx context.Context, name string) (workspace.API, error) {
	if c.snap != "" {
		return nil, &iofs.PathError{Op: "snapshot", Path: name, Err: fmt.Errorf("already a view of snapshot %s: %w", c.snap, syscall.EINVAL)}
	}
	if err := workspace.CheckSnapshotName(name); err != nil {
		return nil, &iofs.PathError{Op: "snapshot", Path: name, Err: err}
	}
	s := c.Snapshot(name)
	if _, err := s.Stat(ctx, "/"); err != nil {
		return nil, err
	}
	return s, nil
}

// readOnly refuses op on a snapshot's view.
func (c *Client) readOnly(op, p string) error {
	if c.snap == "" {
		return nil
	}
	return &iofs.PathError{Op: op, Path: p, Err: fmt.Errorf("snapshot %s is read-only: %w", c.snap, syscall.EROFS)}
}

// still refuses the change feed of a snapshot's view.
func (c *Client) still() error {
	if c.snap == "" {
		return nil
	}
	return &iofs.PathError{Op: "changes", Path: "/", Err: fmt.Errorf("snapshot %s does not change: %w", c.snap, syscall.EINVAL)}
}

var _ workspace.API = (*Client)(nil)
var _ workspace.SnapshotReader = (*Client)(nil)

// NewClient uses conn, which the caller owns and closes.
func NewClient(conn grpc.ClientConnInterface) *Client {
	return &Client{c: pb.NewWorkspaceClient(conn), conn: conn}
}

// RemoteError is the cause of an error that came back from the server:
// its errno, code and message.
type RemoteError struct{ pb.FSError }

// Is matches the errno, ErrConflict and fs.ErrJournalPruned.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case workspace.ErrConflict:
		return e.Code == "CONFLICT"
	case fs.ErrJournalPruned:
		return e.Code == "PRUNED"
	}
	return target == e.Errno
}

func fromPBError(e *pb.Error) error {
	c := e.Cause()
	if c == nil {
		return nil
	}
	re := &RemoteError{*c}
	if e.Op == "" {
		return re
	}
	return &iofs.PathError{Op: e.Op, Path: e.Path, Err: re}
}

// callErr wraps a failure of the call itself (not a file-system error).
// A request holding a string that is not UTF-8 cannot be marshaled (proto
// strings must be UTF-8): that is EINVAL, as the API itself says of such a
// path, not a failure of the daemon. more are the call's other strings.
func callErr(op, p string, err error, more ...string) error {
	for _, s := range append([]string{p}, more...) {
		if !utf8.ValidString(s) {
			return &iofs.PathError{Op: op, Path: s, Err: fmt.Errorf("not valid UTF-8, which the control socket cannot carry: %w", syscall.EINVAL)}
		}
	}
	return &iofs.PathError{Op: op, Path: p, Err: fmt.Errorf("workspace daemon: %w", PlainError(err))}
}

func (c *Client) Stat(ctx context.Context, p string) (workspace.FileInfo, error) {
	return c.stat(ctx, p, false)
}

func (c *Client) Lstat(ctx context.Context, p string) (workspace.FileInfo, error) {
	return c.stat(ctx, p, true)
}

func (c *Client) stat(ctx context.Context, p string, lstat bool) (workspace.FileInfo, error) {
	r, err := c.c.Stat(ctx, &pb.StatRequest{Path: p, Lstat: lstat, Snapshot: c.snap})
	if err != nil {
		return workspace.FileInfo{}, callErr("stat", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.FileInfo{}, err
	}
	return fromPBInfo(r.Info), nil
}

// remoteReader streams a Read call.
type remoteReader struct {
	stream grpc.ServerStreamingClient[pb.ReadResponse]
	cancel context.CancelFunc
	info   workspace.FileInfo
	buf    []byte
	hash   string
	done   bool
	err    error
}

func (c *Client) Read(ctx context.Context, p string, opt workspace.ReadOptions) (workspace.FileReader, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.c.Read(ctx, &pb.ReadRequest{Path: p, Offset: opt.Offset, Length: opt.Length, Line: int32(opt.Line), Lines: int32(opt.Lines), Snapshot: c.snap})
	if err != nil {
		cancel()
		return nil, callErr("read", p, err)
	}
	first, err := stream.Recv()
	if err != nil {
		cancel()
		return nil, callErr("read", p, err)
	}
	if err := fromPBError(first.Error); err != nil {
		cancel()
		return nil, err
	}
	if first.Info == nil {
		cancel()
		return nil, callErr("read", p, errors.New("the first message carries no file info"))
	}
	return &remoteReader{stream: stream, cancel: cancel, info: fromPBInfo(first.Info), buf: first.Data, hash: first.Hash, done: first.Hash != ""}, nil
}

func (r *remoteReader) Read(b []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		m, err := r.stream.Recv()
		if err == io.EOF {
			r.err = io.EOF
			return 0, io.EOF
		}
		if err != nil {
			r.err = callErr("read", r.info.Path, err)
			return 0, r.err
		}
		if err := fromPBError(m.Error); err != nil {
			r.err = err
			return 0, err
		}
		r.buf = m.Data
		if m.Hash != "" {
			r.hash = m.Hash
		}
	}
	n := copy(b, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *remoteReader) Info() workspace.FileInfo { return r.info }

func (r *remoteReader) Hash() string {
	if r.err != io.EOF {
		return ""
	}
	return r.hash
}

func (r *remoteReader) Close() error {
	r.cancel()
	return nil
}

func (c *Client) Write(ctx context.Context, p string, data io.Reader, opt workspace.WriteOptions) (workspace.WriteResult, error) {
	if err := c.readOnly("write", p); err != nil {
		return workspace.WriteResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.c.Write(ctx)
	if err != nil {
		return workspace.WriteResult{}, callErr("write", p, err)
	}
	head := &pb.WriteRequest{Path: p, Append: opt.Append, Exclusive: opt.Exclusive, Perm: opt.Perm, IfMatch: opt.IfMatch, Parents: opt.Parents, Sync: opt.Sync}
	buf := make([]byte, chunkBytes)
	msg := head
	var readErr error
	for {
		n, rerr := io.ReadFull(data, buf)
		msg.Data = buf[:n]
		if n > 0 || msg == head {
			if err := stream.Send(msg); err != nil {
				break // the server ended the call: its answer says why
			}
		}
		msg = &pb.WriteRequest{}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			readErr = rerr
			break
		}
	}
	if readErr != nil {
		// Abort the call: the server drops the partial file.
		cancel()
		return workspace.WriteResult{}, &iofs.PathError{Op: "write", Path: p, Err: fmt.Errorf("read the data to write: %w", readErr)}
	}
	r, err := stream.CloseAndRecv()
	if err != nil {
		return workspace.WriteResult{}, callErr("write", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.WriteResult{}, err
	}
	return workspace.WriteResult{Path: r.Path, Size: r.Size, Written: r.Written, Hash: r.Hash, Created: r.Created}, nil
}

func (c *Client) Edit(ctx context.Context, p string, edits []workspace.Edit, opt workspace.EditOptions) (workspace.EditResult, error) {
	if err := c.readOnly("edit", p); err != nil {
		return workspace.EditResult{}, err
	}
	req := &pb.EditRequest{Path: p, IfMatch: opt.IfMatch, DryRun: opt.DryRun}
	for _, e := range edits {
		req.Edits = append(req.Edits, &pb.EditOp{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll})
	}
	r, err := c.c.Edit(ctx, req)
	if err != nil {
		return workspace.EditResult{}, callErr("edit", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.EditResult{}, err
	}
	res := workspace.EditResult{Path: r.Path, Diff: r.Diff, Hash: r.Hash, Size: r.Size}
	for _, n := range r.Counts {
		res.Counts = append(res.Counts, int(n))
	}
	return res, nil
}

func (c *Client) List(ctx context.Context, p string, opt workspace.ListOptions) (workspace.ListResult, error) {
	r, err := c.c.List(ctx, &pb.ListRequest{Path: p, Recursive: opt.Recursive, Depth: int32(opt.Depth), Limit: int32(opt.Limit), Offset: int32(opt.Offset), Snapshot: c.snap})
	if err != nil {
		return workspace.ListResult{}, callErr("list", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.ListResult{}, err
	}
	res := workspace.ListResult{Next: int(r.Next), Entries: make([]workspace.FileInfo, len(r.Entries))}
	for i, e := range r.Entries {
		res.Entries[i] = fromPBInfo(e)
	}
	return res, nil
}

func (c *Client) Mkdir(ctx context.Context, p string, opt workspace.MkdirOptions) (workspace.FileInfo, error) {
	if err := c.readOnly("mkdir", p); err != nil {
		return workspace.FileInfo{}, err
	}
	r, err := c.c.Mkdir(ctx, &pb.MkdirRequest{Path: p, Parents: opt.Parents, Perm: opt.Perm})
	if err != nil {
		return workspace.FileInfo{}, callErr("mkdir", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.FileInfo{}, err
	}
	return fromPBInfo(r.Info), nil
}

func (c *Client) Remove(ctx context.Context, p string, opt workspace.RemoveOptions) (int, error) {
	if err := c.readOnly("remove", p); err != nil {
		return 0, err
	}
	r, err := c.c.Remove(ctx, &pb.RemoveRequest{Path: p, Recursive: opt.Recursive, Force: opt.Force})
	if err != nil {
		return 0, callErr("remove", p, err)
	}
	return int(r.Removed), fromPBError(r.Error)
}

func (c *Client) Rename(ctx context.Context, src, dst string, opt workspace.RenameOptions) error {
	if err := c.readOnly("rename", src); err != nil {
		return err
	}
	r, err := c.c.Rename(ctx, &pb.RenameRequest{Src: src, Dst: dst, NoReplace: opt.NoReplace, Exchange: opt.Exchange})
	if err != nil {
		return callErr("rename", src, err, dst)
	}
	return fromPBError(r.Error)
}

func (c *Client) Copy(ctx context.Context, src, dst string, opt workspace.CopyOptions) (int, error) {
	if err := c.readOnly("copy", dst); err != nil {
		return 0, err
	}
	r, err := c.c.Copy(ctx, &pb.CopyRequest{Src: src, Dst: dst, Recursive: opt.Recursive, NoReplace: opt.NoReplace})
	if err != nil {
		return 0, callErr("copy", src, err, dst)
	}
	return int(r.Copied), fromPBError(r.Error)
}

func (c *Client) Symlink(ctx context.Context, target, linkPath string) error {
	if err := c.readOnly("symlink", linkPath); err != nil {
		return err
	}
	r, err := c.c.Symlink(ctx, &pb.SymlinkRequest{Target: target, Path: linkPath})
	if err != nil {
		return callErr("symlink", linkPath, err, target)
	}
	return fromPBError(r.Error)
}

func (c *Client) Readlink(ctx context.Context, p string) (string, error) {
	r, err := c.c.Readlink(ctx, &pb.ReadlinkRequest{Path: p, Snapshot: c.snap})
	if err != nil {
		return "", callErr("readlink", p, err)
	}
	return r.Target, fromPBError(r.Error)
}

func (c *Client) SetAttr(ctx context.Context, p string, opt workspace.SetAttrOptions) (workspace.FileInfo, error) {
	if err := c.readOnly("setattr", p); err != nil {
		return workspace.FileInfo{}, err
	}
	req := &pb.SetAttrRequest{Path: p, Perm: opt.Perm, Size: opt.Size, Create: opt.Create}
	if opt.Mtime != nil {
		t := opt.Mtime.UnixNano()
		req.MtimeNs = &t
	}
	if opt.Atime != nil {
		t := opt.Atime.UnixNano()
		req.AtimeNs = &t
	}
	r, err := c.c.SetAttr(ctx, req)
	if err != nil {
		return workspace.FileInfo{}, callErr("setattr", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.FileInfo{}, err
	}
	return fromPBInfo(r.Info), nil
}

func (c *Client) Glob(ctx context.Context, pattern string, opt workspace.GlobOptions) (workspace.GlobResult, error) {
	r, err := c.c.Glob(ctx, &pb.GlobRequest{Pattern: pattern, Dir: opt.Dir, Limit: int32(opt.Limit), Offset: int32(opt.Offset), Snapshot: c.snap})
	if err != nil {
		return workspace.GlobResult{}, callErr("glob", pattern, err, opt.Dir)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.GlobResult{}, err
	}
	return workspace.GlobResult{Paths: r.Paths, Next: int(r.Next)}, nil
}

func (c *Client) Grep(ctx context.Context, p string, opt workspace.GrepOptions) (workspace.GrepResult, error) {
	r, err := c.c.Grep(ctx, &pb.GrepRequest{
		Snapshot: c.snap,
		Path:     p, Pattern: opt.Pattern, Regex: opt.Regex, IgnoreCase: opt.IgnoreCase, Include: opt.Include, Exclude: opt.Exclude,
		Before: int32(opt.Before), After: int32(opt.After), Mode: opt.Mode, Limit: int32(opt.Limit), Offset: int32(opt.Offset),
	})
	if err != nil {
		return workspace.GrepResult{}, callErr("grep", p, err, opt.Pattern)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.GrepResult{}, err
	}
	res := workspace.GrepResult{Next: int(r.Next), Skipped: int(r.SkippedBinary)}
	for _, l := range r.Lines {
		res.Lines = append(res.Lines, workspace.GrepLine{Path: l.Path, Line: int(l.Line), Text: l.Text, Context: l.Context})
	}
	for _, f := range r.Files {
		g := workspace.GrepFile{Path: f.Path, Count: int(f.Count)}
		if f.MtimeNs != 0 {
			g.Mtime = time.Unix(0, f.MtimeNs)
		}
		res.Files = append(res.Files, g)
	}
	return res, nil
}

func (c *Client) Tree(ctx context.Context, p string, opt workspace.TreeOptions) (*workspace.TreeNode, error) {
	r, err := c.c.Tree(ctx, &pb.TreeRequest{Path: p, Depth: int32(opt.Depth), MaxEntries: int32(opt.MaxEntries), Snapshot: c.snap})
	if err != nil {
		return nil, callErr("tree", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return nil, err
	}
	return fromPBTree(r.Root), nil
}

func (c *Client) Du(ctx context.Context, p string) (*workspace.TreeNode, error) {
	r, err := c.c.Tree(ctx, &pb.TreeRequest{Path: p, Du: true, Snapshot: c.snap})
	if err != nil {
		return nil, callErr("du", p, err)
	}
	if err := fromPBError(r.Error); err != nil {
		return nil, err
	}
	return fromPBTree(r.Root), nil
}

func (c *Client) Changes(ctx context.Context, since uint64, limit int) (workspace.ChangesResult, error) {
	if err := c.still(); err != nil {
		return workspace.ChangesResult{}, err
	}
	r, err := c.c.Changes(ctx, &pb.ChangesRequest{Since: since, Limit: int32(limit)})
	if err != nil {
		return workspace.ChangesResult{}, callErr("changes", "", err)
	}
	if err := fromPBError(r.Error); err != nil {
		return workspace.ChangesResult{Last: r.Last}, err
	}
	res := workspace.ChangesResult{Next: r.Next, Last: r.Last, Changes: []workspace.Change{}}
	for _, c := range r.Changes {
		res.Changes = append(res.Changes, workspace.Change{Seq: c.Seq, Time: c.TimeNs, Op: c.Op, Type: c.Type, Path: c.Path, NewPath: c.NewPath})
	}
	return res, nil
}

func (c *Client) WaitChanges(ctx context.Context, since uint64) error {
	if err := c.still(); err != nil {
		return err
	}
	r, err := c.c.WaitChanges(ctx, &pb.WaitChangesRequest{Since: since})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return callErr("changes", "", err)
	}
	if err := fromPBError(r.Error); err != nil {
		return err
	}
	if !r.Waited {
		return context.DeadlineExceeded
	}
	return nil
}
