package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFSSnapshot: `computerfs fs ... --snapshot NAME` reads a snapshot
// through a serve daemon, a mount daemon and the store itself, and the
// commands that change the workspace refuse the flag. Through the mount,
// .snapshots follows snapshots made and deleted by the CLI without a
// remount.
func TestFSSnapshot(t *testing.T) {
	for _, mode := range []string{"direct", "serve", "mount"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "mount" {
				needFUSE(t)
			}
			t.Parallel()
			home, ws, mnt := tempWorkspace(t)
			var stop func()
			switch mode {
			case "direct":
				createStore(t, ws)
				stop = func() {}
			case "serve":
				d := startServe(t, home, ws)
				stop = func() { d.stop(t) }
			case "mount":
				p := startMount(t, home, ws, mnt)
				stop = func() {
					p.cmd.Process.Signal(syscall.SIGTERM)
					if code := p.wait(t, 30*time.Second); code != 0 {
						t.Errorf("mount exited %d\n%s", code, p.output())
					}
				}
			}
			fsMust(t, home, ws, "old a\nneedle\n", "write", "/a.txt")
			fsMust(t, home, ws, "bee\n", "write", "-p", "/d/b.txt")
			if r := cli(t, home, "snapshot", "create", ws, "s1"); r.code != 0 {
				t.Fatalf("snapshot create: %v", r)
			}
			fsMust(t, home, ws, "new a\n", "write", "/a.txt")
			fsMust(t, home, ws, "", "rm", "/d/b.txt")

			for _, tc := range []struct {
				args []string
				code int
				out  string // in stdout, or in stderr if code != 0
			}{
				{[]string{"cat", "--snapshot", "s1", "/a.txt"}, 0, "old a\nneedle\n"},
				{[]string{"cat", "/a.txt"}, 0, "new a\n"},
				{[]string{"ls", "--snapshot", "s1", "/d"}, 0, "b.txt"},
				{[]string{"stat", "--snapshot", "s1", "/d/b.txt"}, 0, "b.txt"},
				{[]string{"stat", "/d/b.txt"}, 3, "no such file"},
				{[]string{"glob", "--snapshot", "s1", "**/*.txt"}, 0, "/d/b.txt"},
				{[]string{"grep", "--snapshot", "s1", "needle"}, 0, "/a.txt"},
				{[]string{"grep", "needle"}, 1, ""},
				{[]string{"tree", "--snapshot", "s1", "/"}, 0, "b.txt"},
				{[]string{"du", "--snapshot", "s1", "/"}, 0, "2 files"},
				{[]string{"cat", "--snapshot", "nonesuch", "/a.txt"}, 3, "no such snapshot"},
				{[]string{"cat", "--snapshot", "../s1", "/a.txt"}, 3, "snapshot name"},
				{[]string{"cat", "--snapshot", "s1", "/../a.txt"}, 3, "escapes the workspace"},
				{[]string{"write", "--snapshot", "s1", "/x"}, 2, "read-only"},
				{[]string{"rm", "--snapshot", "s1", "/a.txt"}, 2, "read-only"},
				{[]string{"mkdir", "--snapshot", "s1", "/x"}, 2, "read-only"},
				{[]string{"edit", "--snapshot", "s1", "--old", "a", "--new", "b", "/a.txt"}, 2, "read-only"},
				{[]string{"changes", "--snapshot", "s1"}, 2, "does not change"},
			} {
				r := fsRun(t, home, ws, "", tc.args...)
				got := r.stdout
				if tc.code != 0 {
					got = r.stderr
				}
				if r.code != tc.code || !strings.Contains(got, tc.out) {
					t.Errorf("fs %s: exit %d, want %d with %q: %v", strings.Join(tc.args, " "), r.code, tc.code, tc.out, r)
				}
			}
			if r := fsRun(t, home, ws, "", "cat", "--snapshot", "s1", "/x"); r.code != 3 {
				t.Errorf("cat of a file the snapshot lacks: %v", r)
			}

			if mode == "mount" {
				snaps := filepath.Join(mnt, ".snapshots")
				checkFile(t, filepath.Join(snaps, "s1", "a.txt"), []byte("old a\nneedle\n"))
				checkFile(t, filepath.Join(snaps, "s1", "d", "b.txt"), []byte("bee\n"))
				if err := os.WriteFile(filepath.Join(snaps, "s1", "a.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
					t.Errorf("write in a snapshot through the mount: %v", err)
				}
				if ents := readDirNames(t, mnt); slices.Contains(ents, ".snapshots") {
					t.Errorf("the root's listing shows .snapshots: %q", ents)
				}
				// Made and deleted through the daemon: seen at once.
				if r := cli(t, home, "snapshot", "create", ws, "s2"); r.code != 0 {
					t.Fatalf("snapshot create s2: %v", r)
				}
				if got := readDirNames(t, snaps); !slices.Equal(got, []string{"s1", "s2"}) {
					t.Errorf(".snapshots after s2: %q", got)
				}
				checkFile(t, filepath.Join(snaps, "s2", "a.txt"), []byte("new a\n"))
				if r := cli(t, home, "snapshot", "rm", ws, "s1"); r.code != 0 {
					t.Fatalf("snapshot rm s1: %v", r)
				}
				if got := readDirNames(t, snaps); !slices.Equal(got, []string{"s2"}) {
					t.Errorf(".snapshots after rm s1: %q", got)
				}
				if _, err := os.Stat(filepath.Join(snaps, "s1", "a.txt")); !os.IsNotExist(err) {
					t.Errorf("a deleted snapshot through the mount: %v", err)
				}
			}
			stop()
			fsckClean(t, home, ws)
		})
	}
}

func readDirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
