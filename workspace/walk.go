package workspace

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
)

// Listings, globs and greps walk the tree depth first with names in byte
// order, so that every page of a paginated result is stable: the same
// tree gives the same order. Symlinks are listed, never followed by a
// walk (a link to a directory above would loop).

// DefaultLimit is the page size when a caller gives none; MaxLimit the
// largest page.
const (
	DefaultLimit = 200
	MaxLimit     = 10000
)

func pageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

// ListOptions qualify List.
type ListOptions struct {
	Recursive bool `json:"recursive,omitempty"`
	// Depth bounds a recursive listing: 1 lists the directory's own
	// entries only. 0 means no bound.
	Depth  int `json:"depth,omitempty"`
	Limit  int `json:"limit,omitempty"`
	Offset int `json:"offset,omitempty"`
}

// ListResult is one page of a listing.
type ListResult struct {
	Entries []FileInfo `json:"entries"`
	// Next is the offset of the next page, 0 when this is the last.
	Next int `json:"next,omitempty"`
}

// List lists a directory (or describes a single file).
func (w *WS) List(ctx context.Context, p string, opt ListOptions) (ListResult, error) {
	const op = "list"
	if opt.Offset < 0 || opt.Depth < 0 {
		return ListResult{}, pathErr(op, p, syscall.EINVAL)
	}
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		return ListResult{}, err
	}
	if r.ino == 0 {
		return ListResult{}, pathErr(op, p, syscall.ENOENT)
	}
	if !r.attr.IsDir() {
		return ListResult{Entries: []FileInfo{w.info(r.path, &r.attr)}}, nil
	}
	limit := pageLimit(opt.Limit)
	depth := 1
	if opt.Recursive {
		depth = opt.Depth
	}
	var out ListResult
	seen, after := 0, ""
	if depth == 1 && opt.Offset > 0 {
		// Skip to the page by names: attributes are read for the
		// entries listed, not for those skipped.
		if after, err = w.nameAt(r.ino, r.path, opt.Offset-1); err != nil {
			return ListResult{}, pathErr(op, p, err)
		}
		if after == "" {
			return out, nil // past the end
		}
		seen = opt.Offset
	}
	_, err = w.walkAttrsRec(ctx, r.ino, r.path, 1, depth, after, func(e walkEntry) (bool, error) {
		if seen < opt.Offset {
			seen++
			return true, nil
		}
		if len(out.Entries) == limit {
			out.Next = opt.Offset + limit
			return false, nil
		}
		out.Entries = append(out.Entries, infoOf(e.path, e.attr, e.target))
		seen++
		return true, nil
	})
	if err != nil {
		return ListResult{}, pathErr(op, p, err)
	}
	return out, nil
}

type walkEntry struct {
	ino   fs.Ino
	typ   uint32 // S_IFMT
	path  string
	depth int    // 1 for the entries of the starting directory
	dir   fs.Ino // the directory holding the entry
	name  string
	// attr and target: the entry's attributes and a symlink's target,
	// in walks with attributes (walkDirAttrs).
	attr   *fs.Attr
	target string
}

// attrPage is how many entries a walk with attributes reads at a time:
// one transaction of the fs each, not one per entry.
const attrPage = 256

// entryAttr returns the attributes of entry (ino, name) of directory dir.
// A name replaced since the directory was read (an atomic write gives it
// a new inode) is looked up again, so that a file that never stopped
// existing does not drop out of a walk; ENOENT means the name is gone.
func (w *WS) entryAttr(dir fs.Ino, name string, ino fs.Ino) (fs.Attr, error) {
	a, err := w.t.GetAttr(ino)
	if err == syscall.ENOENT || (err == nil && a.Nlink == 0 && !a.IsDir()) {
		return w.t.Lookup(fs.Caller{Uid: w.opts.Caller.Uid, Gid: w.opts.Caller.Gid}, dir, name)
	}
	return a, err
}

// walkDir visits the tree below directory ino, depth first, entries in
// name order; each directory is visited before its entries. maxDepth 0
// means no bound. visit returns false to stop the walk.
func (w *WS) walkDir(ctx context.Context, ino fs.Ino, p string, maxDepth int, visit func(walkEntry) (bool, error)) error {
	_, err := w.walkRec(ctx, ino, p, 1, maxDepth, visit)
	return err
}

// nameAt is the name of the i-th entry (from 0) of directory ino at p
// that the view shows, "" if it has no more.
func (w *WS) nameAt(ino fs.Ino, p string, i int) (string, error) {
	list, err := w.t.ReadDir(ino)
	if err != nil {
		return "", err
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." || w.rules != nil && w.hidden(joinPath(p, e.Name)) {
			continue
		}
		if i == 0 {
			return e.Name, nil
		}
		i--
	}
	return "", nil
}

// walkAttrsRec is walkRec with each entry's attributes (walkEntry.attr
// and target), read a page of entries at a time, starting after the
// name after at the top. An entry whose inode is gone by the time its
// page is read is not visited.
func (w *WS) walkAttrsRec(ctx context.Context, ino fs.Ino, p string, depth, maxDepth int, after string, visit func(walkEntry) (bool, error)) (bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		list, err := w.t.ReadDirAttrs(ino, after, attrPage)
		if err != nil {
			if err == syscall.ENOENT && depth > 1 {
				return true, nil // removed meanwhile
			}
			return false, err
		}
		for i := range list {
			e := &list[i]
			ep := joinPath(p, e.Name)
			if w.rules != nil && w.hidden(ep) {
				continue
			}
			more, err := visit(walkEntry{ino: e.Ino, typ: e.Type, path: ep, depth: depth, dir: ino, name: e.Name, attr: &e.Attr, target: e.Target})
			if err != nil || !more {
				return false, err
			}
			if e.Attr.IsDir() && (maxDepth == 0 || depth < maxDepth) {
				more, err := w.walkAttrsRec(ctx, e.Ino, ep, depth+1, maxDepth, "", visit)
				if err != nil || !more {
					return false, err
				}
			}
		}
		if len(list) < attrPage {
			return true, nil
		}
		after = list[len(list)-1].Name
	}
}

func (w *WS) walkRec(ctx context.Context, ino fs.Ino, p string, depth, maxDepth int, visit func(walkEntry) (bool, error)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	list, err := w.t.ReadDir(ino)
	if err != nil {
		if err == syscall.ENOENT && depth > 1 {
			return true, nil // removed meanwhile
		}
		return false, err
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		ep := joinPath(p, e.Name)
		if w.rules != nil && w.hidden(ep) {
			continue
		}
		more, err := visit(walkEntry{ino: e.Ino, typ: e.Type, path: ep, depth: depth, dir: ino, name: e.Name})
		if err != nil || !more {
			return false, err
		}
		if e.Type == syscall.S_IFDIR && (maxDepth == 0 || depth < maxDepth) {
			more, err := w.walkRec(ctx, e.Ino, ep, depth+1, maxDepth, visit)
			if err != nil || !more {
				return false, err
			}
		}
	}
	return true, nil
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// relTo returns p relative to dir ("" for dir itself).
func relTo(dir, p string) string {
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
}

// GlobOptions qualify Glob.
type GlobOptions struct {
	// Dir is where relative patterns start ("/" if empty).
	Dir    string `json:"dir,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Offset int    `json:"offset,omitempty"`
}

// GlobResult is one page of matching paths.
type GlobResult struct {
	Paths []string `json:"paths"`
	Next  int      `json:"next,omitempty"`
}

// Glob returns the paths matching pattern: `*`, `?`, `[...]`, `{a,b}` and
// `**` for any number of directories. Wildcards match names starting
// with a dot too.
func (w *WS) Glob(ctx context.Context, pattern string, opt GlobOptions) (GlobResult, error) {
	const op = "glob"
	dir := opt.Dir
	if dir == "" {
		dir = "/"
	}
	if strings.HasPrefix(pattern, "/") {
		dir, pattern = "/", strings.TrimLeft(pattern, "/")
	}
	if opt.Offset < 0 {
		return GlobResult{}, pathErr(op, pattern, syscall.EINVAL)
	}
	if err := checkPath(pattern); err != nil {
		return GlobResult{}, pathErr(op, pattern, err)
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return GlobResult{}, pathErr(op, pattern, err)
	}
	base, err := w.resolve(ctx, op, dir, true)
	if err != nil {
		return GlobResult{}, err
	}
	if base.ino == 0 {
		return GlobResult{}, pathErr(op, dir, syscall.ENOENT)
	}
	if !base.attr.IsDir() {
		return GlobResult{}, pathErr(op, dir, syscall.ENOTDIR)
	}
	// Start below the pattern's literal prefix, when it leads somewhere.
	start, startPath := base.ino, base.path
	if pre := g.LiteralPrefix(); pre != "" {
		r, err := w.walk(ctx, joinPath(base.path, pre), true)
		if err != nil || r.ino == 0 || !r.attr.IsDir() {
			return GlobResult{}, nil
		}
		if !strings.HasPrefix(r.path+"/", base.path+"/") && base.path != "/" {
			// A symlink in the prefix led elsewhere: walk from the base.
		} else {
			start, startPath = r.ino, r.path
		}
	}
	limit := pageLimit(opt.Limit)
	var out GlobResult
	seen := 0
	_, err = w.walkGlob(ctx, start, startPath, func(e walkEntry) (bool, bool, error) {
		rel := relTo(base.path, e.path)
		descend := e.typ == syscall.S_IFDIR && g.CouldMatchBelow(rel)
		if !g.Match(rel) {
			return true, descend, nil
		}
		if seen < opt.Offset {
			seen++
			return true, descend, nil
		}
		if len(out.Paths) == limit {
			out.Next = opt.Offset + limit
			return false, false, nil
		}
		out.Paths = append(out.Paths, e.path)
		seen++
		return true, descend, nil
	})
	if err != nil {
		return GlobResult{}, pathErr(op, pattern, err)
	}
	return out, nil
}

// walkGlob is walkRec where visit also says whether to descend.
func (w *WS) walkGlob(ctx context.Context, ino fs.Ino, p string, visit func(walkEntry) (more, descend bool, err error)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	list, err := w.t.ReadDir(ino)
	if err != nil {
		if err == syscall.ENOENT {
			return true, nil
		}
		return false, err
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		ep := joinPath(p, e.Name)
		if w.rules != nil && w.hidden(ep) {
			continue
		}
		more, descend, err := visit(walkEntry{ino: e.Ino, typ: e.Type, path: ep})
		if err != nil || !more {
			return false, err
		}
		if descend {
			more, err := w.walkGlob(ctx, e.Ino, ep, visit)
			if err != nil || !more {
				return false, err
			}
		}
	}
	return true, nil
}

// GrepFile is a file's count in files and count modes.
type GrepFile struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
	// Mtime is the file's modification time as it was searched (zero
	// when not known): callers sort by it without a call per file.
	Mtime time.Time `json:"mtime,omitzero"`
}

// GrepResult is one page of grep output.
type GrepResult struct {
	// Lines holds matches and context lines (content mode).
	Lines []GrepLine `json:"lines,omitempty"`
	// Files holds the files with matches (files and count modes).
	Files []GrepFile `json:"files,omitempty"`
	// Next is the offset of the next page, 0 when this is the last.
	Next int `json:"next,omitempty"`
	// Skipped counts binary files left out.
	Skipped int `json:"skipped_binary,omitempty"`
}

// Grep searches the files under p (or the file p) for lines matching
// opt.Pattern. Files are searched in parallel and reported in walk
// order; binary files (a NUL byte in their first 32 KiB) are skipped.
func (w *WS) Grep(ctx context.Context, p string, opt GrepOptions) (GrepResult, error) {
	const op = "grep"
	if opt.Offset < 0 || opt.Before < 0 || opt.After < 0 {
		return GrepResult{}, pathErr(op, p, syscall.EINVAL)
	}
	switch opt.Mode {
	case "", "content", "files", "count":
	default:
		return GrepResult{}, pathErr(op, p, fmt.Errorf("mode %q: want content, files or count: %w", opt.Mode, syscall.EINVAL))
	}
	m, err := newLineMatcher(opt)
	if err != nil {
		return GrepResult{}, pathErr(op, p, err)
	}
	filter, err := newFileFilter(opt.Include, opt.Exclude)
	if err != nil {
		return GrepResult{}, pathErr(op, p, err)
	}
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		return GrepResult{}, err
	}
	if r.ino == 0 {
		return GrepResult{}, pathErr(op, p, syscall.ENOENT)
	}
	g := &grepRun{w: w, m: m, opt: opt, limit: pageLimit(opt.Limit)}
	// The workers want every CPU: a governed daemon (internal/procs)
	// raises GOMAXPROCS before they are counted.
	defer w.f.Parallel()()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files := make(chan grepFile)
	results := make(chan chan grepOutcome, runtime.GOMAXPROCS(0)*2)
	walkErr := make(chan error, 1)
	go func() {
		defer close(results)
		defer close(files)
		var err error
		if !r.attr.IsDir() {
			if r.attr.IsRegular() {
				err = g.dispatch(ctx, files, results, grepFile{ino: r.ino, path: r.path})
			}
		} else {
			err = w.walkDir(ctx, r.ino, r.path, 0, func(e walkEntry) (bool, error) {
				if e.typ != syscall.S_IFREG || !filter.Allow(relTo(r.path, e.path)) {
					return true, nil
				}
				if err := g.dispatch(ctx, files, results, grepFile{ino: e.ino, path: e.path, dir: e.dir, name: e.name}); err != nil {
					return false, err
				}
				return true, nil
			})
		}
		walkErr <- err
	}()
	workers := runtime.GOMAXPROCS(0)
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for f := range files {
				f.out <- g.scanFile(ctx, f)
			}
		}()
	}
	var res GrepResult
	var firstErr error
	for out := range results {
		o := <-out
		if firstErr != nil || g.full {
			// Once the page is full, the files still in flight were
			// cancelled: their outcomes (and errors) do not count.
			continue
		}
		if o.err != nil {
			firstErr = o.err
			cancel()
			continue
		}
		if !g.take(&res, o) {
			cancel()
		}
	}
	for range workers {
		<-done
	}
	if err := <-walkErr; err != nil && firstErr == nil && !g.full {
		firstErr = err
	}
	if firstErr != nil {
		return GrepResult{}, pathErr(op, p, firstErr)
	}
	return res, nil
}

type grepFile struct {
	ino  fs.Ino
	path string
	dir  fs.Ino // the directory holding it, with name: 0 for a file given directly
	name string
	out  chan grepOutcome
}

type grepOutcome struct {
	path   string
	mtime  time.Time
	lines  []GrepLine
	count  int
	binary bool
	err    error
}

// grepRun is one Grep call: the walk hands files to workers in order
// (results holds their outcomes in the same order) and the caller takes
// them one by one until the page is full.
type grepRun struct {
	w     *WS
	m     *lineMatcher
	opt   GrepOptions
	limit int
	seen  int // matches (content) or files skipped for the offset so far
	full  bool
}

func (g *grepRun) dispatch(ctx context.Context, files chan<- grepFile, results chan<- chan grepOutcome, f grepFile) error {
	f.out = make(chan grepOutcome, 1)
	select {
	case results <- f.out:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case files <- f:
		return nil
	case <-ctx.Done():
		f.out <- grepOutcome{err: ctx.Err()}
		return ctx.Err()
	}
}

func (g *grepRun) scanFile(ctx context.Context, f grepFile) grepOutcome {
	o := grepOutcome{path: f.path}
	if ctx.Err() != nil {
		return o
	}
	a, err := g.w.t.Open(f.ino)
	if err == syscall.ENOENT && f.name != "" {
		// Replaced since the walk read its directory: search the file
		// the name holds now.
		c := fs.Caller{Uid: g.w.opts.Caller.Uid, Gid: g.w.opts.Caller.Gid}
		if la, lerr := g.w.t.Lookup(c, f.dir, f.name); lerr == nil && la.IsRegular() {
			f.ino = la.Ino
			a, err = g.w.t.Open(f.ino)
		}
	}
	if err != nil {
		if err == syscall.ENOENT {
			return o // removed meanwhile
		}
		o.err = fmt.Errorf("%s: %w", f.path, err)
		return o
	}
	defer g.w.t.Release(f.ino)
	o.mtime = time.Unix(0, a.Mtime)
	rd := &inoReader{ctx: ctx, f: g.w.t, ino: f.ino}
	switch g.opt.Mode {
	case "files":
		var hit bool
		hit, o.binary, err = g.m.hasMatch(rd)
		if hit {
			o.count = 1
		}
	case "count":
		o.count, o.binary, err = g.m.count(rd)
	default:
		o.count, o.binary, err = g.m.scan(rd, f.path, g.opt.Before, g.opt.After, func(l GrepLine) bool {
			o.lines = append(o.lines, l)
			return true
		})
	}
	if err != nil && ctx.Err() == nil {
		o.err = fmt.Errorf("%s: %w", f.path, err)
	}
	return o
}

// take adds a file's outcome to the page; false once the page is full.
func (g *grepRun) take(res *GrepResult, o grepOutcome) bool {
	if g.full {
		return false
	}
	if o.binary {
		res.Skipped++
		return true
	}
	if o.count == 0 {
		return true
	}
	if g.opt.Mode == "files" || g.opt.Mode == "count" {
		if g.seen < g.opt.Offset {
			g.seen++
			return true
		}
		if len(res.Files) == g.limit {
			res.Next = g.opt.Offset + g.limit
			g.full = true
			return false
		}
		res.Files = append(res.Files, GrepFile{Path: o.path, Count: o.count, Mtime: o.mtime})
		g.seen++
		return true
	}
	// Content: the page counts matching lines; context lines go with the
	// matches they surround.
	var keep []GrepLine
	for i, l := range o.lines {
		if l.Context {
			continue
		}
		if g.seen < g.opt.Offset {
			g.seen++
			continue
		}
		taken := g.seen - g.opt.Offset
		if taken == g.limit {
			res.Next = g.opt.Offset + g.limit
			g.full = true
			break
		}
		// Context before this match, not yet kept.
		j := i
		for j > 0 && o.lines[j-1].Context && (len(keep) == 0 || o.lines[j-1].Line > keep[len(keep)-1].Line) {
			j--
		}
		keep = append(keep, o.lines[j:i+1]...)
		// Context after it, up to the next match.
		k := i + 1
		for k < len(o.lines) && o.lines[k].Context {
			k++
		}
		keep = append(keep, o.lines[i+1:k]...)
		g.seen++
	}
	res.Lines = append(res.Lines, keep...)
	return !g.full
}

// inoReader reads an open inode from the start.
type inoReader struct {
	ctx context.Context
	f   tree
	ino fs.Ino
	off int64
}

func (r *inoReader) Read(b []byte) (int, error) {
	if len(b) > maxIO {
		b = b[:maxIO]
	}
	n, err := r.f.Read(r.ctx, r.ino, r.off, b)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, errEOF
	}
	r.off += int64(n)
	return n, nil
}

// TreeOptions qualify Tree.
type TreeOptions struct {
	// Depth bounds the nodes returned (1: the directory's entries); the
	// sizes always cover the whole subtree. 0 means 3.
	Depth int `json:"depth,omitempty"`
	// MaxEntries bounds the children listed per directory (0: 1000); the
	// rest are summed into Omitted.
	MaxEntries int `json:"max_entries,omitempty"`
}

// TreeNode summarises a subtree.
type TreeNode struct {
	Name     string      `json:"name"`
	Path     string      `json:"path"`
	Type     string      `json:"type"`
	Size     int64       `json:"size"`            // apparent bytes: the file's size, or the subtree's total
	Files    int64       `json:"files,omitempty"` // non-directories in the subtree
	Dirs     int64       `json:"dirs,omitempty"`  // directories below this one
	Children []*TreeNode `json:"children,omitempty"`
	Omitted  int         `json:"omitted,omitempty"` // children not listed
}

// Tree summarises the subtree at p: each directory's total size and
// counts, with children down to a depth.
func (w *WS) Tree(ctx context.Context, p string, opt TreeOptions) (*TreeNode, error) {
	const op = "tree"
	if opt.Depth < 0 || opt.MaxEntries < 0 {
		return nil, pathErr(op, p, syscall.EINVAL)
	}
	if opt.Depth == 0 {
		opt.Depth = 3
	}
	if opt.MaxEntries == 0 {
		opt.MaxEntries = 1000
	}
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		return nil, err
	}
	if r.ino == 0 {
		return nil, pathErr(op, p, syscall.ENOENT)
	}
	seen := make(map[fs.Ino]bool)
	n, err := w.summarise(ctx, r.ino, &r.attr, r.path, opt.Depth, opt.MaxEntries, seen)
	if err != nil {
		return nil, pathErr(op, p, err)
	}
	return n, nil
}

// Du is Tree without children: the total size and counts of p's subtree.
// Hard-linked files count once.
func (w *WS) Du(ctx context.Context, p string) (*TreeNode, error) {
	const op = "du"
	r, err := w.resolve(ctx, op, p, true)
	if err != nil {
		return nil, err
	}
	if r.ino == 0 {
		return nil, pathErr(op, p, syscall.ENOENT)
	}
	n, err := w.summarise(ctx, r.ino, &r.attr, r.path, 0, 0, make(map[fs.Ino]bool))
	if err != nil {
		return nil, pathErr(op, p, err)
	}
	return n, nil
}

func (w *WS) summarise(ctx context.Context, ino fs.Ino, a *fs.Attr, p string, depth, maxEntries int, seen map[fs.Ino]bool) (*TreeNode, error) {
	name := p[strings.LastIndexByte(p, '/')+1:]
	if p == "/" {
		name = "/"
	}
	n := &TreeNode{Name: name, Path: p, Type: TypeName(a.Mode)}
	if !a.IsDir() {
		if a.Nlink > 1 {
			if seen[ino] {
				return n, nil
			}
			seen[ino] = true
		}
		n.Size = int64(a.Size)
		return n, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The directory's own entries (maxDepth 1), a page of attributes
	// at a time; the walk into each is summarise's.
	_, err := w.walkAttrsRec(ctx, ino, p, 2, 1, "", func(e walkEntry) (bool, error) {
		ea := e.attr
		c, err := w.summarise(ctx, ea.Ino, ea, e.path, depth-1, maxEntries, seen)
		if err != nil {
			return false, err
		}
		n.Size += c.Size
		n.Files += c.Files
		n.Dirs += c.Dirs
		if ea.IsDir() {
			n.Dirs++
		} else {
			n.Files++
		}
		if depth > 0 {
			if len(n.Children) < maxEntries {
				if depth == 1 {
					c.Children, c.Omitted = nil, 0
				}
				n.Children = append(n.Children, c)
			} else {
				n.Omitted++
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

var errEOF = io.EOF
