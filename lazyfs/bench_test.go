package lazyfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
	"github.com/computerfs/computerfs/remote"
)

// BenchmarkLazyFirstRead: a workspace of CFS_LAZY_BYTES (1 GiB by
// default) in 4 MiB random files plus one small file, pushed to a real
// S3 server on loopback; side by side, the time from nothing to the
// small file read through a lazy mount (manifest fetched, mounted, one
// chunk fetched), to the whole of one 4 MiB file read through it, and
// to a full clone. Run with -benchtime 1x, as root.
func BenchmarkLazyFirstRead(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounts FUSE: run as root")
	}
	size := int64(1 << 30)
	if v, err := strconv.ParseInt(os.Getenv("CFS_LAZY_BYTES"), 10, 64); err == nil && v > 0 {
		size = v
	}
	ctx := context.Background()
	for range b.N {
		s := s3test.Start(b)
		s.Bucket("cfs")
		dir := b.TempDir()
		ws := filepath.Join(dir, "ws.cfs")
		f, err := fs.Open(ws, fs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		put := func(name string, data []byte) {
			a, err := f.Create(fs.Caller{}, fs.RootIno, name, fs.NewNode{Mode: 0o100644})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(ctx, a.Ino, 0, data, false); err != nil {
				b.Fatal(err)
			}
			f.Release(a.Ino)
		}
		for i := int64(0); i*(4<<20) < size; i++ {
			put(fmt.Sprintf("f%04d", i), random(4<<20, uint64(i)))
		}
		put("small", []byte("the file an agent reads first\n"))
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		loc, _ := remote.ParseURL("s3://cfs/ws")
		cl, err := remote.NewClient(ctx, loc, remote.ClientOptions{Endpoint: s.Endpoint, Region: s.Region,
			Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := remote.Push(ctx, ws, cl, remote.PushOptions{Remote: "origin"}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		m, err := cl.Snapshot(ctx, "", false)
		if err != nil {
			b.Fatal(err)
		}
		mnt := filepath.Join(dir, "mnt")
		os.Mkdir(mnt, 0o755)
		lm, err := New(m, cl, mnt, Options{Spool: filepath.Join(dir, "spool")})
		if err != nil {
			b.Fatal(err)
		}
		mounted := time.Since(start)
		if _, err := os.ReadFile(filepath.Join(mnt, "small")); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		if _, err := os.ReadFile(filepath.Join(mnt, "f0001")); err != nil {
			b.Fatal(err)
		}
		file := time.Since(start)
		lm.Unmount()
		start = time.Now()
		if _, err := remote.Clone(ctx, cl, filepath.Join(dir, "clone.cfs"), remote.CloneOptions{}); err != nil {
			b.Fatal(err)
		}
		clone := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(size)/(1<<20), "MiB")
		b.ReportMetric(mounted.Seconds()*1000, "mounted-ms")
		b.ReportMetric(first.Seconds()*1000, "first-read-ms")
		b.ReportMetric(file.Seconds()*1000, "4MiB-file-ms")
		b.ReportMetric(clone.Seconds(), "clone-s")
	}
}
