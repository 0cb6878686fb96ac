// Package workspace is the file API: read, write, edit, list, stat, mkdir,
// remove, rename, copy, glob, grep, tree, du and the change feed, on an
// open fs.FS, by workspace path. The CLI, the daemon's control socket and
// the plugins' host services all go through it; the FUSE mount is the
// other door onto the same fs.FS, so the two cannot disagree.
//
// It owns path resolution and the semantics of each operation. It must not
// touch the store: every change goes through fs.FS, which journals it.
//
// # Paths
//
// A path is a workspace path: "/a/b", or relative to the WS's working
// directory. Paths must be valid UTF-8 without NUL bytes. Resolution walks
// the tree one name at a time, the way the kernel does: ".." goes to the
// parent of the directory reached so far (after symlinks), symlinks are
// followed with relative targets resolved from their own directory, and
// anything that would leave the workspace root is refused with EACCES:
// a ".." above the root, an absolute symlink target (on the mount it
// names a host path), or a relative one that climbs out. At most 40
// symlinks are followed (ELOOP).
//
// # Errors
//
// Every error is an *fs.PathError (io/fs) carrying the operation, the
// path as given, and a syscall.Errno, or ErrConflict for a failed
// compare-and-swap; errors.Is works with both.
//
// # Other doors
//
// A Notifier (the FUSE server) hears of every change made here, so that
// the kernel drops what it cached. Calls to it are made without locks
// held.
package workspace

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/computerfs/computerfs/fs"
)

// Notifier hears of changes made through the file API.
type Notifier interface {
	// Invalidate says that entry name of directory parent changed (if
	// name is not ""), and that inode ino's data or attributes did (if ino
	// is not 0).
	Invalidate(parent fs.Ino, name string, ino fs.Ino)
}

// ErrConflict is the cause of a compare-and-swap failure: the file's
// content hash was not the one expected.
var ErrConflict = errors.New("file changed: content hash differs from the expected one")

// escapeMsg starts the message of EACCES errors for paths that leave the
// workspace.
const escapeMsg = "path escapes the workspace"

// EscapeError is the cause of an EACCES for a path that would leave the
// workspace.
type EscapeError struct{ Reason string }

func (e *EscapeError) Error() string { return escapeMsg + ": " + e.Reason }

// Is makes errors.Is(err, syscall.EACCES) true.
func (e *EscapeError) Is(target error) bool { return target == syscall.EACCES }

// Options configure a WS.
type Options struct {
	// Caller owns the files and directories the API creates.
	Caller fs.Caller
	// ReadOnly refuses every change with EROFS.
	ReadOnly bool
}

// WS is the file API over one workspace. It is safe for concurrent use.
type WS struct {
	f *fs.FS
	// t is what reads go to: f, or a snapshot's view (snapshot.go).
	t    tree
	snap string // the snapshot read, "" for the live tree
	opts Options
	// notify is shared by a workspace's views: SetNotifier on any of them
	// reaches all, whenever they were made.
	notify *atomic.Pointer[notifierBox]
	// root confines a view (Sub) to a subtree: its inode, "/" for the
	// whole workspace.
	rootIno fs.Ino
	rootDir string
	// rules are the view's path rules (rules.go), nil for none.
	rules *Rules
	// writeMu serialises the compare-and-swap writes (and edits) made
	// through this API, so that they do not fail each other needlessly;
	// against every other door the swap itself is fs.ReplaceIf's.
	writeMu *chanMutex
	// bufs holds maxIO buffers for writes and hashing, shared by views: a
	// fresh 1 MiB buffer per call is most of a small write's cost.
	bufs *sync.Pool
	// beforeReplace, when set (tests), runs between a write's checks and
	// its replace (or a compare-and-swap append's first bytes).
	beforeReplace func()
	// forks is what the views of a workspace share about its forks
	// (fork.go).
	forks *forkShared
	// onDeny, when set, hears of every refusal a path rule makes
	// (WithDenialHook).
	onDeny func(Denial)
}

type notifierBox struct{ n Notifier }

// New returns the file API over f.
func New(f *fs.FS, opts Options) *WS {
	bufs := &sync.Pool{New: func() any { b := make([]byte, maxIO); return &b }}
	return &WS{f: f, t: f, opts: opts, notify: new(atomic.Pointer[notifierBox]), rootIno: fs.RootIno, rootDir: "/", writeMu: newChanMutex(), bufs: bufs, forks: newForkShared()}
}

// FS returns the filesystem the API works on.
func (w *WS) FS() *fs.FS { return w.f }

// SetNotifier tells w whom to notify of its changes (nil for nobody).
func (w *WS) SetNotifier(n Notifier) {
	if n == nil {
		w.notify.Store(nil)
		return
	}
	w.notify.Store(&notifierBox{n})
}

// Sub returns a view of w confined to directory dir (a workspace path):
// its paths are relative to dir, and nothing above it can be reached.
func (w *WS) Sub(ctx context.Context, dir string, readOnly bool) (*WS, error) {
	r, err := w.resolve(ctx, "sub", dir, true)
	if err != nil {
		return nil, err
	}
	if !r.attr.IsDir() {
		return nil, pathErr("sub", dir, syscall.ENOTDIR)
	}
	s := &WS{f: w.f, t: w.t, snap: w.snap, opts: w.opts, notify: w.notify, rootIno: r.ino, rootDir: w.full(r.path), rules: w.rules, writeMu: w.writeMu, bufs: w.bufs, onDeny: w.onDeny, forks: w.forks}
	s.opts.ReadOnly = w.opts.ReadOnly || readOnly
	return s, nil
}

// WithRules returns a view of w that obeys path rules rs (nil for none)
// instead of w's: see rules.go. Rules name workspace paths, from the
// workspace's root, whatever the view's root.
func (w *WS) WithRules(rs *Rules) *WS {
	return &WS{f: w.f, t: w.t, snap: w.snap, opts: w.opts, notify: w.notify, rootIno: w.rootIno, rootDir: w.rootDir, rules: rs, writeMu: w.writeMu, bufs: w.bufs, beforeReplace: w.beforeReplace, onDeny: w.onDeny, forks: w.forks}
}

// Denial is one refusal a path rule made: the operation, the path as
// the caller gave it, the canonical workspace path the rule decided (""
// when the refusal concerns a path below Path, such as an entry of a
// directory being renamed) and the rule.
type Denial struct {
	Op, Path, Decided string
	Rule              Rule
	Errno             syscall.Errno
}

// WithDenialHook returns a view of w that calls h (nil for none) with
// every refusal its path rules make, once per refused operation, before
// the operation returns: the doors use it to put path-rule denials in
// the audit log (issue 17). Views made from it (Sub, WithRules,
// Snapshot) keep h. h must not call back into the view, and should be
// quick (it runs on the caller's goroutine).
func (w *WS) WithDenialHook(h func(Denial)) *WS {
	s := w.WithRules(w.rules)
	s.onDeny = h
	return s
}

// ruleErr is the *RuleError of a refusal of op on p (as given) by rule
// by, decided on canonical view path decided (or "" if not known), which
// the denial hook hears of.
func (w *WS) ruleErr(op, p, decided string, by Rule, errno syscall.Errno) *RuleError {
	re := &RuleError{Rule: by, Errno: errno}
	if w.onDeny != nil {
		if decided != "" {
			decided = w.full(decided)
		}
		w.onDeny(Denial{Op: op, Path: p, Decided: decided, Rule: by, Errno: errno})
	}
	return re
}

// Rules returns the view's path rules (nil for none).
func (w *WS) Rules() *Rules { return w.rules }

// full turns a path of the view (canonical, from its root) into the
// workspace path rules match.
func (w *WS) full(p string) string {
	switch {
	case w.rootDir == "/":
		return p
	case p == "/":
		return w.rootDir
	}
	return w.rootDir + p
}

// verdict decides a canonical path of the view.
func (w *WS) verdict(p string) (Verdict, Rule) {
	if w.rules == nil {
		return Allow, Rule{}
	}
	return w.rules.Verdict(w.full(p))
}

// hidden says whether the rules deny a canonical path of the view: walks
// and listings leave it out.
func (w *WS) hidden(p string) bool {
	v, _ := w.verdict(p)
	return v == Deny
}

// denied is the error of a lookup of a denied path: it looks absent.
// p is the view's canonical path denied.
func (w *WS) denied(p string, r Rule) error {
	return &RuleError{Rule: r, Errno: syscall.ENOENT, decided: w.full(p)}
}

// asCreate turns the ENOENT of a denied path into the EACCES of an
// attempt to create or write it (whether or not it exists).
func asCreate(err error) error {
	var re *RuleError
	if errors.As(err, &re) && re.Errno == syscall.ENOENT {
		var pe *iofs.PathError
		if errors.As(err, &pe) {
			return &iofs.PathError{Op: pe.Op, Path: pe.Path, Err: &RuleError{Rule: re.Rule, Errno: syscall.EACCES}}
		}
		return &RuleError{Rule: re.Rule, Errno: syscall.EACCES}
	}
	return err
}

// canChange refuses, with EROFS, a change to a path the rules make
// read-only (r is its resolution).
func (w *WS) canChange(op, p string, r resolved) error {
	if r.verdict == ReadOnly {
		return pathErr(op, p, w.ruleErr(op, p, r.path, r.rule, syscall.EROFS))
	}
	return nil
}

// resolveChange resolves a path an operation creates or changes: a
// denied path is EACCES, a read-only one EROFS.
func (w *WS) resolveChange(ctx context.Context, op, p string, follow bool) (resolved, error) {
	r, err := w.resolve(ctx, op, p, follow)
	if err != nil {
		return r, asCreate(err)
	}
	return r, w.canChange(op, p, r)
}

func (w *WS) invalidate(parent fs.Ino, name string, ino fs.Ino) {
	if b := w.notify.Load(); b != nil {
		b.n.Invalidate(parent, name, ino)
	}
}

// pathErr builds the error every operation returns.
func pathErr(op, p string, err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) && pe.Op == op {
		return err
	}
	if e, ok := err.(syscall.Errno); ok && e == 0 {
		err = syscall.EIO
	}
	return &iofs.PathError{Op: op, Path: p, Err: err}
}

// Errno returns the errno an error stands for: EIO when it names none,
// ESTALE for a conflict, 0 for nil.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrConflict) {
		return syscall.ESTALE
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, syscall.EACCES):
		return syscall.EACCES
	case errors.Is(err, syscall.EINVAL):
		return syscall.EINVAL
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return syscall.EINTR
	}
	return syscall.EIO
}

// maxSymlinks bounds symlink resolution, as Linux does.
const maxSymlinks = 40

// resolved is where a path leads.
type resolved struct {
	parent fs.Ino // directory holding the last name (the root: itself)
	name   string // last name ("" for the root)
	ino    fs.Ino // 0 if the last name does not exist
	attr   fs.Attr
	path   string // canonical workspace path, symlinks resolved
	// verdict is the path rules' on path (never Deny: that is an error),
	// and rule the rule that decided it.
	verdict Verdict
	rule    Rule
}

// checkPath rejects what no workspace path may hold.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path: %w", syscall.EINVAL)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("path is not valid UTF-8: %w", syscall.EINVAL)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("path contains a NUL byte: %w", syscall.EINVAL)
	}
	if len(p) > 4095 {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// CleanPath turns a path given to the API into a clean, absolute
// workspace path, lexically: ".." above the root is an error. It is what
// the API shows back; resolution itself handles ".." after symlinks.
func CleanPath(p string) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	depth := 0
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if depth == 0 {
				return "", &EscapeError{Reason: "\"..\" above the root"}
			}
			depth--
		default:
			depth++
		}
	}
	return path.Join("/", p), nil
}

// resolve follows p. With follow, a symlink as the last name is followed
// too; without it (lstat, remove, rename), the link itself is the result.
// A missing last name is not an error: ino is 0 and parent is where it
// would be. A missing directory on the way is ENOENT.
func (w *WS) resolve(ctx context.Context, op, p string, follow bool) (resolved, error) {
	r, err := w.walk(ctx, p, follow)
	if err != nil {
		var re *RuleError
		if w.onDeny != nil && errors.As(err, &re) {
			w.onDeny(Denial{Op: op, Path: p, Decided: re.decided, Rule: re.Rule, Errno: re.Errno})
		}
		return r, pathErr(op, p, err)
	}
	return r, nil
}

// frame is one directory on the walk's stack.
type frame struct {
	ino  fs.Ino
	name string
}

func (w *WS) walk(ctx context.Context, p string, follow bool) (resolved, error) {
	if err := checkPath(p); err != nil {
		return resolved{}, err
	}
	// The stack holds the directories from the view's root down; ".."
	// pops it, and popping the root escapes.
	stack := []frame{{ino: w.rootIno}}
	links := 0
	pending := strings.Split(p, "/")
	c := fs.Caller{Uid: w.opts.Caller.Uid, Gid: w.opts.Caller.Gid}
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return resolved{}, err
		}
		name := pending[0]
		pending = pending[1:]
		last := len(pending) == 0 || allEmpty(pending)
		switch name {
		case "", ".":
			if last {
				return w.result(stack)
			}
			continue
		case "..":
			if len(stack) == 1 {
				return resolved{}, &EscapeError{Reason: "\"..\" above the root"}
			}
			stack = stack[:len(stack)-1]
			if last {
				return w.result(stack)
			}
			continue
		}
		if len(name) > 255 {
			return resolved{}, syscall.ENAMETOOLONG
		}
		dir := stack[len(stack)-1].ino
		var v Verdict
		var by Rule
		if w.rules != nil {
			// Before the lookup: what a denied name is must not show.
			if v, by = w.verdict(joinStack(stack, name)); v == Deny {
				return resolved{}, w.denied(joinStack(stack, name), by)
			}
		}
		a, err := w.t.Lookup(c, dir, name)
		if err == syscall.ENOENT && last {
			return resolved{parent: dir, name: name, path: joinStack(stack, name), verdict: v, rule: by}, nil
		}
		if err != nil {
			return resolved{}, err
		}
		if a.IsSymlink() && (!last || follow) {
			links++
			if links > maxSymlinks {
				return resolved{}, syscall.ELOOP
			}
			target, err := w.t.Readlink(a.Ino)
			if err != nil {
				return resolved{}, err
			}
			if strings.HasPrefix(target, "/") {
				return resolved{}, &EscapeError{Reason: fmt.Sprintf("symlink %s points to the absolute path %s", joinStack(stack, name), target)}
			}
			rest := strings.Split(target, "/")
			trailing := false
			if last && strings.HasSuffix(p, "/") {
				trailing = true
			}
			pending = append(rest, pending...)
			if trailing {
				pending = append(pending, "")
			}
			continue
		}
		if last {
			if strings.HasSuffix(p, "/") && !a.IsDir() && !a.IsSymlink() {
				return resolved{}, syscall.ENOTDIR
			}
			return resolved{parent: dir, name: name, ino: a.Ino, attr: a, path: joinStack(stack, name), verdict: v, rule: by}, nil
		}
		if !a.IsDir() {
			return resolved{}, syscall.ENOTDIR
		}
		stack = append(stack, frame{ino: a.Ino, name: name})
	}
	return w.result(stack)
}

func allEmpty(parts []string) bool {
	for _, s := range parts {
		if s != "" && s != "." {
			return false
		}
	}
	return true
}

// result is the resolution that ends on the directory atop the stack.
func (w *WS) result(stack []frame) (resolved, error) {
	top := stack[len(stack)-1]
	a, err := w.t.GetAttr(top.ino)
	if err != nil {
		return resolved{}, err
	}
	r := resolved{ino: top.ino, attr: a, name: top.name}
	if len(stack) > 1 {
		r.parent = stack[len(stack)-2].ino
		r.path = joinStack(stack[:len(stack)-1], top.name)
	} else {
		r.parent = top.ino
		r.path = "/"
	}
	if r.verdict, r.rule = w.verdict(r.path); r.verdict == Deny {
		return resolved{}, w.denied(r.path, r.rule) // the view's root itself
	}
	return r, nil
}

func joinStack(stack []frame, name string) string {
	var b strings.Builder
	for _, f := range stack[1:] {
		b.WriteByte('/')
		b.WriteString(f.name)
	}
	if name != "" {
		b.WriteByte('/')
		b.WriteString(name)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// chanMutex is a mutex whose Lock gives up when ctx ends.
type chanMutex struct{ ch chan struct{} }

func newChanMutex() *chanMutex { return &chanMutex{ch: make(chan struct{}, 1)} }

func (m *chanMutex) lock(ctx context.Context) error {
	select {
	case m.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *chanMutex) unlock() { <-m.ch }
