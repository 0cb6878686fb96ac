package fs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// TestCheckRepairsOutboard: a damaged outboard (format 8) leaves the
// file readable, small random reads included; fsck reports it without
// calling the chunk damaged, and --repair computes it again.
func TestCheckRepairsOutboard(t *testing.T) {
	h := newHarness(t, Options{})
	ino := h.create(RootIno, "f", 0o100644).Ino
	data := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	h.write(ino, 0, data)
	h.sync()
	h.closeFS()

	st, err := chunkstore.Open(h.path, chunkstore.Options{MustExist: true, Logger: h.opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	err = st.DB().Update(func(tx *bolt.Tx) error {
		n := 0
		err := tx.Bucket([]byte("chunks")).ForEach(func(k, _ []byte) error {
			b := tx.Bucket([]byte("chunks")).Bucket(k)
			if v := b.Get([]byte("bao")); v != nil {
				v = bytes.Clone(v)
				v[100] ^= 1
				n++
				return b.Put([]byte("bao"), v)
			}
			return nil
		})
		if err == nil && n != 1 {
			err = fmt.Errorf("%d outboards, want 1", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		rep, err := Check(st, repair)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "outboard") {
			t.Fatalf("fsck (repair %v): %q, want one outboard problem", repair, rep.Problems)
		}
		if repair && !strings.Contains(strings.Join(rep.Repaired, "\n"), "rebuilt the outboard") {
			t.Fatalf("fsck --repair fixed %q", rep.Repaired)
		}
	}
	if rep, err := Check(st, false); err != nil || !rep.Clean() {
		t.Fatalf("fsck after repair: %v %q", err, rep.Problems)
	}
	st.Close()
	h.open()
	h.f.Open(ino)
	defer h.f.Release(ino)
	buf := make([]byte, 4096)
	for _, off := range []int{500_000, 12_345, 1<<20 - 4096} {
		n, err := h.f.Read(context.Background(), ino, int64(off), buf)
		if err != nil || !bytes.Equal(buf[:n], data[off:off+4096]) {
			t.Fatalf("read at %d after repair: %v", off, err)
		}
	}
	if h.f.RangedReads() == 0 {
		t.Error("no ranged read after repair")
	}
}
