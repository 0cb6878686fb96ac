package wsrpc

import (
	"context"
	"errors"
	"syscall"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rewindCode is the gRPC code of a restore's or an undo's failure.
func rewindCode(err error) codes.Code {
	var ce *fs.ConflictError
	switch {
	case errors.As(err, &ce), errors.Is(err, fs.ErrNothingToUndo), errors.Is(err, fs.ErrRewindInconsistent):
		return codes.FailedPrecondition
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES):
		return codes.PermissionDenied
	}
	return codeOf(err)
}

func (s *DaemonServer) ws() (*workspace.WS, error) {
	if s.o.Files != nil {
		return s.o.Files(), nil
	}
	if s.o.WS == nil {
		return nil, status.Error(codes.Unimplemented, "this daemon serves no file API")
	}
	return s.o.WS, nil
}

// Restore puts the workspace back as a snapshot has it, live.
func (s *DaemonServer) Restore(ctx context.Context, req *pb.RestoreRequest) (*pb.RewindResponse, error) {
	w, err := s.ws()
	if err != nil {
		return nil, err
	}
	rep, err := w.Restore(ctx, req.Snapshot, req.Paths)
	if err != nil {
		return nil, status.Errorf(rewindCode(err), "%v", err)
	}
	return rewindResponse(rep, nil), nil
}

// Undo reverts one exec's changes, live.
func (s *DaemonServer) Undo(ctx context.Context, req *pb.UndoRequest) (*pb.RewindResponse, error) {
	w, err := s.ws()
	if err != nil {
		return nil, err
	}
	rec, rep, err := w.Undo(ctx, fs.UndoOptions{Exec: req.Exec, Force: req.Force})
	if err != nil {
		return nil, status.Errorf(rewindCode(err), "%v", err)
	}
	return rewindResponse(rep, rec), nil
}

// Execs lists the exec records.
func (s *DaemonServer) Execs(ctx context.Context, req *pb.ExecsRequest) (*pb.ExecsResponse, error) {
	w, err := s.ws()
	if err != nil {
		return nil, err
	}
	recs, err := w.Execs()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "exec records of %s: %v", s.store, err)
	}
	r := &pb.ExecsResponse{}
	for i := range recs {
		r.Execs = append(r.Execs, execRecordPB(&recs[i]))
	}
	return r, nil
}

func rewindResponse(rep *fs.RewindReport, rec *fs.ExecRecord) *pb.RewindResponse {
	r := &pb.RewindResponse{Records: int64(rep.Records), Paths: validAll(rep.Paths), Epoch: rep.Epoch, Seconds: rep.Seconds}
	if rec != nil {
		r.Exec = execRecordPB(rec)
	}
	return r
}

func execRecordPB(r *fs.ExecRecord) *pb.ExecRecord {
	return &pb.ExecRecord{
		Id: valid(r.ID), Before: r.Before, After: r.After, StartUnixNs: r.Start, EndUnixNs: r.End,
		Backend: valid(r.Backend), Command: valid(r.Command), Exit: int32(r.Exit),
		Paths: validAll(r.Paths), PathsTruncated: r.PathsTruncated, UndoneUnixNs: r.Undone,
		Running: r.Running, Interrupted: r.Interrupted, RootBefore: r.RootBefore, RootAfter: r.RootAfter,
	}
}

// ExecRecordFromPB is the inverse of the daemon's encoding.
func ExecRecordFromPB(r *pb.ExecRecord) fs.ExecRecord {
	if r == nil {
		return fs.ExecRecord{}
	}
	return fs.ExecRecord{
		ID: r.Id, Before: r.Before, After: r.After, Start: r.StartUnixNs, End: r.EndUnixNs,
		Backend: r.Backend, Command: r.Command, Exit: int(r.Exit), Paths: r.Paths, PathsTruncated: r.PathsTruncated, Undone: r.UndoneUnixNs,
		Running: r.Running, Interrupted: r.Interrupted, RootBefore: r.RootBefore, RootAfter: r.RootAfter,
	}
}

func rewindReportFromPB(r *pb.RewindResponse) *fs.RewindReport {
	return &fs.RewindReport{Records: int(r.Records), Paths: r.Paths, Epoch: r.Epoch, Seconds: r.Seconds}
}

// Restore is workspace.WS.Restore on the daemon's workspace.
func (c *DaemonClient) Restore(ctx context.Context, snapshot string, paths []string) (*fs.RewindReport, error) {
	r, err := c.c.Restore(ctx, &pb.RestoreRequest{Snapshot: snapshot, Paths: paths})
	if err != nil {
		return nil, PlainError(err)
	}
	return rewindReportFromPB(r), nil
}

// Undo is workspace.WS.Undo on the daemon's workspace.
func (c *DaemonClient) Undo(ctx context.Context, opts fs.UndoOptions) (*fs.ExecRecord, *fs.RewindReport, error) {
	r, err := c.c.Undo(ctx, &pb.UndoRequest{Exec: opts.Exec, Force: opts.Force})
	if err != nil {
		return nil, nil, PlainError(err)
	}
	rec := ExecRecordFromPB(r.Exec)
	return &rec, rewindReportFromPB(r), nil
}

// Execs is workspace.WS.Execs on the daemon's workspace.
func (c *DaemonClient) Execs(ctx context.Context) ([]fs.ExecRecord, error) {
	r, err := c.c.Execs(ctx, &pb.ExecsRequest{})
	if err != nil {
		return nil, PlainError(err)
	}
	out := make([]fs.ExecRecord, 0, len(r.Execs))
	for _, e := range r.Execs {
		out = append(out, ExecRecordFromPB(e))
	}
	return out, nil
}
