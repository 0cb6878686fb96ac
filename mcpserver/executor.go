package mcpserver

import (
	"context"
	"fmt"
	"io"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
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
	Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*backends.Result, error)
}

// LocalExecutor runs execs on a runtime in this process.
func LocalExecutor(rt *backends.Runtime) Executor { return localExecutor{rt} }

type localExecutor struct{ rt *backends.Runtime }

func (l localExecutor) Backends(ctx context.Context) ([]*pb.BackendInfo, error) {
	return l.rt.List(ctx, true), nil
}

func (l localExecutor) Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*backends.Result, error) {
	req := backends.RequestFromStart(start)
	req.Stdin = stdin
	return l.rt.Exec(ctx, req, stdout, stderr)
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
func (r remoteExecutor) Exec(ctx context.Context, start *pb.ExecStart, stdin io.Reader, stdout, stderr io.Writer) (*backends.Result, error) {
	return backends.ExecRemote(ctx, r.c, start, stdin, nil, stdout, stderr)
}
