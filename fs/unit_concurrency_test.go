package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// errCollector gathers failures from goroutines (t.Fatal must not be called
// off the test goroutine).
type errCollector struct {
	mu   sync.Mutex
	errs []string
}

func (e *errCollector) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
}

func (e *errCollector) report(t *testing.T) {
	t.Helper()
	for _, s := range e.errs {
		t.Error(s)
	}
	if len(e.errs) > 0 {
		t.FailNow()
	}
}

// allowed reports whether err is nil or one of the errnos a racing caller
// may legitimately get.
func allowed(err error, ok ...syscall.Errno) bool {
	if err == nil {
		return true
	}
	for _, e := range ok {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func TestConcurrentNamespace(t *testing.T) {
	h := newHarness(t, Options{ChunkSize: 4096, BufferBytes: 64 << 10})
	shared := h.mkdir(RootIno, "shared")
	const workers = 6
	iters := 250
	if testing.Short() {
		iters = 20
	}
	type fileState struct {
		dir  Ino
		name string
		data []byte
	}
	var errs errCollector
	results := make([]map[string]fileState, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := h.f
			r := rand.New(rand.NewPCG(uint64(g), 7))
			own, err := f.Create(user, RootIno, fmt.Sprintf("g%d", g), NewNode{Mode: syscall.S_IFDIR | 0o755})
			if err != nil {
				errs.add("g%d: mkdir: %v", g, err)
				return
			}
			files := map[string]fileState{} // key: a stable id
			pick := func() (string, fileState, bool) {
				for id, st := range files {
					return id, st, true
				}
				return "", fileState{}, false
			}
			for i := range iters {
				switch op := r.IntN(12); op {
				case 0, 1, 2: // create and write a file
					name := fmt.Sprintf("f%d", i)
					a, err := f.Create(user, own.Ino, name, NewNode{Mode: 0o644})
					if err != nil {
						errs.add("g%d: create %s: %v", g, name, err)
						return
					}
					opened := r.IntN(2) == 0
					if opened {
						f.Open(a.Ino)
					}
					data := pattern(uint64(g*1000+i), r.IntN(3*4096)+1)
					for off := 0; off < len(data); {
						n := min(len(data)-off, 1+r.IntN(5000))
						if _, err := f.Write(bg, a.Ino, int64(off), data[off:off+n], false); err != nil {
							errs.add("g%d: write: %v", g, err)
							return
						}
						off += n
					}
					if opened {
						f.Release(a.Ino)
					}
					files[name] = fileState{own.Ino, name, data}
				case 3: // read back
					if _, st, ok := pick(); ok {
						a, err := f.Lookup(user, st.dir, st.name)
						if err != nil {
							errs.add("g%d: lookup %s: %v", g, st.name, err)
							return
						}
						got := make([]byte, len(st.data)+10)
						n, err := f.Read(bg, a.Ino, 0, got)
						if err != nil || !bytes.Equal(got[:n], st.data) {
							errs.add("g%d: %s reads %d bytes (%v), want %d, differing at %d", g, st.name, n, err, len(st.data), firstDiff(got[:n], st.data))
							return
						}
					}
				case 4: // move between the own and the shared directory
					if id, st, ok := pick(); ok {
						to, newName := shared.Ino, fmt.Sprintf("g%d-%s", g, id)
						if st.dir == shared.Ino {
							to, newName = own.Ino, id
						}
						if err := f.Rename(st.dir, st.name, to, newName, RenameNoReplace); err != nil {
							errs.add("g%d: rename %s: %v", g, st.name, err)
							return
						}
						files[id] = fileState{to, newName, st.data}
					}
				case 5: // unlink
					if id, st, ok := pick(); ok {
						if err := f.Unlink(st.dir, st.name); err != nil {
							errs.add("g%d: unlink %s: %v", g, st.name, err)
							return
						}
						delete(files, id)
					}
				case 6: // a hard link that comes and goes
					if _, st, ok := pick(); ok {
						a, err := f.Lookup(user, st.dir, st.name)
						if err == nil {
							_, err = f.Link(user, a.Ino, shared.Ino, fmt.Sprintf("g%d-link", g))
						}
						if err == nil {
							err = f.Unlink(shared.Ino, fmt.Sprintf("g%d-link", g))
						}
						if err != nil {
							errs.add("g%d: link: %v", g, err)
							return
						}
					}
				case 7: // a subdirectory that comes and goes
					d, err := f.Create(user, own.Ino, "sub", NewNode{Mode: syscall.S_IFDIR | 0o700})
					if err == nil {
						_, err = f.Create(user, d.Ino, "x", NewNode{Mode: 0o600})
					}
					if err == nil {
						err = f.Unlink(d.Ino, "x")
					}
					if err == nil {
						err = f.Rmdir(own.Ino, "sub")
					}
					if err != nil {
						errs.add("g%d: subdir: %v", g, err)
						return
					}
				case 8: // names everyone fights over
					a, b := fmt.Sprint("c", r.IntN(3)), fmt.Sprint("c", r.IntN(3))
					var err error
					switch r.IntN(5) {
					case 0:
						_, err = f.Create(user, shared.Ino, a, NewNode{Mode: 0o644})
					case 1:
						err = f.Unlink(shared.Ino, a)
					case 2:
						err = f.Rename(shared.Ino, a, shared.Ino, b, 0)
					case 3:
						_, err = f.Create(user, shared.Ino, a, NewNode{Mode: syscall.S_IFDIR | 0o755})
					case 4:
						err = f.Rmdir(shared.Ino, a)
					}
					if !allowed(err, syscall.EEXIST, syscall.ENOENT, syscall.EISDIR, syscall.ENOTDIR, syscall.ENOTEMPTY) {
						errs.add("g%d: contended op: %v", g, err)
						return
					}
				case 9: // kernel references, as FUSE takes and drops them
					if _, st, ok := pick(); ok {
						a, err := f.Lookup(Caller{Uid: 1, Gid: 1, Kernel: true}, st.dir, st.name)
						if err != nil {
							errs.add("g%d: kernel lookup: %v", g, err)
							return
						}
						f.Forget(a.Ino, 1)
					}
				case 10:
					if err := f.Sync(bg); err != nil {
						errs.add("g%d: sync: %v", g, err)
						return
					}
				case 11:
					if _, err := f.ReadDir(shared.Ino); err != nil {
						errs.add("g%d: readdir: %v", g, err)
						return
					}
				}
			}
			results[g] = files
		}()
	}
	wg.Wait()
	errs.report(t)
	verify := func(stage string) {
		for g, files := range results {
			for _, st := range files {
				a, err := h.f.Lookup(user, st.dir, st.name)
				if err != nil {
					t.Errorf("%s: g%d: %s: %v", stage, g, st.name, err)
					continue
				}
				if got := h.readAll(a.Ino); !bytes.Equal(got, st.data) {
					t.Errorf("%s: g%d: %s differs at %d", stage, g, st.name, firstDiff(got, st.data))
				}
			}
			if got := len(h.names(h.lookup(RootIno, fmt.Sprintf("g%d", g)).Ino)); got > len(files) {
				t.Errorf("%s: g%d's directory holds %d names, want at most %d", stage, g, got, len(files))
			}
		}
	}
	verify("in memory")
	h.fsckOpen()
	h.reopen()
	verify("reopened")
	h.closeFS()
}

func TestConcurrentDirectoryMoves(t *testing.T) {
	// Two goroutines move directories into each other: a loop must never
	// form, and every move is all or nothing.
	h := small(t)
	x := h.mkdir(RootIno, "x")
	y := h.mkdir(RootIno, "y")
	h.file(x.Ino, "in-x")
	h.file(y.Ino, "in-y")
	var errs errCollector
	var wg sync.WaitGroup
	move := func(self, other Attr, name string) {
		defer wg.Done()
		for range 300 {
			// Move self under other, wherever each is now, then back.
			err := h.f.Rename(self.Parent, name, other.Ino, name, 0)
			if err == nil {
				err = h.f.Rename(other.Ino, name, RootIno, name, 0)
			}
			if !allowed(err, syscall.EINVAL, syscall.ENOENT) {
				errs.add("move %s: %v", name, err)
				return
			}
			a, err := h.f.GetAttr(self.Ino)
			if err != nil {
				errs.add("getattr: %v", err)
				return
			}
			self = a
		}
	}
	wg.Add(2)
	go move(x, y, "x")
	go move(y, x, "y")
	wg.Wait()
	errs.report(t)
	rep := h.fsckOpen()
	if rep.Inodes != 5 {
		t.Errorf("%d inodes", rep.Inodes)
	}
	h.closeFS()
}

func TestConcurrentWritersOneFile(t *testing.T) {
	h := small(t)
	cs := 4096
	a := h.file(RootIno, "f")
	const workers = 4
	region := 2*cs + cs/2 // regions share chunks at their edges
	var errs errCollector
	var wg sync.WaitGroup
	want := make(model, workers*region)
	for g := range workers {
		data := pattern(uint64(100+g), region)
		copy(want[g*region:], data)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for round := range 4 {
				// Early rounds write junk, the last the final data, each
				// in random pieces in random order.
				src := data
				if round < 3 {
					src = pattern(uint64(round*10+g), region)
				}
				var pieces [][2]int
				for off := 0; off < region; {
					n := min(region-off, 1+r.IntN(3000))
					pieces = append(pieces, [2]int{off, n})
					off += n
				}
				r.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
				for _, p := range pieces {
					n, err := h.f.Write(bg, a.Ino, int64(g*region+p[0]), src[p[0]:p[0]+p[1]], false)
					if err != nil || n != p[1] {
						errs.add("g%d: write: %d %v", g, n, err)
						return
					}
				}
				if round == 1 {
					if err := h.f.Fsync(bg, a.Ino); err != nil {
						errs.add("g%d: fsync: %v", g, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	errs.report(t)
	h.verify("written", a.Ino, want)
	h.sync()
	h.verify("committed", a.Ino, want)
	h.reopen()
	h.verify("reopened", a.Ino, want)
	h.closeFS()
}

// versioned fills a chunk with words naming its version and index, never
// zero.
func versioned(buf []byte, version, idx uint32) {
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint32(buf[i:], version|1<<31)
		binary.LittleEndian.PutUint32(buf[i+4:], idx)
	}
}

// checkVersioned verifies that every chunk-sized piece of data read at off
// holds one version of that chunk, and returns the versions seen.
func checkVersioned(data []byte, off, cs int) (map[int]uint32, error) {
	seen := map[int]uint32{}
	for pos := 0; pos < len(data); {
		idx := (off + pos) / cs
		end := min(len(data), (idx+1)*cs-off)
		part := data[pos:end]
		if (off+pos)%8 != 0 || len(part)%8 != 0 {
			return nil, fmt.Errorf("unaligned read")
		}
		v := binary.LittleEndian.Uint32(part)
		if v&(1<<31) == 0 {
			return nil, fmt.Errorf("chunk %d: garbage word %#x", idx, v)
		}
		word := part[:8]
		for i := 8; i < len(part); i += 8 {
			if !bytes.Equal(part[i:i+8], word) {
				return nil, fmt.Errorf("chunk %d mixes versions: %x at 0, %x at %d", idx, word, part[i:i+8], i)
			}
		}
		if got := binary.LittleEndian.Uint32(part[4:]); got != uint32(idx) {
			return nil, fmt.Errorf("chunk %d holds chunk %d's data", idx, got)
		}
		seen[idx] = v &^ (1 << 31)
		pos = end
	}
	return seen, nil
}

func TestConcurrentReadersSeeWholeChunks(t *testing.T) {
	h := small(t)
	cs := 4096
	const chunks = 12
	const versions = 150
	a := h.file(RootIno, "f")
	cp := h.file(RootIno, "copy")
	init := make([]byte, chunks*cs)
	for i := range chunks {
		versioned(init[i*cs:(i+1)*cs], 0, uint32(i))
	}
	h.write(a.Ino, 0, init)
	h.sync()
	var errs errCollector
	var wg sync.WaitGroup
	done := make(chan struct{})
	// Two writers, each owning alternate chunks, rewrite them whole with
	// rising versions; the readers check every chunk is one version, never
	// a mix, never garbage, and never older than one they saw before.
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, cs)
			for v := uint32(1); v <= versions; v++ {
				for i := w; i < chunks; i += 2 {
					versioned(buf, v, uint32(i))
					if _, err := h.f.Write(bg, a.Ino, int64(i*cs), buf, false); err != nil {
						errs.add("write: %v", err)
						return
					}
				}
				if v%40 == 0 {
					if err := h.f.Fsync(bg, a.Ino); err != nil {
						errs.add("fsync: %v", err)
						return
					}
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for rd := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 9))
			last := map[int]uint32{}
			buf := make([]byte, chunks*cs)
			for {
				select {
				case <-done:
					return
				default:
				}
				off := r.IntN(chunks*cs/8) * 8
				n := 8 * (1 + r.IntN((chunks*cs-off)/8))
				got, err := h.f.Read(bg, a.Ino, int64(off), buf[:n])
				if err != nil || got != n {
					errs.add("read %d at %d: %d %v", n, off, got, err)
					return
				}
				seen, err := checkVersioned(buf[:n], off, cs)
				if err != nil {
					errs.add("read %d at %d: %v", n, off, err)
					return
				}
				for idx, v := range seen {
					if v < last[idx] {
						errs.add("chunk %d went back from version %d to %d", idx, last[idx], v)
						return
					}
					last[idx] = v
				}
			}
		}()
	}
	// A copier shares the chunks while they change: each copied chunk must
	// still be one whole version.
	readers.Add(1)
	go func() {
		defer readers.Done()
		buf := make([]byte, chunks*cs)
		for {
			select {
			case <-done:
				return
			default:
			}
			n, err := h.f.CopyRange(bg, a.Ino, 0, cp.Ino, 0, int64(chunks*cs))
			if err != nil || n != int64(chunks*cs) {
				errs.add("copy: %d %v", n, err)
				return
			}
			got, err := h.f.Read(bg, cp.Ino, 0, buf)
			if err != nil || got != len(buf) {
				errs.add("read copy: %d %v", got, err)
				return
			}
			if _, err := checkVersioned(buf, 0, cs); err != nil {
				errs.add("copy: %v", err)
				return
			}
			h.f.Sync(bg)
		}
	}()
	wg.Wait()
	close(done)
	readers.Wait()
	errs.report(t)
	final := h.readAll(a.Ino)
	seen, err := checkVersioned(final, 0, cs)
	if err != nil {
		t.Fatal(err)
	}
	for idx, v := range seen {
		if v != versions {
			t.Errorf("chunk %d ends at version %d", idx, v)
		}
	}
	h.fsckOpen()
	h.reopen()
	if got := h.readAll(a.Ino); !bytes.Equal(got, final) {
		t.Error("content changed across reopen")
	}
	h.closeFS()
}

func TestConcurrentManyFilesThenReopen(t *testing.T) {
	// Many goroutines each fill their own files while others sync; the
	// buffer pool is small so that writers wait on each other.
	h := newHarness(t, Options{ChunkSize: 4096, BufferBytes: 1})
	const workers = 8
	var errs errCollector
	var wg sync.WaitGroup
	want := map[string][]byte{}
	var wantMu sync.Mutex
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := h.mkdirSafe(&errs, RootIno, fmt.Sprint("d", g%3), g)
			for i := range 8 {
				name := fmt.Sprintf("g%d-%d", g, i)
				a, err := h.f.Create(user, dir, name, NewNode{Mode: 0o644})
				if err != nil {
					errs.add("create: %v", err)
					return
				}
				data := pattern(uint64(g*100+i), 1+(g*7919+i*104729)%(5*4096))
				if _, err := h.f.Write(bg, a.Ino, 0, data, false); err != nil {
					errs.add("write: %v", err)
					return
				}
				if i%3 == 0 {
					h.f.Fsync(bg, a.Ino)
				}
				wantMu.Lock()
				want[fmt.Sprint("d", g%3, "/", name)] = data
				wantMu.Unlock()
			}
		}()
	}
	wg.Wait()
	errs.report(t)
	check := func(stage string) {
		for path, data := range want {
			d, name := path[:2], path[3:]
			a := h.lookup(h.lookup(RootIno, d).Ino, name)
			if got := h.readAll(a.Ino); !bytes.Equal(got, data) {
				t.Errorf("%s: %s differs at %d", stage, path, firstDiff(got, data))
			}
		}
	}
	check("written")
	h.reopen()
	check("reopened")
	h.closeFS()
}

// mkdirSafe makes a directory that several goroutines may race to make.
func (h *harness) mkdirSafe(errs *errCollector, parent Ino, name string, g int) Ino {
	a, err := h.f.Create(user, parent, name, NewNode{Mode: syscall.S_IFDIR | 0o755})
	if errors.Is(err, syscall.EEXIST) {
		a, err = h.f.Lookup(user, parent, name)
	}
	if err != nil {
		errs.add("g%d: mkdir %s: %v", g, name, err)
	}
	return a.Ino
}

func TestDeletedInodeStaysDeadDuringCommit(t *testing.T) {
	// Between the snapshot that deletes an inode and the end of its commit
	// the store still holds the inode: nothing may bring it back.
	ops := map[string]func(h *harness, ino Ino) error{
		"GetAttr": func(h *harness, ino Ino) error { _, err := h.f.GetAttr(ino); return err },
		"Write":   func(h *harness, ino Ino) error { _, err := h.f.Write(bg, ino, 0, []byte("ghost"), false); return err },
		"SetAttr": func(h *harness, ino Ino) error {
			m := uint32(0o600)
			_, err := h.f.SetAttr(user, ino, SetAttrIn{Mode: &m})
			return err
		},
		"SetXattr": func(h *harness, ino Ino) error { return h.f.SetXattr(ino, "user.x", []byte("v"), 0) },
		"Link": func(h *harness, ino Ino) error {
			_, err := h.f.Link(user, ino, RootIno, "again")
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			h := small(t)
			for range 20 {
				a := h.file(RootIno, "f")
				h.write(a.Ino, 0, []byte("data"))
				h.sync()
				if err := h.f.Unlink(RootIno, "f"); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				stop := make(chan struct{})
				var ghost error
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := op(h, a.Ino); !errors.Is(err, syscall.ENOENT) {
							ghost = fmt.Errorf("%s on an unlinked inode: %v, want ENOENT", name, err)
							return
						}
					}
				}()
				h.sync()
				close(stop)
				wg.Wait()
				if ghost != nil {
					t.Fatal(ghost)
				}
			}
			h.closeFS()
		})
	}
}

func TestConcurrentTruncateAndWrite(t *testing.T) {
	// A write racing a truncation must end up entirely before or entirely
	// after it: old data never resurfaces when the file grows again.
	h := small(t)
	cs := 4096
	a := h.file(RootIno, "f")
	const cut = 4096 + 2048
	writes := []struct {
		name string
		off  int
		n    int
	}{
		{"past the cut", 3*cs + 100, 50},
		{"in the tail chunk", cs + 3000, 50},
		// Not tested: a write spanning chunks may be split by a racing
		// truncation (it waits between chunks with mu released); through
		// FUSE the kernel's inode lock serializes the two.
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			for round := range 60 {
				zero := uint64(0)
				h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &zero})
				h.write(a.Ino, 0, pattern(uint64(round), 4*cs))
				h.sync() // the write must load its chunk from the store
				data := pattern(uint64(1000+round), w.n)
				var wg sync.WaitGroup
				wg.Add(2)
				go func() {
					defer wg.Done()
					h.f.Write(bg, a.Ino, int64(w.off), data, false)
				}()
				go func() {
					defer wg.Done()
					sz := uint64(cut)
					h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &sz})
				}()
				wg.Wait()
				size := h.attr(a.Ino).Size
				got := h.readAll(a.Ino)
				// Either order is fine; nothing else is.
				orig := pattern(uint64(round), 4*cs)
				var writeFirst, truncFirst model
				writeFirst.write(0, orig)
				writeFirst.write(int64(w.off), data)
				writeFirst.truncate(cut)
				truncFirst.write(0, orig[:cut])
				truncFirst.write(int64(w.off), data)
				if !bytes.Equal(got, writeFirst) && !bytes.Equal(got, truncFirst) {
					t.Fatalf("round %d: size %d: content is neither order (differs from write-first at %d, from truncate-first at %d)",
						round, size, firstDiff(got, writeFirst), firstDiff(got, truncFirst))
				}
				// Growing again shows zeros past the end, never old data.
				big := uint64(5 * cs)
				h.f.SetAttr(user, a.Ino, SetAttrIn{Size: &big})
				grown := h.readAll(a.Ino)
				if !bytes.Equal(grown[:len(got)], got) || bytes.IndexFunc(grown[len(got):], func(r rune) bool { return r != 0 }) >= 0 {
					t.Fatalf("round %d: growing the file brought back old data", round)
				}
			}
		})
	}
	h.closeFS()
}

// Appends racing each other and commits: every line lands once, whole,
// in each writer's order. An append that waited with mu released (for
// a slot, or to read a committed chunk's bytes) used to go on at the end
// it saw before the wait, over what another append wrote meanwhile.
func TestConcurrentAppends(t *testing.T) {
	h := small(t)
	a := h.file(RootIno, "log")
	const workers, lines = 8, 400
	var errs errCollector
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var syncer sync.WaitGroup
	syncer.Add(1)
	go func() { // commits, so that appends land in committed chunks
		defer syncer.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.f.Fsync(bg, a.Ino); err != nil {
				errs.add("fsync: %v", err)
				return
			}
		}
	}()
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				line := []byte(fmt.Sprintf("g%d %d %s\n", g, i, bytes.Repeat([]byte{'x'}, 1+(g*7+i)%50)))
				n, err := h.f.Write(bg, a.Ino, 0, line, true)
				if err != nil || n != len(line) {
					errs.add("g%d: append: %d %v", g, n, err)
					return
				}
				if i%16 == g {
					// Commit, so that the next appends land in a
					// committed chunk and read its bytes first.
					if err := h.f.Fsync(bg, a.Ino); err != nil {
						errs.add("g%d: fsync: %v", g, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	syncer.Wait()
	errs.report(t)
	attr, err := h.f.GetAttr(a.Ino)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, attr.Size)
	if n, err := h.f.Read(bg, a.Ino, 0, buf); err != nil || n != len(buf) {
		t.Fatalf("read: %d %v", n, err)
	}
	next := make([]int, workers)
	for _, l := range bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) {
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(string(l), "g%d %d %s", &g, &i, &pad); err != nil || strings.Trim(pad, "x") != "" || len(pad) != 1+(g*7+i)%50 {
			t.Fatalf("torn line %q", l)
		}
		if g < 0 || g >= workers || i != next[g] {
			t.Fatalf("line %q out of order (want g%d's line %d)", l, g, next[g])
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines in the file, %d appended", g, n, lines)
		}
	}
}
