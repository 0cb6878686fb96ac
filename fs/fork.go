package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// Forks (fs/SNAPSHOTS.md, "Forks"): a copy-on-write branch of the
// workspace, taken at the last commit's epoch F, that reads and writes
// like the workspace itself (an *FS of its own: create, write, rename,
// readdir, xattrs, hard links, everything), then is merged into the
// workspace in one commit, or dropped.
//
// A fork is
//   - a pin of epoch F in snapepochs (F ‖ NUL ‖ id ‖ NUL ‖ "f", which no
//     snapshot name can be), so that the workspace's later commits keep
//     the versions it reads, as a snapshot's pin does;
//   - a bucket forks/ID holding its record and buckets of its own: an
//     overlay of each versioned bucket (inodes, dirents, fchunks, xattrs)
//     over the workspace as it was at F (versions.At), whose
//     deletes of the workspace's records are tombstones
//     (sealed.Overlay), and its own orphans, journal, snapshots (none)
//     and meta (next inode number, commit count).
//
// The fork's FS runs fs's code unchanged: its transactions route those
// bucket names to the fork's (chunkstore.Tx.SetLayer). Its commits keep
// no versions and no root: the workspace's indexes and root are the
// workspace's alone.
//
// Inode numbers: each fork gets a range of its own, above every number
// the workspace hands out (forkInoFloor and up, forkInoStride each, by a
// counter in the workspace's meta that never goes back), so that a
// merge moves the fork's new inodes into the workspace as they are.
//
// Chunk references: the fork's chunk-list records hold a reference each,
// as the workspace's do; a record it replaced or deleted that it read
// from the workspace was the workspace's, whose reference stays (the
// overlay says kept, as a recorder does for a snapshot's version). A
// discard drops the references of the fork's records; a merge puts each
// record into the workspace (which takes a reference) and then drops
// the fork (which releases the fork's): the reference moves. gc and fsck
// count the fork's records.
//
// Merge checks every record the fork changed against the workspace: if
// the workspace changed it too since F (its value now is not its value
// at F, and not the fork's), the merge refuses and names the files. A
// directory whose entries both changed is merged as undo merges one: its
// record is the fork's (or the workspace's, whichever changed only its
// links and times), its link count recounted from the entries. The
// merge is a rewind of the workspace (rewind.go): one commit, checked,
// the mount told.
//
// Crashes: create, merge and discard are each one bbolt commit. A fork's
// own commits are its own: a kill leaves it as its last commit had it,
// and its next open purges its orphans.

// Fork inode ranges: fork number n (from 0) numbers its inodes from
// forkInoFloor + n*forkInoStride.
const (
	forkInoFloor  Ino = 1 << 47
	forkInoStride Ino = 1 << 32
	maxForks          = uint64((MaxIno - forkInoFloor) / forkInoStride)
)

var (
	bucketForks = []byte("forks")
	// keyForkSeq counts the fork inode ranges handed out (workspace meta).
	keyForkSeq = []byte("fork_seq")
	// bucketForkMeta is the name fs asks for its meta in a fork: the
	// workspace's meta bucket is shared with the chunk store, so a fork
	// cannot take the name over.
	bucketForkMeta = []byte("fork meta")
	keyForkRecord  = []byte("record")
)

// forkOwn are the buckets a fork keeps, by the names fs asks for:
// versioned ones are overlays, the rest its own.
var forkOwn = []struct {
	name    []byte
	overlay bool
}{
	{bucketInodes, true}, {bucketDirents, true}, {bucketChunks, true}, {bucketXattrs, true},
	{bucketOrphans, false}, {bucketJournal, false}, {bucketSnapshots, false}, {bucketForkMeta, false},
}

// ForkInfo describes a fork.
type ForkInfo struct {
	ID      string        `json:"id"`
	Epoch   uint64        `json:"epoch"` // the workspace's commit it branched from
	Created int64         `json:"created_unix_ns"`
	Root    versions.Root `json:"-"` // the workspace's root identifier at Epoch
	InoBase Ino           `json:"-"`
	InoEnd  Ino           `json:"-"`
	// Records is how many records the fork holds (changed, added or
	// deleted ones).
	Records int `json:"records"`
	// Open says whether an FS serves it now.
	Open bool `json:"open"`
	// Damaged says its record is damaged (fsck --repair rebuilds it):
	// it cannot be opened or merged, only discarded.
	Damaged bool `json:"damaged,omitempty"`
}

// ErrForkExists and ErrNoFork are returned for fork IDs taken or
// missing; ErrInFork for what a fork cannot do (snapshots, undo,
// restore, forks of forks: they belong to the workspace).
var (
	ErrForkExists = fmt.Errorf("fork exists: %w", syscall.EEXIST)
	ErrNoFork     = fmt.Errorf("no such fork: %w", syscall.ENOENT)
	ErrInFork     = fmt.Errorf("not in a fork (snapshots, restore, undo and forks are the workspace's): %w", syscall.ENOTSUP)
	ErrForkGone   = fmt.Errorf("the fork was merged or discarded: %w", syscall.ESTALE)
)

// ForkConflictError is a merge's refusal: files the fork changed were
// changed in the workspace too since the fork was made.
type ForkConflictError struct {
	Fork  string
	Paths []string
}

func (e *ForkConflictError) Error() string {
	return fmt.Sprintf("fork %s: %d file(s) it changed were changed in the workspace too since it was made: %s (discard the fork, or change them back)", e.Fork, len(e.Paths), strings.Join(e.Paths, ", "))
}

// Is makes errors.Is(err, syscall.EBUSY) true.
func (e *ForkConflictError) Is(target error) bool { return target == syscall.EBUSY }

// forkCfg is what an FS serving a fork knows of it.
type forkCfg struct {
	ForkInfo
	parent *FS
}

func forkSealName(id string, name []byte) []byte {
	return []byte("fork " + id + " " + string(name))
}

func forkPinKey(epoch uint64, id string) []byte { return pinKey(epoch, id, 'f') }

// isForkPin says whether a snapepochs name (after the epoch) is a fork's
// pin, and whose.
func isForkPin(name []byte) (string, bool) {
	if !isCheckpointKey(name) || len(name) < 4 || !bytes.HasSuffix(name, []byte{0, 'f'}) {
		return "", false
	}
	return string(name[1 : len(name)-2]), true
}

func encodeForkRecord(fi *ForkInfo) []byte {
	b := binary.BigEndian.AppendUint64(nil, fi.Epoch)
	b = binary.BigEndian.AppendUint64(b, uint64(fi.Created))
	b = binary.BigEndian.AppendUint64(b, uint64(fi.InoBase))
	b = binary.BigEndian.AppendUint64(b, uint64(fi.InoEnd))
	return append(b, fi.Root[:]...)
}

func decodeForkRecord(id string, b []byte) (ForkInfo, error) {
	if len(b) != 32+len(versions.Root{}) {
		return ForkInfo{}, fmt.Errorf("fork %s record: %w: %d bytes", id, errBadRecord, len(b))
	}
	fi := ForkInfo{ID: id, Epoch: binary.BigEndian.Uint64(b), Created: int64(binary.BigEndian.Uint64(b[8:])),
		InoBase: Ino(binary.BigEndian.Uint64(b[16:])), InoEnd: Ino(binary.BigEndian.Uint64(b[24:]))}
	copy(fi.Root[:], b[32:])
	if fi.InoBase < forkInoFloor || fi.InoEnd <= fi.InoBase || fi.InoEnd > MaxIno {
		return ForkInfo{}, fmt.Errorf("fork %s record: %w: inode range %d-%d", id, errBadRecord, fi.InoBase, fi.InoEnd)
	}
	return fi, nil
}

// forkBucket is fork id's bucket in tx, or nil.
func forkBucket(tx *bolt.Tx, id string) *bolt.Bucket {
	fb := tx.Bucket(bucketForks)
	if fb == nil {
		return nil
	}
	return fb.Bucket([]byte(id))
}

func readForkRecord(tx *bolt.Tx, id string) (ForkInfo, *bolt.Bucket, error) {
	b := forkBucket(tx, id)
	if b == nil {
		return ForkInfo{}, nil, fmt.Errorf("fork %s: %w", id, ErrNoFork)
	}
	v, err := sealed.Wrap(b, bucketForks, 0).Get(keyForkRecord)
	if err != nil {
		return ForkInfo{}, nil, err
	}
	if v == nil {
		return ForkInfo{}, nil, fmt.Errorf("fork %s: %w: no record", id, errBadRecord)
	}
	fi, err := decodeForkRecord(id, v)
	return fi, b, err
}

// layer routes fs's bucket names to the fork's buckets in tx.
func (c *forkCfg) layer(tx *chunkstore.Tx) (func(name []byte, epoch uint64) (sealed.Bucket, bool), error) {
	b := forkBucket(tx.Tx, c.ID)
	if b == nil {
		return nil, fmt.Errorf("fork %s: %w", c.ID, ErrForkGone)
	}
	at := versions.NewAt(tx.Tx, c.Epoch)
	cache := make([]*sealed.Bucket, len(forkOwn))
	return func(name []byte, epoch uint64) (sealed.Bucket, bool) {
		for i, o := range forkOwn {
			if !bytes.Equal(name, o.name) {
				continue
			}
			if cb := cache[i]; cb != nil && cb.Epoch() == epoch {
				return *cb, true
			}
			var sb sealed.Bucket
			if o.overlay {
				sb = sealed.Overlay(b.Bucket(o.name), forkSealName(c.ID, o.name), epoch, at.Base(o.name))
			} else {
				sb = sealed.Wrap(b.Bucket(o.name), forkSealName(c.ID, o.name), epoch)
			}
			cache[i] = &sb
			return sb, true
		}
		return sealed.Bucket{}, false
	}, nil
}

// meta is fs's meta bucket in tx: the fork's own in a fork.
func (f *FS) meta(tx *chunkstore.Tx) sealed.Bucket {
	if f.fork != nil {
		return tx.Sealed(bucketForkMeta)
	}
	return tx.Sealed(bucketMeta)
}

// inLayer has fn's transaction see the fork's buckets, if f serves one.
func (f *FS) inLayer(fn func(tx *chunkstore.Tx) error) func(tx *chunkstore.Tx) error {
	if f.fork == nil {
		return fn
	}
	return func(tx *chunkstore.Tx) error {
		l, err := f.fork.layer(tx)
		if err != nil {
			return err
		}
		tx.SetLayer(l)
		return fn(tx)
	}
}

// Fork says which fork f serves ("" for the workspace itself).
func (f *FS) Fork() string {
	if f.fork == nil {
		return ""
	}
	return f.fork.ID
}

func checkForkID(id string) error {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/\x00 ") || id == "." || id == ".." {
		return fmt.Errorf("fork id %q: want 1 to 64 bytes, no /, space or NUL: %w", id, syscall.EINVAL)
	}
	return nil
}

// CreateFork branches the workspace as of now (what is pending is
// committed first) into a fork named id ("" picks one): one small
// commit, whatever the workspace's size. OpenFork serves it.
func (f *FS) CreateFork(ctx context.Context, id string) (ForkInfo, error) {
	if f.fork != nil {
		return ForkInfo{}, ErrInFork
	}
	if id != "" {
		if err := checkForkID(id); err != nil {
			return ForkInfo{}, err
		}
	}
	if err := f.Sync(ctx); err != nil {
		return ForkInfo{}, fmt.Errorf("fork: commit what is pending: %w", err)
	}
	var fi ForkInfo
	err := f.update(func(tx *chunkstore.Tx) error {
		meta := tx.Sealed(bucketMeta)
		v, err := meta.Get(keyForkSeq)
		if err != nil {
			return err
		}
		seq, _ := u64(v)
		if seq >= maxForks {
			return fmt.Errorf("fork: every fork inode range is used (%d forks made): %w", seq, syscall.ENOSPC)
		}
		if id == "" {
			id = fmt.Sprintf("fork%d", seq+1)
		}
		fb, err := tx.CreateBucketIfNotExists(bucketForks)
		if err != nil {
			return err
		}
		if fb.Bucket([]byte(id)) != nil {
			return fmt.Errorf("fork %s: %w", id, ErrForkExists)
		}
		ev, err := meta.Get(keyEpoch)
		if err != nil {
			return err
		}
		epoch, _ := u64(ev)
		root, _, err := tx.Root()
		if err != nil {
			return err
		}
		fi = ForkInfo{ID: id, Epoch: epoch, Created: time.Now().UnixNano(), Root: root,
			InoBase: forkInoFloor + Ino(seq)*forkInoStride}
		fi.InoEnd = fi.InoBase + forkInoStride
		b, err := fb.CreateBucket([]byte(id))
		if err != nil {
			return err
		}
		for _, o := range forkOwn {
			if _, err := b.CreateBucket(o.name); err != nil {
				return err
			}
		}
		if err := sealed.Wrap(b, bucketForks, epoch).Put(keyForkRecord, encodeForkRecord(&fi)); err != nil {
			return err
		}
		fm := sealed.Wrap(b.Bucket(bucketForkMeta), forkSealName(id, bucketForkMeta), epoch)
		if err := fm.Put(keyNextIno, inoKey(fi.InoBase)); err != nil {
			return err
		}
		if err := fm.Put(keyEpoch, inoKey(Ino(epoch))); err != nil {
			return err
		}
		if err := meta.Put(keyForkSeq, inoKey(Ino(seq+1))); err != nil {
			return err
		}
		return tx.Bucket(versions.BucketSnapEpochs).Put(forkPinKey(epoch, id), nil)
	})
	if err != nil {
		return ForkInfo{}, err
	}
	return fi, nil
}

// Forks lists the workspace's forks by ID.
func (f *FS) Forks() ([]ForkInfo, error) {
	if f.fork != nil {
		return nil, ErrInFork
	}
	out, err := ListForks(f.store)
	if err != nil {
		return nil, err
	}
	f.forkMu.Lock()
	for i := range out {
		out[i].Open = f.forks[out[i].ID] != nil
	}
	f.forkMu.Unlock()
	return out, nil
}

// ListForks lists the forks of a store, open or not.
func ListForks(store *chunkstore.Store) ([]ForkInfo, error) {
	var out []ForkInfo
	err := store.View(func(tx *chunkstore.Tx) error {
		fb := tx.Bucket(bucketForks)
		if fb == nil {
			return nil
		}
		return fb.ForEach(func(k, v []byte) error {
			if v != nil {
				return fmt.Errorf("forks: %w: a value %q where a fork's bucket belongs", errBadRecord, k)
			}
			fi, b, recovered, err := readForkRecordOrRecover(tx.Tx, string(k))
			if err != nil {
				return err
			}
			fi.Damaged = recovered
			for _, o := range forkOwn {
				if o.overlay {
					if ob := b.Bucket(o.name); ob != nil {
						fi.Records += ob.Stats().KeyN
					}
				}
			}
			out = append(out, fi)
			return nil
		})
	})
	return out, err
}

// OpenFork serves fork id: an FS that reads the workspace as it was when
// the fork was made, with the fork's changes over it. The same FS is
// returned until the fork is merged, discarded or closed (CloseFork),
// or the workspace closes.
func (f *FS) OpenFork(id string) (*FS, error) {
	if f.fork != nil {
		return nil, ErrInFork
	}
	f.forkMu.Lock()
	defer f.forkMu.Unlock()
	if fk := f.forks[id]; fk != nil {
		return fk, nil
	}
	if f.isClosed() {
		return nil, fmt.Errorf("workspace closed: %w", syscall.EIO)
	}
	var fi ForkInfo
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		fi, _, err = readForkRecord(tx.Tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	opts := f.opts
	opts.fork = &forkCfg{ForkInfo: fi, parent: f}
	fk, err := newFS(f.store, opts)
	if err != nil {
		return nil, fmt.Errorf("open fork %s: %w", id, err)
	}
	f.forks[id] = fk
	return fk, nil
}

func (f *FS) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// CloseFork commits what fork id has pending and stops serving it (the
// fork stays; OpenFork serves it again). A fork not open is left be.
func (f *FS) CloseFork(id string) error {
	// Held while the fork's FS closes: an OpenFork meanwhile waits, and
	// never makes a second FS of a fork whose last commit is under way.
	f.forkMu.Lock()
	defer f.forkMu.Unlock()
	fk := f.forks[id]
	if fk == nil {
		return nil
	}
	delete(f.forks, id)
	return fk.Close()
}

// forgetFork drops an FS of fork id opened while it was merged or
// discarded (it serves nothing now: its transactions fail with
// ErrForkGone).
func (f *FS) forgetFork(id string) {
	if err := f.CloseFork(id); err != nil && !errors.Is(err, ErrForkGone) {
		f.log.Warn("closing a fork opened while it went", "fork", id, "err", err)
	}
}

// closeForks closes every open fork (the workspace is closing).
func (f *FS) closeForks() error {
	f.forkMu.Lock()
	forks := f.forks
	f.forks = make(map[string]*FS)
	f.forkMu.Unlock()
	var first error
	for id, fk := range forks {
		if err := fk.Close(); err != nil && first == nil {
			first = fmt.Errorf("close fork %s: %w", id, err)
		}
	}
	return first
}

// DiscardFork drops fork id and everything it changed, in one commit: the
// cost is the fork's records (their chunk references are released),
// plus the versions replaced in the workspace since the fork was made
// (those only the fork pinned go), never the workspace. An FS serving
// the fork is closed first, its pending changes dropped with the rest.
func (f *FS) DiscardFork(ctx context.Context, id string) (*ForkDropReport, error) {
	if f.fork != nil {
		return nil, ErrInFork
	}
	if err := f.CloseFork(id); err != nil && !errors.Is(err, ErrForkGone) {
		f.log.Warn("closing the fork before its discard", "fork", id, "err", err)
	}
	var rep *ForkDropReport
	err := f.update(func(tx *chunkstore.Tx) error {
		var err error
		rep, err = dropForkTx(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("discard fork %s: %w", id, err)
	}
	f.forgetFork(id)
	return rep, nil
}

// ForkDropReport says what dropping a fork released.
type ForkDropReport struct {
	Records  int `json:"records"`  // the fork's records dropped
	Chunks   int `json:"chunks"`   // chunk references they held, released
	Versions int `json:"versions"` // kept versions only the fork pinned, dropped
}

// DiscardForkStore is DiscardFork on a store no FS serves.
func DiscardForkStore(store *chunkstore.Store, id string) (*ForkDropReport, error) {
	var rep *ForkDropReport
	err := store.Update(func(tx *chunkstore.Tx) error {
		var err error
		rep, err = dropForkTx(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("discard fork %s: %w", id, err)
	}
	return rep, nil
}

// dropForkTx deletes fork id: its bucket, its pin, the versions only it
// pinned, and the chunk references of its records.
func dropForkTx(tx *chunkstore.Tx, id string) (*ForkDropReport, error) {
	// A fork whose record is damaged can still go: its epoch is its pin's.
	fi, b, _, err := readForkRecordOrRecover(tx.Tx, id)
	if err != nil {
		return nil, err
	}
	rep := &ForkDropReport{}
	var unref []chunkstore.ID
	for _, o := range forkOwn {
		if !o.overlay {
			continue
		}
		ob := b.Bucket(o.name)
		if ob == nil {
			continue
		}
		w := sealed.Wrap(ob, forkSealName(id, o.name), 0)
		err := ob.ForEach(func(k, _ []byte) error {
			rep.Records++
			v, _, err := w.OverlayGet(k)
			if err != nil {
				// A damaged record of the fork: its chunk keeps a
				// reference too many, which fsck repairs; the fork
				// goes all the same.
				if errors.Is(err, sealed.ErrDamaged) {
					return nil
				}
				return err
			}
			if bytes.Equal(o.name, bucketChunks) && v != nil && len(v) == chunkstore.IDSize {
				unref = append(unref, chunkstore.ID(v))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	fb := tx.Bucket(bucketForks)
	if err := fb.DeleteBucket([]byte(id)); err != nil {
		return nil, err
	}
	if k, _ := fb.Cursor().First(); k == nil {
		// No fork left: the store is as a binary without forks knows it.
		if err := tx.DeleteBucket(bucketForks); err != nil {
			return nil, err
		}
	}
	if err := tx.Bucket(versions.BucketSnapEpochs).Delete(forkPinKey(fi.Epoch, id)); err != nil {
		return nil, err
	}
	if rep.Versions, _, err = dropUnpinnedAfter(tx, fi.Epoch); err != nil {
		return nil, err
	}
	for _, cid := range unref {
		if err := tx.Unref(cid); err != nil {
			if errors.Is(err, chunkstore.ErrNotFound) {
				continue // fsck's to report
			}
			return nil, err
		}
		rep.Chunks++
	}
	return rep, nil
}

// MergeFork applies what fork id changed to the workspace, in one commit,
// and drops the fork; the workspace's mount is told (Touched). If the
// workspace changed any of the same records since the fork was made, it
// refuses with a *ForkConflictError naming the files, and changes
// nothing (the fork stays, and can be discarded or changed). It costs in
// proportion to the fork's records.
func (f *FS) MergeFork(ctx context.Context, id string) (*RewindReport, *Touched, error) {
	if f.fork != nil {
		return nil, nil, ErrInFork
	}
	// The fork's last changes are committed, and nothing writes to it
	// while it merges.
	if err := f.CloseFork(id); err != nil {
		return nil, nil, fmt.Errorf("merge fork %s: commit its changes: %w", id, err)
	}
	if err := f.Sync(ctx); err != nil {
		return nil, nil, err
	}
	rep, touched, err := f.rewindLiveThen(ctx, func(tx *chunkstore.Tx) (*rewindPlan, error) {
		fi, b, err := readForkRecord(tx.Tx, id)
		if err != nil {
			return nil, err
		}
		if err := forkOrphansGone(tx, b, id); err != nil {
			return nil, err
		}
		plan, conflicts, err := mergePlan(tx, &fi, b)
		if err != nil {
			return nil, err
		}
		if len(conflicts) > 0 {
			return nil, &ForkConflictError{Fork: id, Paths: conflictPaths(tx, &ExecRecord{ID: id}, conflicts)}
		}
		return plan, nil
	}, func(tx *chunkstore.Tx) error {
		// After the records are in (their chunks referenced by the
		// workspace), the fork's references go with it.
		_, err := dropForkTx(tx, id)
		return err
	})
	if err != nil {
		var ce *ForkConflictError
		if errors.As(err, &ce) {
			return nil, nil, err
		}
		if errors.Is(err, ErrRewindInconsistent) {
			return nil, nil, fmt.Errorf("merge fork %s: it conflicts with the workspace's changes since it was made: %w", id, err)
		}
		return nil, nil, fmt.Errorf("merge fork %s: %w", id, err)
	}
	f.forgetFork(id)
	return rep, touched, nil
}

// forkOrphansGone refuses a merge of a fork that still has unlinked
// inodes (open files of a fork a crash closed: its next open purges
// them).
func forkOrphansGone(tx *chunkstore.Tx, b *bolt.Bucket, id string) error {
	if ob := b.Bucket(bucketOrphans); ob != nil {
		if k, _ := ob.Cursor().First(); k != nil {
			return fmt.Errorf("fork %s has unlinked files a crash left: open it once (they are purged) and merge again: %w", id, syscall.EBUSY)
		}
	}
	return nil
}

// sameValue is bytes.Equal that tells a missing record (nil) from an
// empty value.
func sameValue(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// mergePlan is the rewind that puts the fork's records into the
// workspace, and the keys the workspace changed too since the fork.
func mergePlan(tx *chunkstore.Tx, fi *ForkInfo, b *bolt.Bucket) (*rewindPlan, []rewindTarget, error) {
	at := versions.NewAt(tx.Tx, fi.Epoch)
	plan := &rewindPlan{merge: make(map[Ino]bool), mergeBase: make(map[Ino][]byte)}
	var conflicts []rewindTarget
	for _, o := range forkOwn {
		if !o.overlay {
			continue
		}
		name := o.name
		live := tx.Sealed(name)
		err := sealed.OverlayRecords(b.Bucket(name), forkSealName(fi.ID, name), func(k, v []byte, _ bool) error {
			then, err := at.Get(name, k)
			if err != nil {
				return err
			}
			if sameValue(v, then) {
				return nil // changed and changed back
			}
			now, err := live.Get(k)
			if err != nil {
				return err
			}
			key, val := bytes.Clone(k), bytes.Clone(v)
			if !sameValue(now, then) && !sameValue(now, v) {
				// The workspace changed it too.
				if bytes.Equal(name, bucketInodes) && len(k) == 8 && then != nil {
					ino := keyIno(k)
					switch {
					case val != nil && onlyDirLinks(ino, then, now):
						// Its entries changed in the workspace: the
						// fork's record, links recounted.
						plan.merge[ino], plan.mergeBase[ino] = true, val
						return nil
					case now != nil && onlyDirLinks(ino, then, val):
						// Its entries changed in the fork: the
						// workspace's record, links recounted.
						plan.merge[ino] = true
						return nil
					}
				}
				conflicts = append(conflicts, rewindTarget{bucket: name, key: key})
				return nil
			}
			plan.targets = append(plan.targets, rewindTarget{bucket: name, key: key, then: val})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return plan, conflicts, nil
}

// ForkChange is one change a fork made, by path in the fork.
type ForkChange struct {
	Op   string `json:"op"` // added, deleted, modified
	Path string `json:"path"`
	Type string `json:"type"` // file, dir, symlink, other
}

func typeName(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return "file"
	case syscall.S_IFDIR:
		return "dir"
	case syscall.S_IFLNK:
		return "symlink"
	}
	return "other"
}

// ForkChanges lists what the fork f serves changed, committed or not:
// entries added and deleted (a replaced one is modified), and files
// changed in place, by their paths in the fork (a deleted one by its
// path in the workspace at the fork's epoch). It costs in proportion to
// the fork's records.
func (f *FS) ForkChanges(ctx context.Context) ([]ForkChange, error) {
	if f.fork == nil {
		return nil, fmt.Errorf("not a fork: %w", syscall.EINVAL)
	}
	if err := f.Sync(ctx); err != nil {
		return nil, err
	}
	var out []ForkChange
	err := f.view(func(tx *chunkstore.Tx) error {
		b := forkBucket(tx.Tx, f.fork.ID)
		if b == nil {
			return ErrForkGone
		}
		at := versions.NewAt(tx.Tx, f.fork.Epoch)
		named := make(map[Ino]bool)
		changedInos := make(map[Ino]bool)
		seen := make(map[string]bool)
		add := func(op, p string, mode uint32) {
			if p == "" || seen[p] {
				return
			}
			seen[p] = true
			out = append(out, ForkChange{Op: op, Path: p, Type: typeName(mode)})
		}
		forkR, atR := txReader(tx), atReader(at)
		for _, o := range forkOwn {
			if !o.overlay {
				continue
			}
			name := o.name
			err := sealed.OverlayRecords(b.Bucket(name), forkSealName(f.fork.ID, name), func(k, v []byte, _ bool) error {
				if len(k) < 8 {
					return nil
				}
				then, err := at.Get(name, k)
				if err != nil {
					return err
				}
				if sameValue(then, v) {
					return nil
				}
				if !bytes.Equal(name, bucketDirents) {
					changedInos[keyIno(k)] = true
					return nil
				}
				dir, entry := keyIno(k), string(k[8:])
				var od, nd dirent
				if then != nil {
					od, _ = decodeDirent(then)
				}
				if v != nil {
					nd, _ = decodeDirent(v)
				}
				named[od.Ino], named[nd.Ino] = true, true
				switch {
				case v == nil:
					add("deleted", joinPath(atR.dirPath(dir), entry), od.Type)
				case then == nil:
					add("added", joinPath(forkR.dirPath(dir), entry), nd.Type)
				default:
					add("modified", joinPath(forkR.dirPath(dir), entry), nd.Type)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for ino := range changedInos {
			if named[ino] {
				continue
			}
			v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
			if err != nil || v == nil {
				continue
			}
			a, _, err := decodeInode(ino, v)
			if err != nil || a.IsDir() {
				continue // a directory's own record follows its entries
			}
			if p := forkR.byParent(ino, a.Parent); p != "" {
				add("modified", p, a.Mode)
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func joinPath(dir, name string) string {
	if dir == "" {
		return ""
	}
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// treeReader reads a tree's records: the live one, a fork's, or one at
// an epoch.
type treeReader struct {
	get  func(bucket, key []byte) ([]byte, error)
	list func(dir Ino, fn func(name string, d dirent) bool) error
}

func txReader(tx *chunkstore.Tx) treeReader {
	return treeReader{
		get: func(bucket, key []byte) ([]byte, error) { return tx.Sealed(bucket).Get(key) },
		list: func(dir Ino, fn func(string, dirent) bool) error {
			prefix := inoKey(dir)
			c := tx.Sealed(bucketDirents).Cursor()
			for k, v, err := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v, err = c.Next() {
				if err != nil {
					return err
				}
				d, err := decodeDirent(v)
				if err != nil {
					return err
				}
				if !fn(string(k[8:]), d) {
					return nil
				}
			}
			return nil
		},
	}
}

func atReader(at *versions.At) treeReader {
	return treeReader{
		get: at.Get,
		list: func(dir Ino, fn func(string, dirent) bool) error {
			stop := errors.New("stop")
			err := at.Prefix(bucketDirents, inoKey(dir), func(k, v []byte) error {
				d, err := decodeDirent(v)
				if err != nil {
					return err
				}
				if !fn(string(k[8:]), d) {
					return stop
				}
				return nil
			})
			if err == stop {
				return nil
			}
			return err
		},
	}
}

// dirPath is directory ino's path ("" if not found).
func (r treeReader) dirPath(ino Ino) string {
	var parts []string
	cur := ino
	for depth := 0; cur != RootIno; depth++ {
		v, err := r.get(bucketInodes, inoKey(cur))
		if err != nil || v == nil || depth > maxDepth {
			return ""
		}
		a, _, err := decodeInode(cur, v)
		if err != nil || !a.IsDir() {
			return ""
		}
		name := r.naming(a.Parent, cur)
		if name == "" {
			return ""
		}
		parts = append(parts, name)
		cur = a.Parent
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return "/" + strings.Join(parts, "/")
}

// naming is the name under which directory dir lists ino ("" if none).
func (r treeReader) naming(dir, ino Ino) string {
	name := ""
	r.list(dir, func(n string, d dirent) bool {
		if d.Ino == ino {
			name = n
			return false
		}
		return true
	})
	return name
}

// byParent is file ino's path through its parent hint ("" if stale).
func (r treeReader) byParent(ino, parent Ino) string {
	if parent == 0 {
		return ""
	}
	if name := r.naming(parent, ino); name != "" {
		return joinPath(r.dirPath(parent), name)
	}
	return ""
}
