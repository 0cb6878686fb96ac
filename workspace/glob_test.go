package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mustGlob(t testing.TB, pattern string) *globPattern {
	t.Helper()
	g, err := compileGlob(pattern)
	if err != nil {
		t.Fatalf("compileGlob(%q): %v", pattern, err)
	}
	return g
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"", []string{""}, []string{"a"}},
		{"a", []string{"a", "./a", "a/"}, []string{"b", "a/b", "aa", "A"}},
		{"a/b", []string{"a/b", "a//b", "./a/b"}, []string{"a", "a/b/c", "b", "ab"}},
		{"*", []string{"a", ".hidden", "x.go", "*", "日本"}, []string{"a/b", ""}},
		{"*.go", []string{"x.go", ".go", ".x.go", "a.b.go"}, []string{"x.go/y", "d/x.go", "x.gox", "xgo"}},
		{"?", []string{"a", "é", "日"}, []string{"", "ab", "a/b"}},
		{"??", []string{"ab", "日本", "aé"}, []string{"a", "abc"}},
		{"a?c", []string{"abc", "a.c", "aéc"}, []string{"ac", "a/c", "abbc"}},
		{"[abc]", []string{"a", "b", "c"}, []string{"d", "ab", ""}},
		{"[a-c]x", []string{"ax", "bx", "cx"}, []string{"dx", "Ax", "-x"}},
		{"[!a-c]", []string{"d", "A", "-", "é"}, []string{"a", "b", "c"}},
		{"[^a-c]", []string{"d"}, []string{"b"}},
		{"[]]", []string{"]"}, []string{"a"}},
		{"[]a]", []string{"]", "a"}, []string{"b"}},
		{"[!]]", []string{"a"}, []string{"]"}},
		{"[a-]", []string{"a", "-"}, []string{"b"}},
		{"[-a]", []string{"a", "-"}, []string{"b"}},
		{`[\]]`, []string{"]"}, []string{`\`}},
		{`[\!a]`, []string{"!", "a"}, []string{"b"}},
		{"[é-ë]", []string{"é", "ê", "ë"}, []string{"e", "è"}},
		{"[[:digit:]]*", []string{"1", "9abc"}, []string{"a1"}},
		{"[[:upper:][:digit:]]", []string{"A", "1"}, []string{"a"}},
		{"[![:alpha:]]", []string{"1", "-"}, []string{"a", "Z"}},
		{"[[:alpha:]_]x", []string{"ax", "_x"}, []string{"1x"}},
		{`\*`, []string{"*"}, []string{"a", `\*`}},
		{`a\?b`, []string{"a?b"}, []string{"axb"}},
		{`\[a]`, []string{"[a]"}, []string{"a"}},
		{`\{a,b}`, []string{"{a,b}"}, []string{"a", "b"}},
		{`{a\,b,c}`, []string{"a,b", "c"}, []string{"a", "b"}},
		{`\\`, []string{`\`}, []string{""}},
		{"a,b", []string{"a,b"}, []string{"a"}},
		{"a}b", []string{"a}b"}, []string{"a"}},
		{"{a,b}", []string{"a", "b"}, []string{"ab", "{a,b}"}},
		{"{a}", []string{"a"}, []string{"{a}"}},
		{"x{,y}", []string{"x", "xy"}, []string{"y"}},
		{"{}x", []string{"x"}, []string{"{}x"}},
		{"*.{go,mod}", []string{"a.go", "go.mod"}, []string{"a.sum"}},
		{"{a,b{c,d{e,f}}}", []string{"a", "bc", "bde", "bdf"}, []string{"b", "bd", "bdg"}},
		{"{src,cmd/*}/x.go", []string{"src/x.go", "cmd/a/x.go"}, []string{"cmd/x.go", "src/a/x.go"}},
		{"{a,b}/{c,d}", []string{"a/c", "a/d", "b/c", "b/d"}, []string{"a/b"}},
		{"[{,]", []string{"{", ","}, []string{"[{,]", "["}},
		{"**", []string{"a", "a/b", "a/b/c", ".git/x"}, []string{""}},
		{"**/*.go", []string{"x.go", "d/x.go", "d/e/x.go", ".h/.x.go"}, []string{"x.gox", "d/x.go/y"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b", "a/b/b"}, []string{"a", "b", "a/b/c", "x/a/b", "ab"}},
		{"a/**", []string{"a/b", "a/b/c", "a/.x"}, []string{"a", "b/a", "ab"}},
		{"a/**/", []string{"a/b", "a/b/c"}, []string{"a"}},
		{"**/a", []string{"a", "x/a", "x/y/a"}, []string{"a/x", "xa"}},
		{"**/a/**", []string{"a/x", "y/a/x", "y/a/x/z"}, []string{"a", "y/a"}},
		{"**/**/a", []string{"a", "x/a", "x/y/a"}, []string{"ax"}},
		{"a/**/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"a/x"}},
		{"a/**/**", []string{"a/x", "a/x/y"}, []string{"a"}},
		{"a/**/b/**/c", []string{"a/b/c", "a/x/b/y/c", "a/b/b/c", "a/b/x/b/c"}, []string{"a/b", "a/c/b"}},
		{"**.go", []string{"x.go"}, []string{"d/x.go"}},
		{"a**", []string{"a", "ab"}, []string{"a/b"}},
		{"a/**x", []string{"a/x", "a/bx"}, []string{"a/b/x"}},
		{"***", []string{"a"}, []string{"a/b"}},
		{"./src/*.go", []string{"src/a.go"}, []string{"a.go"}},
		{"/src/*.go", []string{"src/a.go"}, []string{"a.go"}},
		{"a/./b", []string{"a/b"}, []string{"a/./c"}},
		{"{./a,b}", []string{"a", "b"}, []string{"./b/c"}},
		{"*a*b*c*", []string{"abc", "xaxbxcx", "aabbcc"}, []string{"acb", "ab"}},
		{"*日*", []string{"日", "x日本"}, []string{"本"}},
		{"src/*/*_test.go", []string{"src/a/x_test.go"}, []string{"src/x_test.go", "src/a/b/x_test.go"}},
		{"*/", []string{"a"}, []string{"a/b"}},
	}
	for _, tt := range tests {
		g := mustGlob(t, tt.pattern)
		for _, p := range tt.yes {
			if !g.Match(p) {
				t.Errorf("%q.Match(%q) = false, want true", tt.pattern, p)
			}
		}
		for _, p := range tt.no {
			if g.Match(p) {
				t.Errorf("%q.Match(%q) = true, want false", tt.pattern, p)
			}
		}
	}
}

func TestGlobErrors(t *testing.T) {
	bad := []string{
		"[", "a[", "[a", "[]", "[!]", "[^]", "[a-", "a[b/c]", "[[:nope:]]",
		"{", "{a", "{a,b", "a{b,{c}", `\`, `a\`, `[\`, `{a,\}`, `{[}]`,
		strings.Repeat("{a,b}", 11), // 2048 alternatives
		strings.Repeat("{", 100) + strings.Repeat("}", 100),
	}
	for _, p := range bad {
		g, err := compileGlob(p)
		if err == nil {
			t.Errorf("compileGlob(%q) = %v, want error", p, g.alts)
			continue
		}
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("compileGlob(%q) error %v does not wrap EINVAL", p, err)
		}
	}
	good := []string{
		"]", "}", ",", "a]", "{}", "{,}", "[[]", "[a[]", "[[:]", "[[:alpha]", "[:alpha:]",
		strings.Repeat("{a,b}", 10), // 1024 alternatives
		strings.Repeat("{", 60) + strings.Repeat("}", 60),
	}
	for _, p := range good {
		if _, err := compileGlob(p); err != nil {
			t.Errorf("compileGlob(%q): %v", p, err)
		}
	}
}

func TestGlobCouldMatchBelow(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"src/*.go", []string{"", "src"}, []string{"docs", "src/a", "srcx"}},
		{"*.go", []string{""}, []string{"a", "a/b"}},
		{"**/*.go", []string{"", "a", "a/b/c", ".git"}, nil},
		{"a/**/b", []string{"", "a", "a/x", "a/b", "a/x/y"}, []string{"b", "x/a"}},
		{"a/**", []string{"", "a", "a/b"}, []string{"b"}},
		{"a/b", []string{"", "a"}, []string{"a/b", "b", "a/c"}},
		{"{a,b/c}/*", []string{"", "a", "b", "b/c"}, []string{"c", "a/x", "b/d"}},
		{"*/x", []string{"", "a", ".h"}, []string{"a/x", "a/b"}},
		{"a/*/c/**", []string{"a", "a/b", "a/b/c", "a/b/c/d/e"}, []string{"a/b/d", "b"}},
		{"[ab]/x", []string{"a", "b"}, []string{"c"}},
		{"", nil, []string{"", "a"}},
	}
	for _, tt := range tests {
		g := mustGlob(t, tt.pattern)
		for _, d := range tt.yes {
			if !g.CouldMatchBelow(d) {
				t.Errorf("%q.CouldMatchBelow(%q) = false, want true", tt.pattern, d)
			}
		}
		for _, d := range tt.no {
			if g.CouldMatchBelow(d) {
				t.Errorf("%q.CouldMatchBelow(%q) = true, want false", tt.pattern, d)
			}
		}
	}
}

func TestGlobLiteralPrefix(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"src/cmd/**/*.go", "src/cmd"},
		{"src/main.go", "src"},
		{"main.go", ""},
		{"*.go", ""},
		{"**", ""},
		{"a/**", "a"},
		{"a/b/**", "a/b"},
		{"a/b/c", "a/b"},
		{"./a/b/c", "a/b"},
		{"a//b/*", "a/b"},
		{"a/*/b/c", "a"},
		{"a/b?/c", "a"},
		{"src/{a,b}/x", "src"},
		{"{src/a,src/b}/x", "src"},
		{"{src/a/x,src/a/y}", "src/a"},
		{"{a,b}/x", ""},
		{`a\*b/c`, "a*b"},
		{`a/[b]/c`, "a"},
		{"../x/y", ""},
		{"a/../b/c", "a"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := mustGlob(t, tt.pattern).LiteralPrefix(); got != tt.want {
			t.Errorf("%q.LiteralPrefix() = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

// TestGlobNoBlowup checks that patterns that make naive backtracking
// matchers exponential stay fast.
func TestGlobNoBlowup(t *testing.T) {
	start := time.Now()
	g := mustGlob(t, strings.Repeat("a*", 30)+"b")
	if g.Match(strings.Repeat("a", 200)) {
		t.Error("unexpected match")
	}
	g = mustGlob(t, strings.Repeat("**/a/", 30)+"b")
	deep := strings.Repeat("a/", 200) + "c"
	if g.Match(deep) {
		t.Error("unexpected match")
	}
	if !g.CouldMatchBelow(strings.Repeat("a/", 200)) {
		t.Error("CouldMatchBelow = false")
	}
	g = mustGlob(t, strings.Repeat("{a,b}", 10)+"/**/"+strings.Repeat("*a", 10))
	g.Match(strings.Repeat("ab/", 100) + strings.Repeat("a", 100))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// globOracle builds a regexp equivalent to a generated pattern, without the
// package's parser: it is the reference for TestGlobRandomOracle.
type globGenSeg struct {
	star bool     // "**"
	toks []string // pattern tokens
	res  []string // regexp of each token
}

func genGlobAlt(r *rand.Rand) []globGenSeg {
	n := 1 + r.Intn(4)
	var segs []globGenSeg
	for range n {
		if r.Intn(4) == 0 {
			segs = append(segs, globGenSeg{star: true})
			continue
		}
		var s globGenSeg
		m := 1 + r.Intn(3)
		for range m {
			var tok, re string
			switch r.Intn(9) {
			case 0, 1:
				tok, re = "*", `[^/]*`
			case 2:
				tok, re = "?", `[^/]`
			case 3:
				tok, re = "[ab]", `[ab]`
			case 4:
				tok, re = "[!a.]", `[^a./]`
			case 5:
				tok, re = `\*`, `\*`
			default:
				c := string("ab.c"[r.Intn(4)])
				tok, re = c, regexp.QuoteMeta(c)
			}
			s.toks = append(s.toks, tok)
			s.res = append(s.res, re)
		}
		switch strings.Join(s.toks, "") {
		case "**", ".": // a globstar, or dropped
			s.toks = []string{"*", "a"}
			s.res = []string{`[^/]*`, `a`}
		}
		segs = append(segs, s)
	}
	return segs
}

func genGlobAltString(segs []globGenSeg) string {
	var parts []string
	for _, s := range segs {
		if s.star {
			parts = append(parts, "**")
		} else {
			parts = append(parts, strings.Join(s.toks, ""))
		}
	}
	return strings.Join(parts, "/")
}

// genGlobAltRegexp returns a regexp for path+"/".
func genGlobAltRegexp(segs []globGenSeg) string {
	var b strings.Builder
	for i, s := range segs {
		switch {
		case s.star && i == len(segs)-1:
			b.WriteString(`(?:[^/]+/)+`)
		case s.star:
			b.WriteString(`(?:[^/]+/)*`)
		default:
			b.WriteString(strings.Join(s.res, "") + "/")
		}
	}
	return b.String()
}

func genGlobPath(r *rand.Rand) string {
	n := 1 + r.Intn(5)
	var segs []string
	for range n {
		m := 1 + r.Intn(3)
		var s []byte
		for range m {
			s = append(s, "ab.c*"[r.Intn(5)])
		}
		if string(s) == "." {
			s = []byte(".a") // "." segments are normalized away
		}
		segs = append(segs, string(s))
	}
	return strings.Join(segs, "/")
}

func TestGlobRandomOracle(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for range 3000 {
		nalt := 1 + r.Intn(3)
		var alts, res []string
		for range nalt {
			segs := genGlobAlt(r)
			alts = append(alts, genGlobAltString(segs))
			res = append(res, genGlobAltRegexp(segs))
		}
		pattern := alts[0]
		if nalt > 1 {
			pattern = "{" + strings.Join(alts, ",") + "}"
		}
		re := regexp.MustCompile(`^(?:` + strings.Join(res, "|") + `)$`)
		g := mustGlob(t, pattern)
		for range 30 {
			p := genGlobPath(r)
			want := re.MatchString(p + "/")
			if got := g.Match(p); got != want {
				t.Fatalf("%q.Match(%q) = %v, want %v (regexp %s)", pattern, p, got, want, re)
			}
			if want {
				checkGlobBelow(t, g, p)
			}
		}
	}
}

// checkGlobBelow checks, for a path that matches, that CouldMatchBelow is
// true for each of its ancestors and that it starts with LiteralPrefix.
func checkGlobBelow(t testing.TB, g *globPattern, p string) {
	t.Helper()
	segs := globSplitPath(p)
	for i := range segs {
		dir := strings.Join(segs[:i], "/")
		if !g.CouldMatchBelow(dir) {
			t.Fatalf("%q matches %q but CouldMatchBelow(%q) = false", g.pattern, p, dir)
		}
	}
	if lp := g.LiteralPrefix(); lp != "" {
		lps := strings.Split(lp, "/")
		if len(lps) > len(segs) || !slices.Equal(lps, segs[:len(lps)]) {
			t.Fatalf("%q matches %q outside LiteralPrefix %q", g.pattern, p, lp)
		}
	}
}

// TestGlobBash compares Match with bash's globbing ("shopt -s globstar
// dotglob nullglob extglob") over random trees. Known, intended
// differences, kept out of the pattern list or filtered:
//   - bash lists "a/" for "a/**", and for "*/**" lists each directory
//     matched by "*" itself (without a slash); we do not match the
//     directory itself. Results ending in '/' are dropped, and for a
//     pattern "P/**" the directories matched by P are not compared.
//   - bash "a/**/**" also lists "a"; not tested.
//   - bash leaves a word without wildcards as is even when no such file
//     exists (nullglob only applies to patterns), so bash results are
//     filtered to existing paths.
//   - bash treats an unclosed '[' or '{' as literal, "{a}" as literal and
//     expands braces before globbing without regard to classes; none of
//     these are tested.
func TestGlobBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	patterns := []string{
		"*", "**", "**/*", "*.go", "**/*.go", "a/**", "a/**/b", "**/a", "**/b/**",
		"a/*", "*/*", "*/*/*", "?", "??", "a?", "?.go", "[ab]", "[!ab]*", "[^a]*",
		"[a-c]*", "[[:upper:]]*", "[[:digit:]]*", "*.{go,txt}", "{a,b}/**/*.go",
		"{a,b/{a,b}}/*", "**.go", "a**", ".*", "*/.*", "**/.*", "a/**/**/b",
		`\**`, `*\?*`, "*[0-9]", "**/a/**/*.go", "*/**/x.go", "[]a]*", "[!.]*",
		"**/?", "x.go", "a/b", "{a,b}{a,b}", "**/{a,b}", "*/**", "**/*/**",
		"a/*/**/b", "**/[A-Z]*", "*-*", "**/*_*", "a/{b,.h}/**", "**/.h/*",
		"{.,a}*", "[.]*", "a/b/c", "**/c-d/**",
	}
	names := []string{"a", "b", "ab", "ba", "abc", ".h", ".git", "x.go", "y.go",
		"a.go", "z.txt", "README", "c-d", "e_f", "A", "B.GO", "1", "12", "*x", "a?b"}
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		root := t.TempDir()
		var mk func(dir string, depth int)
		mk = func(dir string, depth int) {
			n := 1 + r.Intn(7)
			for range n {
				name := names[r.Intn(len(names))]
				p := filepath.Join(dir, name)
				if _, err := os.Lstat(p); err == nil {
					continue
				}
				if depth < 4 && r.Intn(3) == 0 {
					if err := os.Mkdir(p, 0o755); err != nil {
						t.Fatal(err)
					}
					mk(p, depth+1)
				} else if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		mk(root, 0)
		var all []string
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if p != root {
				rel, _ := filepath.Rel(root, p)
				all = append(all, filepath.ToSlash(rel))
			}
			return nil
		})

		var script strings.Builder
		script.WriteString("shopt -s globstar dotglob nullglob extglob\n")
		for _, p := range patterns {
			fmt.Fprintf(&script, "for f in %s; do printf '%%s\\0' \"$f\"; done; printf '\\1\\0'\n", p)
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script.String())
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash: %v", err)
		}
		groups := bytes.Split(out, []byte("\x01\x00"))
		if len(groups) != len(patterns)+1 {
			t.Fatalf("bash gave %d groups for %d patterns", len(groups)-1, len(patterns))
		}
		for i, pattern := range patterns {
			ignore := map[string]bool{}
			if stem, ok := strings.CutSuffix(pattern, "/**"); ok {
				sg := mustGlob(t, stem)
				for _, p := range all {
					if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.IsDir() && sg.Match(p) {
						ignore[p] = true
					}
				}
			}
			want := map[string]bool{}
			for _, f := range strings.Split(string(groups[i]), "\x00") {
				if f == "" || strings.HasSuffix(f, "/") || ignore[f] {
					continue
				}
				if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
					continue
				}
				want[f] = true
			}
			g := mustGlob(t, pattern)
			got := map[string]bool{}
			for _, p := range all {
				if g.Match(p) && !ignore[p] {
					got[p] = true
					checkGlobBelow(t, g, p)
				}
			}
			for p := range want {
				if !got[p] {
					t.Errorf("seed %d: %q: bash matches %q, we do not", seed, pattern, p)
				}
			}
			for p := range got {
				if !want[p] {
					t.Errorf("seed %d: %q: we match %q, bash does not", seed, pattern, p)
				}
			}
		}
	}
}

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"**/*.go", "a/b/c.go"}, {"a/**/b", "a/x/y/b"}, {"{a,b/{c,d}}/*", "b/d/x"},
		{"[!a-c]?*", "dxy"}, {`\*x`, "*x"}, {"src/cmd", "src/cmd"}, {"[[:alpha:]]", "q"},
		{"a/**", "a/b"}, {"./a//b/", "a/b"}, {"*日?", "x日本"}, {"{", ""}, {"[", "["},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 2000 || len(path) > 2000 {
			return
		}
		// The fuzzer has no per-input timeout: make a hang a crash, which
		// it records. (Pauses in -fuzz progress are minimization, not this.)
		hang := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow: %q %q", pattern, path)) })
		defer hang.Stop()
		g, err := compileGlob(pattern)
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("compileGlob(%q): %v does not wrap EINVAL", pattern, err)
			}
			return
		}
		matched := g.Match(path)
		g.CouldMatchBelow(path)
		g.LiteralPrefix()
		if !globHasMeta(pattern) {
			norm := func(s string) string { return strings.Join(globSplitPath(s), "/") }
			if !g.Match(pattern) {
				t.Fatalf("literal %q does not match itself", pattern)
			}
			if want := norm(path) == norm(pattern); matched != want {
				t.Fatalf("literal %q.Match(%q) = %v, want %v", pattern, path, matched, want)
			}
		}
		if matched {
			checkGlobBelow(t, g, path)
		}
		// A path built by appending to path: its ancestors must be allowed.
		ext := strings.TrimRight(path, "/") + "/x"
		if g.Match(ext) {
			checkGlobBelow(t, g, ext)
		}
	})
}
