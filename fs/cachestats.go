package fs

// ChunksDecoded is how many chunks reads and read-ahead have decoded and
// verified from the store into the read cache since Open: the cache's
// misses (a read the cache serves decodes nothing). It is for the
// daemon's status and metrics.
func (f *FS) ChunksDecoded() uint64 {
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	return f.cache.decoded
}

// RangedReads is how many reads were served from a few blocks of a
// stored chunk, verified through its outboard, without decoding the
// chunk (reads that are not sequential; see readRange) since Open.
func (f *FS) RangedReads() uint64 { return f.cache.ranged.Load() }
