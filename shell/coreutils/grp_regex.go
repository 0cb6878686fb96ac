package coreutils

// POSIX regular expressions (BRE and ERE, with GNU's extensions) for
// grep and sed, translated to Go's RE2 syntax.
//
// The parser follows glibc's regcomp: the same tokens, the same places
// where ^, $, * and { are special or literal, and the same error
// messages ("Unmatched ( or \\("), so that a bad pattern is refused in
// GNU's words. grep and sed configure glibc differently (grep's
// RE_SYNTAX_GREP/EGREP, sed's POSIX_BASIC/EXTENDED): grpSyntax.sed
// selects which. Matching is leftmost-longest (regexp.Longest), as
// POSIX wants.
//
// RE2 has no back-references: a pattern that uses \1..\9 parses (and
// is checked) but does not compile; callers report
// grpErrBackref. \< and \> become \b, and RE2's \b knows only ASCII
// word characters.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// grpSyntax selects a dialect.
type grpSyntax struct {
	ere   bool // extended (grep -E, sed -E) rather than basic
	sed   bool // sed's syntax bits (glibc POSIX_BASIC/EXTENDED) rather than grep's
	icase bool // ignore case
	mline bool // sed's M flag: ^ and $ match at embedded newlines
}

// grpReError is a pattern that does not compile; Error is glibc's text.
type grpReError struct{ msg string }

func (e *grpReError) Error() string { return e.msg }

// grpErrBackref is returned for patterns that need back-references.
var grpErrBackref = errors.New("back-references are not supported")

// glibc's messages.
const (
	grpEBadPat   = "Invalid regular expression"
	grpECollate  = "Invalid collation character"
	grpECtype    = "Invalid character class name"
	grpEEscape   = "Trailing backslash"
	grpESubreg   = "Invalid back reference"
	grpEBrack    = "Unmatched [, [^, [:, [., or [="
	grpEParen    = "Unmatched ( or \\("
	grpEBrace    = "Unmatched \\{"
	grpEBadBr    = "Invalid content of \\{\\}"
	grpERange    = "Invalid range end"
	grpESize     = "Regular expression too big"
	grpEBadRpt   = "Invalid preceding regular expression"
	grpERParen   = "Unmatched ) or \\)"
	grpDupMax    = 0x7fff
	grpColonSyn  = "character class syntax is [[:space:]], not [:space:]"
	grpNameLimit = 32
)

type grpTokKind int

const (
	grpTEnd grpTokKind = iota
	grpTChar
	grpTAny
	grpTBOL
	grpTEOL
	grpTBufStart
	grpTBufEnd
	grpTWordB
	grpTNotWordB
	grpTWordStart
	grpTWordEnd
	grpTWord
	grpTNotWord
	grpTSpace
	grpTNotSpace
	grpTOpen
	grpTClose
	grpTAlt
	grpTStar
	grpTPlus
	grpTQuest
	grpTOpenDup
	grpTCloseDup
	grpTBracket
	grpTBackref
	grpTBackslash // a backslash at the end of the pattern
)

type grpTok struct {
	kind grpTokKind
	r    rune
	n    int
}

type grpNodeOp int

const (
	grpNEmpty grpNodeOp = iota
	grpNLit
	grpNAny
	grpNClass // re holds the RE2 text
	grpNAssert
	grpNGroup
	grpNConcat
	grpNAlt
	grpNRepeat
	grpNBackref
)

type grpNode struct {
	op       grpNodeOp
	r        rune
	re       string
	kids     []*grpNode
	min, max int // repeat; max < 0: unbounded
	n        int // group or back-reference number
}

type grpParser struct {
	p         []rune
	i         int
	syn       grpSyntax
	tok       grpTok
	ngroups   int
	completed uint32
	backref   bool
	warns     []string
	laststart bool   // only zero-width items since the start, ( or |
	dfaErr    string // an error of GNU's dfa, reported after glibc's
}

// grpRunes decodes s; invalid bytes become U+FFFD.
func grpRunes(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r)
	}
	return out
}

func (p *grpParser) bre() bool { return !p.syn.ere }

// peekAt reads the token at i, returning it and its width.
func (p *grpParser) peekAt(i int, caretHere bool) (grpTok, int) {
	if i >= len(p.p) {
		return grpTok{kind: grpTEnd}, 0
	}
	c := p.p[i]
	if c == '\\' {
		if i+1 >= len(p.p) {
			return grpTok{kind: grpTBackslash}, 1
		}
		c2 := p.p[i+1]
		t := grpTok{kind: grpTChar, r: c2}
		switch c2 {
		case '|':
			if p.bre() {
				t.kind = grpTAlt
			}
		case '1', '2', '3', '4', '5', '6', '7', '8', '9':
			t.kind, t.n = grpTBackref, int(c2-'0')
		case '<':
			t.kind = grpTWordStart
		case '>':
			t.kind = grpTWordEnd
		case 'b':
			t.kind = grpTWordB
		case 'B':
			t.kind = grpTNotWordB
		case 'w':
			t.kind = grpTWord
		case 'W':
			t.kind = grpTNotWord
		case 's':
			t.kind = grpTSpace
		case 'S':
			t.kind = grpTNotSpace
		case '`':
			t.kind = grpTBufStart
		case '\'':
			t.kind = grpTBufEnd
		case '(':
			if p.bre() {
				t.kind = grpTOpen
			}
		case ')':
			if p.bre() {
				t.kind = grpTClose
			}
		case '+':
			if p.bre() {
				t.kind = grpTPlus
			}
		case '?':
			if p.bre() {
				t.kind = grpTQuest
			}
		case '{':
			if p.bre() {
				t.kind = grpTOpenDup
			}
		case '}':
			if p.bre() {
				t.kind = grpTCloseDup
			}
		}
		return t, 2
	}
	t := grpTok{kind: grpTChar, r: c}
	switch c {
	case '\n':
		if !p.syn.sed {
			t.kind = grpTAlt
		}
	case '|':
		if !p.bre() {
			t.kind = grpTAlt
		}
	case '*':
		t.kind = grpTStar
	case '+':
		if !p.bre() {
			t.kind = grpTPlus
		}
	case '?':
		if !p.bre() {
			t.kind = grpTQuest
		}
	case '{':
		if !p.bre() {
			t.kind = grpTOpenDup
		}
	case '}':
		if !p.bre() {
			t.kind = grpTCloseDup
		}
	case '(':
		if !p.bre() {
			t.kind = grpTOpen
		}
	case ')':
		if !p.bre() {
			t.kind = grpTClose
		}
	case '[':
		t.kind = grpTBracket
	case '.':
		t.kind = grpTAny
	case '^':
		if p.bre() && !caretHere && i != 0 && (p.syn.sed || p.p[i-1] != '\n') {
			break
		}
		t.kind = grpTBOL
	case '$':
		if p.bre() && i+1 != len(p.p) {
			next, _ := p.peekAt(i+1, false)
			if next.kind != grpTAlt && next.kind != grpTClose {
				break
			}
		}
		t.kind = grpTEOL
	}
	return t, 1
}

func (p *grpParser) fetch(caretHere bool) {
	t, w := p.peekAt(p.i, caretHere)
	p.tok = t
	p.i += w
}

func grpErr(msg string) error { return &grpReError{msg} }

func (p *grpParser) parseRegExp(nest int) (*grpNode, error) {
	p.laststart = true
	branch, err := p.parseBranch(nest)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != grpTAlt {
		return branch, nil
	}
	alt := &grpNode{op: grpNAlt, kids: []*grpNode{branch}}
	for p.tok.kind == grpTAlt {
		p.fetch(true)
		p.laststart = true
		var b *grpNode
		if p.tok.kind != grpTAlt && p.tok.kind != grpTEnd && (nest == 0 || p.tok.kind != grpTClose) {
			b, err = p.parseBranch(nest)
			if err != nil {
				return nil, err
			}
		} else {
			b = &grpNode{op: grpNEmpty}
		}
		alt.kids = append(alt.kids, b)
	}
	return alt, nil
}

func (p *grpParser) parseBranch(nest int) (*grpNode, error) {
	first, err := p.parseExpression(nest)
	if err != nil {
		return nil, err
	}
	cat := &grpNode{op: grpNConcat, kids: []*grpNode{first}}
	for p.tok.kind != grpTAlt && p.tok.kind != grpTEnd && (nest == 0 || p.tok.kind != grpTClose) {
		e, err := p.parseExpression(nest)
		if err != nil {
			return nil, err
		}
		cat.kids = append(cat.kids, e)
	}
	if len(cat.kids) == 1 {
		return first, nil
	}
	return cat, nil
}

func (p *grpParser) classNode(re string) *grpNode {
	return &grpNode{op: grpNClass, re: re}
}

func (p *grpParser) parseExpression(nest int) (*grpNode, error) {
	var node *grpNode
	t := p.tok
	switch t.kind {
	case grpTChar:
		node = &grpNode{op: grpNLit, r: t.r}
		p.laststart = false
	case grpTAny:
		node = &grpNode{op: grpNAny}
		p.laststart = false
	case grpTBracket:
		n, err := p.parseBracket()
		if err != nil {
			return nil, err
		}
		node = n
		p.laststart = false
	case grpTOpen:
		n, err := p.parseSubExp(nest + 1)
		if err != nil {
			return nil, err
		}
		node = n
		p.laststart = false
	case grpTBackref:
		if p.completed&(1<<uint(t.n)) == 0 {
			return nil, grpErr(grpESubreg)
		}
		p.backref = true
		node = &grpNode{op: grpNBackref, n: t.n}
		p.laststart = false
	case grpTOpenDup, grpTStar, grpTPlus, grpTQuest:
		if t.kind == grpTOpenDup && p.syn.sed && p.bre() {
			return nil, grpErr(grpEBadRpt)
		}
		if p.syn.sed && p.syn.ere {
			return nil, grpErr(grpEBadRpt)
		}
		if !p.syn.sed && p.syn.ere {
			// grep -E: dfa applies the operator to an empty
			// expression, with a warning.
			node = &grpNode{op: grpNEmpty}
			return p.parseDups(node, true)
		}
		// BRE: an ordinary character.
		r := t.r
		switch t.kind {
		case grpTOpenDup:
			r = '{'
		case grpTStar:
			r = '*'
		case grpTPlus:
			r = '+'
		case grpTQuest:
			r = '?'
		}
		node = &grpNode{op: grpNLit, r: r}
		p.laststart = false
	case grpTClose:
		if nest == 0 && !p.syn.sed && p.syn.ere {
			node = &grpNode{op: grpNLit, r: ')'}
			p.laststart = false
			break
		}
		return nil, grpErr(grpERParen)
	case grpTCloseDup:
		node = &grpNode{op: grpNLit, r: '}'}
		p.laststart = false
	case grpTEnd, grpTAlt:
		return &grpNode{op: grpNEmpty}, nil
	case grpTBackslash:
		return nil, grpErr(grpEEscape)
	case grpTBOL, grpTEOL, grpTBufStart, grpTBufEnd, grpTWordB, grpTNotWordB, grpTWordStart, grpTWordEnd:
		var re string
		switch t.kind {
		case grpTBOL:
			re = "^"
		case grpTEOL:
			re = "$"
		case grpTBufStart:
			re = `\A`
		case grpTBufEnd:
			re = `\z`
		case grpTWordB, grpTWordStart, grpTWordEnd:
			re = `\b`
		case grpTNotWordB:
			re = `\B`
		}
		node = &grpNode{op: grpNAssert, re: re}
		// glibc: an anchor cannot be repeated; what follows starts
		// a new expression. grep's dfa repeats it (a BRE's * at the
		// start stays an ordinary character).
		if p.syn.sed || (p.laststart && p.bre()) {
			p.fetch(false)
			return node, nil
		}
		if p.laststart {
			p.fetch(false)
			return p.parseDups(node, true)
		}
	case grpTWord:
		node = p.classNode(`[` + grpClassWord + `]`)
		p.laststart = false
	case grpTNotWord:
		node = p.classNode(`[^` + grpClassWord + `]`)
		p.laststart = false
	case grpTSpace:
		node = p.classNode(`[` + grpClassSpace + `]`)
		p.laststart = false
	case grpTNotSpace:
		node = p.classNode(`[^` + grpClassSpace + `]`)
		p.laststart = false
	default:
		return nil, grpErr(grpEBadPat)
	}
	p.fetch(false)
	return p.parseDups(node, false)
}

// parseDups applies the repetition operators that follow node.
func (p *grpParser) parseDups(node *grpNode, atStart bool) (*grpNode, error) {
	for p.tok.kind == grpTStar || p.tok.kind == grpTPlus || p.tok.kind == grpTQuest || p.tok.kind == grpTOpenDup {
		kind := p.tok.kind
		n, rolled, err := p.parseDupOp(node)
		if err != nil {
			return nil, err
		}
		if rolled {
			return node, nil
		}
		if atStart {
			switch kind {
			case grpTStar:
				p.warns = append(p.warns, "* at start of expression")
			case grpTPlus:
				p.warns = append(p.warns, "+ at start of expression")
			case grpTQuest:
				p.warns = append(p.warns, "? at start of expression")
			case grpTOpenDup:
				p.warns = append(p.warns, "{...} at start of expression")
			}
		}
		node = n
		if p.syn.sed && p.bre() && (p.tok.kind == grpTStar || p.tok.kind == grpTOpenDup) {
			return nil, grpErr(grpEBadRpt)
		}
	}
	return node, nil
}

// fetchNumber reads the digits of an interval, as glibc's fetch_number.
func (p *grpParser) fetchNumber() int {
	num := -1
	for {
		p.fetch(false)
		t := p.tok
		if t.kind == grpTEnd {
			return -2
		}
		if t.kind == grpTCloseDup || (t.kind == grpTChar && t.r == ',') {
			break
		}
		if t.kind != grpTChar || t.r < '0' || t.r > '9' || num == -2 {
			num = -2
		} else if num == -1 {
			num = int(t.r - '0')
		} else {
			num = min(grpDupMax+1, num*10+int(t.r-'0'))
		}
	}
	return num
}

// parseDupOp parses one repetition operator (the current token) applied
// to elem. rolled reports an invalid interval taken as a literal '{'
// (grep -E), in which case the current token is that '{'.
func (p *grpParser) parseDupOp(elem *grpNode) (*grpNode, bool, error) {
	startIdx := p.i
	start, end := 0, -1
	switch p.tok.kind {
	case grpTOpenDup:
		start = p.fetchNumber()
		if start == -1 {
			if p.tok.kind == grpTChar && p.tok.r == ',' {
				start = 0
			} else {
				return nil, false, grpErr(grpEBadBr)
			}
		}
		if start != -2 {
			switch {
			case p.tok.kind == grpTCloseDup:
				end = start
			case p.tok.kind == grpTChar && p.tok.r == ',':
				end = p.fetchNumber()
			default:
				end = -2
			}
		}
		if start == -2 || end == -2 {
			if !p.syn.sed && p.syn.ere {
				p.i = startIdx
				p.tok = grpTok{kind: grpTChar, r: '{'}
				return elem, true, nil
			}
			if p.tok.kind == grpTEnd {
				return nil, false, grpErr(grpEBrace)
			}
			return nil, false, grpErr(grpEBadBr)
		}
		if (end != -1 && start > end) || p.tok.kind != grpTCloseDup {
			return nil, false, grpErr(grpEBadBr)
		}
		lim := end
		if end == -1 {
			lim = start
		}
		if lim > grpDupMax {
			return nil, false, grpErr(grpESize)
		}
	case grpTPlus:
		start = 1
	case grpTQuest:
		end = 1
	}
	p.fetch(false)
	if start == 0 && end == 0 {
		return &grpNode{op: grpNEmpty}, false, nil
	}
	return &grpNode{op: grpNRepeat, kids: []*grpNode{elem}, min: start, max: end}, false, nil
}

func (p *grpParser) parseSubExp(nest int) (*grpNode, error) {
	p.ngroups++
	idx := p.ngroups
	p.fetch(true)
	var inner *grpNode
	if p.tok.kind == grpTClose {
		inner = &grpNode{op: grpNEmpty}
	} else {
		n, err := p.parseRegExp(nest)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != grpTClose {
			return nil, grpErr(grpEParen)
		}
		inner = n
	}
	if idx <= 9 {
		p.completed |= 1 << uint(idx)
	}
	return &grpNode{op: grpNGroup, n: idx, kids: []*grpNode{inner}}, nil
}

// Character classes, after glibc's C.UTF-8 locale.
var (
	grpClassDigit  = `0-9`
	grpClassXdigit = `0-9A-Fa-f`
	grpClassAlpha  = `\p{L}\p{Nl}` + grpNonASCIIDigits()
	grpClassAlnum  = `0-9` + grpClassAlpha
	grpClassUpper  = `\p{Lu}\p{Lt}`
	grpClassLower  = `\p{Ll}\p{Lt}`
	grpClassSpace  = `\t\n\v\f\r \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}\x{2028}\x{2029}\x{205F}\x{3000}`
	grpClassBlank  = `\t \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}\x{205F}\x{3000}`
	grpClassCntrl  = `\x00-\x1f\x7f-\x{9f}\x{2028}\x{2029}`
	grpClassPunct  = `!-/:-@\[-` + "`" + `{-~\x{a0}-\x{a9}\x{ab}-\x{b4}\x{b6}-\x{b9}\x{bb}-\x{bf}\x{d7}\x{f7}\x{2007}\x{202F}` + `\p{M}\p{P}\p{S}\p{No}\p{Co}\p{Cf}`
	grpClassGraph  = grpClassAlnum + grpClassPunct
	grpClassPrint  = grpClassGraph + ` \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}\x{205F}\x{3000}`
	grpClassWord   = grpClassAlnum + `_`
)

// grpNonASCIIDigits lists the decimal digits of other scripts, which
// glibc counts as alphabetic.
func grpNonASCIIDigits() string {
	var b strings.Builder
	for _, r := range unicode.Nd.R16 {
		lo, hi := rune(r.Lo), rune(r.Hi)
		if hi < 0x80 {
			continue
		}
		if lo < 0x80 {
			lo = 0x80
		}
		if r.Stride != 1 {
			for c := lo; c <= hi; c += rune(r.Stride) {
				fmt.Fprintf(&b, `\x{%x}`, c)
			}
			continue
		}
		fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, hi)
	}
	for _, r := range unicode.Nd.R32 {
		fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r.Lo, r.Hi)
	}
	return b.String()
}

func grpNamedClass(name string, icase bool) (string, bool) {
	if icase && (name == "upper" || name == "lower") {
		name = "alpha"
	}
	switch name {
	case "alpha":
		return grpClassAlpha, true
	case "digit":
		return grpClassDigit, true
	case "alnum":
		return grpClassAlnum, true
	case "upper":
		return grpClassUpper, true
	case "lower":
		return grpClassLower, true
	case "space":
		return grpClassSpace, true
	case "blank":
		return grpClassBlank, true
	case "punct":
		return grpClassPunct, true
	case "print":
		return grpClassPrint, true
	case "graph":
		return grpClassGraph, true
	case "cntrl":
		return grpClassCntrl, true
	case "xdigit":
		return grpClassXdigit, true
	}
	return "", false
}

// grpClassRune renders r for use inside an RE2 character class.
func grpClassRune(r rune) string {
	if r == utf8.RuneError {
		return `\x{fffd}`
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`\x{%x}`, r)
	}
	switch r {
	case '\\', ']', '[', '^', '-':
		return `\` + string(r)
	}
	return string(r)
}

type grpBracketElem struct {
	kind byte // 'c' char, 'k' class, 'e' equivalence, 's' collating symbol
	r    rune
	name string
}

// bracketElem parses one element at p.i, as glibc's parse_bracket_element.
func (p *grpParser) bracketElem(acceptHyphen bool) (grpBracketElem, error) {
	c := p.p[p.i]
	if c == '[' && p.i+1 < len(p.p) {
		d := p.p[p.i+1]
		if d == '.' || d == '=' || d == ':' {
			p.i += 2
			if p.i >= len(p.p) {
				return grpBracketElem{}, grpErr(grpEBrack)
			}
			var name []rune
			for k := 0; ; k++ {
				if k >= grpNameLimit {
					return grpBracketElem{}, grpErr(grpEBrack)
				}
				ch := p.p[p.i]
				p.i++
				if p.i >= len(p.p) {
					return grpBracketElem{}, grpErr(grpEBrack)
				}
				if ch == d && p.p[p.i] == ']' {
					break
				}
				name = append(name, ch)
			}
			p.i++
			kind := map[rune]byte{'.': 's', '=': 'e', ':': 'k'}[d]
			return grpBracketElem{kind: kind, name: string(name)}, nil
		}
	}
	p.i++
	if c == '-' && !acceptHyphen {
		if p.i >= len(p.p) || p.p[p.i] != ']' {
			return grpBracketElem{}, grpErr(grpERange)
		}
	}
	return grpBracketElem{kind: 'c', r: c}, nil
}

// collChar resolves a collating element to its one character.
func grpCollChar(e grpBracketElem) (rune, error) {
	if e.kind == 'c' {
		return e.r, nil
	}
	rs := []rune(e.name)
	if len(rs) != 1 {
		return 0, grpErr(grpECollate)
	}
	return rs[0], nil
}

func (p *grpParser) parseBracket() (*grpNode, error) {
	start := p.i
	if p.i >= len(p.p) {
		return nil, grpErr(grpEBadPat)
	}
	neg := false
	if p.p[p.i] == '^' {
		neg = true
		p.i++
		if p.i >= len(p.p) {
			return nil, grpErr(grpEBadPat)
		}
	}
	var items strings.Builder
	first := true
	for {
		firstIsClose := first && p.p[p.i] == ']'
		var el grpBracketElem
		if firstIsClose {
			p.i++
			el = grpBracketElem{kind: 'c', r: ']'}
		} else {
			var err error
			el, err = p.bracketElem(first)
			if err != nil {
				return nil, err
			}
		}
		first = false
		isRange := false
		if el.kind != 'k' && el.kind != 'e' {
			if p.i >= len(p.p) {
				return nil, grpErr(grpEBrack)
			}
			if p.p[p.i] == '-' {
				if p.i+1 >= len(p.p) {
					return nil, grpErr(grpEBrack)
				}
				if p.p[p.i+1] != ']' {
					p.i++
					isRange = true
				}
			}
		}
		if isRange {
			end, err := p.bracketElem(true)
			if err != nil {
				return nil, err
			}
			if el.kind == 'k' || el.kind == 'e' || end.kind == 'k' || end.kind == 'e' {
				return nil, grpErr(grpERange)
			}
			lo, err := grpCollChar(el)
			if err != nil {
				return nil, err
			}
			hi, err := grpCollChar(end)
			if err != nil {
				return nil, err
			}
			if lo > hi {
				return nil, grpErr(grpERange)
			}
			items.WriteString(grpClassRune(lo) + "-" + grpClassRune(hi))
		} else {
			switch el.kind {
			case 'c':
				items.WriteString(grpClassRune(el.r))
			case 'k':
				cls, ok := grpNamedClass(el.name, p.syn.icase)
				if !ok {
					return nil, grpErr(grpECtype)
				}
				items.WriteString(cls)
			case 'e', 's':
				r, err := grpCollChar(el)
				if err != nil {
					return nil, err
				}
				items.WriteString(grpClassRune(r))
			}
		}
		if p.i >= len(p.p) {
			return nil, grpErr(grpEBrack)
		}
		if p.p[p.i] == ']' {
			p.i++
			break
		}
	}
	// dfa's complaint about [:space:] (grep and sed alike).
	body := p.p[start : p.i-1]
	if len(body) >= 2 && body[0] == ':' && body[len(body)-1] == ':' && p.dfaErr == "" {
		p.dfaErr = grpColonSyn
	}
	if neg {
		nl := ""
		if p.syn.mline {
			nl = `\n`
		}
		return p.classNode(`[^` + items.String() + nl + `]`), nil
	}
	return p.classNode(`[` + items.String() + `]`), nil
}

// grpLit renders a literal rune in RE2 syntax.
func grpLit(r rune) string {
	if r == utf8.RuneError {
		return `\x{fffd}`
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`\x{%x}`, r)
	}
	return regexp.QuoteMeta(string(r))
}

// render writes n in RE2 syntax.
func (n *grpNode) render(b *strings.Builder, mline bool) {
	switch n.op {
	case grpNEmpty:
		b.WriteString(`(?:)`)
	case grpNLit:
		b.WriteString(grpLit(n.r))
	case grpNAny:
		if mline {
			b.WriteString(`[^\n]`)
		} else {
			b.WriteString(`(?s:.)`)
		}
	case grpNClass, grpNAssert:
		b.WriteString(n.re)
	case grpNGroup:
		b.WriteByte('(')
		n.kids[0].render(b, mline)
		b.WriteByte(')')
	case grpNConcat:
		for _, k := range n.kids {
			if k.op == grpNAlt {
				b.WriteString(`(?:`)
				k.render(b, mline)
				b.WriteByte(')')
			} else {
				k.render(b, mline)
			}
		}
	case grpNAlt:
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte('|')
			}
			k.render(b, mline)
		}
	case grpNRepeat:
		k := n.kids[0]
		switch k.op {
		case grpNLit, grpNAny, grpNClass, grpNGroup:
			k.render(b, mline)
		default:
			b.WriteString(`(?:`)
			k.render(b, mline)
			b.WriteByte(')')
		}
		switch {
		case n.min == 0 && n.max < 0:
			b.WriteByte('*')
		case n.min == 1 && n.max < 0:
			b.WriteByte('+')
		case n.min == 0 && n.max == 1:
			b.WriteByte('?')
		case n.max < 0:
			fmt.Fprintf(b, "{%d,}", n.min)
		case n.min == n.max:
			fmt.Fprintf(b, "{%d}", n.min)
		default:
			fmt.Fprintf(b, "{%d,%d}", n.min, n.max)
		}
	case grpNBackref:
		// Not expressible; the caller refuses the pattern.
		b.WriteString(`(?:)`)
	}
}

// grpParsed is a parsed POSIX pattern.
type grpParsed struct {
	expr    string // RE2 syntax, without flags
	ngroups int
	backref bool
	warns   []string
	dfaErr  string // glibc accepts the pattern but GNU's dfa refuses it
	node    *grpNode
}

// grpParse checks pat in the given dialect and translates it.
func grpParse(pat string, syn grpSyntax) (*grpParsed, error) {
	p := &grpParser{p: grpRunes(pat), syn: syn, laststart: true}
	p.fetch(true)
	n, err := p.parseRegExp(0)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	n.render(&b, syn.mline)
	return &grpParsed{expr: b.String(), ngroups: p.ngroups, backref: p.backref, warns: p.warns, dfaErr: p.dfaErr, node: n}, nil
}

// grpFlags is the RE2 flag prefix for a dialect.
func grpFlags(syn grpSyntax) string {
	f := ""
	if syn.icase {
		f += "i"
	}
	if syn.mline {
		f += "m"
	}
	if f == "" {
		return ""
	}
	return "(?" + f + ")"
}

// grpRegex is a compiled pattern that can also search from an offset
// while seeing the text before it (for ^, \b and word checks).
type grpRegex struct {
	req     *grpReq // prefilter, or nil
	bt      *grpBT  // back-references: the backtracking matcher, and no re
	re      *regexp.Regexp
	src     string // RE2 source, flags included
	flags   string
	body    string
	from    *regexp.Regexp // (?s:.)body: the rune before the offset, then the pattern
	ngroups int
	longest bool
}

// grpCompile compiles an RE2 body with flags; longest selects POSIX
// leftmost-longest matching.
func grpCompile(flags, body string, ngroups int, longest bool) (*grpRegex, error) {
	re, err := regexp.Compile(flags + body)
	if err != nil {
		return nil, err
	}
	if longest {
		re.Longest()
	}
	return &grpRegex{re: re, src: flags + body, flags: flags, body: body, ngroups: ngroups, longest: longest}, nil
}

// grpCompileErr turns an RE2 compile error of a translated pattern into
// GNU's words.
func grpCompileErr(err error) error {
	var re *syntax.Error
	if errors.As(err, &re) && (re.Code == syntax.ErrInvalidRepeatSize || re.Code == syntax.ErrLarge || re.Code == syntax.ErrNestingDepth) {
		return grpErr(grpESize)
	}
	return err
}

// grpCompileParsed compiles a parsed pattern: with RE2, or with the
// backtracking matcher when it has back-references.
func grpCompileParsed(pp *grpParsed, syn grpSyntax) (*grpRegex, error) {
	if pp.backref {
		bt, err := grpNewBT(pp.node, pp.ngroups, syn)
		if err != nil {
			return nil, err
		}
		return &grpRegex{bt: bt, ngroups: pp.ngroups, longest: true, req: grpReqOf(pp.node, syn.icase)}, nil
	}
	g, err := grpCompile(grpFlags(syn), pp.expr, pp.ngroups, true)
	if err != nil {
		return nil, grpCompileErr(err)
	}
	g.req = grpReqOf(pp.node, syn.icase)
	return g, nil
}

// match reports whether b has a match.
func (g *grpRegex) match(b []byte) bool {
	if g.req != nil {
		if !g.req.possible(b) {
			return false
		}
		if g.req.exact {
			return true
		}
	}
	if g.bt != nil {
		return g.bt.find(b, 0, true) != nil
	}
	return g.re.Match(b)
}

// findAt returns the leftmost(-longest) match that starts at or after
// off, as submatch indices into b, or nil.
func (g *grpRegex) findAt(b []byte, off int) []int {
	if off > len(b) {
		return nil
	}
	if g.req != nil && !g.req.possible(b[off:]) {
		return nil
	}
	if g.bt != nil {
		return g.bt.find(b, off, false)
	}
	if off == 0 {
		return g.re.FindSubmatchIndex(b)
	}
	if off > len(b) {
		return nil
	}
	if g.from == nil {
		re, err := regexp.Compile(g.flags + `(?s:.)(?:` + g.body + `)`)
		if err != nil {
			return nil
		}
		if g.longest {
			re.Longest()
		}
		g.from = re
	}
	_, w := utf8.DecodeLastRune(b[:off])
	base := off - w
	m := g.from.FindSubmatchIndex(b[base:])
	if m == nil {
		return nil
	}
	// The match includes the rune before the pattern's start.
	m[0] += utf8.RuneLen(grpFirstRune(b[base+m[0]:]))
	m[0] += base
	m[1] += base
	for i := 2; i < len(m); i++ {
		if m[i] >= 0 {
			m[i] += base
		}
	}
	return m
}

func grpFirstRune(b []byte) rune {
	r, w := utf8.DecodeRune(b)
	if r == utf8.RuneError && w <= 1 {
		return 0 // one byte
	}
	return r
}

// grpReq is a prefilter: every match contains one of lits (ASCII
// case-folded when fold). exact means the pattern is just the
// alternation of lits, so containment decides a match.
type grpReq struct {
	lits  [][]byte
	fold  bool
	exact bool
}

// grpReqOf computes a prefilter for a parsed pattern, or nil.
func grpReqOf(n *grpNode, icase bool) *grpReq {
	lits, exact := grpReqNode(n)
	if len(lits) == 0 || len(lits) > 16 {
		return nil
	}
	for _, l := range lits {
		if len(l) == 0 {
			return nil
		}
		if icase {
			for _, c := range l {
				if c >= 0x80 {
					return nil
				}
			}
		}
	}
	r := &grpReq{lits: lits, exact: exact, fold: icase}
	if icase {
		for i, l := range r.lits {
			r.lits[i] = bytes.ToLower(l)
		}
	}
	return r
}

// grpLitOf returns the text of a pure literal node (a literal or a
// concatenation of literals).
func grpLitOf(n *grpNode) ([]byte, bool) {
	switch n.op {
	case grpNLit:
		if n.r == utf8.RuneError {
			return nil, false
		}
		return utf8.AppendRune(nil, n.r), true
	case grpNConcat:
		var b []byte
		for _, k := range n.kids {
			kb, ok := grpLitOf(k)
			if !ok {
				return nil, false
			}
			b = append(b, kb...)
		}
		return b, true
	}
	return nil, false
}

func grpReqScore(lits [][]byte) int {
	if len(lits) == 0 {
		return -1
	}
	m := len(lits[0])
	for _, l := range lits {
		m = min(m, len(l))
	}
	return m
}

// grpReqNode returns literals one of which every match of n contains
// (nil: none known), and whether n is exactly their alternation.
func grpReqNode(n *grpNode) ([][]byte, bool) {
	if b, ok := grpLitOf(n); ok {
		return [][]byte{b}, true
	}
	switch n.op {
	case grpNGroup:
		return grpReqNode(n.kids[0])
	case grpNAlt:
		var all [][]byte
		exact := true
		for _, k := range n.kids {
			l, ex := grpReqNode(k)
			if l == nil {
				return nil, false
			}
			exact = exact && ex
			all = append(all, l...)
		}
		return all, exact
	case grpNRepeat:
		if n.min >= 1 {
			l, _ := grpReqNode(n.kids[0])
			return l, false
		}
	case grpNConcat:
		var best [][]byte
		var run []byte
		flush := func() {
			if len(run) > 0 && grpReqScore([][]byte{run}) > grpReqScore(best) {
				best = [][]byte{run}
			}
			run = nil
		}
		for _, k := range n.kids {
			if b, ok := grpLitOf(k); ok {
				run = append(run, b...)
				continue
			}
			flush()
			if l, _ := grpReqNode(k); l != nil && grpReqScore(l) > grpReqScore(best) {
				best = l
			}
		}
		flush()
		return best, false
	}
	return nil, false
}

// possible reports whether b may hold a match.
func (q *grpReq) possible(b []byte) bool {
	for _, l := range q.lits {
		if q.fold {
			if grpIndexFold(b, l) >= 0 {
				return true
			}
		} else if bytes.Contains(b, l) {
			return true
		}
	}
	return false
}

// grpIndexFold finds lower-case ASCII lit in b, ignoring ASCII case.
func grpIndexFold(b, lit []byte) int {
	c0 := lit[0]
	up := c0
	if c0 >= 'a' && c0 <= 'z' {
		up = c0 - 'a' + 'A'
	}
	for i := 0; i+len(lit) <= len(b); {
		j := bytes.IndexByte(b[i:], c0)
		if up != c0 {
			if k := bytes.IndexByte(b[i:], up); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if i+len(lit) > len(b) {
			return -1
		}
		if bytes.EqualFold(b[i:i+len(lit)], lit) {
			return i
		}
		i++
	}
	return -1
}
