package coreutils

// A backtracking matcher for the patterns RE2 cannot run: those with
// back-references (\1..\9). It walks the parsed pattern (grpNode),
// exploring every way to match from a start position and keeping the
// longest (POSIX leftmost-longest). Patterns without back-references
// never come here.

import (
	"bytes"
	"regexp"
	"unicode"
	"unicode/utf8"
)

// grpBTLimit bounds the steps of one search; past it the search gives
// up (a pathological pattern must not hang the shell).
const grpBTLimit = 20_000_000

type grpBT struct {
	root    *grpNode
	ngroups int
	icase   bool
	mline   bool
	classes map[*grpNode]*regexp.Regexp
}

func grpNewBT(root *grpNode, ngroups int, syn grpSyntax) (*grpBT, error) {
	bt := &grpBT{root: root, ngroups: ngroups, icase: syn.icase, mline: syn.mline, classes: map[*grpNode]*regexp.Regexp{}}
	var walk func(n *grpNode) error
	walk = func(n *grpNode) error {
		if n.op == grpNClass {
			flags := "(?s)"
			if syn.icase {
				flags = "(?is)"
			}
			re, err := regexp.Compile(flags + `\A` + n.re + `\z`)
			if err != nil {
				return err
			}
			bt.classes[n] = re
		}
		for _, k := range n.kids {
			if err := walk(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return bt, nil
}

type grpBTRun struct {
	bt       *grpBT
	b        []byte
	caps     []int
	best     int
	bestCaps []int
	steps    int
	any      bool // stop at the first match
	ends     map[int]bool
}

func grpBTWord(r rune) bool {
	return r == '_' || (r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)))
}

func grpFoldEq(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

func (r *grpBTRun) m(n *grpNode, pos int, k func(int) bool) bool {
	r.steps++
	if r.steps > grpBTLimit {
		return true // give up: the caller sees no better match
	}
	b := r.b
	switch n.op {
	case grpNEmpty:
		return k(pos)
	case grpNLit:
		if pos >= len(b) {
			return false
		}
		c, w := utf8.DecodeRune(b[pos:])
		if c == n.r || (r.bt.icase && grpFoldEq(c, n.r)) || (n.r == utf8.RuneError && c == utf8.RuneError) {
			return k(pos + w)
		}
		return false
	case grpNAny:
		if pos >= len(b) {
			return false
		}
		c, w := utf8.DecodeRune(b[pos:])
		if r.bt.mline && c == '\n' {
			return false
		}
		return k(pos + w)
	case grpNClass:
		if pos >= len(b) {
			return false
		}
		_, w := utf8.DecodeRune(b[pos:])
		if r.bt.classes[n].Match(b[pos : pos+w]) {
			return k(pos + w)
		}
		return false
	case grpNAssert:
		ok := false
		switch n.re {
		case "^":
			ok = pos == 0 || (r.bt.mline && b[pos-1] == '\n')
		case "$":
			ok = pos == len(b) || (r.bt.mline && b[pos] == '\n')
		case `\A`:
			ok = pos == 0
		case `\z`:
			ok = pos == len(b)
		case `\b`, `\B`:
			before, after := false, false
			if pos > 0 {
				c, _ := utf8.DecodeLastRune(b[:pos])
				before = grpBTWord(c)
			}
			if pos < len(b) {
				c, _ := utf8.DecodeRune(b[pos:])
				after = grpBTWord(c)
			}
			ok = (before != after) == (n.re == `\b`)
		}
		if ok {
			return k(pos)
		}
		return false
	case grpNGroup:
		i := 2 * n.n
		oldS, oldE := r.caps[i], r.caps[i+1]
		r.caps[i] = pos
		if r.m(n.kids[0], pos, func(p int) bool {
			e := r.caps[i+1]
			r.caps[i+1] = p
			if k(p) {
				return true
			}
			r.caps[i+1] = e
			return false
		}) {
			return true
		}
		r.caps[i], r.caps[i+1] = oldS, oldE
		return false
	case grpNConcat:
		return r.concat(n.kids, pos, k)
	case grpNAlt:
		for _, kid := range n.kids {
			if r.m(kid, pos, k) {
				return true
			}
		}
		return false
	case grpNRepeat:
		return r.repeat(n, 0, pos, k)
	case grpNBackref:
		i := 2 * n.n
		s, e := r.caps[i], r.caps[i+1]
		if s < 0 || e < 0 {
			return false
		}
		ref := b[s:e]
		if pos+len(ref) > len(b) {
			return false
		}
		got := b[pos : pos+len(ref)]
		if bytes.Equal(got, ref) || (r.bt.icase && bytes.EqualFold(got, ref)) {
			return k(pos + len(ref))
		}
		return false
	}
	return false
}

func (r *grpBTRun) concat(kids []*grpNode, pos int, k func(int) bool) bool {
	if len(kids) == 0 {
		return k(pos)
	}
	return r.m(kids[0], pos, func(p int) bool { return r.concat(kids[1:], p, k) })
}

func (r *grpBTRun) repeat(n *grpNode, count, pos int, k func(int) bool) bool {
	if n.max < 0 || count < n.max {
		if r.m(n.kids[0], pos, func(p int) bool {
			if p == pos && count >= n.min {
				return false // an empty iteration adds nothing
			}
			return r.repeat(n, count+1, p, k)
		}) {
			return true
		}
	}
	if count >= n.min {
		return k(pos)
	}
	return false
}

func (bt *grpBT) newRun(b []byte) *grpBTRun {
	return &grpBTRun{bt: bt, b: b, caps: make([]int, 2*(bt.ngroups+1))}
}

// at runs a search anchored at s; it returns the longest match's
// submatch indices, or nil.
func (r *grpBTRun) at(s int, any bool) []int {
	for i := range r.caps {
		r.caps[i] = -1
	}
	r.best, r.bestCaps, r.any = -1, r.bestCaps[:0], any
	b := r.b
	r.m(r.bt.root, s, func(p int) bool {
		if p > r.best {
			r.best = p
			r.bestCaps = append(r.bestCaps[:0], r.caps...)
		}
		return r.any || p == len(b)
	})
	if r.best < 0 {
		return nil
	}
	r.bestCaps[0], r.bestCaps[1] = s, r.best
	return r.bestCaps
}

// endsAt lists every end of a match anchored at s.
func (bt *grpBT) endsAt(b []byte, s int) map[int]bool {
	r := bt.newRun(b)
	for i := range r.caps {
		r.caps[i] = -1
	}
	r.ends = map[int]bool{}
	r.m(bt.root, s, func(p int) bool {
		r.ends[p] = true
		return false
	})
	return r.ends
}

// find returns the leftmost-longest match at or after off. One search
// has a budget of grpBTLimit steps, after which it reports no match.
func (bt *grpBT) find(b []byte, off int, any bool) []int {
	r := bt.newRun(b)
	for s := off; s <= len(b) && r.steps <= grpBTLimit; {
		if m := r.at(s, any); m != nil {
			return m
		}
		if s == len(b) {
			break
		}
		_, w := utf8.DecodeRune(b[s:])
		s += w
	}
	return nil
}
