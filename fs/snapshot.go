package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// Snapshot is a named, read-only state of the workspace: the state after
// the commit of epoch Epoch (fs/SNAPSHOTS.md).
type Snapshot struct {
	Name    string
	Epoch   uint64
	Created int64 // nanoseconds since the epoch
	// Root is the root identifier of the workspace's records at Epoch
	// (versions.Root; SNAPSHOTS.md): zero for a snapshot taken before
	// roots were kept.
	Root versions.Root
}

// ErrSnapshotExists and ErrNoSnapshot are returned for names taken or
// missing.
var (
	ErrSnapshotExists = fmt.Errorf("snapshot exists: %w", syscall.EEXIST)
	ErrNoSnapshot     = fmt.Errorf("no such snapshot: %w", syscall.ENOENT)
)

// encodeSnapshot is epoch(8) ‖ created(8) ‖ root(32); a record from
// before roots, or of a store that had none, stops after created.
func encodeSnapshot(s Snapshot) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 48), s.Epoch)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Created))
	if !s.Root.IsZero() {
		b = append(b, s.Root[:]...)
	}
	return b
}

func decodeSnapshot(name string, b []byte) (Snapshot, error) {
	if isCheckpointKey([]byte(name)) {
		// An exec checkpoint's record (checkpoint.go), never a snapshot's.
		return Snapshot{}, fmt.Errorf("snapshot %q: %w", name, ErrNoSnapshot)
	}
	if len(b) != 16 && len(b) != 16+len(versions.Root{}) {
		return Snapshot{}, fmt.Errorf("snapshot %q: %w: %d bytes", name, errBadRecord, len(b))
	}
	s := Snapshot{Name: name, Epoch: binary.BigEndian.Uint64(b), Created: int64(binary.BigEndian.Uint64(b[8:]))}
	copy(s.Root[:], b[16:])
	return s, nil
}

func checkSnapshotName(name string) error {
	if name == "" || len(name) > 255 || bytes.ContainsAny([]byte(name), "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("snapshot name %q: want 1 to 255 bytes, no / or NUL: %w", name, syscall.EINVAL)
	}
	return nil
}

// CreateSnapshot names the workspace's state as of now: it commits what
// is pending, then records the last commit's epoch. It costs one small
// commit whatever the workspace's size; the versions it pins are kept
// only as later commits replace them.
func (f *FS) CreateSnapshot(ctx context.Context, name string) (Snapshot, error) {
	if err := checkSnapshotName(name); err != nil {
		return Snapshot{}, err
	}
	if f.fork != nil {
		return Snapshot{}, ErrInFork
	}
	if err := f.Sync(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: commit what is pending: %w", name, err)
	}
	var snap Snapshot
	err := f.update(func(tx *chunkstore.Tx) error {
		b := tx.Sealed(bucketSnapshots)
		if v, err := b.Get([]byte(name)); err != nil {
			return err
		} else if v != nil {
			return fmt.Errorf("snapshot %s: %w", name, ErrSnapshotExists)
		}
		v, err := tx.Sealed(bucketMeta).Get(keyEpoch)
		if err != nil {
			return err
		}
		epoch, _ := u64(v)
		root, _, err := tx.Root()
		if err != nil {
			return err
		}
		snap = Snapshot{Name: name, Epoch: epoch, Created: time.Now().UnixNano(), Root: root}
		if err := b.Put([]byte(name), encodeSnapshot(snap)); err != nil {
			return err
		}
		return tx.Bucket(versions.BucketSnapEpochs).Put(append(binary.BigEndian.AppendUint64(nil, epoch), name...), nil)
	})
	return snap, err
}

// Snapshots lists the snapshots by name.
func (f *FS) Snapshots() ([]Snapshot, error) {
	var out []Snapshot
	err := f.view(func(tx *chunkstore.Tx) error {
		return tx.Sealed(bucketSnapshots).ForEach(func(k, v []byte) error {
			if isCheckpointKey(k) {
				return nil
			}
			s, err := decodeSnapshot(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
	})
	return out, err
}

// SnapshotView reads the workspace as snapshot name has it.
func (f *FS) SnapshotView(name string) (*View, error) {
	var snap Snapshot
	err := f.view(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketSnapshots).Get([]byte(name))
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("snapshot %s: %w", name, ErrNoSnapshot)
		}
		snap, err = decodeSnapshot(name, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &View{f: f, Snapshot: snap}, nil
}

// View is a read-only view of a snapshot. Each call is one read
// transaction of the store.
type View struct {
	f *FS
	Snapshot
}

func (v *View) at(fn func(tx *chunkstore.Tx, at *versions.At) error) error {
	return v.f.view(func(tx *chunkstore.Tx) error {
		if err := v.current(tx); err != nil {
			return err
		}
		return fn(tx, versions.NewAt(tx.Tx, v.Epoch))
	})
}

func getAttrAt(at *versions.At, ino Ino) (Attr, string, error) {
	b, err := at.Get(bucketInodes, inoKey(ino))
	if err != nil {
		return Attr{}, "", err
	}
	if b == nil {
		return Attr{}, "", syscall.ENOENT
	}
	return decodeInode(ino, b)
}

// GetAttr is an inode's attributes in the snapshot.
func (v *View) GetAttr(ino Ino) (a Attr, err error) {
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		a, _, err = getAttrAt(at, ino)
		return err
	})
	return a, err
}

// Lookup finds name in directory parent of the snapshot.
func (v *View) Lookup(parent Ino, name string) (a Attr, err error) {
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		b, err := at.Get(bucketDirents, direntKey(parent, name))
		if err != nil {
			return err
		}
		if b == nil {
			return syscall.ENOENT
		}
		d, err := decodeDirent(b)
		if err != nil {
			return err
		}
		a, _, err = getAttrAt(at, d.Ino)
		return err
	})
	return a, err
}

// ReadDir lists directory ino of the snapshot, without . and ..
func (v *View) ReadDir(ino Ino) (out []DirEntry, err error) {
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		return at.Prefix(bucketDirents, inoKey(ino), func(k, b []byte) error {
			d, err := decodeDirent(b)
			if err != nil {
				return err
			}
			out = append(out, DirEntry{Name: string(k[8:]), Ino: d.Ino, Type: d.Type})
			return nil
		})
	})
	return out, err
}

// Readlink is a symlink's target in the snapshot.
func (v *View) Readlink(ino Ino) (target string, err error) {
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		a, t, err := getAttrAt(at, ino)
		if err == nil && !a.IsSymlink() {
			err = syscall.EINVAL
		}
		target = t
		return err
	})
	return target, err
}

// Read reads file ino of the snapshot at off into dest.
func (v *View) Read(ino Ino, off int64, dest []byte) (n int, err error) {
	cs := int64(v.f.chunkSize)
	err = v.at(func(tx *chunkstore.Tx, at *versions.At) error {
		a, _, err := getAttrAt(at, ino)
		if err != nil {
			return err
		}
		if !a.IsRegular() {
			return syscall.EISDIR
		}
		end := min(off+int64(len(dest)), int64(a.Size))
		for pos := off; pos < end; {
			idx := pos / cs
			piece := min(end-pos, cs-pos%cs)
			out := dest[pos-off : pos-off+piece]
			b, err := at.Get(bucketChunks, chunkKey(ino, uint64(idx)))
			if err != nil {
				return err
			}
			clear(out)
			if b != nil {
				if len(b) != chunkstore.IDSize {
					return fmt.Errorf("chunk %d of inode %d: %w", idx, ino, syscall.EIO)
				}
				data, err := tx.Get(chunkstore.ID(b), nil)
				if err != nil {
					return err
				}
				if s := pos % cs; s < int64(len(data)) {
					copy(out, data[s:])
				}
			}
			pos += piece
		}
		n = int(max(end-off, 0))
		return nil
	})
	return n, err
}

// RestoreReport says what a restore changed.
type RestoreReport struct {
	Records int // records put back or removed
	Seconds float64
}

// RestoreSnapshot puts a closed workspace back as snapshot name has it,
// in one commit: every record changed since gets its version then back,
// and what did not exist then is removed. It costs in proportion to
// what changed since the snapshot, not to the workspace. The snapshot
// stays; later snapshots stay too, and keep what they saw. FS.Restore
// does the same on a served workspace.
func RestoreSnapshot(store *chunkstore.Store, name string) (*RestoreReport, error) {
	return RestoreSnapshotPaths(store, name, nil)
}

// RestoreSnapshotPaths is RestoreSnapshot limited to the files under
// paths (at the snapshot or now), as FS.Restore's RestoreOptions.Paths.
func RestoreSnapshotPaths(store *chunkstore.Store, name string, paths []string) (*RestoreReport, error) {
	start := time.Now()
	rep := &RestoreReport{}
	err := store.Update(func(tx *chunkstore.Tx) error {
		snap, err := snapshotEpoch(tx, name)
		if err != nil {
			return err
		}
		epoch, err := beginRewindTx(tx)
		if err != nil {
			return err
		}
		plan, err := restorePlan(tx, snap.Epoch, paths)
		if err != nil {
			return err
		}
		eff, err := applyRewind(tx, plan, nil)
		if err != nil {
			return err
		}
		rep.Records = eff.records
		return endRewindTx(tx, epoch)
	})
	rep.Seconds = time.Since(start).Seconds()
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", name, err)
	}
	return rep, nil
}

// ListSnapshots lists the snapshots of a store, open or not.
func ListSnapshots(store *chunkstore.Store) ([]Snapshot, error) {
	var out []Snapshot
	err := store.View(func(tx *chunkstore.Tx) error {
		return tx.Sealed(bucketSnapshots).ForEach(func(k, v []byte) error {
			if isCheckpointKey(k) {
				return nil
			}
			s, err := decodeSnapshot(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
	})
	return out, err
}

// DeleteSnapshotReport says what deleting a snapshot freed.
type DeleteSnapshotReport struct {
	Versions int // record versions no other snapshot needed, dropped
	Chunks   int // chunk references they held, released
}

// DeleteSnapshot deletes snapshot name and the record versions only it
// needed, releasing their chunks, in one commit. It reads the whole
// history of kept versions (what snapshots hold), not the workspace.
// The store may be in use by an FS: nothing of the live tree changes.
func DeleteSnapshot(store *chunkstore.Store, name string) (*DeleteSnapshotReport, error) {
	rep := &DeleteSnapshotReport{}
	err := store.Update(func(tx *chunkstore.Tx) error {
		b := tx.Sealed(bucketSnapshots)
		v, err := b.Get([]byte(name))
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("snapshot %s: %w", name, ErrNoSnapshot)
		}
		snap, err := decodeSnapshot(name, v)
		if err != nil {
			return err
		}
		if err := b.Delete([]byte(name)); err != nil {
			return err
		}
		if err := tx.Bucket(versions.BucketSnapEpochs).Delete(append(binary.BigEndian.AppendUint64(nil, snap.Epoch), name...)); err != nil {
			return err
		}
		rep.Versions, rep.Chunks, err = dropUnpinned(tx)
		return err
	})
	return rep, err
}

// Root is the root identifier of the workspace (SNAPSHOTS.md, "Root
// identifier") once what is pending is committed: two workspaces, or
// one at two times, whose records are the same have the same root.
func (f *FS) Root(ctx context.Context) (versions.Root, error) {
	if f.fork != nil {
		return versions.Root{}, ErrInFork
	}
	if err := f.Sync(ctx); err != nil {
		return versions.Root{}, fmt.Errorf("root: commit what is pending: %w", err)
	}
	return StoreRoot(f.store)
}

// StoreRoot is the root identifier stored in a store, open or not: zero
// if it has none yet (a store older than roots, until fs opens it).
func StoreRoot(store *chunkstore.Store) (versions.Root, error) {
	var root versions.Root
	err := store.View(func(tx *chunkstore.Tx) error {
		var err error
		root, _, err = tx.Root()
		return err
	})
	return root, err
}
