package workspace

import (
	"strings"
	"testing"
)

// referenceVerdict is Verdict the slow, obvious way: each prefix of p
// matched whole against each rule (Match), the last match per layer, the
// strictest layer, a denied prefix denying the rest.
func referenceVerdict(rs *Rules, p string) Verdict {
	segs := globSplitPath(p)
	matched := make([][]bool, len(rs.layers))
	for l := range rs.layers {
		matched[l] = make([]bool, len(rs.layers[l]))
	}
	v := Allow
	for k := 1; k <= len(segs); k++ {
		prefix := strings.Join(segs[:k], "/")
		v = Allow
		for l, layer := range rs.layers {
			lv := Allow
			for i, c := range layer {
				matched[l][i] = matched[l][i] || c.g.Match(prefix)
				if matched[l][i] {
					lv = c.Verdict
				}
			}
			v = max(v, lv)
		}
		if v == Deny {
			return Deny
		}
	}
	return v
}

// FuzzRulesReference: the incremental Verdict agrees with the reference
// on two layers of three rules each.
func FuzzRulesReference(f *testing.F) {
	f.Add("**/.env", "/vendor/**", "*.pem", "/a/**/b", "{x,y/z}", "/**", "/vendor/a/.env")
	f.Add("/out/**", "/**", "[a-c]?", "/a", "a/b", "**/z/**", "/a/b/z/q")
	f.Fuzz(func(t *testing.T, p1, p2, p3, p4, p5, p6, path string) {
		var layers [][]Rule
		for i, p := range []string{p1, p2, p3, p4, p5, p6} {
			if i%3 == 0 {
				layers = append(layers, nil)
			}
			if _, err := compileRule(Rule{Pattern: p}); err != nil {
				continue
			}
			layers[len(layers)-1] = append(layers[len(layers)-1], Rule{Pattern: p, Verdict: Verdict(i % 3)})
		}
		rs, err := CompileRules(layers...)
		if err != nil || rs == nil {
			return
		}
		clean, err := CleanPath("/" + path)
		if err != nil {
			return
		}
		if got, want := func() Verdict { v, _ := rs.Verdict(clean); return v }(), referenceVerdict(rs, clean); got != want {
			t.Fatalf("%s under %v: %s, reference %s", clean, layers, got, want)
		}
	})
}
