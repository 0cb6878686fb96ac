package fs

import (
	"syscall"
	"testing"
)

// TestFileParents: a file's record names a directory that names it, as
// it is created, linked, renamed and replaced.
func TestFileParents(t *testing.T) {
	f, _ := openSmallChunks(t)
	defer f.Close()
	c := Caller{}
	d1, _ := f.Create(c, RootIno, "d1", NewNode{Mode: syscall.S_IFDIR | 0o755})
	d2, _ := f.Create(c, RootIno, "d2", NewNode{Mode: syscall.S_IFDIR | 0o755})
	parent := func(ino Ino) Ino {
		a, err := f.GetAttr(ino)
		if err != nil {
			t.Fatal(err)
		}
		return a.Parent
	}
	x, err := f.Create(c, d1.Ino, "x", NewNode{Mode: syscall.S_IFREG | 0o644})
	if err != nil || parent(x.Ino) != d1.Ino {
		t.Fatalf("created: parent %d, %v", parent(x.Ino), err)
	}
	if _, err := f.Link(c, x.Ino, d2.Ino, "y"); err != nil || parent(x.Ino) != d1.Ino {
		t.Errorf("linked: parent %d, %v; want the first name's", parent(x.Ino), err)
	}
	if err := f.Rename(d1.Ino, "x", d2.Ino, "x", 0); err != nil || parent(x.Ino) != d2.Ino {
		t.Errorf("renamed: parent %d, %v", parent(x.Ino), err)
	}
	tmp, err := f.Create(c, d1.Ino, "", NewNode{Mode: syscall.S_IFREG | 0o644, Tmpfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Replace(c, tmp.Ino, d2.Ino, "z", false); err != nil || parent(tmp.Ino) != d2.Ino {
		t.Errorf("replaced: parent %d, %v", parent(tmp.Ino), err)
	}
	f.Release(tmp.Ino)
}
