package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
)

// Executor runs commands on the execution backends: the daemon's Executor
// service (RemoteExecutor) or a backends.Runtime in this process
// (LocalExecutor).
type Executor interface {
	// Backends describes every backend, starting those not started yet
	// so that they describe themselves.
	Backends(ctx context.Context) ([]*pb.BackendInfo, error)
	// Exec runs start, streaming its output to stdout and stderr as it
	// comes; it ends the command when ctx ends. The error is for a
	// failure to run at all; how the command ended is in the outcome.
	Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*ExecOutcome, error)
}

// ExecOutcome is how an exec ended.
type ExecOutcome struct {
	ID, Backend, Reason string
	Exit                *pb.Exit
	Result              []byte // structured result (JSON), if any
	Changes             []workspace.Change
	ChangesTruncated    bool
}

// LocalExecutor runs execs on a runtime in this process.
func LocalExecutor(rt *backends.Runtime) Executor { return localExecutor{rt} }

type localExecutor struct{ rt *backends.Runtime }

func (l localExecutor) Backends(ctx context.Context) ([]*pb.BackendInfo, error) {
	return l.rt.List(ctx, true), nil
}

func (l localExecutor) Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*ExecOutcome, error) {
	req := backends.RequestFromStart(start)
	req.Stdin = stdin
	res, err := l.rt.Exec(ctx, req, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return &ExecOutcome{ID: res.ID, Backend: res.Backend, Reason: res.Reason, Exit: res.Exit, Result: res.Result,
		Changes: res.Changes, ChangesTruncated: res.ChangesTruncated}, nil
}

// RemoteExecutor runs execs through a daemon's Executor service.
func RemoteExecutor(c pb.ExecutorClient) Executor { return remoteExecutor{c} }

type remoteExecutor struct{ c pb.ExecutorClient }

func (r remoteExecutor) Backends(ctx context.Context) ([]*pb.BackendInfo, error) {
	res, err := r.c.Backends(ctx, &pb.BackendsRequest{Describe: true})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return res.Backends, nil
}

// Exec streams the exec to the daemon; ending ctx ends the stream, and
// the daemon kills the command.
func (r remoteExecutor) Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*ExecOutcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.c.Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if err := stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: start}}); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	// Stdin goes from its own goroutine, the stream's only sender from
	// here on, so that a command that writes before it reads cannot stall
	// on output nobody receives. It ends with the call.
	sent := make(chan struct{})
	defer func() { cancel(); <-sent }()
	go func() {
		defer close(sent)
		if stdin != nil {
			buf := make([]byte, 64<<10)
			for {
				n, err := stdin.Read(buf)
				if n > 0 {
					if stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Stdin{Stdin: append([]byte(nil), buf[:n]...)}}) != nil {
						return
					}
				}
				if err != nil {
					break
				}
			}
		}
		stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
	}()
	out := &ExecOutcome{}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("daemon: %w", err)
		}
		switch msg := m.Msg.(type) {
		case *pb.ExecOutput_Stdout:
			stdout.Write(msg.Stdout)
		case *pb.ExecOutput_Stderr:
			stderr.Write(msg.Stderr)
		case *pb.ExecOutput_ResultJson:
			out.Result = msg.ResultJson
		case *pb.ExecOutput_Chosen:
			out.ID, out.Backend, out.Reason = msg.Chosen.ExecId, msg.Chosen.Backend, msg.Chosen.Reason
		case *pb.ExecOutput_Summary:
			out.ChangesTruncated = msg.Summary.ChangesTruncated
			for _, c := range msg.Summary.Changes {
				out.Changes = append(out.Changes, workspace.Change{Seq: c.Seq, Time: c.TimeNs, Op: c.Op, Type: c.Type, Path: c.Path, NewPath: c.NewPath})
			}
		case *pb.ExecOutput_Exit:
			out.Exit = msg.Exit
		}
	}
	if out.Exit == nil {
		return nil, errors.New("daemon: the exec ended without an exit status")
	}
	return out, nil
}
