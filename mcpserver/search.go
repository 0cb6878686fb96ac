package mcpserver

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	globScan      = 1000 // paths matched, then sorted by mtime
	grepScanFiles = 1000 // files with matches sorted by mtime (files, count)
	grepScanLines = 2000 // matching lines sorted by their file's mtime (content)
	globShow      = 100  // paths returned
	statWorkers   = 8
	grepDefault   = 250 // output entries when head_limit is 0
	lsLimit       = 1000
	maxMatchBytes = 16 << 20 // multiline: files larger are skipped
)

type globIn struct {
	Pattern string `json:"pattern" jsonschema:"the glob pattern to match files against, such as **/*.go or src/**/*.{ts,tsx}"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search in (default: the workspace root)"`
}

type globOut struct {
	Paths     []string `json:"paths"`
	Count     int      `json:"count"`
	Truncated bool     `json:"truncated,omitempty"`
}

type grepIn struct {
	Pattern    string `json:"pattern" jsonschema:"the regular expression (RE2 syntax, as ripgrep's) to search file contents for"`
	Path       string `json:"path,omitempty" jsonschema:"file or directory to search (default: the workspace root)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only files whose name matches this glob (rg --glob), such as *.js or *.{ts,tsx}; a leading ! excludes instead"`
	Type       string `json:"type,omitempty" jsonschema:"only files of this type (rg --type): go, js, ts, py, rust, java, c, cpp, md, json, yaml, sh, html, css, ..."`
	OutputMode string `json:"output_mode,omitempty" jsonschema:"content shows matching lines; files_with_matches (the default) shows file paths; count shows match counts per file"`
	I          bool   `json:"-i,omitempty" jsonschema:"case-insensitive search (rg -i)"`
	N          *bool  `json:"-n,omitempty" jsonschema:"show line numbers (rg -n; content mode, default true)"`
	A          int    `json:"-A,omitempty" jsonschema:"lines to show after each match (rg -A; content mode)"`
	B          int    `json:"-B,omitempty" jsonschema:"lines to show before each match (rg -B; content mode)"`
	C          int    `json:"-C,omitempty" jsonschema:"lines to show before and after each match (rg -C; content mode)"`
	Multiline  bool   `json:"multiline,omitempty" jsonschema:"let patterns span lines and . match newlines (rg -U --multiline-dotall)"`
	HeadLimit  int    `json:"head_limit,omitempty" jsonschema:"show only the first N lines or files (default 250)"`
	Offset     int    `json:"offset,omitempty" jsonschema:"skip the first N lines or files (to page on)"`
}

type grepOut struct {
	Mode      string               `json:"mode"`
	Files     []workspace.GrepFile `json:"files,omitempty"`
	Lines     []workspace.GrepLine `json:"lines,omitempty"`
	Count     int                  `json:"count"`
	Next      int                  `json:"next_offset,omitempty"`
	Truncated bool                 `json:"truncated,omitempty"`
	Skipped   int                  `json:"skipped_binary,omitempty"`
}

type lsIn struct {
	Path   string   `json:"path,omitempty" jsonschema:"the directory to list (default: the workspace root)"`
	Ignore []string `json:"ignore,omitempty" jsonschema:"glob patterns of names to leave out, such as node_modules or *.o"`
	Long   bool     `json:"long,omitempty" jsonschema:"also give each entry's mode and modification time"`
}

// lsOut is a listing, kept small (a listing of a thousand entries is
// mostly JSON for the SDK to encode and the client to decode, on every
// call): the entries grouped by type, a file's size by its name.
//
// Its exported fields are the JSON's shape (its schema is made from
// them); the answer leaves them empty and MarshalJSON (lsjson.go) writes
// them from entries, which is a third of encoding/json's cost (no
// reflection, no sorting of map keys).
type lsOut struct {
	Path     string            `json:"path"`
	Dirs     []string          `json:"dirs" jsonschema:"the directories' names"`
	Files    map[string]int64  `json:"files" jsonschema:"each regular file's size in bytes, by name"`
	Symlinks map[string]string `json:"symlinks,omitempty" jsonschema:"each symlink's target, by name"`
	Other    map[string]string `json:"other,omitempty" jsonschema:"the type of each other entry (fifo, socket, char, block), by name"`
	Long     map[string]lsLong `json:"long,omitempty" jsonschema:"with long: each entry's mode and modification time, by name"`
	// Ignored counts the entries ignore left out.
	Ignored   int  `json:"ignored,omitempty"`
	Truncated bool `json:"truncated,omitempty"`

	// entries are the listing's, directories first, then by name; long
	// says Long is wanted.
	entries []workspace.FileInfo
	long    bool
}

type lsLong struct {
	Mode  string    `json:"mode" jsonschema:"the permission bits in octal"`
	Mtime time.Time `json:"mtime"`
}

func (s *Server) addSearchTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annot := func(title string) *mcp.ToolAnnotations { a := *ro; a.Title = title; return &a }
	addTool(s.mcp, &mcp.Tool{
		Name:  "glob",
		Title: "Find files by name",
		Description: `Finds files whose path matches a glob pattern, fast, in any size of workspace.
- Patterns: * ? [abc] {a,b} and ** for any number of directories: **/*.go, src/**/*.{ts,tsx}.
- Relative patterns start at path (default the root).
- Paths come back newest first (by modification time), 100 at most.`,
		Annotations: annot("Find files by name"),
	}, s.glob)
	addTool(s.mcp, &mcp.Tool{
		Name:  "grep",
		Title: "Search file contents",
		Description: `Searches file contents with a regular expression, as ripgrep does, without running a shell.
- pattern is RE2 syntax ("log.*Error", "func\\s+\\w+"); braces and other metacharacters need escaping to match literally.
- Filter files with glob (*.js, **/*.{ts,tsx}) or type (go, js, py, rust, ...).
- output_mode: files_with_matches (default) lists paths; content shows matching lines (with -n numbers, -A/-B/-C context); count gives counts per file.
- Files come newest first (by modification time), in every mode; content mode groups the lines by file in that order.
- Binary files are skipped. multiline lets a pattern span lines.
- head_limit and offset page through long results.`,
		Annotations: annot("Search file contents"),
	}, s.grep)
	addTool(s.mcp, &mcp.Tool{
		Name:  "ls",
		Title: "List a directory",
		Description: `Lists a directory, directories first: one entry a line, "name/" for a directory, "name  SIZE" (bytes) for a file, "name -> target" for a symlink; long adds each entry's mode and modification time.
ignore leaves out names matching glob patterns (node_modules, *.pyc). Prefer glob and grep when you know what you look for.`,
		Annotations: annot("List a directory"),
	}, s.ls)
}

func (s *Server) glob(ctx context.Context, req *mcp.CallToolRequest, in globIn) (*mcp.CallToolResult, globOut, error) {
	dir, err := s.wsPath(in.Path, "path")
	if err != nil {
		return nil, globOut{}, err
	}
	if strings.TrimSpace(in.Pattern) == "" {
		return nil, globOut{}, fmt.Errorf("glob: pattern is empty: give one such as **/*.go")
	}
	res, err := s.api().Glob(ctx, s.unmount(in.Pattern), workspace.GlobOptions{Dir: dir, Limit: globScan})
	if err != nil {
		return nil, globOut{}, toolError("glob", in.Pattern, err)
	}
	infos := s.statAll(ctx, res.Paths)
	type hit struct {
		p string
		t time.Time
	}
	var hits []hit
	for i, p := range res.Paths {
		if fi := infos[i]; fi != nil && !fi.IsDir() {
			hits = append(hits, hit{p, fi.Mtime})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].t.Equal(hits[j].t) {
			return hits[i].t.After(hits[j].t)
		}
		return hits[i].p < hits[j].p
	})
	out := globOut{Paths: []string{}}
	for i, h := range hits {
		if i == globShow {
			out.Truncated = true
			break
		}
		out.Paths = append(out.Paths, h.p)
	}
	out.Count = len(out.Paths)
	if res.Next != 0 {
		out.Truncated = true
	}
	text := strings.Join(out.Paths, "\n")
	switch {
	case len(out.Paths) == 0:
		text = "No files found"
	case out.Truncated:
		text += fmt.Sprintf("\n[more files match: these are the %d newest of the first %d matches; narrow the pattern or the path]", len(out.Paths), len(res.Paths))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

// statAll describes paths (following symlinks), with a few workers; a
// path that fails is nil. Paths that share a directory with others are
// described by one listing of it, not a call each: over the daemon's
// socket a call is the cost.
func (s *Server) statAll(ctx context.Context, paths []string) []*workspace.FileInfo {
	out := make([]*workspace.FileInfo, len(paths))
	byDir := map[string][]int{}
	for i, p := range paths {
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], i)
	}
	type job struct {
		dir string
		idx []int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range min(statWorkers, len(byDir)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				s.describe(ctx, j.dir, j.idx, paths, out)
			}
		}()
	}
	for dir, idx := range byDir {
		jobs <- job{dir, idx}
	}
	close(jobs)
	wg.Wait()
	return out
}

// describe fills out[i] for the paths idx of directory dir: from one
// listing when they are several, else by stat. A symlink in the listing
// is stat'ed, to describe what it leads to.
func (s *Server) describe(ctx context.Context, dir string, idx []int, paths []string, out []*workspace.FileInfo) {
	stat := func(i int) {
		if fi, err := s.api().Stat(ctx, paths[i]); err == nil {
			out[i] = &fi
		}
	}
	if len(idx) < 3 {
		for _, i := range idx {
			stat(i)
		}
		return
	}
	want := make(map[string]int, len(idx))
	for _, i := range idx {
		want[path.Base(paths[i])] = i
	}
	for off := 0; len(want) > 0; {
		res, err := s.api().List(ctx, dir, workspace.ListOptions{Limit: lsLimit, Offset: off})
		if err != nil {
			break
		}
		for _, e := range res.Entries {
			i, ok := want[e.Name]
			if !ok {
				continue
			}
			delete(want, e.Name)
			if e.Type == "symlink" {
				stat(i)
			} else {
				out[i] = &e
			}
		}
		if res.Next == 0 {
			break
		}
		off = res.Next
	}
	for _, i := range want {
		stat(i) // not listed (changed meanwhile): ask for it
	}
}

// rgTypes are ripgrep's file types (rg --type-list), the common ones.
var rgTypes = map[string][]string{
	"c":          {"*.c", "*.h"},
	"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss", "*.sass", "*.less"},
	"csv":        {"*.csv"},
	"docker":     {"Dockerfile", "*.dockerfile", "Dockerfile.*"},
	"go":         {"*.go"},
	"html":       {"*.html", "*.htm", "*.xhtml"},
	"java":       {"*.java"},
	"js":         {"*.js", "*.mjs", "*.cjs", "*.jsx"},
	"json":       {"*.json", "*.jsonl"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"markdown":   {"*.md", "*.markdown", "*.mdx"},
	"md":         {"*.md", "*.markdown", "*.mdx"},
	"php":        {"*.php"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"*.rb", "Gemfile", "Rakefile"},
	"ruby":       {"*.rb", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sc"},
	"sh":         {"*.sh", "*.bash", "*.zsh", ".bashrc", ".profile"},
	"sql":        {"*.sql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xsd", "*.xsl"},
	"yaml":       {"*.yaml", "*.yml"},
}

func (s *Server) grep(ctx context.Context, req *mcp.CallToolRequest, in grepIn) (*mcp.CallToolResult, grepOut, error) {
	p, err := s.wsPath(in.Path, "path")
	if err != nil {
		return nil, grepOut{}, err
	}
	if in.Pattern == "" {
		return nil, grepOut{}, fmt.Errorf("grep: pattern is empty")
	}
	opt := workspace.GrepOptions{Pattern: in.Pattern, Regex: true, IgnoreCase: in.I, Limit: in.HeadLimit, Offset: in.Offset}
	if opt.Limit <= 0 {
		opt.Limit = grepDefault
	}
	if opt.Offset < 0 {
		return nil, grepOut{}, fmt.Errorf("grep: offset must not be negative")
	}
	switch in.OutputMode {
	case "", "files_with_matches":
		opt.Mode = "files"
	case "content":
		opt.Mode = "content"
		opt.Before, opt.After = in.C, in.C
		if in.B > 0 {
			opt.Before = in.B
		}
		if in.A > 0 {
			opt.After = in.A
		}
	case "count":
		opt.Mode = "count"
	default:
		return nil, grepOut{}, fmt.Errorf("grep: output_mode %q: want content, files_with_matches or count", in.OutputMode)
	}
	if in.Glob != "" {
		for _, g := range splitGlobs(in.Glob) {
			if ex, ok := strings.CutPrefix(g, "!"); ok {
				opt.Exclude = append(opt.Exclude, ex)
			} else {
				opt.Include = append(opt.Include, g)
			}
		}
	}
	if in.Type != "" {
		globs, ok := rgTypes[strings.ToLower(in.Type)]
		if !ok {
			names := make([]string, 0, len(rgTypes))
			for k := range rgTypes {
				names = append(names, k)
			}
			sort.Strings(names)
			return nil, grepOut{}, fmt.Errorf("grep: unknown type %q: use one of %s, or a glob", in.Type, strings.Join(names, ", "))
		}
		if len(opt.Include) > 0 {
			return nil, grepOut{}, fmt.Errorf("grep: give glob or type, not both (type %s is the globs %s)", in.Type, strings.Join(globs, " "))
		}
		opt.Include = globs
	}
	search := func(offset, limit int) (workspace.GrepResult, error) {
		o := opt
		o.Offset, o.Limit = offset, limit
		if in.Multiline {
			return s.grepMultiline(ctx, p, o)
		}
		return s.api().Grep(ctx, p, o)
	}
	res, unsorted, err := s.grepNewestFirst(ctx, opt, search)
	if err != nil {
		return nil, grepOut{}, toolError("grep", p, err)
	}
	out := grepOut{Mode: in.OutputMode, Files: res.Files, Lines: res.Lines, Next: res.Next, Truncated: res.Next != 0, Skipped: res.Skipped}
	if out.Mode == "" {
		out.Mode = "files_with_matches"
	}
	numbers := in.N == nil || *in.N
	var b strings.Builder
	switch opt.Mode {
	case "files":
		out.Count = len(res.Files)
		for _, f := range res.Files {
			b.WriteString(f.Path + "\n")
		}
	case "count":
		total := 0
		for _, f := range res.Files {
			fmt.Fprintf(&b, "%s:%d\n", f.Path, f.Count)
			total += f.Count
		}
		out.Count = total
	case "content":
		prev := workspace.GrepLine{}
		for i, l := range res.Lines {
			if !l.Context {
				out.Count++
			}
			if i > 0 && (l.Path != prev.Path || l.Line > prev.Line+1) && (opt.Before > 0 || opt.After > 0) {
				b.WriteString("--\n")
			}
			sep := ":"
			if l.Context {
				sep = "-"
			}
			text, _ := cutLine(l.Text)
			if numbers {
				fmt.Fprintf(&b, "%s%s%d%s%s\n", l.Path, sep, l.Line, sep, text)
			} else {
				fmt.Fprintf(&b, "%s%s%s\n", l.Path, sep, text)
			}
			prev = l
		}
	}
	text := b.String()
	if text == "" {
		text = "No matches found\n"
	}
	if res.Next != 0 {
		text += fmt.Sprintf("[results cut at %d: pass offset=%d for more, or narrow the search]\n", opt.Limit, res.Next)
	}
	if unsorted {
		what := "files"
		if opt.Mode == "content" {
			what = "matching lines"
		}
		text += fmt.Sprintf("[more than %d %s matched: the first %d are sorted newest first, the rest follow in path order; narrow the search]\n", s.grepScan(opt.Mode), what, s.grepScan(opt.Mode))
	}
	if res.Skipped > 0 {
		text += fmt.Sprintf("[%d binary files skipped]\n", res.Skipped)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(text, "\n")}}}, out, nil
}

// splitGlobs splits rg --glob's argument at top-level commas and spaces:
// "*.ts, *.tsx" is two globs, "*.{ts,tsx}" one.
func splitGlobs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
		case ',', ' ':
			if depth == 0 {
				if g := strings.TrimSpace(s[start:i]); g != "" {
					out = append(out, g)
				}
				start = i + 1
			}
		}
	}
	if g := strings.TrimSpace(s[start:]); g != "" {
		out = append(out, g)
	}
	return out
}

func (s *Server) ls(ctx context.Context, req *mcp.CallToolRequest, in lsIn) (*mcp.CallToolResult, lsOut, error) {
	p, err := s.wsPath(in.Path, "path")
	if err != nil {
		return nil, lsOut{}, err
	}
	for _, g := range in.Ignore {
		if _, err := path.Match(g, ""); err != nil {
			return nil, lsOut{}, fmt.Errorf("ls: ignore pattern %q: %w", g, err)
		}
	}
	res, err := s.api().List(ctx, p, workspace.ListOptions{Limit: lsLimit})
	if err != nil {
		return nil, lsOut{}, toolError("ls", p, err)
	}
	out := lsOut{Path: p, Truncated: res.Next != 0, long: in.Long}
	shown := res.Entries[:0:0]
	for _, e := range res.Entries {
		if ignored(e.Name, in.Ignore) {
			out.Ignored++
			continue
		}
		shown = append(shown, e)
	}
	sort.SliceStable(shown, func(i, j int) bool {
		di, dj := shown[i].Type == "dir", shown[j].Type == "dir"
		if di != dj {
			return di
		}
		return shown[i].Name < shown[j].Name
	})
	out.entries = shown
	// The text is as compact as `ls -p` with sizes: it is what a model
	// reads (tokens), and what the SDK encodes beside the structured
	// content.
	var b strings.Builder
	b.Grow(len(p) + 24*len(shown))
	b.WriteString(p)
	for _, e := range shown {
		b.WriteByte('\n')
		b.WriteString(lsName(e.Name))
		switch e.Type {
		case "dir":
			b.WriteByte('/')
		case "symlink":
			b.WriteString(" -> ")
			b.WriteString(lsName(e.Target))
		case "file":
			b.WriteString("  ")
			b.WriteString(strconv.FormatInt(e.Size, 10))
		default:
			b.WriteString("  (" + e.Type + ")")
		}
		if in.Long {
			b.WriteString("  " + lsMode(e.Mode) + "  " + e.Mtime.UTC().Format(time.RFC3339))
		}
	}
	if len(shown) == 0 {
		b.WriteString("\n(empty)")
	}
	if out.Ignored > 0 {
		fmt.Fprintf(&b, "\n[%d entries ignored]", out.Ignored)
	}
	if out.Truncated {
		fmt.Fprintf(&b, "\n[only the first %d entries: use glob to find what you look for]", lsLimit)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

// lsName is a name as the listing's text shows it: quoted when it could
// be misread there (a control character, a trailing slash, an arrow, two
// spaces, quotes or spaces at its ends).
func lsName(n string) string {
	if n == "" || strings.ContainsFunc(n, unicode.IsControl) || strings.HasSuffix(n, "/") || strings.Contains(n, " -> ") ||
		strings.Contains(n, "  ") || n[0] == '"' || n[0] == ' ' || n[len(n)-1] == ' ' {
		return strconv.Quote(n)
	}
	return n
}

func ignored(name string, patterns []string) bool {
	for _, g := range patterns {
		if m, _ := path.Match(strings.TrimSuffix(g, "/"), name); m {
			return true
		}
	}
	return false
}

// grepScan is how many entries of a mode grep sorts newest first: files,
// or matching lines in content mode.
func (s *Server) grepScan(mode string) int {
	if s.grepScanLimit > 0 {
		return s.grepScanLimit
	}
	if mode == "content" {
		return grepScanLines
	}
	return grepScanFiles
}

// grepNewestFirst answers one page (opt.Offset, opt.Limit) of a grep with
// its files newest first, as Claude Code's Grep answers: search(offset,
// limit) pages through the results in path order. The first grepScan
// entries are fetched, their files described for their modification
// times and sorted (content mode: each file's lines kept together, in
// order), and the page cut from them; a page past them goes on in path
// order (unsorted says so), so that paging never repeats or skips an
// entry.
func (s *Server) grepNewestFirst(ctx context.Context, opt workspace.GrepOptions, search func(offset, limit int) (workspace.GrepResult, error)) (res workspace.GrepResult, unsorted bool, err error) {
	scan := s.grepScan(opt.Mode)
	all, err := search(0, scan)
	if err != nil {
		return workspace.GrepResult{}, false, err
	}
	more := all.Next != 0
	content := opt.Mode == "content"
	var paths []string
	if content {
		for i, l := range all.Lines {
			if i == 0 || l.Path != all.Lines[i-1].Path {
				paths = append(paths, l.Path)
			}
		}
	} else {
		for _, f := range all.Files {
			paths = append(paths, f.Path)
		}
	}
	var known []time.Time // the files' times, when the answer has them
	if !content {
		known = make([]time.Time, len(all.Files))
		for i, f := range all.Files {
			if f.Mtime.IsZero() {
				known = nil
				break
			}
			known[i] = f.Mtime
		}
	}
	order := s.newestFirst(ctx, paths, known)
	res.Skipped = all.Skipped
	var n int // entries scanned: files, or matching lines
	if content {
		groups := map[string][]workspace.GrepLine{}
		for _, l := range all.Lines {
			groups[l.Path] = append(groups[l.Path], l)
			if !l.Context {
				n++
			}
		}
		var sorted []workspace.GrepLine
		for _, i := range order {
			sorted = append(sorted, groups[paths[i]]...)
		}
		res.Lines = pageLines(sorted, opt.Offset, opt.Limit)
	} else {
		n = len(all.Files)
		sorted := make([]workspace.GrepFile, len(order))
		for k, i := range order {
			sorted[k] = all.Files[i]
		}
		if opt.Offset < n {
			res.Files = sorted[opt.Offset:min(opt.Offset+opt.Limit, n)]
		}
	}
	taken := max(min(opt.Offset+opt.Limit, n)-opt.Offset, 0)
	switch {
	case taken < opt.Limit && more:
		// The page goes on past the sorted entries, in path order.
		unsorted = true
		rest, err := search(max(opt.Offset, n), opt.Limit-taken)
		if err != nil {
			return workspace.GrepResult{}, false, err
		}
		res.Lines = append(res.Lines, rest.Lines...)
		res.Files = append(res.Files, rest.Files...)
		res.Skipped = max(res.Skipped, rest.Skipped)
		res.Next = rest.Next
	case opt.Offset+opt.Limit < n || more:
		res.Next = opt.Offset + opt.Limit
		unsorted = more && res.Next >= n
	}
	return res, unsorted, nil
}

// newestFirst returns the indexes of paths, newest file first; files of
// the same time (or that could not be described) keep their order.
// known, if not nil, holds their times; else they are asked for.
func (s *Server) newestFirst(ctx context.Context, paths []string, known []time.Time) []int {
	order := make([]int, len(paths))
	for i := range order {
		order[i] = i
	}
	if len(paths) < 2 {
		return order // nothing to sort: no call for the time
	}
	if known == nil {
		known = make([]time.Time, len(paths))
		for i, fi := range s.statAll(ctx, paths) {
			if fi != nil {
				known[i] = fi.Mtime
			}
		}
	}
	mtime := func(i int) time.Time { return known[i] }
	sort.SliceStable(order, func(a, b int) bool { return mtime(order[a]).After(mtime(order[b])) })
	return order
}

// pageLines cuts a page from content-mode lines as the file API pages
// them: offset and limit count matching lines, and the context lines
// around a match come with it.
func pageLines(lines []workspace.GrepLine, offset, limit int) []workspace.GrepLine {
	var keep []workspace.GrepLine
	seen := 0
	for i, l := range lines {
		if l.Context {
			continue
		}
		if seen < offset {
			seen++
			continue
		}
		if seen-offset == limit {
			break
		}
		// Context before this match, in its file, not yet kept.
		j := i
		for j > 0 && lines[j-1].Context && lines[j-1].Path == l.Path && (len(keep) == 0 || keep[len(keep)-1].Path != l.Path || lines[j-1].Line > keep[len(keep)-1].Line) {
			j--
		}
		keep = append(keep, lines[j:i+1]...)
		// Context after it, up to the next match.
		k := i + 1
		for k < len(lines) && lines[k].Context && lines[k].Path == l.Path {
			k++
		}
		keep = append(keep, lines[i+1:k]...)
		seen++
	}
	return keep
}
