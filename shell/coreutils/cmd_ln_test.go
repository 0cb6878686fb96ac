package coreutils

import "testing"

func TestLn(t *testing.T) {
	tree := filTree(t, map[string]string{"d/": "", "e/": "", "ld": "-> d", "d/x": "x"})
	for _, c := range [][]string{
		{"ln", "-s", "a.txt", "l1"},
		{"ln", "-sv", "a.txt", "l1"},
		{"ln", "-s", "a.txt", "."},
		{"ln", "-s", "a.txt", "d"},
		{"ln", "-sv", "a.txt", "b.txt", "d"},
		{"ln", "-s", "a.txt", "b.txt", "c"},
		{"ln", "-s", "a.txt", "b.txt", "csv.txt"},
		{"ln", "-s", "/x/y"},
		{"ln", "-sv", "src/main.go"},
		{"ln", "-s"},
		{"ln", "-s", "a.txt", "b.txt"},
		{"ln", "-sf", "a.txt", "b.txt", "-v"},
		{"ln", "-sf", "a.txt", "d", "-v"},
		{"ln", "-sfT", "a.txt", "d"},
		{"ln", "-sf", "a.txt", "a.txt"},
		{"ln", "-sf", "e", "ld"},
		{"ln", "-sfnv", "e", "ld"},
		{"ln", "-sn", "e", "ld"},
		{"ln", "-sr", "a.txt", "d/rel", "-v"},
		{"ln", "-srv", "src/sub/deep.txt", "e/x"},
		{"ln", "-sr", "link.txt", "e/y"},
		{"ln", "-s", "a/", "slash"},
		{"ln", "-s", "a.txt", "nonexist/"},
		{"ln", "-s", "a.txt", "b.txt/"},
		{"ln", "-s", "a.txt", "x/"},
		{"ln", "-sv", "", "emp"},
		{"ln", "-s", "a.txt", "-t", "d", "-v"},
		{"ln", "-t", "nodir", "-s", "a.txt"},
		{"ln", "-t", "a.txt", "-s", "b.txt"},
		{"ln", "-sT", "a.txt", "b", "c"},
		{"ln", "-sT", "a.txt"},
		{"ln", "-s", "a.txt", "nodir/x"},
		{"ln", "-s", "dangling-target", "dang", "-v"},
		{"ln", "-z"},
		{"ln", "nonexist", "h"},
		{"ln", "d", "h"},
		{"ln", "-r", "a.txt", "h"},
	} {
		compareGNU(t, tree, "", c...)
	}
	// Hard links: the FS has none.
	got := runOurs(t, copyTree(t, tree), "", "ln", "a.txt", "hard")
	want := outcome{"", "ln: failed to create hard link 'hard' => 'a.txt': Operation not supported\n", 1}
	if got != want {
		t.Errorf("ln a.txt hard:\n%s\nwant\n%s", got, want)
	}
}
