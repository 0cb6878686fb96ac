package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPHandler serves the MCP streamable HTTP transport, every request
// carrying "Authorization: Bearer TOKEN" or refused (401). Each client
// session has its own read record, as over stdio.
func (s *Server) HTTPHandler(token string) http.Handler {
	// Idle sessions end after a day: an agent's session may wait on its
	// user for hours, and what a session holds (its read record) is small.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: s.log, SessionTimeout: 24 * time.Hour})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="computerfs"`)
			http.Error(w, "missing or wrong bearer token (Authorization: Bearer TOKEN, from --token-file or the token printed at start)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Listen listens on addr for ServeHTTP: loopback addresses only, unless
// allowRemote (then anyone who can reach the port and has the token may
// read, change and run everything in the workspace).
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT such as 127.0.0.1:8765: %w", addr, err)
	}
	if !allowRemote && !isLoopback(host) {
		return nil, fmt.Errorf("--http %q: not a loopback address; the MCP server gives whoever holds the token the whole workspace and exec, so it listens on 127.0.0.1 or ::1 unless --allow-remote says otherwise", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP serves the handler on ln until ctx ends, then shuts down,
// giving requests in flight a few seconds.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, token string) error {
	// Requests live in a context that ends at shutdown, so that the
	// streams clients keep open (server-sent events) end with it.
	base, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer endRequests()
	srv := &http.Server{Handler: s.HTTPHandler(token), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	endRequests()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		srv.Close()
		err = nil
	}
	return err
}

// Token reads the bearer token from file, or makes a random one when
// file is "". A token file must be private to its owner: it is a key to
// the whole workspace.
func Token(file string) (token string, generated bool, err error) {
	if file == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", false, fmt.Errorf("make a token: %w", err)
		}
		return hex.EncodeToString(b), true, nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", false, fmt.Errorf("--token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("--token-file %s: mode %04o lets others read it: chmod 600 it", file, fi.Mode().Perm())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false, fmt.Errorf("--token-file: %w", err)
	}
	token = strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", false, fmt.Errorf("--token-file %s: the token must be at least 16 characters", file)
	}
	return token, false, nil
}
