package coreutils

import "testing"

func TestCatGNU(t *testing.T) {
	tree := txtTree(t, map[string]string{
		"blank.txt":  "a\n\n\n\nb",
		"blank2.txt": "\n\nc\n\n",
		"ctl.txt":    "\x01\x7f\x80\xff\xe9\tx\r\n\x00end",
	})
	txtRun(t, tree, []txtCase{
		txtC("cat", "a.txt"),
		txtC("cat", "a.txt", "b.txt", "noeol.txt"),
		txtC("cat", "-n", "a.txt", "noeol.txt", "blank2.txt"),
		txtC("cat", "-b", "blank.txt", "blank2.txt"),
		txtC("cat", "-s", "blank.txt", "blank2.txt"),
		txtC("cat", "-sn", "blank.txt", "blank2.txt"),
		txtC("cat", "-sb", "blank.txt", "blank2.txt"),
		txtC("cat", "-nb", "blank2.txt"),
		txtC("cat", "-E", "crlf.txt", "blank.txt"),
		txtC("cat", "-A", "ctl.txt", "bin.dat"),
		txtC("cat", "-v", "ctl.txt"),
		txtC("cat", "-T", "src/main.go"),
		txtC("cat", "-e", "ctl.txt"),
		txtC("cat", "-t", "ctl.txt"),
		txtC("cat", "--number", "--show-ends", "a.txt"),
		txtC("cat", "--show-all", "ctl.txt"),
		txtC("cat", "-u", "a.txt"),
		txtI("from stdin\n", "cat"),
		txtI("from stdin\n", "cat", "a.txt", "-", "noeol.txt"),
		txtI("x\n\n\ny\n", "cat", "-s", "-"),
		txtC("cat", "nofile"),
		txtC("cat", "a.txt", "nofile", "b.txt"),
		txtC("cat", "src"),
		txtC("cat", "emptydir", "a.txt"),
		txtC("cat", "link.txt"),
		txtC("cat", "-x", "a.txt"),
		txtC("cat", "--bogus"),
		txtC("cat", "a b"),
		txtC("cat", "it's"),
		txtC("cat", "a:b"),
		txtC("cat", "--", "-n"),
		txtC("cat", "empty.txt", "-n", "empty.txt"),
	})
}
