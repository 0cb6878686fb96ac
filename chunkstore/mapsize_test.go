package chunkstore_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/procmaps"
)

// storeMaps lists this process's mappings of the file at path.
func storeMaps(t *testing.T, path string) []procmaps.Mapping {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	ms, err := procmaps.Of("self", st.Dev, st.Ino)
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return ms
}

// TestMapPastFile checks that a store opened for writing is
// mapped far past its file, so that commits growing the file do not make
// bbolt remap: a remap copies every key and value of the commit under
// way onto the heap (with a 1 GiB map, eight writers of 512 MiB crossed
// it four times and peaked 47 MiB higher).
func TestMapPastFile(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("the map is 1 GiB on a 32-bit machine")
	}
	s, path := newStore(t)
	before := storeMaps(t, path)
	if len(before) != 1 {
		t.Fatalf("store mapped %d times (%v), want once", len(before), before)
	}
	if size := before[0].End - before[0].Start; size < 64<<30 {
		t.Fatalf("store mapped over %d bytes, want at least 64 GiB", size)
	}
	// 48 MiB in commits of 4 MiB: the file grows past the map bbolt
	// would have made for it on its own (it doubles from 32 KiB).
	data := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for range 12 {
		if err := s.Update(func(tx *chunkstore.Tx) error {
			for range 4 {
				for i := range data {
					data[i] = byte(r.Uint32())
				}
				p := chunkstore.Prepare(data, nil)
				if _, err := tx.Put(&p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 48<<20 {
		t.Fatalf("store is %d bytes after 48 MiB of chunks", fi.Size())
	}
	if after := storeMaps(t, path); len(after) != 1 || after[0] != before[0] {
		t.Fatalf("store's map moved from %v to %v: bbolt remapped", before, after)
	}
}
