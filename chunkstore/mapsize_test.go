package chunkstore_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// storeMaps lists this process's mappings of the file at path, as
// "start-end" address ranges.
func storeMaps(t *testing.T, path string) []string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		fl := strings.Fields(line)
		if len(fl) >= 5 && fl[4] == strconv.FormatUint(st.Ino, 10) && strings.HasSuffix(line, path) {
			out = append(out, fl[0])
		}
	}
	return out
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
	var lo, hi uint64
	if _, err := fmt.Sscanf(before[0], "%x-%x", &lo, &hi); err != nil {
		t.Fatalf("parse %q: %v", before[0], err)
	}
	if size := hi - lo; size < 64<<30 {
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
