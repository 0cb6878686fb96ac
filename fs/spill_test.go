package fs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
)

// TestSpill writes files larger than the buffer pool, so that prepared
// chunks go to the spill file, and checks every read against a model
// while the chunks wait there (read from the spill file), across
// overwrites, truncations, removals and fsyncs, then after reopening;
// fsck must find the store clean.
func TestSpill(t *testing.T) {
	const cs = 64 << 10
	for _, seed := range []uint64{1, 2, 3} {
		h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: 24 * cs})
		rng := rand.New(rand.NewPCG(seed, 19))
		ctx := context.Background()
		type file struct {
			ino   Ino
			model []byte
		}
		var files []*file
		spilled := 0
		for i := range 3 {
			files = append(files, &file{ino: h.create(RootIno, string(rune('a'+i)), 0o100644).Ino})
		}
		for step := 0; step < 120; step++ {
			fl := files[rng.IntN(len(files))]
			switch r := rng.IntN(100); {
			case r < 45: // a long sequential write in whole chunks
				off := rng.IntN(4) * cs
				n := (rng.IntN(20) + 4) * cs
				h.writeModel(&fl.model, fl.ino, off, n, rng)
			case r < 55: // a write of part of a chunk
				h.writeModel(&fl.model, fl.ino, rng.IntN(len(fl.model)+cs), rng.IntN(3*cs)+1, rng)
			case r < 62: // truncate
				size := rng.IntN(len(fl.model) + cs)
				sz := uint64(size)
				if _, err := h.f.SetAttr(Caller{}, fl.ino, SetAttrIn{Size: &sz}); err != nil {
					t.Fatal(err)
				}
				if size < len(fl.model) {
					fl.model = fl.model[:size]
				} else {
					fl.model = append(fl.model, make([]byte, size-len(fl.model))...)
				}
			case r < 85: // reads
				off := rng.IntN(len(fl.model) + 1)
				n := rng.IntN(5 * cs)
				buf := make([]byte, n)
				got, err := h.f.Read(ctx, fl.ino, int64(off), buf)
				if err != nil {
					t.Fatal(err)
				}
				if want := fl.model[off:min(off+n, len(fl.model))]; !bytes.Equal(buf[:got], want) {
					t.Fatalf("seed %d step %d: read %d at %d differs from the model", seed, step, n, off)
				}
			case r < 90:
				if err := h.f.Fsync(ctx, fl.ino); err != nil {
					t.Fatal(err)
				}
			case r < 93: // replace the file by a new one
				name := string(rune('a' + slicesIndex(files, fl)))
				if err := h.f.Unlink(RootIno, name); err != nil {
					t.Fatal(err)
				}
				fl.ino, fl.model = h.create(RootIno, name, 0o100644).Ino, nil
			case r < 96:
				h.sync()
			default:
				spilled += h.spilled()
				h.reopen()
			}
		}
		for _, fl := range files {
			if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
				t.Fatalf("seed %d: final contents differ from the model", seed)
			}
		}
		spilled += h.spilled()
		h.reopen()
		for _, fl := range files {
			if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
				t.Fatalf("seed %d: contents after reopen differ from the model", seed)
			}
		}
		if spilled == 0 {
			t.Errorf("seed %d: nothing was spilled", seed)
		}
	}
}

func (h *harness) spilled() int {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.spilledTotal
}

func slicesIndex[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
