package fs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// heavyRecorder is an Options.Heavy that counts what it is told.
type heavyRecorder struct {
	begun, active, bytes atomic.Int64
}

func (r *heavyRecorder) Begin(n int) {
	r.begun.Add(1)
	r.active.Add(1)
	r.bytes.Add(int64(n))
}

func (r *heavyRecorder) End() { r.active.Add(-1) }

// TestHeavy checks that the background work Options.Heavy is told of
// (internal/procs raises GOMAXPROCS for it) is reported with its bytes,
// and ended: preparing chunks, a ranged read of the store, and decoding
// chunks read ahead.
func TestHeavy(t *testing.T) {
	const cs = 64 << 10
	rec := &heavyRecorder{}
	h := newHarness(t, Options{ChunkSize: cs, Heavy: rec})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := seededBytes(7, 32*cs)
	for off := 0; off < len(data); off += cs {
		h.write(ino, int64(off), data[off:off+cs]) // each below streamWrite: only the workers count
	}
	h.sync()
	if got := rec.bytes.Load(); got < int64(len(data)) {
		t.Errorf("writing and syncing %d bytes: %d bytes of heavy work reported, want all of them", len(data), got)
	}
	if a := rec.active.Load(); a != 0 {
		t.Errorf("after a sync: %d heavy works not ended", a)
	}

	h.reopen() // an empty cache
	// A small read at random reads only the blocks it covers, and counts
	// as rangedWeight: its handler blocks in a pread.
	if _, err := h.f.Open(ino); err != nil {
		t.Fatal(err)
	}
	bytesBefore := rec.bytes.Load()
	small := make([]byte, 4096)
	if _, err := h.f.Read(context.Background(), ino, 20*cs+8192, small); err != nil {
		t.Fatal(err)
	}
	if got := rec.bytes.Load() - bytesBefore; got != rangedWeight {
		t.Errorf("a 4 KiB read at random: %d bytes of heavy work reported, want %d", got, rangedWeight)
	}
	h.f.Release(ino)

	h.reopen() // an empty cache: a sequential read has chunks read ahead
	before := rec.begun.Load()
	if _, err := h.f.Open(ino); err != nil {
		t.Fatal(err)
	}
	defer h.f.Release(ino)
	buf := make([]byte, cs)
	for off := 0; off < 4*cs; off += cs {
		if _, err := h.f.Read(context.Background(), ino, int64(off), buf); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for rec.begun.Load() == before || rec.active.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a sequential read: %d heavy works begun (%d before), %d not ended; want read-ahead decodes begun and ended", rec.begun.Load(), before, rec.active.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
