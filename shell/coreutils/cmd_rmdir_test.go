package coreutils

import "testing"

func TestRmdir(t *testing.T) {
	tree := filTree(t, map[string]string{"a/b/c/": "", "p/q/": "", "ld": "-> emptydir", "s/t/": ""})
	for _, c := range [][]string{
		{"rmdir", "emptydir"},
		{"rmdir", "-v", "emptydir"},
		{"rmdir", "src"},
		{"rmdir", "a.txt"},
		{"rmdir", "nonexist"},
		{"rmdir", "-pv", "a/b/c"},
		{"rmdir", "-p", "a/b"},
		{"rmdir", "-pv", "p/q/"},
		{"rmdir", "--ignore-fail-on-non-empty", "src", "emptydir"},
		{"rmdir", "ld"},
		{"rmdir", "ld/"},
		{"rmdir", "-p", "./s/t"},
		{"rmdir"},
		{"rmdir", ""},
		{"rmdir", "."},
		{"rmdir", "-p", "src/sub/deep.txt"},
		{"rmdir", "-x"},
	} {
		compareGNU(t, tree, "", c...)
	}
}
