package fs

import (
	"fmt"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/versions"
)

// MaxIno bounds live inode numbers: every one is below it. The FUSE
// mount numbers the nodes of snapshot views ino | slot<<48 above it
// (fs/SNAPSHOTS.md), so that the two never clash.
const MaxIno Ino = 1 << 48

// ErrSnapshotGone is the cause of reads through a View whose snapshot
// was deleted (or deleted and made again under its name) since.
var ErrSnapshotGone = fmt.Errorf("the snapshot was deleted: %w", syscall.ESTALE)

// current checks, inside a read of the view, that its snapshot still
// exists as the view saw it: the versions of a deleted one are dropped,
// and a read would mix what is left with the live tree.
func (v *View) current(tx *chunkstore.Tx) error {
	b, err := tx.Sealed(bucketSnapshots).Get([]byte(v.Name))
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("snapshot %s: %w", v.Name, ErrSnapshotGone)
	}
	s, err := decodeSnapshot(v.Name, b)
	if err != nil {
		return err
	}
	if s.Epoch != v.Epoch || s.Created != v.Created {
		return fmt.Errorf("snapshot %s: %w", v.Name, ErrSnapshotGone)
	}
	return nil
}

// GetXattr is the value of extended attribute name of inode ino in the
// snapshot (ENODATA if it had none).
func (v *View) GetXattr(ino Ino, name string) (val []byte, err error) {
	if name == "" || len(name) > maxXattrName {
		return nil, syscall.ERANGE
	}
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		if _, _, err := getAttrAt(at, ino); err != nil {
			return err
		}
		b, err := at.Get(bucketXattrs, xattrKey(ino, name))
		if err != nil {
			return err
		}
		if b == nil {
			return syscall.ENODATA
		}
		val = append([]byte{}, b...)
		return nil
	})
	return val, err
}

// ListXattr lists the names of inode ino's extended attributes in the
// snapshot, in name order.
func (v *View) ListXattr(ino Ino) (names []string, err error) {
	err = v.at(func(_ *chunkstore.Tx, at *versions.At) error {
		if _, _, err := getAttrAt(at, ino); err != nil {
			return err
		}
		return at.Prefix(bucketXattrs, inoKey(ino), func(k, _ []byte) error {
			names = append(names, string(k[8:]))
			return nil
		})
	})
	return names, err
}
