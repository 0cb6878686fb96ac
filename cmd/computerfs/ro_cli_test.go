package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadOnlyNoExec mounts with --read-only --noexec: the kernel, the
// file API and the backends refuse changes, files cannot be executed
// from the mount, reads work; a later mount without them writes.
func TestReadOnlyNoExec(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	mustCLI(t, home, "init", ws)
	for path, data := range map[string]string{"/run.sh": "#!/bin/sh\necho ran\n", "/d/f": "data\n"} {
		if r, err := runCfs(home, data, nil, "fs", "write", "-p", "--mode", "0755", "-w", ws, path); err != nil || r.code != 0 {
			t.Fatalf("fs write %s: %v %v", path, err, r)
		}
	}
	pid := runDaemon(t, home, ws, mnt, "--read-only", "--noexec")
	if b, err := os.ReadFile(filepath.Join(mnt, "d", "f")); err != nil || string(b) != "data\n" {
		t.Fatalf("read through the read-only mount: %q, %v", b, err)
	}
	for what, change := range map[string]func() error{
		"create":   func() error { return os.WriteFile(filepath.Join(mnt, "new"), []byte("x"), 0o644) },
		"write":    func() error { return os.WriteFile(filepath.Join(mnt, "d", "f"), []byte("x"), 0o644) },
		"mkdir":    func() error { return os.Mkdir(filepath.Join(mnt, "e"), 0o755) },
		"remove":   func() error { return os.Remove(filepath.Join(mnt, "d", "f")) },
		"rename":   func() error { return os.Rename(filepath.Join(mnt, "d", "f"), filepath.Join(mnt, "g")) },
		"chmod":    func() error { return os.Chmod(filepath.Join(mnt, "d", "f"), 0o600) },
		"truncate": func() error { return os.Truncate(filepath.Join(mnt, "d", "f"), 0) },
	} {
		if err := change(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s through the read-only mount: %v, want EROFS", what, err)
		}
	}
	if out, err := exec.Command(filepath.Join(mnt, "run.sh")).CombinedOutput(); err == nil || !errors.Is(err, syscall.EACCES) && !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("running a file of the noexec mount: %v %s, want EACCES", err, out)
	}
	if !strings.Contains(mountOptionsOf(t, mnt), "noexec") {
		t.Errorf("mount options: %s, want noexec", mountOptionsOf(t, mnt))
	}
	// The file API and the backends, through the daemon.
	r, err := runCfs(home, "x", nil, "fs", "write", "-w", ws, "/d/f")
	if err != nil || r.code != exitFailed || !strings.Contains(r.stderr, "read-only file system") {
		t.Errorf("fs write to a read-only daemon: %v %v", err, r)
	}
	r, err = runCfs(home, "", nil, "exec", "-w", ws, "-b", "shell", "--", "echo x > /d/f")
	if err != nil || r.code == 0 {
		t.Errorf("exec writing through a read-only daemon: %v %v", err, r)
	}
	if r := mustCLI(t, home, "fs", "cat", "-w", ws, "/d/f"); r.stdout != "data\n" {
		t.Errorf("after the refused changes /d/f is %q", r.stdout)
	}
	mustCLI(t, home, "umount", mnt)
	if !waitGone(pid, 10*time.Second) {
		t.Fatalf("daemon %d still running after umount", pid)
	}
	// A mount without them is read-write and exec again.
	runDaemon(t, home, ws, mnt)
	if err := os.WriteFile(filepath.Join(mnt, "new"), []byte("x"), 0o644); err != nil {
		t.Errorf("write through a read-write mount: %v", err)
	}
	if out, err := exec.Command(filepath.Join(mnt, "run.sh")).CombinedOutput(); err != nil || string(out) != "ran\n" {
		t.Errorf("run.sh through an exec mount: %v %q", err, out)
	}
	mustCLI(t, home, "umount", mnt)
}
