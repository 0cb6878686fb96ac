package coreutils

import (
	"regexp"
	"strings"
	"testing"
)

func TestStat(t *testing.T) {
	tree := filTree(t, map[string]string{"q": "-> it's", "it's": "x"})
	f := "%n|%s|%a|%A|%F|%U|%G|%u|%g|%y|%Y|%N|%B|%o|%f"
	for _, c := range [][]string{
		{"stat", "-c", f, "a.txt", "empty.txt", "src", "link.txt", "q", "src/main.go"},
		{"stat", "--format=%n %s", "a.txt", "b.txt"},
		{"stat", "--printf", `%n\t%s\n`, "a.txt", "b.txt"},
		{"stat", "--printf=%n:%a\\n", "src"},
		{"stat", "-c", "%5s|%-5s|%05s|%.3y|%#a|x%", "a.txt"},
		{"stat", "-c", "%%%q", "a.txt"},
		{"stat", "-L", "-c", "%n %F %s", "link.txt"},
		{"stat", "--dereference", "-c", "%N", "link.txt"},
		{"stat", "-c", "%b %h", "a.txt", "emptydir", "empty.txt", "link.txt"},
		{"stat", "nonexist"},
		{"stat", "-c", "%n", "nonexist", "a.txt"},
		{"stat"},
		{"stat", "-c"},
		{"stat", "-c", "%n", "a.txt/"},
		{"stat", "-c", "%n %F", "src/", "./src", "/"},
		{"stat", "-c", "%s %N", ""},
	} {
		compareGNU(t, tree, "", c...)
	}
}

// TestStatDefault compares the default format, less what the FS cannot
// know (device, inode, access, change and birth times).
func TestStatDefault(t *testing.T) {
	tree := makeTree(t)
	dev := regexp.MustCompile(`(?m)^Device: .*(Links: \d+)$`)
	times := regexp.MustCompile(`(?m)^(Access: \d|Change: | Birth: ).*\n`)
	norm := func(s string) string { return times.ReplaceAllString(dev.ReplaceAllString(s, "$1"), "") }
	for _, c := range [][]string{
		{"stat", "a.txt"},
		{"stat", "empty.txt", "src", "link.txt", "src/main.go"},
		{"stat", "-L", "link.txt"},
		{"stat", "-t", "a.txt"},
	} {
		if c[1] == "-t" {
			// Terse: drop the device, inode and time fields.
			filCompareWith(t, tree, "", func(s string) string {
				f := strings.Fields(s)
				if len(f) == 16 {
					f = append(f[:6], f[8:11]...)
				}
				return strings.Join(f, " ")
			}, c...)
			continue
		}
		filCompareWith(t, tree, "", norm, c...)
	}
}
