package coreutils

import "testing"

func TestMv(t *testing.T) {
	tree := filTree(t, map[string]string{"d/a.txt/": "", "e/": "", "f/src/x": "x", "le": "-> e", "g/": "", "g/src/": ""})
	for _, c := range [][]string{
		{"mv", "a.txt", "new.txt"},
		{"mv", "-v", "a.txt", "b.txt"},
		{"mv", "-v", "a.txt", "b.txt", "e"},
		{"mv", "a.txt", "e/"},
		{"mv", "-v", "src", "e"},
		{"mv", "src", "renamed"},
		{"mv", "-v", "src/sub", "."},
		{"mv"},
		{"mv", "a.txt"},
		{"mv", "a.txt", "a.txt"},
		{"mv", "a.txt", "./a.txt"},
		{"mv", "src", "src/sub"},
		{"mv", "src", "src"},
		{"mv", "src", "f"},
		{"mv", "src", "g"},
		{"mv", "e", "a.txt"},
		{"mv", "a.txt", "d"},
		{"mv", "nonexist", "y"},
		{"mv", "a.txt", "b.txt", "z"},
		{"mv", "a.txt", "b.txt", "csv.txt"},
		{"mv", "-t", "nonexist", "a.txt"},
		{"mv", "-t", "a.txt", "b.txt"},
		{"mv", "-t", "e", "a.txt", "-v", "b.txt"},
		{"mv", "-T", "a.txt", "e"},
		{"mv", "-vT", "src", "e"},
		{"mv", "-T", "a.txt", "b", "c"},
		{"mv", "-n", "a.txt", "b.txt"},
		{"mv", "-nv", "a.txt", "new"},
		{"mv", "-f", "a.txt", "b.txt"},
		{"mv", "a.txt/", "y"},
		{"mv", "src/main.go/", "y"},
		{"mv", "le/", "lf"},
		{"mv", "-v", "le", "lf"},
		{"mv", "-v", "link.txt", "e"},
		{"mv", ".", "x"},
		{"mv", "..", "x"},
		{"mv", "src/", "ee"},
		{"mv", "a.txt", "nodir/"},
		{"mv", "a.txt", "nodir/x"},
		{"mv", "emptydir", "e", "-v"},
		{"mv", "-x"},
		{"mv", "", "x"},
		{"mv", "--verbose", "--no-target-directory", "emptydir", "e"},
	} {
		compareGNU(t, tree, "", c...)
	}
}
