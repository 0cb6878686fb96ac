package fs

import "slices"

// smallPool holds the buffers of small chunks: a chunk written only up to
// a small offset (a small file, the tail of a short one) is kept in a
// frame of about its size instead of a whole chunk frame from the buffer
// pool, and grows as it is written (into a chunk frame past the largest
// class). Its bytes count against the same budget as the pool's frames
// (FS.takenLocked), so memory stays bounded; but a thousand small files
// waiting for a commit take a thousand small frames, not a thousand
// chunks' worth, and writers do not wait for commits to free frames
// (which a few dozen small files did with whole frames). Small chunks
// never go through the spill file: a pwrite, a map and a punch per tiny
// file cost more than the file.
//
// Frames, like the pool's, have chunkstore.HeaderSize bytes of room in
// front of the plaintext, so that a small chunk kept raw is stored
// straight from its frame. All under FS.mu.
type smallPool struct {
	// classes are the frame sizes, ascending: powers of two and one and
	// a half times them, from 512 bytes to max (a frame wastes at most a
	// third of itself).
	classes []int
	free    [][][]byte // free frames per class
	// freeBytes are the bytes of free frames kept, at most freeMax.
	freeBytes, freeMax int
	// bytes are the bytes of frames in use; batch is the amount past
	// which a prepared small chunk starts a commit, kicked records that
	// one was started since bytes last fell below it.
	bytes, batch int
	kicked       bool
}

// init sets the classes up to largest bytes (frame size, header
// included); budget is the buffer pool's.
func (p *smallPool) init(largest, budget int) {
	for c := 512; c <= largest; c *= 2 {
		p.classes = append(p.classes, c)
		if c+c/2 <= largest {
			p.classes = append(p.classes, c+c/2)
		}
	}
	p.free = make([][][]byte, len(p.classes))
	p.freeMax = budget / 8
	p.batch = max(budget/4, 1)
}

// class returns the index of the smallest class holding need bytes, or
// -1 if none does.
func (p *smallPool) class(need int) int {
	i, _ := slices.BinarySearch(p.classes, need)
	if i == len(p.classes) {
		return -1
	}
	return i
}

// take returns a frame of class i, counted as in use.
func (p *smallPool) take(i int) []byte {
	p.bytes += p.classes[i]
	if n := len(p.free[i]); n > 0 {
		fr := p.free[i][n-1]
		p.free[i] = p.free[i][:n-1]
		p.freeBytes -= len(fr)
		return fr
	}
	return make([]byte, p.classes[i])
}

// trim drops the free frames (trimPoolsLocked).
func (p *smallPool) trim() {
	clear(p.free)
	p.freeBytes = 0
}

// give returns a frame taken from the pool.
func (p *smallPool) give(fr []byte) {
	fr = fr[:cap(fr)]
	p.bytes -= len(fr)
	if p.bytes < p.batch {
		p.kicked = false
	}
	if p.freeBytes+len(fr) > p.freeMax {
		return
	}
	if i := p.class(len(fr)); i >= 0 && p.classes[i] == len(fr) {
		p.free[i] = append(p.free[i], fr)
		p.freeBytes += len(fr)
	}
}
