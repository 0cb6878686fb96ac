package boltcheck

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var mixed = dbSpec{keys: 3000, valSize: 80, nested: 30, bigVal: 64 << 10, inline: 40, deep: 10, bigKeys: 30, deletes: true}

func TestClean(t *testing.T) {
	tests := []struct {
		name  string
		spec  dbSpec
		build func(t *testing.T, path string) // instead of buildDB(spec)
		check func(t *testing.T, r *Report)
	}{
		{name: "empty", spec: dbSpec{}},
		{name: "small", spec: dbSpec{keys: 10, valSize: 80}},
		{name: "mixed", spec: mixed},
		{name: "mixed no freelist sync", spec: func() dbSpec { s := mixed; s.noFreelistSync = true; return s }()},
		{name: "mixed no deletes", spec: func() dbSpec { s := mixed; s.deletes = false; return s }()},
		{name: "1 KiB pages", spec: func() dbSpec { s := mixed; s.pageSize = 1024; s.bigVal = 5000; return s }()},
		{name: "512 B pages", spec: func() dbSpec { s := mixed; s.pageSize = 512; s.bigVal = 3000; s.bigKeys = 0; return s }()},
		{name: "64 KiB pages", spec: func() dbSpec { s := mixed; s.pageSize = 64 << 10; return s }()},
		{
			// More than 0xFFFF free pages: the count is the first id slot.
			name: "freelist over 64k ids", build: buildBigFreelist,
			check: func(t *testing.T, r *Report) {
				if r.Free < 0xFFFF {
					t.Errorf("only %d free pages; want more than 0xFFFF", r.Free)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "db")
			if tt.build != nil {
				tt.build(t, path)
			} else {
				buildDB(t, path, tt.spec)
			}
			r, err := Check(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Problems {
				t.Errorf("problem: %v", p)
			}
			if err := r.Err(); err != nil {
				t.Error(err)
			}
			if uint64(r.Pages+r.Free) != r.HighWater {
				t.Errorf("%d pages reached + %d free != high water mark %d", r.Pages, r.Free, r.HighWater)
			}
			t.Logf("page size %d, meta %d, txid %d, high water %d, %d pages reached, %d free", r.PageSize, r.Meta, r.TxID, r.HighWater, r.Pages, r.Free)
			if tt.check != nil {
				tt.check(t, r)
			}
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.View(func(tx *bolt.Tx) error {
				for err := range tx.Check() {
					t.Errorf("bbolt's check: %v", err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// buildBigFreelist writes a file whose freelist has more than 0xFFFF ids.
func buildBigFreelist(t *testing.T, path string) {
	spec := dbSpec{pageSize: 512}
	db, err := bolt.Open(path, 0o600, spec.options())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte{7}, 256<<10)
	for i := 0; i < 3; i++ {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("big"))
			if err != nil {
				return err
			}
			for j := 0; j < 50; j++ {
				if err := b.Put([]byte{byte(i), byte(j)}, val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("big")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("small")); return err }); err != nil {
		t.Fatal(err)
	}
}

// An elem is one element of a page, as offsets into the file.
type elem struct {
	eoff       int // the element header
	flags      uint32
	koff, klen int
	voff, vlen int
	pgid       uint64
}

// elems decodes the elements of the page (or inline page) at off.
func elems(data []byte, off int) (flags uint16, es []elem) {
	flags, count := u16(data[off+8:]), int(u16(data[off+10:]))
	for i := 0; i < count; i++ {
		eo := off + pageHeaderSize + i*16
		var e elem
		e.eoff = eo
		if flags == leafFlag {
			e.flags = u32(data[eo:])
			e.koff = eo + int(u32(data[eo+4:]))
			e.klen = int(u32(data[eo+8:]))
			e.voff = e.koff + e.klen
			e.vlen = int(u32(data[eo+12:]))
		} else {
			e.koff = eo + int(u32(data[eo:]))
			e.klen = int(u32(data[eo+4:]))
			e.pgid = u64(data[eo+8:])
		}
		es = append(es, e)
	}
	return flags, es
}

// base is a clean mixed file and what the checker found in it.
type base struct {
	data  []byte
	ps    int
	rep   *Report
	pages []pageInfo
}

func newBase(t *testing.T, spec dbSpec) *base {
	path := filepath.Join(t.TempDir(), "db")
	buildDB(t, path, spec)
	b := &base{data: readFile(t, path)}
	b.pages = treePages(t, b.data)
	r, err := checkBytes(b.data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.rep, b.ps = r, r.PageSize
	return b
}

func (b *base) find(t *testing.T, f func(p pageInfo) bool) pageInfo {
	t.Helper()
	for _, p := range b.pages {
		if f(p) {
			return p
		}
	}
	t.Fatal("no such page")
	return pageInfo{}
}

func (b *base) off(id uint64) int { return int(id) * b.ps }

// freeIDs returns the offset of the freelist's ids and the ids.
func (b *base) freeIDs(t *testing.T, data []byte) (int, []uint64) {
	t.Helper()
	fl := u64(data[b.rep.Meta*b.ps+pageHeaderSize+32:])
	off := b.off(fl)
	count := int(u16(data[off+10:]))
	start := off + pageHeaderSize
	if count == 0xFFFF {
		count = int(u64(data[start:]))
		start += 8
	}
	var ids []uint64
	for i := 0; i < count; i++ {
		ids = append(ids, u64(data[start+8*i:]))
	}
	return start, ids
}

func TestDamage(t *testing.T) {
	b := newBase(t, mixed)
	if len(b.rep.Problems) > 0 || b.rep.Free == 0 {
		t.Fatalf("base: %d problems, %d free pages", len(b.rep.Problems), b.rep.Free)
	}
	ps := b.ps
	isBranch := func(bucket string) func(p pageInfo) bool {
		return func(p pageInfo) bool { return p.bucket == bucket && p.flags == branchFlag && p.parent == 0 }
	}
	topA := b.find(t, isBranch("a"))
	rootA := b.find(t, func(p pageInfo) bool { return p.bucket == "a" && p.parent == topA.id && p.flags == branchFlag })
	leafA := b.find(t, func(p pageInfo) bool { return p.bucket == "a" && p.parent == rootA.id })
	rootRoot := b.find(t, func(p pageInfo) bool { return p.bucket == "" })
	_, rootElems := elems(b.data, b.off(rootA.id))
	_, leafElems := elems(b.data, b.off(leafA.id))
	put64 := func(d []byte, off int, v uint64) { le.PutUint64(d[off:], v) }
	put32 := func(d []byte, off int, v uint32) { le.PutUint32(d[off:], v) }
	put16 := func(d []byte, off int, v uint16) { le.PutUint16(d[off:], v) }
	hw := b.rep.HighWater
	metaOff := b.rep.Meta*ps + pageHeaderSize

	// a bucket element in the root bucket's page, and an inline bucket
	_, top := elems(b.data, b.off(rootRoot.id))
	var bucketA elem
	for _, e := range top {
		if string(b.data[e.koff:e.koff+e.klen]) == "a" {
			bucketA = e
		}
	}
	var inline elem
	var inlinePage uint64
	for _, p := range b.pages {
		if p.bucket != "inline" || p.flags != leafFlag {
			continue
		}
		_, es := elems(b.data, b.off(p.id))
		for _, e := range es {
			if e.flags == bucketLeafFlag && u64(b.data[e.voff:]) == 0 && u16(b.data[e.voff+bucketHeaderSize+10:]) > 0 {
				inline, inlinePage = e, p.id
			}
		}
	}
	if inlinePage == 0 {
		t.Fatal("no inline bucket")
	}

	tests := []struct {
		name     string
		damage   func(d []byte) []byte
		page     uint64 // the problem's page, if not 0
		what     string // a substring of a problem's What
		harmless bool   // only harmless problems: Err is nil
		err      error  // Check's error
		meta     int    // the meta used, if harmless
	}{
		{name: "cycle: child points at its own page", page: rootA.id, what: "already reached",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, rootA.id); return d }},
		{name: "cycle: child points at its grandparent", page: topA.id, what: "already reached",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, topA.id); return d }},
		{name: "cycle: child points at an ancestor in another tree", page: rootRoot.id, what: "already reached",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, rootRoot.id); return d }},
		{name: "child points at a sibling", page: rootElems[2].pgid, what: "already reached",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, rootElems[2].pgid); return d }},
		{name: "child past high water", page: hw + 5, what: "past the high water mark",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, hw+5); return d }},
		{name: "child points at a meta page", page: 1, what: "meta page",
			damage: func(d []byte) []byte { put64(d, rootElems[1].eoff+8, 1); return d }},
		{name: "page id field changed", page: leafA.id, what: "page header says id",
			damage: func(d []byte) []byte { put64(d, b.off(leafA.id), leafA.id+1); return d }},
		{name: "leaf flag turned into branch", page: leafA.id, what: "",
			damage: func(d []byte) []byte { put16(d, b.off(leafA.id)+8, branchFlag); return d }},
		{name: "unknown page flags", page: leafA.id, what: "not a branch or leaf",
			damage: func(d []byte) []byte { put16(d, b.off(leafA.id)+8, 0x12); return d }},
		{name: "count too large for the page", page: leafA.id, what: "do not fit",
			damage: func(d []byte) []byte { put16(d, b.off(leafA.id)+10, 0xFFF0); return d }},
		{name: "count one more", page: leafA.id, what: "",
			damage: func(d []byte) []byte { d[b.off(leafA.id)+10]++; return d }},
		{name: "count one less", page: leafA.id, what: "bbolt writes it at",
			damage: func(d []byte) []byte { d[b.off(leafA.id)+10]--; return d }},
		{name: "element pos past the span", page: leafA.id, what: "key is at offset",
			damage: func(d []byte) []byte { put32(d, leafElems[3].eoff+4, 1<<20); return d }},
		{name: "last value past the span", page: leafA.id, what: "run past",
			damage: func(d []byte) []byte { put32(d, leafElems[len(leafElems)-1].eoff+12, 1<<20); return d }},
		{name: "empty key", page: leafA.id, what: "empty key",
			damage: func(d []byte) []byte { put32(d, leafElems[0].eoff+8, 0); return d }},
		{name: "keys out of order in a leaf", page: leafA.id, what: "not after the previous key",
			damage: func(d []byte) []byte { d[leafElems[len(leafElems)-1].koff] = 0; return d }},
		{name: "branch keys out of order", page: rootA.id, what: "not after the previous key",
			damage: func(d []byte) []byte { d[rootElems[2].koff] = 0; return d }},
		{name: "branch key above its child's keys", page: rootElems[1].pgid, what: "where the parent branch starts this page",
			damage: func(d []byte) []byte { d[rootElems[1].koff+rootElems[1].klen-1] = 0xFF; return d }},
		{name: "overflow claims the next page", page: leafA.id, what: "",
			damage: func(d []byte) []byte { put32(d, b.off(leafA.id)+12, 1); return d }},
		{name: "overflow past high water", page: leafA.id, what: "run past the high water mark",
			damage: func(d []byte) []byte { put32(d, b.off(leafA.id)+12, uint32(hw)); return d }},
		{name: "bucket root past high water", page: hw + 1, what: "past the high water mark",
			damage: func(d []byte) []byte { put64(d, bucketA.voff, hw+1); return d }},
		{name: "bucket value too short", page: rootRoot.id, what: "",
			damage: func(d []byte) []byte { put32(d, bucketA.eoff+12, 8); return d }},
		{name: "value turned into a bucket", what: "a/a-key-",
			damage: func(d []byte) []byte { put32(d, leafElems[2].eoff, bucketLeafFlag); return d }},
		{name: "unknown leaf element flags", page: leafA.id, what: "unknown flags", harmless: true, meta: b.rep.Meta,
			damage: func(d []byte) []byte { put32(d, leafElems[2].eoff, 0x40); return d }},
		{name: "inline page flags", page: inlinePage, what: "inline bucket: page flags",
			damage: func(d []byte) []byte { put16(d, inline.voff+bucketHeaderSize+8, branchFlag); return d }},
		{name: "inline page count", page: inlinePage, what: "inline bucket",
			damage: func(d []byte) []byte { d[inline.voff+bucketHeaderSize+10] += 3; return d }},
		{name: "inline value one byte longer", page: inlinePage, what: "",
			damage: func(d []byte) []byte { d[inline.eoff+12]++; return d }},
		{name: "freelist entry names a live page", page: 0, what: "live but in the freelist",
			damage: func(d []byte) []byte {
				start, ids := b.freeIDs(t, d)
				for _, p := range b.pages {
					for i := 1; i+1 < len(ids); i++ {
						if ids[i-1] < p.id && p.id < ids[i+1] {
							put64(d, start+8*i, p.id)
							return d
						}
					}
				}
				t.Fatal("no live page between two free ones")
				return d
			}},
		{name: "freelist entry past high water", what: "past the high water mark",
			damage: func(d []byte) []byte {
				start, ids := b.freeIDs(t, d)
				put64(d, start+8*(len(ids)-1), hw)
				return d
			}},
		{name: "freelist entries out of order", what: "out of order",
			damage: func(d []byte) []byte { start, _ := b.freeIDs(t, d); put64(d, start+8, u64(d[start:])); return d }},
		{name: "freelist count too large", what: "do not fit",
			damage: func(d []byte) []byte {
				fl := u64(d[metaOff+32:])
				put16(d, b.off(fl)+10, 0xFFFF)
				put64(d, b.off(fl)+pageHeaderSize, 1<<40)
				return d
			}},
		{name: "freelist page flags", what: "not a freelist page",
			damage: func(d []byte) []byte { fl := u64(d[metaOff+32:]); put16(d, b.off(fl)+8, leafFlag); return d }},
		{name: "leaked page", what: "leaked", harmless: true, meta: b.rep.Meta,
			damage: func(d []byte) []byte {
				start, ids := b.freeIDs(t, d)
				fl := u64(d[metaOff+32:])
				copy(d[start:], d[start+8:start+8*len(ids)])
				put16(d, b.off(fl)+10, uint16(len(ids)-1))
				return d
			}},
		{name: "truncated file", what: "truncated",
			damage: func(d []byte) []byte { return d[:int(hw-1)*ps] }},
		{name: "meta root past high water (checksum fixed)", what: "root page",
			damage: func(d []byte) []byte { put64(d, metaOff+16, hw); fixMeta(d, ps, b.rep.Meta); return d }},
		{name: "meta freelist is a tree page (checksum fixed)", page: leafA.id, what: "",
			damage: func(d []byte) []byte { put64(d, metaOff+32, leafA.id); fixMeta(d, ps, b.rep.Meta); return d }},
		{name: "meta page size (checksum fixed)", what: "page size",
			damage: func(d []byte) []byte { put32(d, metaOff+8, 3000); fixMeta(d, ps, b.rep.Meta); return d }},
		{name: "one meta broken: falls back", what: "bbolt uses meta", harmless: true, meta: 1 - b.rep.Meta,
			damage: func(d []byte) []byte { d[metaOff+50] ^= 1; return d }},
		{name: "older meta broken", what: "bbolt uses meta", harmless: true, meta: b.rep.Meta,
			damage: func(d []byte) []byte { d[(1-b.rep.Meta)*ps+pageHeaderSize] ^= 1; return d }},
		{name: "meta page header", what: "page header", harmless: true, meta: b.rep.Meta,
			damage: func(d []byte) []byte { d[b.rep.Meta*ps+8] = 0; return d }},
		{name: "both metas broken", err: ErrInvalid,
			damage: func(d []byte) []byte { d[pageHeaderSize] ^= 1; d[ps+pageHeaderSize+60] ^= 1; return d }},
		{name: "not a bbolt file", err: ErrInvalid,
			damage: func(d []byte) []byte { return bytes.Repeat([]byte("not bolt"), 2000) }},
		{name: "empty file", err: ErrInvalid,
			damage: func(d []byte) []byte { return nil }},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.damage(bytes.Clone(b.data))
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_"), d)
			r, err := Check(context.Background(), path, Options{})
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Problems {
				t.Logf("%v", p)
			}
			found := false
			for _, p := range r.Problems {
				if strings.Contains(p.Bucket+": "+p.What, tt.what) && (tt.page == 0 || p.Page == tt.page) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem on page %d saying %q", tt.page, tt.what)
			}
			if err := r.Err(); (err == nil) != tt.harmless {
				t.Errorf("Err() = %v, harmless %v", err, tt.harmless)
			} else if err != nil && !errors.Is(err, ErrDamaged) {
				t.Errorf("Err() = %v, not ErrDamaged", err)
			}
			if tt.harmless && r.Meta != tt.meta {
				t.Errorf("meta %d used, want %d", r.Meta, tt.meta)
			}
			if wantInvalid := strings.Contains(tt.name, "meta broken"); (r.MetaInvalid == 1-r.Meta) != wantInvalid || !wantInvalid && r.MetaInvalid != -1 {
				t.Errorf("MetaInvalid %d with meta %d in use", r.MetaInvalid, r.Meta)
			}
		})
	}
}

func TestMaxProblems(t *testing.T) {
	b := newBase(t, mixed)
	d := bytes.Clone(b.data)
	// Break every leaf of bucket a.
	n := 0
	for _, p := range b.pages {
		if p.bucket == "a" && p.flags == leafFlag {
			le.PutUint64(d[b.off(p.id):], 1<<40)
			n++
		}
	}
	r, err := checkBytes(d, Options{MaxProblems: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 5 || r.Omitted < n-5 {
		t.Errorf("%d problems, %d omitted; want 5 and at least %d", len(r.Problems), r.Omitted, n-5)
	}
	msg := r.Err().Error()
	if !strings.Contains(msg, "more") {
		t.Errorf("Err() = %s", msg)
	}
	t.Log(msg)
}

func TestCancel(t *testing.T) {
	b := newBase(t, mixed)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := check(ctx, bytes.NewReader(b.data), int64(len(b.data)), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	// Cancelled during the walk.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	r := &cancelAfter{r: bytes.NewReader(b.data), n: 20, cancel: cancel}
	if _, err := check(ctx, r, int64(len(b.data)), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

type cancelAfter struct {
	r      *bytes.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) ReadAt(p []byte, off int64) (int, error) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return c.r.ReadAt(p, off)
}

func TestIOError(t *testing.T) {
	b := newBase(t, mixed)
	r := &failAfter{r: bytes.NewReader(b.data), n: 50}
	if _, err := check(context.Background(), r, int64(len(b.data)), Options{}); !errors.Is(err, errDisk) {
		t.Fatalf("error %v, want %v", err, errDisk)
	}
}

var errDisk = errors.New("disk on fire")

type failAfter struct {
	r *bytes.Reader
	n int
}

func (f *failAfter) ReadAt(p []byte, off int64) (int, error) {
	if f.n--; f.n <= 0 {
		return 0, errDisk
	}
	return f.r.ReadAt(p, off)
}

// TestMetaFallback: with meta 0 broken, bbolt finds the page size by
// probing for meta 1 from 1 KiB up, else takes the OS's; Check must agree
// with bbolt.Open on which files open.
func TestMetaFallback(t *testing.T) {
	for _, ps := range []int{512, 1024, 4096, 16384} {
		t.Run(strconv.Itoa(ps), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "db")
			buildDB(t, path, dbSpec{pageSize: ps, keys: 50, valSize: 20})
			d := readFile(t, path)
			d[pageHeaderSize] ^= 1 // meta 0's magic
			writeFile(t, dir, "db", d)
			r, err := Check(context.Background(), path, Options{})
			db, boltErr := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
			if boltErr == nil {
				db.Close()
			}
			t.Logf("Check: %v; bbolt.Open: %v", err, boltErr)
			if (err == nil) != (boltErr == nil) {
				t.Fatalf("Check says %v, bbolt.Open %v", err, boltErr)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("error %v, want ErrInvalid", err)
				}
				return
			}
			if r.Meta != 1 || r.PageSize != ps || r.Err() != nil {
				t.Errorf("meta %d, page size %d, %v; want meta 1, page size %d, no error", r.Meta, r.PageSize, r.Err(), ps)
			}
		})
	}
}
