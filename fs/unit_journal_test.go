package fs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// changeLine renders a record for comparison: "op path[ -> new]".
func changeLine(c Change) string {
	s := c.Op.String() + " " + c.Path
	if c.NewPath != "" {
		s += " -> " + c.NewPath
	}
	return s
}

func (h *harness) changes(since uint64) []string {
	h.t.Helper()
	list, err := h.f.Changes(since, 0)
	if err != nil {
		h.t.Fatalf("Changes(%d): %v", since, err)
	}
	var out []string
	prev := since
	for _, c := range list.Changes {
		if c.Seq <= prev {
			h.t.Fatalf("sequence not increasing: %d after %d", c.Seq, prev)
		}
		prev = c.Seq
		out = append(out, changeLine(c))
	}
	return out
}

func TestJournalRecordsEveryDoorOfChange(t *testing.T) {
	h := small(t)
	d := h.mkdir(RootIno, "d")
	sub := h.mkdir(d.Ino, "sub")
	a := h.file(sub.Ino, "a")
	for i := range 100 { // coalesced into one record
		h.write(a.Ino, int64(i), []byte{'x'})
	}
	mode := uint32(0o600)
	if _, err := h.f.SetAttr(user, a.Ino, SetAttrIn{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	if err := h.f.SetXattr(a.Ino, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.f.Link(user, a.Ino, d.Ino, "hard"); err != nil {
		t.Fatal(err)
	}
	if err := h.f.Rename(RootIno, "d", RootIno, "e", 0); err != nil {
		t.Fatal(err)
	}
	// The file was last named /e/hard: its next write says so.
	h.write(a.Ino, 0, []byte("y"))
	if err := h.f.Unlink(sub.Ino, "a"); err != nil {
		t.Fatal(err)
	}
	h.symlink(RootIno, "ln", "e/hard")
	want := []string{
		"create /d", "create /d/sub", "create /d/sub/a",
		"write /d/sub/a", "attr /d/sub/a", "xattr /d/sub/a",
		"link /d/hard",
		"rename /d -> /e",
		"write /e/hard", "remove /e/sub/a",
		"create /ln",
	}
	check := func(what string) {
		t.Helper()
		got := h.changes(0)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
		}
	}
	check("in memory")
	h.sync()
	check("committed")
	h.reopen()
	check("after reopen")
	// Sequence numbers continue after a reopen.
	last := h.f.LastChange()
	h.file(RootIno, "later")
	if got := h.changes(last); fmt.Sprint(got) != "[create /later]" {
		t.Fatalf("after %d: %q", last, got)
	}
	if _, err := h.f.Changes(last+10, 0); err == nil {
		t.Fatal("a future sequence number was accepted")
	}
}

func TestJournalExchangeAndReplace(t *testing.T) {
	h := small(t)
	h.file(RootIno, "a")
	h.file(RootIno, "b")
	base := h.f.LastChange()
	if err := h.f.Rename(RootIno, "a", RootIno, "b", RenameExchange); err != nil {
		t.Fatal(err)
	}
	if err := h.f.Rename(RootIno, "a", RootIno, "b", 0); err != nil {
		t.Fatal(err)
	}
	want := "[rename /a -> /b rename /b -> /a rename /a -> /b]"
	if got := fmt.Sprint(h.changes(base)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestJournalPruning(t *testing.T) {
	h := small(t)
	h.f.jn.keep = 16
	for i := range 100 {
		h.file(RootIno, fmt.Sprintf("f%03d", i))
		if i%10 == 9 {
			h.sync()
		}
	}
	h.sync()
	list, err := h.f.Changes(90, 0)
	if err != nil || len(list.Changes) != 10 || list.Next != 100 {
		t.Fatalf("recent changes: %d records, next %d, err %v", len(list.Changes), list.Next, err)
	}
	if _, err := h.f.Changes(0, 0); !errors.Is(err, ErrJournalPruned) {
		t.Fatalf("pruned records: err %v", err)
	}
	if list.First < 100-16-2 || list.First > 100-16+1 {
		t.Fatalf("first kept %d", list.First)
	}
	// Paging returns every kept record once.
	if n, want := len(pageChanges(t, h.f, list.First-1, 3)), int(100-list.First+1); n != want {
		t.Fatalf("paged %d records, want %d", n, want)
	}
	h.fsckOpen()
}

func TestJournalRecordCodec(t *testing.T) {
	for _, c := range []Change{
		{Seq: 1, Time: 1, Op: OpCreate, Ino: 2, Type: 0o100000, Path: "/a"},
		{Seq: 7, Time: 1 << 60, Op: OpRename, Ino: 1 << 40, Type: 0o40000, Path: "/a/b", NewPath: "/c/\xff"},
		{Seq: 9, Op: OpWrite},
	} {
		got, err := decodeChange(c.Seq, encodeChange(&c))
		if err != nil || got != c {
			t.Errorf("round trip of %+v: %+v, %v", c, got, err)
		}
	}
	for _, b := range [][]byte{nil, {1}, {1, 1, 1, 1, 5, 'a'}} {
		if _, err := decodeChange(1, b); err == nil {
			t.Errorf("decoded garbage %q", b)
		}
	}
}

func TestReplace(t *testing.T) {
	h := small(t)
	old := h.file(RootIno, "f")
	h.write(old.Ino, 0, []byte("old"))
	d := h.mkdir(RootIno, "d")
	tmp := func(data string) Attr {
		a, err := h.f.Create(user, RootIno, "", NewNode{Mode: 0o640, Tmpfile: true})
		if err != nil {
			t.Fatal(err)
		}
		h.write(a.Ino, 0, []byte(data))
		return a
	}
	base := h.f.LastChange()
	a := tmp("new")
	if _, err := h.f.Replace(user, a.Ino, RootIno, "f", true); err != syscall.EEXIST {
		t.Fatalf("noReplace over a file: %v", err)
	}
	if _, err := h.f.Replace(user, a.Ino, RootIno, "d", false); err != syscall.EISDIR {
		t.Fatalf("over a directory: %v", err)
	}
	if _, err := h.f.Replace(user, old.Ino, RootIno, "g", false); err != syscall.EINVAL {
		t.Fatalf("a named file: %v", err)
	}
	if _, err := h.f.Replace(user, a.Ino, RootIno, "f", false); err != nil {
		t.Fatal(err)
	}
	h.f.Release(a.Ino)
	b := tmp("fresh")
	if _, err := h.f.Replace(user, b.Ino, d.Ino, "g", true); err != nil {
		t.Fatal(err)
	}
	h.f.Release(b.Ino)
	if _, err := h.f.Replace(user, b.Ino, d.Ino, "h", false); err != syscall.EINVAL {
		t.Fatalf("replace twice: %v", err)
	}
	if got := fmt.Sprint(h.changes(base)); got != "[write /f create /d/g]" {
		t.Fatalf("journal: %s", got)
	}
	h.reopen()
	if got := string(h.readAll(h.lookup(RootIno, "f").Ino)); got != "new" {
		t.Fatalf("f holds %q", got)
	}
	if got := h.lookup(RootIno, "f"); got.Ino != a.Ino || got.Nlink != 1 || got.Mode&0o777 != 0o640 {
		t.Fatalf("f: %+v", got)
	}
	if got := string(h.readAll(h.lookup(d.Ino, "g").Ino)); got != "fresh" {
		t.Fatalf("d/g holds %q", got)
	}
	if _, err := h.f.GetAttr(old.Ino); err != syscall.ENOENT {
		t.Fatalf("the replaced inode lives on: %v", err)
	}
}

// TestJournalPruneMany prunes records spanning many leaves in one commit
// (the prune deletes by key; see applyJournal) and checks what is kept.
func TestJournalPruneMany(t *testing.T) {
	h := small(t)
	h.f.jn.keep = 100
	for i := range 3000 {
		h.file(RootIno, fmt.Sprintf("f%04d", i))
	}
	h.sync()
	list, err := h.f.Changes(2990, 0)
	if err != nil || len(list.Changes) != 10 {
		t.Fatalf("recent changes: %d records, err %v", len(list.Changes), err)
	}
	if list.First != 3000-100+1 {
		t.Fatalf("first kept %d, want %d", list.First, 3000-100+1)
	}
	kept := pageChanges(t, h.f, list.First-1, 7)
	for _, c := range kept {
		if want := fmt.Sprintf("/f%04d", c.Seq-1); c.Path != want {
			t.Fatalf("record %d names %s, want %s", c.Seq, c.Path, want)
		}
	}
	if len(kept) != 100 {
		t.Fatalf("paged %d records, want 100", len(kept))
	}
	h.reopen()
	if list, err := h.f.Changes(2999, 0); err != nil || list.First != 2901 || len(list.Changes) != 1 {
		t.Fatalf("after reopen: first %d, %d records, err %v", list.First, len(list.Changes), err)
	}
}

// pageChanges reads the journal after since in pages of size.
func pageChanges(t *testing.T, f *FS, since uint64, size int) []Change {
	t.Helper()
	var all []Change
	for {
		page, err := f.Changes(since, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) == 0 {
			return all
		}
		all = append(all, page.Changes...)
		since = page.Next
	}
}

// BenchmarkJournalPrune times the commit that prunes JournalKeep/8
// records from a full journal (the one commit in every JournalKeep/8
// changes that pays for pruning).
func BenchmarkJournalPrune(b *testing.B) {
	h := small(b)
	recs := make([]Change, 0, JournalKeep/8)
	var seq uint64
	batch := func(n int) []Change {
		recs = recs[:0]
		for range n {
			seq++
			recs = append(recs, Change{Seq: seq, Time: 1, Op: OpCreate, Ino: 2, Type: 0o100000, Path: fmt.Sprintf("/dir/file%07d", seq)})
		}
		return recs
	}
	put := func(n int) {
		if err := h.f.update(func(tx *chunkstore.Tx) error {
			_, err := applyJournal(tx, batch(n), JournalKeep)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	// Fill to the most a journal holds unpruned; one record more prunes
	// JournalKeep/8 of them.
	for left := JournalKeep + JournalKeep/8; left > 0; left -= min(left, 10_000) {
		put(min(left, 10_000))
	}
	b.ResetTimer()
	for i := range b.N {
		if i > 0 {
			b.StopTimer()
			put(JournalKeep / 8)
			b.StartTimer()
		}
		put(1)
	}
}
