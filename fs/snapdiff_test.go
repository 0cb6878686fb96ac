package fs

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// diffOf closes f and diffs a to b in its store.
func diffOf(t *testing.T, f *FS, path, a, b string, o DiffOptions) []DiffEntry {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := DiffSnapshotsWith(st, a, b, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func showDiff(d []DiffEntry) string {
	var out []string
	for _, e := range d {
		out = append(out, e.Kind+" "+e.OldPath+" "+e.Path)
	}
	return strings.Join(out, "\n")
}

// TestDiffWithoutWalk: a diff names what changed without walking the
// tree or reading a directory whole, through renames of files and
// directories, hard links, and files modified in place deep down.
func TestDiffWithoutWalk(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	put := func(parent Ino, name, data string) Attr { return putFile(t, f, parent, name, []byte(data)) }
	mkdir := func(parent Ino, name string) Attr {
		a, err := f.Create(c, parent, name, NewNode{Mode: syscall.S_IFDIR | 0o755})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	src := mkdir(RootIno, "src")
	deep := mkdir(mkdir(src.Ino, "a").Ino, "b")
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		put(deep.Ino, n, "file "+n+"\n")
	}
	put(RootIno, "README", "hello\n")
	put(RootIno, "linked", "one inode, two names\n")
	if _, err := f.Link(c, mustLookup(t, f, RootIno, "linked").Ino, src.Ino, "other-name"); err != nil {
		t.Fatal(err)
	}
	old := mkdir(RootIno, "old")
	put(old.Ino, "inside", "moves with its directory\n")
	if _, err := f.CreateSnapshot(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// Writes as through the mount: the kernel's lookups keep the nodes,
	// and with them the names that the journal's records give.
	write := func(parent Ino, name, data string) {
		a, err := f.Lookup(Caller{Kernel: true}, parent, name)
		if err != nil {
			t.Fatal(err)
		}
		f.Open(a.Ino)
		f.Write(ctx, a.Ino, 0, []byte(data), false)
		f.Release(a.Ino)
	}
	write(deep.Ino, "3", "FILE 3\n")
	write(deep.Ino, "5", "file 5, longer now\n")
	f.Unlink(deep.Ino, "1")
	put(deep.Ino, "6", "new\n")
	if err := f.Rename(RootIno, "old", src.Ino, "new", 0); err != nil {
		t.Fatal(err)
	}
	write(RootIno, "linked", "ONE INODE\n")
	f.Unlink(RootIno, "README")
	before, reads := namesAtWalks.Load(), diffDirReads.Load()
	d := diffOf(t, f, path, "a", "", DiffOptions{})
	// Sorted by path: the deleted README by its old path.
	want := strings.Join([]string{
		"deleted /README ",
		"modified /linked /linked",
		"deleted /src/a/b/1 ",
		"modified /src/a/b/3 /src/a/b/3",
		"modified /src/a/b/5 /src/a/b/5",
		"added  /src/a/b/6",
		"renamed /old /src/new",
	}, "\n")
	if got := showDiff(d); got != want {
		t.Errorf("diff:\n%s\nwant\n%s", got, want)
	}
	if n := namesAtWalks.Load() - before; n != 0 {
		t.Errorf("the diff walked the tree %d times", n)
	}
	if n := diffDirReads.Load() - reads; n != 0 {
		t.Errorf("the diff read %d directories whole; the journal's paths name every file", n)
	}
}

func mustLookup(t *testing.T, f *FS, parent Ino, name string) Attr {
	t.Helper()
	a, err := f.Lookup(Caller{}, parent, name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDiffWalkFallback: a file changed without a path the journal knows
// is named by its record's parent and a read of that directory; one
// whose record has no parent (written before files had them) or whose
// parent no longer names it (a hard link removed) is still named right,
// by one walk of the tree.
func TestDiffWalkFallback(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	d, _ := f.Create(c, RootIno, "d", NewNode{Mode: syscall.S_IFDIR | 0o755})
	x := putFile(t, f, RootIno, "x", []byte("x\n"))
	if _, err := f.Link(c, x.Ino, d.Ino, "y"); err != nil {
		t.Fatal(err)
	}
	if err := f.Unlink(RootIno, "x"); err != nil { // x's parent hint is stale now
		t.Fatal(err)
	}
	legacy := putFile(t, f, d.Ino, "legacy", []byte("old\n"))
	plain := putFile(t, f, d.Ino, "plain", []byte("old\n"))
	f.Close()
	// Make legacy's record as it was written before files had parents.
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx *chunkstore.Tx) error {
		b := tx.Sealed(bucketInodes)
		v, err := b.Get(inoKey(legacy.Ino))
		if err != nil {
			return err
		}
		a, target, sum, err := decodeInodeSum(legacy.Ino, v)
		if err != nil {
			return err
		}
		a.Parent = 0
		return b.Put(inoKey(legacy.Ino), encodeInode(&a, target, sum))
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, ino := range []Ino{x.Ino, legacy.Ino, plain.Ino} { // no lookups, so no paths in the journal
		f.Open(ino)
		f.Write(ctx, ino, 0, []byte("NEW\n"), false)
		f.Release(ino)
	}
	before := namesAtWalks.Load()
	got := showDiff(diffOf(t, f, path, "a", "", DiffOptions{}))
	if want := "modified /d/legacy /d/legacy\nmodified /d/plain /d/plain\nmodified /d/y /d/y"; got != want {
		t.Errorf("diff:\n%s\nwant\n%s", got, want)
	}
	if n := namesAtWalks.Load() - before; n != 1 {
		t.Errorf("the diff walked the tree %d times, want once", n)
	}
}

// TestDiffPatch: --patch gives unified diffs of text files added,
// modified, renamed and deleted, a notice for binary and large files,
// and none for attributes alone.
func TestDiffPatch(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	c := Caller{}
	put := func(parent Ino, name string, data []byte) Attr { return putFile(t, f, parent, name, data) }
	dir, _ := f.Create(c, RootIno, "src", NewNode{Mode: syscall.S_IFDIR | 0o755})
	long := bytes.Repeat([]byte("a line of a file that spans chunks\n"), 400) // 14,000 bytes, 4 chunks
	put(dir.Ino, "main.go", []byte("package main\n\nfunc main() {\n}\n"))
	put(dir.Ino, "gone.txt", []byte("bye\n"))
	put(RootIno, "bin", []byte("\x00\x01\x02"))
	put(RootIno, "big", long)
	put(RootIno, "mv-me", []byte("same\n"))
	mode := put(RootIno, "mode", []byte("mode only\n"))
	put(RootIno, "long", long)
	f.Create(c, RootIno, "link", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "src/main.go"})
	if _, err := f.CreateSnapshot(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	put(dir.Ino, "main.go", []byte("package main\n\nfunc main() {\n\tprintln()\n}\n"))
	f.Unlink(dir.Ino, "gone.txt")
	put(RootIno, "new.txt", []byte("new\n"))
	put(RootIno, "bin", []byte("\x00\x09"))
	put(RootIno, "big", append(bytes.Clone(long), "more\n"...))
	f.Rename(RootIno, "mv-me", dir.Ino, "moved", 0)
	f.SetAttr(c, mode.Ino, SetAttrIn{Mode: ptr(uint32(0o600))})
	edited := bytes.Clone(long)
	copy(edited[35*343:], "A LINE") // line 344, in the fourth chunk
	put(RootIno, "long", edited)
	f.Unlink(RootIno, "link")
	f.Create(c, RootIno, "link", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "src/moved"})
	d := diffOf(t, f, path, "a", "", DiffOptions{Patch: true, MaxFileBytes: 14001})
	got := map[string]DiffEntry{}
	for _, e := range d {
		got[e.Kind+" "+e.OldPath+" "+e.Path] = e
	}
	want := map[string]string{
		"modified /src/main.go /src/main.go": "--- a/src/main.go\n+++ b/src/main.go\n@@ -1,4 +1,5 @@\n package main\n \n func main() {\n+\tprintln()\n }\n",
		"deleted /src/gone.txt ":             "--- a/src/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
		"added  /new.txt":                    "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n",
		"modified /bin /bin":                 "Binary files a/bin and b/bin differ\n",
		"modified /big /big":                 "Large files a/big and b/big differ (14000 -> 14005 bytes; patches stop at 14001 bytes)\n",
		"renamed /mv-me /src/moved":          "",
		"modified /mode /mode":               "",
		"deleted /link ":                     "--- a/link\n+++ /dev/null\n@@ -1 +0,0 @@\n-src/main.go\n\\ No newline at end of file\n",
		"added  /link":                       "--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+src/moved\n\\ No newline at end of file\n",
	}
	for k, w := range want {
		e, ok := got[k]
		if !ok {
			t.Errorf("%s: not in the diff", k)
			continue
		}
		if e.Patch != w {
			t.Errorf("%s: patch\n%q\nwant\n%q", k, e.Patch, w)
		}
	}
	if len(got) != len(want)+1 {
		t.Errorf("diff:\n%s", showDiff(d))
	}
	if e := got["modified /long /long"]; !strings.Contains(e.Patch, "-a line of a file that spans chunks\n+A LINE of a file that spans chunks\n") || !strings.HasPrefix(e.Patch, "--- a/long\n+++ b/long\n@@ -341,7 +341,7 @@") {
		t.Errorf("long: patch\n%s", e.Patch)
	}
	if e := got["modified /big /big"]; e.OldSize != 14000 || e.Size != 14005 {
		t.Errorf("big: sizes %d -> %d", e.OldSize, e.Size)
	}
	// No patches: none asked for.
	f, err := Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range diffOf(t, f, path, "a", "", DiffOptions{}) {
		if e.Patch != "" {
			t.Errorf("%s: a patch not asked for", e.Path)
		}
	}
	// A total limit: later files get a notice.
	f, _ = Open(path, Options{Logger: quietLog()})
	n := 0
	for _, e := range diffOf(t, f, path, "a", "", DiffOptions{Patch: true, MaxTotalBytes: 10}) {
		if strings.Contains(e.Patch, "this diff's patches passed 10 bytes") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no patch was cut by the total limit")
	}
}

// TestDiffLaterChanges: files changed only after the later snapshot are
// not in a diff of two snapshots, and cost no read of their directories;
// files changed between them and again after, or made between them and
// removed after, are.
func TestDiffLaterChanges(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	x := putFile(t, f, RootIno, "x", []byte("x\n"))
	y := putFile(t, f, RootIno, "y", []byte("y\n"))
	f.CreateSnapshot(ctx, "a")
	if _, err := f.Lookup(Caller{Kernel: true}, RootIno, "x"); err != nil {
		t.Fatal(err)
	}
	write := func(ino Ino, data string) {
		f.Open(ino)
		f.Write(ctx, ino, 0, []byte(data), false)
		f.Release(ino)
	}
	write(x.Ino, "NEW\n")
	putFile(t, f, RootIno, "born", []byte("between\n"))
	putFile(t, f, RootIno, "born-changed", []byte("between\n"))
	f.CreateSnapshot(ctx, "b")
	write(y.Ino, "NEW\n")
	write(x.Ino, "NEWER\n")
	f.Unlink(RootIno, "born")
	putFile(t, f, RootIno, "born-changed", []byte("after b\n"))
	putFile(t, f, RootIno, "after", []byte("after b\n"))
	reads := diffDirReads.Load()
	want := "added  /born\nadded  /born-changed\nmodified /x /x"
	if got := showDiff(diffOf(t, f, path, "a", "b", DiffOptions{})); got != want {
		t.Errorf("diff a b:\n%s\nwant\n%s", got, want)
	}
	if n := diffDirReads.Load() - reads; n != 0 {
		t.Errorf("the diff read %d directories whole", n)
	}
	f, _ = Open(path, Options{Logger: quietLog()})
	want = "added  /after\nadded  /born-changed\nmodified /x /x\nmodified /y /y"
	if got := showDiff(diffOf(t, f, path, "a", "", DiffOptions{})); got != want {
		t.Errorf("diff a now:\n%s\nwant\n%s", got, want)
	}
}
