package coreutils

import "testing"

func TestXargs(t *testing.T) {
	tree := filTree(t, map[string]string{"sp ace": "s", "it's": "q"})
	type tc struct {
		stdin string
		args  []string
	}
	cases := []tc{
		{"a.txt b.txt\ncsv.txt\n", []string{"xargs", "stat", "-c", "%n"}},
		{"a.txt b.txt\ncsv.txt\n", []string{"xargs", "-n", "1", "stat", "-c", "%n:%s"}},
		{"a.txt b.txt\ncsv.txt\n", []string{"xargs", "-n2", "-t", "stat", "-c", "%n"}},
		{"a.txt\nb.txt\n", []string{"xargs", "-I", "{}", "stat", "-c", "<%n>", "{}"}},
		{"  a.txt  \n b.txt\n", []string{"xargs", "-I{}", "ls", "-d", "[{}]"}},
		{"a.txt\x00sp ace\x00", []string{"xargs", "-0", "stat", "-c", "%n"}},
		{"a.txt,sp ace,b.txt", []string{"xargs", "-d", ",", "stat", "-c", "%n"}},
		{"a.txt\n\nb.txt\n", []string{"xargs", "-d", "\\n", "-n1", "ls", "-d"}},
		{"", []string{"xargs", "-r", "ls", "nonexist"}},
		{"", []string{"xargs", "--no-run-if-empty", "stat"}},
		{"", []string{"xargs", "stat", "-c", "%n", "a.txt"}},
		{"'sp ace' \"it's\" a\\.txt\n", []string{"xargs", "-n1", "stat", "-c", "%n"}},
		{"a.txt 'b.txt\n", []string{"xargs", "stat", "-c", "%n"}},
		// Files that exist: GNU xargs prints the quote error while ls
		// runs, so two writers to stderr would interleave at random.
		{"a.txt b.txt \"a b\n", []string{"xargs", "ls", "-d"}},
		{"a.txt\n", []string{"xargs", "-n", "0"}},
		{"a.txt\n", []string{"xargs", "-L", "0"}},
		{"a.txt\n", []string{"xargs", "-I"}},
		{"a.txt\n", []string{"xargs", "-s", "0", "ls"}},
		{"a.txt\n", []string{"xargs", "-P", "x", "ls"}},
		{"a.txt \nb.txt\ncsv.txt\n", []string{"xargs", "-L", "1", "stat", "-c", "%n"}},
		{"a.txt\nb.txt\nEND\ncsv.txt\n", []string{"xargs", "-E", "END", "stat", "-c", "%n"}},
		{"a.txt nonexist b.txt\n", []string{"xargs", "stat", "-c", "%n"}},
		{"a.txt nonexist b.txt\n", []string{"xargs", "-n1", "stat", "-c", "%n"}},
		{"a b c d e\n", []string{"xargs", "-s", "12", "ls", "-d"}},
		{"x\n", []string{"xargs", "-a", "nonexist", "ls"}},
		{"", []string{"xargs", "-a", "a.txt", "ls", "-d"}},
		{"src emptydir\n", []string{"xargs", "rmdir"}},
		{"new1 new2\n", []string{"xargs", "mkdir", "-v"}},
		{"a.txt\n", []string{"xargs", "--bogus"}},
		{"a.txt b.txt\n", []string{"xargs", "--max-args=1", "--verbose", "ls"}},
		{"src/main.go\n", []string{"xargs", "--", "ls", "-d"}},
		{"a.txt\n", []string{"xargs", "-s", "5", "ls"}},
	}
	for _, c := range cases {
		compareGNU(t, tree, c.stdin, c.args...)
	}
	// The default command is echo, which this package may not have.
	if _, ok := Lookup("echo"); ok {
		for _, c := range []tc{
			{"a b\nc\n", []string{"xargs"}},
			{"a b\nc\n", []string{"xargs", "-n", "1"}},
			{"", []string{"xargs"}},
			{"", []string{"xargs", "-r"}},
		} {
			compareGNU(t, tree, c.stdin, c.args...)
		}
	}
}
