package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"testing"
	"time"

	cfs "github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLsBreakdown splits a warm ls call through a daemon into its parts,
// each measured alone in this process (no stdio): the file API's List
// over the daemon's socket; the ls tool on a daemon client (the SDK's
// in-memory transport, client and server); and the ls tool on a store
// this process holds. CFS_MCP_PROFILE=FILE writes a CPU profile of the
// ls calls on the daemon client.
//
//	CFS_MCP_BENCH=1 [CFS_MCP_BENCH_N=2000] go test -run TestLsBreakdown -v ./mcpserver
func TestLsBreakdown(t *testing.T) {
	if os.Getenv("CFS_MCP_BENCH") != "1" {
		t.Skip("a benchmark: set CFS_MCP_BENCH=1")
	}
	*mcpserver.ValidateOutput = false
	t.Cleanup(func() { *mcpserver.ValidateOutput = true })
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("CFS_MCP_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	home, wsPath := binWorkspace(t)
	f, err := cfs.Open(wsPath, cfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local := workspace.New(f, workspace.Options{})
	for i := range 19 {
		if _, err := local.WriteFile(ctx, fmt.Sprintf("/workspace/f%02d.go", i), make([]byte, 1000+i*100), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	startServe(t, home, wsPath)
	t.Setenv("COMPUTERFS_HOME", home)
	client, closeConn, err := wsrpc.Dial(ctx, wsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()

	// The same tree in a store this process holds.
	f2, err := cfs.Open(wsPath+".copy", cfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	own := workspace.New(f2, workspace.Options{})
	for i := range 19 {
		if _, err := own.WriteFile(ctx, fmt.Sprintf("/workspace/f%02d.go", i), make([]byte, 1000+i*100), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}

	session := func(api workspace.API) *mcp.ClientSession {
		srv, err := mcpserver.New(ctx, mcpserver.Options{API: api})
		if err != nil {
			t.Fatal(err)
		}
		return connectMemory(t, srv, nil)
	}
	viaDaemon, viaStore := session(client), session(own)
	ls := func(cs *mcp.ClientSession) func() error {
		return func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"path": "/workspace"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("%v", res.Content)
			}
			return err
		}
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"List over the daemon's socket", func() error {
			_, err := client.List(ctx, "/workspace", workspace.ListOptions{Limit: 1000})
			return err
		}},
		{"ls tool, daemon client", ls(viaDaemon)},
		{"ls tool, store in process", ls(viaStore)},
	}
	d := make([][]time.Duration, len(steps))
	var prof *os.File
	if p := os.Getenv("CFS_MCP_PROFILE"); p != "" {
		if prof, err = os.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := -100; i < n; i++ {
		for k, s := range steps {
			if i == 0 && k == 1 && prof != nil {
				pprof.StartCPUProfile(prof)
			}
			t0 := time.Now()
			if err := s.f(); err != nil {
				t.Fatal(err)
			}
			if i >= 0 {
				d[k] = append(d[k], time.Since(t0))
			}
		}
	}
	if prof != nil {
		pprof.StopCPUProfile()
		prof.Close()
	}
	for k, s := range steps {
		sort.Slice(d[k], func(i, j int) bool { return d[k][i] < d[k][j] })
		t.Logf("%-30s p50 %6.3f ms  p99 %6.3f ms", s.name, float64(d[k][n/2])/1e6, float64(d[k][n*99/100])/1e6)
	}
}
