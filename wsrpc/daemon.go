package wsrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/remote"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DaemonOptions are what a DaemonServer works on and tells of: the
// daemon's open workspace, and what the layers above this one know
// (backends, FUSE traffic), as functions so that wsrpc imports none of
// them.
type DaemonOptions struct {
	FS *fs.FS
	// WS is the file API on FS whose notifier tells the mount what
	// changed: restore and undo go through it. Nil: they are refused.
	WS *workspace.WS
	// Mountpoint is the workspace's FUSE mount, "" when served without.
	Mountpoint string
	// Started is when the daemon started.
	Started time.Time
	// CommitInterval is the FS's: the longest a change waits for a
	// commit when no fsync asks for one.
	CommitInterval time.Duration
	// ExecLog is the exec log's path, "" for none.
	ExecLog string
	// MetricsAddr is where the daemon serves metrics, "" if nowhere.
	MetricsAddr string
	// Backends lists the backends without starting any; nil for none.
	Backends func(ctx context.Context) []*pb.BackendInfo
	// Fuse tells what the mount served; nil without a mount.
	Fuse func() FuseStats
	// Commits counts the store's commits since the daemon started; nil
	// for unknown.
	Commits func() uint64
	// SnapshotsChanged, if set, hears of every snapshot made or deleted
	// (the mount's .snapshots follows them).
	SnapshotsChanged func(name string)
	// Rules are the file API's path rules (the policy's top level): a
	// snapshot diff leaves out what they deny, as the file API does.
	// Restore and undo go through WS, whose rules are its own.
	Rules *workspace.Rules
	// Files, if set, gives the file API's view (and so its rules) at
	// each call, instead of WS and Rules: the daemon swaps it when the
	// policy is reloaded.
	Files func() *workspace.WS
	// Remote, if set, does Push and Pull on FS (package remote);
	// nil: they are refused.
	Remote *remote.Host
}

// FuseStats are what a mount served, for Status.
type FuseStats struct {
	Ops                     []*pb.FuseOp // by op, those served at least once
	ReadBytes, WrittenBytes uint64
	LastFsync               time.Duration // how long the last fsync took
}

// DaemonServer implements the Daemon service: status and the maintenance
// commands (stats, fsck, gc, limit) on the store the daemon holds.
type DaemonServer struct {
	pb.UnimplementedDaemonServer
	o      DaemonOptions
	store  string // absolute
	socket string
}

// NewDaemonServer serves o.
func NewDaemonServer(o DaemonOptions) *DaemonServer {
	s := &DaemonServer{o: o}
	s.store, _ = filepath.Abs(o.FS.Store().Path())
	s.socket, _, _ = socketPath(s.store)
	return s
}

// Register adds the service to a gRPC server.
func (s *DaemonServer) Register(g *grpc.Server) { pb.RegisterDaemonServer(g, s) }

// defaultStatusExecs is how many execs Status returns when not told.
const defaultStatusExecs = 10

func (s *DaemonServer) Status(ctx context.Context, req *pb.StatusRequest) (*pb.StatusResponse, error) {
	f := s.o.FS
	out := &pb.StatusResponse{
		Pid: int64(os.Getpid()), StartedUnixNs: s.o.Started.UnixNano(), Mountpoint: s.o.Mountpoint,
		Store: s.store, Socket: s.socket, FormatVersion: chunkstore.FormatVersion, ChunkSize: int32(f.ChunkSize()),
		MetricsAddr: s.o.MetricsAddr, ChunksDecoded: f.ChunksDecoded(),
	}
	if fi, err := os.Stat(s.store); err == nil {
		out.FileBytes = fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			out.DiskBytes = st.Blocks * 512
		}
	}
	var cs chunkstore.Stats
	if err := f.Store().View(func(tx *chunkstore.Tx) error {
		var err error
		cs, err = tx.Stats()
		return err
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "read the chunk statistics of %s: %v", s.store, err)
	}
	out.Chunks = toPBChunkStats(cs)
	out.LimitBytes, out.UsedBytes = f.Limit()
	tx := f.Store().DB().Stats().TxStats
	out.Commit = &pb.Commit{IntervalNs: int64(s.o.CommitInterval), StoreWriteNs: int64(tx.GetWriteTime()), StorePageWrites: tx.GetWrite()}
	if s.o.Commits != nil {
		out.Commit.Commits = s.o.Commits()
	}
	if s.o.Fuse != nil {
		fu := s.o.Fuse()
		out.Fuse, out.FuseReadBytes, out.FuseWrittenBytes = fu.Ops, fu.ReadBytes, fu.WrittenBytes
		out.Commit.LastFsyncNs = int64(fu.LastFsync)
		for _, op := range fu.Ops {
			if op.Op == "fsync" || op.Op == "fsyncdir" {
				out.Commit.Fsyncs += op.Count
				out.Commit.FsyncTotalNs += op.TotalNs
			}
		}
	}
	if s.o.Backends != nil {
		out.Backends = s.o.Backends(ctx)
	}
	if s.o.ExecLog != "" {
		n := int(req.Execs)
		if n <= 0 {
			n = defaultStatusExecs
		}
		lines, err := lastLines(s.o.ExecLog, n, maxExecLogTail)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "read the exec log: %v", err)
		}
		for _, l := range lines {
			out.Execs = append(out.Execs, valid(string(l)))
		}
	}
	return out, nil
}

// maxExecLogTail bounds how much of the exec log's end Status reads: a
// record longer than that (an exec that changed many thousands of files)
// is left out.
const maxExecLogTail = 1 << 20

// lastLines returns the last n complete lines of the file at path, oldest
// first, reading at most window bytes from its end.
func lastLines(path string, n int, window int64) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-window, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, err
	}
	lines := bytes.Split(buf, []byte("\n"))
	if len(lines) > 0 {
		lines = lines[:len(lines)-1] // after the last newline: empty, or a record being written
	}
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // cut by the window
	}
	var out [][]byte
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out[max(len(out)-n, 0):], nil
}

// syncFirst commits what is pending, so that a maintenance call sees
// what was written.
func (s *DaemonServer) syncFirst(ctx context.Context, what string) error {
	if err := s.o.FS.Sync(ctx); err != nil {
		return status.Errorf(codes.FailedPrecondition, "%s: commit what is pending first: %v", what, err)
	}
	return nil
}

func (s *DaemonServer) Stats(ctx context.Context, req *pb.StatsRequest) (*pb.StatsResponse, error) {
	if err := s.syncFirst(ctx, "stats"); err != nil {
		return nil, err
	}
	info, err := fs.Info(s.o.FS.Store())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "stats of %s: %v", s.store, err)
	}
	return &pb.StatsResponse{
		FormatVersion: int32(info.FormatVersion), ChunkSize: int32(info.ChunkSize), LimitBytes: info.LimitBytes,
		Inodes: int64(info.Inodes), FileBytes: info.FileBytes, Chunks: toPBChunkStats(info.Chunks),
	}, nil
}

func (s *DaemonServer) Fsck(ctx context.Context, req *pb.FsckRequest) (*pb.FsckResponse, error) {
	if err := s.syncFirst(ctx, "fsck"); err != nil {
		return nil, err
	}
	// A read transaction: a consistent snapshot of the last commit, which
	// the committer goes on writing past.
	rep, err := fs.Check(s.o.FS.Store(), false)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "check %s: %v", s.store, err)
	}
	return &pb.FsckResponse{
		Inodes: int64(rep.Inodes), Dirents: int64(rep.Dirents), FileChunks: int64(rep.FileChunks),
		Chunks: toPBChunkStats(rep.Chunks), Problems: validAll(rep.Problems), Repaired: validAll(rep.Repaired),
	}, nil
}

func (s *DaemonServer) GC(ctx context.Context, req *pb.GCRequest) (*pb.GCResponse, error) {
	if err := s.syncFirst(ctx, "gc"); err != nil {
		return nil, err
	}
	// One write transaction, between two of the committer's: every commit
	// leaves reference counts that match the chunk lists it wrote, and the
	// FS holds no reference to a chunk that its committed lists lack but
	// for shares of chunks they have. A pull in progress holds references
	// of its own until its commit (fs.FS.ApplyTree), recorded in the
	// store, which gc counts (fs/holds.go); it waits for the pull all the
	// same: one writer of reference counts at a time.
	if s.o.Remote != nil {
		s.o.Remote.Lock()
		defer s.o.Remote.Unlock()
	}
	rep, err := fs.GC(s.o.FS.Store())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "gc %s: %v", s.store, err)
	}
	return &pb.GCResponse{
		ChunksFreed: int64(rep.ChunksFreed), BytesFreed: rep.BytesFreed, RefsCorrected: int64(rep.RefsCorrected),
		BodiesFreed: int64(rep.BodiesFreed), BodyBytesFreed: rep.BodyBytesFreed,
	}, nil
}

func (s *DaemonServer) Limit(ctx context.Context, req *pb.LimitRequest) (*pb.LimitResponse, error) {
	f := s.o.FS
	if req.Set {
		_, used := f.Limit()
		if err := CheckLimit(req.LimitBytes, used); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		f.SetLimit(req.LimitBytes)
		// Durable before the answer, as the offline command's close makes it.
		if err := f.Sync(ctx); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "commit the new limit: %v", err)
		}
	}
	limit, used := f.Limit()
	return &pb.LimitResponse{LimitBytes: limit, UsedBytes: used}, nil
}

// CheckLimit refuses a size limit the workspace is already over: every
// write would fail with ENOSPC, and 0 is no way to say "unlimited". The
// limit command and mount --limit apply it, and so does the daemon.
func CheckLimit(limit, used uint64) error {
	if limit == 0 && used == 0 {
		return errors.New("a limit of 0 B leaves no room for anything: give a size above 0")
	}
	if limit < used || limit == 0 {
		return fmt.Errorf("a limit of %s is below the %s the workspace already stores", size.Format(limit), size.Format(used))
	}
	return nil
}

// Scrub runs fs.Scrub on the daemon's store, streaming its progress (at
// most ten messages a second) and, last, its report. It does not commit
// first: a scrub verifies what is stored, and what is pending is not.
func (s *DaemonServer) Scrub(req *pb.ScrubRequest, stream pb.Daemon_ScrubServer) error {
	ctx := stream.Context()
	var last time.Time
	var sendErr error
	rep, err := fs.Scrub(ctx, s.o.FS.Store(), fs.ScrubOptions{Rate: int64(req.RateBytes), Progress: func(done, total uint64) {
		if sendErr == nil && time.Since(last) >= 100*time.Millisecond {
			last = time.Now()
			sendErr = stream.Send(&pb.ScrubProgress{DoneBytes: done, TotalBytes: total})
		}
	}})
	if err != nil {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return status.Errorf(codes.Internal, "scrub %s: %v", s.store, err)
	}
	if sendErr != nil {
		return sendErr
	}
	return stream.Send(&pb.ScrubProgress{DoneBytes: rep.Bytes, TotalBytes: rep.Bytes, Report: &pb.ScrubReport{
		Chunks: int64(rep.Chunks), Bytes: rep.Bytes, Records: int64(rep.Records), Files: int64(rep.Files),
		Damage: validAll(rep.Damage), Seconds: rep.Seconds,
	}})
}

// Snapshot creates, lists or deletes snapshots of the daemon's store.
func (s *DaemonServer) Snapshot(ctx context.Context, req *pb.SnapshotRequest) (*pb.SnapshotResponse, error) {
	info := func(sn fs.Snapshot) *pb.SnapshotInfo {
		si := &pb.SnapshotInfo{Name: valid(sn.Name), Epoch: sn.Epoch, CreatedUnixNs: sn.Created}
		if !sn.Root.IsZero() {
			si.Root = sn.Root[:]
		}
		return si
	}
	switch req.Op {
	case "create":
		sn, err := s.o.FS.CreateSnapshot(ctx, req.Name)
		if err != nil {
			return nil, status.Errorf(codeOf(err), "snapshot %s of %s: %v", req.Name, s.store, err)
		}
		s.snapshotsChanged(req.Name)
		return &pb.SnapshotResponse{Snapshots: []*pb.SnapshotInfo{info(sn)}}, nil
	case "list":
		list, err := fs.ListSnapshots(s.o.FS.Store())
		if err != nil {
			return nil, status.Errorf(codes.Internal, "snapshots of %s: %v", s.store, err)
		}
		r := &pb.SnapshotResponse{}
		for _, sn := range list {
			r.Snapshots = append(r.Snapshots, info(sn))
		}
		return r, nil
	case "delete":
		rep, err := fs.DeleteSnapshot(s.o.FS.Store(), req.Name)
		if err != nil {
			return nil, status.Errorf(codeOf(err), "delete snapshot %s of %s: %v", req.Name, s.store, err)
		}
		s.snapshotsChanged(req.Name)
		return &pb.SnapshotResponse{VersionsDropped: int64(rep.Versions), ChunksReleased: int64(rep.Chunks)}, nil
	case "diff":
		if err := s.syncFirst(ctx, "diff"); err != nil {
			return nil, err
		}
		d, err := fs.DiffSnapshotsWith(s.o.FS.Store(), req.Name, req.Other, fs.DiffOptions{Patch: req.Patch, MaxFileBytes: req.MaxPatchFileBytes})
		if err != nil {
			return nil, status.Errorf(codeOf(err), "diff %s of %s: %v", req.Name, s.store, err)
		}
		r := &pb.SnapshotResponse{}
		for _, e := range d {
			if s.denied(e.Path) || s.denied(e.OldPath) {
				continue
			}
			r.Diff = append(r.Diff, &pb.DiffEntry{Kind: e.Kind, Path: valid(e.Path), OldPath: valid(e.OldPath), Type: e.Type, OldSize: e.OldSize, Size: e.Size, Ino: uint64(e.Ino), Patch: []byte(e.Patch)})
		}
		return r, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "snapshot op %q: want create, list, delete or diff", req.Op)
}

// denied says whether the file API's rules deny workspace path p.
func (s *DaemonServer) denied(p string) bool {
	rules := s.o.Rules
	if s.o.Files != nil {
		rules = s.o.Files().Rules()
	}
	if rules == nil || p == "" {
		return false
	}
	v, _ := rules.Verdict(p)
	return v == workspace.Deny
}

func (s *DaemonServer) snapshotsChanged(name string) {
	if s.o.SnapshotsChanged != nil {
		s.o.SnapshotsChanged(name)
	}
}

// codeOf is the gRPC code of an fs error: not found, exists, invalid,
// else internal.
func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return codes.NotFound
	case errors.Is(err, syscall.EEXIST):
		return codes.AlreadyExists
	case errors.Is(err, syscall.EINVAL):
		return codes.InvalidArgument
	}
	return codes.Internal
}

func validAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = valid(s)
	}
	return out
}

func toPBChunkStats(s chunkstore.Stats) *pb.ChunkStats {
	return &pb.ChunkStats{Chunks: s.Chunks, LogicalBytes: s.LogicalBytes, UniqueBytes: s.UniqueBytes, StoredBytes: s.StoredBytes}
}

// ChunkStats turns the wire form back into chunkstore.Stats.
func ChunkStats(p *pb.ChunkStats) chunkstore.Stats {
	if p == nil {
		return chunkstore.Stats{}
	}
	return chunkstore.Stats{Chunks: p.Chunks, LogicalBytes: p.LogicalBytes, UniqueBytes: p.UniqueBytes, StoredBytes: p.StoredBytes}
}

// DaemonClient is the Daemon service of a running daemon. Its errors say
// what failed without gRPC's framing (see PlainError).
type DaemonClient struct {
	c pb.DaemonClient
}

// NewDaemonClient uses conn, which the caller owns and closes.
func NewDaemonClient(conn grpc.ClientConnInterface) *DaemonClient {
	return &DaemonClient{c: pb.NewDaemonClient(conn)}
}

// DialDaemon connects to the Daemon service of the daemon holding ws, as
// DialConn does: ErrNoDaemon (wrapped) when none serves it.
func DialDaemon(ctx context.Context, ws string) (*DaemonClient, func() error, error) {
	conn, err := DialConn(ctx, ws)
	if err != nil {
		return nil, nil, err
	}
	return NewDaemonClient(conn), conn.Close, nil
}

// Status asks for the daemon's status with its last execs records.
func (c *DaemonClient) Status(ctx context.Context, execs int) (*pb.StatusResponse, error) {
	r, err := c.c.Status(ctx, &pb.StatusRequest{Execs: int32(execs)})
	return r, PlainError(err)
}

// Info is fs.Info of the daemon's store.
func (c *DaemonClient) Info(ctx context.Context) (*fs.WorkspaceInfo, error) {
	r, err := c.c.Stats(ctx, &pb.StatsRequest{})
	if err != nil {
		return nil, PlainError(err)
	}
	return &fs.WorkspaceInfo{
		FormatVersion: int(r.FormatVersion), ChunkSize: int(r.ChunkSize), LimitBytes: r.LimitBytes,
		Inodes: int(r.Inodes), FileBytes: r.FileBytes, Chunks: ChunkStats(r.Chunks),
	}, nil
}

// Check is fs.Check of the daemon's store, read-only.
func (c *DaemonClient) Check(ctx context.Context) (*fs.CheckReport, error) {
	r, err := c.c.Fsck(ctx, &pb.FsckRequest{})
	if err != nil {
		return nil, PlainError(err)
	}
	return &fs.CheckReport{
		Inodes: int(r.Inodes), Dirents: int(r.Dirents), FileChunks: int(r.FileChunks),
		Chunks: ChunkStats(r.Chunks), Problems: r.Problems, Repaired: r.Repaired,
	}, nil
}

// Scrub is fs.Scrub of the daemon's store; progress, if set, sees how
// far it is.
func (c *DaemonClient) Scrub(ctx context.Context, rate uint64, progress func(done, total uint64)) (*fs.ScrubReport, error) {
	st, err := c.c.Scrub(ctx, &pb.ScrubRequest{RateBytes: rate})
	if err != nil {
		return nil, PlainError(err)
	}
	for {
		m, err := st.Recv()
		if err != nil {
			if err == io.EOF {
				return nil, errors.New("scrub: the daemon ended the call without a report")
			}
			return nil, PlainError(err)
		}
		if progress != nil {
			progress(m.DoneBytes, m.TotalBytes)
		}
		if r := m.Report; r != nil {
			return &fs.ScrubReport{Chunks: int(r.Chunks), Bytes: r.Bytes, Records: int(r.Records), Files: int(r.Files),
				Damage: r.Damage, Seconds: r.Seconds}, nil
		}
	}
}

// Snapshot runs a snapshot op ("create", "list", "delete") on the
// daemon's store.
func (c *DaemonClient) Snapshot(ctx context.Context, op, name, other string) (*pb.SnapshotResponse, error) {
	r, err := c.c.Snapshot(ctx, &pb.SnapshotRequest{Op: op, Name: name, Other: other})
	return r, PlainError(err)
}

// SnapshotDiff is fs.DiffSnapshotsWith of the daemon's store: what
// differs from snapshot name to snapshot other ("" for now), with the
// patches of text files when patch is set (files over maxFileBytes get a
// notice; 0: 1 MiB). A daemon from before patches sends none.
func (c *DaemonClient) SnapshotDiff(ctx context.Context, name, other string, patch bool, maxFileBytes int64) ([]fs.DiffEntry, error) {
	r, err := c.c.Snapshot(ctx, &pb.SnapshotRequest{Op: "diff", Name: name, Other: other, Patch: patch, MaxPatchFileBytes: maxFileBytes})
	if err != nil {
		return nil, PlainError(err)
	}
	var out []fs.DiffEntry
	for _, e := range r.Diff {
		out = append(out, fs.DiffEntry{Kind: e.Kind, Path: e.Path, OldPath: e.OldPath, Type: e.Type, OldSize: e.OldSize, Size: e.Size, Ino: fs.Ino(e.Ino), Patch: string(e.Patch)})
	}
	return out, nil
}

// GC is fs.GC of the daemon's store.
func (c *DaemonClient) GC(ctx context.Context) (*fs.GCReport, error) {
	r, err := c.c.GC(ctx, &pb.GCRequest{})
	if err != nil {
		return nil, PlainError(err)
	}
	return &fs.GCReport{
		ChunksFreed: int(r.ChunksFreed), BytesFreed: r.BytesFreed, RefsCorrected: int(r.RefsCorrected),
		BodiesFreed: int(r.BodiesFreed), BodyBytesFreed: r.BodyBytesFreed,
	}, nil
}

// Limit returns the size limit and the bytes in use, after setting the
// limit to set if it is not nil. A limit below what is stored is refused
// with a *CallError of code InvalidArgument.
func (c *DaemonClient) Limit(ctx context.Context, set *uint64) (limit, used uint64, err error) {
	req := &pb.LimitRequest{}
	if set != nil {
		req.Set, req.LimitBytes = true, *set
	}
	r, err := c.c.Limit(ctx, req)
	if err != nil {
		return 0, 0, PlainError(err)
	}
	return r.LimitBytes, r.UsedBytes, nil
}

// CallError is a call to the daemon that failed, told without gRPC's
// framing ("rpc error: code = ... desc = ..."): the daemon's message, or
// what became of the connection.
type CallError struct {
	Code    codes.Code
	Message string
}

func (e *CallError) Error() string { return e.Message }

// PlainError turns the error of a gRPC call to the daemon into one for
// people: a status error becomes a *CallError with the daemon's message,
// said plainly when the daemon went away or does not know the call.
// Other errors, and nil, are returned as they are.
func PlainError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		msg = "the daemon cannot be reached (did it stop?): " + msg
	case codes.Unimplemented:
		msg = "the daemon does not serve this call (it is older than this computerfs; restart it): " + msg
	case codes.DeadlineExceeded:
		msg = "the daemon did not answer in time: " + msg
	case codes.Canceled:
		msg = "cancelled: " + msg
	}
	return &CallError{Code: st.Code(), Message: msg}
}
