package wsrpc_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/workspace"
)

// TestSnapshotAcrossSocket: the file API over a snapshot answers the same
// across the control socket as in process, and refuses changes.
func TestSnapshotAcrossSocket(t *testing.T) {
	ctx := context.Background()
	s := serve(t, 0)
	c := dial(t, s.store)
	put := func(p, data string) {
		t.Helper()
		if _, err := c.Write(ctx, p, strings.NewReader(data), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	put("/d/a.txt", "old a, needle\n")
	put("/d/e/b.txt", "old b\n")
	if err := c.Symlink(ctx, "d/a.txt", "/ln"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.f.CreateSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	put("/d/a.txt", "new a\n")
	if _, err := c.Remove(ctx, "/d/e", workspace.RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	remote, err := c.SnapshotAPI(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	local, err := s.ws.SnapshotAPI(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	readAll := func(api workspace.API, p string) (string, error) {
		rd, err := api.Read(ctx, p, workspace.ReadOptions{})
		if err != nil {
			return "", err
		}
		defer rd.Close()
		b, err := io.ReadAll(rd)
		return string(b), err
	}
	for _, tc := range []struct {
		name string
		do   func(api workspace.API) (any, error)
	}{
		{"read", func(api workspace.API) (any, error) { return readAll(api, "/d/a.txt") }},
		{"read through a symlink", func(api workspace.API) (any, error) { return readAll(api, "/ln") }},
		{"stat", func(api workspace.API) (any, error) { return api.Stat(ctx, "/d/e/b.txt") }},
		{"lstat", func(api workspace.API) (any, error) { return api.Lstat(ctx, "/ln") }},
		{"list", func(api workspace.API) (any, error) {
			return api.List(ctx, "/", workspace.ListOptions{Recursive: true})
		}},
		{"readlink", func(api workspace.API) (any, error) { return api.Readlink(ctx, "/ln") }},
		{"glob", func(api workspace.API) (any, error) { return api.Glob(ctx, "**/*.txt", workspace.GlobOptions{}) }},
		{"grep", func(api workspace.API) (any, error) {
			return api.Grep(ctx, "/", workspace.GrepOptions{Pattern: "needle"})
		}},
		{"tree", func(api workspace.API) (any, error) { return api.Tree(ctx, "/", workspace.TreeOptions{}) }},
		{"du", func(api workspace.API) (any, error) { return api.Du(ctx, "/d") }},
		{"missing", func(api workspace.API) (any, error) { return api.Stat(ctx, "/nonesuch") }},
		{"escape", func(api workspace.API) (any, error) { return api.Stat(ctx, "/../x") }},
	} {
		lv, lerr := tc.do(local)
		rv, rerr := tc.do(remote)
		if workspace.Errno(lerr) != workspace.Errno(rerr) || !reflect.DeepEqual(lv, rv) {
			t.Errorf("%s: in process %+v, %v; across the socket %+v, %v", tc.name, lv, lerr, rv, rerr)
		}
	}
	if got, err := readAll(remote, "/d/a.txt"); got != "old a, needle\n" || err != nil {
		t.Errorf("read across the socket: %q, %v", got, err)
	}
	if _, err := remote.Stat(ctx, "/d/e/b.txt"); err != nil {
		t.Errorf("a file removed since: %v", err)
	}
	for _, tc := range []struct {
		name string
		do   func(api workspace.API) error
		want syscall.Errno
	}{
		{"write", func(api workspace.API) error {
			_, err := api.Write(ctx, "/x", strings.NewReader("x"), workspace.WriteOptions{})
			return err
		}, syscall.EROFS},
		{"mkdir", func(api workspace.API) error { _, err := api.Mkdir(ctx, "/x", workspace.MkdirOptions{}); return err }, syscall.EROFS},
		{"remove", func(api workspace.API) error {
			_, err := api.Remove(ctx, "/d", workspace.RemoveOptions{Recursive: true})
			return err
		}, syscall.EROFS},
		{"rename", func(api workspace.API) error { return api.Rename(ctx, "/d", "/x", workspace.RenameOptions{}) }, syscall.EROFS},
		{"changes", func(api workspace.API) error { _, err := api.Changes(ctx, 0, 1); return err }, syscall.EINVAL},
	} {
		for door, api := range map[string]workspace.API{"in process": local, "across the socket": remote} {
			if err := tc.do(api); !errors.Is(err, tc.want) {
				t.Errorf("%s %s: %v, want %v", tc.name, door, err, tc.want)
			}
		}
	}
	if got, err := readAll(c, "/d/a.txt"); got != "new a\n" || err != nil {
		t.Errorf("the live tree: %q, %v", got, err)
	}
	if _, err := c.SnapshotAPI(ctx, "nonesuch"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a missing snapshot: %v", err)
	}
	if _, err := c.SnapshotAPI(ctx, "a/b"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a bad name: %v", err)
	}
}
