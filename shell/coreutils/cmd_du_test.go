package coreutils

import (
	"strings"
	"testing"
)

func TestDu(t *testing.T) {
	tree := filTree(t, map[string]string{"big": strings.Repeat("x", 5000), "e/f/g": "", "huge": strings.Repeat("y", 300000), "ld": "-> src"})
	for _, c := range [][]string{
		{"du"},
		{"du", "-a"},
		{"du", "-a", "src"},
		{"du", "-s"},
		{"du", "-sh"},
		{"du", "-sh", "src", "e", "big"},
		{"du", "-b", "src", "a.txt"},
		{"du", "-ab", "src"},
		{"du", "-c", "a.txt", "big", "huge"},
		{"du", "-ch", "src", "huge"},
		{"du", "-d", "0"},
		{"du", "-d", "1"},
		{"du", "--max-depth=1", "-b"},
		{"du", "--max-depth=1", "-a", "-h"},
		{"du", "-h", "big", "huge"},
		{"du", "--apparent-size", "big", "a.txt", "src"},
		{"du", "-hb", "big"},
		{"du", "-bh", "big"},
		{"du", "-sa"},
		{"du", "-s", "-d", "1"},
		{"du", "-s", "-d", "0"},
		{"du", "-d", "x"},
		{"du", "nonexist", "a.txt"},
		{"du", "link.txt", "ld"},
		{"du", "-L", "ld"},
		{"du", "-S"},
		{"du", "-m", "huge"},
		{"du", "--block-size=1K", "-s", "src"},
		{"du", "-0", "a.txt", "b.txt"},
		{"du", "emptydir", "src/"},
	} {
		filCompareSorted(t, tree, "", c...)
	}
}
