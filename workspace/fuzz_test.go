package workspace_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/workspace"
)

// FuzzCleanPath checks that CleanPath never panics and returns clean
// absolute paths, and that resolving any path on a small tree (with
// symlinks that climb, leave and loop) never panics and either fails or
// lands on a node of the tree.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{
		"", "/", ".", "..", "/..", "a/../..", "//a//b/", "/a/./b/../c", "a/b/", "./a", "a/.", "a/..",
		"\xff", "a\x00b", "d/up", "d/up/..", "d/up/up", "up/d", "etc/passwd", "etc", "loop", "loop/x",
		"d/sub/../../f", "d/rel", "d/rel/", "d/esc/x", "/d/./sub//", "...", ".../..", strings.Repeat("a/", 100),
		strings.Repeat("../", 3) + "etc", "/" + strings.Repeat("x", 300),
	} {
		f.Add(s)
	}
	ctx := context.Background()
	store := filepath.Join(f.TempDir(), "ws.cfs")
	fsys := apitest.OpenFS(f, store, 0)
	w := workspace.New(fsys, workspace.Options{})
	mk := func(err error) {
		if err != nil {
			f.Fatal(err)
		}
	}
	_, err := w.Mkdir(ctx, "/d/sub", workspace.MkdirOptions{Parents: true})
	mk(err)
	_, err = w.WriteFile(ctx, "/f", []byte("file"), workspace.WriteOptions{})
	mk(err)
	_, err = w.WriteFile(ctx, "/d/sub/g", []byte("g"), workspace.WriteOptions{})
	mk(err)
	mk(w.Symlink(ctx, "..", "/d/up"))       // climbs to the root
	mk(w.Symlink(ctx, "../f", "/d/rel"))    // a file
	mk(w.Symlink(ctx, "../../x", "/d/esc")) // leaves the workspace
	// An absolute target leaves it (made on the FS: the API may refuse).
	_, err = fsys.Create(fs.Caller{}, fs.RootIno, "etc", fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "/etc"})
	mk(err)
	mk(w.Symlink(ctx, "loop", "/loop"))        // a loop
	mk(w.Symlink(ctx, "d/up/d/up", "/up"))     // climbs through links
	mk(w.Symlink(ctx, "nowhere", "/dangling")) // leads nowhere
	// Every node of the tree, by inode: the paths it is known by.
	nodes := map[uint64][]string{}
	res, err := w.List(ctx, "/", workspace.ListOptions{Recursive: true, Limit: 1000})
	mk(err)
	root, err := w.Lstat(ctx, "/")
	mk(err)
	nodes[root.Ino] = []string{"/"}
	for _, e := range res.Entries {
		nodes[e.Ino] = append(nodes[e.Ino], e.Path)
	}

	f.Fuzz(func(t *testing.T, p string) {
		clean, cerr := workspace.CleanPath(p)
		if cerr == nil {
			switch {
			case !strings.HasPrefix(clean, "/"):
				t.Fatalf("CleanPath(%q) = %q: not absolute", p, clean)
			case strings.Contains(clean, "//"):
				t.Fatalf("CleanPath(%q) = %q: holds //", p, clean)
			case clean != "/" && strings.HasSuffix(clean, "/"):
				t.Fatalf("CleanPath(%q) = %q: trailing /", p, clean)
			}
			for _, c := range strings.Split(clean[1:], "/") {
				if c == "." || c == ".." {
					t.Fatalf("CleanPath(%q) = %q: holds a %q component", p, clean, c)
				}
			}
			if again, err := workspace.CleanPath(clean); err != nil || again != clean {
				t.Fatalf("CleanPath(%q) = %q, but CleanPath of that = %q, %v", p, clean, again, err)
			}
		} else if !errors.Is(cerr, syscall.EINVAL) && !errors.Is(cerr, syscall.EACCES) && !errors.Is(cerr, syscall.ENAMETOOLONG) {
			t.Fatalf("CleanPath(%q): unexpected error %v", p, cerr)
		}
		for _, follow := range []bool{false, true} {
			var fi workspace.FileInfo
			var err error
			if follow {
				fi, err = w.Stat(ctx, p)
			} else {
				fi, err = w.Lstat(ctx, p)
			}
			if err != nil {
				var errno syscall.Errno
				if !errors.As(err, &errno) && !errors.Is(err, syscall.EACCES) {
					t.Fatalf("stat(%q, follow %v): an error with no errno: %v", p, follow, err)
				}
				if cerr != nil && errors.Is(cerr, syscall.EINVAL) && !errors.Is(err, syscall.EINVAL) {
					t.Fatalf("stat(%q): %v, but CleanPath says EINVAL", p, err)
				}
				continue
			}
			if cerr != nil && errors.Is(cerr, syscall.EINVAL) {
				t.Fatalf("stat(%q) works, but CleanPath says %v", p, cerr)
			}
			paths, ok := nodes[fi.Ino]
			if !ok {
				t.Fatalf("stat(%q, follow %v) = inode %d (%s), not in the tree", p, follow, fi.Ino, fi.Path)
			}
			found := false
			for _, q := range paths {
				found = found || q == fi.Path
			}
			if !found {
				t.Fatalf("stat(%q, follow %v) = %s, inode %d, known as %q", p, follow, fi.Path, fi.Ino, paths)
			}
			if follow && fi.Type == "symlink" {
				t.Fatalf("stat(%q) stopped on a symlink: %+v", p, fi)
			}
		}
	})
}
