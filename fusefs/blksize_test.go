package fusefs_test

import (
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/testmount"
)

// TestBlksize: files say 1 MiB, so that cp, cat and dd write in 1 MiB
// requests; directories say 4 KiB, as ext4's do, so that glibc's
// directory streams ask for 32 KiB per getdents64 and not 1 MiB (with
// 1 MiB, a find over a fresh 10x10x10 tree ran 1.9x as long).
func TestBlksize(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	mkdir(t, filepath.Join(m.Dir, "d"))
	writeFile(t, filepath.Join(m.Dir, "d", "f"), []byte("x"))
	for _, c := range []struct {
		path string
		want int64
	}{
		{m.Dir, 4096},
		{filepath.Join(m.Dir, "d"), 4096},
		{filepath.Join(m.Dir, "d", "f"), 1 << 20},
	} {
		if got := lstat(t, c.path).Blksize; got != c.want {
			t.Errorf("%s: st_blksize %d, want %d", c.path, got, c.want)
		}
	}
}
