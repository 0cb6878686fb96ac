// Package apitest is a conformance suite for workspace.API: the same
// table-driven tests run against the in-process implementation
// (*workspace.WS) and the one across a socket (*wsrpc.Client), so that the
// two cannot drift apart.
//
// Each test gets a fresh workspace from the caller's newEnv; the suite
// checks results through the API and, where the API could hide a
// problem, through the fs.FS underneath.
package apitest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/zeebo/blake3"
)

// Env is one fresh workspace as a test sees it: the API under test and the
// filesystem it works on (for setups and checks the API cannot make).
type Env struct {
	API workspace.API
	FS  *fs.FS
}

// OpenFS opens (creating it) the store at storePath with the given size
// limit (fs.DefaultLimit if 0), and registers a cleanup that closes it and
// checks the closed store with fsck, failing the test on any problem.
// Register the cleanups of whatever uses the FS after calling OpenFS, so
// that they run first.
func OpenFS(t testing.TB, storePath string, limit uint64) *fs.FS {
	t.Helper()
	f, err := fs.Open(storePath, fs.Options{Limit: limit, Logger: Logger(t)})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close workspace: %v", err)
		}
		CheckStore(t, storePath)
	})
	return f
}

// CheckStore runs fsck on a closed store and fails the test on damage.
func CheckStore(t testing.TB, storePath string) {
	t.Helper()
	st, err := chunkstore.Open(storePath, chunkstore.Options{MustExist: true})
	if err != nil {
		t.Errorf("fsck open: %v", err)
		return
	}
	defer st.Close()
	rep, err := fs.Check(st, false)
	if err != nil {
		t.Errorf("fsck: %v", err)
		return
	}
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
}

// Logger logs warnings and errors to the test's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// C is the state of one test case.
type C struct {
	*testing.T
	API workspace.API
	FS  *fs.FS
	Ctx context.Context
}

type testCase struct {
	name  string
	limit uint64
	run   func(c *C)
}

type group struct {
	name  string
	cases []testCase
}

// Run runs the suite. newEnv makes a fresh workspace whose size limit is
// limit (the default when 0), and registers its cleanup.
func Run(t *testing.T, newEnv func(t *testing.T, limit uint64) Env) {
	groups := []group{
		{"Stat", statCases()},
		{"Read", readCases()},
		{"Write", writeCases()},
		{"Edit", editCases()},
		{"List", listCases()},
		{"Mkdir", mkdirCases()},
		{"Remove", removeCases()},
		{"Rename", renameCases()},
		{"Copy", copyCases()},
		{"Symlink", symlinkCases()},
		{"SetAttr", setAttrCases()},
		{"Glob", globCases()},
		{"Grep", grepCases()},
		{"TreeDu", treeCases()},
		{"Changes", changesCases()},
		{"BadInput", badInputCases()},
		{"Limit", limitCases()},
		{"Concurrency", concurrencyCases()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					env := newEnv(t, tc.limit)
					ctx, cancel := context.WithCancel(context.Background())
					t.Cleanup(cancel)
					tc.run(&C{T: t, API: env.API, FS: env.FS, Ctx: ctx})
				})
			}
		})
	}
}

// ---------------------------------------------------------------------
// Helpers.

// build makes a tree. Each spec is "dir/", "link -> target",
// "file=content" or "file" (empty). It works in process, on the FS under
// the API: a setup, not a test of the API (which may be remote).
func (c *C) build(specs ...string) {
	c.Helper()
	local := workspace.New(c.FS, workspace.Options{})
	for _, s := range specs {
		switch {
		case strings.HasSuffix(s, "/"):
			if _, err := local.Mkdir(c.Ctx, s, workspace.MkdirOptions{Parents: true}); err != nil {
				c.Fatalf("build %q: %v", s, err)
			}
		case strings.Contains(s, " -> "):
			p, target, _ := strings.Cut(s, " -> ")
			if strings.HasPrefix(target, "/") {
				// An absolute target: made on the FS, so that the API
				// may refuse to make one without breaking the setup.
				c.fsSymlink(p, target)
				continue
			}
			if dir := path.Dir(p); dir != "." && dir != "/" {
				if _, err := local.Mkdir(c.Ctx, dir, workspace.MkdirOptions{Parents: true}); err != nil {
					c.Fatalf("build %q: %v", s, err)
				}
			}
			if err := local.Symlink(c.Ctx, target, p); err != nil {
				c.Fatalf("build %q: %v", s, err)
			}
		default:
			p, content, _ := strings.Cut(s, "=")
			if _, err := local.WriteFile(c.Ctx, p, []byte(content), workspace.WriteOptions{Parents: true}); err != nil {
				c.Fatalf("build %q: %v", s, err)
			}
		}
	}
}

// sub runs fn as a subtest on the same workspace.
func (c *C) sub(name string, fn func(c *C)) {
	c.Helper()
	c.T.Run(name, func(t *testing.T) { fn(&C{T: t, API: c.API, FS: c.FS, Ctx: c.Ctx}) })
}

func (c *C) mkdirAll(p string) {
	c.Helper()
	if _, err := c.API.Mkdir(c.Ctx, p, workspace.MkdirOptions{Parents: true}); err != nil {
		c.Fatalf("mkdir -p %s: %v", p, err)
	}
}

// fsSymlink makes a symlink directly on the FS.
func (c *C) fsSymlink(p, target string) {
	c.Helper()
	dir := c.stat(path.Dir(path.Join("/", p)))
	if _, err := c.FS.Create(fs.Caller{}, fs.Ino(dir.Ino), path.Base(p), fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: target}); err != nil {
		c.Fatalf("symlink %s -> %s: %v", p, target, err)
	}
}

// put writes a whole file, making its parents.
func (c *C) put(p, content string) workspace.WriteResult {
	c.Helper()
	res, err := c.API.Write(c.Ctx, p, strings.NewReader(content), workspace.WriteOptions{Parents: true})
	if err != nil {
		c.Fatalf("write %s: %v", p, err)
	}
	return res
}

func (c *C) putBytes(p string, data []byte) workspace.WriteResult {
	c.Helper()
	res, err := c.API.Write(c.Ctx, p, bytes.NewReader(data), workspace.WriteOptions{Parents: true})
	if err != nil {
		c.Fatalf("write %s: %v", p, err)
	}
	return res
}

// read reads a file through the API, returning its content and the
// reader's hash.
func (c *C) readOpt(p string, opt workspace.ReadOptions) (string, string, error) {
	rd, err := c.API.Read(c.Ctx, p, opt)
	if err != nil {
		return "", "", err
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return "", "", err
	}
	return string(b), rd.Hash(), nil
}

func (c *C) get(p string) string {
	c.Helper()
	s, _, err := c.readOpt(p, workspace.ReadOptions{})
	if err != nil {
		c.Fatalf("read %s: %v", p, err)
	}
	return s
}

func (c *C) wantContent(p, want string) {
	c.Helper()
	if got := c.get(p); got != want {
		c.Errorf("%s holds %q, want %q", p, got, want)
	}
}

func (c *C) stat(p string) workspace.FileInfo {
	c.Helper()
	fi, err := c.API.Stat(c.Ctx, p)
	if err != nil {
		c.Fatalf("stat %s: %v", p, err)
	}
	return fi
}

func (c *C) lstat(p string) workspace.FileInfo {
	c.Helper()
	fi, err := c.API.Lstat(c.Ctx, p)
	if err != nil {
		c.Fatalf("lstat %s: %v", p, err)
	}
	return fi
}

// exists reports whether p names something (a dangling symlink counts).
func (c *C) exists(p string) bool {
	c.Helper()
	_, err := c.API.Lstat(c.Ctx, p)
	if err == nil {
		return true
	}
	if !errors.Is(err, syscall.ENOENT) {
		c.Fatalf("lstat %s: %v", p, err)
	}
	return false
}

func (c *C) wantMissing(p string) {
	c.Helper()
	if c.exists(p) {
		c.Errorf("%s exists, want it missing", p)
	}
}

// wantErr checks that err is a *fs.PathError standing for errno.
func (c *C) wantErr(err error, errno syscall.Errno, what string) {
	c.Helper()
	if err == nil {
		c.Errorf("%s: no error, want %v", what, errno)
		return
	}
	if !errors.Is(err, errno) {
		c.Errorf("%s: %v, want %v (%s)", what, err, errno, errnoName(errno))
		return
	}
	if got := workspace.Errno(err); got != errno {
		c.Errorf("%s: Errno(%v) = %v, want %v", what, err, got, errno)
	}
	var pe *iofs.PathError
	if !errors.As(err, &pe) {
		c.Errorf("%s: %T is not a *fs.PathError: %v", what, err, err)
	}
	if strings.TrimSpace(err.Error()) == "" {
		c.Errorf("%s: empty error message", what)
	}
}

func (c *C) wantConflict(err error, what string) {
	c.Helper()
	if !errors.Is(err, workspace.ErrConflict) {
		c.Errorf("%s: %v, want ErrConflict", what, err)
		return
	}
	if got := workspace.Errno(err); got != syscall.ESTALE {
		c.Errorf("%s: Errno = %v, want ESTALE", what, got)
	}
}

func (c *C) ok(err error, what string) {
	c.Helper()
	if err != nil {
		c.Fatalf("%s: %v", what, err)
	}
}

func errnoName(e syscall.Errno) string { return fmt.Sprintf("errno %d", int(e)) }

// snapshot describes the whole tree, read from the FS directly: names,
// types, modes, sizes, link counts, mtimes, symlink targets and content
// hashes.
func (c *C) snapshot() string {
	c.Helper()
	var b strings.Builder
	var rec func(ino fs.Ino, p string)
	rec = func(ino fs.Ino, p string) {
		a, err := c.FS.GetAttr(ino)
		if err != nil {
			c.Fatalf("snapshot %s: %v", p, err)
		}
		fmt.Fprintf(&b, "%s %s %o size=%d nlink=%d mtime=%d", p, workspace.TypeName(a.Mode), a.Mode&07777, a.Size, a.Nlink, a.Mtime)
		switch {
		case a.IsSymlink():
			t, err := c.FS.Readlink(ino)
			if err != nil {
				c.Fatalf("snapshot readlink %s: %v", p, err)
			}
			fmt.Fprintf(&b, " -> %q", t)
		case a.IsRegular():
			fmt.Fprintf(&b, " hash=%s", c.fsHash(ino))
		}
		b.WriteByte('\n')
		if !a.IsDir() {
			return
		}
		ents, err := c.FS.ReadDir(ino)
		if err != nil {
			c.Fatalf("snapshot readdir %s: %v", p, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			rec(e.Ino, strings.TrimSuffix(p, "/")+"/"+e.Name)
		}
	}
	rec(fs.RootIno, "/")
	return b.String()
}

func (c *C) fsHash(ino fs.Ino) string {
	c.Helper()
	if _, err := c.FS.Open(ino); err != nil {
		c.Fatalf("open ino %d: %v", ino, err)
	}
	defer c.FS.Release(ino)
	h := blake3.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); ; {
		n, err := c.FS.Read(c.Ctx, ino, off, buf)
		if err != nil {
			c.Fatalf("read ino %d: %v", ino, err)
		}
		if n == 0 {
			break
		}
		h.Write(buf[:n])
		off += int64(n)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// listAll pages through a listing and returns the entries' paths.
func (c *C) listAll(p string, opt workspace.ListOptions) []string {
	c.Helper()
	var out []string
	for page := 0; ; page++ {
		if page > 10000 {
			c.Fatalf("list %s: no end to the pages", p)
		}
		res, err := c.API.List(c.Ctx, p, opt)
		if err != nil {
			c.Fatalf("list %s: %v", p, err)
		}
		for _, e := range res.Entries {
			out = append(out, e.Path)
		}
		if res.Next == 0 {
			return out
		}
		if res.Next <= opt.Offset {
			c.Fatalf("list %s: next %d after offset %d", p, res.Next, opt.Offset)
		}
		opt.Offset = res.Next
	}
}

func randBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	rand.NewChaCha8(s).Read(b)
	return b
}

// lazyRandom yields n pseudo-random bytes without holding them.
type lazyRandom struct {
	rng  *rand.ChaCha8
	left int64
	read int64
}

func newLazyRandom(n int64) *lazyRandom {
	return &lazyRandom{rng: rand.NewChaCha8([32]byte{7}), left: n}
}

func (r *lazyRandom) Read(b []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	r.rng.Read(b)
	r.left -= int64(len(b))
	r.read += int64(len(b))
	return len(b), nil
}

// failingReader yields data, then fails.
type failingReader struct {
	data []byte
}

var errReaderBroke = errors.New("the reader broke")

func (r *failingReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errReaderBroke
	}
	n := copy(b, r.data)
	r.data = r.data[n:]
	return n, nil
}

func eqStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

// ---------------------------------------------------------------------
// Stat and Lstat.

func statCases() []testCase {
	tree := func(c *C) {
		c.build("f=hello", "d/", "d/g=x", "l -> f", "dl -> d", "dangling -> nowhere")
	}
	type want struct {
		path, name, typ, target string
		size                    int64
		mode                    uint32
		err                     syscall.Errno
	}
	cases := []struct {
		name  string
		lstat bool
		p     string
		want  want
	}{
		{"stat file", false, "/f", want{path: "/f", name: "f", typ: "file", size: 5, mode: 0o644}},
		{"stat relative", false, "f", want{path: "/f", name: "f", typ: "file", size: 5, mode: 0o644}},
		{"stat dir", false, "/d", want{path: "/d", name: "d", typ: "dir", mode: 0o755}},
		{"stat dir trailing slash", false, "/d/", want{path: "/d", name: "d", typ: "dir", mode: 0o755}},
		{"stat root", false, "/", want{path: "/", name: "/", typ: "dir"}},
		{"stat dot dot inside", false, "/d/../f", want{path: "/f", name: "f", typ: "file", size: 5, mode: 0o644}},
		{"stat symlink follows", false, "/l", want{path: "/f", name: "f", typ: "file", size: 5, mode: 0o644}},
		{"stat through dir symlink", false, "/dl/g", want{path: "/d/g", name: "g", typ: "file", size: 1, mode: 0o644}},
		{"lstat file", true, "/f", want{path: "/f", name: "f", typ: "file", size: 5, mode: 0o644}},
		{"lstat dir", true, "/d", want{path: "/d", name: "d", typ: "dir", mode: 0o755}},
		{"lstat symlink", true, "/l", want{path: "/l", name: "l", typ: "symlink", target: "f", size: 1}},
		{"lstat dangling symlink", true, "/dangling", want{path: "/dangling", name: "dangling", typ: "symlink", target: "nowhere", size: 7}},
		{"stat dangling symlink", false, "/dangling", want{err: syscall.ENOENT}},
		{"stat missing", false, "/missing", want{err: syscall.ENOENT}},
		{"lstat missing", true, "/missing", want{err: syscall.ENOENT}},
		{"stat missing dir", false, "/missing/x", want{err: syscall.ENOENT}},
		{"stat below a file", false, "/f/x", want{err: syscall.ENOTDIR}},
		{"stat file with trailing slash", false, "/f/", want{err: syscall.ENOTDIR}},
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			tree(c)
			var fi workspace.FileInfo
			var err error
			if tc.lstat {
				fi, err = c.API.Lstat(c.Ctx, tc.p)
			} else {
				fi, err = c.API.Stat(c.Ctx, tc.p)
			}
			if tc.want.err != 0 {
				c.wantErr(err, tc.want.err, tc.name)
				return
			}
			c.ok(err, tc.name)
			w := tc.want
			if fi.Path != w.path || fi.Name != w.name || fi.Type != w.typ || fi.Target != w.target {
				c.Errorf("%s: got path %q name %q type %q target %q, want %q %q %q %q", tc.p, fi.Path, fi.Name, fi.Type, fi.Target, w.path, w.name, w.typ, w.target)
			}
			if w.typ != "dir" && fi.Size != w.size {
				c.Errorf("%s: size %d, want %d", tc.p, fi.Size, w.size)
			}
			if w.mode != 0 && fi.Mode != w.mode {
				c.Errorf("%s: mode %o, want %o", tc.p, fi.Mode, w.mode)
			}
			if fi.Ino == 0 || fi.Nlink == 0 || fi.Mtime.IsZero() {
				c.Errorf("%s: ino %d nlink %d mtime %v: want all set", tc.p, fi.Ino, fi.Nlink, fi.Mtime)
			}
		}})
	}
	out = append(out, testCase{name: "stat and lstat agree on a plain file", run: func(c *C) {
		tree(c)
		a, b := c.stat("/f"), c.lstat("/f")
		if a.Ino != b.Ino || a.Size != b.Size || !a.Mtime.Equal(b.Mtime) {
			c.Errorf("stat %+v, lstat %+v", a, b)
		}
		if l := c.lstat("/l"); l.Ino == a.Ino {
			c.Errorf("lstat of a symlink gave its target's inode")
		}
	}})
	return out
}

// ---------------------------------------------------------------------
// Read.

func readCases() []testCase {
	const text = "line1\nline2\nline3" // the last line has no newline
	cases := []struct {
		name     string
		opt      workspace.ReadOptions
		want     string
		wantHash bool
	}{
		{"whole", workspace.ReadOptions{}, text, true},
		{"byte range", workspace.ReadOptions{Offset: 2, Length: 3}, "ne1", false},
		{"offset to the end", workspace.ReadOptions{Offset: 12}, "line3", false},
		{"range past EOF", workspace.ReadOptions{Offset: 15, Length: 100}, "e3", false},
		{"offset past EOF", workspace.ReadOptions{Offset: 100}, "", false},
		{"first line", workspace.ReadOptions{Line: 1, Lines: 1}, "line1\n", false},
		{"middle line", workspace.ReadOptions{Line: 2, Lines: 1}, "line2\n", false},
		{"line to the end", workspace.ReadOptions{Line: 2}, "line2\nline3", false},
		{"last line without newline", workspace.ReadOptions{Line: 3, Lines: 1}, "line3", false},
		{"lines past EOF", workspace.ReadOptions{Line: 2, Lines: 10}, "line2\nline3", false},
		{"line beyond the file", workspace.ReadOptions{Line: 10}, "", false},
		{"line beyond the file with count", workspace.ReadOptions{Line: 4, Lines: 2}, "", false},
		{"two lines", workspace.ReadOptions{Line: 1, Lines: 2}, "line1\nline2\n", false},
		{"lines from the first", workspace.ReadOptions{Lines: 2}, "line1\nline2\n", false},
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			c.put("/f", text)
			rd, err := c.API.Read(c.Ctx, "/f", tc.opt)
			c.ok(err, "read")
			defer rd.Close()
			if info := rd.Info(); info.Path != "/f" || info.Size != int64(len(text)) || info.Type != "file" {
				c.Errorf("info %+v", info)
			}
			b, err := io.ReadAll(rd)
			c.ok(err, "read all")
			if string(b) != tc.want {
				c.Errorf("read %+v: %q, want %q", tc.opt, b, tc.want)
			}
			if tc.wantHash {
				if got := rd.Hash(); got != workspace.Hash([]byte(text)) {
					c.Errorf("hash after a full read: %q, want %q", got, workspace.Hash([]byte(text)))
				}
			} else if tc.opt.Offset > 0 || tc.opt.Length > 0 || tc.opt.Line > 1 {
				if got := rd.Hash(); got != "" {
					c.Errorf("hash of a partial read: %q, want none", got)
				}
			}
		}})
	}
	errCases := []struct {
		name string
		p    string
		opt  workspace.ReadOptions
		want syscall.Errno
	}{
		{"missing", "/missing", workspace.ReadOptions{}, syscall.ENOENT},
		{"directory", "/d", workspace.ReadOptions{}, syscall.EISDIR},
		{"root", "/", workspace.ReadOptions{}, syscall.EISDIR},
		{"bytes and lines", "/f", workspace.ReadOptions{Offset: 1, Line: 2}, syscall.EINVAL},
		{"negative offset", "/f", workspace.ReadOptions{Offset: -1}, syscall.EINVAL},
		{"negative line", "/f", workspace.ReadOptions{Line: -1}, syscall.EINVAL},
	}
	for _, tc := range errCases {
		out = append(out, testCase{name: "error " + tc.name, run: func(c *C) {
			c.build("f="+text, "d/")
			rd, err := c.API.Read(c.Ctx, tc.p, tc.opt)
			if err == nil {
				rd.Close()
			}
			c.wantErr(err, tc.want, "read "+tc.p)
		}})
	}
	out = append(out, testCase{name: "empty file", run: func(c *C) {
		c.put("/e", "")
		s, h, err := c.readOpt("/e", workspace.ReadOptions{})
		c.ok(err, "read")
		if s != "" || h != workspace.Hash(nil) {
			c.Errorf("empty file: %q hash %q", s, h)
		}
	}})
	out = append(out, testCase{name: "hash before EOF is empty", run: func(c *C) {
		c.put("/f", text)
		rd, err := c.API.Read(c.Ctx, "/f", workspace.ReadOptions{})
		c.ok(err, "read")
		defer rd.Close()
		if h := rd.Hash(); h != "" {
			c.Errorf("hash before reading: %q", h)
		}
	}})
	out = append(out, testCase{name: "large file streamed", run: func(c *C) {
		data := randBytes(1, 5<<20+123)
		res := c.putBytes("/big", data)
		if res.Size != int64(len(data)) || res.Hash != workspace.Hash(data) {
			c.Fatalf("write: %+v", res)
		}
		rd, err := c.API.Read(c.Ctx, "/big", workspace.ReadOptions{})
		c.ok(err, "read")
		defer rd.Close()
		// Small reads, so that the stream is consumed piecemeal.
		var got bytes.Buffer
		buf := make([]byte, 7777)
		for {
			n, err := rd.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			c.ok(err, "read")
		}
		if !bytes.Equal(got.Bytes(), data) {
			c.Fatalf("read %d bytes, not byte-identical to the %d written", got.Len(), len(data))
		}
		if rd.Hash() != workspace.Hash(data) {
			c.Errorf("hash %q, want %q", rd.Hash(), workspace.Hash(data))
		}
		// A range across a chunk boundary.
		s, _, err := c.readOpt("/big", workspace.ReadOptions{Offset: 1<<20 - 10, Length: 30})
		c.ok(err, "read range")
		if s != string(data[1<<20-10:1<<20+20]) {
			c.Errorf("range across a chunk boundary differs")
		}
	}})
	out = append(out, testCase{name: "line read of a long line", run: func(c *C) {
		long := strings.Repeat("x", 600<<10)
		c.put("/f", "a\n"+long+"\nb\n")
		s, _, err := c.readOpt("/f", workspace.ReadOptions{Line: 2, Lines: 1})
		c.ok(err, "read")
		if s != long+"\n" {
			c.Errorf("long line: got %d bytes, want %d", len(s), len(long)+1)
		}
		s, _, err = c.readOpt("/f", workspace.ReadOptions{Line: 3})
		c.ok(err, "read")
		if s != "b\n" {
			c.Errorf("line after a long one: %q", s)
		}
	}})
	return out
}

// ---------------------------------------------------------------------
// Write.

func writeCases() []testCase {
	w := func(c *C, p, content string, opt workspace.WriteOptions) (workspace.WriteResult, error) {
		return c.API.Write(c.Ctx, p, strings.NewReader(content), opt)
	}
	return []testCase{
		{name: "create", run: func(c *C) {
			res, err := w(c, "/new", "hello", workspace.WriteOptions{})
			c.ok(err, "write")
			want := workspace.WriteResult{Path: "/new", Size: 5, Written: 5, Hash: workspace.Hash([]byte("hello")), Created: true}
			if res != want {
				c.Errorf("result %+v, want %+v", res, want)
			}
			c.wantContent("/new", "hello")
			if fi := c.stat("/new"); fi.Mode != 0o644 || fi.Type != "file" || fi.Size != 5 {
				c.Errorf("new file: %+v", fi)
			}
		}},
		{name: "create empty", run: func(c *C) {
			res, err := w(c, "/e", "", workspace.WriteOptions{})
			c.ok(err, "write")
			if !res.Created || res.Size != 0 || res.Hash != workspace.Hash(nil) {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/e", "")
		}},
		{name: "overwrite keeps mode", run: func(c *C) {
			c.put("/f", "old content")
			_, err := c.API.SetAttr(c.Ctx, "/f", workspace.SetAttrOptions{Perm: ptr(uint32(0o600))})
			c.ok(err, "chmod")
			res, err := w(c, "/f", "new", workspace.WriteOptions{})
			c.ok(err, "write")
			if res.Created || res.Size != 3 || res.Written != 3 {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/f", "new")
			fi := c.stat("/f")
			if fi.Mode != 0o600 {
				c.Errorf("mode after overwrite %o, want 600", fi.Mode)
			}
		}},
		{name: "perm on create", run: func(c *C) {
			_, err := w(c, "/p", "x", workspace.WriteOptions{Perm: 0o640})
			c.ok(err, "write")
			if fi := c.stat("/p"); fi.Mode != 0o640 {
				c.Errorf("mode %o, want 640", fi.Mode)
			}
		}},
		{name: "perm on overwrite", run: func(c *C) {
			c.put("/p", "x")
			_, err := w(c, "/p", "y", workspace.WriteOptions{Perm: 0o700})
			c.ok(err, "write")
			if fi := c.stat("/p"); fi.Mode != 0o700 {
				c.Errorf("mode %o, want 700", fi.Mode)
			}
			c.wantContent("/p", "y")
		}},
		{name: "bad perm", run: func(c *C) {
			_, err := w(c, "/p", "x", workspace.WriteOptions{Perm: 0o10000})
			c.wantErr(err, syscall.EINVAL, "write with perm 10000")
			c.wantMissing("/p")
		}},
		{name: "exclusive on existing", run: func(c *C) {
			c.put("/f", "keep")
			_, err := w(c, "/f", "clobber", workspace.WriteOptions{Exclusive: true})
			c.wantErr(err, syscall.EEXIST, "exclusive write")
			c.wantContent("/f", "keep")
		}},
		{name: "exclusive on new", run: func(c *C) {
			res, err := w(c, "/f", "fresh", workspace.WriteOptions{Exclusive: true})
			c.ok(err, "exclusive write")
			if !res.Created {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/f", "fresh")
		}},
		{name: "append creates", run: func(c *C) {
			res, err := w(c, "/log", "one\n", workspace.WriteOptions{Append: true})
			c.ok(err, "append")
			if !res.Created || res.Size != 4 || res.Written != 4 {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/log", "one\n")
		}},
		{name: "append appends", run: func(c *C) {
			c.put("/log", "one\n")
			res, err := w(c, "/log", "two\n", workspace.WriteOptions{Append: true})
			c.ok(err, "append")
			if res.Created || res.Size != 8 || res.Written != 4 {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/log", "one\ntwo\n")
		}},
		{name: "append large", run: func(c *C) {
			c.put("/log", "head")
			data := randBytes(3, 3<<19+17)
			res, err := c.API.Write(c.Ctx, "/log", bytes.NewReader(data), workspace.WriteOptions{Append: true})
			c.ok(err, "append")
			if res.Written != int64(len(data)) || res.Size != int64(len(data))+4 {
				c.Errorf("result %+v", res)
			}
			if got := c.get("/log"); got != "head"+string(data) {
				c.Errorf("appended content differs (%d bytes)", len(got))
			}
		}},
		{name: "append and exclusive", run: func(c *C) {
			_, err := w(c, "/f", "x", workspace.WriteOptions{Append: true, Exclusive: true})
			c.wantErr(err, syscall.EINVAL, "append+exclusive")
			c.wantMissing("/f")
		}},
		{name: "parents", run: func(c *C) {
			res, err := w(c, "/a/b/c/f", "deep", workspace.WriteOptions{Parents: true})
			c.ok(err, "write")
			if res.Path != "/a/b/c/f" {
				c.Errorf("path %q", res.Path)
			}
			c.wantContent("/a/b/c/f", "deep")
			if fi := c.stat("/a/b"); fi.Type != "dir" {
				c.Errorf("/a/b: %+v", fi)
			}
		}},
		{name: "no parents", run: func(c *C) {
			_, err := w(c, "/a/b/f", "x", workspace.WriteOptions{})
			c.wantErr(err, syscall.ENOENT, "write without parents")
			c.wantMissing("/a")
		}},
		{name: "parents through a file", run: func(c *C) {
			c.put("/a", "file")
			_, err := w(c, "/a/b/f", "x", workspace.WriteOptions{Parents: true})
			c.wantErr(err, syscall.ENOTDIR, "write -p below a file")
			c.wantContent("/a", "file")
		}},
		{name: "if match", run: func(c *C) {
			c.put("/f", "v1")
			res, err := w(c, "/f", "v2", workspace.WriteOptions{IfMatch: workspace.Hash([]byte("v1"))})
			c.ok(err, "write if match")
			if res.Hash != workspace.Hash([]byte("v2")) {
				c.Errorf("result %+v", res)
			}
			c.wantContent("/f", "v2")
		}},
		{name: "if match conflict", run: func(c *C) {
			c.put("/f", "v1")
			before := c.snapshot()
			_, err := w(c, "/f", "v2", workspace.WriteOptions{IfMatch: workspace.Hash([]byte("v0"))})
			c.wantConflict(err, "write with a stale hash")
			c.wantContent("/f", "v1")
			if after := c.snapshot(); after != before {
				c.Errorf("a conflict changed the tree:\n%s\nto\n%s", before, after)
			}
		}},
		{name: "if match missing file", run: func(c *C) {
			_, err := w(c, "/f", "v2", workspace.WriteOptions{IfMatch: workspace.Hash(nil)})
			c.wantConflict(err, "write if match on a missing file")
			c.wantMissing("/f")
		}},
		{name: "if match append", run: func(c *C) {
			c.put("/f", "v1")
			_, err := w(c, "/f", "+", workspace.WriteOptions{Append: true, IfMatch: workspace.Hash([]byte("v1"))})
			c.ok(err, "append if match")
			_, err = w(c, "/f", "+", workspace.WriteOptions{Append: true, IfMatch: workspace.Hash([]byte("v1"))})
			c.wantConflict(err, "append with a stale hash")
			c.wantContent("/f", "v1+")
		}},
		{name: "to a directory", run: func(c *C) {
			c.build("d/")
			_, err := w(c, "/d", "x", workspace.WriteOptions{})
			c.wantErr(err, syscall.EISDIR, "write to a directory")
			_, err = w(c, "/d", "x", workspace.WriteOptions{Append: true})
			c.wantErr(err, syscall.EISDIR, "append to a directory")
			_, err = w(c, "/", "x", workspace.WriteOptions{})
			c.wantErr(err, syscall.EISDIR, "write to the root")
			if fi := c.stat("/d"); fi.Type != "dir" {
				c.Errorf("/d is now %+v", fi)
			}
		}},
		{name: "below a file", run: func(c *C) {
			c.put("/a", "file")
			_, err := w(c, "/a/b", "x", workspace.WriteOptions{})
			c.wantErr(err, syscall.ENOTDIR, "write below a file")
			c.wantContent("/a", "file")
		}},
		{name: "through a symlink", run: func(c *C) {
			c.build("f=old", "l -> f")
			_, err := w(c, "/l", "new", workspace.WriteOptions{})
			c.ok(err, "write through a symlink")
			c.wantContent("/f", "new")
			if fi := c.lstat("/l"); fi.Type != "symlink" {
				c.Errorf("the symlink was replaced: %+v", fi)
			}
		}},
		{name: "reader error leaves the file", run: func(c *C) {
			c.put("/f", "keep me")
			before := c.snapshot()
			_, err := c.API.Write(c.Ctx, "/f", &failingReader{data: randBytes(4, 3<<19)}, workspace.WriteOptions{})
			if err == nil {
				c.Fatalf("a write from a failing reader succeeded")
			}
			if !errors.Is(err, errReaderBroke) {
				c.Logf("reader error comes back as %v", err)
			}
			c.wantContent("/f", "keep me")
			if after := c.snapshot(); after != before {
				c.Errorf("a failed write changed the tree:\n%s\nto\n%s", before, after)
			}
		}},
		{name: "reader error creates nothing", run: func(c *C) {
			_, err := c.API.Write(c.Ctx, "/f", &failingReader{data: []byte("partial")}, workspace.WriteOptions{})
			if err == nil {
				c.Fatalf("a write from a failing reader succeeded")
			}
			c.wantMissing("/f")
		}},
	}
}

// ---------------------------------------------------------------------
// Edit.

func editCases() []testCase {
	const text = "hello world\nsecond line\nthird line\n"
	edit := func(c *C, edits []workspace.Edit, opt workspace.EditOptions) (workspace.EditResult, error) {
		return c.API.Edit(c.Ctx, "/f", edits, opt)
	}
	unchanged := func(c *C, err error, errno syscall.Errno, what, content string) {
		c.Helper()
		if errno == syscall.ESTALE {
			c.wantConflict(err, what)
		} else {
			c.wantErr(err, errno, what)
		}
		c.wantContent("/f", content)
	}
	cases := []testCase{
		{name: "single", run: func(c *C) {
			c.put("/f", text)
			res, err := edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			want := strings.Replace(text, "world", "there", 1)
			c.wantContent("/f", want)
			if res.Path != "/f" || res.Hash != workspace.Hash([]byte(want)) || res.Size != int64(len(want)) || len(res.Counts) != 1 || res.Counts[0] != 1 {
				c.Errorf("result %+v", res)
			}
		}},
		{name: "multiple", run: func(c *C) {
			c.put("/f", text)
			res, err := edit(c, []workspace.Edit{{Old: "hello", New: "goodbye"}, {Old: "third", New: "3rd"}, {Old: "goodbye world", New: "bye"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			c.wantContent("/f", "bye\nsecond line\n3rd line\n")
			if len(res.Counts) != 3 {
				c.Errorf("counts %v", res.Counts)
			}
		}},
		{name: "multiple atomic", run: func(c *C) {
			c.put("/f", text)
			before := c.snapshot()
			_, err := edit(c, []workspace.Edit{{Old: "hello", New: "goodbye"}, {Old: "not there", New: "x"}}, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "second edit fails", text)
			if after := c.snapshot(); after != before {
				c.Errorf("a failed edit changed the tree")
			}
		}},
		{name: "replace all", run: func(c *C) {
			c.put("/f", "a-a-a\nb a\n")
			res, err := edit(c, []workspace.Edit{{Old: "a", New: "x", ReplaceAll: true}, {Old: "b", New: "y"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			c.wantContent("/f", "x-x-x\ny x\n")
			if len(res.Counts) != 2 || res.Counts[0] != 4 || res.Counts[1] != 1 {
				c.Errorf("counts %v, want [4 1]", res.Counts)
			}
		}},
		{name: "replace all missing", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "zzz", New: "x", ReplaceAll: true}}, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "replace all of nothing", text)
		}},
		{name: "old missing", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "absent", New: "x"}}, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "old missing", text)
		}},
		{name: "ambiguous", run: func(c *C) {
			c.put("/f", text)
			before := c.snapshot()
			_, err := edit(c, []workspace.Edit{{Old: "line", New: "row"}}, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "ambiguous old", text)
			if err != nil && !strings.Contains(err.Error(), "2") {
				c.Errorf("ambiguity error does not say how many: %v", err)
			}
			if after := c.snapshot(); after != before {
				c.Errorf("a failed edit changed the tree")
			}
		}},
		{name: "empty old", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "", New: "x"}}, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "empty old", text)
		}},
		{name: "no edits", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, nil, workspace.EditOptions{})
			unchanged(c, err, syscall.EINVAL, "no edits", text)
		}},
		{name: "crlf kept", run: func(c *C) {
			c.put("/f", "one\r\ntwo\r\nthree\r\n")
			_, err := edit(c, []workspace.Edit{{Old: "one\ntwo", New: "uno\ndos\ntres"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			c.wantContent("/f", "uno\r\ndos\r\ntres\r\nthree\r\n")
		}},
		{name: "crlf new lines", run: func(c *C) {
			c.put("/f", "one\r\ntwo\r\n")
			_, err := edit(c, []workspace.Edit{{Old: "two", New: "2\nand more"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			c.wantContent("/f", "one\r\n2\r\nand more\r\n")
		}},
		{name: "mode kept", run: func(c *C) {
			c.put("/f", text)
			_, err := c.API.SetAttr(c.Ctx, "/f", workspace.SetAttrOptions{Perm: ptr(uint32(0o751))})
			c.ok(err, "chmod")
			_, err = edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			if fi := c.stat("/f"); fi.Mode != 0o751 {
				c.Errorf("mode after edit %o, want 751", fi.Mode)
			}
		}},
		{name: "diff", run: func(c *C) {
			c.put("/f", text)
			res, err := edit(c, []workspace.Edit{{Old: "second line", New: "2nd line"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			d := res.Diff
			for _, want := range []string{"--- /f\n+++ /f\n", "\n@@ -1,3 +1,3 @@\n", "\n hello world\n", "\n-second line\n", "\n+2nd line\n", "\n third line\n"} {
				if !strings.Contains("\n"+d, want) {
					c.Errorf("diff lacks %q:\n%s", want, d)
				}
			}
			if !strings.HasPrefix(d, "--- ") {
				c.Errorf("diff does not start with ---:\n%s", d)
			}
		}},
		{name: "dry run", run: func(c *C) {
			c.put("/f", text)
			before := c.snapshot()
			res, err := edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{DryRun: true})
			c.ok(err, "dry run")
			want := strings.Replace(text, "world", "there", 1)
			if res.Hash != workspace.Hash([]byte(want)) || res.Size != int64(len(want)) || !strings.Contains(res.Diff, "+hello there") {
				c.Errorf("dry run result %+v", res)
			}
			c.wantContent("/f", text)
			if after := c.snapshot(); after != before {
				c.Errorf("a dry run changed the tree")
			}
		}},
		{name: "dry run failing", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "absent", New: "x"}}, workspace.EditOptions{DryRun: true})
			unchanged(c, err, syscall.EINVAL, "dry run of a bad edit", text)
		}},
		{name: "if match", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{IfMatch: workspace.Hash([]byte(text))})
			c.ok(err, "edit if match")
			c.wantContent("/f", strings.Replace(text, "world", "there", 1))
		}},
		{name: "if match conflict", run: func(c *C) {
			c.put("/f", text)
			_, err := edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{IfMatch: workspace.Hash([]byte("other"))})
			unchanged(c, err, syscall.ESTALE, "edit with a stale hash", text)
		}},
		{name: "missing file", run: func(c *C) {
			_, err := edit(c, []workspace.Edit{{Old: "a", New: "b"}}, workspace.EditOptions{})
			c.wantErr(err, syscall.ENOENT, "edit a missing file")
			c.wantMissing("/f")
		}},
		{name: "directory", run: func(c *C) {
			c.build("f/")
			_, err := edit(c, []workspace.Edit{{Old: "a", New: "b"}}, workspace.EditOptions{})
			c.wantErr(err, syscall.EISDIR, "edit a directory")
		}},
		{name: "through a symlink", run: func(c *C) {
			c.build("real="+text, "f -> real")
			_, err := edit(c, []workspace.Edit{{Old: "world", New: "there"}}, workspace.EditOptions{})
			c.ok(err, "edit through a symlink")
			c.wantContent("/real", strings.Replace(text, "world", "there", 1))
			if fi := c.lstat("/f"); fi.Type != "symlink" {
				c.Errorf("the symlink was replaced: %+v", fi)
			}
		}},
	}
	return cases
}

// ---------------------------------------------------------------------
// List.

func listCases() []testCase {
	tree := func(c *C) {
		c.build("b/", "b/y=yy", "b/x/", "b/x/deep/", "b/x/deep/z=z", "a=1", "c.txt=ccc", "B=upper", "l -> a", "e/")
	}
	names := func(c *C, p string, opt workspace.ListOptions) []string {
		c.Helper()
		return c.listAll(p, opt)
	}
	cases := []struct {
		name string
		p    string
		opt  workspace.ListOptions
		want []string
	}{
		{"flat", "/", workspace.ListOptions{}, []string{"/B", "/a", "/b", "/c.txt", "/e", "/l"}},
		{"flat subdir", "/b", workspace.ListOptions{}, []string{"/b/x", "/b/y"}},
		{"flat relative", "b", workspace.ListOptions{}, []string{"/b/x", "/b/y"}},
		{"recursive", "/", workspace.ListOptions{Recursive: true}, []string{"/B", "/a", "/b", "/b/x", "/b/x/deep", "/b/x/deep/z", "/b/y", "/c.txt", "/e", "/l"}},
		{"recursive depth 1", "/", workspace.ListOptions{Recursive: true, Depth: 1}, []string{"/B", "/a", "/b", "/c.txt", "/e", "/l"}},
		{"recursive depth 2", "/", workspace.ListOptions{Recursive: true, Depth: 2}, []string{"/B", "/a", "/b", "/b/x", "/b/y", "/c.txt", "/e", "/l"}},
		{"recursive subdir", "/b", workspace.ListOptions{Recursive: true}, []string{"/b/x", "/b/x/deep", "/b/x/deep/z", "/b/y"}},
		{"dot dot", "/b/x/deep/../..", workspace.ListOptions{}, []string{"/b/x", "/b/y"}},
		{"dot dot to the root", "/b/x/../..", workspace.ListOptions{}, []string{"/B", "/a", "/b", "/c.txt", "/e", "/l"}},
		{"empty dir", "/e", workspace.ListOptions{}, nil},
		{"a file", "/c.txt", workspace.ListOptions{}, []string{"/c.txt"}},
		{"a symlink to a file", "/l", workspace.ListOptions{}, []string{"/a"}},
		{"paged by 3", "/", workspace.ListOptions{Recursive: true, Limit: 3}, []string{"/B", "/a", "/b", "/b/x", "/b/x/deep", "/b/x/deep/z", "/b/y", "/c.txt", "/e", "/l"}},
		{"paged by 1", "/", workspace.ListOptions{Limit: 1}, []string{"/B", "/a", "/b", "/c.txt", "/e", "/l"}},
		{"paged by exact size", "/", workspace.ListOptions{Limit: 6}, []string{"/B", "/a", "/b", "/c.txt", "/e", "/l"}},
		{"offset past the end", "/", workspace.ListOptions{Offset: 100}, nil},
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			tree(c)
			got := names(c, tc.p, tc.opt)
			if !eqStrings(got, tc.want) {
				c.Errorf("list %s %+v:\n got %q\nwant %q", tc.p, tc.opt, got, tc.want)
			}
		}})
	}
	out = append(out,
		testCase{name: "pages", run: func(c *C) {
			tree(c)
			full, err := c.API.List(c.Ctx, "/", workspace.ListOptions{Recursive: true, Limit: 1000})
			c.ok(err, "list")
			if full.Next != 0 {
				c.Errorf("a complete listing has next %d", full.Next)
			}
			var pages []workspace.FileInfo
			off := 0
			for i := 0; ; i++ {
				res, err := c.API.List(c.Ctx, "/", workspace.ListOptions{Recursive: true, Limit: 3, Offset: off})
				c.ok(err, "list page")
				if len(res.Entries) > 3 {
					c.Fatalf("page of %d entries with limit 3", len(res.Entries))
				}
				pages = append(pages, res.Entries...)
				if res.Next == 0 {
					break
				}
				if res.Next != off+3 {
					c.Errorf("page at %d: next %d, want %d", off, res.Next, off+3)
				}
				off = res.Next
			}
			if len(pages) != len(full.Entries) {
				c.Fatalf("pages hold %d entries, the listing %d", len(pages), len(full.Entries))
			}
			for i := range pages {
				a, b := pages[i], full.Entries[i]
				if a.Path != b.Path || a.Ino != b.Ino || a.Size != b.Size || a.Type != b.Type || a.Mode != b.Mode || a.Target != b.Target {
					c.Errorf("entry %d: paged %+v, whole %+v", i, a, b)
				}
			}
		}},
		testCase{name: "entry details", run: func(c *C) {
			tree(c)
			res, err := c.API.List(c.Ctx, "/", workspace.ListOptions{})
			c.ok(err, "list")
			byName := map[string]workspace.FileInfo{}
			for _, e := range res.Entries {
				byName[e.Name] = e
			}
			if e := byName["c.txt"]; e.Type != "file" || e.Size != 3 || e.Path != "/c.txt" || e.Mode != 0o644 {
				c.Errorf("c.txt: %+v", e)
			}
			if e := byName["b"]; e.Type != "dir" {
				c.Errorf("b: %+v", e)
			}
			if e := byName["l"]; e.Type != "symlink" || e.Target != "a" {
				c.Errorf("l: %+v (a listing must not follow symlinks)", e)
			}
		}},
		testCase{name: "missing", run: func(c *C) {
			_, err := c.API.List(c.Ctx, "/nope", workspace.ListOptions{})
			c.wantErr(err, syscall.ENOENT, "list a missing dir")
		}},
		testCase{name: "negative offset", run: func(c *C) {
			_, err := c.API.List(c.Ctx, "/", workspace.ListOptions{Offset: -1})
			c.wantErr(err, syscall.EINVAL, "list with a negative offset")
		}},
		testCase{name: "symlink loop not followed", run: func(c *C) {
			c.build("d/", "d/up -> ..", "d/f=1")
			got := c.listAll("/", workspace.ListOptions{Recursive: true})
			want := []string{"/d", "/d/f", "/d/up"}
			if !eqStrings(got, want) {
				c.Errorf("recursive listing with a symlink to a parent: %q, want %q", got, want)
			}
		}},
	)
	return out
}

// ---------------------------------------------------------------------
// Mkdir.

func mkdirCases() []testCase {
	return []testCase{
		{name: "simple", run: func(c *C) {
			fi, err := c.API.Mkdir(c.Ctx, "/d", workspace.MkdirOptions{})
			c.ok(err, "mkdir")
			if fi.Path != "/d" || fi.Type != "dir" || fi.Mode != 0o755 {
				c.Errorf("mkdir: %+v", fi)
			}
			if fi := c.stat("/d"); fi.Type != "dir" {
				c.Errorf("stat: %+v", fi)
			}
		}},
		{name: "parents", run: func(c *C) {
			fi, err := c.API.Mkdir(c.Ctx, "/a/b/c", workspace.MkdirOptions{Parents: true})
			c.ok(err, "mkdir -p")
			if fi.Path != "/a/b/c" || fi.Type != "dir" {
				c.Errorf("mkdir -p: %+v", fi)
			}
			for _, p := range []string{"/a", "/a/b", "/a/b/c"} {
				if fi := c.stat(p); fi.Type != "dir" {
					c.Errorf("%s: %+v", p, fi)
				}
			}
		}},
		{name: "parents existing", run: func(c *C) {
			c.build("a/b/", "a/b/f=x")
			fi, err := c.API.Mkdir(c.Ctx, "/a/b", workspace.MkdirOptions{Parents: true})
			c.ok(err, "mkdir -p of an existing dir")
			if fi.Type != "dir" || fi.Path != "/a/b" {
				c.Errorf("mkdir -p: %+v", fi)
			}
			c.wantContent("/a/b/f", "x")
		}},
		{name: "existing without parents", run: func(c *C) {
			c.build("d/")
			_, err := c.API.Mkdir(c.Ctx, "/d", workspace.MkdirOptions{})
			c.wantErr(err, syscall.EEXIST, "mkdir of an existing dir")
		}},
		{name: "existing file", run: func(c *C) {
			c.put("/f", "x")
			_, err := c.API.Mkdir(c.Ctx, "/f", workspace.MkdirOptions{})
			c.wantErr(err, syscall.EEXIST, "mkdir over a file")
			_, err = c.API.Mkdir(c.Ctx, "/f", workspace.MkdirOptions{Parents: true})
			c.wantErr(err, syscall.EEXIST, "mkdir -p over a file")
			c.wantContent("/f", "x")
		}},
		{name: "missing parent", run: func(c *C) {
			_, err := c.API.Mkdir(c.Ctx, "/a/b", workspace.MkdirOptions{})
			c.wantErr(err, syscall.ENOENT, "mkdir without its parent")
			c.wantMissing("/a")
		}},
		{name: "parent is a file", run: func(c *C) {
			c.put("/f", "x")
			_, err := c.API.Mkdir(c.Ctx, "/f/d", workspace.MkdirOptions{Parents: true})
			c.wantErr(err, syscall.ENOTDIR, "mkdir -p below a file")
		}},
		{name: "perm", run: func(c *C) {
			fi, err := c.API.Mkdir(c.Ctx, "/d", workspace.MkdirOptions{Perm: 0o700})
			c.ok(err, "mkdir")
			if fi.Mode != 0o700 || c.stat("/d").Mode != 0o700 {
				c.Errorf("mode %o, want 700", fi.Mode)
			}
		}},
		{name: "bad perm", run: func(c *C) {
			_, err := c.API.Mkdir(c.Ctx, "/d", workspace.MkdirOptions{Perm: 0o17777})
			c.wantErr(err, syscall.EINVAL, "mkdir with a bad perm")
			c.wantMissing("/d")
		}},
		{name: "root", run: func(c *C) {
			_, err := c.API.Mkdir(c.Ctx, "/", workspace.MkdirOptions{})
			c.wantErr(err, syscall.EEXIST, "mkdir /")
		}},
	}
}

// ---------------------------------------------------------------------
// Remove.

func removeCases() []testCase {
	rm := func(c *C, p string, opt workspace.RemoveOptions) (int, error) {
		return c.API.Remove(c.Ctx, p, opt)
	}
	return []testCase{
		{name: "file", run: func(c *C) {
			c.build("f=x", "g=y")
			n, err := rm(c, "/f", workspace.RemoveOptions{})
			c.ok(err, "remove")
			if n != 1 {
				c.Errorf("removed %d", n)
			}
			c.wantMissing("/f")
			c.wantContent("/g", "y")
		}},
		{name: "empty dir", run: func(c *C) {
			c.build("d/")
			n, err := rm(c, "/d", workspace.RemoveOptions{})
			c.ok(err, "remove")
			if n != 1 {
				c.Errorf("removed %d", n)
			}
			c.wantMissing("/d")
		}},
		{name: "non-empty dir", run: func(c *C) {
			c.build("d/", "d/f=x")
			before := c.snapshot()
			_, err := rm(c, "/d", workspace.RemoveOptions{})
			c.wantErr(err, syscall.ENOTEMPTY, "remove a non-empty dir")
			if after := c.snapshot(); after != before {
				c.Errorf("a failed remove changed the tree")
			}
		}},
		{name: "recursive", run: func(c *C) {
			c.build("t/a=1", "t/b=2", "t/s/c=3", "t/s/s2/", "t/l -> a", "keep=k")
			n, err := rm(c, "/t", workspace.RemoveOptions{Recursive: true})
			c.ok(err, "remove -r")
			if n != 7 { // t, a, b, s, c, s2, l
				c.Errorf("removed %d, want 7", n)
			}
			c.wantMissing("/t")
			c.wantContent("/keep", "k")
		}},
		{name: "recursive file", run: func(c *C) {
			c.build("f=x")
			n, err := rm(c, "/f", workspace.RemoveOptions{Recursive: true})
			c.ok(err, "remove -r of a file")
			if n != 1 {
				c.Errorf("removed %d", n)
			}
		}},
		{name: "force missing", run: func(c *C) {
			n, err := rm(c, "/nope", workspace.RemoveOptions{Force: true})
			if err != nil || n != 0 {
				c.Errorf("remove -f of a missing file: %d, %v", n, err)
			}
			n, err = rm(c, "/nope/deeper", workspace.RemoveOptions{Force: true, Recursive: true})
			if err != nil || n != 0 {
				c.Errorf("remove -rf below a missing dir: %d, %v", n, err)
			}
		}},
		{name: "missing", run: func(c *C) {
			_, err := rm(c, "/nope", workspace.RemoveOptions{})
			c.wantErr(err, syscall.ENOENT, "remove a missing file")
		}},
		{name: "root", run: func(c *C) {
			c.build("f=x", "d/g=y")
			before := c.snapshot()
			for _, p := range []string{"/", ".", "/d/.."} {
				for _, opt := range []workspace.RemoveOptions{{}, {Recursive: true, Force: true}} {
					if _, err := rm(c, p, opt); err == nil {
						c.Errorf("remove %q %+v: no error", p, opt)
					}
				}
			}
			if after := c.snapshot(); after != before {
				c.Errorf("removing the root changed the tree")
			}
		}},
		{name: "symlink to a file", run: func(c *C) {
			c.build("f=target", "l -> f")
			n, err := rm(c, "/l", workspace.RemoveOptions{})
			c.ok(err, "remove a symlink")
			if n != 1 {
				c.Errorf("removed %d", n)
			}
			c.wantMissing("/l")
			c.wantContent("/f", "target")
		}},
		{name: "symlink to a dir", run: func(c *C) {
			c.build("d/f=target", "l -> d")
			n, err := rm(c, "/l", workspace.RemoveOptions{Recursive: true})
			c.ok(err, "remove -r a symlink")
			if n != 1 {
				c.Errorf("removed %d", n)
			}
			c.wantMissing("/l")
			c.wantContent("/d/f", "target")
		}},
		{name: "dangling symlink", run: func(c *C) {
			c.build("l -> nowhere")
			_, err := rm(c, "/l", workspace.RemoveOptions{})
			c.ok(err, "remove a dangling symlink")
			c.wantMissing("/l")
		}},
	}
}

// ---------------------------------------------------------------------
// Rename.

func renameCases() []testCase {
	mv := func(c *C, src, dst string, opt workspace.RenameOptions) error {
		return c.API.Rename(c.Ctx, src, dst, opt)
	}
	return []testCase{
		{name: "file", run: func(c *C) {
			c.build("f=x")
			ino := c.stat("/f").Ino
			c.ok(mv(c, "/f", "/g", workspace.RenameOptions{}), "rename")
			c.wantMissing("/f")
			c.wantContent("/g", "x")
			if c.stat("/g").Ino != ino {
				c.Errorf("rename changed the inode")
			}
		}},
		{name: "file into a dir", run: func(c *C) {
			c.build("f=x", "d/")
			c.ok(mv(c, "/f", "/d/f2", workspace.RenameOptions{}), "rename")
			c.wantMissing("/f")
			c.wantContent("/d/f2", "x")
		}},
		{name: "dir", run: func(c *C) {
			c.build("d/a=1", "d/s/b=2")
			c.ok(mv(c, "/d", "/e", workspace.RenameOptions{}), "rename")
			c.wantMissing("/d")
			c.wantContent("/e/a", "1")
			c.wantContent("/e/s/b", "2")
		}},
		{name: "replace", run: func(c *C) {
			c.build("f=new", "g=old")
			c.ok(mv(c, "/f", "/g", workspace.RenameOptions{}), "rename over a file")
			c.wantMissing("/f")
			c.wantContent("/g", "new")
		}},
		{name: "no replace", run: func(c *C) {
			c.build("f=new", "g=old")
			err := mv(c, "/f", "/g", workspace.RenameOptions{NoReplace: true})
			c.wantErr(err, syscall.EEXIST, "rename noreplace")
			c.wantContent("/f", "new")
			c.wantContent("/g", "old")
		}},
		{name: "no replace free", run: func(c *C) {
			c.build("f=new")
			c.ok(mv(c, "/f", "/g", workspace.RenameOptions{NoReplace: true}), "rename noreplace")
			c.wantContent("/g", "new")
		}},
		{name: "exchange", run: func(c *C) {
			c.build("f=one", "d/g=two")
			c.ok(mv(c, "/f", "/d/g", workspace.RenameOptions{Exchange: true}), "exchange")
			c.wantContent("/f", "two")
			c.wantContent("/d/g", "one")
		}},
		{name: "exchange file and dir", run: func(c *C) {
			c.build("f=one", "d/x=in")
			c.ok(mv(c, "/f", "/d", workspace.RenameOptions{Exchange: true}), "exchange")
			c.wantContent("/d", "one")
			c.wantContent("/f/x", "in")
		}},
		{name: "exchange missing", run: func(c *C) {
			c.build("f=one")
			err := mv(c, "/f", "/g", workspace.RenameOptions{Exchange: true})
			c.wantErr(err, syscall.ENOENT, "exchange with a missing file")
			c.wantContent("/f", "one")
		}},
		{name: "into own subdirectory", run: func(c *C) {
			c.build("d/s/f=x")
			before := c.snapshot()
			err := mv(c, "/d", "/d/s/d2", workspace.RenameOptions{})
			c.wantErr(err, syscall.EINVAL, "rename into its own subdirectory")
			if after := c.snapshot(); after != before {
				c.Errorf("a failed rename changed the tree")
			}
		}},
		{name: "dir over a non-empty dir", run: func(c *C) {
			c.build("a/x=1", "b/y=2")
			err := mv(c, "/a", "/b", workspace.RenameOptions{})
			c.wantErr(err, syscall.ENOTEMPTY, "rename over a non-empty dir")
		}},
		{name: "dir over an empty dir", run: func(c *C) {
			c.build("a/x=1", "b/")
			c.ok(mv(c, "/a", "/b", workspace.RenameOptions{}), "rename over an empty dir")
			c.wantContent("/b/x", "1")
		}},
		{name: "file over a dir", run: func(c *C) {
			c.build("f=1", "b/")
			err := mv(c, "/f", "/b", workspace.RenameOptions{})
			c.wantErr(err, syscall.EISDIR, "rename a file over a dir")
		}},
		{name: "missing source", run: func(c *C) {
			err := mv(c, "/nope", "/g", workspace.RenameOptions{})
			c.wantErr(err, syscall.ENOENT, "rename a missing file")
		}},
		{name: "root", run: func(c *C) {
			c.build("d/")
			err := mv(c, "/", "/d/root", workspace.RenameOptions{})
			if err == nil {
				c.Errorf("renaming the root worked")
			}
		}},
		{name: "symlink moves the link", run: func(c *C) {
			c.build("f=x", "l -> f")
			c.ok(mv(c, "/l", "/m", workspace.RenameOptions{}), "rename a symlink")
			if fi := c.lstat("/m"); fi.Type != "symlink" || fi.Target != "f" {
				c.Errorf("/m: %+v", fi)
			}
			c.wantContent("/f", "x")
		}},
	}
}

// ---------------------------------------------------------------------
// Copy.

func copyCases() []testCase {
	cp := func(c *C, src, dst string, opt workspace.CopyOptions) (int, error) {
		return c.API.Copy(c.Ctx, src, dst, opt)
	}
	return []testCase{
		{name: "file", run: func(c *C) {
			c.build("f=original")
			_, err := c.API.SetAttr(c.Ctx, "/f", workspace.SetAttrOptions{Perm: ptr(uint32(0o600))})
			c.ok(err, "chmod")
			n, err := cp(c, "/f", "/g", workspace.CopyOptions{})
			c.ok(err, "copy")
			if n != 1 {
				c.Errorf("copied %d", n)
			}
			c.wantContent("/g", "original")
			if c.stat("/g").Ino == c.stat("/f").Ino {
				c.Errorf("the copy is the same inode")
			}
			if m := c.stat("/g").Mode; m != 0o600 {
				c.Errorf("copy mode %o, want 600", m)
			}
			c.put("/g", "changed")
			c.wantContent("/f", "original")
			_, err = c.API.Write(c.Ctx, "/g", strings.NewReader("+more"), workspace.WriteOptions{Append: true})
			c.ok(err, "append")
			c.wantContent("/f", "original")
			c.wantContent("/g", "changed+more")
		}},
		{name: "file independent after truncating the copy", run: func(c *C) {
			data := randBytes(5, 2<<20+100)
			c.putBytes("/f", data)
			_, err := cp(c, "/f", "/g", workspace.CopyOptions{})
			c.ok(err, "copy")
			_, err = c.API.SetAttr(c.Ctx, "/g", workspace.SetAttrOptions{Size: ptr(int64(1<<20 + 10))})
			c.ok(err, "truncate the copy")
			_, err = c.API.Write(c.Ctx, "/g", strings.NewReader("tail"), workspace.WriteOptions{Append: true})
			c.ok(err, "append to the copy")
			if got := c.get("/f"); got != string(data) {
				c.Errorf("changing the copy changed the original")
			}
			if got := c.get("/g"); got != string(data[:1<<20+10])+"tail" {
				c.Errorf("the copy holds %d bytes, not what was made of it", len(got))
			}
		}},
		{name: "onto an existing file", run: func(c *C) {
			c.build("f=new", "g=old")
			_, err := cp(c, "/f", "/g", workspace.CopyOptions{})
			c.ok(err, "copy over a file")
			c.wantContent("/g", "new")
		}},
		{name: "no replace", run: func(c *C) {
			c.build("f=new", "g=old")
			_, err := cp(c, "/f", "/g", workspace.CopyOptions{NoReplace: true})
			c.wantErr(err, syscall.EEXIST, "copy noreplace")
			c.wantContent("/g", "old")
		}},
		{name: "onto a dir", run: func(c *C) {
			c.build("f=new", "d/")
			_, err := cp(c, "/f", "/d", workspace.CopyOptions{})
			c.wantErr(err, syscall.EISDIR, "copy a file over a dir")
		}},
		{name: "onto itself", run: func(c *C) {
			c.build("f=x")
			_, err := cp(c, "/f", "/f", workspace.CopyOptions{})
			c.wantErr(err, syscall.EINVAL, "copy a file onto itself")
			c.wantContent("/f", "x")
		}},
		{name: "follows a symlink source", run: func(c *C) {
			c.build("f=x", "l -> f")
			_, err := cp(c, "/l", "/g", workspace.CopyOptions{})
			c.ok(err, "copy a symlink")
			if fi := c.lstat("/g"); fi.Type != "file" {
				c.Errorf("copy of a symlink: %+v", fi)
			}
			c.wantContent("/g", "x")
		}},
		{name: "recursive", run: func(c *C) {
			c.build("src/a=A", "src/sub/b=B", "src/sub/empty/", "src/link -> a", "src/dlink -> sub")
			n, err := cp(c, "/src", "/dst", workspace.CopyOptions{Recursive: true})
			c.ok(err, "copy -r")
			if n != 7 { // dst, a, sub, b, empty, link, dlink
				c.Errorf("copied %d, want 7", n)
			}
			c.wantContent("/dst/a", "A")
			c.wantContent("/dst/sub/b", "B")
			if fi := c.stat("/dst/sub/empty"); fi.Type != "dir" {
				c.Errorf("empty: %+v", fi)
			}
			for p, target := range map[string]string{"/dst/link": "a", "/dst/dlink": "sub"} {
				if fi := c.lstat(p); fi.Type != "symlink" || fi.Target != target {
					c.Errorf("%s: %+v, want a symlink to %s", p, fi, target)
				}
			}
			// The copy's link points into the copy.
			c.wantContent("/dst/link", "A")
			c.put("/dst/a", "changed")
			c.wantContent("/src/a", "A")
		}},
		{name: "dir without recursive", run: func(c *C) {
			c.build("d/f=x")
			_, err := cp(c, "/d", "/e", workspace.CopyOptions{})
			c.wantErr(err, syscall.EISDIR, "copy a dir without recursive")
			c.wantMissing("/e")
		}},
		{name: "dir into itself", run: func(c *C) {
			c.build("d/s/f=x")
			before := c.snapshot()
			_, err := cp(c, "/d", "/d/s/copy", workspace.CopyOptions{Recursive: true})
			c.wantErr(err, syscall.EINVAL, "copy a dir into itself")
			if after := c.snapshot(); after != before {
				c.Errorf("a failed copy changed the tree")
			}
		}},
		{name: "dir onto an existing dir", run: func(c *C) {
			c.build("d/f=x", "e/")
			_, err := cp(c, "/d", "/e", workspace.CopyOptions{Recursive: true})
			c.wantErr(err, syscall.EEXIST, "copy a dir onto a dir")
		}},
		{name: "missing source", run: func(c *C) {
			_, err := cp(c, "/nope", "/g", workspace.CopyOptions{})
			c.wantErr(err, syscall.ENOENT, "copy a missing file")
		}},
		{name: "data shared", run: func(c *C) {
			data := randBytes(6, 8<<20)
			c.putBytes("/big", data)
			c.ok(c.FS.Sync(c.Ctx), "sync")
			before := c.storeStats()
			_, err := cp(c, "/big", "/big2", workspace.CopyOptions{})
			c.ok(err, "copy")
			c.ok(c.FS.Sync(c.Ctx), "sync")
			after := c.storeStats()
			if grew := int64(after.UniqueBytes) - int64(before.UniqueBytes); grew >= 1<<20 {
				c.Errorf("copying 8 MiB grew the unique bytes by %d: the data was not shared", grew)
			}
			if grew := int64(after.LogicalBytes) - int64(before.LogicalBytes); grew < 8<<20 {
				c.Errorf("logical bytes grew by %d, want 8 MiB", grew)
			}
			if got := c.get("/big2"); got != string(data) {
				c.Errorf("the copy differs")
			}
		}},
	}
}

func (c *C) storeStats() chunkstore.Stats {
	c.Helper()
	var st chunkstore.Stats
	err := c.FS.Store().View(func(tx *chunkstore.Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	})
	c.ok(err, "store stats")
	return st
}

// ---------------------------------------------------------------------
// Symlink and Readlink.

func symlinkCases() []testCase {
	return []testCase{
		{name: "make and read", run: func(c *C) {
			c.build("f=content")
			c.ok(c.API.Symlink(c.Ctx, "f", "/l"), "symlink")
			t, err := c.API.Readlink(c.Ctx, "/l")
			c.ok(err, "readlink")
			if t != "f" {
				c.Errorf("readlink %q", t)
			}
			if fi := c.lstat("/l"); fi.Type != "symlink" || fi.Target != "f" {
				c.Errorf("lstat %+v", fi)
			}
			c.wantContent("/l", "content")
		}},
		{name: "relative target in a subdir", run: func(c *C) {
			c.build("d/", "f=top")
			c.ok(c.API.Symlink(c.Ctx, "../f", "/d/l"), "symlink")
			c.wantContent("/d/l", "top")
			if fi := c.stat("/d/l"); fi.Path != "/f" {
				c.Errorf("stat through the link: %+v", fi)
			}
		}},
		{name: "to a dir", run: func(c *C) {
			c.build("d/x=1")
			c.ok(c.API.Symlink(c.Ctx, "d", "/l"), "symlink")
			got := c.listAll("/l", workspace.ListOptions{})
			if !eqStrings(got, []string{"/d/x"}) {
				c.Errorf("list through a symlink: %q", got)
			}
		}},
		{name: "dangling", run: func(c *C) {
			c.ok(c.API.Symlink(c.Ctx, "nowhere", "/l"), "symlink")
			t, err := c.API.Readlink(c.Ctx, "/l")
			c.ok(err, "readlink")
			if t != "nowhere" {
				c.Errorf("readlink %q", t)
			}
			_, err = c.API.Stat(c.Ctx, "/l")
			c.wantErr(err, syscall.ENOENT, "stat a dangling symlink")
		}},
		{name: "over an existing name", run: func(c *C) {
			c.build("f=x", "l -> f")
			c.wantErr(c.API.Symlink(c.Ctx, "g", "/f"), syscall.EEXIST, "symlink over a file")
			c.wantErr(c.API.Symlink(c.Ctx, "g", "/l"), syscall.EEXIST, "symlink over a symlink")
			c.wantContent("/f", "x")
		}},
		{name: "empty target", run: func(c *C) {
			c.wantErr(c.API.Symlink(c.Ctx, "", "/l"), syscall.EINVAL, "symlink to nothing")
			c.wantMissing("/l")
		}},
		{name: "missing parent", run: func(c *C) {
			c.wantErr(c.API.Symlink(c.Ctx, "x", "/nope/l"), syscall.ENOENT, "symlink in a missing dir")
		}},
		{name: "readlink of a file", run: func(c *C) {
			c.build("f=x")
			_, err := c.API.Readlink(c.Ctx, "/f")
			c.wantErr(err, syscall.EINVAL, "readlink of a file")
		}},
		{name: "readlink missing", run: func(c *C) {
			_, err := c.API.Readlink(c.Ctx, "/nope")
			c.wantErr(err, syscall.ENOENT, "readlink of nothing")
		}},
		{name: "readlink does not follow the last link", run: func(c *C) {
			c.build("f=x", "a -> f", "b -> a")
			t, err := c.API.Readlink(c.Ctx, "/b")
			c.ok(err, "readlink")
			if t != "a" {
				c.Errorf("readlink of a link to a link: %q", t)
			}
		}},
	}
}

// ---------------------------------------------------------------------
// SetAttr.

func setAttrCases() []testCase {
	set := func(c *C, p string, opt workspace.SetAttrOptions) (workspace.FileInfo, error) {
		return c.API.SetAttr(c.Ctx, p, opt)
	}
	return []testCase{
		{name: "perm", run: func(c *C) {
			c.build("f=x")
			fi, err := set(c, "/f", workspace.SetAttrOptions{Perm: ptr(uint32(0o4711))})
			c.ok(err, "chmod")
			if fi.Mode != 0o4711 || c.stat("/f").Mode != 0o4711 {
				c.Errorf("mode %o, want 4711", fi.Mode)
			}
			c.wantContent("/f", "x")
		}},
		{name: "perm of a dir", run: func(c *C) {
			c.build("d/")
			_, err := set(c, "/d", workspace.SetAttrOptions{Perm: ptr(uint32(0o700))})
			c.ok(err, "chmod")
			if m := c.stat("/d").Mode; m != 0o700 {
				c.Errorf("mode %o", m)
			}
		}},
		{name: "bad perm", run: func(c *C) {
			c.build("f=x")
			_, err := set(c, "/f", workspace.SetAttrOptions{Perm: ptr(uint32(0o170000))})
			c.wantErr(err, syscall.EINVAL, "chmod with file type bits")
			if m := c.stat("/f").Mode; m != 0o644 {
				c.Errorf("mode %o after a failed chmod", m)
			}
		}},
		{name: "truncate", run: func(c *C) {
			c.build("f=0123456789")
			fi, err := set(c, "/f", workspace.SetAttrOptions{Size: ptr(int64(3))})
			c.ok(err, "truncate")
			if fi.Size != 3 {
				c.Errorf("size %d", fi.Size)
			}
			c.wantContent("/f", "012")
		}},
		{name: "extend", run: func(c *C) {
			c.build("f=abc")
			_, err := set(c, "/f", workspace.SetAttrOptions{Size: ptr(int64(8))})
			c.ok(err, "extend")
			c.wantContent("/f", "abc\x00\x00\x00\x00\x00")
		}},
		{name: "truncate to zero", run: func(c *C) {
			c.putBytes("/f", randBytes(8, 2<<20))
			_, err := set(c, "/f", workspace.SetAttrOptions{Size: ptr(int64(0))})
			c.ok(err, "truncate")
			c.wantContent("/f", "")
		}},
		{name: "negative size", run: func(c *C) {
			c.build("f=abc")
			_, err := set(c, "/f", workspace.SetAttrOptions{Size: ptr(int64(-1))})
			c.wantErr(err, syscall.EINVAL, "negative size")
			c.wantContent("/f", "abc")
		}},
		{name: "size of a dir", run: func(c *C) {
			c.build("d/")
			_, err := set(c, "/d", workspace.SetAttrOptions{Size: ptr(int64(0))})
			if err == nil {
				c.Errorf("truncating a dir worked")
			}
		}},
		{name: "mtime", run: func(c *C) {
			c.build("f=x")
			mt := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
			fi, err := set(c, "/f", workspace.SetAttrOptions{Mtime: &mt})
			c.ok(err, "set mtime")
			if !fi.Mtime.Equal(mt) {
				c.Errorf("result mtime %v, want %v", fi.Mtime, mt)
			}
			if got := c.stat("/f").Mtime; !got.Equal(mt) {
				c.Errorf("stat mtime %v, want %v", got, mt)
			}
		}},
		{name: "touch creates", run: func(c *C) {
			fi, err := set(c, "/new", workspace.SetAttrOptions{Create: true})
			c.ok(err, "touch")
			if fi.Type != "file" || fi.Size != 0 || fi.Path != "/new" || fi.Mode != 0o644 {
				c.Errorf("touch: %+v", fi)
			}
			c.wantContent("/new", "")
		}},
		{name: "touch existing", run: func(c *C) {
			c.build("f=keep")
			mt := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
			_, err := set(c, "/f", workspace.SetAttrOptions{Mtime: &mt})
			c.ok(err, "set mtime")
			now := time.Now()
			_, err = set(c, "/f", workspace.SetAttrOptions{Create: true, Mtime: &now})
			c.ok(err, "touch")
			c.wantContent("/f", "keep")
			if got := c.stat("/f").Mtime; !got.Equal(now) {
				c.Errorf("mtime %v, want %v", got, now)
			}
		}},
		{name: "missing", run: func(c *C) {
			_, err := set(c, "/nope", workspace.SetAttrOptions{Perm: ptr(uint32(0o600))})
			c.wantErr(err, syscall.ENOENT, "chmod of nothing")
			c.wantMissing("/nope")
		}},
		{name: "touch in a missing dir", run: func(c *C) {
			_, err := set(c, "/nope/f", workspace.SetAttrOptions{Create: true})
			c.wantErr(err, syscall.ENOENT, "touch in a missing dir")
		}},
		{name: "follows symlinks", run: func(c *C) {
			c.build("f=abcdef", "l -> f")
			_, err := set(c, "/l", workspace.SetAttrOptions{Size: ptr(int64(2)), Perm: ptr(uint32(0o600))})
			c.ok(err, "setattr through a link")
			c.wantContent("/f", "ab")
			if m := c.stat("/f").Mode; m != 0o600 {
				c.Errorf("target mode %o", m)
			}
			if fi := c.lstat("/l"); fi.Type != "symlink" {
				c.Errorf("link: %+v", fi)
			}
		}},
	}
}

// ---------------------------------------------------------------------
// Glob.

func globCases() []testCase {
	tree := func(c *C) {
		c.build("main.go=m", "src/a.go=a", "src/b.txt=b", "src/sub/c.go=c", "src/.hidden.go=h",
			"a/x=1", "b/y=2", "c/z=3", "ab=", "abc=", "bcd=", "xb=")
	}
	cases := []struct {
		name    string
		pattern string
		opt     workspace.GlobOptions
		want    []string
	}{
		{"double star", "**/*.go", workspace.GlobOptions{}, []string{"/main.go", "/src/.hidden.go", "/src/a.go", "/src/sub/c.go"}},
		{"absolute", "/src/*.go", workspace.GlobOptions{}, []string{"/src/.hidden.go", "/src/a.go"}},
		{"braces", "{a,b}/*", workspace.GlobOptions{}, []string{"/a/x", "/b/y"}},
		{"question mark", "?b", workspace.GlobOptions{}, []string{"/ab", "/xb"}},
		{"class", "[ab]*", workspace.GlobOptions{}, []string{"/a", "/ab", "/abc", "/b", "/bcd"}},
		{"negated class", "[!abcms]*", workspace.GlobOptions{}, []string{"/xb"}},
		{"dir option", "*.go", workspace.GlobOptions{Dir: "/src"}, []string{"/src/.hidden.go", "/src/a.go"}},
		{"dir option recursive", "**/*.go", workspace.GlobOptions{Dir: "src"}, []string{"/src/.hidden.go", "/src/a.go", "/src/sub/c.go"}},
		{"literal", "src/sub/c.go", workspace.GlobOptions{}, []string{"/src/sub/c.go"}},
		{"no match", "*.rs", workspace.GlobOptions{}, nil},
		{"no match below a missing dir", "nope/**/*.go", workspace.GlobOptions{}, nil},
		{"paged", "**", workspace.GlobOptions{Limit: 4}, nil}, // want: see below
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			tree(c)
			want := tc.want
			if tc.name == "paged" {
				full, err := c.API.Glob(c.Ctx, tc.pattern, workspace.GlobOptions{Limit: 1000})
				c.ok(err, "glob")
				if len(full.Paths) != 17 || full.Next != 0 {
					c.Errorf("glob **: %d paths %q, next %d", len(full.Paths), full.Paths, full.Next)
				}
				want = full.Paths
			}
			var got []string
			opt := tc.opt
			for i := 0; ; i++ {
				res, err := c.API.Glob(c.Ctx, tc.pattern, opt)
				c.ok(err, "glob "+tc.pattern)
				if opt.Limit > 0 && len(res.Paths) > opt.Limit {
					c.Fatalf("page of %d with limit %d", len(res.Paths), opt.Limit)
				}
				got = append(got, res.Paths...)
				if res.Next == 0 {
					break
				}
				if res.Next != opt.Offset+opt.Limit || i > 100 {
					c.Fatalf("next %d after offset %d limit %d", res.Next, opt.Offset, opt.Limit)
				}
				opt.Offset = res.Next
			}
			if !eqStrings(got, want) {
				c.Errorf("glob %q %+v:\n got %q\nwant %q", tc.pattern, tc.opt, got, want)
			}
		}})
	}
	for _, bad := range []string{"[abc", "{a,b", "a\\", "[[:nope:]]"} {
		out = append(out, testCase{name: "bad pattern " + bad, run: func(c *C) {
			tree(c)
			_, err := c.API.Glob(c.Ctx, bad, workspace.GlobOptions{})
			c.wantErr(err, syscall.EINVAL, "glob "+bad)
		}})
	}
	out = append(out,
		testCase{name: "missing dir option", run: func(c *C) {
			_, err := c.API.Glob(c.Ctx, "*", workspace.GlobOptions{Dir: "/nope"})
			c.wantErr(err, syscall.ENOENT, "glob in a missing dir")
		}},
		testCase{name: "dir option is a file", run: func(c *C) {
			c.build("f=x")
			_, err := c.API.Glob(c.Ctx, "*", workspace.GlobOptions{Dir: "/f"})
			c.wantErr(err, syscall.ENOTDIR, "glob in a file")
		}},
		testCase{name: "negative offset", run: func(c *C) {
			_, err := c.API.Glob(c.Ctx, "*", workspace.GlobOptions{Offset: -1})
			c.wantErr(err, syscall.EINVAL, "glob with a negative offset")
		}},
	)
	return out
}

// ---------------------------------------------------------------------
// Grep.

func grepCases() []testCase {
	tree := func(c *C) {
		c.build(
			"g/a.txt=foo\nbar\nFoo baz\nqux\n",
			"g/b.go=package b\n// foo here\n",
			"g/sub/c.txt=nothing\nfoo.bar\n",
			"g/bin.dat=foo\x00bar\n",
			"g/empty=",
			"g/link -> a.txt",
		)
	}
	type line = workspace.GrepLine
	type file = workspace.GrepFile
	cases := []struct {
		name      string
		p         string
		opt       workspace.GrepOptions
		lines     []line
		files     []file
		skipped   int
		wantErrno syscall.Errno
	}{
		{name: "literal", p: "/g", opt: workspace.GrepOptions{Pattern: "foo"},
			lines:   []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/b.go", Line: 2, Text: "// foo here"}, {Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}},
			skipped: 1},
		{name: "literal is not a regex", p: "/g", opt: workspace.GrepOptions{Pattern: "f.o"}, skipped: 1},
		{name: "regex", p: "/g", opt: workspace.GrepOptions{Pattern: "^f.o", Regex: true},
			lines:   []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}},
			skipped: 1},
		{name: "regex anchors per line", p: "/g", opt: workspace.GrepOptions{Pattern: `x$`, Regex: true},
			lines:   []line{{Path: "/g/a.txt", Line: 4, Text: "qux"}},
			skipped: 1},
		{name: "ignore case", p: "/g", opt: workspace.GrepOptions{Pattern: "FOO", IgnoreCase: true},
			lines:   []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/a.txt", Line: 3, Text: "Foo baz"}, {Path: "/g/b.go", Line: 2, Text: "// foo here"}, {Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}},
			skipped: 1},
		{name: "ignore case regex", p: "/g", opt: workspace.GrepOptions{Pattern: "^FOO", IgnoreCase: true, Regex: true},
			lines:   []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/a.txt", Line: 3, Text: "Foo baz"}, {Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}},
			skipped: 1},
		{name: "include", p: "/g", opt: workspace.GrepOptions{Pattern: "foo", Include: []string{"*.txt"}},
			lines: []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}}},
		{name: "include path", p: "/g", opt: workspace.GrepOptions{Pattern: "foo", Include: []string{"sub/*"}},
			lines: []line{{Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}}},
		{name: "exclude", p: "/g", opt: workspace.GrepOptions{Pattern: "foo", Exclude: []string{"*.txt", "*.dat"}},
			lines: []line{{Path: "/g/b.go", Line: 2, Text: "// foo here"}}},
		{name: "include and exclude", p: "/g", opt: workspace.GrepOptions{Pattern: "foo", Include: []string{"*.txt"}, Exclude: []string{"sub/*"}},
			lines: []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}}},
		{name: "context", p: "/g/a.txt", opt: workspace.GrepOptions{Pattern: "bar", Before: 1, After: 1},
			lines: []line{{Path: "/g/a.txt", Line: 1, Text: "foo", Context: true}, {Path: "/g/a.txt", Line: 2, Text: "bar"}, {Path: "/g/a.txt", Line: 3, Text: "Foo baz", Context: true}}},
		{name: "context at the ends", p: "/g/a.txt", opt: workspace.GrepOptions{Pattern: "o", Before: 2, After: 2},
			lines: []line{{Path: "/g/a.txt", Line: 1, Text: "foo"}, {Path: "/g/a.txt", Line: 2, Text: "bar", Context: true}, {Path: "/g/a.txt", Line: 3, Text: "Foo baz"}, {Path: "/g/a.txt", Line: 4, Text: "qux", Context: true}}},
		{name: "after only", p: "/g/a.txt", opt: workspace.GrepOptions{Pattern: "qux", After: 3},
			lines: []line{{Path: "/g/a.txt", Line: 4, Text: "qux"}}},
		{name: "files mode", p: "/g", opt: workspace.GrepOptions{Pattern: "foo", Mode: "files"},
			files: []file{{Path: "/g/a.txt", Count: 1}, {Path: "/g/b.go", Count: 1}, {Path: "/g/sub/c.txt", Count: 1}}, skipped: 1},
		{name: "count mode", p: "/g", opt: workspace.GrepOptions{Pattern: "o", Mode: "count"},
			files: []file{{Path: "/g/a.txt", Count: 2}, {Path: "/g/b.go", Count: 1}, {Path: "/g/sub/c.txt", Count: 2}}, skipped: 1},
		{name: "single file", p: "/g/b.go", opt: workspace.GrepOptions{Pattern: "package"},
			lines: []line{{Path: "/g/b.go", Line: 1, Text: "package b"}}},
		{name: "through a symlink to a file", p: "/g/link", opt: workspace.GrepOptions{Pattern: "qux"},
			lines: []line{{Path: "/g/a.txt", Line: 4, Text: "qux"}}},
		{name: "binary file given directly", p: "/g/bin.dat", opt: workspace.GrepOptions{Pattern: "foo"}, skipped: 1},
		{name: "relative", p: "g/sub", opt: workspace.GrepOptions{Pattern: "foo"},
			lines: []line{{Path: "/g/sub/c.txt", Line: 2, Text: "foo.bar"}}},
		{name: "invalid regex", p: "/g", opt: workspace.GrepOptions{Pattern: "(", Regex: true}, wantErrno: syscall.EINVAL},
		{name: "bad mode", p: "/g", opt: workspace.GrepOptions{Pattern: "x", Mode: "lines"}, wantErrno: syscall.EINVAL},
		{name: "bad include", p: "/g", opt: workspace.GrepOptions{Pattern: "x", Include: []string{"[x"}}, wantErrno: syscall.EINVAL},
		{name: "negative context", p: "/g", opt: workspace.GrepOptions{Pattern: "x", Before: -1}, wantErrno: syscall.EINVAL},
		{name: "missing", p: "/nope", opt: workspace.GrepOptions{Pattern: "x"}, wantErrno: syscall.ENOENT},
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			tree(c)
			res, err := c.API.Grep(c.Ctx, tc.p, tc.opt)
			if tc.wantErrno != 0 {
				c.wantErr(err, tc.wantErrno, "grep")
				return
			}
			c.ok(err, "grep")
			if !eqLines(res.Lines, tc.lines) {
				c.Errorf("grep %s %+v lines:\n got %+v\nwant %+v", tc.p, tc.opt, res.Lines, tc.lines)
			}
			if !eqFiles(res.Files, tc.files) {
				c.Errorf("grep %s %+v files:\n got %+v\nwant %+v", tc.p, tc.opt, res.Files, tc.files)
			}
			for _, f := range res.Files {
				// Each file comes with its modification time.
				if fi, err := c.API.Stat(c.Ctx, f.Path); err != nil || !f.Mtime.Equal(fi.Mtime) {
					c.Errorf("grep %s %+v: %s's mtime %v, want %v (stat: %v)", tc.p, tc.opt, f.Path, f.Mtime, fi.Mtime, err)
				}
			}
			if res.Skipped != tc.skipped {
				c.Errorf("grep %s %+v: skipped %d, want %d", tc.p, tc.opt, res.Skipped, tc.skipped)
			}
			if res.Next != 0 {
				c.Errorf("next %d for a small result", res.Next)
			}
		}})
	}
	// A bigger tree: many files over several directories, so that the
	// parallel search has to put its results back in walk order.
	big := func(c *C) []string {
		var order []string
		for d := range 4 {
			for f := range 12 {
				p := fmt.Sprintf("/big/d%d/f%02d.txt", d, f)
				var b strings.Builder
				for l := range 1 + (d*7+f)%5 {
					if l == 0 || (l+f)%2 == 0 {
						fmt.Fprintf(&b, "match %d %d %d\n", d, f, l)
					} else {
						fmt.Fprintf(&b, "other %d\n", l)
					}
				}
				c.put(p, b.String())
				order = append(order, p)
			}
		}
		c.put("/big/d1/blob.bin", "match\x00\x01binary")
		return order
	}
	out = append(out, testCase{name: "big tree", run: func(c *C) {
		big(c)
		c.sub("walk order", func(c *C) {
			walk := c.listAll("/big", workspace.ListOptions{Recursive: true})
			pos := map[string]int{}
			for i, p := range walk {
				pos[p] = i
			}
			res, err := c.API.Grep(c.Ctx, "/big", workspace.GrepOptions{Pattern: "match", Limit: 1000})
			c.ok(err, "grep")
			if res.Skipped != 1 {
				c.Errorf("skipped %d, want 1", res.Skipped)
			}
			last, lastLine := -1, 0
			for _, l := range res.Lines {
				i, ok := pos[l.Path]
				if !ok {
					c.Fatalf("grep reports %s, not in the tree", l.Path)
				}
				if i < last || (i == last && l.Line <= lastLine) {
					c.Fatalf("grep output out of walk order at %s:%d", l.Path, l.Line)
				}
				last, lastLine = i, l.Line
				if !strings.HasPrefix(l.Text, "match ") {
					c.Errorf("bad match %+v", l)
				}
			}
			files, err := c.API.Grep(c.Ctx, "/big", workspace.GrepOptions{Pattern: "match", Mode: "files", Limit: 1000})
			c.ok(err, "grep files")
			var gotFiles, wantFiles []string
			for _, f := range files.Files {
				gotFiles = append(gotFiles, f.Path)
			}
			for _, p := range walk {
				if strings.HasSuffix(p, ".txt") {
					wantFiles = append(wantFiles, p) // every file holds a match on line 1 or 2
				}
			}
			if !eqStrings(gotFiles, wantFiles) {
				c.Errorf("files mode:\n got %q\nwant %q", gotFiles, wantFiles)
			}
		})
		c.sub("pages content", func(c *C) {
			full, err := c.API.Grep(c.Ctx, "/big", workspace.GrepOptions{Pattern: "match", Limit: 10000})
			c.ok(err, "grep")
			if full.Next != 0 || len(full.Lines) < 20 {
				c.Fatalf("full grep: %d lines, next %d", len(full.Lines), full.Next)
			}
			for _, limit := range []int{5, 13} {
				var got []workspace.GrepLine
				opt := workspace.GrepOptions{Pattern: "match", Limit: limit}
				for i := 0; ; i++ {
					res, err := c.API.Grep(c.Ctx, "/big", opt)
					c.ok(err, "grep page")
					if len(res.Lines) > limit {
						c.Fatalf("page of %d lines with limit %d", len(res.Lines), limit)
					}
					got = append(got, res.Lines...)
					if res.Next == 0 {
						break
					}
					if res.Next != opt.Offset+limit || i > 1000 {
						c.Fatalf("next %d after offset %d", res.Next, opt.Offset)
					}
					opt.Offset = res.Next
				}
				if !eqLines(got, full.Lines) {
					c.Errorf("limit %d: pages hold %d lines, the whole result %d, or they differ", limit, len(got), len(full.Lines))
				}
			}
		})
		c.sub("pages content with context", func(c *C) {
			full, err := c.API.Grep(c.Ctx, "/big", workspace.GrepOptions{Pattern: "match", Before: 1, After: 1, Limit: 10000})
			c.ok(err, "grep")
			var got []workspace.GrepLine
			opt := workspace.GrepOptions{Pattern: "match", Before: 1, After: 1, Limit: 9}
			for i := 0; ; i++ {
				res, err := c.API.Grep(c.Ctx, "/big", opt)
				c.ok(err, "grep page")
				got = append(got, res.Lines...)
				if res.Next == 0 || i > 1000 {
					break
				}
				opt.Offset = res.Next
			}
			// Context lines may repeat at page boundaries; the matches may not.
			if !eqLines(matchesOnly(got), matchesOnly(full.Lines)) {
				c.Errorf("paged matches differ from the whole result's")
			}
		})
		c.sub("pages files", func(c *C) {
			for _, mode := range []string{"files", "count"} {
				full, err := c.API.Grep(c.Ctx, "/big", workspace.GrepOptions{Pattern: "match", Mode: mode, Limit: 10000})
				c.ok(err, "grep")
				var got []workspace.GrepFile
				opt := workspace.GrepOptions{Pattern: "match", Mode: mode, Limit: 7}
				for i := 0; ; i++ {
					res, err := c.API.Grep(c.Ctx, "/big", opt)
					c.ok(err, "grep page")
					if len(res.Files) > 7 {
						c.Fatalf("page of %d files with limit 7", len(res.Files))
					}
					got = append(got, res.Files...)
					if res.Next == 0 {
						break
					}
					if res.Next != opt.Offset+7 || i > 1000 {
						c.Fatalf("next %d after offset %d", res.Next, opt.Offset)
					}
					opt.Offset = res.Next
				}
				if !eqFiles(got, full.Files) {
					c.Errorf("%s mode: pages %+v\nwhole %+v", mode, got, full.Files)
				}
			}
		})
	}})
	return out
}

func matchesOnly(ls []workspace.GrepLine) []workspace.GrepLine {
	var out []workspace.GrepLine
	for _, l := range ls {
		if !l.Context {
			out = append(out, l)
		}
	}
	return out
}

func eqLines(a, b []workspace.GrepLine) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func eqFiles(a, b []workspace.GrepFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Count != b[i].Count {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------
// Tree and Du.

func treeCases() []testCase {
	tree := func(c *C) {
		c.build("t/a="+strings.Repeat("a", 10), "t/b="+strings.Repeat("b", 20), "t/s/c="+strings.Repeat("c", 30), "t/s/s2/d="+strings.Repeat("d", 40), "t/l -> a")
	}
	// link makes a hard link through the FS: the API has no call for it.
	link := func(c *C, target, dir, name string) {
		c.Helper()
		ino, parent := c.lstat(target).Ino, c.stat(dir).Ino
		if _, err := c.FS.Link(fs.Caller{}, fs.Ino(ino), fs.Ino(parent), name); err != nil {
			c.Fatalf("link %s to %s/%s: %v", target, dir, name, err)
		}
	}
	children := func(n *workspace.TreeNode) []string {
		var out []string
		for _, ch := range n.Children {
			out = append(out, ch.Name)
		}
		return out
	}
	return []testCase{
		{name: "du sums", run: func(c *C) {
			tree(c)
			n, err := c.API.Du(c.Ctx, "/t")
			c.ok(err, "du")
			if n.Size != 100+1 || n.Dirs != 2 || n.Files != 5 || n.Path != "/t" || n.Type != "dir" {
				c.Errorf("du /t: %+v", n)
			}
			if len(n.Children) != 0 {
				c.Errorf("du has children: %d", len(n.Children))
			}
			s, err := c.API.Du(c.Ctx, "/t/s")
			c.ok(err, "du")
			if s.Size != 70 || s.Dirs != 1 || s.Files != 2 {
				c.Errorf("du /t/s: %+v", s)
			}
		}},
		{name: "du of a file", run: func(c *C) {
			tree(c)
			n, err := c.API.Du(c.Ctx, "/t/b")
			c.ok(err, "du")
			if n.Size != 20 || n.Type != "file" || n.Name != "b" {
				c.Errorf("du of a file: %+v", n)
			}
		}},
		{name: "du counts hard links once", run: func(c *C) {
			tree(c)
			link(c, "/t/s/c", "/t/s/s2", "clink")
			link(c, "/t/s/c", "/t", "clink2")
			if fi := c.stat("/t/s/c"); fi.Nlink != 3 {
				c.Errorf("nlink %d after two links", fi.Nlink)
			}
			n, err := c.API.Du(c.Ctx, "/t")
			c.ok(err, "du")
			if n.Size != 101 {
				c.Errorf("du with hard links: size %d, want 101", n.Size)
			}
			tr, err := c.API.Tree(c.Ctx, "/t", workspace.TreeOptions{})
			c.ok(err, "tree")
			if tr.Size != 101 {
				c.Errorf("tree with hard links: size %d, want 101", tr.Size)
			}
		}},
		{name: "tree depth 1", run: func(c *C) {
			tree(c)
			n, err := c.API.Tree(c.Ctx, "/t", workspace.TreeOptions{Depth: 1})
			c.ok(err, "tree")
			if got := children(n); !eqStrings(got, []string{"a", "b", "l", "s"}) {
				c.Errorf("children %q", got)
			}
			var sum int64
			for _, ch := range n.Children {
				sum += ch.Size
				if len(ch.Children) != 0 {
					c.Errorf("depth 1 lists grandchildren under %s", ch.Name)
				}
				if ch.Name == "s" && (ch.Size != 70 || ch.Type != "dir" || ch.Path != "/t/s" || ch.Files != 2 || ch.Dirs != 1) {
					c.Errorf("s: %+v", ch)
				}
			}
			if n.Size != sum || n.Size != 101 {
				c.Errorf("size %d, children sum %d, want 101", n.Size, sum)
			}
		}},
		{name: "tree depth 2", run: func(c *C) {
			tree(c)
			n, err := c.API.Tree(c.Ctx, "/t", workspace.TreeOptions{Depth: 2})
			c.ok(err, "tree")
			var s *workspace.TreeNode
			for _, ch := range n.Children {
				if ch.Name == "s" {
					s = ch
				}
			}
			if s == nil {
				c.Fatalf("no s in %q", children(n))
			}
			if got := children(s); !eqStrings(got, []string{"c", "s2"}) {
				c.Errorf("s children %q", got)
			}
			for _, ch := range s.Children {
				if len(ch.Children) != 0 {
					c.Errorf("depth 2 lists %s's children", ch.Path)
				}
				if ch.Name == "s2" && ch.Size != 40 {
					c.Errorf("s2: %+v", ch)
				}
			}
		}},
		{name: "tree default depth", run: func(c *C) {
			c.build("a/b/c/d/e=deep")
			n, err := c.API.Tree(c.Ctx, "/", workspace.TreeOptions{})
			c.ok(err, "tree")
			depth := 0
			for cur := n; len(cur.Children) > 0; cur = cur.Children[0] {
				depth++
			}
			if depth != 3 || n.Size != 4 {
				c.Errorf("default tree: depth %d size %d, want 3 and 4", depth, n.Size)
			}
		}},
		{name: "tree max entries", run: func(c *C) {
			tree(c)
			n, err := c.API.Tree(c.Ctx, "/t", workspace.TreeOptions{Depth: 1, MaxEntries: 2})
			c.ok(err, "tree")
			if len(n.Children) != 2 || n.Omitted != 2 || n.Size != 101 {
				c.Errorf("max entries 2: %d children, %d omitted, size %d", len(n.Children), n.Omitted, n.Size)
			}
		}},
		{name: "missing", run: func(c *C) {
			_, err := c.API.Tree(c.Ctx, "/nope", workspace.TreeOptions{})
			c.wantErr(err, syscall.ENOENT, "tree of nothing")
			_, err = c.API.Du(c.Ctx, "/nope")
			c.wantErr(err, syscall.ENOENT, "du of nothing")
		}},
		{name: "negative depth", run: func(c *C) {
			_, err := c.API.Tree(c.Ctx, "/", workspace.TreeOptions{Depth: -1})
			c.wantErr(err, syscall.EINVAL, "tree with a negative depth")
		}},
	}
}

// ---------------------------------------------------------------------
// Changes and WaitChanges.

func changesCases() []testCase {
	last := func(c *C) uint64 {
		c.Helper()
		res, err := c.API.Changes(c.Ctx, 0, 1)
		c.ok(err, "changes")
		return res.Last
	}
	all := func(c *C, since uint64, limit int) []workspace.Change {
		c.Helper()
		var out []workspace.Change
		for i := 0; ; i++ {
			res, err := c.API.Changes(c.Ctx, since, limit)
			c.ok(err, "changes")
			if limit > 0 && len(res.Changes) > limit {
				c.Fatalf("%d changes with limit %d", len(res.Changes), limit)
			}
			out = append(out, res.Changes...)
			if res.Next <= since || res.Next >= res.Last || i > 10000 {
				return out
			}
			since = res.Next
		}
	}
	return []testCase{
		{name: "api changes", run: func(c *C) {
			start := last(c)
			c.put("/c.txt", "1")
			c.put("/c.txt", "2")
			c.mkdirAll("/cd")
			c.ok(c.API.Rename(c.Ctx, "/c.txt", "/cd/c.txt", workspace.RenameOptions{}), "rename")
			c.ok(c.API.Symlink(c.Ctx, "c.txt", "/cd/l"), "symlink")
			// Attribute changes are coalesced: recorded at the latest when
			// the node is about to be removed.
			_, err := c.API.SetAttr(c.Ctx, "/cd/c.txt", workspace.SetAttrOptions{Perm: ptr(uint32(0o600))})
			c.ok(err, "chmod")
			_, err = c.API.Remove(c.Ctx, "/cd/c.txt", workspace.RemoveOptions{})
			c.ok(err, "remove")
			got := all(c, start, 0)
			want := []workspace.Change{
				{Op: "create", Type: "file", Path: "/c.txt"},
				{Op: "write", Type: "file", Path: "/c.txt"},
				{Op: "create", Type: "dir", Path: "/cd"},
				{Op: "rename", Type: "file", Path: "/c.txt", NewPath: "/cd/c.txt"},
				{Op: "create", Type: "symlink", Path: "/cd/l"},
				{Op: "attr", Type: "file", Path: "/cd/c.txt"},
				{Op: "remove", Type: "file", Path: "/cd/c.txt"},
			}
			// The wanted records, in order; others (none expected) may
			// come between.
			i := 0
			var prev uint64 = start
			for _, ch := range got {
				if ch.Seq <= prev {
					c.Errorf("sequence numbers out of order: %d after %d", ch.Seq, prev)
				}
				prev = ch.Seq
				if ch.Time == 0 {
					c.Errorf("change %d has no time", ch.Seq)
				}
				if i < len(want) && ch.Op == want[i].Op && ch.Type == want[i].Type && ch.Path == want[i].Path && ch.NewPath == want[i].NewPath {
					i++
				}
			}
			if i != len(want) {
				var b strings.Builder
				for _, ch := range got {
					fmt.Fprintf(&b, "  %d %s %s %s %s\n", ch.Seq, ch.Op, ch.Type, ch.Path, ch.NewPath)
				}
				c.Errorf("changes lack %+v (and what follows); got:\n%s", want[i], b.String())
			}
			// Paging through them gives the same records.
			paged := all(c, start, 2)
			if len(paged) != len(got) {
				c.Errorf("paged by 2: %d records, in one page %d", len(paged), len(got))
			} else {
				for k := range paged {
					if paged[k] != got[k] {
						c.Errorf("record %d: paged %+v, whole %+v", k, paged[k], got[k])
					}
				}
			}
		}},
		{name: "edit and copy", run: func(c *C) {
			c.put("/f", "hello\n")
			start := last(c)
			_, err := c.API.Edit(c.Ctx, "/f", []workspace.Edit{{Old: "hello", New: "bye"}}, workspace.EditOptions{})
			c.ok(err, "edit")
			_, err = c.API.Copy(c.Ctx, "/f", "/g", workspace.CopyOptions{})
			c.ok(err, "copy")
			got := all(c, start, 0)
			var ops []string
			for _, ch := range got {
				ops = append(ops, ch.Op+" "+ch.Path)
			}
			if !eqStrings(ops, []string{"write /f", "create /g"}) {
				c.Errorf("changes %q, want [write /f, create /g]", ops)
			}
		}},
		{name: "no changes", run: func(c *C) {
			c.put("/f", "x")
			start := last(c)
			_, _, err := c.readOpt("/f", workspace.ReadOptions{})
			c.ok(err, "read")
			_, err = c.API.List(c.Ctx, "/", workspace.ListOptions{})
			c.ok(err, "list")
			res, err := c.API.Changes(c.Ctx, start, 0)
			c.ok(err, "changes")
			if len(res.Changes) != 0 || res.Last != start {
				c.Errorf("reads made changes: %+v", res)
			}
		}},
		{name: "wait returns on a change", run: func(c *C) {
			start := last(c)
			done := make(chan error, 1)
			go func() {
				time.Sleep(50 * time.Millisecond)
				_, err := c.API.Write(c.Ctx, "/late", strings.NewReader("x"), workspace.WriteOptions{})
				done <- err
			}()
			ctx, cancel := context.WithTimeout(c.Ctx, 10*time.Second)
			defer cancel()
			t0 := time.Now()
			err := c.API.WaitChanges(ctx, start)
			c.ok(err, "wait")
			if time.Since(t0) > 5*time.Second {
				c.Errorf("wait took %v", time.Since(t0))
			}
			c.ok(<-done, "write")
			got := all(c, start, 0)
			if len(got) == 0 || got[0].Path != "/late" || got[0].Op != "create" {
				c.Errorf("changes after the wait: %+v", got)
			}
		}},
		{name: "wait returns at once for a past change", run: func(c *C) {
			start := last(c)
			c.put("/f", "x")
			ctx, cancel := context.WithTimeout(c.Ctx, 5*time.Second)
			defer cancel()
			c.ok(c.API.WaitChanges(ctx, start), "wait")
		}},
		{name: "wait times out", run: func(c *C) {
			start := last(c)
			ctx, cancel := context.WithTimeout(c.Ctx, 100*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			err := c.API.WaitChanges(ctx, start)
			if err == nil {
				c.Fatalf("wait with nothing to wait for returned no error")
			}
			if d := time.Since(t0); d < 90*time.Millisecond || d > 5*time.Second {
				c.Errorf("wait returned after %v, want about 100ms", d)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				c.Logf("timed-out wait returned %v (not DeadlineExceeded)", err)
			}
		}},
	}
}

// ---------------------------------------------------------------------
// Bad input: a clear error, and nothing changed.

func badInputCases() []testCase {
	tree := func(c *C) {
		c.build("f=hello\nhello\n", "d/g=x", "d/sub/", "rel -> ../../../etc", "d/up -> ../../x", "d/ok -> ../f",
			"loop1 -> loop2", "loop2 -> loop1", "self -> self", "dl -> d")
		c.fsSymlink("/abs", "/etc/passwd")
		c.fsSymlink("/d/absdir", "/etc")
	}
	type op struct {
		name string
		do   func(c *C, p string) error
	}
	rd := op{"read", func(c *C, p string) error {
		rd, err := c.API.Read(c.Ctx, p, workspace.ReadOptions{})
		if err == nil {
			rd.Close()
		}
		return err
	}}
	wr := op{"write", func(c *C, p string) error {
		_, err := c.API.Write(c.Ctx, p, strings.NewReader("pwned"), workspace.WriteOptions{})
		return err
	}}
	wrp := op{"write parents", func(c *C, p string) error {
		_, err := c.API.Write(c.Ctx, p, strings.NewReader("pwned"), workspace.WriteOptions{Parents: true})
		return err
	}}
	app := op{"append", func(c *C, p string) error {
		_, err := c.API.Write(c.Ctx, p, strings.NewReader("pwned"), workspace.WriteOptions{Append: true})
		return err
	}}
	rm := op{"remove", func(c *C, p string) error {
		_, err := c.API.Remove(c.Ctx, p, workspace.RemoveOptions{Recursive: true})
		return err
	}}
	rmf := op{"remove force", func(c *C, p string) error {
		_, err := c.API.Remove(c.Ctx, p, workspace.RemoveOptions{Recursive: true, Force: true})
		return err
	}}
	ls := op{"list", func(c *C, p string) error {
		_, err := c.API.List(c.Ctx, p, workspace.ListOptions{Recursive: true})
		return err
	}}
	st := op{"stat", func(c *C, p string) error { _, err := c.API.Stat(c.Ctx, p); return err }}
	lst := op{"lstat", func(c *C, p string) error { _, err := c.API.Lstat(c.Ctx, p); return err }}
	mk := op{"mkdir", func(c *C, p string) error {
		_, err := c.API.Mkdir(c.Ctx, p, workspace.MkdirOptions{Parents: true})
		return err
	}}
	ed := op{"edit", func(c *C, p string) error {
		_, err := c.API.Edit(c.Ctx, p, []workspace.Edit{{Old: "root", New: "toor"}}, workspace.EditOptions{})
		return err
	}}
	mvFrom := op{"rename from", func(c *C, p string) error { return c.API.Rename(c.Ctx, p, "/moved", workspace.RenameOptions{}) }}
	mvTo := op{"rename to", func(c *C, p string) error { return c.API.Rename(c.Ctx, "/d/g", p, workspace.RenameOptions{}) }}
	cpFrom := op{"copy from", func(c *C, p string) error {
		_, err := c.API.Copy(c.Ctx, p, "/copied", workspace.CopyOptions{Recursive: true})
		return err
	}}
	cpTo := op{"copy to", func(c *C, p string) error {
		_, err := c.API.Copy(c.Ctx, "/f", p, workspace.CopyOptions{})
		return err
	}}
	sym := op{"symlink at", func(c *C, p string) error { return c.API.Symlink(c.Ctx, "f", p) }}
	rl := op{"readlink", func(c *C, p string) error { _, err := c.API.Readlink(c.Ctx, p); return err }}
	sa := op{"setattr", func(c *C, p string) error {
		_, err := c.API.SetAttr(c.Ctx, p, workspace.SetAttrOptions{Perm: ptr(uint32(0o777)), Create: true})
		return err
	}}
	gl := op{"glob dir", func(c *C, p string) error {
		_, err := c.API.Glob(c.Ctx, "*", workspace.GlobOptions{Dir: p})
		return err
	}}
	gr := op{"grep", func(c *C, p string) error {
		_, err := c.API.Grep(c.Ctx, p, workspace.GrepOptions{Pattern: "root"})
		return err
	}}
	tr := op{"tree", func(c *C, p string) error { _, err := c.API.Tree(c.Ctx, p, workspace.TreeOptions{}); return err }}
	du := op{"du", func(c *C, p string) error { _, err := c.API.Du(c.Ctx, p); return err }}
	without := func(ops []op, drop op) []op {
		var out []op
		for _, o := range ops {
			if o.name != drop.name {
				out = append(out, o)
			}
		}
		return out
	}
	every := []op{rd, wr, wrp, app, rm, rmf, ls, st, lst, mk, ed, mvFrom, mvTo, cpFrom, cpTo, sym, rl, sa, gl, gr, tr, du}
	following := []op{rd, wr, wrp, app, ls, st, ed, cpFrom, sa, gl, gr, tr, du}

	cases := []struct {
		name string
		p    string
		ops  []op
		want syscall.Errno
	}{
		{"dot dot escape", "../../etc/passwd", every, syscall.EACCES},
		{"absolute dot dot escape", "/../etc/passwd", every, syscall.EACCES},
		{"dot dot escape from a subdir", "/d/../../etc/passwd", every, syscall.EACCES},
		{"dot dot escape through a dir symlink", "/dl/../../etc", every, syscall.EACCES},
		{"absolute symlink", "/abs", following, syscall.EACCES},
		{"absolute symlink to a dir", "/d/absdir/passwd", every, syscall.EACCES},
		{"relative symlink out", "/rel", following, syscall.EACCES},
		{"relative symlink out, below it", "/rel/passwd", every, syscall.EACCES},
		{"relative symlink out from a subdir", "/d/up", following, syscall.EACCES},
		{"symlink loop", "/loop1", following, syscall.ELOOP},
		{"symlink loop below", "/loop1/x", every, syscall.ELOOP},
		{"self loop", "/self", following, syscall.ELOOP},
		{"non-UTF-8", "/bad\xffname", every, syscall.EINVAL},
		{"non-UTF-8 dir", "/d/\xc3\x28/x", every, syscall.EINVAL},
		{"NUL", "/f\x00.txt", every, syscall.EINVAL},
		{"NUL in a dir", "/d\x00/g", every, syscall.EINVAL},
		{"empty", "", without(every, gl), syscall.EINVAL}, // an empty glob dir is the root
		{"name too long", "/" + strings.Repeat("n", 256), []op{rd, wr, st, mk, sa}, syscall.ENAMETOOLONG},
		{"path too long", "/" + strings.Repeat("d/", 2100), []op{rd, wr, st, mk, ls}, syscall.ENAMETOOLONG},
	}
	var out []testCase
	for _, tc := range cases {
		out = append(out, testCase{name: tc.name, run: func(c *C) {
			tree(c)
			before := c.snapshot()
			for _, o := range tc.ops {
				err := o.do(c, tc.p)
				c.wantErr(err, tc.want, fmt.Sprintf("%s %q", o.name, tc.p))
				if after := c.snapshot(); after != before {
					c.Fatalf("%s %q changed the tree:\n%s\nto\n%s", o.name, tc.p, before, after)
				}
			}
		}})
	}
	// Symlinks that lead out may themselves be looked at and removed.
	out = append(out, testCase{name: "escaping symlinks are visible", run: func(c *C) {
		tree(c)
		for p, target := range map[string]string{"/abs": "/etc/passwd", "/rel": "../../../etc", "/d/up": "../../x", "/loop1": "loop2"} {
			fi := c.lstat(p)
			if fi.Type != "symlink" || fi.Target != target {
				c.Errorf("lstat %s: %+v", p, fi)
			}
			t, err := c.API.Readlink(c.Ctx, p)
			if err != nil || t != target {
				c.Errorf("readlink %s: %q, %v", p, t, err)
			}
		}
		got := c.listAll("/", workspace.ListOptions{Recursive: true})
		if len(got) != 13 {
			c.Errorf("recursive listing with escaping links: %q", got)
		}
		n, err := c.API.Remove(c.Ctx, "/abs", workspace.RemoveOptions{})
		if err != nil || n != 1 {
			c.Errorf("remove an escaping symlink: %d, %v", n, err)
		}
		c.wantMissing("/abs")
	}})
	out = append(out, testCase{name: "edits", run: func(c *C) {
		tree(c)
		before := c.snapshot()
		for _, edits := range [][]workspace.Edit{
			{{Old: "absent", New: "x"}},
			{{Old: "hello", New: "bye"}},
			{{Old: "hello\nhello", New: "ok"}, {Old: "hello", New: "x"}},
			{{Old: "same", New: "same"}},
		} {
			_, err := c.API.Edit(c.Ctx, "/f", edits, workspace.EditOptions{})
			c.wantErr(err, syscall.EINVAL, fmt.Sprintf("edit %+v", edits))
		}
		if after := c.snapshot(); after != before {
			c.Errorf("failed edits changed the tree")
		}
	}})
	out = append(out, testCase{name: "bad symlink target", run: func(c *C) {
		tree(c)
		before := c.snapshot()
		c.wantErr(c.API.Symlink(c.Ctx, "a\x00b", "/newlink"), syscall.EINVAL, "symlink to a target with NUL")
		if after := c.snapshot(); after != before {
			c.Errorf("a failed symlink changed the tree")
		}
	}})
	return out
}

// ---------------------------------------------------------------------
// The size limit.

func limitCases() []testCase {
	huge := func(c *C, old *string, limit uint64) {
		if old != nil {
			c.put("/big", *old)
		}
		c.put("/small", "keep")
		c.ok(c.FS.Sync(c.Ctx), "sync")
		_, used0 := c.FS.Limit()
		before := c.snapshot()
		r := newLazyRandom(10 << 30)
		ctx, cancel := context.WithTimeout(c.Ctx, 2*time.Minute)
		defer cancel()
		_, err := c.API.Write(ctx, "/big", r, workspace.WriteOptions{})
		if err == nil {
			c.Fatalf("a 10 GiB write under a 32 MiB limit succeeded")
		}
		c.wantErr(err, syscall.ENOSPC, "write past the limit")
		if r.read > 1<<30 {
			c.Errorf("the write read %d MiB before failing, want it to stop well before 10 GiB", r.read>>20)
		}
		c.Logf("ENOSPC after reading %d MiB", r.read>>20)
		if old == nil {
			c.wantMissing("/big")
		} else {
			c.wantContent("/big", *old)
		}
		c.wantContent("/small", "keep")
		if after := c.snapshot(); after != before {
			c.Errorf("a failed write changed the tree:\n%s\nto\n%s", before, after)
		}
		// The partial data is dropped, and its space given back.
		var used uint64
		for i := 0; i < 50; i++ {
			c.ok(c.FS.Sync(c.Ctx), "sync")
			_, used = c.FS.Limit()
			if used <= used0+4<<20 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if used > used0+4<<20 {
			c.Errorf("used %d bytes after the failed write, %d before: the partial data is still counted", used, used0)
		}
		if st := c.storeStats(); st.UniqueBytes > used0+4<<20 {
			c.Errorf("the store holds %d unique bytes after the failed write, %d before", st.UniqueBytes, used0)
		}
		// And the space is usable again.
		data := randBytes(9, int(limit-used0)*3/4) // would not fit if the partial data still counted
		if res := c.putBytes("/after", data); res.Size != int64(len(data)) || res.Hash != workspace.Hash(data) {
			c.Errorf("a write after ENOSPC: %+v", res)
		}
	}
	return []testCase{
		{name: "huge write of a new file", limit: 32 << 20, run: func(c *C) { huge(c, nil, 32<<20) }},
		// A smaller limit: the same path as above, in less time.
		{name: "huge write over a file", limit: 8 << 20, run: func(c *C) { old := "old content"; huge(c, &old, 8<<20) }},
		{name: "huge append", limit: 8 << 20, run: func(c *C) {
			c.put("/log", "start\n")
			r := newLazyRandom(10 << 30)
			_, err := c.API.Write(c.Ctx, "/log", r, workspace.WriteOptions{Append: true})
			c.wantErr(err, syscall.ENOSPC, "append past the limit")
			if r.read > 1<<30 {
				c.Errorf("the append read %d MiB before failing", r.read>>20)
			}
			// An append is not atomic: what fit stays, and it is exactly
			// the start of the data, after the old content.
			got := c.get("/log")
			if !strings.HasPrefix(got, "start\n") {
				c.Fatalf("the append clobbered the start: %q", got[:min(len(got), 10)])
			}
			got = got[6:]
			want := make([]byte, len(got))
			io.ReadFull(newLazyRandom(int64(len(got))), want)
			if got != string(want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				c.Errorf("the %d bytes appended before ENOSPC differ from the data at byte %d", len(got), i)
			}
		}},
		{name: "copy within the limit", limit: 8 << 20, run: func(c *C) {
			data := randBytes(10, 3<<20)
			c.putBytes("/a", data)
			// Only committed chunks are shared: uncommitted data is copied.
			c.ok(c.FS.Sync(c.Ctx), "sync")
			// Shared data costs nothing: four copies of 3 MiB fit in 8.
			for _, p := range []string{"/b", "/c", "/d", "/e"} {
				_, err := c.API.Copy(c.Ctx, "/a", p, workspace.CopyOptions{})
				c.ok(err, "copy "+p)
				if fi := c.stat(p); fi.Size != int64(len(data)) {
					c.Errorf("copy %s: size %d", p, fi.Size)
				}
			}
			if h := c.fsHash(fs.Ino(c.stat("/e").Ino)); h != workspace.Hash(data) {
				c.Errorf("the last copy holds other data")
			}
		}},
	}
}

// ---------------------------------------------------------------------
// Concurrency.

func concurrencyCases() []testCase {
	return []testCase{{name: "mixed", run: func(c *C) {
		const workers = 8
		c.put("/shared/counter", "n=0\n")
		c.put("/shared/log", "")
		c.put("/shared/static", "static content\n")
		c.put("/shared/plain", "p=start\n")
		for i := range workers {
			c.put(fmt.Sprintf("/own/g%d", i), "start\n")
		}
		var (
			mu        sync.Mutex
			successes int // increments of the counter
			conflicts int
			appends   = make([]int, workers)
		)
		deadline := time.Now().Add(time.Second)
		var wg sync.WaitGroup
		var (
			errMu sync.Mutex
			errs  []error
		)
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 99))
				own := fmt.Sprintf("/own/g%d", g)
				ownContent := "start\n"
				fail := func(format string, args ...any) {
					errMu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: "+format, append([]any{g}, args...)...))
					errMu.Unlock()
				}
				read := func(p string) (string, string, bool) {
					rd, err := c.API.Read(c.Ctx, p, workspace.ReadOptions{})
					if err != nil {
						fail("read %s: %v", p, err)
						return "", "", false
					}
					defer rd.Close()
					b, err := io.ReadAll(rd)
					if err != nil {
						fail("read %s: %v", p, err)
						return "", "", false
					}
					return string(b), rd.Hash(), true
				}
				for time.Now().Before(deadline) {
					switch rng.IntN(10) {
					case 0: // own file: a whole write, then read it back
						data := string(randBytes(uint64(rng.IntN(1000)), rng.IntN(64<<10)))
						res, err := c.API.Write(c.Ctx, own, strings.NewReader(data), workspace.WriteOptions{})
						if err != nil {
							fail("write %s: %v", own, err)
							return
						}
						if res.Hash != workspace.Hash([]byte(data)) {
							fail("write %s: hash %s", own, res.Hash)
						}
						ownContent = data
						got, h, ok := read(own)
						if !ok {
							return
						}
						if got != ownContent || h != workspace.Hash([]byte(ownContent)) {
							fail("%s reads back %d bytes, wrote %d", own, len(got), len(ownContent))
							return
						}
					case 1: // own file: an edit
						next := fmt.Sprintf("edited %d\n", rng.IntN(1e6))
						old := ownContent
						if old == "" || !utf8ValidAndUnique(old) {
							if _, err := c.API.Write(c.Ctx, own, strings.NewReader("start\n"), workspace.WriteOptions{}); err != nil {
								fail("write %s: %v", own, err)
								return
							}
							ownContent = "start\n"
							continue
						}
						if _, err := c.API.Edit(c.Ctx, own, []workspace.Edit{{Old: old, New: next}}, workspace.EditOptions{IfMatch: workspace.Hash([]byte(old))}); err != nil {
							fail("edit %s: %v", own, err)
							return
						}
						ownContent = next
					case 2: // shared counter: an edit, compare-and-swap
						s, h, ok := read("/shared/counter")
						if !ok {
							return
						}
						var n int
						if _, err := fmt.Sscanf(s, "n=%d\n", &n); err != nil {
							fail("counter holds %q", s)
							return
						}
						_, err := c.API.Edit(c.Ctx, "/shared/counter", []workspace.Edit{{Old: s, New: fmt.Sprintf("n=%d\n", n+1)}}, workspace.EditOptions{IfMatch: h})
						mu.Lock()
						switch {
						case err == nil:
							successes++
						case errors.Is(err, workspace.ErrConflict):
							conflicts++
						default:
							fail("edit counter: %v", err)
						}
						mu.Unlock()
					case 3: // shared counter: a write, compare-and-swap
						s, h, ok := read("/shared/counter")
						if !ok {
							return
						}
						var n int
						if _, err := fmt.Sscanf(s, "n=%d\n", &n); err != nil {
							fail("counter holds %q", s)
							return
						}
						_, err := c.API.Write(c.Ctx, "/shared/counter", strings.NewReader(fmt.Sprintf("n=%d\n", n+1)), workspace.WriteOptions{IfMatch: h})
						mu.Lock()
						switch {
						case err == nil:
							successes++
						case errors.Is(err, workspace.ErrConflict):
							conflicts++
						default:
							fail("write counter: %v", err)
						}
						mu.Unlock()
					case 4: // shared log: append a line
						line := fmt.Sprintf("g%d %d\n", g, appends[g])
						if _, err := c.API.Write(c.Ctx, "/shared/log", strings.NewReader(line), workspace.WriteOptions{Append: true}); err != nil {
							fail("append: %v", err)
							return
						}
						appends[g]++
					case 5: // listings
						res, err := c.API.List(c.Ctx, "/", workspace.ListOptions{Recursive: true, Limit: 1000})
						if err != nil {
							fail("list: %v", err)
							return
						}
						if len(res.Entries) < 2+workers+3 {
							fail("list: %d entries", len(res.Entries))
						}
					case 6: // shared reads
						if s, _, ok := read("/shared/static"); ok && s != "static content\n" {
							fail("static file reads %q", s)
						}
					case 8: // shared file: plain and compare-and-swap writes mixed
						s, h, ok := read("/shared/plain")
						if !ok {
							return
						}
						if !strings.HasPrefix(s, "p=") || !strings.HasSuffix(s, "\n") {
							fail("plain file holds %q: a torn write", s)
							return
						}
						opt := workspace.WriteOptions{}
						if rng.IntN(2) == 0 {
							opt.IfMatch = h
						}
						_, err := c.API.Write(c.Ctx, "/shared/plain", strings.NewReader(fmt.Sprintf("p=%d %s\n", g, strings.Repeat("x", rng.IntN(3000)))), opt)
						if err != nil && !(opt.IfMatch != "" && errors.Is(err, workspace.ErrConflict)) {
							fail("write plain (if match %v): %v", opt.IfMatch != "", err)
						}
					case 9: // shared file: edits racing plain writes
						s, h, ok := read("/shared/plain")
						if !ok {
							return
						}
						_, err := c.API.Edit(c.Ctx, "/shared/plain", []workspace.Edit{{Old: s, New: fmt.Sprintf("p=edit %d %d\n", g, rng.IntN(1e9))}}, workspace.EditOptions{IfMatch: h})
						if err != nil && !errors.Is(err, workspace.ErrConflict) {
							fail("edit plain: %v", err)
						}
					case 7: // grep and stat
						if _, err := c.API.Grep(c.Ctx, "/shared", workspace.GrepOptions{Pattern: "n="}); err != nil {
							fail("grep: %v", err)
						}
						if _, err := c.API.Stat(c.Ctx, own); err != nil {
							fail("stat: %v", err)
						}
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if i == 10 {
				c.Errorf("... and %d more errors", len(errs)-i)
				break
			}
			c.Error(err)
		}
		s := c.get("/shared/counter")
		if want := fmt.Sprintf("n=%d\n", successes); s != want {
			c.Errorf("counter %q after %d successful compare-and-swaps (%d conflicts)", s, successes, conflicts)
		}
		c.Logf("%d compare-and-swaps, %d conflicts", successes, conflicts)
		log := c.get("/shared/log")
		counts := make([]int, workers)
		for _, l := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
			if l == "" {
				continue
			}
			var g, k int
			if _, err := fmt.Sscanf(l, "g%d %d", &g, &k); err != nil || g < 0 || g >= workers || k != counts[g] {
				c.Errorf("log line %q out of order or torn", l)
				break
			}
			counts[g]++
		}
		for g := range workers {
			if counts[g] != appends[g] {
				c.Errorf("worker %d appended %d lines, the log holds %d", g, appends[g], counts[g])
			}
		}
	}}}
}

// utf8ValidAndUnique reports whether s can be an edit's Old string for a
// file holding exactly s (the wire carries only UTF-8 strings).
func utf8ValidAndUnique(s string) bool { return utf8.ValidString(s) && len(s) < 1<<20 }
