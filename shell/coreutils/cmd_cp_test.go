package coreutils

import "testing"

func TestCp(t *testing.T) {
	tree := filTree(t, map[string]string{
		"d/s/f": "x", "e/d/": "", "e/a.txt/": "", "la": "-> a.txt", "ld": "-> d",
		"dang": "-> nowhere", "g/": "",
	})
	for _, c := range [][]string{
		{"cp", "a.txt", "new.txt"},
		{"cp", "-v", "a.txt", "b.txt"},
		{"cp", "a.txt", "b.txt", "g"},
		{"cp", "-v", "a.txt", "b.txt", "g/"},
		{"cp"},
		{"cp", "a.txt"},
		{"cp", "a.txt", "a.txt"},
		{"cp", "a.txt", "./a.txt"},
		{"cp", "a.txt", "la"},
		{"cp", "src", "x"},
		{"cp", "-r", "src", "x"},
		{"cp", "-R", "src", "g"},
		{"cp", "-v", "la", "lb"},
		{"cp", "-rv", "la", "lc"},
		{"cp", "-rv", "ld", "lde"},
		{"cp", "-av", "la", "b.txt"},
		{"cp", "-Pv", "la", "b.txt"},
		{"cp", "-d", "la", "lx"},
		{"cp", "-rL", "la", "lfollow"},
		{"cp", "-rH", "ld", "lh"},
		{"cp", "-rL", "ld", "lh"},
		{"cp", "-r", "dang", "dcopy"},
		{"cp", "a.txt", "dang"},
		{"cp", "a.txt", "b.txt", "c"},
		{"cp", "a.txt", "b.txt", "csv.txt"},
		{"cp", "-r", "e", "a.txt"},
		{"cp", "a.txt", "e"},
		{"cp", "-n", "a.txt", "b.txt"},
		{"cp", "-nv", "a.txt", "new"},
		{"cp", "-T", "a.txt", "b.txt", "c"},
		{"cp", "-Tr", "d", "e"},
		{"cp", "-T", "a.txt", "e"},
		{"cp", "-t", "e"},
		{"cp", "-t", "nonexist", "a.txt"},
		{"cp", "-t", "a.txt", "b.txt"},
		{"cp", "-t", "g", "-v", "a.txt", "b.txt"},
		{"cp", "-v", "nonexist", "a.txt"},
		{"cp", "-r", "e/", "f/"},
		{"cp", "a.txt/", "x"},
		{"cp", "-v", "a.txt", "e/"},
		{"cp", "-v", "a.txt", "nodir/"},
		{"cp", "-v", "a.txt", "nodir/x"},
		{"cp", "-p", "src/main.go", "m"},
		{"cp", "src/main.go", "b.txt"},
		{"cp", "-a", "src", "copy"},
		{"cp", "--preserve=mode", "src/main.go", "m"},
		{"cp", "-x", "--bogus"},
		{"cp", "-f", "a.txt", "b.txt"},
		{"cp", "", "x"},
		{"cp", "-r", "src/sub", "."},
		{"cp", "--remove-destination", "a.txt", "la"},
	} {
		compareGNU(t, tree, "", c...)
	}
	for _, c := range [][]string{
		{"cp", "-rv", "src", "x"},
		{"cp", "-rv", "d", "e"},
		{"cp", "-rv", "d/", "g"},
		{"cp", "-av", "src", "d", "g"},
		{"cp", "-rv", "e/d/", "d"},
	} {
		filCompareSorted(t, tree, "", c...)
	}
	// GNU copies into itself until it meets the copy, in inode order.
	for _, c := range [][]string{
		{"cp", "-r", "src", "src"},
		{"cp", "-r", "src", "src/sub/x"},
		{"cp", "-r", "src/", "src/sub/x"},
	} {
		filCompareNoTree(t, tree, "", c...)
	}
	// -p and -a keep the modification time.
	show := []string{"stat", "-c", "%n %y %a", "m", "copy", "copy/main.go", "copy/sub"}
	filCompareSeq(t, tree, []string{"cp", "-p", "src/main.go", "m"}, show)
	filCompareSeq(t, tree, []string{"cp", "-a", "src", "copy"}, show)
}
