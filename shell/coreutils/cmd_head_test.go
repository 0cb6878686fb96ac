package coreutils

import (
	"strings"
	"testing"
)

func TestHeadGNU(t *testing.T) {
	long := strings.Repeat("0123456789\n", 20000)
	tree := txtTree(t, map[string]string{"long.txt": long, "z.txt": "a\x00b\x00c"})
	txtRun(t, tree, []txtCase{
		txtC("head", "b.txt"),
		txtC("head", "-n", "3", "b.txt"),
		txtC("head", "-n3", "a.txt", "b.txt"),
		txtC("head", "-n", "-3", "b.txt"),
		txtC("head", "-n", "-1", "noeol.txt", "a.txt"),
		txtC("head", "-n", "-100", "b.txt"),
		txtC("head", "-n", "0", "b.txt"),
		txtC("head", "-n", "-0", "noeol.txt"),
		txtC("head", "-c", "5", "b.txt"),
		txtC("head", "-c", "-5", "b.txt"),
		txtC("head", "-c", "-1k", "long.txt"),
		txtC("head", "-c", "1k", "long.txt"),
		txtC("head", "-c", "2kB", "long.txt"),
		txtC("head", "-n", "-19990", "long.txt"),
		txtC("head", "--lines=2", "--bytes=3", "b.txt"),
		txtC("head", "-q", "-n1", "a.txt", "b.txt"),
		txtC("head", "-v", "-n1", "a.txt"),
		txtC("head", "-n1", "-q", "-v", "a.txt", "b.txt"),
		txtC("head", "-3", "b.txt"),
		txtC("head", "-3c", "b.txt"),
		txtC("head", "-2v", "b.txt"),
		txtC("head", "-1k", "long.txt"),
		txtC("head", "-2x", "b.txt"),
		txtC("head", "-c", "3", "-1", "b.txt"),
		txtC("head", "-z", "-n2", "z.txt"),
		txtC("head", "-n", "x", "b.txt"),
		txtC("head", "-c", "1x", "b.txt"),
		txtC("head", "-c", "1Y", "b.txt"),
		txtC("head", "-n"),
		txtC("head", "-k"),
		txtC("head", "nofile"),
		txtC("head", "a.txt", "nofile", "b.txt"),
		txtC("head", "src", "a.txt"),
		txtC("head", "empty.txt", "a.txt"),
		txtI("s1\ns2\n", "head", "-n1"),
		txtI("s1\ns2\n", "head", "-", "a.txt"),
		txtI("s1\ns2\ns3", "head", "-c", "-2"),
		txtC("head", "-n", "+2", "b.txt"),
		txtC("head", "-n", " 2", "b.txt"),
	})
}
