package fs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"golang.org/x/sys/unix"
)

// holdState is what the hold looks like under mu: the held slots (each
// checked to be sealed, unhashed and in no queue), the spill's slots not
// in use (free, or released and waiting for cleanSpill), the slots with
// a worker or held, and holdOff.
//
// It first waits until no chunk is with a worker (the pool's, hashed and
// spilled meanwhile) or with the spill writer (stage.go), so that the
// counts hold still.
func holdState(t *testing.T, f *FS) (held, free, pending int, off bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); f.pending != len(f.held) || len(f.queue) > 0 || f.staged > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s on, %d chunks still with the workers, %d with the spill writer", f.pending-len(f.held), f.staged)
		}
		f.mu.Unlock()
		time.Sleep(time.Millisecond)
		f.mu.Lock()
	}
	for _, s := range f.held {
		if !s.held || s.state != slotSealed || !s.rawSpill || s.prep.ID != (chunkstore.ID{}) {
			t.Errorf("held slot %d of inode %d: held %v, state %d, raw %v, hashed %v", s.idx, s.ino, s.held, s.state, s.rawSpill, s.prep.ID != (chunkstore.ID{}))
		}
	}
	for _, s := range f.queue {
		if s.held {
			t.Errorf("slot %d of inode %d is both queued and held", s.idx, s.ino)
		}
	}
	if f.spill != nil {
		free = len(f.spill.free) + len(f.spill.released) + f.spill.cleaning
	}
	return len(f.held), free, f.pending, f.holdOff
}

// TestHoldSpilled checks the hold (holdLocked): chunks a long write puts
// straight into the spill file wait unhashed while writes go on, read
// back as written, are freed unhashed when overwritten or truncated
// away, go to the workers when half the spill is held, when anyone waits
// and when the writes pause, and are committed like any others.
// seededBytes returns n pseudo-random bytes from seed.
func seededBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

func TestHoldSpilled(t *testing.T) {
	const cs = 64 << 10
	chunks := func(seed uint64, n int) []byte { return seededBytes(seed, n*cs) }
	// writeChunks writes data in whole-chunk writes, as fio and cp do.
	writeChunks := func(h *harness, ino Ino, off int, data []byte) {
		for i := 0; i < len(data); i += cs {
			h.write(ino, int64(off+i), data[i:i+cs])
		}
	}

	// start opens a workspace with a pool of 8 chunks and a spill file
	// of spill, and writes n chunks to a new file in whole-chunk writes.
	start := func(t *testing.T, spill int, interval time.Duration, seed uint64, n int) (*harness, Ino, []byte) {
		h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: spill * cs, CommitInterval: interval})
		ino := h.create(RootIno, "f", 0o100644).Ino
		model := chunks(seed, n)
		writeChunks(h, ino, 0, model)
		return h, ino, model
	}

	t.Run("held while writing, freed when replaced", func(t *testing.T) {
		// No ticks: nothing is released by a pause.
		h, ino, model := start(t, 64, time.Hour, 1, 24)
		// Past half the pool (4 chunks), the chunks went straight to
		// the spill, where they wait.
		held, free, _, off := holdState(t, h.f)
		if held < 16 || off {
			t.Fatalf("%d chunks held after 24 written past half a pool of 8 (holdOff %v)", held, off)
		}
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("held chunks read back wrong")
		}
		// An overwrite takes a new spill slot and frees the old one.
		repl := chunks(2, 1)
		writeChunks(h, ino, 20*cs, repl)
		copy(model[20*cs:], repl)
		held2, free2, _, _ := holdState(t, h.f)
		if held2 != held || free2 != free {
			t.Errorf("after overwriting a held chunk: %d held, %d spill slots free; want %d and %d", held2, free2, held, free)
		}
		// A truncation frees the held chunks past the new end.
		size := uint64(6 * cs)
		if _, err := h.f.SetAttr(Caller{}, ino, SetAttrIn{Size: &size}); err != nil {
			t.Fatal(err)
		}
		model = model[:size]
		held3, free3, pending, _ := holdState(t, h.f)
		if freed := free3 - free2; held3 >= held2 || freed != held2-held3 {
			t.Errorf("after truncating to 6 chunks: %d held (was %d), %d spill slots freed", held3, held2, freed)
		}
		if pending != held3 {
			t.Errorf("%d pending, not the %d held", pending, held3)
		}
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after the truncation differ")
		}
		// A sync waits, so the held chunks are hashed and committed.
		h.sync()
		if held, _, pending, _ := holdState(t, h.f); held != 0 || pending != 0 {
			t.Fatalf("after a sync: %d held, %d pending", held, pending)
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after reopen differ")
		}
	})

	t.Run("half the spill held", func(t *testing.T) {
		h, ino, model := start(t, 16, time.Hour, 3, 40)
		held, _, _, off := holdState(t, h.f)
		if !off || held > 8 {
			t.Fatalf("40 chunks through a spill of 16: %d held, holdOff %v; want at most 8 and holdOff", held, off)
		}
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents differ")
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after reopen differ")
		}
	})

	t.Run("an fsync hashes them", func(t *testing.T) {
		h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: 64 * cs, CommitInterval: time.Hour})
		a := h.create(RootIno, "a", 0o100644).Ino
		b := h.create(RootIno, "b", 0o100644).Ino
		writeChunks(h, a, 0, chunks(4, 12))
		writeChunks(h, b, 0, chunks(5, 12))
		if held, _, _, _ := holdState(t, h.f); held == 0 {
			t.Fatal("nothing held")
		}
		if err := h.f.Fsync(bg, b); err != nil {
			t.Fatal(err)
		}
		func() {
			h.f.mu.Lock()
			defer h.f.mu.Unlock()
			if n := h.f.dirty[b]; n != nil {
				for _, s := range n.slots {
					t.Errorf("chunk %d of the fsynced file not committed (state %d)", s.idx, s.state)
				}
			}
		}()
		if held, _, _, _ := holdState(t, h.f); held != 0 {
			t.Errorf("%d still held after an fsync", held)
		}
	})

	t.Run("released when the writes pause", func(t *testing.T) {
		h, ino, model := start(t, 64, 20*time.Millisecond, 6, 24)
		// No sync, no wait: the committer's ticks alone must hash and
		// commit everything.
		deadline := time.Now().Add(20 * time.Second)
		for {
			held, _, pending, _ := holdState(t, h.f)
			h.f.mu.Lock()
			dirty := len(h.f.dirty)
			h.f.mu.Unlock()
			if held == 0 && pending == 0 && dirty == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("20 s after the writes: %d held, %d pending, %d dirty inodes", held, pending, dirty)
			}
			time.Sleep(10 * time.Millisecond)
		}
		h.reopen()
		if got := h.readAll(ino); !bytes.Equal(got, model) {
			t.Fatal("contents after reopen differ")
		}
	})
}

// TestSpillKeep checks that a freed spill slot keeps its pages in the
// file for spill.keep, that the next long write takes those slots first,
// and that a slot free for longer is punched out of the file.
func TestSpillKeep(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: 32 * cs, CommitInterval: time.Hour})
	blocks := func() int64 {
		var st unix.Stat_t
		if err := unix.Fstat(int(h.f.spill.file.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	write := func(name string, seed byte) (Ino, []byte) {
		ino := h.create(RootIno, name, 0o100644).Ino
		data := make([]byte, 16*cs)
		rand.NewChaCha8([32]byte{seed}).Read(data)
		for i := 0; i < len(data); i += cs {
			h.write(ino, int64(i), data[i:i+cs])
		}
		return ino, data
	}
	a, da := write("a", 1)
	h.sync()
	h.f.mu.Lock()
	kept := map[int]bool{}
	for _, i := range h.f.spill.free {
		if h.f.spill.kept[i] != 0 {
			kept[i] = true
		}
	}
	h.f.mu.Unlock()
	if len(kept) < 8 {
		t.Fatalf("%d slots kept after a commit of a 16-chunk write", len(kept))
	}
	if b := blocks(); b < int64(len(kept))*cs {
		t.Fatalf("spill file holds %d bytes, less than its %d kept slots", b, len(kept))
	}
	b, db := write("b", 2)
	h.f.mu.Lock()
	reused, spilled := 0, 0
	for _, s := range h.f.dirty[b].slots {
		if s.rawSpill || s.spilled {
			spilled++
			if kept[s.spillSlot] {
				reused++
			}
		}
	}
	h.f.mu.Unlock()
	if spilled == 0 || reused < min(spilled, len(kept)) {
		t.Errorf("the second write spilled %d chunks, %d of them into the %d kept slots", spilled, reused, len(kept))
	}
	// Kept no longer: the next cleanings punch every free slot.
	h.f.mu.Lock()
	h.f.spill.keep = 0
	h.f.mu.Unlock()
	h.sync()
	time.Sleep(time.Millisecond)
	h.f.commitMu.Lock()
	h.f.cleanSpill()
	h.f.commitMu.Unlock()
	if b := blocks(); b != 0 {
		t.Errorf("spill file holds %d bytes with every slot free for longer than keep", b)
	}
	h.reopen()
	if got := h.readAll(a); !bytes.Equal(got, da) {
		t.Error("a differs after reopen")
	}
	if got := h.readAll(b); !bytes.Equal(got, db) {
		t.Error("b differs after reopen")
	}
}

// TestSpillLimit checks that chunks waiting in the spill file count
// against the workspace's limit, as chunks in pool buffers do: they were
// not counted until their commit, so a long write could pass the limit
// by as much as the spill held.
func TestSpillLimit(t *testing.T) {
	const cs = 64 << 10
	const limit = 16 * cs
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: 64 * cs, Limit: limit, CommitInterval: time.Hour})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, cs)
	written := 0
	for i := range 40 {
		rand.NewChaCha8([32]byte{byte(i)}).Read(data)
		n, err := h.f.Write(bg, ino, int64(i*cs), data, false)
		written += n
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write %d: %v; want ENOSPC", i, err)
			}
			break
		}
	}
	if written > limit {
		t.Fatalf("%d bytes written under a limit of %d", written, limit)
	}
	if _, used := h.f.Limit(); used > limit {
		t.Errorf("%d bytes used under a limit of %d", used, limit)
	}
	h.sync()
	if _, used := h.f.Limit(); used > limit {
		t.Errorf("after a sync, %d bytes used under a limit of %d", used, limit)
	}
}
