package fs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestPartialWritesOverStoredChunks drives page-sized and odd writes,
// truncations and reads over chunks already in the store, where a slot
// shows its stored base through the pages it has not written, and
// compares every read with a model. Chunks are 64 KiB (16 pages) so that
// writes cover whole pages, parts of pages and several chunks.
func TestPartialWritesOverStoredChunks(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		h := newHarness(t, Options{ChunkSize: 64 << 10})
		rng := rand.New(rand.NewPCG(seed, 7))
		ctx := context.Background()
		ino := h.create(RootIno, "f", 0o100644).Ino
		model := make([]byte, 1<<20)
		for i := range model {
			model[i] = byte(rng.IntN(250) + 1)
		}
		h.write(ino, 0, model)
		h.sync()
		for step := 0; step < 400; step++ {
			switch r := rng.IntN(100); {
			case r < 45: // page-aligned writes of whole pages
				off := rng.IntN(len(model)/pageSize+8) * pageSize
				n := (rng.IntN(3) + 1) * pageSize
				h.writeModel(&model, ino, off, n, rng)
			case r < 65: // odd writes
				off := rng.IntN(len(model) + 5000)
				h.writeModel(&model, ino, off, rng.IntN(9000)+1, rng)
			case r < 72: // truncate, shrinking or growing
				size := rng.IntN(len(model) + 100000)
				sz := uint64(size)
				if _, err := h.f.SetAttr(Caller{}, ino, SetAttrIn{Size: &sz}); err != nil {
					t.Fatal(err)
				}
				if size < len(model) {
					model = model[:size]
				} else {
					model = append(model, make([]byte, size-len(model))...)
				}
			case r < 90: // reads
				off := rng.IntN(len(model) + 1)
				n := rng.IntN(200000)
				buf := make([]byte, n)
				got, err := h.f.Read(ctx, ino, int64(off), buf)
				if err != nil {
					t.Fatal(err)
				}
				want := model[off:min(off+n, len(model))]
				if !bytes.Equal(buf[:got], want) {
					t.Fatalf("seed %d step %d: read %d at %d differs from the model", seed, step, n, off)
				}
			case r < 97:
				h.sync()
			default:
				h.reopen()
			}
		}
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatalf("seed %d: final contents differ from the model", seed)
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatalf("seed %d: contents after reopen differ from the model", seed)
		}
	}
}

func (h *harness) writeModel(model *[]byte, ino Ino, off, n int, rng *rand.Rand) {
	h.t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	h.write(ino, int64(off), data)
	if end := off + n; end > len(*model) {
		*model = append(*model, make([]byte, end-len(*model))...)
	}
	copy((*model)[off:], data)
}

// TestSparseSlots checks the cost and bounds of small writes over stored
// chunks: they take no chunk buffer (only pages), the pages stay within
// their budget while several writers scatter 4 KiB writes over a file
// several times the budget, and what was written reads back, before and
// after the sparse slots are merged, fsynced and reopened.
func TestSparseSlots(t *testing.T) {
	const cs = 64 << 10
	const size = 4 << 20 // 64 chunks
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, PageBytes: 64 * pageSize})
	ctx := context.Background()
	ino := h.create(RootIno, "f", 0o100644).Ino
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range model {
		model[i] = byte(rng.IntN(250) + 1)
	}
	h.write(ino, 0, model)
	h.sync()

	// One page over a stored chunk: a page, no buffer, and reads see
	// the page and the base around it.
	page := bytes.Repeat([]byte{0xee}, pageSize)
	h.write(ino, 3*cs+2*pageSize, page)
	copy(model[3*cs+2*pageSize:], page)
	h.f.mu.Lock()
	bufs, pages := h.f.bufCount, h.f.pageCount
	h.f.mu.Unlock()
	if bufs != 0 || pages != 1 {
		t.Fatalf("after one 4 KiB write over a stored chunk: %d buffers, %d pages; want 0 and 1", bufs, pages)
	}
	if got := h.read(ino, 3*cs, cs); !bytes.Equal(got, model[3*cs:4*cs]) {
		t.Fatalf("sparse chunk reads wrong at %d", firstDiff(got, model[3*cs:4*cs]))
	}

	// Writers on disjoint quarters, page-sized and odd writes, while a
	// reader checks the quarters nobody writes to any more.
	var wg sync.WaitGroup
	maxPages := 0
	var mu sync.Mutex
	const writers = 4
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 3))
			lo := w * size / writers
			for range 300 {
				off := lo + r.IntN(size/writers/pageSize)*pageSize
				n := pageSize
				if r.IntN(4) == 0 { // an odd write, perhaps across pages
					off += r.IntN(pageSize)
					n = 1 + r.IntN(2*pageSize)
					n = min(n, lo+size/writers-off)
				}
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(r.IntN(256))
				}
				if _, err := h.f.Write(ctx, ino, int64(off), data, false); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				copy(model[off:], data)
				mu.Unlock()
				h.f.mu.Lock()
				p := h.f.pageCount
				h.f.mu.Unlock()
				mu.Lock()
				maxPages = max(maxPages, p)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Each writer may fill up to two pages past the budget (the partial
	// pages at a write's ends, read while mu is released).
	if limit := h.f.pageMax + 2*writers; maxPages > limit {
		t.Errorf("%d pages in use, budget %d", maxPages, h.f.pageMax)
	}
	if got := h.readAll(ino); !bytes.Equal(got, model) {
		t.Fatalf("contents differ from the model at %d", firstDiff(got, model))
	}
	if err := h.f.Fsync(ctx, ino); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	pages = h.f.pageCount
	h.f.mu.Unlock()
	if pages != 0 {
		t.Errorf("%d pages in use after fsync", pages)
	}
	h.reopen()
	if got := h.readAll(ino); !bytes.Equal(got, model) {
		t.Fatalf("contents after reopen differ from the model at %d", firstDiff(got, model))
	}
	h.fsckOpen()
}
