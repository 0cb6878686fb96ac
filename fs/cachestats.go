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
