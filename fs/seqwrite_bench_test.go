package fs

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSeqWrite writes a new 256 MiB file in 1 MiB writes through the
// fs API, as fio's sequential write row does through FUSE (random
// buffers, a few bytes changed per write, no fsync), into a store that
// held such a file before (its pages free, as between the bench's runs):
// MiB/s of the writes alone (what fio reports), MiB/s until a Sync has
// made them durable, and the process's CPU time per MiB (user and
// system: it compares on a loaded machine, where the rates do not).
//
//	go test -run '^$' -bench SeqWrite -benchtime 3x ./fs
func BenchmarkSeqWrite(b *testing.B) {
	// spill: the default; nospill: without the spill file, every chunk
	// waits in the pool for its commit.
	b.Run("spill", func(b *testing.B) { benchSeqWrite(b, Options{}) })
	b.Run("nospill", func(b *testing.B) { benchSeqWrite(b, Options{SpillBytes: -1}) })
}

func benchSeqWrite(b *testing.B, opts Options) {
	const size, bs = 256 << 20, 1 << 20
	buf := make([]byte, bs)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	ctx := context.Background()
	seq := uint64(0)
	write := func(f *FS) Ino {
		a, err := f.Create(Caller{}, RootIno, "f", NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Open(a.Ino); err != nil {
			b.Fatal(err)
		}
		for off := 0; off < size; off += bs {
			seq++
			binary.LittleEndian.PutUint64(buf[(seq*64)%bs:], seq) // no two chunks alike
			if _, err := f.Write(ctx, a.Ino, int64(off), buf, false); err != nil {
				b.Fatal(err)
			}
		}
		return a.Ino
	}
	var writeSecs, syncSecs, cpuSecs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, err := Open(filepath.Join(b.TempDir(), "ws.cfs"), opts)
		if err != nil {
			b.Fatal(err)
		}
		ino := write(f)
		f.Release(ino)
		if err := f.Unlink(RootIno, "f"); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu, start := ccCPU(), time.Now()
		ino = write(f)
		w := time.Since(start)
		if err := f.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		s := time.Since(start)
		cpuSecs += (ccCPU() - cpu).Seconds()
		b.StopTimer()
		writeSecs += w.Seconds()
		syncSecs += s.Seconds()
		f.Release(ino)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	mib := float64(size>>20) * float64(b.N)
	b.ReportMetric(mib/writeSecs, "MiB/s-write")
	b.ReportMetric(mib/syncSecs, "MiB/s-synced")
	b.ReportMetric(cpuSecs*1000/mib, "cpu-ms/MiB")
}
