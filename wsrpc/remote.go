package wsrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The daemon's Push and Pull (issue 18): package remote's transfers on
// the daemon's open workspace (remote.Host), their progress streamed.

// transferCode is the gRPC code of a push's or pull's failure.
func transferCode(err error) codes.Code {
	switch {
	case errors.Is(err, remote.ErrConflict), errors.Is(err, remote.ErrRollback):
		return codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return rewindCode(err)
}

type transferStream interface {
	Context() context.Context
	Send(*pb.TransferProgress) error
}

// progressSender sends progress at most ten times a second; a send that
// fails stops the rest (the transfer goes on until its context ends).
func progressSender(st transferStream) func(remote.Progress) {
	var last time.Time
	var failed bool
	return func(p remote.Progress) {
		if failed || time.Since(last) < 100*time.Millisecond && p.Done != p.Total {
			return
		}
		last = time.Now()
		failed = st.Send(&pb.TransferProgress{Phase: p.Phase, Done: int64(p.Done), Total: int64(p.Total), Bytes: p.Bytes}) != nil
	}
}

func (s *DaemonServer) host() (*remote.Host, error) {
	if s.o.Remote == nil {
		return nil, status.Error(codes.Unimplemented, "this daemon does no remote transfers")
	}
	return s.o.Remote, nil
}

func sendReport(st transferStream, name string, r remote.Remote, rep any) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return status.Errorf(codes.Internal, "report: %v", err)
	}
	return st.Send(&pb.TransferProgress{Remote: valid(name), Url: valid(r.URL), ReportJson: string(b)})
}

// Push pushes the served workspace.
func (s *DaemonServer) Push(req *pb.TransferRequest, st pb.Daemon_PushServer) error {
	h, err := s.host()
	if err != nil {
		return err
	}
	name, r, rep, err := h.Push(st.Context(), req.Remote, remote.PushOptions{Snapshot: req.Snapshot, Force: req.Force, Progress: progressSender(st)})
	if err != nil {
		return status.Errorf(transferCode(err), "%v", err)
	}
	s.snapshotsChanged(rep.Snapshot)
	return sendReport(st, name, r, rep)
}

// Pull pulls into the served workspace, live.
func (s *DaemonServer) Pull(req *pb.TransferRequest, st pb.Daemon_PullServer) error {
	h, err := s.host()
	if err != nil {
		return err
	}
	name, r, rep, err := h.Pull(st.Context(), req.Remote, remote.PullOptions{Snapshot: req.Snapshot, Force: req.Force, Progress: progressSender(st)})
	if err != nil {
		return status.Errorf(transferCode(err), "%v", err)
	}
	if rep.LocalSnapshot != "" {
		s.snapshotsChanged(rep.LocalSnapshot)
	}
	return sendReport(st, name, r, rep)
}

// TransferResult is what a push or pull through the daemon reports:
// the remote it used and the report.
type TransferResult struct {
	Remote string
	URL    string
}

func recvTransfer(st grpc.ServerStreamingClient[pb.TransferProgress], progress func(remote.Progress), rep any) (TransferResult, error) {
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return TransferResult{}, errors.New("the daemon ended the call without a report")
		}
		if err != nil {
			return TransferResult{}, PlainError(err)
		}
		if m.ReportJson != "" {
			if err := json.Unmarshal([]byte(m.ReportJson), rep); err != nil {
				return TransferResult{}, err
			}
			return TransferResult{Remote: m.Remote, URL: m.Url}, nil
		}
		if progress != nil {
			progress(remote.Progress{Phase: m.Phase, Done: int(m.Done), Total: int(m.Total), Bytes: m.Bytes})
		}
	}
}

// Push is remote.Host.Push on the daemon's workspace.
func (c *DaemonClient) Push(ctx context.Context, name string, opts remote.PushOptions) (TransferResult, *remote.PushReport, error) {
	st, err := c.c.Push(ctx, &pb.TransferRequest{Remote: name, Snapshot: opts.Snapshot, Force: opts.Force})
	if err != nil {
		return TransferResult{}, nil, PlainError(err)
	}
	rep := &remote.PushReport{}
	res, err := recvTransfer(st, opts.Progress, rep)
	if err != nil {
		return TransferResult{}, nil, err
	}
	return res, rep, nil
}

// Pull is remote.Host.Pull on the daemon's workspace.
func (c *DaemonClient) Pull(ctx context.Context, name string, opts remote.PullOptions) (TransferResult, *remote.CloneReport, error) {
	st, err := c.c.Pull(ctx, &pb.TransferRequest{Remote: name, Snapshot: opts.Snapshot, Force: opts.Force})
	if err != nil {
		return TransferResult{}, nil, PlainError(err)
	}
	rep := &remote.CloneReport{}
	res, err := recvTransfer(st, opts.Progress, rep)
	if err != nil {
		return TransferResult{}, nil, err
	}
	return res, rep, nil
}
