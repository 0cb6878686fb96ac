package fusefs_test

// End-to-end tests of POSIX features through a live FUSE mount: namespace
// operations, attributes and extended attributes. feature_*_test.go hold
// the data, special-file and permission tests, tools_test.go the tools.
// Every test mounts its own workspace; testmount unmounts it and checks the
// store with fsck when the test ends, however it ends.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// childEnv switches the test binary into a helper process (see childMain).
const childEnv = "COMPUTERFS_FUSEFS_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// Exit codes of helper processes.
const (
	childOK       = 0
	childConflict = 3 // the lock is held by someone else
	childFailed   = 2
)

// childMain is the helper process: it does one action on files in the mount
// and reports through its exit code and output, so that tests can check
// behaviour between processes (POSIX locks, O_APPEND).
func childMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "child: no action")
		return childFailed
	}
	switch args[0] {
	case "trylock": // trylock PATH r|w START LEN
		if len(args) != 5 {
			break
		}
		fd, err := unix.Open(args[1], unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: open:", err)
			return childFailed
		}
		defer unix.Close(fd)
		typ := int16(unix.F_WRLCK)
		if args[2] == "r" {
			typ = unix.F_RDLCK
		}
		start, _ := strconv.ParseInt(args[3], 10, 64)
		length, _ := strconv.ParseInt(args[4], 10, 64)
		probe := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: length}
		if err := unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &probe); err != nil {
			fmt.Fprintln(os.Stderr, "child: F_GETLK:", err)
			return childFailed
		}
		// What F_GETLK says blocks us, for the parent to check.
		fmt.Printf("getlk type=%d pid=%d\n", probe.Type, probe.Pid)
		lk := unix.Flock_t{Type: typ, Whence: 0, Start: start, Len: length}
		err = unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk)
		switch {
		case err == nil:
			return childOK
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES):
			return childConflict
		default:
			fmt.Fprintln(os.Stderr, "child: F_SETLK:", err)
			return childFailed
		}
	case "mmap": // mmap PATH SIZE [OFFSET HEX]...
		if len(args) < 3 || len(args)%2 != 1 {
			break
		}
		size, _ := strconv.Atoi(args[2])
		var patches []mmapPatch
		for i := 3; i < len(args); i += 2 {
			off, _ := strconv.Atoi(args[i])
			data, err := hex.DecodeString(args[i+1])
			if err != nil {
				break
			}
			patches = append(patches, mmapPatch{off, data})
		}
		sum, err := mmapWrite(args[1], size, patches)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return childFailed
		}
		fmt.Printf("%x\n", sum)
		return childOK
	case "append": // append PATH COUNT SIZE TAG
		if len(args) != 5 {
			break
		}
		count, _ := strconv.Atoi(args[2])
		size, _ := strconv.Atoi(args[3])
		if err := appendRecords(args[1], count, size, args[4][0]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return childFailed
		}
		return childOK
	}
	fmt.Fprintf(os.Stderr, "child: bad arguments %q\n", args)
	return childFailed
}

// appendRecords appends count records of size bytes, all tag, each with one
// write(2) on an O_APPEND descriptor.
func appendRecords(path string, count, size int, tag byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	rec := bytes.Repeat([]byte{tag}, size)
	for i := range count {
		n, err := unix.Write(fd, rec)
		if err != nil {
			return fmt.Errorf("append record %d: %w", i, err)
		}
		if n != size {
			return fmt.Errorf("append record %d: short write %d", i, n)
		}
	}
	return nil
}

type mmapPatch struct {
	off  int
	data []byte
}

// mmapWrite maps size bytes of path MAP_SHARED (growing the file to size
// first if it is shorter), returns the SHA-256 of what the mapping shows,
// writes the patches through it, then msyncs, unmaps and closes.
//
// It runs in a child process: a page fault on the mount blocks its thread
// in the kernel until the FUSE server answers, and if that server is in
// the same Go process, a garbage collection stopping the world waits for
// the faulting thread while the goroutines that would answer are stopped.
func mmapWrite(path string, size int, patches []mmapPatch) ([32]byte, error) {
	var sum [32]byte
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return sum, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return sum, err
	}
	if st.Size < int64(size) {
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return sum, fmt.Errorf("ftruncate: %w", err)
		}
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return sum, fmt.Errorf("mmap: %w", err)
	}
	sum = sha256.Sum256(mem)
	for _, p := range patches {
		copy(mem[p.off:], p.data)
	}
	if err := unix.Msync(mem, unix.MS_SYNC); err != nil {
		unix.Munmap(mem)
		return sum, fmt.Errorf("msync: %w", err)
	}
	if err := unix.Munmap(mem); err != nil {
		return sum, fmt.Errorf("munmap: %w", err)
	}
	return sum, unix.Close(fd)
}

// command prepares a process that is killed if it outlives the test (or
// two minutes), so that no test leaves processes behind or hangs.
func command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// child prepares this test binary as a helper process running one action.
func child(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := command(t, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// exitCode runs cmd and returns its exit code and combined output; it fails
// the test if the process could not run at all.
func exitCode(t testing.TB, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("%s: %v\n%s", cmd, err, out)
	return -1, ""
}

// run runs cmd and fails the test unless it succeeds; it returns stdout.
func run(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", cmd, err, out, stderr.Bytes())
	}
	return string(out)
}

// remount unmounts m (fsck runs) and mounts the same store afresh, so that
// nothing the kernel or fs cached survives.
func remount(t testing.TB, m *testmount.Mount) *testmount.Mount {
	t.Helper()
	m.Close(t)
	return testmount.New(t, testmount.Options{Store: m.Workspace})
}

// storeStats commits everything and returns the chunk store's counters.
func storeStats(t testing.TB, m *testmount.Mount) chunkstore.Stats {
	t.Helper()
	if err := m.FS.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return rawStats(t, m)
}

// rawStats returns the counters as committed, without forcing a commit.
func rawStats(t testing.TB, m *testmount.Mount) chunkstore.Stats {
	t.Helper()
	var st chunkstore.Stats
	err := m.FS.Store().View(func(tx *chunkstore.Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	})
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}

// randomBytes returns n deterministic bytes that neither compress nor
// dedupe against other seeds.
func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	key[2] = 0xc5
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

func lstat(t testing.TB, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return st
}

func fstat(t testing.TB, fd int) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatalf("fstat: %v", err)
	}
	return st
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// checkFile fails the test unless path holds exactly want.
func checkFile(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %s", path, diffBytes(got, want))
	}
}

// diffBytes describes how got differs from want.
func diffBytes(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("size %d, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	i := firstDiff(got, want)
	if i < 0 {
		return "identical"
	}
	end := min(i+16, len(got))
	return fmt.Sprintf("differs at offset %d: got %x, want %x", i, got[i:end], want[i:end])
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// wantErrno fails the test unless err is the errno want.
func wantErrno(t testing.TB, what string, err error, want ...unix.Errno) {
	t.Helper()
	for _, w := range want {
		if errors.Is(err, w) {
			return
		}
	}
	t.Errorf("%s: got error %v, want %v", what, err, want)
}

// names lists a directory (without . and ..), sorted.
func names(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func checkNames(t testing.TB, dir string, want ...string) {
	t.Helper()
	got := names(t, dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listing of %s: %q, want %q", dir, got, want)
	}
}

func pathIno(t testing.TB, path string) uint64 { t.Helper(); return lstat(t, path).Ino }

// ---------------------------------------------------------------------------
// 1. rename

// TestRename covers rename(2) and renameat2(2) through the mount. Each
// case's check runs on the live mount and again after a remount, so the
// result must also have reached the store. It calls rename(2) directly:
// os.Rename refuses to replace a directory on its own.
func TestRename(t *testing.T) {
	type env struct {
		dir  string
		inos map[string]uint64 // recorded by setup
	}
	// rec records the inode of names, relative to dir.
	rec := func(t *testing.T, e *env, rels ...string) {
		for _, r := range rels {
			e.inos[r] = pathIno(t, filepath.Join(e.dir, r))
		}
	}
	p := func(e *env, rel string) string { return filepath.Join(e.dir, rel) }
	renameat2 := func(e *env, from, to string, flags uint) error {
		return unix.Renameat2(unix.AT_FDCWD, p(e, from), unix.AT_FDCWD, p(e, to), flags)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env)
		op    func(e *env) error
		errs  []unix.Errno // the op must fail with one of these
		check func(t *testing.T, e *env)
	}{
		{
			name: "file over existing file",
			setup: func(t *testing.T, e *env) {
				writeFile(t, p(e, "a"), []byte("AAA"))
				writeFile(t, p(e, "b"), []byte("B"))
				rec(t, e, "a")
			},
			op: func(e *env) error { return unix.Rename(p(e, "a"), p(e, "b")) },
			check: func(t *testing.T, e *env) {
				checkFile(t, p(e, "b"), []byte("AAA"))
				checkNames(t, e.dir, "b")
				if got := pathIno(t, p(e, "b")); got != e.inos["a"] {
					t.Errorf("b has inode %d, want a's %d", got, e.inos["a"])
				}
				if st := lstat(t, p(e, "b")); st.Nlink != 1 {
					t.Errorf("nlink %d, want 1", st.Nlink)
				}
			},
		},
		{
			name: "file across directories",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "d1"))
				mkdir(t, p(e, "d2"))
				writeFile(t, p(e, "d1/f"), []byte("moving"))
				writeFile(t, p(e, "d2/g"), []byte("replaced"))
			},
			op: func(e *env) error { return unix.Rename(p(e, "d1/f"), p(e, "d2/g")) },
			check: func(t *testing.T, e *env) {
				checkNames(t, p(e, "d1"))
				checkNames(t, p(e, "d2"), "g")
				checkFile(t, p(e, "d2/g"), []byte("moving"))
			},
		},
		{
			name: "directory across directories",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "d1"))
				mkdir(t, p(e, "d2"))
				mkdir(t, p(e, "d1/sub"))
				writeFile(t, p(e, "d1/sub/f"), []byte("inside"))
				rec(t, e, "d1", "d2", "d1/sub")
			},
			op: func(e *env) error { return unix.Rename(p(e, "d1/sub"), p(e, "d2/sub")) },
			check: func(t *testing.T, e *env) {
				checkNames(t, p(e, "d1"))
				checkFile(t, p(e, "d2/sub/f"), []byte("inside"))
				if got := pathIno(t, p(e, "d2/sub/..")); got != e.inos["d2"] {
					t.Errorf("d2/sub/.. is inode %d, want d2's %d", got, e.inos["d2"])
				}
				if st := lstat(t, p(e, "d1")); st.Nlink != 2 {
					t.Errorf("d1 nlink %d, want 2", st.Nlink)
				}
				if st := lstat(t, p(e, "d2")); st.Nlink != 3 {
					t.Errorf("d2 nlink %d, want 3", st.Nlink)
				}
			},
		},
		{
			name: "directory over empty directory",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "a"))
				mkdir(t, p(e, "b"))
				writeFile(t, p(e, "a/f"), nil)
				rec(t, e, "a")
			},
			op: func(e *env) error { return unix.Rename(p(e, "a"), p(e, "b")) },
			check: func(t *testing.T, e *env) {
				checkNames(t, e.dir, "b")
				checkNames(t, p(e, "b"), "f")
				if got := pathIno(t, p(e, "b")); got != e.inos["a"] {
					t.Errorf("b is inode %d, want a's %d", got, e.inos["a"])
				}
				if st := lstat(t, e.dir); st.Nlink != 3 {
					t.Errorf("parent nlink %d, want 3", st.Nlink)
				}
			},
		},
		{
			name: "directory over non-empty directory",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "a"))
				mkdir(t, p(e, "b"))
				writeFile(t, p(e, "b/keep"), []byte("k"))
			},
			op:   func(e *env) error { return unix.Rename(p(e, "a"), p(e, "b")) },
			errs: []unix.Errno{unix.ENOTEMPTY, unix.EEXIST},
			check: func(t *testing.T, e *env) {
				checkNames(t, e.dir, "a", "b")
				checkFile(t, p(e, "b/keep"), []byte("k"))
			},
		},
		{
			name: "file over directory",
			setup: func(t *testing.T, e *env) {
				writeFile(t, p(e, "f"), nil)
				mkdir(t, p(e, "d"))
			},
			op:    func(e *env) error { return unix.Rename(p(e, "f"), p(e, "d")) },
			errs:  []unix.Errno{unix.EISDIR},
			check: func(t *testing.T, e *env) { checkNames(t, e.dir, "d", "f") },
		},
		{
			name: "directory over file",
			setup: func(t *testing.T, e *env) {
				writeFile(t, p(e, "f"), nil)
				mkdir(t, p(e, "d"))
			},
			op:    func(e *env) error { return unix.Rename(p(e, "d"), p(e, "f")) },
			errs:  []unix.Errno{unix.ENOTDIR},
			check: func(t *testing.T, e *env) { checkNames(t, e.dir, "d", "f") },
		},
		{
			name: "hard links of one inode",
			setup: func(t *testing.T, e *env) {
				writeFile(t, p(e, "a"), []byte("same"))
				if err := os.Link(p(e, "a"), p(e, "b")); err != nil {
					t.Fatal(err)
				}
			},
			op: func(e *env) error { return unix.Rename(p(e, "a"), p(e, "b")) },
			check: func(t *testing.T, e *env) {
				// POSIX: renaming a name onto another name of the same
				// file does nothing.
				checkNames(t, e.dir, "a", "b")
				if st := lstat(t, p(e, "b")); st.Nlink != 2 {
					t.Errorf("nlink %d, want 2", st.Nlink)
				}
			},
		},
		{
			name: "noreplace onto existing name",
			setup: func(t *testing.T, e *env) {
				writeFile(t, p(e, "a"), []byte("A"))
				writeFile(t, p(e, "b"), []byte("B"))
			},
			op:   func(e *env) error { return renameat2(e, "a", "b", unix.RENAME_NOREPLACE) },
			errs: []unix.Errno{unix.EEXIST},
			check: func(t *testing.T, e *env) {
				checkFile(t, p(e, "a"), []byte("A"))
				checkFile(t, p(e, "b"), []byte("B"))
			},
		},
		{
			name:  "noreplace onto new name",
			setup: func(t *testing.T, e *env) { writeFile(t, p(e, "a"), []byte("A")) },
			op:    func(e *env) error { return renameat2(e, "a", "c", unix.RENAME_NOREPLACE) },
			check: func(t *testing.T, e *env) {
				checkNames(t, e.dir, "c")
				checkFile(t, p(e, "c"), []byte("A"))
			},
		},
		{
			name: "exchange file and file",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "d1"))
				mkdir(t, p(e, "d2"))
				writeFile(t, p(e, "d1/a"), []byte("first"))
				writeFile(t, p(e, "d2/b"), []byte("second file"))
				rec(t, e, "d1/a", "d2/b")
			},
			op: func(e *env) error { return renameat2(e, "d1/a", "d2/b", unix.RENAME_EXCHANGE) },
			check: func(t *testing.T, e *env) {
				checkFile(t, p(e, "d1/a"), []byte("second file"))
				checkFile(t, p(e, "d2/b"), []byte("first"))
				if got := pathIno(t, p(e, "d1/a")); got != e.inos["d2/b"] {
					t.Errorf("d1/a is inode %d, want %d", got, e.inos["d2/b"])
				}
				if got := pathIno(t, p(e, "d2/b")); got != e.inos["d1/a"] {
					t.Errorf("d2/b is inode %d, want %d", got, e.inos["d1/a"])
				}
			},
		},
		{
			name: "exchange file and directory",
			setup: func(t *testing.T, e *env) {
				mkdir(t, p(e, "d1"))
				mkdir(t, p(e, "d2"))
				writeFile(t, p(e, "d1/f"), []byte("file"))
				mkdir(t, p(e, "d2/sub"))
				writeFile(t, p(e, "d2/sub/inner"), []byte("inner"))
				rec(t, e, "d1", "d2", "d1/f", "d2/sub")
			},
			op: func(e *env) error { return renameat2(e, "d1/f", "d2/sub", unix.RENAME_EXCHANGE) },
			check: func(t *testing.T, e *env) {
				if st := lstat(t, p(e, "d1/f")); st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Ino != e.inos["d2/sub"] {
					t.Errorf("d1/f: mode %o ino %d, want the directory %d", st.Mode, st.Ino, e.inos["d2/sub"])
				}
				if st := lstat(t, p(e, "d2/sub")); st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != e.inos["d1/f"] {
					t.Errorf("d2/sub: mode %o ino %d, want the file %d", st.Mode, st.Ino, e.inos["d1/f"])
				}
				checkFile(t, p(e, "d1/f/inner"), []byte("inner"))
				checkFile(t, p(e, "d2/sub"), []byte("file"))
				if got := pathIno(t, p(e, "d1/f/..")); got != e.inos["d1"] {
					t.Errorf("d1/f/.. is inode %d, want d1's %d", got, e.inos["d1"])
				}
				if st := lstat(t, p(e, "d1")); st.Nlink != 3 {
					t.Errorf("d1 nlink %d, want 3", st.Nlink)
				}
				if st := lstat(t, p(e, "d2")); st.Nlink != 2 {
					t.Errorf("d2 nlink %d, want 2", st.Nlink)
				}
			},
		},
		{
			name:  "exchange with missing target",
			setup: func(t *testing.T, e *env) { writeFile(t, p(e, "a"), []byte("A")) },
			op:    func(e *env) error { return renameat2(e, "a", "nothing", unix.RENAME_EXCHANGE) },
			errs:  []unix.Errno{unix.ENOENT},
			check: func(t *testing.T, e *env) { checkNames(t, e.dir, "a") },
		},
		{
			name: "directory into its own subdirectory",
			setup: func(t *testing.T, e *env) {
				if err := os.MkdirAll(p(e, "a/b/c"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			op:   func(e *env) error { return unix.Rename(p(e, "a"), p(e, "a/b/c/a")) },
			errs: []unix.Errno{unix.EINVAL},
			check: func(t *testing.T, e *env) {
				checkNames(t, e.dir, "a")
				checkNames(t, p(e, "a/b/c"))
			},
		},
		{
			name:  "directory into its direct child",
			setup: func(t *testing.T, e *env) { mkdir(t, p(e, "a")) },
			op:    func(e *env) error { return unix.Rename(p(e, "a"), p(e, "a/x")) },
			errs:  []unix.Errno{unix.EINVAL},
			check: func(t *testing.T, e *env) { checkNames(t, p(e, "a")) },
		},
		{
			name: "exchange directory with its own subdirectory",
			setup: func(t *testing.T, e *env) {
				if err := os.MkdirAll(p(e, "a/b"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			op:   func(e *env) error { return renameat2(e, "a", "a/b", unix.RENAME_EXCHANGE) },
			errs: []unix.Errno{unix.EINVAL},
			check: func(t *testing.T, e *env) {
				checkNames(t, e.dir, "a")
				checkNames(t, p(e, "a"), "b")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := testmount.New(t, testmount.Options{})
			e := &env{dir: filepath.Join(m.Dir, "t"), inos: map[string]uint64{}}
			mkdir(t, e.dir)
			tc.setup(t, e)
			err := tc.op(e)
			if len(tc.errs) == 0 && err != nil {
				t.Fatalf("rename: %v", err)
			}
			if len(tc.errs) > 0 {
				wantErrno(t, "rename", err, tc.errs...)
			}
			tc.check(t, e)
			if t.Failed() {
				return
			}
			m = remount(t, m)
			e.dir = filepath.Join(m.Dir, "t")
			tc.check(t, e)
		})
	}
}

// TestRenameOverOpenFile: the file a rename replaces lives on for those
// who have it open, and its space is freed when they close it.
func TestRenameOverOpenFile(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	a, b := filepath.Join(m.Dir, "a"), filepath.Join(m.Dir, "b")
	old := randomBytes(3, 2<<20)
	writeFile(t, a, []byte("new contents"))
	writeFile(t, b, old)
	before := storeStats(t, m)
	f, err := os.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	checkFile(t, b, []byte("new contents"))
	if st := fstat(t, int(f.Fd())); st.Nlink != 0 {
		t.Errorf("replaced file: nlink %d, want 0", st.Nlink)
	}
	got := make([]byte, len(old))
	if n, err := f.ReadAt(got, 0); n != len(old) || !bytes.Equal(got, old) {
		t.Errorf("replaced file through its fd: %d bytes, %v, %s", n, err, diffBytes(got[:n], old))
	}
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for storeStats(t, m).UniqueBytes+uint64(len(old)) > before.UniqueBytes+64<<10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := storeStats(t, m); after.UniqueBytes+uint64(len(old)) > before.UniqueBytes+64<<10 {
		t.Errorf("replaced file's space not freed: unique bytes %d before, %d after", before.UniqueBytes, after.UniqueBytes)
	}
	m = remount(t, m)
	checkNames(t, m.Dir, "b")
	checkFile(t, filepath.Join(m.Dir, "b"), []byte("new contents"))
}

// TestLargeDirectory lists a directory that takes many READDIR pages, with
// and without removals between them.
func TestLargeDirectory(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	dir := filepath.Join(m.Dir, "big")
	mkdir(t, dir)
	const n = 3000
	var want []string
	for i := range n {
		name := fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 90))
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		want = append(want, name)
	}
	checkNames(t, dir, want...)
	if inos := direntInos(t, dir); len(inos) != n+2 {
		t.Errorf("getdents returned %d entries, want %d", len(inos), n+2)
	}
	// Remove every other entry while a listing is being paged: no entry
	// that stays may be skipped or repeated.
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	seen := map[string]int{}
	first, err := d.Readdirnames(100)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range first {
		seen[name]++
	}
	var kept []string
	for i, name := range want {
		if i%2 == 1 {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		} else {
			kept = append(kept, name)
		}
	}
	rest, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, name := range rest {
		seen[name]++
	}
	for _, name := range kept {
		if seen[name] != 1 {
			t.Errorf("%s seen %d times in a listing paged across removals", name[:5], seen[name])
		}
	}
	checkNames(t, dir, kept...)
	m = remount(t, m)
	checkNames(t, filepath.Join(m.Dir, "big"), kept...)
	if st := lstat(t, filepath.Join(m.Dir, "big")); st.Nlink != 2 {
		t.Errorf("nlink %d", st.Nlink)
	}
}

// TestTmpfile: an O_TMPFILE file is nameless until linked, and gone
// without trace if never linked.
func TestTmpfile(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	open := func() *os.File {
		t.Helper()
		fd, err := unix.Open(m.Dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o640)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) {
			t.Skipf("O_TMPFILE: %v", err)
		}
		if err != nil {
			t.Fatalf("O_TMPFILE: %v", err)
		}
		f := os.NewFile(uintptr(fd), "tmpfile")
		t.Cleanup(func() { f.Close() })
		return f
	}
	data := randomBytes(4, chunk+77)
	f := open()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	checkNames(t, m.Dir)
	if st := fstat(t, int(f.Fd())); st.Nlink != 0 || st.Mode != unix.S_IFREG|0o640 {
		t.Errorf("tmpfile: nlink %d mode %o", st.Nlink, st.Mode)
	}
	// Give it a name (what "linkat(fd, "", dir, name, AT_EMPTY_PATH)" does).
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, filepath.Join(m.Dir, "named"), unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("linkat: %v", err)
	}
	f.Close()
	checkFile(t, filepath.Join(m.Dir, "named"), data)
	g := open()
	if _, err := g.Write(randomBytes(5, chunk)); err != nil {
		t.Fatal(err)
	}
	g.Close()
	m = remount(t, m)
	checkNames(t, m.Dir, "named")
	checkFile(t, filepath.Join(m.Dir, "named"), data)
	deadline := time.Now().Add(10 * time.Second)
	for storeStats(t, m).UniqueBytes > uint64(len(data))+64<<10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := storeStats(t, m); st.UniqueBytes > uint64(len(data))+64<<10 {
		t.Errorf("unique bytes %d: the unlinked tmpfile's data was kept", st.UniqueBytes)
	}
}

// ---------------------------------------------------------------------------
// 2. unlink of an open file

func TestUnlinkOpenFile(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "doomed")
	const size = 4 << 20
	data := randomBytes(1, size)
	writeFile(t, path, data)
	before := storeStats(t, m)
	if before.UniqueBytes < size {
		t.Fatalf("unique bytes %d after writing %d", before.UniqueBytes, size)
	}
	var sfs0 unix.Statfs_t
	if err := unix.Statfs(m.Dir, &sfs0); err != nil {
		t.Fatal(err)
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fd := int(f.Fd())
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	// Gone from the namespace...
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lstat after unlink: %v, want ENOENT", err)
	}
	checkNames(t, m.Dir)
	// ...but alive through the descriptor.
	st := fstat(t, fd)
	if st.Nlink != 0 {
		t.Errorf("fstat nlink %d, want 0", st.Nlink)
	}
	if st.Size != size {
		t.Errorf("fstat size %d, want %d", st.Size, size)
	}
	got := make([]byte, size)
	if n, err := unix.Pread(fd, got, 0); err != nil || n != size {
		t.Fatalf("pread: %d, %v", n, err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("data through the open fd: %s", diffBytes(got, data))
	}
	tail := []byte("written after unlink")
	if _, err := unix.Pwrite(fd, tail, size); err != nil {
		t.Fatalf("pwrite after unlink: %v", err)
	}
	if _, err := unix.Pwrite(fd, []byte("HEAD"), 0); err != nil {
		t.Fatalf("pwrite after unlink: %v", err)
	}
	if err := unix.Fsync(fd); err != nil {
		t.Errorf("fsync of an unlinked file: %v", err)
	}
	buf := make([]byte, len(tail))
	if _, err := unix.Pread(fd, buf, size); err != nil || !bytes.Equal(buf, tail) {
		t.Errorf("read back after unlink: %q, %v", buf, err)
	}
	if st := fstat(t, fd); st.Size != size+int64(len(tail)) {
		t.Errorf("size after write %d, want %d", st.Size, size+len(tail))
	}
	// The data is still stored while the file is open.
	if mid := storeStats(t, m); mid.UniqueBytes < size {
		t.Errorf("unique bytes %d while the unlinked file is open, want >= %d", mid.UniqueBytes, size)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Release and forget reach the daemon asynchronously: poll.
	deadline := time.Now().Add(10 * time.Second)
	var after chunkstore.Stats
	for {
		after = storeStats(t, m)
		if after.UniqueBytes+size <= before.UniqueBytes+64<<10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after.UniqueBytes+size > before.UniqueBytes+64<<10 {
		t.Errorf("space not freed after close: unique bytes %d before, %d after", before.UniqueBytes, after.UniqueBytes)
	}
	var sfs1 unix.Statfs_t
	if err := unix.Statfs(m.Dir, &sfs1); err != nil {
		t.Fatal(err)
	}
	if freed := int64(sfs1.Bfree-sfs0.Bfree) * sfs1.Bsize; freed < size-64<<10 {
		t.Errorf("statfs: %d bytes freed, want about %d", freed, size)
	}
}

// TestUnlinkOpenFileSurvivesRemount: an inode unlinked while open and then
// released must not leak into the next mount (fsck checks orphans).
func TestUnlinkOpenFileSurvivesRemount(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "f")
	writeFile(t, path, randomBytes(2, 3<<20))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("more"), 5<<20); err != nil {
		t.Fatal(err)
	}
	if err := m.FS.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m = remount(t, m)
	checkNames(t, m.Dir)
	deadline := time.Now().Add(10 * time.Second)
	for storeStats(t, m).UniqueBytes > 64<<10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := storeStats(t, m); st.UniqueBytes > 64<<10 {
		t.Errorf("unique bytes %d after the unlinked file was released and remounted", st.UniqueBytes)
	}
}

// ---------------------------------------------------------------------------
// 4. attributes

func TestChmodChown(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	file := filepath.Join(m.Dir, "f")
	dir := filepath.Join(m.Dir, "d")
	writeFile(t, file, []byte("x"))
	mkdir(t, dir)
	for _, path := range []string{file, dir} {
		for _, mode := range []uint32{0, 0o777, 0o600, 0o4755, 0o2755, 0o1777, 0o7777, 0o6750} {
			if err := unix.Chmod(path, mode); err != nil {
				t.Fatalf("chmod %s %o: %v", path, mode, err)
			}
			if got := lstat(t, path).Mode &^ unix.S_IFMT; got != mode {
				t.Errorf("chmod %s %o: mode %o", filepath.Base(path), mode, got)
			}
		}
	}
	cases := []struct {
		name             string
		path             string
		mode             uint32
		uid, gid         int
		wantUid, wantGid uint32
		wantMode         uint32
	}{
		// chown of a file clears setuid, and setgid when group-executable,
		// as ext4 does (even for root).
		{"file to other user", file, 0o6755, 1234, 5678, 1234, 5678, 0o755},
		{"file group only", file, 0o2745, -1, 4321, 1234, 4321, 0o2745},
		{"file back to root", file, 0o644, 0, 0, 0, 0, 0o644},
		{"dir keeps set-id bits", dir, 0o6755, 1234, 5678, 1234, 5678, 0o6755},
		{"dir user only", dir, 0o755, 99, -1, 99, 5678, 0o755},
	}
	for _, tc := range cases {
		if err := unix.Chmod(tc.path, tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := unix.Lchown(tc.path, tc.uid, tc.gid); err != nil {
			t.Fatalf("%s: chown: %v", tc.name, err)
		}
		st := lstat(t, tc.path)
		if st.Uid != tc.wantUid || st.Gid != tc.wantGid || st.Mode&^unix.S_IFMT != tc.wantMode {
			t.Errorf("%s: uid %d gid %d mode %o, want %d %d %o", tc.name, st.Uid, st.Gid, st.Mode&^unix.S_IFMT, tc.wantUid, tc.wantGid, tc.wantMode)
		}
	}
	want := map[string]unix.Stat_t{"f": lstat(t, file), "d": lstat(t, dir)}
	m = remount(t, m)
	for name, w := range want {
		st := lstat(t, filepath.Join(m.Dir, name))
		if st.Uid != w.Uid || st.Gid != w.Gid || st.Mode != w.Mode {
			t.Errorf("%s after remount: uid %d gid %d mode %o, want %d %d %o", name, st.Uid, st.Gid, st.Mode, w.Uid, w.Gid, w.Mode)
		}
	}
}

func ts(sec, nsec int64) unix.Timespec { return unix.Timespec{Sec: sec, Nsec: nsec} }

func TestTimes(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "f")
	writeFile(t, path, []byte("x"))
	utimes := func(at, mt unix.Timespec) {
		t.Helper()
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{at, mt}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("utimensat: %v", err)
		}
	}
	omit := ts(0, unix.UTIME_OMIT)
	nowTS := ts(0, unix.UTIME_NOW)
	cases := []struct {
		name         string
		at, mt       unix.Timespec
		wantA, wantM unix.Timespec // zero: "now"; Nsec -1: unchanged
	}{
		{"exact nanoseconds", ts(1_000_000_000, 123_456_789), ts(2_000_000_000, 987_654_321), ts(1_000_000_000, 123_456_789), ts(2_000_000_000, 987_654_321)},
		{"before the epoch", ts(-1, 1), ts(-100_000, 999_999_999), ts(-1, 1), ts(-100_000, 999_999_999)},
		{"omit atime", omit, ts(3_000_000_000, 1), ts(-1, -1), ts(3_000_000_000, 1)},
		{"omit mtime", ts(4_000_000_000, 5), omit, ts(4_000_000_000, 5), ts(-1, -1)},
		{"now", nowTS, nowTS, ts(0, 0), ts(0, 0)},
	}
	for _, tc := range cases {
		prev := lstat(t, path)
		start := time.Now()
		utimes(tc.at, tc.mt)
		st := lstat(t, path)
		check := func(what string, got, want, old unix.Timespec) {
			t.Helper()
			switch {
			case want.Nsec == -1:
				if got != old {
					t.Errorf("%s: %s changed from %v to %v", tc.name, what, old, got)
				}
			case want == ts(0, 0):
				if d := time.Unix(got.Unix()).Sub(start); d < -time.Second || d > 5*time.Second {
					t.Errorf("%s: %s is %v, want about now", tc.name, what, time.Unix(got.Unix()))
				}
			case got != want:
				t.Errorf("%s: %s is %v, want %v", tc.name, what, got, want)
			}
		}
		check("atime", st.Atim, tc.wantA, prev.Atim)
		check("mtime", st.Mtim, tc.wantM, prev.Mtim)
		// ctime moves forward on every change.
		if st.Ctim.Nano() < prev.Ctim.Nano() {
			t.Errorf("%s: ctime went back from %v to %v", tc.name, prev.Ctim, st.Ctim)
		}
		if d := time.Unix(st.Ctim.Unix()).Sub(start); d < -time.Second || d > 5*time.Second {
			t.Errorf("%s: ctime %v, want about now", tc.name, time.Unix(st.Ctim.Unix()))
		}
	}

	// ctime: nanosecond resolution end to end. stat shows exactly what fs
	// holds, and over several changes not every value is a whole
	// microsecond (a µs- or s-resolution path would make them so).
	var subMicro int
	for i := range 10 {
		if err := unix.Chmod(path, 0o600+uint32(i%2)*0o44); err != nil {
			t.Fatal(err)
		}
		st := lstat(t, path)
		a, err := m.FS.GetAttr(fs.Ino(st.Ino))
		if err != nil {
			t.Fatal(err)
		}
		if st.Ctim.Nano() != a.Ctime {
			t.Errorf("stat ctime %d, fs holds %d", st.Ctim.Nano(), a.Ctime)
		}
		if st.Ctim.Nsec%1000 != 0 {
			subMicro++
		}
	}
	if subMicro == 0 {
		t.Errorf("10 ctimes, all whole microseconds: ctime has no nanosecond resolution")
	}

	// Writes move mtime and ctime; creating a file moves its directory's.
	dirBefore := lstat(t, m.Dir)
	fileBefore := lstat(t, path)
	time.Sleep(2 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("yy")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeFile(t, filepath.Join(m.Dir, "g"), nil)
	fileAfter, dirAfter := lstat(t, path), lstat(t, m.Dir)
	if fileAfter.Mtim.Nano() <= fileBefore.Mtim.Nano() || fileAfter.Ctim.Nano() <= fileBefore.Ctim.Nano() {
		t.Errorf("write did not advance mtime/ctime: %v/%v -> %v/%v", fileBefore.Mtim, fileBefore.Ctim, fileAfter.Mtim, fileAfter.Ctim)
	}
	if dirAfter.Mtim.Nano() <= dirBefore.Mtim.Nano() || dirAfter.Ctim.Nano() <= dirBefore.Ctim.Nano() {
		t.Errorf("create did not advance the directory's mtime/ctime")
	}

	// Times survive a remount to the nanosecond.
	utimes(ts(1_234_567_890, 111_222_333), ts(1_234_567_891, 444_555_666))
	want := lstat(t, path)
	m = remount(t, m)
	got := lstat(t, filepath.Join(m.Dir, "f"))
	if got.Atim != want.Atim || got.Mtim != want.Mtim || got.Ctim != want.Ctim {
		t.Errorf("times after remount a=%v m=%v c=%v, want a=%v m=%v c=%v", got.Atim, got.Mtim, got.Ctim, want.Atim, want.Mtim, want.Ctim)
	}
}

// ---------------------------------------------------------------------------
// 5. extended attributes

func TestXattrs(t *testing.T) {
	big := randomBytes(5, 64<<10) // XATTR_SIZE_MAX
	type op struct {
		do   string // set, get, remove, list
		name string
		val  []byte
		flag int
		err  unix.Errno // expected error, 0 for success
		list []string   // list: the expected names
	}
	steps := []op{
		{do: "list", list: nil},
		{do: "get", name: "user.missing", err: unix.ENODATA},
		{do: "set", name: "user.a", val: []byte("alpha")},
		{do: "get", name: "user.a", val: []byte("alpha")},
		{do: "set", name: "user.a", val: []byte("again"), flag: unix.XATTR_CREATE, err: unix.EEXIST},
		{do: "set", name: "user.b", val: []byte("beta"), flag: unix.XATTR_REPLACE, err: unix.ENODATA},
		{do: "set", name: "user.b", val: []byte("beta"), flag: unix.XATTR_CREATE},
		{do: "set", name: "user.a", val: []byte("replaced"), flag: unix.XATTR_REPLACE},
		{do: "get", name: "user.a", val: []byte("replaced")},
		{do: "set", name: "user.empty", val: []byte{}},
		{do: "get", name: "user.empty", val: []byte{}},
		{do: "set", name: "user.big", val: big},
		{do: "get", name: "user.big", val: big},
		{do: "set", name: "user.toobig", val: make([]byte, 64<<10+1), err: unix.E2BIG},
		{do: "set", name: "user." + strings.Repeat("n", 250), val: []byte("long name")},
		{do: "set", name: "user." + strings.Repeat("n", 251), val: []byte("x"), err: unix.ERANGE},
		{do: "list", list: []string{"user.a", "user.b", "user.big", "user.empty", "user." + strings.Repeat("n", 250)}},
		{do: "remove", name: "user.b"},
		{do: "remove", name: "user.b", err: unix.ENODATA},
		{do: "get", name: "user.b", err: unix.ENODATA},
		{do: "list", list: []string{"user.a", "user.big", "user.empty", "user." + strings.Repeat("n", 250)}},
		// POSIX ACLs are not supported: refused, so that tools fall back
		// to chmod (a stored but ignored ACL would leave the mode wrong).
		{do: "set", name: "system.posix_acl_access", val: []byte("\x02\x00\x00\x00\x01\x00\x06\x00\xff\xff\xff\xff\x04\x00\x04\x00\xff\xff\xff\xff\x20\x00\x04\x00\xff\xff\xff\xff"), err: unix.EOPNOTSUPP},
		{do: "get", name: "system.posix_acl_access", err: unix.ENODATA},
	}
	final := map[string][]byte{"user.a": []byte("replaced"), "user.big": big, "user.empty": {}, "user." + strings.Repeat("n", 250): []byte("long name")}

	m := testmount.New(t, testmount.Options{})
	writeFile(t, filepath.Join(m.Dir, "file"), []byte("data"))
	mkdir(t, filepath.Join(m.Dir, "dir"))
	for _, target := range []string{"file", "dir"} {
		path := filepath.Join(m.Dir, target)
		for i, s := range steps {
			what := fmt.Sprintf("%s: step %d: %s %.20s", target, i, s.do, s.name)
			var err error
			switch s.do {
			case "set":
				err = unix.Lsetxattr(path, s.name, s.val, s.flag)
			case "remove":
				err = unix.Lremovexattr(path, s.name)
			case "get":
				var got []byte
				got, err = getxattr(path, s.name)
				if err == nil && !bytes.Equal(got, s.val) {
					t.Errorf("%s: value %s", what, diffBytes(got, s.val))
				}
			case "list":
				var got []string
				got, err = listxattr(path)
				if err == nil && !slices.Equal(got, s.list) {
					t.Errorf("%s: %q, want %q", what, got, s.list)
				}
			}
			if s.err == 0 && err != nil {
				t.Errorf("%s: %v", what, err)
			} else if s.err != 0 {
				wantErrno(t, what, err, s.err)
			}
		}
	}

	// Buffer sizes: a size query, and ERANGE for a buffer too small.
	path := filepath.Join(m.Dir, "file")
	if n, err := unix.Lgetxattr(path, "user.big", nil); err != nil || n != len(big) {
		t.Errorf("size query: %d, %v; want %d", n, err, len(big))
	}
	if _, err := unix.Lgetxattr(path, "user.a", make([]byte, 3)); !errors.Is(err, unix.ERANGE) {
		t.Errorf("getxattr into a small buffer: %v, want ERANGE", err)
	}
	if _, err := unix.Llistxattr(path, make([]byte, 3)); !errors.Is(err, unix.ERANGE) {
		t.Errorf("listxattr into a small buffer: %v, want ERANGE", err)
	}

	m = remount(t, m)
	for _, target := range []string{"file", "dir"} {
		path := filepath.Join(m.Dir, target)
		got, err := listxattr(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Sorted(maps.Keys(final)); !slices.Equal(got, want) {
			t.Errorf("%s after remount: names %q, want %q", target, got, want)
		}
		for name, want := range final {
			if got, err := getxattr(path, name); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s after remount: %.20s: %v %s", target, name, err, diffBytes(got, want))
			}
		}
	}
}

func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 128<<10)
	n, err := unix.Lgetxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func listxattr(path string) ([]string, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ---------------------------------------------------------------------------
// 11. inode numbers and attributes across remount

func TestInodesStableAcrossRemount(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	p := func(rel string) string { return filepath.Join(m.Dir, rel) }
	for _, d := range []string{"a", "a/b", "a/b/c", "empty"} {
		mkdir(t, p(d))
	}
	files := map[string][]byte{
		"a/f1":     []byte("one"),
		"a/b/f2":   randomBytes(11, 3<<20+7),
		"a/b/c/f3": bytes.Repeat([]byte("compressible "), 100000),
		"zero":     nil,
	}
	for name, data := range files {
		writeFile(t, p(name), data)
	}
	if err := os.Symlink("a/f1", p("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p("a/f1"), p("a/b/hard")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p("fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p("chr"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lchown(p("a/b/f2"), 1001, 2002); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p("a/b/c"), 0o3750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(p("a/f1"), "user.tag", []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p("zero"), []unix.Timespec{ts(12345, 678), ts(23456, 789)}, 0); err != nil {
		t.Fatal(err)
	}
	// A removed file's inode number must not come back.
	writeFile(t, p("removed"), []byte("x"))
	removedIno := pathIno(t, p("removed"))
	if err := os.Remove(p("removed")); err != nil {
		t.Fatal(err)
	}

	all := []string{".", "a", "a/b", "a/b/c", "empty", "a/f1", "a/b/f2", "a/b/c/f3", "zero", "link", "a/b/hard", "fifo", "chr"}
	before := map[string]unix.Stat_t{}
	var maxIno uint64
	for _, rel := range all {
		before[rel] = lstat(t, p(rel))
		maxIno = max(maxIno, before[rel].Ino)
	}
	dirIno := func(dir string) map[string]uint64 { return direntInos(t, dir) }
	listBefore := dirIno(p("a/b"))

	m = remount(t, m)
	for _, rel := range all {
		got, want := lstat(t, p(rel)), before[rel]
		if got.Ino != want.Ino {
			t.Errorf("%s: inode %d after remount, was %d", rel, got.Ino, want.Ino)
		}
		if got.Mode != want.Mode || got.Nlink != want.Nlink || got.Uid != want.Uid || got.Gid != want.Gid ||
			got.Size != want.Size || got.Rdev != want.Rdev || got.Mtim != want.Mtim || got.Ctim != want.Ctim || got.Atim != want.Atim {
			t.Errorf("%s: attributes changed across remount:\n got mode %o nlink %d uid %d gid %d size %d rdev %x m %v c %v a %v\nwant mode %o nlink %d uid %d gid %d size %d rdev %x m %v c %v a %v",
				rel, got.Mode, got.Nlink, got.Uid, got.Gid, got.Size, got.Rdev, got.Mtim, got.Ctim, got.Atim,
				want.Mode, want.Nlink, want.Uid, want.Gid, want.Size, want.Rdev, want.Mtim, want.Ctim, want.Atim)
		}
	}
	if st := lstat(t, p("chr")); unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		t.Errorf("chr: device %d:%d, want 1:3", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	for name, data := range files {
		checkFile(t, p(name), data)
	}
	checkFile(t, p("a/b/hard"), files["a/f1"])
	if target, err := os.Readlink(p("link")); err != nil || target != "a/f1" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	if v, err := getxattr(p("a/f1"), "user.tag"); err != nil || string(v) != "kept" {
		t.Errorf("xattr after remount: %q, %v", v, err)
	}
	if got := dirIno(p("a/b")); !mapsEqual(got, listBefore) {
		t.Errorf("readdir d_ino after remount: %v, want %v", got, listBefore)
	}
	// New inodes never reuse old numbers, even of removed files.
	writeFile(t, p("new"), nil)
	if ino := pathIno(t, p("new")); ino <= maxIno || ino == removedIno {
		t.Errorf("new file got inode %d; existing go up to %d, removed was %d", ino, maxIno, removedIno)
	}
}

// direntInos reads a directory with getdents and returns d_ino by name.
func direntInos(t testing.TB, dir string) map[string]uint64 {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	out := map[string]uint64{}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(b[i])
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			out[string(name)] = ino
			b = b[reclen:]
		}
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// 12. NAME_MAX and PATH_MAX

func TestNameMax(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	ok := strings.Repeat("n", 255)
	long := strings.Repeat("l", 256)
	p := func(name string) string { return filepath.Join(m.Dir, name) }
	writeFile(t, p(ok), []byte("max"))
	if err := os.Mkdir(p("d"+ok[1:]), 0o755); err != nil {
		t.Errorf("mkdir with a 255-byte name: %v", err)
	}
	if err := os.Symlink(ok, p("s"+ok[1:])); err != nil {
		t.Errorf("symlink with a 255-byte name: %v", err)
	}
	if err := os.Rename(p(ok), p("r"+ok[1:])); err != nil {
		t.Errorf("rename to a 255-byte name: %v", err)
	}
	if err := unix.Lsetxattr(p("r"+ok[1:]), "user.x", []byte("1"), 0); err != nil {
		t.Errorf("setxattr on a 255-byte name: %v", err)
	}
	writeFile(t, p("short"), nil)
	tooLong := []struct {
		what string
		err  error
	}{
		{"create", func() error {
			f, err := os.Create(p(long))
			if err == nil {
				f.Close()
			}
			return err
		}()},
		{"stat", func() error { _, err := os.Lstat(p(long)); return err }()},
		{"mkdir", os.Mkdir(p(long), 0o755)},
		{"symlink", os.Symlink("x", p(long))},
		{"link", os.Link(p("short"), p(long))},
		{"rename", os.Rename(p("short"), p(long))},
		{"mknod", unix.Mkfifo(p(long), 0o644)},
		{"unlink", os.Remove(p(long))},
	}
	for _, c := range tooLong {
		wantErrno(t, c.what+" with a 256-byte name", c.err, unix.ENAMETOOLONG)
	}
	m = remount(t, m)
	checkNames(t, m.Dir, "d"+ok[1:], "r"+ok[1:], "s"+ok[1:], "short")
	checkFile(t, p("r"+ok[1:]), []byte("max"))
	var sfs unix.Statfs_t
	if err := unix.Statfs(m.Dir, &sfs); err != nil || sfs.Namelen != 255 {
		t.Errorf("statfs namelen %d, %v; want 255", sfs.Namelen, err)
	}
}

func TestPathMax(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	const depth = 20 // 20 names of 250 bytes: over 5000 bytes of path
	level := func(i int) string { return fmt.Sprintf("%03d", i) + strings.Repeat("p", 247) }
	content := randomBytes(12, 100<<10)

	// walk opens the chain with openat relative to each level's fd,
	// making it when mk is set, and returns the bottom directory's fd.
	walk := func(root string, mk bool) int {
		t.Helper()
		fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range depth {
			if mk {
				if err := unix.Mkdirat(fd, level(i), 0o755); err != nil {
					unix.Close(fd)
					t.Fatalf("mkdirat level %d: %v", i, err)
				}
			}
			next, err := unix.Openat(fd, level(i), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatalf("openat level %d: %v", i, err)
			}
			fd = next
		}
		return fd
	}
	readLeaf := func(dirfd int) []byte {
		t.Helper()
		fd, err := unix.Openat(dirfd, "leaf", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open leaf: %v", err)
		}
		f := os.NewFile(uintptr(fd), "leaf")
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	bottomDir := os.NewFile(uintptr(walk(m.Dir, true)), "bottom") // closed however the test ends
	t.Cleanup(func() { bottomDir.Close() })
	bottom := int(bottomDir.Fd())
	fd, err := unix.Openat(bottom, "leaf", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatalf("create leaf: %v", err)
	}
	f := os.NewFile(uintptr(fd), "leaf")
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(content); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := readLeaf(bottom); !bytes.Equal(got, content) {
		t.Errorf("leaf: %s", diffBytes(got, content))
	}
	bottomDir.Close()

	// The whole path is longer than PATH_MAX: the kernel refuses it as one
	// string, which is why the walk goes level by level.
	full := m.Dir
	for i := range depth {
		full += "/" + level(i)
	}
	full += "/leaf"
	if len(full) <= 4096 {
		t.Fatalf("path is only %d bytes", len(full))
	}
	if _, err := os.Stat(full); !errors.Is(err, unix.ENAMETOOLONG) {
		t.Errorf("stat of a %d-byte path: %v, want ENAMETOOLONG", len(full), err)
	}

	m = remount(t, m)
	bottomDir2 := os.NewFile(uintptr(walk(m.Dir, false)), "bottom")
	defer bottomDir2.Close() // before the new mount's cleanup
	bottom = int(bottomDir2.Fd())
	if got := readLeaf(bottom); !bytes.Equal(got, content) {
		t.Errorf("leaf after remount: %s", diffBytes(got, content))
	}
	var st unix.Stat_t
	if err := unix.Fstatat(bottom, "leaf", &st, 0); err != nil || st.Size != int64(len(content)) {
		t.Errorf("fstatat leaf: size %d, %v", st.Size, err)
	}
}

// ---------------------------------------------------------------------------
// 13. mode bits stored exactly

func TestModeBits(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	p := func(name string) string { return filepath.Join(m.Dir, name) }

	create := func(name string, mode uint32) error {
		fd, err := unix.Open(p(name), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	cases := []struct {
		name  string
		umask int
		make  func(name string) error
		want  uint32
	}{
		{"setuid file", 0, func(n string) error { return create(n, 0o4755) }, unix.S_IFREG | 0o4755},
		{"setgid file", 0, func(n string) error { return create(n, 0o2755) }, unix.S_IFREG | 0o2755},
		{"sticky file", 0, func(n string) error { return create(n, 0o1777) }, unix.S_IFREG | 0o1777},
		{"all bits file", 0, func(n string) error { return create(n, 0o7777) }, unix.S_IFREG | 0o7777},
		{"no bits file", 0, func(n string) error { return create(n, 0) }, unix.S_IFREG},
		{"sticky dir", 0, func(n string) error { return unix.Mkdir(p(n), 0o1777) }, unix.S_IFDIR | 0o1777},
		{"mknod setuid", 0, func(n string) error { return unix.Mknod(p(n), unix.S_IFREG|0o4711, 0) }, unix.S_IFREG | 0o4711},
		{"umask 022 file", 0o022, func(n string) error { return create(n, 0o666) }, unix.S_IFREG | 0o644},
		{"umask 022 dir", 0o022, func(n string) error { return unix.Mkdir(p(n), 0o777) }, unix.S_IFDIR | 0o755},
		{"umask 022 fifo", 0o022, func(n string) error { return unix.Mkfifo(p(n), 0o666) }, unix.S_IFIFO | 0o644},
		{"umask 077 file", 0o077, func(n string) error { return create(n, 0o666) }, unix.S_IFREG | 0o600},
		{"umask 027 setgid", 0o027, func(n string) error { return create(n, 0o2777) }, unix.S_IFREG | 0o2750},
	}
	want := map[string]uint32{}
	for i, tc := range cases {
		name := fmt.Sprintf("m%02d", i)
		unix.Umask(tc.umask)
		err := tc.make(name)
		unix.Umask(0)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := lstat(t, p(name)).Mode; got != tc.want {
			t.Errorf("%s: mode %o, want %o", tc.name, got, tc.want)
		}
		want[name] = tc.want
	}

	// A setgid directory hands its group (and, to subdirectories, the
	// setgid bit) down. mkdir(2) itself drops S_ISGID, so chmod sets it.
	if err := unix.Mkdir(p("sgid"), 0o775); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chown(p("sgid"), 0, 4242); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p("sgid"), 0o2775); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkdir(p("sgid/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := create("sgid/file", 0o640); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mode uint32
	}{{"sgid", unix.S_IFDIR | 0o2775}, {"sgid/sub", unix.S_IFDIR | 0o2755}, {"sgid/file", unix.S_IFREG | 0o640}} {
		st := lstat(t, p(c.name))
		if st.Mode != c.mode || st.Gid != 4242 {
			t.Errorf("%s: mode %o gid %d, want %o gid 4242", c.name, st.Mode, st.Gid, c.mode)
		}
		want[c.name] = c.mode
	}

	m = remount(t, m)
	for name, mode := range want {
		if got := lstat(t, p(name)).Mode; got != mode {
			t.Errorf("%s after remount: mode %o, want %o", name, got, mode)
		}
	}
}

// TestCreatedFileFreedAfterOpen: once the kernel has been answered ENOSYS
// to an OPEN it sends no RELEASE for any regular file of the connection,
// those made by CREATE included. A file created, closed and unlinked
// after that must still go at its last close (its FORGET), not live on
// as an orphan waiting for a RELEASE that never comes.
func TestCreatedFileFreedAfterOpen(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	first := filepath.Join(m.Dir, "first")
	writeFile(t, first, []byte("before any open\n")) // CREATE before the kernel learns open is ENOSYS
	checkFile(t, first, []byte("before any open\n")) // OPEN: ENOSYS from now on
	base := storeStats(t, m).UniqueBytes
	const size = 2 << 20
	for i, name := range []string{"created", "created-append", "tmpfile"} {
		path := filepath.Join(m.Dir, name)
		data := randomBytes(uint64(20+i), size)
		if name == "tmpfile" {
			fd, err := unix.Open(m.Dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o640)
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) {
				t.Skipf("O_TMPFILE: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Write(fd, data); err != nil {
				t.Fatal(err)
			}
			if err := unix.Close(fd); err != nil {
				t.Fatal(err)
			}
		} else {
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if name == "created-append" {
				flags |= os.O_APPEND
			}
			f, err := os.OpenFile(path, flags, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, data)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for storeStats(t, m).UniqueBytes > base+64<<10 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if st := storeStats(t, m); st.UniqueBytes > base+64<<10 {
			t.Errorf("%s: unique bytes %d after it was closed and unlinked, %d before it was made: the orphan lives on", name, st.UniqueBytes, base)
		}
	}
}
