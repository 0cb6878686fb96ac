package backends_test

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// serve serves the runtime's Executor on a unix socket and returns a
// client of it.
func serve(t *testing.T, rt *backends.Runtime) pb.ExecutorClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	backends.NewService(rt).Register(g)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewExecutorClient(conn)
}

// svcExec is what an exec through the service sent back.
type svcExec struct {
	msgs    []*pb.ExecOutput
	chosen  *pb.Chosen
	stdout  string
	stderr  string
	result  string
	summary *pb.Summary
	exit    *pb.Exit
	err     error // the stream's end, if not a clean one
}

// runSvc sends start and then the extra inputs, closes its side and
// collects every message.
func runSvc(ctx context.Context, c pb.ExecutorClient, start *pb.ExecStart, inputs ...*pb.ExecInput) *svcExec {
	stream, err := c.Exec(ctx)
	if err != nil {
		return &svcExec{err: err}
	}
	var msgs []*pb.ExecInput
	if start != nil {
		msgs = append(msgs, &pb.ExecInput{Msg: &pb.ExecInput_Start{Start: start}})
	}
	msgs = append(msgs, inputs...)
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break
		}
	}
	r := &svcExec{}
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return r
		}
		if err != nil {
			r.err = err
			return r
		}
		r.msgs = append(r.msgs, m)
		switch v := m.Msg.(type) {
		case *pb.ExecOutput_Chosen:
			r.chosen = v.Chosen
		case *pb.ExecOutput_Stdout:
			r.stdout += string(v.Stdout)
		case *pb.ExecOutput_Stderr:
			r.stderr += string(v.Stderr)
		case *pb.ExecOutput_ResultJson:
			r.result = string(v.ResultJson)
		case *pb.ExecOutput_Summary:
			r.summary = v.Summary
		case *pb.ExecOutput_Exit:
			r.exit = v.Exit
		}
	}
}

func TestService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test", "shell")}, nil)
	c := serve(t, h.rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("backends", func(t *testing.T) {
		resp, err := c.Backends(ctx, &pb.BackendsRequest{})
		if err != nil || len(resp.Backends) != 2 || resp.Backends[0].State != backends.StateNotStarted {
			t.Fatalf("Backends = %v, %v", resp, err)
		}
		resp, err = c.Backends(ctx, &pb.BackendsRequest{Describe: true})
		if err != nil || resp.Backends[1].Description.GetId() != "test" || resp.Backends[1].State != backends.StateReady {
			t.Fatalf("Backends(describe) = %v, %v", resp, err)
		}
	})

	t.Run("cat", func(t *testing.T) {
		r := runSvc(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"cat"}},
			&pb.ExecInput{Msg: &pb.ExecInput_Stdin{Stdin: []byte("abc")}},
			&pb.ExecInput{Msg: &pb.ExecInput_Stdin{Stdin: []byte("def")}},
			&pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.msgs) == 0 || r.msgs[0].GetChosen() == nil {
			t.Fatalf("the first message is not chosen: %v", r.msgs)
		}
		if last := r.msgs[len(r.msgs)-1]; last.GetExit() == nil {
			t.Errorf("the last message is not exit: %v", last)
		}
		if r.chosen.Backend != "test" || r.chosen.Reason != "named by the caller" || r.chosen.ExecId == "" {
			t.Errorf("chosen %v", r.chosen)
		}
		if r.stdout != "abcdef" || r.exit.GetExitCode() != 0 || r.summary == nil {
			t.Errorf("stdout %q, exit %v, summary %v", r.stdout, r.exit, r.summary)
		}
	})

	t.Run("policy choice, result and changes", func(t *testing.T) {
		r := runSvc(ctx, c, &pb.ExecStart{Argv: []string{"write", "/svc", "data"}})
		if r.err != nil || r.exit.GetExitCode() != 0 {
			t.Fatalf("%v %v %q", r.err, r.exit, r.stderr)
		}
		if r.chosen.Backend != "shell" || !strings.Contains(r.chosen.Reason, "default") {
			t.Errorf("chosen %v", r.chosen)
		}
		found := false
		for _, ch := range r.summary.GetChanges() {
			found = found || ch.Path == "/svc" || ch.NewPath == "/svc"
		}
		if !found {
			t.Errorf("summary %v does not list /svc", r.summary)
		}
		r = runSvc(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"result", `[1,2]`}})
		if r.err != nil || r.result != `[1,2]` {
			t.Errorf("result %q, %v", r.result, r.err)
		}
	})

	t.Run("limits", func(t *testing.T) {
		r := runSvc(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"sleep", "10s"}, Limits: &pb.Limits{TimeoutMs: 200}})
		if r.err != nil || !r.exit.GetTimedOut() {
			t.Errorf("exit %v, %v", r.exit, r.err)
		}
		r = runSvc(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"flood"}, Limits: &pb.Limits{OutputBytes: 1000}})
		if r.err != nil || !r.exit.GetTruncated() || len(r.stdout) != 1000 {
			t.Errorf("exit %v, %d bytes, %v", r.exit, len(r.stdout), r.err)
		}
	})

	t.Run("signal", func(t *testing.T) {
		stream, err := c.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: &pb.ExecStart{Backend: "test", Argv: []string{"sleep", "10s"}}}})
		t0 := time.Now()
		time.AfterFunc(200*time.Millisecond, func() {
			stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Signal{Signal: 9}})
		})
		var exit *pb.Exit
		for {
			m, err := stream.Recv()
			if err != nil {
				break
			}
			if e := m.GetExit(); e != nil {
				exit = e
			}
		}
		if exit.GetSignal() != 9 || time.Since(t0) > 5*time.Second {
			t.Errorf("exit %v after %s", exit, time.Since(t0))
		}
	})

	t.Run("client cancels", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		stream, err := c.Exec(cctx)
		if err != nil {
			t.Fatal(err)
		}
		stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: &pb.ExecStart{Backend: "test", Argv: []string{"sleep", "10s"}}}})
		if _, err := stream.Recv(); err != nil { // chosen
			t.Fatal(err)
		}
		ccancel()
		// The exec on the plugin ends (the runtime kills it) and the
		// plugin serves the next one.
		h.mustEcho(t, "test", "after cancel")
	})

	t.Run("errors", func(t *testing.T) {
		r := runSvc(ctx, c, &pb.ExecStart{Backend: "nope", Argv: []string{"echo"}})
		if status.Code(r.err) != codes.NotFound {
			t.Errorf("unknown backend: %v", r.err)
		}
		r = runSvc(ctx, c, nil, &pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
		if status.Code(r.err) != codes.InvalidArgument {
			t.Errorf("no start: %v", r.err)
		}
		r = runSvc(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"env"}, Env: map[string]string{"A=B": "x"}})
		if status.Code(r.err) != codes.FailedPrecondition {
			t.Errorf("bad env: %v", r.err)
		}
	})
}
