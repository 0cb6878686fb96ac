package fs

import (
	"context"
	"syscall"
)

// StatFS describes the workspace for statfs(2) and df.
type StatFS struct {
	BlockSize   uint32
	Blocks      uint64
	BlocksFree  uint64
	Files       uint64
	FilesFree   uint64
	NameMax     uint32
	LimitBytes  uint64
	UsedBytes   uint64
	InodesInUse uint64
}

// StatFS reports the size limit as the filesystem's size.
func (f *FS) StatFS() StatFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	used := f.usedLocked()
	free := uint64(0)
	if f.limit > used {
		free = f.limit - used
	}
	const bs = 4096
	files := uint64(f.nextIno)
	return StatFS{
		BlockSize:  bs,
		Blocks:     f.limit / bs,
		BlocksFree: free / bs,
		Files:      files + 1<<32,
		FilesFree:  1 << 32,
		NameMax:    maxName,
		LimitBytes: f.limit,
		UsedBytes:  used,
	}
}

// CopyRange copies length bytes from one file to another, as
// copy_file_range does. Whole chunks at aligned offsets are shared by ID,
// copying no data; the unaligned rest is read and written.
func (f *FS) CopyRange(ctx context.Context, src Ino, srcOff int64, dst Ino, dstOff int64, length int64) (int64, error) {
	if srcOff < 0 || dstOff < 0 || length < 0 {
		return 0, syscall.EINVAL
	}
	f.mu.Lock()
	sn, err := f.getNodeLocked(src)
	if err != nil {
		f.mu.Unlock()
		return 0, err
	}
	if !sn.attr.IsRegular() {
		f.mu.Unlock()
		return 0, syscall.EINVAL
	}
	if size := int64(sn.attr.Size); srcOff >= size {
		f.mu.Unlock()
		return 0, nil
	} else if srcOff+length > size {
		length = size - srcOff
	}
	f.mu.Unlock()

	cs := int64(f.chunkSize)
	var done int64
	buf := make([]byte, 0)
	for done < length {
		so, do := srcOff+done, dstOff+done
		if so%cs == 0 && do%cs == 0 && length-done >= cs && src != dst {
			ok, err := f.shareChunk(ctx, src, uint64(so/cs), dst, uint64(do/cs))
			if err != nil {
				return f.copyResult(done, err)
			}
			if ok {
				done += cs
				continue
			}
		}
		// Copy up to the next chunk boundary of the destination.
		piece := min(length-done, cs-do%cs)
		if int64(cap(buf)) < piece {
			buf = make([]byte, cs)
		}
		n, err := f.Read(ctx, src, so, buf[:piece])
		if err != nil {
			return f.copyResult(done, err)
		}
		if n == 0 {
			break
		}
		w, err := f.Write(ctx, dst, do, buf[:n], false)
		done += int64(w)
		if err != nil {
			return f.copyResult(done, err)
		}
	}
	return done, nil
}

func (f *FS) copyResult(done int64, err error) (int64, error) {
	if done > 0 {
		return done, nil
	}
	return 0, err
}

// shareChunk makes chunk di of dst refer to the stored chunk si of src. It
// declines (false) when the source chunk is not committed yet.
func (f *FS) shareChunk(ctx context.Context, src Ino, si uint64, dst Ino, di uint64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return false, syscall.EROFS
	}
	sn, err := f.getNodeLocked(src)
	if err != nil {
		return false, err
	}
	dn, err := f.getNodeLocked(dst)
	if err != nil {
		return false, err
	}
	defer f.maybeForgetLocked(sn)
	defer f.maybeForgetLocked(dn)
	if !dn.attr.IsRegular() {
		return false, syscall.EINVAL
	}
	var s *slot
	if old := sn.slots[si]; old != nil {
		switch {
		case old.hole:
			s = &slot{hole: true}
		case old.shared:
			s = &slot{shared: true}
			s.prep.ID = old.prep.ID
		default:
			// Not stored yet: the caller copies instead. That includes a
			// chunk of the commit under way: until it ends, reads (and
			// partial writes) of a slot sharing it would find no chunk.
			return false, nil
		}
	} else {
		id, ok, err := f.storedChunkLocked(sn, si)
		if err != nil {
			return false, err
		}
		if ok {
			s = &slot{shared: true}
			s.prep.ID = id
		} else {
			s = &slot{hole: true}
		}
	}
	s.ino, s.idx, s.state, s.gen = dst, di, slotPrepared, f.bump()
	if old := dn.slots[di]; old != nil {
		f.supersedeLocked(old)
	}
	if dn.slots == nil {
		dn.slots = make(map[uint64]*slot)
	}
	dn.slots[di] = s
	f.dirty[dst] = dn
	if end := (di + 1) * uint64(f.chunkSize); end > dn.attr.Size {
		dn.attr.Size = end
	}
	f.touchLocked(dn, true)
	return true, nil
}

// Whence values of SeekData.
const (
	SeekData = 3
	SeekHole = 4
)

// SeekData implements lseek SEEK_DATA and SEEK_HOLE at chunk granularity:
// a chunk that is stored or in memory is data, anything else a hole.
func (f *FS) SeekData(ino Ino, off int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		return 0, err
	}
	defer f.maybeForgetLocked(n)
	size := int64(n.attr.Size)
	if off < 0 || off >= size {
		return 0, syscall.ENXIO
	}
	cs := int64(f.chunkSize)
	for idx := off / cs; idx*cs < size; idx++ {
		data, err := f.chunkHasDataLocked(n, uint64(idx))
		if err != nil {
			return 0, err
		}
		if data == (whence == SeekData) {
			return max(off, idx*cs), nil
		}
	}
	if whence == SeekHole {
		return size, nil
	}
	return 0, syscall.ENXIO
}

func (f *FS) chunkHasDataLocked(n *node, idx uint64) (bool, error) {
	if s := n.slots[idx]; s != nil {
		return !s.hole, nil
	}
	_, ok, err := f.storedChunkLocked(n, idx)
	return ok, err
}

// Fallocate modes supported.
const (
	FallocKeepSize  = 0x1
	FallocPunchHole = 0x2
	FallocZeroRange = 0x10
)

// Fallocate reserves (mode 0 or KEEP_SIZE), punches a hole (PUNCH_HOLE |
// KEEP_SIZE) or zeroes a range (ZERO_RANGE, with or without KEEP_SIZE:
// without, a range past the end grows the file). Zeroes are holes here,
// so punching and zeroing are the same work. Space is not reserved ahead
// (chunks are allocated on write: st_blocks does not grow), but the limit
// is checked.
func (f *FS) Fallocate(ctx context.Context, ino Ino, off, length int64, mode uint32) error {
	if off < 0 || length <= 0 {
		return syscall.EINVAL
	}
	switch mode {
	case 0, FallocKeepSize:
		f.mu.Lock()
		defer f.mu.Unlock()
		n, err := f.getNodeLocked(ino)
		if err != nil {
			return err
		}
		defer f.maybeForgetLocked(n)
		if !n.attr.IsRegular() {
			return syscall.ENODEV
		}
		end := uint64(off + length)
		if end > n.attr.Size && end-n.attr.Size > f.limit-min(f.limit, f.usedLocked()) {
			return syscall.ENOSPC
		}
		if mode == 0 && end > n.attr.Size {
			n.attr.Size = end
			f.touchLocked(n, true)
		}
		return nil
	case FallocZeroRange, FallocZeroRange | FallocKeepSize:
		if err := f.Fallocate(ctx, ino, off, length, FallocPunchHole|FallocKeepSize); err != nil {
			return err
		}
		if mode&FallocKeepSize == 0 {
			return f.Fallocate(ctx, ino, off, length, 0) // grows the size, if the range passes it
		}
		return nil
	case FallocPunchHole | FallocKeepSize:
		zero := make([]byte, min(length, int64(f.chunkSize)))
		cs := int64(f.chunkSize)
		for pos := off; pos < off+length; {
			piece := min(off+length-pos, cs-pos%cs)
			if err := f.punch(ctx, ino, pos, zero[:piece]); err != nil {
				return err
			}
			pos += piece
		}
		return nil
	}
	return syscall.EOPNOTSUPP
}

// punch zeroes a range inside one chunk without changing the size.
func (f *FS) punch(ctx context.Context, ino Ino, pos int64, zero []byte) error {
	f.mu.Lock()
	n, err := f.getNodeLocked(ino)
	if err != nil {
		f.mu.Unlock()
		return err
	}
	size := int64(n.attr.Size)
	f.mu.Unlock()
	if pos >= size {
		return nil
	}
	if end := pos + int64(len(zero)); end > size {
		zero = zero[:size-pos]
	}
	_, err = f.Write(ctx, ino, pos, zero, false)
	return err
}
