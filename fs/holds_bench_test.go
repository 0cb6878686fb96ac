package fs

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
)

// BenchmarkReleaseHolds: what an open pays after a pull killed among
// its batches (holds.go): the recount of the held chunks' references,
// one walk of every chunk list, in a store of CFS_HOLDS_FILES files
// (20,000 if unset) of one chunk each, with one dead hold of 64 chunks
// (a 64 MiB batch of 1 MiB chunks). Also reports an open with no holds
// beside it.
func BenchmarkReleaseHolds(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("CFS_HOLDS_FILES")); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "ws.cfs")
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64)
	for i := range n {
		binary.BigEndian.PutUint64(buf, uint64(i))
		putFile(b, f, RootIno, "f"+strconv.Itoa(i), buf)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	hold := func() {
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog(), MustExist: true})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if err := st.Update(func(tx *chunkstore.Tx) error {
			var ids []chunkstore.ID
			for i := range 64 {
				p := chunkstore.Prepare([]byte("held "+strconv.Itoa(i)), nil)
				if _, err := tx.Put(&p); err != nil {
					return err
				}
				ids = append(ids, p.ID)
			}
			return putHold(tx, 1, 0, ids)
		}); err != nil {
			b.Fatal(err)
		}
	}
	var with, without time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		hold()
		b.StartTimer()
		t0 := time.Now()
		f, err := Open(path, Options{Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		with += time.Since(t0)
		b.StopTimer()
		f.Close()
		t0 = time.Now()
		if f, err = Open(path, Options{Logger: quietLog()}); err != nil {
			b.Fatal(err)
		}
		without += time.Since(t0)
		f.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(with.Microseconds())/float64(b.N)/1000, "ms/open-with-holds")
	b.ReportMetric(float64(without.Microseconds())/float64(b.N)/1000, "ms/open-without")
}
