// Package chunkstore owns the workspace's bbolt file and the content-addressed
// chunks inside it.
//
// A chunk is identified by the BLAKE3-256 hash of its plaintext. Bodies are
// compressed with S2 when that saves at least an eighth, stored raw otherwise,
// deduplicated and reference-counted. Bodies are keyed by a sequence number
// so that bbolt appends them (random hash keys cost 2.6-4x write
// amplification); a separate index maps hash to sequence number and count.
//
// The package knows nothing about files: the fs package keeps its own buckets
// in the same bbolt file so that one transaction covers data and metadata, and
// calls into this package with the transaction it holds (see Tx). The on-disk
// format of every bucket, this package's and fs's, is documented in FORMAT.md.
//
// Invariants:
//   - every index entry has refs >= 1 and points to a body whose header
//     names the same hash; a chunk whose count drops to zero is deleted in
//     the same transaction;
//   - a body is returned to a caller only after its hash has been verified.
package chunkstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/internal/boltcheck"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	"github.com/klauspost/compress/s2"
	"github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"
)

// FormatVersion is the on-disk format this binary writes. Stores with an
// older version are upgraded at open; newer ones are refused.
const FormatVersion = 8

// DefaultChunkSize is the chunk size of new stores: one maximal FUSE request.
const DefaultChunkSize = 1 << 20

// IDSize is the length of a chunk ID in bytes.
const IDSize = 32

// ID is the BLAKE3-256 hash of a chunk's plaintext.
type ID [IDSize]byte

// Sum returns the ID of data.
func Sum(data []byte) ID { return ID(blake3.Sum256(data)) }

func (id ID) String() string { return fmt.Sprintf("%x", id[:]) }

// Short returns the first 12 hex digits, for log lines.
func (id ID) Short() string { return fmt.Sprintf("%x", id[:6]) }

// Errors reported by the store. ErrCorrupt wraps EIO so that the FUSE layer
// can hand it to the kernel as it is.
var (
	ErrCorrupt      = fmt.Errorf("chunk store corrupt: %w", syscall.EIO)
	ErrNotFound     = errors.New("chunk not found")
	ErrInUse        = errors.New("workspace is in use by another process")
	ErrNewerFormat  = errors.New("workspace was written by a newer computerfs")
	ErrNotWorkspace = errors.New("not a computerfs workspace")
)

// Bucket names. The fs package's buckets are declared there; all of them
// are described in FORMAT.md.
var (
	bucketMeta   = []byte("meta")
	bucketBodies = []byte("chunks")
	bucketIndex  = []byte("chunkidx")
)

// Keys in the meta bucket owned by this package.
var (
	keyFormat    = []byte("format")
	keyChunkSize = []byte("chunk_size")
	keyCreated   = []byte("created")
	keyStats     = []byte("chunk_stats")
	keyMagic     = []byte("magic")
	// keyFormatSeal repeats the format version, sealed (format 3 on): the
	// version itself stays a bare uint32 so that older binaries read it and
	// refuse the store as newer, and the sealed copy catches a flip in it.
	keyFormatSeal = []byte("format_sealed")
)

const magic = "computerfs workspace"

// initialMap is the size of bbolt's map of a store opened for writing
// (see Open): 64 GiB of address space on a 64-bit machine, 1 GiB on a
// 32-bit one (where bbolt maps at most 2 GiB).
const initialMap = 1 << (30 + 6*(^uint(0)>>63))

// Options configure Open.
type Options struct {
	// ChunkSize is used only when the store is created.
	ChunkSize int
	// ReadOnly opens the file without taking the writer lock.
	ReadOnly bool
	// Logger receives corruption reports; slog.Default() if nil.
	Logger *slog.Logger
	// LockTimeout bounds the wait for another process's lock; 200ms if 0.
	LockTimeout time.Duration
	// MustExist refuses to create a new store (tools that inspect one).
	MustExist bool
	// AcceptRollback opens read-write a store whose newest commit record
	// (bbolt meta page) may be the damaged one, at the previous commit
	// (fsck --repair). Without it such a store opens read-only only.
	AcceptRollback bool
}

// Store is an open workspace file.
type Store struct {
	db        *bolt.DB
	log       *slog.Logger
	chunkSize int
	path      string
	// rfile is the file again, read-only, for preads of large bodies
	// (preadRaw); nil if it could not be opened. Whatever it reads is
	// verified against the chunk's ID like any body.
	rfile *os.File
	// rrand is the file again for ReadAt's preads of a few blocks, with
	// the kernel's read-ahead off (FADV_RANDOM: read-ahead state is per
	// open file), so that a 16 KiB read of the store reads 16 KiB; nil
	// if it could not be opened (rfile serves then).
	rrand *os.File
	// rdirect is the file again with O_DIRECT, for whole-leaf reads of
	// cold bodies (GetInto); nil where the filesystem refuses it.
	rdirect *os.File
	// blocks recycles ReadAt's buffers (*[]byte).
	blocks sync.Pool
	// leafReads counts bodies and ranges read by pread of their leaf
	// (leaf.go), for tests.
	leafReads atomic.Uint64
	// directReads counts bodies read with O_DIRECT (preadLeafDirect),
	// for tests.
	directReads atomic.Uint64
	// warmed counts chunks whose bodies ReadAt asked the kernel to read
	// ahead (warmAfter), for tests.
	warmed atomic.Uint64
	// mappedReads counts ranges ReadAt read from bbolt's map because the
	// page cache held them (resident), for tests.
	mappedReads atomic.Uint64
	// now is the clock warming reads by (time.Now; tests set their own).
	now func() time.Time
	// outboards keeps the outboards ReadAt read last (leaf.go).
	outboards outboardCache
	// rolledBack says why the store opened at the commit before its
	// newest record (Options.AcceptRollback, or read-only); "" if not.
	rolledBack string
	// writesNoFreelist is bbolt's count of page writes when commits
	// stopped writing the freelist (Open): Close writes it if it moved.
	writesNoFreelist int64
	// rootHashes spares write transactions the root identifier's hashes
	// of values written a moment before (versions.HashCache): used only
	// inside write transactions, which bbolt runs one at a time.
	rootHashes versions.HashCache
}

// RolledBack says, if the store opened at the commit before what may have
// been its newest (see ErrRollback), why; "" otherwise.
func (s *Store) RolledBack() string { return s.rolledBack }

// Open opens or creates the workspace file at path. A file held by another
// process is refused with ErrInUse; a file that is not a workspace, or is
// damaged, is refused with a descriptive error rather than a panic.
func Open(path string, opts Options) (s *Store, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.ChunkSize < 4096 || opts.ChunkSize > 4<<20 || opts.ChunkSize&(opts.ChunkSize-1) != 0 {
		return nil, fmt.Errorf("open %s: chunk size %d must be a power of two between 4 KiB and 4 MiB", path, opts.ChunkSize)
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 200 * time.Millisecond
	}
	if err := precheck(path); err != nil {
		return nil, err
	}
	if opts.MustExist {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		// bbolt would turn an empty file into a new store.
		if st.Size() == 0 {
			return nil, fmt.Errorf("open %s: %w: file is empty", path, ErrNotWorkspace)
		}
	}
	// bbolt panics on some damaged files instead of returning an error,
	// or faults reading past its map (made a panic here): turn that into
	// an error naming the file.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if s != nil {
				s.db.Close() // the lock goes with it
			}
			s, err = nil, fmt.Errorf("open %s: %w: %w (%v)", path, ErrNotWorkspace, ErrDamaged, r)
		}
	}()
	if err := checkExtent(path, opts.LockTimeout); err != nil {
		return nil, err
	}
	rolledBack, err := verifyPages(path, opts)
	if err != nil {
		return nil, err
	}
	// The freelist is read at open if the last commit wrote it (Close's
	// does, see below): without it, bbolt rebuilds it at open by walking
	// every page, which took 13.7 s for a 22 GiB store of a million files
	// (and panicked on a damaged page, which verifyPages now finds
	// first); with it, open reads two meta pages and the freelist (9 ms
	// for 200,000 files).
	//
	// The map is sized far past the file (address space, not memory:
	// pages count in RSS only once touched). bbolt remaps when a commit
	// grows the file past the map, and a remap copies every key and
	// value the commit holds onto the heap (node.dereference): with a
	// 1 GiB map, eight writers of 512 MiB crossed it four times, and at
	// the peak 47 MiB of chunk bodies were such copies (rss-8x512m
	// 256-301 MiB peak RSS, 208-229 with this map). A remap also waits
	// for every read transaction to end.
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         opts.LockTimeout,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: initialMap,
		ReadOnly:        opts.ReadOnly,
		NoGrowSync:      false,
	})
	if err != nil {
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, fmt.Errorf("open %s: %w (another computerfs holds it; unmount it first)", path, ErrInUse)
		case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
			return nil, fmt.Errorf("open %s: %w: %w", path, ErrNotWorkspace, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.AllocSize = 64 << 20
	db.MaxBatchDelay = 0
	s = &Store{db: db, log: opts.Logger, path: path, rolledBack: rolledBack, now: time.Now}
	if f, err := os.Open(path); err == nil {
		s.rfile = f
	}
	if f, err := os.Open(path); err == nil {
		if unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM) == nil {
			s.rrand = f
		} else {
			f.Close()
		}
	}
	if f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0); err == nil {
		s.rdirect = f
	}
	if err := s.init(opts); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !opts.ReadOnly {
		// Commits do not write the freelist (Close does, once, if
		// anything was committed): it lists every free page, 512 KiB
		// after a 256 MiB file is deleted, and every commit wrote and
		// sorted all of it, so that a database's small fsyncs after
		// some churn paid for it each time. bbolt (as etcd runs it)
		// stays crash-safe without it: a commit records that it wrote
		// none, and an open after a crash rebuilds it by walking the
		// pages (the cost the comment above names, now only after a
		// crash), then writes it.
		db.NoFreelistSync = true
		st := db.Stats()
		s.writesNoFreelist = st.TxStats.GetWrite()
	}
	return s, nil
}

// ErrRollback refuses a read-write open of a store whose other commit
// record is invalid: bbolt would open it at the commit the valid one
// names, which is the previous commit if the invalid one held the
// newest. That is what a power cut during a commit leaves (nothing
// acknowledged is lost), and also what a flipped bit in the newest
// record does (the last commit is lost): both look alike, so it is not
// done silently.
var ErrRollback = errors.New("the workspace's newest commit record may be damaged")

// verifyPages checks the file's B-tree structure by reading it, before
// bbolt maps it (package boltcheck): bbolt follows page ids without
// bounds checks and recurses without a cycle guard, so a damaged page
// would be a fault or a fatal stack overflow inside it. The file is
// locked as bbolt locks it while the check runs, so that a live writer's
// pages are never mistaken for damage.
func verifyPages(path string, opts Options) (rolledBack string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close() // and the lock with it
	if st, err := f.Stat(); err != nil || st.Size() == 0 {
		return "", nil // a new store
	}
	how := syscall.LOCK_EX
	if opts.ReadOnly {
		how = syscall.LOCK_SH
	}
	for deadline := time.Now().Add(opts.LockTimeout); ; {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return "", fmt.Errorf("open %s: lock: %w", path, err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("open %s: %w (another computerfs holds it; unmount it first)", path, ErrInUse)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rep, err := boltcheck.Check(context.Background(), path, boltcheck.Options{})
	if err != nil {
		if errors.Is(err, boltcheck.ErrInvalid) {
			return "", fmt.Errorf("open %s: %w: %w", path, ErrNotWorkspace, err)
		}
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	if err := rep.Err(); err != nil {
		opts.Logger.Error("workspace file damaged", "store", path, "err", err)
		return "", fmt.Errorf("open %s: %w: %w", path, ErrDamaged, err)
	}
	for _, p := range rep.Problems {
		opts.Logger.Warn("workspace file", "store", path, "problem", p.String())
	}
	if rep.MetaInvalid < 0 {
		return "", nil
	}
	why := fmt.Sprintf("meta page %d is invalid, so the workspace opens at commit %d, "+
		"without the commit after it if that page held it (a power cut during a commit leaves the same, and then nothing acknowledged is lost)", rep.MetaInvalid, rep.TxID)
	if !opts.ReadOnly && !opts.AcceptRollback {
		return "", fmt.Errorf("open %s: %w: %s; fsck it, and `computerfs fsck --repair` accepts the rollback", path, ErrRollback, why)
	}
	return why, nil
}

// precheck rejects files bbolt would misread: too short to hold its two
// meta pages. An empty or missing file is a new store.
func precheck(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("open %s: %w: is a directory", path, ErrNotWorkspace)
	}
	if st.Size() > 0 && st.Size() < 2*4096 {
		return fmt.Errorf("open %s: %w: file is truncated (%d bytes)", path, ErrNotWorkspace, st.Size())
	}
	return nil
}

// checkExtent rejects a file shorter than its meta page says its data is
// (truncated by a copy or a full disk): bbolt would map the missing tail and
// the process would die of SIGBUS on the first read there, even while
// opening (reading the freelist, or rebuilding it by walking every page). A read-only open
// reads only the meta pages. Errors of that open are left for the real one
// to report.
func checkExtent(path string, timeout time.Duration) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return nil
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		if tx.Size() > st.Size() {
			return fmt.Errorf("open %s: %w: file is truncated (%d bytes, its data needs %d)", path, ErrNotWorkspace, st.Size(), tx.Size())
		}
		return nil
	})
}

func (s *Store) init(opts Options) error {
	if opts.ReadOnly {
		return s.db.View(func(tx *bolt.Tx) error { return s.loadMeta(tx, false) })
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if tx.Bucket(bucketBodies) != nil || len(bucketNames(tx)) > 0 {
				return fmt.Errorf("%w: bbolt file without a computerfs meta bucket", ErrNotWorkspace)
			}
			return s.create(tx, opts.ChunkSize)
		}
		return s.loadMeta(tx, true)
	})
}

func bucketNames(tx *bolt.Tx) []string {
	var names []string
	tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, string(name))
		return nil
	})
	return names
}

func (s *Store) create(tx *bolt.Tx, chunkSize int) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	for _, name := range [][]byte{bucketBodies, bucketIndex} {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	put := func(k []byte, v []byte) {
		if err == nil {
			err = sealed.In(tx, bucketMeta).Put(k, v)
		}
	}
	if err = meta.Put(keyMagic, []byte(magic)); err != nil {
		return err
	}
	if err = meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
		return err
	}
	put(keyFormatSeal, binary.BigEndian.AppendUint32(nil, FormatVersion))
	put(keyChunkSize, binary.BigEndian.AppendUint32(nil, uint32(chunkSize)))
	put(keyCreated, binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano())))
	put(keyStats, Stats{}.encode())
	s.chunkSize = chunkSize
	return err
}

// migrations[v] upgrades a store from format v to v+1 inside one
// transaction. Empty while only format 1 exists; a new format adds its step
// here and bumps FormatVersion.
var migrations = map[uint32]func(tx *bolt.Tx) error{
	1: migrateBodiesToBuckets,
	2: migrateSealRecords,
	3: migrateBirthEpochs,
	4: migrateCompactEnvelopes,
	5: migrateRoot,
	6: migrateFoldListSums,
	7: migrateOutboards,
}

// migrateOutboards upgrades a format 7 store to format 8, which may keep
// an outboard beside a raw body (outboard.go). It writes nothing but the
// version: outboards are made as bodies are stored, and a body stored
// before has none and is read whole, as format 7 reads it. Adding one to
// an old body would rewrite the body (bbolt rewrites a leaf whole, and
// the body is the leaf's value), the whole store's raw data in the
// upgrade's one transaction. The bump keeps format 7 binaries, whose
// fsck knows no outboards, off stores that have them.
func migrateOutboards(tx *bolt.Tx) error { return nil }

// migrateRoot stores the root identifier of a format 5 store's records
// (versions.Root, meta/root): one walk of the versioned buckets. From
// format 6 every commit keeps it; the bump keeps binaries that would not
// (format 5's) from committing to a store that has one.
func migrateRoot(tx *bolt.Tx) error {
	root, _, err := versions.ComputeRoot(tx)
	if err != nil {
		return err
	}
	return sealed.In(tx, bucketMeta).Put(versions.KeyRoot, root[:])
}

// migrateCompactEnvelopes reseals every sealed record of a format 4
// store in format 5's envelope (a uvarint birth epoch, the "seal5"
// seal), keeping its birth epoch. The versions of records that snapshots
// keep (versions.BucketHistory) are envelopes of their own bucket and
// key, and are resealed as such; the change indexes (snapshot epochs,
// births, deaths) hold only keys and are left as they are.
func migrateCompactEnvelopes(tx *bolt.Tx) error {
	bare := map[string]bool{string(versions.BucketSnapEpochs): true, string(versions.BucketBirths): true, string(versions.BucketDeaths): true}
	return resealAllBut(tx, bare, func(name, k, v []byte) ([]byte, error) {
		if bytes.Equal(name, versions.BucketHistory) {
			// id(1) ‖ key ‖ death(8) → the version as its bucket sealed it.
			if len(k) < 1+8 || versions.Name(k[0]) == "" {
				return nil, &sealed.DamageError{Bucket: string(name), Key: k, Why: "malformed history key"}
			}
			name, k = []byte(versions.Name(k[0])), k[1:len(k)-8]
		}
		val, birth, err := sealed.OpenFormat4(name, k, v)
		if err != nil {
			return nil, err
		}
		return sealed.Seal(name, k, val, birth), nil
	})
}

// migrateBirthEpochs gives every sealed record of a format 3 store birth
// epoch 1 (format 4): the store's whole state is the first epoch.
func migrateBirthEpochs(tx *bolt.Tx) error {
	return resealAll(tx, func(name, k, v []byte) ([]byte, error) {
		val, err := sealed.OpenFormat3(name, k, v)
		if err != nil {
			return nil, err
		}
		return sealed.SealFormat4(name, k, val, 1), nil
	})
}

// Unsealed says whether format 3 leaves key of bucket bare: the chunk
// bodies (each verified against its ID) and the two meta records an older
// binary must read to refuse the store.
func Unsealed(bucket, key []byte) bool { return unsealed(bucket, key) }

func unsealed(bucket, key []byte) bool {
	if bytes.Equal(bucket, bucketBodies) {
		return true
	}
	return bytes.Equal(bucket, bucketMeta) && (bytes.Equal(key, keyMagic) || bytes.Equal(key, keyFormat))
}

// migrateSealRecords seals every record of every bucket but the chunk
// bodies (format 2 to 3): fs's buckets as well as this package's, which it
// can do without knowing their formats. A nested bucket inside a sealed
// bucket is refused: none exists in format 2.
func migrateSealRecords(tx *bolt.Tx) error {
	if err := resealAll(tx, func(name, k, v []byte) ([]byte, error) { return sealed.SealFormat3(name, k, v), nil }); err != nil {
		return err
	}
	k := keyFormatSeal
	return tx.Bucket(bucketMeta).Put(k, sealed.SealFormat3(bucketMeta, k, binary.BigEndian.AppendUint32(nil, 3)))
}

// resealAll rewrites every value of every bucket but the chunk bodies,
// and the bare meta records, through fn, in batches: bbolt's cursors are
// not stable across writes, so each batch is read, written, and the walk
// re-seeks. A nested bucket inside them is refused: none exists.
func resealAll(tx *bolt.Tx, fn func(name, k, v []byte) ([]byte, error)) error {
	return resealAllBut(tx, nil, fn)
}

// resealAllBut is resealAll that leaves the buckets in skip as they are.
func resealAllBut(tx *bolt.Tx, skip map[string]bool, fn func(name, k, v []byte) ([]byte, error)) error {
	var names [][]byte
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, bytes.Clone(name))
		return nil
	}); err != nil {
		return err
	}
	for _, name := range names {
		if bytes.Equal(name, bucketBodies) || skip[string(name)] {
			continue
		}
		if err := resealBucket(tx.Bucket(name), name, fn); err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	return nil
}

func resealBucket(b *bolt.Bucket, name []byte, fn func(name, k, v []byte) ([]byte, error)) error {
	const batch = 4096
	type kv struct{ k, v []byte }
	var last []byte
	for {
		var recs []kv
		c := b.Cursor()
		k, v := c.First()
		if last != nil {
			k, v = c.Seek(last)
			if bytes.Equal(k, last) {
				k, v = c.Next()
			}
		}
		n := 0
		for ; k != nil && n < batch; k, v = c.Next() {
			n++
			last = bytes.Clone(k)
			if v == nil {
				return fmt.Errorf("key %s: a nested bucket", sealed.KeyString(k))
			}
			if unsealed(name, k) {
				continue
			}
			nv, err := fn(name, k, v)
			if err != nil {
				return err
			}
			recs = append(recs, kv{bytes.Clone(k), nv})
		}
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		if k == nil {
			return nil
		}
	}
}

// migrateBodiesToBuckets moves every body of a format 1 store, a plain
// value under its sequence key, into a bucket of its own (format 2).
func migrateBodiesToBuckets(tx *bolt.Tx) error {
	old := tx.Bucket(bucketBodies)
	if old == nil {
		return fmt.Errorf("%w: chunk bodies bucket missing", ErrNotWorkspace)
	}
	seq := old.Sequence()
	type kv struct{ k, v []byte }
	var all []kv
	if err := old.ForEach(func(k, v []byte) error {
		if v != nil {
			all = append(all, kv{bytes.Clone(k), bytes.Clone(v)})
		}
		return nil
	}); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketBodies); err != nil {
		return err
	}
	nb, err := tx.CreateBucket(bucketBodies)
	if err != nil {
		return err
	}
	if err := nb.SetSequence(seq); err != nil {
		return err
	}
	for _, e := range all {
		if err := PutBodyValue(nb, e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// keyBody is the one key inside a body's bucket.
var keyBody = []byte("body")

// BodyValue returns the stored value (header and body) under body key seq
// of the chunks bucket, or nil. Each body has a bucket of its own, so that
// bbolt never rewrites a body when a neighbour is added or removed (a leaf
// holding big values is only split past four of them). Exported, like
// PutBodyValue and DeleteBodyValue, for tools and tests that read or
// damage the raw format; everyone else uses Tx.
func BodyValue(bodies *bolt.Bucket, seq []byte) []byte {
	b := bodies.Bucket(seq)
	if b == nil {
		return nil
	}
	return b.Get(keyBody)
}

// PutBodyValue stores a raw body value under key seq, replacing any.
func PutBodyValue(bodies *bolt.Bucket, seq, val []byte) error {
	b, err := bodies.CreateBucketIfNotExists(seq)
	if err != nil {
		return err
	}
	return b.Put(keyBody, val)
}

// putBody stores a body value and its outboard (nil for none) under
// key seq. The outboard goes in first: bbolt lays out a leaf's values in
// key order, so "bao" lies in the page that holds the leaf's headers.
func putBody(bodies *bolt.Bucket, seq, val, ob []byte) error {
	b, err := bodies.CreateBucketIfNotExists(seq)
	if err != nil {
		return err
	}
	if ob != nil {
		if err := b.Put(keyOutboard, ob); err != nil {
			return err
		}
	}
	return b.Put(keyBody, val)
}

// bodyOutboard returns the outboard value stored beside body seq, or nil.
func bodyOutboard(bodies *bolt.Bucket, seq []byte) []byte {
	b := bodies.Bucket(seq)
	if b == nil {
		return nil
	}
	return b.Get(keyOutboard)
}

// DeleteBodyValue deletes the body under key seq, whatever it holds.
func DeleteBodyValue(bodies *bolt.Bucket, seq []byte) error {
	if bodies.Bucket(seq) != nil {
		return bodies.DeleteBucket(seq)
	}
	return bodies.Delete(seq)
}

func (s *Store) loadMeta(tx *bolt.Tx, writable bool) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("%w: no meta bucket", ErrNotWorkspace)
	}
	if string(meta.Get(keyMagic)) != magic {
		return fmt.Errorf("%w: bad magic", ErrNotWorkspace)
	}
	fv := meta.Get(keyFormat)
	if len(fv) != 4 {
		return fmt.Errorf("%w: bad format version record", ErrNotWorkspace)
	}
	version := binary.BigEndian.Uint32(fv)
	if version > FormatVersion {
		return fmt.Errorf("%w: format version %d, this binary reads up to %d; upgrade computerfs", ErrNewerFormat, version, FormatVersion)
	}
	sm := sealed.In(tx, bucketMeta)
	var seal []byte
	var err error
	switch version {
	case 3: // sealed without a birth epoch
		seal, err = sealed.OpenFormat3(bucketMeta, keyFormatSeal, meta.Get(keyFormatSeal))
	case 4: // an 8-byte birth epoch
		seal, _, err = sealed.OpenFormat4(bucketMeta, keyFormatSeal, meta.Get(keyFormatSeal))
	default:
		seal, err = sm.Get(keyFormatSeal)
	}
	switch {
	case err != nil:
		return fmt.Errorf("format version record: %w", err)
	case version >= 3 && (len(seal) != 4 || binary.BigEndian.Uint32(seal) != version):
		return fmt.Errorf("format version record: %w", &sealed.DamageError{Bucket: string(bucketMeta), Key: keyFormat,
			Why: fmt.Sprintf("version %d, its sealed copy %x", version, seal)})
	case version < 3 && meta.Get(keyFormatSeal) != nil:
		return fmt.Errorf("format version record: %w", &sealed.DamageError{Bucket: string(bucketMeta), Key: keyFormat,
			Why: fmt.Sprintf("version %d, but the store has a sealed copy (format 3 or later)", version)})
	}
	if version < FormatVersion {
		if !writable {
			return fmt.Errorf("format version %d needs an upgrade to %d: open it read-write once", version, FormatVersion)
		}
		for v := version; v < FormatVersion; v++ {
			step, ok := migrations[v]
			if !ok {
				return fmt.Errorf("no upgrade path from format version %d", v)
			}
			if err := step(tx); err != nil {
				return fmt.Errorf("upgrade format %d to %d: %w", v, v+1, err)
			}
		}
		if err := meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
			return err
		}
		if err := sm.Put(keyFormatSeal, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
			return err
		}
		s.log.Info("workspace upgraded", "store", s.path, "from_format", version, "to_format", FormatVersion)
	}
	cs, err := sm.Get(keyChunkSize)
	if err != nil {
		return err
	}
	if len(cs) != 4 {
		return fmt.Errorf("%w: bad chunk size record", ErrNotWorkspace)
	}
	s.chunkSize = int(binary.BigEndian.Uint32(cs))
	if s.chunkSize < 4096 || s.chunkSize > 4<<20 {
		return fmt.Errorf("%w: chunk size %d out of range", ErrNotWorkspace, s.chunkSize)
	}
	if tx.Bucket(bucketBodies) == nil || tx.Bucket(bucketIndex) == nil {
		return fmt.Errorf("%w: chunk buckets missing", ErrNotWorkspace)
	}
	return nil
}

// Close closes the file. Committed transactions are already durable.
func (s *Store) Close() error {
	if s.rfile != nil {
		s.rfile.Close()
	}
	if s.rrand != nil {
		s.rrand.Close()
	}
	if s.rdirect != nil {
		s.rdirect.Close()
	}
	var err error
	if s.db.NoFreelistSync {
		// If anything was committed without it, one commit that writes
		// the freelist, so that the next open reads it instead of
		// walking every page. No transaction runs any more: the caller
		// has stopped using the store.
		s.db.NoFreelistSync = false
		if st := s.db.Stats(); st.TxStats.GetWrite() != s.writesNoFreelist {
			if err = s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
				err = fmt.Errorf("close %s: write the freelist: %w", s.path, err)
			}
		}
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// Path is the workspace file's path.
func (s *Store) Path() string { return s.path }

// ChunkSize is the fixed chunk size recorded in the store.
func (s *Store) ChunkSize() int { return s.chunkSize }

// DB exposes the bbolt handle so that fs can keep its buckets in the same
// transactions. Callers must not touch this package's buckets directly.
func (s *Store) DB() *bolt.DB { return s.db }

// Update runs fn in a read-write transaction that is fsync'd on commit.
func (s *Store) Update(fn func(tx *Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverDamage(&err)
	return s.db.Update(func(btx *bolt.Tx) error {
		tx := s.Wrap(btx)
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.flushStats(); err != nil {
			return err
		}
		return tx.storeRoot()
	})
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(tx *Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverDamage(&err)
	return s.db.View(func(btx *bolt.Tx) error { return fn(s.Wrap(btx)) })
}

// ErrDamaged is a fault or a panic inside bbolt while it walked the
// file's pages: damage to the B-tree's own structure. It wraps EIO.
var ErrDamaged = fmt.Errorf("workspace file damaged: %w", syscall.EIO)

// recoverDamage, deferred by View and Update, turns a panic raised
// inside their transaction into *err. bbolt follows page ids in its map
// of the file without bounds checks: a damaged page makes it read past
// the map (a fault, which SetPanicOnFault, set by the caller on its
// goroutine, turns into a panic) or trip its own assertions. bbolt
// rolls the transaction back as the panic leaves it, so the store stays
// usable for what the damage does not touch. Deferred directly (not
// wrapped in a closure), so that its recover sees the panic; and the
// transaction's function is handed to bbolt directly, not through a
// function value, so that the closures of callers stay on their stacks.
func (s *Store) recoverDamage(err *error) {
	if r := recover(); r != nil {
		s.log.Error("workspace file damaged: bbolt failed walking its pages", "store", s.path, "panic", fmt.Sprint(r))
		*err = fmt.Errorf("%s: %w (%v): run computerfs fsck", s.path, ErrDamaged, r)
	}
}

// Wrap gives chunk operations on a transaction the caller already holds.
func (s *Store) Wrap(btx *bolt.Tx) *Tx { return &Tx{Tx: btx, s: s} }

// Tx is a bbolt transaction with chunk operations.
type Tx struct {
	*bolt.Tx
	s *Store
	// w is what only writes need, made at the first (a Tx is allocated
	// per transaction, reads included: they make do with 32 bytes).
	w *txWrites
	// layer, when set, gives the buckets Sealed returns for the names
	// it knows (SetLayer).
	layer func(name []byte, epoch uint64) (sealed.Bucket, bool)
}

// txWrites is the state of a transaction that writes.
type txWrites struct {
	epoch uint64          // the birth epoch of the records it writes (SetEpoch)
	rec   sealed.Recorder // sees the versions it replaces (SetRecorder)
	// root is the change of the root identifier (versions.Root) that
	// the versioned buckets' writes through Sealed make; Update adds it
	// to meta/root before it commits.
	root versions.RootDelta
	// stats are the chunk counters as this transaction changed them,
	// written as it commits (adjustStats).
	stats *Stats
	// watched are the versioned buckets as Sealed gave them, by id,
	// kept while epoch and rec stay: each holds the cursor that finds
	// old values for the root (made once per transaction, not per
	// write).
	watched [8]watchedBucket
}

// writes is t's write state, made on first use.
func (t *Tx) writes() *txWrites {
	if t.w == nil {
		t.w = new(txWrites)
		if t.s != nil && t.Writable() {
			t.w.root.UseCache(&t.s.rootHashes)
		}
	}
	return t.w
}

// epoch is the birth epoch of the records t writes.
func (t *Tx) epoch() uint64 {
	if t.w == nil {
		return 0
	}
	return t.w.epoch
}

// SetLayer has Sealed ask layer first for every bucket by name: a fork
// of the workspace (fs/fork.go) keeps fs's buckets of its own, overlays
// over the workspace as it was. Buckets layer does not know (it returns
// false: this package's, among others) are the store's.
func (t *Tx) SetLayer(layer func(name []byte, epoch uint64) (sealed.Bucket, bool)) { t.layer = layer }

type watchedBucket struct {
	b     sealed.Bucket
	epoch uint64
	rec   sealed.Recorder
}

// Root is the root identifier of the versioned records as this
// transaction has them now: the stored root plus the changes made so
// far. ok is false if the store has none stored yet (see SetRoot).
func (t *Tx) Root() (root versions.Root, ok bool, err error) {
	root, ok, err = versions.StoredRoot(t.Tx, bucketMeta)
	if err != nil || !ok {
		return versions.Root{}, false, err
	}
	if t.w == nil {
		return root, true, nil
	}
	return t.w.root.Apply(root), true, nil
}

// SetRoot stores root as the root identifier of the records as they are
// now in this transaction (computed by versions.ComputeRoot): the
// changes seen so far are in it.
func (t *Tx) SetRoot(root versions.Root) error {
	t.writes().root.Reset()
	return t.Sealed(bucketMeta).Put(versions.KeyRoot, root[:])
}

// RootLost is how many old versions this transaction's writes could not
// count out of the root (damaged records): the stored root no longer
// matches the records after such a write, which fsck reports.
func (t *Tx) RootLost() int {
	if t.w == nil {
		return 0
	}
	return t.w.root.Lost
}

// storeRoot adds the transaction's root changes to meta/root: one key,
// written only if a versioned record changed. A store without a root
// keeps none: it is computed whole when fs opens it.
func (t *Tx) storeRoot() error {
	if t.w == nil || t.w.root.Changes() == 0 {
		return nil
	}
	if t.w.root.Lost > 0 {
		t.s.log.Error("root identifier no longer matches the records: a damaged record was replaced or deleted; fsck --repair recomputes it", "store", t.s.path, "records", t.w.root.Lost)
	}
	root, ok, err := t.Root()
	if errors.Is(err, sealed.ErrDamaged) {
		// Left as it is for fsck to report and repair: failing every
		// commit for it would make the workspace read-only.
		t.s.log.Error("damaged root identifier", "store", t.s.path, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("root identifier: %w", err)
	}
	if !ok {
		return nil
	}
	t.w.root.Reset()
	return t.Sealed(bucketMeta).Put(versions.KeyRoot, root[:])
}

// SetRecorder has rec see every version of a record that Sealed buckets
// replace or delete from now on in this transaction (package versions).
func (t *Tx) SetRecorder(rec sealed.Recorder) { t.writes().rec = rec }

// SetEpoch sets the birth epoch that the records written through Sealed
// get from now on in this transaction: fs's commit number (see
// fs/SNAPSHOTS.md).
func (t *Tx) SetEpoch(e uint64) { t.writes().epoch = e }

// Codecs of a stored body.
const (
	CodecRaw byte = 0
	CodecS2  byte = 1
)

// Prepared is a chunk hashed and compressed, ready to be put. Preparing is
// the expensive part and happens off the commit path (see Prepare).
type Prepared struct {
	ID    ID
	Len   int    // plaintext length
	Codec byte   // CodecRaw or CodecS2
	Body  []byte // stored bytes
	// Outboard is the body's outboard value (outboard.go): raw bodies
	// of outboardMin bytes or more have one, stored beside the body.
	Outboard []byte
	// value is the whole stored value (header and body) when it was built
	// off the commit path; Put then stores it without copying.
	value []byte
}

// Value returns the whole value Put stores (header and body) when it was
// built off the commit path (PrepareFramed), nil otherwise.
func (p *Prepared) Value() []byte { return p.value }

// SetValue makes v, a copy of Value's bytes kept elsewhere (fs's spill
// file), the value Put stores and Body its body. v must not change until
// the Prepared has been put.
func (p *Prepared) SetValue(v []byte) {
	p.value = v
	p.Body = v[HeaderSize:]
}

// HeaderSize is the size of the header stored in front of every body.
const HeaderSize = bodyHeaderSize

// PrepareFramed is Prepare for a chunk whose plaintext sits at
// frame[HeaderSize:], with room for the header in front. A chunk kept raw
// is stored straight from frame, and a compressed one from a new buffer
// holding its header: either way the single committer copies nothing and
// the work is done by the caller's (parallel) goroutine. frame must not
// change until the Prepared has been put.
func PrepareFramed(frame, scratch []byte) Prepared {
	data := frame[HeaderSize:]
	p := Prepare(data, scratch)
	h := bodyHeader{Codec: p.Codec, Len: uint32(p.Len), ID: p.ID}
	if p.Codec == CodecRaw {
		h.append(frame[:0])
		p.value = frame
	} else {
		p.value = append(h.append(make([]byte, 0, HeaderSize+len(p.Body))), p.Body...)
	}
	p.Body = p.value[HeaderSize:]
	return p
}

// PrepareInPlace is Prepare for a chunk whose plaintext lies where its
// caller cannot write with a plain store (fs's spill file, mapped
// read-only), with HeaderSize bytes of room in front of it. A chunk kept
// raw comes back with header, the bytes to put in that room; the caller
// then sets the value (SetValue) to header and plaintext where they lie.
// A compressed one comes back with its value in a new buffer and header
// nil. Either way nothing of data's is copied.
func PrepareInPlace(data, scratch []byte) (p Prepared, header []byte) {
	p = Prepare(data, scratch)
	h := bodyHeader{Codec: p.Codec, Len: uint32(p.Len), ID: p.ID}
	if p.Codec == CodecRaw {
		return p, h.append(make([]byte, 0, HeaderSize))
	}
	p.value = append(h.append(make([]byte, 0, HeaderSize+len(p.Body))), p.Body...)
	p.Body = p.value[HeaderSize:]
	return p, nil
}

// Prepare hashes data and compresses it into scratch (which may be nil).
// Data is kept raw unless compression saves at least an eighth. The
// returned Body may alias data or scratch.
//
// A raw body of outboardMin bytes or more gets its outboard, whose
// computation gives the ID in the same pass (Bao's root is the BLAKE3
// hash): it costs no more hashing than the ID alone.
func Prepare(data, scratch []byte) Prepared {
	p := Prepared{Len: len(data), Codec: CodecRaw, Body: data}
	if len(data) >= 64 {
		if need := s2.MaxEncodedLen(len(data)); cap(scratch) < need {
			scratch = make([]byte, need)
		}
		if !incompressible(data, scratch[:cap(scratch)]) {
			enc := s2.Encode(scratch[:cap(scratch)], data)
			if len(enc) <= len(data)-len(data)/8 {
				p.Codec, p.Body = CodecS2, enc
			}
		}
	}
	if p.Codec == CodecRaw && len(data) >= outboardMin {
		p.Outboard, p.ID = encodeOutboard(data)
	} else {
		p.ID = Sum(data)
	}
	return p
}

// sampleSize and samples: a body of more than samples × sampleSize
// bytes is tried for compression on samples pieces spread over it first.
const (
	sampleSize = 8 << 10
	samples    = 4
)

// incompressible reports whether data looks like it will not compress by
// an eighth: none of a few samples spread over it does by a tenth. (A
// sixteenth let fio's buffers through, random but for a few zeros every
// 512 bytes: each sample saved 7%, the whole chunk 7.8%, short of the
// eighth, and the whole encode, 40% of the daemon's CPU writing them,
// bought nothing.)
// Compressed, random or encrypted data (media, archives, packs) then
// costs a few small encodes instead of a whole one, which on such data
// is a copy through the encoder. Data that compresses only in places
// the samples miss is stored raw: a lost saving, never a wrong body.
func incompressible(data, scratch []byte) bool {
	if len(data) <= samples*sampleSize*2 {
		return false
	}
	step := (len(data) - sampleSize) / (samples - 1)
	for i := range samples {
		piece := data[i*step : i*step+sampleSize]
		if enc := s2.Encode(scratch, piece); len(enc) <= len(piece)-len(piece)/10 {
			return false
		}
	}
	return true
}

// Has reports whether the chunk is stored.
func (t *Tx) Has(id ID) (bool, error) {
	v, err := t.index().Get(id[:])
	if err != nil {
		return false, t.damaged(err)
	}
	return v != nil, nil
}

// index is the content index, sealed.
func (t *Tx) index() sealed.Bucket { return sealed.In(t.Tx, bucketIndex) }

// Sealed returns bucket name of the transaction with its records'
// seals verified on every read and made on every write (package sealed).
// Every bucket of the store but the chunk bodies' is sealed from format 3.
func (t *Tx) Sealed(name []byte) sealed.Bucket {
	if t.layer != nil {
		if b, ok := t.layer(name, t.epoch()); ok {
			return b
		}
	}
	if !t.Writable() {
		return sealed.In(t.Tx, name) // reads: no watcher, no cursor to make
	}
	w := t.writes()
	b := sealed.InAt(t.Tx, name, w.epoch)
	id := versions.ID(name)
	if id != 0 && int(id) < len(w.watched) {
		if wb := &w.watched[id]; wb.b.Exists() && wb.epoch == w.epoch && wb.rec == w.rec {
			return wb.b
		}
	}
	if w.rec != nil {
		b = b.WithRecorder(w.rec)
	}
	if id != 0 {
		b = b.WithWatcher(&w.root)
		if int(id) < len(w.watched) && b.Exists() {
			w.watched[id] = watchedBucket{b: b, epoch: w.epoch, rec: w.rec}
		}
	}
	return b
}

// damaged logs a damaged record of this package's buckets and returns
// err wrapped with ErrCorrupt (EIO).
func (t *Tx) damaged(err error) error {
	t.s.log.Error("damaged record", "store", t.s.path, "err", err)
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// Put stores the chunk with one reference, or adds a reference if it is
// already stored (deduplication). It reports whether the body was new.
func (t *Tx) Put(p *Prepared) (stored bool, err error) {
	idx := t.index()
	v, err := idx.Get(p.ID[:])
	if err != nil {
		return false, t.damaged(err)
	}
	if v != nil {
		e, err := decodeIndexEntry(v)
		if err != nil {
			return false, t.corrupt(p.ID, err)
		}
		e.Refs++
		if err := idx.Put(p.ID[:], e.encode()); err != nil {
			return false, err
		}
		return false, t.adjustStats(func(st *Stats) { st.LogicalBytes += uint64(e.Len) })
	}
	bodies := t.Bucket(bucketBodies)
	// Bodies are keyed by a sequence: new ones go at the end, where
	// bbolt's default fill of 50% would leave every leaf half empty.
	bodies.FillPercent = 1.0
	seq, err := bodies.NextSequence()
	if err != nil {
		return false, err
	}
	e := indexEntry{Seq: seq, Refs: 1, Len: uint32(p.Len), Stored: uint32(len(p.Body))}
	val := p.value
	if val == nil {
		val = make([]byte, 0, bodyHeaderSize+len(p.Body))
		val = bodyHeader{Codec: p.Codec, Len: uint32(p.Len), ID: p.ID}.append(val)
		val = append(val, p.Body...)
	}
	if err := putBody(bodies, seqKey(seq), val, p.Outboard); err != nil {
		return false, err
	}
	if err := idx.Put(p.ID[:], e.encode()); err != nil {
		return false, err
	}
	return true, t.adjustStats(func(st *Stats) {
		st.Chunks++
		st.LogicalBytes += uint64(p.Len)
		st.UniqueBytes += uint64(p.Len)
		st.StoredBytes += uint64(len(p.Body))
	})
}

// Ref adds a reference to a stored chunk (copy_file_range, hard copies).
func (t *Tx) Ref(id ID) error {
	idx := t.index()
	v, err := idx.Get(id[:])
	if err != nil {
		return t.damaged(err)
	}
	if v == nil {
		return fmt.Errorf("ref %s: %w", id.Short(), ErrNotFound)
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return t.corrupt(id, err)
	}
	e.Refs++
	if err := idx.Put(id[:], e.encode()); err != nil {
		return err
	}
	return t.adjustStats(func(st *Stats) { st.LogicalBytes += uint64(e.Len) })
}

// Unref drops a reference; the last one deletes the chunk in this
// transaction, so no unreferenced chunk outlives a commit.
func (t *Tx) Unref(id ID) error {
	idx := t.index()
	v, err := idx.Get(id[:])
	if err != nil {
		return t.damaged(err)
	}
	if v == nil {
		return fmt.Errorf("unref %s: %w", id.Short(), ErrNotFound)
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return t.corrupt(id, err)
	}
	if e.Refs > 1 {
		e.Refs--
		if err := idx.Put(id[:], e.encode()); err != nil {
			return err
		}
		return t.adjustStats(func(st *Stats) { st.LogicalBytes -= uint64(e.Len) })
	}
	if err := DeleteBodyValue(t.Bucket(bucketBodies), seqKey(e.Seq)); err != nil {
		return err
	}
	if err := idx.Delete(id[:]); err != nil {
		return err
	}
	return t.adjustStats(func(st *Stats) {
		st.Chunks--
		st.LogicalBytes -= uint64(e.Len)
		st.UniqueBytes -= uint64(e.Len)
		st.StoredBytes -= uint64(e.Stored)
	})
}

// Len returns the plaintext length of a stored chunk without reading it.
func (t *Tx) Len(id ID) (int, error) {
	v, err := t.index().Get(id[:])
	if err != nil {
		return 0, t.damaged(err)
	}
	if v == nil {
		return 0, fmt.Errorf("len %s: %w", id.Short(), ErrNotFound)
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return 0, t.corrupt(id, err)
	}
	return int(e.Len), nil
}

// Refs returns the reference count of a stored chunk, 0 if absent.
func (t *Tx) Refs(id ID) (uint64, error) {
	v, err := t.index().Get(id[:])
	if err != nil {
		return 0, t.damaged(err)
	}
	if v == nil {
		return 0, nil
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return 0, t.corrupt(id, err)
	}
	return e.Refs, nil
}

// Get returns the verified plaintext of a chunk, decompressed into dst if
// it has room (dst may be nil). The result never aliases the mmap, so it
// stays valid after the transaction ends. A hash mismatch is logged and
// returned as ErrCorrupt (EIO).
func (t *Tx) Get(id ID, dst []byte) ([]byte, error) {
	e, err := t.entry(id, "get")
	if err != nil {
		return nil, err
	}
	return t.get(id, e, dst)
}

// GetInto is Get for a caller that lets the plaintext lie anywhere in
// buf, not only at its start: a cold raw body with an outboard is then
// read from the disk straight into buf (O_DIRECT, leaf.go), without
// passing through the page cache, when buf has room for it
// (ReadBufSize). The result never aliases the mmap either.
func (t *Tx) GetInto(id ID, buf []byte) ([]byte, error) {
	e, err := t.entry(id, "get")
	if err != nil {
		return nil, err
	}
	if out, ok := t.preadLeafDirect(id, e, buf); ok {
		if Sum(out) == id {
			return out, nil
		}
		// Read again through the page cache, and through the map if
		// that fails too, which names the damage.
	}
	return t.get(id, e, buf)
}

// entry returns chunk id's index entry; op names the caller in errors.
func (t *Tx) entry(id ID, op string) (indexEntry, error) {
	v, err := t.index().Get(id[:])
	if err != nil {
		return indexEntry{}, t.damaged(err)
	}
	if v == nil {
		return indexEntry{}, fmt.Errorf("%s %s: %w", op, id.Short(), ErrNotFound)
	}
	e, err := decodeIndexEntry(v)
	if err != nil {
		return indexEntry{}, t.corrupt(id, err)
	}
	return e, nil
}

func (t *Tx) get(id ID, e indexEntry, dst []byte) ([]byte, error) {
	// A raw body with an outboard is read whole with one pread of its
	// leaf, never faulting bbolt's map (leaf.go); anything else, or
	// anything that does not verify, is read through the map below,
	// which names the damage.
	if out, ok := t.preadLeaf(id, e, dst); ok && Sum(out) == id {
		return out, nil
	}
	raw := BodyValue(t.Bucket(bucketBodies), seqKey(e.Seq))
	if raw == nil {
		return nil, t.corrupt(id, fmt.Errorf("body %d missing", e.Seq))
	}
	out, ok := t.preadRaw(raw, dst, e)
	if !ok {
		var err error
		if out, err = decodeBody(raw, dst); err != nil {
			return nil, t.corrupt(id, err)
		}
	}
	if got := Sum(out); got != id {
		return nil, t.corrupt(id, fmt.Errorf("hash mismatch: body hashes to %s", got.Short()))
	}
	return out, nil
}

func (t *Tx) corrupt(id ID, cause error) error {
	t.s.log.Error("corrupt chunk", "chunk", id.String(), "store", t.s.path, "err", cause)
	return fmt.Errorf("chunk %s: %w: %w", id.Short(), ErrCorrupt, cause)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// preadMin is the smallest raw body read from the file with pread rather
// than copied out of bbolt's map.
const preadMin = 64 << 10

// preadRaw copies a large raw body value, which lies in bbolt's map of
// the file, into dst with one pread of the same bytes. Copying from the
// map faults it in a few pages at a time, each fault a synchronous read
// of the disk's read-ahead window: a cold chunk cost tens of round trips
// to the disk, where one pread asks for all of it. The header is read
// by the same pread (preadv), not from the map: with an outboard in
// front (format 8) it begins the page after the leaf's first, which
// would cost a fault of its own. Whether the body is raw is the index
// entry's to say (e) and the header's to confirm. It reports false when
// it did nothing (a small or compressed body, a write transaction's own
// value, a failed read), and the caller decodes from the map.
func (t *Tx) preadRaw(raw, dst []byte, e indexEntry) ([]byte, bool) {
	n := int(e.Len)
	if e.Stored != e.Len || len(raw) != bodyHeaderSize+n || n < preadMin || t.Writable() || t.s.rfile == nil {
		return nil, false
	}
	pos, ok := t.fileOffset(raw)
	if !ok {
		return nil, false
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	var hdr [bodyHeaderSize]byte
	got, err := unix.Preadv(int(t.s.rfile.Fd()), [][]byte{hdr[:], dst}, pos)
	if err != nil || got != len(raw) {
		return nil, false
	}
	if h, err := decodeBodyHeader(hdr[:]); err != nil || h.Codec != CodecRaw || int(h.Len) != n {
		return nil, false
	}
	return dst, true
}

// decodeBody decompresses a stored body value into dst.
func decodeBody(raw, dst []byte) ([]byte, error) {
	h, err := decodeBodyHeader(raw)
	if err != nil {
		return nil, err
	}
	body := raw[bodyHeaderSize:]
	switch h.Codec {
	case CodecRaw:
		if len(body) != int(h.Len) {
			return nil, fmt.Errorf("raw body is %d bytes, header says %d", len(body), h.Len)
		}
		if cap(dst) < len(body) {
			dst = make([]byte, len(body))
		}
		dst = dst[:len(body)]
		copy(dst, body)
		return dst, nil
	case CodecS2:
		n, err := s2.DecodedLen(body)
		if err != nil {
			return nil, fmt.Errorf("s2 body: %w", err)
		}
		if n != int(h.Len) {
			return nil, fmt.Errorf("s2 body decodes to %d bytes, header says %d", n, h.Len)
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out, err := s2.Decode(dst[:n], body)
		if err != nil {
			return nil, fmt.Errorf("s2 body: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown codec %d", h.Codec)
}

// DropCaches forgets the outboards it keeps, lets go of the store's
// pages in this process's map of the file and asks the kernel to drop the file from its page cache, so that
// the next reads come from the disk (cold-read benchmarks). Mapped pages
// are never dropped by /proc/sys/vm/drop_caches. Nothing is lost: clean
// pages are read again, and the map holds no dirty ones (bbolt writes
// with pwrite). It runs in a read transaction, which keeps bbolt from
// remapping meanwhile.
func (s *Store) DropCaches() error {
	s.outboards.clear()
	return s.db.View(func(tx *bolt.Tx) error {
		info := tx.DB().Info()
		if info.Data == 0 || tx.Size() == 0 {
			return nil
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(tx.Size()), unix.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("madvise %s: %w", s.path, e)
		}
		f, err := os.Open(s.path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("fadvise %s: %w", s.path, err)
		}
		return nil
	})
}
