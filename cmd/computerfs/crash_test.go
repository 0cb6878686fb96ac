package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestCrashKill9 kills the daemon with SIGKILL in the middle of a busy
// workload, round after round, and checks that the store is always clean
// and that every file whose fsync returned survives byte for byte.
//
// CFS_CRASH_ROUNDS and CFS_CRASH_SEED override the number of rounds and the
// random seed (logged, so a failing run can be repeated).
func TestCrashKill9(t *testing.T) {
	needFUSE(t)
	rounds := 24
	if testing.Short() {
		rounds = 5
	}
	if s := os.Getenv("CFS_CRASH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CFS_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (CFS_CRASH_SEED), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 0))

	home, ws, mnt := tempWorkspace(t)
	man := &manifest{m: make(map[string]entry)}
	pool := newPool(seed)
	start := time.Now()
	var totalVerified, totalSynced int
	for round := 0; round < rounds; round++ {
		p := startMount(t, home, ws, mnt)
		nv, bv := man.verify(t, mnt)
		totalVerified += nv

		var stop atomic.Bool
		var wg sync.WaitGroup
		var st opStats
		const writers = 4
		for w := range writers {
			wr := &writer{
				id: w, round: round, dir: filepath.Join(mnt, fmt.Sprintf("w%d", w)),
				rng: rand.New(rand.NewPCG(seed, uint64(round*writers+w+1))), man: man,
				stop: &stop, st: &st, pool: pool,
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				wr.run()
			}()
		}
		delay := time.Duration(100+rng.IntN(700)) * time.Millisecond
		time.Sleep(delay)
		if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil {
			t.Fatalf("kill: %v", err)
		}
		if code := p.wait(t, 20*time.Second); code != 128+int(syscall.SIGKILL) {
			t.Errorf("round %d: daemon exit %d, want death by SIGKILL\n%s", round, code, p.output())
		}
		// The dead daemon's connection is aborted: every operation on the
		// mount fails at once, so the writers notice and stop.
		stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: writers still running 60s after the kill", round)
		}
		for _, v := range st.violations {
			t.Errorf("round %d: %s", round, v)
		}
		if ops := st.ops.Load(); ops == 0 {
			t.Errorf("round %d: the writers did nothing", round)
		}
		detach(t, mnt)
		if isMounted(mnt) {
			t.Fatalf("round %d: %s still mounted after detaching", round, mnt)
		}
		r := cli(t, home, "fsck", ws)
		if r.code != 0 || !strings.Contains(r.stdout, "\nclean\n") {
			t.Fatalf("round %d (seed %d): fsck after kill -9 not clean: %v", round, seed, r)
		}
		totalSynced += int(st.synced.Load())
		t.Logf("round %2d: verified %4d files (%5.1f MiB); killed after %3dms: %3d ops, %3d fsynced+recorded, %2d rewritten, %2d deleted, %4d errors; manifest %4d files %5.1f MiB; %s",
			round, nv, float64(bv)/(1<<20), delay.Milliseconds(), st.ops.Load(), st.synced.Load(), st.rewritten.Load(), st.deleted.Load(), st.errors.Load(),
			man.len(), float64(man.size())/(1<<20), strings.SplitN(r.stdout, "\n", 2)[0])
		if t.Failed() {
			t.FailNow()
		}
	}

	// A last clean mount: everything recorded is there, and a clean
	// unmount leaves a clean store.
	p := startMount(t, home, ws, mnt)
	nv, bv := man.verify(t, mnt)
	totalVerified += nv
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("final unmount: exit %d\n%s", code, p.output())
	}
	if isMounted(mnt) {
		t.Fatalf("%s still mounted", mnt)
	}
	r := fsckClean(t, home, ws)
	t.Logf("final: verified %d files (%.1f MiB); %d rounds, %d files fsynced in all, %d file verifications, %v; %s",
		nv, float64(bv)/(1<<20), rounds, totalSynced, totalVerified, time.Since(start).Round(time.Millisecond), strings.SplitN(r.stdout, "\n", 2)[0])
}

// entry is what a file must hold after a crash: exactly size bytes hashing
// to sum, or, for a file being appended to, at least size bytes whose first
// size bytes hash to sum.
type entry struct {
	size   int64
	sum    [sha256.Size]byte
	prefix bool
}

// manifest records files whose last change was fsynced. A writer records a
// file only after its fsync returned, and claims (removes) an entry before
// changing the file again.
type manifest struct {
	mu    sync.Mutex
	m     map[string]entry // path relative to the mountpoint
	bytes int64
}

func (m *manifest) put(path string, e entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bytes += e.size - m.m[path].size
	m.m[path] = e
}

// claim removes and returns a random entry of a whole (not append) file.
func (m *manifest) claim(rng *rand.Rand) (string, entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) == 0 {
		return "", entry{}, false
	}
	skip := rng.IntN(len(m.m))
	for path, e := range m.m {
		if skip > 0 || e.prefix {
			skip--
			continue
		}
		delete(m.m, path)
		m.bytes -= e.size
		return path, e, true
	}
	return "", entry{}, false
}

func (m *manifest) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

func (m *manifest) size() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// verify checks every recorded file under mnt.
func (m *manifest) verify(t *testing.T, mnt string) (files int, total int64) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var bad []string
	for path, e := range m.m {
		if err := e.check(filepath.Join(mnt, path)); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		files++
		total += e.size
	}
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Fatalf("%d of %d fsynced files lost or wrong:\n%s", len(bad), len(m.m), strings.Join(bad, "\n"))
	}
	return files, total
}

func (e entry) check(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < e.size || (!e.prefix && st.Size() != e.size) {
		return fmt.Errorf("size %d, want %d (append-only: %v)", st.Size(), e.size, e.prefix)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, e.size); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, e.sum[:]) {
		return fmt.Errorf("sha256 of the first %d bytes is %x, want %x", e.size, got, e.sum)
	}
	return nil
}

type opStats struct {
	ops, synced, rewritten, deleted, errors atomic.Int64

	mu         sync.Mutex
	violations []string
}

func (s *opStats) violation(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, msg)
}

// writer is one goroutine of the crash workload. Its files live in dir.
type writer struct {
	id, round int
	dir       string
	rng       *rand.Rand
	man       *manifest
	stop      *atomic.Bool
	st        *opStats
	pool      *pool
	seq       int
}

// pool is data to build file contents from quickly: slices of a large
// random buffer at random offsets are all different chunks; the text
// compresses; the shared chunk deduplicates across files and crashes.
type pool struct {
	random, text, shared []byte
}

func newPool(seed uint64) *pool {
	return &pool{random: randomData(24<<20, seed), text: textData(8 << 20), shared: randomData(1<<20, seed+1)}
}

func (w *writer) randomPiece(n int) []byte {
	off := w.rng.IntN(len(w.pool.random) - n + 1)
	return w.pool.random[off : off+n]
}

func (w *writer) textPiece(n int) []byte {
	off := w.rng.IntN(len(w.pool.text) - n + 1)
	return w.pool.text[off : off+n]
}

const maxManifest = 160 << 20 // keep the store, and each verification, small

func (w *writer) run() {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return // the mount is gone already
	}
	for !w.stop.Load() {
		w.st.ops.Add(1)
		var err error
		switch n := w.rng.IntN(100); {
		case w.man.size() > maxManifest && n < 50:
			err = w.remove()
		case n < 35:
			err = w.syncedNew()
		case n < 45:
			err = w.syncedRename()
		case n < 53:
			err = w.appender()
		case n < 58:
			err = w.rewrite()
		case n < 60:
			err = w.remove()
		default:
			err = w.churn()
		}
		if err != nil {
			if w.st.errors.Add(1) <= 5 && os.Getenv("CFS_CRASH_DEBUG") != "" {
				fmt.Fprintf(os.Stderr, "writer %d: %v (stopped %v)\n", w.id, err, w.stop.Load())
			}
		}
	}
}

func (w *writer) name(kind string) string {
	w.seq++
	return fmt.Sprintf("w%d/%s-r%02d-%04d", w.id, kind, w.round, w.seq)
}

func (w *writer) abs(rel string) string { return filepath.Join(filepath.Dir(w.dir), rel) }

// content makes the data of a new file: small, large, compressible,
// random or sharing whole chunks with other files.
func (w *writer) content() []byte {
	var n int
	switch w.rng.IntN(4) {
	case 0:
		n = w.rng.IntN(64 << 10)
	case 1:
		n = w.rng.IntN(1<<20 + 100)
	default:
		n = 1<<20 + w.rng.IntN(7<<20)
	}
	b := make([]byte, n)
	for off := 0; off < n; {
		piece := min(n-off, 1<<20-off%(1<<20))
		switch w.rng.IntN(4) {
		case 0:
			copy(b[off:off+piece], w.textPiece(piece))
		case 1:
			if piece == 1<<20 {
				copy(b[off:], w.pool.shared) // a whole chunk many files share
				break
			}
			fallthrough
		default:
			copy(b[off:off+piece], w.randomPiece(piece))
		}
		off += piece
	}
	return b
}

// writeOut writes data to f in pieces of random size, or sparsely: only
// the non-zero 64 KiB blocks, after setting the size.
func (w *writer) writeOut(f *os.File, data []byte) error {
	if w.rng.IntN(4) == 0 {
		if err := f.Truncate(int64(len(data))); err != nil {
			return err
		}
		for off := 0; off < len(data); off += 64 << 10 {
			blk := data[off:min(off+64<<10, len(data))]
			if allZero(blk) {
				continue
			}
			if _, err := f.WriteAt(blk, int64(off)); err != nil {
				return err
			}
		}
		return nil
	}
	return w.writeSeq(f, data)
}

// writeSeq writes data at the file offset in pieces of random size.
func (w *writer) writeSeq(f *os.File, data []byte) error {
	for off := 0; off < len(data); {
		if w.stop.Load() {
			return errors.New("stopped")
		}
		n := min(len(data)-off, 1+w.rng.IntN(1<<20))
		if _, err := f.Write(data[off : off+n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// sparsify punches zero runs into data (so that sparse writes skip them).
func (w *writer) sparsify(data []byte) {
	if len(data) < 256<<10 || w.rng.IntN(3) != 0 {
		return
	}
	for range 1 + w.rng.IntN(3) {
		off := w.rng.IntN(len(data))
		clear(data[off:min(len(data), off+w.rng.IntN(2<<20))])
	}
}

// syncedNew writes a new file, fsyncs it and records it.
func (w *writer) syncedNew() error {
	rel := w.name("s")
	data := w.content()
	w.sparsify(data)
	f, err := os.OpenFile(w.abs(rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := w.writeOut(f, data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	w.man.put(rel, entry{size: int64(len(data)), sum: sha256.Sum256(data)})
	w.st.synced.Add(1)
	return nil
}

// syncedRename writes a temporary file, fsyncs it, renames it into place
// and fsyncs the directory: the atomic-replace idiom.
func (w *writer) syncedRename() error {
	rel := w.name("m")
	tmp := w.abs(rel) + ".tmp"
	data := w.content()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := w.writeOut(f, data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, w.abs(rel)); err != nil {
		return err
	}
	d, err := os.Open(w.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return err
	}
	w.man.put(rel, entry{size: int64(len(data)), sum: sha256.Sum256(data)})
	w.st.synced.Add(1)
	return nil
}

// appender grows a file with O_APPEND, fsyncing after each append; the
// manifest holds the synced prefix, which appends must never disturb.
func (w *writer) appender() error {
	rel := w.name("a")
	f, err := os.OpenFile(w.abs(rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	var size int64
	for range 1 + w.rng.IntN(5) {
		if w.stop.Load() {
			return nil
		}
		piece := w.randomPiece(1 + w.rng.IntN(1500<<10))
		if w.rng.IntN(2) == 0 {
			piece = w.textPiece(1 + w.rng.IntN(300<<10))
		}
		if err := w.writeSeq(f, piece); err != nil {
			return err
		}
		h.Write(piece)
		size += int64(len(piece))
		if w.rng.IntN(3) == 0 {
			continue // not every append is synced
		}
		if err := f.Sync(); err != nil {
			return err
		}
		var e entry
		e.size, e.prefix = size, true
		copy(e.sum[:], h.Sum(nil))
		w.man.put(rel, e)
		w.st.synced.Add(1)
	}
	return nil
}

// rewrite claims a recorded file, checks it, overwrites part of it in
// place (maybe growing or shrinking it), fsyncs and records it again.
func (w *writer) rewrite() error {
	rel, e, ok := w.man.claim(w.rng)
	if !ok {
		return nil
	}
	f, err := os.OpenFile(w.abs(rel), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	if int64(len(data)) != e.size || sha256.Sum256(data) != e.sum {
		// Nothing may change a recorded file but its claimant.
		w.st.violation(fmt.Sprintf("%s changed while recorded: %d bytes (sha256 %x), want %d (%x)", rel, len(data), sha256.Sum256(data), e.size, e.sum))
		return nil
	}
	switch w.rng.IntN(4) {
	case 0: // shrink
		n := w.rng.IntN(len(data) + 1)
		if err := f.Truncate(int64(n)); err != nil {
			return err
		}
		data = data[:n]
	case 1: // extend with a hole
		n := len(data) + w.rng.IntN(3<<20)
		if err := f.Truncate(int64(n)); err != nil {
			return err
		}
		data = append(data, make([]byte, n-len(data))...)
	}
	for range 1 + w.rng.IntN(4) {
		off := w.rng.IntN(len(data) + 1)
		piece := w.randomPiece(w.rng.IntN(1500 << 10))
		if _, err := f.WriteAt(piece, int64(off)); err != nil {
			return err
		}
		if end := off + len(piece); end > len(data) {
			data = append(data, make([]byte, end-len(data))...)
		}
		copy(data[off:], piece)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	w.man.put(rel, entry{size: int64(len(data)), sum: sha256.Sum256(data)})
	w.st.rewritten.Add(1)
	return nil
}

// remove claims a recorded file and deletes it.
func (w *writer) remove() error {
	rel, _, ok := w.man.claim(w.rng)
	if !ok {
		return nil
	}
	w.st.deleted.Add(1)
	return os.Remove(w.abs(rel))
}

// churn changes scratch files that are never fsynced nor recorded:
// overwrites, truncates, appends, renames, unlinks (also of open files),
// directories and symlinks.
func (w *writer) churn() error {
	scratch := func() string { return filepath.Join(w.dir, fmt.Sprintf("scratch%d", w.rng.IntN(6))) }
	switch w.rng.IntN(8) {
	case 0:
		return os.WriteFile(scratch(), w.content(), 0o644)
	case 1:
		f, err := os.OpenFile(scratch(), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteAt(w.randomPiece(w.rng.IntN(300<<10)), int64(w.rng.IntN(4<<20)))
		return err
	case 2:
		return os.Truncate(scratch(), int64(w.rng.IntN(3<<20)))
	case 3:
		f, err := os.OpenFile(scratch(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(w.textPiece(w.rng.IntN(200 << 10)))
		return err
	case 4:
		return os.Rename(scratch(), scratch())
	case 5:
		return os.Remove(scratch())
	case 6: // unlinked while open and still written: an orphan at the crash
		path := scratch() + ".orphan"
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := w.writeOut(f, w.content()); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		if err := w.writeOut(f, w.textPiece(w.rng.IntN(1<<20))); err != nil {
			return err
		}
		if w.rng.IntN(2) == 0 {
			return f.Sync()
		}
		return nil
	default:
		d := filepath.Join(w.dir, fmt.Sprintf("dir%d", w.rng.IntN(3)))
		if err := os.Mkdir(d, 0o755); err != nil {
			if err := os.Remove(filepath.Join(d, "link")); err != nil {
				return err
			}
			return os.Remove(d)
		}
		return os.Symlink("../scratch0", filepath.Join(d, "link"))
	}
}
