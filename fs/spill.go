package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/computerfs/computerfs/chunkstore"
	"golang.org/x/sys/unix"
)

// The spill file is the write path's second buffer: prepared chunks
// (hashed, raw) that wait for a commit are written to it when the buffer
// pool fills, and their buffers go back to the pool, so that a long
// write runs at the speed of hashing and copying instead of waiting for
// the commits' fdatasyncs: the commits then store the chunks from the
// file's page cache, at the disk's pace, behind the writer. It is what
// the kernel's page cache is to a write to ext4 without fsync, with the
// same promise: nothing in it is durable until fsync (or any commit that
// takes it) returns, which waits for the commit as before. The file is
// unlinked (O_TMPFILE where the filesystem allows it), so that a crash
// leaves nothing behind, and it never touches the store: a power cut or
// kill -9 finds the store at its last commit, as without it.
//
// The file is a row of fixed slots, one chunk's stored value each. A
// commit puts a spilled chunk from a read-only shared map of the file (no
// copy: bbolt copies the value into its page as for a pool buffer); the
// slot is freed after the commit (its pages dropped from the map and
// punched out of the file, so that they are never written back).
type spill struct {
	file     *os.File
	mem      []byte // read-only shared map of the whole file
	slotSize int
	free     []int // free slot numbers
}

// openSpill makes an unlinked spill file of slots slots for chunks of
// chunkSize bytes in dir.
func openSpill(dir string, chunkSize, slots int) (*spill, error) {
	slotSize := (chunkstore.HeaderSize + chunkSize + 4095) &^ 4095
	fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	var file *os.File
	if err == nil {
		file = os.NewFile(uintptr(fd), filepath.Join(dir, "(spill)"))
	} else {
		// A filesystem without O_TMPFILE: a named file, unlinked at once.
		file, err = os.CreateTemp(dir, ".computerfs-spill-*")
		if err != nil {
			return nil, fmt.Errorf("spill file in %s: %w", dir, err)
		}
		if err := os.Remove(file.Name()); err != nil {
			file.Close()
			return nil, fmt.Errorf("spill file in %s: %w", dir, err)
		}
	}
	size := slots * slotSize
	// A sparse file: its blocks are allocated as slots are written.
	if err := file.Truncate(int64(size)); err != nil {
		file.Close()
		return nil, fmt.Errorf("spill file in %s: %w", dir, err)
	}
	mem, err := unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("spill file in %s: map: %w", dir, err)
	}
	sp := &spill{file: file, mem: mem, slotSize: slotSize}
	for i := slots - 1; i >= 0; i-- {
		sp.free = append(sp.free, i)
	}
	return sp, nil
}

// take returns a free slot (under f.mu).
func (sp *spill) take() (int, bool) {
	n := len(sp.free)
	if n == 0 {
		return 0, false
	}
	i := sp.free[n-1]
	sp.free = sp.free[:n-1]
	return i, true
}

// write stores a chunk's value in slot i (f.mu not held).
func (sp *spill) write(i int, value []byte) error {
	if len(value) > sp.slotSize {
		return errors.New("value larger than a spill slot")
	}
	_, err := sp.file.WriteAt(value, int64(i)*int64(sp.slotSize))
	return err
}

// value returns the n bytes of slot i, from the map.
func (sp *spill) value(i, n int) []byte {
	off := i * sp.slotSize
	return sp.mem[off : off+n : off+n]
}

// release frees slot i once nothing uses its bytes (under f.mu): its
// pages leave this process's map and the file, so that they are neither
// counted in its memory nor ever written back.
func (sp *spill) release(i int) {
	off := i * sp.slotSize
	_ = unix.Madvise(sp.mem[off:off+sp.slotSize], unix.MADV_DONTNEED)
	_ = unix.Fallocate(int(sp.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(sp.slotSize))
	sp.free = append(sp.free, i)
}

func (sp *spill) close() error {
	err := unix.Munmap(sp.mem)
	if cerr := sp.file.Close(); err == nil {
		err = cerr
	}
	return err
}
