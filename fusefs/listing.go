package fusefs

import (
	"hash/fnv"
	"sort"
	"sync"

	"github.com/computerfs/computerfs/fs"
)

// listing is a directory's entries sorted by cookie, the READDIR offset
// of each entry: "." is 1, ".." is 2, every other name a 63-bit hash of
// itself above those. Cookies depend only on names, so an offset handed
// to a reader stays meaningful however the directory changes.
type listing struct {
	gen     uint64
	entries []fs.DirEntry
	cookies []uint64
}

func cookie(name string) uint64 {
	switch name {
	case ".":
		return 1
	case "..":
		return 2
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()%(1<<63-3) + 3
}

func newListing(entries []fs.DirEntry, gen uint64) *listing {
	l := &listing{gen: gen, entries: entries, cookies: make([]uint64, len(entries))}
	for i, e := range entries {
		l.cookies[i] = cookie(e.Name)
	}
	sort.Sort(byCookie{l})
	// Two names with one hash would share an offset, and a reader
	// stopping between them would lose the second: give it the next value.
	for i := 1; i < len(l.cookies); i++ {
		if l.cookies[i] <= l.cookies[i-1] {
			l.cookies[i] = l.cookies[i-1] + 1
		}
	}
	return l
}

type byCookie struct{ l *listing }

func (b byCookie) Len() int { return len(b.l.entries) }
func (b byCookie) Less(i, j int) bool {
	ci, cj := b.l.cookies[i], b.l.cookies[j]
	if ci != cj {
		return ci < cj
	}
	return b.l.entries[i].Name < b.l.entries[j].Name
}
func (b byCookie) Swap(i, j int) {
	b.l.entries[i], b.l.entries[j] = b.l.entries[j], b.l.entries[i]
	b.l.cookies[i], b.l.cookies[j] = b.l.cookies[j], b.l.cookies[i]
}

// maxListings bounds the directories whose listings are kept.
const maxListings = 256

// listings caches the listings of recently read directories.
type listings struct {
	mu sync.Mutex
	m  map[fs.Ino]*listing
}

// get returns the current listing of dir, from the cache while the
// directory is unchanged.
func (c *listings) get(f *fs.FS, dir fs.Ino) (*listing, error) {
	gen, err := f.DirGen(dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	l := c.m[dir]
	c.mu.Unlock()
	if l != nil && l.gen == gen {
		return l, nil
	}
	entries, gen, err := f.ListDir(dir)
	if err != nil {
		return nil, err
	}
	l = newListing(entries, gen)
	c.put(dir, l)
	return l, nil
}

// getFixed returns the listing of a directory that never changes (in a
// snapshot view) while it is cached with generation gen, else loads it.
func (c *listings) getFixed(dir fs.Ino, gen uint64, load func() ([]fs.DirEntry, error)) (*listing, error) {
	c.mu.Lock()
	l := c.m[dir]
	c.mu.Unlock()
	if l != nil && l.gen == gen {
		return l, nil
	}
	entries, err := load()
	if err != nil {
		return nil, err
	}
	l = newListing(entries, gen)
	c.put(dir, l)
	return l, nil
}

func (c *listings) put(dir fs.Ino, l *listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[fs.Ino]*listing)
	}
	if len(c.m) >= maxListings {
		for k := range c.m { // drop an arbitrary one
			delete(c.m, k)
			break
		}
	}
	c.m[dir] = l
}
