package containerbackend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestOtherFUSEMountsUnmount: a FUSE mount that exists when the backend
// starts (another workspace's, anyone's) can still be unmounted while the
// backend and its warm containers live. The stage's mount namespace is a
// copy of the host's; a copy of the mount held there kept the FUSE
// connection open, and the unmount waited for it forever.
func TestOtherFUSEMountsUnmount(t *testing.T) {
	skipUnlessRunc(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	src, mnt := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := gofs.NewLoopbackRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: fuse.MountOptions{FsName: "cfs-test-other", DirectMount: true}})
	if err != nil {
		t.Skipf("FUSE mount: %v", err)
	}
	unmounted := false
	t.Cleanup(func() {
		if !unmounted {
			srv.Unmount()
		}
	})

	b, _ := newBackend(t) // its stage's namespace is made now, with the mount in place
	if r := run(t, b, "echo in", nil, "", nil); r.exit.GetExitCode() != 0 || r.stdout != "in\n" {
		t.Fatalf("exec: %+v %q %q", r.exit, r.stdout, r.stderr)
	}
	// The container sees none of it: not the mount, not its files.
	if r := run(t, b, "cat /proc/self/mountinfo; ls "+mnt+" 2>&1", nil, "", nil); strings.Contains(r.stdout, "cfs-test-other") || strings.Contains(r.stdout, "other") {
		t.Errorf("the container sees the other FUSE mount:\n%s", r.stdout)
	}

	done := make(chan error, 1)
	go func() { done <- srv.Unmount() }()
	select {
	case err := <-done:
		unmounted = true
		if err != nil {
			t.Fatalf("unmount: %v", err)
		}
	case <-time.After(20 * time.Second):
		// Leave the goroutine: the test binary ends, and the backend's
		// Close (cleanup) releases the copy, which ends the unmount.
		t.Fatal("unmounting another FUSE mount hangs while the container backend lives")
	}
	if r := run(t, b, "echo still", nil, "", nil); r.stdout != "still\n" {
		t.Errorf("after the unmount: %+v %q %q", r.exit, r.stdout, r.stderr)
	}
}
