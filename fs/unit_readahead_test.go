package fs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// cachedIDs reports which of ids the chunk cache holds.
func cachedIDs(f *FS, ids []chunkstore.ID) []bool {
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	out := make([]bool, len(ids))
	for i, id := range ids {
		out[i] = f.cache.byID[id] != nil
	}
	return out
}

// storedIDs returns the IDs of a committed file's chunks, in order.
func storedIDs(t *testing.T, f *FS, ino Ino, chunks int) []chunkstore.ID {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]chunkstore.ID, chunks)
	for i := range ids {
		id, ok, err := f.storedChunkLocked(n, uint64(i))
		if err != nil || !ok {
			t.Fatalf("chunk %d not stored: %v", i, err)
		}
		ids[i] = id
	}
	return ids
}

// TestReadAhead checks that a sequential read has the prefetcher decode
// the chunks after it, that a read elsewhere does not, and that what is
// read is right either way.
func TestReadAhead(t *testing.T) {
	const cs = 64 << 10
	k := readAheadChunks
	chunks := k + 4
	// span returns chunks a to b, both included.
	span := func(a, b int) []int {
		var out []int
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
		return out
	}
	tests := []struct {
		name      string
		reads     [][2]int // offset, length in bytes
		wantAhead []int    // chunks that must end up cached without being read
		wantCold  []int    // chunks that must not be cached
	}{
		{"from the start", [][2]int{{0, cs}}, span(1, k), span(k+1, chunks-1)},
		{"sequential small reads", [][2]int{{0, 16 << 10}, {16 << 10, 16 << 10}}, span(1, k), span(k+1, chunks-1)},
		{"sequential on", [][2]int{{0, cs}, {cs, cs}, {2 * cs, cs}}, span(3, k+2), span(k+3, chunks-1)},
		{"a jump is not sequential", [][2]int{{0, 4096}, {3 * cs, 4096}}, append([]int{1, 2}, span(4, k)...), span(k+1, chunks-1)},
		{"large reads a little out of order", [][2]int{{0, cs}, {2 * cs, cs}, {cs, cs}}, span(3, k+2), span(k+3, chunks-1)},
		{"one small read next to the last is not sequential", [][2]int{{3 * cs, 4096}, {3*cs + 4096, 4096}}, nil, append(span(0, 2), span(4, chunks-1)...)},
		{"two small reads next to the last are", [][2]int{{3 * cs, 4096}, {3*cs + 4096, 4096}, {3*cs + 8192, 4096}}, span(4, k+3), span(0, 2)},
		{"small reads near each other", [][2]int{{3*cs + 100, 4096}, {3*cs + 5000, 4096}}, nil, append(span(0, 2), span(4, chunks-1)...)},
		{"the last chunk has nothing after it", [][2]int{{(chunks - 1) * cs, cs}}, nil, span(0, chunks-2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{ChunkSize: cs})
			ctx := context.Background()
			ino := h.create(RootIno, "f", 0o100644).Ino
			data := make([]byte, chunks*cs)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range data {
				data[i] = byte(rng.IntN(256))
			}
			h.write(ino, 0, data)
			h.sync()
			h.reopen() // an empty cache
			ids := storedIDs(t, h.f, ino, chunks)
			// Held open, as the mount and the file API do: a node nobody
			// holds is dropped after each call, and its read position with it.
			if _, err := h.f.Open(ino); err != nil {
				t.Fatal(err)
			}
			defer h.f.Release(ino)
			read := map[int]bool{}
			for _, r := range tc.reads {
				buf := make([]byte, r[1])
				n, err := h.f.Read(ctx, ino, int64(r[0]), buf)
				if err != nil || !bytes.Equal(buf[:n], data[r[0]:r[0]+r[1]]) {
					t.Fatalf("read %d at %d: %d bytes, %v, or wrong bytes", r[1], r[0], n, err)
				}
				for c := r[0] / cs; c <= (r[0]+r[1]-1)/cs; c++ {
					read[c] = true
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				got := cachedIDs(h.f, ids)
				all := true
				for _, c := range tc.wantAhead {
					all = all && got[c]
				}
				if all {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("chunks %v not read ahead: cached %v", tc.wantAhead, got)
				}
				time.Sleep(time.Millisecond)
			}
			// Give a wrong read-ahead the time to show.
			time.Sleep(20 * time.Millisecond)
			got := cachedIDs(h.f, ids)
			for _, c := range tc.wantCold {
				if got[c] && !read[c] {
					t.Errorf("chunk %d was read ahead: cached %v", c, got)
				}
			}
		})
	}
}

// TestConcurrentReadsDecodeOnce reads one cold chunk from many goroutines
// at once: they must all get its bytes, and it must be decoded once.
func TestConcurrentReadsDecodeOnce(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := bytes.Repeat([]byte("0123456789abcdef"), cs/16)
	h.write(ino, 0, data)
	h.sync()
	h.reopen()
	id := storedIDs(t, h.f, ino, 1)[0]

	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			got, release, err := h.f.loadChunk(id)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			if !bytes.Equal(got, data) {
				t.Error("wrong bytes")
			}
		})
	}
	wg.Wait()
	h.f.cache.mu.Lock()
	defer h.f.cache.mu.Unlock()
	if len(h.f.cache.loading) != 0 {
		t.Errorf("%d claims left", len(h.f.cache.loading))
	}
	if h.f.cache.decoded != 1 {
		t.Errorf("the chunk was decoded %d times", h.f.cache.decoded)
	}
}

// TestReadAheadOfDeletedChunk overwrites a file while its chunks are
// queued for read-ahead: the prefetcher must drop what it cannot find,
// and reads must see the new bytes.
func TestReadAheadOfDeletedChunk(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs})
	ctx := context.Background()
	ino := h.create(RootIno, "f", 0o100644).Ino
	for round := range 20 {
		data := bytes.Repeat([]byte{byte(round + 1)}, 4*cs)
		data[0] = 0xff // not a hole
		h.write(ino, 0, data)
		h.sync()
		buf := make([]byte, 4*cs)
		for off := 0; off < len(buf); off += cs {
			if _, err := h.f.Read(ctx, ino, int64(off), buf[off:off+cs]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(buf, data) {
			t.Fatalf("round %d: wrong bytes", round)
		}
	}
}

// TestRandomReadsReadBlocks: small reads that are not sequential read
// only the verified blocks they need (chunkstore.Tx.ReadAt), decoding no
// chunk; sequential reads still decode whole chunks and read ahead; a
// chunk in the cache serves small reads from there.
func TestRandomReadsReadBlocks(t *testing.T) {
	const cs = 1 << 20
	h := newHarness(t, Options{ChunkSize: cs})
	ctx := context.Background()
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, 4*cs-12345)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	h.write(ino, 0, data)
	h.sync()
	h.reopen()
	if _, err := h.f.Open(ino); err != nil {
		t.Fatal(err)
	}
	defer h.f.Release(ino)
	reads := 0
	for i := range 200 {
		off := rng.IntN(len(data)-1) + 1
		n := []int{4096, 1, 16 << 10, 60 << 10}[i%4] // below readAheadMin
		buf := make([]byte, n)
		got, err := h.f.Read(ctx, ino, int64(off), buf)
		want := data[off:min(off+n, len(data))]
		if err != nil || !bytes.Equal(buf[:got], want) {
			t.Fatalf("read %d at %d: %d bytes, %v, or wrong bytes", n, off, got, err)
		}
		reads += (off+len(want)-1)/cs - off/cs + 1
	}
	if d := h.f.ChunksDecoded(); d != 0 {
		t.Errorf("random small reads decoded %d chunks", d)
	}
	if r := h.f.RangedReads(); r != uint64(reads) {
		t.Errorf("%d ranged reads of chunks, want %d", r, reads)
	}
	buf := make([]byte, cs)
	for off := 0; off < 2*cs; off += cs {
		if n, err := h.f.Read(ctx, ino, int64(off), buf); err != nil || !bytes.Equal(buf[:n], data[off:off+cs]) {
			t.Fatalf("sequential read at %d: %v", off, err)
		}
	}
	if d := h.f.ChunksDecoded(); d < 2 {
		t.Errorf("sequential reads decoded %d chunks, want 2 or more", d)
	}
	r, d := h.f.RangedReads(), h.f.ChunksDecoded()
	small := make([]byte, 4096)
	if n, err := h.f.Read(ctx, ino, cs/2+77, small); err != nil || !bytes.Equal(small[:n], data[cs/2+77:cs/2+77+4096]) {
		t.Fatalf("small read of a cached chunk: %v", err)
	}
	if h.f.RangedReads() != r || h.f.ChunksDecoded() != d {
		t.Errorf("a small read of a cached chunk read the store")
	}
}
