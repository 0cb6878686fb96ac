package coreutils

import (
	"strings"
	"testing"
)

func TestTailGNU(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 30000; i++ {
		sb.WriteString(strings.Repeat("x", i%100))
		sb.WriteString("\n")
	}
	tree := txtTree(t, map[string]string{"long.txt": sb.String(), "z.txt": "a\x00b\x00c"})
	txtRun(t, tree, []txtCase{
		txtC("tail", "b.txt"),
		txtC("tail", "-n", "3", "b.txt"),
		txtC("tail", "-n3", "a.txt", "b.txt"),
		txtC("tail", "-n", "+3", "b.txt"),
		txtC("tail", "-n", "+0", "b.txt"),
		txtC("tail", "-n", "-2", "noeol.txt", "a.txt"),
		txtC("tail", "-n", "1", "noeol.txt", "a.txt"),
		txtC("tail", "-n", "100", "b.txt"),
		txtC("tail", "-n", "0", "b.txt"),
		txtC("tail", "-c", "5", "b.txt"),
		txtC("tail", "-c", "+5", "b.txt"),
		txtC("tail", "-c", "+500", "b.txt"),
		txtC("tail", "-c", "1k", "long.txt"),
		txtC("tail", "-n", "2000", "long.txt"),
		txtC("tail", "-n", "+29990", "long.txt"),
		txtC("tail", "--lines=2", "--bytes=3", "b.txt"),
		txtC("tail", "-q", "-n1", "a.txt", "b.txt"),
		txtC("tail", "-v", "-n1", "a.txt"),
		txtC("tail", "-3", "b.txt"),
		txtC("tail", "+11", "b.txt"),
		txtC("tail", "-3c", "b.txt"),
		txtC("tail", "+3c", "b.txt"),
		txtC("tail", "-1b", "long.txt"),
		txtC("tail", "-l", "b.txt"),
		txtC("tail", "-2", "--", "b.txt"),
		txtC("tail", "-1", "a.txt", "b.txt"),
		txtC("tail", "+2", "a.txt", "b.txt"),
		txtC("tail", "-3q", "b.txt"),
		txtC("tail", "-z", "-n2", "z.txt"),
		txtC("tail", "-n", "x", "b.txt"),
		txtC("tail", "-c", "1x", "b.txt"),
		txtC("tail", "-n", "99999999999999999999999", "b.txt"),
		txtC("tail", "-n"),
		txtC("tail", "-k"),
		txtC("tail", "nofile"),
		txtC("tail", "a.txt", "nofile", "b.txt"),
		txtC("tail", "-n1", "src", "a.txt"),
		txtC("tail", "empty.txt", "a.txt"),
		txtI("s1\ns2\n", "tail", "-n1"),
		txtI("s1\ns2\n", "tail", "-n1", "-", "a.txt"),
		txtI("s1\ns2\ns3", "tail", "-c", "2"),
		txtI("s1\ns2\ns3", "tail"),
	})
}

func TestTailFollow(t *testing.T) {
	tree := makeTree(t)
	txtExpect(t, tree, "", "", "tail: -f is not supported\n", 1, "tail", "--follow=name", "a.txt")
	txtExpect(t, tree, "", "", "tail: -f is not supported\n", 1, "tail", "-f", "a.txt")
	txtExpect(t, tree, "", "", "tail: -f is not supported\n", 1, "tail", "-F", "a.txt")
	txtExpect(t, tree, "", "", "tail: -f is not supported\n", 1, "tail", "-1f", "a.txt")
	txtExpect(t, tree, "", "", "tail: -f is not supported\n", 1, "tail", "--follow", "a.txt")
}
