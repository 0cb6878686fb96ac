package coreutils

// bc -l's math library: s, c, a, l and e, computed in fixed point with
// guard digits past the scale and then truncated to it, as GNU's
// library does (its own functions are written in bc; these are series
// of our own: Taylor's for e, s and a after halving the argument, and
// atanh's for l after square roots bring the argument near 1).

import "math/big"

var bcMathlib = map[string]func(*bcState, bcNum) bcNum{
	"e": func(st *bcState, x bcNum) bcNum { return fxRun(st, x, fxExp) },
	"l": func(st *bcState, x bcNum) bcNum {
		if x.v.Sign() <= 0 {
			panic(bcError("bc: l(x) needs x > 0"))
		}
		return fxRun(st, x, fxLn)
	},
	"s": func(st *bcState, x bcNum) bcNum { return fxRun(st, x, fxSin) },
	"c": func(st *bcState, x bcNum) bcNum {
		return fxRun(st, x, func(f fixed, v *big.Int) *big.Int { return fxSin(f, new(big.Int).Add(v, new(big.Int).Rsh(fxPi(f), 1))) })
	},
	"a": func(st *bcState, x bcNum) bcNum { return fxRun(st, x, fxAtan) },
}

// fixed is a precision: values are v / 10^p.
type fixed struct {
	p   int
	one *big.Int
}

func fxRun(st *bcState, x bcNum, f func(fixed, *big.Int) *big.Int) bcNum {
	p := st.scale + 20 + len(new(big.Int).Abs(x.rescale(0).v).String())
	fx := fixed{p: p, one: pow10(p)}
	r := f(fx, x.rescale(p).v)
	return bcNum{v: r, scale: p}.rescale(st.scale)
}

func (f fixed) mul(a, b *big.Int) *big.Int {
	r := new(big.Int).Mul(a, b)
	return r.Quo(r, f.one)
}

func (f fixed) div(a, b *big.Int) *big.Int {
	r := new(big.Int).Mul(a, f.one)
	return r.Quo(r, b)
}

func (f fixed) sqrt(a *big.Int) *big.Int {
	return new(big.Int).Sqrt(new(big.Int).Mul(a, f.one))
}

func fxExp(f fixed, x *big.Int) *big.Int {
	if x.Sign() < 0 {
		return f.div(f.one, fxExp(f, new(big.Int).Neg(x)))
	}
	half := new(big.Int).Rsh(f.one, 1)
	k := 0
	x = new(big.Int).Set(x)
	for x.Cmp(half) > 0 {
		x.Rsh(x, 1)
		k++
	}
	sum := new(big.Int).Set(f.one)
	term := new(big.Int).Set(f.one)
	for i := int64(1); term.Sign() != 0; i++ {
		term = f.mul(term, x)
		term.Quo(term, big.NewInt(i))
		sum.Add(sum, term)
	}
	for ; k > 0; k-- {
		sum = f.mul(sum, sum)
	}
	return sum
}

func fxLn(f fixed, x *big.Int) *big.Int {
	two := new(big.Int).Lsh(f.one, 1)
	half := new(big.Int).Rsh(f.one, 1)
	k := 0
	for x.Cmp(two) > 0 || x.Cmp(half) < 0 {
		x = f.sqrt(x)
		k++
	}
	y := f.div(new(big.Int).Sub(x, f.one), new(big.Int).Add(x, f.one))
	y2 := f.mul(y, y)
	sum := new(big.Int).Set(y)
	pow := new(big.Int).Set(y)
	for i := int64(3); ; i += 2 {
		pow = f.mul(pow, y2)
		t := new(big.Int).Quo(pow, big.NewInt(i))
		if t.Sign() == 0 {
			break
		}
		sum.Add(sum, t)
	}
	return sum.Lsh(sum, uint(k+1))
}

func fxAtan(f fixed, x *big.Int) *big.Int {
	if x.Sign() < 0 {
		return new(big.Int).Neg(fxAtan(f, new(big.Int).Neg(x)))
	}
	if x.Cmp(f.one) > 0 {
		return new(big.Int).Sub(new(big.Int).Rsh(fxPi(f), 1), fxAtan(f, f.div(f.one, x)))
	}
	// Halve the angle twice: atan(x) = 2 atan(x / (1 + sqrt(1 + x²))).
	for i := 0; i < 2; i++ {
		x = f.div(x, new(big.Int).Add(f.one, f.sqrt(new(big.Int).Add(f.one, f.mul(x, x)))))
	}
	x2 := f.mul(x, x)
	sum := new(big.Int).Set(x)
	pow := new(big.Int).Set(x)
	for i := int64(3); ; i += 2 {
		pow = f.mul(pow, x2)
		t := new(big.Int).Quo(pow, big.NewInt(i))
		if t.Sign() == 0 {
			break
		}
		if i%4 == 3 {
			sum.Sub(sum, t)
		} else {
			sum.Add(sum, t)
		}
	}
	return sum.Lsh(sum, 2)
}

// fxPi is 4 atan(1), from the halved series (atan(1) itself would recurse
// through x > 1 only for larger x).
func fxPi(f fixed) *big.Int {
	return new(big.Int).Lsh(fxAtan(f, f.one), 2)
}

func fxSin(f fixed, x *big.Int) *big.Int {
	pi := fxPi(f)
	twoPi := new(big.Int).Lsh(pi, 1)
	x = new(big.Int).Rem(x, twoPi)
	if x.Cmp(pi) > 0 {
		x.Sub(x, twoPi)
	} else if new(big.Int).Neg(x).Cmp(pi) > 0 {
		x.Add(x, twoPi)
	}
	x2 := f.mul(x, x)
	sum := new(big.Int).Set(x)
	term := new(big.Int).Set(x)
	for i := int64(2); term.Sign() != 0; i += 2 {
		term = f.mul(term, x2)
		term.Quo(term, big.NewInt(i*(i+1)))
		term.Neg(term)
		sum.Add(sum, term)
	}
	return sum
}
