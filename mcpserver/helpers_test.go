package mcpserver_test

// The tests drive the server with the Go SDK's own client: in memory
// against a store in t.TempDir() with the real shell backend, and over
// stdio and HTTP against the computerfs binary, with and without a daemon.
// TestMain builds the binary and the shell plugin once.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binDir holds computerfs and the shell and js plugins, built on first
// use (by bins): a fuzz worker, which runs TestMain too, builds nothing.
var (
	binDir   string
	binsOnce sync.Once
	binsErr  error
)

func TestMain(m *testing.M) {
	*mcpserver.ValidateOutput = true
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// bins builds the binaries once and returns their directory.
func bins(t testing.TB) string {
	t.Helper()
	binsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cfs-mcp-test-")
		if err != nil {
			binsErr = err
			return
		}
		binDir = dir
		for _, b := range []struct{ out, pkg, cgo string }{
			{"computerfs", "../cmd/computerfs", ""},
			{"computerfs-plugin-shell", "../cmd/plugin-shell", "CGO_ENABLED=0"}, // as make builds it
			{"computerfs-plugin-js", "../cmd/plugin-js", "CGO_ENABLED=0"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Env = os.Environ()
			if b.cgo != "" {
				cmd.Env = append(cmd.Env, b.cgo)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				binsErr = fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return binDir
}

// lockedBuf collects logs written from goroutines that may outlive a test.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// local is a server in this process on a new store, with the shell
// backend, and a client connected to it in memory.
type local struct {
	ws  *workspace.WS
	srv *mcpserver.Server
	cs  *mcp.ClientSession
	log *lockedBuf
}

type localOpts struct {
	noExec        bool
	progressEvery time.Duration
	mountPoint    string
	client        *mcp.ClientOptions
}

func newLocal(t testing.TB, o localOpts) *local {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	logs := &lockedBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f, err := fs.Open(filepath.Join(dir, "ws.cfs"), fs.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
	ws := workspace.New(f, workspace.Options{})
	opts := mcpserver.Options{API: ws, Logger: log, ProgressEvery: o.progressEvery, MountPoint: o.mountPoint}
	if !o.noExec {
		rt, err := backends.New(backends.Options{Dirs: []string{bins(t)}, WS: ws, Owner: filepath.Join(dir, "ws.cfs"), Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		opts.Exec = mcpserver.LocalExecutor(rt)
	}
	srv, err := mcpserver.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &local{ws: ws, srv: srv, cs: connectMemory(t, srv, o.client), log: logs}
}

// connectMemory connects a new client session to srv in memory, until
// the test ends.
func connectMemory(t testing.TB, srv *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// put writes a file behind the MCP session's back (another door).
func (l *local) put(t testing.TB, p, content string) {
	t.Helper()
	if _, err := l.ws.WriteFile(context.Background(), p, []byte(content), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
}

func (l *local) get(t *testing.T, p string) string {
	t.Helper()
	b, _, err := l.ws.ReadFile(context.Background(), p, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// call is one tool call's answer: its text, structured content and
// whether it is a tool error.
type call struct {
	text    string
	data    map[string]any
	isError bool
	res     *mcp.CallToolResult
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return toCall(t, res)
}

func toCall(t *testing.T, res *mcp.CallToolResult) call {
	t.Helper()
	c := call{isError: res.IsError, res: res}
	var texts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	c.text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &c.data); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	return c
}

// ok calls a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) call {
	t.Helper()
	c := callTool(t, cs, name, args)
	if c.isError {
		t.Fatalf("%s %v: tool error: %s", name, args, c.text)
	}
	return c
}

// fails calls a tool that must fail with a message containing each of want.
func fails(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, want ...string) call {
	t.Helper()
	c := callTool(t, cs, name, args)
	if !c.isError {
		t.Fatalf("%s %v: succeeded, want an error containing %q: %s", name, args, want, c.text)
	}
	for _, w := range want {
		if !strings.Contains(c.text, w) {
			t.Errorf("%s %v: error %q does not say %q", name, args, c.text, w)
		}
	}
	return c
}
