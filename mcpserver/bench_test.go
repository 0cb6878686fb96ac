package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	cfs "github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPBench measures the same calls through computerfs mcp (a warm
// daemon holding the workspace) and through the reference MCP filesystem
// server (@modelcontextprotocol/server-filesystem, from npm, on an ext4
// copy of the same tree), both spawned over stdio and driven by the Go
// SDK's client, and prints p50 and p99 per tool as a Markdown table.
//
//	CFS_MCP_BENCH=1 [CFS_MCP_BENCH_N=300] [CFS_MCP_BENCH_OUT=table.md] go test -run TestMCPBench -v ./mcpserver
//
// CFS_MCP_BENCH_AB=BIN adds another computerfs binary (another build's)
// as a fourth server, its mcp on the same daemon, taking its turn with
// the others: a second table sets its p50 beside this build's, each
// call of the two under the same load.
// CFS_MCP_BENCH_ONLY=WORD measures only the rows whose tool has WORD.
// abPath is the file the other build's session edits or writes in
// place of p.
func abPath(p string) string { return strings.TrimSuffix(p, path.Ext(p)) + ".ab" + path.Ext(p) }

func TestMCPBench(t *testing.T) {
	if os.Getenv("CFS_MCP_BENCH") != "1" {
		t.Skip("a benchmark: set CFS_MCP_BENCH=1")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("CFS_MCP_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	dir, node := npmInstall(t, "refbench", true)
	// The tree: this repository's source, into a host directory and into
	// a workspace.
	host := filepath.Join(t.TempDir(), "tree")
	home, wsPath := binWorkspace(t)
	f, err := cfs.Open(wsPath, cfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := workspace.New(f, workspace.Options{})
	files := 0
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", p)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !d.Type().IsRegular() || !(strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(host, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(host, rel), b, 0o644); err != nil {
			return err
		}
		files++
		_, err = w.WriteFile(context.Background(), "/"+filepath.ToSlash(rel), b, workspace.WriteOptions{Parents: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// An empty directory: ls of it is a call's floor, each server's
	// own cost of a request and its answer.
	if err := os.Mkdir(filepath.Join(host, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Mkdir(context.Background(), "/empty", workspace.MkdirOptions{}); err != nil {
		t.Fatal(err)
	}
	// A wide directory: as many files as ls answers (lsLimit), where
	// the entries' cost weighs most.
	if err := os.Mkdir(filepath.Join(host, "wide"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		name := fmt.Sprintf("/wide/file%04d.txt", i)
		b := []byte(strings.Repeat("x", i))
		if err := os.WriteFile(filepath.Join(host, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteFile(context.Background(), name, b, workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The other build's own copy of the file edited (two sessions editing
	// one file would fail each other's compare-and-swap).
	if b, err := os.ReadFile(filepath.Join(host, "workspace/walk.go")); err != nil {
		t.Fatal(err)
	} else if _, err := w.WriteFile(context.Background(), abPath("/workspace/walk.go"), b, workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A copy of the store for a computerfs mcp that opens it itself.
	localWS := filepath.Join(t.TempDir(), "local.cfs")
	if b, err := os.ReadFile(wsPath); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(localWS, b, 0o600); err != nil {
		t.Fatal(err)
	}
	startServe(t, home, wsPath)

	connect := func(cmd *exec.Cmd) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ours := exec.Command(filepath.Join(bins(t), "computerfs"), "mcp", "-w", wsPath)
	ours.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	cfsSession := connect(ours)
	here := exec.Command(filepath.Join(bins(t), "computerfs"), "mcp", "-w", localWS)
	here.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	localSession := connect(here)
	var abSession *mcp.ClientSession
	if bin := os.Getenv("CFS_MCP_BENCH_AB"); bin != "" {
		ab := exec.Command(bin, "mcp", "-w", wsPath)
		ab.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
		abSession = connect(ab)
	}
	ref := exec.Command(node, filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), host)
	refSession := connect(ref)

	const file = "workspace/walk.go"
	size, _ := os.Stat(filepath.Join(host, file))
	ok(t, cfsSession, "read", map[string]any{"file_path": "/" + file}) // edit needs it
	ok(t, localSession, "read", map[string]any{"file_path": "/" + file})
	if abSession != nil {
		ok(t, abSession, "read", map[string]any{"file_path": abPath("/" + file)})
	}
	type step func(i int) (string, map[string]any)
	toggle := func(i int) (string, string) {
		if i%2 == 0 {
			return "const op = \"glob\"", "const op = \"glob\" // benched"
		}
		return "const op = \"glob\" // benched", "const op = \"glob\""
	}
	small, _ := os.Stat(filepath.Join(host, "workspace/api.go"))
	listed, _ := os.ReadDir(filepath.Join(host, "workspace"))
	rows := []struct {
		tool     string
		cfs, ref step
	}{
		{"read (workspace/api.go, " + strconv.FormatInt(small.Size(), 10) + " bytes)",
			func(int) (string, map[string]any) { return "read", map[string]any{"file_path": "/workspace/api.go"} },
			func(int) (string, map[string]any) {
				return "read_text_file", map[string]any{"path": filepath.Join(host, "workspace/api.go")}
			}},
		{"read (" + file + ", " + strconv.FormatInt(size.Size()>>10, 10) + " KiB)",
			func(int) (string, map[string]any) { return "read", map[string]any{"file_path": "/" + file} },
			func(int) (string, map[string]any) {
				return "read_text_file", map[string]any{"path": filepath.Join(host, file)}
			}},
		{"edit (one unique string, diff back)",
			func(i int) (string, map[string]any) {
				o, nw := toggle(i)
				return "edit", map[string]any{"file_path": "/" + file, "old_string": o, "new_string": nw}
			},
			func(i int) (string, map[string]any) {
				o, nw := toggle(i)
				return "edit_file", map[string]any{"path": filepath.Join(host, file), "edits": []any{map[string]any{"oldText": o, "newText": nw}}}
			}},
		{"write (2 KiB, a file the session wrote)",
			func(i int) (string, map[string]any) {
				return "write", map[string]any{"file_path": "/bench/w.txt", "content": strings.Repeat(strconv.Itoa(i%10), 2048)}
			},
			func(i int) (string, map[string]any) {
				return "write_file", map[string]any{"path": filepath.Join(host, "bench-w.txt"), "content": strings.Repeat(strconv.Itoa(i%10), 2048)}
			}},
		{fmt.Sprintf("glob **/*.go (%d files in the tree)", files),
			func(int) (string, map[string]any) { return "glob", map[string]any{"pattern": "**/*.go"} },
			func(int) (string, map[string]any) {
				return "search_files", map[string]any{"path": host, "pattern": "**/*.go"}
			}},
		{"grep `func \\w+\\(` (files with matches)",
			func(int) (string, map[string]any) {
				return "grep", map[string]any{"pattern": `func \w+\(`, "output_mode": "files_with_matches"}
			}, nil},
		{fmt.Sprintf("ls /workspace (a directory of %d files)", len(listed)),
			func(int) (string, map[string]any) { return "ls", map[string]any{"path": "/workspace"} },
			func(int) (string, map[string]any) {
				return "list_directory", map[string]any{"path": filepath.Join(host, "workspace")}
			}},
		{"ls /wide (a directory of 1000 files)",
			func(int) (string, map[string]any) { return "ls", map[string]any{"path": "/wide"} },
			func(int) (string, map[string]any) {
				return "list_directory", map[string]any{"path": filepath.Join(host, "wide")}
			}},
		{"ls /empty (an empty directory: a call's floor)",
			func(int) (string, map[string]any) { return "ls", map[string]any{"path": "/empty"} },
			func(int) (string, map[string]any) {
				return "list_directory", map[string]any{"path": filepath.Join(host, "empty")}
			}},
	}
	// The servers take turns, call by call, so that the machine's load
	// weighs on each alike.
	type target struct {
		cs   *mcp.ClientSession
		step step
		d    []time.Duration
		size int // bytes of the last answer's result, as JSON
	}
	measure := func(ts ...*target) {
		for i := -20; i < n; i++ {
			for _, tg := range ts {
				name, args := tg.step(i + 20)
				t0 := time.Now()
				res, err := tg.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
				el := time.Since(t0)
				if err != nil || res.IsError {
					t.Fatalf("%s %v: %v %v", name, args, err, toCall(t, res).text)
				}
				if i >= 0 {
					tg.d = append(tg.d, el)
				}
				if i == n-1 {
					b, _ := json.Marshal(res)
					tg.size = len(b)
				}
			}
		}
	}
	pct := func(d []time.Duration) (time.Duration, time.Duration) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2], d[len(d)*99/100]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	var b strings.Builder
	fmt.Fprintf(&b, "| tool | computerfs mcp, warm daemon: p50 | p99 | computerfs mcp, store in process: p50 | p99 | reference server: p50 | p99 | p50, daemon / reference |\n|---|---|---|---|---|---|---|---|\n")
	var sizes []string // each answer's size, ours and the reference's
	var abTable strings.Builder
	fmt.Fprintf(&abTable, "| tool | this build, warm daemon: p50 | p99 | %s, warm daemon: p50 | p99 | p50, this / that |\n|---|---|---|---|---|---|\n", os.Getenv("CFS_MCP_BENCH_AB"))
	for _, r := range rows {
		if only := os.Getenv("CFS_MCP_BENCH_ONLY"); only != "" && !strings.Contains(r.tool, only) {
			continue
		}
		d, l := &target{cs: cfsSession, step: r.cfs}, &target{cs: localSession, step: r.cfs}
		ts := []*target{d, l}
		var ab, ref *target
		if abSession != nil {
			ab = &target{cs: abSession, step: func(i int) (string, map[string]any) {
				name, args := r.cfs(i)
				if p, ok := args["file_path"].(string); ok && (name == "edit" || name == "write") {
					args["file_path"] = abPath(p)
				}
				return name, args
			}}
			ts = append(ts, ab)
		}
		if r.ref != nil {
			ref = &target{cs: refSession, step: r.ref}
			ts = append(ts, ref)
		}
		measure(ts...)
		d50, d99 := pct(d.d)
		l50, l99 := pct(l.d)
		if ab != nil {
			a50, a99 := pct(ab.d)
			fmt.Fprintf(&abTable, "| %s | %s | %s | %s | %s | %.2fx |\n", r.tool, ms(d50), ms(d99), ms(a50), ms(a99), float64(d50)/float64(a50))
		}
		if ref == nil {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | (no such tool) | | |\n", r.tool, ms(d50), ms(d99), ms(l50), ms(l99))
			continue
		}
		r50, r99 := pct(ref.d)
		sizes = append(sizes, fmt.Sprintf("%s: ours %d bytes, the reference's %d", r.tool, d.size, ref.size))
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.2fx |\n", r.tool, ms(d50), ms(d99), ms(l50), ms(l99), ms(r50), ms(r99), float64(d50)/float64(r50))
	}
	if abSession != nil {
		b.WriteString("\n" + abTable.String())
	}
	t.Logf("%d calls per tool and server after 20 warm-up calls, over stdio, in ms:\n%s", n, b.String())
	t.Logf("the answers' results as JSON:\n%s", strings.Join(sizes, "\n"))
	if out := os.Getenv("CFS_MCP_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
