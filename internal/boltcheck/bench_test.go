package boltcheck

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheck checks a store-like file: 100,000 keys of 80-byte values
// in three buckets, and 2,000 nested buckets of one 64 KiB value each,
// like chunk bodies (about 140 MB). The file is in the page cache.
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "db")
	buildDB(b, path, dbSpec{keys: 33334, valSize: 80, nested: 2000, bigVal: 64 << 10})
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var r *Report
	for b.Loop() {
		if r, err = Check(context.Background(), path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	if len(r.Problems) > 0 {
		b.Fatal(r.Problems)
	}
	b.ReportMetric(float64(r.Pages)*float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64(r.Pages), "pages")
	b.ReportMetric(float64(st.Size())/1e6, "MB")
}
