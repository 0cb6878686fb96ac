package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestExec(t *testing.T) {
	l := newLocal(t, localOpts{})
	l.put(t, "/src/in.txt", "b\na\nc\n")
	tests := []struct {
		name string
		args map[string]any
		want []string // in the text
		data map[string]any
	}{
		{name: "stdout and status", args: map[string]any{"command": "sort src/in.txt"},
			want: []string{"a\nb\nc\n[exit status 0; backend shell ("}, data: map[string]any{"exit_code": 0.0, "backend": "shell", "stdout": "a\nb\nc\n"}},
		{name: "cwd", args: map[string]any{"command": "pwd; ls", "cwd": "/src"}, want: []string{"/src\nin.txt\n"}},
		{name: "env", args: map[string]any{"command": `echo "$GREETING"`, "env": map[string]any{"GREETING": "hi"}}, want: []string{"hi\n"}},
		{name: "stdin", args: map[string]any{"command": "tr a-z A-Z", "stdin": "shout\n"}, want: []string{"SHOUT\n"}},
		{name: "no stdin", args: map[string]any{"command": "cat; echo done"}, want: []string{"done\n"}},
		{name: "stderr and failure", args: map[string]any{"command": "echo oops >&2; exit 3"},
			want: []string{"[stderr]\noops\n[exit status 3;"}, data: map[string]any{"exit_code": 3.0, "stderr": "oops\n"}},
		{name: "files changed", args: map[string]any{"command": "echo new > /src/out.txt; rm /src/in.txt", "backend": "shell"},
			want: []string{"; 2 files changed: /src/out.txt (create)", "/src/in.txt (remove)"}},
		{name: "not a shell command", args: map[string]any{"command": "git status"},
			want: []string{"[exit status 127;", "real binaries (git, compilers, package managers) run on the container backend, which is not installed here"}},
		{name: "timeout", args: map[string]any{"command": "sleep 5", "timeout": 300},
			want: []string{"[exit status 124: timed out"}, data: map[string]any{"timed_out": true}},
		{name: "output cut", args: map[string]any{"command": "seq 1 20000"},
			want: []string{"1\n2\n3\n", "[stdout cut: 108894 bytes in all;", "19999\n20000\n"}, data: map[string]any{"output_cut": true, "stdout_bytes": 108894.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok(t, l.cs, "exec", tc.args)
			for _, w := range tc.want {
				if !strings.Contains(c.text, w) {
					t.Errorf("text lacks %q:\n%.3000s", w, c.text)
				}
			}
			for k, v := range tc.data {
				if fmt.Sprint(c.data[k]) != fmt.Sprint(v) {
					t.Errorf("structured %s = %v, want %v", k, c.data[k], v)
				}
			}
		})
	}
	fails(t, l.cs, "exec", map[string]any{"command": "true", "backend": "cobol"}, "backend")
	t.Run("js", func(t *testing.T) {
		for _, args := range []map[string]any{
			{"command": "export default (i) => ({doubled: i.n * 2})", "input": map[string]any{"n": 21}, "backend": "js"},
			{"command": "export default (i) => ({doubled: i.n * 2})", "input": map[string]any{"n": 21}}, // routed
		} {
			c := ok(t, l.cs, "exec", args)
			if c.data["backend"] != "js" || fmt.Sprint(c.data["result"]) != "map[doubled:42]" || !strings.Contains(c.text, `[result] {"doubled":42}`) {
				t.Errorf("%v: %s %v", args, c.text, c.data)
			}
		}
		c := ok(t, l.cs, "exec", map[string]any{"command": "export default () => 'x'.repeat(50000)", "backend": "js"})
		if !strings.Contains(c.text, "[result cut: 50002 bytes in all;") || len(c.text) > 25000 {
			t.Errorf("a large result: %d bytes of text, ending %q", len(c.text), c.text[max(0, len(c.text)-200):])
		}
		if r, _ := c.data["result"].(string); len(r) != 50000 {
			t.Errorf("the structured result: %d bytes", len(r))
		}
		c = ok(t, l.cs, "exec", map[string]any{"command": "import { readFile } from 'node:fs/promises';\nexport default async () => (await readFile('/src/out.txt', 'utf8')).trim()"})
		if c.data["result"] != "new" {
			t.Errorf("a module reading the workspace: %s", c.text)
		}
	})
	fails(t, l.cs, "exec", map[string]any{"command": " "}, "command is empty")
}

// A client that cancels a running exec ends the command.
func TestExecCancel(t *testing.T) {
	l := newLocal(t, localOpts{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "sleep 30"}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("cancelled call returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	// The server ended the command: the log says so, well before 30 s.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(l.log.String(), "why_ended=cancelled") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(l.log.String(), "why_ended=cancelled") {
		t.Errorf("no sign the exec was cancelled in the log:\n%s", l.log.String())
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
	// The session goes on.
	c := ok(t, l.cs, "exec", map[string]any{"command": "echo after"})
	if !strings.HasPrefix(c.text, "after\n") {
		t.Errorf("exec after a cancel: %s", c.text)
	}
}

// A long exec reports progress to a client that asked for it.
func TestExecProgress(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	l := newLocal(t, localOpts{progressEvery: 50 * time.Millisecond, client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		},
	}})
	p := &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "echo start; sleep 0.5; echo end"}}
	p.SetProgressToken("tok-1")
	res, err := l.cs.CallTool(t.Context(), p)
	if err != nil || res.IsError {
		t.Fatalf("exec: %v %v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("%d progress notifications in 0.5 s at 50 ms, want several", len(got))
	}
	for i, n := range got {
		if n.ProgressToken != "tok-1" || !strings.Contains(n.Message, "running for") {
			t.Errorf("notification %d: %+v", i, n)
		}
		if i > 0 && n.Progress <= got[i-1].Progress {
			t.Errorf("progress went from %v to %v", got[i-1].Progress, n.Progress)
		}
	}
	// Without a token, none.
	before := len(got)
	mu.Unlock()
	ok(t, l.cs, "exec", map[string]any{"command": "sleep 0.2"})
	mu.Lock()
	if len(got) != before {
		t.Errorf("progress sent without a token")
	}
}

// failingDescribe is an executor whose backends do not describe
// themselves (an older daemon, say) but that runs execs.
type failingDescribe struct{ mcpserver.Executor }

func (failingDescribe) Backends(context.Context) ([]*pb.BackendInfo, error) {
	return nil, errors.New("the daemon does not serve this call")
}

// A server whose backends cannot be listed still serves exec, and its
// schema says why it lists none.
func TestExecWithoutDescriptions(t *testing.T) {
	dir := t.TempDir()
	f, err := fs.Open(filepath.Join(dir, "ws.cfs"), fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	rt, err := backends.New(backends.Options{Dirs: []string{bins(t)}, WS: ws, Owner: filepath.Join(dir, "ws.cfs"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv, err := mcpserver.New(t.Context(), mcpserver.Options{API: ws, Exec: failingDescribe{mcpserver.LocalExecutor(rt)}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectMemory(t, srv, nil)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "exec" && !strings.Contains(tl.Description, "the backends could not be listed: the daemon does not serve this call") {
			t.Errorf("exec's description: %s", tl.Description)
		}
	}
	c := ok(t, cs, "exec", map[string]any{"command": "echo still runs"})
	if !strings.HasPrefix(c.text, "still runs\n") {
		t.Errorf("exec: %s", c.text)
	}
}
