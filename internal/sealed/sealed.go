// Package sealed seals the records of the workspace file: every value
// that the fs and chunkstore packages keep in a bbolt bucket ends with a
// CRC32C (Castagnoli) over the bucket's name, the key and the value, and
// every read verifies it. A record damaged on disk, misrouted by damage to
// bbolt's own pages (a value read from another bucket, another key or
// another page) or cut short is then an error naming the record, never
// wrong data.
//
// The package owns that framing and nothing else: it knows no record
// format, opens no file and begins no transaction. Chunk bodies are not
// sealed: a body is verified against its BLAKE3 ID on every read, which
// a checksum would only repeat.
//
// Layout of a sealed value (format 5): the value's bytes, its birth
// epoch (the commit that wrote it, for snapshots) as a uvarint written
// backwards (its last byte first, so that it is read from the end: 1 to
// 3 bytes for the first two million commits), then 4 bytes, big-endian, of
// CRC32C("seal5" || len(bucket) || bucket || len(key) || key || value ||
// birth), the lengths as one uvarint each (so that no two (bucket, key,
// value) triples hash the same bytes) and birth as stored. Format 4
// stored the birth epoch as 8 bytes, big-endian, and its CRC had no
// "seal5" (so that its values never verify as format 5's); format 3 had
// no birth epoch. The envelope
// is small because every byte of it is written again with each record,
// in every commit that touches the record's page: format 4's 12 bytes
// made a commit of small files write 20-38% more pages than format 2.
// CRC32C runs in hardware on amd64 and arm64: BenchmarkSealOpen measured
// 38 ns to verify and 39 ns to seal a 69-byte inode record here, without
// allocating.
package sealed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// Size is the most bytes the envelope adds to a value: its birth epoch
// (a uvarint, up to 10 bytes) and its seal (4). Give a value this spare
// capacity to seal it in place (Append).
const Size = binary.MaxVarintLen64 + sealSize

// minSize is the fewest: a one-byte birth epoch and the seal.
const minSize = 1 + sealSize

// sealSize is the seal alone: format 3's whole envelope.
const sealSize = 4

// format4Size is format 4's envelope: an 8-byte birth epoch and the seal.
const format4Size = 8 + sealSize

var table = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged wraps EIO so that the FUSE layer hands it to the kernel as
// it is. Every error of this package wraps it.
var ErrDamaged = fmt.Errorf("workspace record damaged: %w", syscall.EIO)

// DamageError names a record whose seal does not match.
type DamageError struct {
	Bucket string
	Key    []byte
	Why    string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("workspace record damaged: bucket %s, key %s: %s", e.Bucket, KeyString(e.Key), e.Why)
}

// Unwrap makes errors.Is(err, ErrDamaged) and errors.Is(err, syscall.EIO)
// hold.
func (e *DamageError) Unwrap() error { return ErrDamaged }

// KeyString renders a key for a log line: printable ASCII as it is, else
// hex (big-endian integers, our keys' usual prefix, read naturally so).
func KeyString(k []byte) string {
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", k)
		}
	}
	return strconv.Quote(string(k))
}

// seed5 starts format 5's seals: CRC32C of "seal5", so that a value
// sealed by format 3 or 4, whose bytes could also parse as a format 5
// envelope, never verifies as one.
var seed5 = crc32.Update(0, table, []byte("seal5"))

// sum is format 5's seal.
func sum(bucket, key, val []byte) uint32 { return sumFrom(seed5, bucket, key, val) }

// sum4 is the seal of formats 3 and 4.
func sum4(bucket, key, val []byte) uint32 { return sumFrom(0, bucket, key, val) }

// sumFrom is the seal's CRC32C from seed over the lengths, the bucket's
// name, the key and val. The short fields (two lengths, a bucket name, a
// key: 10 to 30 bytes) go through updateShort, a table a byte at a time:
// each crc32.Update costs a call through a function value and its setup
// (four of them took three times the instructions of the value's own
// update, measured with cachegrind on a node load), and the slices it
// is given escape, which made every key a heap allocation.
func sumFrom(seed uint32, bucket, key, val []byte) uint32 {
	c := updateUvarint(seed, uint64(len(bucket)))
	c = updateShort(c, bucket)
	return sumKeyed(c, key, val)
}

// bucketSeed is format 5's seal over the bucket's name alone: the CRC
// state every seal of the bucket's records starts from, which a Bucket
// computes once (its records' seals then go on from it with sumKeyed)
// instead of at every record.
func bucketSeed(bucket []byte) uint32 {
	return updateShort(updateUvarint(seed5, uint64(len(bucket))), bucket)
}

// sumKeyed goes on from a bucket's seed (bucketSeed) over the key and
// val: sumKeyed(bucketSeed(bucket), key, val) == sum(bucket, key, val).
func sumKeyed(c uint32, key, val []byte) uint32 {
	c = updateUvarint(c, uint64(len(key)))
	c = updateShort(c, key)
	return crc32.Update(c, table, val)
}

// updateShort is crc32.Update(crc, table, p), computed from tables
// (slicing by 8, as package crc32 does without the instruction): for a
// few dozen bytes, cheaper than a call into the hardware's instruction,
// and p does not escape.
func updateShort(crc uint32, p []byte) uint32 {
	if len(p) > 128 {
		return crc32.Update(crc, table, bytes.Clone(p))
	}
	crc = ^crc
	t := &slicing8
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint32(p)
		crc = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
		p = p[8:]
	}
	for _, v := range p {
		crc = t[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// slicing8 are the tables of updateShort: slicing8[0] is table, and
// slicing8[k][i] the CRC of byte i followed by k zero bytes.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *table
	for i := range 256 {
		crc := t[0][i]
		for k := 1; k < 8; k++ {
			crc = t[0][crc&0xff] ^ crc>>8
			t[k][i] = crc
		}
	}
	return t
}()

// updateUvarint is updateShort over n as a uvarint.
func updateUvarint(crc uint32, n uint64) uint32 {
	crc = ^crc
	for n >= 0x80 {
		crc = table[byte(crc)^(byte(n)|0x80)] ^ crc>>8
		n >>= 7
	}
	crc = table[byte(crc)^byte(n)] ^ crc>>8
	return ^crc
}

// Append appends val's envelope (its birth epoch, then the seal over
// bucket, key, val and birth) to val and returns the sealed value. Give
// val a spare capacity of Size to spare the copy.
func Append(bucket, key, val []byte, birth uint64) []byte {
	return appendSeeded(bucketSeed(bucket), key, val, birth)
}

// appendSeeded is Append of the bucket whose bucketSeed is seed.
func appendSeeded(seed uint32, key, val []byte, birth uint64) []byte {
	out := appendBirth(val, birth)
	return binary.BigEndian.AppendUint32(out, sumKeyed(seed, key, out))
}

// appendBirth appends birth as a uvarint written backwards: the byte
// that ends a uvarint (high bit clear) comes first, so that a reader
// going back from the seal meets the bytes that continue it (high bit
// set) first and stops at that one.
func appendBirth(b []byte, birth uint64) []byte {
	var buf [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(buf[:], birth)
	for i := n - 1; i >= 0; i-- {
		b = append(b, buf[i])
	}
	return b
}

// splitBirth splits body (a value and its birth epoch, the seal cut
// off) into the value and the epoch.
func splitBirth(body []byte) ([]byte, uint64, bool) {
	// binary.Uvarint over the bytes reversed, without copying them.
	var birth uint64
	var shift uint
	for n := 0; n < binary.MaxVarintLen64 && n < len(body); n++ {
		b := body[len(body)-1-n]
		if b < 0x80 {
			if n == binary.MaxVarintLen64-1 && b > 1 {
				return nil, 0, false // overflows 64 bits
			}
			return body[:len(body)-1-n], birth | uint64(b)<<shift, true
		}
		birth |= uint64(b&0x7f) << shift
		shift += 7
	}
	return nil, 0, false
}

// Seal returns a new sealed copy of val, born at epoch birth.
func Seal(bucket, key, val []byte, birth uint64) []byte {
	out := make([]byte, 0, len(val)+Size)
	return Append(bucket, key, append(out, val...), birth)
}

// Open verifies a sealed value and returns the value without its
// envelope (a sub-slice of sealed: in a bbolt transaction, valid only
// while it lasts).
func Open(bucket, key, sealed []byte) ([]byte, error) {
	val, _, err := OpenBirth(bucket, key, sealed)
	return val, err
}

// OpenBirth is Open that also returns the epoch the value was born at.
func OpenBirth(bucket, key, sealed []byte) ([]byte, uint64, error) {
	return openSeeded(bucketSeed(bucket), bucket, key, sealed)
}

// openSeeded is OpenBirth of bucket, whose bucketSeed is seed.
func openSeeded(seed uint32, bucket, key, sealed []byte) ([]byte, uint64, error) {
	if len(sealed) < minSize {
		return nil, 0, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("value of %d bytes is shorter than its envelope", len(sealed))}
	}
	body := sealed[:len(sealed)-sealSize]
	if got, want := sumKeyed(seed, key, body), binary.BigEndian.Uint32(sealed[len(body):]); got != want {
		return nil, 0, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("checksum %08x, want %08x", got, want)}
	}
	val, birth, ok := splitBirth(body)
	if !ok {
		return nil, 0, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: "its birth epoch does not decode"}
	}
	return val, birth, nil
}

// OpenFormat4 verifies a value sealed as format 4 sealed it (an 8-byte
// birth epoch), for the upgrade to format 5 only.
func OpenFormat4(bucket, key, sealed []byte) ([]byte, uint64, error) {
	if len(sealed) < format4Size {
		return nil, 0, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("value of %d bytes is shorter than its envelope", len(sealed))}
	}
	body := sealed[:len(sealed)-sealSize]
	if got, want := sum4(bucket, key, body), binary.BigEndian.Uint32(sealed[len(body):]); got != want {
		return nil, 0, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("checksum %08x, want %08x", got, want)}
	}
	return body[:len(body)-8], binary.BigEndian.Uint64(body[len(body)-8:]), nil
}

// SealFormat4 seals val as format 4 did, for the upgrade from format 3,
// which then goes on to format 5.
func SealFormat4(bucket, key, val []byte, birth uint64) []byte {
	out := append(make([]byte, 0, len(val)+format4Size), val...)
	out = binary.BigEndian.AppendUint64(out, birth)
	return binary.BigEndian.AppendUint32(out, sum4(bucket, key, out))
}

// OpenFormat3 verifies a value sealed as format 3 sealed it (no birth
// epoch), for the upgrade to format 4 only.
func OpenFormat3(bucket, key, sealed []byte) ([]byte, error) {
	if len(sealed) < sealSize {
		return nil, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("value of %d bytes is shorter than its seal", len(sealed))}
	}
	val := sealed[:len(sealed)-sealSize]
	if got, want := sum4(bucket, key, val), binary.BigEndian.Uint32(sealed[len(val):]); got != want {
		return nil, &DamageError{Bucket: string(bucket), Key: bytes.Clone(key), Why: fmt.Sprintf("checksum %08x, want %08x", got, want)}
	}
	return val, nil
}

// SealFormat3 seals val as format 3 did, for the upgrade from format 2,
// which then goes on to formats 4 and 5.
func SealFormat3(bucket, key, val []byte) []byte {
	out := append(make([]byte, 0, len(val)+sealSize), val...)
	return binary.BigEndian.AppendUint32(out, sum4(bucket, key, out))
}

// Bucket is a bbolt bucket whose values are sealed. The zero Bucket is a
// missing one: Get finds nothing and Put fails.
type Bucket struct {
	b     *bolt.Bucket
	name  []byte
	epoch uint64 // the birth epoch Put gives values
	// seed is bucketSeed(name) when seeded (In and InAt compute it
	// once for all the bucket's records).
	seed   uint32
	seeded bool
	rec    Recorder // sees every version replaced or deleted; nil: none
	watch  Watcher  // sees every change, old and new; nil: none
	// look finds the old value of a change: one cursor reused (bbolt's
	// Get makes one per call, with its own allocations). Set by
	// WithWatcher; repositioned by every Seek, so that writes between
	// uses do not matter.
	look *bolt.Cursor
	// base, when set, makes the bucket an overlay over it (overlay.go).
	base Base
}

// A Recorder keeps the versions that snapshots still need (see
// fs/SNAPSHOTS.md). Change is called before bucket's value under key
// is replaced (deleted false) or deleted, with the sealed envelope it
// had (nil if none): it returns whether it kept that version, so that
// whoever drops a reference the old value held (a chunk) keeps it.
type Recorder interface {
	Change(bucket, key, old []byte, deleted bool) (kept bool, err error)
}

// WithRecorder returns b with every Put and Delete shown to r first.
func (b Bucket) WithRecorder(r Recorder) Bucket {
	b.rec = r
	return b
}

// A Watcher sees every change of a bucket's values, after its Recorder:
// old is the value replaced or deleted, verified and without its
// envelope (nil if there was none; non-nil, maybe empty, if there was
// one), or nil with damaged true if its seal did not verify; val the new
// value without its envelope (nil for a delete). The bucket verifies the
// old value once for whoever read it and the watcher. A watcher keeps a
// sum of the values (package versions' root), so it cannot fail: a
// damaged old value is its to count.
type Watcher interface {
	Watch(bucket, key, old []byte, damaged bool, val []byte, deleted bool)
}

// WithWatcher returns b with every Put and Delete shown to w. Keep the
// Bucket it returns for every write of a transaction rather than
// making one per write: it holds a cursor of its own.
func (b Bucket) WithWatcher(w Watcher) Bucket {
	b.watch = w
	if b.b != nil && b.look == nil {
		b.look = b.b.Cursor()
	}
	return b
}

// change tells the recorder and the watcher, if any, of a change to key
// (to val, or a delete), finding the old value with the bucket's cursor.
func (b Bucket) change(key, val []byte, deleted bool) (bool, error) {
	if b.rec == nil && b.watch == nil || b.b == nil {
		return false, nil
	}
	var old []byte
	if b.look != nil {
		if k, v := b.look.Seek(key); bytes.Equal(k, key) {
			old = v // nil for a nested bucket, as Get says
		}
	} else {
		old = b.b.Get(key)
	}
	return b.notify(key, Found{raw: old}, val, deleted)
}

// notify tells the recorder and the watcher, if any, of a change to key
// whose old value is old (its value verified if old.opened).
func (b Bucket) notify(key []byte, old Found, val []byte, deleted bool) (bool, error) {
	if old.raw == nil && deleted {
		return false, nil
	}
	kept := false
	if b.rec != nil {
		var err error
		if kept, err = b.rec.Change(b.name, key, old.raw, deleted); err != nil {
			return false, err
		}
	}
	if b.watch != nil {
		if old.raw != nil && !old.opened {
			old.val, _, old.err = b.open(key, old.raw)
		}
		b.watch.Watch(b.name, key, old.val, old.err != nil, val, deleted)
	}
	return kept, nil
}

// Found is a record as Find read it, to write over with PutFound or
// DeleteFound in the same transaction, before anything else writes its
// key: the old value they show the recorder and the watcher is then not
// looked up, nor verified, again.
type Found struct {
	raw    []byte // the sealed value as stored; nil if none
	val    []byte // raw verified, without its envelope (if opened and err is nil)
	err    error  // raw's damage
	opened bool   // val and err are known
	own    bool   // from this bucket's own records (not an overlay's base)
}

// Known says whether f came from Find (the zero Found did not).
func (f Found) Known() bool { return f.opened || f.raw != nil }

// Find is Get that keeps what it read for PutFound and DeleteFound. The
// value and the error are Get's.
func (b Bucket) Find(key []byte) (Found, []byte, error) {
	if b.base != nil {
		v, err := b.Get(key)
		return Found{}, v, err
	}
	if b.b == nil {
		return Found{own: true, opened: true}, nil, nil
	}
	k, v := b.b.Cursor().Seek(key)
	if !bytes.Equal(k, key) {
		return Found{own: true, opened: true}, nil, nil
	}
	if v == nil {
		return Found{}, nil, &DamageError{Bucket: string(b.name), Key: bytes.Clone(key), Why: "a nested bucket where a value belongs"}
	}
	val, _, err := b.open(key, v)
	return Found{raw: v, val: val, err: err, opened: true, own: true}, val, err
}

// PutFound is PutKept of key, whose record old is as Find read it.
func (b Bucket) PutFound(key, val []byte, old Found) (kept bool, err error) {
	if b.b == nil {
		return false, fmt.Errorf("put into %s: %w", b.name, ErrNoBucket)
	}
	if b.base != nil || !old.own {
		return b.PutKept(key, val)
	}
	if kept, err = b.notify(key, old, val, false); err != nil {
		return false, err
	}
	out := make([]byte, 0, len(val)+Size)
	return kept, b.b.Put(key, b.seal(key, append(out, val...)))
}

// DeleteFound is DeleteKept of key, whose record old is as Find read it.
func (b Bucket) DeleteFound(key []byte, old Found) (kept bool, err error) {
	if b.b == nil {
		return false, nil
	}
	if b.base != nil || !old.own {
		return b.DeleteKept(key)
	}
	if old.raw == nil {
		return false, nil // nothing to delete
	}
	if kept, err = b.notify(key, old, nil, true); err != nil {
		return false, err
	}
	return kept, b.b.Delete(key)
}

// ErrNoBucket is returned by writes to a bucket the transaction lacks.
var ErrNoBucket = errors.New("bucket missing")

// In returns the sealed bucket name of tx (a missing one if tx has none).
func In(tx *bolt.Tx, name []byte) Bucket {
	return Bucket{b: tx.Bucket(name), name: name, seed: bucketSeed(name), seeded: true}
}

// InAt is In whose Put gives values birth epoch epoch.
func InAt(tx *bolt.Tx, name []byte, epoch uint64) Bucket {
	return Bucket{b: tx.Bucket(name), name: name, epoch: epoch, seed: bucketSeed(name), seeded: true}
}

// sealSeed is bucketSeed(b.name), computed once if b was made so.
func (b *Bucket) sealSeed() uint32 {
	if !b.seeded {
		b.seed, b.seeded = bucketSeed(b.name), true
	}
	return b.seed
}

// open is OpenBirth of one of b's records.
func (b *Bucket) open(key, sealed []byte) ([]byte, uint64, error) {
	return openSeeded(b.sealSeed(), b.name, key, sealed)
}

// seal is Append of one of b's records, born at b's epoch.
func (b *Bucket) seal(key, val []byte) []byte {
	return appendSeeded(b.sealSeed(), key, val, b.epoch)
}

// Raw is the underlying bucket, for what has no value to verify (its
// sequence, its stats, deleting under a cursor), or nil.
func (b Bucket) Raw() *bolt.Bucket { return b.b }

// Name is the bucket's name.
func (b Bucket) Name() []byte { return b.name }

// Exists says whether the transaction has the bucket.
func (b Bucket) Exists() bool { return b.b != nil }

// Get returns the verified value under key, or nil and no error if there
// is none.
func (b Bucket) Get(key []byte) ([]byte, error) {
	if b.base != nil {
		// A copy: the base is an interface, through which key would
		// escape, and with it every caller's key on every path.
		return b.ovGetMerged(bytes.Clone(key))
	}
	if b.b == nil {
		return nil, nil
	}
	// One seek tells a missing key from a nested bucket (bbolt's Get
	// returns nil for both, and a second lookup cost every miss, such as
	// the lookup before each create, another walk down the tree).
	k, v := b.b.Cursor().Seek(key)
	if !bytes.Equal(k, key) {
		return nil, nil
	}
	if v == nil {
		return nil, &DamageError{Bucket: string(b.name), Key: bytes.Clone(key), Why: "a nested bucket where a value belongs"}
	}
	val, _, err := b.open(key, v)
	return val, err
}

// Has says whether key holds a value (verified).
func (b Bucket) Has(key []byte) (bool, error) {
	v, err := b.Get(key)
	return v != nil, err
}

// Put seals val and stores it under key. val is not kept (bbolt copies
// the sealed value at commit only if it must: the sealed slice is new).
func (b Bucket) Put(key, val []byte) error {
	if b.b == nil {
		return fmt.Errorf("put into %s: %w", b.name, ErrNoBucket)
	}
	if b.base != nil {
		_, err := b.ovChange(key, val, false)
		return err
	}
	if _, err := b.change(key, val, false); err != nil {
		return err
	}
	out := make([]byte, 0, len(val)+Size)
	return b.b.Put(key, b.seal(key, append(out, val...)))
}

// PutKept is Put that says whether the recorder kept the version it
// replaced.
func (b Bucket) PutKept(key, val []byte) (kept bool, err error) {
	if b.b == nil {
		return false, fmt.Errorf("put into %s: %w", b.name, ErrNoBucket)
	}
	if b.base != nil {
		return b.ovChange(key, val, false)
	}
	if kept, err = b.change(key, val, false); err != nil {
		return false, err
	}
	out := make([]byte, 0, len(val)+Size)
	return kept, b.b.Put(key, b.seal(key, append(out, val...)))
}

// DeleteKept is Delete that says whether the recorder kept the version
// it deleted.
func (b Bucket) DeleteKept(key []byte) (kept bool, err error) {
	if b.b == nil {
		return false, nil
	}
	if b.base != nil {
		return b.ovChange(key, nil, true)
	}
	if b.look != nil {
		// One seek finds the old value and places the cursor that
		// deletes it (bbolt's Delete would seek again); a missing key
		// is nothing to delete.
		k, v := b.look.Seek(key)
		if !bytes.Equal(k, key) {
			return false, nil
		}
		if v == nil {
			return false, b.b.Delete(key) // a nested bucket: bbolt's error
		}
		if kept, err = b.notify(key, Found{raw: v}, nil, true); err != nil {
			return false, err
		}
		return kept, b.look.Delete()
	}
	if kept, err = b.change(key, nil, true); err != nil {
		return false, err
	}
	return kept, b.b.Delete(key)
}

// PutSealed stores a value already sealed with Append for this bucket
// and key (no copy). It shows neither recorder nor watcher the change:
// for buckets that have none.
func (b Bucket) PutSealed(key, sealed []byte) error {
	if b.b == nil || b.base != nil {
		return fmt.Errorf("put into %s: %w", b.name, ErrNoBucket)
	}
	return b.b.Put(key, sealed)
}

// Delete deletes key.
func (b Bucket) Delete(key []byte) error {
	_, err := b.DeleteKept(key)
	return err
}

// Cursor returns a cursor over the bucket's verified values.
func (b Bucket) Cursor() *Cursor {
	if b.b == nil {
		return &Cursor{name: b.name}
	}
	if b.base != nil {
		return &Cursor{c: b.b.Cursor(), name: b.name, b: b, m: &mergeCursor{b: b}}
	}
	return &Cursor{c: b.b.Cursor(), name: b.name, b: b}
}

// ForEach calls fn for every record in key order, stopping at the first
// error of fn or the first damaged record, whose error it returns.
func (b Bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v, err := c.First(); k != nil || err != nil; k, v, err = c.Next() {
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Walk calls fn for every record in key order, damaged ones included
// (with a nil value and their error), for checkers that report damage
// and go on. It stops at the first error fn returns.
func (b Bucket) Walk(fn func(k, v []byte, damage error) error) error {
	c := b.Cursor()
	for k, v, err := c.First(); k != nil; k, v, err = c.Next() {
		if err := fn(k, v, err); err != nil {
			return err
		}
	}
	return nil
}

// WalkRange is Walk over at most n records after key after (from the
// first if after is nil). It returns the last key it visited, or nil
// once the bucket is done: the next call's after.
func (b Bucket) WalkRange(after []byte, n int, fn func(k, v []byte, damage error) error) ([]byte, error) {
	c := b.Cursor()
	k, v, err := c.First()
	if after != nil {
		k, v, err = c.Seek(after)
		if bytes.Equal(k, after) {
			k, v, err = c.Next()
		}
	}
	var last []byte
	for i := 0; k != nil && i < n; i++ {
		if ferr := fn(k, v, err); ferr != nil {
			return nil, ferr
		}
		last = append(last[:0], k...)
		k, v, err = c.Next()
	}
	if k == nil {
		return nil, nil
	}
	return last, nil
}

// Cursor walks a sealed bucket. Each step returns the key and the
// verified value; a damaged record returns its key, a nil value and its
// error, and the walk can go on past it. A nested bucket (bbolt's nil
// value) is damage too: no sealed bucket holds one.
type Cursor struct {
	c    *bolt.Cursor
	name []byte
	b    Bucket // for the recorder
	k, v []byte // the record under the cursor, raw
	val  []byte // v verified, without its envelope, if err is nil
	err  error  // v's damage
	m    *mergeCursor
}

// errOverlayDirection: an overlay's cursor walks forward only.
var errOverlayDirection = fmt.Errorf("an overlay bucket's cursor walks forward only: %w", ErrDamaged)

func (c *Cursor) open(k, v []byte) ([]byte, []byte, error) {
	c.k, c.v, c.val, c.err = k, v, nil, nil
	if k == nil {
		return nil, nil, nil
	}
	if v == nil {
		return k, nil, &DamageError{Bucket: string(c.name), Key: bytes.Clone(k), Why: "a nested bucket where a value belongs"}
	}
	c.val, _, c.err = c.b.open(k, v)
	if c.err != nil {
		return k, nil, c.err
	}
	return k, c.val, nil
}

// First moves to the first record.
func (c *Cursor) First() ([]byte, []byte, error) {
	if c.c == nil {
		return nil, nil, nil
	}
	if c.m != nil {
		return c.m.seek(nil, false)
	}
	return c.open(c.c.First())
}

// Last moves to the last record.
func (c *Cursor) Last() ([]byte, []byte, error) {
	if c.c == nil {
		return nil, nil, nil
	}
	if c.m != nil {
		return nil, nil, errOverlayDirection
	}
	return c.open(c.c.Last())
}

// Next moves to the next record.
func (c *Cursor) Next() ([]byte, []byte, error) {
	if c.c == nil {
		return nil, nil, nil
	}
	if c.m != nil {
		if c.m.cur == nil {
			return nil, nil, nil
		}
		return c.m.seek(c.m.cur, true)
	}
	return c.open(c.c.Next())
}

// Prev moves to the previous record.
func (c *Cursor) Prev() ([]byte, []byte, error) {
	if c.c == nil {
		return nil, nil, nil
	}
	if c.m != nil {
		return nil, nil, errOverlayDirection
	}
	return c.open(c.c.Prev())
}

// Seek moves to the first record at or after key.
func (c *Cursor) Seek(key []byte) ([]byte, []byte, error) {
	if c.c == nil {
		return nil, nil, nil
	}
	if c.m != nil {
		return c.m.seek(key, false)
	}
	return c.open(c.c.Seek(key))
}

// SeekWithin is Seek for a walk of the records whose keys start with
// prefix (key itself starts with it): it moves to the first record at or
// after key and returns it, or, when that record's key does not start
// with prefix, no record (a nil key) without reading its value. A walk
// by Seek would verify that one record more, which it then leaves: for
// the walks of one inode's records (a removal visits its chunk list,
// xattrs and entries, and most of these walks find nothing), that was
// most of the values they verified. After a nil key, do not Delete.
func (c *Cursor) SeekWithin(key, prefix []byte) ([]byte, []byte, error) {
	if c.c == nil || c.m != nil {
		k, v, err := c.Seek(key)
		return cutWithin(k, v, err, prefix)
	}
	k, v := c.c.Seek(key)
	return c.openWithin(k, v, prefix)
}

// NextWithin is Next for a walk as SeekWithin's.
func (c *Cursor) NextWithin(prefix []byte) ([]byte, []byte, error) {
	if c.c == nil || c.m != nil {
		k, v, err := c.Next()
		return cutWithin(k, v, err, prefix)
	}
	k, v := c.c.Next()
	return c.openWithin(k, v, prefix)
}

// cutWithin is a verified step, or none outside prefix.
func cutWithin(k, v []byte, err error, prefix []byte) ([]byte, []byte, error) {
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, nil, nil
	}
	return k, v, err
}

// openWithin opens a raw step, or none outside prefix.
func (c *Cursor) openWithin(k, v, prefix []byte) ([]byte, []byte, error) {
	if k == nil || !bytes.HasPrefix(k, prefix) {
		c.k, c.v, c.val, c.err = nil, nil, nil, nil
		return nil, nil, nil
	}
	return c.open(k, v)
}

// Delete deletes the record under the cursor.
func (c *Cursor) Delete() error {
	_, err := c.DeleteKept()
	return err
}

// DeleteKept is Delete that says whether the recorder kept the version
// it deleted.
func (c *Cursor) DeleteKept() (bool, error) {
	if c.c == nil {
		return false, nil
	}
	if c.m != nil {
		if c.m.cur == nil {
			return false, nil
		}
		return c.b.ovChange(c.m.cur, nil, true)
	}
	var kept bool
	if c.k != nil && c.v != nil {
		var err error
		if kept, err = c.b.notify(c.k, Found{raw: c.v, val: c.val, err: c.err, opened: true}, nil, true); err != nil {
			return false, err
		}
	}
	return kept, c.c.Delete()
}
