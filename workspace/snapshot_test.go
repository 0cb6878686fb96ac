package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// TestSnapshotView: the file API over a snapshot reads the workspace as
// the snapshot saw it, refuses every change with EROFS, and resolves
// paths inside the snapshot only.
func TestSnapshotView(t *testing.T) {
	ctx := context.Background()
	f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := workspace.New(f, workspace.Options{})
	put := func(p, data string) {
		t.Helper()
		if _, err := w.WriteFile(ctx, p, []byte(data), workspace.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Mkdir(ctx, "/src/sub", workspace.MkdirOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	put("/src/main.go", "package main // old\n")
	put("/src/sub/util.go", "package sub // needle\n")
	put("/gone.txt", "removed later\n")
	if err := w.Symlink(ctx, "src/main.go", "/link"); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink(ctx, "/etc/passwd", "/abs"); err != nil {
		t.Fatal(err)
	}
	perm := uint32(0o600)
	if _, err := w.SetAttr(ctx, "/src/main.go", workspace.SetAttrOptions{Perm: &perm}); err != nil {
		t.Fatal(err)
	}
	before, err := w.Stat(ctx, "/src/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	put("/src/main.go", "package main // new, longer\n")
	perm = 0o644
	if _, err := w.SetAttr(ctx, "/src/main.go", workspace.SetAttrOptions{Perm: &perm}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Remove(ctx, "/gone.txt", workspace.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(ctx, "/src/sub", "/sub2", workspace.RenameOptions{}); err != nil {
		t.Fatal(err)
	}
	put("/born.txt", "needle after\n")

	s, err := w.Snapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s.SnapshotName() != "s1" {
		t.Errorf("SnapshotName %q", s.SnapshotName())
	}
	data, info, err := s.ReadFile(ctx, "/src/main.go", 0)
	if err != nil || string(data) != "package main // old\n" {
		t.Errorf("read in the snapshot: %q, %v", data, err)
	}
	if info.Mode != 0o600 || info.Size != before.Size || info.Ino != before.Ino || !info.Mtime.Equal(before.Mtime) {
		t.Errorf("stat in the snapshot %+v, want %+v", info, before)
	}
	if data, _, err := s.ReadFile(ctx, "/link", 0); err != nil || string(data) != "package main // old\n" {
		t.Errorf("read through a symlink in the snapshot: %q, %v", data, err)
	}
	if target, err := s.Readlink(ctx, "/link"); err != nil || target != "src/main.go" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	list, err := s.List(ctx, "/", workspace.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list.Entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if want := []string{"abs", "gone.txt", "link", "src"}; !slices.Equal(names, want) {
		t.Errorf("list: %q, want %q", names, want)
	}
	if g, err := s.Glob(ctx, "**/*.go", workspace.GlobOptions{}); err != nil || !slices.Equal(g.Paths, []string{"/src/main.go", "/src/sub/util.go"}) {
		t.Errorf("glob: %q, %v", g.Paths, err)
	}
	if g, err := s.Grep(ctx, "/", workspace.GrepOptions{Pattern: "needle", Mode: "files"}); err != nil || len(g.Files) != 1 || g.Files[0].Path != "/src/sub/util.go" {
		t.Errorf("grep: %+v, %v", g, err)
	}
	if tr, err := s.Du(ctx, "/"); err != nil || tr.Files != 5 {
		t.Errorf("du: %+v, %v", tr, err)
	}
	if _, err := s.Tree(ctx, "/src", workspace.TreeOptions{}); err != nil {
		t.Errorf("tree: %v", err)
	}
	// The live tree is what it is.
	if data, _, err := w.ReadFile(ctx, "/src/main.go", 0); err != nil || !bytes.Contains(data, []byte("new")) {
		t.Errorf("live read: %q, %v", data, err)
	}
	// Paths stay inside the snapshot.
	for _, p := range []string{"/..", "../src", "/src/../../x", "/abs"} {
		if _, err := s.Stat(ctx, p); !errors.Is(err, syscall.EACCES) {
			t.Errorf("stat %s: %v, want EACCES", p, err)
		}
	}
	if _, err := s.Stat(ctx, "/born.txt"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a file born after the snapshot: %v", err)
	}
	// Every change fails.
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"write", func() error {
			_, err := s.WriteFile(ctx, "/src/main.go", []byte("x"), workspace.WriteOptions{})
			return err
		}},
		{"create", func() error { _, err := s.WriteFile(ctx, "/new", []byte("x"), workspace.WriteOptions{}); return err }},
		{"edit", func() error {
			_, err := s.Edit(ctx, "/src/main.go", []workspace.Edit{{Old: "old", New: "x"}}, workspace.EditOptions{})
			return err
		}},
		{"mkdir", func() error { _, err := s.Mkdir(ctx, "/d", workspace.MkdirOptions{}); return err }},
		{"remove", func() error { _, err := s.Remove(ctx, "/gone.txt", workspace.RemoveOptions{}); return err }},
		{"rename", func() error { return s.Rename(ctx, "/gone.txt", "/x", workspace.RenameOptions{}) }},
		{"copy", func() error { _, err := s.Copy(ctx, "/gone.txt", "/x", workspace.CopyOptions{}); return err }},
		{"symlink", func() error { return s.Symlink(ctx, "x", "/y") }},
		{"setattr", func() error { _, err := s.SetAttr(ctx, "/gone.txt", workspace.SetAttrOptions{Perm: &perm}); return err }},
	} {
		if err := tc.do(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s in a snapshot: %v, want EROFS", tc.name, err)
		}
	}
	if _, err := s.Changes(ctx, 0, 10); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("changes of a snapshot: %v", err)
	}
	// A subtree's view gives the subtree of the snapshot.
	sub, err := w.Sub(ctx, "/src", false)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := sub.Snapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := ss.ReadFile(ctx, "/sub/util.go", 0); err != nil || !strings.Contains(string(data), "needle") {
		t.Errorf("read in the snapshot of a subtree: %q, %v", data, err)
	}
	if _, err := ss.Stat(ctx, "/../gone.txt"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("escape from the snapshot of a subtree: %v", err)
	}
	// Names.
	for _, tc := range []struct {
		name string
		want error
	}{
		{"nonesuch", syscall.ENOENT},
		{"", syscall.EINVAL},
		{"..", syscall.EINVAL},
		{"a/b", syscall.EINVAL},
		{"../s1", syscall.EINVAL},
	} {
		if _, err := w.Snapshot(ctx, tc.name); !errors.Is(err, tc.want) {
			t.Errorf("snapshot %q: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A view of a deleted snapshot reads nothing.
	if _, err := fs.DeleteSnapshot(f.Store(), "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "/src/main.go"); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("stat in a deleted snapshot: %v", err)
	}
}
