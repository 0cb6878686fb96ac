package backends_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// ExecRemote, the client side of the service (computerfs exec and the MCP
// server through the daemon), carries stdin, signals, output, the choice,
// the changes and the result, and ends the command when its ctx ends.
func TestExecRemote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test", "shell")}, nil)
	c := serve(t, h.rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := strings.Repeat("0123456789", 100_000) // several stream messages
	tests := []struct {
		name   string
		start  *pb.ExecStart
		stdin  io.Reader
		stdout string
		check  func(t *testing.T, r *backends.Result)
	}{
		{name: "stdin", start: &pb.ExecStart{Backend: "test", Argv: []string{"cat"}}, stdin: strings.NewReader(big), stdout: big},
		{name: "stdin a pipe", start: &pb.ExecStart{Backend: "test", Argv: []string{"cat"}}, stdin: pipeOf("piped"), stdout: "piped"},
		{name: "no stdin", start: &pb.ExecStart{Backend: "test", Argv: []string{"cat"}}, stdout: ""},
		{name: "choice and changes", start: &pb.ExecStart{Argv: []string{"write", "/remote", "data"}}, check: func(t *testing.T, r *backends.Result) {
			if r.Backend != "shell" || r.Reason == "" || r.ID == "" {
				t.Errorf("chosen %q %q %q", r.ID, r.Backend, r.Reason)
			}
			found := false
			for _, ch := range r.Changes {
				found = found || ch.Path == "/remote"
			}
			if !found {
				t.Errorf("changes %v lack /remote", r.Changes)
			}
		}},
		{name: "result", start: &pb.ExecStart{Backend: "test", Argv: []string{"result", `{"a":1}`}}, check: func(t *testing.T, r *backends.Result) {
			if string(r.Result) != `{"a":1}` {
				t.Errorf("result %q", r.Result)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			r, err := backends.ExecRemote(ctx, c, tc.start, tc.stdin, nil, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Exit == nil || r.Exit.ExitCode != 0 {
				t.Fatalf("exit %v, stderr %q", r.Exit, stderr.String())
			}
			if tc.check != nil {
				tc.check(t, r)
			} else if stdout.String() != tc.stdout {
				t.Errorf("stdout %d bytes, want %d", stdout.Len(), len(tc.stdout))
			}
		})
	}
	t.Run("signal", func(t *testing.T) {
		sigs := make(chan syscall.Signal, 1)
		time.AfterFunc(200*time.Millisecond, func() { sigs <- syscall.SIGKILL })
		t0 := time.Now()
		r, err := backends.ExecRemote(ctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"sleep", "10s"}}, nil, sigs, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if r.Exit.GetSignal() != 9 || time.Since(t0) > 5*time.Second {
			t.Errorf("exit %v after %s", r.Exit, time.Since(t0))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, ccancel)
		// A stdin nobody writes to: ExecRemote interrupts its read.
		stdinR, stdinW := io.Pipe()
		defer stdinW.Close()
		_, err := backends.ExecRemote(cctx, c, &pb.ExecStart{Backend: "test", Argv: []string{"sleep", "10s"}}, stdinR, nil, io.Discard, io.Discard)
		if err == nil {
			t.Fatal("a cancelled exec returned no error")
		}
		h.mustEcho(t, "test", "after cancel")
	})
	t.Run("unknown backend", func(t *testing.T) {
		_, err := backends.ExecRemote(ctx, c, &pb.ExecStart{Backend: "nope", Argv: []string{"x"}}, nil, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("err %v", err)
		}
	})
}

func pipeOf(s string) io.Reader {
	r, w := io.Pipe()
	go func() { w.Write([]byte(s)); w.Close() }()
	return r
}
