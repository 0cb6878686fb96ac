package coreutils

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

var sedGNUCases = []struct {
	stdin string
	args  []string
}{
	// Printing, line addresses, ranges.
	{"", []string{"sed", "-n", "2,4p", "b.txt"}},
	{"", []string{"sed", "-n", "$p", "b.txt"}},
	{"", []string{"sed", "$d", "b.txt"}},
	{"", []string{"sed", "3,1p;d", "b.txt"}},
	{"", []string{"sed", "-n", "/alpha/,/gamma/p", "a.txt"}},
	{"", []string{"sed", "-n", "/beta/,$p", "a.txt"}},
	{"", []string{"sed", "-n", "2,+1p", "b.txt"}},
	{"", []string{"sed", "-n", "2,~4p", "b.txt"}},
	{"", []string{"sed", "-n", "4,~4p", "b.txt"}},
	{"", []string{"sed", "-n", "0~4p", "b.txt"}},
	{"", []string{"sed", "-n", "3~0p", "b.txt"}},
	{"", []string{"sed", "-n", "1~3p", "b.txt"}},
	{"", []string{"sed", "0,/e/d", "b.txt"}},
	{"", []string{"sed", "1,/e/d", "b.txt"}},
	{"", []string{"sed", "2!d", "b.txt"}},
	{"", []string{"sed", "-n", "/x/I,+1p", "dup.txt"}},
	{"", []string{"sed", "-n", "/ALPHA/Ip", "a.txt"}},
	{"", []string{"sed", "-n", `\%beta%p`, "a.txt"}},
	{"", []string{"sed", "-n", "$=", "a.txt", "b.txt"}},
	{"", []string{"sed", "-s", "-n", "$=", "a.txt", "b.txt"}},
	{"", []string{"sed", "-n", "$=", "empty.txt"}},
	{"", []string{"sed", "=", "noeol.txt"}},
	{"", []string{"sed", "-n", "/beta/{=;p}", "a.txt"}},
	{"", []string{"sed", "-n", "-e", "2{p;n;p}", "a.txt"}},
	{"", []string{"sed", "2q", "a.txt"}},
	{"", []string{"sed", "2Q", "a.txt"}},
	{"", []string{"sed", "q5", "a.txt"}},
	{"", []string{"sed", "q", "noeol.txt"}},
	// Substitution.
	{"", []string{"sed", "s/a/b/", "a.txt"}},
	{"", []string{"sed", "s/a/b/g", "a.txt"}},
	{"", []string{"sed", "s/a/[&]/2", "a.txt"}},
	{"", []string{"sed", "s/a/[&]/2g", "a.txt"}},
	{"", []string{"sed", "-n", "s/alpha/A/p", "a.txt"}},
	{"", []string{"sed", "s/ALPHA/[&]/ig", "a.txt"}},
	{"", []string{"sed", `s/\(a\)\(l\)/\2\1\0/`, "a.txt"}},
	{"", []string{"sed", "-E", `s/(\w+) (\w+)/\2 \1/`, "a.txt"}},
	{"", []string{"sed", "-r", `s/^([a-z]+),([0-9]+)/\2:\1/`, "csv.txt"}},
	{"", []string{"sed", `s/\w\+/\u&/g; s/o/\U&x\Ey/`, "a.txt"}},
	{"", []string{"sed", `s/.*/\L\u&/`, "a.txt"}},
	{"", []string{"sed", "-E", `s/(\w+) (\w+)/\u\2 \U\1/`, "a.txt"}},
	{"", []string{"sed", `s/x/\n/;s/a/\t&\\n/`, "a.txt"}},
	{"", []string{"sed", `s/a/\x26/`, "a.txt"}},
	{"", []string{"sed", `s/a\x2e/X/g`, "a.txt"}},
	{"", []string{"sed", `s/[\t]/X/g`, "crlf.txt"}},
	{"", []string{"sed", `s/\r$//`, "crlf.txt"}},
	{"", []string{"sed", `s|a\|b|X|g`, "a.txt"}},
	{"", []string{"sed", `s/a\|b/X/g`, "a.txt"}},
	{"", []string{"sed", "s,/,|,g", "src/main.go"}},
	{"", []string{"sed", "s/x*/-/g", "a.txt"}},
	{"", []string{"sed", "s/b*/X/2", "a.txt"}},
	{"", []string{"sed", "s/$/;/", "noeol.txt"}},
	{"", []string{"sed", "s/^/> /", "a.txt"}},
	{"", []string{"sed", "N;N;s/^b/X/Mg;s/a$/Y/M", "a.txt"}},
	{"", []string{"sed", "/a/s//X/g", "a.txt"}},
	{"", []string{"sed", "s/a/X/w out.txt", "a.txt"}},
	{"", []string{"sed", "s/a/X/w /dev/stdout", "a.txt"}},
	{"", []string{"sed", "y/abc/xyz/", "a.txt"}},
	{"", []string{"sed", `y/a\qc/xyz/`, "a.txt"}},
	{"", []string{"sed", "y/éa/eA/", "utf8.txt"}},
	// Hold space, multiline, branches.
	{"", []string{"sed", "1!G;h;$!d", "a.txt"}},
	{"", []string{"sed", "-n", "h;n;G;p", "b.txt"}},
	{"", []string{"sed", ":a;N;$!ba;s/\\n/,/g", "a.txt"}},
	{"", []string{"sed", "$!N;P;D", "dup.txt"}},
	{"", []string{"sed", "$!N;/^\\(.*\\)\\n\\1$/!P;D", "a.txt"}},
	{"", []string{"sed", "N;s/\\n/-/", "a.txt", "nums.txt"}},
	{"", []string{"sed", "-n", "N;l", "a.txt"}},
	{"", []string{"sed", "n;s/^/X/", "a.txt"}},
	{"", []string{"sed", "-e", ":a", "-e", "s/x/y/;ta", "dup.txt"}},
	{"", []string{"sed", "s/y/Y/;T;s/$/!/", "dup.txt"}},
	{"", []string{"sed", "-n", "/x/{s//X/;p}", "dup.txt"}},
	{"", []string{"sed", "x", "noeol.txt"}},
	{"", []string{"sed", "G", "noeol.txt"}},
	{"", []string{"sed", "p", "noeol.txt"}},
	{"", []string{"sed", "z;s/^$/empty/", "a.txt"}},
	// Text commands.
	{"", []string{"sed", "1a foo\\tbar", "a.txt"}},
	{"", []string{"sed", "1a\\  foo", "a.txt"}},
	{"", []string{"sed", "1a   foo\\", "a.txt"}},
	{"", []string{"sed", "-e", "1a\\", "-e", "foo", "a.txt"}},
	{"", []string{"sed", "1a\\\n  two\\\nthree", "a.txt"}},
	{"", []string{"sed", "$a end", "noeol.txt"}},
	{"", []string{"sed", "2i\\\ninserted", "a.txt"}},
	{"", []string{"sed", "1i\\", "a.txt"}},
	{"", []string{"sed", "1,2c\\\nchanged", "b.txt"}},
	{"", []string{"sed", "2!c\\\nchanged", "a.txt"}},
	{"", []string{"sed", "/beta/c gone", "a.txt"}},
	{"", []string{"sed", "-e", "1{a X", "-e", "N;P;D}", "a.txt"}},
	{"", []string{"sed", "-e", "1{a X", "-e", "Q}", "a.txt"}},
	{"", []string{"sed", "1r nums.txt", "a.txt"}},
	{"", []string{"sed", "0r nums.txt", "a.txt"}},
	{"", []string{"sed", "r nofile", "a.txt"}},
	{"", []string{"sed", "1R b.txt\n1R b.txt\n2R b.txt", "a.txt"}},
	{"", []string{"sed", "1w out.txt", "a.txt"}},
	{"", []string{"sed", "-n", "l", "crlf.txt"}},
	{"", []string{"sed", "-n", "l 20", "csv.txt"}},
	{"", []string{"sed", "-l", "5", "-n", "l", "utf8.txt"}},
	{"", []string{"sed", "F", "a.txt"}},
	{"", []string{"sed", "-z", `s/\n/,/g`, "a.txt"}},
	{"", []string{"sed", "#n\np", "a.txt"}},
	{"", []string{"sed", "-s", "1i head", "a.txt", "nums.txt"}},
	// In place.
	{"", []string{"sed", "-i", "s/a/b/g", "a.txt"}},
	{"", []string{"sed", "-i.bak", "s/a/b/g", "a.txt"}},
	{"", []string{"sed", "-i", "s/a/b/", "link.txt"}},
	{"", []string{"sed", "--follow-symlinks", "-i.orig", "s/a/b/", "link.txt"}},
	{"", []string{"sed", "-i", "2q", "b.txt"}},
	{"", []string{"sed", "-n", "-i", "p", "a.txt", "b.txt"}},
	{"", []string{"sed", "-i", "$a end", "noeol.txt", "a.txt"}},
	{"", []string{"sed", "-i", "1d", "src/main.go"}},
	{"", []string{"sed", "-i", "s/a/b/", "src"}},
	{"", []string{"sed", "-i", "s/a/b/", "nofile", "a.txt"}},
	{"", []string{"sed", "-i", "p"}},
	{"", []string{"sed", "-ibak/*", "p", "a.txt"}},
	// Standard input.
	{"one\ntwo\n", []string{"sed", "s/o/0/g"}},
	{"one\ntwo", []string{"sed", "-n", "$p"}},
	{"one\ntwo\n", []string{"sed", "p", "-", "a.txt"}},
	// Errors.
	{"", []string{"sed", "s/a/b", "a.txt"}},
	{"", []string{"sed", "s/a/b/k", "a.txt"}},
	{"", []string{"sed", "k", "a.txt"}},
	{"", []string{"sed", "-e", "p", "-e", "s/a/b", "a.txt"}},
	{"", []string{"sed", "-n", "$=", "a.txt", "nofile", "b.txt"}},
	{"", []string{"sed", "p", "src"}},
	{"", []string{"sed", `s/\(a\)\2/x/`, "a.txt"}},
	{"", []string{"sed", "-E", "s/*a/x/", "a.txt"}},
	{"", []string{"sed", "s/a**/x/", "a.txt"}},
	{"", []string{"sed", "-E", "s/a**/x/", "a.txt"}},
	{"", []string{"sed", "-E", "s/a)/x/", "a.txt"}},
	{"", []string{"sed", "s/^*a/x/", "a.txt"}},
	{"", []string{"sed", "s/[:alpha:]/X/", "a.txt"}},
	{"", []string{"sed", "s/a[/x/", "a.txt"}},
	{"", []string{"sed", "s//x/", "a.txt"}},
	{"", []string{"sed", "b foo", "a.txt"}},
	{"", []string{"sed", "0,3d", "b.txt"}},
	{"", []string{"sed", "+1d", "b.txt"}},
	{"", []string{"sed", "y/ab/x/", "a.txt"}},
	{"", []string{"sed", "s/a/b/0", "a.txt"}},
	{"", []string{"sed", "s/a/b/gg", "a.txt"}},
	{"", []string{"sed", "s/a/\\1/", "a.txt"}},
	{"", []string{"sed", "1{a foo}", "a.txt"}},
	{"", []string{"sed", "a", "a.txt"}},
	{"", []string{"sed", "1,", "a.txt"}},
	{"", []string{"sed", "1!!p", "a.txt"}},
	{"", []string{"sed", "/x", "a.txt"}},
	{"", []string{"sed", ": ", "a.txt"}},
	{"", []string{"sed", "}", "a.txt"}},
	{"", []string{"sed", "pq", "a.txt"}},
	{"", []string{"sed", "1,3q", "a.txt"}},
	{"", []string{"sed", "w", "a.txt"}},
	{"", []string{"sed", "-f", "nofile", "a.txt"}},
	{"", []string{"sed", "-f", "s1.sed", "a.txt"}},
	{"", []string{"sed", "-f", "s3.sed", "a.txt"}},
	{"", []string{"sed", "-n", "-f", "s3.sed", "-e", "$=", "a.txt"}},
	{"", []string{"sed", "-f", "s4.sed", "a.txt"}},
	{"", []string{"sed", "-f", "s5.sed", "a.txt"}},
	{"p\n", []string{"sed", "-f", "-", "a.txt"}},
	{"", []string{"sed", "w /dev/stderr", "a.txt"}},
	{"", []string{"sed"}},
	{"", []string{"sed", "-k"}},
	{"", []string{"sed", "--version"}},
	{"", []string{"sed", "--help"}},
}

func TestSedGNU(t *testing.T) {
	tree := grpTree(t)
	for _, c := range sedGNUCases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			compareGNU(t, tree, c.stdin, c.args...)
		})
	}
}

// An endless loop in a script stops when the context is cancelled.
func TestSedCancel(t *testing.T) {
	tree := grpTree(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	e := testEnv(tree, "/", strings.NewReader("x\n"), &out, &errb)
	done := make(chan int, 1)
	go func() { done <- sedMain(ctx, e, []string{"sed", ":a;ba"}) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("sed :a;ba did not stop on cancellation")
	}
}
