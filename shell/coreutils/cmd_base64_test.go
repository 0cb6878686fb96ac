package coreutils

import (
	"strings"
	"testing"
)

func TestBase64GNU(t *testing.T) {
	var all []byte
	for i := 0; i < 1000; i++ {
		all = append(all, byte(i*7))
	}
	tree := txtTree(t, map[string]string{
		"bin":     string(all),
		"enc.txt": "aGVsbG8gd29ybGQ=\n",
		"bad.txt": "aGVs*bG8=\n",
		"nopad":   "aGVsbG8",
		"two":     "aGVsbG8=aGVsbG8=\n",
		"crlf":    "aGVs\r\nbG8=\r\n",
		"pads":    "====",
		"lines":   "aGVs\nbG8=\n\n",
	})
	txtRun(t, tree, []txtCase{
		txtC("base64", "a.txt"),
		txtC("base64", "bin"),
		txtC("base64", "-w", "4", "a.txt"),
		txtC("base64", "-w0", "a.txt"),
		txtC("base64", "--wrap=10", "bin"),
		txtC("base64", "empty.txt"),
		txtC("base64", "-w0", "empty.txt"),
		txtC("base64", "-d", "enc.txt"),
		txtC("base64", "--decode", "two"),
		txtC("base64", "-d", "lines"),
		txtC("base64", "-d", "bad.txt"),
		txtC("base64", "-di", "bad.txt"),
		txtC("base64", "-d", "nopad"),
		txtC("base64", "-d", "crlf"),
		txtC("base64", "-d", "-i", "crlf"),
		txtC("base64", "-d", "pads"),
		txtC("base64", "-d", "empty.txt"),
		txtC("base64", "-w", "x", "a.txt"),
		txtC("base64", "-w", "-1", "a.txt"),
		txtC("base64", "a", "b"),
		txtC("base64", "nofile"),
		txtC("base64", "src"),
		txtC("base64", "-x"),
		txtI("hello", "base64"),
		txtI("hello", "base64", "-"),
		txtI("aGVsbG8=", "base64", "-d"),
	})
}

func TestBase64RoundTrip(t *testing.T) {
	tree := makeTree(t)
	data := strings.Repeat("The quick brown fox\x00\xff", 5000)
	enc := runOurs(t, tree, data, "base64", "-w", "7")
	dec := runOurs(t, tree, enc.stdout, "base64", "-d")
	if dec.stdout != data || dec.code != 0 {
		t.Errorf("round trip failed: %d bytes back, status %d", len(dec.stdout), dec.code)
	}
}
