package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

func init() { register("sort", txtSortMain) }

var txtSortSpec = optSpec{
	short: "bcCdfghik:mMno:rRsS:t:T:uVz",
	long: map[string]bool{
		"ignore-leading-blanks": false, "check": false, "dictionary-order": false,
		"ignore-case": false, "general-numeric-sort": false, "human-numeric-sort": false,
		"ignore-nonprinting": false, "key": true, "merge": false, "month-sort": false,
		"numeric-sort": false, "output": true, "reverse": false, "random-sort": false,
		"random-source": true, "sort": true, "stable": false, "buffer-size": true,
		"field-separator": true, "temporary-directory": true, "unique": false,
		"version-sort": false, "zero-terminated": false, "parallel": true,
		"batch-size": true, "compress-program": true, "debug": false,
	},
	alias: map[string]string{
		"ignore-leading-blanks": "b", "check": "c", "dictionary-order": "d",
		"ignore-case": "f", "general-numeric-sort": "g", "human-numeric-sort": "h",
		"ignore-nonprinting": "i", "key": "k", "merge": "m", "month-sort": "M",
		"numeric-sort": "n", "output": "o", "reverse": "r", "random-sort": "R",
		"stable": "s", "buffer-size": "S", "field-separator": "t",
		"temporary-directory": "T", "unique": "u", "version-sort": "V",
		"zero-terminated": "z",
	},
}

// txtSortKey is a sort key (GNU's struct keyfield). Field and character
// numbers are zero-based; sword < 0 means the start of the line, eword
// < 0 its end.
type txtSortKey struct {
	sword, schar, eword, echar int
	skipsblanks, skipeblanks   bool
	ignore                     byte // 0, 'd' (dictionary) or 'i' (nonprinting)
	translate                  bool
	numeric, general, human    bool
	month, version, random     bool
	reverse                    bool
}

// defaultCompare is GNU's default_key_compare: no ordering option.
func (k *txtSortKey) defaultCompare() bool {
	return !(k.ignore != 0 || k.translate || k.skipsblanks || k.skipeblanks ||
		k.numeric || k.general || k.human || k.month || k.version || k.random)
}

// setOrdering applies ordering letters; it returns the rest of s.
func (k *txtSortKey) setOrdering(s string, start, end bool) string {
	for ; s != ""; s = s[1:] {
		switch s[0] {
		case 'b':
			if start {
				k.skipsblanks = true
			}
			if end {
				k.skipeblanks = true
			}
		case 'd':
			k.ignore = 'd'
		case 'f':
			k.translate = true
		case 'g':
			k.general = true
		case 'h':
			k.human = true
		case 'i':
			if k.ignore == 0 {
				k.ignore = 'i'
			}
		case 'M':
			k.month = true
		case 'n':
			k.numeric = true
		case 'R':
			k.random = true
		case 'r':
			k.reverse = true
		case 'V':
			k.version = true
		default:
			return s
		}
	}
	return s
}

// opts renders a key's ordering options as GNU's key_to_opts does.
func (k *txtSortKey) opts() string {
	var b strings.Builder
	if k.skipsblanks || k.skipeblanks {
		b.WriteByte('b')
	}
	if k.ignore == 'd' {
		b.WriteByte('d')
	}
	if k.translate {
		b.WriteByte('f')
	}
	if k.general {
		b.WriteByte('g')
	}
	if k.human {
		b.WriteByte('h')
	}
	if k.ignore == 'i' {
		b.WriteByte('i')
	}
	if k.month {
		b.WriteByte('M')
	}
	if k.numeric {
		b.WriteByte('n')
	}
	if k.random {
		b.WriteByte('R')
	}
	if k.reverse {
		b.WriteByte('r')
	}
	if k.version {
		b.WriteByte('V')
	}
	return b.String()
}

// txtSortErr is a fatal sort error: its message and exit status 2.
type txtSortErr struct{ msg string }

// txtParseFieldCount reads a decimal count at the start of s, the way
// sort's parse_field_count does.
func txtParseFieldCount(s, msg string) (int, string, *txtSortErr) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	t = strings.TrimPrefix(t, "+")
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "", &txtSortErr{fmt.Sprintf("%s: invalid count at start of %s", msg, txtQuoteL(s))}
	}
	n, err := strconv.Atoi(t[:i])
	if err != nil || n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return n, t[i:], nil
}

// txtParseKey parses a -k KEYDEF.
func txtParseKey(spec string) (*txtSortKey, *txtSortErr) {
	bad := func(msg string) *txtSortErr {
		return &txtSortErr{fmt.Sprintf("%s: invalid field specification %s", msg, txtQuoteL(spec))}
	}
	k := &txtSortKey{}
	n, s, err := txtParseFieldCount(spec, "invalid number at field start")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, bad("field number is zero")
	}
	k.sword = n - 1
	if strings.HasPrefix(s, ".") {
		n, s, err = txtParseFieldCount(s[1:], "invalid number after '.'")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, bad("character offset is zero")
		}
		k.schar = n - 1
	}
	if k.sword == 0 && k.schar == 0 {
		k.sword = -1
	}
	s = k.setOrdering(s, true, false)
	if !strings.HasPrefix(s, ",") {
		k.eword, k.echar = -1, 0
	} else {
		n, s, err = txtParseFieldCount(s[1:], "invalid number after ','")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, bad("field number is zero")
		}
		k.eword = n - 1
		if strings.HasPrefix(s, ".") {
			n, s, err = txtParseFieldCount(s[1:], "invalid number after '.'")
			if err != nil {
				return nil, err
			}
			k.echar = n
		}
		s = k.setOrdering(s, false, true)
	}
	if s != "" {
		return nil, bad("stray character in field spec")
	}
	return k, nil
}

// txtSorter holds a sort invocation's settings.
type txtSorter struct {
	keys    []*txtSortKey
	tab     int // -1: blank-separated fields
	reverse bool
	unique  bool
	stable  bool
	seed    maphash.Seed
	ctx     context.Context
	calls   int
}

type txtSortCancelled struct{}

func txtSortBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

func (s *txtSorter) begfield(line []byte, k *txtSortKey) int {
	ptr, lim := 0, len(line)
	if k.sword >= 0 {
		sword := k.sword
		if s.tab >= 0 {
			for ptr < lim && sword > 0 {
				sword--
				for ptr < lim && int(line[ptr]) != s.tab {
					ptr++
				}
				if ptr < lim {
					ptr++
				}
			}
		} else {
			for ptr < lim && sword > 0 {
				sword--
				for ptr < lim && txtSortBlank(line[ptr]) {
					ptr++
				}
				for ptr < lim && !txtSortBlank(line[ptr]) {
					ptr++
				}
			}
		}
	}
	if k.skipsblanks {
		for ptr < lim && txtSortBlank(line[ptr]) {
			ptr++
		}
	}
	if k.sword >= 0 {
		ptr = min(lim, ptr+k.schar)
	}
	return ptr
}

func (s *txtSorter) limfield(line []byte, k *txtSortKey) int {
	ptr, lim := 0, len(line)
	if k.eword < 0 {
		return lim
	}
	eword, echar := k.eword, k.echar
	if echar == 0 {
		eword++
	}
	if s.tab >= 0 {
		for ptr < lim && eword > 0 {
			eword--
			for ptr < lim && int(line[ptr]) != s.tab {
				ptr++
			}
			if ptr < lim && (eword > 0 || echar > 0) {
				ptr++
			}
		}
	} else {
		for ptr < lim && eword > 0 {
			eword--
			for ptr < lim && txtSortBlank(line[ptr]) {
				ptr++
			}
			for ptr < lim && !txtSortBlank(line[ptr]) {
				ptr++
			}
		}
	}
	if echar != 0 {
		if k.skipeblanks {
			for ptr < lim && txtSortBlank(line[ptr]) {
				ptr++
			}
		}
		ptr = min(lim, ptr+echar)
	}
	return ptr
}

// txtSortKeep tells whether byte c stays in a key with ignore mode m.
func txtSortKeep(c byte, m byte) bool {
	switch m {
	case 'i':
		return c >= 0x20 && c < 0x7f
	case 'd':
		return txtSortBlank(c) || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
	}
	return true
}

func txtUpper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// txtSortKeyVal is a line's key, extracted and parsed once before
// sorting.
type txtSortKeyVal struct {
	text   []byte // the key (filtered and folded for -n/-g/... with -d/-i/-f)
	num    float64
	numOK  bool // -g: a number was read
	neg    bool // -n, -h: the number
	ip, fp []byte
	order  int    // -h: unit order; -M: month
	hash   uint64 // -R
}

// decorate extracts a line's keys.
func (s *txtSorter) decorate(line []byte) []txtSortKeyVal {
	if len(s.keys) == 0 {
		return nil
	}
	vals := make([]txtSortKeyVal, len(s.keys))
	for i, k := range s.keys {
		b := s.begfield(line, k)
		t := line[b:max(b, s.limfield(line, k))]
		special := k.numeric || k.general || k.human || k.month || k.version || k.random
		if special && (k.ignore != 0 || k.translate) {
			t = txtSortTransform(t, k)
		}
		v := &vals[i]
		v.text = t
		switch {
		case k.numeric:
			v.neg, v.ip, v.fp = txtParseDecimal(txtSortSkipBlanks(t))
		case k.general:
			v.num, v.numOK = txtStrtod(t)
		case k.human:
			t = txtSortSkipBlanks(t)
			v.order = txtUnitOrder(t)
			v.neg, v.ip, v.fp = txtParseDecimal(t)
		case k.month:
			v.order = txtMonth(t)
		case k.random:
			v.hash = maphash.Bytes(s.seed, t)
		}
	}
	return vals
}

// keycompare compares two lines by their keys.
func (s *txtSorter) keycompare(a, b []txtSortKeyVal) int {
	for i, k := range s.keys {
		va, vb := &a[i], &b[i]
		ta, tb := va.text, vb.text
		var diff int
		switch {
		case k.numeric:
			diff = txtDecCompare(va.neg, va.ip, va.fp, vb.neg, vb.ip, vb.fp)
		case k.general:
			diff = txtFloatCompare(va.num, va.numOK, vb.num, vb.numOK)
		case k.human:
			diff = va.order - vb.order
			if diff == 0 {
				diff = txtDecCompare(va.neg, va.ip, va.fp, vb.neg, vb.ip, vb.fp)
			}
		case k.month:
			diff = va.order - vb.order
		case k.version:
			diff = txtFileVerCmp(ta, tb)
		case k.random:
			switch {
			case va.hash < vb.hash:
				diff = -1
			case va.hash > vb.hash:
				diff = 1
			default:
				diff = bytes.Compare(ta, tb)
			}
		case k.ignore != 0 || k.translate:
			diff = txtSortCompareIgnore(ta, tb, k)
		default:
			diff = bytes.Compare(ta, tb)
		}
		if diff != 0 {
			if k.reverse {
				return -diff
			}
			return diff
		}
	}
	return 0
}

func txtSortSkipBlanks(b []byte) []byte {
	for len(b) > 0 && txtSortBlank(b[0]) {
		b = b[1:]
	}
	return b
}

func txtSortTransform(t []byte, k *txtSortKey) []byte {
	out := make([]byte, 0, len(t))
	for _, c := range t {
		if !txtSortKeep(c, k.ignore) {
			continue
		}
		if k.translate {
			c = txtUpper(c)
		}
		out = append(out, c)
	}
	return out
}

func txtSortCompareIgnore(a, b []byte, k *txtSortKey) int {
	i, j := 0, 0
	for {
		for i < len(a) && !txtSortKeep(a[i], k.ignore) {
			i++
		}
		for j < len(b) && !txtSortKeep(b[j], k.ignore) {
			j++
		}
		if i >= len(a) || j >= len(b) {
			break
		}
		ca, cb := a[i], b[j]
		if k.translate {
			ca, cb = txtUpper(ca), txtUpper(cb)
		}
		if ca != cb {
			return int(ca) - int(cb)
		}
		i++
		j++
	}
	ra, rb := 0, 0
	if i < len(a) {
		ra = 1
	}
	if j < len(b) {
		rb = 1
	}
	return ra - rb
}

// compare is GNU sort's compare: the keys, then the whole line.
func (s *txtSorter) compare(a, b []byte) int {
	return s.compareDec(a, s.decorate(a), b, s.decorate(b))
}

// compareDec is compare on lines whose keys are extracted.
func (s *txtSorter) compareDec(a []byte, ka []txtSortKeyVal, b []byte, kb []txtSortKeyVal) int {
	s.calls++
	if s.calls&0xffff == 0 && s.ctx.Err() != nil {
		panic(txtSortCancelled{})
	}
	if len(s.keys) > 0 {
		if d := s.keycompare(ka, kb); d != 0 || s.unique || s.stable {
			return d
		}
	}
	d := bytes.Compare(a, b)
	if s.reverse {
		return -d
	}
	return d
}

// txtParseDecimal splits a -n number: sign, integer digits without
// leading zeros, fraction digits without trailing zeros.
func txtParseDecimal(s []byte) (neg bool, intp, frac []byte) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	st := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intp = s[st:i]
	for len(intp) > 0 && intp[0] == '0' {
		intp = intp[1:]
	}
	if i < len(s) && s[i] == '.' {
		i++
		st = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[st:i]
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
	}
	if len(intp) == 0 && len(frac) == 0 {
		neg = false
	}
	return
}

// txtDecCompare compares two parsed -n numbers exactly.
func txtDecCompare(na bool, ia, fa []byte, nb bool, ib, fb []byte) int {
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	d := 0
	switch {
	case len(ia) != len(ib):
		d = len(ia) - len(ib)
	default:
		d = bytes.Compare(ia, ib)
		if d == 0 {
			d = bytes.Compare(fa, fb)
		}
	}
	if d < 0 {
		d = -1
	} else if d > 0 {
		d = 1
	}
	if na {
		return -d
	}
	return d
}

// txtUnitOrder is sort -h's order of a number's SI suffix.
func txtUnitOrder(s []byte) int {
	neg := len(s) > 0 && s[0] == '-'
	i := 0
	if neg {
		i++
	}
	nonzero := false
	var c byte
	for {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if s[i] != '0' {
				nonzero = true
			}
			i++
		}
		c = 0
		if i < len(s) {
			c = s[i]
			i++
		}
		if c != '.' {
			break
		}
	}
	if !nonzero {
		return 0
	}
	order := strings.IndexByte("KMGTPEZYRQ", c) + 1
	if c == 'k' {
		order = 1
	}
	if c == 0 {
		order = 0
	}
	if neg {
		return -order
	}
	return order
}

// txtStrtod parses the longest prefix of s that strtod accepts.
func txtStrtod(s []byte) (float64, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	st := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	rest := strings.ToLower(string(s[i:min(len(s), i+8)]))
	switch {
	case strings.HasPrefix(rest, "infinity"):
		i += 8
	case strings.HasPrefix(rest, "inf"):
		i += 3
	case strings.HasPrefix(rest, "nan"):
		i += 3
	case len(rest) > 2 && rest[0] == '0' && rest[1] == 'x' && (strings.IndexByte("0123456789abcdef", rest[2]) >= 0 || (rest[2] == '.' && len(rest) > 3 && strings.IndexByte("0123456789abcdef", rest[3]) >= 0)):
		return txtHexFloat(s[st:], i+2-st)
	default:
		digits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
				digits++
			}
		}
		if digits == 0 {
			return 0, false
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				i = j
			}
		}
	}
	v, err := strconv.ParseFloat(string(s[st:i]), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, true
		}
		return 0, false
	}
	return v, true
}

// txtHexFloat parses a C hexadecimal float; s starts with its sign,
// and its digits start at i.
func txtHexFloat(s []byte, i int) (float64, bool) {
	neg := s[0] == '-'
	hexVal := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			return int(c|0x20-'a') + 10
		}
		return -1
	}
	v, exp := 0.0, 0
	for i < len(s) && hexVal(s[i]) >= 0 {
		v = v*16 + float64(hexVal(s[i]))
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && hexVal(s[i]) >= 0 {
			v = v*16 + float64(hexVal(s[i]))
			exp -= 4
			i++
		}
	}
	if i < len(s) && s[i]|0x20 == 'p' {
		j := i + 1
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			e := 0
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				if e < 100000 {
					e = e*10 + int(s[j]-'0')
				}
				j++
			}
			if eneg {
				e = -e
			}
			exp += e
		}
	}
	v = math.Ldexp(v, exp)
	if neg {
		v = -v
	}
	return v, true
}

// txtFloatCompare is sort -g's comparison of parsed numbers:
// non-numbers first, then NaNs, then numbers.
func txtFloatCompare(x float64, okx bool, y float64, oky bool) int {
	switch {
	case !okx && !oky:
		return 0
	case !okx:
		return -1
	case !oky:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	case x == y:
		return 0
	case y == y:
		return -1
	case x == x:
		return 1
	}
	return 0
}

// txtMonth is sort -M's month number of s, 0 if none.
func txtMonth(s []byte) int {
	s = txtSortSkipBlanks(s)
	if len(s) < 3 {
		return 0
	}
	m := string([]byte{txtUpper(s[0]), txtUpper(s[1]), txtUpper(s[2])})
	i := strings.Index("JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC", m)
	if i < 0 || i%3 != 0 {
		return 0
	}
	return i/3 + 1
}

// txtFilePrefixLen is gnulib's file_prefixlen: the length of s without
// its file suffix, (\.[A-Za-z~][A-Za-z0-9~]*)*$.
func txtFilePrefixLen(s []byte) int {
	n := len(s)
	prefixlen := 0
	for i := 0; ; {
		if i == n {
			return prefixlen
		}
		i++
		prefixlen = i
		for i+1 < n && s[i] == '.' && (txtIsAlpha(s[i+1]) || s[i+1] == '~') {
			for i += 2; i < n && (txtIsAlpha(s[i]) || txtIsDigit(s[i]) || s[i] == '~'); i++ {
			}
		}
	}
}

func txtIsAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func txtIsDigit(c byte) bool { return c >= '0' && c <= '9' }

func txtVerOrder(s []byte, pos int) int {
	if pos == len(s) {
		return -1
	}
	c := s[pos]
	switch {
	case txtIsDigit(c):
		return 0
	case txtIsAlpha(c):
		return int(c)
	case c == '~':
		return -2
	}
	return int(c) + 256
}

func txtVerRevCmp(s1, s2 []byte) int {
	p1, p2 := 0, 0
	for p1 < len(s1) || p2 < len(s2) {
		firstDiff := 0
		for (p1 < len(s1) && !txtIsDigit(s1[p1])) || (p2 < len(s2) && !txtIsDigit(s2[p2])) {
			c1, c2 := txtVerOrder(s1, p1), txtVerOrder(s2, p2)
			if c1 != c2 {
				return c1 - c2
			}
			p1++
			p2++
		}
		for p1 < len(s1) && s1[p1] == '0' {
			p1++
		}
		for p2 < len(s2) && s2[p2] == '0' {
			p2++
		}
		for p1 < len(s1) && p2 < len(s2) && txtIsDigit(s1[p1]) && txtIsDigit(s2[p2]) {
			if firstDiff == 0 {
				firstDiff = int(s1[p1]) - int(s2[p2])
			}
			p1++
			p2++
		}
		if p1 < len(s1) && txtIsDigit(s1[p1]) {
			return 1
		}
		if p2 < len(s2) && txtIsDigit(s2[p2]) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}

// txtFileVerCmp is gnulib's filenvercmp (sort -V, ls -v).
func txtFileVerCmp(a, b []byte) int {
	if len(a) == 0 {
		if len(b) == 0 {
			return 0
		}
		return -1
	}
	if len(b) == 0 {
		return 1
	}
	if a[0] == '.' {
		if b[0] != '.' {
			return -1
		}
		adot, bdot := len(a) == 1, len(b) == 1
		if adot {
			if bdot {
				return 0
			}
			return -1
		}
		if bdot {
			return 1
		}
		adotdot := a[1] == '.' && len(a) == 2
		bdotdot := b[1] == '.' && len(b) == 2
		if adotdot {
			if bdotdot {
				return 0
			}
			return -1
		}
		if bdotdot {
			return 1
		}
	} else if b[0] == '.' {
		return 1
	}
	ap, bp := txtFilePrefixLen(a), txtFilePrefixLen(b)
	onePass := ap == len(a) && bp == len(b)
	r := txtVerRevCmp(a[:ap], b[:bp])
	if r != 0 || onePass {
		return r
	}
	return txtVerRevCmp(a, b)
}

// txtSortInput is one input's lines.
type txtSortInput struct {
	name  string
	lines [][]byte
}

// txtSplitLines splits data into lines ended by delim; a last line
// without delim counts.
func txtSplitLines(data []byte, delim byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, delim)
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i:i])
		data = data[i+1:]
	}
	return lines
}

func txtSortMain(ctx context.Context, e *Env, args []string) int {
	rest := append([]string(nil), args[1:]...)
	checkMode := byte(0)
	for i, a := range rest {
		if a == "--" {
			break
		}
		if name, val, ok := strings.Cut(a, "="); ok && len(name) > 3 && strings.HasPrefix("--check", name) {
			switch {
			case val != "" && strings.HasPrefix("quiet", val), val != "" && strings.HasPrefix("silent", val):
				rest[i] = "-C"
			case val != "" && strings.HasPrefix("diagnose-first", val):
				rest[i] = "-c"
			default:
				fmt.Fprintf(e.Stderr, "sort: invalid argument %s for '--check'\nValid arguments are:\n  - 'diagnose-first'\n  - 'quiet', 'silent'\nUsage: sort [OPTION]... [FILE]...\n  or:  sort [OPTION]... --files0-from=F\nTry 'sort --help' for more information.\n", txtQuoteL(val))
				return 2
			}
		}
	}
	opts, operands, err := txtSortSpec.parse(rest)
	if err != nil {
		return badUsage(e, "sort", err, 2)
	}
	s := &txtSorter{tab: -1, seed: maphash.MakeSeed(), ctx: ctx}
	gkey := &txtSortKey{sword: -1, eword: -1}
	merge := false
	output := ""
	hasOutput := false
	delim := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "b", "d", "f", "g", "h", "i", "M", "n", "r", "R", "V":
			gkey.setOrdering(o.name, true, true)
		case "sort":
			word := ""
			for _, w := range []string{"general-numeric", "human-numeric", "month", "numeric", "random", "version"} {
				if o.value != "" && strings.HasPrefix(w, o.value) {
					if word != "" && w != o.value {
						word = "?"
						break
					}
					word = w
				}
			}
			letter := map[string]string{"general-numeric": "g", "human-numeric": "h", "month": "M", "numeric": "n", "random": "R", "version": "V"}[word]
			if letter == "" {
				fmt.Fprintf(e.Stderr, "sort: invalid argument %s for '--sort'\nValid arguments are:\n  - 'general-numeric'\n  - 'human-numeric'\n  - 'month'\n  - 'numeric'\n  - 'random'\n  - 'version'\nUsage: sort [OPTION]... [FILE]...\n  or:  sort [OPTION]... --files0-from=F\nTry 'sort --help' for more information.\n", txtQuoteL(o.value))
				return 2
			}
			gkey.setOrdering(letter, true, true)
		case "c", "C":
			if checkMode != 0 && checkMode != o.name[0] {
				return fail(e, "sort", 2, "options '-cC' are incompatible")
			}
			checkMode = o.name[0]
		case "k":
			k, kerr := txtParseKey(o.value)
			if kerr != nil {
				return fail(e, "sort", 2, "%s", kerr.msg)
			}
			s.keys = append(s.keys, k)
		case "m":
			merge = true
		case "o":
			if hasOutput && output != o.value {
				return fail(e, "sort", 2, "multiple output files specified")
			}
			output, hasOutput = o.value, true
		case "s":
			s.stable = true
		case "t":
			v := o.value
			var tab int
			switch {
			case v == "":
				return fail(e, "sort", 2, "empty tab")
			case v == `\0`:
				tab = 0
			case len(v) > 1:
				return fail(e, "sort", 2, "multi-character tab %s", txtQuoteL(v))
			default:
				tab = int(v[0])
			}
			if s.tab >= 0 && s.tab != tab {
				return fail(e, "sort", 2, "incompatible tabs")
			}
			s.tab = tab
		case "u":
			s.unique = true
		case "z":
			delim = 0
		case "S", "T", "parallel", "batch-size", "compress-program", "random-source", "debug":
		}
	}
	for _, k := range s.keys {
		if k.defaultCompare() && !k.reverse {
			r := *gkey
			r.sword, r.schar, r.eword, r.echar = k.sword, k.schar, k.eword, k.echar
			*k = r
		}
	}
	if len(s.keys) == 0 && !gkey.defaultCompare() {
		s.keys = append(s.keys, gkey)
	}
	s.reverse = gkey.reverse
	for _, k := range s.keys {
		n := 0
		for _, b := range []bool{k.numeric, k.general, k.human, k.month, k.version || k.random || k.ignore != 0} {
			if b {
				n++
			}
		}
		if n > 1 {
			c := *k
			c.skipsblanks, c.skipeblanks, c.reverse = false, false, false
			return fail(e, "sort", 2, "options '-%s' are incompatible", c.opts())
		}
	}
	if checkMode != 0 {
		if hasOutput {
			return fail(e, "sort", 2, "options '-%co' are incompatible", checkMode)
		}
		if len(operands) > 1 {
			return fail(e, "sort", 2, "extra operand %s not allowed with -%c", txtQuoteAF(operands[1]), checkMode)
		}
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}

	// Read every input.
	var inputs []txtSortInput
	for _, name := range operands {
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			if txtIsCtxErr(err) {
				return 130
			}
			if txtIsDirErr(err) {
				return fail(e, "sort", 2, "read failed: %s: %s", txtQuoteF(name), errText(err))
			}
			return fail(e, "sort", 2, "cannot read: %s: %s", txtQuoteF(name), errText(err))
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			if txtIsCtxErr(err) {
				return 130
			}
			return fail(e, "sort", 2, "read failed: %s: %s", txtQuoteF(name), errText(err))
		}
		inputs = append(inputs, txtSortInput{name, txtSplitLines(data, delim)})
	}

	cancelled := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(txtSortCancelled); !ok {
					panic(r)
				}
				cancelled = true
			}
		}()
		if checkMode != 0 {
			return
		}
		if merge {
			inputs = []txtSortInput{{lines: s.merge(inputs)}}
			return
		}
		var all [][]byte
		for _, in := range inputs {
			all = append(all, in.lines...)
		}
		// Sort indexes (cheap to swap); equal lines keep input order.
		var keys [][]txtSortKeyVal
		if len(s.keys) > 0 {
			keys = make([][]txtSortKeyVal, len(all))
			for i, l := range all {
				keys[i] = s.decorate(l)
				if i&0xffff == 0 && ctx.Err() != nil {
					panic(txtSortCancelled{})
				}
			}
		}
		idx := make([]int32, len(all))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int {
			var ka, kb []txtSortKeyVal
			if keys != nil {
				ka, kb = keys[a], keys[b]
			}
			if d := s.compareDec(all[a], ka, all[b], kb); d != 0 {
				return d
			}
			return int(a - b)
		})
		sorted := make([][]byte, len(all))
		for i, j := range idx {
			sorted[i] = all[j]
		}
		all = sorted
		inputs = []txtSortInput{{lines: all}}
	}()
	if cancelled {
		return 130
	}

	if checkMode != 0 {
		lines := inputs[0].lines
		for i := 1; i < len(lines); i++ {
			d := s.compare(lines[i-1], lines[i])
			if d > 0 || (s.unique && d == 0) {
				if checkMode == 'c' {
					fmt.Fprintf(e.Stderr, "sort: %s:%d: disorder: %s\n", inputs[0].name, i+1, lines[i])
				}
				return 1
			}
		}
		return 0
	}

	var w io.Writer = e.Stdout
	var closer io.Closer
	if hasOutput && output != "-" {
		f, err := e.FS.Create(ctx, e.Abs(output), false, 0o644)
		if err != nil {
			return fail(e, "sort", 2, "open failed: %s: %s", txtQuoteF(output), errText(err))
		}
		w, closer = f, f
	}
	out := bufio.NewWriterSize(w, 64<<10)
	var prev []byte
	for i, l := range inputs[0].lines {
		if s.unique && i > 0 && s.compare(prev, l) == 0 {
			continue
		}
		prev = l
		out.Write(l)
		out.WriteByte(delim)
	}
	werr := out.Flush()
	if closer != nil {
		if err := closer.Close(); err != nil && werr == nil {
			werr = err
		}
		if werr != nil {
			return fail(e, "sort", 2, "write failed: %s: %s", txtQuoteF(output), errText(werr))
		}
	} else if werr != nil {
		if r := txtWriteFail(e, "sort", werr); r == 141 {
			return r
		}
		return 2
	}
	return 0
}

// merge merges sorted inputs; ties go to the earlier input.
func (s *txtSorter) merge(inputs []txtSortInput) [][]byte {
	var out [][]byte
	pos := make([]int, len(inputs))
	for {
		best := -1
		for i, in := range inputs {
			if pos[i] >= len(in.lines) {
				continue
			}
			if best < 0 || s.compare(in.lines[pos[i]], inputs[best].lines[pos[best]]) < 0 {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, inputs[best].lines[pos[best]])
		pos[best]++
	}
}
