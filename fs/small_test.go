package fs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// TestSmallFilesNeverWait writes 10,000 small files back to back, each
// opened, written (some in two pieces, so that their frames grow) and
// released as a program writes them, with no commit but the ones the
// buffers start. Small frames hold them: no writer ever waits for room
// in the buffer budget (with a chunk buffer each, the 64th file waited
// for a commit), nothing goes through the spill file, the budget in use
// never passes what the files need, and the accounting returns to zero
// after a sync. Every file reads back before and after a reopen.
func TestSmallFilesNeverWait(t *testing.T) {
	const files = 10_000
	h := newHarness(t, Options{CommitInterval: time.Hour})
	rng := rand.New(rand.NewPCG(19, 1))
	contents := make([][]byte, files)
	inos := make([]Ino, files)
	dir := h.mkdir(RootIno, "d").Ino
	most := 0
	for i := range files {
		// 1 to 3,000 bytes: even if no commit ran, 10,000 of them fit
		// in the budget.
		data := make([]byte, 1+rng.IntN(3000))
		for j := range data {
			data[j] = byte(rng.IntN(255) + 1)
		}
		copy(data, fmt.Sprintf("file %d.", i))
		a := h.file(dir, fmt.Sprintf("f%05d", i))
		if _, err := h.f.Open(a.Ino); err != nil {
			t.Fatal(err)
		}
		if cut := rng.IntN(len(data) + 1); i%3 == 0 {
			h.write(a.Ino, 0, data[:cut])
			h.write(a.Ino, int64(cut), data[cut:])
		} else {
			h.write(a.Ino, 0, data)
		}
		h.f.Release(a.Ino)
		contents[i], inos[i] = data, a.Ino
		h.f.mu.Lock()
		most = max(most, h.f.takenLocked())
		h.f.mu.Unlock()
	}
	h.f.mu.Lock()
	waits, spilled, bufMax := h.f.bufWaits, h.f.spilledTotal, h.f.bufMax
	h.f.mu.Unlock()
	if waits != 0 {
		t.Errorf("writers waited for buffer room %d times", waits)
	}
	if spilled != 0 {
		t.Errorf("%d small chunks went through the spill file", spilled)
	}
	if limit := files * 3072; most > limit {
		t.Errorf("%d bytes of buffers in use at most, more than the files' frames (%d)", most, limit)
	}
	if most > bufMax*h.f.chunkSize {
		t.Errorf("%d bytes of buffers in use, budget %d", most, bufMax*h.f.chunkSize)
	}
	for i := 0; i < files; i += 97 {
		if got := h.readAll(inos[i]); !bytes.Equal(got, contents[i]) {
			t.Fatalf("file %d reads wrong before the sync", i)
		}
	}
	h.sync() // checks that no buffer, small frame or spill slot is held
	h.reopen()
	for i := range files {
		if got := h.readAll(inos[i]); !bytes.Equal(got, contents[i]) {
			t.Fatalf("file %d reads wrong after reopen", i)
		}
	}
	h.fsckOpen()
}

// TestSmallFrameGrowth writes files in pieces that make their small
// frames grow through the classes and into a chunk buffer, with gaps,
// overwrites, truncates, a whole-chunk write over a small slot, reads
// while dirty, prepared and committed, and fsyncs, against a model.
func TestSmallFrameGrowth(t *testing.T) {
	const cs = 64 << 10
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 16 * cs})
			if len(h.f.small.classes) == 0 {
				t.Fatal("no small classes at 64 KiB chunks")
			}
			largest := h.f.small.classes[len(h.f.small.classes)-1] - chunkstore.HeaderSize
			rng := rand.New(rand.NewPCG(seed, 7))
			type file struct {
				ino   Ino
				model []byte
			}
			var fs []*file
			for i := range 4 {
				a := h.file(RootIno, fmt.Sprintf("f%d", i))
				if _, err := h.f.Open(a.Ino); err != nil {
					t.Fatal(err)
				}
				fs = append(fs, &file{ino: a.Ino})
			}
			sawSmall := false
			for step := range 400 {
				fl := fs[rng.IntN(len(fs))]
				switch r := rng.IntN(100); {
				case r < 40: // append a small piece
					h.writeModel(&fl.model, fl.ino, len(fl.model), 1+rng.IntN(largest/3), rng)
				case r < 50: // write past the end, leaving a gap
					h.writeModel(&fl.model, fl.ino, len(fl.model)+rng.IntN(largest), 1+rng.IntN(600), rng)
				case r < 58: // overwrite inside
					if len(fl.model) > 0 {
						off := rng.IntN(len(fl.model))
						h.writeModel(&fl.model, fl.ino, off, 1+rng.IntN(min(2000, len(fl.model)-off)+1), rng)
					}
				case r < 62: // a whole chunk over the first
					h.writeModel(&fl.model, fl.ino, 0, cs, rng)
				case r < 68:
					size := rng.IntN(len(fl.model) + 100)
					sz := uint64(size)
					if _, err := h.f.SetAttr(Caller{}, fl.ino, SetAttrIn{Size: &sz}); err != nil {
						t.Fatal(err)
					}
					if size < len(fl.model) {
						fl.model = fl.model[:size]
					} else {
						fl.model = append(fl.model, make([]byte, size-len(fl.model))...)
					}
				case r < 85:
					if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
						t.Fatalf("step %d: read differs from the model at %d", step, firstDiff(got, fl.model))
					}
				case r < 90: // close and open again: the slot is sealed
					h.f.Release(fl.ino)
					if _, err := h.f.Open(fl.ino); err != nil {
						t.Fatal(err)
					}
				case r < 94:
					if err := h.f.Fsync(bg, fl.ino); err != nil {
						t.Fatal(err)
					}
				case r < 97:
					h.sync()
				default: // a new file in its place
					fl.model = nil
					sz := uint64(0)
					if _, err := h.f.SetAttr(Caller{}, fl.ino, SetAttrIn{Size: &sz}); err != nil {
						t.Fatal(err)
					}
				}
				h.f.mu.Lock()
				for _, fl := range fs {
					n := h.f.nodes[fl.ino]
					if n == nil {
						continue
					}
					for _, s := range n.slots {
						if s.small {
							sawSmall = true
							if s.frame == nil || len(s.buf) < s.hi {
								t.Fatalf("step %d: small slot with %d bytes of buffer below hi %d", step, len(s.buf), s.hi)
							}
						}
					}
				}
				h.f.mu.Unlock()
			}
			for i, fl := range fs {
				h.f.Release(fl.ino)
				if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
					t.Fatalf("file %d: final contents differ from the model", i)
				}
			}
			h.sync()
			h.reopen()
			for i, fl := range fs {
				if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
					t.Fatalf("file %d: contents after reopen differ from the model", i)
				}
			}
			if !sawSmall {
				t.Error("no slot ever had a small frame")
			}
			h.fsckOpen()
		})
	}
}

// TestSmallBudgetWait fills a small buffer budget with small files that
// nothing commits, so that the next writer must wait for room: it gets
// it (the wait starts a commit), and the files read back.
func TestSmallBudgetWait(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, CommitInterval: time.Hour})
	var inos []Ino
	var want [][]byte
	for i := range 400 { // 400 frames of 1.5 KiB: more than 8 chunks
		data := bytes.Repeat([]byte{byte(i%250 + 1)}, 1000+i)
		a := h.file(RootIno, fmt.Sprintf("f%d", i))
		h.write(a.Ino, 0, data)
		inos, want = append(inos, a.Ino), append(want, data)
	}
	h.f.mu.Lock()
	waits := h.f.bufWaits
	h.f.mu.Unlock()
	if waits == 0 {
		t.Error("no writer waited: the budget bounds nothing")
	}
	for i, ino := range inos {
		if got := h.readAll(ino); !bytes.Equal(got, want[i]) {
			t.Fatalf("file %d reads wrong", i)
		}
	}
	h.sync()
	h.reopen()
	for i, ino := range inos {
		if got := h.readAll(ino); !bytes.Equal(got, want[i]) {
			t.Fatalf("file %d reads wrong after reopen", i)
		}
	}
}
