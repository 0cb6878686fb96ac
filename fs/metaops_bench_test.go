package fs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// metaWorkloads are BenchmarkMetaOps's workloads: setup (may be nil)
// returns what run needs.
var metaWorkloads = []struct {
	name  string
	setup func(m *metaOps) any
	run   func(m *metaOps, state any)
}{
	{"create-1000", func(m *metaOps) any { return m.mkdir(RootIno, "d") }, func(m *metaOps, s any) {
		for i := 0; i < 1000; i++ {
			m.newFile(s.(Ino), fmt.Sprintf("f%d", i), 2, 0)
		}
	}},
	{"rm-1000", func(m *metaOps) any {
		d := m.mkdir(RootIno, "d")
		for i := 0; i < 1000; i++ {
			m.newFile(d, fmt.Sprintf("f%d", i), 2, 0)
		}
		return d
	}, func(m *metaOps, s any) {
		d := s.(Ino)
		m.readDir(d)
		for i := 0; i < 1000; i++ {
			m.op(m.f.Unlink(d, fmt.Sprintf("f%d", i)))
		}
		m.op(m.f.Rmdir(RootIno, "d"))
		m.forgetAll()
	}},
	{"tree-create", nil, func(m *metaOps, _ any) {
		t := m.mkdir(RootIno, "t")
		var leaves []Ino
		for a := 0; a < 10; a++ {
			da := m.mkdir(t, fmt.Sprintf("d%d", a))
			for b := 0; b < 10; b++ {
				db := m.mkdir(da, fmt.Sprintf("d%d", b))
				for c := 0; c < 10; c++ {
					leaves = append(leaves, m.mkdir(db, fmt.Sprintf("d%d", c)))
				}
			}
		}
		for _, d := range leaves {
			m.newFile(d, "f", 2, 0)
		}
	}},
	{"tree-rm", func(m *metaOps) any {
		t := m.mkdir(RootIno, "t")
		for a := 0; a < 10; a++ {
			da := m.mkdir(t, fmt.Sprintf("d%d", a))
			for b := 0; b < 10; b++ {
				db := m.mkdir(da, fmt.Sprintf("d%d", b))
				for c := 0; c < 10; c++ {
					m.newFile(m.mkdir(db, fmt.Sprintf("d%d", c)), "f", 2, 0)
				}
			}
		}
		return t
	}, func(m *metaOps, s any) {
		m.rmTree(RootIno, "t", s.(Ino))
		m.forgetAll()
	}},
	{"git-commit-100", func(m *metaOps) any {
		repo := m.mkdir(RootIno, "repo")
		for i := 0; i < 100; i++ {
			m.newFile(repo, fmt.Sprintf("file%03d.txt", i), 2000, 0)
		}
		return repo
	}, func(m *metaOps, s any) {
		// What git 2.39 asks of the mount (strace -c: a temporary
		// object written, linked to its name and unlinked, per blob,
		// into a fan-out directory made on demand; then the index
		// and the ref through lock files renamed into place).
		repo := s.(Ino)
		g := m.mkdir(repo, ".git")
		objs := m.mkdir(g, "objects")
		fan := map[int]Ino{}
		for i := 0; i < 102; i++ {
			tmp := m.newFile(objs, fmt.Sprintf("tmp_obj_%06d", i), 900, 0)
			h := (i * 37) % 97
			d, ok := fan[h]
			if !ok {
				d = m.mkdir(objs, fmt.Sprintf("%02x", h))
				fan[h] = d
			}
			m.lookup(d, fmt.Sprintf("%038x", i))
			a, err := m.f.Link(kernel, tmp, d, fmt.Sprintf("%038x", i))
			m.op(err)
			m.held[a.Ino]++
			m.op(m.f.Unlink(objs, fmt.Sprintf("tmp_obj_%06d", i)))
		}
		for i := 0; i < 4; i++ {
			m.newFile(g, "index.lock", 9000, 0)
			m.op(m.f.Rename(g, "index.lock", g, "index", 0))
		}
		m.forgetAll()
	}},
	{"untar-src", nil, func(m *metaOps, _ any) {
		// 2,471 files of ~1.7 writes each in 165 directories, each
		// with its mode and times set after (tar's SETATTRs).
		top := m.mkdir(RootIno, "src")
		for d := 0; d < 165; d++ {
			dir := m.mkdir(top, fmt.Sprintf("pkg%03d", d))
			for i := 0; i < 15; i++ {
				ino := m.newFile(dir, fmt.Sprintf("file%02d.go", i), 6000+i*500, 0)
				m.getXattr(ino)
				mode, t := uint32(0o644), int64(1700000000e9)
				for _, in := range []SetAttrIn{{Atime: &t, Mtime: &t}, {Mode: &mode}, {Atime: &t, Mtime: &t}} {
					_, err := m.f.SetAttr(Caller{}, ino, in)
					m.op(err)
				}
			}
		}
	}},
}

// BenchmarkMetaOps runs the metadata workloads of `computerfs bench` as
// the FUSE mount serves them: the same fs calls, in the same order, as
// the requests the kernel sends for each (counted with the
// fuse:fuse_request_send tracepoint: create-1000 is LOOKUP, CREATE,
// GETXATTR and WRITE per file; rm-1000 is 1,000 UNLINKs after a
// READDIRPLUS; untar-src adds three SETATTRs per file; git-commit-100
// creates, links and unlinks objects), committing every 100 operations
// as the committer's 100 ms tick would. It reports the process's CPU
// time (user and system) of the timed part, so that two trees compare
// on a loaded machine; commits write and fsync as they do in the
// daemon. Like BenchmarkCommitCost it uses only API that release
// e3fc558 had, so the same file measures it:
//
//	go test -run '^$' -bench MetaOps -benchtime 10x ./fs
//
// CFS_COMMITCOST_PROFILE=DIR writes CPU profiles of the timed parts.
func BenchmarkMetaOps(b *testing.B) {
	for _, w := range metaWorkloads {
		b.Run(w.name, func(b *testing.B) {
			prof := ccProfile(b, "metaops-"+w.name)
			defer prof.done()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, err := Open(filepath.Join(b.TempDir(), "ws.cfs"), Options{CommitInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				m := &metaOps{b: b, f: f, held: map[Ino]uint64{}}
				var state any
				if w.setup != nil {
					state = w.setup(m)
				}
				m.sync()
				cpu0 := ccCPU()
				b.StartTimer()
				prof.start()
				w.run(m, state)
				m.sync()
				prof.stop()
				b.StopTimer()
				cpu += ccCPU() - cpu0
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

// kernel is the caller of the FUSE mount's requests: a LOOKUP, CREATE,
// MKDIR or LINK takes a reference that the kernel's FORGET drops, and
// until then the node stays in memory.
var kernel = Caller{Kernel: true}

// metaOps issues fs calls as the FUSE mount does for a workload's
// requests, and commits every 100 of them.
type metaOps struct {
	b    testing.TB
	f    *FS
	n    int
	held map[Ino]uint64 // lookup references the kernel would hold
	buf  []byte         // what files are written with
}

func (m *metaOps) op(err error) {
	if err != nil {
		m.b.Fatal(err)
	}
	if m.n++; m.n%100 == 0 {
		m.sync()
	}
}

func (m *metaOps) sync() {
	if err := m.f.Sync(context.Background()); err != nil {
		m.b.Fatal(err)
	}
}

// lookup is a LOOKUP of a name that is not there yet.
func (m *metaOps) lookup(dir Ino, name string) {
	if _, err := m.f.Lookup(kernel, dir, name); err != syscall.ENOENT {
		m.b.Fatalf("lookup %s: %v", name, err)
	}
	m.op(nil)
}

func (m *metaOps) getXattr(ino Ino) {
	if _, err := m.f.GetXattr(ino, "security.capability"); err != syscall.ENODATA {
		m.b.Fatalf("getxattr: %v", err)
	}
	m.op(nil)
}

func (m *metaOps) mkdir(dir Ino, name string) Ino {
	m.lookup(dir, name)
	a, err := m.f.Create(kernel, dir, name, NewNode{Mode: syscall.S_IFDIR | 0o755})
	m.op(err)
	m.held[a.Ino]++
	return a.Ino
}

// newFile is `echo x > name` (LOOKUP, CREATE, GETXATTR, WRITE) with a
// file of size bytes, written in pieces of at most 4 KiB from off.
func (m *metaOps) newFile(dir Ino, name string, size int, off int64) Ino {
	m.lookup(dir, name)
	a, err := m.f.Create(kernel, dir, name, NewNode{Mode: syscall.S_IFREG | 0o644})
	m.op(err)
	m.held[a.Ino]++
	m.getXattr(a.Ino)
	if m.buf == nil {
		m.buf = make([]byte, 4096)
		for i := range m.buf {
			m.buf[i] = byte('a' + i%26)
		}
	}
	buf := m.buf
	for size > 0 {
		n := min(size, len(buf))
		_, err := m.f.Write(context.Background(), a.Ino, off, buf[:n], false)
		m.op(err)
		off += int64(n)
		size -= n
	}
	return a.Ino
}

// readDir is a READDIRPLUS of dir: its entries looked up.
func (m *metaOps) readDir(dir Ino) []DirEntry {
	list, err := m.f.ReadDir(dir)
	m.op(err)
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		a, err := m.f.Lookup(kernel, dir, e.Name)
		if err != nil {
			m.b.Fatal(err)
		}
		m.held[a.Ino]++
	}
	return list
}

// rmTree is rm -rf of directory ino, name in parent.
func (m *metaOps) rmTree(parent Ino, name string, ino Ino) {
	for _, e := range m.readDir(ino) {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if e.Type == syscall.S_IFDIR {
			m.rmTree(ino, e.Name, e.Ino)
			continue
		}
		m.op(m.f.Unlink(ino, e.Name))
	}
	m.op(m.f.Rmdir(parent, name))
}

// forgetAll is the kernel's FORGETs of everything looked up.
func (m *metaOps) forgetAll() {
	for ino, n := range m.held {
		m.f.Forget(ino, n)
	}
	clear(m.held)
}

// TestMetaOpsCount runs one of BenchmarkMetaOps's workloads once, for an
// instruction count that does not depend on the machine's load: run it
// under valgrind --tool=cachegrind with CFS_METAOPS=NAME, then with
// CFS_METAOPS_SETUP=1 too (setup only), and subtract.
func TestMetaOpsCount(t *testing.T) {
	name := os.Getenv("CFS_METAOPS")
	if name == "" {
		t.Skip("CFS_METAOPS names a workload of BenchmarkMetaOps")
	}
	for _, w := range metaWorkloads {
		if w.name != name {
			continue
		}
		f, err := Open(filepath.Join(t.TempDir(), "ws.cfs"), Options{CommitInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		m := &metaOps{b: t, f: f, held: map[Ino]uint64{}}
		var state any
		if w.setup != nil {
			state = w.setup(m)
		}
		m.sync()
		if os.Getenv("CFS_METAOPS_SETUP") == "" {
			w.run(m, state)
			m.sync()
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no workload %q", name)
}
