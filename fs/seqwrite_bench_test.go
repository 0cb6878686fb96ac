package fs

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSeqWrite writes a new 256 MiB file in 1 MiB writes through the
// fs API, as fio's sequential write row does through FUSE (random
// buffers, a few bytes changed per write, no fsync): MiB/s of the writes
// alone (what fio reports), and until a Sync has made them durable.
//
//	go test -run '^$' -bench SeqWrite -benchtime 3x ./fs
func BenchmarkSeqWrite(b *testing.B) {
	const size, bs = 256 << 20, 1 << 20
	buf := make([]byte, bs)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	var writeSecs, syncSecs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, err := Open(filepath.Join(b.TempDir(), "ws.cfs"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		a, err := f.Create(Caller{}, RootIno, "f", NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Open(a.Ino); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for off := 0; off < size; off += bs {
			binary.LittleEndian.PutUint64(buf[(off/bs*64)%bs:], uint64(off)) // no two chunks alike
			if _, err := f.Write(context.Background(), a.Ino, int64(off), buf, false); err != nil {
				b.Fatal(err)
			}
		}
		w := time.Since(start)
		if err := f.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		s := time.Since(start)
		b.StopTimer()
		writeSecs += w.Seconds()
		syncSecs += s.Seconds()
		f.Release(a.Ino)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	mib := float64(size>>20) * float64(b.N)
	b.ReportMetric(mib/writeSecs, "MiB/s-write")
	b.ReportMetric(mib/syncSecs, "MiB/s-synced")
	_ = fmt.Sprint
}
