package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
)

// Creating a workspace is explicit, as restic init and juicefs format
// make it: init creates one, mount and serve create a missing one only
// with --create, and every other command refuses a path that holds no
// workspace with the message of errNoWorkspace, so that a mistyped path
// never becomes a new, empty workspace. (The MCP server is the one
// exception: an agent host configured with a new workspace's path gets
// that workspace, see openMCPWorkspace.)

// errNoWorkspace is what every command but init (and mount, serve and mcp
// when they may create one) says of a path that holds no workspace: a
// missing file, an empty one or a directory.
var errNoWorkspace = errors.New("no computerfs workspace")

// requireWorkspace refuses a path that is missing, empty or a directory.
// A file of another kind is refused by the store's own checks when it is
// opened ("not a computerfs workspace").
func requireWorkspace(ws string) error {
	fi, err := os.Stat(ws)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return noWorkspaceError{ws, "no such file", err}
	case err != nil:
		return fmt.Errorf("workspace %s: %w", ws, err)
	case fi.IsDir():
		return noWorkspaceError{ws, "it is a directory", syscall.EISDIR}
	case fi.Size() == 0:
		return noWorkspaceError{ws, "the file is empty", chunkstore.ErrNotWorkspace}
	}
	return nil
}

// noWorkspaceError is errNoWorkspace at path, with why and its cause
// (ENOENT for a missing file, so that fs --json says so).
type noWorkspaceError struct {
	path, why string
	cause     error
}

func (e noWorkspaceError) Error() string {
	return fmt.Sprintf("%v at %s (%s): create one with 'computerfs init %s', or give mount or serve --create", errNoWorkspace, e.path, e.why, e.path)
}

func (e noWorkspaceError) Unwrap() []error { return []error{errNoWorkspace, e.cause} }

// createWorkspace makes a new workspace at ws with the given size limit
// (the default if 0), and its directory (0700) if missing. It refuses a
// path where anything exists: the file is made with O_EXCL, so that two
// creators cannot both believe they made it.
func createWorkspace(e *env, ws string, limit uint64) error {
	if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
		return fmt.Errorf("create workspace %s: %w", ws, err)
	}
	file, err := os.OpenFile(ws, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create workspace %s: %w", ws, err)
	}
	file.Close()
	// The store turns the empty file into a new workspace.
	f, err := fs.Open(ws, fs.Options{Limit: limit, Logger: e.log})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		os.Remove(ws)
		return fmt.Errorf("create workspace %s: %w", ws, err)
	}
	return nil
}

// ensureWorkspace is mount's and serve's check before they start: with
// create, a missing workspace is made (and said so on stderr); without,
// it is refused as every other command refuses it.
func ensureWorkspace(e *env, ws string, create bool, limit uint64) error {
	err := requireWorkspace(ws)
	if err == nil || !create {
		return err
	}
	if _, serr := os.Stat(ws); !errors.Is(serr, os.ErrNotExist) {
		return err // empty, or a directory: --create does not overwrite
	}
	if err := createWorkspace(e, ws, limit); err != nil {
		if errors.Is(err, os.ErrExist) {
			return requireWorkspace(ws) // made meanwhile by another
		}
		return err
	}
	fmt.Fprintf(e.stderr, "computerfs: created workspace %s (limit %s)\n", ws, size.Format(limitOrDefault(limit)))
	return nil
}

func limitOrDefault(limit uint64) uint64 {
	if limit == 0 {
		return fs.DefaultLimit
	}
	return limit
}

func runInit(ctx context.Context, e *env, o initOptions, args []string) error {
	limitStr := o.limit
	ws := defaultWorkspace()
	if len(args) == 1 {
		ws = args[0]
	}
	var err error
	var limit uint64
	if limitStr != "" {
		if limit, err = parseLimit(limitStr); err != nil {
			return usageError{err}
		}
	}
	if _, err := os.Lstat(ws); err == nil {
		return fmt.Errorf("%s already exists: init makes a new workspace and never overwrites a file (computerfs stats %s tells what it holds)", ws, ws)
	}
	if err := createWorkspace(e, ws, limit); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "computerfs: created workspace %s (limit %s)\n", ws, size.Format(limitOrDefault(limit)))
	return nil
}

// parseLimit parses a --limit SIZE, which must be above 0.
func parseLimit(s string) (uint64, error) {
	n, err := size.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("--limit: %w", err)
	}
	if n == 0 {
		return 0, errors.New("--limit: a workspace's limit must be above 0")
	}
	return n, nil
}
