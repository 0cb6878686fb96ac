package backends

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/wsrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service serves the runtime as the Executor gRPC service, on the
// daemon's control socket.
type Service struct {
	pb.UnimplementedExecutorServer
	rt *Runtime
}

// NewService wraps rt.
func NewService(rt *Runtime) *Service { return &Service{rt: rt} }

// Register adds the service to a gRPC server.
func (s *Service) Register(g *grpc.Server) { pb.RegisterExecutorServer(g, s) }

func (s *Service) Backends(ctx context.Context, req *pb.BackendsRequest) (*pb.BackendsResponse, error) {
	return &pb.BackendsResponse{Backends: s.rt.List(ctx, req.Describe)}, nil
}

// RequestFromStart turns a start message into a Request.
func RequestFromStart(st *pb.ExecStart) *Request {
	req := &Request{
		Backend: st.Backend, Argv: st.Argv, Kind: st.Kind, File: st.File, Cwd: st.Cwd, Env: st.Env, Input: st.InputJson, Fork: st.Fork,
	}
	if st.Limits != nil {
		req.Timeout = time.Duration(st.Limits.TimeoutMs) * time.Millisecond
		req.OutputLimit = st.Limits.OutputBytes
	}
	return req
}

func (s *Service) Exec(stream grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput]) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	if st == nil {
		return status.Error(codes.InvalidArgument, "the first message must be start")
	}
	req := RequestFromStart(st)
	var sendMu sync.Mutex
	send := func(m *pb.ExecOutput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	id, reason, err := s.rt.Choose(ctx, req)
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	req.Backend, req.Reason = id, reason
	req.ID = s.rt.NewExecID() // announced before the exec runs
	stdinR, stdinW := io.Pipe()
	defer stdinR.Close()
	signals := make(chan syscall.Signal, 8)
	req.Stdin, req.Signals = stdinR, signals
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		defer stdinW.Close()
		for {
			in, err := stream.Recv()
			if err != nil {
				return
			}
			switch m := in.Msg.(type) {
			case *pb.ExecInput_Stdin:
				stdinW.Write(m.Stdin)
			case *pb.ExecInput_StdinClose:
				stdinW.Close()
			case *pb.ExecInput_Signal:
				select {
				case signals <- syscall.Signal(m.Signal):
				default:
				}
			}
		}
	}()
	chosenSent := false
	announce := func() error {
		if chosenSent {
			return nil
		}
		chosenSent = true
		return send(&pb.ExecOutput{Msg: &pb.ExecOutput_Chosen{Chosen: &pb.Chosen{ExecId: req.ID, Backend: id, Reason: reason}}})
	}
	if err := announce(); err != nil {
		return err
	}
	out := func(stderr bool) io.Writer {
		return writerFunc(func(p []byte) (int, error) {
			n := len(p)
			for len(p) > 0 {
				c := min(len(p), pluginapi.MaxChunk)
				m := &pb.ExecOutput{Msg: &pb.ExecOutput_Stdout{Stdout: p[:c]}}
				if stderr {
					m = &pb.ExecOutput{Msg: &pb.ExecOutput_Stderr{Stderr: p[:c]}}
				}
				if err := send(m); err != nil {
					return 0, err
				}
				p = p[c:]
			}
			return n, nil
		})
	}
	res, err := s.rt.Exec(ctx, req, out(false), out(true))
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	if res.Result != nil {
		if err := send(&pb.ExecOutput{Msg: &pb.ExecOutput_ResultJson{ResultJson: res.Result}}); err != nil {
			return err
		}
	}
	sum := &pb.Summary{ChangesTruncated: res.ChangesTruncated, Sync: res.Sync}
	for _, c := range res.Changes {
		sum.Changes = append(sum.Changes, &pb.Change{Seq: c.Seq, TimeNs: c.Time, Op: c.Op, Type: c.Type, Path: wsrpc.ValidUTF8(c.Path), NewPath: wsrpc.ValidUTF8(c.NewPath)})
	}
	if err := send(&pb.ExecOutput{Msg: &pb.ExecOutput_Summary{Summary: sum}}); err != nil {
		return err
	}
	if err := send(&pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: res.Exit}}); err != nil {
		return fmt.Errorf("send exit: %w", err)
	}
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
