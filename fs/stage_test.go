package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// stagedNow returns how many slots are staged and how many pool frames
// are taken.
func stagedNow(f *FS) (staged, frames int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.staged, f.bufCount
}

// TestStaged checks the spill writer (stage.go): whole-chunk writes of a
// long write answer from a pool frame while their spill writes wait, read
// back from the frame meanwhile, can be overwritten and truncated away
// before their spill writes end (their spill slots are then freed only
// after), make an fsync wait for them, and, if their spill write fails,
// are committed from the frame. The spill writer is held up by a gate.
func TestStaged(t *testing.T) {
	const cs = 64 << 10
	chunks := func(seed uint64, n int) []byte { return seededBytes(seed, n*cs) }
	// start opens a workspace with a pool of 16 chunks, its spill
	// writer gated, and writes n chunks to a new file in whole-chunk
	// writes: past half the pool they are staged, up to maxStaged.
	start := func(t *testing.T, n int) (*harness, Ino, []byte, chan struct{}) {
		h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 16 * cs, SpillBytes: 64 * cs, CommitInterval: time.Hour})
		gate := make(chan struct{})
		h.f.mu.Lock()
		h.f.stageGate = gate
		h.f.mu.Unlock()
		t.Cleanup(func() {
			select {
			case <-gate:
			default:
				close(gate)
			}
		})
		ino := h.create(RootIno, "f", 0o100644).Ino
		model := chunks(1, n)
		for i := 0; i < n; i++ {
			h.write(ino, int64(i*cs), model[i*cs:(i+1)*cs])
		}
		return h, ino, model, gate
	}

	t.Run("read, overwrite and truncate while staged", func(t *testing.T) {
		h, ino, model, gate := start(t, 20)
		staged, _ := stagedNow(h.f)
		if staged != maxStaged {
			t.Fatalf("%d chunks staged with the spill writer held; want %d", staged, maxStaged)
		}
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("staged chunks read back wrong")
		}
		h.f.mu.Lock()
		var idx []int
		for i, s := range h.f.nodes[ino].slots {
			if s.staged {
				idx = append(idx, int(i))
			}
		}
		h.f.mu.Unlock()
		slices.Sort(idx)
		// Overwrite the first staged chunk while its spill write waits;
		// truncate away the last; the others stay staged.
		repl := chunks(2, 1)
		h.write(ino, int64(idx[0]*cs), repl)
		copy(model[idx[0]*cs:], repl)
		size := uint64(idx[len(idx)-1] * cs)
		if _, err := h.f.SetAttr(Caller{}, ino, SetAttrIn{Size: &size}); err != nil {
			t.Fatal(err)
		}
		model = model[:size]
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after the overwrite and the truncation differ")
		}
		if staged, _ := stagedNow(h.f); staged != maxStaged {
			t.Errorf("%d staged after the overwrite and truncation; want %d, their spill writes still held", staged, maxStaged)
		}
		// An fsync waits for the spill writes it needs.
		done := make(chan error, 1)
		go func() { done <- h.f.Fsync(context.Background(), ino) }()
		select {
		case err := <-done:
			t.Fatalf("fsync returned (%v) while its chunks' spill writes were held", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		h.sync()
		staged, frames := stagedNow(h.f)
		if staged != 0 || frames != 0 {
			t.Errorf("after the sync: %d staged, %d pool frames taken", staged, frames)
		}
		h.f.mu.Lock()
		total := h.f.stagedTotal
		h.f.mu.Unlock()
		if total < maxStaged {
			t.Errorf("the spill writer made %d writes", total)
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after reopen differ")
		}
		h.closeFS()
	})

	t.Run("spill write fails", func(t *testing.T) {
		h, ino, model, gate := start(t, 12)
		if staged, _ := stagedNow(h.f); staged == 0 {
			t.Fatal("nothing staged")
		}
		// Writes to the spill file fail from now on: its descriptor is
		// swapped for a read-only one.
		h.f.mu.Lock()
		sp := h.f.spill
		ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", sp.file.Fd()))
		if err != nil {
			h.f.mu.Unlock()
			t.Fatal(err)
		}
		rw := sp.file
		sp.file = ro
		h.f.mu.Unlock()
		t.Cleanup(func() { rw.Close() })
		close(gate)
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("chunks read back wrong after their spill writes failed")
		}
		h.sync()
		h.f.mu.Lock()
		slots := h.f.spillSlots
		h.f.mu.Unlock()
		if slots != 0 {
			t.Error("spilling goes on after a failed spill write")
		}
		if !strings.Contains(h.logs.String(), "spill file write failed") {
			t.Error("the failed spill write was not logged")
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after reopen differ")
		}
		h.closeFS()
	})
}
