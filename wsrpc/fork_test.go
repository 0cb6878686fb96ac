package wsrpc_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serveForks serves a new workspace whose file API honours the fork
// header, with the daemon service, and dials it.
func serveForks(t *testing.T, limit uint64) (*fs.FS, *workspace.WS, string) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "ws.cfs")
	f := apitest.OpenFS(t, store, limit)
	ws := workspace.New(f, workspace.Options{})
	ds := wsrpc.NewDaemonServer(wsrpc.DaemonOptions{FS: f, WS: ws, Started: time.Now()})
	cs, err := wsrpc.Listen(store, wsrpc.NewServer(wsrpc.WithForks(func(context.Context) (*workspace.WS, error) { return ws, nil })), apitest.Logger(t), ds.Register)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(cs.Close)
	return f, ws, store
}

// TestConformanceInFork runs the file API's conformance suite on a fork
// of a workspace, across the control socket (the fork header on every
// call): a fork is a whole workspace.
func TestConformanceInFork(t *testing.T) {
	apitest.Run(t, func(t *testing.T, limit uint64) apitest.Env {
		f, ws, store := serveForks(t, limit)
		fi, err := ws.CreateFork(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		fk, err := f.OpenFork(fi.ID)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := wsrpc.DialConn(context.Background(), store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return apitest.Env{API: wsrpc.NewForkClient(conn, fi.ID), FS: fk}
	})
}

// TestForkRPC: the daemon's Fork calls (create, list, changes, merge,
// discard) and the file API on a fork across the socket; a merge over a
// conflict is FAILED_PRECONDITION naming the file.
func TestForkRPC(t *testing.T) {
	ctx := context.Background()
	_, _, store := serveForks(t, 0)
	conn, err := wsrpc.DialConn(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d, c := wsrpc.NewDaemonClient(conn), wsrpc.NewClient(conn)
	put := func(api workspace.API, p, data string) {
		t.Helper()
		if _, err := api.Write(ctx, p, strings.NewReader(data), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(api workspace.API, p string) string {
		t.Helper()
		rd, err := api.Read(ctx, p, workspace.ReadOptions{})
		if err != nil {
			return err.Error()
		}
		defer rd.Close()
		b, _ := io.ReadAll(rd)
		return string(b)
	}
	put(c, "/a.txt", "base\n")
	a, err := d.CreateFork(ctx, "a")
	if err != nil || a.ID != "a" {
		t.Fatalf("create: %+v %v", a, err)
	}
	b, err := d.CreateFork(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateFork(ctx, "a"); !errors.Is(err, syscall.EEXIST) && !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second fork a: %v", err)
	}
	fa, fb := wsrpc.NewForkClient(conn, "a"), wsrpc.NewForkClient(conn, b.ID)
	put(fa, "/a.txt", "from a\n")
	put(fa, "/new/in-a.txt", "a\n")
	put(fb, "/a.txt", "from b\n")
	if got := read(c, "/a.txt"); got != "base\n" {
		t.Errorf("the workspace reads %q", got)
	}
	if got := read(fb, "/a.txt"); got != "from b\n" {
		t.Errorf("fork b reads %q", got)
	}
	forks, err := d.Forks(ctx)
	if err != nil || len(forks) != 2 {
		t.Fatalf("list: %+v %v", forks, err)
	}
	ch, err := d.ForkChanges(ctx, "a")
	if err != nil || len(ch) != 3 {
		t.Errorf("changes of a: %+v %v", ch, err)
	}
	if _, err := d.MergeFork(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := read(c, "/new/in-a.txt"); got != "a\n" {
		t.Errorf("after the merge the workspace reads %q", got)
	}
	if _, err := d.MergeFork(ctx, b.ID); err == nil || !strings.Contains(err.Error(), "/a.txt") {
		t.Errorf("merge of b: %v", err)
	}
	_, err = pb.NewDaemonClient(conn).Fork(ctx, &pb.ForkRequest{Op: "merge", Id: b.ID})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("merge of b: code %v", status.Code(err))
	}
	if _, err := d.DiscardFork(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := fb.Stat(ctx, "/a.txt"); err == nil || !strings.Contains(err.Error(), "no such fork") {
		t.Errorf("the file API on a discarded fork: %v", err)
	}
}
