// Package testmount mounts a fresh workspace for tests and tears it down,
// checking the store with fsck, however the test ends.
package testmount

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
)

// Mount is a live test mount.
type Mount struct {
	Dir       string // the mountpoint
	Workspace string // the store file
	FS        *fs.FS
	Server    *fusefs.Server
}

// Options for New.
type Options struct {
	FS    fs.Options
	Fuse  fusefs.Options
	Store string // reuse this store file instead of a new one
}

// New mounts a workspace and registers its cleanup: unmount, close, fsck.
func New(t testing.TB, opts Options) *Mount {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("FUSE mount tests run as root")
	}
	dir := t.TempDir()
	ws := opts.Store
	if ws == "" {
		ws = filepath.Join(dir, "ws.cfs")
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if opts.FS.Logger == nil {
		opts.FS.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	f, err := fs.Open(ws, opts.FS)
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	if opts.Fuse.Logger == nil {
		opts.Fuse.Logger = opts.FS.Logger
	}
	if !opts.Fuse.AllowOther {
		opts.Fuse.AllowOther = true
	}
	srv, err := fusefs.Mount(f, mnt, opts.Fuse)
	if err != nil {
		f.Close()
		t.Fatalf("mount: %v", err)
	}
	m := &Mount{Dir: mnt, Workspace: ws, FS: f, Server: srv}
	t.Cleanup(func() { m.Close(t) })
	return m
}

// Close unmounts and closes the workspace, then checks it; it is safe to
// call more than once.
func (m *Mount) Close(t testing.TB) {
	t.Helper()
	if m.Server == nil {
		return
	}
	if err := m.Server.Unmount(); err != nil {
		t.Errorf("unmount: %v", err)
	}
	m.Server = nil
	if err := m.FS.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	CheckStore(t, m.Workspace)
}

// CheckStore runs fsck on a closed store and fails the test on damage.
func CheckStore(t testing.TB, path string) {
	t.Helper()
	st, err := chunkstore.Open(path, chunkstore.Options{MustExist: true})
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

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
