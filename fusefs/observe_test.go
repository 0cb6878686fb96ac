package fusefs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// countingObserver counts requests, errors and bytes by op.
type countingObserver struct {
	mu     sync.Mutex
	count  [fusefs.NumOps]int
	errs   map[fusefs.Op][]syscall.Errno
	bytes  [fusefs.NumOps]int
	maxDur time.Duration
}

func (c *countingObserver) Request(op fusefs.Op, took time.Duration, errno syscall.Errno, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count[op]++
	c.bytes[op] += n
	if errno != 0 {
		if c.errs == nil {
			c.errs = map[fusefs.Op][]syscall.Errno{}
		}
		c.errs[op] = append(c.errs[op], errno)
	}
	c.maxDur = max(c.maxDur, took)
}

func (c *countingObserver) snapshot() (count, bytes [fusefs.NumOps]int, errs map[fusefs.Op][]syscall.Errno) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := map[fusefs.Op][]syscall.Errno{}
	for k, v := range c.errs {
		e[k] = append([]syscall.Errno(nil), v...)
	}
	return c.count, c.bytes, e
}

// TestObserver checks that the observer sees the requests a few system
// calls make, with their errors and the bytes read and written.
func TestObserver(t *testing.T) {
	obs := &countingObserver{}
	m := testmount.New(t, testmount.Options{Fuse: fusefs.Options{Observer: obs}})
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i)
	}
	p := filepath.Join(m.Dir, "f")
	writeFile(t, p, data)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := unix.Setxattr(p, "user.x", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	// Drop the kernel's pages so that the read reaches the daemon.
	m.Server.Invalidate(0, "", fs.Ino(pathIno(t, p)))
	checkFile(t, p, data)
	if err := os.Mkdir(filepath.Join(m.Dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(m.Dir, "d", "x"), nil)
	wantErrno(t, "rmdir of a full directory", unix.Rmdir(filepath.Join(m.Dir, "d")), unix.ENOTEMPTY)

	count, bytes, errs := obs.snapshot()
	for _, op := range []fusefs.Op{fusefs.OpCreate, fusefs.OpWrite, fusefs.OpRead, fusefs.OpFsync, fusefs.OpSetXAttr, fusefs.OpMkdir, fusefs.OpRmdir, fusefs.OpLookup} {
		if count[op] == 0 {
			t.Errorf("no %s request observed (counts %v)", op, count)
		}
	}
	if bytes[fusefs.OpWrite] != len(data) {
		t.Errorf("observed %d bytes written, want %d", bytes[fusefs.OpWrite], len(data))
	}
	if bytes[fusefs.OpRead] < len(data) {
		t.Errorf("observed %d bytes read, want at least %d", bytes[fusefs.OpRead], len(data))
	}
	if got := errs[fusefs.OpRmdir]; len(got) != 1 || got[0] != syscall.ENOTEMPTY {
		t.Errorf("rmdir errors observed: %v, want [ENOTEMPTY]", got)
	}
	if len(errs[fusefs.OpCreate]) != 0 || len(errs[fusefs.OpWrite]) != 0 {
		t.Errorf("errors observed on create or write: %v", errs)
	}
	for op := fusefs.Op(0); op < fusefs.NumOps; op++ {
		if s := op.String(); s == "" || s == "unknown" {
			t.Errorf("op %d has no name", op)
		}
	}
}

// nopObserver costs what an interface call does.
type nopObserver struct{}

func (nopObserver) Request(fusefs.Op, time.Duration, syscall.Errno, int) {}

// BenchmarkObserverMetadata times a metadata round trip (create, write,
// fsync-free close, stat of a fresh name, unlink) with and without an
// observer; internal/metrics benchmarks the daemon's real one.
func BenchmarkObserverMetadata(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  fusefs.Observer
	}{{"none", nil}, {"nop", nopObserver{}}} {
		b.Run(c.name, func(b *testing.B) {
			m := testmount.New(b, testmount.Options{Fuse: fusefs.Options{Observer: c.obs}})
			BenchMetadata(b, m.Dir)
		})
	}
}

// BenchMetadata runs b.N metadata round trips in dir: each creates a
// file, writes a byte, closes it, stats it and removes it (CREATE, WRITE,
// RELEASE, GETATTR, UNLINK and a LOOKUP or two).
func BenchMetadata(b *testing.B, dir string) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		unix.Write(fd, []byte{1})
		unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			b.Fatal(err)
		}
		if err := unix.Unlink(p); err != nil {
			b.Fatal(err)
		}
	}
}
