package wsrpc

import (
	"context"
	"errors"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ForkHeader is the gRPC metadata key that puts a file API call on a
// fork of the workspace (fs/fork.go) instead of the workspace itself.
const ForkHeader = "computerfs-fork"

// WithForks makes res honour ForkHeader: a call that carries it works on
// that fork of the view res gives.
func WithForks(res Resolver) Resolver {
	return func(ctx context.Context) (*workspace.WS, error) {
		w, err := res(ctx)
		if err != nil {
			return nil, err
		}
		md, _ := metadata.FromIncomingContext(ctx)
		ids := md.Get(ForkHeader)
		if len(ids) == 0 || ids[0] == "" {
			return w, nil
		}
		fw, err := w.Fork(ids[0])
		if err != nil {
			return nil, status.Errorf(codeOf(err), "%v", err)
		}
		return fw, nil
	}
}

// forkConn adds ForkHeader to every call made through it.
type forkConn struct {
	grpc.ClientConnInterface
	id string
}

func (c forkConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.ClientConnInterface.Invoke(metadata.AppendToOutgoingContext(ctx, ForkHeader, c.id), method, args, reply, opts...)
}

func (c forkConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.ClientConnInterface.NewStream(metadata.AppendToOutgoingContext(ctx, ForkHeader, c.id), desc, method, opts...)
}

// NewForkClient is NewClient whose calls work on fork id of the
// workspace the daemon serves.
func NewForkClient(conn grpc.ClientConnInterface, id string) *Client {
	return NewClient(forkConn{conn, id})
}

// ForkAPI is the file API over fork id of the daemon's workspace, on
// the same connection (workspace.ForkReader).
func (c *Client) ForkAPI(id string) (workspace.API, error) {
	if c.snap != "" {
		return nil, errors.New("a snapshot has no forks")
	}
	if _, ok := c.conn.(forkConn); ok {
		return nil, errors.New("a fork has no forks")
	}
	return NewForkClient(c.conn, id), nil
}

var _ workspace.ForkReader = (*Client)(nil)

func forkCode(err error) codes.Code {
	var ce *fs.ForkConflictError
	if errors.As(err, &ce) || errors.Is(err, fs.ErrRewindInconsistent) {
		return codes.FailedPrecondition
	}
	return rewindCode(err)
}

// Fork creates, lists, merges or discards forks of the workspace.
func (s *DaemonServer) Fork(ctx context.Context, req *pb.ForkRequest) (*pb.ForkResponse, error) {
	w, err := s.ws()
	if err != nil {
		return nil, err
	}
	info := func(fi fs.ForkInfo) *pb.ForkInfo {
		return &pb.ForkInfo{Id: valid(fi.ID), Epoch: fi.Epoch, CreatedUnixNs: fi.Created, Records: int64(fi.Records), Open: fi.Open}
	}
	r := &pb.ForkResponse{}
	switch req.Op {
	case "create":
		fi, err := w.CreateFork(ctx, req.Id)
		if err != nil {
			return nil, status.Errorf(forkCode(err), "%v", err)
		}
		r.Forks = append(r.Forks, info(fi))
	case "list":
		forks, err := w.Forks()
		if err != nil {
			return nil, status.Errorf(forkCode(err), "forks of %s: %v", s.store, err)
		}
		for _, fi := range forks {
			r.Forks = append(r.Forks, info(fi))
		}
	case "changes":
		ch, err := w.ForkChanges(ctx, req.Id)
		if err != nil {
			return nil, status.Errorf(forkCode(err), "%v", err)
		}
		for _, c := range ch {
			r.Changes = append(r.Changes, &pb.ForkChange{Op: c.Op, Path: valid(c.Path), Type: c.Type})
		}
	case "merge":
		rep, err := w.MergeFork(ctx, req.Id)
		if err != nil {
			return nil, status.Errorf(forkCode(err), "%v", err)
		}
		r.Merged = rewindResponse(rep, nil)
	case "discard":
		rep, err := w.DiscardFork(ctx, req.Id)
		if err != nil {
			return nil, status.Errorf(forkCode(err), "%v", err)
		}
		r.DroppedRecords, r.DroppedChunks = int64(rep.Records), int64(rep.Chunks)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "fork: unknown op %q (create, list, changes, merge, discard)", req.Op)
	}
	return r, nil
}

func forkInfoFromPB(p *pb.ForkInfo) fs.ForkInfo {
	return fs.ForkInfo{ID: p.Id, Epoch: p.Epoch, Created: p.CreatedUnixNs, Records: int(p.Records), Open: p.Open}
}

// CreateFork is workspace.WS.CreateFork on the daemon's workspace.
func (c *DaemonClient) CreateFork(ctx context.Context, id string) (fs.ForkInfo, error) {
	r, err := c.c.Fork(ctx, &pb.ForkRequest{Op: "create", Id: id})
	if err != nil {
		return fs.ForkInfo{}, PlainError(err)
	}
	if len(r.Forks) != 1 {
		return fs.ForkInfo{}, errors.New("fork: the daemon answered no fork")
	}
	return forkInfoFromPB(r.Forks[0]), nil
}

// Forks is workspace.WS.Forks on the daemon's workspace.
func (c *DaemonClient) Forks(ctx context.Context) ([]fs.ForkInfo, error) {
	r, err := c.c.Fork(ctx, &pb.ForkRequest{Op: "list"})
	if err != nil {
		return nil, PlainError(err)
	}
	out := make([]fs.ForkInfo, len(r.Forks))
	for i, p := range r.Forks {
		out[i] = forkInfoFromPB(p)
	}
	return out, nil
}

// ForkChanges is workspace.WS.ForkChanges on the daemon's workspace.
func (c *DaemonClient) ForkChanges(ctx context.Context, id string) ([]fs.ForkChange, error) {
	r, err := c.c.Fork(ctx, &pb.ForkRequest{Op: "changes", Id: id})
	if err != nil {
		return nil, PlainError(err)
	}
	out := make([]fs.ForkChange, len(r.Changes))
	for i, p := range r.Changes {
		out[i] = fs.ForkChange{Op: p.Op, Path: p.Path, Type: p.Type}
	}
	return out, nil
}

// MergeFork is workspace.WS.MergeFork on the daemon's workspace.
func (c *DaemonClient) MergeFork(ctx context.Context, id string) (*fs.RewindReport, error) {
	r, err := c.c.Fork(ctx, &pb.ForkRequest{Op: "merge", Id: id})
	if err != nil {
		return nil, PlainError(err)
	}
	if r.Merged == nil {
		return &fs.RewindReport{}, nil
	}
	return rewindReportFromPB(r.Merged), nil
}

// DiscardFork is workspace.WS.DiscardFork on the daemon's workspace.
func (c *DaemonClient) DiscardFork(ctx context.Context, id string) (*fs.ForkDropReport, error) {
	r, err := c.c.Fork(ctx, &pb.ForkRequest{Op: "discard", Id: id})
	if err != nil {
		return nil, PlainError(err)
	}
	return &fs.ForkDropReport{Records: int(r.DroppedRecords), Chunks: int(r.DroppedChunks)}, nil
}
