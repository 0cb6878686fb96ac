package fs

import (
	"sync"
	"sync/atomic"

	"github.com/computerfs/computerfs/chunkstore"
)

// chunkCache keeps the plaintext of the last few chunks read from the
// store, so that the kernel's several READs of one chunk decode and verify
// it once. Content addressing means entries never go stale.
//
// Its buffers are recycled: fresh memory is slow to touch on these
// machines (first-touch faults ran at 80-230 MiB/s), and a cold read
// decodes a chunk per MiB. Chunks read from the store go into buffers
// from a hugeArena while it has any (a cold read runs faster over huge
// pages); copies (add) take ordinary ones. A reader holds an entry
// (acquire or putClaimed) until it has copied what it needs and calls
// release; an evicted entry's buffer is reused only once nobody holds
// it.
//
// A chunk being decoded is claimed, so that a reader and the prefetcher
// (or two readers) never decode the same chunk twice: the others wait for
// the claim to end and look again.
type chunkCache struct {
	mu      sync.Mutex
	max     int
	order   []*cacheEntry // most recent last
	byID    map[chunkstore.ID]*cacheEntry
	loading map[chunkstore.ID]chan struct{} // claimed chunks; closed when the claim ends
	free    [][]byte
	arena   *hugeArena // where buffers of bufCap come from first
	bufCap  int        // capacity of the buffers it makes
	decoded uint64     // chunks decoded into the cache, ever
	// ranged counts reads served from a few verified blocks of a chunk
	// without decoding it (FS.readRange), ever.
	ranged atomic.Uint64
}

type cacheEntry struct {
	id   chunkstore.ID
	data []byte // the plaintext: anywhere within buf
	buf  []byte // the buffer it lies in, recycled when the entry goes
	refs int
	gone bool // evicted: the buffer is recycled at the last release
}

// init makes a cache of max chunks whose buffers hold bufCap bytes.
func (c *chunkCache) init(max, bufCap int) {
	c.max = max
	c.bufCap = bufCap
	// Room for every entry, and for the chunks being decoded or still
	// held by readers after they were evicted.
	c.arena = newHugeArena(max+prefetchers+4, bufCap)
	c.byID = make(map[chunkstore.ID]*cacheEntry, max)
	c.loading = make(map[chunkstore.ID]chan struct{})
}

// acquire returns a held entry if id is cached. Otherwise, if another
// goroutine is decoding id, it returns a channel closed when that ends;
// if nobody is, it claims id for the caller, who must end the claim with
// putClaimed or unclaim.
func (c *chunkCache) acquire(id chunkstore.ID) (e *cacheEntry, wait <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byID[id]; e != nil {
		e.refs++
		return e, nil
	}
	if ch := c.loading[id]; ch != nil {
		return nil, ch
	}
	c.loading[id] = make(chan struct{})
	return nil, nil
}

// lookup returns a held entry if id is cached, nil otherwise; unlike
// acquire it never claims.
func (c *chunkCache) lookup(id chunkstore.ID) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byID[id]
	if e != nil {
		e.refs++
	}
	return e
}

// unclaim ends a claim that produced nothing.
func (c *chunkCache) unclaim(id chunkstore.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endClaimLocked(id)
}

func (c *chunkCache) endClaimLocked(id chunkstore.ID) {
	if ch := c.loading[id]; ch != nil {
		close(ch)
		delete(c.loading, id)
	}
}

// putClaimed adds the chunk decoded under a claim into buf (a buffer
// from buffer; data lies within it), ends the claim and returns the
// entry held.
func (c *chunkCache) putClaimed(id chunkstore.ID, data, buf []byte) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endClaimLocked(id)
	c.decoded++
	return c.putLocked(id, data, buf)
}

// buffer returns a recycled buffer of at least n bytes, or a new one.
func (c *chunkCache) buffer(n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.free) - 1; i >= 0; i-- {
		if b := c.free[i]; cap(b) >= n {
			c.free = append(c.free[:i], c.free[i+1:]...)
			return b[:n]
		}
	}
	return make([]byte, n, max(n, c.bufCap))
}

// readBuffer is buffer for a chunk read from the store: one from the
// arena while it has any.
func (c *chunkCache) readBuffer(n int) []byte {
	if n <= c.bufCap {
		c.mu.Lock()
		b := c.arena.take()
		c.mu.Unlock()
		if b != nil {
			return b[:n]
		}
	}
	return c.buffer(n)
}

// trim drops the recycled buffers but two (FS.trimPoolsLocked); the
// cached chunks stay.
func (c *chunkCache) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arena.trim()
	if len(c.free) > 2 {
		clear(c.free[2:])
		c.free = c.free[:2:2]
	}
}

// recycle takes back a buffer nobody uses.
func (c *chunkCache) recycle(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recycleLocked(b)
}

func (c *chunkCache) recycleLocked(b []byte) {
	switch {
	case c.arena.owns(b):
		c.arena.put(b)
	case len(c.free) < c.max:
		c.free = append(c.free, b[:cap(b)])
	}
}

// putLocked adds a decoded chunk, data, which lies in buf, a buffer from
// buffer, and returns it held. If the chunk is there already, that entry
// is returned and buf is recycled.
func (c *chunkCache) putLocked(id chunkstore.ID, data, buf []byte) *cacheEntry {
	if e := c.byID[id]; e != nil {
		c.recycleLocked(buf)
		e.refs++
		return e
	}
	if len(c.order) >= c.max {
		old := c.order[0]
		c.order = append(c.order[:0], c.order[1:]...)
		delete(c.byID, old.id)
		old.gone = true
		if old.refs == 0 {
			c.recycleLocked(old.buf)
		}
	}
	e := &cacheEntry{id: id, data: data, buf: buf, refs: 1}
	c.order = append(c.order, e)
	c.byID[id] = e
	return e
}

// release lets go of an entry from get or put.
func (c *chunkCache) release(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.gone && e.refs == 0 {
		c.recycleLocked(e.buf)
	}
}

// dropAll evicts every entry; held ones keep their buffers until released.
func (c *chunkCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.order {
		delete(c.byID, e.id)
		e.gone = true
		if e.refs == 0 {
			c.recycleLocked(e.buf)
		}
	}
	c.order = c.order[:0]
}

// close evicts every entry and releases the arena (hugeArena.release):
// for FS.Close, when nothing reads any more.
func (c *chunkCache) close() {
	c.dropAll()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arena.release()
}

// add caches a copy of data, the verified plaintext of chunk id, unless
// it is cached or being decoded already.
func (c *chunkCache) add(id chunkstore.ID, data []byte) {
	c.mu.Lock()
	if c.byID[id] != nil || c.loading[id] != nil {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	buf := c.buffer(len(data))
	copy(buf, data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[id] != nil || c.loading[id] != nil {
		c.recycleLocked(buf)
		return
	}
	e := c.putLocked(id, buf, buf)
	e.refs--
}
