package workspace

import (
	"fmt"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Glob patterns select workspace paths: slash-separated paths relative to
// the search root, with no leading "/" and no "." or empty segments.
//
// Syntax:
//
//	'*'        any run of characters other than '/' (possibly empty)
//	'?'        exactly one character (a whole UTF-8 rune) other than '/'
//	'[...]'    one character from a class: single characters, ranges
//	           "a-z", POSIX classes "[:alpha:]" (ASCII), negation "[!...]"
//	           or "[^...]"; a ']' first in the class is literal, '\' escapes
//	'\c'      the character c, literally
//	'{a,b,c}'  alternation; alternatives may be empty, nest, and contain
//	           '/' and any other syntax ("{src,cmd/*}/**/*.go")
//	'**'       as a whole path segment: zero or more directories, so
//	           "a/**/b" matches "a/b" and "a/x/y/b", and "**/*.go" matches
//	           "x.go". A trailing "/**" matches everything below the
//	           directory but not the directory itself. A "**" that is not a
//	           whole segment ("**.go", "a**") is an ordinary '*'.
//
// Choices worth knowing:
//
//   - Wildcards match hidden names: '*', '?', classes and "**" all match a
//     leading '.', as bash does with "shopt -s dotglob globstar".
//   - Matching is case-sensitive and byte-exact for literals.
//   - Leading "./" and "/", repeated '/', "." segments and a trailing '/'
//     in a pattern are dropped: "./src//a/" is "src/a". The same is done to
//     the paths given to Match and CouldMatchBelow.
//   - Unlike bash, a brace group with no comma still alternates ("{a}" is
//     "a"), brace expansion is class-aware ("[{,]" is a class of two
//     characters, not an alternation), and a class may not contain '/'.
//   - Malformed patterns are errors (wrapping syscall.EINVAL) rather than
//     literals: an unclosed '[' or '{', a trailing '\', an unknown
//     "[:name:]", or a brace expansion with more than globMaxAlternatives
//     alternatives.
type globPattern struct {
	pattern string
	alts    [][]globSeg // one segment list per brace alternative
	maxAlt  int         // the longest len(alts[i])
}

// globMaxAlternatives caps brace expansion, globMaxExpanded the total
// size of the expanded alternatives, and globMaxBraceDepth the nesting.
const (
	globMaxAlternatives = 1024
	globMaxExpanded     = 256 << 10
	globMaxBraceDepth   = 64
)

// globSeg matches one path segment; star segments are "**".
type globSeg struct {
	star    bool      // "**": zero or more whole segments
	literal bool      // toks is a single literal token (fast path)
	lit     string    // the unescaped text when literal
	toks    []globTok // otherwise
	raw     string    // the segment's pattern text, for debugging
}

type globTokKind uint8

const (
	globLit   globTokKind = iota // lit
	globAny                      // ?
	globStar                     // *
	globClass                    // [...]
)

type globTok struct {
	kind  globTokKind
	lit   string
	class *globCharClass
}

type globRuneRange struct{ lo, hi rune }

type globCharClass struct {
	negated bool
	ranges  []globRuneRange
	named   []func(rune) bool
}

func (c *globCharClass) matches(r rune) bool {
	in := false
	for _, rg := range c.ranges {
		if rg.lo <= r && r <= rg.hi {
			in = true
			break
		}
	}
	if !in {
		for _, f := range c.named {
			if f(r) {
				in = true
				break
			}
		}
	}
	return in != c.negated
}

func globErr(pattern, format string, args ...any) error {
	if len(pattern) > 100 {
		pattern = pattern[:100] + "..."
	}
	return fmt.Errorf("glob %q: %s: %w", pattern, fmt.Sprintf(format, args...), syscall.EINVAL)
}

// compileGlob compiles pattern; see globPattern for the syntax.
func compileGlob(pattern string) (*globPattern, error) {
	alts, err := globExpandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{pattern: pattern}
	seen := make(map[string]bool, len(alts))
	segCache := make(map[string]globSeg) // alternatives share most segments
	for _, alt := range alts {
		if seen[alt] {
			continue
		}
		seen[alt] = true
		segs, err := globParseAlt(pattern, alt, segCache)
		if err != nil {
			return nil, err
		}
		g.alts = append(g.alts, segs)
		g.maxAlt = max(g.maxAlt, len(segs))
	}
	return g, nil
}

// String returns the pattern as given to compileGlob.
func (g *globPattern) String() string { return g.pattern }

// ---- brace expansion ----

// globBraceParser expands {a,b} groups. The alternatives it returns keep
// escapes and classes verbatim for globParseAlt.
type globBraceParser struct {
	pattern string
	i       int
	depth   int
}

// globExpandBraces returns the brace expansion of pattern. It also rejects
// the malformations that can be seen in the unexpanded text (trailing '\',
// unclosed '[' or '{').
func globExpandBraces(pattern string) ([]string, error) {
	p := &globBraceParser{pattern: pattern}
	alts, err := p.seq(true)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(alts))
	for i, a := range alts {
		out[i] = string(a)
	}
	return out, nil
}

// seq parses a sequence up to the end of the pattern (top) or up to an
// unnested ',' or '}' (inside a group), which it does not consume. The
// work is linear in the size of the result: literals are appended in
// place, and each product with a group of two or more alternatives at
// least doubles the count, so there are at most log2(globMaxAlternatives)
// copying steps.
func (p *globBraceParser) seq(top bool) ([][]byte, error) {
	out := [][]byte{nil}
	size := 0 // bytes in out
	appendLit := func(s string) error {
		size += len(s) * len(out)
		if size > globMaxExpanded {
			return globErr(p.pattern, "brace expansion too large")
		}
		for i := range out {
			out[i] = append(out[i], s...)
		}
		return nil
	}
	for p.i < len(p.pattern) {
		c := p.pattern[p.i]
		switch {
		case c == '\\':
			if p.i+1 >= len(p.pattern) {
				return nil, globErr(p.pattern, "trailing backslash")
			}
			_, w := utf8.DecodeRuneInString(p.pattern[p.i+1:])
			if err := appendLit(p.pattern[p.i : p.i+1+w]); err != nil {
				return nil, err
			}
			p.i += 1 + w
		case c == '[':
			end, err := globClassEnd(p.pattern, p.i)
			if err != nil {
				return nil, err
			}
			if err := appendLit(p.pattern[p.i:end]); err != nil {
				return nil, err
			}
			p.i = end
		case c == '{':
			p.i++
			p.depth++
			if p.depth > globMaxBraceDepth {
				return nil, globErr(p.pattern, "braces nested too deeply")
			}
			group, err := p.group()
			if err != nil {
				return nil, err
			}
			p.depth--
			if len(group) == 1 {
				if err := appendLit(string(group[0])); err != nil {
					return nil, err
				}
				continue
			}
			if len(out)*len(group) > globMaxAlternatives {
				return nil, globErr(p.pattern, "too many alternatives")
			}
			gsize := 0
			for _, b := range group {
				gsize += len(b)
			}
			size = size*len(group) + gsize*len(out)
			if size > globMaxExpanded {
				return nil, globErr(p.pattern, "brace expansion too large")
			}
			next := make([][]byte, 0, len(out)*len(group))
			for _, a := range out {
				for _, b := range group {
					next = append(next, append(a[:len(a):len(a)], b...))
				}
			}
			out = next
		case !top && (c == ',' || c == '}'):
			return out, nil
		default:
			// Copy a run of ordinary bytes at once.
			j := p.i + 1
			for j < len(p.pattern) && !strings.ContainsRune("\\[{,}", rune(p.pattern[j])) {
				j++
			}
			if err := appendLit(p.pattern[p.i:j]); err != nil {
				return nil, err
			}
			p.i = j
		}
	}
	return out, nil
}

// group parses the inside of a brace group after its '{', through its '}'.
func (p *globBraceParser) group() ([][]byte, error) {
	var all [][]byte
	size := 0
	for {
		alts, err := p.seq(false)
		if err != nil {
			return nil, err
		}
		all = append(all, alts...)
		if len(all) > globMaxAlternatives {
			return nil, globErr(p.pattern, "too many alternatives")
		}
		for _, a := range alts {
			size += len(a)
		}
		if size > globMaxExpanded {
			return nil, globErr(p.pattern, "brace expansion too large")
		}
		if p.i >= len(p.pattern) {
			return nil, globErr(p.pattern, "unclosed '{'")
		}
		c := p.pattern[p.i]
		p.i++
		if c == '}' {
			return all, nil
		}
		// c == ',': next alternative
	}
}

// globClassEnd returns the index just past the ']' closing the class that
// starts at s[start] == '['.
func globClassEnd(s string, start int) (int, error) {
	i := start + 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		i++
	}
	first := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == ']' && !first:
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return 0, globErr(s, "trailing backslash")
			}
			_, w := utf8.DecodeRuneInString(s[i+1:])
			i += 1 + w
		case c == '/':
			return 0, globErr(s, "'/' in character class")
		case c == '[' && i+1 < len(s) && s[i+1] == ':':
			if j := strings.Index(s[i+2:], ":]"); j >= 0 && !strings.Contains(s[i+2:i+2+j], "/") {
				i += 2 + j + 2
			} else {
				i++
			}
		default:
			i++
		}
		first = false
	}
	return 0, globErr(s, "unclosed '['")
}

// ---- alternative parsing ----

// globParseAlt compiles one brace-free alternative into segments, taking
// them from and adding them to cache.
func globParseAlt(pattern, alt string, cache map[string]globSeg) ([]globSeg, error) {
	var raws []string
	start := 0
	for i := 0; i < len(alt); {
		switch alt[i] {
		case '\\':
			if i+1 >= len(alt) {
				return nil, globErr(pattern, "trailing backslash")
			}
			_, w := utf8.DecodeRuneInString(alt[i+1:])
			i += 1 + w
		case '[':
			end, err := globClassEnd(alt, i)
			if err != nil {
				return nil, err
			}
			i = end
		case '/':
			raws = append(raws, alt[start:i])
			i++
			start = i
		default:
			i++
		}
	}
	raws = append(raws, alt[start:])

	segs := make([]globSeg, 0, len(raws)+1)
	for _, raw := range raws {
		if raw == "" || raw == "." {
			continue // "./a", "a//b", "a/", "a/./b"
		}
		if raw == "**" {
			if len(segs) > 0 && segs[len(segs)-1].star {
				continue // "**/**" is "**"
			}
			segs = append(segs, globSeg{star: true, raw: raw})
			continue
		}
		seg, ok := cache[raw]
		if !ok {
			var err error
			if seg, err = globParseSeg(pattern, raw); err != nil {
				return nil, err
			}
			cache[raw] = seg
		}
		segs = append(segs, seg)
	}
	// A trailing "**" matches everything below, not the directory itself:
	// make it "*/**" (one or more segments).
	if n := len(segs); n > 0 && segs[n-1].star {
		one := globSeg{toks: []globTok{{kind: globStar}}, raw: "*"}
		segs = append(segs[:n-1], one, segs[n-1])
	}
	return segs, nil
}

// globParseSeg compiles one segment (no '/', no braces).
func globParseSeg(pattern, raw string) (globSeg, error) {
	seg := globSeg{raw: raw}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			seg.toks = append(seg.toks, globTok{kind: globLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '\\':
			if i+1 >= len(raw) {
				return seg, globErr(pattern, "trailing backslash")
			}
			_, w := utf8.DecodeRuneInString(raw[i+1:])
			lit.WriteString(raw[i+1 : i+1+w])
			i += 1 + w
		case '*':
			flush()
			if n := len(seg.toks); n == 0 || seg.toks[n-1].kind != globStar {
				seg.toks = append(seg.toks, globTok{kind: globStar})
			}
			i++
		case '?':
			flush()
			seg.toks = append(seg.toks, globTok{kind: globAny})
			i++
		case '[':
			flush()
			cls, end, err := globParseClass(pattern, raw, i)
			if err != nil {
				return seg, err
			}
			seg.toks = append(seg.toks, globTok{kind: globClass, class: cls})
			i = end
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	if len(seg.toks) == 1 && seg.toks[0].kind == globLit {
		seg.literal = true
		seg.lit = seg.toks[0].lit
		seg.toks = nil
	}
	return seg, nil
}

var globNamedClasses = map[string]func(rune) bool{
	"alnum":  func(r rune) bool { return r < 0x80 && (globIsAlpha(r) || globIsDigit(r)) },
	"alpha":  globIsAlpha,
	"blank":  func(r rune) bool { return r == ' ' || r == '\t' },
	"cntrl":  func(r rune) bool { return r < 0x20 || r == 0x7f },
	"digit":  globIsDigit,
	"graph":  func(r rune) bool { return r > 0x20 && r < 0x7f },
	"lower":  func(r rune) bool { return 'a' <= r && r <= 'z' },
	"print":  func(r rune) bool { return r >= 0x20 && r < 0x7f },
	"punct":  func(r rune) bool { return r > 0x20 && r < 0x7f && !globIsAlpha(r) && !globIsDigit(r) },
	"space":  func(r rune) bool { return r == ' ' || ('\t' <= r && r <= '\r') },
	"upper":  func(r rune) bool { return 'A' <= r && r <= 'Z' },
	"xdigit": func(r rune) bool { return globIsDigit(r) || ('a' <= r && r <= 'f') || ('A' <= r && r <= 'F') },
	"word":   func(r rune) bool { return globIsAlpha(r) || globIsDigit(r) || r == '_' },
}

func globIsAlpha(r rune) bool { return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') }
func globIsDigit(r rune) bool { return '0' <= r && r <= '9' }

// globParseClass parses the class starting at s[start] == '[' and returns
// it with the index just past its ']'.
func globParseClass(pattern, s string, start int) (*globCharClass, int, error) {
	end, err := globClassEnd(s, start)
	if err != nil {
		return nil, 0, err
	}
	cls := &globCharClass{}
	i := start + 1
	if s[i] == '!' || s[i] == '^' {
		cls.negated = true
		i++
	}
	body := s[i : end-1]
	// elem reads one possibly escaped character of body at j.
	elem := func(j int) (rune, int) {
		if body[j] == '\\' {
			r, w := utf8.DecodeRuneInString(body[j+1:])
			return r, j + 1 + w
		}
		r, w := utf8.DecodeRuneInString(body[j:])
		return r, j + w
	}
	for j := 0; j < len(body); {
		if body[j] == '[' && j+1 < len(body) && body[j+1] == ':' {
			if k := strings.Index(body[j+2:], ":]"); k >= 0 {
				name := body[j+2 : j+2+k]
				f, ok := globNamedClasses[name]
				if !ok {
					return nil, 0, globErr(pattern, "unknown character class [:%s:]", name)
				}
				cls.named = append(cls.named, f)
				j += 2 + k + 2
				continue
			}
		}
		lo, next := elem(j)
		hi := lo
		if next+1 < len(body) && body[next] == '-' {
			hi, next = elem(next + 1)
		}
		cls.ranges = append(cls.ranges, globRuneRange{lo, hi})
		j = next
	}
	return cls, end, nil
}

// ---- matching ----

// globSplitPath splits a relative path into its segments, dropping empty
// and "." segments (so "", ".", "./a/", "/a" are normalized).
func globSplitPath(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}

// Match reports whether the relative path matches the pattern.
func (g *globPattern) Match(path string) bool {
	segs := globSplitPath(path)
	scratch := make([]bool, 2*(g.maxAlt+1))
	for _, alt := range g.alts {
		if globStates(alt, segs, scratch)[len(alt)] {
			return true
		}
	}
	return false
}

// CouldMatchBelow reports whether some path strictly below the directory
// dir (a relative path; "" is the root) might match. It returns false only
// when no such path can match, so a walker may prune dir.
func (g *globPattern) CouldMatchBelow(dir string) bool {
	segs := globSplitPath(dir)
	scratch := make([]bool, 2*(g.maxAlt+1))
	for _, alt := range g.alts {
		states := globStates(alt, segs, scratch)
		// From any live state short of the end, some nonempty rest may match.
		for i := 0; i < len(alt); i++ {
			if states[i] {
				return true
			}
		}
	}
	return false
}

// LiteralPrefix returns the longest leading directory path that every match
// must start with: the wildcard-free leading segments, excluding the last
// segment, common to all alternatives. "src/cmd/**/*.go" gives "src/cmd";
// "src/{a,b}/x" gives "src"; "*.go" and "main.go" give "". Escapes are
// removed ("a\*b/c" gives "a*b"). It stops at a ".." segment, so joining
// it to the search root never climbs out ("../x/y" gives "").
func (g *globPattern) LiteralPrefix() string {
	var prefix []string
	for k, alt := range g.alts {
		var p []string
		for i := 0; i < len(alt)-1 && alt[i].literal && alt[i].lit != ".."; i++ {
			p = append(p, alt[i].lit)
		}
		if k == 0 {
			prefix = p
			continue
		}
		n := 0
		for n < len(prefix) && n < len(p) && prefix[n] == p[n] {
			n++
		}
		prefix = prefix[:n]
	}
	return strings.Join(prefix, "/")
}

// globStates runs the segment NFA of alt over segs and returns the set of
// positions in alt reachable after consuming all of segs (position len(alt)
// means the whole pattern was used). It is O(len(alt)·len(segs)) segment
// matches, so "**" never backtracks exponentially. scratch holds at least
// 2*(len(alt)+1) bools; the result is a part of it.
func globStates(alt []globSeg, segs []string, scratch []bool) []bool {
	n := len(alt)
	cur, next := scratch[:n+1], scratch[n+1:2*(n+1)]
	clear(cur)
	cur[0] = true
	globClosure(alt, cur)
	for _, s := range segs {
		clear(next)
		live := false
		for i := 0; i < n; i++ {
			if !cur[i] {
				continue
			}
			if alt[i].star {
				next[i] = true
				live = true
			} else if alt[i].match(s) {
				next[i+1] = true
				live = true
			}
		}
		cur, next = next, cur
		if !live {
			break // cur is all false
		}
		globClosure(alt, cur)
	}
	return cur
}

// globClosure adds the positions reachable by letting "**" match nothing.
func globClosure(alt []globSeg, st []bool) {
	for i := 0; i < len(alt); i++ {
		if st[i] && alt[i].star {
			st[i+1] = true
		}
	}
}

// match reports whether the segment pattern matches the whole segment s,
// with the usual two-pointer wildcard algorithm: on a mismatch, retry from
// the most recent '*' with it taking one more rune. Each token other than
// '*' matches a fixed number of runes, which makes this exact.
func (seg *globSeg) match(s string) bool {
	if seg.literal {
		return s == seg.lit
	}
	toks := seg.toks
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(toks) {
			t := &toks[ti]
			switch t.kind {
			case globStar:
				starTi, starSi = ti, si
				ti++
				continue
			case globLit:
				if strings.HasPrefix(s[si:], t.lit) {
					si += len(t.lit)
					ti++
					continue
				}
			case globAny:
				if si < len(s) {
					_, w := utf8.DecodeRuneInString(s[si:])
					si += w
					ti++
					continue
				}
			case globClass:
				if si < len(s) {
					r, w := utf8.DecodeRuneInString(s[si:])
					if t.class.matches(r) {
						si += w
						ti++
						continue
					}
				}
			}
		} else if si == len(s) {
			return true
		}
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starSi:])
		starSi += w
		si = starSi
		ti = starTi + 1
	}
}

// globHasMeta reports whether s contains glob syntax.
func globHasMeta(s string) bool {
	return strings.ContainsAny(s, `*?[\{`)
}
