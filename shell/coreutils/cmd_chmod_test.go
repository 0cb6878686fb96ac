package coreutils

import "testing"

func TestChmod(t *testing.T) {
	tree := filTree(t, map[string]string{"d/e/": "", "d/f": "x", "d/lf": "-> f", "d/dang": "-> /nonexist"})
	for _, c := range [][]string{
		{"chmod", "600", "a.txt"},
		{"chmod", "-v", "600", "a.txt", "b.txt"},
		{"chmod", "-c", "644", "a.txt", "src/main.go"},
		{"chmod", "u+x", "a.txt"},
		{"chmod", "go-r", "a.txt", "-v"},
		{"chmod", "a=r", "a.txt"},
		{"chmod", "u=rwx,g=rx,o=", "a.txt"},
		{"chmod", "+x", "a.txt"},
		{"chmod", "-w", "a.txt"},
		{"chmod", "--", "-w", "a.txt"},
		{"chmod", "=r", "a.txt"},
		{"chmod", "u=rw,go=u-w", "a.txt"},
		{"chmod", "a+X", "a.txt", "src", "src/main.go", "-v"},
		{"chmod", "-x,+X", "src/main.go"},
		{"chmod", "7777", "a.txt", "-v"},
		{"chmod", "u+s,g+s,o+t", "emptydir", "-v"},
		{"chmod", "1", "a.txt"},
		{"chmod", "0755", "a.txt"},
		{"chmod", "xyz", "a.txt"},
		{"chmod", "88", "a.txt"},
		{"chmod", "77777", "a.txt"},
		{"chmod", "u+x", "nonexist", "a.txt"},
		{"chmod", "-v", "u+x", "nonexist"},
		{"chmod", "-f", "u+x", "nonexist"},
		{"chmod"},
		{"chmod", "644"},
		{"chmod", "-v", "600", "link.txt"},
		{"chmod", "600", "d/dang"},
		{"chmod", "-v", "600", "d/dang"},
		{"chmod", "--reference=src/main.go", "a.txt", "-v"},
		{"chmod", "-R", "go-rwx", "src"},
		{"chmod", "-Rv", "700", "src/sub"},
		{"chmod", "-Rc", "755", "d"},
		{"chmod", "a+r+w", "a.txt"},
		{"chmod", "g=u", "a.txt", "-v"},
		{"chmod", "-v", "a-x", "a.txt/"},
	} {
		compareGNU(t, tree, "", c...)
	}
	filCompareSorted(t, tree, "", "chmod", "-Rv", "700", "d")
	filCompareSorted(t, tree, "", "chmod", "-R", "--changes", "o-rwx", ".")
}
