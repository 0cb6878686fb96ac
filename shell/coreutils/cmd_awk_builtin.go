package coreutils

// awk's built-in functions and printf formatting. Strings are measured
// in characters (UTF-8), as gawk does in a UTF-8 locale.

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

func awkIsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func awkCharLen(s string) int {
	if awkIsASCII(s) {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}

// awkCharOffset is the byte offset of character n (0-based) of s.
func awkCharOffset(s string, n int) int {
	if awkIsASCII(s) {
		if n > len(s) {
			return len(s)
		}
		return n
	}
	off := 0
	for i := 0; i < n && off < len(s); i++ {
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off
}

func awkRound(x float64) float64 { return math.RoundToEven(x) }

// awkSubstr is POSIX substr with gawk's rounding: characters from
// position m (1-based) on, n of them.
func awkSubstr(s string, m float64, n float64, hasN bool) string {
	if math.IsNaN(m) || hasN && math.IsNaN(n) {
		return ""
	}
	length := float64(awkCharLen(s))
	start := awkRound(m)
	end := math.Inf(1)
	if hasN {
		if math.IsInf(n, 1) {
			end = math.Inf(1)
		} else {
			end = start + awkRound(n)
		}
	}
	if start < 1 {
		start = 1
	}
	if end > length+1 {
		end = length + 1
	}
	if end <= start {
		return ""
	}
	a := awkCharOffset(s, int(start)-1)
	b := a + awkCharOffset(s[a:], int(end-start))
	return s[a:b]
}

func awkToLower(s string) string {
	if awkIsASCII(s) || !utf8.ValidString(s) {
		b := []byte(s)
		for i, c := range b {
			if c >= 'A' && c <= 'Z' {
				b[i] = c + 32
			}
		}
		return string(b)
	}
	return strings.ToLower(s)
}

func awkToUpper(s string) string {
	if awkIsASCII(s) || !utf8.ValidString(s) {
		b := []byte(s)
		for i, c := range b {
			if c >= 'a' && c <= 'z' {
				b[i] = c - 32
			}
		}
		return string(b)
	}
	return strings.ToUpper(s)
}

var awkDollar0 = &awkField{&awkLit{awkNumV(0)}}

func (in *awkInterp) builtin(x *awkBuiltinCall) awkValue {
	args := x.args
	num := func(i int) float64 { return awkToNum(in.eval(args[i])) }
	str := func(i int) string { return in.toStr(in.eval(args[i])) }
	switch x.id {
	case awkBLength:
		if len(args) == 0 {
			return awkNumV(float64(awkCharLen(in.getRecord())))
		}
		if v, ok := args[0].(*awkVar); ok && (v.local || v.idx >= awkNumSpecial || v.idx == awkVENVIRON || v.idx == awkVARGV) {
			if arr := in.cell(v).peekArray(); arr != nil {
				return awkNumV(float64(arr.len()))
			}
		}
		return awkNumV(float64(awkCharLen(str(0))))
	case awkBSubstr:
		s := str(0)
		m := num(1)
		if len(args) == 3 {
			return awkStrV(awkSubstr(s, m, num(2), true))
		}
		return awkStrV(awkSubstr(s, m, 0, false))
	case awkBIndex:
		s, t := str(0), str(1)
		i := strings.Index(s, t)
		if i < 0 {
			return awkNumV(0)
		}
		return awkNumV(float64(awkCharLen(s[:i]) + 1))
	case awkBSplit:
		s := str(0)
		var sp *awkSplitter
		if len(args) == 3 {
			if r, ok := args[2].(*awkRegexLit); ok {
				sp = &awkSplitter{kind: awkSplitRegex, re: r.re}
			} else {
				sp = in.newSplitter(str(2), false)
			}
		} else {
			sp = in.newSplitter(in.toStr(in.globals[awkVFS].v), false)
		}
		arr := in.arrayOf(args[1].(*awkVar))
		arr.clear()
		n := 0
		sp.split(s, func(f string) {
			n++
			arr.set(awkFmtNum(float64(n), "%d"), awkInputV(f))
		})
		return awkNumV(float64(n))
	case awkBSub, awkBGsub:
		return in.substitute(x)
	case awkBMatch:
		s := str(0)
		re := in.regexOf(args[1])
		loc := re.FindStringIndex(s)
		start, length := 0, -1
		if loc != nil {
			start = awkCharLen(s[:loc[0]]) + 1
			length = awkCharLen(s[loc[0]:loc[1]])
		}
		in.globals[awkVRSTART].v = awkNumV(float64(start))
		in.globals[awkVRLENGTH].v = awkNumV(float64(length))
		return awkNumV(float64(start))
	case awkBSprintf:
		f := str(0)
		vals := make([]awkValue, len(args)-1)
		for i := range vals {
			vals[i] = in.eval(args[i+1])
		}
		return awkStrV(in.sprintf(f, vals))
	case awkBTolower:
		return awkStrV(awkToLower(str(0)))
	case awkBToupper:
		return awkStrV(awkToUpper(str(0)))
	case awkBInt:
		return awkNumV(math.Trunc(num(0)))
	case awkBSqrt:
		return awkNumV(math.Sqrt(num(0)))
	case awkBExp:
		return awkNumV(math.Exp(num(0)))
	case awkBLog:
		return awkNumV(math.Log(num(0)))
	case awkBSin:
		return awkNumV(math.Sin(num(0)))
	case awkBCos:
		return awkNumV(math.Cos(num(0)))
	case awkBAtan2:
		y := num(0)
		return awkNumV(math.Atan2(y, num(1)))
	case awkBRand:
		return awkNumV(in.rng.Float64())
	case awkBSrand:
		prev := in.seed
		if len(args) == 1 {
			in.seed = num(0)
		} else {
			in.seed = float64(in.e.Now().Unix())
		}
		in.rng = awkNewRand(in.seed)
		return awkNumV(prev)
	case awkBClose:
		return awkNumV(float64(in.closeStream(str(0))))
	case awkBFflush:
		if len(args) == 0 {
			return awkNumV(float64(in.flushAll()))
		}
		name := str(0)
		if o, ok := in.outputs[name]; ok {
			if err := o.w.Flush(); err != nil {
				in.writeErr(o, err)
			}
			return awkNumV(0)
		}
		switch name {
		case "/dev/stdout", "-":
			if err := in.out.w.Flush(); err != nil {
				in.writeErr(in.out, err)
			}
			return awkNumV(0)
		case "/dev/stderr":
			in.errOut.w.Flush()
			return awkNumV(0)
		}
		return awkNumV(-1)
	case awkBSystem:
		in.flushAll()
		in.fatal("system() is not supported: no command can run")
	}
	in.fatal("internal error: unknown function %s", x.name)
	return awkValue{}
}

func awkNewRand(seed float64) *rand.Rand {
	return rand.New(rand.NewPCG(math.Float64bits(seed), 0x9e3779b97f4a7c15))
}

// substitute implements sub and gsub.
func (in *awkInterp) substitute(x *awkBuiltinCall) awkValue {
	re := in.regexOf(x.args[0])
	repl := in.toStr(in.eval(x.args[1]))
	var target awkExpr = awkDollar0
	if len(x.args) == 3 {
		target = x.args[2]
	}
	r := in.lref(target)
	s := in.toStr(in.lget(&r))
	n := 1
	if x.id == awkBGsub {
		n = -1
	}
	matches := re.FindAllStringIndex(s, n)
	if len(matches) == 0 {
		return awkNumV(0)
	}
	// The replacement: & is the match, \& a literal &, \\ a backslash.
	hasSpecial := strings.ContainsAny(repl, "&\\")
	var b strings.Builder
	prev := 0
	for _, m := range matches {
		b.WriteString(s[prev:m[0]])
		if !hasSpecial {
			b.WriteString(repl)
		} else {
			for i := 0; i < len(repl); i++ {
				c := repl[i]
				switch {
				case c == '\\' && i+1 < len(repl) && (repl[i+1] == '&' || repl[i+1] == '\\'):
					b.WriteByte(repl[i+1])
					i++
				case c == '&':
					b.WriteString(s[m[0]:m[1]])
				default:
					b.WriteByte(c)
				}
			}
		}
		prev = m[1]
		if b.Len() > awkMaxStr {
			in.fatal("string too long (more than %d bytes)", awkMaxStr)
		}
	}
	b.WriteString(s[prev:])
	in.lset(&r, awkStrV(b.String()))
	return awkNumV(float64(len(matches)))
}

func (in *awkInterp) sprintf(format string, args []awkValue) string {
	s, err := awkFormat(format, args, in.convfmt)
	if err != nil {
		in.fatal("%v", err)
	}
	return s
}

// awkPad pads s with spaces to width characters.
func awkPad(b *strings.Builder, s string, width int, left bool) {
	n := width - awkCharLen(s)
	if n <= 0 {
		b.WriteString(s)
		return
	}
	if left {
		b.WriteString(s)
		b.WriteString(strings.Repeat(" ", n))
		return
	}
	b.WriteString(strings.Repeat(" ", n))
	b.WriteString(s)
}

// awkFormat formats args as C's printf does with format; convfmt
// converts numbers for %s.
func awkFormat(format string, args []awkValue, convfmt string) (string, error) {
	var b strings.Builder
	ai := 0
	next := func() (awkValue, error) {
		if ai >= len(args) {
			return awkValue{}, fmt.Errorf("not enough arguments passed to printf(\"%s\")", format)
		}
		ai++
		return args[ai-1], nil
	}
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			j := strings.IndexByte(format[i:], '%')
			if j < 0 {
				b.WriteString(format[i:])
				break
			}
			b.WriteString(format[i : i+j])
			i += j
			continue
		}
		start := i
		i++
		if i < len(format) && format[i] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		var minus, plus, space, hash, zero bool
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '-':
				minus = true
			case '+':
				plus = true
			case ' ':
				space = true
			case '#':
				hash = true
			case '0':
				zero = true
			default:
				break flags
			}
		}
		width, prec := -1, -1
		if i < len(format) && format[i] == '*' {
			v, err := next()
			if err != nil {
				return "", err
			}
			w := awkToNum(v)
			if w < 0 {
				minus = true
				w = -w
			}
			width = int(math.Min(w, awkMaxWidth+1))
			i++
		} else {
			for i < len(format) && awkIsDigit(format[i]) {
				if width < 0 {
					width = 0
				}
				if width <= awkMaxWidth {
					width = width*10 + int(format[i]-'0')
				}
				i++
			}
		}
		if i < len(format) && format[i] == '.' {
			i++
			prec = 0
			if i < len(format) && format[i] == '*' {
				v, err := next()
				if err != nil {
					return "", err
				}
				p := awkToNum(v)
				if p < 0 {
					prec = -1
				} else {
					prec = int(math.Min(p, awkMaxWidth+1))
				}
				i++
			} else {
				for i < len(format) && awkIsDigit(format[i]) {
					if prec <= awkMaxWidth {
						prec = prec*10 + int(format[i]-'0')
					}
					i++
				}
			}
		}
		for i < len(format) && strings.IndexByte("hlLqjzt", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			b.WriteString(format[start:])
			break
		}
		verb := format[i]
		i++
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if strings.IndexByte("diouxXeEfFgGcsaA", verb) < 0 {
			b.WriteString(format[start:i])
			continue
		}
		if width > awkMaxWidth || prec > awkMaxWidth {
			return "", fmt.Errorf("printf: width or precision too large in \"%s\"", format)
		}
		v, err := next()
		if err != nil {
			return "", err
		}
		spec := func(verb byte, signs bool) string {
			var f strings.Builder
			f.WriteByte('%')
			if minus {
				f.WriteByte('-')
			}
			if plus && signs {
				f.WriteByte('+')
			}
			if space && signs {
				f.WriteByte(' ')
			}
			if hash {
				f.WriteByte('#')
			}
			if zero {
				f.WriteByte('0')
			}
			if width >= 0 {
				fmt.Fprintf(&f, "%d", width)
			}
			if prec >= 0 {
				fmt.Fprintf(&f, ".%d", prec)
			}
			f.WriteByte(verb)
			return f.String()
		}
		nanText := func(n float64) {
			s := awkNaNText(n)
			if s[0] != '-' && plus {
				s = "+" + s
			} else if s[0] != '-' && space {
				s = " " + s
			}
			awkPad(&b, s, width, minus)
		}
		switch verb {
		case 'd', 'i':
			n := math.Trunc(awkToNum(v))
			switch {
			case math.IsNaN(n) || math.IsInf(n, 0):
				nanText(n)
			case n > -9.2e18 && n < 9.2e18:
				fmt.Fprintf(&b, spec('d', true), int64(n))
			default:
				bi, _ := new(big.Float).SetFloat64(n).Int(nil)
				fmt.Fprintf(&b, spec('d', true), bi)
			}
		case 'o', 'u', 'x', 'X':
			n := math.Trunc(awkToNum(v))
			gv := verb
			if verb == 'u' {
				gv = 'd'
			}
			switch {
			case math.IsNaN(n) || math.IsInf(n, 0):
				nanText(n)
			case n >= 0 && n < 1.8e19:
				fmt.Fprintf(&b, spec(gv, false), uint64(n))
			case n < 0 && n > -9.2e18:
				fmt.Fprintf(&b, spec(gv, false), uint64(int64(n)))
			default:
				bi, _ := new(big.Float).SetFloat64(n).Int(nil)
				fmt.Fprintf(&b, spec(gv, false), bi)
			}
		case 'e', 'E', 'f', 'F', 'g', 'G', 'a', 'A':
			n := awkToNum(v)
			if math.IsNaN(n) || math.IsInf(n, 0) {
				s := awkNaNText(n)
				if verb >= 'A' && verb <= 'Z' {
					s = strings.ToUpper(s)
				}
				if s[0] != '-' && plus {
					s = "+" + s
				} else if s[0] != '-' && space {
					s = " " + s
				}
				awkPad(&b, s, width, minus)
				break
			}
			if prec < 0 && verb != 'a' && verb != 'A' {
				prec = 6
			}
			gv := verb
			if verb == 'a' {
				gv = 'x'
			} else if verb == 'A' {
				gv = 'X'
			}
			fmt.Fprintf(&b, spec(gv, true), n)
		case 'c':
			var s string
			if x, ok := awkNumeric(v); ok && v.k != awkStr {
				r := rune(int64(x))
				switch {
				case x < 0 || x > 0x10FFFF:
					s = string([]byte{byte(int64(x))})
				case r < 0x80:
					s = string([]byte{byte(r)})
				default:
					s = string(r)
				}
			} else {
				t := v.s
				if t != "" {
					_, w := utf8.DecodeRuneInString(t)
					s = t[:w]
				}
			}
			awkPad(&b, s, width, minus)
		case 's':
			var s string
			switch v.k {
			case awkNum:
				s = awkFmtNum(v.n, convfmt)
			default:
				s = v.s
			}
			if prec >= 0 {
				s = s[:awkCharOffset(s, prec)]
			}
			awkPad(&b, s, width, minus)
		}
		if b.Len() > awkMaxStr {
			return "", fmt.Errorf("printf: output too long")
		}
	}
	return b.String(), nil
}
