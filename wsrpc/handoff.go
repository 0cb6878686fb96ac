package wsrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// A handoff is a connection to the control socket that does not speak
// gRPC: its client (computerfs mcp, spawned by an agent host) hands the
// daemon open files (its stdio) over it with SCM_RIGHTS, and the daemon
// serves them itself, with the store in its own process, instead of
// answering each of the client's calls over the socket. It begins with
// handoffMagic; a gRPC client begins with HTTP/2's preface ("PRI * ..."),
// so the first byte tells them apart. What follows the magic is the
// handler's (package mcpserver's) protocol: this package only sorts the
// connections and owns their handlers' lifetime.
const handoffMagic = "computerfs-handoff/1\n"

// handoffWait bounds how long a new connection may take to send its first
// byte (gRPC clients send their preface at once).
const handoffWait = 10 * time.Second

// A HandoffHandler serves one handoff connection until ctx ends (the
// daemon stops) or its client goes. The connection is checked as every
// connection to the control socket is (the socket is owner-only), and the
// magic has been read from it.
type HandoffHandler func(ctx context.Context, c *net.UnixConn)

// HandleHandoff makes the control socket pass handoff connections to h.
// Until it is called, they are closed unanswered (their clients then
// use gRPC).
func (cs *ControlServer) HandleHandoff(h HandoffHandler) { cs.handoff.Store(&h) }

// DialHandoff connects to the daemon holding workspace ws, with
// DialConn's checks, and starts a handoff: the caller speaks the
// handler's protocol on the connection. A daemon without a handler (or
// one older than handoffs) closes it: the caller sees EOF on its first
// read and can use DialConn instead. No daemon is ErrNoDaemon (wrapped).
func DialHandoff(ctx context.Context, ws string) (*net.UnixConn, error) {
	path, c, _, err := probe(ctx, ws)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, handoffMagic); err != nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return c.(*net.UnixConn), nil
}

// muxListener is the control socket's listener as gRPC sees it: each
// connection it accepts is sorted by its first byte in a goroutine of its
// own (a slow client holds up no other), gRPC's passed on, handoffs
// served by the control server's handler.
type muxListener struct {
	net.Listener
	cs   *ControlServer
	ch   chan accepted
	done chan struct{}
	once sync.Once
	err  error
	// wg counts the goroutines sorting and serving connections, and
	// the accept loop.
	wg sync.WaitGroup
}

type accepted struct {
	c   net.Conn
	err error
}

func newMuxListener(l net.Listener, cs *ControlServer) *muxListener {
	m := &muxListener{Listener: l, cs: cs, ch: make(chan accepted), done: make(chan struct{})}
	m.wg.Add(1)
	go m.loop()
	return m
}

func (m *muxListener) loop() {
	defer m.wg.Done()
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			select {
			case m.ch <- accepted{err: err}:
			case <-m.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // gRPC backs off on a temporary error and accepts again
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.sort(c)
		}()
	}
}

// sort reads c's first byte: gRPC's connections go to Accept with it
// put back, handoffs to the handler.
func (m *muxListener) sort(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(handoffWait))
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		c.Close() // a probe (DialConn's), or a client that said nothing
		return
	}
	if first[0] != handoffMagic[0] {
		c.SetReadDeadline(time.Time{})
		select {
		case m.ch <- accepted{c: &peekedConn{Conn: c, first: first[:]}}:
		case <-m.done:
			c.Close()
		}
		return
	}
	rest := make([]byte, len(handoffMagic)-1)
	_, err := io.ReadFull(c, rest)
	c.SetReadDeadline(time.Time{})
	h := m.cs.handoff.Load()
	uc, ok := c.(*net.UnixConn)
	if err != nil || string(rest) != handoffMagic[1:] || h == nil || !ok {
		c.Close()
		return
	}
	(*h)(m.cs.ctx, uc)
}

func (m *muxListener) Accept() (net.Conn, error) {
	select {
	case a := <-m.ch:
		return a.c, a.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *muxListener) Close() error {
	m.once.Do(func() {
		close(m.done)
		m.err = m.Listener.Close()
	})
	return m.err
}

// peekedConn is a connection whose first bytes were read already: Read
// gives them first.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
