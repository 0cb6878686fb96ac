package chunkstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	zeebo "github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"
	"lukechampine.com/blake3/bao"
)

// Chunk IDs are zeebo/blake3's BLAKE3-256; outboards are
// lukechampine.com/blake3/bao's, whose root must be the same hash so
// that a block verifies against the ID as it is.
func TestOutboardRootIsChunkID(t *testing.T) {
	data := randBytes(11, 4<<20)
	for _, n := range []int{1, 1023, 1024, 1025, 16<<10 - 1, 16 << 10, 16<<10 + 1, 64<<10 - 7, 64 << 10, 100_000, 700_001, 1<<20 - 1, 1 << 20, 4 << 20} {
		for _, g := range []int{0, 2, 4, 6} {
			_, root := bao.EncodeBuf(data[:n], g, true)
			if root != zeebo.Sum256(data[:n]) || chunkstore.ID(root) != chunkstore.Sum(data[:n]) {
				t.Fatalf("%d bytes, group 2^%d KiB: bao's root is not the BLAKE3 hash", n, g)
			}
		}
	}
}

// readAt reads with Tx.ReadAt in a read transaction.
func readAt(s *chunkstore.Store, id chunkstore.ID, off, n int) ([]byte, error) {
	dst := make([]byte, n)
	var m int
	err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		m, err = tx.ReadAt(id, off, dst)
		return err
	})
	return dst[:m], err
}

func TestReadAt(t *testing.T) {
	s, _ := newStore(t)
	full, _ := put(t, s, randBytes(21, 1<<20))
	short, _ := put(t, s, randBytes(22, 700_001))
	text, _ := put(t, s, textBytes(1, 1<<20))
	small, _ := put(t, s, randBytes(23, 32<<10))
	for _, p := range []chunkstore.Prepared{full, short} {
		if p.Outboard == nil {
			t.Fatalf("raw chunk of %d bytes prepared without an outboard", p.Len)
		}
	}
	if text.Outboard != nil || small.Outboard != nil {
		t.Fatal("outboard for a compressed or small body")
	}
	plain := map[chunkstore.ID][]byte{full.ID: randBytes(21, 1<<20), short.ID: randBytes(22, 700_001)}
	tests := []struct {
		name   string
		p      chunkstore.Prepared
		off, n int
	}{
		{"first page", full, 0, 4096},
		{"inside a group", full, 5*16<<10 + 100, 4096},
		{"across groups", full, 16<<10 - 10, 4096},
		{"last page", full, 1<<20 - 4096, 4096},
		{"100 KiB unaligned", full, 333_333, 100 << 10},
		{"whole", full, 0, 1 << 20},
		{"one byte", full, 777_777, 1},
		{"short chunk, tail group", short, 700_001 - 4000, 4096},
		{"short chunk, past its end", short, 700_001 + 10, 4096},
		{"short chunk, last byte", short, 700_000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAt(s, tt.p.ID, tt.off, tt.n)
			if err != nil {
				t.Fatalf("ReadAt: %v", err)
			}
			data := plain[tt.p.ID]
			want := data[min(tt.off, len(data)):min(tt.off+tt.n, len(data))]
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadAt(%d, %d) gave %d bytes, not the chunk's %d", tt.off, tt.n, len(got), len(want))
			}
		})
	}
	for _, p := range []chunkstore.Prepared{text, small} {
		if _, err := readAt(s, p.ID, 0, 4096); !errors.Is(err, chunkstore.ErrNoOutboard) {
			t.Errorf("ReadAt of a body without an outboard: %v, want ErrNoOutboard", err)
		}
	}
	if _, err := readAt(s, chunkstore.Sum([]byte("absent")), 0, 4096); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("ReadAt of an absent chunk: %v, want ErrNotFound", err)
	}
	err := s.Update(func(tx *chunkstore.Tx) error {
		_, err := tx.ReadAt(full.ID, 0, make([]byte, 10))
		return err
	})
	if !errors.Is(err, chunkstore.ErrNoOutboard) {
		t.Errorf("ReadAt in a write transaction: %v, want ErrNoOutboard", err)
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Fatalf("Check: %v", problems)
	}
}

// flipStored flips a byte of a chunk's stored body (in the body when
// outboard is false, at byte off of the plaintext) or of its outboard.
func flipStored(t *testing.T, s *chunkstore.Store, id chunkstore.ID, outboard bool, off int) {
	t.Helper()
	if err := s.DB().Update(func(tx *bolt.Tx) error {
		e, err := sealed.In(tx, bucketIndex).Get(id[:])
		if err != nil || len(e) != 24 {
			return fmt.Errorf("index entry of %s: %v", id.Short(), err)
		}
		b := tx.Bucket(bucketBodies).Bucket(e[:8])
		key := []byte("body")
		if outboard {
			key = []byte("bao")
		} else {
			off += bodyHeaderSize
		}
		v := bytes.Clone(b.Get(key))
		v[off] ^= 0x40
		return b.Put(key, v)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestReadAtDamage(t *testing.T) {
	const off = 300_000 // in group 18
	tests := []struct {
		name     string
		outboard bool
		at       int
		// what a read at off sees
		wantEIO bool
		// what Check says
		wantOutboardProblem bool
	}{
		{"the block read", false, off + 10, true, false},
		{"another block", false, 900_000, false, false},
		{"the outboard's length", true, 3, false, true},
		{"a node on the block's path", true, 1 + 8 + 10, false, true},
		{"the group size", true, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := newLogger()
			s := openStore(t, t.TempDir()+"/ws.cfs", chunkstore.Options{Logger: logger})
			data := randBytes(31, 1<<20)
			p, _ := put(t, s, data)
			flipStored(t, s, p.ID, tt.outboard, tt.at)
			got, err := readAt(s, p.ID, off, 4096)
			if tt.wantEIO {
				if !errors.Is(err, syscall.EIO) || !errors.Is(err, chunkstore.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(p.ID.Short())) {
					t.Fatalf("ReadAt of a damaged block: %v, want EIO naming chunk %s", err, p.ID.Short())
				}
			} else if err != nil || !bytes.Equal(got, data[off:off+4096]) {
				t.Fatalf("ReadAt: %v (%d bytes, equal %v)", err, len(got), bytes.Equal(got, data[off:off+4096]))
			}
			if tt.outboard && !bytes.Contains(logs.Bytes(), []byte("damaged chunk outboard")) {
				t.Errorf("damaged outboard not logged: %s", logs)
			}
			problems, infos := check(t, s)
			if len(problems) != 1 || problems[0].ID != p.ID || problems[0].Outboard != tt.wantOutboardProblem {
				t.Fatalf("Check: %+v", problems)
			}
			if tt.wantOutboardProblem {
				if len(infos) != 1 {
					t.Fatalf("Check visited %d chunks: a chunk whose outboard alone is damaged is readable", len(infos))
				}
				if err := s.Update(func(tx *chunkstore.Tx) error { return tx.RebuildOutboard(p.ID) }); err != nil {
					t.Fatalf("RebuildOutboard: %v", err)
				}
				if problems, _ := check(t, s); len(problems) != 0 {
					t.Fatalf("Check after RebuildOutboard: %v", problems)
				}
				logs.Reset()
				if got, err := readAt(s, p.ID, off, 4096); err != nil || !bytes.Equal(got, data[off:off+4096]) || logs.Len() > 0 {
					t.Fatalf("ReadAt after RebuildOutboard: %v; logs %s", err, logs)
				}
			}
		})
	}
}

// A store of format 7 has bodies without outboards: it opens upgraded,
// and its chunks read whole, then new ones get outboards.
func TestUpgradeFromFormat7(t *testing.T) {
	path := t.TempDir() + "/ws.cfs"
	s, err := chunkstore.Open(path, chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(41, 1<<20)
	p := chunkstore.Prepare(data, nil)
	p.Outboard = nil // as format 7 stored it
	if err := s.Update(func(tx *chunkstore.Tx) error { _, err := tx.Put(&p); return err }); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("meta")).Put([]byte("format"), []byte{0, 0, 0, 7}); err != nil {
			return err
		}
		return sealed.In(tx, []byte("meta")).Put([]byte("format_sealed"), []byte{0, 0, 0, 7})
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true}); err == nil || !bytes.Contains([]byte(err.Error()), []byte("needs an upgrade to 8")) {
		t.Fatalf("read-only open of format 7: %v", err)
	}
	s = openStore(t, path, chunkstore.Options{})
	if _, err := readAt(s, p.ID, 0, 4096); !errors.Is(err, chunkstore.ErrNoOutboard) {
		t.Fatalf("ReadAt of a format 7 body: %v, want ErrNoOutboard", err)
	}
	if got, err := get(s, p.ID); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get of a format 7 body: %v", err)
	}
	q, _ := put(t, s, randBytes(42, 1<<20))
	if got, err := readAt(s, q.ID, 4096, 4096); err != nil || !bytes.Equal(got, randBytes(42, 1<<20)[4096:8192]) {
		t.Fatalf("ReadAt of a new body: %v", err)
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Fatalf("Check: %v", problems)
	}
}

// TestReadAtWarms checks that a chunk read at random in warmAfter
// distinct groups has the rest of its body read ahead, once, and that
// reads of fewer groups, or of one group again and again, do not.
func TestReadAtWarms(t *testing.T) {
	s, _ := newStore(t)
	data := randBytes(31, 1<<20)
	p, _ := put(t, s, data)
	group := 16 << 10
	tests := []struct {
		name   string
		groups []int // groups read, in order
		want   uint64
	}{
		{"one group again and again", []int{3, 3, 3, 3, 3, 3, 3, 3}, 0},
		{"fewer groups than the threshold", []int{0, 9, 17}[:chunkstore.WarmAfter-1], 0},
		{"the threshold", []int{0, 9, 17, 40, 63}[:chunkstore.WarmAfter], 1},
		{"past the threshold", []int{5, 6, 7, 8, 9, 10, 11, 12, 60}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.DropCaches()
			before := s.Warmed()
			for _, g := range tt.groups {
				off := g*group + 100
				got, err := readAt(s, p.ID, off, 4096)
				if err != nil {
					t.Fatalf("ReadAt group %d: %v", g, err)
				}
				if !bytes.Equal(got, data[off:off+4096]) {
					t.Fatalf("ReadAt group %d: wrong bytes", g)
				}
			}
			if got := s.Warmed() - before; got != tt.want {
				t.Errorf("%d chunks warmed, want %d", got, tt.want)
			}
			// The host side: the body's pages are in the page cache
			// (those of a chunk read ahead all of them; the read-ahead
			// was asked for before ReadAt returned) or only a few.
			cached, pages, err := s.BodyCached(p.ID)
			if err != nil {
				t.Fatal(err)
			}
			read := uint64(len(tt.groups)) * uint64(group/4096+1) // a group spans 5 pages when unaligned
			switch {
			case tt.want > 0 && cached < pages:
				t.Errorf("%d of the body's %d pages in the page cache after it was read ahead", cached, pages)
			case tt.want == 0 && cached > read:
				t.Errorf("%d of the body's %d pages in the page cache after %d groups were read", cached, pages, len(tt.groups))
			}
		})
	}
}

// TestReadAtRewarms checks that a warmed chunk whose pages the kernel
// let go is warmed again, but only rewarmAfter after it was, and only
// once it has been read at WarmAfter new places since then.
func TestReadAtRewarms(t *testing.T) {
	s, _ := newStore(t)
	data := randBytes(32, 1<<20)
	p, _ := put(t, s, data)
	now := time.Unix(1_000_000, 0)
	s.SetClock(func() time.Time { return now })
	s.DropCaches()
	read := func(groups ...int) {
		t.Helper()
		for _, g := range groups {
			off := g*16<<10 + 100
			got, err := readAt(s, p.ID, off, 4096)
			if err != nil || !bytes.Equal(got, data[off:off+4096]) {
				t.Fatalf("ReadAt group %d: %v, or wrong bytes", g, err)
			}
		}
	}
	check := func(when string, warmed uint64, whole bool) {
		t.Helper()
		if got := s.Warmed(); got != warmed {
			t.Errorf("%s: %d warmings, want %d", when, got, warmed)
		}
		cached, pages, err := s.BodyCached(p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if whole != (cached == pages) {
			t.Errorf("%s: %d of the body's %d pages in the page cache", when, cached, pages)
		}
	}
	first := s.Warmed()
	read(0, 10, 20, 30)
	check("after the first 4 parts", first+1, true)
	if err := s.DropBodyPages(p.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(chunkstore.RewarmAfter - time.Second)
	read(1, 11, 21, 31, 41, 51)
	check("within the quiet time", first+1, false)
	now = now.Add(2 * time.Second)
	read(2, 12, 22)
	check("3 new parts after it", first+1, false)
	read(32)
	check("the 4th", first+2, true)
}
