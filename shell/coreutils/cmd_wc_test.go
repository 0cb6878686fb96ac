package coreutils

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestWcGNU(t *testing.T) {
	tree := txtTree(t, map[string]string{
		"utf.txt": "héllo wörld\n日本語 テキスト\ne\u0301 x\u00a0y a\u2003b\n\ttab\there\n",
		"ctl.txt": "a\x80b \x01 c\rlonger line here\fx\vy\n\x00 z",
		"big.txt": string(make([]byte, 123456)),
		"spaces":  "   \n\n  a  \n",
	})
	txtRun(t, tree, []txtCase{
		txtC("wc", "a.txt"),
		txtC("wc", "a.txt", "b.txt"),
		txtC("wc", "-l", "a.txt"),
		txtC("wc", "-l", "a.txt", "b.txt", "noeol.txt"),
		txtC("wc", "-w", "a.txt", "big.txt"),
		txtC("wc", "-c", "big.txt"),
		txtC("wc", "-m", "utf.txt"),
		txtC("wc", "-mc", "utf.txt", "a.txt"),
		txtC("wc", "-L", "utf.txt"),
		txtC("wc", "-L", "ctl.txt", "src/main.go", "a.txt"),
		txtC("wc", "-lwmcL", "utf.txt", "ctl.txt", "spaces", "bin.dat"),
		txtC("wc", "--lines", "--words", "--bytes", "--chars", "--max-line-length", "utf.txt"),
		txtC("wc", "empty.txt"),
		txtC("wc", "empty.txt", "noeol.txt"),
		txtC("wc", "src/main.go", "src/util.go", "src/README.md", "src/sub/deep.txt"),
		txtC("wc", "nofile"),
		txtC("wc", "-l", "nofile"),
		txtC("wc", "a.txt", "nofile"),
		txtC("wc", "nofile", "other"),
		txtC("wc", "src"),
		txtC("wc", "-l", "src", "a.txt"),
		txtC("wc", "link.txt", "a.txt"),
		txtC("wc", "-x"),
		txtC("wc", "--bogus"),
		txtI("one two\nthree\n", "wc"),
		txtI("one two\nthree\n", "wc", "-l"),
		txtI("one two\nthree\n", "wc", "-w", "-"),
		txtI("one two\nthree\n", "wc", "-", "a.txt"),
		txtI("one two\nthree\n", "wc", "-c", "a.txt", "-"),
		txtI("", "wc"),
		txtI("x y z", "wc", "-L", "-w"),
	})
}

// TestWcStdinFile checks the width when stdin is a regular file, as
// with "wc < file".
func TestWcStdinFile(t *testing.T) {
	tree := makeTree(t)
	f, err := os.Open(filepath.Join(tree, "b.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errb bytes.Buffer
	e := testEnv(tree, "/", f, &out, &errb)
	wc, _ := Lookup("wc")
	wc(context.Background(), e, []string{"wc"})
	gnu, _ := exec.Command("bash", "-c", "cd "+tree+" && LC_ALL=C.UTF-8 wc < b.txt").Output()
	if out.String() != string(gnu) {
		t.Errorf("wc < b.txt: ours %q, GNU %q", out.String(), gnu)
	}
}
