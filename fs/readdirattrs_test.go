package fs

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
)

// TestReadDirAttrs compares ReadDirAttrs, at several page sizes, with
// ReadDir and a GetAttr (and Readlink) per entry, with the directory's
// entries in memory only, committed and not cached, and mixed (some
// committed, some added or removed since).
func TestReadDirAttrs(t *testing.T) {
	h := small(t)
	d := h.mkdir(RootIno, "d").Ino
	for i := range 7 {
		ino := h.file(d, fmt.Sprintf("f%d", i)).Ino
		h.write(ino, int64(i)*4096*3, bytes.Repeat([]byte{byte(i + 1)}, 100+i*5000)) // holes before the data
	}
	h.mkdir(d, "sub")
	h.symlink(d, "link", "f1")
	h.create(d, "fifo", syscall.S_IFIFO|0o600)
	states := []struct {
		name  string
		setup func()
	}{
		{"in memory", func() {}},
		{"committed, reopened", func() { h.reopen() }},
		{"mixed", func() {
			h.file(d, "a-new")
			h.file(d, "zz-new")
			if err := h.f.Unlink(d, "f3"); err != nil {
				t.Fatal(err)
			}
			ino := h.lookup(d, "f2").Ino
			h.write(ino, 0, []byte("changed"))
		}},
		{"mixed, committed", func() { h.sync() }},
	}
	for _, st := range states {
		st.setup()
		want := referenceAttrs(t, h, d)
		for _, page := range []int{0, 1, 2, 3, 5, 100} {
			var got []DirEntryAttr
			after := ""
			for {
				list, err := h.f.ReadDirAttrs(d, after, page)
				if err != nil {
					t.Fatalf("%s, page %d: %v", st.name, page, err)
				}
				if page > 0 && len(list) > page {
					t.Fatalf("%s, page %d: %d entries", st.name, page, len(list))
				}
				got = append(got, list...)
				if page == 0 || len(list) < page {
					break
				}
				after = list[len(list)-1].Name
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, page %d:\n got %v\nwant %v", st.name, page, got, want)
			}
		}
	}
	if _, err := h.f.ReadDirAttrs(h.lookup(d, "f1").Ino, "", 0); err != syscall.ENOTDIR {
		t.Errorf("ReadDirAttrs of a file: %v, want ENOTDIR", err)
	}
}

func referenceAttrs(t *testing.T, h *harness, dir Ino) []DirEntryAttr {
	list, err := h.f.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []DirEntryAttr
	for _, e := range list[2:] {
		ea := DirEntryAttr{DirEntry: e, Attr: h.attr(e.Ino)}
		if ea.Attr.IsSymlink() {
			if ea.Target, err = h.f.Readlink(e.Ino); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, ea)
	}
	return out
}
