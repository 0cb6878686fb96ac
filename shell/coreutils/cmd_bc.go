package coreutils

// bc: GNU bc's arithmetic on arbitrary-precision decimals, for the
// scripts agents write (`echo "scale=2; 10/3" | bc`, `bc -l <<< 's(1)'`,
// `echo "$a > $b" | bc`, `echo "obase=16; 255" | bc`). Numbers are
// big.Int values with a decimal scale; the result scales follow bc's
// rules (POSIX bc, "Expressions"). Expressions, assignments (scale, ibase,
// obase, last, variables, += and friends, ++/--), comparisons, !, && and
// ||, strings, sqrt, length, scale, and with -l the math library (s, c,
// a, l, e, j is not there) are supported; if, while, for, define,
// arrays and read are refused with a message that says so.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

func init() { register("bc", txtBcMain) }

var txtBcSpec = optSpec{short: "lqsw", long: map[string]bool{"mathlib": false, "quiet": false, "standard": false, "warn": false},
	alias: map[string]string{"mathlib": "l", "quiet": "q", "standard": "s", "warn": "w"}}

func txtBcMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "bc", &txtBcSpec, args, 1)
	if !ok {
		return code
	}
	st := &bcState{vars: map[string]bcNum{}, ibase: 10, obase: 10, out: bufio.NewWriter(e.Stdout)}
	defer st.out.Flush()
	for _, o := range opts {
		if o.name == "l" {
			st.mathlib = true
			st.scale = 20
		}
	}
	var src strings.Builder
	for _, name := range operands {
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			fmt.Fprintf(e.Stderr, "File %s is unavailable.\n", name)
			return 1
		}
		io.Copy(&src, io.LimitReader(r, 16<<20))
		r.Close()
	}
	// Then standard input, as GNU reads it after the files.
	b, _ := io.ReadAll(io.LimitReader(&txtCtxReader{ctx, txtStdin(e)}, 16<<20))
	src.Write(b)
	status := 0
	for _, line := range bcStatements(src.String()) {
		if ctx.Err() != nil {
			return 1
		}
		quit, err := st.statement(line)
		if err != nil {
			st.out.Flush()
			fmt.Fprintf(e.Stderr, "%v\n", err)
			status = 1
		}
		if quit {
			break
		}
	}
	return status
}

// bcStatements splits a program into statements: at newlines and
// semicolons outside strings, with comments and backslash-newlines gone.
func bcStatements(src string) []string {
	var out []string
	var cur strings.Builder
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inStr:
			cur.WriteByte(c)
			if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			cur.WriteByte(c)
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				i = len(src)
			} else {
				i += end + 3
			}
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			out = append(out, cur.String())
			cur.Reset()
		case c == ';' || c == '\n':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, cur.String())
}

// bcNum is v / 10^scale.
type bcNum struct {
	v     *big.Int
	scale int
}

func bcInt(n int64) bcNum { return bcNum{v: big.NewInt(n)} }

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// rescale gives n at scale s, truncating toward zero.
func (n bcNum) rescale(s int) bcNum {
	switch {
	case s == n.scale:
		return n
	case s > n.scale:
		return bcNum{v: new(big.Int).Mul(n.v, pow10(s-n.scale)), scale: s}
	}
	return bcNum{v: new(big.Int).Quo(n.v, pow10(n.scale-s)), scale: s}
}

func (n bcNum) isZero() bool { return n.v.Sign() == 0 }

func (n bcNum) cmp(m bcNum) int {
	s := max(n.scale, m.scale)
	return n.rescale(s).v.Cmp(m.rescale(s).v)
}

func bcBool(b bool) bcNum {
	if b {
		return bcInt(1)
	}
	return bcInt(0)
}

type bcState struct {
	vars         map[string]bcNum
	scale        int
	ibase, obase int
	last         bcNum
	mathlib      bool
	out          *bufio.Writer
}

var errBcQuit = errors.New("quit")

// statement runs one statement: it prints an expression's value unless
// the statement is an assignment.
func (st *bcState) statement(src string) (quit bool, err error) {
	p := &bcParser{st: st, toks: bcLex(src)}
	if len(p.toks) == 0 {
		return false, nil
	}
	if t := p.toks[0]; t.kind == 'w' {
		switch t.s {
		case "quit":
			return true, nil
		case "if", "while", "for", "define", "read", "auto", "return", "break", "continue", "halt", "print":
			return false, fmt.Errorf("bc: %s is not supported here (only expressions and assignments)", t.s)
		}
	}
	if p.toks[0].kind == 's' && len(p.toks) == 1 {
		st.out.WriteString(bcUnescape(p.toks[0].s))
		return false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(bcError)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	v, assign := p.expr()
	if p.i < len(p.toks) {
		return false, bcError(fmt.Sprintf("(standard_in) 1: syntax error near %q", p.toks[p.i].s))
	}
	if !assign {
		st.print(v)
		st.last = v
	}
	return false, nil
}

type bcError string

func (e bcError) Error() string { return string(e) }

func bcUnescape(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`) }

// print writes v in obase, with bc's 70-column lines.
func (st *bcState) print(v bcNum) {
	s := st.format(v)
	const width = 70 // GNU's BC_LINE_LENGTH: 68 characters, a backslash, a newline
	for len(s) > width-1 {
		st.out.WriteString(s[:width-2] + "\\\n")
		s = s[width-2:]
	}
	st.out.WriteString(s + "\n")
}

func (st *bcState) format(v bcNum) string {
	if v.isZero() {
		return "0"
	}
	neg := v.v.Sign() < 0
	abs := new(big.Int).Abs(v.v)
	intPart, frac := new(big.Int).QuoRem(abs, pow10(v.scale), new(big.Int))
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if st.obase == 10 {
		if intPart.Sign() != 0 || v.scale == 0 {
			b.WriteString(intPart.String())
		}
		if v.scale > 0 {
			fs := frac.String()
			b.WriteString("." + strings.Repeat("0", v.scale-len(fs)) + fs)
		}
		return b.String()
	}
	digits := func(d int64) string {
		if st.obase <= 16 {
			return string("0123456789ABCDEF"[d])
		}
		return fmt.Sprintf(" %0*d", len(fmt.Sprint(st.obase-1)), d)
	}
	if intPart.Sign() == 0 {
		if v.scale == 0 {
			b.WriteString("0")
		}
	} else {
		var ds []string
		base := big.NewInt(int64(st.obase))
		for n := new(big.Int).Set(intPart); n.Sign() > 0; {
			var m big.Int
			n.QuoRem(n, base, &m)
			ds = append(ds, digits(m.Int64()))
		}
		for i := len(ds) - 1; i >= 0; i-- {
			b.WriteString(ds[i])
		}
	}
	if v.scale > 0 {
		b.WriteByte('.')
		den := pow10(v.scale)
		f := new(big.Int).Set(frac)
		// As many digits as make the base's precision reach the scale.
		for prec := big.NewInt(1); prec.Cmp(den) < 0; prec.Mul(prec, big.NewInt(int64(st.obase))) {
			f.Mul(f, big.NewInt(int64(st.obase)))
			var d big.Int
			d.QuoRem(f, den, f)
			b.WriteString(digits(d.Int64()))
		}
	}
	return b.String()
}

// The lexer: numbers (n), names (w), strings (s), operators (o).
type bcTok struct {
	kind byte
	s    string
}

func bcLex(src string) []bcTok {
	var toks []bcTok
	ops := []string{"^=", "*=", "/=", "%=", "+=", "-=", "==", "<=", ">=", "!=", "&&", "||", "++", "--", "+", "-", "*", "/", "%", "^", "=", "<", ">", "!", "(", ")", ",", "{", "}", "[", "]"}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c == '.':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] >= 'A' && src[j] <= 'Z' || src[j] == '.') {
				j++
			}
			toks = append(toks, bcTok{'n', src[i:j]})
			i = j
		case c >= 'a' && c <= 'z' || c == '_':
			j := i
			for j < len(src) && (src[j] >= 'a' && src[j] <= 'z' || src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
				j++
			}
			toks = append(toks, bcTok{'w', src[i:j]})
			i = j
		case c == '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 { // unterminated: the rest
				toks = append(toks, bcTok{'s', src[i:]})
				i = len(src)
				continue
			}
			toks = append(toks, bcTok{'s', src[i : i+j+2]})
			i += j + 2
		default:
			op := ""
			for _, o := range ops {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				op = string(c)
			}
			toks = append(toks, bcTok{'o', op})
			i += len(op)
		}
	}
	return toks
}

// The parser evaluates as it goes (no functions or loops to defer).
type bcParser struct {
	st   *bcState
	toks []bcTok
	i    int
}

func (p *bcParser) peek() bcTok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return bcTok{}
}

func (p *bcParser) accept(op string) bool {
	if t := p.peek(); t.kind == 'o' && t.s == op {
		p.i++
		return true
	}
	return false
}

func (p *bcParser) fail() {
	t := p.peek()
	if t.kind == 0 {
		panic(bcError("(standard_in) 1: syntax error: unexpected end"))
	}
	panic(bcError(fmt.Sprintf("(standard_in) 1: syntax error near %q", t.s)))
}

// expr is an assignment or an || expression; assign reports whether the
// statement assigned (and so prints nothing).
func (p *bcParser) expr() (bcNum, bool) {
	if t := p.peek(); t.kind == 'w' && p.i+1 < len(p.toks) {
		if n := p.toks[p.i+1]; n.kind == 'o' && (n.s == "=" || len(n.s) == 2 && n.s[1] == '=' && strings.Contains("+-*/%^", n.s[:1])) {
			p.i += 2
			v, _ := p.expr()
			if n.s != "=" {
				v = p.binary(n.s[:1], p.st.get(t.s), v)
			}
			p.st.set(t.s, v)
			return v, true
		}
	}
	return p.or(), false
}

func (p *bcParser) or() bcNum {
	v := p.and()
	for p.accept("||") {
		w := p.and()
		v = bcBool(!v.isZero() || !w.isZero())
	}
	return v
}

func (p *bcParser) and() bcNum {
	v := p.not()
	for p.accept("&&") {
		w := p.not()
		v = bcBool(!v.isZero() && !w.isZero())
	}
	return v
}

func (p *bcParser) not() bcNum {
	if p.accept("!") {
		return bcBool(p.not().isZero())
	}
	return p.rel()
}

func (p *bcParser) rel() bcNum {
	v := p.sum()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if p.accept(op) {
			c := v.cmp(p.sum())
			switch op {
			case "==":
				return bcBool(c == 0)
			case "!=":
				return bcBool(c != 0)
			case "<=":
				return bcBool(c <= 0)
			case ">=":
				return bcBool(c >= 0)
			case "<":
				return bcBool(c < 0)
			}
			return bcBool(c > 0)
		}
	}
	return v
}

func (p *bcParser) sum() bcNum {
	v := p.product()
	for {
		switch {
		case p.accept("+"):
			v = p.binary("+", v, p.product())
		case p.accept("-"):
			v = p.binary("-", v, p.product())
		default:
			return v
		}
	}
}

func (p *bcParser) product() bcNum {
	v := p.power()
	for {
		switch {
		case p.accept("*"):
			v = p.binary("*", v, p.power())
		case p.accept("/"):
			v = p.binary("/", v, p.power())
		case p.accept("%"):
			v = p.binary("%", v, p.power())
		default:
			return v
		}
	}
}

// power is right-associative and binds tighter than unary minus's
// operand: -2^2 is 4 in bc (unary minus binds tighter).
func (p *bcParser) power() bcNum {
	v := p.unary()
	if p.accept("^") {
		return p.binary("^", v, p.power())
	}
	return v
}

func (p *bcParser) unary() bcNum {
	if p.accept("-") {
		v := p.unary()
		return bcNum{v: new(big.Int).Neg(v.v), scale: v.scale}
	}
	if p.accept("+") {
		return p.unary()
	}
	if p.accept("++") || p.accept("--") {
		op := p.toks[p.i-1].s
		t := p.peek()
		if t.kind != 'w' {
			p.fail()
		}
		p.i++
		v := p.binary(op[:1], p.st.get(t.s), bcInt(1))
		p.st.set(t.s, v)
		return v
	}
	return p.postfix()
}

func (p *bcParser) postfix() bcNum {
	t := p.peek()
	if t.kind == 'w' && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 'o' && (p.toks[p.i+1].s == "++" || p.toks[p.i+1].s == "--") {
		p.i += 2
		v := p.st.get(t.s)
		p.st.set(t.s, p.binary(p.toks[p.i-1].s[:1], v, bcInt(1)))
		return v
	}
	return p.primary()
}

func (p *bcParser) primary() bcNum {
	t := p.peek()
	switch t.kind {
	case 'n':
		p.i++
		return p.st.number(t.s)
	case 'w':
		p.i++
		if p.accept("(") {
			var args []bcNum
			if !p.accept(")") {
				for {
					v, _ := p.expr()
					args = append(args, v)
					if p.accept(")") {
						break
					}
					if !p.accept(",") {
						p.fail()
					}
				}
			}
			return p.st.call(t.s, args)
		}
		if p.accept("[") {
			panic(bcError("bc: arrays are not supported here"))
		}
		return p.st.get(t.s)
	case 'o':
		if p.accept("(") {
			v, _ := p.expr()
			if !p.accept(")") {
				p.fail()
			}
			return v
		}
	}
	p.fail()
	return bcNum{}
}

func (st *bcState) get(name string) bcNum {
	switch name {
	case "scale":
		return bcInt(int64(st.scale))
	case "ibase":
		return bcInt(int64(st.ibase))
	case "obase":
		return bcInt(int64(st.obase))
	case "last":
		if st.last.v == nil {
			return bcInt(0)
		}
		return st.last
	}
	if v, ok := st.vars[name]; ok {
		return v
	}
	return bcInt(0)
}

func (st *bcState) set(name string, v bcNum) {
	n := v.rescale(0).v
	switch name {
	case "scale":
		if n.Sign() < 0 || n.Cmp(big.NewInt(100_000)) > 0 {
			panic(bcError("bc: scale out of range"))
		}
		st.scale = int(n.Int64())
	case "ibase":
		if n.Cmp(big.NewInt(2)) < 0 || n.Cmp(big.NewInt(16)) > 0 {
			panic(bcError("bc: ibase out of range (2 to 16)"))
		}
		st.ibase = int(n.Int64())
	case "obase":
		if n.Cmp(big.NewInt(2)) < 0 || n.Cmp(big.NewInt(999)) > 0 {
			panic(bcError("bc: obase out of range (2 to 999)"))
		}
		st.obase = int(n.Int64())
	case "last":
		st.last = v
	default:
		st.vars[name] = v
	}
}

// number reads a constant in ibase.
func (st *bcState) number(s string) bcNum {
	intS, fracS, _ := strings.Cut(s, ".")
	base := big.NewInt(int64(st.ibase))
	v := new(big.Int)
	digit := func(c byte) int64 {
		d := int64(c - '0')
		if c >= 'A' {
			d = int64(c-'A') + 10
		}
		if d >= int64(st.ibase) && len(s) > 1 {
			d = int64(st.ibase) - 1 // as bc: a digit past the base is the base's largest
		}
		return d
	}
	for i := 0; i < len(intS); i++ {
		v.Mul(v, base)
		v.Add(v, big.NewInt(digit(intS[i])))
	}
	n := bcNum{v: v}
	if fracS == "" {
		return n
	}
	scale := len(fracS)
	num := new(big.Int)
	den := big.NewInt(1)
	for i := 0; i < len(fracS); i++ {
		num.Mul(num, base)
		num.Add(num, big.NewInt(digit(fracS[i])))
		den.Mul(den, base)
	}
	f := new(big.Int).Quo(new(big.Int).Mul(num, pow10(scale)), den)
	return bcNum{v: new(big.Int).Add(new(big.Int).Mul(v, pow10(scale)), f), scale: scale}
}

// binary applies op with bc's result scales.
func (p *bcParser) binary(op string, a, b bcNum) bcNum {
	st := p.st
	switch op {
	case "+", "-":
		s := max(a.scale, b.scale)
		x, y := a.rescale(s).v, b.rescale(s).v
		if op == "+" {
			return bcNum{v: new(big.Int).Add(x, y), scale: s}
		}
		return bcNum{v: new(big.Int).Sub(x, y), scale: s}
	case "*":
		bcCheckSize(a.v.BitLen() + b.v.BitLen())
		full := bcNum{v: new(big.Int).Mul(a.v, b.v), scale: a.scale + b.scale}
		return full.rescale(min(full.scale, max(st.scale, a.scale, b.scale)))
	case "/":
		return st.div(a, b, st.scale)
	case "%":
		if b.isZero() {
			panic(bcError("Runtime error (func=(main), adr=0): Modulo by zero"))
		}
		q := st.div(a, b, st.scale)
		s := max(st.scale+b.scale, a.scale)
		prod := bcNum{v: new(big.Int).Mul(q.v, b.v), scale: q.scale + b.scale}
		return p.binary("-", a.rescale(s), prod.rescale(s))
	case "^":
		e := b.rescale(0).v
		if !e.IsInt64() || e.Int64() > 1<<20 || e.Int64() < -(1<<20) {
			panic(bcError("bc: exponent too large"))
		}
		n := e.Int64()
		bcCheckSize(a.v.BitLen() * int(max(n, -n)))
		if n < 0 {
			r := st.pow(a, -n, max(st.scale, a.scale))
			return st.div(bcInt(1), r, st.scale)
		}
		r := st.pow(a, n, 0)
		return r.rescale(min(a.scale*int(n), max(st.scale, a.scale)))
	}
	panic(bcError("bc: unknown operator " + op))
}

// bcMaxBits bounds a result (about ten million digits), so that a
// script cannot make bc take the shell's memory in one expression.
const bcMaxBits = 1 << 25

func bcCheckSize(bits int) {
	if bits > bcMaxBits {
		panic(bcError("bc: number too large (over ten million digits)"))
	}
}

func (st *bcState) pow(a bcNum, n int64, _ int) bcNum {
	return bcNum{v: new(big.Int).Exp(a.v, big.NewInt(n), nil), scale: a.scale * int(n)}
}

func (st *bcState) div(a, b bcNum, scale int) bcNum {
	if b.isZero() {
		panic(bcError("Runtime error (func=(main), adr=0): Divide by zero"))
	}
	num := new(big.Int).Mul(a.v, pow10(scale+b.scale))
	den := new(big.Int).Mul(b.v, pow10(a.scale))
	return bcNum{v: num.Quo(num, den), scale: scale}
}

func (st *bcState) call(name string, args []bcNum) bcNum {
	one := func() bcNum {
		if len(args) != 1 {
			panic(bcError(fmt.Sprintf("bc: %s takes one argument", name)))
		}
		return args[0]
	}
	switch name {
	case "sqrt":
		x := one()
		if x.v.Sign() < 0 {
			panic(bcError("Runtime error (func=(main), adr=0): Square root of a negative number"))
		}
		s := max(st.scale, x.scale)
		r := new(big.Int).Sqrt(x.rescale(2 * s).v)
		return bcNum{v: r, scale: s}
	case "length":
		x := one()
		d := len(new(big.Int).Abs(x.v).String())
		if x.isZero() {
			d = max(1, x.scale)
		}
		return bcInt(int64(max(d, x.scale)))
	case "scale":
		return bcInt(int64(one().scale))
	}
	if st.mathlib {
		x := one()
		if f, ok := bcMathlib[name]; ok {
			return f(st, x)
		}
	}
	panic(bcError(fmt.Sprintf("bc: function %s is not defined", name)))
}
