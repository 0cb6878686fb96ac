package fs

import (
	"bytes"
	"context"
	"math/rand/v2"
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
