package mcpserver_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Benchmarks of single tool calls in process (in-memory transport, the
// store opened here): the server's own cost, without a process boundary.
func benchTool(b *testing.B, name string, args func(i int) map[string]any) {
	*mcpserver.ValidateOutput = false
	b.Cleanup(func() { *mcpserver.ValidateOutput = true })
	l := newLocal(b, localOpts{noExec: true})
	src, err := os.ReadFile("../workspace/walk.go")
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"/workspace/walk.go", "/workspace/a.go", "/workspace/b.go"} {
		l.put(b, p, string(src))
	}
	for i := range 19 {
		l.put(b, fmt.Sprintf("/wide/file%02d.go", i), string(src[:1000+i*100]))
	}
	for i := range 1000 {
		l.put(b, fmt.Sprintf("/thousand/file%04d.txt", i), string(src[:i]))
	}
	if _, err := l.ws.Mkdir(b.Context(), "/empty", workspace.MkdirOptions{}); err != nil {
		b.Fatal(err)
	}
	l.cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"file_path": "/workspace/walk.go"}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := l.cs.CallTool(b.Context(), &mcp.CallToolParams{Name: name, Arguments: args(i)})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	benchTool(b, "read", func(int) map[string]any { return map[string]any{"file_path": "/workspace/walk.go"} })
}

func BenchmarkEdit(b *testing.B) {
	benchTool(b, "edit", func(i int) map[string]any {
		o, n := `const op = "glob"`, `const op = "glob" // x`
		if i%2 == 1 {
			o, n = n, o
		}
		return map[string]any{"file_path": "/workspace/walk.go", "old_string": o, "new_string": n}
	})
}

func BenchmarkLs(b *testing.B) {
	benchTool(b, "ls", func(int) map[string]any { return map[string]any{"path": "/workspace"} })
}

func BenchmarkWrite(b *testing.B) {
	benchTool(b, "write", func(i int) map[string]any {
		return map[string]any{"file_path": "/w.txt", "content": strings.Repeat(strconv.Itoa(i%10), 2048)}
	})
}

func BenchmarkGlob(b *testing.B) {
	benchTool(b, "glob", func(int) map[string]any { return map[string]any{"pattern": "**/*.go"} })
}

// BenchmarkLsWide lists a directory of 19 files (as the side-by-side
// bench's ls does), BenchmarkLsEmpty an empty one: their difference is
// what the entries cost.
func BenchmarkLsWide(b *testing.B) {
	benchTool(b, "ls", func(int) map[string]any { return map[string]any{"path": "/wide"} })
}

func BenchmarkLsEmpty(b *testing.B) {
	benchTool(b, "ls", func(int) map[string]any { return map[string]any{"path": "/empty"} })
}

// BenchmarkLs1000 lists a directory of 1000 files (ls's page).
func BenchmarkLs1000(b *testing.B) {
	benchTool(b, "ls", func(int) map[string]any { return map[string]any{"path": "/thousand"} })
}
