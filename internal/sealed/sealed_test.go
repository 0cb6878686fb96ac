package sealed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestSealOpen(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bucket, key []byte
		val         []byte
	}{
		{"empty value", []byte("orphans"), []byte{0, 0, 0, 0, 0, 0, 0, 7}, nil},
		{"inode", []byte("inodes"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, bytes.Repeat([]byte{1}, 69)},
		{"empty key", []byte("meta"), nil, []byte("v")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Seal(tc.bucket, tc.key, tc.val, 77)
			if len(s) != len(tc.val)+1+sealSize { // 77 is a one-byte uvarint
				t.Fatalf("sealed %d bytes", len(s))
			}
			got, birth, err := OpenBirth(tc.bucket, tc.key, s)
			if err != nil || !bytes.Equal(got, tc.val) || birth != 77 {
				t.Fatalf("Open: %q %d %v", got, birth, err)
			}
			// Every single-bit flip, and the record read from another
			// bucket or key, is damage.
			for i := range len(s) * 8 {
				d := bytes.Clone(s)
				d[i/8] ^= 1 << (i % 8)
				if _, err := Open(tc.bucket, tc.key, d); !errors.Is(err, ErrDamaged) || !errors.Is(err, syscall.EIO) {
					t.Fatalf("bit %d flipped: %v", i, err)
				}
			}
			if _, err := Open([]byte("other"), tc.key, s); err == nil {
				t.Error("opened under another bucket")
			}
			if _, err := Open(tc.bucket, append(bytes.Clone(tc.key), 0), s); err == nil {
				t.Error("opened under another key")
			}
			if _, err := Open(tc.bucket, tc.key, s[:len(s)-1]); err == nil {
				t.Error("opened cut short")
			}
		})
	}
	// Bucket and key boundaries count: ("ab","c") and ("a","bc") differ.
	if bytes.Equal(Seal([]byte("ab"), []byte("c"), nil, 1), Seal([]byte("a"), []byte("bc"), nil, 1)) {
		t.Error("the seal does not separate bucket from key")
	}
}

func TestBirthEpochs(t *testing.T) {
	b, k, v := []byte("inodes"), []byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte{1, 2, 0x80, 0xff}
	for _, birth := range []uint64{0, 1, 127, 128, 300, 1<<21 - 1, 1 << 21, 1<<35 + 5, 1<<63 + 1, ^uint64(0)} {
		s := Seal(b, k, v, birth)
		if want := len(v) + len(binary.AppendUvarint(nil, birth)) + sealSize; len(s) != want {
			t.Errorf("birth %d: %d bytes sealed, want %d", birth, len(s), want)
		}
		got, gotBirth, err := OpenBirth(b, k, s)
		if err != nil || !bytes.Equal(got, v) || gotBirth != birth {
			t.Errorf("birth %d: opened %x, birth %d, %v", birth, got, gotBirth, err)
		}
		// In place, with the spare capacity Size.
		buf := append(make([]byte, 0, len(v)+Size), v...)
		if s2 := Append(b, k, buf, birth); !bytes.Equal(s2, s) || &s2[0] != &buf[:1][0] {
			t.Errorf("birth %d: Append did not seal in place", birth)
		}
	}
	// A value whose every byte has its high bit set, with no byte that
	// ends a uvarint, is damage even under a matching seal.
	body := bytes.Repeat([]byte{0x80}, 12)
	s := binary.BigEndian.AppendUint32(bytes.Clone(body), sum(b, k, body))
	if _, _, err := OpenBirth(b, k, s); !errors.Is(err, ErrDamaged) {
		t.Errorf("undecodable birth: %v", err)
	}
	// Format 4's envelope, for the upgrade.
	s4 := SealFormat4(b, k, v, 1<<40)
	if got, birth, err := OpenFormat4(b, k, s4); err != nil || !bytes.Equal(got, v) || birth != 1<<40 {
		t.Errorf("format 4: %x %d %v", got, birth, err)
	}
	if len(s4) != len(v)+format4Size {
		t.Errorf("format 4: %d bytes", len(s4))
	}
	// Its bytes would parse as a format 5 envelope; the seal tells.
	if got, err := Open(b, k, s4); !errors.Is(err, ErrDamaged) {
		t.Errorf("a format 4 value opened as format 5: %x %v", got, err)
	}
	if _, err := Open(b, k, SealFormat3(b, k, v)); !errors.Is(err, ErrDamaged) {
		t.Errorf("a format 3 value opened as format 5: %v", err)
	}
}

// TestGetNested: a nested bucket where a value belongs is damage, not a
// miss, in a writable transaction and after a commit.
func TestGetNested(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := []byte("b")
	check := func(tx *bolt.Tx) error {
		b := In(tx, name)
		if v, err := b.Get([]byte("nested")); v != nil || !errors.Is(err, ErrDamaged) {
			t.Errorf("Get of a nested bucket: %q %v", v, err)
		}
		if v, err := b.Get([]byte("nest")); v != nil || err != nil {
			t.Errorf("Get of a missing key before it: %q %v", v, err)
		}
		return nil
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		if _, err := b.CreateBucket([]byte("nested")); err != nil {
			return err
		}
		return check(tx)
	}); err != nil {
		t.Fatal(err)
	}
	db.View(check)
}

func TestBucketAndCursor(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := []byte("b")
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
		b := In(tx, name)
		for _, k := range []string{"a", "b", "c"} {
			if err := b.Put([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		// Damage b on disk.
		raw := b.Raw()
		v := bytes.Clone(raw.Get([]byte("b")))
		v[0] ^= 1
		return raw.Put([]byte("b"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		b := In(tx, name)
		if v, err := b.Get([]byte("a")); err != nil || string(v) != "va" {
			t.Errorf("Get a: %q %v", v, err)
		}
		if _, err := b.Get([]byte("b")); !errors.Is(err, ErrDamaged) {
			t.Errorf("Get of a damaged record: %v", err)
		}
		if v, err := b.Get([]byte("zz")); v != nil || err != nil {
			t.Errorf("Get of a missing key: %q %v", v, err)
		}
		for _, k := range []string{"0", "aa", "bb"} { // before, between, after
			if v, err := b.Get([]byte(k)); v != nil || err != nil {
				t.Errorf("Get of missing key %s: %q %v", k, v, err)
			}
		}
		var seen []string
		b.Walk(func(k, v []byte, damage error) error {
			seen = append(seen, string(k)+":"+string(v)+":"+map[bool]string{true: "damaged", false: "ok"}[damage != nil])
			return nil
		})
		if got := bytes.Join(func() [][]byte {
			var o [][]byte
			for _, s := range seen {
				o = append(o, []byte(s))
			}
			return o
		}(), []byte(" ")); string(got) != "a:va:ok b::damaged c:vc:ok" {
			t.Errorf("Walk: %s", got)
		}
		if err := b.ForEach(func(k, v []byte) error { return nil }); !errors.Is(err, ErrDamaged) {
			t.Errorf("ForEach past a damaged record: %v", err)
		}
		if v, err := In(tx, []byte("missing")).Get([]byte("a")); v != nil || err != nil {
			t.Errorf("Get in a missing bucket: %q %v", v, err)
		}
		return nil
	})
}

func FuzzOpen(f *testing.F) {
	f.Add([]byte("inodes"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, Seal([]byte("inodes"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte("x"), 5))
	f.Add([]byte(""), []byte(""), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, bucket, key, sealed []byte) {
		v, birth, err := OpenBirth(bucket, key, sealed)
		if err != nil {
			return
		}
		if !bytes.Equal(Seal(bucket, key, v, birth), sealed) {
			t.Fatalf("Open accepted %x, which Seal does not make", sealed)
		}
	})
}

func BenchmarkSealOpen(b *testing.B) {
	bucket, key, val := []byte("inodes"), []byte{0, 0, 0, 0, 0, 0, 0, 42}, bytes.Repeat([]byte{7}, 69)
	s := Seal(bucket, key, val, 9)
	b.Run("seal", func(b *testing.B) {
		buf := make([]byte, 0, len(val)+Size)
		b.ReportAllocs()
		for b.Loop() {
			Append(bucket, key, append(buf[:0], val...), 9)
		}
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Open(bucket, key, s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestShortUpdates: the table loops give crc32.Update's CRC, for every
// length a key or bucket name has, and the reversed uvarint decodes as
// binary.Uvarint would.
func TestShortUpdates(t *testing.T) {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	for n := 0; n <= len(b); n++ {
		for _, seed := range []uint32{0, seed5, 0xdeadbeef} {
			if got, want := updateShort(seed, b[:n]), crc32.Update(seed, table, b[:n]); got != want {
				t.Fatalf("updateShort(%08x, %d bytes) = %08x, want %08x", seed, n, got, want)
			}
			if got, want := updateUvarint(seed, uint64(n)), crc32.Update(seed, table, binary.AppendUvarint(nil, uint64(n))); got != want {
				t.Fatalf("updateUvarint(%08x, %d) = %08x, want %08x", seed, n, got, want)
			}
		}
	}
	for _, birth := range []uint64{0, 1, 127, 128, 1 << 20, 1<<63 + 5, ^uint64(0)} {
		body := appendBirth([]byte("value"), birth)
		v, got, ok := splitBirth(body)
		if !ok || got != birth || string(v) != "value" {
			t.Errorf("splitBirth of %d: %q %d %v", birth, v, got, ok)
		}
	}
	// Eleven continuation bytes, or a tenth byte over 1: not a uvarint.
	for _, bad := range [][]byte{bytes.Repeat([]byte{0x80}, 11), append([]byte{2}, bytes.Repeat([]byte{0xff}, 9)...)} {
		if _, _, ok := splitBirth(bad); ok {
			t.Errorf("splitBirth(%x) decoded", bad)
		}
	}
}

// TestBucketSeed checks that a seal computed from a bucket's seed is the
// seal computed whole, for every length of name, key and value around
// updateShort's 8-byte steps.
func TestBucketSeed(t *testing.T) {
	for nb := 0; nb < 20; nb++ {
		for nk := 0; nk < 20; nk++ {
			for _, nv := range []int{0, 1, 7, 8, 9, 64, 200} {
				bucket, key, val := bytes.Repeat([]byte{'b'}, nb), bytes.Repeat([]byte{byte(nk)}, nk), bytes.Repeat([]byte{'v'}, nv)
				if got, want := sumKeyed(bucketSeed(bucket), key, val), sum(bucket, key, val); got != want {
					t.Fatalf("bucket %d, key %d, value %d bytes: seeded %08x, whole %08x", nb, nk, nv, got, want)
				}
			}
		}
	}
}

// TestSeekWithin walks prefixes with SeekWithin and NextWithin: every
// record under the prefix, verified, and none after it; a damaged record
// after the prefix is not read, one within it is reported.
func TestSeekWithin(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := []byte("b")
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		for _, k := range []string{"a1", "a2", "b1", "b2", "c1"} {
			if err := b.Put([]byte(k), Seal(name, []byte(k), []byte("v"+k), 1)); err != nil {
				return err
			}
		}
		// b2 is damaged, c1's seal is another key's.
		if err := b.Put([]byte("b2"), []byte("garbage!")); err != nil {
			return err
		}
		return b.Put([]byte("c1"), Seal(name, []byte("zz"), []byte("vc1"), 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	walk := func(from, prefix string) (keys []string, damaged []string) {
		db.View(func(tx *bolt.Tx) error {
			c := In(tx, name).Cursor()
			for k, v, err := c.SeekWithin([]byte(from), []byte(prefix)); k != nil; k, v, err = c.NextWithin([]byte(prefix)) {
				if err != nil {
					damaged = append(damaged, string(k))
					continue
				}
				if string(v) != "v"+string(k) {
					t.Errorf("%s: value %q", k, v)
				}
				keys = append(keys, string(k))
			}
			return nil
		})
		return keys, damaged
	}
	for _, tc := range []struct {
		from, prefix  string
		keys, damaged string
	}{
		{"a", "a", "a1 a2", ""},
		{"a2", "a", "a2", ""},
		{"b", "b", "b1", "b2"},
		{"c", "c", "", "c1"},
		{"a3", "a", "", ""},
		{"d", "d", "", ""},
	} {
		keys, damaged := walk(tc.from, tc.prefix)
		if strings.Join(keys, " ") != tc.keys || strings.Join(damaged, " ") != tc.damaged {
			t.Errorf("from %q within %q: %v, damaged %v; want %q, damaged %q", tc.from, tc.prefix, keys, damaged, tc.keys, tc.damaged)
		}
	}
}
