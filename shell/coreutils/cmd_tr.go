package coreutils

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

func init() { register("tr", txtTrMain) }

var txtTrSpec = optSpec{
	short: "cCdst",
	long: map[string]bool{
		"complement": false, "delete": false, "squeeze-repeats": false, "truncate-set1": false,
	},
	alias: map[string]string{
		"complement": "c", "delete": "d", "squeeze-repeats": "s", "truncate-set1": "t",
	},
}

// txtTrElem is one element of a tr set: a run of characters, a class,
// or a repeat.
type txtTrElem struct {
	chars  []byte // the expansion (for [c*], filled in later)
	class  string // for [:name:]
	equiv  bool
	repeat int // -1: not a repeat; 0: [c*] (fill); else [c*n]
	rchar  byte
}

// txtTrClass lists a character class's bytes in C.UTF-8 (ASCII only).
func txtTrClass(name string) ([]byte, bool) {
	var test func(c byte) bool
	isUpper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	isLower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isAlpha := func(c byte) bool { return isUpper(c) || isLower(c) }
	switch name {
	case "alnum":
		test = func(c byte) bool { return isAlpha(c) || isDigit(c) }
	case "alpha":
		test = isAlpha
	case "blank":
		test = func(c byte) bool { return c == ' ' || c == '\t' }
	case "cntrl":
		test = func(c byte) bool { return c < 32 || c == 127 }
	case "digit":
		test = isDigit
	case "graph":
		test = func(c byte) bool { return c > 32 && c < 127 }
	case "lower":
		test = isLower
	case "print":
		test = func(c byte) bool { return c >= 32 && c < 127 }
	case "punct":
		test = func(c byte) bool { return c > 32 && c < 127 && !isAlpha(c) && !isDigit(c) }
	case "space":
		test = func(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
	case "upper":
		test = isUpper
	case "xdigit":
		test = func(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
	default:
		return nil, false
	}
	var out []byte
	for c := 0; c < 256; c++ {
		if test(byte(c)) {
			out = append(out, byte(c))
		}
	}
	return out, true
}

// txtTrPrintable renders a byte as tr's make_printable_char does.
func txtTrPrintable(c byte) string {
	if c >= 32 && c < 127 {
		return string([]byte{c})
	}
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\%03o`, c)
}

// txtTrUnquote processes a tr string's backslash escapes: the bytes,
// and which of them were escaped.
func txtTrUnquote(e *Env, s string) ([]byte, []bool) {
	var out []byte
	var esc []bool
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			esc = append(esc, false)
			continue
		}
		if i+1 >= len(s) {
			fmt.Fprintf(e.Stderr, "tr: warning: an unescaped backslash at end of string is not portable\n")
			out = append(out, '\\')
			esc = append(esc, false)
			continue
		}
		c := s[i+1]
		switch c {
		case 'a':
			c = '\a'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			if i+2 < len(s) && s[i+2] >= '0' && s[i+2] <= '7' {
				v = v*8 + int(s[i+2]-'0')
				i++
				if i+2 < len(s) && s[i+2] >= '0' && s[i+2] <= '7' {
					if v*8+int(s[i+2]-'0') < 256 {
						v = v*8 + int(s[i+2]-'0')
						i++
					} else {
						fmt.Fprintf(e.Stderr, "tr: warning: the ambiguous octal escape \\%c%c%c is being\n\tinterpreted as the 2-byte sequence \\0%c%c, %c\n",
							s[i], s[i+1], s[i+2], s[i], s[i+1], s[i+2])
					}
				}
			}
			c = byte(v)
		}
		i++
		out = append(out, c)
		esc = append(esc, true)
	}
	return out, esc
}

// txtTrParse parses a tr string into its elements.
func txtTrParse(e *Env, str string) ([]*txtTrElem, error) {
	p, esc := txtTrUnquote(e, str)
	n := len(p)
	match := func(i int, c byte) bool { return i < n && p[i] == c && !esc[i] }
	var elems []*txtTrElem
	normal := func(c byte) { elems = append(elems, &txtTrElem{chars: []byte{c}, repeat: -1}) }
	// findRepeat matches [c*n] starting at start (the c); -1: no match.
	findRepeat := func(start int) (c byte, count int, closeIdx int, status int, err error) {
		if !match(start+1, '*') {
			return 0, 0, 0, -1, nil
		}
		for i := start + 2; i < n && !esc[i]; i++ {
			if p[i] == ']' {
				digits := string(p[start+2 : i])
				if digits == "" {
					return p[start], 0, i, 0, nil
				}
				base := 10
				if digits[0] == '0' {
					base = 8
				}
				v, perr := strconv.ParseUint(digits, base, 63)
				if perr != nil || v > 1<<31 {
					return 0, 0, 0, -2, fmt.Errorf("invalid repeat count %s in [c*n] construct", txtQuoteL(digits))
				}
				return p[start], int(v), i, 0, nil
			}
		}
		return 0, 0, 0, -1, nil
	}
	starDigitsClose := func(idx int) bool {
		if !match(idx, '*') {
			return false
		}
		for i := idx + 1; i < n; i++ {
			if !(p[i] >= '0' && p[i] <= '9') || esc[i] {
				return match(i, ']')
			}
		}
		return false
	}
	i := 0
	for i+2 < n {
		if match(i, '[') {
			if match(i+1, ':') || match(i+1, '=') {
				delim := p[i+1]
				closeIdx := -1
				for j := i + 2; j < n-1; j++ {
					if p[j] == delim && p[j+1] == ']' && !esc[j] && !esc[j+1] {
						closeIdx = j
						break
					}
				}
				if closeIdx >= 0 {
					opnd := p[i+2 : closeIdx]
					if len(opnd) == 0 {
						if delim == ':' {
							return nil, errors.New("missing character class name '[::]'")
						}
						return nil, errors.New("missing equivalence class character '[==]'")
					}
					if delim == ':' {
						chars, ok := txtTrClass(string(opnd))
						if !ok {
							if !starDigitsClose(i + 2) {
								var b strings.Builder
								for _, c := range opnd {
									b.WriteString(txtTrPrintable(c))
								}
								return nil, fmt.Errorf("invalid character class %s", txtQuoteL(b.String()))
							}
							goto repeat
						}
						elems = append(elems, &txtTrElem{chars: chars, class: string(opnd), repeat: -1})
					} else {
						if len(opnd) != 1 {
							if !starDigitsClose(i + 2) {
								var b strings.Builder
								for _, c := range opnd {
									b.WriteString(txtTrPrintable(c))
								}
								return nil, fmt.Errorf("%s: equivalence class operand must be a single character", b.String())
							}
							goto repeat
						}
						elems = append(elems, &txtTrElem{chars: []byte{opnd[0]}, equiv: true, repeat: -1})
					}
					i = closeIdx + 2
					continue
				}
			}
		repeat:
			c, count, closeIdx, status, err := findRepeat(i + 1)
			if status == -2 {
				return nil, err
			}
			if status == 0 {
				el := &txtTrElem{repeat: count, rchar: c}
				if count > 0 {
					el.chars = []byte(strings.Repeat(string([]byte{c}), count))
				}
				elems = append(elems, el)
				i = closeIdx + 1
				continue
			}
		}
		if match(i+1, '-') {
			lo, hi := p[i], p[i+2]
			if lo > hi {
				return nil, fmt.Errorf("range-endpoints of '%s-%s' are in reverse collating sequence order", txtTrPrintable(lo), txtTrPrintable(hi))
			}
			var chars []byte
			for c := int(lo); c <= int(hi); c++ {
				chars = append(chars, byte(c))
			}
			elems = append(elems, &txtTrElem{chars: chars, repeat: -1})
			i += 3
			continue
		}
		normal(p[i])
		i++
	}
	for ; i < n; i++ {
		normal(p[i])
	}
	return elems, nil
}

func txtTrLen(elems []*txtTrElem) int {
	n := 0
	for _, el := range elems {
		n += len(el.chars)
	}
	return n
}

func txtTrExpand(elems []*txtTrElem) []byte {
	var out []byte
	for _, el := range elems {
		out = append(out, el.chars...)
	}
	return out
}

func txtTrMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, err := txtParsePlus(&txtTrSpec, args[1:])
	if err != nil {
		return badUsage(e, "tr", err, 1)
	}
	var complement, del, squeeze, truncate bool
	for _, o := range opts {
		switch o.name {
		case "c", "C":
			complement = true
		case "d":
			del = true
		case "s":
			squeeze = true
		case "t":
			truncate = true
		}
	}
	minOps, maxOps := 1, 1
	if del == squeeze {
		minOps = 2
	}
	if !del || squeeze {
		maxOps = 2
	}
	if len(operands) < minOps {
		if len(operands) == 0 {
			return badUsage(e, "tr", errors.New("missing operand"), 1)
		}
		why := "Two strings must be given when translating."
		if squeeze {
			why = "Two strings must be given when both deleting and squeezing repeats."
		}
		return badUsage(e, "tr", fmt.Errorf("missing operand after %s\n%s", txtQuoteL(operands[len(operands)-1]), why), 1)
	}
	if len(operands) > maxOps {
		msg := "extra operand " + txtQuoteL(operands[maxOps])
		if len(operands) == 2 {
			msg += "\nOnly one string may be given when deleting without squeezing repeats."
		}
		return badUsage(e, "tr", errors.New(msg), 1)
	}
	translating := len(operands) == 2 && !del

	s1, err := txtTrParse(e, operands[0])
	if err != nil {
		return fail(e, "tr", 1, "%s", err)
	}
	var s2 []*txtTrElem
	if len(operands) == 2 {
		if s2, err = txtTrParse(e, operands[1]); err != nil {
			return fail(e, "tr", 1, "%s", err)
		}
	}

	// validate
	for _, el := range s1 {
		if el.repeat == 0 {
			return fail(e, "tr", 1, "the [c*] repeat construct may not appear in string1")
		}
	}
	set1 := txtTrExpand(s1)
	var in1 [256]bool
	for _, c := range set1 {
		in1[c] = true
	}
	len1 := len(set1)
	var comp1 []byte
	if complement {
		for c := 0; c < 256; c++ {
			if !in1[c] {
				comp1 = append(comp1, byte(c))
			}
		}
		len1 = len(comp1)
	}
	if len(operands) == 2 {
		var fill *txtTrElem
		for _, el := range s2 {
			if el.repeat == 0 {
				if fill != nil {
					return fail(e, "tr", 1, "only one [c*] repeat construct may appear in string2")
				}
				fill = el
			}
		}
		if fill != nil && len1 >= txtTrLen(s2) {
			fill.chars = []byte(strings.Repeat(string([]byte{fill.rchar}), len1-txtTrLen(s2)))
		}
		if translating {
			for _, el := range s2 {
				if el.equiv {
					return fail(e, "tr", 1, "[=c=] expressions may not appear in string2 when translating")
				}
				if el.class != "" && el.class != "upper" && el.class != "lower" {
					return fail(e, "tr", 1, "when translating, the only character classes that may appear in\nstring2 are 'upper' and 'lower'")
				}
			}
			if !complement {
				// Each [:upper:] or [:lower:] of string2 must line up with
				// one of string1.
				starts := map[int]bool{}
				pos := 0
				for _, el := range s1 {
					if el.class == "upper" || el.class == "lower" {
						starts[pos] = true
					}
					pos += len(el.chars)
				}
				pos = 0
				for _, el := range s2 {
					if (el.class == "upper" || el.class == "lower") && !starts[pos] {
						return fail(e, "tr", 1, "misaligned [:upper:] and/or [:lower:] construct")
					}
					pos += len(el.chars)
				}
			}
			len2 := txtTrLen(s2)
			if len1 > len2 && !truncate {
				if len2 == 0 {
					return fail(e, "tr", 1, "when not truncating set1, string2 must be non-empty")
				}
			}
			if complement && txtTrHasClass(s1) {
				set2 := txtTrExpand(s2)
				homogeneous := true
				for _, c := range set2 {
					if c != set2[0] {
						homogeneous = false
					}
				}
				if !((len2 == len1 || (len1 > len2 && !truncate && len2 > 0)) && homogeneous) {
					return fail(e, "tr", 1, "when translating with complemented character classes,\nstring2 must map all characters in the domain to one")
				}
			}
		} else if fill != nil {
			return fail(e, "tr", 1, "the [c*] construct may appear in string2 only when translating")
		}
	}

	// Build the tables.
	var delSet, sqSet [256]bool
	var xlate [256]byte
	for i := range xlate {
		xlate[i] = byte(i)
	}
	domain := set1
	if complement {
		domain = comp1
	}
	switch {
	case translating:
		set2 := txtTrExpand(s2)
		if len(domain) > len(set2) && !truncate && len(set2) > 0 {
			last := set2[len(set2)-1]
			for len(set2) < len(domain) {
				set2 = append(set2, last)
			}
		}
		for i, c := range domain {
			if i >= len(set2) {
				break
			}
			xlate[c] = set2[i]
		}
		if squeeze {
			for _, c := range set2 {
				sqSet[c] = true
			}
		}
	case del:
		for _, c := range domain {
			delSet[c] = true
		}
		if squeeze {
			for _, c := range txtTrExpand(s2) {
				sqSet[c] = true
			}
		}
	default: // squeeze only
		for _, c := range domain {
			sqSet[c] = true
		}
	}

	r := &txtCtxReader{ctx, txtStdin(e)}
	out := bufio.NewWriterSize(e.Stdout, 64<<10)
	buf := make([]byte, 64<<10)
	last := -1
	for {
		n, rerr := r.Read(buf)
		for _, c := range buf[:n] {
			if delSet[c] {
				continue
			}
			c = xlate[c]
			if sqSet[c] && int(c) == last {
				continue
			}
			last = int(c)
			out.WriteByte(c)
		}
		if werr := txtOutErr(out); werr != nil {
			return txtWriteFail(e, "tr", werr)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Flush()
			if txtIsCtxErr(rerr) {
				return 130
			}
			return fail(e, "tr", 1, "read error: %s", errText(rerr))
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "tr", err)
	}
	return 0
}

func txtTrHasClass(elems []*txtTrElem) bool {
	for _, el := range elems {
		if el.class != "" {
			return true
		}
	}
	return false
}
