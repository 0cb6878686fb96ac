package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/testmount"
)

// The Go benchmarks run some of the runner's workloads, with the same
// workload code, on a computerfs mount (checked by fsck when it is torn
// down) and on an ext4 temp directory:
//
//	go test -run '^$' -bench . ./bench
//
// Each iteration times only the workload's Run step.

func BenchmarkCreate1000(b *testing.B)     { benchWorkload(b, "create-1000") }
func BenchmarkStat1000(b *testing.B)       { benchWorkload(b, "stat-1000") }
func BenchmarkTreeFind(b *testing.B)       { benchWorkload(b, "tree-find") }
func BenchmarkWrite64MRandom(b *testing.B) { benchWorkload(b, "write-64m-random") }
func BenchmarkRead64MWarm(b *testing.B)    { benchWorkload(b, "read-64m-warm") }
func BenchmarkGitCommit100(b *testing.B)   { benchWorkload(b, "git-commit-100") }
func BenchmarkJobSeqWrite1M(b *testing.B)  { benchWorkload(b, "jobs/seqwrite-1m") }
func BenchmarkJobRandRead4K(b *testing.B)  { benchWorkload(b, "jobs/randread-4k") }

func findWorkload(b *testing.B, name string) Workload {
	c, err := Select(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range c.Workloads {
		if w.Name == name {
			return w
		}
	}
	b.Fatalf("no workload %q", name)
	return Workload{}
}

func benchWorkload(b *testing.B, name string) {
	needMount(b)
	w := findWorkload(b, name)
	ctx := context.Background()
	in, err := NewInputs(b.TempDir(), testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Prepare(ctx, w.Needs); err != nil {
		b.Fatal(err)
	}
	m := testmount.New(b, testmount.Options{})
	ext4, err := Ext4Target(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ext4.Close() })
	targets := []*Target{{Name: TargetComputerfs, Dir: m.Dir, FS: m.FS, FSType: "fuse"}, ext4}
	for _, t := range targets {
		b.Run(t.Name, func(b *testing.B) {
			var mibs float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(t.Dir, fmt.Sprintf("bench.%d", i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				e := &Env{Dir: dir, Target: t, Inputs: in, Log: testLogger(b)}
				if w.Setup != nil {
					if err := w.Setup(ctx, e); err != nil {
						b.Fatalf("setup: %v", err)
					}
				}
				b.StartTimer()
				metrics, err := w.Run(ctx, e)
				b.StopTimer()
				if err != nil {
					b.Fatalf("run: %v", err)
				}
				mibs += metrics[MetricMiBs]
				if w.Cleanup != nil {
					if err := w.Cleanup(ctx, e); err != nil {
						b.Fatalf("cleanup: %v", err)
					}
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				if t.FS != nil {
					if err := t.FS.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			if w.Primary == MetricMiBs {
				b.ReportMetric(mibs/float64(b.N), "MiB/s")
			}
		})
	}
}
