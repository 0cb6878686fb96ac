package coreutils

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printf is bash's printf builtin (which GNU's printf(1) matches): the
// format is reused until every argument is consumed, %b expands escapes
// in its argument, %q quotes for the shell, and a number that does not
// parse is an error reported on stderr (status 1) after printing 0.
func init() { register("printf", cmdPrintf) }

func cmdPrintf(ctx context.Context, e *Env, args []string) int {
	args = args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(e.Stderr, "printf: usage: printf [-v var] format [arguments]")
		return 2
	}
	format, args := args[0], args[1:]
	p := &pfState{e: e, args: args}
	var out strings.Builder
	for {
		stop := p.run(&out, format)
		if stop || len(p.args) == 0 || !p.consumed {
			break
		}
	}
	io.WriteString(e.Stdout, out.String())
	return p.status
}

type pfState struct {
	e        *Env
	args     []string
	consumed bool // the format used an argument this round
	status   int
}

func (p *pfState) next() (string, bool) {
	if len(p.args) == 0 {
		return "", false
	}
	a := p.args[0]
	p.args = p.args[1:]
	p.consumed = true
	return a, true
}

// run renders format once; it reports true when \c ended all output.
func (p *pfState) run(out *strings.Builder, format string) bool {
	p.consumed = false
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\':
			n, stop := pfEscape(out, format[i+1:], false)
			if stop {
				return true
			}
			i += n
		case c == '%' && i+1 < len(format) && format[i+1] == '%':
			out.WriteByte('%')
			i++
		case c == '%':
			j := i + 1
			for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
				j++
			}
			spec := format[i:j]
			// Width and precision, either literal or '*' from the args.
			for _, part := range []int{0, 1} {
				if part == 1 {
					if j < len(format) && format[j] == '.' {
						spec += "."
						j++
					} else {
						break
					}
				}
				if j < len(format) && format[j] == '*' {
					a, _ := p.next()
					n, _ := strconv.Atoi(a)
					spec += strconv.Itoa(n)
					j++
					continue
				}
				k := j
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				spec += format[k:j]
			}
			for j < len(format) && strings.IndexByte("hlLjzt", format[j]) >= 0 {
				j++ // length modifiers mean nothing here
			}
			if j >= len(format) {
				fmt.Fprintf(p.e.Stderr, "printf: %s: missing format character\n", format[i:])
				p.status = 1
				return true
			}
			if p.conv(out, spec, format[j]) {
				return true
			}
			i = j
		default:
			out.WriteByte(c)
		}
	}
	return false
}

// conv renders one conversion; true means stop (a %b argument held \c).
func (p *pfState) conv(out *strings.Builder, spec string, verb byte) bool {
	a, _ := p.next()
	switch verb {
	case 's':
		out.WriteString(fmt.Sprintf(spec+"s", a))
	case 'b':
		var b strings.Builder
		stop := false
		for k := 0; k < len(a); k++ {
			if a[k] == '\\' {
				n, st := pfEscape(&b, a[k+1:], true)
				if st {
					stop = true
					break
				}
				k += n
				continue
			}
			b.WriteByte(a[k])
		}
		out.WriteString(fmt.Sprintf(spec+"s", b.String()))
		return stop
	case 'q':
		out.WriteString(fmt.Sprintf(spec+"s", pfQuote(a)))
	case 'c':
		if a != "" {
			_, size := utf8.DecodeRuneInString(a)
			out.WriteString(fmt.Sprintf(spec+"s", a[:size]))
		} else {
			out.WriteString(fmt.Sprintf(spec+"s", ""))
		}
	case 'd', 'i':
		n := p.integer(a)
		out.WriteString(fmt.Sprintf(spec+"d", n))
	case 'u', 'o', 'x', 'X':
		n := p.integer(a)
		v := verb
		if verb == 'u' {
			v = 'd'
		}
		out.WriteString(fmt.Sprintf(spec+string(v), uint64(n)))
	case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
		f := p.float(a)
		v := verb
		switch verb {
		case 'F':
			v = 'f'
		case 'a':
			v = 'x'
		case 'A':
			v = 'X'
		}
		out.WriteString(fmt.Sprintf(spec+string(v), f))
	default:
		fmt.Fprintf(p.e.Stderr, "printf: %%%c: invalid directive\n", verb)
		p.status = 1
		return true
	}
	return false
}

func (p *pfState) integer(a string) int64 {
	if a == "" {
		return 0
	}
	if (a[0] == '\'' || a[0] == '"') && len(a) > 1 {
		r, _ := utf8.DecodeRuneInString(a[1:])
		return int64(r)
	}
	s := strings.TrimSpace(a)
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		if u, uerr := strconv.ParseUint(s, 0, 64); uerr == nil {
			return int64(u)
		}
		fmt.Fprintf(p.e.Stderr, "printf: %s: invalid number\n", a)
		p.status = 1
		return 0
	}
	return n
}

func (p *pfState) float(a string) float64 {
	if a == "" {
		return 0
	}
	if (a[0] == '\'' || a[0] == '"') && len(a) > 1 {
		r, _ := utf8.DecodeRuneInString(a[1:])
		return float64(r)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
	if err != nil {
		fmt.Fprintf(p.e.Stderr, "printf: %s: invalid number\n", a)
		p.status = 1
		return 0
	}
	return f
}

// pfEscape writes the escape at the start of s (after the backslash) and
// returns how many bytes it used; stop is \c. inB selects %b's rules
// (\0NNN octal).
func pfEscape(out *strings.Builder, s string, inB bool) (n int, stop bool) {
	if s == "" {
		out.WriteByte('\\')
		return 0, false
	}
	simple := map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11, '\\': '\\', '"': '"', '\'': '\''}
	if r, ok := simple[s[0]]; ok {
		if (s[0] == '"' || s[0] == '\'') && inB {
			out.WriteByte('\\')
			out.WriteByte(s[0])
			return 1, false
		}
		out.WriteByte(r)
		return 1, false
	}
	switch s[0] {
	case 'c':
		return 1, true
	case 'x':
		k := 1
		for k < len(s) && k < 3 && strings.IndexByte("0123456789abcdefABCDEF", s[k]) >= 0 {
			k++
		}
		if k == 1 {
			out.WriteString(`\x`)
			return 1, false
		}
		v, _ := strconv.ParseUint(s[1:k], 16, 8)
		out.WriteByte(byte(v))
		return k - 1, false
	case 'u', 'U':
		max := 4
		if s[0] == 'U' {
			max = 8
		}
		k := 1
		for k < len(s) && k <= max && strings.IndexByte("0123456789abcdefABCDEF", s[k]) >= 0 {
			k++
		}
		if k == 1 {
			out.WriteByte('\\')
			out.WriteByte(s[0])
			return 1, false
		}
		v, _ := strconv.ParseUint(s[1:k], 16, 32)
		out.WriteRune(rune(v))
		return k - 1, false
	}
	if s[0] >= '0' && s[0] <= '7' {
		start, limit := 0, 3
		if inB && s[0] == '0' {
			start, limit = 1, 4
		}
		k := start
		for k < len(s) && k < limit && s[k] >= '0' && s[k] <= '7' {
			k++
		}
		if k == start {
			out.WriteByte(0)
			return k, false
		}
		v, _ := strconv.ParseUint(s[start:k], 8, 16)
		out.WriteByte(byte(v))
		return k, false
	}
	out.WriteByte('\\')
	out.WriteByte(s[0])
	return 1, false
}

// pfQuote quotes s for the shell as bash's %q does.
func pfQuote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return pfANSIQuote(s)
		}
	}
	var b strings.Builder
	for i, r := range s {
		if strings.ContainsRune(" !\"$&'()*,;<>?[\\]^`{|}", r) || i == 0 && (r == '~' || r == '#') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pfANSIQuote is bash's $'...' form, for strings with control characters.
func pfANSIQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case 0x1b:
			b.WriteString(`\E`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('\'')
	return b.String()
}
