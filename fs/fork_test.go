package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// readAllOf reads file ino of f whole.
func readAllOf(t *testing.T, f *FS, ino Ino) []byte {
	t.Helper()
	a, err := f.GetAttr(ino)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, a.Size)
	n, err := f.Read(context.Background(), ino, 0, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func names(t *testing.T, f *FS, dir Ino) string {
	t.Helper()
	list, err := f.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range list[2:] {
		out = append(out, d.Name)
	}
	return strings.Join(out, ",")
}

// forkBase makes the tree every fork test starts from.
func forkBase(t testing.TB, f *FS) (dir Attr) {
	c := Caller{}
	dir, err := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		putFile(t, f, dir.Ino, fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte('a' + i)}, 5000+i))
	}
	putFile(t, f, RootIno, "top", []byte("top"))
	f.SetXattr(dir.Ino, "user.x", []byte("1"), 0)
	return dir
}

// TestFork: a fork reads the workspace as it was, takes every kind of
// change (create, write, truncate, rename, unlink, rmdir, mkdir, link,
// symlink, xattrs) without the workspace seeing any, lists what it
// changed, and a merge makes the workspace exactly the fork's tree, in
// one commit, with fsck clean; the fork is gone after.
func TestFork(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	dir := forkBase(t, f)
	base := manifest(t, f)
	fi, err := f.CreateFork(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if fi.ID != "fork1" || fi.InoBase != forkInoFloor {
		t.Errorf("fork %+v", fi)
	}
	fk, err := f.OpenFork(fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, fk); got != base {
		t.Fatalf("a new fork reads\n%s\nwant\n%s", got, base)
	}
	// Changes in the fork.
	putFile(t, fk, dir.Ino, "f1", []byte("overwritten in the fork"))
	if err := fk.Unlink(dir.Ino, "f2"); err != nil {
		t.Fatal(err)
	}
	if err := fk.Rename(dir.Ino, "f3", RootIno, "moved", 0); err != nil {
		t.Fatal(err)
	}
	sub, err := fk.Create(c, dir.Ino, "sub", NewNode{Mode: syscall.S_IFDIR | 0o700})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Ino < fi.InoBase || sub.Ino >= fi.InoEnd {
		t.Errorf("a fork's new inode %d is outside its range %d-%d", sub.Ino, fi.InoBase, fi.InoEnd)
	}
	deep := putFile(t, fk, sub.Ino, "deep", bytes.Repeat([]byte("deep "), 3000))
	if _, err := fk.Link(c, deep.Ino, RootIno, "hardlink"); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.Create(c, RootIno, "sym", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "dir/f0"}); err != nil {
		t.Fatal(err)
	}
	size := uint64(100)
	f4, _ := fk.Lookup(c, dir.Ino, "f4")
	if _, err := fk.SetAttr(c, f4.Ino, SetAttrIn{Size: &size}); err != nil {
		t.Fatal(err)
	}
	fk.SetXattr(dir.Ino, "user.x", []byte("2"), 0)
	fk.RemoveXattr(dir.Ino, "user.x")
	fk.SetXattr(dir.Ino, "user.y", []byte("3"), 0)
	if err := fk.Unlink(RootIno, "top"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, fk, dir.Ino); got != "f0,f1,f4,sub" {
		t.Errorf("fork's dir lists %s", got)
	}
	if got := names(t, fk, RootIno); got != "dir,hardlink,moved,sym" {
		t.Errorf("fork's root lists %s", got)
	}
	if err := fk.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Reopened, the fork has them all.
	if err := f.CloseFork(fi.ID); err != nil {
		t.Fatal(err)
	}
	if fk, err = f.OpenFork(fi.ID); err != nil {
		t.Fatal(err)
	}
	forked := manifest(t, fk)
	if got := manifest(t, f); got != base {
		t.Fatalf("the fork's changes show in the workspace:\n%s", got)
	}
	changes, err := fk.ForkChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		got = append(got, ch.Op+" "+ch.Path)
	}
	want := "modified /dir/f1,deleted /dir/f2,deleted /dir/f3,modified /dir/f4,added /dir/sub,added /dir/sub/deep,added /hardlink,added /moved,added /sym,deleted /top"
	if strings.Join(got, ",") != want {
		t.Errorf("fork changes\n %s\nwant\n %s", strings.Join(got, ","), want)
	}
	forks, err := f.Forks()
	if err != nil || len(forks) != 1 || !forks[0].Open || forks[0].Records == 0 {
		t.Errorf("forks %+v %v", forks, err)
	}
	rootBefore, _ := f.Root(ctx)
	rep, touched, err := f.MergeFork(ctx, fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records == 0 || len(touched.Entries) == 0 {
		t.Errorf("merge report %+v", rep)
	}
	if got := manifest(t, f); got != forked {
		t.Fatalf("merged workspace\n%s\nwant the fork's\n%s", got, forked)
	}
	if rootAfter, _ := f.Root(ctx); rootAfter == rootBefore {
		t.Error("the root identifier did not change with the merge")
	}
	if forks, _ := f.Forks(); len(forks) != 0 {
		t.Errorf("forks after the merge: %+v", forks)
	}
	if _, err := f.OpenFork(fi.ID); !errors.Is(err, ErrNoFork) {
		t.Errorf("open a merged fork: %v", err)
	}
	// The merged files live on in the workspace.
	putFile(t, f, sub.Ino, "later", []byte("x"))
	fsckClosed(t, f, path)
}

// TestForkDiscard: a discarded fork leaves the workspace as it was, its
// chunks are released (gc frees nothing more, fsck is clean), and the
// forks bucket goes with the last fork.
func TestForkDiscard(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	dir := forkBase(t, f)
	base := manifest(t, f)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st0 := storeStats(t, f)
	fi, err := f.CreateFork(ctx, "try")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateFork(ctx, "try"); !errors.Is(err, ErrForkExists) {
		t.Errorf("a second fork named try: %v", err)
	}
	fk, err := f.OpenFork(fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, fk, dir.Ino, "new", bytes.Repeat([]byte("new data "), 2000))
	putFile(t, fk, dir.Ino, "f0", bytes.Repeat([]byte("other "), 2000))
	fk.Unlink(dir.Ino, "f1")
	if err := fk.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// The workspace goes on meanwhile.
	putFile(t, f, dir.Ino, "f1", []byte("changed in the workspace"))
	rep, err := f.DiscardFork(ctx, fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records == 0 || rep.Chunks == 0 {
		t.Errorf("discard report %+v", rep)
	}
	putFile(t, f, dir.Ino, "f1", bytes.Repeat([]byte{'b'}, 5001))
	if got := manifest(t, f); stripInos(got) != stripInos(base) {
		t.Errorf("after the discard\n%s\nwant\n%s", got, base)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := storeStats(t, f); st.Chunks != st0.Chunks {
		t.Errorf("chunks %d after the discard, %d before the fork", st.Chunks, st0.Chunks)
	}
	if err := f.view(func(tx *chunkstore.Tx) error {
		if tx.Bucket(bucketForks) != nil {
			return errors.New("the forks bucket outlived the last fork")
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	f.Close()
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := GC(st); err != nil || g.ChunksFreed != 0 || g.RefsCorrected != 0 {
		t.Errorf("gc after the discard: %+v %v", g, err)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	fsckClosed(t, f, path)
}

// TestForkConflict: a merge refuses, naming the files, when the
// workspace changed what the fork changed since the fork was made, and
// changes nothing; changes to other files of the same directory merge
// (the directory's entries from both sides, its link count recounted).
func TestForkConflict(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	dir := forkBase(t, f)
	fi, _ := f.CreateFork(ctx, "a")
	fk, err := f.OpenFork(fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, fk, dir.Ino, "f1", []byte("fork's f1"))
	if _, err := fk.Create(c, dir.Ino, "forkdir", NewNode{Mode: syscall.S_IFDIR | 0o755}); err != nil {
		t.Fatal(err)
	}
	putFile(t, fk, dir.Ino, "forknew", []byte("fork's new file"))
	// The workspace: the same file, and others in the same directory.
	putFile(t, f, dir.Ino, "f1", []byte("workspace's f1"))
	if _, err := f.Create(c, dir.Ino, "wsdir", NewNode{Mode: syscall.S_IFDIR | 0o755}); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, dir.Ino, "wsnew", []byte("workspace's new file"))
	before := manifest(t, f)
	_, _, err = f.MergeFork(ctx, fi.ID)
	var ce *ForkConflictError
	if !errors.As(err, &ce) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("merge over a conflict: %v", err)
	}
	if strings.Join(ce.Paths, ",") != "/dir/f1" {
		t.Errorf("conflicts named %q", ce.Paths)
	}
	if got := manifest(t, f); got != before {
		t.Errorf("a refused merge changed the workspace:\n%s", got)
	}
	// Put f1 back in the fork: the rest merges.
	fk, err = f.OpenFork(fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, fk, dir.Ino, "f1", bytes.Repeat([]byte{'b'}, 5001))
	f1, _ := fk.Lookup(c, dir.Ino, "f1")
	a0, _ := f.GetAttr(f1.Ino)
	// Its times differ from the workspace's at the fork: still its change.
	_, _, err = f.MergeFork(ctx, fi.ID)
	if !errors.As(err, &ce) {
		t.Fatalf("merge of a file put back with other times: %v", err)
	}
	fk, _ = f.OpenFork(fi.ID)
	if _, err := fk.SetAttr(c, f1.Ino, SetAttrIn{Mtime: &a0.Mtime, Atime: &a0.Atime, Ctime: &a0.Ctime}); err != nil {
		t.Fatal(err)
	}
	// The workspace's f1 now is not its f1 at the fork: undo that too.
	putFile(t, f, dir.Ino, "f1", bytes.Repeat([]byte{'b'}, 5001))
	wa, _ := f.GetAttr(f1.Ino)
	if _, err := fk.SetAttr(c, f1.Ino, SetAttrIn{Mtime: &wa.Mtime, Atime: &wa.Atime, Ctime: &wa.Ctime}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.MergeFork(ctx, fi.ID); err != nil {
		t.Fatal(err)
	}
	if got := names(t, f, dir.Ino); got != "f0,f1,f2,f3,f4,forkdir,forknew,wsdir,wsnew" {
		t.Errorf("merged directory lists %s", got)
	}
	if a, _ := f.GetAttr(dir.Ino); a.Nlink != 4 {
		t.Errorf("merged directory has %d links, want 4", a.Nlink)
	}
	fsckClosed(t, f, path)
}

// TestForksSideBySide: two forks of one workspace at once, each trying
// its own approach on the same files; each sees only its own changes;
// the first merges, the second then conflicts on the files both changed
// and is discarded; fsck is clean.
func TestForksSideBySide(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	dir := forkBase(t, f)
	a, _ := f.CreateFork(ctx, "a")
	b, _ := f.CreateFork(ctx, "b")
	if a.InoBase == b.InoBase {
		t.Fatal("two forks share an inode range")
	}
	fa, err := f.OpenFork("a")
	if err != nil {
		t.Fatal(err)
	}
	fb, err := f.OpenFork("b")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, x := range []struct {
		f   *FS
		tag string
	}{{fa, "A"}, {fb, "B"}} {
		go func() {
			for i := range 20 {
				p, err := x.f.Create(c, dir.Ino, fmt.Sprintf("%s%d", x.tag, i), NewNode{Mode: syscall.S_IFREG | 0o644})
				if err != nil {
					done <- err
					return
				}
				x.f.Write(ctx, p.Ino, 0, bytes.Repeat([]byte(x.tag), 3000+i), false)
				x.f.Release(p.Ino)
			}
			f0, _ := x.f.Lookup(c, dir.Ino, "f0")
			x.f.Open(f0.Ino)
			_, err := x.f.Write(ctx, f0.Ino, 0, []byte("approach "+x.tag), false)
			x.f.Release(f0.Ino)
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []struct {
		f          *FS
		mine, them string
	}{{fa, "A0", "B0"}, {fb, "B0", "A0"}} {
		if _, err := x.f.Lookup(c, dir.Ino, x.mine); err != nil {
			t.Errorf("fork %s: %s: %v", x.f.Fork(), x.mine, err)
		}
		if _, err := x.f.Lookup(c, dir.Ino, x.them); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("fork %s sees the other's %s: %v", x.f.Fork(), x.them, err)
		}
	}
	if _, err := f.Lookup(c, dir.Ino, "A0"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("the workspace sees a fork's file: %v", err)
	}
	f0, _ := f.Lookup(c, dir.Ino, "f0")
	if got := string(readAllOf(t, fb, f0.Ino)[:10]); got != "approach B" {
		t.Errorf("fork b reads %q", got)
	}
	if _, _, err := f.MergeFork(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := string(readAllOf(t, f, f0.Ino)[:10]); got != "approach A" {
		t.Errorf("merged workspace reads %q", got)
	}
	_, _, err = f.MergeFork(ctx, "b")
	var ce *ForkConflictError
	if !errors.As(err, &ce) || strings.Join(ce.Paths, ",") != "/dir/f0" {
		t.Fatalf("merge of b after a: %v", err)
	}
	if _, err := f.DiscardFork(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup(c, dir.Ino, "B0"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a discarded fork's file: %v", err)
	}
	fsckClosed(t, f, path)
}

// TestForkReopen: a fork outlives the workspace's close and open (its
// record, pin and records are in the store), also when the workspace
// changed and took snapshots meanwhile; fsck knows forks: a fork's pin
// gone is reported, and so is a fork's chunk reference miscounted.
func TestForkReopen(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	dir := forkBase(t, f)
	base := manifest(t, f)
	fi, _ := f.CreateFork(ctx, "keep")
	fk, _ := f.OpenFork(fi.ID)
	putFile(t, fk, dir.Ino, "forkfile", bytes.Repeat([]byte("z"), 9000))
	want := manifest(t, fk)
	// The workspace changes a lot meanwhile: the fork still reads it
	// as it was.
	for i := range 5 {
		putFile(t, f, dir.Ino, fmt.Sprintf("f%d", i), []byte("changed"))
	}
	f.Unlink(dir.Ino, "f4")
	f.CreateSnapshot(ctx, "s")
	f.Rmdir(RootIno, "nothing")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck with a fork: %v %q", err, r.Problems)
	}
	if _, err := GC(st); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f, err := Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	fk, err = f.OpenFork("keep")
	if err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, fk); got != want {
		t.Errorf("fork after reopen and gc:\n%s\nwant\n%s", got, want)
	}
	if _, err := fk.CreateSnapshot(ctx, "x"); !errors.Is(err, ErrInFork) {
		t.Errorf("snapshot in a fork: %v", err)
	}
	if _, err := f.DiscardFork(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	_ = base
	f.Close()
	// fsck: a fork whose pin is gone.
	f, _ = Open(path, Options{Logger: quietLog()})
	f.CreateFork(ctx, "p")
	f.Close()
	st, _ = chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	st.Update(func(tx *chunkstore.Tx) error {
		c := tx.Bucket([]byte("snapepochs")).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if _, ok := isForkPin(k[8:]); ok {
				return c.Delete()
			}
		}
		return errors.New("no fork pin")
	})
	r, _ := Check(st, false)
	if !strings.Contains(strings.Join(r.Problems, "\n"), "fork p (from commit") {
		t.Errorf("fsck of a fork without its pin: %q", r.Problems)
	}
	if r, err := Check(st, true); err != nil || len(r.Repaired) == 0 {
		t.Errorf("repair: %v %+v", err, r)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Errorf("fsck after repair: %v %q", err, r.Problems)
	}
	st.Close()
}

const forkWorkerEnv = "COMPUTERFS_FORK_KILL_STORE"

// forkKillFiles writes gen's files of TestForkMergeKill: 1 the base, 2
// what each fork makes of it.
func forkKillFiles(t *testing.T, f *FS, gen byte) {
	for i := range 20 {
		a := putFile(t, f, RootIno, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte{gen, byte(i)}, 3000+int(gen)*100))
		size := uint64(2 * (3000 + int(gen)*100))
		if _, err := f.SetAttr(Caller{}, a.Ino, SetAttrIn{Size: &size}); err != nil {
			t.Fatal(err)
		}
	}
	if gen == 2 {
		f.Unlink(RootIno, "f07")
		sub, err := f.Create(Caller{}, RootIno, "sub", NewNode{Mode: syscall.S_IFDIR | 0o755})
		if err == nil {
			putFile(t, f, sub.Ino, "x", []byte("x"))
		}
	}
}

// TestForkMergeWorker is TestForkMergeKill's child: it forks, changes
// the fork, merges it, makes the base again through a fork it merges,
// and so on, until killed.
func TestForkMergeWorker(t *testing.T) {
	path := os.Getenv(forkWorkerEnv)
	if path == "" {
		t.Skip("TestForkMergeKill's child process")
	}
	ctx := context.Background()
	f, err := Open(path, Options{Logger: quietLog(), CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		for _, gen := range []byte{2, 1} {
			fi, err := f.CreateFork(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			fk, err := f.OpenFork(fi.ID)
			if err != nil {
				t.Fatal(err)
			}
			forkKillFiles(t, fk, gen)
			if gen == 1 {
				sub, err := fk.Lookup(Caller{}, RootIno, "sub")
				if err == nil {
					fk.Unlink(sub.Ino, "x")
					fk.Rmdir(RootIno, "sub")
				}
			}
			if _, _, err := f.MergeFork(ctx, fi.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestForkMergeKill: kill -9 while forks are made, changed and merged
// leaves a store fsck finds clean, whose tree is one of the two states
// (a merge is all or nothing); a fork left behind discards cleanly.
func TestForkMergeKill(t *testing.T) {
	f, path := openSmallChunks(t)
	forkKillFiles(t, f, 1)
	wantA := manifest(t, f)
	fk, _ := f.CreateFork(context.Background(), "probe")
	pf, _ := f.OpenFork(fk.ID)
	forkKillFiles(t, pf, 2)
	wantB := manifest(t, pf)
	f.DiscardFork(context.Background(), fk.ID)
	f.Close()
	seen := map[string]int{}
	killRounds(t, path, "TestForkMergeWorker", forkWorkerEnv, 40, 23, 150, func(round int, f *FS) {
		got := manifest(t, f)
		switch {
		case stripInos(got) == stripInos(wantA):
			seen["base"]++
		case stripInos(got) == stripInos(wantB):
			seen["merged"]++
		default:
			t.Fatalf("round %d: the tree is neither state:\n%s", round, got)
		}
		forks, err := f.Forks()
		if err != nil {
			t.Fatal(err)
		}
		for _, fi := range forks {
			seen["fork left"]++
			if _, err := f.DiscardFork(context.Background(), fi.ID); err != nil {
				t.Fatalf("round %d: discard %s: %v", round, fi.ID, err)
			}
		}
	})
	t.Logf("states after kill -9: %v", seen)
}

// stripInos drops inode numbers and times from a manifest: each round's
// files are new inodes.
func stripInos(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		var keep []string
		for _, w := range strings.Fields(l) {
			if strings.HasPrefix(w, "ino=") || strings.HasPrefix(w, "mtime=") {
				continue
			}
			keep = append(keep, w)
		}
		out = append(out, strings.Join(keep, " "))
	}
	return strings.Join(out, "\n")
}

func storeStats(t *testing.T, f *FS) chunkstore.Stats {
	var st chunkstore.Stats
	if err := f.store.View(func(tx *chunkstore.Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return st
}
