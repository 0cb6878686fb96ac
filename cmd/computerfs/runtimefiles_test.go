package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/internal/confinetest"
)

// TestOpenDaemonLog: the daemon's log is not opened in a directory that
// another user owns or that others can write, nor through a symlink.
func TestOpenDaemonLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make files of another user")
	}
	const nobody = 65534
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
		want string // "" for success
	}{
		{"missing", func(t *testing.T, dir string) {}, ""},
		{"ours, 0700", func(t *testing.T, dir string) { mkdirOwned(t, dir, 0, 0o700) }, ""},
		{"ours, 0755", func(t *testing.T, dir string) { mkdirOwned(t, dir, 0, 0o755) }, ""},
		{"nobody's, 0777", func(t *testing.T, dir string) { mkdirOwned(t, dir, nobody, 0o777) }, fmt.Sprintf("(owner uid %d, mode drwxrwxrwx)", nobody)},
		{"nobody's, 0755", func(t *testing.T, dir string) { mkdirOwned(t, dir, nobody, 0o755) }, fmt.Sprintf("(owner uid %d, mode drwxr-xr-x)", nobody)},
		{"ours, 0777", func(t *testing.T, dir string) { mkdirOwned(t, dir, 0, 0o777) }, "(owner uid 0, mode drwxrwxrwx)"},
		{"log is a symlink", func(t *testing.T, dir string) {
			mkdirOwned(t, dir, 0, 0o700)
			if err := os.Symlink(filepath.Join(filepath.Dir(dir), "victim"), filepath.Join(dir, "daemon.log")); err != nil {
				t.Fatal(err)
			}
		}, "too many levels of symbolic links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "home")
			tc.make(t, dir)
			f, err := openDaemonLog(filepath.Join(dir, "daemon.log"))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("openDaemonLog: %v", err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("openDaemonLog accepts it")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("openDaemonLog: %q does not say %q about %s", err, tc.want, dir)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "victim")); err == nil {
				t.Error("the symlink's target was created")
			}
		})
	}
}

func mkdirOwned(t *testing.T, dir string, uid int, mode os.FileMode) {
	t.Helper()
	if err := confinetest.MkdirOwned(dir, uid, mode); err != nil {
		t.Fatal(err)
	}
}
