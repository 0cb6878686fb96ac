package fusefs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// residentPages counts the pages of path's first n bytes in the page
// cache (mincore over a read-only mapping).
func residentPages(t *testing.T, path string, n int) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release[:], err)
	}
	return ma > major || ma == major && mi >= minor
}

// TestDirectWriteCoherent checks createdFlags: a file made by CREATE and
// opened write-only is written past the page cache on kernels from 6.6
// (its pages are not cached, unlike those of a file opened read-write),
// and a reader of the
// same file through another handle, by read and through a mapping, sees
// every write, including one over pages it had cached.
func TestDirectWriteCoherent(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	const n = 256 << 10
	orig := randomBytes(41, n)

	for _, tc := range []struct {
		name   string
		flags  int
		cached bool
	}{
		{"write-only", os.O_WRONLY, !kernelAtLeast(t, 6, 6)},
		{"read-write", os.O_RDWR, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(orig)
			path := filepath.Join(m.Dir, tc.name)
			w, err := os.OpenFile(path, tc.flags|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if got := residentPages(t, path, n); (got > 0) != tc.cached {
				t.Errorf("%d of %d pages cached after writing through a %s handle", got, n/4096, tc.name)
			}

			r, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			buf := make([]byte, n)
			if _, err := r.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, data) {
				t.Fatalf("reader: %v, or the bytes differ", err)
			}
			mapped, err := unix.Mmap(int(r.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(mapped)
			_ = mapped[n-1] // the reader's pages are cached now

			// Over cached pages, across a page edge, and past the end.
			for _, p := range []struct {
				off int
				b   []byte
			}{{0, []byte("first page")}, {4090, []byte("across the edge")}, {n, []byte("appended")}} {
				if _, err := w.WriteAt(p.b, int64(p.off)); err != nil {
					t.Fatal(err)
				}
				if end := p.off + len(p.b); end > len(data) {
					data = append(data, make([]byte, end-len(data))...)
				}
				copy(data[p.off:], p.b)
				got := make([]byte, len(p.b))
				if _, err := r.ReadAt(got, int64(p.off)); err != nil || !bytes.Equal(got, p.b) {
					t.Errorf("reader at %d after the write: %q, %v; want %q", p.off, got, err, p.b)
				}
				if p.off+len(p.b) <= n && !bytes.Equal(mapped[p.off:p.off+len(p.b)], p.b) {
					t.Errorf("mapping at %d after the write: %q; want %q", p.off, mapped[p.off:p.off+len(p.b)], p.b)
				}
			}
			if st, err := r.Stat(); err != nil || st.Size() != int64(len(data)) {
				t.Errorf("reader's size %v, %v; want %d", st.Size(), err, len(data))
			}
			if !tc.cached {
				// A write-only handle cannot be mapped (as anywhere).
				wm, err := unix.Mmap(int(w.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
				if err == nil {
					unix.Munmap(wm)
				}
				if err != syscall.EACCES {
					t.Errorf("mapping the writer's handle: %v, want EACCES", err)
				}
			}
			checkFile(t, path, data)
		})
	}
	m = remount(t, m)
	for _, name := range []string{"write-only", "read-write"} {
		if _, err := os.Stat(filepath.Join(m.Dir, name)); err != nil {
			t.Error(err)
		}
	}
}
