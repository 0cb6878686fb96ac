package fs

import (
	"sync"

	"github.com/computerfs/computerfs/chunkstore"
)

// chunkCache keeps the plaintext of the last few chunks read from the
// store, so that the kernel's several READs of one chunk decode and verify
// it once. Content addressing means entries never go stale. Callers must
// not modify what get returns.
type chunkCache struct {
	mu   sync.Mutex
	max  int
	ids  []chunkstore.ID // most recent last
	data map[chunkstore.ID][]byte
}

func (c *chunkCache) init(max int) {
	c.max = max
	c.data = make(map[chunkstore.ID][]byte, max)
}

func (c *chunkCache) get(id chunkstore.ID) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[id]
}

func (c *chunkCache) put(id chunkstore.ID, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[id]; ok {
		return
	}
	if len(c.ids) >= c.max {
		delete(c.data, c.ids[0])
		c.ids = append(c.ids[:0], c.ids[1:]...)
	}
	c.ids = append(c.ids, id)
	c.data[id] = b
}
