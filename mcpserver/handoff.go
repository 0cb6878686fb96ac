package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// A handoff gives a daemon the stdio of a `computerfs mcp` process, so
// that the daemon serves the MCP session itself, with the store in its
// own process: each tool call is then one hop (host to daemon) instead
// of two (host to computerfs mcp, which calls the daemon over its control
// socket for every file operation). The connection is the daemon's
// control socket, after package wsrpc's handoff magic:
//
//   - the client sends one message: a HandoffRequest as a JSON line, with
//     its stdin and stdout as SCM_RIGHTS;
//   - the daemon answers "ok\n" once it can serve them, or closes the
//     connection (or answers "error: why\n") if it will not: the client
//     then works through the control socket as before;
//   - the client, having read "ok", answers "go\n" and lets go of its
//     stdio; only then does the daemon serve it (a client that gave up
//     waiting for the answer, and serves the session itself, never says
//     go: the two never serve one stdio);
//   - the session ends when the host closes its end, or when the daemon
//     stops (it says "stopped\n" first): the daemon closes the connection
//     then, and the client exits. A client that goes first (killed by its
//     host) closes it: the daemon ends the session.

// HandoffRequest is what a client asks of the daemon with its files.
type HandoffRequest struct {
	// NoExec leaves the exec tool out (computerfs mcp --no-exec).
	NoExec bool `json:"no_exec,omitempty"`
	// MountPoint is where the client sees the workspace mounted (see
	// Options.MountPoint).
	MountPoint string `json:"mount_point,omitempty"`
}

// ErrDaemonStopped says the daemon serving a handed-off session stopped,
// and the session with it.
var ErrDaemonStopped = errors.New("the workspace's daemon stopped, and this session with it: start the MCP server again (with the daemon running, or without one: it then opens the workspace itself)")

// ErrHandoffRefused says the daemon did not take the files: the client
// still holds its stdio, nothing was read from it, and it may serve the
// session itself.
var ErrHandoffRefused = errors.New("the daemon did not take the session")

// handoffWait bounds each step of the exchange before the session runs.
const handoffWait = 10 * time.Second

// Handoff hands in and out (the client's stdio) to the daemon at the
// other end of c (from wsrpc.DialHandoff) and waits until the session
// ends, or ctx does (then it closes c, which ends the session). Once the
// daemon has taken them, in and out are closed here and accepted is
// called. It returns ErrHandoffRefused (wrapped) when the daemon would
// not take them, ErrDaemonStopped when the daemon stopped during the
// session.
func Handoff(ctx context.Context, c *net.UnixConn, in, out *os.File, req HandoffRequest, accepted func()) error {
	defer c.Close()
	if isTerminal(in) || isTerminal(out) {
		// The daemon makes the files non-blocking (so that it can end a
		// session whose reads wait): not a terminal a shell shares.
		return fmt.Errorf("%w: stdio is a terminal", ErrHandoffRefused)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	c.SetDeadline(time.Now().Add(handoffWait))
	if _, _, err := c.WriteMsgUnix(append(body, '\n'), unix.UnixRights(int(in.Fd()), int(out.Fd())), nil); err != nil {
		return fmt.Errorf("%w: %v", ErrHandoffRefused, err)
	}
	// The daemon answers once its server is made: that may start the
	// backends (to describe them), so the wait is longer.
	c.SetDeadline(time.Now().Add(3 * handoffWait))
	r := bufio.NewReaderSize(c, 512)
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("%w: %v", ErrHandoffRefused, err) // EOF: a daemon without handoffs
	}
	if line != "ok\n" {
		return fmt.Errorf("%w: %s", ErrHandoffRefused, strings.TrimSpace(strings.TrimPrefix(line, "error: ")))
	}
	c.SetDeadline(time.Now().Add(handoffWait))
	if _, err := io.WriteString(c, "go\n"); err != nil {
		// The daemon will not serve the session; nor can this process,
		// not knowing whether it will.
		return fmt.Errorf("handoff: %w", err)
	}
	c.SetDeadline(time.Time{})
	in.Close()
	out.Close()
	if accepted != nil {
		accepted()
	}
	ended := make(chan error, 1)
	go func() {
		// Until the daemon closes it.
		if line, _ := r.ReadString('\n'); line == "stopped\n" {
			ended <- ErrDaemonStopped
		}
		close(ended)
	}()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		c.Close()
		<-ended
		return nil
	}
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// HandoffServer makes the server of one handed-off session, and what to
// do when it ends.
type HandoffServer func(ctx context.Context, req HandoffRequest) (*Server, func(), error)

// ServeHandoff takes the files a client hands over on c (the client's
// stdio) and serves an MCP session on them, with the server newServer
// makes, until the client's host closes them, the client goes, or ctx
// ends. It closes c.
func ServeHandoff(ctx context.Context, c *net.UnixConn, newServer HandoffServer, log *slog.Logger) {
	defer c.Close()
	in, out, req, err := receiveHandoff(c)
	if err != nil {
		log.Warn("mcp handoff refused", "err", err)
		return
	}
	defer in.Close()
	defer out.Close()
	srv, done, err := newServer(ctx, req)
	if err != nil {
		log.Warn("mcp handoff: no server", "err", err)
		fmt.Fprintf(c, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	defer done()
	c.SetDeadline(time.Now().Add(handoffWait)) // making the server may have taken a while
	if _, err := io.WriteString(c, "ok\n"); err != nil {
		log.Warn("mcp handoff: the client went", "err", err)
		return
	}
	r := bufio.NewReaderSize(c, 64)
	if line, err := r.ReadString('\n'); line != "go\n" {
		log.Warn("mcp handoff: the client did not go on", "err", err)
		return
	}
	c.SetDeadline(time.Time{})
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		io.Copy(io.Discard, r) // until the client goes, or c is closed below
	}()
	log.Debug("mcp: serving a handed-off session")
	if err := srv.Run(sctx, &mcp.IOTransport{Reader: in, Writer: out}); err != nil && sctx.Err() == nil {
		log.Debug("mcp: handed-off session ended", "err", err)
	}
	if ctx.Err() != nil {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(c, "stopped\n")
	}
	c.Close()
	wg.Wait()
}

// receiveHandoff reads the client's message: its request and two files.
// Every file received is closed unless both are returned.
func receiveHandoff(c *net.UnixConn) (in, out *os.File, req HandoffRequest, err error) {
	c.SetDeadline(time.Now().Add(handoffWait))
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for more than two: more is refused
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, req, fmt.Errorf("read the request: %w", err)
	}
	var fds []int
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	switch {
	case flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0:
		closeAll()
		return nil, nil, req, errors.New("the request was cut")
	case len(fds) != 2:
		closeAll()
		return nil, nil, req, fmt.Errorf("%d files sent, not 2 (stdin and stdout)", len(fds))
	case n == 0 || buf[n-1] != '\n':
		closeAll()
		return nil, nil, req, errors.New("the request is not one JSON line")
	}
	if err := json.Unmarshal(buf[:n-1], &req); err != nil {
		closeAll()
		return nil, nil, req, fmt.Errorf("the request: %w", err)
	}
	// Non-blocking, so that closing a file ends a read that waits on it
	// (when the session must end); the runtime polls them. (They arrive
	// close-on-exec: the net package receives with MSG_CMSG_CLOEXEC, so
	// no backend the daemon starts inherits them.)
	for _, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			closeAll()
			return nil, nil, req, fmt.Errorf("the files: %w", err)
		}
	}
	return os.NewFile(uintptr(fds[0]), "mcp-stdin"), os.NewFile(uintptr(fds[1]), "mcp-stdout"), req, nil
}
