package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// The fault-injection test (issue 14): a small store with every kind of
// record, and for a deterministic sample of byte positions across the
// whole file, the byte flipped on a copy, which is then opened, read
// whole (every file, link and attribute, compared with what was written)
// and checked. A case fails if a read returns other data without an
// error, or if the process dies (a fault, a panic, a stack overflow) or
// hangs. The cases run in a child process of the test binary, which the
// parent restarts after the case that killed it.

const faultWorkerEnv = "COMPUTERFS_FAULT_WORKER"

// faultEntry is one expected object of the fault store.
type faultEntry struct {
	path   string
	typ    uint32
	data   []byte // regular files
	target string // symlinks
	xattrs map[string]string
}

func faultTree() []faultEntry {
	big := make([]byte, 5*4096+123) // 6 chunks of 4 KiB
	for i := range big {
		big[i] = byte(i*7 + i/4096)
	}
	return []faultEntry{
		{path: "/a", typ: syscall.S_IFDIR},
		{path: "/a/b", typ: syscall.S_IFDIR, xattrs: map[string]string{"user.dir": "d"}},
		{path: "/empty", typ: syscall.S_IFREG, data: []byte{}},
		{path: "/small", typ: syscall.S_IFREG, data: []byte("fifty-four bytes of small file content, for the test\n")},
		{path: "/a/text", typ: syscall.S_IFREG, data: []byte(strings.Repeat("compressible line of text\n", 400)), xattrs: map[string]string{"user.a": "1", "user.long": strings.Repeat("x", 300)}},
		{path: "/a/b/big", typ: syscall.S_IFREG, data: big},
		{path: "/sparse", typ: syscall.S_IFREG, data: append(make([]byte, 3*4096), []byte("tail after a hole")...)},
		{path: "/link", typ: syscall.S_IFLNK, target: "a/b/big"},
		{path: "/a/hard", typ: syscall.S_IFREG, data: big}, // a hard link of /a/b/big
	}
}

// buildFaultStore writes faultTree into a new store at path.
func buildFaultStore(t *testing.T, path string) {
	t.Helper()
	f, err := Open(path, Options{ChunkSize: 4096, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := Caller{}
	inos := map[string]Ino{"/": RootIno}
	for _, e := range faultTree() {
		dir, name := filepath.Split(e.path)
		parent := inos[filepath.Clean(dir)]
		if e.path == "/a/hard" {
			a, err := f.Link(c, inos["/a/b/big"], parent, name)
			if err != nil {
				t.Fatal(err)
			}
			inos[e.path] = a.Ino
			continue
		}
		nn := NewNode{Mode: e.typ | 0o644, Target: e.target}
		if e.typ == syscall.S_IFDIR {
			nn.Mode = e.typ | 0o755
		}
		a, err := f.Create(c, parent, name, nn)
		if err != nil {
			t.Fatalf("create %s: %v", e.path, err)
		}
		inos[e.path] = a.Ino
		if e.typ == syscall.S_IFREG && len(e.data) > 0 {
			if e.path == "/sparse" {
				_, err = f.Write(context.Background(), a.Ino, 3*4096, e.data[3*4096:], false)
			} else {
				_, err = f.Write(context.Background(), a.Ino, 0, e.data, false)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for k, v := range e.xattrs {
			if err := f.SetXattr(a.Ino, k, []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		}
		if e.typ == syscall.S_IFREG || e.typ == syscall.S_IFLNK {
			f.Release(a.Ino)
		}
	}
	// Renames and removals leave journal records of every kind.
	g, err := f.Create(c, RootIno, "gone", NewNode{Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	f.Release(g.Ino)
	if err := f.Rename(RootIno, "gone", inos["/a"], "gone2", 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Unlink(inos["/a"], "gone2"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// faultOutcome classifies one flipped byte.
type faultOutcome string

const (
	outUnaffected faultOutcome = "unaffected"     // everything read back as written, fsck clean
	outOpen       faultOutcome = "detected-open"  // refused at open, with an error
	outRead       faultOutcome = "detected-read"  // a read, listing or attribute failed with an error
	outFsck       faultOutcome = "detected-fsck"  // reads fine, fsck reports it
	outSilent     faultOutcome = "SILENT-WRONG"   // a read returned other data without an error
	outCrash      faultOutcome = "CRASH"          // the process died
	outHang       faultOutcome = "HANG"           // no answer in time
	outFsckErr    faultOutcome = "detected-fsck!" // fsck failed with an error (also detected)
)

// runFaultCase opens a damaged copy and reads it whole.
func runFaultCase(path string) (faultOutcome, string) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f, err := Open(path, Options{Logger: log})
	if err != nil {
		return outOpen, err.Error()
	}
	silent, readErr := readFaultTree(f)
	f.Close()
	if silent != "" {
		return outSilent, silent
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: log, ReadOnly: true})
	if err != nil {
		if readErr != "" {
			return outRead, readErr
		}
		return outOpen, "fsck open: " + err.Error()
	}
	defer st.Close()
	rep, err := Check(st, false)
	switch {
	case readErr != "":
		return outRead, readErr
	case err != nil:
		return outFsckErr, err.Error()
	case !rep.Clean():
		return outFsck, rep.Problems[0]
	}
	return outUnaffected, ""
}

// readFaultTree reads every expected object. silent names a difference
// that came without an error; readErr the first error.
func readFaultTree(f *FS) (silent, readErr string) {
	fail := func(what string, err error) {
		if readErr == "" {
			readErr = what + ": " + err.Error()
		}
	}
	for _, e := range faultTree() {
		ino := RootIno
		var a Attr
		var err error
		for _, part := range strings.Split(strings.TrimPrefix(e.path, "/"), "/") {
			a, err = f.Lookup(Caller{}, ino, part)
			if err != nil {
				break
			}
			ino = a.Ino
		}
		if err != nil {
			fail("lookup "+e.path, err)
			continue
		}
		if a.Mode&syscall.S_IFMT != e.typ {
			return fmt.Sprintf("%s: type %#o, want %#o", e.path, a.Mode&syscall.S_IFMT, e.typ), readErr
		}
		switch e.typ {
		case syscall.S_IFREG:
			if a.Size != uint64(len(e.data)) {
				return fmt.Sprintf("%s: size %d, want %d", e.path, a.Size, len(e.data)), readErr
			}
			if _, err := f.Open(ino); err != nil {
				fail("open "+e.path, err)
				continue
			}
			buf := make([]byte, len(e.data)+100)
			n, err := f.Read(context.Background(), ino, 0, buf)
			f.Release(ino)
			if err != nil {
				fail("read "+e.path, err)
				continue
			}
			if !bytes.Equal(buf[:n], e.data) {
				return fmt.Sprintf("%s: content differs (%d bytes read)", e.path, n), readErr
			}
		case syscall.S_IFLNK:
			got, err := f.Readlink(ino)
			if err != nil {
				fail("readlink "+e.path, err)
				continue
			}
			if got != e.target {
				return fmt.Sprintf("%s: target %q, want %q", e.path, got, e.target), readErr
			}
		case syscall.S_IFDIR:
			if _, err := f.ReadDir(ino); err != nil {
				fail("readdir "+e.path, err)
			}
		}
		for k, v := range e.xattrs {
			got, err := f.GetXattr(ino, k)
			if err != nil {
				fail("getxattr "+e.path, err)
				continue
			}
			if string(got) != v {
				return fmt.Sprintf("%s: xattr %s = %q, want %q", e.path, k, got, v), readErr
			}
		}
	}
	list, err := f.ReadDir(RootIno)
	if err != nil {
		fail("readdir /", err)
	} else {
		var names []string
		for _, d := range list {
			names = append(names, d.Name)
		}
		sort.Strings(names)
		if got := strings.Join(names, " "); got != ". .. a empty link small sparse" {
			return "/ lists " + got, readErr
		}
	}
	return "", readErr
}

// TestFaultWorker is the child: it runs the cases named on its stdin,
// one position per line, and prints "start POS" then "POS OUTCOME DETAIL".
func TestFaultWorker(t *testing.T) {
	pristine := os.Getenv(faultWorkerEnv)
	if pristine == "" {
		t.Skip("the fault-injection test's child process")
	}
	orig, err := os.ReadFile(pristine)
	if err != nil {
		t.Fatal(err)
	}
	// In memory where there is a tmpfs: each case opens and commits, and
	// fsyncs on a disk would be most of the test's time.
	dir, err := os.MkdirTemp("/dev/shm", "cfs-fault-")
	if err != nil {
		dir = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	out := bufio.NewWriter(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		pos, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "start %d\n", pos)
		out.Flush()
		data := bytes.Clone(orig)
		data[pos] ^= 0xff
		path := filepath.Join(dir, "case.cfs")
		os.Remove(path)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		o, detail := runFaultCase(path)
		fmt.Fprintf(out, "%d %s %s\n", pos, o, strings.ReplaceAll(detail, "\n", " "))
		out.Flush()
	}
}

// faultPositions is a deterministic sample of n positions in [0, size):
// one in each of n equal strata, at a pseudo-random offset within it.
func faultPositions(size, n int) []int {
	if n > size {
		n = size
	}
	out := make([]int, 0, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range n {
		lo, hi := i*size/n, (i+1)*size/n
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out = append(out, lo+int(x%uint64(max(hi-lo, 1))))
	}
	return out
}

// faultEnv sets how many flips TestFaultInjection makes (2,000 by
// default, 300 under -short).
const faultEnv = "COMPUTERFS_FAULT_TEST"

func TestFaultInjection(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	v, err := strconv.Atoi(os.Getenv(faultEnv))
	if err == nil && v > 1 {
		n = v
	} else if raceEnabled {
		// Thousands of child processes under the race detector take
		// over ten minutes: make test runs this test again without it.
		t.Skipf("under -race; make test runs it without (or set %s=N)", faultEnv)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "pristine.cfs")
	buildFaultStore(t, path)
	// The flips go where bbolt has pages in use: below its high-water
	// mark (the rest of the file is preallocated and never read).
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var used int
	st.DB().View(func(tx *bolt.Tx) error { used = int(tx.Size()); return nil })
	st.Close()
	if o, d := runFaultCase(copyFile(t, path)); o != outUnaffected {
		t.Fatalf("the undamaged store: %s %s", o, d)
	}
	positions := faultPositions(used, n)
	counts := map[faultOutcome]int{}
	var bad []string
	// Two children at a time, each on every other position.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 2 {
		var mine []int
		for i := w; i < len(positions); i += 2 {
			mine = append(mine, positions[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := map[faultOutcome]int{}
			var b []string
			for len(mine) > 0 {
				done := runFaultWorker(t, path, mine, c, &b)
				mine = mine[done:]
			}
			mu.Lock()
			defer mu.Unlock()
			for o, k := range c {
				counts[o] += k
			}
			bad = append(bad, b...)
		}()
	}
	wg.Wait()
	sort.Strings(bad)
	var keys []string
	for o, c := range counts {
		keys = append(keys, fmt.Sprintf("%s %d", o, c))
	}
	sort.Strings(keys)
	t.Logf("%d flips over the %d bytes in use of the store (%d pages of 4 KiB): %s", n, used, used/4096, strings.Join(keys, ", "))
	for _, b := range bad {
		t.Error(b)
	}
}

// runFaultWorker runs positions in one child until it ends or dies, and
// returns how many it settled.
func runFaultWorker(t *testing.T, pristine string, positions []int, counts map[faultOutcome]int, bad *[]string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultWorker$", "-test.v=false")
	cmd.Env = append(os.Environ(), faultWorkerEnv+"="+pristine)
	var in bytes.Buffer
	for _, p := range positions {
		fmt.Fprintln(&in, p)
	}
	cmd.Stdin = &in
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Error(err) // not Fatal: this runs on a goroutine of the test's
		return len(positions)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return len(positions)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	settled, current := 0, -1
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if current >= 0 {
					counts[outCrash]++
					tail := stderr.String()
					if len(tail) > 2000 {
						tail = tail[:2000]
					}
					*bad = append(*bad, fmt.Sprintf("byte %d: %s (%v):\n%s", current, outCrash, err, tail))
					return settled + 1
				}
				return len(positions)
			}
			timer.Reset(30 * time.Second)
			if p, ok := strings.CutPrefix(line, "start "); ok {
				current, _ = strconv.Atoi(p)
				continue
			}
			f := strings.SplitN(line, " ", 3)
			if len(f) < 2 {
				continue // the test framework's own lines
			}
			if _, err := strconv.Atoi(f[0]); err != nil {
				continue
			}
			o := faultOutcome(f[1])
			counts[o]++
			if o == outSilent {
				*bad = append(*bad, fmt.Sprintf("byte %s: %s: %s", f[0], o, f[2]))
			}
			current = -1
			settled++
		case <-timer.C:
			cmd.Process.Kill()
			cmd.Wait()
			counts[outHang]++
			*bad = append(*bad, fmt.Sprintf("byte %d: %s", current, outHang))
			return settled + 1
		}
	}
}

func copyFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "copy.cfs")
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
