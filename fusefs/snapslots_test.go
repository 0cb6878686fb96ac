package fusefs

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
)

// TestSnapSlots: a snapshot keeps its slot; once every slot was given,
// one whose snapshot is gone and whose nodes the kernel forgot is given
// again with the next generation, and none other is.
func TestSnapSlots(t *testing.T) {
	ctx := context.Background()
	f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	view := func(name string) *fs.View {
		t.Helper()
		if _, err := f.CreateSnapshot(ctx, name); err != nil {
			t.Fatal(err)
		}
		v, err := f.SnapshotView(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var s snapViews
	a := view("a")
	slotA, genA, err := s.slotOf(a)
	if err != nil || slotA != 1 || genA != 1 {
		t.Fatalf("first slot %d gen %d, %v", slotA, genA, err)
	}
	a2, _ := f.SnapshotView("a")
	if slot, _, _ := s.slotOf(a2); slot != slotA {
		t.Errorf("the same snapshot got slot %d, then %d", slotA, slot)
	}
	b := view("b")
	slotB, _, _ := s.slotOf(b)
	if slotB == slotA {
		t.Errorf("two snapshots share slot %d", slotB)
	}
	// Every slot given: none free while a and b live.
	s.next = lastSlot - 1
	c := view("c")
	if _, _, err := s.slotOf(c); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("no slot left: %v", err)
	}
	// a is gone but the kernel still holds a node of it.
	if _, err := fs.DeleteSnapshot(f.Store(), "a"); err != nil {
		t.Fatal(err)
	}
	s.ref(slotA)
	if _, _, err := s.slotOf(c); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a slot the kernel still uses was given again: %v", err)
	}
	s.forget(slotA, 1)
	slotC, genC, err := s.slotOf(c)
	if err != nil || slotC != slotA || genC != 2 {
		t.Errorf("slot %d gen %d, %v; want slot %d gen 2", slotC, genC, err, slotA)
	}
	// a made again is another snapshot: no slot is free for it (c has
	// a's old one).
	a3 := view("a")
	if slot, _, err := s.slotOf(a3); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a remade got slot %d (c has %d), %v", slot, slotC, err)
	}
	if id := nodeOf(slotC, fs.RootIno); !isSnapNode(id) || id == snapDirID {
		t.Errorf("node id %#x", id)
	}
	if sl, ino := splitNode(nodeOf(7, 12345)); sl != 7 || ino != 12345 {
		t.Errorf("split %d %d", sl, ino)
	}
	if isSnapNode(uint64(fs.MaxIno - 1)) {
		t.Errorf("the last live inode number is a snapshot node")
	}
}
