package coreutils

import "testing"

func TestRm(t *testing.T) {
	tree := filTree(t, map[string]string{"one/": "", "one/only.txt": "x\n", "it's": "q", "sp ace": ""})
	cases := [][]string{
		{"rm", "a.txt"},
		{"rm", "-v", "a.txt", "b.txt"},
		{"rm", "nonexist"},
		{"rm", "-f", "nonexist", "a.txt"},
		{"rm", "-f"},
		{"rm"},
		{"rm", "src"},
		{"rm", "-d", "emptydir", "-v"},
		{"rm", "-d", "src"},
		{"rm", "-r", "src"},
		{"rm", "-rv", "one"},
		{"rm", "-Rv", "one/"},
		{"rm", "-rfv", "one//", "nonexist"},
		{"rm", "-r", "."},
		{"rm", "-r", "src/.."},
		{"rm", "-r", "/"},
		{"rm", "/"},
		{"rm", "link.txt", "-v"},
		{"rm", "a.txt/"},
		{"rm", ""},
		{"rm", "-x", "a.txt"},
		{"rm", "--bogus"},
		{"rm", "-v", "it's", "sp ace"},
		{"rm", "--", "-v"},
		{"rm", "--verbose", "--force", "dup.txt"},
		{"rm", "-rv", "emptydir", "src/sub"},
		{"rm", "--interactive=never", "a.txt"},
	}
	for _, c := range cases {
		compareGNU(t, tree, "", c...)
	}
	filCompareSorted(t, tree, "", "rm", "-rv", "src")
}
