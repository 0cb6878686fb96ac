package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExecFork: exec --fork runs a shell command in a copy-on-write
// branch of the workspace, offline and through a mounted workspace's
// daemon: it prints what the command changed, the workspace and its
// mount see nothing of it until fork merge, which the mount then shows
// at once; two forks side by side changing the same file: the second
// merge is refused naming it (exit 4) and the fork is discarded;
// --merge and --discard end a fork in the same command.
func TestExecFork(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	makeStore(t, home, ws, mnt, map[string][]byte{"README": []byte("hello\n"), "src/main.go": []byte("package main\n")})
	run := func(args ...string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Offline: the CLI holds the store; --merge ends the fork.
	r := run("exec", "-w", ws, "-b", "shell", "--fork", "--merge", "--", "echo offline > /offline.txt")
	if r.code != 0 || !strings.Contains(r.stderr, "added    /offline.txt") || !strings.Contains(r.stderr, "merged fork") {
		t.Fatalf("offline exec --fork --merge: %v", r)
	}

	startMount(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "offline.txt"), []byte("offline\n"))
	r = run("exec", "-w", ws, "-b", "shell", "--fork", "--", "sed -i s/hello/approach-a/ README && mkdir -p build && echo a > build/out")
	if r.code != 0 || !strings.Contains(r.stderr, "running in fork fork2") || !strings.Contains(r.stderr, "modified /README") ||
		!strings.Contains(r.stderr, "added    /build") || !strings.Contains(r.stderr, "fork fork2 kept") {
		t.Fatalf("exec --fork: %v", r)
	}
	r = run("exec", "-w", ws, "-b", "shell", "--fork", "--", "sed -i s/hello/approach-b/ README && echo b > b.txt")
	if r.code != 0 || !strings.Contains(r.stderr, "fork fork3 kept") {
		t.Fatalf("second exec --fork: %v", r)
	}
	// The workspace and its mount have none of it.
	checkFile(t, filepath.Join(mnt, "README"), []byte("hello\n"))
	if _, err := os.Stat(filepath.Join(mnt, "build")); !os.IsNotExist(err) {
		t.Errorf("a fork's directory shows in the mount: %v", err)
	}
	// Each fork reads its own README (a command run in it).
	r = run("exec", "-w", ws, "-b", "shell", "--in-fork", "fork3", "--", "cat README")
	if r.code != 0 || r.stdout != "approach-b\n" {
		t.Errorf("cat in fork3: %v", r)
	}
	// The file API on a fork (through the daemon: the fork header).
	if r := run("fs", "cat", "-w", ws, "--fork", "fork2", "/build/out"); r.code != 0 || r.stdout != "a\n" {
		t.Errorf("fs cat --fork fork2: %v", r)
	}
	if r := run("fs", "cat", "-w", ws, "/build/out"); r.code == 0 {
		t.Errorf("fs cat of a fork's file in the workspace: %v", r)
	}
	r = cli(t, home, "fork", "-w", mnt, "list", "--json")
	var forks []struct {
		ID      string `json:"id"`
		Records int    `json:"records"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &forks); err != nil || len(forks) != 2 || forks[0].ID != "fork2" || forks[0].Records == 0 {
		t.Fatalf("fork list: %v %v", err, r)
	}
	if r := cli(t, home, "fork", "-w", ws, "merge", "fork2"); r.code != 0 || !strings.Contains(r.stdout, "merged fork fork2") {
		t.Fatalf("fork merge: %v", r)
	}
	// The mount shows the merge at once (the kernel was told).
	checkFile(t, filepath.Join(mnt, "README"), []byte("approach-a\n"))
	checkFile(t, filepath.Join(mnt, "build/out"), []byte("a\n"))
	r = cli(t, home, "fork", "-w", ws, "merge", "fork3")
	if r.code != 4 || !strings.Contains(r.stderr, "/README") {
		t.Errorf("merge of a fork that changed the same file: %v", r)
	}
	if r := cli(t, home, "fork", "-w", ws, "discard", "fork3"); r.code != 0 {
		t.Errorf("fork discard: %v", r)
	}
	if _, err := os.Stat(filepath.Join(mnt, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("a discarded fork's file: %v", err)
	}
	// --discard, and --merge of a command that fails (kept).
	if r := run("exec", "-w", ws, "-b", "shell", "--fork", "--discard", "--", "echo d > d.txt"); r.code != 0 || !strings.Contains(r.stderr, "discarded fork") {
		t.Errorf("exec --fork --discard: %v", r)
	}
	r = run("exec", "-w", ws, "-b", "shell", "--fork", "--merge", "--", "echo e > e.txt; exit 3")
	if r.code != 3 || !strings.Contains(r.stderr, "not merged: the command failed") {
		t.Errorf("exec --fork --merge of a failing command: %v", r)
	}
	for _, gone := range []string{"d.txt", "e.txt"} {
		if _, err := os.Stat(filepath.Join(mnt, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: %v", gone, err)
		}
	}
	if r := cli(t, home, "fork", "-w", ws, "list"); r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("one fork left: %v", r)
	}
	if r := run("exec", "-w", ws, "--fork", "--merge", "--discard", "--", "true"); r.code != 2 {
		t.Errorf("--merge with --discard: %v", r)
	}
	// Execs in the workspace carry the roots of their states; the merge
	// changed the workspace between them, an exec in a fork is not
	// recorded in the workspace's.
	if r := run("exec", "-w", ws, "-b", "shell", "--", "echo x > /x.txt"); r.code != 0 {
		t.Fatal(r)
	}
	r = cli(t, home, "execs", "-w", ws, "--json")
	var execs []struct {
		ID         string `json:"id"`
		RootBefore string `json:"root_before"`
		RootAfter  string `json:"root_after"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &execs); err != nil || len(execs) == 0 {
		t.Fatalf("execs --json: %v %v", err, r)
	}
	last := execs[len(execs)-1]
	if len(last.RootBefore) != 64 || len(last.RootAfter) != 64 || last.RootBefore == last.RootAfter {
		t.Errorf("the last exec's roots: %+v", last)
	}
	if r := cli(t, home, "undo", "-w", ws); r.code != 0 {
		t.Fatalf("undo: %v", r)
	}
}

// TestExecForkContainer: the container backend runs in a fork through a
// FUSE mount of the fork (an instance of the backend of its own): the
// workspace's mount sees nothing of its changes; a shell exec in the
// same fork sees them, and the container then sees the shell's (the
// fork's mount is told of changes made through the file API); merge
// shows them in the workspace's mount at once, and the fork's mount is
// gone.
func TestExecForkContainer(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	makeStore(t, home, ws, mnt, map[string][]byte{"proj/README": []byte("hello\n")})
	startMount(t, home, ws, mnt)
	run := func(args ...string) result {
		t.Helper()
		r, err := runCfsWithin(3*time.Minute, home, "", nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := run("exec", "-w", ws, "-b", "container", "--cwd", "/proj", "--fork", "--", "mkdir -p build && echo built > build/out && sed -i s/hello/forked/ README && cat README")
	if r.code != 0 || r.stdout != "forked\n" || !strings.Contains(r.stderr, "added    /proj/build") || !strings.Contains(r.stderr, "modified /proj/README") {
		t.Fatalf("container exec --fork: %v", r)
	}
	checkFile(t, filepath.Join(mnt, "proj/README"), []byte("hello\n"))
	if _, err := os.Stat(filepath.Join(mnt, "proj/build")); !os.IsNotExist(err) {
		t.Errorf("the container's directory in a fork shows in the workspace's mount: %v", err)
	}
	if r := run("exec", "-w", ws, "-b", "shell", "--in-fork", "fork1", "--", "cat /proj/build/out && echo shell > /proj/from-shell && echo again >> /proj/README"); r.code != 0 || r.stdout != "built\n" {
		t.Fatalf("shell in the container's fork: %v", r)
	}
	if r := run("exec", "-w", ws, "-b", "container", "--cwd", "/proj", "--in-fork", "fork1", "--", "cat from-shell README"); r.code != 0 || r.stdout != "shell\nforked\nagain\n" {
		t.Fatalf("container after the shell in the fork: %v", r)
	}
	if r := cli(t, home, "fork", "-w", ws, "merge", "fork1"); r.code != 0 {
		t.Fatalf("merge: %v", r)
	}
	checkFile(t, filepath.Join(mnt, "proj/README"), []byte("forked\nagain\n"))
	checkFile(t, filepath.Join(mnt, "proj/build/out"), []byte("built\n"))
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), "(fork fork1 ") || strings.Contains(string(mounts), "fork-fork1-") {
		t.Errorf("the fork's mount outlived its merge:\n%s", mounts)
	}
}
