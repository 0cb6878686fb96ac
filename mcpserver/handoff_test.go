package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// socketPair is a connected pair of unix sockets: the client's end and
// the daemon's.
func socketPair(t *testing.T) (client, daemon *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// handoff is a session handed over pipes, as an agent host's stdio: the
// client process's side (Handoff), the daemon's (ServeHandoff) and the
// host's MCP client on the other ends of the pipes.
type handoff struct {
	clientDone, daemonDone chan error
	cancelDaemon           func()
	host                   *mcp.ClientSession
	hostIn, hostOut        *os.File // the host's ends
}

func startHandoff(t *testing.T, newServer mcpserver.HandoffServer, req mcpserver.HandoffRequest) (*handoff, error) {
	t.Helper()
	cc, dc := socketPair(t)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &handoff{clientDone: make(chan error, 1), daemonDone: make(chan error, 1), hostIn: stdinW, hostOut: stdoutR}
	t.Cleanup(func() { stdinW.Close(); stdoutR.Close(); stdinR.Close(); stdoutW.Close() })
	dctx, cancel := context.WithCancel(context.Background())
	h.cancelDaemon = cancel
	t.Cleanup(cancel)
	go func() {
		mcpserver.ServeHandoff(dctx, dc, newServer, slog.New(slog.DiscardHandler))
		close(h.daemonDone)
	}()
	accepted := make(chan struct{})
	go func() {
		h.clientDone <- mcpserver.Handoff(context.Background(), cc, stdinR, stdoutW, req, func() { close(accepted) })
	}()
	select {
	case <-accepted:
	case err := <-h.clientDone:
		return h, err
	case <-time.After(20 * time.Second):
		t.Fatal("the handoff was neither taken nor refused")
	}
	// The client process let go of its stdio: only the daemon holds it.
	if _, err := stdinR.Stat(); err == nil {
		t.Errorf("Handoff did not close the stdin it handed over")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.host = cs
	return h, nil
}

func rawFd(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	rc.Control(func(u uintptr) { fd = int(u) })
	return fd
}

// asErr is a channel that gives nil when done closes.
func asErr(done <-chan struct{}) <-chan error {
	ch := make(chan error, 1)
	go func() { <-done; ch <- nil }()
	return ch
}

func wait(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not end", what)
		return nil
	}
}

func TestHandoffSession(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	l.put(t, "/src/a.go", "package a\n")
	var got mcpserver.HandoffRequest
	newServer := func(ctx context.Context, req mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
		got = req
		srv, err := mcpserver.New(ctx, mcpserver.Options{Files: func() workspace.API { return l.ws }, MountPoint: req.MountPoint})
		return srv, func() {}, err
	}

	t.Run("the host closes", func(t *testing.T) {
		h, err := startHandoff(t, newServer, mcpserver.HandoffRequest{MountPoint: "/mnt/ws", NoExec: true})
		if err != nil {
			t.Fatal(err)
		}
		if got.MountPoint != "/mnt/ws" || !got.NoExec {
			t.Errorf("the daemon got %+v", got)
		}
		c := ok(t, h.host, "ls", map[string]any{"path": "/mnt/ws/src"})
		if !strings.Contains(c.text, "a.go") {
			t.Errorf("ls: %s", c.text)
		}
		c = ok(t, h.host, "read", map[string]any{"file_path": "/src/a.go"})
		if !strings.Contains(c.text, "package a") {
			t.Errorf("read: %s", c.text)
		}
		h.host.Close() // closes the host's pipes
		if err := wait(t, h.clientDone, "the client"); err != nil {
			t.Errorf("Handoff: %v", err)
		}
		wait(t, h.daemonDone, "the daemon's session")
	})

	t.Run("the daemon stops", func(t *testing.T) {
		h, err := startHandoff(t, newServer, mcpserver.HandoffRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ok(t, h.host, "ls", map[string]any{"path": "/"})
		h.cancelDaemon()
		if err := wait(t, h.clientDone, "the client"); !errors.Is(err, mcpserver.ErrDaemonStopped) {
			t.Errorf("Handoff: %v, want ErrDaemonStopped", err)
		}
		wait(t, h.daemonDone, "the daemon's session")
		// The host sees the server go: its stdout ends.
		if _, err := h.host.CallTool(t.Context(), &mcp.CallToolParams{Name: "ls"}); err == nil {
			t.Errorf("a call after the daemon stopped did not fail")
		}
	})

	t.Run("the client does not go on", func(t *testing.T) {
		// A client that gave up waiting for "ok" never says "go": the
		// daemon lets the server go unserved.
		cc, dc := socketPair(t)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		released := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			mcpserver.ServeHandoff(t.Context(), dc, func(ctx context.Context, req mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
				srv, _, err := newServer(ctx, req)
				return srv, func() { close(released) }, err
			}, slog.New(slog.DiscardHandler))
		}()
		if _, _, err := cc.WriteMsgUnix([]byte("{}\n"), unix.UnixRights(rawFd(t, r), rawFd(t, w)), nil); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(cc).ReadString('\n')
		if line != "ok\n" {
			t.Fatalf("the daemon answered %q", line)
		}
		cc.Close()
		if err := wait(t, asErr(done), "the daemon's handoff"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-released:
		default:
			t.Errorf("the server made was not let go")
		}
		// It served nothing: the write end it got is closed, so ours is
		// the last.
		w.Close()
		r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the daemon kept the files: %v", err)
		}
	})

	t.Run("the daemon makes no server", func(t *testing.T) {
		_, err := startHandoff(t, func(context.Context, mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
			return nil, nil, errors.New("no backends today")
		}, mcpserver.HandoffRequest{})
		if !errors.Is(err, mcpserver.ErrHandoffRefused) || !strings.Contains(err.Error(), "no backends today") {
			t.Errorf("Handoff: %v, want ErrHandoffRefused saying why", err)
		}
	})
}

// A daemon refuses a handoff that is not two files and a JSON line, and
// keeps none of what was sent.
func TestHandoffRefusals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rfd, wfd := rawFd(t, r), rawFd(t, w) // Fd() would make them blocking
	for _, tc := range []struct {
		name string
		body string
		fds  []int
	}{
		{"one file", "{}\n", []int{rfd}},
		{"three files", "{}\n", []int{rfd, wfd, wfd}},
		{"no files", "{}\n", nil},
		{"not JSON", "hello\n", []int{rfd, wfd}},
		{"no newline", "{}", []int{rfd, wfd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, dc := socketPair(t)
			done := make(chan struct{})
			called := false
			go func() {
				defer close(done)
				mcpserver.ServeHandoff(t.Context(), dc, func(context.Context, mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
					called = true
					return nil, nil, errors.New("unreachable")
				}, slog.New(slog.DiscardHandler))
			}()
			var oob []byte
			if tc.fds != nil {
				oob = unix.UnixRights(tc.fds...)
			}
			if _, _, err := cc.WriteMsgUnix([]byte(tc.body), oob, nil); err != nil {
				t.Fatal(err)
			}
			<-done
			if called {
				t.Errorf("the server was made")
			}
			if n, _ := cc.Read(make([]byte, 16)); n != 0 {
				t.Errorf("the daemon answered")
			}
		})
	}
	// Every file the daemon received it closed: the pipe's write end is
	// ours alone again, so closing it ends the read end.
	w.Close()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read after the write end closed: %d %v (a copy of the write end is still open)", n, err)
	}
}

// FuzzHandoffRequest: whatever line comes with the two files, the daemon
// makes a server only for a JSON object line, hands it the request that
// line holds, and keeps neither file once it refuses.
func FuzzHandoffRequest(f *testing.F) {
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"no_exec":true,"mount_point":"/mnt/ws"}` + "\n"))
	f.Add([]byte(`{"mount_point":7}` + "\n"))
	f.Add([]byte("\n"))
	f.Add([]byte("null\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) == 0 || len(line) > 4000 {
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		cc, dc := socketPair(t)
		done := make(chan struct{})
		var got *mcpserver.HandoffRequest
		go func() {
			defer close(done)
			mcpserver.ServeHandoff(context.Background(), dc, func(_ context.Context, req mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
				got = &req
				return nil, nil, errors.New("refused")
			}, slog.New(slog.DiscardHandler))
		}()
		if _, _, err := cc.WriteMsgUnix(line, unix.UnixRights(rawFd(t, r), rawFd(t, w)), nil); err != nil {
			t.Fatal(err)
		}
		<-done
		var want mcpserver.HandoffRequest
		valid := line[len(line)-1] == '\n' && json.Unmarshal(line[:len(line)-1], &want) == nil
		if valid != (got != nil) || (got != nil && *got != want) {
			t.Fatalf("%q: server made %v with %+v, want %v with %+v", line, got != nil, got, valid, want)
		}
		w.Close()
		r.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%q: the daemon kept a file: %v", line, err)
		}
	})
}
