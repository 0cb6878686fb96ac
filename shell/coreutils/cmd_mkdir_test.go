package coreutils

import "testing"

func TestMkdir(t *testing.T) {
	tree := makeTree(t)
	for _, c := range [][]string{
		{"mkdir", "new"},
		{"mkdir", "-v", "n1", "n2"},
		{"mkdir", "src"},
		{"mkdir", "a.txt"},
		{"mkdir", "x/y"},
		{"mkdir", "-p", "x/y/z"},
		{"mkdir", "-pv", "x/./y/../w", "./z//"},
		{"mkdir", "-p", "src", "src/sub"},
		{"mkdir", "-p", "a.txt"},
		{"mkdir", "-pv", "a.txt/x/y"},
		{"mkdir", "a.txt/x"},
		{"mkdir", "-m", "700", "m"},
		{"mkdir", "-m", "u=rwx,g=rx,o=", "m"},
		{"mkdir", "-m", "-w", "m"},
		{"mkdir", "-m", "a+rwx", "-v", "m"},
		{"mkdir", "-pm", "700", "p/q"},
		{"mkdir", "-m", "xyz", "m"},
		{"mkdir", "--mode=2755", "m"},
		{"mkdir"},
		{"mkdir", ""},
		{"mkdir", "-q", "m"},
		{"mkdir", "src/sub/"},
		{"mkdir", "--parents", "--verbose", "deep/er/est/"},
		{"mkdir", "-p", "link.txt/x"},
	} {
		compareGNU(t, tree, "", c...)
	}
}
