package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// Checking forks (fsck and scrub): a fork's records are checked against
// the tree the fork sees (its overlay over the workspace at its epoch),
// one lookup or one directory's entries per record the fork holds, never
// a walk of the workspace: an entry names an inode that exists there with
// the entry's type, in a directory; a chunk-list record belongs to a
// regular file, lies within its size and names a stored, intact chunk; a
// file's chunk list agrees with its summary; a directory's link count
// with its entries; an inode the fork made is named as often as its link
// count says (or is one of its orphans), and lies in the fork's range.
// Damage is named by fork ID and by the path in the fork (the path at the
// fork point where the fork's own records cannot tell it).

// forkView is btx seen from fork fi, for reading: fs's bucket names
// routed to the fork's buckets, as the fork's FS sees them.
func forkView(store *chunkstore.Store, btx *bolt.Tx, fi ForkInfo) (*chunkstore.Tx, error) {
	fx := store.Wrap(btx)
	l, err := (&forkCfg{ForkInfo: fi}).layer(fx)
	if err != nil {
		return nil, err
	}
	fx.SetLayer(l)
	return fx, nil
}

// forkNamer names a fork's inodes by their paths in the fork, or at the
// fork point.
type forkNamer struct {
	id         string
	fork, base treeReader
	cs         uint64
	// dirents is the fork's own entries, for an inode whose record
	// cannot be read.
	dirents *bolt.Bucket
}

func newForkNamer(fx *chunkstore.Tx, fi ForkInfo, cs uint64) forkNamer {
	n := forkNamer{id: fi.ID, fork: txReader(fx), base: atReader(versions.NewAt(fx.Tx, fi.Epoch)), cs: cs}
	if b := forkBucket(fx.Tx, fi.ID); b != nil {
		n.dirents = b.Bucket(bucketDirents)
	}
	return n
}

// path is ino's path in the fork ("inode N" if none can be told).
func (n forkNamer) path(ino Ino) string {
	if ino == RootIno {
		return "/"
	}
	for i, r := range []treeReader{n.fork, n.base} {
		v, err := r.get(bucketInodes, inoKey(ino))
		if err != nil || v == nil {
			continue
		}
		a, _, err := decodeInode(ino, v)
		if err != nil {
			continue
		}
		var p string
		if a.IsDir() {
			p = r.dirPath(ino)
		} else {
			p = r.byParent(ino, a.Parent)
		}
		if p != "" {
			if i == 1 {
				p += " (its path at the fork point)"
			}
			return p
		}
	}
	if n.dirents != nil {
		// Its record unreadable: an entry of the fork's that names it.
		w := sealed.Wrap(n.dirents, forkSealName(n.id, bucketDirents), 0)
		found := ""
		n.dirents.ForEach(func(k, _ []byte) error {
			if v, _, err := w.OverlayGet(k); found == "" && err == nil && v != nil && len(k) > 8 {
				if d, err := decodeDirent(v); err == nil && d.Ino == ino {
					if dp := n.fork.dirPath(keyIno(k)); dp != "" {
						found = joinPath(dp, string(k[8:]))
					}
				}
			}
			return nil
		})
		if found != "" {
			return found
		}
	}
	return fmt.Sprintf("inode %d", ino)
}

// entry is the path of name in directory dir.
func (n forkNamer) entry(dir Ino, name string) string {
	p := n.path(dir)
	if p == "/" {
		return "/" + name
	}
	return p + "/" + name
}

// key names a record of one of fs's buckets in the fork.
func (n forkNamer) key(bucket string, k []byte) string {
	switch bucket {
	case string(bucketInodes), string(bucketOrphans):
		if len(k) == 8 {
			return n.path(keyIno(k))
		}
	case string(bucketDirents):
		if len(k) > 8 {
			return n.entry(keyIno(k), string(k[8:]))
		}
	case string(bucketXattrs):
		if len(k) > 8 {
			return fmt.Sprintf("%s: extended attribute %q", n.path(keyIno(k)), k[8:])
		}
	case string(bucketChunks):
		if len(k) == 16 {
			idx := binary.BigEndian.Uint64(k[8:])
			return fmt.Sprintf("%s: bytes %d to %d", n.path(keyIno(k)), idx*n.cs, (idx+1)*n.cs)
		}
	}
	return bucket + " " + describeKey(bucket, k)
}

// damage is a report line for fork damage at what.
func (n forkNamer) damage(what string, format string, args ...any) string {
	return fmt.Sprintf("fork %s: %s: %s", n.id, what, fmt.Sprintf(format, args...))
}

// forkIDs lists the IDs of the store's forks, and the values where a
// fork's bucket belongs.
func forkIDs(tx *bolt.Tx) (ids []string, values []string) {
	fb := tx.Bucket(bucketForks)
	if fb == nil {
		return nil, nil
	}
	fb.ForEach(func(k, v []byte) error {
		if v != nil {
			values = append(values, string(k))
		} else {
			ids = append(ids, string(k))
		}
		return nil
	})
	return ids, values
}

// recoverForkRecord rebuilds fork id's record when its own is damaged or
// lost, from what else says it: its epoch from its pin, its inode range
// from its next inode number (or its inodes). The root at the fork
// point is not known again (zero); its creation time is taken as the
// fork point's.
func recoverForkRecord(tx *bolt.Tx, id string, b *bolt.Bucket) (ForkInfo, error) {
	fi := ForkInfo{ID: id}
	found := false
	if pins := tx.Bucket(versions.BucketSnapEpochs); pins != nil {
		c := pins.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) > 8 {
				if pid, ok := isForkPin(k[8:]); ok && pid == id {
					fi.Epoch, found = binary.BigEndian.Uint64(k), true
					break
				}
			}
		}
	}
	if !found {
		return ForkInfo{}, fmt.Errorf("fork %s: its record and its pin are both gone: %w", id, errBadRecord)
	}
	var high Ino
	if mb := b.Bucket(bucketForkMeta); mb != nil {
		if v, err := sealed.Wrap(mb, forkSealName(id, bucketForkMeta), 0).Get(keyNextIno); err == nil {
			if n, ok := u64(v); ok {
				high = Ino(n)
			}
		}
	}
	if high <= forkInoFloor {
		if ib := b.Bucket(bucketInodes); ib != nil {
			c := ib.Cursor()
			if k, _ := c.Last(); len(k) == 8 && keyIno(k) >= forkInoFloor {
				high = keyIno(k) + 1
			}
		}
	}
	if high <= forkInoFloor || high > MaxIno {
		return ForkInfo{}, fmt.Errorf("fork %s: its record is gone and its inode range cannot be told: %w", id, errBadRecord)
	}
	fi.InoBase = forkInoFloor + (high-1-forkInoFloor)/forkInoStride*forkInoStride
	fi.InoEnd = fi.InoBase + forkInoStride
	return fi, nil
}

// readForkRecordOrRecover is readForkRecord, falling back to
// recoverForkRecord when the record is damaged (recovered says so).
func readForkRecordOrRecover(tx *bolt.Tx, id string) (fi ForkInfo, b *bolt.Bucket, recovered bool, err error) {
	fi, b, err = readForkRecord(tx, id)
	if err == nil {
		return fi, b, false, nil
	}
	if b = forkBucket(tx, id); b == nil {
		return ForkInfo{}, nil, false, err
	}
	rfi, rerr := recoverForkRecord(tx, id, b)
	if rerr != nil {
		return ForkInfo{}, b, false, fmt.Errorf("%w (and %v)", err, rerr)
	}
	return rfi, b, true, nil
}

// forkRecordDamage checks the seals of fork id's records in b, calling
// bad for each damaged one with its bucket (fs's name) and key.
func forkRecordDamage(id string, b *bolt.Bucket, bad func(bucket []byte, k []byte, err error)) {
	for _, o := range forkOwn {
		ob := b.Bucket(o.name)
		if ob == nil {
			bad(o.name, nil, fmt.Errorf("bucket missing"))
			continue
		}
		name := forkSealName(id, o.name)
		ob.ForEach(func(k, v []byte) error {
			var err error
			if o.overlay {
				_, _, err = sealed.Wrap(ob, name, 0).OverlayGet(k)
			} else if v == nil {
				err = fmt.Errorf("a nested bucket")
			} else if _, err = sealed.Open(name, k, v); err == nil && bytes.Equal(o.name, bucketJournal) {
				val, _ := sealed.Open(name, k, v)
				if seq, ok := u64(k); !ok {
					err = fmt.Errorf("journal key is not a sequence number")
				} else {
					_, err = decodeChange(seq, val)
				}
			}
			if err != nil {
				bad(o.name, bytes.Clone(k), err)
			}
			return nil
		})
	}
}

// forkTreeProblems checks the records fork fi holds (b, its bucket)
// against the tree the fork sees (fx), and says what is wrong, each line
// naming the fork and a path. chunkOK says whether a chunk is stored and
// intact (nil: not checked).
func forkTreeProblems(fx *chunkstore.Tx, fi ForkInfo, b *bolt.Bucket, cs uint64, chunkOK func(chunkstore.ID) bool) []string {
	n := newForkNamer(fx, fi, cs)
	var out []string
	bad := func(what, format string, args ...any) { out = append(out, n.damage(what, format, args...)) }
	inodes := fx.Sealed(bucketInodes)
	attr := func(ino Ino) (*Attr, error) {
		v, err := inodes.Get(inoKey(ino))
		if err != nil || v == nil {
			return nil, err
		}
		a, _, err := decodeInode(ino, v)
		if err != nil {
			return nil, err
		}
		return &a, nil
	}
	own := func(name []byte, fn func(k, v []byte, tomb bool)) {
		ob := b.Bucket(name)
		if ob == nil {
			return
		}
		w := sealed.Wrap(ob, forkSealName(fi.ID, name), 0)
		ob.ForEach(func(k, _ []byte) error {
			v, _, err := w.OverlayGet(k)
			if err == nil {
				fn(k, v, v == nil)
			}
			return nil // damage: reported with the seals
		})
	}
	inRange := func(ino Ino) bool { return ino < forkInoFloor || ino >= fi.InoBase && ino < fi.InoEnd }
	// The names of the inodes the fork made (no other tree can name
	// them), from its entries.
	names := make(map[Ino]uint32)
	own(bucketDirents, func(k, v []byte, tomb bool) {
		if tomb || len(k) <= 8 {
			return
		}
		if d, err := decodeDirent(v); err == nil && d.Ino >= forkInoFloor {
			names[d.Ino]++
		}
	})
	orphans := make(map[Ino]bool)
	if ob := b.Bucket(bucketOrphans); ob != nil {
		ob.ForEach(func(k, _ []byte) error {
			if len(k) == 8 {
				orphans[keyIno(k)] = true
				if a, err := attr(keyIno(k)); err == nil && (a == nil || a.Nlink != 0) {
					bad(n.path(keyIno(k)), "an orphan record of an inode that is missing or linked")
				}
			}
			return nil
		})
	}
	var maxOwn Ino
	own(bucketInodes, func(k, v []byte, tomb bool) {
		if len(k) != 8 {
			bad(sealed.KeyString(k), "an inode key of %d bytes", len(k))
			return
		}
		ino := keyIno(k)
		if !inRange(ino) {
			// An inode of another fork's range that a merge brought
			// into the workspace before this fork was made is the
			// workspace's: this fork may change or delete it.
			if then, err := versions.NewAt(fx.Tx, fi.Epoch).Get(bucketInodes, k); err != nil || then == nil {
				bad(n.path(ino), "inode %d lies outside the fork's range %d-%d", ino, fi.InoBase, fi.InoEnd)
			}
		}
		// Made by this fork (and so named only by its own entries), as
		// against the workspace's inodes it changed, which may come from
		// an earlier fork's range.
		made := ino >= fi.InoBase && ino < fi.InoEnd
		if made {
			maxOwn = max(maxOwn, ino)
		}
		if tomb {
			// Deleted in the fork: nothing there may name it still.
			then, err := versions.NewAt(fx.Tx, fi.Epoch).Get(bucketInodes, k)
			if err != nil || then == nil {
				return
			}
			a, _, err := decodeInode(ino, then)
			if err != nil {
				return
			}
			if a.IsDir() {
				c := fx.Sealed(bucketDirents).Cursor()
				if ck, _, err := c.Seek(k); err == nil && ck != nil && hasPrefix(ck, k) {
					bad(n.base.dirPath(ino)+" (at the fork point)", "the directory is deleted in the fork but still holds %q", ck[8:])
				}
			} else if a.Parent != 0 {
				if name := n.fork.naming(a.Parent, ino); name != "" {
					bad(n.entry(a.Parent, name), "names inode %d, which the fork deleted", ino)
				}
			}
			return
		}
		a, _, sum, err := decodeInodeSum(ino, v)
		if err != nil {
			bad(n.path(ino), "%v", err)
			return
		}
		switch {
		case a.IsRegular() && sum.Known:
			if got, err := scanListSum(fx, ino); err == nil && got != sum.listSum {
				bad(n.path(ino), "its chunk list has %d records, its summary %d: a record was lost or changed", got.Count, sum.Count)
			}
		case a.IsDir():
			var subdirs uint32
			prefix := inoKey(ino)
			c := fx.Sealed(bucketDirents).Cursor()
			for ck, cv, err := c.Seek(prefix); ck != nil && hasPrefix(ck, prefix); ck, cv, err = c.Next() {
				if err != nil {
					continue
				}
				if d, err := decodeDirent(cv); err == nil && d.Type == syscall.S_IFDIR {
					subdirs++
				}
			}
			if a.Nlink != 2+subdirs {
				bad(n.path(ino), "directory link count %d, but %d subdirectories", a.Nlink, subdirs)
			}
			if ino != RootIno {
				if p, err := attr(a.Parent); err == nil && (p == nil || !p.IsDir()) {
					bad(n.path(ino), "its parent %d is not a directory there", a.Parent)
				}
			}
		}
		if made && !a.IsDir() {
			switch {
			case a.Nlink != names[ino]:
				bad(n.path(ino), "inode %d has link count %d, but %d names", ino, a.Nlink, names[ino])
			case a.Nlink == 0 && !orphans[ino]:
				bad(n.path(ino), "inode %d has no links and no orphan record (it would never be freed)", ino)
			}
		}
		if made && a.IsDir() && names[ino] != 1 {
			bad(n.path(ino), "directory %d has %d names", ino, names[ino])
		}
	})
	if maxOwn != 0 {
		mb := b.Bucket(bucketForkMeta)
		if mb != nil {
			v, err := sealed.Wrap(mb, forkSealName(fi.ID, bucketForkMeta), 0).Get(keyNextIno)
			if next, ok := u64(v); err == nil && (!ok || Ino(next) <= maxOwn) {
				bad("its next inode number", "%d is not above the largest in use (%d)", next, maxOwn)
			}
		}
	}
	own(bucketDirents, func(k, v []byte, tomb bool) {
		if tomb {
			return
		}
		if len(k) <= 8 {
			bad(sealed.KeyString(k), "a directory entry key of %d bytes", len(k))
			return
		}
		dir, name := keyIno(k), string(k[8:])
		d, err := decodeDirent(v)
		if err != nil {
			bad(n.entry(dir, name), "%v", err)
			return
		}
		p, err := attr(dir)
		if err != nil {
			bad(n.entry(dir, name), "its directory's record: %v", err)
			return
		}
		if p == nil || !p.IsDir() {
			bad(n.entry(dir, name), "the entry is in inode %d, which is not a directory there", dir)
			return
		}
		ca, err := attr(d.Ino)
		switch {
		case err != nil:
			bad(n.entry(dir, name), "its inode %d: %v", d.Ino, err)
		case ca == nil:
			bad(n.entry(dir, name), "names inode %d, which neither the fork nor the workspace at the fork point has", d.Ino)
		case ca.Mode&syscall.S_IFMT != d.Type:
			bad(n.entry(dir, name), "the entry has type %#o, inode %d is %#o", d.Type, d.Ino, ca.Mode&syscall.S_IFMT)
		}
	})
	own(bucketChunks, func(k, v []byte, tomb bool) {
		if tomb {
			return
		}
		if len(k) != 16 || len(v) != chunkstore.IDSize {
			bad(sealed.KeyString(k), "a malformed chunk list record")
			return
		}
		ino, idx := keyIno(k), binary.BigEndian.Uint64(k[8:])
		a, err := attr(ino)
		switch {
		case err != nil:
			bad(n.key(string(bucketChunks), k), "its inode: %v", err)
		case a == nil || !a.IsRegular():
			bad(n.key(string(bucketChunks), k), "a chunk list record of inode %d, which is not a regular file there", ino)
		case idx*cs >= a.Size:
			bad(n.key(string(bucketChunks), k), "a chunk list record past the file's size %d", a.Size)
		}
		if id := chunkstore.ID(v); chunkOK != nil && !chunkOK(id) {
			bad(n.key(string(bucketChunks), k), "chunk %s is missing or damaged: reading it in the fork fails (discard the fork, or write the file again in it)", id.Short())
		}
	})
	own(bucketXattrs, func(k, _ []byte, tomb bool) {
		if tomb || len(k) <= 8 {
			return
		}
		if a, err := attr(keyIno(k)); err == nil && a == nil {
			bad(n.key(string(bucketXattrs), k), "an extended attribute of a missing inode")
		}
	})
	return out
}

// errForkRefs says that a fork's damaged chunk list records hid some of
// the references the fork holds.
var errForkRefs = errors.New("a fork's chunk list records are damaged: the references they hold cannot be told")
