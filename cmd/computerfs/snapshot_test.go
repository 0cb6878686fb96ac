package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSnapshotCLI: snapshots made through the daemon of a mounted
// workspace and offline, listed both ways; a live restore through the
// daemon shows the files back through the mount at once; a restore of
// one path, offline, puts back that path alone; rm drops one.
func TestSnapshotCLI(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	orig := randomData(300000, 4)
	makeStore(t, home, ws, mnt, map[string][]byte{"src/main.go": []byte("package main\n"), "data.bin": orig})

	if r := cli(t, home, "snapshot", "create", ws, "offline"); r.code != 0 || !strings.Contains(r.stdout, "snapshot offline: commit") {
		t.Fatalf("create offline: %v", r)
	}
	p := startMount(t, home, ws, mnt)
	if r := cli(t, home, "snapshot", "create", mnt, "live"); r.code != 0 {
		t.Fatalf("create through the daemon: %v", r)
	}
	// The agent's mistake, through the mount.
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), []byte("oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(mnt, "src/main.go"))
	os.WriteFile(filepath.Join(mnt, "junk"), []byte("junk"), 0o644)
	os.WriteFile(filepath.Join(mnt, "latin1.txt"), []byte("caf\xe9\n"), 0o644) // a text, not UTF-8
	r := cli(t, home, "snapshot", "list", "--json", ws)
	var list []struct{ Name, Root string }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[0].Name != "live" || list[1].Name != "offline" {
		t.Fatalf("list through the daemon: %v %v", list, r)
	}
	// Nothing changed between the two snapshots: the same root.
	if len(list[0].Root) != 64 || list[0].Root != list[1].Root {
		t.Errorf("roots: %+v", list)
	}
	// What the agent changed, through the daemon.
	r = cli(t, home, "snapshot", "diff", mnt, "live")
	if r.code != 0 || !strings.Contains(r.stdout, "A /junk (4 bytes)") || !strings.Contains(r.stdout, "D /src/main.go") ||
		!strings.Contains(r.stdout, "M /data.bin (300000 -> 4 bytes)") {
		t.Errorf("diff through the daemon: %v", r)
	}
	r = cli(t, home, "snapshot", "diff", "--patch", mnt, "live")
	for _, want := range []string{
		"D /src/main.go (13 bytes)\n--- a/src/main.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package main\n",
		"A /junk (4 bytes)\n--- /dev/null\n+++ b/junk\n@@ -0,0 +1 @@\n+junk\n\\ No newline at end of file\n",
		"M /data.bin (300000 -> 4 bytes)\nBinary files a/data.bin and b/data.bin differ\n",
		"A /latin1.txt (5 bytes)\n--- /dev/null\n+++ b/latin1.txt\n@@ -0,0 +1 @@\n+caf\xe9\n",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("diff --patch through the daemon: want\n%s\nin %v", want, r)
		}
	}
	// Read what the mistake left, so that the kernel caches it.
	checkFile(t, filepath.Join(mnt, "data.bin"), []byte("oops"))
	// Restore, live: the mount shows the snapshot's files at once.
	if r := cli(t, home, "snapshot", "restore", mnt, "live"); r.code != 0 || !strings.Contains(r.stdout, "restored") || !strings.Contains(r.stdout, "/junk") {
		t.Fatalf("live restore: %v", r)
	}
	checkFile(t, filepath.Join(mnt, "data.bin"), orig)
	checkFile(t, filepath.Join(mnt, "src/main.go"), []byte("package main\n"))
	if _, err := os.Stat(filepath.Join(mnt, "junk")); !os.IsNotExist(err) {
		t.Errorf("junk after the restore: %v", err)
	}
	if r := cli(t, home, "snapshot", "diff", "--json", mnt, "live"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("diff after the live restore: %v", r)
	}
	// Another mistake, then a restore of one path, offline.
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), []byte("oops again"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(mnt, "src/main.go"))
	daemonJSON := cli(t, home, "snapshot", "diff", "--patch", "--json", mnt, "live")
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)
	// Offline, the same diff and patches.
	if r := cli(t, home, "snapshot", "diff", "--patch", "--json", ws, "live"); r.code != 0 || r.stdout != daemonJSON.stdout || !strings.Contains(r.stdout, `"patch": "--- a/src/main.go`) {
		t.Errorf("diff --patch --json offline:\n%v\nthrough the daemon:\n%v", r, daemonJSON)
	}

	if r := cli(t, home, "snapshot", "restore", ws, "live", "/src"); r.code != 0 || !strings.Contains(r.stdout, "restored") {
		t.Fatalf("restore of /src: %v", r)
	}
	fsckClean(t, home, ws)
	// Offline, after the restore: only data.bin differs from the snapshot.
	if r := cli(t, home, "snapshot", "diff", ws, "live"); r.code != 0 || strings.TrimSpace(r.stdout) != "M /data.bin (300000 -> 10 bytes)" {
		t.Errorf("diff after the restore of /src: %v", r)
	}
	p = startMount(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "data.bin"), []byte("oops again"))
	checkFile(t, filepath.Join(mnt, "src/main.go"), []byte("package main\n"))
	if r := cli(t, home, "snapshot", "rm", mnt, "offline"); r.code != 0 || !strings.Contains(r.stdout, "deleted snapshot offline") {
		t.Errorf("rm through the daemon: %v", r)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)
	if r := cli(t, home, "snapshot", "list", ws); r.code != 0 || strings.Contains(r.stdout, "offline") || !strings.Contains(r.stdout, "live") {
		t.Errorf("list offline: %v", r)
	}
	fsckClean(t, home, ws)
}
