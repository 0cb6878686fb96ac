package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// TreeRecord is one record of a workspace's tree as stored, without its
// envelope: the unit a snapshot's root identifier sums (SNAPSHOTS.md,
// "Root identifier"). ExportSnapshot hands them out and ImportTree puts
// them back verbatim, so that a tree moved between stores keeps its
// inode numbers, times and root. Callers outside fs treat Key and Value
// as opaque, except through the methods below.
type TreeRecord struct {
	// Bucket is the versioned bucket's id (versions.ID): 1 inodes,
	// 2 dirents, 3 fchunks, 4 xattrs (5, fsums, is format 6's: from
	// format 7 a file's chunk-list summary is in its inode record).
	Bucket     byte
	Key, Value []byte
}

// Record bucket ids, as versions numbers them.
const (
	RecInodes  = 1
	RecDirents = 2
	RecChunks  = 3
	RecXattrs  = 4
)

var treeBuckets = [][]byte{bucketInodes, bucketDirents, bucketChunks, bucketXattrs}

func treeBucket(id byte) []byte {
	if id < 1 || int(id) > len(treeBuckets) {
		return nil
	}
	return treeBuckets[id-1]
}

// Hash is the record's term of the root identifier.
func (r TreeRecord) Hash() (versions.Root, error) {
	b := treeBucket(r.Bucket)
	if b == nil {
		return versions.Root{}, fmt.Errorf("record of bucket %d: %w", r.Bucket, errBadRecord)
	}
	return versions.RecordHash(b, r.Key, r.Value), nil
}

// Chunk is the chunk a chunk-list record names.
func (r TreeRecord) Chunk() (chunkstore.ID, bool) {
	if r.Bucket != RecChunks || len(r.Value) != chunkstore.IDSize || len(r.Key) != 16 {
		return chunkstore.ID{}, false
	}
	return chunkstore.ID(r.Value), true
}

// TreeRoot is the root identifier of a set of records: what a store
// holding exactly them has in meta/root.
func TreeRoot(recs []TreeRecord) (versions.Root, error) {
	var root versions.Root
	for _, r := range recs {
		h, err := r.Hash()
		if err != nil {
			return versions.Root{}, err
		}
		root.Add(h)
	}
	return root, nil
}

// ExportSnapshot calls fn with every record of the tree as snapshot name
// has it, bucket by bucket in key order, in one read transaction of a
// store no FS need have closed (reads only). It returns the snapshot.
func ExportSnapshot(store *chunkstore.Store, name string, fn func(TreeRecord) error) (Snapshot, error) {
	var snap Snapshot
	err := store.View(func(tx *chunkstore.Tx) error {
		var err error
		snap, err = snapshotEpoch(tx, name)
		if err != nil {
			return err
		}
		at := versions.NewAt(tx.Tx, snap.Epoch)
		for i, b := range treeBuckets {
			if err := at.Prefix(b, nil, func(k, v []byte) error {
				return fn(TreeRecord{Bucket: byte(i + 1), Key: bytes.Clone(k), Value: bytes.Clone(v)})
			}); err != nil {
				return fmt.Errorf("read %s at snapshot %s: %w", b, name, err)
			}
		}
		return nil
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("export snapshot %s: %w", name, err)
	}
	return snap, nil
}

// ErrRootMismatch is the cause of an import whose records do not sum to
// the root they were said to have.
var ErrRootMismatch = errors.New("root identifier mismatch")

// ImportOptions says how ImportTree checks and names what it imports.
type ImportOptions struct {
	// Root is the root identifier the records must sum to; the import
	// fails before writing anything if they do not, and after its last
	// commit if the store's root disagrees.
	Root versions.Root
	// Snapshot, if not empty, names a snapshot taken of the imported
	// state in the import's last commit.
	Snapshot string
	// BatchBytes bounds the chunk bytes put per transaction (64 MiB if 0).
	BatchBytes int
}

// ImportTree fills a workspace store no FS has open, and whose tree is
// still the empty one a new store gets, with records (from
// ExportSnapshot, possibly of another store), in a few commits: chunk
// lists with their chunks first, in batches, then the rest. chunk gives
// a chunk's plaintext, already verified against its ID, for each chunk
// the store lacks. Until the last commit the store is not a consistent
// workspace: build into a file that is renamed into place afterwards.
// Inodes with no links get orphan records (the next open deletes them).
func ImportTree(store *chunkstore.Store, recs []TreeRecord, chunk func(chunkstore.ID) ([]byte, error), opts ImportOptions) (Snapshot, error) {
	root, err := TreeRoot(recs)
	if err != nil {
		return Snapshot{}, err
	}
	if root != opts.Root {
		return Snapshot{}, fmt.Errorf("import: the records sum to root %s, not %s: %w", root, opts.Root, ErrRootMismatch)
	}
	if opts.Snapshot != "" {
		if err := checkSnapshotName(opts.Snapshot); err != nil {
			return Snapshot{}, err
		}
	}
	if err := CheckTree(recs, store.ChunkSize()); err != nil {
		return Snapshot{}, fmt.Errorf("import: %w", err)
	}
	if opts.BatchBytes == 0 {
		opts.BatchBytes = 64 << 20
	}
	if store.ChunkSize() <= 0 {
		return Snapshot{}, fmt.Errorf("import: store has no chunk size: %w", syscall.EINVAL)
	}
	var chunks, rest []TreeRecord
	maxIno := uint64(RootIno)
	for _, r := range recs {
		if treeBucket(r.Bucket) == nil || len(r.Key) < 8 {
			return Snapshot{}, fmt.Errorf("import: record of bucket %d, key %x: %w", r.Bucket, r.Key, errBadRecord)
		}
		maxIno = max(maxIno, binary.BigEndian.Uint64(r.Key))
		if r.Bucket == RecChunks {
			if _, ok := r.Chunk(); !ok {
				return Snapshot{}, fmt.Errorf("import: chunk-list record %x: %w", r.Key, errBadRecord)
			}
			chunks = append(chunks, r)
		} else {
			rest = append(rest, r)
		}
	}
	if maxIno >= uint64(MaxIno) {
		return Snapshot{}, fmt.Errorf("import: inode %d past the limit: %w", maxIno, errBadRecord)
	}
	// First commit: the new store's tree (its root directory) goes, so
	// that the store's root becomes the records' sum.
	err = store.Update(func(tx *chunkstore.Tx) error {
		epoch, err := beginImportTx(tx)
		if err != nil {
			return err
		}
		for _, b := range treeBuckets {
			var keys [][]byte
			if err := tx.Bucket(b).ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil }); err != nil {
				return err
			}
			if bytes.Equal(b, bucketChunks) && len(keys) > 0 {
				return fmt.Errorf("import: the store already holds files: %w", syscall.ENOTEMPTY)
			}
			if bytes.Equal(b, bucketInodes) && (len(keys) != 1 || keyIno(keys[0]) != RootIno) {
				return fmt.Errorf("import: the store already holds files: %w", syscall.ENOTEMPTY)
			}
			sb := tx.Sealed(b)
			for _, k := range keys {
				if err := sb.Delete(k); err != nil {
					return err
				}
			}
		}
		return endRewindTx(tx, epoch)
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("import: empty the new store: %w", err)
	}
	sort.SliceStable(chunks, func(i, j int) bool { return bytes.Compare(chunks[i].Key, chunks[j].Key) < 0 })
	for len(chunks) > 0 {
		// One batch: chunk lists until BatchBytes of new chunks.
		var batch []TreeRecord
		var data [][]byte
		size := 0
		for len(chunks) > 0 && size < opts.BatchBytes {
			r := chunks[0]
			chunks = chunks[1:]
			id, _ := r.Chunk()
			var has bool
			if err := store.View(func(tx *chunkstore.Tx) error { has, err = tx.Has(id); return err }); err != nil {
				return Snapshot{}, err
			}
			var d []byte
			if !has {
				for i, r2 := range batch {
					if id2, _ := r2.Chunk(); id2 == id && data[i] != nil {
						has = true // put earlier in this batch
						break
					}
				}
			}
			if !has {
				if d, err = chunk(id); err != nil {
					return Snapshot{}, fmt.Errorf("import: chunk %s: %w", id, err)
				}
				if chunkstore.Sum(d) != id {
					return Snapshot{}, fmt.Errorf("import: chunk %s: content does not match its ID: %w", id, chunkstore.ErrCorrupt)
				}
				size += len(d)
			}
			batch = append(batch, r)
			data = append(data, d)
		}
		err := store.Update(func(tx *chunkstore.Tx) error {
			epoch, err := beginImportTx(tx)
			if err != nil {
				return err
			}
			sb := tx.Sealed(bucketChunks)
			for i, r := range batch {
				id, _ := r.Chunk()
				if data[i] != nil {
					p := chunkstore.Prepare(data[i], nil)
					if _, err := tx.Put(&p); err != nil {
						return err
					}
				} else if err := tx.Ref(id); err != nil {
					return err
				}
				if err := sb.Put(r.Key, r.Value); err != nil {
					return err
				}
			}
			return endRewindTx(tx, epoch)
		})
		if err != nil {
			return Snapshot{}, fmt.Errorf("import: chunk lists: %w", err)
		}
	}
	var snap Snapshot
	err = store.Update(func(tx *chunkstore.Tx) error {
		epoch, err := beginImportTx(tx)
		if err != nil {
			return err
		}
		for _, r := range rest {
			if err := tx.Sealed(treeBucket(r.Bucket)).Put(r.Key, r.Value); err != nil {
				return err
			}
			if r.Bucket == RecInodes {
				a, _, err := decodeInode(keyIno(r.Key), r.Value)
				if err != nil {
					return err
				}
				if a.Nlink == 0 && !a.IsDir() {
					if err := tx.Sealed(bucketOrphans).Put(r.Key, nil); err != nil {
						return err
					}
				}
			}
		}
		if err := tx.Sealed(bucketMeta).Put(keyNextIno, inoKey(Ino(maxIno+1))); err != nil {
			return err
		}
		if err := endRewindTx(tx, epoch); err != nil {
			return err
		}
		// The root is kept by the transaction's watcher; it is stored at
		// commit. Compare what it will be.
		got, _, err := tx.Root()
		if err != nil {
			return err
		}
		if got != opts.Root {
			return fmt.Errorf("import: the store's root is %s after the import, not %s: %w", got, opts.Root, ErrRootMismatch)
		}
		if opts.Snapshot != "" {
			snap = Snapshot{Name: opts.Snapshot, Epoch: epoch, Created: time.Now().UnixNano(), Root: got}
			if err := tx.Sealed(bucketSnapshots).Put([]byte(snap.Name), encodeSnapshot(snap)); err != nil {
				return err
			}
			return tx.Bucket(versions.BucketSnapEpochs).Put(append(binary.BigEndian.AppendUint64(nil, epoch), snap.Name...), nil)
		}
		return nil
	})
	if err != nil {
		return Snapshot{}, err
	}
	got, err := StoreRoot(store)
	if err != nil {
		return Snapshot{}, err
	}
	if got != opts.Root {
		return Snapshot{}, fmt.Errorf("import: the store's root is %s, not %s: %w", got, opts.Root, ErrRootMismatch)
	}
	return snap, nil
}

// PathsOf names the files of recs (a tree from ExportSnapshot) whose
// chunk lists name any chunk of ids: their paths from the root (every
// name of a file with several links), sorted. Used to say what a
// missing or damaged chunk affects.
func PathsOf(recs []TreeRecord, ids map[chunkstore.ID]bool) []string {
	hit := make(map[Ino]bool)
	for _, r := range recs {
		if id, ok := r.Chunk(); ok && ids[id] {
			hit[keyIno(r.Key)] = true
		}
	}
	if len(hit) == 0 {
		return nil
	}
	type link struct {
		parent Ino
		name   string
	}
	links := make(map[Ino][]link)
	for _, r := range recs {
		if r.Bucket != RecDirents || len(r.Key) <= 8 {
			continue
		}
		d, err := decodeDirent(r.Value)
		if err != nil {
			continue
		}
		links[d.Ino] = append(links[d.Ino], link{keyIno(r.Key), string(r.Key[8:])})
	}
	var name func(ino Ino, depth int) []string
	name = func(ino Ino, depth int) []string {
		if ino == RootIno {
			return []string{""}
		}
		if depth > 4096 {
			return nil
		}
		var out []string
		for _, l := range links[ino] {
			for _, p := range name(l.parent, depth+1) {
				out = append(out, p+"/"+l.name)
			}
		}
		return out
	}
	var out []string
	for ino := range hit {
		ps := name(ino, 0)
		if len(ps) == 0 {
			ps = []string{fmt.Sprintf("(inode %d, unnamed)", ino)}
		}
		out = append(out, ps...)
	}
	sort.Strings(out)
	return out
}

// beginImportTx starts a commit of its own epoch, as fs's committer
// does: records get its birth, and versions are kept only for
// snapshots (versions.Attach).
func beginImportTx(tx *chunkstore.Tx) (uint64, error) {
	ev, err := tx.Sealed(bucketMeta).Get(keyEpoch)
	if err != nil {
		return 0, err
	}
	last, _ := u64(ev)
	epoch := last + 1
	tx.SetEpoch(epoch)
	rec, err := versions.Attach(tx.Tx, epoch)
	if err != nil {
		return 0, err
	}
	if rec != nil {
		tx.SetRecorder(rec)
	}
	return epoch, nil
}

// Inode decodes an inodes record: its attributes and symlink target.
func (r TreeRecord) Inode() (Attr, string, error) {
	if r.Bucket != RecInodes || len(r.Key) != 8 {
		return Attr{}, "", fmt.Errorf("not an inode record: %w", errBadRecord)
	}
	return decodeInode(keyIno(r.Key), r.Value)
}

// Dirent decodes a dirents record: the entry name of directory parent.
func (r TreeRecord) Dirent() (parent Ino, e DirEntry, err error) {
	if r.Bucket != RecDirents || len(r.Key) <= 8 {
		return 0, DirEntry{}, fmt.Errorf("not an entry record: %w", errBadRecord)
	}
	d, err := decodeDirent(r.Value)
	if err != nil {
		return 0, DirEntry{}, err
	}
	return keyIno(r.Key), DirEntry{Name: string(r.Key[8:]), Ino: d.Ino, Type: d.Type}, nil
}

// ChunkIndex is the file and the index a chunk-list record is for.
func (r TreeRecord) ChunkIndex() (Ino, uint64, bool) {
	if _, ok := r.Chunk(); !ok {
		return 0, 0, false
	}
	return keyIno(r.Key), binary.BigEndian.Uint64(r.Key[8:]), true
}

// CheckTree checks that records (from another host: hostile) make a
// tree this package can serve, without reading any chunk: every record
// decodes; the root is a directory; names are 1 to 255 bytes without /
// or NUL and not . or ..; every entry's directory is a directory of
// the records and its child exists with the type it names; chunk-list
// records belong to regular files and lie within their size (chunkSize
// is the store's); xattrs belong to inodes and fit their limits;
// summaries are 16 bytes. It says what is wrong first.
func CheckTree(recs []TreeRecord, chunkSize int) error {
	attrs := make(map[Ino]Attr)
	for _, r := range recs {
		if r.Bucket == RecInodes {
			a, _, err := r.Inode()
			if err != nil {
				return err
			}
			if a.Ino == 0 || a.Ino >= MaxIno {
				return fmt.Errorf("inode %d: %w: number out of range", a.Ino, errBadRecord)
			}
			attrs[a.Ino] = a
		}
	}
	if a, ok := attrs[RootIno]; !ok || !a.IsDir() {
		return fmt.Errorf("no root directory: %w", errBadRecord)
	}
	for _, r := range recs {
		switch r.Bucket {
		case RecInodes:
		case RecDirents:
			parent, e, err := r.Dirent()
			if err != nil {
				return err
			}
			if len(e.Name) > 255 || strings.ContainsAny(e.Name, "/\x00") || e.Name == "." || e.Name == ".." {
				return fmt.Errorf("entry %q of directory %d: %w: bad name", e.Name, parent, errBadRecord)
			}
			if p, ok := attrs[parent]; !ok || !p.IsDir() {
				return fmt.Errorf("entry %q: %w: directory %d missing", e.Name, errBadRecord, parent)
			}
			if c, ok := attrs[e.Ino]; !ok || c.Mode&syscall.S_IFMT != e.Type || e.Ino == RootIno {
				return fmt.Errorf("entry %q of directory %d: %w: child %d missing or of another type", e.Name, parent, errBadRecord, e.Ino)
			}
		case RecChunks:
			ino, idx, ok := r.ChunkIndex()
			if !ok {
				return fmt.Errorf("chunk-list record %x: %w", r.Key, errBadRecord)
			}
			a, ok := attrs[ino]
			if !ok || !a.IsRegular() || idx >= (a.Size+uint64(chunkSize)-1)/uint64(chunkSize) {
				return fmt.Errorf("chunk %d of inode %d: %w: not within a regular file", idx, ino, errBadRecord)
			}
		case RecXattrs:
			if len(r.Key) <= 8 || len(r.Key) > 8+255 || len(r.Value) > maxXattrValue {
				return fmt.Errorf("xattr record %x: %w", r.Key, errBadRecord)
			}
			if _, ok := attrs[keyIno(r.Key)]; !ok {
				return fmt.Errorf("xattr of inode %d: %w: no such inode", keyIno(r.Key), errBadRecord)
			}
		default:
			return fmt.Errorf("record of bucket %d: %w", r.Bucket, errBadRecord)
		}
	}
	return nil
}
