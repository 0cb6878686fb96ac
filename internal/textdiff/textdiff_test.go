package textdiff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name    string
		a, b    string
		context int
		want    string
	}{
		{name: "equal", a: "x\ny\n", b: "x\ny\n", want: ""},
		{name: "both empty", a: "", b: "", want: ""},
		{name: "create", a: "", b: "a\nb\nc\n", context: 3,
			want: "--- old\n+++ new\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"},
		{name: "truncate", a: "a\nb\n", b: "", context: 3,
			want: "--- old\n+++ new\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{name: "one line", a: "a\n", b: "b\n", context: 3,
			want: "--- old\n+++ new\n@@ -1 +1 @@\n-a\n+b\n"},
		{name: "middle", a: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", b: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", context: 3,
			want: "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{name: "default context", a: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", b: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", context: -1,
			want: "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{name: "huge context", a: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", b: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", context: 1 << 62,
			want: "--- old\n+++ new\n@@ -1,9 +1,10 @@\n 1\n 2\n 3\n 4\n 5\n 6\n 7\n 8\n 9\n+10\n"},
		{name: "context 0 insert", a: "1\n2\n3\n", b: "1\n2\nx\n3\n", context: 0,
			want: "--- old\n+++ new\n@@ -2,0 +3 @@\n+x\n"},
		{name: "context 0 delete", a: "1\n2\n3\n", b: "1\n3\n", context: 0,
			want: "--- old\n+++ new\n@@ -2 +1,0 @@\n-2\n"},
		{name: "context 1 two hunks", a: "1\n2\n3\n4\n5\n6\n", b: "x\n2\n3\n4\n5\ny\n", context: 1,
			want: "--- old\n+++ new\n@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -5,2 +5,2 @@\n 5\n-6\n+y\n"},
		{name: "context 2 merged", a: "1\n2\n3\n4\n5\n6\n", b: "x\n2\n3\n4\n5\ny\n", context: 2,
			want: "--- old\n+++ new\n@@ -1,6 +1,6 @@\n-1\n+x\n 2\n 3\n 4\n 5\n-6\n+y\n"},
		{name: "add newline at eof", a: "a\nb", b: "a\nb\n", context: 3,
			want: "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "remove newline at eof", a: "a\nb\n", b: "a\nb", context: 3,
			want: "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{name: "context without newline", a: "a\nb\nc", b: "x\nb\nc", context: 3,
			want: "--- old\n+++ new\n@@ -1,3 +1,3 @@\n-a\n+x\n b\n c\n\\ No newline at end of file\n"},
		{name: "both without newline", a: "a", b: "b", context: 3,
			want: "--- old\n+++ new\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{name: "empty to no newline", a: "", b: "b", context: 3,
			want: "--- old\n+++ new\n@@ -0,0 +1 @@\n+b\n\\ No newline at end of file\n"},
		{name: "append after incomplete", a: "a", b: "a\nb\n", context: 3,
			want: "--- old\n+++ new\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n"},
		{name: "blank lines", a: "\n", b: "\n\n", context: 3,
			want: "--- old\n+++ new\n@@ -1 +1,2 @@\n \n+\n"},
		{name: "crlf", a: "a\r\nb\r\n", b: "a\r\nc\r\n", context: 3,
			want: "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"},
		{name: "slides to the end", a: "a\nb\nb\nc\n", b: "a\nb\nc\n", context: 0,
			want: "--- old\n+++ new\n@@ -3 +2,0 @@\n-b\n"},
		{name: "lines up deletion and insertion", a: "x\na\nx\nb\n", b: "x\nc\nx\nb\n", context: 3,
			want: "--- old\n+++ new\n@@ -1,4 +1,4 @@\n x\n-a\n+c\n x\n b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("old", "new", []byte(tt.a), []byte(tt.b), tt.context)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			checkApplies(t, tt.a, tt.b, got)
			if gnu, ok := gnuDiff(t, t.TempDir(), tt.a, tt.b, tt.context); ok && gnu != tt.want {
				t.Errorf("GNU diff gives\n%s\nwant\n%s", gnu, tt.want)
			}
		})
	}
}

// applyUnified applies a unified diff to a, strictly: hunks must be in
// order, their headers must agree with their bodies and their context and
// deleted lines must match a exactly.
func applyUnified(patch string, a []byte) ([]byte, error) {
	if patch == "" {
		return bytes.Clone(a), nil
	}
	if !strings.HasSuffix(patch, "\n") {
		return nil, fmt.Errorf("patch does not end in a newline")
	}
	pl := strings.Split(strings.TrimSuffix(patch, "\n"), "\n")
	if len(pl) < 3 || !strings.HasPrefix(pl[0], "--- ") || !strings.HasPrefix(pl[1], "+++ ") {
		return nil, fmt.Errorf("bad header")
	}
	src := splitLines(a)
	var out []byte
	outLines := 0
	pos := 0
	parseRange := func(s string) (start, count int, err error) {
		count = 1
		if i := strings.IndexByte(s, ','); i >= 0 {
			if count, err = strconv.Atoi(s[i+1:]); err != nil {
				return
			}
			if count == 1 {
				return 0, 0, fmt.Errorf("GNU writes no count of 1: %q", s)
			}
			s = s[:i]
		}
		start, err = strconv.Atoi(s)
		if err == nil && count > 0 {
			start-- // 0-based; for an empty range the number is the line before
		}
		return
	}
	i := 2
	for i < len(pl) {
		var os_, ns string
		if _, err := fmt.Sscanf(pl[i], "@@ -%s +%s @@", &os_, &ns); err != nil || pl[i] != "@@ -"+os_+" +"+ns+" @@" {
			return nil, fmt.Errorf("bad hunk header %q", pl[i])
		}
		ostart, ocount, err := parseRange(os_)
		if err != nil {
			return nil, err
		}
		nstart, ncount, err := parseRange(ns)
		if err != nil {
			return nil, err
		}
		if ostart < pos || ostart > len(src) {
			return nil, fmt.Errorf("hunk %q out of order or range", pl[i])
		}
		for ; pos < ostart; pos++ {
			out = append(out, src[pos]...)
			outLines++
		}
		if nstart != outLines {
			return nil, fmt.Errorf("hunk %q: new start %d, have %d lines", pl[i], nstart, outLines)
		}
		i++
		oseen, nseen := 0, 0
		for i < len(pl) && !strings.HasPrefix(pl[i], "@@ ") {
			l := pl[i]
			i++
			if l == "" {
				return nil, fmt.Errorf("empty patch line")
			}
			text := l[1:] + "\n"
			if i < len(pl) && pl[i] == `\ No newline at end of file` {
				text = l[1:]
				i++
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(src) || string(src[pos]) != text {
					return nil, fmt.Errorf("line %d: have %q, patch says %q", pos+1, srcLine(src, pos), text)
				}
				pos++
				oseen++
				if l[0] == ' ' {
					out = append(out, text...)
					outLines++
					nseen++
				}
			case '+':
				if len(out) > 0 && out[len(out)-1] != '\n' {
					return nil, fmt.Errorf("line added after an incomplete line")
				}
				out = append(out, text...)
				outLines++
				nseen++
			default:
				return nil, fmt.Errorf("bad patch line %q", l)
			}
		}
		if oseen != ocount || nseen != ncount {
			return nil, fmt.Errorf("hunk %s,%s has %d old and %d new lines", os_, ns, oseen, nseen)
		}
		if oseen == nseen && oseen == 0 {
			return nil, fmt.Errorf("empty hunk")
		}
	}
	for ; pos < len(src); pos++ {
		out = append(out, src[pos]...)
	}
	return out, nil
}

// splitLines splits s into lines, each with its "\n" except perhaps the
// last.
func splitLines(s []byte) [][]byte {
	l := newLines(s)
	out := make([][]byte, l.n())
	for i := range out {
		out[i] = l.line(i)
	}
	return out
}

func srcLine(src [][]byte, i int) string {
	if i < len(src) {
		return string(src[i])
	}
	return "EOF"
}

func checkApplies(t *testing.T, a, b, patch string) {
	t.Helper()
	got, err := applyUnified(patch, []byte(a))
	if err != nil {
		t.Fatalf("diff of %q and %q does not apply: %v\n%s", a, b, err, patch)
	}
	if string(got) != b {
		t.Fatalf("diff of %q and %q applied gives %q\n%s", a, b, got, patch)
	}
}

var (
	haveDiff  = lookPath("diff")
	havePatch = lookPath("patch")
)

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// gnuDiff runs GNU "diff -u" on a and b. --label replaces the headers
// (name and timestamp) with "old" and "new".
func gnuDiff(t *testing.T, dir, a, b string, context int) (string, bool) {
	t.Helper()
	if !haveDiff {
		return "", false
	}
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if context < 0 {
		context = 3
	}
	context = min(context, 1<<20)
	cmd := exec.Command("diff", "--text", "-U"+strconv.Itoa(context), "--label", "old", "--label", "new", pa, pb)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("diff: %v", err)
		}
	}
	return string(out), true
}

// gnuPatch applies patch to a with patch(1), allowing no fuzz or offset.
func gnuPatch(t *testing.T, dir, a, patch string) string {
	t.Helper()
	pa, pp, po := filepath.Join(dir, "a"), filepath.Join(dir, "p"), filepath.Join(dir, "out")
	if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pp, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("patch", "--fuzz=0", "--no-backup-if-mismatch", "-r", filepath.Join(dir, "rej"), "-o", po, pa, pp)
	cmd.Dir = dir
	msg, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(msg, []byte("offset")) || bytes.Contains(msg, []byte("fuzz")) {
		t.Fatalf("patch: %v\n%s\npatch:\n%s", err, msg, patch)
	}
	out, err := os.ReadFile(po)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// lcsLen is the length of a longest common subsequence of the lines.
func lcsLen(a, b [][]byte) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case bytes.Equal(a[i-1], b[j-1]):
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// changedLines counts the deleted and inserted lines of a patch.
func changedLines(patch string) (del, ins int) {
	lines := strings.Split(patch, "\n")
	if len(lines) < 2 {
		return 0, 0
	}
	for _, l := range lines[2:] { // after the two header lines
		switch {
		case strings.HasPrefix(l, "-"):
			del++
		case strings.HasPrefix(l, "+"):
			ins++
		}
	}
	return
}

func randFile(r *rand.Rand, alphabet []string, maxLines int) string {
	n := r.IntN(maxLines + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
		b.WriteByte('\n')
	}
	s := b.String()
	if len(s) > 0 && r.IntN(5) == 0 {
		s = s[:len(s)-1]
	}
	return s
}

// mutate returns s with a few random line edits.
func mutate(r *rand.Rand, s string, alphabet []string) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for k := r.IntN(4); k >= 0; k-- {
		i := r.IntN(len(lines) + 1)
		switch r.IntN(3) {
		case 0:
			lines = append(lines[:i], append([]string{alphabet[r.IntN(len(alphabet))] + "\n"}, lines[i:]...)...)
		case 1:
			if i < len(lines) {
				lines = append(lines[:i], lines[i+1:]...)
			}
		case 2:
			if i < len(lines) {
				lines[i] = alphabet[r.IntN(len(alphabet))] + "\n"
			}
		}
	}
	out := strings.Join(lines, "")
	if len(out) > 0 && out[len(out)-1] == '\n' && r.IntN(6) == 0 {
		out = out[:len(out)-1]
	} else if len(out) > 0 && out[len(out)-1] != '\n' && r.IntN(2) == 0 {
		out += "\n"
	}
	return out
}

// TestUnifiedDiffRandom diffs random small files over a small alphabet,
// where many different diffs are equally good: each must apply (by a
// strict in-test applier and by patch(1)), be minimal and have as many
// changed lines as GNU diff's.
func TestUnifiedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "", "d"}
	dir := t.TempDir()
	n := 600
	if testing.Short() {
		n = 100
	}
	same, withPatch := 0, 0
	for iter := 0; iter < n; iter++ {
		a := randFile(r, alphabet, 12)
		var b string
		if r.IntN(2) == 0 {
			b = mutate(r, a, alphabet)
		} else {
			b = randFile(r, alphabet, 12)
		}
		context := r.IntN(5)
		got := Unified("old", "new", []byte(a), []byte(b), context)
		checkApplies(t, a, b, got)
		la, lb := splitLines([]byte(a)), splitLines([]byte(b))
		del, ins := changedLines(got)
		if l := lcsLen(la, lb); del != len(la)-l || ins != len(lb)-l {
			t.Fatalf("diff of %q and %q not minimal: -%d +%d, lcs %d\n%s", a, b, del, ins, l, got)
		}
		if havePatch && iter%5 == 0 && got != "" {
			withPatch++
			if out := gnuPatch(t, dir, a, got); out != b {
				t.Fatalf("patch(1) gives %q, want %q\n%s", out, b, got)
			}
		}
		if gnu, ok := gnuDiff(t, dir, a, b, context); ok {
			gd, gi := changedLines(gnu)
			if gd != del || gi != ins {
				t.Logf("GNU diff not minimal? %q %q:\n%s\nours:\n%s", a, b, gnu, got)
			}
			if gnu == got {
				same++
			}
		}
	}
	t.Logf("%d/%d identical to GNU diff; %d checked with patch(1)", same, n, withPatch)
}

// TestUnifiedDiffGNUExact compares with GNU diff byte for byte where the
// diff is unique: all lines distinct (a line without its newline is
// distinct from one with it) and the common lines in the same order.
func TestUnifiedGNUExact(t *testing.T) {
	if !haveDiff {
		t.Skip("no diff(1)")
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	n := 400
	if testing.Short() {
		n = 50
	}
	fresh := 0
	for iter := 0; iter < n; iter++ {
		var al, bl []string
		for i := r.IntN(25); i > 0; i-- {
			line := fmt.Sprintf("line %d\n", len(al))
			al = append(al, line)
			switch x := r.IntN(20); {
			case x == 0: // deleted
			case x == 1: // replaced
				fresh++
				bl = append(bl, fmt.Sprintf("new %d\n", fresh))
			case x == 2: // inserted before
				for k := r.IntN(3); k >= 0; k-- {
					fresh++
					bl = append(bl, fmt.Sprintf("new %d\n", fresh))
				}
				bl = append(bl, line)
			default:
				bl = append(bl, line)
			}
		}
		if r.IntN(4) == 0 {
			fresh++
			bl = append(bl, fmt.Sprintf("new %d\n", fresh))
		}
		a, b := strings.Join(al, ""), strings.Join(bl, "")
		if r.IntN(4) == 0 && a != "" {
			a = a[:len(a)-1]
		}
		if r.IntN(4) == 0 && b != "" {
			b = b[:len(b)-1]
		}
		context := r.IntN(5)
		if r.IntN(10) == 0 {
			context = -1
		}
		got := Unified("old", "new", []byte(a), []byte(b), context)
		checkApplies(t, a, b, got)
		gnu, _ := gnuDiff(t, dir, a, b, context)
		if got != gnu {
			t.Fatalf("a=%q\nb=%q\ncontext %d\ngot:\n%s\nGNU:\n%s", a, b, context, got, gnu)
		}
	}
}

// TestUnifiedDiffGNUExactLarge does the same with long files, so the
// skipped prefix and suffix and the kept context matter.
func TestUnifiedGNUExactLarge(t *testing.T) {
	if !haveDiff {
		t.Skip("no diff(1)")
	}
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	for iter := 0; iter < 30; iter++ {
		var al, bl []string
		for i := 0; i < 3000; i++ {
			line := fmt.Sprintf("line %d\n", i)
			al = append(al, line)
			switch x := r.IntN(400); {
			case x == 0:
			case x == 1:
				bl = append(bl, fmt.Sprintf("new %d\n", i))
			default:
				bl = append(bl, line)
			}
		}
		a, b := strings.Join(al, ""), strings.Join(bl, "")
		context := r.IntN(8)
		got := Unified("old", "new", []byte(a), []byte(b), context)
		checkApplies(t, a, b, got)
		if gnu, _ := gnuDiff(t, dir, a, b, context); got != gnu {
			t.Fatalf("context %d\ngot:\n%s\nGNU:\n%s", context, got, gnu)
		}
	}
}

// TestUnifiedDiffLimits checks the diffs made past the work limits are
// still valid.
func TestUnifiedLimits(t *testing.T) {
	defer func(h, b int) { diffMaxHalfCost, diffBudget = h, b }(diffMaxHalfCost, diffBudget)
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []string{"a", "b", "c", "", "d"}
	for iter := 0; iter < 3000; iter++ {
		diffMaxHalfCost = 1 + r.IntN(4)
		diffBudget = r.IntN(60)
		a := randFile(r, alphabet, 30)
		b := mutate(r, a, alphabet)
		if r.IntN(2) == 0 {
			b = randFile(r, alphabet, 30)
		}
		got := Unified("old", "new", []byte(a), []byte(b), r.IntN(4))
		checkApplies(t, a, b, got)
	}
}

// replaceOnce replaces in s each old of the pairs, which must occur
// exactly once, by its new.
func replaceOnce(t testing.TB, s []byte, pairs ...string) []byte {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if n := bytes.Count(s, []byte(pairs[i])); n != 1 {
			t.Fatalf("%q occurs %d times", pairs[i], n)
		}
		s = bytes.Replace(s, []byte(pairs[i]), []byte(pairs[i+1]), 1)
	}
	return s
}

func bigFile(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "this is line number %d of a rather long file\n", i)
	}
	return b.Bytes()
}

func TestUnifiedLarge(t *testing.T) {
	a := bigFile(100000)
	// A few edits spread over the file.
	b := replaceOnce(t, a,
		"line number 10 of", "line number ten of",
		"line number 50000 of", "LINE\nnumber 50000 of",
		"this is line number 99990 of a rather long file\n", "")
	start := time.Now()
	got := Unified("a", "b", a, b, 3)
	el := time.Since(start)
	checkApplies(t, string(a), string(b), got)
	if d, i := changedLines(got); d != 3 || i != 3 {
		t.Errorf("-%d +%d lines:\n%s", d, i, got)
	}
	t.Logf("100k lines, 3 edits: %v", el)

	// One edit: the common prefix and suffix are skipped.
	b2 := replaceOnce(t, a, "number 77777 ", "number 7 ")
	start = time.Now()
	got = Unified("a", "b", a, b2, 3)
	t.Logf("100k lines, 1 edit: %v", time.Since(start))
	checkApplies(t, string(a), string(b2), got)
}

// TestUnifiedDiffPathological diffs large files that share many lines in
// scrambled order, where an exact diff is costly: it must stay fast and
// valid.
func TestUnifiedPathological(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	line := func(alpha int) string { return strconv.Itoa(r.IntN(alpha)) + "\n" }
	mostlyA := func() string {
		if r.IntN(20) == 0 {
			return "b\n"
		}
		return "a\n"
	}
	for _, tc := range []struct {
		name  string
		lines int
		gen   func(i int) (string, string)
	}{
		{"few distinct lines", 50000, func(int) (string, string) { return line(4), line(4) }},
		{"many distinct lines", 50000, func(int) (string, string) { return line(3000), line(3000) }},
		{"unrelated", 100000, func(int) (string, string) { return line(1 << 30), line(1 << 30) }},
		{"mostly one line", 100000, func(int) (string, string) { return mostlyA(), mostlyA() }},
		{"periods 9 and 10", 100000, func(i int) (string, string) {
			return strconv.Itoa(min(i%9, 1)) + "\n", strconv.Itoa(min(i%10, 1)) + "\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b bytes.Buffer
			for i := 0; i < tc.lines; i++ {
				x, y := tc.gen(i)
				a.WriteString(x)
				b.WriteString(y)
			}
			start := time.Now()
			got := Unified("a", "b", a.Bytes(), b.Bytes(), 3)
			el := time.Since(start)
			checkApplies(t, a.String(), b.String(), got)
			d, i := changedLines(got)
			t.Logf("%d lines: -%d +%d in %v", tc.lines, d, i, el)
			if el > 5*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

func BenchmarkUnified100kFewEdits(b *testing.B) {
	a := bigFile(100000)
	c := replaceOnce(b, a,
		"line number 10 of", "line number ten of",
		"this is line number 99990 of a rather long file\n", "")
	for b.Loop() {
		Unified("a", "b", a, c, 3)
	}
}

func FuzzUnified(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\n"), int8(3))
	f.Add([]byte(""), []byte("x"), int8(0))
	f.Add([]byte("x"), []byte("x\n"), int8(-1))
	f.Add([]byte("a\nb\na\nb\na\n"), []byte("b\na\nb\n"), int8(1))
	f.Add([]byte("\r\n\n\x00\xff"), []byte("\n\r\n\xff"), int8(2))
	f.Fuzz(func(t *testing.T, a, b []byte, context int8) {
		got := Unified("old", "new", a, b, int(context))
		if (got == "") != bytes.Equal(a, b) {
			t.Fatalf("diff %q for %q, %q", got, a, b)
		}
		out, err := applyUnified(got, a)
		if err != nil {
			t.Fatalf("diff of %q and %q does not apply: %v\n%s", a, b, err, got)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("diff of %q and %q applied gives %q\n%s", a, b, out, got)
		}
		la, lb := splitLines(a), splitLines(b)
		if len(la)*len(lb) <= 1<<16 {
			del, ins := changedLines(got)
			if l := lcsLen(la, lb); del != len(la)-l || ins != len(lb)-l {
				t.Fatalf("diff of %q and %q not minimal: -%d +%d, lcs %d\n%s", a, b, del, ins, l, got)
			}
		}
	})
}
