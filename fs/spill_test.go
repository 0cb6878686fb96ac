package fs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		spilled, raw := 0, 0
		for i := range 3 {
			files = append(files, &file{ino: h.create(RootIno, string(rune('a'+i)), 0o100644).Ino})
		}
		for step := 0; step < 120; step++ {
			fl := files[rng.IntN(len(files))]
			switch r := rng.IntN(100); {
			case r < 35: // a long sequential write in whole chunks
				off := rng.IntN(4) * cs
				n := (rng.IntN(20) + 4) * cs
				h.writeModel(&fl.model, fl.ino, off, n, rng)
			case r < 45: // the same, of data that compresses
				off := rng.IntN(4) * cs
				n := (rng.IntN(20) + 4) * cs
				data := bytes.Repeat([]byte(fmt.Sprintf("line %d of a log\n", step)), n/16+1)[:n]
				h.write(fl.ino, int64(off), data)
				if end := off + n; end > len(fl.model) {
					fl.model = append(fl.model, make([]byte, end-len(fl.model))...)
				}
				copy(fl.model[off:], data)
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
				raw += h.spilledRaw()
				h.reopen()
			}
		}
		for _, fl := range files {
			if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
				t.Fatalf("seed %d: final contents differ from the model", seed)
			}
		}
		spilled += h.spilled()
		raw += h.spilledRaw()
		h.reopen()
		for _, fl := range files {
			if got := h.readAll(fl.ino); !bytes.Equal(got, fl.model) {
				t.Fatalf("seed %d: contents after reopen differ from the model", seed)
			}
		}
		if spilled == 0 || raw == 0 {
			t.Errorf("seed %d: %d chunks spilled, %d of them by the write itself", seed, spilled, raw)
		}
	}
}

func (h *harness) spilled() int {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.spilledTotal
}

func (h *harness) spilledRaw() int {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.spilledRaw
}

func slicesIndex[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

const spillWorkerEnv = "COMPUTERFS_SPILL_WORKER"

// spillOpts are the options of TestSpillKill's workspace: a pool of 8
// chunks, so that most chunks of its files go through the spill file.
var spillOpts = Options{ChunkSize: 64 << 10, BufferBytes: 8 * (64 << 10), SpillBytes: 32 * (64 << 10)}

// spillGen is generation gen of TestSpillKill's files: 24 chunks and a
// bit.
func spillGen(gen int) []byte {
	b := make([]byte, 24*(64<<10)+gen*123)
	r := rand.NewChaCha8([32]byte{byte(gen), byte(gen >> 8), byte(gen >> 16), 5})
	r.Read(b)
	return b
}

// TestSpillKill kills a process writing files through the spill file at
// random moments: every file whose fsync returned (named in a manifest
// written after it) must hold exactly its bytes, and fsck must find the
// store clean (killRounds).
func TestSpillKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := Open(path, Options{ChunkSize: spillOpts.ChunkSize, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	most := 0
	killRounds(t, path, "TestSpillWorker", spillWorkerEnv, 800, 131, 2500, func(round int, f *FS) {
		done, _ := os.ReadFile(path + ".done")
		synced := strings.Fields(string(done))
		most = max(most, len(synced))
		for _, name := range synced {
			var gen int
			if _, err := fmt.Sscanf(name, "g%d", &gen); err != nil {
				t.Fatalf("round %d: manifest entry %q", round, name)
			}
			a, err := f.Lookup(Caller{}, RootIno, name)
			if err != nil {
				t.Fatalf("round %d: %s was fsynced: %v", round, name, err)
			}
			got := make([]byte, a.Size+1)
			n, err := f.Read(context.Background(), a.Ino, 0, got)
			if want := spillGen(gen); err != nil || !bytes.Equal(got[:n], want) {
				t.Fatalf("round %d: %s holds %d bytes (%v), not its %d", round, name, n, err, len(want))
			}
		}
	})
	if most == 0 {
		t.Fatal("no fsync returned before a kill")
	}
	t.Logf("%d files fsynced by the last round", most)
}

// TestSpillWorker is TestSpillKill's writer (run as a subprocess): files
// of 24 chunks, every other one fsynced and then named in path.done.
func TestSpillWorker(t *testing.T) {
	path := os.Getenv(spillWorkerEnv)
	if path == "" {
		t.Skip("run by TestSpillKill")
	}
	opts := spillOpts
	opts.Logger = quietLog()
	f, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	done, err := os.OpenFile(path+".done", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	prev, _ := os.ReadFile(path + ".done")
	ctx := context.Background()
	for gen := len(strings.Fields(string(prev))) * 2; ; gen++ {
		name := fmt.Sprintf("g%d", gen)
		a, err := f.Create(Caller{}, RootIno, name, NewNode{Mode: 0o100644})
		if err != nil {
			t.Fatal(err)
		}
		data := spillGen(gen)
		for off := 0; off < len(data); off += 64 << 10 {
			if _, err := f.Write(ctx, a.Ino, int64(off), data[off:min(off+64<<10, len(data))], false); err != nil {
				t.Fatal(err)
			}
		}
		if gen%2 == 1 {
			continue // left to the background commits
		}
		if err := f.Fsync(ctx, a.Ino); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, RootIno); err != nil {
			t.Fatal(err)
		}
		if _, err := done.WriteString(name + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := done.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpillFsyncBatches: an fsync after a long write commits the spill
// file in commits of spillBatch chunks, not all of it in one.
func TestSpillFsyncBatches(t *testing.T) {
	const cs = 64 << 10
	// No ticks: nothing is committed before the fsync.
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 8 * cs, SpillBytes: 64 * cs, CommitInterval: time.Hour})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, 48*cs)
	rand.NewChaCha8([32]byte{1}).Read(data)
	h.write(ino, 0, data)
	if err := h.f.Fsync(context.Background(), ino); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	total, most, batch := h.f.spilledTotal, h.f.mostSpilled, h.f.spillBatch
	h.f.mu.Unlock()
	if total < 24 {
		t.Fatalf("%d of 48 chunks spilled", total)
	}
	if most > 2*batch {
		t.Errorf("a commit took %d spilled chunks, past twice the batch of %d", most, batch)
	}
	h.reopen()
	if got := h.readAll(ino); !bytes.Equal(got, data) {
		t.Fatal("contents after reopen differ")
	}
}

// TestCommitFramesBatch checks that a background commit takes at most
// batchBufs of the pool's prepared chunks and leaves the rest to the
// commit it starts at once after it: bbolt copies every value of a
// commit into pages of its own, so one commit of the whole pool held the
// pool twice (rss-8x512m).
func TestCommitFramesBatch(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 16 * cs, SpillBytes: -1, CommitInterval: time.Hour})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, 8*cs)
	rand.NewChaCha8([32]byte{2}).Read(data)
	// No commit starts while the test holds commitMu: the workers
	// prepare all eight chunks first.
	h.f.commitMu.Lock()
	h.write(ino, 0, data)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.f.mu.Lock()
		ready, batch := h.f.readyBufs, h.f.batchBufs
		h.f.mu.Unlock()
		if ready == 8 {
			if batch >= 8 {
				h.f.commitMu.Unlock()
				t.Fatalf("batchBufs is %d: the test needs fewer than 8", batch)
			}
			break
		}
		if time.Now().After(deadline) {
			h.f.commitMu.Unlock()
			t.Fatalf("%d of 8 chunks prepared after 10 s", ready)
		}
		time.Sleep(time.Millisecond)
	}
	h.f.commitMu.Unlock()
	// The committer commits them in batches, each kicking the next.
	for {
		h.f.mu.Lock()
		ready := h.f.readyBufs
		h.f.mu.Unlock()
		if ready == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d prepared chunks left uncommitted after 10 s without a tick", ready)
		}
		time.Sleep(time.Millisecond)
	}
	h.f.mu.Lock()
	most, batch := h.f.mostFrames, h.f.batchBufs
	h.f.mu.Unlock()
	if most == 0 || most > batch {
		t.Errorf("a background commit took %d pool frames, want 1 to %d", most, batch)
	}
	if err := h.f.Fsync(context.Background(), ino); err != nil {
		t.Fatal(err)
	}
	h.reopen()
	if got := h.readAll(ino); !bytes.Equal(got, data) {
		t.Fatal("contents after reopen differ")
	}
}

// TestTrimPoolsWhenQuiet checks that the buffers a burst of writes left
// free go back to the garbage collector once nothing has been written
// for a while: held, they kept the heap at the soft memory limit and the
// collector running for as long as the daemon lived.
func TestTrimPoolsWhenQuiet(t *testing.T) {
	const cs = 64 << 10
	h := newHarness(t, Options{ChunkSize: cs, BufferBytes: 32 * cs, CommitInterval: 5 * time.Millisecond})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, 16*cs)
	rand.NewChaCha8([32]byte{3}).Read(data)
	h.write(ino, 0, data)
	if err := h.f.Fsync(context.Background(), ino); err != nil {
		t.Fatal(err)
	}
	// Pages over stored chunks: sparse slots.
	for i := range 16 {
		h.write(ino, int64(i)*cs+4096, data[:4096])
		copy(data[i*cs+4096:], data[:4096])
	}
	if err := h.f.Fsync(context.Background(), ino); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	frames, pages := len(h.f.freeBufs), len(h.f.freePages)
	h.f.mu.Unlock()
	if frames <= keepFreeFrames {
		t.Fatalf("only %d free frames after the burst: the test proves nothing", frames)
	}
	t.Logf("after the burst: %d free frames, %d free pages", frames, pages)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.f.mu.Lock()
		frames, pages = len(h.f.freeBufs), len(h.f.freePages)
		small := h.f.small.freeBytes
		h.f.mu.Unlock()
		if frames <= keepFreeFrames && pages <= keepFreePages && small == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d free frames, %d free pages, %d bytes of small frames after 10 s quiet", frames, pages, small)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The pools fill again as needed.
	h.write(ino, 0, data[:4*cs])
	if err := h.f.Fsync(context.Background(), ino); err != nil {
		t.Fatal(err)
	}
	h.reopen()
	if got := h.readAll(ino); !bytes.Equal(got, data) {
		t.Fatal("contents after reopen differ")
	}
}
