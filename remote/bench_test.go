package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
)

// BenchmarkRepush is issue 18's figure: a workspace of random
// (incompressible) files in 1 MiB chunks, CFS_REPUSH_BYTES big (1 GiB
// by default), pushed to a real S3 server on loopback; then one chunk
// in ten is changed (a byte of it, spread over every file) and the
// workspace pushed again; then a clone, and a pull of the second push
// into a clone of the first (a second host one push behind). It reports what each push
// uploaded and how long each step took, without and with encryption.
// Run with -benchtime 1x.
func BenchmarkRepush(b *testing.B) {
	for _, tc := range []struct {
		name string
		key  []byte
	}{{"plain", nil}, {"encrypted", make([]byte, KeySize)}} {
		b.Run(tc.name, func(b *testing.B) { benchRepush(b, tc.key) })
	}
}

func benchRepush(b *testing.B, key []byte) {
	size := int64(1 << 30)
	if v, err := strconv.ParseInt(os.Getenv("CFS_REPUSH_BYTES"), 10, 64); err == nil && v > 0 {
		size = v
	}
	const chunk = 1 << 20
	const fileSize = 4 * chunk
	ctx := context.Background()
	for range b.N {
		s := s3test.Start(b)
		s.Bucket("cfs")
		dir := b.TempDir()
		ws := filepath.Join(dir, "ws.cfs")
		f, err := fs.Open(ws, fs.Options{ChunkSize: chunk})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.NewChaCha8([32]byte{1})
		buf := make([]byte, fileSize)
		c := fs.Caller{}
		var inos []fs.Ino
		for i := int64(0); i*fileSize < size; i++ {
			rng.Read(buf)
			a, err := f.Create(c, fs.RootIno, fmt.Sprintf("f%04d", i), fs.NewNode{Mode: 0o100644})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(ctx, a.Ino, 0, buf, false); err != nil {
				b.Fatal(err)
			}
			f.Release(a.Ino)
			inos = append(inos, a.Ino)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		cl := keyClient(b, s, "s3://cfs/ws", key)
		b.ResetTimer()
		start := time.Now()
		r1, err := Push(ctx, ws, cl, PushOptions{Remote: "origin"})
		if err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		// A second host's clone of the first push, pulled below.
		b.StopTimer()
		behind := filepath.Join(dir, "behind.cfs")
		if _, err := Clone(ctx, cl, behind, CloneOptions{RemoteName: "origin"}); err != nil {
			b.Fatal(err)
		}

		// One chunk in ten changed.
		f, err = fs.Open(ws, fs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		changed := 0
		for n := 0; n < len(inos)*fileSize/chunk; n += 10 {
			ino := inos[n/(fileSize/chunk)]
			if _, err := f.Open(ino); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(ctx, ino, int64(n%(fileSize/chunk))*chunk+7, []byte{byte(n), 0xa5}, false); err != nil {
				b.Fatal(err)
			}
			f.Release(ino)
			changed++
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start = time.Now()
		r2, err := Push(ctx, ws, cl, PushOptions{Remote: "origin"})
		if err != nil {
			b.Fatal(err)
		}
		second := time.Since(start)
		start = time.Now()
		if _, err := Clone(ctx, cl, filepath.Join(dir, "clone.cfs"), CloneOptions{}); err != nil {
			b.Fatal(err)
		}
		clone := time.Since(start)
		start = time.Now()
		pr, err := Pull(ctx, behind, cl, PullOptions{Remote: "origin"})
		if err != nil {
			b.Fatal(err)
		}
		pull := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(size)/(1<<20), "MiB")
		b.ReportMetric(float64(r1.UploadedBytes)/(1<<20), "push1-MiB")
		b.ReportMetric(float64(r1.Uploaded), "push1-objects")
		b.ReportMetric(first.Seconds(), "push1-s")
		b.ReportMetric(float64(changed), "chunks-changed")
		b.ReportMetric(float64(r2.UploadedBytes)/(1<<20), "push2-MiB")
		b.ReportMetric(float64(r2.Uploaded), "push2-objects")
		b.ReportMetric(float64(r2.ManifestBytes)/1024, "push2-manifest-KiB")
		b.ReportMetric(float64(r2.UploadedBytes+int64(r2.ManifestBytes))/float64(r1.UploadedBytes+int64(r1.ManifestBytes)), "push2/push1")
		b.ReportMetric(second.Seconds(), "push2-s")
		b.ReportMetric(clone.Seconds(), "clone-s")
		b.ReportMetric(pull.Seconds(), "pull-s")
		b.ReportMetric(float64(pr.Downloaded), "pull-objects")
	}
}
