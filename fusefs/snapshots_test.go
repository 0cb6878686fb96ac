package fusefs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// snapshot makes snapshot name of the mount's workspace and tells the
// mount, as the daemon's Snapshot call does.
func snapshot(t *testing.T, m *testmount.Mount, name string) {
	t.Helper()
	if _, err := m.FS.CreateSnapshot(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	m.Server.SnapshotsChanged(name)
}

func deleteSnapshot(t *testing.T, m *testmount.Mount, name string) {
	t.Helper()
	if _, err := fs.DeleteSnapshot(m.FS.Store(), name); err != nil {
		t.Fatal(err)
	}
	m.Server.SnapshotsChanged(name)
}

// TestSnapshotViews: .snapshots/NAME shows the tree as the snapshot saw
// it, whatever changed since (bytes, modes, symlinks, xattrs, renamed
// and removed files), refuses every change with EROFS, is hidden from
// the root's listing, and follows snapshots made and deleted while
// mounted, a name made again showing the new snapshot.
func TestSnapshotViews(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	p := func(rel string) string { return filepath.Join(m.Dir, rel) }
	big := randomBytes(7, 3*chunk+100)
	mkdir(t, p("dir"))
	writeFile(t, p("a"), []byte("old a"))
	if err := os.Chmod(p("a"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p("dir/big"), big)
	writeFile(t, p("gone"), []byte("removed later"))
	writeFile(t, p("moved"), []byte("renamed later"))
	if err := os.Symlink("dir/big", p("link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p("a"), "user.tag", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	liveIno := pathIno(t, p("a"))
	snapshot(t, m, "s1")

	// Change everything after it.
	writeFile(t, p("a"), []byte("new contents of a"))
	if err := os.Chmod(p("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p("a"), "user.tag", []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p("dir/big"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("OVERWRITTEN"), chunk); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Remove(p("gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p("moved"), p("dir/moved2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", p("link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p("born"), []byte("after s1"))

	s1 := func(rel string) string { return filepath.Join(m.Dir, ".snapshots", "s1", rel) }
	checkNames(t, m.Dir, "a", "born", "dir", "link")
	checkNames(t, p(".snapshots"), "s1")
	checkNames(t, s1(""), "a", "dir", "gone", "link", "moved")
	checkNames(t, s1("dir"), "big")
	checkFile(t, s1("a"), []byte("old a"))
	checkFile(t, s1("dir/big"), big)
	checkFile(t, s1("gone"), []byte("removed later"))
	checkFile(t, s1("moved"), []byte("renamed later"))
	checkFile(t, s1("link"), big) // followed inside the snapshot
	checkFile(t, p("a"), []byte("new contents of a"))
	if got := lstat(t, s1("a")).Mode; got != unix.S_IFREG|0o640 {
		t.Errorf("mode in the snapshot %o, want %o", got, unix.S_IFREG|0o640)
	}
	if target, err := os.Readlink(s1("link")); err != nil || target != "dir/big" {
		t.Errorf("readlink in the snapshot: %q, %v", target, err)
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(s1("a"), "user.tag", buf); err != nil || string(buf[:n]) != "one" {
		t.Errorf("xattr in the snapshot: %q, %v", buf[:n], err)
	}
	if ino := pathIno(t, s1("a")); ino < uint64(fs.MaxIno) || ino == liveIno {
		t.Errorf("inode number in the snapshot %#x, live %#x", ino, liveIno)
	}
	if a, b := pathIno(t, s1("a")), pathIno(t, s1("dir/big")); a == b {
		t.Errorf("two files of the snapshot share inode number %#x", a)
	}
	// Copying out of a snapshot, as a restore by hand does.
	src, err := os.Open(s1("dir/big"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.Create(p("restored"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Errorf("copy out of the snapshot: %v", err)
	}
	src.Close()
	dst.Close()
	checkFile(t, p("restored"), big)

	// Every change fails.
	for _, tc := range []struct {
		name string
		do   func() error
		want []unix.Errno
	}{
		{"write", func() error {
			f, err := os.OpenFile(s1("a"), os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("x"))
			return err
		}, []unix.Errno{unix.EROFS}},
		{"truncate", func() error { return os.Truncate(s1("a"), 0) }, []unix.Errno{unix.EROFS}},
		{"create", func() error { return os.WriteFile(s1("new"), nil, 0o644) }, []unix.Errno{unix.EROFS}},
		{"mkdir", func() error { return os.Mkdir(s1("newdir"), 0o755) }, []unix.Errno{unix.EROFS}},
		{"mknod", func() error { return unix.Mkfifo(s1("fifo"), 0o644) }, []unix.Errno{unix.EROFS}},
		{"symlink", func() error { return os.Symlink("x", s1("sym")) }, []unix.Errno{unix.EROFS}},
		{"link", func() error { return os.Link(s1("a"), s1("a2")) }, []unix.Errno{unix.EROFS}},
		{"link out", func() error { return os.Link(s1("a"), p("a3")) }, []unix.Errno{unix.EROFS, unix.EXDEV}},
		{"unlink", func() error { return os.Remove(s1("a")) }, []unix.Errno{unix.EROFS}},
		{"rmdir", func() error { return unix.Rmdir(s1("dir")) }, []unix.Errno{unix.EROFS, unix.ENOTEMPTY}},
		{"rename inside", func() error { return os.Rename(s1("a"), s1("b")) }, []unix.Errno{unix.EROFS}},
		{"rename out", func() error { return os.Rename(s1("a"), p("stolen")) }, []unix.Errno{unix.EROFS}},
		{"rename in", func() error { return os.Rename(p("born"), s1("born")) }, []unix.Errno{unix.EROFS}},
		{"chmod", func() error { return os.Chmod(s1("a"), 0o777) }, []unix.Errno{unix.EROFS}},
		{"chown", func() error { return os.Lchown(s1("a"), 1, 1) }, []unix.Errno{unix.EROFS}},
		{"utimes", func() error { return unix.UtimesNano(s1("a"), make([]unix.Timespec, 2)) }, []unix.Errno{unix.EROFS}},
		{"setxattr", func() error { return unix.Setxattr(s1("a"), "user.tag", []byte("x"), 0) }, []unix.Errno{unix.EROFS}},
		{"removexattr", func() error { return unix.Removexattr(s1("a"), "user.tag") }, []unix.Errno{unix.EROFS}},
		{"remove a snapshot by hand", func() error { return unix.Rmdir(p(".snapshots/s1")) }, []unix.Errno{unix.EROFS, unix.ENOTEMPTY}},
		{"mkdir in .snapshots", func() error { return os.Mkdir(p(".snapshots/x"), 0o755) }, []unix.Errno{unix.EROFS}},
		{"rmdir .snapshots", func() error { return unix.Rmdir(p(".snapshots")) }, []unix.Errno{unix.EROFS, unix.ENOTEMPTY}},
		{"mkdir .snapshots", func() error { return os.Mkdir(p(".snapshots"), 0o755) }, []unix.Errno{unix.EEXIST}},
		{"rename onto .snapshots", func() error { return unix.Rename(p("dir"), p(".snapshots")) }, []unix.Errno{unix.EROFS}},
		{"rename a file onto .snapshots", func() error { return unix.Rename(p("born"), p(".snapshots")) }, []unix.Errno{unix.EROFS, unix.EISDIR}},
		{"rename .snapshots", func() error { return os.Rename(p(".snapshots"), p("snaps")) }, []unix.Errno{unix.EROFS}},
	} {
		err := tc.do()
		wantErrno(t, tc.name, err, tc.want...)
	}
	checkFile(t, s1("a"), []byte("old a"))
	checkNames(t, m.Dir, "a", "born", "dir", "link", "restored")

	// A snapshot made while mounted appears; a deleted one goes; one
	// made again under its name shows the new state.
	snapshot(t, m, "s2")
	checkNames(t, p(".snapshots"), "s1", "s2")
	checkFile(t, p(".snapshots/s2/a"), []byte("new contents of a"))
	checkNames(t, p(".snapshots/s2"), "a", "born", "dir", "link", "restored")
	oldIno := pathIno(t, s1("a"))
	deleteSnapshot(t, m, "s1")
	checkNames(t, p(".snapshots"), "s2")
	if _, err := os.Lstat(s1("a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a deleted snapshot's file: %v", err)
	}
	snapshot(t, m, "s1")
	checkFile(t, s1("a"), []byte("new contents of a"))
	checkNames(t, s1(""), "a", "born", "dir", "link", "restored")
	if ino := pathIno(t, s1("a")); ino == oldIno {
		t.Errorf("the remade snapshot's file has the old one's inode number %#x", ino)
	}
	if _, err := os.Stat(p(".snapshots/nonesuch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing snapshot: %v", err)
	}
	snapshot(t, m, "nonesuch") // the miss was not cached
	checkFile(t, p(".snapshots/nonesuch/a"), []byte("new contents of a"))
}

// TestSnapshotsRealDirWins: a real .snapshots at the root (made through
// another door) is what the mount shows; the views come back once it is
// gone.
func TestSnapshotsRealDirWins(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	writeFile(t, filepath.Join(m.Dir, "a"), []byte("a"))
	snapshot(t, m, "s")
	checkNames(t, filepath.Join(m.Dir, ".snapshots"), "s")
	real, err := m.FS.Create(fs.Caller{}, fs.RootIno, ".snapshots", fs.NewNode{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	m.Server.Invalidate(fs.RootIno, ".snapshots", real.Ino)
	if ino := pathIno(t, filepath.Join(m.Dir, ".snapshots")); ino != uint64(real.Ino) {
		t.Errorf(".snapshots is inode %#x, want the real one's %d", ino, real.Ino)
	}
	checkNames(t, filepath.Join(m.Dir, ".snapshots"))
	if got := names(t, m.Dir); !slices.Contains(got, ".snapshots") {
		t.Errorf("the real .snapshots is not listed: %q", got)
	}
	if err := os.Remove(filepath.Join(m.Dir, ".snapshots")); err != nil {
		t.Fatal(err)
	}
	checkNames(t, filepath.Join(m.Dir, ".snapshots"), "s")
	checkNames(t, m.Dir, "a")
}
