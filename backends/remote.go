package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// ExecRemote is the client side of Service.Exec: it runs start through
// an Executor service (the daemon's), forwarding stdin (until EOF) and
// signals, and streaming the command's output to stdout and stderr as it
// comes. Ending ctx ends the stream, and the service kills the command.
//
// The Result is as Runtime.Exec's (without Start). A failed call is a
// wsrpc.PlainError, which says plainly when the daemon went away. A stdin read still
// blocked at the end is interrupted as Request.Stdin says, and waited for;
// any other reader is left to finish its read.
func ExecRemote(ctx context.Context, c pb.ExecutorClient, start *pb.ExecStart, stdin io.Reader, signals <-chan syscall.Signal, stdout, stderr io.Writer) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", wsrpc.PlainError(err))
	}
	if err := stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: start}}); err != nil {
		return nil, fmt.Errorf("daemon: %w", wsrpc.PlainError(err))
	}
	// The stream's sends happen in one goroutine: stdin chunks (read by
	// another) and signals, until the call ends.
	chunks := make(chan []byte)
	readDone := make(chan struct{})
	if stdin != nil {
		go func() {
			defer close(readDone)
			defer close(chunks)
			buf := make([]byte, pluginapi.MaxChunk)
			for {
				n, err := stdin.Read(buf)
				if n > 0 {
					select {
					case chunks <- append([]byte(nil), buf[:n]...):
					case <-ctx.Done():
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	} else {
		close(chunks)
		close(readDone)
	}
	sendDone := make(chan struct{})
	defer func() {
		cancel()
		<-sendDone
		if interruptRead(stdin) {
			<-readDone
		}
	}()
	go func() {
		defer close(sendDone)
		in := chunks
		for {
			select {
			case b, ok := <-in:
				if !ok {
					stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
					in = nil
					continue
				}
				if stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Stdin{Stdin: b}}) != nil {
					return
				}
			case s, ok := <-signals:
				if !ok {
					signals = nil
					continue
				}
				stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Signal{Signal: int32(s)}})
			case <-ctx.Done():
				return
			}
		}
	}()
	res := &Result{}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("daemon: %w", wsrpc.PlainError(err))
		}
		switch msg := m.Msg.(type) {
		case *pb.ExecOutput_Stdout:
			stdout.Write(msg.Stdout)
		case *pb.ExecOutput_Stderr:
			stderr.Write(msg.Stderr)
		case *pb.ExecOutput_ResultJson:
			res.Result = msg.ResultJson
		case *pb.ExecOutput_Chosen:
			res.ID, res.Backend, res.Reason = msg.Chosen.ExecId, msg.Chosen.Backend, msg.Chosen.Reason
		case *pb.ExecOutput_Summary:
			res.ChangesTruncated, res.Sync = msg.Summary.ChangesTruncated, msg.Summary.Sync
			for _, c := range msg.Summary.Changes {
				res.Changes = append(res.Changes, workspace.Change{Seq: c.Seq, Time: c.TimeNs, Op: c.Op, Type: c.Type, Path: c.Path, NewPath: c.NewPath})
			}
		case *pb.ExecOutput_Exit:
			res.Exit = msg.Exit
		}
	}
	if res.Exit == nil {
		return nil, errors.New("daemon: the exec ended without an exit status")
	}
	return res, nil
}
