package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

func mustMatcher(t testing.TB, opts GrepOptions) *lineMatcher {
	t.Helper()
	m, err := newLineMatcher(opts)
	if err != nil {
		t.Fatalf("newLineMatcher(%+v): %v", opts, err)
	}
	return m
}

func TestGrepMatch(t *testing.T) {
	tests := []struct {
		opts GrepOptions
		yes  []string
		no   []string
	}{
		{GrepOptions{}, []string{"", "anything"}, nil},
		{GrepOptions{Regex: true}, []string{"", "x"}, nil},
		{GrepOptions{Pattern: "foo"}, []string{"foo", "a foo b", "foofoo"}, []string{"", "fo", "Foo", "f oo"}},
		{GrepOptions{Pattern: "a.b"}, []string{"a.b"}, []string{"axb"}},
		{GrepOptions{Pattern: "(x)[y]*"}, []string{"-(x)[y]*-"}, []string{"x", "xy"}},
		{GrepOptions{Pattern: "foo", IgnoreCase: true}, []string{"FOO", "fOo", "xFoOx"}, []string{"fo"}},
		{GrepOptions{Pattern: "a.b", IgnoreCase: true}, []string{"A.B"}, []string{"axb"}},
		{GrepOptions{Pattern: "straße", IgnoreCase: true}, []string{"STRAßE", "Straße"}, []string{"strasse"}},
		{GrepOptions{Pattern: "σ", IgnoreCase: true}, []string{"Σ", "ς", "σ"}, []string{"s"}},
		{GrepOptions{Pattern: "ÄÖÜ", IgnoreCase: true}, []string{"äöü", "xÄöüx"}, []string{"aou"}},
		{GrepOptions{Pattern: "k", IgnoreCase: true}, []string{"K", "k", "\u212a"}, nil},
		{GrepOptions{Pattern: "fo+", Regex: true}, []string{"foo", "xfox"}, []string{"f", "FOO"}},
		{GrepOptions{Pattern: "fo+", Regex: true, IgnoreCase: true}, []string{"FOO"}, []string{"F"}},
		{GrepOptions{Pattern: "^a$", Regex: true}, []string{"a"}, []string{"a\r", "ba", "ab"}},
		{GrepOptions{Pattern: `a\r$`, Regex: true}, []string{"a\r"}, []string{"a"}},
		{GrepOptions{Pattern: "^$", Regex: true}, []string{""}, []string{" "}},
		{GrepOptions{Pattern: `\d{3}`, Regex: true}, []string{"a123"}, []string{"12"}},
		{GrepOptions{Pattern: "a\nb"}, nil, []string{"a", "b", "ab"}},
		{GrepOptions{Pattern: "\xff"}, []string{"a\xffb"}, []string{"a"}},
		// Invalid UTF-8 with IgnoreCase: folded by hand, bytes exact.
		{GrepOptions{Pattern: "\xffÉk", IgnoreCase: true}, []string{"a\xffék", "\xffÉK", "\xffé\u212a"}, []string{"\xfeék", "ék", "\xffe"}},
		{GrepOptions{Pattern: "a\xd4", IgnoreCase: true}, []string{"A\xd4", "xa\xd4\xd4"}, []string{"a\xd5", "a", "aÔ"}},
	}
	for _, tt := range tests {
		m := mustMatcher(t, tt.opts)
		for _, l := range tt.yes {
			if !m.match([]byte(l)) {
				t.Errorf("%+v: %q does not match", tt.opts, l)
			}
		}
		for _, l := range tt.no {
			if m.match([]byte(l)) {
				t.Errorf("%+v: %q matches", tt.opts, l)
			}
		}
	}
}

func TestGrepBadRegex(t *testing.T) {
	for _, p := range []string{"(", "a[", "*a", `\8`, "a{2,1}", "(?<n", "x{1001}"} {
		_, err := newLineMatcher(GrepOptions{Pattern: p, Regex: true})
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%q: err %v, want EINVAL", p, err)
		}
		// The same text is a fine literal.
		if _, err := newLineMatcher(GrepOptions{Pattern: p}); err != nil {
			t.Errorf("literal %q: %v", p, err)
		}
		if _, err := newLineMatcher(GrepOptions{Pattern: p, IgnoreCase: true}); err != nil {
			t.Errorf("literal -i %q: %v", p, err)
		}
	}
}

// formatGNU formats scan output the way "grep -n" does for one file, with
// "--" between non-adjacent groups when context was asked for.
func formatGNU(lines []GrepLine, context bool) string {
	var b strings.Builder
	prev := 0
	for _, l := range lines {
		if context && prev != 0 && l.Line != prev+1 {
			b.WriteString("--\n")
		}
		sep := ':'
		if l.Context {
			sep = '-'
		}
		fmt.Fprintf(&b, "%d%c%s\n", l.Line, sep, l.Text)
		prev = l.Line
	}
	return b.String()
}

func scanAll(t testing.TB, m *lineMatcher, data string, before, after int) ([]GrepLine, int, bool) {
	t.Helper()
	var out []GrepLine
	n, bin, err := m.scan(strings.NewReader(data), "p", before, after, func(l GrepLine) bool {
		if l.Path != "p" {
			t.Fatalf("path %q", l.Path)
		}
		out = append(out, l)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, n, bin
}

func TestGrepScanContext(t *testing.T) {
	const text = "m1\na\nb\nm4\nc\nd\ne\nf\nm9\nm10\ng\nh\n"
	tests := []struct {
		data          string
		before, after int
		want          string
	}{
		{text, 0, 0, "1:m1\n4:m4\n9:m9\n10:m10\n"},
		{text, 1, 0, "1:m1\n--\n3-b\n4:m4\n--\n8-f\n9:m9\n10:m10\n"},
		{text, 0, 1, "1:m1\n2-a\n--\n4:m4\n5-c\n--\n9:m9\n10:m10\n11-g\n"},
		{text, 2, 2, "1:m1\n2-a\n3-b\n4:m4\n5-c\n6-d\n7-e\n8-f\n9:m9\n10:m10\n11-g\n12-h\n"},
		{text, 1, 1, "1:m1\n2-a\n3-b\n4:m4\n5-c\n--\n8-f\n9:m9\n10:m10\n11-g\n"},
		{text, 5, 0, "1:m1\n2-a\n3-b\n4:m4\n5-c\n6-d\n7-e\n8-f\n9:m9\n10:m10\n"},
		{text, 100, 100, "1:m1\n2-a\n3-b\n4:m4\n5-c\n6-d\n7-e\n8-f\n9:m9\n10:m10\n11-g\n12-h\n"},
		{text, -3, -1, "1:m1\n4:m4\n9:m9\n10:m10\n"},
		{"", 1, 1, ""},
		{"\n", 0, 0, ""},
		{"m", 0, 0, "1:m\n"},
		{"x\nm", 1, 1, "1-x\n2:m\n"},
		{"m\r\nx\r\n", 0, 1, "1:m\r\n2-x\r\n"},
		{"a\n\nm\n\n", 1, 1, "2-\n3:m\n4-\n"},
	}
	m := mustMatcher(t, GrepOptions{Pattern: "m"})
	for _, tt := range tests {
		lines, n, bin := scanAll(t, m, tt.data, tt.before, tt.after)
		if bin {
			t.Errorf("%q: binary", tt.data)
		}
		got := formatGNU(lines, tt.before > 0 || tt.after > 0)
		if got != tt.want {
			t.Errorf("%q -B%d -A%d:\ngot:\n%swant:\n%s", tt.data, tt.before, tt.after, got, tt.want)
		}
		if want := strings.Count(tt.want, ":m"); n != want {
			t.Errorf("%q: matches = %d, want %d", tt.data, n, want)
		}
	}
}

func TestGrepScanStop(t *testing.T) {
	m := mustMatcher(t, GrepOptions{Pattern: "m"})
	data := "m\na\nm\nb\nc\nm\n"
	for stop := 1; stop <= 7; stop++ {
		var got []GrepLine
		n, _, err := m.scan(strings.NewReader(data), "", 1, 1, func(l GrepLine) bool {
			got = append(got, l)
			return len(got) < stop
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(stop, 6); len(got) != want {
			t.Errorf("stop %d: emitted %d lines, want %d", stop, len(got), want)
		}
		nm := 0
		for _, l := range got {
			if !l.Context {
				nm++
			}
		}
		if n != nm {
			t.Errorf("stop %d: matches %d, emitted %d matches", stop, n, nm)
		}
	}
}

func TestGrepCountAndHasMatch(t *testing.T) {
	m := mustMatcher(t, GrepOptions{Pattern: "x"})
	for _, tt := range []struct {
		data string
		n    int
	}{
		{"", 0}, {"x", 1}, {"x\n", 1}, {"x\nx\ny\nx", 3}, {"y\ny\n", 0},
	} {
		n, bin, err := m.count(strings.NewReader(tt.data))
		if err != nil || bin || n != tt.n {
			t.Errorf("count(%q) = %d, %v, %v; want %d", tt.data, n, bin, err, tt.n)
		}
		ok, bin, err := m.hasMatch(strings.NewReader(tt.data))
		if err != nil || bin || ok != (tt.n > 0) {
			t.Errorf("hasMatch(%q) = %v, %v, %v", tt.data, ok, bin, err)
		}
		n2, _, _ := m.scan(strings.NewReader(tt.data), "", 0, 0, nil)
		if n2 != tt.n {
			t.Errorf("scan(nil emit)(%q) = %d", tt.data, n2)
		}
	}
	// hasMatch stops at the first match: the reader is not drained.
	r := strings.NewReader("x\n" + strings.Repeat("y\n", 1<<20))
	if ok, _, _ := m.hasMatch(r); !ok {
		t.Fatal("no match")
	}
	if r.Len() == 0 {
		t.Error("hasMatch read everything")
	}
}

func TestGrepBinary(t *testing.T) {
	m := mustMatcher(t, GrepOptions{Pattern: "m"})
	emitNone := func(t *testing.T, data string) (int, bool) {
		n, bin, err := m.scan(strings.NewReader(data), "", 2, 2, func(l GrepLine) bool {
			t.Errorf("emitted %+v", l)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, bin
	}
	// NUL in the first 32 KiB, even after matches: nothing emitted.
	n, bin := emitNone(t, "m\nm\nx\x00y\nm\n")
	if !bin || n != 1 {
		t.Errorf("got %d, %v; want 1 (stops at first match), true", n, bin)
	}
	n, bin = emitNone(t, strings.Repeat("a\n", 16000)+"\x00")
	if !bin || n != 0 {
		t.Errorf("got %d, %v; want 0, true", n, bin)
	}
	// count counts all lines of a binary file.
	n, bin, _ = m.count(strings.NewReader("m\nm\nx\x00y\nm\n"))
	if !bin || n != 3 {
		t.Errorf("count: %d, %v; want 3, true", n, bin)
	}
	ok, bin, _ := m.hasMatch(strings.NewReader("\x00m\n"))
	if !ok || !bin {
		t.Errorf("hasMatch: %v, %v", ok, bin)
	}
	// NUL past the first 32 KiB: lines before it are emitted, none after.
	data := "m1\n" + strings.Repeat("a\n", 20000) + "m2\nb\x00\nm3\nm4\n"
	lines, n, bin := scanAll(t, m, data, 0, 1)
	if !bin {
		t.Error("not binary")
	}
	if got := formatGNU(lines, true); got != "1:m1\n2-a\n--\n20002:m2\n" {
		t.Errorf("got %q", got)
	}
	if n != 3 { // m1, m2 and m3, which stopped the scan
		t.Errorf("matches = %d, want 3", n)
	}
	// A NUL in a long line beyond the line cap still counts.
	m2 := mustMatcher(t, GrepOptions{Pattern: "m"})
	m2.maxLine = 10
	_, bin, _ = m2.count(strings.NewReader(strings.Repeat("a", 40000) + "\x00\n"))
	if !bin {
		t.Error("NUL past the line cap missed")
	}
}

func TestGrepLongLines(t *testing.T) {
	m := mustMatcher(t, GrepOptions{Pattern: "needle"})
	long := strings.Repeat("x", 3<<20) + "needle"
	data := "a\n" + long + "\nb\nneedle"
	lines, n, _ := scanAll(t, m, data, 1, 1)
	if n != 2 || len(lines) != 4 || lines[1].Text != long || lines[1].Line != 2 || lines[3].Text != "needle" || lines[3].Line != 4 {
		t.Fatalf("n=%d lines=%d", n, len(lines))
	}
	// Beyond the cap, a line is truncated for matching and output.
	m.maxLine = 1000
	lines, n, _ = scanAll(t, m, strings.Repeat("y", 999)+"needle\nneedle"+strings.Repeat("z", 5000)+"\nq\n", 0, 1)
	if n != 1 || len(lines) != 2 || lines[0].Line != 2 || len(lines[0].Text) != 1000 || lines[1].Text != "q" {
		t.Fatalf("truncated: n=%d %d lines", n, len(lines))
	}
	// The default cap: a line longer than grepMaxLine does not fail.
	m.maxLine = 0
	huge := strings.Repeat("n", grepMaxLine+100) + "\nneedle\n"
	lines, n, _ = scanAll(t, m, huge, 1, 0)
	if n != 1 || len(lines) != 2 || len(lines[0].Text) != grepMaxLine || lines[1].Line != 2 {
		t.Fatalf("huge: n=%d %d lines", n, len(lines))
	}
}

func TestGrepReaders(t *testing.T) {
	m := mustMatcher(t, GrepOptions{Pattern: "m"})
	data := "a\nm\nb\n" + strings.Repeat("c", 100000) + "m\nd"
	want, _, _ := scanAll(t, m, data, 1, 1)
	for name, r := range map[string]io.Reader{
		"onebyte": iotest.OneByteReader(strings.NewReader(data)),
		"half":    iotest.HalfReader(strings.NewReader(data)),
		"dataerr": iotest.DataErrReader(strings.NewReader(data)),
	} {
		var got []GrepLine
		_, _, err := m.scan(r, "p", 1, 1, func(l GrepLine) bool { got = append(got, l); return true })
		if err != nil || formatGNU(got, true) != formatGNU(want, true) {
			t.Errorf("%s: err %v, got %d lines", name, err, len(got))
		}
	}
	boom := errors.New("boom")
	for _, r := range []io.Reader{
		iotest.ErrReader(boom),
		io.MultiReader(strings.NewReader(strings.Repeat("m\n", 30000)), iotest.ErrReader(boom)),
	} {
		if _, _, err := m.scan(r, "", 0, 0, func(GrepLine) bool { return true }); !errors.Is(err, boom) {
			t.Errorf("err = %v, want boom", err)
		}
	}
}

// grepModel is the reference for scan on text without NUL bytes.
func grepModel(m *lineMatcher, data []byte, before, after int) []GrepLine {
	if len(data) == 0 {
		return nil
	}
	lines := strings.Split(string(data), "\n")
	if data[len(data)-1] == '\n' {
		lines = lines[:len(lines)-1]
	}
	before, after = max(before, 0), max(after, 0)
	isMatch := make([]bool, len(lines))
	show := make([]bool, len(lines))
	for i, l := range lines {
		if m.match([]byte(l)) {
			isMatch[i] = true
			for j := max(0, i-before); j <= min(len(lines)-1, i+after); j++ {
				show[j] = true
			}
		}
	}
	var out []GrepLine
	for i, l := range lines {
		if show[i] {
			out = append(out, GrepLine{Line: i + 1, Text: l, Context: !isMatch[i]})
		}
	}
	return out
}

func TestGrepModel(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	words := []string{"m", "a", "", "mm", "b"}
	m := mustMatcher(t, GrepOptions{Pattern: "m"})
	for range 2000 {
		var lines []string
		for range r.Intn(20) {
			lines = append(lines, words[r.Intn(len(words))])
		}
		data := strings.Join(lines, "\n")
		if r.Intn(2) == 0 && data != "" {
			data += "\n"
		}
		b, a := r.Intn(4), r.Intn(4)
		got, _, _ := scanAll(t, m, data, b, a)
		want := grepModel(m, []byte(data), b, a)
		if g, w := formatGNU(got, true), formatGNU(want, true); g != w {
			t.Fatalf("%q -B%d -A%d:\ngot:\n%swant:\n%s", data, b, a, g, w)
		}
	}
}

// formatGNUFiles formats the output of several files the way "grep -n"
// does with more than one file: "path:N:text", "path-N-text", and "--"
// between groups, also between files, when context was asked for.
func formatGNUFiles(files [][]GrepLine, context bool) string {
	var b strings.Builder
	prevPath, prev := "", 0
	for _, lines := range files {
		for _, l := range lines {
			if context && prev != 0 && (l.Path != prevPath || l.Line != prev+1) {
				b.WriteString("--\n")
			}
			sep := ':'
			if l.Context {
				sep = '-'
			}
			fmt.Fprintf(&b, "%s%c%d%c%s\n", l.Path, sep, l.Line, sep, l.Text)
			prevPath, prev = l.Path, l.Line
		}
	}
	return b.String()
}

// TestGrepGNU compares scan and count with GNU grep on generated files.
// Intended differences, kept out of the generated text and patterns:
//   - Under -i, RE2 folds case with Unicode simple folding, so "k" matches
//     the Kelvin sign U+212A and "ß" matches "ẞ" U+1E9E, which GNU grep 3.8
//     does not.
//   - RE2's POSIX classes ("[[:upper:]]") and "\w", "\b" are ASCII-only;
//     GNU grep's follow the locale.
//   - GNU grep treats invalid UTF-8 as binary; we only look for NUL bytes.
//   - A newline in a GNU grep pattern separates patterns; here it never
//     matches.
func TestGrepGNU(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep")
	}
	if out, err := exec.Command(grep, "--version").Output(); err != nil || !bytes.Contains(out, []byte("GNU grep")) {
		t.Skip("not GNU grep")
	}
	vocab := []string{"foo", "Foo", "FOO", "bar", "baz", "qux", "", " ", "\t", "x.y", "a+b",
		"(p)", "Straße", "STRASSE", "äöü", "ÄÖÜ", "Σ", "ς", "k", "K", "123", "4567",
		"[x]", "^c", "d$", "foobar", "\r"}
	type query struct {
		pattern      string
		regex, icase bool
	}
	var queries []query
	for _, p := range []string{"foo", "Foo", "a+b", "x.y", "(p)", "k", "ä", "ÄÖ", "ß", "σ",
		"[x]", "", "o b", "^c", "d$", "straße", "\r"} {
		queries = append(queries, query{p, false, false}, query{p, false, true})
	}
	for _, p := range []string{"fo+", "^foo", "baz$", "foo|bar", "[0-9]{3}", "(foo|bar) ba",
		`x\.y`, `a\+b`, ".", "^$", "^", "q.x", "[A-Z]{2}", "^[^a-z]*$", `\(p\)`,
		"ä+", "Σ", "o\r$", "(^| )k( |$)", "[[:digit:]][[:space:]]"} {
		queries = append(queries, query{p, true, false}, query{p, true, true})
	}

	dir := t.TempDir()
	r := rand.New(rand.NewSource(2))
	var names, datas []string
	for file := 0; file < 16; file++ {
		var b strings.Builder
		nlines := r.Intn(60)
		for i := 0; i < nlines; i++ {
			for range r.Intn(5) {
				b.WriteString(vocab[r.Intn(len(vocab))])
				if r.Intn(2) == 0 {
					b.WriteByte(' ')
				}
			}
			if i < nlines-1 || r.Intn(3) > 0 {
				b.WriteByte('\n')
			}
		}
		name := "f" + strconv.Itoa(file)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		datas = append(datas, b.String())
	}
	runGrep := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(grep, append(args, names...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		out, err := cmd.Output()
		if err != nil && cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("grep %q: %v", args, err)
		}
		return string(out)
	}

	for _, q := range queries {
		m := mustMatcher(t, GrepOptions{Pattern: q.pattern, Regex: q.regex, IgnoreCase: q.icase})
		var args []string
		if q.regex {
			args = append(args, "-E")
		} else {
			args = append(args, "-F")
		}
		if q.icase {
			args = append(args, "-i")
		}
		for _, ctx := range [][2]int{{0, 0}, {1, 0}, {0, 2}, {2, 1}, {3, 3}} {
			a := append([]string{"-n"}, args...)
			switch {
			case ctx[0] == ctx[1] && ctx[0] > 0:
				a = append(a, "-C", strconv.Itoa(ctx[0]))
			default:
				if ctx[0] > 0 {
					a = append(a, "-B", strconv.Itoa(ctx[0]))
				}
				if ctx[1] > 0 {
					a = append(a, "-A", strconv.Itoa(ctx[1]))
				}
			}
			a = append(a, "-e", q.pattern)
			want := runGrep(a...)
			var files [][]GrepLine
			for i, data := range datas {
				var lines []GrepLine
				_, bin, err := m.scan(strings.NewReader(data), names[i], ctx[0], ctx[1], func(l GrepLine) bool {
					lines = append(lines, l)
					return true
				})
				if err != nil || bin {
					t.Fatalf("%s: %v, binary %v", names[i], err, bin)
				}
				files = append(files, lines)
			}
			if got := formatGNUFiles(files, ctx[0] > 0 || ctx[1] > 0); got != want {
				t.Errorf("grep %q:\ngot:\n%s\nwant:\n%s", a, got, want)
			}
		}
		want := runGrep(append(append([]string{"-c"}, args...), "-e", q.pattern)...)
		var got strings.Builder
		for i, data := range datas {
			n, _, _ := m.count(strings.NewReader(data))
			fmt.Fprintf(&got, "%s:%d\n", names[i], n)
		}
		if got.String() != want {
			t.Errorf("grep -c %q %q:\ngot:\n%s\nwant:\n%s", args, q.pattern, got.String(), want)
		}
	}
}

// TestGrepGNUBinary compares binary detection: GNU grep says "binary file
// ... matches" exactly when we report binary with a match not emitted.
func TestGrepGNUBinary(t *testing.T) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep")
	}
	dir := t.TempDir()
	for i, data := range []string{
		"foo\x00bar\n", "\x00\nfoo\n", "bar\x00\n", "foo\nbar\n" + strings.Repeat("x\n", 100) + "\x00",
		strings.Repeat("y\n", 20000) + "\x00foo\n",
	} {
		path := filepath.Join(dir, "b"+strconv.Itoa(i))
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(grep, "-n", "-F", "-e", "foo", path)
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		out, _ := cmd.CombinedOutput() // grep 3.5+ says it on stderr
		gnuBinaryMatch := bytes.Contains(bytes.ToLower(out), []byte("binary file"))
		m := mustMatcher(t, GrepOptions{Pattern: "foo"})
		var emitted []GrepLine
		n, bin, err := m.scan(strings.NewReader(data), path, 0, 0, func(l GrepLine) bool {
			emitted = append(emitted, l)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := bin && n > len(emitted); got != gnuBinaryMatch {
			t.Errorf("%d: binary match %v, GNU grep says %q", i, got, out)
		}
	}
}

func TestFileFilter(t *testing.T) {
	tests := []struct {
		include, exclude []string
		yes, no          []string
	}{
		{nil, nil, []string{"a", "d/e.go"}, nil},
		{[]string{""}, []string{""}, []string{"a"}, nil},
		{[]string{"*.go"}, nil, []string{"a.go", "d/e/f.go", ".x.go"}, []string{"a.txt", "go/a"}},
		{[]string{"*.go", "*.md"}, nil, []string{"a.go", "d/b.md"}, []string{"c.txt"}},
		{[]string{"*.{go,md}"}, nil, []string{"a.go", "d/b.md"}, []string{"c.txt"}},
		{nil, []string{"*_test.go"}, []string{"a.go", "x"}, []string{"a_test.go", "d/a_test.go"}},
		{[]string{"*.go"}, []string{"*_test.go"}, []string{"a.go"}, []string{"a_test.go", "a.txt"}},
		{[]string{"cmd/*.go"}, nil, []string{"cmd/a.go"}, []string{"a.go", "x/cmd/a.go", "cmd/x/a.go"}},
		{[]string{"**/cmd/*.go"}, nil, []string{"cmd/a.go", "x/cmd/a.go"}, []string{"cmd/x/a.go"}},
		{nil, []string{"vendor/**"}, []string{"a.go", "x/vendor/a.go"}, []string{"vendor/a.go", "vendor/x/y"}},
		{nil, []string{"**/testdata/**"}, []string{"a"}, []string{"testdata/x", "a/testdata/b/c"}},
		{nil, []string{"vendor"}, []string{"vendor/a.go"}, []string{"vendor", "x/vendor"}},
		{[]string{"./*.go"}, nil, []string{"a.go"}, []string{"d/a.go"}},
		{[]string{"Makefile"}, nil, []string{"Makefile", "d/Makefile"}, []string{"makefile"}},
	}
	for _, tt := range tests {
		f, err := newFileFilter(tt.include, tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tt.yes {
			if !f.Allow(p) {
				t.Errorf("include %q exclude %q: %q not allowed", tt.include, tt.exclude, p)
			}
			if ok, err := matchesFileFilters(p, tt.include, tt.exclude); !ok || err != nil {
				t.Errorf("matchesFileFilters(%q) = %v, %v", p, ok, err)
			}
		}
		for _, p := range tt.no {
			if f.Allow(p) {
				t.Errorf("include %q exclude %q: %q allowed", tt.include, tt.exclude, p)
			}
			if ok, err := matchesFileFilters(p, tt.include, tt.exclude); ok || err != nil {
				t.Errorf("matchesFileFilters(%q) = %v, %v", p, ok, err)
			}
		}
	}
	var nilFilter *fileFilter
	if !nilFilter.Allow("x") {
		t.Error("nil filter")
	}
	for _, bad := range [][2][]string{{{"["}, nil}, {nil, {"{a"}}} {
		if _, err := newFileFilter(bad[0], bad[1]); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%q: err %v", bad, err)
		}
		if _, err := matchesFileFilters("x", bad[0], bad[1]); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

func FuzzGrepScan(f *testing.F) {
	f.Add([]byte("m1\na\nb\nm4\nc\n"), "m", false, false, uint8(1), uint8(1), uint8(0))
	f.Add([]byte("foo\r\nFOO\nbar"), "fo+", true, true, uint8(0), uint8(2), uint8(2))
	f.Add([]byte("a\x00m\n"), "", false, false, uint8(3), uint8(0), uint8(0))
	f.Add([]byte("\n\n\n"), "^$", true, false, uint8(1), uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, pattern string, regex, icase bool, before, after, stop uint8) {
		m, err := newLineMatcher(GrepOptions{Pattern: pattern, Regex: regex, IgnoreCase: icase})
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("%v does not wrap EINVAL", err)
			}
			return
		}
		b, a := int(before%8), int(after%8)
		var got []GrepLine
		n, bin, err := m.scan(bytes.NewReader(data), "p", b, a, func(l GrepLine) bool {
			got = append(got, l)
			return stop == 0 || len(got) < int(stop)
		})
		if err != nil {
			t.Fatal(err)
		}
		nm, prev := 0, 0
		for _, l := range got {
			if l.Line <= prev {
				t.Fatalf("line %d after %d", l.Line, prev)
			}
			prev = l.Line
			if m.match([]byte(l.Text)) == l.Context {
				t.Fatalf("line %d %q: context %v", l.Line, l.Text, l.Context)
			}
			if !l.Context {
				nm++
			}
		}
		if bin {
			if n < nm || n > nm+1 {
				t.Fatalf("binary: matches %d, emitted %d", n, nm)
			}
		} else if n != nm {
			t.Fatalf("matches %d, emitted %d", n, nm)
		}
		cnt, cbin, err := m.count(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if has, _, _ := m.hasMatch(bytes.NewReader(data)); has != (cnt > 0) {
			t.Fatalf("hasMatch %v, count %d", has, cnt)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			if !cbin {
				t.Fatal("NUL not seen as binary")
			}
			return
		}
		if cbin || bin {
			t.Fatal("binary without NUL")
		}
		want := grepModel(m, data, b, a)
		if stop != 0 && len(want) > int(stop) {
			want = want[:stop]
		} else if cnt != n {
			t.Fatalf("count %d, scan %d", cnt, n)
		}
		if g, w := formatGNU(got, true), formatGNU(want, true); g != w {
			t.Fatalf("got:\n%swant:\n%s", g, w)
		}
	})
}
