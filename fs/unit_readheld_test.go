package fs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
)

// TestReadHeld checks that a read lying in one stored chunk read whole
// lends the chunk cache's bytes (and that they are the file's), that
// other reads copy into dest as Read does, and that every lent entry is
// given back.
func TestReadHeld(t *testing.T) {
	const cs = 64 << 10
	tests := []struct {
		name     string
		off, n   int
		wantHeld bool
	}{
		{"a whole chunk from its start", 0, cs, true},
		{"inside a chunk, sequential", 0, 4096, true},
		{"across two chunks", cs - 100, 200, false},
		{"past the end of the file", 3*cs - 10, 100, false},
		{"a small read at random", 2*cs + 5000, 4096, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ChunkSize: cs})
			ctx := context.Background()
			ino := h.create(RootIno, "f", 0o100644).Ino
			data := make([]byte, 3*cs)
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range data {
				data[i] = byte(rng.IntN(256))
			}
			h.write(ino, 0, data)
			h.sync()
			h.reopen() // an empty cache
			if _, err := h.f.Open(ino); err != nil {
				t.Fatal(err)
			}
			defer h.f.Release(ino)
			dest := make([]byte, tc.n)
			got, release, err := h.f.ReadHeld(ctx, ino, int64(tc.off), dest)
			if err != nil {
				t.Fatal(err)
			}
			want := data[tc.off:min(tc.off+tc.n, len(data))]
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes at %d: wrong bytes (%d)", tc.n, tc.off, len(got))
			}
			if held := release != nil; held != tc.wantHeld {
				t.Fatalf("lent: %v, want %v", held, tc.wantHeld)
			}
			if release == nil {
				if len(got) > 0 && &got[0] != &dest[0] {
					t.Error("a copied read is not in dest")
				}
				return
			}
			if len(got) > 0 && &got[0] == &dest[0] {
				t.Error("a lent read is in dest")
			}
			release()
			h.f.cache.mu.Lock()
			defer h.f.cache.mu.Unlock()
			for id, e := range h.f.cache.byID {
				if e.refs != 0 {
					t.Errorf("cache entry %s still held %d times after release", id.Short(), e.refs)
				}
			}
		})
	}
}
