package workspace_test

import (
	"strings"
	"testing"

	"github.com/computerfs/computerfs/workspace"
)

func rules(t testing.TB, layers ...map[string]string) *workspace.Rules {
	t.Helper()
	var ls [][]workspace.Rule
	for _, m := range layers {
		// Maps have no order: tests of order use ordered().
		var l []workspace.Rule
		for p, v := range m {
			vv, err := workspace.ParseVerdict(v)
			if err != nil {
				t.Fatal(err)
			}
			l = append(l, workspace.Rule{Pattern: p, Verdict: vv})
		}
		ls = append(ls, l)
	}
	rs, err := workspace.CompileRules(ls...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// ordered is one layer in order, from "pattern=verdict" pairs.
func ordered(t testing.TB, pairs ...string) []workspace.Rule {
	t.Helper()
	var l []workspace.Rule
	for _, pv := range pairs {
		p, v, _ := strings.Cut(pv, "=")
		vv, err := workspace.ParseVerdict(v)
		if err != nil {
			t.Fatal(err)
		}
		l = append(l, workspace.Rule{Pattern: p, Verdict: vv})
	}
	return l
}

func TestRulesVerdict(t *testing.T) {
	a, r, d := workspace.Allow, workspace.ReadOnly, workspace.Deny
	type check struct {
		path string
		want workspace.Verdict
	}
	for _, tc := range []struct {
		name   string
		layers [][]string
		checks []check
	}{
		{"unanchored at any depth", [][]string{{".env=deny"}}, []check{
			{"/.env", d}, {"/a/.env", d}, {"/a/b/.env", d}, {"/.envrc", a}, {"/a/x.env", a}, {"/.env/inside", d}, {"/", a},
		}},
		{"unanchored with a slash is not anchored", [][]string{{"keys/*.pem=deny"}}, []check{
			{"/keys/a.pem", d}, {"/x/keys/a.pem", d}, {"/keys/sub/a.pem", a}, {"/a.pem", a},
		}},
		{"anchored", [][]string{{"/vendor/**=read_only"}}, []check{
			{"/vendor", a}, {"/vendor/x", r}, {"/vendor/x/y", r}, {"/src/vendor/x", a},
		}},
		{"a directory covers what is below", [][]string{{"/secrets=deny"}}, []check{
			{"/secrets", d}, {"/secrets/a", d}, {"/secrets/a/b", d}, {"/secretsx", a},
		}},
		{"star and question", [][]string{{"*.pem=deny", "/l?g=read_only"}}, []check{
			{"/a.pem", d}, {"/d/.pem", d}, {"/log", r}, {"/lg", a}, {"/logs", a}, {"/log/x", r},
		}},
		{"classes and braces", [][]string{{"/{a,b}/[0-9]*=read_only"}}, []check{
			{"/a/1x", r}, {"/b/9", r}, {"/c/1", a}, {"/a/x1", a},
		}},
		{"write only under /out", [][]string{{"/**=read_only", "/out/**=allow"}}, []check{
			{"/out", r}, {"/out/x", a}, {"/out/x/y", a}, {"/src/x", r}, {"/outx", r},
		}},
		{"last match wins in a layer", [][]string{{"/out/**=allow", "/**=read_only"}}, []check{
			{"/out/x", r},
		}},
		{"re-allow inside read-only", [][]string{{"/vendor=read_only", "/vendor/cache/**=allow"}}, []check{
			{"/vendor", r}, {"/vendor/x", r}, {"/vendor/cache", r}, {"/vendor/cache/x", a},
		}},
		{"a denied directory stays denied below", [][]string{{"/secrets=deny", "/secrets/public/**=allow"}}, []check{
			{"/secrets/public/x", d},
		}},
		{"top level is a floor", [][]string{{"**/.env=deny"}, {"/vendor/**=read_only"}}, []check{
			{"/vendor/.env", d}, {"/vendor/x", r}, {"/.env", d},
		}},
		{"a backend relaxes a top rule only by its pattern", [][]string{{"**/.env=deny", "/src/**=read_only"}, {"**/.env=allow", "/src/gen/**=allow"}}, []check{
			{"/.env", a}, {"/src/.env", r}, {"/src/gen/x", r}, {"/src/x", r},
		}},
		{"a backend adds restrictions", [][]string{{"/a/**=read_only"}, {"/a/b/**=deny"}}, []check{
			{"/a/x", r}, {"/a/b/x", d}, {"/a/b", r},
		}},
		{"double star in the middle", [][]string{{"/a/**/z=deny"}}, []check{
			{"/a/z", d}, {"/a/b/c/z", d}, {"/z", a}, {"/a/z/q", d},
		}},
		{"hidden names match wildcards", [][]string{{"/*=read_only"}}, []check{
			{"/.git", r}, {"/.git/x", r}, {"/", a},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var layers [][]workspace.Rule
			for _, l := range tc.layers {
				layers = append(layers, ordered(t, l...))
			}
			rs, err := workspace.CompileRules(layers...)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.checks {
				if got, by := rs.Verdict(c.path); got != c.want {
					t.Errorf("%s: %s (by %q), want %s", c.path, got, by.Pattern, c.want)
				}
			}
		})
	}
}

func TestRulesRefused(t *testing.T) {
	for _, p := range []string{"", "/", "//", "/.", "[a", "{a,b", `a\`, "/a/../b", "..", "a\x00b", "[[:nope:]]"} {
		if _, err := workspace.CompileRules([]workspace.Rule{{Pattern: p}}); err == nil {
			t.Errorf("%q: compiled", p)
		} else if !strings.Contains(err.Error(), "pattern") && p != "" {
			t.Errorf("%q: %v does not name the pattern", p, err)
		}
	}
	if _, err := workspace.ParseVerdict("readonly"); err == nil {
		t.Error("verdict readonly accepted")
	}
	if rs, err := workspace.CompileRules(nil, nil); rs != nil || err != nil {
		t.Errorf("no rules: %v, %v", rs, err)
	}
}

// FuzzRules checks that compiling and deciding never panic, that a
// denied path denies what is below it, that an unanchored pattern is its
// "/**/" form, and that a nil rule set allows everything.
func FuzzRules(f *testing.F) {
	for _, s := range [][2]string{
		{"**/.env", "/a/.env"}, {"/vendor/**", "/vendor/x/y"}, {"*.pem", "/k.pem"}, {"/{a,b/**}/c", "/b/x/c"},
		{"[!a]?", "/bc/d"}, {"/a/**/b/**", "/a/b/c"}, {"\\*", "/*"}, {"{,a}", "/a"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, p string) {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		clean, err := workspace.CleanPath(p)
		if err != nil {
			return
		}
		rs, err := workspace.CompileRules([]workspace.Rule{{Pattern: pattern, Verdict: workspace.Deny}})
		if err != nil {
			return
		}
		v, _ := rs.Verdict(clean)
		if clean == "/" && v != workspace.Allow {
			t.Fatalf("%q denies the root", pattern)
		}
		if v == workspace.Deny {
			if below, _ := rs.Verdict(clean + "/x"); below != workspace.Deny {
				t.Fatalf("%q denies %s but not %s/x", pattern, clean, clean)
			}
		}
		if !strings.HasPrefix(pattern, "/") {
			anch, err := workspace.CompileRules([]workspace.Rule{{Pattern: "/**/" + pattern, Verdict: workspace.Deny}})
			if err != nil {
				t.Fatalf("%q compiles but /**/%s does not: %v", pattern, pattern, err)
			}
			if av, _ := anch.Verdict(clean); av != v {
				t.Fatalf("%s: %q gives %s, /**/%s %s", clean, pattern, v, pattern, av)
			}
		}
		var none *workspace.Rules
		if nv, _ := none.Verdict(clean); nv != workspace.Allow {
			t.Fatal("nil rules restrict")
		}
	})
}
