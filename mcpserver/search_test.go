package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/workspace"
)

func TestGlobNewestFirst(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	for i, p := range []string{"/src/old.go", "/src/sub/mid.go", "/src/new.go", "/src/readme.md"} {
		l.put(t, p, "x\n")
		mt := time.Unix(1_700_000_000+int64(i)*100, 0)
		if _, err := l.ws.SetAttr(context.Background(), p, workspace.SetAttrOptions{Mtime: &mt}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "**/*.go"}, "/src/new.go\n/src/sub/mid.go\n/src/old.go"},
		{map[string]any{"pattern": "*.go", "path": "/src"}, "/src/new.go\n/src/old.go"},
		{map[string]any{"pattern": "**/*.{go,md}", "path": "/src"}, "/src/readme.md\n/src/new.go\n/src/sub/mid.go\n/src/old.go"},
		{map[string]any{"pattern": "**/*.rs"}, "No files found"},
		{map[string]any{"pattern": "src/*"}, "/src/readme.md\n/src/new.go\n/src/old.go"}, // files only
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			c := ok(t, l.cs, "glob", tc.args)
			if c.text != tc.want {
				t.Errorf("got\n%s\nwant\n%s", c.text, tc.want)
			}
		})
	}
	fails(t, l.cs, "glob", map[string]any{"pattern": "*", "path": "/nope"}, "no such file")
	fails(t, l.cs, "glob", map[string]any{"pattern": "[a"}, "glob")
}

func TestGrep(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	l.put(t, "/src/a.go", "package a\n// TODO one\nfunc A() {}\n// todo two\n")
	l.put(t, "/src/b.ts", "const b = 1 // TODO three\n")
	l.put(t, "/src/c.js", "let c\n")
	l.put(t, "/doc/x.md", "first\nsecond TODO\nthird\nfourth\nfifth\n")
	l.put(t, "/bin/blob", "TODO\x00\x01")
	l.put(t, "/multi.txt", "begin\n  middle\nend\nbegin\nend\n")
	// One modification time for all: files of the same time come in path
	// order (TestGrepNewestFirst sorts by time).
	same := time.Unix(1_700_000_000, 0)
	for _, p := range []string{"/src/a.go", "/src/b.ts", "/src/c.js", "/doc/x.md", "/bin/blob", "/multi.txt"} {
		setMtime(t, l, p, same)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"files by default", map[string]any{"pattern": "TODO"}, "/doc/x.md\n/src/a.go\n/src/b.ts\n[1 binary files skipped]"},
		{"content numbered", map[string]any{"pattern": "TODO", "path": "/src", "output_mode": "content"}, "/src/a.go:2:// TODO one\n/src/b.ts:1:const b = 1 // TODO three"},
		{"content unnumbered", map[string]any{"pattern": "TODO", "path": "/src/a.go", "output_mode": "content", "-n": false}, "/src/a.go:// TODO one"},
		{"ignore case", map[string]any{"pattern": "todo", "-i": true, "path": "/src", "output_mode": "count"}, "/src/a.go:2\n/src/b.ts:1"},
		{"regex", map[string]any{"pattern": `func\s+\w+\(`, "output_mode": "content"}, "/src/a.go:3:func A() {}\n[1 binary files skipped]"},
		{"glob", map[string]any{"pattern": "TODO", "glob": "*.{ts,js}"}, "/src/b.ts"},
		{"glob excluded", map[string]any{"pattern": "TODO", "glob": "!*.go", "path": "/src"}, "/src/b.ts"},
		{"type", map[string]any{"pattern": "TODO", "type": "go"}, "/src/a.go"},
		{"context", map[string]any{"pattern": "second", "path": "/doc", "output_mode": "content", "-C": 1}, "/doc/x.md-1-first\n/doc/x.md:2:second TODO\n/doc/x.md-3-third"},
		{"after", map[string]any{"pattern": "second", "path": "/doc", "output_mode": "content", "-A": 2}, "/doc/x.md:2:second TODO\n/doc/x.md-3-third\n/doc/x.md-4-fourth"},
		{"head_limit", map[string]any{"pattern": "TODO", "head_limit": 1}, "/doc/x.md\n[results cut at 1: pass offset=1 for more, or narrow the search]\n[1 binary files skipped]"},
		{"offset", map[string]any{"pattern": "TODO", "head_limit": 1, "offset": 2}, "/src/b.ts\n[1 binary files skipped]"},
		{"none", map[string]any{"pattern": "nothing here"}, "No matches found\n[1 binary files skipped]"},
		{"multiline", map[string]any{"pattern": `begin.*?end`, "multiline": true, "path": "/multi.txt", "output_mode": "content"}, "/multi.txt:1:begin\n/multi.txt:2:  middle\n/multi.txt:3:end\n/multi.txt:4:begin\n/multi.txt:5:end"},
		{"multiline count", map[string]any{"pattern": `begin\n\s+middle`, "multiline": true, "output_mode": "count"}, "/multi.txt:1\n[1 binary files skipped]"},
		{"multiline files", map[string]any{"pattern": `one.func`, "multiline": true, "type": "go"}, "/src/a.go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok(t, l.cs, "grep", tc.args)
			if c.text != tc.want {
				t.Errorf("got\n%s\nwant\n%s", c.text, tc.want)
			}
		})
	}
	fails(t, l.cs, "grep", map[string]any{"pattern": "(", "path": "/src"}, "grep /src")
	fails(t, l.cs, "grep", map[string]any{"pattern": "x", "type": "cobol"}, "unknown type", "go, ")
	fails(t, l.cs, "grep", map[string]any{"pattern": "x", "output_mode": "lines"}, "want content, files_with_matches or count")
	fails(t, l.cs, "grep", map[string]any{"pattern": "x", "glob": "*.go", "type": "go"}, "not both")
}

func setMtime(t *testing.T, l *local, p string, mt time.Time) {
	t.Helper()
	if _, err := l.ws.SetAttr(context.Background(), p, workspace.SetAttrOptions{Mtime: &mt}); err != nil {
		t.Fatal(err)
	}
}

// TestGrepNewestFirst: files come newest first in every output mode, as
// Claude Code's Grep answers; content mode keeps each file's lines
// together in that order; pages cut from the sorted list never repeat or
// skip a file, past the sorted ones too.
func TestGrepNewestFirst(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	files := []struct {
		path, content string
		age           int // minutes before now
	}{
		{"/a/old.go", "x := 1 // hit\nmore\n// hit again\n", 30},
		{"/a/new.go", "// hit\n", 1},
		{"/b/mid.go", "ctx\n// hit\nctx\n", 10},
		{"/b/newest.md", "hit\nhit\nhit\n", 0},
		{"/c/none.go", "nothing\n", -5}, // newest of all, but no match
		{"/c/older.go", "hit\n", 20},
	}
	now := time.Now().Truncate(time.Second)
	for _, f := range files {
		l.put(t, f.path, f.content)
		setMtime(t, l, f.path, now.Add(-time.Duration(f.age)*time.Minute))
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"files", map[string]any{"pattern": "hit"},
			"/b/newest.md\n/a/new.go\n/b/mid.go\n/c/older.go\n/a/old.go"},
		{"count", map[string]any{"pattern": "hit", "output_mode": "count"},
			"/b/newest.md:3\n/a/new.go:1\n/b/mid.go:1\n/c/older.go:1\n/a/old.go:2"},
		{"content grouped by file", map[string]any{"pattern": "hit", "output_mode": "content", "type": "go"},
			"/a/new.go:1:// hit\n/b/mid.go:2:// hit\n/c/older.go:1:hit\n/a/old.go:1:x := 1 // hit\n/a/old.go:3:// hit again"},
		{"content with context", map[string]any{"pattern": "hit", "output_mode": "content", "path": "/b", "-C": 1},
			"/b/newest.md:1:hit\n/b/newest.md:2:hit\n/b/newest.md:3:hit\n--\n/b/mid.go-1-ctx\n/b/mid.go:2:// hit\n/b/mid.go-3-ctx"},
		{"content paged", map[string]any{"pattern": "hit", "output_mode": "content", "head_limit": 2, "offset": 2, "-n": false},
			"/b/newest.md:hit\n/a/new.go:// hit\n[results cut at 2: pass offset=4 for more, or narrow the search]"},
		{"files paged", map[string]any{"pattern": "hit", "head_limit": 2, "offset": 1},
			"/a/new.go\n/b/mid.go\n[results cut at 2: pass offset=3 for more, or narrow the search]"},
		{"multiline", map[string]any{"pattern": `hit\s+(again|hit)`, "multiline": true},
			"/b/newest.md\n/a/old.go"},
		{"one file", map[string]any{"pattern": "hit", "path": "/a/old.go", "output_mode": "count"},
			"/a/old.go:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok(t, l.cs, "grep", tc.args)
			if c.text != tc.want {
				t.Errorf("got\n%s\nwant\n%s", c.text, tc.want)
			}
		})
	}

	// Past the sorted entries, pages go on in path order: page through
	// with a scan of 2 and see every file once.
	l.srv.SetGrepScan(2)
	for _, mode := range []string{"files_with_matches", "content"} {
		t.Run("past the scan/"+mode, func(t *testing.T) {
			var got []string
			for off, pages := 0, 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("no end to the pages: %v", got)
				}
				c := ok(t, l.cs, "grep", map[string]any{"pattern": "hit", "output_mode": mode, "head_limit": 1, "offset": off, "-n": false})
				lines := strings.Split(c.text, "\n")
				got = append(got, lines[0])
				if off >= 1 && !strings.Contains(c.text, "the rest follow in path order") {
					t.Errorf("offset %d: no notice that the rest are not sorted: %s", off, c.text)
				}
				next, _ := c.data["next_offset"].(float64)
				if next == 0 {
					break
				}
				off = int(next)
			}
			want := map[string]string{
				// The first two in path order sorted (new.go, old.go; in
				// content mode their first match each), then the rest in
				// path order.
				"files_with_matches": "/a/new.go /a/old.go /b/mid.go /b/newest.md /c/older.go",
				"content":            "/a/new.go:// hit /a/old.go:x := 1 // hit /a/old.go:// hit again /b/mid.go:// hit /b/newest.md:hit /b/newest.md:hit /b/newest.md:hit /c/older.go:hit",
			}[mode]
			if strings.Join(got, " ") != want {
				t.Errorf("pages\n%s\nwant\n%s", strings.Join(got, " "), want)
			}
		})
	}
}

func TestLs(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	l.put(t, "/p/main.go", "package main\n")
	l.put(t, "/p/node_modules/x/y.js", "y\n")
	l.put(t, "/p/a.o", "obj")
	if err := l.ws.Symlink(context.Background(), "main.go", "/p/link"); err != nil {
		t.Fatal(err)
	}
	c := ok(t, l.cs, "ls", map[string]any{"path": "/p", "ignore": []string{"node_modules", "*.o"}})
	want := "/p\nlink -> main.go\nmain.go  13\n[2 entries ignored]"
	if c.text != want {
		t.Errorf("got\n%s\nwant\n%s", c.text, want)
	}
	c = ok(t, l.cs, "ls", map[string]any{"path": "/p"})
	if !strings.HasPrefix(c.text, "/p\nnode_modules/\n") {
		t.Errorf("directories first:\n%s", c.text)
	}
	// The structured listing: the entries grouped by type, sizes by name.
	if got, _ := json.Marshal(c.data); string(got) != `{"dirs":["node_modules"],"files":{"a.o":3,"main.go":13},"path":"/p","symlinks":{"link":"main.go"}}` {
		t.Errorf("structured listing %s", got)
	}
	c = ok(t, l.cs, "ls", map[string]any{"path": "/p", "long": true})
	if lines := strings.Split(c.text, "\n"); len(lines) != 5 || !regexp.MustCompile(`^main\.go  13  0[0-7]{3}  20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(lines[4]) {
		t.Errorf("long:\n%s", c.text)
	}
	if long, _ := c.data["long"].(map[string]any); len(long) != 4 || long["main.go"].(map[string]any)["mode"] != "0644" || long["main.go"].(map[string]any)["mtime"] == nil {
		t.Errorf("long: %v", c.data["long"])
	}
	// Names that could be misread in the text are quoted.
	l.put(t, "/q/a  b", "")
	l.put(t, "/q/x -> y", "")
	l.put(t, "/q/new\nline", "")
	c = ok(t, l.cs, "ls", map[string]any{"path": "/q"})
	if want := "/q\n\"a  b\"  0\n\"new\\nline\"  0\n\"x -> y\"  0"; c.text != want {
		t.Errorf("got\n%s\nwant\n%s", c.text, want)
	}
	c = ok(t, l.cs, "ls", nil)
	if !strings.Contains(c.text, "\np/\n") {
		t.Errorf("root:\n%s", c.text)
	}
	fails(t, l.cs, "ls", map[string]any{"path": "/nope"}, "no such file")
	fails(t, l.cs, "ls", map[string]any{"path": "/p", "ignore": []string{"["}}, "ignore pattern")
}
