package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStaleViews: a daemon killed with SIGKILL leaves its policy view and
// the container's mount of a fork mounted, dead, as it leaves its main
// mount; `computerfs umount` of the main mount detaches them all, and so
// does the next mount of the workspace at that mountpoint. Judged from
// mountinfo.
func TestStaleViews(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(`{"backends": {"container": {"paths": {"**/.env": "deny"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	killWithView := func() {
		t.Helper()
		p := startMount(t, home, ws, mnt)
		if r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", "container", "--", "true"); err != nil || r.code != 0 {
			t.Fatalf("exec: %v %v", r, err)
		}
		// A fork left unmerged keeps its mount for the container.
		if r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", "container", "--fork", "--", "touch made-in-fork"); err != nil || r.code != 0 {
			t.Fatalf("exec --fork: %v %v", r, err)
		}
		if n := viewMounts(t, mnt); n != 2 {
			t.Fatalf("policy view and fork mount while the daemon runs: %d", n)
		}
		syscall.Kill(-p.pid(), syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			t.Fatal("the daemon survived SIGKILL")
		}
		if n := viewMounts(t, mnt); n != 2 {
			t.Fatalf("policy view and fork mount after SIGKILL: %d (the kernel keeps them: the test needs both)", n)
		}
	}

	killWithView()
	if r := cli(t, home, "umount", mnt); r.code != 0 {
		t.Fatalf("umount: %v", r)
	}
	if n := viewMounts(t, mnt); n != 0 || isMounted(mnt) {
		t.Errorf("after umount: %d policy views, main mounted %v", n, isMounted(mnt))
	}

	killWithView()
	detach(t, mnt) // the main mount only, as a careless admin would
	startMount(t, home, ws, mnt)
	if n := viewMounts(t, mnt); n != 0 {
		t.Errorf("after the next mount: %d stale policy views", n)
	}
}
