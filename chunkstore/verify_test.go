package chunkstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/boltcheck"
)

// storeWithCommits makes a closed store with a few commits and returns
// its path and which meta page holds the newest commit.
func storeWithCommits(t *testing.T) (string, int, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	s := openStore(t, path, chunkstore.Options{})
	for i := range 3 {
		put(t, s, randBytes(uint64(i), 3000))
	}
	s.Close()
	rep, err := boltcheck.Check(context.Background(), path, boltcheck.Options{})
	if err != nil || rep.Err() != nil || rep.MetaInvalid != -1 {
		t.Fatalf("fresh store: %+v %v", rep, err)
	}
	return path, rep.Meta, rep.PageSize
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesSilentRollback: with its newest meta page damaged, bbolt
// would open a store at the commit before, losing the last one without a
// word. A read-write open refuses; read-only and AcceptRollback open it
// and say so; the first commit after it mends the page.
func TestOpenRefusesSilentRollback(t *testing.T) {
	path, meta, ps := storeWithCommits(t)
	flipByte(t, path, int64(meta*ps+16+40)) // the txid of the newest meta
	_, err := chunkstore.Open(path, chunkstore.Options{})
	if !errors.Is(err, chunkstore.ErrRollback) {
		t.Fatalf("read-write open: %v, want ErrRollback", err)
	}
	ro, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	if ro.RolledBack() == "" {
		t.Error("a read-only open does not say it is at the previous commit")
	}
	ro.Close()
	s, err := chunkstore.Open(path, chunkstore.Options{AcceptRollback: true})
	if err != nil {
		t.Fatalf("open accepting the rollback: %v", err)
	}
	put(t, s, randBytes(99, 100)) // a commit writes the invalid page anew
	s.Close()
	s, err = chunkstore.Open(path, chunkstore.Options{})
	if err != nil {
		t.Fatalf("open after the commit: %v", err)
	}
	if s.RolledBack() != "" {
		t.Errorf("still rolled back: %s", s.RolledBack())
	}
	s.Close()
}

// TestOpenRefusesDamagedPages: a page id pointing outside the file, or at
// a page already in the tree, is refused before bbolt maps the file, for
// read-only opens too.
func TestOpenRefusesDamagedPages(t *testing.T) {
	path, _, ps := storeWithCommits(t)
	// The header of the first page after the metas, whatever tree page it
	// is, no longer names it: a misrouted pointer looks the same.
	for off := int64(2 * ps); off < int64(2*ps+16); off++ {
		flipByte(t, path, off)
	}
	for _, ro := range []bool{false, true} {
		_, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: ro})
		if !errors.Is(err, chunkstore.ErrDamaged) || !errors.Is(err, syscall.EIO) {
			t.Errorf("open (read-only %v) of a store with a damaged page: %v, want ErrDamaged", ro, err)
		}
	}
}

// TestLargeRawBodyReadFromFile: a large incompressible body is read with
// a pread of the file, not through bbolt's map; it reads back right
// after DropCaches, and a byte flipped in it on disk is found, not
// served.
func TestLargeRawBodyReadFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	s := openStore(t, path, chunkstore.Options{})
	data := randBytes(7, 1<<20)
	p, _ := put(t, s, data)
	if p.Codec != chunkstore.CodecRaw {
		t.Fatalf("random data stored with codec %d", p.Codec)
	}
	if err := s.DropCaches(); err != nil {
		t.Fatalf("DropCaches: %v", err)
	}
	if got, err := get(s, p.ID); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after DropCaches: %v, equal %v", err, bytes.Equal(got, data))
	}
	s.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := bytes.Index(raw, data[1000:1064])
	if off < 0 {
		t.Fatal("body not found in the file")
	}
	flipByte(t, path, int64(off+10))
	s = openStore(t, path, chunkstore.Options{})
	defer s.Close()
	if _, err := get(s, p.ID); !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Fatalf("read of a damaged body: %v, want ErrCorrupt", err)
	}
}
