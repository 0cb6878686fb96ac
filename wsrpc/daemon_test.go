package wsrpc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serveDaemon serves a fresh workspace with the Daemon service, with an
// exec log of execs records, and returns its client.
func serveDaemon(t *testing.T, execs int) (*wsrpc.DaemonClient, *fs.FS, string) {
	t.Helper()
	store := filepath.Join(t.TempDir(), "ws.cfs")
	f := apitest.OpenFS(t, store, 0)
	ws := workspace.New(f, workspace.Options{})
	execLog := store + ".execs.jsonl"
	var log strings.Builder
	for i := range execs {
		fmt.Fprintf(&log, `{"id":"x%d","backend":"shell","exit":0}`+"\n", i)
	}
	log.WriteString(`{"id":"half-writ`) // a record being written: left out
	if err := os.WriteFile(execLog, []byte(log.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Minute)
	ds := wsrpc.NewDaemonServer(wsrpc.DaemonOptions{
		FS: f, Mountpoint: "/mnt/x", Started: started, CommitInterval: 100 * time.Millisecond, ExecLog: execLog,
		Backends: func(context.Context) []*pb.BackendInfo {
			return []*pb.BackendInfo{{Id: "shell", State: "ready", Pid: 42, Restarts: 1}}
		},
		Fuse: func() wsrpc.FuseStats {
			return wsrpc.FuseStats{Ops: []*pb.FuseOp{{Op: "fsync", Count: 2, TotalNs: 4e6}, {Op: "write", Count: 5}}, WrittenBytes: 10, LastFsync: time.Millisecond}
		},
	})
	cs, err := wsrpc.Listen(store, wsrpc.NewServer(func(context.Context) (*workspace.WS, error) { return ws, nil }), apitest.Logger(t), ds.Register)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(cs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, closeFn, err := wsrpc.DialDaemon(ctx, store)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { closeFn() })
	return c, f, store
}

func TestDaemonStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		logged, ask int
		want        []string // ids
	}{
		{"few", 3, 0, []string{"x0", "x1", "x2"}},
		{"the last ten", 12, 0, []string{"x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11"}},
		{"the last two", 12, 2, []string{"x10", "x11"}},
		{"none", 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, store := serveDaemon(t, tc.logged)
			st, err := c.Status(ctx, tc.ask)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pid != int64(os.Getpid()) || st.Mountpoint != "/mnt/x" || st.Store != store || !strings.HasSuffix(st.Socket, ".sock") {
				t.Errorf("status: pid %d, mountpoint %q, store %q, socket %q", st.Pid, st.Mountpoint, st.Store, st.Socket)
			}
			if up := time.Since(time.Unix(0, st.StartedUnixNs)); up < time.Minute || up > time.Hour {
				t.Errorf("uptime %v", up)
			}
			if st.FileBytes <= 0 || st.DiskBytes <= 0 || st.LimitBytes != fs.DefaultLimit || st.FormatVersion != chunkstore.FormatVersion || st.ChunkSize != 1<<20 {
				t.Errorf("status of the store: %+v", st)
			}
			if cm := st.Commit; cm.IntervalNs != int64(100*time.Millisecond) || cm.Fsyncs != 2 || cm.FsyncTotalNs != 4e6 || cm.LastFsyncNs != int64(time.Millisecond) {
				t.Errorf("commit: %+v", cm)
			}
			if len(st.Backends) != 1 || st.Backends[0].Pid != 42 || st.FuseWrittenBytes != 10 || len(st.Fuse) != 2 {
				t.Errorf("backends %v, fuse %v", st.Backends, st.Fuse)
			}
			var ids []string
			for _, e := range st.Execs {
				id, _, _ := strings.Cut(strings.TrimPrefix(e, `{"id":"`), `"`)
				ids = append(ids, id)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Errorf("execs %v, want %v", ids, tc.want)
			}
		})
	}
}

// TestDaemonMaintenance runs stats, fsck, gc and limit through the
// daemon on a workspace it writes to meanwhile.
func TestDaemonMaintenance(t *testing.T) {
	ctx := context.Background()
	c, f, _ := serveDaemon(t, 0)
	ws := workspace.New(f, workspace.Options{})
	data := strings.Repeat("computerfs ", 300000) // 3.3 MB, compressible
	for i := range 3 {
		if _, err := ws.Write(ctx, fmt.Sprintf("/f%d", i), strings.NewReader(data), workspace.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Not synced: the calls commit it first.
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Inodes != 4 || info.FileBytes != 3*uint64(len(data)) || info.Chunks.LogicalBytes != 3*uint64(len(data)) || info.Chunks.StoredBytes == 0 || info.Chunks.StoredBytes >= info.Chunks.UniqueBytes {
		t.Errorf("stats: %+v", info)
	}
	rep, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Inodes != 4 || rep.Chunks != info.Chunks {
		t.Errorf("fsck: %+v", rep)
	}
	gc, err := c.GC(ctx)
	if err != nil || *gc != (fs.GCReport{}) {
		t.Errorf("gc of a clean store: %+v, %v", gc, err)
	}
	limit, used, err := c.Limit(ctx, nil)
	if err != nil || limit != fs.DefaultLimit || used != info.Chunks.UniqueBytes {
		t.Errorf("limit: %d, %d, %v; want %d, %d", limit, used, err, uint64(fs.DefaultLimit), info.Chunks.UniqueBytes)
	}
	for _, tc := range []struct {
		set     uint64
		wantErr string
	}{
		{set: 1 << 30},
		{set: 1 << 10, wantErr: "below the"},
		{set: 0, wantErr: "below the"},
	} {
		got, _, err := c.Limit(ctx, &tc.set)
		var ce *wsrpc.CallError
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.set):
			t.Errorf("set limit %d: got %d, %v", tc.set, got, err)
		case tc.wantErr != "" && (!errors.As(err, &ce) || ce.Code != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "rpc error")):
			t.Errorf("set limit %d: error %v, want one saying %q without gRPC framing", tc.set, err, tc.wantErr)
		}
	}
	if limit, _ := f.Limit(); limit != 1<<30 {
		t.Errorf("the FS's limit is %d after the refusals, want 1 GiB", limit)
	}
}

func TestPlainError(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), "plain"},
		{status.Error(codes.InvalidArgument, "too small"), "too small"},
		{status.Error(codes.Unavailable, "connection closed"), "the daemon cannot be reached (did it stop?): connection closed"},
		{status.Error(codes.Unimplemented, "unknown service computerfs.v1.Daemon"), "the daemon does not serve this call"},
	} {
		got := wsrpc.PlainError(tc.in)
		if tc.in == nil {
			if got != nil {
				t.Errorf("PlainError(nil) = %v", got)
			}
			continue
		}
		if !strings.HasPrefix(got.Error(), tc.want) || strings.Contains(got.Error(), "rpc error") {
			t.Errorf("PlainError(%v) = %q, want %q...", tc.in, got, tc.want)
		}
	}
}
