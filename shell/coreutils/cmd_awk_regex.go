package coreutils

// Translation of awk's extended regular expressions (POSIX ERE with
// awk's escapes) into Go's RE2 syntax, matched leftmost-longest.

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// awkRegexClasses are the POSIX classes RE2 knows inside brackets.
var awkRegexClasses = map[string]bool{
	"alnum": true, "alpha": true, "blank": true, "cntrl": true, "digit": true,
	"graph": true, "lower": true, "print": true, "punct": true, "space": true,
	"upper": true, "xdigit": true,
}

// awkEscapeChar decodes an awk escape letter (after a backslash) that
// stands for a character: n t r f v a b / " and octal digits. It returns
// the character and how many bytes of s (which starts after the
// backslash) it used, or ok false.
func awkEscapeChar(s string) (c byte, n int, ok bool) {
	if s == "" {
		return 0, 0, false
	}
	switch s[0] {
	case 'n':
		return '\n', 1, true
	case 't':
		return '\t', 1, true
	case 'r':
		return '\r', 1, true
	case 'f':
		return '\f', 1, true
	case 'v':
		return '\v', 1, true
	case 'a':
		return 7, 1, true
	case 'b':
		return 8, 1, true
	case '/':
		return '/', 1, true
	case '"':
		return '"', 1, true
	}
	if s[0] >= '0' && s[0] <= '7' {
		v := 0
		i := 0
		for i < len(s) && i < 3 && s[i] >= '0' && s[i] <= '7' {
			v = v*8 + int(s[i]-'0')
			i++
		}
		return byte(v), i, true
	}
	return 0, 0, false
}

// awkQuoteByte writes c as a literal for RE2, outside brackets.
func awkQuoteByte(b *strings.Builder, c byte) {
	switch {
	case c < 0x20 || c == 0x7f:
		fmt.Fprintf(b, `\x%02x`, c)
	case strings.IndexByte(`\.+*?()|[]{}^$`, c) >= 0:
		b.WriteByte('\\')
		b.WriteByte(c)
	default:
		b.WriteByte(c)
	}
}

// awkClassByte writes c as a literal inside an RE2 bracket expression.
func awkClassByte(b *strings.Builder, c byte) {
	switch {
	case c < 0x20 || c == 0x7f:
		fmt.Fprintf(b, `\x%02x`, c)
	case strings.IndexByte(`\[]^-:`, c) >= 0:
		b.WriteByte('\\')
		b.WriteByte(c)
	default:
		b.WriteByte(c)
	}
}

// awkTranslateRegex turns an awk ERE into RE2 syntax.
func awkTranslateRegex(src string) (string, error) {
	var b strings.Builder
	b.WriteString("(?s)")
	// canRepeat tells whether a repetition operator here has an operand;
	// where it has none, ERE leaves it undefined and awk takes it
	// literally.
	canRepeat := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\\':
			if i+1 >= len(src) {
				b.WriteString(`\\`)
				canRepeat = true
				continue
			}
			if ch, n, ok := awkEscapeChar(src[i+1:]); ok {
				awkQuoteByte(&b, ch)
				i += n
				canRepeat = true
				continue
			}
			i++
			d := src[i]
			switch d {
			case 'y', '<', '>':
				b.WriteString(`\b`)
				canRepeat = false
				continue
			case 'B':
				b.WriteString(`\B`)
				canRepeat = false
				continue
			case 's', 'S', 'w', 'W':
				b.WriteByte('\\')
				b.WriteByte(d)
			case '`':
				b.WriteString(`\A`)
				canRepeat = false
				continue
			case '\'':
				b.WriteString(`\z`)
				canRepeat = false
				continue
			default:
				if d >= 0x80 {
					// A backslash before a multibyte character: the character.
					b.WriteByte(d)
				} else {
					awkQuoteByte(&b, d)
				}
			}
			canRepeat = true
		case '[':
			j, err := awkTranslateBracket(&b, src, i)
			if err != nil {
				return "", err
			}
			i = j
			canRepeat = true
		case '*', '+', '?':
			if !canRepeat {
				b.WriteByte('\\')
				b.WriteByte(c)
				canRepeat = true
				continue
			}
			b.WriteByte(c)
			// a** is fine in ERE but an error in RE2.
			for i+1 < len(src) && strings.IndexByte("*+?", src[i+1]) >= 0 {
				i++
			}
		case '{':
			if canRepeat {
				if j := awkIntervalEnd(src, i); j > 0 {
					b.WriteString(src[i : j+1])
					i = j
					continue
				}
			}
			b.WriteString(`\{`)
			canRepeat = true
		case '}':
			b.WriteString(`\}`)
			canRepeat = true
		case '(':
			if i+1 < len(src) && src[i+1] == ')' {
				b.WriteString("(?:)")
				i++
				canRepeat = true
				continue
			}
			b.WriteByte('(')
			canRepeat = false
		case ')':
			b.WriteByte(')')
			canRepeat = true
		case '|':
			b.WriteByte('|')
			canRepeat = false
		case '^':
			b.WriteByte('^')
			canRepeat = false
		case '$':
			b.WriteByte('$')
			canRepeat = true
		case '.':
			b.WriteByte('.')
			canRepeat = true
		default:
			if c < 0x20 || c == 0x7f {
				awkQuoteByte(&b, c)
			} else {
				b.WriteByte(c)
			}
			canRepeat = true
		}
	}
	return b.String(), nil
}

// awkIntervalEnd returns the index of the '}' closing a valid interval
// {n}, {n,} or {n,m} starting at src[i] == '{', or -1.
func awkIntervalEnd(src string, i int) int {
	j := i + 1
	d := 0
	for j < len(src) && awkIsDigit(src[j]) {
		j++
		d++
	}
	if d == 0 {
		return -1
	}
	if j < len(src) && src[j] == ',' {
		j++
		for j < len(src) && awkIsDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && src[j] == '}' {
		return j
	}
	return -1
}

// awkTranslateBracket translates the bracket expression starting at
// src[i] == '[' and returns the index of its closing ']'.
func awkTranslateBracket(b *strings.Builder, src string, i int) (int, error) {
	j := i + 1
	var out strings.Builder
	out.WriteByte('[')
	if j < len(src) && src[j] == '^' {
		out.WriteByte('^')
		j++
	}
	first := true
	items := 0
	for {
		if j >= len(src) {
			return 0, fmt.Errorf("bad class -- [], [^] or [")
		}
		c := src[j]
		if c == ']' && !first {
			break
		}
		first = false
		switch {
		case c == '[' && j+1 < len(src) && (src[j+1] == ':' || src[j+1] == '=' || src[j+1] == '.'):
			kind := src[j+1]
			end := strings.Index(src[j+2:], string(kind)+"]")
			if end < 0 {
				return 0, fmt.Errorf("bad class -- [], [^] or [")
			}
			name := src[j+2 : j+2+end]
			j += 2 + end + 2
			switch kind {
			case ':':
				if !awkRegexClasses[name] {
					return 0, fmt.Errorf("invalid character class [:%s:]", name)
				}
				out.WriteString("[:" + name + ":]")
			default:
				// Equivalence classes and collating symbols: the characters.
				for k := 0; k < len(name); k++ {
					awkClassByte(&out, name[k])
				}
			}
			items++
			continue
		case c == '\\' && j+1 < len(src):
			if ch, n, ok := awkEscapeChar(src[j+1:]); ok {
				awkClassByte(&out, ch)
				j += 1 + n
			} else {
				d := src[j+1]
				switch {
				case d == 's' || d == 'S' || d == 'w' || d == 'W':
					out.WriteByte('\\')
					out.WriteByte(d)
				case d >= 0x80:
					out.WriteByte(d)
				default:
					awkClassByte(&out, d)
				}
				j += 2
			}
		case c == '-' && items > 0 && j+1 < len(src) && src[j+1] != ']':
			out.WriteByte('-')
			j++
			continue
		case c >= 0x80:
			out.WriteByte(c)
			j++
		default:
			awkClassByte(&out, c)
			j++
		}
		items++
	}
	out.WriteByte(']')
	b.WriteString(out.String())
	return j, nil
}

// awkCompileRegex compiles an awk ERE.
func awkCompileRegex(src string) (*regexp.Regexp, error) {
	t, err := awkTranslateRegex(src)
	if err != nil {
		return nil, fmt.Errorf("regular expression compile failed (%s)\n%s", err, src)
	}
	re, err := regexp.Compile(t)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = se.Code.String()
		}
		return nil, fmt.Errorf("regular expression compile failed (%s)\n%s", msg, src)
	}
	re.Longest()
	return re, nil
}
