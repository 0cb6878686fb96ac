package fs

import (
	"bytes"
	"sort"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
)

// Limits of extended attributes, as Linux has them.
const (
	maxXattrName  = 255
	maxXattrValue = 64 << 10
)

// Xattr flags (setxattr).
const (
	XattrCreate  = 1
	XattrReplace = 2
)

func (f *FS) xattrLocked(n *node, name string) ([]byte, bool, error) {
	if ch, ok := n.xattrs[name]; ok {
		return bytes.Clone(ch.val), ch.val != nil, nil
	}
	var val []byte
	err := f.view(func(tx *chunkstore.Tx) error {
		v, err := tx.Sealed(bucketXattrs).Get(xattrKey(n.attr.Ino, name))
		if v != nil {
			val = bytes.Clone(v)
		}
		return err
	})
	return val, val != nil, err
}

// GetXattr returns the value of an extended attribute (ENODATA if absent).
func (f *FS) GetXattr(ino Ino, name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return nil, err
	}
	defer f.maybeForgetLocked(n)
	val, ok, err := f.xattrLocked(n, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, syscall.ENODATA
	}
	return val, nil
}

// SetXattr sets an extended attribute.
func (f *FS) SetXattr(ino Ino, name string, val []byte, flags uint32) error {
	if name == "" || len(name) > maxXattrName {
		return syscall.ERANGE
	}
	if len(val) > maxXattrValue {
		return syscall.E2BIG
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return syscall.EROFS
	}
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(n)
	_, exists, err := f.xattrLocked(n, name)
	if err != nil {
		return err
	}
	if flags&XattrCreate != 0 && exists {
		return syscall.EEXIST
	}
	if flags&XattrReplace != 0 && !exists {
		return syscall.ENODATA
	}
	f.setXattrLocked(n, name, append([]byte{}, val...))
	return nil
}

func (f *FS) setXattrLocked(n *node, name string, val []byte) {
	if n.xattrs == nil {
		n.xattrs = make(map[string]*xattrChange)
	}
	n.xattrs[name] = &xattrChange{val: val, gen: f.bump()}
	f.flagLocked(n, jXattr)
	f.touchLocked(n, false)
}

// RemoveXattr removes an extended attribute.
func (f *FS) RemoveXattr(ino Ino, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return syscall.EROFS
	}
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return err
	}
	defer f.maybeForgetLocked(n)
	_, exists, err := f.xattrLocked(n, name)
	if err != nil {
		return err
	}
	if !exists {
		return syscall.ENODATA
	}
	f.setXattrLocked(n, name, nil)
	return nil
}

// ListXattr returns the names of an inode's extended attributes, sorted.
func (f *FS) ListXattr(ino Ino) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return nil, err
	}
	defer f.maybeForgetLocked(n)
	var names []string
	err = f.view(func(tx *chunkstore.Tx) error {
		prefix := inoKey(ino)
		c := tx.Sealed(bucketXattrs).Cursor()
		for k, _, err := c.SeekWithin(prefix, prefix); k != nil; k, _, err = c.NextWithin(prefix) {
			if err != nil {
				return err
			}
			if _, ok := n.xattrs[string(k[8:])]; !ok {
				names = append(names, string(k[8:]))
			}
		}
		return nil
	})
	for name, ch := range n.xattrs {
		if ch.val != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, err
}
