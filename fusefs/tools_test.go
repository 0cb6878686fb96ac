package fusefs_test

// The "done when" checks: everyday tools working inside a mount. Each sub
// test mounts its own workspace (fsck runs when it ends) and is skipped
// only when its tool is not in PATH.

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// needTools skips the test unless every tool is in PATH.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not in PATH", tool)
		}
	}
}

// toolEnv is a clean environment for tools: no user configuration.
func toolEnv(t *testing.T) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "TZ=UTC")
}

// inDir prepares name to run with dir as its working directory, through a
// shell that changes into dir itself.
//
// The mount is served by this very process, so no process it forks may
// touch the mount before its execve: Go forks with vfork, which freezes the
// forking thread, unpreemptibly, until the child's execve. A chdir into the
// mount (cmd.Dir) or the exec of a binary in the mount done by that child
// then waits for a FUSE reply, and a garbage collection that starts in the
// meantime stops the goroutines that would send it: a deadlock. The shell is
// exec'd from outside the mount and does those steps in its own process.
func inDir(t *testing.T, dir string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(t, "/bin/sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, name}, args...)...)
	cmd.Dir = "/"
	cmd.Env = toolEnv(t)
	return cmd
}

// tool runs a tool in dir with a clean environment and returns its stdout.
func tool(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	return run(t, inDir(t, dir, name, args...))
}

// makeTree builds a varied tree: nested directories, empty and large
// files, executables, odd names, symlinks (one dangling), hard links and a
// FIFO, with nanosecond mtimes.
func makeTree(t *testing.T, root string) {
	t.Helper()
	dirs := []string{"a", "a/b", "a/b/c", "empty dir", "ünïcødé", "deep/1/2/3/4/5/6/7/8"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"empty", nil, 0o644},
		{"one", []byte("1"), 0o600},
		{"page", randomBytes(80, 4095), 0o644},
		{"a/chunk+1", randomBytes(81, chunk+1), 0o644},
		{"a/b/big", randomBytes(82, 3*chunk+12345), 0o640},
		{"a/b/c/text", bytes.Repeat([]byte("lorem ipsum dolor sit amet\n"), 5000), 0o644},
		{"a/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755},
		{"ünïcødé/fïlé with spaces", []byte("spaces"), 0o644},
		{"deep/1/2/3/4/5/6/7/8/leaf", []byte("leaf"), 0o444},
		{strings.Repeat("n", 255), []byte("long name"), 0o644},
	}
	for _, f := range files {
		p := filepath.Join(root, f.name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"link": "a/b/big", "a/up": "../one", "dangling": "does/not/exist"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "a/chunk+1"), filepath.Join(root, "a/b/hardlink")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Distinct nanosecond mtimes, directories last (their entries are done).
	i := int64(0)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		i++
		ts := []unix.Timespec{{Sec: 1_600_000_000 + i, Nsec: 123_456_789 + i}, {Sec: 1_600_000_000 + i*7, Nsec: 987_654_321 - i}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeOpts says what compareTrees checks besides type, size and content.
type treeOpts struct {
	mtime     time.Duration // mtime precision to compare; 0: ignore
	dirMtime  bool          // also compare directories' mtimes
	owner     bool
	hardlinks bool // names hard-linked in want are hard-linked in got
	noContent bool // contents were compared already (diff -r)
}

// compareTrees fails the test where got differs from want.
func compareTrees(t *testing.T, want, got string, o treeOpts) {
	t.Helper()
	var count, errs int
	wantLinks, gotLinks := map[uint64]string{}, map[uint64]string{}
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if errs > 20 {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(want, p)
		q := filepath.Join(got, rel)
		fail := func(format string, args ...any) {
			errs++
			t.Errorf("%s: "+format, append([]any{rel}, args...)...)
		}
		count++
		var ws, gs unix.Stat_t
		if err := unix.Lstat(p, &ws); err != nil {
			return err
		}
		if err := unix.Lstat(q, &gs); err != nil {
			fail("%v", err)
			return nil
		}
		isDir := ws.Mode&unix.S_IFMT == unix.S_IFDIR
		if ws.Mode != gs.Mode {
			fail("mode %o, want %o", gs.Mode, ws.Mode)
			return nil
		}
		if !isDir && ws.Size != gs.Size {
			fail("size %d, want %d", gs.Size, ws.Size)
		}
		if o.owner && (ws.Uid != gs.Uid || ws.Gid != gs.Gid) {
			fail("owner %d:%d, want %d:%d", gs.Uid, gs.Gid, ws.Uid, ws.Gid)
		}
		if o.mtime > 0 && (!isDir || o.dirMtime) && rel != "." {
			w := time.Unix(ws.Mtim.Unix()).Truncate(o.mtime)
			g := time.Unix(gs.Mtim.Unix()).Truncate(o.mtime)
			if !w.Equal(g) {
				fail("mtime %v, want %v", time.Unix(gs.Mtim.Unix()), time.Unix(ws.Mtim.Unix()))
			}
		}
		if o.hardlinks && !isDir && ws.Nlink > 1 {
			if other, ok := wantLinks[ws.Ino]; ok {
				if gotLinks[gs.Ino] != other {
					fail("not hard-linked to %s", other)
				}
			} else {
				wantLinks[ws.Ino], gotLinks[gs.Ino] = rel, rel
			}
		}
		switch ws.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if o.noContent {
				break
			}
			a, err1 := os.ReadFile(p)
			b, err2 := os.ReadFile(q)
			if err1 != nil || err2 != nil {
				fail("read: %v %v", err1, err2)
			} else if !bytes.Equal(a, b) {
				fail("content: %s", diffBytes(b, a))
			}
		case unix.S_IFLNK:
			a, _ := os.Readlink(p)
			b, err := os.Readlink(q)
			if err != nil || a != b {
				fail("symlink to %q (%v), want %q", b, err, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing extra on the other side.
	var gotCount int
	filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			gotCount++
		}
		return nil
	})
	if gotCount != count {
		t.Errorf("%s has %d entries, %s has %d", got, gotCount, want, count)
	}
}

// goSource picks the Go source tree to copy: the whole of it, or when that
// is missing a part, whatever of the classic subset exists.
func goSource(t *testing.T) string {
	for _, root := range []string{"/usr/local/go/src", filepath.Join(runtime.GOROOT(), "src")} {
		if st, err := os.Stat(filepath.Join(root, "net")); err == nil && st.IsDir() {
			return root
		}
	}
	t.Skip("no Go source tree found")
	return ""
}

func TestTools(t *testing.T) {
	t.Run("cp -a", func(t *testing.T) {
		needTools(t, "cp", "diff")
		src := goSource(t)
		// The whole tree (about 160 MB in 11,000 files) copies in about
		// 40s; under the race detector it takes over 60s, so then (and
		// with -short) src/net, src/cmd/go and src/go do.
		parts := []string{"."}
		if raceEnabled || testing.Short() {
			parts = []string{"net", "cmd/go", "go"}
		}
		m := testmount.New(t, testmount.Options{})
		dst := filepath.Join(m.Dir, "src")
		start := time.Now()
		for _, part := range parts {
			to := filepath.Join(dst, part)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				t.Fatal(err)
			}
			tool(t, "/", "cp", "-a", filepath.Join(src, part), to)
		}
		t.Logf("cp -a took %v", time.Since(start))
		m = remount(t, m)
		dst = filepath.Join(m.Dir, "src")
		start = time.Now()
		for _, part := range parts {
			if out, code := diffR(t, filepath.Join(src, part), filepath.Join(dst, part)); code != 0 {
				t.Fatalf("diff -r exits %d:\n%.4000s", code, out)
			}
		}
		t.Logf("diff -r took %v", time.Since(start))
		// cp -a also kept modes, owners, mtimes and symlinks.
		for _, part := range parts {
			compareTrees(t, filepath.Join(src, part), filepath.Join(dst, part), treeOpts{mtime: time.Nanosecond, dirMtime: true, owner: true, noContent: true})
		}
	})

	t.Run("git", func(t *testing.T) {
		needTools(t, "git")
		m := testmount.New(t, testmount.Options{})
		repo := filepath.Join(m.Dir, "repo")
		git := func(args ...string) string {
			t.Helper()
			base := []string{"-c", "user.name=Computer FS", "-c", "user.email=cfs@example.com", "-c", "init.defaultBranch=main", "-c", "gc.auto=0"}
			return tool(t, repo, "git", append(base, args...)...)
		}
		mkdir(t, repo)
		git("init", "-q")
		writeFile(t, filepath.Join(repo, "README"), []byte("hello\n"))
		if err := os.MkdirAll(filepath.Join(repo, "src/pkg"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(repo, "src/pkg/big.bin"), randomBytes(90, 2*chunk+3))
		writeFile(t, filepath.Join(repo, "src/main.go"), []byte("package main\n"))
		if err := os.Symlink("README", filepath.Join(repo, "link")); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "-m", "first")
		writeFile(t, filepath.Join(repo, "README"), []byte("hello again\n"))
		if err := os.Remove(filepath.Join(repo, "src/main.go")); err != nil {
			t.Fatal(err)
		}
		git("commit", "-q", "-a", "-m", "second")
		if out := git("status", "--porcelain"); out != "" {
			t.Errorf("git status not clean:\n%s", out)
		}
		if out := git("log", "--format=%s"); out != "second\nfirst\n" {
			t.Errorf("git log: %q", out)
		}
		// Packing rewrites the object store (mmap, renames, fsync).
		git("gc", "-q")
		git("fsck", "--full", "--strict", "--no-progress")
		if out := git("show", "HEAD~1:src/main.go"); out != "package main\n" {
			t.Errorf("git show: %q", out)
		}
		m = remount(t, m)
		repo = filepath.Join(m.Dir, "repo")
		git("fsck", "--full", "--no-progress")
		if out := git("status", "--porcelain"); out != "" {
			t.Errorf("git status not clean after remount:\n%s", out)
		}
		if out := git("log", "--format=%s"); out != "second\nfirst\n" {
			t.Errorf("git log after remount: %q", out)
		}
	})

	t.Run("tar", func(t *testing.T) {
		needTools(t, "tar")
		tree := filepath.Join(t.TempDir(), "tree")
		makeTree(t, tree)
		m := testmount.New(t, testmount.Options{})
		archive := filepath.Join(m.Dir, "tree.tar")
		tool(t, tree, "tar", "--format=posix", "--xattrs", "-cf", archive, ".")
		out := filepath.Join(m.Dir, "out")
		mkdir(t, out)
		tool(t, out, "tar", "--xattrs", "-xpf", archive)
		o := treeOpts{mtime: time.Microsecond, owner: true, hardlinks: true}
		compareTrees(t, tree, out, o)
		// The archive itself reads back the same through a fresh mount,
		// and tar agrees it matches the extracted tree.
		m = remount(t, m)
		out = filepath.Join(m.Dir, "out")
		compareTrees(t, tree, out, o)
		tool(t, out, "tar", "--compare", "-f", filepath.Join(m.Dir, "tree.tar"))
	})

	t.Run("rsync", func(t *testing.T) {
		needTools(t, "rsync")
		tree := filepath.Join(t.TempDir(), "tree")
		makeTree(t, tree)
		m := testmount.New(t, testmount.Options{})
		dst := filepath.Join(m.Dir, "copy")
		tool(t, "/", "rsync", "-aHX", tree+"/", dst+"/")
		compareTrees(t, tree, dst, treeOpts{mtime: time.Nanosecond, dirMtime: true, owner: true, hardlinks: true})
		if out := tool(t, "/", "rsync", "-aHX", "--itemize-changes", tree+"/", dst+"/"); out != "" {
			t.Errorf("second rsync transferred:\n%s", out)
		}
		// Nothing to do after a remount either (times, sizes, modes kept).
		m = remount(t, m)
		dst = filepath.Join(m.Dir, "copy")
		if out := tool(t, "/", "rsync", "-aHX", "--itemize-changes", tree+"/", dst+"/"); out != "" {
			t.Errorf("rsync after remount transferred:\n%s", out)
		}
		// And back out of the mount, checksumming every file.
		back := filepath.Join(t.TempDir(), "back")
		tool(t, "/", "rsync", "-aH", "--checksum", dst+"/", back+"/")
		compareTrees(t, tree, back, treeOpts{mtime: time.Nanosecond, hardlinks: true})
	})

	t.Run("make", func(t *testing.T) {
		needTools(t, "make", "cat", "tr")
		m := testmount.New(t, testmount.Options{})
		dir := filepath.Join(m.Dir, "proj")
		mkdir(t, dir)
		makefile := "" +
			"all: out.txt\n" +
			"out.txt: a.o b.o\n\tcat a.o b.o > out.txt\n" +
			"a.o: a.src\n\ttr a-z A-Z < a.src > a.o\n" +
			"b.o: b.src common.h\n\tcat common.h b.src > b.o\n"
		writeFile(t, filepath.Join(dir, "Makefile"), []byte(makefile))
		writeFile(t, filepath.Join(dir, "a.src"), []byte("alpha\n"))
		writeFile(t, filepath.Join(dir, "b.src"), []byte("beta\n"))
		writeFile(t, filepath.Join(dir, "common.h"), []byte("// common\n"))
		out := tool(t, dir, "make", "-j2")
		for _, want := range []string{"tr a-z A-Z", "cat common.h", "cat a.o b.o"} {
			if !strings.Contains(out, want) {
				t.Errorf("first make did not run %q:\n%s", want, out)
			}
		}
		checkFile(t, filepath.Join(dir, "out.txt"), []byte("ALPHA\n// common\nbeta\n"))
		// Up to date: make must trust the mtimes it reads back.
		if out := tool(t, dir, "make"); !strings.Contains(out, "Nothing to be done") {
			t.Errorf("second make did work:\n%s", out)
		}
		// Change one source: only its chain is rebuilt. Nanosecond mtimes
		// make it newer than a.o although both fall in the same second.
		writeFile(t, filepath.Join(dir, "a.src"), []byte("again\n"))
		out = tool(t, dir, "make")
		if !strings.Contains(out, "tr a-z A-Z") || !strings.Contains(out, "cat a.o b.o") || strings.Contains(out, "cat common.h") {
			t.Errorf("make after touching a.src:\n%s", out)
		}
		checkFile(t, filepath.Join(dir, "out.txt"), []byte("AGAIN\n// common\nbeta\n"))
		m = remount(t, m)
		if out := tool(t, filepath.Join(m.Dir, "proj"), "make"); !strings.Contains(out, "Nothing to be done") {
			t.Errorf("make after remount did work:\n%s", out)
		}
	})

	t.Run("go build", func(t *testing.T) {
		needTools(t, "go")
		if testing.Short() {
			t.Skip("a cold-cache go build takes about 20s")
		}
		m := testmount.New(t, testmount.Options{})
		dir := filepath.Join(m.Dir, "hello")
		mkdir(t, dir)
		writeFile(t, filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.21\n"))
		writeFile(t, filepath.Join(dir, "main.go"), []byte(`package main

import "os"

func main() {
	os.Stdout.WriteString(greeting + "\n")
}
`))
		writeFile(t, filepath.Join(dir, "greeting.go"), []byte("package main\n\nconst greeting = \"hello from computerfs\"\n"))
		cache := filepath.Join(t.TempDir(), "gocache")
		cmd := inDir(t, dir, "go", "build", "-o", "hello", ".")
		cmd.Env = append(cmd.Env, "GOCACHE="+cache, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		start := time.Now()
		run(t, cmd)
		t.Logf("go build took %v", time.Since(start))
		// Run through the shell: see inDir.
		if out := tool(t, dir, "./hello"); out != "hello from computerfs\n" {
			t.Errorf("the built binary says %q", out)
		}
		m = remount(t, m)
		if out := tool(t, filepath.Join(m.Dir, "hello"), "./hello"); out != "hello from computerfs\n" {
			t.Errorf("after remount the binary says %q", out)
		}
	})
}

// diffR runs diff -r and returns its output and exit code.
func diffR(t *testing.T, a, b string) (string, int) {
	t.Helper()
	cmd := command(t, "diff", "-r", "--no-dereference", a, b)
	cmd.Env = toolEnv(t)
	code, out := exitCode(t, cmd)
	return out, code
}
