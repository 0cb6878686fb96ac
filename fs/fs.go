// Package fs is the POSIX model of a workspace: inodes, directory entries,
// chunk lists and extended attributes, kept in the same bbolt file as the
// chunks so that one transaction covers data and metadata.
//
// It owns the fs buckets (inodes, dirents, fchunks, xattrs, orphans) and the
// in-memory state in front of them. It knows nothing of FUSE or of gRPC: the
// FUSE adapter and the file API are thin doors onto this package, so they
// cannot disagree. It must not touch the chunkstore's buckets except through
// chunkstore.Tx.
//
// # Design
//
// Every operation changes in-memory state first: a cache of nodes with
// overlays of uncommitted changes (attributes, directory entries, xattrs,
// chunk slots). One committer goroutine takes a consistent snapshot of all
// changes under mu and writes it in a single bbolt transaction (group
// commit); only then are the overlays dropped. So the store always holds a
// state the filesystem really had, every read sees its own writes, and a
// crash loses at most the changes since the last commit that no fsync
// waited for.
//
// File data lives in fixed-size chunk slots (one per chunk index). A write
// fills a slot's buffer; a full slot is sealed and handed to a worker pool
// that hashes (BLAKE3) and compresses it off the request path; the
// committer then stores the prepared chunk. All-zero chunks become holes.
// A write over part of a stored chunk neither reads it nor takes a chunk
// buffer: its slot is sparse, keeping only the 4 KiB pages written, with
// the stored chunk as its base showing through the others; reads combine
// the two, and a worker merges them into a buffer when the slot is
// sealed. So a database's or a random writer's 4 KiB write costs about
// 4 KiB until its chunk is sealed: at the chunk's end, fsync, close,
// after a second without writes, or, the sparse slots with the most
// pages first, as the page budget fills. Other slots nobody writes to
// are sealed by the committer's next tick. Buffers and pages come from
// fixed pools: when one runs dry, writers wait while the pipeline drains
// (backpressure), so memory is bounded.
//
// Reads decode and verify stored chunks into a small cache of recycled
// buffers. A read that goes on where the last one on the node stopped (or
// a large one within a chunk of it) queues the next chunks for a
// prefetcher goroutine, so that reading the store and verifying overlap
// with the kernel copying out.
//
// # Locking
//
// mu protects everything in memory. It is never held across a bbolt write
// transaction or a chunk decode; bbolt read transactions of metadata may run
// under it. Blocking waits use cond, which shares mu. The chunk cache has a
// mutex of its own, a leaf: it may be taken under mu, and nothing is taken
// under it.
//
// # Durability
//
// Fsync seals the node's dirty slots, waits for them to be prepared, then
// waits for a commit whose snapshot was taken after that: the bbolt commit
// fsyncs the file. Release (the last close of a handle) only seals, it
// does not wait.
package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// DefaultLimit is the workspace size limit of new stores.
const DefaultLimit = 10 << 30

// Options configure Open.
type Options struct {
	// Limit is the workspace size limit in bytes, set when the store is
	// created (DefaultLimit if 0). SetLimit changes it later.
	Limit uint64
	// ChunkSize applies only when the store is created.
	ChunkSize int
	// BufferBytes bounds the memory of in-flight chunk buffers (64 MiB if 0).
	BufferBytes int
	// PageBytes bounds the memory of the pages kept by sparse slots,
	// writes over parts of stored chunks (BufferBytes if 0): when they
	// fill it, the sparse slots are merged and committed.
	PageBytes int
	// SpillBytes bounds the spill file (spill.go) that takes prepared
	// chunks waiting for a commit once half the buffer pool is taken
	// (512 MiB if 0, none if negative).
	SpillBytes int
	// CommitInterval is the longest a change waits for a commit when no
	// fsync asks for one (100ms if 0).
	CommitInterval time.Duration
	// Workers hash and compress chunks (GOMAXPROCS if 0).
	Workers int
	// Heavy, if set, is told when work that may want a CPU of its own
	// begins and ends, and how many bytes it covers: a worker preparing a
	// chunk, a chunk read ahead decoded, a spill write, a write of
	// streamWrite bytes or more (work to come), a ranged read of the
	// store (rangedWeight), and Parallel's work (internal/procs decides
	// from that how many Ps the runtime uses).
	Heavy  Heavy
	Logger *slog.Logger
	// LockTimeout is passed to chunkstore.Open.
	LockTimeout time.Duration

	fork *forkCfg // set by OpenFork: the FS serves that fork
}

// Heavy is told of background work that may want a CPU of its own; see
// Options.Heavy. Its methods must be cheap and must not call into the FS.
// Begin's bytes is how much the work covers, or AllCPUs for work that
// runs parallel workers and wants every CPU at once (Parallel).
type Heavy interface {
	Begin(bytes int)
	End()
}

// AllCPUs is Heavy.Begin's bytes for work that wants every CPU at once.
const AllCPUs = -1

// Parallel tells Options.Heavy, if any, that work running parallel
// workers over this FS begins (a grep of the tree, a push), so that the
// process has every P while it runs; end tells it the work ended. Call
// it before sizing a worker pool by GOMAXPROCS.
func (f *FS) Parallel() (end func()) {
	f.beginHeavy(AllCPUs)
	return f.endHeavy
}

// beginHeavy and endHeavy tell opts.Heavy, if any.
func (f *FS) beginHeavy(bytes int) {
	if f.heavy != nil {
		f.heavy.Begin(bytes)
	}
}

func (f *FS) endHeavy() {
	if f.heavy != nil {
		f.heavy.End()
	}
}

// Caller says who asks. Kernel is set by the FUSE adapter: the kernel then
// holds a lookup reference on every entry returned, released by Forget.
type Caller struct {
	Uid, Gid uint32
	Kernel   bool
}

// FS is an open workspace filesystem.
type FS struct {
	store     *chunkstore.Store
	log       *slog.Logger
	heavy     Heavy
	chunkSize int
	interval  time.Duration

	mu      sync.Mutex
	cond    *sync.Cond // broadcast on every slot, buffer and commit change
	nodes   map[Ino]*node
	dirty   map[Ino]*node // nodes with changes not yet committed
	dead    map[Ino]bool  // inodes to delete from the store at the next commit
	gen     uint64        // bumped by every change; orders changes and snapshots
	nextIno Ino
	// epoch is the last commit's number (meta/epoch); only the committer
	// (and load, before it starts) touches it.
	epoch    uint64
	limit    uint64
	limitGen uint64 // gen of an uncommitted limit change, 0 if none
	used     uint64 // unique plaintext bytes stored, as of the last commit
	broken   error  // set when a commit failed: the workspace turns read-only
	jn       journal
	cps      checkpoints // exec checkpoints (checkpoint.go)

	// buffers
	freeBufs [][]byte
	bufCount int // buffers allocated
	bufMax   int
	// bufReserve buffers are the workers' alone (see mergeBase).
	bufReserve int
	pending    int // slots sealed but not yet prepared
	// readyBufs are the buffers of prepared slots waiting for a commit:
	// past batchBufs of them, a commit is started at once rather than at
	// the next tick, so that a long write finds buffers freed as it goes
	// instead of filling the pool and then waiting for one commit of all
	// of it.
	readyBufs int
	batchBufs int
	// spill is the spill file (spill.go), made at its first need;
	// spillSlots its size in chunks (0: none). spillReady are the
	// prepared slots in it that no snapshot took yet: past batchBufs of
	// them a commit starts. syncWaiters count the goroutines waiting for
	// a commit (waitCommitLocked): while there are none, a snapshot takes
	// at most spillBatch spilled slots, so that a commit maps a bounded
	// part of the spill file, and none while writes stream in (see
	// takeSnapshotLocked).
	spill       *spill
	spillSlots  int
	spillReady  int
	spillBatch  int
	syncWaiters int
	// draining is set while a waiter commits the spill in batches
	// (drainSpillLocked): its snapshots take spillBatch spilled slots.
	draining int
	// spilledTotal counts the chunks ever spilled, spilledRaw those
	// of them written straight to the spill file, mostSpilled the
	// most one snapshot took, and mostFrames the most pool frames one
	// background snapshot took (tests).
	spilledTotal int
	spilledRaw   int
	// staged counts the slots whose spill write is under way, stageQ
	// those waiting for the spill writer, stageWork wakes it, and
	// stagedTotal counts the spill writes it made (stage.go).
	staged      int
	stageQ      []*slot
	stageWork   chan struct{}
	stagedTotal int
	stagerDone  bool
	// stageGate, if set (tests), is received from before each spill
	// write the spill writer makes.
	stageGate   chan struct{}
	mostSpilled int
	mostFrames  int
	// quiet is set by the committer's tick: nothing changed since the
	// tick before (a background commit then takes spilled slots).
	quiet bool
	// small chunks' frames (small.go)
	small smallPool
	// bufWaits counts the times a writer waited for buffer room (tests).
	bufWaits int
	// pages of sparse slots (data.go)
	freePages   [][]byte
	pageCount   int // pages in use
	pagesSealed int // of which in sealed slots, waiting for a worker
	pageMax     int

	// commit pipeline
	// commitMu is held by whoever runs commitOnce, the committer or a
	// goroutine waiting for a commit (waitCommitLocked): commits happen
	// one at a time, in the order of their snapshots. Taken before mu.
	commitMu  sync.Mutex
	snapTaken uint64 // snapshots taken
	snapDone  uint64 // snapshots committed (or failed)
	kick      chan struct{}
	queue     []*slot // sealed slots waiting for a worker
	// held are sealed slots whose hashing waits for the writes to pause
	// (holdLocked); holdOff stops more from being held until then.
	held      []*slot
	holdOff   bool
	scratch   [][]byte      // compression buffers of prepareQueuedLocked
	work      chan struct{} // wakes workers
	cache     chunkCache
	readAhead chan aheadChunk // chunks for the prefetcher

	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
	// closing is set once Close has begun.
	closing bool
	// in is the intent log (intent.go).
	in intentState

	opts Options
	// inoLimit bounds the inode numbers Create hands out: forkInoFloor
	// for the workspace, the end of its range for a fork (fork.go).
	inoLimit Ino
	// fork is the fork this FS serves, nil for the workspace itself.
	fork *forkCfg
	// forks are the workspace's forks open now, by ID (fork.go);
	// forkMu guards it, and is never taken under mu.
	forkMu sync.Mutex
	forks  map[string]*FS

	// liveHolds are the holds of the pulls running now (holds.go),
	// lastHold the last number given; both under mu.
	liveHolds map[uint64]bool
	lastHold  uint64
}

// Open opens (or creates) the workspace at path and starts its committer and
// workers. Close stops them.
func Open(path string, opts Options) (*FS, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	store, err := chunkstore.Open(path, chunkstore.Options{ChunkSize: opts.ChunkSize, Logger: opts.Logger, LockTimeout: opts.LockTimeout})
	if err != nil {
		return nil, err
	}
	f, err := newFS(store, opts)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

func newFS(store *chunkstore.Store, opts Options) (*FS, error) {
	f := &FS{
		store:     store,
		log:       opts.Logger,
		heavy:     opts.Heavy,
		chunkSize: store.ChunkSize(),
		interval:  opts.CommitInterval,
		nodes:     make(map[Ino]*node),
		dirty:     make(map[Ino]*node),
		dead:      make(map[Ino]bool),
		kick:      make(chan struct{}, 1),
		work:      make(chan struct{}, 64),
		stageWork: make(chan struct{}, 1),
		readAhead: make(chan aheadChunk, 4*readAheadChunks),
		stop:      make(chan struct{}),
		opts:      opts,
		fork:      opts.fork,
		inoLimit:  forkInoFloor,
		forks:     make(map[string]*FS),
	}
	if f.fork != nil {
		f.inoLimit = f.fork.InoEnd
	}
	f.cond = sync.NewCond(&f.mu)
	f.cache.init(8+2*readAheadChunks, chunkstore.ReadBufSize(f.chunkSize))
	f.jn.init()
	if f.interval == 0 {
		f.interval = 100 * time.Millisecond
	}
	bufBytes := opts.BufferBytes
	if bufBytes == 0 {
		bufBytes = 64 << 20
	}
	f.bufMax = max(bufBytes/f.chunkSize, 8)
	pageBytes := opts.PageBytes
	if pageBytes == 0 {
		pageBytes = bufBytes
	}
	f.pageMax = max(pageBytes/pageSize, 64)
	f.small.init((chunkstore.HeaderSize+f.chunkSize)/8, f.bufMax*f.chunkSize)
	switch spillBytes := opts.SpillBytes; {
	case spillBytes == 0:
		f.spillSlots = (512 << 20) / f.chunkSize
	case spillBytes > 0:
		f.spillSlots = max(spillBytes/f.chunkSize, 1)
	}
	// A quarter of the pool: the spill pages a commit maps count in the
	// daemon's RSS until it ends (with half, one rss-4g peak held 36 MiB
	// of them, and peaks reached 243 MiB against the 256 it must stay
	// under).
	f.spillBatch = max(1, f.bufMax/4)
	if err := f.load(opts); err != nil {
		return nil, err
	}
	f.in.logged = make(map[Ino]bool)
	if f.fork == nil {
		// A pull killed before it applied its tree left references on
		// its chunks: released now (holds.go). Failing that, they stay,
		// counted by fsck and gc, for the next open or pull.
		if h, n, err := f.releaseDeadHolds(); err != nil {
			f.log.Warn("open: chunks held by a pull that did not finish stay held", "store", store.Path(), "err", err)
		} else if h > 0 {
			f.log.Info("released the chunks held by pulls that did not finish", "store", store.Path(), "pulls", h, "chunks", n)
		}
	}
	workers := opts.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	f.bufReserve = max(1, min(workers, f.bufMax/8))
	f.batchBufs = max(1, f.bufMax/4)
	for range workers {
		f.wg.Add(1)
		go f.worker()
	}
	f.wg.Add(1)
	go f.committer()
	f.wg.Add(1)
	go f.spillWriter()
	for range prefetchers {
		f.wg.Add(1)
		go f.prefetcher()
	}
	if err := f.initIntent(); err != nil {
		// Stop what runs, leaving the store to the caller (its changes
		// are not committed: the log stays as it is, for the next try).
		f.mu.Lock()
		f.closed = true
		f.cond.Broadcast()
		f.mu.Unlock()
		close(f.stop)
		f.wg.Wait()
		if f.spill != nil {
			f.spill.close()
			f.spill = nil
		}
		return nil, err
	}
	return f, nil
}

// load creates the fs buckets and root of a new store, reads the counters of
// an existing one, and deletes inodes left orphaned by a crash.
func (f *FS) load(opts Options) error {
	if f.fork != nil {
		return f.loadFork()
	}
	return f.update(func(tx *chunkstore.Tx) error {
		inited, err := tx.Sealed(bucketMeta).Get(keyNextIno)
		if err != nil {
			return err
		}
		if inited != nil {
			// An existing store: its buckets are all there, and only
			// ours. A bucket missing, or one of another name, is a
			// damaged root page (a flipped byte of a name), and
			// making it anew would show an empty directory tree as if
			// nothing were wrong.
			if err := checkBuckets(tx); err != nil {
				return err
			}
		}
		for _, name := range append([][]byte{bucketInodes, bucketDirents, bucketChunks, bucketXattrs, bucketOrphans, bucketSnapshots}, versions.Buckets...) {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := f.loadJournal(tx); err != nil {
			return err
		}
		meta := tx.Sealed(bucketMeta)
		v, err := meta.Get(keyNextIno)
		if err != nil {
			return err
		}
		if v == nil {
			now := time.Now().UnixNano()
			root := Attr{Ino: RootIno, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Atime: now, Mtime: now, Ctime: now, Btime: now, Parent: RootIno}
			if err := tx.Sealed(bucketInodes).Put(inoKey(RootIno), encodeInode(&root, "", inodeSum{Known: true})); err != nil {
				return err
			}
			limit := opts.Limit
			if limit == 0 {
				limit = DefaultLimit
			}
			if err := meta.Put(keyLimit, inoKey(Ino(limit))); err != nil {
				return err
			}
			if err := meta.Put(keyNextIno, inoKey(RootIno+1)); err != nil {
				return err
			}
		}
		v, err = meta.Get(keyNextIno)
		if err != nil {
			return err
		}
		next, ok := u64(v)
		if !ok || next <= uint64(RootIno) {
			return fmt.Errorf("%w: bad next_ino record", chunkstore.ErrCorrupt)
		}
		f.nextIno = Ino(next)
		if v, err = meta.Get(keyEpoch); err != nil {
			return err
		}
		f.epoch, _ = u64(v) // none yet: 0, before the first commit
		v, err = meta.Get(keyLimit)
		if err != nil {
			return err
		}
		limit, ok := u64(v)
		if !ok {
			return fmt.Errorf("%w: bad limit record", chunkstore.ErrCorrupt)
		}
		f.limit = limit
		if has, err := tx.Sealed(bucketInodes).Has(inoKey(RootIno)); err != nil {
			return fmt.Errorf("root inode: %w", err)
		} else if !has {
			return fmt.Errorf("%w: root inode missing", chunkstore.ErrCorrupt)
		}
		if err := f.purgeOrphans(tx); err != nil {
			return err
		}
		if f.cps.records, err = countCheckpoints(tx); err != nil {
			return err
		}
		if f.cps.records > 0 {
			tx.SetEpoch(f.epoch)
			if n, err := endInterrupted(tx, f.epoch); err != nil {
				return fmt.Errorf("exec records: %w", err)
			} else if n > 0 {
				f.log.Warn("execs were interrupted by the workspace's close; their changes up to it can be undone", "count", n)
			}
		}
		if err := ensureRoot(tx, f.log); err != nil {
			return err
		}
		st, err := tx.Stats()
		if err != nil {
			return err
		}
		f.used = st.UniqueBytes
		return nil
	})
}

// purgeOrphans deletes the inodes a crash left unlinked, in a commit of
// its own epoch.
func (f *FS) purgeOrphans(tx *chunkstore.Tx) error {
	var orphans []Ino
	// A damaged orphan record is left for fsck: purging what its key
	// might name could delete a live file.
	tx.Sealed(bucketOrphans).Walk(func(k, _ []byte, damage error) error {
		if damage != nil {
			f.reportDamage(damage)
		} else if len(k) == 8 {
			orphans = append(orphans, keyIno(k))
		}
		return nil
	})
	if len(orphans) == 0 {
		return nil
	}
	var unref []chunkstore.ID
	// The purge is a commit of its own epoch: a snapshot that saw an
	// orphan keeps its versions (a fork's commits keep none).
	f.epoch++
	tx.SetEpoch(f.epoch)
	if f.fork == nil {
		rec, err := versions.Attach(tx.Tx, f.epoch)
		if err != nil {
			return err
		}
		tx.SetRecorder(rec)
	}
	if err := f.meta(tx).Put(keyEpoch, inoKey(Ino(f.epoch))); err != nil {
		return err
	}
	for _, ino := range orphans {
		if err := f.deleteInode(tx, ino, &unref); err != nil {
			return err
		}
	}
	for _, id := range unref {
		if err := tx.Unref(id); err != nil {
			return fmt.Errorf("purge orphan chunks: %w", err)
		}
	}
	f.log.Info("purged orphaned inodes", "count", len(orphans), "fork", f.Fork())
	return nil
}

// loadFork reads the counters of the fork f serves and purges its
// orphans.
func (f *FS) loadFork() error {
	return f.update(func(tx *chunkstore.Tx) error {
		meta := f.meta(tx)
		v, err := meta.Get(keyNextIno)
		if err != nil {
			return err
		}
		next, ok := u64(v)
		if !ok || Ino(next) < f.fork.InoBase || Ino(next) > f.fork.InoEnd {
			return fmt.Errorf("%w: bad next_ino record of fork %s", chunkstore.ErrCorrupt, f.fork.ID)
		}
		f.nextIno = Ino(next)
		if v, err = meta.Get(keyEpoch); err != nil {
			return err
		}
		f.epoch, _ = u64(v)
		if v, err = tx.Sealed(bucketMeta).Get(keyLimit); err != nil {
			return err
		}
		if f.limit, ok = u64(v); !ok {
			return fmt.Errorf("%w: bad limit record", chunkstore.ErrCorrupt)
		}
		if err := f.loadJournal(tx); err != nil {
			return err
		}
		if has, err := tx.Sealed(bucketInodes).Has(inoKey(RootIno)); err != nil {
			return fmt.Errorf("root inode: %w", err)
		} else if !has {
			return fmt.Errorf("%w: root inode missing", chunkstore.ErrCorrupt)
		}
		if err := f.purgeOrphans(tx); err != nil {
			return err
		}
		st, err := tx.Stats()
		if err != nil {
			return err
		}
		f.used = st.UniqueBytes
		return nil
	})
}

// ensureRoot computes the root identifier of a store that has none (a
// new store, or one older than roots, upgraded): one walk of the
// versioned records, once. From then on every commit keeps it (see
// chunkstore.Tx.Root). A damaged stored root is left for fsck.
func ensureRoot(tx *chunkstore.Tx, log *slog.Logger) error {
	if _, ok, err := tx.Root(); err != nil || ok {
		if err != nil {
			log.Error("damaged root identifier: run computerfs fsck --repair", "err", err)
		}
		return nil
	}
	start := time.Now()
	root, damaged, err := versions.ComputeRoot(tx.Tx)
	if err != nil {
		return fmt.Errorf("compute the root identifier: %w", err)
	}
	if damaged > 0 {
		log.Error("root identifier computed without damaged records: run computerfs fsck", "damaged", damaged)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		log.Info("computed the root identifier", "root", root.String(), "seconds", d.Seconds())
	}
	return tx.SetRoot(root)
}

// deleteInode removes an inode and everything keyed by it, collecting its
// chunk references for the caller to drop after all new references exist.
func (f *FS) deleteInode(tx *chunkstore.Tx, ino Ino, unref *[]chunkstore.ID) error {
	prefix := inoKey(ino)
	if err := deletePrefix(tx.Sealed(bucketChunks), prefix, func(v []byte, damage error, kept bool) {
		switch {
		case kept:
			// A snapshot keeps this version, and its chunk.
		case damage != nil:
			// Its chunk keeps a reference too many, which fsck
			// repairs; unreferencing a misread ID could free
			// another file's data.
			f.reportDamage(damage)
		case len(v) == chunkstore.IDSize:
			*unref = append(*unref, chunkstore.ID(v))
		}
	}); err != nil {
		return err
	}
	if err := deletePrefix(tx.Sealed(bucketXattrs), prefix, nil); err != nil {
		return err
	}
	// A directory is empty when it dies, but the removals of its entries
	// may not have been committed: they go with it.
	if err := deletePrefix(tx.Sealed(bucketDirents), prefix, nil); err != nil {
		return err
	}
	if err := tx.Sealed(bucketOrphans).Delete(prefix); err != nil {
		return err
	}
	return tx.Sealed(bucketInodes).Delete(prefix)
}

// deletePrefix deletes every record under prefix, showing each to visit
// with whether a snapshot kept its version.
func deletePrefix(b sealed.Bucket, prefix []byte, visit func(v []byte, damage error, kept bool)) error {
	c := b.Cursor()
	for k, v, err := c.SeekWithin(prefix, prefix); k != nil; k, v, err = c.SeekWithin(prefix, prefix) {
		if visit != nil {
			v = bytes.Clone(v)
		}
		kept, derr := c.DeleteKept()
		if derr != nil {
			return derr
		}
		if visit != nil {
			visit(v, err, kept)
		}
	}
	return nil
}

func hasPrefix(k, prefix []byte) bool {
	return len(k) >= len(prefix) && string(k[:len(prefix)]) == string(prefix)
}

// Store gives read access to the underlying chunk store (stats, fsck).
func (f *FS) Store() *chunkstore.Store { return f.store }

// ChunkSize is the workspace's fixed chunk size.
func (f *FS) ChunkSize() int { return f.chunkSize }

// errWorkspaceClosed is what an operation that needs a commit gets once
// Close has run: no commit runs after it.
var errWorkspaceClosed = fmt.Errorf("workspace closed: %w", syscall.EIO)

// Close seals all data, commits it, drops orphans and closes the store.
func (f *FS) Close() error {
	ferr := f.closeForks()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	for _, n := range f.nodes {
		n.opens = 0
		n.lookups = 0
		f.maybeForgetLocked(n)
	}
	// The last commit ends the intent log's generation: a closed store
	// never needs its log, which goes (intentCommittedLocked).
	f.closing = true
	if f.in.log != nil || len(f.in.logged) > 0 {
		f.in.restart = true
	}
	err := f.syncAllLocked(context.Background())
	f.closed = true
	f.cond.Broadcast() // a worker waiting for a buffer gives up waiting
	f.mu.Unlock()
	close(f.stop)
	f.wg.Wait()
	// A commit under way in a waiting goroutine ends before the store
	// closes; none starts after (waitCommitLocked checks closed).
	f.commitMu.Lock()
	f.commitMu.Unlock()
	if f.in.log != nil {
		// Its generation did not end (a commit could not take all of
		// it): the next open replays it, which changes nothing.
		f.in.log.Close()
		f.in.log = nil
	}
	if f.spill != nil {
		// Everything in it was committed above; nothing reads it now.
		if serr := f.spill.close(); err == nil {
			err = serr
		}
		f.spill = nil
	}
	f.cache.close()
	if f.fork != nil {
		return err // the store is the workspace's
	}
	if cerr := f.store.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ferr
	}
	return err
}

// Sync commits every change made so far (syncfs).
func (f *FS) Sync(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncAllLocked(ctx)
}

func (f *FS) syncAllLocked(ctx context.Context) error {
	for _, n := range f.dirty {
		f.sealAllLocked(n)
	}
	if err := f.waitPreparedLocked(ctx, nil); err != nil {
		return err
	}
	return f.waitCommitLocked(ctx)
}

// Limit returns the workspace size limit and the bytes in use.
func (f *FS) Limit() (limit, used uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit, f.usedLocked()
}

// SetLimit changes the workspace size limit. It may be set below the bytes
// in use: new allocations then fail with ENOSPC until space is freed.
func (f *FS) SetLimit(limit uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = limit
	f.limitGen = f.bump()
	f.kickCommit()
}

// usedLocked is the bytes counted against the limit: the store's, and
// the chunks on their way to it, in pool buffers or the spill file.
func (f *FS) usedLocked() uint64 {
	used := f.used + uint64(f.takenLocked())
	if f.spill != nil {
		// A staged chunk has a frame and a spill slot: it counts once.
		used += uint64(f.spill.taken()-f.staged) * uint64(f.chunkSize)
	}
	return used
}

func (f *FS) bump() uint64 { f.gen++; return f.gen }

func now() int64 { return time.Now().UnixNano() }

// errno extracts the POSIX error number of err (EIO for foreign errors).
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return syscall.EINTR
	}
	return syscall.EIO
}

const maxName = 255
const maxSymlink = 4095

var noTrunc uint64 = math.MaxUint64

// view and update run fn in a transaction of the store, and report a
// damaged record it met (see reportDamage).
func (f *FS) view(fn func(tx *chunkstore.Tx) error) error {
	return f.reportDamage(f.store.View(f.inLayer(fn)))
}

func (f *FS) update(fn func(tx *chunkstore.Tx) error) error {
	return f.reportDamage(f.store.Update(f.inLayer(fn)))
}

// reportDamage logs a damaged record that err carries (a seal that does
// not match: see package sealed), naming its bucket and its key decoded as
// fs keys them, and returns err. The operation fails with EIO, which the
// error wraps; nothing is served from the record.
func (f *FS) reportDamage(err error) error {
	if err == nil {
		return nil // spares errors.As's target, which escapes
	}
	var d *sealed.DamageError
	if errors.As(err, &d) {
		f.log.Error("damaged workspace record", "store", f.store.Path(), "bucket", d.Bucket, "record", describeKey(d.Bucket, d.Key), "why", d.Why)
	}
	return err
}

// describeKey renders a key of bucket as its parts: inode numbers and
// names.
func describeKey(bucket string, k []byte) string {
	switch bucket {
	case string(bucketInodes), string(bucketOrphans):
		if len(k) == 8 {
			return fmt.Sprintf("inode %d", keyIno(k))
		}
	case string(bucketDirents), string(bucketXattrs):
		if len(k) > 8 {
			return fmt.Sprintf("inode %d, name %q", keyIno(k[:8]), k[8:])
		}
	case string(bucketChunks):
		if len(k) == 16 {
			return fmt.Sprintf("inode %d, chunk %d", keyIno(k[:8]), binary.BigEndian.Uint64(k[8:]))
		}
	case string(bucketJournal):
		if len(k) == 8 {
			return fmt.Sprintf("journal record %d", binary.BigEndian.Uint64(k))
		}
	case string(audit.BucketName):
		if len(k) == 8 {
			return fmt.Sprintf("audit record %d", binary.BigEndian.Uint64(k))
		}
	}
	return sealed.KeyString(k)
}

// storedListSum is ino's chunk list summary as its inode record holds
// it (not Known if it has none, or no record).
func storedListSum(tx *chunkstore.Tx, ino Ino) (inodeSum, error) {
	v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
	if err != nil || v == nil {
		return inodeSum{}, err
	}
	_, _, s, err := decodeInodeSum(ino, v)
	return s, err
}

// scanListSum is the summary of ino's chunk list as it is in the store.
// A damaged record is an error: its file cannot be read whole.
func scanListSum(tx *chunkstore.Tx, ino Ino) (listSum, error) {
	var s listSum
	prefix := inoKey(ino)
	c := tx.Sealed(bucketChunks).Cursor()
	for k, v, err := c.SeekWithin(prefix, prefix); k != nil; k, v, err = c.NextWithin(prefix) {
		if err != nil {
			return s, err
		}
		if len(k) == 16 {
			s.add(binary.BigEndian.Uint64(k[8:]), v, +1)
		}
	}
	return s, nil
}

// checkBuckets fails unless the store has every bucket of an initialised
// workspace and none other. The journal may be missing (stores older
// than it; it is restarted). The summaries' bucket (fsums) of format 6
// and before is gone: format 7 keeps them in the inode records.
func checkBuckets(tx *chunkstore.Tx) error {
	want := map[string]bool{"meta": true, "chunks": true, "chunkidx": true}
	for _, b := range [][]byte{bucketInodes, bucketDirents, bucketChunks, bucketXattrs, bucketOrphans} {
		want[string(b)] = true
	}
	optional := map[string]bool{string(bucketJournal): true, string(bucketSnapshots): true, string(audit.BucketName): true, string(bucketForks): true, string(bucketHolds): true, string(bucketIntent): true}
	for _, b := range versions.Buckets {
		optional[string(b)] = true
	}
	var bad []string
	tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !want[string(name)] && !optional[string(name)] {
			bad = append(bad, fmt.Sprintf("unknown bucket %s", sealed.KeyString(name)))
		}
		delete(want, string(name))
		return nil
	})
	for name := range want {
		bad = append(bad, "bucket "+name+" missing")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%w: %s (the file's root page is damaged): run computerfs fsck", chunkstore.ErrCorrupt, strings.Join(bad, ", "))
	}
	return nil
}
