package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// fsckClosed closes f and checks its store.
func fsckClosed(t *testing.T, f *FS, path string) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck: %v %q", err, r.Problems)
	}
}

// TestRestoreLive: a served workspace is put back as a snapshot saw it,
// every path byte- and attribute-identical, while a handle stays open on
// a file the snapshot did not have (it keeps reading its data, and the
// file goes at its close); the tree survives a reopen and fsck is clean.
func TestRestoreLive(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	dir, _ := f.Create(c, RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	for i := range 10 {
		putFile(t, f, dir.Ino, fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte('a' + i)}, 5000+i))
	}
	keep := putFile(t, f, RootIno, "keep", []byte("keep"))
	f.SetXattr(keep.Ino, "user.k", []byte("1"), 0)
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	want := manifest(t, f)

	putFile(t, f, dir.Ino, "f1", []byte("overwritten"))
	f.Unlink(dir.Ino, "f2")
	f.Rename(dir.Ino, "f3", RootIno, "moved", 0)
	sub, _ := f.Create(c, dir.Ino, "sub", NewNode{Mode: syscall.S_IFDIR | 0o700})
	putFile(t, f, sub.Ino, "deep", []byte("deep"))
	f.SetXattr(keep.Ino, "user.k", []byte("2"), 0)
	f.Rmdir(RootIno, "nothing")
	open := putFile(t, f, RootIno, "open", bytes.Repeat([]byte("open file "), 900))
	if _, err := f.Open(open.Ino); err != nil {
		t.Fatal(err)
	}
	// Uncommitted changes too: the restore commits them first.
	if manifest(t, f) == want {
		t.Fatal("the changes changed nothing")
	}
	rep, touched, err := f.Restore(ctx, "s", RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records == 0 || len(touched.Entries) == 0 || len(rep.Paths) == 0 {
		t.Errorf("report %+v, touched %+v", rep, touched)
	}
	if got := manifest(t, f); got != want {
		t.Errorf("restored tree differs:\n got %s\nwant %s", got, want)
	}
	buf := make([]byte, 9000)
	if n, err := f.Read(ctx, open.Ino, 0, buf); err != nil || !bytes.Equal(buf[:n], bytes.Repeat([]byte("open file "), 900)) {
		t.Errorf("the open handle reads %d bytes, %v", n, err)
	}
	f.Release(open.Ino)
	if _, err := f.GetAttr(open.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("the unlinked open file after its close: %v", err)
	}
	// The workspace goes on working.
	putFile(t, f, dir.Ino, "after", []byte("after"))
	f.Unlink(dir.Ino, "after")
	want = manifest(t, f)
	fsckClosed(t, f, path)
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, f); got != want {
		t.Errorf("after a reopen:\n got %s\nwant %s", got, want)
	}
	fsckClosed(t, f, path)
}

// TestRestorePaths: a restore of some paths puts back what was under
// them (a file moved out comes back, one moved in goes back where it
// was) and leaves everything else as it is now.
func TestRestorePaths(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	a, _ := f.Create(c, RootIno, "a", NewNode{Mode: syscall.S_IFDIR | 0o755})
	b, _ := f.Create(c, RootIno, "b", NewNode{Mode: syscall.S_IFDIR | 0o755})
	putFile(t, f, a.Ino, "x", []byte("x1"))
	putFile(t, f, a.Ino, "y", []byte("y1"))
	putFile(t, f, a.Ino, "out", []byte("moves out"))
	putFile(t, f, b.Ino, "z", []byte("z1"))
	putFile(t, f, RootIno, "c", []byte("moves in"))
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, a.Ino, "x", []byte("x2"))
	f.Unlink(a.Ino, "y")
	putFile(t, f, a.Ino, "w", []byte("new in a"))
	f.Rename(a.Ino, "out", b.Ino, "out", 0)
	f.Rename(RootIno, "c", a.Ino, "c", 0)
	nd, _ := f.Create(c, a.Ino, "newdir", NewNode{Mode: syscall.S_IFDIR | 0o755})
	putFile(t, f, nd.Ino, "n", []byte("n"))
	putFile(t, f, b.Ino, "z", []byte("z2"))
	putFile(t, f, b.Ino, "new", []byte("new in b"))

	if _, _, err := f.Restore(ctx, "s", RestoreOptions{Paths: []string{"/a"}}); err != nil {
		t.Fatal(err)
	}
	read := func(parent Ino, name string) string {
		t.Helper()
		at, err := f.Lookup(c, parent, name)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		buf := make([]byte, 100)
		f.Open(at.Ino)
		n, _ := f.Read(ctx, at.Ino, 0, buf)
		f.Release(at.Ino)
		return string(buf[:n])
	}
	for _, tc := range []struct {
		parent Ino
		name   string
		want   string
	}{
		{a.Ino, "x", "x1"}, {a.Ino, "y", "y1"}, {a.Ino, "out", "moves out"},
		{a.Ino, "w", "<no such file or directory>"}, {a.Ino, "c", "<no such file or directory>"},
		{a.Ino, "newdir", "<no such file or directory>"},
		{RootIno, "c", "moves in"}, {b.Ino, "out", "<no such file or directory>"},
		{b.Ino, "z", "z2"}, {b.Ino, "new", "new in b"},
	} {
		if got := read(tc.parent, tc.name); got != tc.want {
			t.Errorf("%d/%s: %q, want %q", tc.parent, tc.name, got, tc.want)
		}
	}
	if ra := f.attrOf(t, RootIno); ra.Nlink != 4 {
		t.Errorf("/ has %d links, want 4", ra.Nlink)
	}
	if _, _, err := f.Restore(ctx, "s", RestoreOptions{Paths: []string{"/nope"}}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a path in neither state: %v", err)
	}
	fsckClosed(t, f, path)
	// Offline, the same.
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSnapshotPaths(st, "s", []string{"/b/z"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(b.Ino, "z"); got != "z1" {
		t.Errorf("offline restore of /b/z: %q", got)
	}
	if got := read(b.Ino, "new"); got != "new in b" {
		t.Errorf("offline restore of /b/z took /b/new: %q", got)
	}
	fsckClosed(t, f, path)
}

func (f *FS) attrOf(t *testing.T, ino Ino) Attr {
	t.Helper()
	a, err := f.GetAttr(ino)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// exec runs change as exec id, between checkpoints.
func execAs(t *testing.T, f *FS, id string, change func()) *ExecRecord {
	t.Helper()
	ctx := context.Background()
	cp, err := f.BeginExec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	change()
	rec, err := f.EndExec(ctx, cp, ExecRecord{Backend: "test", Command: id})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestUndo: execs undone one by one, last first, bring the tree back to
// each earlier state exactly; an exec not the last is undone when later
// changes left its files alone, and refused, naming them, when they did
// not (unless forced); what the records say survives a reopen.
func TestUndo(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	src, _ := f.Create(c, RootIno, "src", NewNode{Mode: syscall.S_IFDIR | 0o755})
	main := putFile(t, f, src.Ino, "main.go", bytes.Repeat([]byte("package main\n"), 700))
	putFile(t, f, src.Ino, "util.go", []byte("package main // util\n"))
	f.Sync(ctx)
	var states []string
	states = append(states, manifest(t, f))
	e1 := execAs(t, f, "e1", func() { // sed -i
		putFile(t, f, src.Ino, "main.go", bytes.Repeat([]byte("package mine\n"), 700))
	})
	states = append(states, manifest(t, f))
	e2 := execAs(t, f, "e2", func() { // a build: a directory of outputs, a file removed
		out, _ := f.Create(c, RootIno, "out", NewNode{Mode: syscall.S_IFDIR | 0o755})
		putFile(t, f, out.Ino, "bin", bytes.Repeat([]byte{0x7f, 'E', 'L', 'F'}, 3000))
		f.Unlink(src.Ino, "util.go")
		f.SetXattr(main.Ino, "user.built", []byte("yes"), 0)
	})
	states = append(states, manifest(t, f))
	e3 := execAs(t, f, "e3", func() { // a rename, a chmod
		f.Rename(src.Ino, "main.go", src.Ino, "app.go", 0)
		f.SetAttr(c, src.Ino, SetAttrIn{Mode: ptr(uint32(0o700))})
	})
	states = append(states, manifest(t, f))
	nothing := execAs(t, f, "ls", func() {})
	if nothing.Changed() || e1.Before >= e1.After || e2.Before < e1.After {
		t.Errorf("epochs: e1 %d..%d e2 %d..%d ls %d..%d", e1.Before, e1.After, e2.Before, e2.After, nothing.Before, nothing.After)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: "ls"}); !errors.Is(err, ErrNothingToUndo) {
		t.Errorf("undo of an exec that changed nothing: %v", err)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: "nope"}); !errors.Is(err, ErrNoExec) {
		t.Errorf("undo of an unknown exec: %v", err)
	}
	for i, want := range []string{"e3", "e2", "e1"} {
		rec, rep, _, err := f.Undo(ctx, UndoOptions{})
		if err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
		if rec.ID != want || rep.Records == 0 {
			t.Errorf("undo %d undid %s (%d records), want %s", i, rec.ID, rep.Records, want)
		}
		if got := manifest(t, f); got != states[len(states)-2-i] {
			t.Errorf("after undoing %s:\n got %s\nwant %s", want, got, states[len(states)-2-i])
		}
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{}); !errors.Is(err, ErrNothingToUndo) {
		t.Errorf("a fourth undo: %v", err)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: "e2"}); !errors.Is(err, ErrNothingToUndo) {
		t.Errorf("undo of an undone exec: %v", err)
	}
	_ = e3
	fsckClosed(t, f, path)
	f, err := Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.Execs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s:%v", r.ID, r.Undone != 0))
	}
	if s := strings.Join(got, " "); s != "e1:true e2:true e3:true ls:false" {
		t.Errorf("records after a reopen: %s", s)
	}
	fsckClosed(t, f, path)
}

// TestUndoOutOfOrder: undoing an exec that is not the last.
func TestUndoOutOfOrder(t *testing.T) {
	ctx := context.Background()
	c := Caller{}
	for _, tc := range []struct {
		name string
		// later runs after exec "a" (which writes /p and makes /d/); it
		// may change /p, /d or something else.
		later    func(t *testing.T, f *FS)
		conflict string // the path named, "" if the undo goes through
		force    bool
		forceErr error // what the forced undo fails with (nil: it works)
	}{
		{"unrelated files", func(t *testing.T, f *FS) { putFile(t, f, RootIno, "q", []byte("q")) }, "", false, nil},
		{"a subdirectory beside", func(t *testing.T, f *FS) { f.Create(c, RootIno, "sib", NewNode{Mode: syscall.S_IFDIR | 0o755}) }, "", false, nil},
		{"the same file", func(t *testing.T, f *FS) { putFile(t, f, RootIno, "p", []byte("rewritten")) }, "/p", true, nil},
		{"a file in its directory", func(t *testing.T, f *FS) {
			d, _ := f.Lookup(c, RootIno, "d")
			putFile(t, f, d.Ino, "later", []byte("later"))
		}, "/d", true, ErrRewindInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, path := openSmallChunks(t)
			putFile(t, f, RootIno, "base", []byte("base"))
			execAs(t, f, "a", func() {
				putFile(t, f, RootIno, "p", []byte("from a"))
				f.Create(c, RootIno, "d", NewNode{Mode: syscall.S_IFDIR | 0o755})
			})
			tc.later(t, f)
			before := manifest(t, f)
			_, _, _, err := f.Undo(ctx, UndoOptions{Exec: "a"})
			var ce *ConflictError
			switch {
			case tc.conflict == "" && err != nil:
				t.Fatalf("undo: %v", err)
			case tc.conflict != "" && (!errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Paths, " "), tc.conflict)):
				t.Fatalf("undo: %v, want a conflict naming %s", err, tc.conflict)
			case tc.conflict != "":
				if got := manifest(t, f); got != before {
					t.Errorf("a refused undo changed the tree")
				}
				if !errors.Is(err, syscall.EBUSY) {
					t.Errorf("a conflict is not EBUSY")
				}
			}
			if tc.force {
				_, _, _, err := f.Undo(ctx, UndoOptions{Exec: "a", Force: true})
				if !errors.Is(err, tc.forceErr) || (tc.forceErr == nil) != (err == nil) {
					t.Fatalf("forced undo: %v, want %v", err, tc.forceErr)
				}
				if err != nil {
					if got := manifest(t, f); got != before {
						t.Errorf("a failed undo changed the tree")
					}
				}
			}
			if tc.conflict == "" || tc.force && tc.forceErr == nil {
				if _, err := f.Lookup(c, RootIno, "p"); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("/p after the undo: %v", err)
				}
				if _, err := f.Lookup(c, RootIno, "base"); err != nil {
					t.Errorf("/base after the undo: %v", err)
				}
			}
			fsckClosed(t, f, path)
		})
	}
}

const undoWorkerEnv = "COMPUTERFS_UNDO_WORKER"

// undoKillFiles writes the files of TestUndoKill's states: gen 1 is the
// base, gen 2 what each exec makes of it.
func undoKillFiles(t *testing.T, f *FS, gen byte) {
	for i := range 30 {
		putFile(t, f, RootIno, fmt.Sprintf("f%02d", i), bytes.Repeat([]byte{gen, byte(i)}, 3000+int(gen)*100))
	}
	if gen == 2 {
		f.Unlink(RootIno, "f07")
	}
}

// TestUndoWorker is TestUndoKill's child: it runs an exec that changes
// the store named in its environment, undoes it, and again, until
// killed.
func TestUndoWorker(t *testing.T) {
	path := os.Getenv(undoWorkerEnv)
	if path == "" {
		t.Skip("TestUndoKill's child process")
	}
	// Few commits but the ones exec checkpoints and undo make (a stray
	// one can still land in the middle of an exec's writes).
	f, err := Open(path, Options{Logger: quietLog(), CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		execAs(t, f, fmt.Sprintf("w%d-%d", os.Getpid(), i), func() { undoKillFiles(t, f, 2) })
		if _, _, _, err := f.Undo(context.Background(), UndoOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUndoKill: kill -9 while execs run and are undone leaves a store
// fsck finds clean, whose tree is the base or holds changes of one exec
// (all of them, or the part committed before the kill: commits go on
// while an exec runs), and undo of that exec brings back the base
// exactly: its record is committed with the first of its changes.
func TestUndoKill(t *testing.T) {
	f, path := openSmallChunks(t)
	undoKillFiles(t, f, 1)
	wantA := manifest(t, f)
	f.Close()
	sawB := 0
	rounds := killRounds(t, path, "TestUndoWorker", undoWorkerEnv, 30, 17, 90, func(round int, f *FS) {
		if got := manifest(t, f); got != wantA {
			// Within or after an exec: its record survived with its
			// changes, and undoes them.
			sawB++
			if _, _, _, err := f.Undo(context.Background(), UndoOptions{}); err != nil {
				t.Fatalf("round %d: the tree is not the base, and undo fails: %v\n%s", round, err, got)
			}
			if got := manifest(t, f); got != wantA {
				t.Fatalf("round %d: undo did not bring back the base:\n%s", round, got)
			}
		}
	})
	t.Logf("%d of %d rounds ended with an exec's changes (some or all), the rest before one or after its undo", sawB, rounds)
}

// TestUndoInterrupted: an exec whose changes were committed while it ran
// (a long build, say) and that never ended (the daemon died): its record
// went with the first of those commits, the next open ends it at the
// last commit, and undo puts the tree back as it was before the exec.
func TestUndoInterrupted(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	putFile(t, f, RootIno, "keep", []byte("keep"))
	f.Sync(ctx)
	want := manifest(t, f)
	if _, err := f.BeginExec(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "keep", []byte("changed by the exec"))
	putFile(t, f, RootIno, "made", []byte("made by the exec"))
	if err := f.Sync(ctx); err != nil { // a commit while the exec runs
		t.Fatal(err)
	}
	recs, err := f.Execs()
	if err != nil || len(recs) != 1 || !recs[0].Running {
		t.Fatalf("records while the exec runs: %+v %v", recs, err)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: "long"}); !errors.Is(err, ErrNothingToUndo) || !strings.Contains(err.Error(), "running") {
		t.Errorf("undo of a running exec: %v", err)
	}
	// The end never comes: the workspace closes (as after kill -9, the
	// last commit holds the exec's changes and its starting record).
	f.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err = f.Execs()
	if err != nil || len(recs) != 1 || recs[0].Running || !recs[0].Interrupted || !recs[0].Changed() {
		t.Fatalf("records after the reopen: %+v %v", recs, err)
	}
	if _, _, _, err := f.Undo(ctx, UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, f); got != want {
		t.Errorf("after undoing the interrupted exec:\n got %s\nwant %s", got, want)
	}
	fsckClosed(t, f, path)
}

// killRounds runs worker (a test of this package, in a child process, on
// the store at path named in env) and kills it with SIGKILL after a
// varying delay, 20 times (5 with -short); after each kill the store must
// open and fsck clean, and check sees it opened. It returns the rounds.
func killRounds(t *testing.T, path, worker, env string, base, step, spread int, check func(round int, f *FS)) int {
	t.Helper()
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^"+worker+"$")
		cmd.Env = append(os.Environ(), env+"="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(base+round*step%spread) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		r, err := Check(st, false)
		st.Close()
		if err != nil || !r.Clean() {
			t.Fatalf("round %d: fsck after kill -9: %v %q", round, err, r.Problems)
		}
		f, err := Open(path, Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		check(round, f)
		f.Close()
	}
	return rounds
}

// TestExecAcrossClose: an exec whose end (or start) comes after the
// workspace closed gets an error at once, and Sync after Close answers
// at once too. EndExec used to queue its
// record after Close's last commit and wait, mu held, for a commit that
// never comes (a backends test hung for 30 minutes on it in CI). The
// race case closes while EndExec prepares the exec's changes.
func TestExecAcrossClose(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("no answer after Close in 30 s")
			return nil
		}
	}
	t.Run("end after close", func(t *testing.T) {
		f, _ := openSmallChunks(t)
		cp, err := f.BeginExec(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		putFile(t, f, RootIno, "a", bytes.Repeat([]byte("a"), 20000))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		err = run(t, func() error { _, err := f.EndExec(ctx, cp, ExecRecord{}); return err })
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("EndExec after Close: %v, want EIO", err)
		}
	})
	t.Run("begin after close", func(t *testing.T) {
		f, _ := openSmallChunks(t)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		err := run(t, func() error { _, err := f.BeginExec(ctx, "x"); return err })
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("BeginExec after Close: %v, want EIO", err)
		}
	})
	t.Run("sync after close", func(t *testing.T) {
		f, _ := openSmallChunks(t)
		a := putFile(t, f, RootIno, "a", []byte("a"))
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// Nothing was queued since: all of it is committed.
		if err := run(t, func() error { return f.Sync(ctx) }); err != nil {
			t.Fatalf("Sync after Close, nothing queued: %v", err)
		}
		// A write after Close is refused (the store is closed).
		if _, err := f.Write(ctx, a.Ino, 0, []byte("b"), false); err == nil {
			t.Fatal("Write after Close succeeded")
		}
	})
	t.Run("close during end", func(t *testing.T) {
		for i := range 40 {
			f, path := openSmallChunks(t)
			cp, err := f.BeginExec(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			putFile(t, f, RootIno, "a", bytes.Repeat([]byte{byte(i)}, 200000))
			closed := make(chan error, 1)
			go func() {
				time.Sleep(time.Duration(i%8) * 50 * time.Microsecond)
				closed <- f.Close()
			}()
			err = run(t, func() error { _, err := f.EndExec(ctx, cp, ExecRecord{}); return err })
			if err != nil && !errors.Is(err, syscall.EIO) {
				t.Fatalf("round %d: EndExec: %v", i, err)
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			fsckClosed(t, f, path)
		}
	})
}
