package coreutils

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

func init() { register("seq", txtSeqMain) }

var txtSeqSpec = optSpec{
	short: "f:s:w",
	long:  map[string]bool{"format": true, "separator": true, "equal-width": false},
	alias: map[string]string{"format": "f", "separator": "s", "equal-width": "w"},
}

// seq computes in long double, as GNU's does on x86: a 64-bit mantissa.
const txtLongPrec = 64

func txtLong() *big.Float { return new(big.Float).SetPrec(txtLongPrec).SetMode(big.ToNearestEven) }

var (
	txtDecFloatRe = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	txtHexFloatRe = regexp.MustCompile(`^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?$`)
)

// txtStrtold parses a whole string as strtold does (C locale); nan is
// reported separately.
func txtStrtold(s string) (v *big.Float, isNaN, ok bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	body := strings.TrimLeft(t, "+-")
	neg := strings.HasPrefix(t, "-")
	if len(t)-len(body) > 1 {
		return nil, false, false
	}
	low := strings.ToLower(body)
	switch {
	case low == "inf" || low == "infinity":
		return txtLong().SetInf(neg), false, true
	case low == "nan" || (strings.HasPrefix(low, "nan(") && strings.HasSuffix(low, ")")):
		return nil, true, true
	case txtDecFloatRe.MatchString(t):
		f, _, err := big.ParseFloat(t, 10, txtLongPrec, big.ToNearestEven)
		if err != nil {
			return nil, false, false
		}
		return f, false, true
	case txtHexFloatRe.MatchString(t):
		f, _, err := big.ParseFloat(t, 0, txtLongPrec, big.ToNearestEven)
		if err != nil {
			return nil, false, false
		}
		return f, false, true
	}
	return nil, false, false
}

// txtSeqOperand is seq's operand: value, output width and precision
// (-1: cannot tell).
type txtSeqOperand struct {
	value     *big.Float
	width     int
	precision int
}

const txtNoPrec = 1 << 30

func txtSeqScan(e *Env, arg string) (txtSeqOperand, int, bool) {
	v, isNaN, ok := txtStrtold(arg)
	if !ok {
		return txtSeqOperand{}, badUsage(e, "seq", fmt.Errorf("invalid floating point argument: %s", txtQuoteL(arg)), 1), false
	}
	if isNaN {
		return txtSeqOperand{}, badUsage(e, "seq", fmt.Errorf("invalid %s argument: %s", txtQuoteL("not-a-number"), txtQuoteL(arg)), 1), false
	}
	ret := txtSeqOperand{value: v, precision: txtNoPrec}
	a := strings.TrimLeft(arg, " \t\n\v\f\r+")
	dp := strings.IndexByte(a, '.')
	if dp < 0 && !strings.ContainsRune(a, 'p') {
		ret.precision = 0
	}
	if !strings.ContainsAny(a, "xX") && !v.IsInf() {
		fractionLen := 0
		ret.width = len(a)
		if dp >= 0 {
			rest := a[dp+1:]
			fractionLen = len(rest)
			if i := strings.IndexAny(rest, "eE"); i >= 0 {
				fractionLen = i
			}
			ret.precision = fractionLen
			switch {
			case fractionLen == 0:
				ret.width--
			case dp == 0 || !txtIsDigit(a[dp-1]):
				ret.width++
			}
		}
		ei := strings.IndexAny(a, "eE")
		if ei >= 0 {
			exponent, _ := strconv.Atoi(strings.TrimLeft(a[ei+1:], "+"))
			if exponent < 0 {
				ret.precision += -exponent
			} else {
				ret.precision -= min(ret.precision, exponent)
			}
			ret.width -= len(a) - ei
			if exponent < 0 {
				if dp >= 0 {
					if ei == dp+1 {
						ret.width++
					}
				} else {
					ret.width++
				}
				exponent = -exponent
			} else {
				if dp >= 0 && ret.precision == 0 && fractionLen > 0 {
					ret.width--
				}
				exponent -= min(fractionLen, exponent)
			}
			ret.width += exponent
		}
	}
	return ret, 0, true
}

// txtPrintfSpec is one C printf conversion for a floating value.
type txtPrintfSpec struct {
	minus, plus, space, hash, zero bool
	width, prec                    int // prec -1: default
	verb                           byte
}

// txtSeqFormat checks a seq -f format as long_double_format does and
// splits it into prefix, conversion and suffix.
func txtSeqFormat(f string) (prefix string, spec txtPrintfSpec, suffix string, err error) {
	unpct := func(s string) string { return strings.ReplaceAll(s, "%%", "%") }
	i := 0
	for !(i < len(f) && f[i] == '%' && (i+1 >= len(f) || f[i+1] != '%')) {
		if i >= len(f) {
			return "", spec, "", fmt.Errorf("format %s has no %% directive", txtQuoteL(f))
		}
		if f[i] == '%' {
			i += 2
		} else {
			i++
		}
	}
	prefix = unpct(f[:i])
	i++
	spec.prec = -1
	for i < len(f) && strings.IndexByte("-+#0 '", f[i]) >= 0 {
		switch f[i] {
		case '-':
			spec.minus = true
		case '+':
			spec.plus = true
		case '#':
			spec.hash = true
		case '0':
			spec.zero = true
		case ' ':
			spec.space = true
		}
		i++
	}
	st := i
	for i < len(f) && txtIsDigit(f[i]) {
		i++
	}
	spec.width, _ = strconv.Atoi(f[st:i])
	if i < len(f) && f[i] == '.' {
		i++
		st = i
		for i < len(f) && txtIsDigit(f[i]) {
			i++
		}
		spec.prec, _ = strconv.Atoi(f[st:i])
	}
	if i < len(f) && f[i] == 'L' {
		i++
	}
	if i >= len(f) {
		return "", spec, "", fmt.Errorf("format %s ends in %%", txtQuoteL(f))
	}
	if strings.IndexByte("efgaEFGA", f[i]) < 0 {
		return "", spec, "", fmt.Errorf("format %s has unknown %%%c directive", txtQuoteL(f), f[i])
	}
	spec.verb = f[i]
	i++
	st = i
	for i < len(f) {
		if f[i] == '%' && (i+1 >= len(f) || f[i+1] != '%') {
			return "", spec, "", fmt.Errorf("format %s has too many %% directives", txtQuoteL(f))
		}
		if f[i] == '%' {
			i += 2
		} else {
			i++
		}
	}
	return prefix, spec, unpct(f[st:]), nil
}

// txtFormatFloat formats x as C's printf would with spec.
func txtFormatFloat(spec txtPrintfSpec, x *big.Float) string {
	neg := x.Signbit()
	ax := new(big.Float).Abs(x)
	upper := spec.verb >= 'A' && spec.verb <= 'Z'
	var body string
	zeroOK := spec.zero && !spec.minus
	prefixLen := 0
	if ax.IsInf() {
		body = "inf"
		zeroOK = false
	} else {
		prec := spec.prec
		switch spec.verb | 0x20 {
		case 'f':
			if prec < 0 {
				prec = 6
			}
			body = ax.Text('f', prec)
			if prec == 0 && spec.hash {
				body += "."
			}
		case 'e':
			if prec < 0 {
				prec = 6
			}
			body = ax.Text('e', prec)
			if prec == 0 && spec.hash {
				body = strings.Replace(body, "e", ".e", 1)
			}
		case 'g':
			if prec < 0 {
				prec = 6
			}
			if prec == 0 {
				prec = 1
			}
			exp := 0
			if ax.Sign() != 0 {
				t := ax.Text('e', prec-1)
				exp, _ = strconv.Atoi(t[strings.IndexByte(t, 'e')+1:])
			}
			if prec > exp && exp >= -4 {
				body = ax.Text('f', prec-1-exp)
			} else {
				body = ax.Text('e', prec-1)
			}
			if !spec.hash {
				mant, expPart := body, ""
				if i := strings.IndexByte(body, 'e'); i >= 0 {
					mant, expPart = body[:i], body[i:]
				}
				if strings.Contains(mant, ".") {
					mant = strings.TrimRight(mant, "0")
					mant = strings.TrimSuffix(mant, ".")
				}
				body = mant + expPart
			} else if !strings.Contains(body, ".") {
				if i := strings.IndexByte(body, 'e'); i >= 0 {
					body = body[:i] + "." + body[i:]
				} else {
					body += "."
				}
			}
		case 'a':
			body = txtHexFloatText(ax, prec, spec.hash)
			prefixLen = 2
		}
	}
	if upper {
		body = strings.ToUpper(body)
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case spec.plus:
		sign = "+"
	case spec.space:
		sign = " "
	}
	pad := spec.width - len(sign) - len(body)
	if pad <= 0 {
		return sign + body
	}
	switch {
	case spec.minus:
		return sign + body + strings.Repeat(" ", pad)
	case zeroOK:
		return sign + body[:prefixLen] + strings.Repeat("0", pad) + body[prefixLen:]
	}
	return strings.Repeat(" ", pad) + sign + body
}

// txtHexFloatText is glibc's %La of a non-negative long double: the
// leading hex digit holds the top four bits of the 64-bit mantissa.
func txtHexFloatText(x *big.Float, prec int, hash bool) string {
	if x.Sign() == 0 {
		s := "0x0"
		if prec > 0 {
			s += "." + strings.Repeat("0", prec)
		} else if hash {
			s += "."
		}
		return s + "p+0"
	}
	m := new(big.Float)
	exp := x.MantExp(m) // x = m * 2^exp, 0.5 <= m < 1
	mi, _ := new(big.Float).SetMantExp(m, 64).Int(nil)
	digits := fmt.Sprintf("%016x", mi) // 16 hex digits, the first 8..f
	e := exp - 4
	lead, frac := digits[:1], digits[1:]
	if prec >= 0 && prec < len(frac) {
		// Round the fraction to prec digits (half to even).
		v, _ := new(big.Int).SetString(digits, 16)
		shift := uint(4 * (len(frac) - prec))
		half := new(big.Int).Lsh(big.NewInt(1), shift-1)
		rem := new(big.Int).And(v, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), shift), big.NewInt(1)))
		v.Rsh(v, shift)
		if c := rem.Cmp(half); c > 0 || (c == 0 && v.Bit(0) == 1) {
			v.Add(v, big.NewInt(1))
		}
		s := fmt.Sprintf("%x", v)
		if len(s) > prec+1 {
			// The carry made the leading digit 0x10: renormalize.
			v.Rsh(v, 1)
			s = fmt.Sprintf("%x", v)
			e++
			if len(s) > prec+1 {
				s = s[:prec+1]
			}
		}
		lead, frac = s[:1], s[1:]
	} else if prec < 0 {
		frac = strings.TrimRight(frac, "0")
	} else {
		frac += strings.Repeat("0", prec-len(frac))
	}
	s := "0x" + lead
	if frac != "" || hash {
		s += "." + frac
	}
	if e >= 0 {
		return s + "p+" + strconv.Itoa(e)
	}
	return s + "p" + strconv.Itoa(e)
}

func txtAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !txtIsDigit(s[i]) {
			return false
		}
	}
	return true
}

func txtSeqMain(ctx context.Context, e *Env, args []string) int {
	// Options come first; an argument that looks like a negative number
	// ends them (getopt "+f:s:w").
	var optArgs []string
	i := 1
	for i < len(args) {
		a := args[i]
		if len(a) > 1 && a[0] == '-' && (a[1] == '.' || txtIsDigit(a[1])) {
			break
		}
		if a == "--" {
			i++
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		optArgs = append(optArgs, a)
		i++
		if len(a) >= 2 && a[1] != '-' {
			// a short option cluster: does its last option need a value?
			for j := 1; j < len(a); j++ {
				if a[j] == 'f' || a[j] == 's' {
					if j == len(a)-1 && i < len(args) {
						optArgs = append(optArgs, args[i])
						i++
					}
					break
				}
			}
		} else if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") {
			name := a[2:]
			if name != "" && (strings.HasPrefix("format", name) || strings.HasPrefix("separator", name)) && i < len(args) {
				optArgs = append(optArgs, args[i])
				i++
			}
		}
	}
	operands := args[i:]
	opts, extra, err := txtSeqSpec.parse(optArgs)
	if err != nil {
		return badUsage(e, "seq", err, 1)
	}
	operands = append(extra, operands...)
	format, hasFormat := "", false
	sep := "\n"
	equalWidth := false
	for _, o := range opts {
		switch o.name {
		case "f":
			format, hasFormat = o.value, true
		case "s":
			sep = o.value
		case "w":
			equalWidth = true
		}
	}
	if len(operands) < 1 {
		return badUsage(e, "seq", errors.New("missing operand"), 1)
	}
	if len(operands) > 3 {
		return badUsage(e, "seq", fmt.Errorf("extra operand %s", txtQuoteL(operands[3])), 1)
	}
	var prefix, suffix string
	var spec txtPrintfSpec
	if hasFormat {
		if prefix, spec, suffix, err = txtSeqFormat(format); err != nil {
			return fail(e, "seq", 1, "%s", err)
		}
		if equalWidth {
			return badUsage(e, "seq", errors.New("format string may not be specified when printing equal width strings"), 1)
		}
	}
	out := bufio.NewWriterSize(e.Stdout, 64<<10)
	finish := func(code int) int {
		if err := out.Flush(); err != nil {
			return txtWriteFail(e, "seq", err)
		}
		if ctx.Err() != nil {
			return 130
		}
		return code
	}
	n := len(operands)
	if txtAllDigits(operands[0]) && (n == 1 || txtAllDigits(operands[1])) &&
		(n < 3 || (operands[1] == "1" && txtAllDigits(operands[2]))) &&
		!equalWidth && !hasFormat && len(sep) == 1 {
		s1, s2 := "1", operands[n-1]
		if n > 1 {
			s1 = operands[0]
		}
		if txtSeqFast(ctx, out, s1, s2, sep) {
			return finish(0)
		}
	}
	first := txtSeqOperand{txtLong().SetInt64(1), 1, 0}
	step := txtSeqOperand{txtLong().SetInt64(1), 1, 0}
	last, code, ok := txtSeqScan(e, operands[0])
	if !ok {
		return code
	}
	if n > 1 {
		first = last
		if last, code, ok = txtSeqScan(e, operands[1]); !ok {
			return code
		}
		if n > 2 {
			step = last
			if step.value.Sign() == 0 {
				return badUsage(e, "seq", fmt.Errorf("invalid Zero increment value: %s", txtQuoteL(operands[1])), 1)
			}
			if last, code, ok = txtSeqScan(e, operands[2]); !ok {
				return code
			}
		}
	}
	if !first.value.IsInf() && first.precision == 0 && step.precision == 0 && last.precision == 0 &&
		first.value.Sign() >= 0 && step.value.Cmp(txtLong().SetInt64(1)) == 0 && last.value.Sign() >= 0 &&
		!equalWidth && !hasFormat && len(sep) == 1 {
		s1 := first.value.Text('f', 0)
		s2 := "inf"
		if !last.value.IsInf() {
			s2 = last.value.Text('f', 0)
		}
		if !strings.HasPrefix(s1, "-") && !strings.HasPrefix(s2, "-") && txtSeqFast(ctx, out, s1, s2, sep) {
			return finish(0)
		}
	}
	if !hasFormat {
		spec = txtPrintfSpec{prec: -1, verb: 'g'}
		prec := max(first.precision, step.precision)
		if prec != txtNoPrec && last.precision != txtNoPrec {
			spec = txtPrintfSpec{prec: prec, verb: 'f'}
			if equalWidth {
				fw := first.width + (prec - first.precision)
				lw := last.width + (prec - last.precision)
				if last.precision != 0 && prec == 0 {
					lw--
				}
				if last.precision == 0 && prec != 0 {
					lw++
				}
				if first.precision == 0 && prec != 0 {
					fw++
				}
				spec.width, spec.zero = max(fw, lw), true
			}
		}
	}
	txtSeqPrint(ctx, out, prefix, spec, suffix, sep, first.value, step.value, last.value)
	return finish(0)
}

func txtSeqPrint(ctx context.Context, out *bufio.Writer, prefix string, spec txtPrintfSpec, suffix, sep string, first, step, last *big.Float) {
	defer func() {
		// big.Float panics on NaN results (inf - inf); GNU would print
		// nan forever, which is no use: stop.
		if r := recover(); r != nil {
			if _, ok := r.(big.ErrNaN); !ok {
				panic(r)
			}
		}
	}()
	neg := step.Sign() < 0
	outOfRange := func(x *big.Float) bool {
		if neg {
			return x.Cmp(last) < 0
		}
		return last.Cmp(x) < 0
	}
	if outOfRange(first) {
		return
	}
	format := func(x *big.Float) string { return prefix + txtFormatFloat(spec, x) + suffix }
	x := first
	i := txtLong().SetInt64(1)
	one := txtLong().SetInt64(1)
	done := false
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return
		}
		x0 := x
		if _, err := out.WriteString(format(x)); err != nil {
			return
		}
		if done {
			break
		}
		x = txtLong().Mul(i, step)
		x = txtLong().Add(first, x)
		i = txtLong().Add(i, one)
		done = outOfRange(x)
		if done {
			// GNU compares the previous number's whole output with this
			// one's without its suffix.
			xs := txtFormatFloat(spec, x)
			v, _, ok := txtStrtold(xs)
			if !(ok && v != nil && v.Cmp(last) == 0 && format(x0) != prefix+xs) {
				break
			}
		}
		out.WriteString(sep)
	}
	out.WriteString("\n")
}

// txtSeqFast prints the integers from a to b (digit strings, or b
// "inf") exactly, as GNU's seq_fast does.
func txtSeqFast(ctx context.Context, out *bufio.Writer, a, b, sep string) bool {
	trim := func(s string) string {
		t := strings.TrimLeft(s, "0")
		if t == "" && s != "" {
			return "0"
		}
		return t
	}
	inf := b == "inf"
	a, b = trim(a), trim(b)
	cmp := func(p, q []byte) int {
		if len(p) != len(q) {
			return len(p) - len(q)
		}
		return strings.Compare(string(p), string(q))
	}
	p := []byte(a)
	q := []byte(b)
	if !inf && cmp(p, q) > 0 {
		return false
	}
	out.Write(p)
	for n := 0; inf || cmp(p, q) < 0; n++ {
		if n&4095 == 0 && ctx.Err() != nil {
			return true
		}
		out.WriteString(sep)
		// increment the decimal string
		k := len(p) - 1
		for k >= 0 && p[k] == '9' {
			p[k] = '0'
			k--
		}
		if k < 0 {
			p = append([]byte{'1'}, p...)
		} else {
			p[k]++
		}
		if _, err := out.Write(p); err != nil {
			return true
		}
	}
	out.WriteString("\n")
	return true
}
