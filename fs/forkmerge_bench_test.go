package fs

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkForkMerge100: a fork made, 100 files (one in every n/100)
// written in it, then merged, at 1,000 and 100,000 files
// (CFS_MERGE_FILES=N for another size, e.g. 1000000). Each op is the
// merge alone (MergeFork after the fork's FS committed and closed: its
// last commit is not the merge's; close-fork-ms is the close). The metrics say where a merge's time goes:
// bbolt's page writes (pwrite calls, pages allocated) and its
// write-and-sync time per merge, the merge's own commit (RewindReport),
// and the same merge with bbolt's fsync off (sync=off), whose difference
// is the disk's; and, beside it, the live undo of an exec that wrote the
// same files (the same rewind engine).
func BenchmarkForkMerge100(b *testing.B) {
	sizes := []int{1000, 100000}
	if s := os.Getenv("CFS_MERGE_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			f, _, files := snapshotWorld(b, n)
			defer f.Close()
			for _, sync := range []bool{true, false} {
				b.Run(fmt.Sprintf("merge/sync=%v", map[bool]string{true: "on", false: "off"}[sync]), func(b *testing.B) {
					db := f.Store().DB()
					db.NoSync = !sync
					defer func() { db.NoSync = false }()
					ctx := context.Background()
					var writes, pages int64
					var writeTime, commit, closing time.Duration
					round := 0
					for b.Loop() {
						b.StopTimer()
						fi, err := f.CreateFork(ctx, "")
						if err != nil {
							b.Fatal(err)
						}
						fk, err := f.OpenFork(fi.ID)
						if err != nil {
							b.Fatal(err)
						}
						for i := range 100 {
							ino := files[i*n/100]
							if _, err := fk.Open(ino); err != nil {
								b.Fatal(err)
							}
							if _, err := fk.Write(ctx, ino, 0, []byte(fmt.Sprintf("fork %d\n", round)), false); err != nil {
								b.Fatal(err)
							}
							fk.Release(ino)
						}
						if err := fk.Sync(ctx); err != nil {
							b.Fatal(err)
						}
						t0 := time.Now()
						if err := f.CloseFork(fi.ID); err != nil {
							b.Fatal(err)
						}
						closing += time.Since(t0)
						round++
						before := db.Stats().TxStats
						b.StartTimer()
						rep, _, err := f.MergeFork(ctx, fi.ID)
						b.StopTimer()
						if err != nil || rep.Records < 200 {
							b.Fatal(rep, err)
						}
						after := db.Stats().TxStats
						d := after.Sub(&before)
						writes += d.GetWrite()
						pages += d.GetPageCount()
						writeTime += d.GetWriteTime()
						commit += time.Duration(rep.Seconds * float64(time.Second))
						b.StartTimer()
					}
					b.ReportMetric(float64(writes)/float64(b.N), "page-writes/op")
					b.ReportMetric(float64(pages)/float64(b.N), "page-allocs/op")
					b.ReportMetric(float64(writeTime.Microseconds())/1000/float64(b.N), "write+sync-ms/op")
					b.ReportMetric(float64(commit.Microseconds())/1000/float64(b.N), "rewind-ms/op")
					b.ReportMetric(float64(closing.Microseconds())/1000/float64(b.N), "close-fork-ms/op")
				})
			}
			// The live undo of an exec that wrote the same files, for
			// comparison: the same rewind engine, no fork.
			for _, sync := range []bool{true, false} {
				b.Run(fmt.Sprintf("undo/sync=%v", map[bool]string{true: "on", false: "off"}[sync]), func(b *testing.B) {
					db := f.Store().DB()
					db.NoSync = !sync
					defer func() { db.NoSync = false }()
					ctx := context.Background()
					var writes int64
					var writeTime time.Duration
					round := 0
					for b.Loop() {
						b.StopTimer()
						id := fmt.Sprintf("undo-%v-%d", sync, round)
						cp, err := f.BeginExec(ctx, id)
						if err != nil {
							b.Fatal(err)
						}
						for i := range 100 {
							ino := files[i*n/100]
							if _, err := f.Open(ino); err != nil {
								b.Fatal(err)
							}
							if _, err := f.Write(ctx, ino, 0, []byte(fmt.Sprintf("exec %d\n", round)), false); err != nil {
								b.Fatal(err)
							}
							f.Release(ino)
						}
						if _, err := f.EndExec(ctx, cp, ExecRecord{Backend: "bench", Command: id}); err != nil {
							b.Fatal(err)
						}
						if err := f.Sync(ctx); err != nil { // the exec's own commit is not the undo's
							b.Fatal(err)
						}
						round++
						before := db.Stats().TxStats
						b.StartTimer()
						_, rep, _, err := f.Undo(ctx, UndoOptions{Exec: id})
						b.StopTimer()
						if err != nil || rep.Records < 200 {
							b.Fatal(rep, err)
						}
						after := db.Stats().TxStats
						d := after.Sub(&before)
						writes += d.GetWrite()
						writeTime += d.GetWriteTime()
						b.StartTimer()
					}
					b.ReportMetric(float64(writes)/float64(b.N), "page-writes/op")
					b.ReportMetric(float64(writeTime.Microseconds())/1000/float64(b.N), "write+sync-ms/op")
				})
			}
		})
	}
}

// TestMergePages says which bbolt pages, by bucket, a merge of a fork
// that wrote 100 files (one in every n/100) writes into a workspace of n
// files, and the live undo of an exec that wrote the same files: the
// pages a commit wrote are the page ids a walk of the file finds after it
// and not before (TestCommitPages). A measurement, not a check: set
// CFS_MERGE_PAGES=N (files).
func TestMergePages(t *testing.T) {
	s := os.Getenv("CFS_MERGE_PAGES")
	if s == "" {
		t.Skip("a measurement: set CFS_MERGE_PAGES=N (files)")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	f, path, files := snapshotWorld(t, n)
	defer f.Close()
	ctx := context.Background()
	write := func(g *FS, data string) {
		for i := range 100 {
			ino := files[i*n/100]
			if _, err := g.Open(ino); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Write(ctx, ino, 0, []byte(data), false); err != nil {
				t.Fatal(err)
			}
			g.Release(ino)
		}
	}
	diff := func(what string, before, after map[uint64]string) {
		by := map[string]int{}
		sum := 0
		for id, b := range after {
			if before[id] != b {
				by[b]++
				sum++
			}
		}
		var names []string
		for b := range by {
			names = append(names, b)
		}
		sort.Strings(names)
		var out strings.Builder
		for _, b := range names {
			fmt.Fprintf(&out, "  %-28s %5d\n", b, by[b])
		}
		t.Logf("%s, %d files: pages written, by bucket (meta pages not counted):\n%s  %-28s %5d", what, n, out.String(), "total", sum)
	}
	for round := range 2 {
		fi, err := f.CreateFork(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		fk, err := f.OpenFork(fi.ID)
		if err != nil {
			t.Fatal(err)
		}
		write(fk, fmt.Sprintf("fork %d\n", round))
		if err := f.CloseFork(fi.ID); err != nil {
			t.Fatal(err)
		}
		before := pagesByBucket(t, path)
		if _, _, err := f.MergeFork(ctx, fi.ID); err != nil {
			t.Fatal(err)
		}
		diff(fmt.Sprintf("merge %d", round), before, pagesByBucket(t, path))

		id := fmt.Sprintf("exec-%d", round)
		cp, err := f.BeginExec(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		write(f, fmt.Sprintf("exec %d\n", round))
		if _, err := f.EndExec(ctx, cp, ExecRecord{Backend: "bench", Command: id}); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		before = pagesByBucket(t, path)
		if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: id}); err != nil {
			t.Fatal(err)
		}
		diff(fmt.Sprintf("undo %d", round), before, pagesByBucket(t, path))
	}
}
