package chunkstore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// TestLeafReads checks that raw bodies with an outboard are read by pread
// of their leaf (or from the map where the pages are cached, never
// faulting it in), whole and in ranges,
// and that other bodies still read right through the map.
func TestLeafReads(t *testing.T) {
	s, _ := newStore(t)
	full, _ := put(t, s, randBytes(31, 1<<20))
	short, _ := put(t, s, randBytes(32, 700_001))
	text, _ := put(t, s, textBytes(3, 1<<20))    // compressed: through the map
	small, _ := put(t, s, randBytes(33, 32<<10)) // no outboard: through the map
	want := map[chunkstore.ID][]byte{full.ID: randBytes(31, 1<<20), short.ID: randBytes(32, 700_001),
		text.ID: textBytes(3, 1<<20), small.ID: randBytes(33, 32<<10)}
	tests := []struct {
		name string
		id   chunkstore.ID
		leaf bool
	}{
		{"1 MiB raw", full.ID, true},
		{"700,001 bytes raw", short.ID, true},
		{"compressed", text.ID, false},
		{"32 KiB raw", small.ID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.LeafReads()
			got, err := get(s, tt.id)
			if err != nil || !bytes.Equal(got, want[tt.id]) {
				t.Fatalf("Get: %d bytes, %v", len(got), err)
			}
			if tt.leaf {
				r, err := readAt(s, tt.id, 300_000, 4096)
				if err != nil || !bytes.Equal(r, want[tt.id][300_000:304_096]) {
					t.Fatalf("ReadAt: %d bytes, %v", len(r), err)
				}
				if r, err := readAt(s, tt.id, 1<<20, 10); err != nil || len(r) != 0 {
					t.Fatalf("ReadAt past the end: %d bytes, %v", len(r), err)
				}
			}
			n := s.LeafReads() - before
			if tt.leaf && n != 3 || !tt.leaf && n != 0 {
				t.Errorf("%d reads by leaf, want %v", n, tt.leaf)
			}
		})
	}
}

// TestLeafReadDamage flips a byte of a body's plaintext in the file: a
// whole read and a range over it are ErrCorrupt, a range elsewhere in
// the chunk still reads (it verifies through the outboard).
func TestLeafReadDamage(t *testing.T) {
	path, data, p := closedStore(t, 41)
	const at = 600_000
	damage(t, path, data[at:at+64], 10, 0x20)
	log, logs := newLogger()
	s := openStore(t, path, chunkstore.Options{Logger: log, MustExist: true})
	if _, err := get(s, p.ID); !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Errorf("Get of a damaged body: %v, want ErrCorrupt", err)
	}
	if _, err := readAt(s, p.ID, at, 4096); !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Errorf("ReadAt over the damage: %v, want ErrCorrupt", err)
	}
	if r, err := readAt(s, p.ID, 100_000, 4096); err != nil || !bytes.Equal(r, data[100_000:104_096]) {
		t.Errorf("ReadAt away from the damage: %d bytes, %v", len(r), err)
	}
	if !bytes.Contains(logs.Bytes(), []byte(p.ID.String())) {
		t.Errorf("the log does not name the chunk: %s", logs)
	}
}

// TestOutboardCache checks that ReadAt keeps a chunk's outboard after its
// first read, that DropCaches forgets it, and that a cached outboard that
// does not verify (here: another chunk's) is dropped and the range read
// from the leaf again, served right and without a report of damage.
func TestOutboardCache(t *testing.T) {
	log, logs := newLogger()
	s := openStore(t, filepath.Join(t.TempDir(), "ws.cfs"), chunkstore.Options{Logger: log})
	a, _ := put(t, s, randBytes(51, 1<<20))
	b, _ := put(t, s, randBytes(52, 1<<20))
	data := randBytes(51, 1<<20)
	if s.CachedOutboard(a.ID) != nil {
		t.Fatal("an outboard cached before any read")
	}
	for _, off := range []int{0, 500_000, 500_000} {
		if r, err := readAt(s, a.ID, off, 4096); err != nil || !bytes.Equal(r, data[off:off+4096]) {
			t.Fatalf("ReadAt at %d: %d bytes, %v", off, len(r), err)
		}
		if s.CachedOutboard(a.ID) == nil {
			t.Fatalf("no outboard cached after a read at %d", off)
		}
	}
	if err := s.DropCaches(); err != nil {
		t.Fatal(err)
	}
	if s.CachedOutboard(a.ID) != nil {
		t.Fatal("outboard still cached after DropCaches")
	}
	if _, err := readAt(s, b.ID, 0, 10); err != nil {
		t.Fatal(err)
	}
	s.CacheOutboard(a.ID, bytes.Clone(s.CachedOutboard(b.ID)))
	if r, err := readAt(s, a.ID, 700_000, 4096); err != nil || !bytes.Equal(r, data[700_000:704_096]) {
		t.Fatalf("ReadAt through a wrong cached outboard: %d bytes, %v", len(r), err)
	}
	if got := s.CachedOutboard(a.ID); bytes.Equal(got, s.CachedOutboard(b.ID)) {
		t.Error("the wrong outboard is still cached")
	}
	if logs.Len() > 0 {
		t.Errorf("a wrong cached outboard was logged as damage: %s", logs)
	}
}

// TestReadAtResident reads ranges of a chunk whose pages the kernel
// caches (through bbolt's map) and, after they are evicted, by pread:
// both serve the right bytes, and damage is caught on either path.
func TestReadAtResident(t *testing.T) {
	path, data, p := closedStore(t, 51)
	evict := func(t *testing.T, s *chunkstore.Store) {
		t.Helper()
		if err := s.DropCaches(); err != nil {
			t.Fatal(err)
		}
	}
	warm := func(t *testing.T, _ *chunkstore.Store) {
		t.Helper()
		if _, err := os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		cache  func(*testing.T, *chunkstore.Store)
		mapped bool
	}{
		{"cached", warm, true},
		{"evicted", evict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, path, chunkstore.Options{MustExist: true})
			for _, off := range []int{0, 300_000, 1<<20 - 4096} {
				tt.cache(t, s)
				before := s.MappedReads()
				r, err := readAt(s, p.ID, off, 4096)
				if err != nil || !bytes.Equal(r, data[off:off+4096]) {
					t.Fatalf("ReadAt at %d: %d bytes, %v", off, len(r), err)
				}
				if got := s.MappedReads() - before; got != 0 != tt.mapped {
					t.Errorf("ReadAt at %d: %d reads through the map, want them %v", off, got, tt.mapped)
				}
			}
		})
	}

	// Damage in the page cache, read through the map, is caught.
	const at = 500_000
	damage(t, path, data[at:at+64], 0, 1)
	s := openStore(t, path, chunkstore.Options{MustExist: true})
	before := s.MappedReads()
	if _, err := readAt(s, p.ID, at, 4096); !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Errorf("ReadAt over damage in the page cache: %v, want ErrCorrupt", err)
	}
	if s.MappedReads() == before {
		t.Error("the damaged range was not read through the map")
	}
}

// damage flips the bits mask of the byte off bytes into run, a run of
// plaintext stored raw, in the store file at path (through the page
// cache, so that a store open on it sees the change).
func damage(t *testing.T, path string, run []byte, off int, mask byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, run)
	if i < 0 {
		t.Fatal("plaintext not found in the file")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{b[i+off] ^ mask}, int64(i+off)); err != nil {
		t.Fatal(err)
	}
}

// closedStore stores 1 MiB of random bytes (randBytes(seed)) as a chunk
// in a new store, closes it, and returns its path, the bytes and the
// chunk.
func closedStore(t *testing.T, seed uint64) (string, []byte, chunkstore.Prepared) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	s := openStore(t, path, chunkstore.Options{})
	data := randBytes(seed, 1<<20)
	p, _ := put(t, s, data)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, data, p
}
