package coreutils

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLs(t *testing.T) {
	tree := filTree(t, map[string]string{"ld": "-> src", "d/x": "", "big": strings.Repeat("x", 5000), "Upper": "u", "sp ace": "s"})
	os.Chmod(filepath.Join(tree, "b.txt"), 0o600)
	os.Chmod(filepath.Join(tree, "d"), 0o2775)
	recent, haveRecent := filRecent()
	old := time.Date(2020, 1, 1, 10, 0, 0, 0, time.UTC)
	if !haveRecent {
		recent = old.Add(time.Hour)
	}
	filRetime(t, tree, recent, old, "a.txt", "src/util.go", "ld")
	// Distinct times for -t.
	os.Chtimes(filepath.Join(tree, "b.txt"), recent.Add(time.Minute), recent.Add(time.Minute))
	os.Chtimes(filepath.Join(tree, "csv.txt"), recent.Add(-time.Minute), recent.Add(-time.Minute))

	cases := [][]string{
		{"ls"},
		{"ls", "-1"},
		{"ls", "-a"},
		{"ls", "-A"},
		{"ls", "-l"},
		{"ls", "-la", "src"},
		{"ls", "-lA", "--color=never"},
		{"ls", "-lh"},
		{"ls", "-lah", "src"},
		{"ls", "-F"},
		{"ls", "-p"},
		{"ls", "-lF"},
		{"ls", "-d", "src", "ld", "a.txt"},
		{"ls", "-ld", "src", "ld", "a.txt"},
		{"ls", "ld"},
		{"ls", "-l", "ld"},
		{"ls", "-F", "ld"},
		{"ls", "-R"},
		{"ls", "-lR", "src"},
		{"ls", "-R", "src", "d", "a.txt"},
		{"ls", "-t"},
		{"ls", "-lt"},
		{"ls", "-ltr"},
		{"ls", "-S"},
		{"ls", "-lS"},
		{"ls", "-Sr"},
		{"ls", "-r"},
		{"ls", "a.txt", "src", "nonexist"},
		{"ls", "nonexist"},
		{"ls", "src", "d"},
		{"ls", "-1", "src/", "./d"},
		{"ls", "--full-time", "a.txt"},
		{"ls", "-s"},
		{"ls", "-sh", "big", "src"},
		{"ls", "-ln"},
		{"ls", "-lo", "src"},
		{"ls", "-lg", "src"},
		{"ls", "-lG", "src"},
		{"ls", "-1z"},
		{"ls", "--bogus"},
		{"ls", "-l", "a.txt/"},
		{"ls", "-l", "emptydir"},
		{"ls", "-a", "emptydir"},
		{"ls", "--group-directories-first"},
		{"ls", "-dl", "."},
		{"ls", "-L", "-l", "ld", "link.txt"},
		{"ls", "-l", "src/main.go", "big", "empty.txt"},
	}
	for _, c := range cases {
		compareGNU(t, tree, "", c...)
	}
}
