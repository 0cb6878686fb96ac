// Package coreutils implements the commands of the interpreted shell
// backend (cat, ls, grep, sed, awk, jq, find, ...) in process, against a
// small filesystem interface, with the options coding agents use every
// day and GNU coreutils' output and exit statuses.
//
// It owns the commands and nothing else: no command spawns a process,
// reads the host's disk or environment, or touches anything but the FS,
// the streams and the variables it is given. The shell package wires the
// commands into mvdan.cc/sh's interpreter; the plugin gives them an FS
// backed by the host's file API, tests one backed by a real directory.
//
// Every command is a Func: it reports errors on Stderr in GNU's words
// ("cat: x: No such file or directory") and returns its exit status.
package coreutils

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"sort"
	"syscall"
	"time"
)

// FileInfo describes a file. Mode uses io/fs's type bits (ModeDir,
// ModeSymlink, ModeNamedPipe, ...).
type FileInfo struct {
	Name    string
	Size    int64
	Mode    iofs.FileMode
	ModTime time.Time
	Ino     uint64
	Nlink   uint32
	Uid     uint32
	Gid     uint32
	Target  string // symlinks (Lstat)
}

// IsDir reports whether fi is a directory.
func (fi *FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// FS is what the commands see of the workspace. Names are absolute,
// clean, slash-separated workspace paths. Errors are *io/fs.PathError
// with a syscall.Errno cause, so that messages read like GNU's.
type FS interface {
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Create opens name for writing, truncating it (or appending to it),
	// and makes it with perm if it is missing. Data is in place once
	// Close returns nil.
	Create(ctx context.Context, name string, appendMode bool, perm iofs.FileMode) (io.WriteCloser, error)
	Stat(ctx context.Context, name string) (FileInfo, error)
	Lstat(ctx context.Context, name string) (FileInfo, error)
	// ReadDir lists a directory sorted by name, without "." and "..".
	ReadDir(ctx context.Context, name string) ([]FileInfo, error)
	Mkdir(ctx context.Context, name string, perm iofs.FileMode) error
	// Remove removes a file, a symlink or an empty directory.
	Remove(ctx context.Context, name string) error
	Rename(ctx context.Context, oldname, newname string) error
	// CopyFile copies a regular file's content and permission bits (the
	// workspace shares the data: O(1)).
	CopyFile(ctx context.Context, src, dst string) error
	Symlink(ctx context.Context, target, name string) error
	Readlink(ctx context.Context, name string) (string, error)
	Chmod(ctx context.Context, name string, mode iofs.FileMode) error
	Chtimes(ctx context.Context, name string, atime, mtime time.Time) error
}

// Env is what a command runs with.
type Env struct {
	FS     FS
	Dir    string            // the working directory, absolute
	Vars   map[string]string // the exported environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Now is the clock (date, touch).
	Now func() time.Time
	// Run runs another command line through the shell's own commands
	// (xargs, find -exec), with the given streams, and returns its exit
	// status.
	Run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// RunIn is Run with the command's whole environment and working
	// directory given (env NAME=VALUE CMD, env -i, env -C); nil if the
	// shell cannot.
	RunIn func(ctx context.Context, args []string, vars map[string]string, dir string, stdin io.Reader, stdout, stderr io.Writer) int
}

// Abs resolves p against the working directory.
func (e *Env) Abs(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(e.Dir, p)
}

// Func is a command. args[0] is the command's name.
type Func func(ctx context.Context, e *Env, args []string) int

var registry = map[string]Func{}

// register adds a command; each command's file registers its own in init.
func register(name string, f Func) {
	if _, dup := registry[name]; dup {
		panic("coreutils: duplicate command " + name)
	}
	registry[name] = f
}

// Lookup returns the command called name.
func Lookup(name string) (Func, bool) {
	f, ok := registry[name]
	return f, ok
}

// Names lists the commands, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// errText renders an error the way GNU tools do: the strerror text of its
// errno ("No such file or directory"), else its message.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errnoText(errno)
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// errnoText is strerror with a capital first letter, as glibc writes it.
func errnoText(e syscall.Errno) string {
	s := e.Error()
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// fail prints "name: msg" on stderr and returns status.
func fail(e *Env, name string, status int, format string, args ...any) int {
	fmt.Fprintf(e.Stderr, "%s: %s\n", name, fmt.Sprintf(format, args...))
	return status
}

// failPath prints "name: path: strerror" on stderr, as GNU tools do for a
// file they cannot use, and returns status.
func failPath(e *Env, name, p string, err error, status int) int {
	fmt.Fprintf(e.Stderr, "%s: %s: %s\n", name, p, errText(err))
	return status
}
