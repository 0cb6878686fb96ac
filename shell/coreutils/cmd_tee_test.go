package coreutils

import "testing"

func TestTeeGNU(t *testing.T) {
	tree := makeTree(t)
	txtRun(t, tree, []txtCase{
		txtI("hello\n", "tee"),
		txtI("hello\n", "tee", "out.txt"),
		txtI("hello\n", "tee", "o1", "o2"),
		txtI("hello\n", "tee", "a.txt"),
		txtI("hello\n", "tee", "-a", "a.txt"),
		txtI("hello\n", "tee", "--append", "noeol.txt", "new"),
		txtI("hello\n", "tee", "-"),
		txtI("hello\n", "tee", "nodir/x", "ok.txt"),
		txtI("hello\n", "tee", "src"),
		txtI("hello\n", "tee", "-i", "-p", "x"),
		txtI("hello\n", "tee", "--output-error=warn", "x"),
		txtI("hello\n", "tee", "--output-error", "x"),
		txtI("hello\n", "tee", "--output-error=bad", "x"),
		txtI("", "tee", "empty"),
		txtI("hello\n", "tee", "-x"),
	})
}

func TestBasenameGNU(t *testing.T) {
	tree := makeTree(t)
	txtRun(t, tree, []txtCase{
		txtC("basename", "/a/b"),
		txtC("basename", "/a/b/"),
		txtC("basename", "a"),
		txtC("basename", "/"),
		txtC("basename", "//"),
		txtC("basename", ""),
		txtC("basename", "/c/d.txt", ".txt"),
		txtC("basename", ".txt", ".txt"),
		txtC("basename", "a.txt/", ".txt"),
		txtC("basename", "/", "/"),
		txtC("basename", "-a", "/a/b", "/c/d.txt", "e"),
		txtC("basename", "-s", ".txt", "/c/d.txt", "/e/f.txt", "g.go"),
		txtC("basename", "--suffix=.go", "src/main.go"),
		txtC("basename", "-z", "a/b"),
		txtC("basename", "a/b/c", "-a"),
		txtC("basename", "a/b/c", "-z"),
		txtC("basename", "-z", "a/b/c", "-s"),
		txtC("basename", "--", "-a"),
		txtC("basename"),
		txtC("basename", "a", "b", "c"),
		txtC("basename", "-a"),
		txtC("basename", "-x"),
	})
}

func TestDirnameGNU(t *testing.T) {
	tree := makeTree(t)
	txtRun(t, tree, []txtCase{
		txtC("dirname", "/a/b/"),
		txtC("dirname", "/a/b", "c", "a/b", "//x", "/", "", ".", "..", "a//b//", "///a///b///"),
		txtC("dirname", "-z", "a/b", "c"),
		txtC("dirname", "--zero", "/usr/lib"),
		txtC("dirname"),
		txtC("dirname", "-x"),
	})
}
