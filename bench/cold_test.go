package bench

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/computerfs/computerfs/internal/mountinfo"
)

// resident counts the pages of b that are in memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestColdStoreFile maps a file as bbolt maps a store, reads every page
// through the map (so that drop_caches could not drop them), and checks
// that coldStoreFile, working from the file alone as the bench does for
// another daemon, finds the mapping and leaves none of its pages in
// memory.
func TestColdStoreFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store")
	const size = 4 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // clean pages only can be dropped
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(m[i])
	}
	_ = sum
	pages := size / os.Getpagesize()
	if n := resident(t, m); n != pages {
		t.Fatalf("%d of %d pages resident after reading them through the map", n, pages)
	}

	maps, procs, err := coldStoreFile(path)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("process_madvise unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if maps != 1 || procs != 1 {
		t.Errorf("found %d mappings in %d processes, want this test's one", maps, procs)
	}
	if n := resident(t, m); n > pages/100 {
		t.Errorf("%d of %d pages still resident after coldStoreFile", n, pages)
	}
	for i := 0; i < size; i += 4099 { // the map still reads right, from the disk
		if m[i] != data[i] {
			t.Fatalf("byte %d: %d, want %d", i, m[i], data[i])
		}
	}
}

func TestMountSource(t *testing.T) {
	dir := t.TempDir()
	mp, fstype, _, err := mountSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mp == "" || fstype == "" {
		t.Fatalf("mount of %s: point %q type %q", dir, mp, fstype)
	}
	if note, err := coldMountStore(dir); err != nil || note != "" {
		t.Errorf("coldMountStore on a disk directory: %q, %v; want nothing", note, err)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/plain", "/plain"},
		{`/a\040b`, "/a b"},
		{`/tab\011x\134`, "/tab\tx\\"},
		{`/bad\09`, `/bad\09`},
		{`/end\`, `/end\`},
	} {
		if got := mountinfo.Unescape(c.in); got != c.want {
			t.Errorf("mountinfo.Unescape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
