package coreutils

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// filCompareWith is compareGNU with stdout and stderr passed through norm
// on both sides first (to sort lines whose order is readdir's, or drop
// what cannot match).
func filCompareWith(t *testing.T, tree, stdin string, norm func(string) string, args ...string) {
	t.Helper()
	ours, gnu := copyTree(t, tree), copyTree(t, tree)
	a := runOurs(t, ours, stdin, args...)
	b := runGNU(t, gnu, stdin, args...)
	a.stdout, a.stderr = norm(a.stdout), norm(a.stderr)
	b.stdout, b.stderr = norm(b.stdout), norm(b.stderr)
	if a.stdout != b.stdout || a.stderr != b.stderr || a.code != b.code {
		t.Errorf("%q differs from GNU:\nours: %s\nGNU:  %s", args, a, b)
		return
	}
	if sa, sb := treeState(t, ours), treeState(t, gnu); sa != sb {
		t.Errorf("%q leaves a different tree:\nours:\n%s\nGNU:\n%s", args, sa, sb)
	}
}

// filSortLines sorts the lines of s.
func filSortLines(s string) string {
	if s == "" {
		return s
	}
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n") + "\n"
}

// filCompareSorted compares with GNU with output lines sorted.
func filCompareSorted(t *testing.T, tree, stdin string, args ...string) {
	t.Helper()
	filCompareWith(t, tree, stdin, filSortLines, args...)
}

// filTree is the standard tree plus extra files (name → content; a name
// ending in "/" is a directory, content "-> x" a symlink to x).
func filTree(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := makeTree(t)
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := extra[n]
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		switch {
		case strings.HasSuffix(n, "/"):
			os.MkdirAll(p, 0o755)
		case strings.HasPrefix(c, "-> "):
			os.Symlink(c[3:], p)
		default:
			os.WriteFile(p, []byte(c), 0o644)
		}
	}
	return dir
}

// filCompareSeq runs command lines one after another on a copy of tree
// for each side and compares everything they print and the final trees.
func filCompareSeq(t *testing.T, tree string, cmds ...[]string) {
	t.Helper()
	ours, gnu := copyTree(t, tree), copyTree(t, tree)
	var sa, sb strings.Builder
	for _, c := range cmds {
		a := runOurs(t, ours, "", c...)
		b := runGNU(t, gnu, "", c...)
		fmt.Fprintf(&sa, "$ %q\n%s\n", c, a)
		fmt.Fprintf(&sb, "$ %q\n%s\n", c, b)
	}
	if sa.String() != sb.String() {
		t.Errorf("differs from GNU:\nours:\n%s\nGNU:\n%s", sa.String(), sb.String())
		return
	}
	if a, b := treeState(t, ours), treeState(t, gnu); a != b {
		t.Errorf("%q leave a different tree:\nours:\n%s\nGNU:\n%s", cmds, a, b)
	}
}

// filCompareNoTree compares output and status only: for cases whose
// effects depend on readdir or inode order.
func filCompareNoTree(t *testing.T, tree, stdin string, args ...string) {
	t.Helper()
	a := runOurs(t, copyTree(t, tree), stdin, args...)
	b := runGNU(t, copyTree(t, tree), stdin, args...)
	if a != b {
		t.Errorf("%q differs from GNU:\nours: %s\nGNU:  %s", args, a, b)
	}
}

// filRetime sets the modification time of everything in dir (symlinks
// too) to when, and that of names to old.
func filRetime(t *testing.T, dir string, when, old time.Time, names ...string) {
	t.Helper()
	stamp := func(tm time.Time) string { return "@" + strconv.FormatInt(tm.Unix(), 10) }
	// Files first, the directories' times last (touching does not change
	// a directory's mtime, but be safe).
	if out, err := exec.Command("find", dir, "-exec", "touch", "-h", "-d", stamp(when), "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("touch: %v: %s", err, out)
	}
	for _, n := range names {
		if out, err := exec.Command("touch", "-h", "-d", stamp(old), filepath.Join(dir, n)).CombinedOutput(); err != nil {
			t.Fatalf("touch: %v: %s", err, out)
		}
	}
}

// filRecent is a time that is "recent" (less than six months old) both
// by the real clock, which GNU tools read, and by fixedNow, which ours
// read; ok is false if there is none.
func filRecent() (time.Time, bool) {
	now := time.Now()
	d := now.Sub(fixedNow)
	if d < 0 {
		d = -d
	}
	if d > 150*24*time.Hour {
		return time.Time{}, false
	}
	base := now
	if fixedNow.Before(base) {
		base = fixedNow
	}
	return base.Add(-10*24*time.Hour + 17*time.Minute), true
}
