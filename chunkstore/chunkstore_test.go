package chunkstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// Bucket and key names of the on-disk format, spelled out here so that the
// tests notice if they change (FORMAT.md documents them).
var (
	bucketMeta   = []byte("meta")
	bucketBodies = []byte("chunks")
	bucketIndex  = []byte("chunkidx")
	keyFormat    = []byte("format")
	keyStats     = []byte("chunk_stats")
	keyMagic     = []byte("magic")
	keyChunkSize = []byte("chunk_size")
)

const bodyHeaderSize = 37 // codec, length, ID

// randBytes returns n pseudo-random (incompressible) bytes.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		copy(b[i:], w[:])
	}
	return b
}

// textBytes returns n highly compressible bytes.
func textBytes(seed, n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString("the quick brown fox jumps over the lazy dog ")
		sb.WriteByte(byte('0' + (i+seed)%10))
	}
	return []byte(sb.String()[:n])
}

func newLogger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func openStore(t *testing.T, path string, opts chunkstore.Options) *chunkstore.Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger, _ = newLogger()
	}
	s, err := chunkstore.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t *testing.T) (*chunkstore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	return openStore(t, path, chunkstore.Options{}), path
}

func put(t *testing.T, s *chunkstore.Store, data []byte) (chunkstore.Prepared, bool) {
	t.Helper()
	p := chunkstore.Prepare(data, nil)
	var stored bool
	err := s.Update(func(tx *chunkstore.Tx) error {
		var err error
		stored, err = tx.Put(&p)
		return err
	})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return p, stored
}

func stats(t *testing.T, s *chunkstore.Store) chunkstore.Stats {
	t.Helper()
	var st chunkstore.Stats
	if err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	}); err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func refs(t *testing.T, s *chunkstore.Store, id chunkstore.ID) uint64 {
	t.Helper()
	var n uint64
	if err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		n, err = tx.Refs(id)
		return err
	}); err != nil {
		t.Fatalf("Refs: %v", err)
	}
	return n
}

func get(s *chunkstore.Store, id chunkstore.ID) ([]byte, error) {
	var out []byte
	err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		out, err = tx.Get(id, nil)
		return err
	})
	return out, err
}

func check(t *testing.T, s *chunkstore.Store) ([]chunkstore.Problem, []chunkstore.ChunkInfo) {
	t.Helper()
	var problems []chunkstore.Problem
	var infos []chunkstore.ChunkInfo
	if err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		problems, err = tx.Check(func(ci chunkstore.ChunkInfo) { infos = append(infos, ci) })
		return err
	}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return problems, infos
}

func bucketLen(t *testing.T, s *chunkstore.Store, name []byte) int {
	t.Helper()
	n := 0
	if err := s.DB().View(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(k, v []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// rawBody returns the stored value (header and body) of chunk id and its key.
func rawBody(t *testing.T, s *chunkstore.Store, id chunkstore.ID) (key, val []byte) {
	t.Helper()
	if err := s.DB().View(func(tx *bolt.Tx) error {
		e, err := sealed.In(tx, bucketIndex).Get(id[:])
		if err != nil || len(e) != 24 {
			t.Fatalf("index entry of %s is %d bytes", id.Short(), len(e))
		}
		key = bytes.Clone(e[:8])
		val = bytes.Clone(chunkstore.BodyValue(tx.Bucket(bucketBodies), key))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if val == nil {
		t.Fatalf("no body for %s", id.Short())
	}
	return key, val
}

func TestIDFormatting(t *testing.T) {
	id := chunkstore.Sum([]byte("hello"))
	if s := id.String(); len(s) != 64 || !strings.HasPrefix(s, id.Short()) || len(id.Short()) != 12 {
		t.Errorf("String %q Short %q", s, id.Short())
	}
	if chunkstore.Sum([]byte("hello")) != id || chunkstore.Sum([]byte("hellp")) == id {
		t.Error("Sum is not a function of the data")
	}
	// BLAKE3-256 of the empty input, a published test vector.
	if got := chunkstore.Sum(nil).String(); got != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Errorf("Sum(nil) = %s, not BLAKE3", got)
	}
}

func TestPrepare(t *testing.T) {
	mixed := randBytes(7, 1<<20)
	clear(mixed[:len(mixed)/2]) // compresses by about half
	nearlyRandom := randBytes(8, 1<<16)
	clear(nearlyRandom[:len(nearlyRandom)/16]) // saves ~6%: not worth it
	tests := []struct {
		name      string
		data      []byte
		wantCodec byte
	}{
		{"empty", nil, chunkstore.CodecRaw},
		{"short text stays raw", textBytes(0, 63), chunkstore.CodecRaw},
		{"64 zero bytes", make([]byte, 64), chunkstore.CodecS2},
		{"4 KiB zeros", make([]byte, 4096), chunkstore.CodecS2},
		{"1 MiB text", textBytes(1, 1<<20), chunkstore.CodecS2},
		{"half zeros", mixed, chunkstore.CodecS2},
		{"4 KiB random", randBytes(1, 4096), chunkstore.CodecRaw},
		{"1 MiB random", randBytes(2, 1<<20), chunkstore.CodecRaw},
		{"random with a 1/16 zero run", nearlyRandom, chunkstore.CodecRaw},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := bytes.Clone(tt.data)
			p := chunkstore.Prepare(tt.data, nil)
			if p.ID != chunkstore.Sum(orig) {
				t.Errorf("ID is not the hash of the plaintext")
			}
			if p.Len != len(orig) {
				t.Errorf("Len = %d, want %d", p.Len, len(orig))
			}
			if p.Codec != tt.wantCodec {
				t.Fatalf("Codec = %d, want %d (body %d of %d bytes)", p.Codec, tt.wantCodec, len(p.Body), len(orig))
			}
			if !bytes.Equal(tt.data, orig) {
				t.Errorf("Prepare modified its input")
			}
			switch p.Codec {
			case chunkstore.CodecRaw:
				if !bytes.Equal(p.Body, orig) {
					t.Errorf("raw body differs from data")
				}
			case chunkstore.CodecS2:
				if len(p.Body) > len(orig)-len(orig)/8 {
					t.Errorf("S2 body of %d bytes saves less than an eighth of %d", len(p.Body), len(orig))
				}
				dec, err := s2.Decode(nil, p.Body)
				if err != nil || !bytes.Equal(dec, orig) {
					t.Errorf("S2 body does not decode to the data (err %v)", err)
				}
			}
		})
	}
}

func TestPrepareUsesScratch(t *testing.T) {
	data := textBytes(3, 1<<16)
	scratch := make([]byte, 0, s2.MaxEncodedLen(len(data)))
	p := chunkstore.Prepare(data, scratch)
	if p.Codec != chunkstore.CodecS2 {
		t.Fatalf("codec %d", p.Codec)
	}
	if &p.Body[0] != &scratch[:1][0] {
		t.Errorf("compressed body does not use the scratch buffer")
	}
	// A scratch buffer too small is replaced, not overrun.
	small := make([]byte, 0, 10)
	p = chunkstore.Prepare(data, small)
	if dec, err := s2.Decode(nil, p.Body); err != nil || !bytes.Equal(dec, data) {
		t.Errorf("with a small scratch buffer: %v", err)
	}
}

// TestPutDedupStats runs a sequence of operations and checks reference
// counts and every counter after each one.
func TestPutDedupStats(t *testing.T) {
	a := textBytes(0, 100000) // compresses
	b := randBytes(5, 50000)  // does not
	c := textBytes(9, 3000)
	pa, pb, pc := chunkstore.Prepare(a, nil), chunkstore.Prepare(b, nil), chunkstore.Prepare(c, nil)
	if pa.Codec != chunkstore.CodecS2 || pb.Codec != chunkstore.CodecRaw {
		t.Fatalf("test data does not compress as expected: %d %d", pa.Codec, pb.Codec)
	}
	sa, sb, sc := uint64(len(pa.Body)), uint64(len(pb.Body)), uint64(len(pc.Body))
	la, lb, lc := uint64(len(a)), uint64(len(b)), uint64(len(c))
	type op struct {
		name       string
		do         string // put, ref, unref
		data       []byte
		wantStored bool
		wantErr    error
		wantRefs   uint64
		want       chunkstore.Stats
	}
	ops := []op{
		{name: "put a", do: "put", data: a, wantStored: true, wantRefs: 1,
			want: chunkstore.Stats{Chunks: 1, LogicalBytes: la, UniqueBytes: la, StoredBytes: sa}},
		{name: "put a again dedups", do: "put", data: a, wantStored: false, wantRefs: 2,
			want: chunkstore.Stats{Chunks: 1, LogicalBytes: 2 * la, UniqueBytes: la, StoredBytes: sa}},
		{name: "put b", do: "put", data: b, wantStored: true, wantRefs: 1,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*la + lb, UniqueBytes: la + lb, StoredBytes: sa + sb}},
		{name: "ref b", do: "ref", data: b, wantRefs: 2,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*la + 2*lb, UniqueBytes: la + lb, StoredBytes: sa + sb}},
		{name: "ref missing c", do: "ref", data: c, wantErr: chunkstore.ErrNotFound, wantRefs: 0,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*la + 2*lb, UniqueBytes: la + lb, StoredBytes: sa + sb}},
		{name: "unref missing c", do: "unref", data: c, wantErr: chunkstore.ErrNotFound, wantRefs: 0,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*la + 2*lb, UniqueBytes: la + lb, StoredBytes: sa + sb}},
		{name: "put c", do: "put", data: c, wantStored: true, wantRefs: 1,
			want: chunkstore.Stats{Chunks: 3, LogicalBytes: 2*la + 2*lb + lc, UniqueBytes: la + lb + lc, StoredBytes: sa + sb + sc}},
		{name: "unref a", do: "unref", data: a, wantRefs: 1,
			want: chunkstore.Stats{Chunks: 3, LogicalBytes: la + 2*lb + lc, UniqueBytes: la + lb + lc, StoredBytes: sa + sb + sc}},
		{name: "unref a to zero", do: "unref", data: a, wantRefs: 0,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*lb + lc, UniqueBytes: lb + lc, StoredBytes: sb + sc}},
		{name: "unref a once more", do: "unref", data: a, wantErr: chunkstore.ErrNotFound, wantRefs: 0,
			want: chunkstore.Stats{Chunks: 2, LogicalBytes: 2*lb + lc, UniqueBytes: lb + lc, StoredBytes: sb + sc}},
		{name: "put a back", do: "put", data: a, wantStored: true, wantRefs: 1,
			want: chunkstore.Stats{Chunks: 3, LogicalBytes: la + 2*lb + lc, UniqueBytes: la + lb + lc, StoredBytes: sa + sb + sc}},
	}
	s, path := newStore(t)
	for _, o := range ops {
		p := chunkstore.Prepare(o.data, nil)
		var stored bool
		err := s.Update(func(tx *chunkstore.Tx) error {
			var err error
			switch o.do {
			case "put":
				stored, err = tx.Put(&p)
			case "ref":
				err = tx.Ref(p.ID)
			case "unref":
				err = tx.Unref(p.ID)
			}
			return err
		})
		if !errors.Is(err, o.wantErr) || (o.wantErr == nil) != (err == nil) {
			t.Fatalf("%s: err = %v, want %v", o.name, err, o.wantErr)
		}
		if stored != o.wantStored {
			t.Errorf("%s: stored = %v, want %v", o.name, stored, o.wantStored)
		}
		if got := refs(t, s, p.ID); got != o.wantRefs {
			t.Errorf("%s: refs = %d, want %d", o.name, got, o.wantRefs)
		}
		if got := stats(t, s); got != o.want {
			t.Errorf("%s: stats = %+v, want %+v", o.name, got, o.want)
		}
		if problems, _ := check(t, s); len(problems) > 0 {
			t.Errorf("%s: Check: %v", o.name, problems)
		}
	}
	st := stats(t, s)
	if got, want := st.DedupRatio(), float64(la+2*lb+lc)/float64(la+lb+lc); got != want {
		t.Errorf("DedupRatio = %v, want %v", got, want)
	}
	if got, want := st.CompressionRatio(), float64(la+lb+lc)/float64(sa+sb+sc); got != want || got <= 1 {
		t.Errorf("CompressionRatio = %v, want %v (> 1)", got, want)
	}
	// Every chunk reads back as its data, and the counters persist.
	for _, d := range [][]byte{a, b, c} {
		if out, err := get(s, chunkstore.Sum(d)); err != nil || !bytes.Equal(out, d) {
			t.Errorf("Get: %v", err)
		}
	}
	if bucketLen(t, s, bucketBodies) != 3 || bucketLen(t, s, bucketIndex) != 3 {
		t.Errorf("bodies %d index %d, want 3 and 3", bucketLen(t, s, bucketBodies), bucketLen(t, s, bucketIndex))
	}
	s.Close()
	s = openStore(t, path, chunkstore.Options{})
	if got := stats(t, s); got != st {
		t.Errorf("stats after reopen = %+v, want %+v", got, st)
	}
}

func TestStatsRatios(t *testing.T) {
	tests := []struct {
		st                 chunkstore.Stats
		dedup, compression float64
	}{
		{chunkstore.Stats{}, 1, 1},
		{chunkstore.Stats{LogicalBytes: 10}, 1, 1},
		{chunkstore.Stats{Chunks: 1, LogicalBytes: 300, UniqueBytes: 100, StoredBytes: 25}, 3, 4},
		{chunkstore.Stats{Chunks: 1, LogicalBytes: 100, UniqueBytes: 100, StoredBytes: 100}, 1, 1},
		{chunkstore.Stats{Chunks: 2, LogicalBytes: 150, UniqueBytes: 100, StoredBytes: 200}, 1.5, 0.5},
	}
	for _, tt := range tests {
		if got := tt.st.DedupRatio(); got != tt.dedup {
			t.Errorf("%+v: DedupRatio = %v, want %v", tt.st, got, tt.dedup)
		}
		if got := tt.st.CompressionRatio(); got != tt.compression {
			t.Errorf("%+v: CompressionRatio = %v, want %v", tt.st, got, tt.compression)
		}
	}
}

func TestUnrefToZeroDeletesBodyAndIndex(t *testing.T) {
	s, _ := newStore(t)
	keep, _ := put(t, s, randBytes(1, 5000))
	p, _ := put(t, s, textBytes(2, 20000))
	put(t, s, textBytes(2, 20000))
	bodyKey, _ := rawBody(t, s, p.ID)
	for i, want := range []uint64{1, 0} {
		if err := s.Update(func(tx *chunkstore.Tx) error { return tx.Unref(p.ID) }); err != nil {
			t.Fatalf("Unref %d: %v", i, err)
		}
		if got := refs(t, s, p.ID); got != want {
			t.Errorf("after Unref %d: refs %d, want %d", i, got, want)
		}
	}
	var has bool
	var body []byte
	s.View(func(tx *chunkstore.Tx) error {
		has, _ = tx.Has(p.ID)
		body = chunkstore.BodyValue(tx.Bucket(bucketBodies), bodyKey)
		return nil
	})
	if has || body != nil {
		t.Errorf("after the last Unref: Has %v, body present %v", has, body != nil)
	}
	if _, err := get(s, p.ID); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("Get of a deleted chunk: %v, want ErrNotFound", err)
	}
	if n := bucketLen(t, s, bucketBodies); n != 1 {
		t.Errorf("%d bodies left, want 1", n)
	}
	if got, want := stats(t, s), (chunkstore.Stats{Chunks: 1, LogicalBytes: 5000, UniqueBytes: 5000, StoredBytes: uint64(len(keep.Body))}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check: %v", problems)
	}
}

func TestGetIntoDst(t *testing.T) {
	s, _ := newStore(t)
	for _, data := range [][]byte{randBytes(3, 10000), textBytes(4, 10000)} {
		p, _ := put(t, s, data)
		dst := make([]byte, 0, 20000)
		var out []byte
		if err := s.View(func(tx *chunkstore.Tx) error {
			var err error
			out, err = tx.Get(p.ID, dst)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("codec %d: Get returned wrong data", p.Codec)
		}
		if &out[0] != &dst[:1][0] {
			t.Errorf("codec %d: Get did not use dst", p.Codec)
		}
	}
	// The result must not alias the mmap: it stays valid after the
	// transaction and after the chunk is deleted.
	data := randBytes(4, 8192)
	p, _ := put(t, s, data)
	out, err := get(s, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.Update(func(tx *chunkstore.Tx) error { return tx.Unref(p.ID) })
	put(t, s, randBytes(5, 8192))
	if !bytes.Equal(out, data) {
		t.Error("Get result changed after the transaction ended")
	}
}

func TestGetAndCheckDetectCorruption(t *testing.T) {
	raw := randBytes(11, 8192)
	comp := textBytes(12, 8192)
	tests := []struct {
		name string
		data []byte
		// damage changes the stored body value (header included); nil
		// deletes it.
		damage func(v []byte) []byte
		// damageIndex, if set, replaces the index entry instead.
		damageIndex func(v []byte) []byte
		wantDetail  string // substring of Check's problem
		// wantProblems is the number of problems Check reports (1 if 0):
		// an undecodable index entry also leaves its body unreachable.
		wantProblems int
	}{
		{name: "raw body byte flipped", data: raw,
			damage:     func(v []byte) []byte { v[bodyHeaderSize+100] ^= 0x40; return v },
			wantDetail: "hash mismatch"},
		{name: "raw body last byte flipped", data: raw,
			damage:     func(v []byte) []byte { v[len(v)-1] ^= 1; return v },
			wantDetail: "hash mismatch"},
		{name: "raw body truncated", data: raw,
			damage:     func(v []byte) []byte { return v[:len(v)-1] },
			wantDetail: "raw body is"},
		{name: "s2 body byte flipped", data: comp,
			damage:     func(v []byte) []byte { v[len(v)-3] ^= 0xff; return v },
			wantDetail: ""},
		{name: "s2 body truncated", data: comp,
			damage:     func(v []byte) []byte { return v[:len(v)-5] },
			wantDetail: "s2 body"},
		{name: "unknown codec", data: raw,
			damage:     func(v []byte) []byte { v[0] = 7; return v },
			wantDetail: "unknown codec"},
		{name: "header shorter than 37 bytes", data: raw,
			damage:     func(v []byte) []byte { return v[:20] },
			wantDetail: "shorter than its header"},
		{name: "header length lies", data: raw,
			damage:     func(v []byte) []byte { binary.BigEndian.PutUint32(v[1:], 100); return v },
			wantDetail: "header says 100"},
		{name: "body missing", data: raw,
			damage:     nil,
			wantDetail: "body missing"},
		{name: "index entry truncated", data: raw,
			damageIndex: func(v []byte) []byte { return v[:23] },
			wantDetail:  "index entry is 23 bytes", wantProblems: 2},
		{name: "index entry with zero refs", data: raw,
			damageIndex: func(v []byte) []byte { clear(v[8:16]); return v },
			wantDetail:  "zero references", wantProblems: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ws.cfs")
			log, logs := newLogger()
			s := openStore(t, path, chunkstore.Options{Logger: log})
			other, _ := put(t, s, randBytes(99, 4096))
			p, _ := put(t, s, tt.data)
			if problems, _ := check(t, s); len(problems) > 0 {
				t.Fatalf("Check before damage: %v", problems)
			}
			key, val := rawBody(t, s, p.ID)
			if err := s.DB().Update(func(tx *bolt.Tx) error {
				if tt.damageIndex != nil {
					// Sealed again: the damage is for the decoder to find.
					idx := sealed.In(tx, bucketIndex)
					v, err := idx.Get(p.ID[:])
					if err != nil {
						return err
					}
					return idx.Put(p.ID[:], tt.damageIndex(bytes.Clone(v)))
				}
				if tt.damage == nil {
					return chunkstore.DeleteBodyValue(tx.Bucket(bucketBodies), key)
				}
				return chunkstore.PutBodyValue(tx.Bucket(bucketBodies), key, tt.damage(val))
			}); err != nil {
				t.Fatal(err)
			}
			_, err := get(s, p.ID)
			if !errors.Is(err, chunkstore.ErrCorrupt) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Get of a damaged chunk: %v, want ErrCorrupt and EIO", err)
			}
			if !strings.Contains(logs.String(), p.ID.String()) || !strings.Contains(logs.String(), path) {
				t.Errorf("log does not name the chunk and the store: %q", logs.String())
			}
			// The undamaged chunk is still readable.
			if _, err := get(s, other.ID); err != nil {
				t.Errorf("Get of an intact chunk: %v", err)
			}
			problems, infos := check(t, s)
			found := false
			for _, pr := range problems {
				if pr.ID == p.ID && strings.Contains(pr.Detail, tt.wantDetail) {
					found = true
				}
				if pr.ID == other.ID {
					t.Errorf("Check blames the intact chunk: %v", pr)
				}
			}
			if !found || len(problems) != max(tt.wantProblems, 1) {
				t.Errorf("Check problems %v, want one about %s containing %q", problems, p.ID.Short(), tt.wantDetail)
			}
			if !strings.Contains(problems[0].String(), p.ID.Short()) {
				t.Errorf("Problem.String() = %q does not name the chunk", problems[0].String())
			}
			if len(infos) != 1 || infos[0].ID != other.ID {
				t.Errorf("Check visited %v, want only the intact chunk", infos)
			}
			// A damaged chunk can be deleted whatever its state, leaving the
			// store clean.
			if err := s.Update(func(tx *chunkstore.Tx) error {
				if err := tx.DeleteChunk(p.ID); err != nil {
					return err
				}
				_, _, err := tx.DeleteUnreachableBodies()
				return err
			}); err != nil {
				t.Fatalf("DeleteChunk: %v", err)
			}
			if problems, _ := check(t, s); len(problems) > 0 {
				t.Errorf("Check after DeleteChunk: %v", problems)
			}
			want := chunkstore.Stats{Chunks: 1, LogicalBytes: 4096, UniqueBytes: 4096, StoredBytes: 4096}
			if got := stats(t, s); got != want {
				t.Errorf("stats after DeleteChunk %+v, want %+v", got, want)
			}
		})
	}
}

func TestCorruptIndexEntryRefusesChanges(t *testing.T) {
	s, _ := newStore(t)
	p, _ := put(t, s, randBytes(1, 1000))
	s.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketIndex).Put(p.ID[:], []byte("short")) })
	for name, fn := range map[string]func(tx *chunkstore.Tx) error{
		"Put":   func(tx *chunkstore.Tx) error { _, err := tx.Put(&p); return err },
		"Ref":   func(tx *chunkstore.Tx) error { return tx.Ref(p.ID) },
		"Unref": func(tx *chunkstore.Tx) error { return tx.Unref(p.ID) },
		"Refs":  func(tx *chunkstore.Tx) error { _, err := tx.Refs(p.ID); return err },
	} {
		if err := s.Update(fn); !errors.Is(err, chunkstore.ErrCorrupt) {
			t.Errorf("%s on a corrupt index entry: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestUnreachableBodies(t *testing.T) {
	s, _ := newStore(t)
	p, _ := put(t, s, randBytes(1, 3000))
	_, val := rawBody(t, s, p.ID)
	// Two bodies no index entry points to, as a crash of an older version
	// or a damaged index could leave.
	if err := s.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBodies)
		if err := chunkstore.PutBodyValue(b, binary.BigEndian.AppendUint64(nil, 1000), val); err != nil {
			return err
		}
		return chunkstore.PutBodyValue(b, binary.BigEndian.AppendUint64(nil, 1001), []byte("junk"))
	}); err != nil {
		t.Fatal(err)
	}
	problems, _ := check(t, s)
	var seqs []uint64
	for _, pr := range problems {
		if pr.ID != (chunkstore.ID{}) || !strings.Contains(pr.Detail, "unreachable") {
			t.Errorf("unexpected problem %v", pr)
		}
		if !strings.HasPrefix(pr.String(), "body ") {
			t.Errorf("Problem.String() = %q", pr.String())
		}
		seqs = append(seqs, pr.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 1000 || seqs[1] != 1001 {
		t.Fatalf("unreachable bodies reported: %v, want [1000 1001]", seqs)
	}
	var n int
	var freed uint64
	if err := s.Update(func(tx *chunkstore.Tx) error {
		var err error
		n, freed, err = tx.DeleteUnreachableBodies()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 || freed != uint64(len(val)+4) {
		t.Errorf("DeleteUnreachableBodies = %d, %d; want 2, %d", n, freed, len(val)+4)
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check after: %v", problems)
	}
	if out, err := get(s, p.ID); err != nil || len(out) != 3000 {
		t.Errorf("reachable chunk lost: %v", err)
	}
	// Nothing left to delete.
	s.Update(func(tx *chunkstore.Tx) error {
		n, freed, _ = tx.DeleteUnreachableBodies()
		return nil
	})
	if n != 0 || freed != 0 {
		t.Errorf("second DeleteUnreachableBodies = %d, %d", n, freed)
	}
}

func TestSetRefs(t *testing.T) {
	s, _ := newStore(t)
	a, _ := put(t, s, randBytes(1, 1000))
	b, _ := put(t, s, textBytes(1, 2000))
	setRefs := func(id chunkstore.ID, n uint64) error {
		return s.Update(func(tx *chunkstore.Tx) error { return tx.SetRefs(id, n) })
	}
	if err := setRefs(a.ID, 5); err != nil {
		t.Fatal(err)
	}
	sb := uint64(len(b.Body))
	if got, want := stats(t, s), (chunkstore.Stats{Chunks: 2, LogicalBytes: 5*1000 + 2000, UniqueBytes: 3000, StoredBytes: 1000 + sb}); got != want {
		t.Errorf("after SetRefs 5: %+v, want %+v", got, want)
	}
	if refs(t, s, a.ID) != 5 {
		t.Errorf("refs %d", refs(t, s, a.ID))
	}
	if err := setRefs(a.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := stats(t, s), (chunkstore.Stats{Chunks: 1, LogicalBytes: 2000, UniqueBytes: 2000, StoredBytes: sb}); got != want {
		t.Errorf("after SetRefs 0: %+v, want %+v", got, want)
	}
	if bucketLen(t, s, bucketBodies) != 1 || bucketLen(t, s, bucketIndex) != 1 {
		t.Errorf("SetRefs 0 left the body or index entry")
	}
	if err := setRefs(a.ID, 1); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("SetRefs of a missing chunk: %v", err)
	}
	// A damaged index entry (zero references) is dropped with its body
	// whatever count is asked for.
	s.DB().Update(func(tx *bolt.Tx) error {
		idx := sealed.In(tx, bucketIndex)
		v, _ := idx.Get(b.ID[:])
		v = bytes.Clone(v)
		clear(v[8:16])
		return idx.Put(b.ID[:], v)
	})
	if err := setRefs(b.ID, 3); err != nil {
		t.Fatal(err)
	}
	if bucketLen(t, s, bucketBodies) != 0 || bucketLen(t, s, bucketIndex) != 0 || stats(t, s) != (chunkstore.Stats{}) {
		t.Errorf("SetRefs on a damaged entry left %d bodies, %d entries, stats %+v",
			bucketLen(t, s, bucketBodies), bucketLen(t, s, bucketIndex), stats(t, s))
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check: %v", problems)
	}
}

func TestRecomputeStats(t *testing.T) {
	s, _ := newStore(t)
	put(t, s, randBytes(1, 1000))
	put(t, s, randBytes(1, 1000))
	c, _ := put(t, s, textBytes(2, 7000))
	want := stats(t, s)
	if want != (chunkstore.Stats{Chunks: 2, LogicalBytes: 9000, UniqueBytes: 8000, StoredBytes: 1000 + uint64(len(c.Body))}) {
		t.Fatalf("stats %+v", want)
	}
	for _, bad := range [][]byte{
		(make([]byte, 32)),
		bytes.Repeat([]byte{0xff}, 32),
		[]byte("short"),
	} {
		s.DB().Update(func(tx *bolt.Tx) error { return sealed.In(tx, bucketMeta).Put(keyStats, bad) })
		if len(bad) != 32 {
			if err := s.View(func(tx *chunkstore.Tx) error { _, err := tx.Stats(); return err }); !errors.Is(err, chunkstore.ErrCorrupt) {
				t.Errorf("Stats of a %d-byte record: %v, want ErrCorrupt", len(bad), err)
			}
			p := chunkstore.Prepare([]byte("x"), nil)
			if err := s.Update(func(tx *chunkstore.Tx) error { _, err := tx.Put(&p); return err }); !errors.Is(err, chunkstore.ErrCorrupt) {
				t.Errorf("Put with a bad stats record: %v, want ErrCorrupt", err)
			}
		}
		if err := s.Update(func(tx *chunkstore.Tx) error { return tx.RecomputeStats() }); err != nil {
			t.Fatal(err)
		}
		if got := stats(t, s); got != want {
			t.Errorf("RecomputeStats = %+v, want %+v", got, want)
		}
	}
}

func TestForEachChunkAndCheckVisit(t *testing.T) {
	s, _ := newStore(t)
	want := map[chunkstore.ID]chunkstore.ChunkInfo{}
	for i := range 5 {
		data := textBytes(i, 1000*(i+1))
		if i%2 == 1 {
			data = randBytes(uint64(i), 1000*(i+1))
		}
		var p chunkstore.Prepared
		for range i + 1 {
			p, _ = put(t, s, data)
		}
		want[p.ID] = chunkstore.ChunkInfo{ID: p.ID, Refs: uint64(i + 1), Len: uint32(len(data)), Stored: uint32(len(p.Body))}
	}
	got := map[chunkstore.ID]chunkstore.ChunkInfo{}
	s.View(func(tx *chunkstore.Tx) error {
		return tx.ForEachChunk(func(ci chunkstore.ChunkInfo) error { got[ci.ID] = ci; return nil })
	})
	if len(got) != len(want) {
		t.Fatalf("ForEachChunk visited %d, want %d", len(got), len(want))
	}
	for id, ci := range want {
		if got[id] != ci {
			t.Errorf("ForEachChunk %v, want %v", got[id], ci)
		}
	}
	_, infos := check(t, s)
	if len(infos) != len(want) {
		t.Fatalf("Check visited %d", len(infos))
	}
	for _, ci := range infos {
		if want[ci.ID] != ci {
			t.Errorf("Check visit %v, want %v", ci, want[ci.ID])
		}
	}
	// An error from the visitor stops the walk and is returned.
	stop := errors.New("stop")
	calls := 0
	err := s.View(func(tx *chunkstore.Tx) error {
		return tx.ForEachChunk(func(chunkstore.ChunkInfo) error { calls++; return stop })
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ForEachChunk error: %v after %d calls", err, calls)
	}
}

func TestOpenInUse(t *testing.T) {
	s, path := newStore(t)
	for _, ro := range []bool{false, true} {
		start := time.Now()
		s2, err := chunkstore.Open(path, chunkstore.Options{LockTimeout: 50 * time.Millisecond, ReadOnly: ro})
		if err == nil {
			s2.Close()
			t.Fatalf("ReadOnly %v: second Open of a store in use succeeded", ro)
		}
		if !errors.Is(err, chunkstore.ErrInUse) {
			t.Errorf("ReadOnly %v: %v, want ErrInUse", ro, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error does not name the file: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("ReadOnly %v: refusal took %v", ro, d)
		}
	}
	s.Close()
	s2, err := chunkstore.Open(path, chunkstore.Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	s2.Close()
}

func TestOpenReadOnly(t *testing.T) {
	s, path := newStore(t)
	p, _ := put(t, s, textBytes(1, 5000))
	s.Close()
	// Two readers may share the file.
	r1 := openStore(t, path, chunkstore.Options{ReadOnly: true})
	r2 := openStore(t, path, chunkstore.Options{ReadOnly: true})
	for _, r := range []*chunkstore.Store{r1, r2} {
		if out, err := get(r, p.ID); err != nil || !bytes.Equal(out, textBytes(1, 5000)) {
			t.Errorf("Get read-only: %v", err)
		}
	}
	q := chunkstore.Prepare([]byte("new"), nil)
	if err := r1.Update(func(tx *chunkstore.Tx) error { _, err := tx.Put(&q); return err }); err == nil {
		t.Error("Put on a read-only store succeeded")
	}
	// A missing file cannot be opened read-only.
	if s, err := chunkstore.Open(filepath.Join(t.TempDir(), "missing"), chunkstore.Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Error("read-only Open of a missing file succeeded")
	}
}

func setMeta(t *testing.T, path string, key, val []byte) {
	t.Helper()
	s := openStore(t, path, chunkstore.Options{})
	// The version is bare (older binaries read it); the rest is sealed.
	// An older version is one of a store without a sealed copy of it.
	put := func(tx *bolt.Tx) error {
		if bytes.Equal(key, keyMagic) || bytes.Equal(key, keyFormat) {
			if bytes.Equal(key, keyFormat) && len(val) == 4 && binary.BigEndian.Uint32(val) < 3 {
				tx.Bucket(bucketMeta).Delete([]byte("format_sealed"))
			}
			return tx.Bucket(bucketMeta).Put(key, val)
		}
		return sealed.In(tx, bucketMeta).Put(key, val)
	}
	if err := s.DB().Update(put); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestOpenFormatVersion(t *testing.T) {
	tests := []struct {
		name    string
		version []byte
		ro      bool
		wantErr error
		wantMsg []string
	}{
		{name: "newer", version: binary.BigEndian.AppendUint32(nil, chunkstore.FormatVersion+1),
			wantErr: chunkstore.ErrNewerFormat, wantMsg: []string{fmt.Sprintf("format version %d", chunkstore.FormatVersion+1), fmt.Sprintf("up to %d", chunkstore.FormatVersion), "upgrade computerfs"}},
		{name: "newer read-only", version: binary.BigEndian.AppendUint32(nil, chunkstore.FormatVersion+1), ro: true,
			wantErr: chunkstore.ErrNewerFormat, wantMsg: []string{fmt.Sprintf("format version %d", chunkstore.FormatVersion+1)}},
		{name: "much newer", version: binary.BigEndian.AppendUint32(nil, 1<<31),
			wantErr: chunkstore.ErrNewerFormat, wantMsg: []string{"format version 2147483648"}},
		{name: "older without an upgrade path", version: binary.BigEndian.AppendUint32(nil, 0),
			wantMsg: []string{"no upgrade path from format version 0"}},
		{name: "older read-only", version: binary.BigEndian.AppendUint32(nil, 0), ro: true,
			wantMsg: []string{"needs an upgrade", "read-write"}},
		{name: "malformed", version: []byte{1},
			wantErr: chunkstore.ErrNotWorkspace, wantMsg: []string{"format version record"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ws.cfs")
			setMeta(t, path, keyFormat, tt.version)
			s, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: tt.ro})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			for _, m := range append(tt.wantMsg, path) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			// A refused store is left as it was and unlocked.
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("store left locked: %v", err)
			}
			db.View(func(tx *bolt.Tx) error {
				if got := tx.Bucket(bucketMeta).Get(keyFormat); !bytes.Equal(got, tt.version) {
					t.Errorf("format record changed to %x", got)
				}
				return nil
			})
			db.Close()
		})
	}
}

func TestOpenBadMeta(t *testing.T) {
	tests := []struct {
		name     string
		key, val []byte
		wantMsg  string
	}{
		{"bad magic", keyMagic, []byte("something else"), "bad magic"},
		{"chunk size too small", keyChunkSize, binary.BigEndian.AppendUint32(nil, 512), "chunk size 512 out of range"},
		{"chunk size record malformed", keyChunkSize, []byte{1, 2}, "bad chunk size record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ws.cfs")
			setMeta(t, path, tt.key, tt.val)
			s, err := chunkstore.Open(path, chunkstore.Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, chunkstore.ErrNotWorkspace) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want ErrNotWorkspace saying %q", err, tt.wantMsg)
			}
		})
	}
}

// realStoreBytes returns the bytes of a closed store holding some chunks,
// and the length of its used part: bbolt's high-water mark.
func realStoreBytes(t *testing.T) ([]byte, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "real.cfs")
	s := openStore(t, path, chunkstore.Options{})
	for i := range 30 {
		put(t, s, randBytes(uint64(i), 50000))
	}
	var used int
	s.DB().View(func(tx *bolt.Tx) error { used = int(tx.Size()); return nil })
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if used < 1<<20 || used > len(data) {
		t.Fatalf("store uses %d of %d bytes", used, len(data))
	}
	return data, used
}

func TestOpenDamagedFiles(t *testing.T) {
	real, used := realStoreBytes(t)
	otherBolt := func(t *testing.T, path string) {
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucket([]byte("something"))
			return b.Put([]byte("k"), []byte("v"))
		})
		db.Close()
	}
	noBodies := func(t *testing.T, path string) {
		setMeta(t, path, []byte("x"), []byte("y"))
		db, _ := bolt.Open(path, 0o600, nil)
		db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketIndex) })
		db.Close()
	}
	bytesOf := func(b []byte) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		wantErr error // nil: any error
	}{
		{"5000 bytes of a real store", bytesOf(real[:5000]), chunkstore.ErrNotWorkspace},
		{"one page of a real store", bytesOf(real[:4096]), chunkstore.ErrNotWorkspace},
		{"two pages of a real store", bytesOf(real[:8192]), chunkstore.ErrNotWorkspace},
		{"16 KiB of a real store", bytesOf(real[:16384]), chunkstore.ErrNotWorkspace},
		{"1 MB of a real store", bytesOf(real[:1000000]), chunkstore.ErrNotWorkspace},
		{"half of the used part", bytesOf(real[:used/2]), chunkstore.ErrNotWorkspace},
		{"last used page missing", bytesOf(real[:used-4096]), chunkstore.ErrNotWorkspace},
		{"one byte short of the used part", bytesOf(real[:used-1]), chunkstore.ErrNotWorkspace},
		{"tiny garbage", bytesOf([]byte("hello")), chunkstore.ErrNotWorkspace},
		{"64 KiB of random bytes", bytesOf(randBytes(1, 1<<16)), chunkstore.ErrNotWorkspace},
		{"1 MiB of zeros", bytesOf(make([]byte, 1<<20)), chunkstore.ErrNotWorkspace},
		{"a text file", bytesOf([]byte(strings.Repeat("not a database\n", 2000))), chunkstore.ErrNotWorkspace},
		{"both meta pages damaged", bytesOf(func() []byte {
			b := bytes.Clone(real)
			b[40] ^= 1 // the root page number, under the checksum
			b[4096+40] ^= 1
			return b
		}()), chunkstore.ErrNotWorkspace},
		{"a directory", func(t *testing.T, path string) { os.Mkdir(path, 0o700) }, chunkstore.ErrNotWorkspace},
		{"another program's bbolt file", otherBolt, chunkstore.ErrNotWorkspace},
		{"chunk buckets missing", noBodies, chunkstore.ErrNotWorkspace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ws.cfs")
			tt.make(t, path)
			for _, ro := range []bool{false, true} {
				s, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: ro, LockTimeout: time.Second})
				if err == nil {
					s.Close()
					t.Fatalf("ReadOnly %v: Open succeeded", ro)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("ReadOnly %v: err = %v, want %v", ro, err, tt.wantErr)
				}
				if errors.Is(err, chunkstore.ErrInUse) {
					t.Errorf("a damaged file reported as in use: %v", err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error does not name the file: %v", err)
				}
			}
		})
	}
	// The real store itself opens and checks clean.
	path := filepath.Join(t.TempDir(), "ws.cfs")
	os.WriteFile(path, real, 0o600)
	s := openStore(t, path, chunkstore.Options{})
	if problems, infos := check(t, s); len(problems) > 0 || len(infos) != 30 {
		t.Errorf("copy of the real store: %v, %d chunks", problems, len(infos))
	}
}

func TestOpenEmptyFileCreatesStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path, chunkstore.Options{})
	if s.ChunkSize() != chunkstore.DefaultChunkSize || s.Path() != path {
		t.Errorf("ChunkSize %d Path %s", s.ChunkSize(), s.Path())
	}
	if stats(t, s) != (chunkstore.Stats{}) {
		t.Errorf("new store has stats %+v", stats(t, s))
	}
}

func TestOpenMustExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.cfs")
	s, err := chunkstore.Open(path, chunkstore.Options{MustExist: true})
	if err == nil {
		s.Close()
		t.Fatal("MustExist Open of a missing file succeeded")
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MustExist created the file: %v", err)
	}
	// An empty file would become a new store; a tool inspecting one must
	// not create it.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := chunkstore.Open(path, chunkstore.Options{MustExist: true}); err == nil {
		s.Close()
		t.Error("MustExist Open of an empty file succeeded")
	} else if !errors.Is(err, chunkstore.ErrNotWorkspace) {
		t.Errorf("MustExist Open of an empty file: %v, want ErrNotWorkspace", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("MustExist changed the empty file: %v", err)
	}
	s = openStore(t, path, chunkstore.Options{})
	s.Close()
	s = openStore(t, path, chunkstore.Options{MustExist: true})
	s.Close()
}

func TestChunkSize(t *testing.T) {
	tests := []struct {
		create, reopen, want int
		wantErr              bool
	}{
		{create: 0, reopen: 0, want: chunkstore.DefaultChunkSize},
		{create: 4096, reopen: 0, want: 4096},
		{create: 8192, reopen: 1 << 20, want: 8192},
		{create: 4 << 20, reopen: 4096, want: 4 << 20},
		{create: 2048, wantErr: true},
		{create: 4097, wantErr: true},
		{create: 3 * 4096, wantErr: true},
		{create: 8 << 20, wantErr: true},
		{create: -4096, wantErr: true},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "ws.cfs")
		s, err := chunkstore.Open(path, chunkstore.Options{ChunkSize: tt.create})
		if tt.wantErr {
			if err == nil {
				s.Close()
				t.Errorf("chunk size %d accepted", tt.create)
			} else if !strings.Contains(err.Error(), "chunk size") {
				t.Errorf("chunk size %d: unclear error %v", tt.create, err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("chunk size %d: file created despite the error", tt.create)
			}
			continue
		}
		if err != nil {
			t.Fatalf("chunk size %d: %v", tt.create, err)
		}
		if s.ChunkSize() != tt.want {
			t.Errorf("created with %d: ChunkSize %d, want %d", tt.create, s.ChunkSize(), tt.want)
		}
		s.Close()
		s = openStore(t, path, chunkstore.Options{ChunkSize: tt.reopen})
		if s.ChunkSize() != tt.want {
			t.Errorf("reopened with %d: ChunkSize %d, want %d", tt.reopen, s.ChunkSize(), tt.want)
		}
		s.Close()
		s = openStore(t, path, chunkstore.Options{ReadOnly: true})
		if s.ChunkSize() != tt.want {
			t.Errorf("read-only: ChunkSize %d, want %d", s.ChunkSize(), tt.want)
		}
		s.Close()
	}
}

func TestPersistence(t *testing.T) {
	s, path := newStore(t)
	var ids []chunkstore.ID
	var datas [][]byte
	for i := range 20 {
		d := randBytes(uint64(i), 1000+i*997)
		if i%3 == 0 {
			d = textBytes(i, 1000+i*997)
		}
		p, _ := put(t, s, d)
		ids, datas = append(ids, p.ID), append(datas, d)
	}
	want := stats(t, s)
	s.Close()
	s = openStore(t, path, chunkstore.Options{})
	for i, id := range ids {
		if out, err := get(s, id); err != nil || !bytes.Equal(out, datas[i]) {
			t.Errorf("chunk %d after reopen: %v", i, err)
		}
	}
	if got := stats(t, s); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	// Sequence numbers keep growing after a reopen: a new body never
	// lands on an old key.
	before := bucketLen(t, s, bucketBodies)
	put(t, s, []byte("after reopen"))
	if bucketLen(t, s, bucketBodies) != before+1 {
		t.Error("new body replaced an old one")
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check: %v", problems)
	}
}

func TestConcurrentUpdates(t *testing.T) {
	s, _ := newStore(t)
	const workers, per = 4, 25
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range per {
				// Every worker stores the same chunks: dedup under contention.
				p := chunkstore.Prepare(randBytes(uint64(i), 2000), nil)
				err := s.Update(func(tx *chunkstore.Tx) error { _, err := tx.Put(&p); return err })
				if err == nil && i%5 == w%5 {
					err = s.Update(func(tx *chunkstore.Tx) error { return tx.Unref(p.ID) })
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	total := uint64(0)
	for i := range per {
		r := refs(t, s, chunkstore.Sum(randBytes(uint64(i), 2000)))
		want := uint64(workers)
		for w := range workers {
			if i%5 == w%5 {
				want--
			}
		}
		if r != want {
			t.Errorf("chunk %d: refs %d, want %d", i, r, want)
		}
		total += r
	}
	if st := stats(t, s); st.LogicalBytes != total*2000 {
		t.Errorf("LogicalBytes %d, want %d", st.LogicalBytes, total*2000)
	}
	if problems, _ := check(t, s); len(problems) > 0 {
		t.Errorf("Check: %v", problems)
	}
}
