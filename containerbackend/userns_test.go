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

func TestParseMountinfoLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want mountEntry
		ok   bool
	}{
		{`36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`,
			mountEntry{dev: "98:0", point: "/mnt2", fstype: "ext3", super: "rw,errors=continue"}, true},
		{`80 27 0:45 / /tmp/a\040b\134c rw,nosuid - fuse.computerfs /ws.cfs rw,user_id=0,group_id=0,allow_other`,
			mountEntry{dev: "0:45", point: `/tmp/a b\c`, fstype: "fuse.computerfs", super: "rw,user_id=0,group_id=0,allow_other"}, true},
		{`80 27 0:45 / /x\04 rw - tmpfs tmpfs rw`, mountEntry{dev: "0:45", point: `/x\04`, fstype: "tmpfs", super: "rw"}, true},
		{`80 27 0:45 / /x rw`, mountEntry{}, false},
		{`1 2 3 4 5 6 7 8 9 10`, mountEntry{}, false},
		{``, mountEntry{}, false},
	} {
		got, ok := parseMountinfoLine(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseMountinfoLine(f *testing.F) {
	f.Add(`80 27 0:45 / /tmp/a\040b rw,nosuid - fuse.computerfs /ws.cfs rw,allow_other`)
	f.Add(`1 1 0:1 / / rw - - - -`)
	f.Fuzz(func(t *testing.T, line string) {
		e, ok := parseMountinfoLine(line)
		if !ok && e != (mountEntry{}) {
			t.Fatalf("%q: not ok but %+v", line, e)
		}
		if len(e.point) > len(line) {
			t.Fatalf("%q: point %q longer than the line", line, e.point)
		}
	})
}
