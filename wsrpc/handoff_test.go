package wsrpc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// The control socket sorts its connections: gRPC's are served as ever,
// handoffs go to the handler (closed unanswered before there is one),
// and Close ends the handlers' context and waits for them.
func TestHandoff(t *testing.T) {
	store := filepath.Join(t.TempDir(), "ws.cfs")
	cs, err := listen(t, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	client, closeConn, err := wsrpc.Dial(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	if _, err := client.Write(ctx, "/a.txt", strings.NewReader("a"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	// No handler yet: the connection is closed, the client sees EOF.
	c, err := wsrpc.DialHandoff(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a handoff with no handler: read %v, want EOF", err)
	}
	c.Close()

	type served struct{ line string }
	got := make(chan served, 1)
	stopped := make(chan error, 1)
	cs.HandleHandoff(func(ctx context.Context, c *net.UnixConn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- served{line}
		c.Write([]byte("ok\n"))
		<-ctx.Done()
		stopped <- ctx.Err()
	})
	c, err = wsrpc.DialHandoff(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello\n"))
	select {
	case s := <-got:
		if s.line != "hello\n" {
			t.Errorf("the handler read %q, want what the client wrote after the magic", s.line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called")
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "ok\n" {
		t.Errorf("the client read %q (%v)", line, err)
	}
	// gRPC goes on beside it, on a new connection too.
	if fi, err := client.Stat(ctx, "/a.txt"); err != nil || fi.Size != 1 {
		t.Errorf("stat over gRPC: %+v %v", fi, err)
	}
	client2, close2, err := wsrpc.Dial(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	if _, err := client2.Stat(ctx, "/a.txt"); err != nil {
		t.Errorf("stat on a new gRPC connection: %v", err)
	}
	closed := make(chan struct{})
	go func() { cs.Close(); close(closed) }()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the handler's context")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}
