package coreutils

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// grpTree is the standard tree plus files for grep's and sed's corner
// cases: NULs after the first buffer, invalid UTF-8, a long line.
func grpTree(t testing.TB) string {
	t.Helper()
	dir := makeTree(t)
	var big bytes.Buffer
	for i := 0; big.Len() < 200*1024; i++ {
		big.WriteString("line ")
		big.WriteString(strings.Repeat("x", i%50))
		big.WriteString(" TODO\n")
	}
	big.WriteString("late\x00nul TODO\nafter TODO\n")
	files := map[string]string{
		"late.bin":      big.String(),
		"inv.txt":       "good line\nbad \xff line\ngood again\nline\n",
		"long.txt":      strings.Repeat("abc ", 300000) + "TODO\nshort\n",
		"words.txt":     "foo bar foobar\nbarfoo foo_bar\n-foo- foo.\nFoo FOO\n",
		"src/sub/x.go":  "package sub // TODO sub\n",
		"src/.hid.go":   "// TODO hidden go\n",
		"pats.txt":      "alpha\ntwo\n",
		"emptypats.txt": "",
		"utf8.txt":      "café\nÉCOLE école\nnaïve 中文\n",
		"s1.sed":        "p\n\ns/a/b/q\n",
		"s3.sed":        "#n\n/beta/p\n",
		"s4.sed":        "/x/{\np\n",
		"s5.sed":        "s/a/\\\nb/\n# comment\ny/b/B/\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("src", filepath.Join(dir, "srclink"))
	os.MkdirAll(filepath.Join(dir, "loop/d"), 0o755)
	os.WriteFile(filepath.Join(dir, "loop/d/f"), []byte("hi\n"), 0o644)
	os.Symlink("..", filepath.Join(dir, "loop/d/up"))
	return dir
}

var grpGNUCases = []struct {
	stdin string
	args  []string
}{
	// Basic matching and output prefixes.
	{"", []string{"grep", "alpha", "a.txt"}},
	{"", []string{"grep", "-n", "alpha", "a.txt"}},
	{"", []string{"grep", "-c", "e", "b.txt"}},
	{"", []string{"grep", "-vn", "a", "a.txt"}},
	{"", []string{"grep", "-i", "ALPHA", "a.txt"}},
	{"", []string{"grep", "-y", "ALPHA", "a.txt"}},
	{"", []string{"grep", "-i", "-e", "ALPHA", "--no-ignore-case", "a.txt"}},
	{"", []string{"grep", "-x", "alpha", "a.txt"}},
	{"", []string{"grep", "-xF", "alpha beta", "a.txt"}},
	{"", []string{"grep", "-w", "beta", "a.txt"}},
	{"", []string{"grep", "-w", "foo", "words.txt"}},
	{"", []string{"grep", "-ow", "foo", "words.txt"}},
	{"", []string{"grep", "-wc", "foo", "words.txt"}},
	{"", []string{"grep", "-w", "", "a.txt"}},
	{"", []string{"grep", "-ow", "[a-z]*", "csv.txt"}},
	{"", []string{"grep", "-o", "a.", "a.txt"}},
	{"", []string{"grep", "-io", "ALP", "a.txt"}},
	{"", []string{"grep", "-o", "-E", "a|b", "a.txt"}},
	{"", []string{"grep", "-ob", "o", "b.txt"}},
	{"", []string{"grep", "-b", "o", "b.txt"}},
	{"", []string{"grep", "-bo", "line", "crlf.txt", "noeol.txt"}},
	{"", []string{"grep", "-H", "alpha", "a.txt"}},
	{"", []string{"grep", "-h", "alpha", "a.txt", "b.txt"}},
	{"", []string{"grep", "-c", "alpha", "a.txt", "b.txt"}},
	{"", []string{"grep", "-cv", "e", "b.txt", "a.txt"}},
	{"", []string{"grep", "-l", "alpha", "a.txt", "b.txt", "nofile"}},
	{"", []string{"grep", "-L", "alpha", "a.txt", "b.txt"}},
	{"", []string{"grep", "-L", "zzz", "a.txt"}},
	{"", []string{"grep", "-lZ", "alpha", "a.txt", "b.txt"}},
	{"", []string{"grep", "-c", "-l", "alpha", "a.txt"}},
	{"", []string{"grep", "-q", "alpha", "a.txt"}},
	{"", []string{"grep", "-q", "alpha", "nofile", "a.txt"}},
	{"", []string{"grep", "-q", "zzz", "nofile", "a.txt"}},
	{"", []string{"grep", "-s", "alpha", "nofile", "a.txt"}},
	{"", []string{"grep", "-n", ".", "empty.txt", "noeol.txt"}},
	{"", []string{"grep", "^", "noeol.txt"}},
	{"", []string{"grep", "-c", "$", "crlf.txt"}},
	{"", []string{"grep", "alpha", "a.txt", "/dev/null"}},
	// Several patterns, pattern files.
	{"", []string{"grep", "-e", "x", "-e", "y", "-c", "dup.txt"}},
	{"", []string{"grep", "-F", "-e", "10", "-e", "9", "nums.txt"}},
	{"", []string{"grep", "-x", "-e", "10", "-e", "9", "nums.txt"}},
	{"", []string{"grep", "-f", "pats.txt", "a.txt", "b.txt"}},
	{"", []string{"grep", "-f", "emptypats.txt", "a.txt"}},
	{"", []string{"grep", "-vf", "emptypats.txt", "a.txt"}},
	{"", []string{"grep", "-e", "alpha", "-f", "emptypats.txt", "a.txt"}},
	{"", []string{"grep", "-f", "nofile", "a.txt"}},
	{"", []string{"grep", "alpha\ngamma", "a.txt"}},
	// BRE and ERE.
	{"", []string{"grep", `\bbeta\b`, "a.txt"}},
	{"", []string{"grep", `\<al`, "a.txt"}},
	{"", []string{"grep", `a\>`, "a.txt"}},
	{"", []string{"grep", "-o", `\w\+`, "csv.txt"}},
	{"", []string{"grep", `[[:digit:]]\{2\}`, "nums.txt"}},
	{"", []string{"grep", "-E", `^-?[0-9]+(\.[0-9]+)?$`, "nums.txt"}},
	{"", []string{"grep", `a\|gam`, "a.txt"}},
	{"", []string{"grep", `x\{2,\}`, "dup.txt"}},
	{"", []string{"grep", `1+`, "nums.txt"}},
	{"", []string{"grep", "-E", `(ph|et)a`, "a.txt"}},
	{"", []string{"grep", `\(ph\|et\)a`, "a.txt"}},
	{"", []string{"grep", "-E", `*a`, "a.txt"}},
	{"", []string{"grep", "-E", `+a|{1}b`, "a.txt"}},
	{"", []string{"grep", "-E", `a{1`, "a.txt"}},
	{"", []string{"grep", "-E", `a{,2}l`, "a.txt"}},
	{"", []string{"grep", "-E", `^*a`, "a.txt"}},
	{"", []string{"grep", `^*a`, "a.txt"}},
	{"", []string{"grep", `\(*a\)`, "a.txt"}},
	{"", []string{"grep", "-E", `a)`, "a.txt"}},
	{"", []string{"grep", `[]a]`, "a.txt"}},
	{"", []string{"grep", `[^]a-z]`, "a.txt"}},
	{"", []string{"grep", "-c", `[[:upper:]]`, "utf8.txt"}},
	{"", []string{"grep", "-io", `école`, "utf8.txt"}},
	{"", []string{"grep", "-o", `[[:alpha:]]*`, "utf8.txt"}},
	{"", []string{"grep", "-P", `\d+`, "nums.txt"}},
	// Back-references.
	{"", []string{"grep", `\(x\)\1`, "dup.txt"}},
	{"x\nxx\nabab\naba\n", []string{"grep", "-E", `(a|b)(.)\1`}},
	{"x\nxx\nabab\naba\n", []string{"grep", "-Eo", `(ab)\1`}},
	{"x\nxx\nabab\naba\n", []string{"grep", "-Ex", `(.)\1`}},
	{"foo foo bar\nfoofoo\nFoo fOO\n", []string{"grep", "-Ewi", `(\w+) \1`}},
	{"foo foo bar\nfoofoo\n", []string{"grep", "-e", `\(o\)\1`, "-e", "bar", "-n"}},
	{"", []string{"grep", "-P", "-e", "a", "-e", "b", "a.txt"}},
	// Pattern errors.
	{"", []string{"grep", "a[", "a.txt"}},
	{"", []string{"grep", "[a", "a.txt"}},
	{"", []string{"grep", `a\{1`, "a.txt"}},
	{"", []string{"grep", "-E", "a{1,2,3}", "a.txt"}},
	{"", []string{"grep", "-E", "a{2,1}", "a.txt"}},
	{"", []string{"grep", "[[:foo:]]", "a.txt"}},
	{"", []string{"grep", "[:alpha:]", "a.txt"}},
	{"", []string{"grep", `\(a\)\2`, "a.txt"}},
	{"", []string{"grep", `a\)`, "a.txt"}},
	{"", []string{"grep", "-E", "a(", "a.txt"}},
	{"", []string{"grep", `x\`, "a.txt"}},
	{"", []string{"grep", "[z-a]", "a.txt"}},
	{"", []string{"grep", "-E", "a{99999}", "a.txt"}},
	// Context.
	{"", []string{"grep", "-A1", "-n", "-e", "two", "-e", "six", "b.txt"}},
	{"", []string{"grep", "-n", "-C1", "-e", "four", "-e", "nine", "b.txt"}},
	{"", []string{"grep", "-n", "-A0", "-e", "one", "-e", "three", "-e", "four", "b.txt"}},
	{"", []string{"grep", "-m1", "-n", "-A2", "e", "b.txt"}},
	{"", []string{"grep", "-C1", "-m2", "x", "dup.txt"}},
	{"", []string{"grep", "-n", "-B1", "y", "dup.txt"}},
	{"", []string{"grep", "-2", "-n", "six", "b.txt"}},
	{"", []string{"grep", "-nA1", "TODO", "src/main.go", "src/util.go", "src/README.md"}},
	{"", []string{"grep", "-A1", "TODO", "bin.dat", "src/main.go"}},
	{"", []string{"grep", "-o", "-A1", "-e", "two", "-e", "six", "b.txt"}},
	{"", []string{"grep", "--no-group-separator", "-A1", "-e", "two", "-e", "six", "b.txt"}},
	{"", []string{"grep", "--group-separator=XX", "-A1", "-e", "two", "-e", "six", "b.txt"}},
	{"", []string{"grep", "-vn", "-A1", "e", "b.txt"}},
	{"", []string{"grep", "-m", "2", "-c", "e", "b.txt"}},
	{"", []string{"grep", "-m", "0", "x", "nofile"}},
	{"", []string{"grep", "-m", "-1", "a", "a.txt"}},
	// Binary files and encodings.
	{"", []string{"grep", "TODO", "bin.dat"}},
	{"", []string{"grep", "-c", "", "bin.dat"}},
	{"", []string{"grep", "-a", "TODO", "bin.dat"}},
	{"", []string{"grep", "-I", "TODO", "bin.dat", "a.txt"}},
	{"", []string{"grep", "--binary-files=without-match", "-L", "TODO", "bin.dat"}},
	{"", []string{"grep", "-o", "TODO", "bin.dat"}},
	{"", []string{"grep", "-c", "TODO", "late.bin"}},
	{"", []string{"grep", "-n", "after", "late.bin"}},
	{"", []string{"grep", "-n", "line", "inv.txt"}},
	{"", []string{"grep", "-n", "-A1", "good", "inv.txt"}},
	{"", []string{"grep", "-o", "l.ne", "inv.txt"}},
	{"", []string{"grep", "-z", "alpha", "a.txt"}},
	{"", []string{"grep", "-z", "-c", "a", "a.txt"}},
	{"", []string{"grep", "-c", "TODO", "long.txt"}},
	{"", []string{"grep", "-o", "TODO", "long.txt"}},
	// Standard input.
	{"one\ntwo\n", []string{"grep", "o"}},
	{"one\ntwo\n", []string{"grep", "-H", "o"}},
	{"one\ntwo\n", []string{"grep", "--label=in", "-H", "t", "-"}},
	{"one\ntwo\n", []string{"grep", "-c", "o", "-", "a.txt"}},
	// Directories, recursion with one file, include/exclude.
	{"", []string{"grep", "foo", "src"}},
	{"", []string{"grep", "-s", "foo", "src"}},
	{"", []string{"grep", "-d", "skip", "alpha", "src", "a.txt"}},
	{"", []string{"grep", "-r", "alpha", "a.txt"}},
	{"", []string{"grep", "-r", "foo", "nofile"}},
	{"", []string{"grep", "-rn", "TODO", "src/main.go"}},
	{"", []string{"grep", "-r", "hi", "src/main.go", "src/sub"}},
	{"", []string{"grep", "--include=*.md", "TODO", "src/README.md", "src/main.go"}},
	{"", []string{"grep", "--exclude=*.md", "TODO", "src/README.md", "src/main.go"}},
	{"", []string{"grep", "-r", "--exclude-dir=src", "TODO", "src"}},
	{"", []string{"grep", "-r", "--exclude-dir=sub", "-l", "TODO", "src/sub"}},
	// Options and usage errors.
	{"", []string{"grep"}},
	{"", []string{"grep", "-Q", "x"}},
	{"", []string{"grep", "--foo", "x"}},
	{"", []string{"grep", "--exc", "foo", "a.txt"}},
	{"", []string{"grep", "-E", "-F", "x", "a.txt"}},
	{"", []string{"grep", "-A", "x", "a", "a.txt"}},
	{"", []string{"grep", "-m", "x", "a", "a.txt"}},
	{"", []string{"grep", "-C", "-1", "a", "a.txt"}},
	{"", []string{"grep", "-d", "foo", "x", "a.txt"}},
	{"", []string{"grep", "--binary-files=foo", "x", "a.txt"}},
	{"", []string{"grep", "--color=never", "alpha", "a.txt"}},
	{"", []string{"grep", "--colour", "alpha", "a.txt"}},
	{"", []string{"grep", "--color=always", "-n", "-H", "-b", "-A1", "-e", "two", "-e", "six", "b.txt"}},
	{"", []string{"grep", "--color=always", "-c", "e", "a.txt", "b.txt"}},
	{"", []string{"grep", "--color=always", "-o", "-n", "a.", "a.txt"}},
	{"", []string{"grep", "--color=always", "-v", "-n", "-A1", "e", "b.txt"}},
	{"", []string{"grep", "--color=always", "x*", "a.txt"}},
	{"", []string{"grep", "--color=sometimes", "x", "a.txt"}},
	{"", []string{"grep", "-HnbT", "o", "b.txt"}},
	{"", []string{"grep", "-nT", "-A1", "two", "b.txt", "a.txt"}},
	{"x\ny\n", []string{"grep", "-nT", "x"}},
	{"", []string{"grep", "-e"}},
	{"", []string{"grep", "-V"}},
	{"", []string{"grep", "--help"}},
}

func TestGrepGNU(t *testing.T) {
	tree := grpTree(t)
	for _, c := range grpGNUCases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			compareGNU(t, tree, c.stdin, c.args...)
		})
	}
}

// grpSortedLines sorts the lines of s (GNU's recursive order is the
// directories' own, which differs between file systems).
func grpSortedLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "")
}

// grpCompareSorted is compareGNU for commands whose output order is the
// order of directory entries: it compares sorted lines.
func grpCompareSorted(t *testing.T, tree, stdin string, args ...string) {
	t.Helper()
	ours, gnu := copyTree(t, tree), copyTree(t, tree)
	a := runOurs(t, ours, stdin, args...)
	b := runGNU(t, gnu, stdin, args...)
	if grpSortedLines(a.stdout) != grpSortedLines(b.stdout) || grpSortedLines(a.stderr) != grpSortedLines(b.stderr) || a.code != b.code {
		t.Errorf("%q differs from GNU (lines sorted):\nours: %s\nGNU:  %s", args, a, b)
	}
}

func TestGrepRecursiveGNU(t *testing.T) {
	tree := grpTree(t)
	for _, args := range [][]string{
		{"grep", "-rn", "TODO", "."},
		{"grep", "-rn", "TODO"},
		{"grep", "-r", "TODO", "src"},
		{"grep", "-r", "TODO", "src/"},
		{"grep", "-rl", "e", "."},
		{"grep", "-rL", "e"},
		{"grep", "-rc", "e", "src"},
		{"grep", "-rh", "TODO", "src"},
		{"grep", "-R", "alpha", "."},
		{"grep", "-r", "alpha", "."},
		{"grep", "-r", "TODO", "srclink"},
		{"grep", "-R", "-l", "TODO", "."},
		{"grep", "-r", "--include=*.go", "TODO", "."},
		{"grep", "-r", "--include=*.go", "--include=*.md", "-l", "TODO"},
		{"grep", "-r", "--exclude=*.go", "-l", "TODO", "src"},
		{"grep", "-r", "--exclude=*.go", "--include=main.go", "-l", "TODO", "src"},
		{"grep", "-r", "--include=*.go", "--exclude=main.go", "-l", "TODO", "src"},
		{"grep", "-r", "--exclude-dir=sub", "TODO", "src"},
		{"grep", "-r", "--exclude-dir=src", "-l", "TODO"},
		{"grep", "-r", "--exclude-dir=.", "-l", "alpha"},
		{"grep", "-r", "--exclude-dir=.", "-l", "alpha", "."},
		{"grep", "-rw", "main", "src"},
		{"grep", "-rc", "", "--include=*.txt", "."},
		{"grep", "-r", "-m1", "-n", "e", "src"},
		{"grep", "-ri", "todo", "src", "a.txt"},
		{"grep", "-rq", "TODO"},
		{"grep", "-rL", "TODO", "src"},
		{"grep", "-R", "hi", "loop"},
		{"grep", "-r", "hi", "loop"},
		{"grep", "-R", "-c", "hi"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			grpCompareSorted(t, tree, "", args...)
		})
	}
}

// A cancelled context stops a search.
func TestGrepCancel(t *testing.T) {
	tree := grpTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	e := testEnv(tree, "/", strings.NewReader(""), &out, &errb)
	start := time.Now()
	code := grpMain(ctx, e, []string{"grep", "-r", "TODO", "/"})
	if code != 2 || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled grep: exit %d after %v, out %q", code, time.Since(start), out.String())
	}
}
