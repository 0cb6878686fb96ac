package coreutils

import (
	"os"
	"path/filepath"
	"testing"
)

func txtLinkTree(t *testing.T) string {
	tree := txtTree(t, map[string]string{"d/g": "g\n", "d/sub/h": "h\n", "f": "f\n"})
	for _, l := range [][2]string{
		{"d", "dl"}, {"f", "fl"}, {"nowhere", "broken"}, {"loop1", "loop2"}, {"loop2", "loop1"},
		{"../f", "d/up"}, {"dl/sub", "subl"}, {"../../d", "d/sub/back"},
	} {
		if err := os.Symlink(l[0], filepath.Join(tree, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

func TestRealpathGNU(t *testing.T) {
	tree := txtLinkTree(t)
	var cases [][]string
	for _, a := range []string{"f", "d", "dl", "dl/g", "dl/../f", "fl", "broken", "loop1", "nofile", "nofile/x",
		"f/", "f/x", "d/sub/..", "dl/..", "d/up", "subl/h", "subl/../g", "d/sub/back/g", ".", "/", "", "a b",
		"link.txt", "src/../a.txt", "src//main.go/", "dl/", "d/.", "f/.", "broken/", "nofile/.."} {
		for _, o := range []string{"", "-e", "-m", "-s", "-L"} {
			c := []string{"realpath"}
			if o != "" {
				c = append(c, o)
			}
			cases = append(cases, append(c, "--", a))
		}
	}
	cases = append(cases,
		[]string{"realpath", "f", "nofile/x", "dl/g"},
		[]string{"realpath", "-q", "f", "nofile/x", "loop1"},
		[]string{"realpath", "-P", "-L", "-P", "dl/../f"},
		[]string{"realpath", "-z", "f", "d"},
		[]string{"realpath", "--relative-to=d", "f", "dl/g", "d", "subl/h"},
		[]string{"realpath", "--relative-to=d/sub", "f", "d/g", "d/sub/h"},
		[]string{"realpath", "--relative-to=.", "f", "src/main.go", "."},
		[]string{"realpath", "--relative-to=src", "a.txt", "src/sub/deep.txt"},
		[]string{"realpath", "--relative-base=d", "f", "d/g", "d"},
		[]string{"realpath", "--relative-base=.", "--relative-to=d", "f", "d/g"},
		[]string{"realpath", "--relative-base=d", "--relative-to=.", "f", "d/g"},
		[]string{"realpath", "-e", "--relative-to=f", "d"},
		[]string{"realpath", "--relative-to=nofile/x", "d"},
		[]string{"realpath", "-m", "--relative-to=nofile/x", "d"},
		[]string{"realpath"},
		[]string{"realpath", "-x"},
	)
	for _, c := range cases {
		c := c
		t.Run(filepath.Join(c...), func(t *testing.T) {
			t.Parallel()
			txtCompareAbs(t, tree, "", c...)
		})
	}
}

// TestRealpathRoot checks names at and above the workspace root, where
// GNU (on the host) and the workspace cannot agree.
func TestRealpathRoot(t *testing.T) {
	tree := txtLinkTree(t)
	txtExpect(t, tree, "", "/\n", "", 0, "realpath", "..")
	txtExpect(t, tree, "", "/a.txt\n", "", 0, "realpath", "/../a.txt")
	txtExpect(t, tree, "", "/f\n", "", 0, "realpath", "d/sub/../../../f")
	txtExpect(t, tree, "", "/d/g\n/f\n", "", 0, "realpath", "/dl/g", "d/up")
	txtExpect(t, tree, "", "../../f\n", "", 0, "realpath", "--relative-to=/d/sub", "/f")
	txtExpect(t, tree, "", "", "realpath: missing operand\nTry 'realpath --help' for more information.\n", 1, "realpath")
}
