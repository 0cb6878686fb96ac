package wsrpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// server is a workspace served on its control socket.
type server struct {
	f     *fs.FS
	ws    *workspace.WS
	cs    *wsrpc.ControlServer
	store string
}

// serve opens a fresh workspace and serves it; the cleanup stops the
// server, closes the workspace and checks the store.
func serve(t *testing.T, limit uint64) *server {
	t.Helper()
	store := filepath.Join(t.TempDir(), "ws.cfs")
	f := apitest.OpenFS(t, store, limit)
	ws := workspace.New(f, workspace.Options{})
	cs, err := wsrpc.Listen(store, wsrpc.NewServer(func(context.Context) (*workspace.WS, error) { return ws, nil }), apitest.Logger(t))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(cs.Close)
	return &server{f: f, ws: ws, cs: cs, store: store}
}

// dial connects a client; the cleanup closes it (before the server stops).
func dial(t *testing.T, store string) *wsrpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, closeFn, err := wsrpc.Dial(ctx, store)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		if err := closeFn(); err != nil {
			t.Errorf("close the client: %v", err)
		}
	})
	return client
}

// TestConformance runs the file API's conformance suite across a real
// control socket.
func TestConformance(t *testing.T) {
	apitest.Run(t, func(t *testing.T, limit uint64) apitest.Env {
		s := serve(t, limit)
		return apitest.Env{API: dial(t, s.store), FS: s.f}
	})
}

func TestDialNoDaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := filepath.Join(t.TempDir(), "ws.cfs")
	t.Run("no socket", func(t *testing.T) {
		_, _, err := wsrpc.Dial(ctx, store)
		if !errors.Is(err, wsrpc.ErrNoDaemon) {
			t.Fatalf("dial with no socket: %v, want ErrNoDaemon", err)
		}
	})
	t.Run("dead socket", func(t *testing.T) {
		path, err := wsrpc.SocketPath(store)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		lis.(*net.UnixListener).SetUnlinkOnClose(false)
		lis.Close()
		t.Cleanup(func() { os.Remove(path) })
		if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("the dead socket is not there: %v, %v", fi, err)
		}
		_, _, err = wsrpc.Dial(ctx, store)
		if !errors.Is(err, wsrpc.ErrNoDaemon) {
			t.Fatalf("dial a dead socket: %v, want ErrNoDaemon", err)
		}
		// A daemon replaces the dead socket.
		f := apitest.OpenFS(t, store, 0)
		ws := workspace.New(f, workspace.Options{})
		cs, err := wsrpc.Listen(store, wsrpc.NewServer(func(context.Context) (*workspace.WS, error) { return ws, nil }), apitest.Logger(t))
		if err != nil {
			t.Fatalf("listen over a dead socket: %v", err)
		}
		t.Cleanup(cs.Close)
		c := dial(t, store)
		if _, err := c.Stat(ctx, "/"); err != nil {
			t.Fatalf("stat through the new socket: %v", err)
		}
	})
	t.Run("after close", func(t *testing.T) {
		s := serve(t, 0)
		s.cs.Close()
		_, _, err := wsrpc.Dial(ctx, s.store)
		if !errors.Is(err, wsrpc.ErrNoDaemon) {
			t.Fatalf("dial after the server closed: %v, want ErrNoDaemon", err)
		}
	})
}

func TestSocketMode(t *testing.T) {
	s := serve(t, 0)
	want, err := wsrpc.SocketPath(s.store)
	if err != nil {
		t.Fatal(err)
	}
	if s.cs.Path() != want {
		t.Errorf("socket at %s, want %s", s.cs.Path(), want)
	}
	fi, err := os.Lstat(s.cs.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket: %v", s.cs.Path(), fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %o, want 600", perm)
	}
	s.cs.Close()
	if _, err := os.Lstat(s.cs.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlives Close: %v", err)
	}
}

func TestConcurrentClients(t *testing.T) {
	s := serve(t, 0)
	const clients = 16
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, s.store) // separate connections
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.NewChaCha8([32]byte{byte(i)})
			p := fmt.Sprintf("/client%02d/file", i)
			for round := range 3 {
				data := make([]byte, 1+rng.Uint64()%(300<<10))
				rng.Read(data)
				res, err := c.Write(ctx, p, bytes.NewReader(data), workspace.WriteOptions{Parents: true})
				if err != nil {
					errs <- fmt.Errorf("client %d round %d: write: %v", i, round, err)
					return
				}
				if res.Hash != workspace.Hash(data) || res.Size != int64(len(data)) {
					errs <- fmt.Errorf("client %d round %d: write result %+v", i, round, res)
					return
				}
				rd, err := c.Read(ctx, p, workspace.ReadOptions{})
				if err != nil {
					errs <- fmt.Errorf("client %d round %d: read: %v", i, round, err)
					return
				}
				got, err := io.ReadAll(rd)
				rd.Close()
				if err != nil || !bytes.Equal(got, data) || rd.Hash() != res.Hash {
					errs <- fmt.Errorf("client %d round %d: read %d bytes (%v), wrote %d", i, round, len(got), err, len(data))
					return
				}
				if _, err := c.List(ctx, "/", workspace.ListOptions{}); err != nil {
					errs <- fmt.Errorf("client %d round %d: list: %v", i, round, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every client's file is there, seen by the server too.
	res, err := s.ws.List(ctx, "/", workspace.ListOptions{})
	if err != nil || len(res.Entries) != clients {
		t.Errorf("after the clients: %d entries, %v", len(res.Entries), err)
	}
}

// TestNonUTF8Names checks that names made through the FS (the mount
// allows any bytes) that are not UTF-8 travel as U+FFFD instead of
// breaking the call.
func TestNonUTF8Names(t *testing.T) {
	s := serve(t, 0)
	c := dial(t, s.store)
	ctx := context.Background()
	mk := func(parent fs.Ino, name string, mode uint32, data string) fs.Attr {
		t.Helper()
		a, err := s.f.Create(fs.Caller{}, parent, name, fs.NewNode{Mode: mode})
		if err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
		if data != "" {
			if _, err := s.f.Open(a.Ino); err != nil {
				t.Fatal(err)
			}
			if _, err := s.f.Write(ctx, a.Ino, 0, []byte(data), false); err != nil {
				t.Fatal(err)
			}
			s.f.Release(a.Ino)
		}
		return a
	}
	mk(fs.RootIno, "bad\xffname", syscall.S_IFREG|0o644, "a needle here\n")
	d := mk(fs.RootIno, "dir\xfe", syscall.S_IFDIR|0o755, "")
	mk(d.Ino, "inner", syscall.S_IFREG|0o644, "another needle\n")
	mk(fs.RootIno, "good", syscall.S_IFREG|0o644, "needle\xff in bad text\n")

	list, err := c.List(ctx, "/", workspace.ListOptions{Recursive: true})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var paths []string
	for _, e := range list.Entries {
		paths = append(paths, e.Path)
	}
	want := []string{"/bad\uFFFDname", "/dir\uFFFD", "/dir\uFFFD/inner", "/good"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("list: %q, want %q", paths, want)
	}
	if list.Entries[0].Name != "bad\uFFFDname" {
		t.Errorf("name %q", list.Entries[0].Name)
	}

	g, err := c.Grep(ctx, "/", workspace.GrepOptions{Pattern: "needle"})
	if err != nil {
		t.Fatalf("grep: %v", err)
	}
	var lines []string
	for _, l := range g.Lines {
		lines = append(lines, fmt.Sprintf("%s:%d:%s", l.Path, l.Line, l.Text))
	}
	wantLines := []string{"/bad\uFFFDname:1:a needle here", "/dir\uFFFD/inner:1:another needle", "/good:1:needle\uFFFD in bad text"}
	if strings.Join(lines, "|") != strings.Join(wantLines, "|") {
		t.Errorf("grep: %q, want %q", lines, wantLines)
	}
	files, err := c.Grep(ctx, "/", workspace.GrepOptions{Pattern: "needle", Mode: "files"})
	if err != nil || len(files.Files) != 3 || files.Files[0].Path != "/bad\uFFFDname" {
		t.Errorf("grep files: %+v, %v", files.Files, err)
	} else if got, want := files.Files[2].Mtime, list.Entries[3].Mtime; !got.Equal(want) || got.IsZero() {
		// Each file's time comes with it, for callers that sort by it.
		t.Errorf("grep files: %s's mtime %v, want %v (as listed)", files.Files[2].Path, got, want)
	}
	gl, err := c.Glob(ctx, "**", workspace.GlobOptions{})
	if err != nil || len(gl.Paths) != 4 || gl.Paths[1] != "/dir\uFFFD" {
		t.Errorf("glob: %q, %v", gl.Paths, err)
	}
	tr, err := c.Tree(ctx, "/", workspace.TreeOptions{})
	if err != nil || len(tr.Children) != 3 || tr.Children[0].Name != "bad\uFFFDname" {
		t.Errorf("tree: %+v, %v", tr, err)
	}
	ch, err := c.Changes(ctx, 0, 0)
	if err != nil {
		t.Errorf("changes: %v", err)
	}
	for _, x := range ch.Changes {
		if strings.Contains(x.Path, "\xff") || strings.Contains(x.Path, "\xfe") {
			t.Errorf("change path %q is not UTF-8", x.Path)
		}
	}
	// The server side still holds the real names.
	res, err := s.ws.List(ctx, "/", workspace.ListOptions{})
	if err != nil || len(res.Entries) != 3 || res.Entries[0].Name != "bad\xffname" {
		t.Errorf("in-process list: %+v, %v", res.Entries, err)
	}
}
