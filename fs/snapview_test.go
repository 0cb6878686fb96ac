package fs

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
)

// TestSnapshotViewXattrs: a view reads the extended attributes as the
// snapshot had them, after they were changed, removed and added.
func TestSnapshotViewXattrs(t *testing.T) {
	ctx := context.Background()
	f, _ := openSmallChunks(t)
	a := putFile(t, f, RootIno, "a", []byte("x"))
	if err := f.SetXattr(a.Ino, "user.kept", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.SetXattr(a.Ino, "user.gone", []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetXattr(a.Ino, "user.kept", []byte("changed"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.RemoveXattr(a.Ino, "user.gone"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetXattr(a.Ino, "user.new", []byte("three"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := f.SnapshotView("s")
	if err != nil {
		t.Fatal(err)
	}
	names, err := v.ListXattr(a.Ino)
	if err != nil || !slices.Equal(names, []string{"user.gone", "user.kept"}) {
		t.Errorf("ListXattr = %q, %v", names, err)
	}
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"user.kept", "one", nil},
		{"user.gone", "two", nil},
		{"user.new", "", syscall.ENODATA},
	} {
		got, err := v.GetXattr(a.Ino, tc.name)
		if string(got) != tc.want || !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
			t.Errorf("GetXattr(%s) = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	if _, err := v.ListXattr(Ino(12345)); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("ListXattr of a missing inode: %v", err)
	}
}

// TestSnapshotViewGone: a view of a snapshot deleted since, or deleted
// and made again under its name, reads nothing (ESTALE).
func TestSnapshotViewGone(t *testing.T) {
	ctx := context.Background()
	f, _ := openSmallChunks(t)
	putFile(t, f, RootIno, "a", []byte("old"))
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	v, err := f.SnapshotView("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Lookup(RootIno, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := DeleteSnapshot(f.Store(), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Lookup(RootIno, "a"); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("lookup in a deleted snapshot: %v", err)
	}
	if err := f.Unlink(RootIno, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadDir(RootIno); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("readdir in a snapshot made again: %v", err)
	}
}

// TestInoLimit: live inode numbers stay below MaxIno.
func TestInoLimit(t *testing.T) {
	f, _ := openSmallChunks(t)
	f.mu.Lock()
	f.nextIno = MaxIno
	f.mu.Unlock()
	if _, err := f.Create(Caller{}, RootIno, "x", NewNode{Mode: syscall.S_IFREG | 0o644}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("create at MaxIno: %v", err)
	}
}
