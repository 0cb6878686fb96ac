package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolList(t *testing.T) {
	l := newLocal(t, localOpts{})
	res, err := l.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	tests := []struct {
		name               string
		readOnly, openWrld bool
		required           []string
	}{
		{"read", true, false, []string{"file_path"}},
		{"write", false, false, []string{"file_path", "content"}},
		{"edit", false, false, []string{"file_path", "old_string", "new_string"}},
		{"multi_edit", false, false, []string{"file_path", "edits"}},
		{"glob", true, false, []string{"pattern"}},
		{"grep", true, false, []string{"pattern"}},
		{"ls", true, false, nil},
		{"exec", false, true, []string{"command"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := tools[tc.name]
			if tl == nil {
				t.Fatalf("no tool %s", tc.name)
			}
			if tl.Description == "" || tl.Annotations == nil {
				t.Fatalf("%s: no description or annotations", tc.name)
			}
			a := tl.Annotations
			if a.ReadOnlyHint != tc.readOnly {
				t.Errorf("readOnlyHint %v, want %v", a.ReadOnlyHint, tc.readOnly)
			}
			if a.OpenWorldHint == nil || *a.OpenWorldHint != tc.openWrld {
				t.Errorf("openWorldHint %v, want %v", a.OpenWorldHint, tc.openWrld)
			}
			if !tc.readOnly && (a.DestructiveHint == nil || !*a.DestructiveHint) {
				t.Errorf("destructiveHint %v, want true", a.DestructiveHint)
			}
			in, _ := json.Marshal(tl.InputSchema)
			var schema struct {
				Required []string `json:"required"`
			}
			json.Unmarshal(in, &schema)
			if fmt.Sprint(schema.Required) != fmt.Sprint(tc.required) {
				t.Errorf("required %v, want %v (schema %s)", schema.Required, tc.required, in)
			}
			if tl.OutputSchema == nil {
				t.Errorf("no output schema")
			}
		})
	}
	// exec's backend is an enum whose schema carries each backend's own
	// description.
	b, _ := json.Marshal(tools["exec"].InputSchema)
	var schema struct {
		Properties map[string]struct {
			Enum        []any  `json:"enum"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	json.Unmarshal(b, &schema)
	be := schema.Properties["backend"]
	if fmt.Sprint(be.Enum) != "[js shell <nil>]" || !strings.Contains(be.Description, "- shell: A bash-like shell") || !strings.Contains(be.Description, "- js: Runs an ES module") {
		t.Errorf("exec's backend: enum %v, description %q", be.Enum, be.Description)
	}
	// Grep's flags keep ripgrep's names.
	b, _ = json.Marshal(tools["grep"].InputSchema)
	for _, k := range []string{`"-i"`, `"-n"`, `"-A"`, `"-B"`, `"-C"`, `"head_limit"`, `"multiline"`, `"output_mode"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("grep's schema has no %s: %s", k, b)
		}
	}
}

func TestRead(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	l.put(t, "/src/a.go", "package a\n\nfunc A() {}\n")
	l.put(t, "/many.txt", many.String())
	l.put(t, "/long.txt", "short\n"+strings.Repeat("x", 5000)+"\nend")
	l.put(t, "/empty", "")
	l.put(t, "/crlf.txt", "one\r\ntwo\r\n")
	l.put(t, "/bin.dat", "\x00\x01\x02binary")
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 20)
	l.put(t, "/img.png", png)
	// 1500 lines of 200 characters: 1260 numbered lines (208 bytes each)
	// fit in an answer of 256 KiB.
	var wide strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&wide, "%04d%s\n", i, strings.Repeat("x", 196))
	}
	l.put(t, "/wide.txt", wide.String())
	tests := []struct {
		name    string
		args    map[string]any
		want    []string // in the text
		notWant []string
		data    map[string]any // fields of the structured result
	}{
		{name: "numbered", args: map[string]any{"file_path": "/src/a.go"},
			want: []string{"     1\tpackage a\n     2\t\n     3\tfunc A() {}\n"}, notWant: []string{"["},
			data: map[string]any{"kind": "text", "num_lines": 3.0, "total_lines": 3.0}},
		{name: "relative path", args: map[string]any{"file_path": "src/a.go"}, want: []string{"     1\tpackage a"}},
		{name: "first 2000 lines", args: map[string]any{"file_path": "/many.txt"},
			want:    []string{"     1\tline 1\n", "  2000\tline 2000\n", "showing lines 1-2000 of 2500: read on with offset=2001"},
			notWant: []string{"line 2001"}, data: map[string]any{"num_lines": 2000.0, "truncated": true}},
		{name: "offset and limit", args: map[string]any{"file_path": "/many.txt", "offset": 2001, "limit": 2},
			want: []string{"  2001\tline 2001\n  2002\tline 2002\n", "offset=2003"}, notWant: []string{"line 2000\n"}},
		{name: "to the end", args: map[string]any{"file_path": "/many.txt", "offset": 2499},
			want: []string{"  2500\tline 2500"}, notWant: []string{"read on"}},
		{name: "past the end", args: map[string]any{"file_path": "/many.txt", "offset": 3000},
			want: []string{"offset 3000 is past its end"}},
		{name: "long line cut", args: map[string]any{"file_path": "/long.txt"},
			want: []string{"     1\tshort\n", "[line cut: 5000 characters in all]", "     3\tend", "1 lines longer than 2000 characters were cut"}},
		{name: "answer cut at 256 KiB", args: map[string]any{"file_path": "/wide.txt"},
			want:    []string{"     1\t0001xx", "  1260\t1260xx", "[output cut at 256 KiB after line 1260: read on with offset=1261]"},
			notWant: []string{"1261xx"}, data: map[string]any{"num_lines": 1260.0, "total_lines": 1500.0, "truncated": true}},
		{name: "read on past the cut", args: map[string]any{"file_path": "/wide.txt", "offset": 1261},
			want: []string{"  1261\t1261xx", "  1500\t1500xx"}, notWant: []string{"read on", "1260xx"}, data: map[string]any{"num_lines": 240.0}},
		{name: "empty", args: map[string]any{"file_path": "/empty"}, want: []string{"exists and is empty"}, data: map[string]any{"kind": "empty"}},
		{name: "crlf", args: map[string]any{"file_path": "/crlf.txt"}, want: []string{"     1\tone\n     2\ttwo\n"}},
		{name: "binary described", args: map[string]any{"file_path": "/bin.dat"},
			want: []string{"binary file", "9 bytes", "not shown"}, notWant: []string{"\x00"}, data: map[string]any{"kind": "binary"}},
		{name: "image", args: map[string]any{"file_path": "/img.png"}, want: []string{"image /img.png, image/png"},
			data: map[string]any{"kind": "image", "mime_type": "image/png"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok(t, l.cs, "read", tc.args)
			for _, w := range tc.want {
				if !strings.Contains(c.text, w) {
					t.Errorf("text lacks %q:\n%.600s", w, c.text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(c.text, w) {
					t.Errorf("text has %q:\n%.600s", w, c.text)
				}
			}
			for k, v := range tc.data {
				if fmt.Sprint(c.data[k]) != fmt.Sprint(v) {
					t.Errorf("structured %s = %v, want %v", k, c.data[k], v)
				}
			}
		})
	}
	t.Run("image content", func(t *testing.T) {
		c := ok(t, l.cs, "read", map[string]any{"file_path": "/img.png"})
		img, okImg := c.res.Content[0].(*mcp.ImageContent)
		if !okImg || string(img.Data) != png {
			t.Fatalf("first content %#v, want the image", c.res.Content[0])
		}
	})
	errs := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"missing", map[string]any{"file_path": "/nope.txt"}, []string{"read /nope.txt", "no such file", "glob and ls find files"}},
		{"directory", map[string]any{"file_path": "/src"}, []string{"is a directory: list it with ls"}},
		{"escape", map[string]any{"file_path": "/../etc/passwd"}, []string{"workspace paths"}},
		{"no file_path", map[string]any{}, []string{"file_path"}},
		{"unknown argument", map[string]any{"file_path": "/src/a.go", "bogus": 1}, []string{"bogus"}},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) { fails(t, l.cs, "read", tc.args, tc.want...) })
	}
}

// Write and edit compare against what this session read: a file it has
// not read, or one changed since, is refused with a message that says
// what to do.
func TestWriteAndEditNeedRead(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	cs := l.cs
	// A new file needs no read; its parents are made.
	c := ok(t, cs, "write", map[string]any{"file_path": "/new/dir/f.txt", "content": "one\ntwo\n"})
	if c.data["created"] != true || !strings.Contains(c.text, "created /new/dir/f.txt (8 bytes, 2 lines)") {
		t.Errorf("write new: %s %v", c.text, c.data)
	}
	// What the session wrote, it knows: it may edit and write again.
	c = ok(t, cs, "edit", map[string]any{"file_path": "/new/dir/f.txt", "old_string": "two", "new_string": "TWO"})
	if !strings.Contains(c.text, "-two\n+TWO\n") {
		t.Errorf("edit diff:\n%s", c.text)
	}
	ok(t, cs, "write", map[string]any{"file_path": "/new/dir/f.txt", "content": "three\n"})

	l.put(t, "/theirs.txt", "theirs\n")
	fails(t, cs, "write", map[string]any{"file_path": "/theirs.txt", "content": "mine\n"}, "has not read it: read it first")
	fails(t, cs, "edit", map[string]any{"file_path": "/theirs.txt", "old_string": "theirs", "new_string": "mine"}, "has not read the file: read it first")
	if got := l.get(t, "/theirs.txt"); got != "theirs\n" {
		t.Fatalf("refused write changed the file: %q", got)
	}
	ok(t, cs, "read", map[string]any{"file_path": "/theirs.txt"})
	// Changed through another door since the read: refused.
	l.put(t, "/theirs.txt", "changed\n")
	fails(t, cs, "edit", map[string]any{"file_path": "/theirs.txt", "old_string": "changed", "new_string": "mine"}, "the file changed since you read it: read it again")
	fails(t, cs, "write", map[string]any{"file_path": "/theirs.txt", "content": "mine\n"}, "the file changed since you read it: read it again")
	ok(t, cs, "read", map[string]any{"file_path": "/theirs.txt"})
	ok(t, cs, "write", map[string]any{"file_path": "/theirs.txt", "content": "mine\n"})
	if got := l.get(t, "/theirs.txt"); got != "mine\n" {
		t.Fatalf("after read and write: %q", got)
	}
	// The same bytes written again by another door is no change.
	l.put(t, "/theirs.txt", "mine\n")
	ok(t, cs, "edit", map[string]any{"file_path": "/theirs.txt", "old_string": "mine", "new_string": "ours"})

	// Removed by another door since the read: writing it makes a new file.
	ok(t, cs, "read", map[string]any{"file_path": "/theirs.txt"})
	if _, err := l.ws.Remove(context.Background(), "/theirs.txt", workspace.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	fails(t, cs, "edit", map[string]any{"file_path": "/theirs.txt", "old_string": "ours", "new_string": "x"}, "no such file")
	c = ok(t, cs, "write", map[string]any{"file_path": "/theirs.txt", "content": "again\n"})
	if c.data["created"] != true || l.get(t, "/theirs.txt") != "again\n" {
		t.Errorf("write after a removal: %s %v", c.text, c.data)
	}

	// Another session has read nothing.
	other := newClient(t, l)
	fails(t, other, "write", map[string]any{"file_path": "/theirs.txt", "content": "x"}, "read it first")
}

// newClient connects a second session to l's server.
func newClient(t *testing.T, l *local) *mcp.ClientSession { return connectMemory(t, l.srv, nil) }

func TestEdit(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	const orig = "a := 1\nb := 1\nc := 2\n"
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string // the file after; "" when the edit must fail
		msg  []string
	}{
		{name: "unique", tool: "edit", args: map[string]any{"old_string": "c := 2", "new_string": "c := 3"}, want: "a := 1\nb := 1\nc := 3\n", msg: []string{"1 replacement", "-c := 2\n+c := 3\n"}},
		{name: "ambiguous", tool: "edit", args: map[string]any{"old_string": ":= 1", "new_string": ":= 9"}, msg: []string{"not unique", "replace_all"}},
		{name: "replace all", tool: "edit", args: map[string]any{"old_string": ":= 1", "new_string": ":= 9", "replace_all": true}, want: "a := 9\nb := 9\nc := 2\n", msg: []string{"2 replacement"}},
		{name: "not found", tool: "edit", args: map[string]any{"old_string": "d := 4", "new_string": "x"}, msg: []string{"was not found", "without the line-number prefix"}},
		{name: "same", tool: "edit", args: map[string]any{"old_string": "a", "new_string": "a"}, msg: []string{"the same"}},
		{name: "multi", tool: "multi_edit", args: map[string]any{"edits": []any{
			map[string]any{"old_string": "a := 1", "new_string": "a := 10"},
			map[string]any{"old_string": "a := 10\nb", "new_string": "a := 10\nbb"},
		}}, want: "a := 10\nbb := 1\nc := 2\n"},
		{name: "multi all or none", tool: "multi_edit", args: map[string]any{"edits": []any{
			map[string]any{"old_string": "a := 1", "new_string": "a := 10"},
			map[string]any{"old_string": "zzz", "new_string": "y"},
		}}, msg: []string{"edit 1", "not found"}},
		{name: "multi none", tool: "multi_edit", args: map[string]any{"edits": []any{}}, msg: []string{"no edits"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := fmt.Sprintf("/e%d.go", i)
			l.put(t, p, orig)
			ok(t, l.cs, "read", map[string]any{"file_path": p})
			tc.args["file_path"] = p
			if tc.want == "" {
				fails(t, l.cs, tc.tool, tc.args, tc.msg...)
				if got := l.get(t, p); got != orig {
					t.Errorf("a failed edit changed the file: %q", got)
				}
				return
			}
			c := ok(t, l.cs, tc.tool, tc.args)
			if got := l.get(t, p); got != tc.want {
				t.Errorf("file %q, want %q", got, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(c.text, m) {
					t.Errorf("text lacks %q: %s", m, c.text)
				}
			}
			if c.data["diff"] == "" || c.data["hash"] == "" {
				t.Errorf("structured result %v", c.data)
			}
		})
	}
	t.Run("create with empty old_string", func(t *testing.T) {
		c := ok(t, l.cs, "edit", map[string]any{"file_path": "/made.txt", "old_string": "", "new_string": "hello\n"})
		if got := l.get(t, "/made.txt"); got != "hello\n" || !strings.Contains(c.text, "+hello") {
			t.Errorf("file %q, text %s", got, c.text)
		}
		fails(t, l.cs, "edit", map[string]any{"file_path": "/made.txt", "old_string": "", "new_string": "again\n"}, "this one exists")
	})
}

// A path under the mount point (what an agent that also has a shell on
// the mount passes) is the workspace path it shows.
func TestMountPointPaths(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true, mountPoint: "/home/me/computerfs/"})
	l.put(t, "/src/a.txt", "a\n")
	for _, p := range []string{"/home/me/computerfs/src/a.txt", "/src/a.txt", "src/a.txt", "/home/me/computerfs/src/../src/a.txt"} {
		c := ok(t, l.cs, "read", map[string]any{"file_path": p})
		if c.data["path"] != "/src/a.txt" {
			t.Errorf("%s: read %v", p, c.data["path"])
		}
	}
	c := ok(t, l.cs, "ls", map[string]any{"path": "/home/me/computerfs"})
	if !strings.HasPrefix(c.text, "/\n") {
		t.Errorf("ls of the mount point: %s", c.text)
	}
	c = ok(t, l.cs, "glob", map[string]any{"pattern": "/home/me/computerfs/src/*.txt"})
	if c.text != "/src/a.txt" {
		t.Errorf("glob with the mount point: %s", c.text)
	}
	// Not under it: a workspace path like any other.
	fails(t, l.cs, "read", map[string]any{"file_path": "/home/me/computerfsx/a"}, "no such file")
}

// Clients that send null for the arguments they leave out (the OpenAI
// Agents SDK's strict mode does) get what omitting them gives.
func TestNullArguments(t *testing.T) {
	l := newLocal(t, localOpts{})
	l.put(t, "/a.txt", "one\ntwo\n")
	c := ok(t, l.cs, "read", map[string]any{"file_path": "/a.txt", "offset": nil, "limit": nil})
	if c.text != "     1\tone\n     2\ttwo\n" {
		t.Errorf("read: %q", c.text)
	}
	c = ok(t, l.cs, "grep", map[string]any{"pattern": "two", "path": nil, "glob": nil, "type": nil, "output_mode": nil, "-i": nil, "-n": nil, "-A": nil, "-B": nil, "-C": nil, "multiline": nil, "head_limit": nil, "offset": nil})
	if c.text != "/a.txt" {
		t.Errorf("grep: %q", c.text)
	}
	c = ok(t, l.cs, "exec", map[string]any{"command": "cat a.txt", "backend": nil, "cwd": nil, "timeout": nil, "env": nil, "input": nil, "stdin": nil, "description": nil})
	if !strings.HasPrefix(c.text, "one\ntwo\n[exit status 0; backend shell") {
		t.Errorf("exec: %q", c.text)
	}
	ok(t, l.cs, "ls", map[string]any{"path": nil, "ignore": nil})
	ok(t, l.cs, "glob", map[string]any{"pattern": "*.txt", "path": nil})
	ok(t, l.cs, "edit", map[string]any{"file_path": "/a.txt", "old_string": "two", "new_string": "2", "replace_all": nil})
	// Required arguments stay required.
	fails(t, l.cs, "read", map[string]any{"file_path": nil}, "file_path")
}

// Arguments are checked against the tool's input schema before the tool
// runs, and a call that does not fit is a tool error saying why.
func TestBadArguments(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	l.put(t, "/a.txt", "one\n")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []string
	}{
		{"missing", "read", map[string]any{}, []string{`validating "arguments"`, "file_path"}},
		{"wrong type", "read", map[string]any{"file_path": "/a.txt", "limit": "ten"}, []string{`validating "arguments"`, "limit"}},
		{"not an integer", "read", map[string]any{"file_path": "/a.txt", "offset": 1.5}, []string{`validating "arguments"`, "offset"}},
		{"unknown", "ls", map[string]any{"path": "/", "recursive": true}, []string{`validating "arguments"`, "recursive"}},
		{"another case", "read", map[string]any{"FILE_PATH": "/a.txt"}, []string{`validating "arguments"`}},
		{"list of strings", "ls", map[string]any{"ignore": "node_modules"}, []string{`validating "arguments"`, "ignore"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fails(t, l.cs, tc.tool, tc.args, tc.want...)
		})
	}
}

// Hosts call tools in parallel: a session's edits of one file, at once,
// all land (none fails another's compare-and-swap).
func TestParallelEdits(t *testing.T) {
	l := newLocal(t, localOpts{noExec: true})
	var b strings.Builder
	const n = 12
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	l.put(t, "/p.txt", b.String())
	ok(t, l.cs, "read", map[string]any{"file_path": "/p.txt"})
	errs := make(chan string, n)
	for i := range n {
		go func() {
			res, err := l.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "edit", Arguments: map[string]any{
				"file_path": "/p.txt", "old_string": fmt.Sprintf("line %d\n", i), "new_string": fmt.Sprintf("LINE %d\n", i)}})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.IsError:
				errs <- toCall(t, res).text
			default:
				errs <- ""
			}
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	got := l.get(t, "/p.txt")
	if strings.Contains(got, "line ") {
		t.Errorf("not every edit landed:\n%s", got)
	}
}
