package fs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCommitCost runs the metadata workloads of `computerfs bench`
// (create-1000, rm-1000, tree-create) through the fs API, committing
// every batch files as the committer's tick would, and reports what the
// commits wrote, from bbolt's transaction statistics: pages allocated
// (each written once, plus one meta page per commit), write calls,
// bbolt's time writing and syncing, and the CPU time. Unlike the wall clock of the FUSE workloads, the
// page counts vary little (a Sync may take two commits), and the CPU
// time (user and system, of the whole process: the commits' and the
// operations') does not count the waits for fsync, so two formats
// compare on a loaded machine where wall-clock times do not. It uses
// only API that release e3fc558 had, so that the same file measures it.
//
//	go test -run '^$' -bench CommitCost -benchtime 5x ./fs
func BenchmarkCommitCost(b *testing.B) {
	const batch = 100 // ~ one 100 ms tick of a bash loop through FUSE
	for _, w := range []struct {
		name  string
		setup func(f *FS, sync func()) any
		run   func(f *FS, sync func(), state any)
	}{
		{"create-1000", nil, func(f *FS, sync func(), _ any) { ccFiles(b, f, RootIno, 1000, batch, sync) }},
		{"rm-1000", func(f *FS, sync func()) any {
			d := ccCreate(b, f, RootIno, "d", syscall.S_IFDIR|0o755)
			ccFiles(b, f, d, 1000, batch, sync)
			return d
		}, func(f *FS, sync func(), state any) {
			d := state.(Ino)
			for i := 0; i < 1000; i++ {
				if err := f.Unlink(d, fmt.Sprintf("f%d", i)); err != nil {
					b.Fatal(err)
				}
				if (i+1)%batch == 0 {
					sync()
				}
			}
			sync()
		}},
		{"stat-1000", func(f *FS, sync func()) any {
			d := ccCreate(b, f, RootIno, "d", syscall.S_IFDIR|0o755)
			ccFiles(b, f, d, 1000, batch, sync)
			return d
		}, func(f *FS, sync func(), state any) {
			// Nodes nobody holds are forgotten: each lookup loads one
			// (the inode, and a file's chunk list and summary).
			d := state.(Ino)
			for i := 0; i < 1000; i++ {
				a, err := f.Lookup(Caller{}, d, fmt.Sprintf("f%d", i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.GetAttr(a.Ino); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"fsync-100", nil, func(f *FS, sync func(), _ any) {
			// A commit per file, as an fsync (git, editors) asks: the
			// cost of a small commit, fsyncs included.
			ccFiles(b, f, RootIno, 100, 1, sync)
		}},
		{"tree-create", nil, func(f *FS, sync func(), _ any) {
			n := 0
			for i := 0; i < 10; i++ {
				a := ccCreate(b, f, RootIno, fmt.Sprint(i), syscall.S_IFDIR|0o755)
				for j := 0; j < 10; j++ {
					c := ccCreate(b, f, a, fmt.Sprint(j), syscall.S_IFDIR|0o755)
					for k := 0; k < 10; k++ {
						d := ccCreate(b, f, c, fmt.Sprint(k), syscall.S_IFDIR|0o755)
						ccFiles(b, f, d, 1, 1, func() {})
						if n++; n%batch == 0 {
							sync()
						}
					}
				}
			}
			sync()
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			prof := ccProfile(b, w.name)
			defer prof.done()
			var pages, writes, commits, spills, splits int64
			var commitTime, cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, err := Open(filepath.Join(b.TempDir(), "ws.cfs"), Options{CommitInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				sync := func() {
					if err := f.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
				var state any
				if w.setup != nil {
					state = w.setup(f, sync)
				}
				sync()
				db := f.Store().DB()
				before := db.Stats()
				cpu0 := ccCPU()
				b.StartTimer()
				prof.start()
				w.run(f, sync, state)
				prof.stop()
				b.StopTimer()
				cpu += ccCPU() - cpu0
				after := db.Stats()
				d := after.Sub(&before)
				pages += d.TxStats.GetPageCount()
				writes += d.TxStats.GetWrite()
				spills += d.TxStats.GetSpill()
				splits += d.TxStats.GetSplit()
				commitTime += d.TxStats.GetWriteTime()
				commits += int64(d.TxN) // read transactions: loads
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(pages)/n, "pages/op")
			b.ReportMetric(float64(pages)*4096/n/1024, "KiB/op")
			b.ReportMetric(float64(writes)/n, "writes/op")
			b.ReportMetric(float64(spills)/n, "spills/op")
			b.ReportMetric(float64(splits)/n, "splits/op")
			b.ReportMetric(float64(commitTime.Microseconds())/n, "write-µs/op")
			b.ReportMetric(float64(commits)/n, "readtx/op")
			b.ReportMetric(float64(cpu.Microseconds())/n/1000, "cpu-ms/op")
		})
	}
}

// ccProf profiles the timed runs only (not their setup), when
// CFS_COMMITCOST_PROFILE names a directory: NAME.cpu.N, run N's CPU
// profile (go tool pprof merges them: DIR/NAME.cpu.*), and NAME.allocs
// with NAME.allocs-base, the heap profiles after the last run and before
// the first (go tool pprof -sample_index=alloc_space -base
// DIR/NAME.allocs-base DIR/NAME.allocs; setups between runs count too).
type ccProf struct {
	b    *testing.B
	dir  string
	name string
	cpu  *os.File
	n    int
}

func ccProfile(b *testing.B, name string) *ccProf {
	return &ccProf{b: b, dir: os.Getenv("CFS_COMMITCOST_PROFILE"), name: name}
}

func (p *ccProf) heap(name string) {
	runtime.GC()
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		p.b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		p.b.Fatal(err)
	}
}

func (p *ccProf) start() {
	if p.dir == "" {
		return
	}
	if p.n == 0 {
		p.heap(p.name + ".allocs-base")
	}
	f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%s.cpu.%d", p.name, p.n)))
	if err != nil {
		p.b.Fatal(err)
	}
	p.cpu = f
	if err := pprof.StartCPUProfile(f); err != nil {
		p.b.Fatal(err)
	}
}

func (p *ccProf) stop() {
	if p.dir == "" {
		return
	}
	pprof.StopCPUProfile()
	p.cpu.Close()
	p.n++
}

func (p *ccProf) done() {
	if p.dir == "" || p.n == 0 {
		return
	}
	p.heap(p.name + ".allocs")
}

// ccCPU is the CPU time (user and system) this process has used.
func ccCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ccCreate(b *testing.B, f *FS, parent Ino, name string, mode uint32) Ino {
	a, err := f.Create(Caller{}, parent, name, NewNode{Mode: mode})
	if err != nil {
		b.Fatalf("create %s: %v", name, err)
	}
	return a.Ino
}

// ccFiles creates n files of 2 bytes in dir, as `echo x > f$i` does,
// syncing every batch.
func ccFiles(b *testing.B, f *FS, dir Ino, n, batch int, sync func()) {
	for i := 0; i < n; i++ {
		ino := ccCreate(b, f, dir, fmt.Sprintf("f%d", i), syscall.S_IFREG|0o644)
		if _, err := f.Open(ino); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(context.Background(), ino, 0, []byte("x\n"), false); err != nil {
			b.Fatal(err)
		}
		f.Release(ino)
		f.Release(ino)
		if (i+1)%batch == 0 {
			sync()
		}
	}
	sync()
}
