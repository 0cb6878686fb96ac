package shell

// Confinement. mvdan.cc/sh/v3/interp routes most file access through the
// handlers the runner is given, but not all of it. Read from the module's
// source (v3.14.1), these are every place the interpreter touches the
// host on its own, and what answers each here:
//
//   - runner.go, Runner.open: a path whose directory is the runner's
//     temp dir and whose name starts with "sh-interp-" is opened with
//     os.OpenFile, skipping the open handler. The temp dir is $TMPDIR of
//     the runner's Env at its first Reset, or os.TempDir(). Every runner
//     here starts with TMPDIR set to noHostTemp, an absolute path with a
//     NUL byte in it: no path a script can name matches it except by
//     containing that NUL, and any path containing a NUL fails in the Go
//     runtime before a system call is made. The script's own TMPDIR is
//     put back (sandboxEnv.tmpdir) right after that Reset.
//   - runner.go, process substitution: mkfifo in the temp dir, opened
//     with os.OpenFile. <(list) is rewritten before it runs (procSubst)
//     into a command substitution that captures list's output in memory
//     and names it /dev/fd/N, which only our handlers resolve; >(list)
//     is refused. Code that reaches the interpreter unrewritten would
//     make the fifo under noHostTemp and fail with "invalid argument".
//   - builtin.go, source and ".": scriptFromPathDir os.Stat's the host
//     (PATH, then the path itself). call rewrites the file name into the
//     workspace path it resolves to with a NUL appended (sourceMark): the
//     host stat fails, and open serves the workspace file, checked and
//     rewritten like any script.
//   - builtin.go, type, command -v/-V, hash: LookPathDir stats the host's
//     PATH. call sends them, also behind builtin and command, to typeCmd,
//     which answers from our command table.
//   - expand.go, ~user: os/user.Lookup reads the host's /etc/passwd
//     unless the Environ answers "HOME user"; sandboxEnv answers "~user",
//     so ~user stays as written, as on a system without that user.
//   - api.go, Reset: HOME from os.UserHomeDir when the Env has none, and
//     UID, EUID, GID from the process: sandboxEnv gives HOME=/ and 0s.
//   - os_unix.go, test -O/-G: os/user.Current (cached after its first
//     call, which the plugin makes at start) and the file's Sys(), which
//     fileInfo answers from the workspace's attributes.
//   - api.go, Env(nil) and Dir(""): never used here (os.Environ,
//     os.Getwd). DefaultExecHandler, runScriptENOEXEC, the default
//     open, stat, readdir and access handlers: replaced.
//   - eval: its string is parsed when it runs, past the checks done on
//     the script; call checks and rewrites it the same way first.
//
// What is left of the host: $$ and $PPID are the plugin's pids, and the
// date commands read the host's zoneinfo database (time.LoadLocation,
// which refuses names with "..", or absolute ones).

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/shell/coreutils"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// noHostTemp is the interpreter's temp dir: see the package's notes on
// confinement. filepath.IsAbs holds, as the runner requires.
const noHostTemp = "/\x00computerfs-shell-has-no-host-temp-dir"

// sourceMark ends a source'd path that call resolved in the workspace.
const sourceMark = "\x00"

// sandboxEnv is the Environ every runner starts from: the exec's
// variables, nothing of the host's.
type sandboxEnv struct {
	vars   expand.Environ
	tmpdir expand.Variable // TMPDIR once the runner has Reset
	reset  bool
}

func newSandboxEnv(pairs []string) *sandboxEnv {
	e := &sandboxEnv{vars: expand.ListEnviron(pairs...)}
	e.tmpdir = e.vars.Get("TMPDIR")
	return e
}

func (e *sandboxEnv) Get(name string) expand.Variable {
	switch {
	case name == "TMPDIR":
		if !e.reset {
			return expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: noHostTemp}
		}
		return e.tmpdir
	case strings.HasPrefix(name, "HOME "):
		// ~user: expand it to itself.
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + strings.TrimPrefix(name, "HOME ")}
	}
	if vr := e.vars.Get(name); vr.IsSet() {
		return vr
	}
	switch name {
	case "HOME":
		return expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: "/"}
	case "UID", "EUID", "GID":
		return expand.Variable{Set: true, ReadOnly: true, Kind: expand.String, Str: "0"}
	}
	return expand.Variable{}
}

func (e *sandboxEnv) Each(f func(name string, vr expand.Variable) bool) {
	sawHome := false
	e.vars.Each(func(name string, vr expand.Variable) bool {
		if name == "TMPDIR" {
			return true
		}
		sawHome = sawHome || name == "HOME"
		return f(name, vr)
	})
	if e.tmpdir.IsSet() && !f("TMPDIR", e.Get("TMPDIR")) {
		return
	}
	if !sawHome {
		f("HOME", e.Get("HOME"))
	}
}

// prepare checks a parsed script and rewrites it to run here: the
// features we refuse, process substitution, loop ticks.
func prepare(f *syntax.File) error {
	if err := unsupported(f); err != nil {
		return err
	}
	procSubst(f)
	tildeUsers(f)
	addLoopTicks(f)
	return nil
}

// parseScript parses src as bash and prepares it.
func parseScript(src, name string) (*syntax.File, error) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	if err := prepare(file); err != nil {
		return nil, err
	}
	return file, nil
}

// procSubst rewrites every <(list) into $( (list) | __cfs_psub ): the
// list's output is kept in memory (psubs) and the word becomes the
// /dev/fd/N path that names it. Unlike bash, the list has ended before
// the command that reads it starts.
func procSubst(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		w, ok := n.(*syntax.Word)
		if !ok {
			return true
		}
		for i, part := range w.Parts {
			ps, ok := part.(*syntax.ProcSubst)
			if !ok || ps.Op != syntax.CmdIn {
				continue
			}
			list := &syntax.Stmt{Cmd: &syntax.Subshell{Stmts: ps.Stmts}}
			sink := &syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{litWord("__cfs_psub")}}}
			w.Parts[i] = &syntax.CmdSubst{Stmts: []*syntax.Stmt{{Cmd: &syntax.BinaryCmd{Op: syntax.Pipe, X: list, Y: sink}}}}
		}
		return true
	})
}

func litWord(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}
}

// psubs holds the outputs of a run's process substitutions until they
// are read.
type psubs struct {
	mu    sync.Mutex
	next  int
	bufs  map[string][]byte
	bytes int64
}

// maxPsubBytes bounds what a run's process substitutions hold at once.
const maxPsubBytes = 64 << 20

func (p *psubs) add(b []byte) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+int64(len(b)) > maxPsubBytes {
		return "", fmt.Errorf("process substitution: more than %d MiB of output held at once", maxPsubBytes>>20)
	}
	if p.bufs == nil {
		p.bufs = map[string][]byte{}
	}
	name := "/dev/fd/" + strconv.Itoa(63-p.next%60)
	for p.bufs[name] != nil {
		p.next++
		name = "/dev/fd/" + strconv.Itoa(63-p.next%60)
	}
	p.next++
	p.bufs[name] = b
	p.bytes += int64(len(b))
	return name, nil
}

// take hands out a substitution's output once, as a fifo would.
func (p *psubs) take(name string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.bufs[name]
	if ok {
		delete(p.bufs, name)
		p.bytes -= int64(len(b))
	}
	return b, ok
}

func (p *psubs) size(name string) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.bufs[name]
	return int64(len(b)), ok
}

func (p *psubs) held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// psub is __cfs_psub: keep stdin, print its name.
func (rn *run) psub(stdin io.Reader, stdout io.Writer) error {
	var b bytes.Buffer
	if stdin != nil {
		if _, err := io.Copy(&b, io.LimitReader(stdin, maxPsubBytes+1)); err != nil {
			return err
		}
	}
	name, err := rn.psubs.add(b.Bytes())
	if err != nil {
		return &limitError{reason: err.Error()}
	}
	_, err = io.WriteString(stdout, name)
	return err
}

// runFS is the FS the commands and the interpreter's handlers see: the
// workspace, the virtual devices, and the run's process substitutions
// under /dev/fd.
type runFS struct {
	coreutils.FS
	p *psubs
}

// devices are the virtual /dev the commands see, whatever the workspace
// has there: nothing of the host's.
var devices = map[string]func() io.Reader{
	"/dev/null":    func() io.Reader { return strings.NewReader("") },
	"/dev/zero":    func() io.Reader { return zeros{} },
	"/dev/urandom": func() io.Reader { return rand.Reader },
	"/dev/random":  func() io.Reader { return rand.Reader },
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

func (f runFS) Create(ctx context.Context, name string, appendMode bool, perm iofs.FileMode) (io.WriteCloser, error) {
	if _, ok := devices[name]; ok {
		return discard{}, nil
	}
	return f.FS.Create(ctx, name, appendMode, perm)
}

func (f runFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if dev, ok := devices[name]; ok {
		return io.NopCloser(dev()), nil
	}
	if strings.HasPrefix(name, "/dev/fd/") {
		if b, ok := f.p.take(name); ok {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
		return nil, &iofs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	return f.FS.Open(ctx, name)
}

func (f runFS) Stat(ctx context.Context, name string) (coreutils.FileInfo, error) {
	if _, ok := devices[name]; ok {
		return coreutils.FileInfo{Name: path.Base(name), Mode: iofs.ModeDevice | iofs.ModeCharDevice | 0o666, Nlink: 1}, nil
	}
	if strings.HasPrefix(name, "/dev/fd/") {
		if n, ok := f.p.size(name); ok {
			return coreutils.FileInfo{Name: path.Base(name), Size: n, Mode: iofs.ModeNamedPipe | 0o600, ModTime: time.Now()}, nil
		}
		return coreutils.FileInfo{}, &iofs.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
	}
	return f.FS.Stat(ctx, name)
}

func (f runFS) Lstat(ctx context.Context, name string) (coreutils.FileInfo, error) {
	if _, ok := devices[name]; ok || strings.HasPrefix(name, "/dev/fd/") {
		return f.Stat(ctx, name)
	}
	return f.FS.Lstat(ctx, name)
}

// sourcePath resolves source's file in the workspace as bash does (a
// name without a slash is looked for on PATH, then in the directory)
// and marks it for open.
func (rn *run) sourcePath(ctx context.Context, dir, pathVar, name string) string {
	if !strings.Contains(name, "/") {
		for _, d := range strings.Split(pathVar, ":") {
			if d == "" || !path.IsAbs(d) {
				continue
			}
			p := path.Join(d, name)
			if fi, err := rn.fs.Stat(ctx, p); err == nil && !fi.Mode.IsDir() {
				return p + sourceMark
			}
		}
	}
	if path.IsAbs(name) {
		return path.Clean(name) + sourceMark
	}
	return path.Join(dir, name) + sourceMark
}

// openSource reads a source'd file and gives the interpreter its checked
// and rewritten text.
func (rn *run) openSource(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	rc, err := rn.fs.Open(ctx, name)
	if err != nil {
		return nil, pathErr(name, err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxScriptBytes+1))
	rc.Close()
	if err != nil {
		return nil, pathErr(name, err)
	}
	if len(b) > maxScriptBytes {
		return nil, pathErr(name, syscall.EFBIG)
	}
	file, err := parseScript(string(b), name)
	if err != nil {
		return nil, &iofs.PathError{Op: "source", Path: name, Err: err}
	}
	var out strings.Builder
	if err := syntax.NewPrinter().Print(&out, file); err != nil {
		return nil, err
	}
	return readOnly{io.NopCloser(strings.NewReader(out.String()))}, nil
}

// maxScriptBytes bounds a script read from a file.
const maxScriptBytes = 16 << 20

// tildeUsers keeps ~user (and ~+, ~-) as written: the interpreter would
// look the user up in the host's /etc/passwd. A "~" that begins a word,
// or an alternative of a brace expansion in it, and is followed by a
// name is escaped; ~ and ~/ (HOME) are left to expand.
func tildeUsers(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		w, ok := n.(*syntax.Word)
		if !ok || len(w.Parts) == 0 {
			return true
		}
		lit, ok := w.Parts[0].(*syntax.Lit)
		if !ok || !strings.Contains(lit.Value, "~") {
			return true
		}
		lit.Value = escapeTildeUsers(lit.Value, len(w.Parts) > 1)
		return true
	})
}

func escapeTildeUsers(s string, more bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '~' && (i == 0 || s[i-1] == '{' || s[i-1] == ',') {
			next := byte(0)
			if i+1 < len(s) {
				next = s[i+1]
			}
			named := next != 0 && next != '/' && next != ',' && next != '}'
			if named || (next == 0 && more) {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// rewriteWords checks and rewrites a string the interpreter will parse
// later (eval's, an alias's value, a trap's action) as a script is. A
// string that does not parse is given back as it is: the interpreter
// then reports the syntax error as bash would, and runs none of it.
func rewriteWords(src, name string) (string, error) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), name)
	if err != nil {
		return src, nil
	}
	if err := prepare(file); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, file); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
