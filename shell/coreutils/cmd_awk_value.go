package coreutils

// awk values: numbers, strings, "strnums" (strings from input that
// compare as numbers when they look like one) and the uninitialized
// value, with awk's conversions between them.

import (
	"math"
	"strconv"
	"strings"
)

type awkKind uint8

const (
	awkUninit awkKind = iota // both "" and 0
	awkNum
	awkStr
	awkStrnum // from input (fields, getline, ARGV, ENVIRON, -v, split)
)

type awkValue struct {
	k awkKind
	s string
	n float64
}

func awkNumV(n float64) awkValue { return awkValue{k: awkNum, n: n} }
func awkStrV(s string) awkValue  { return awkValue{k: awkStr, s: s} }
func awkInputV(s string) awkValue {
	return awkValue{k: awkStrnum, s: s}
}

func awkBoolV(b bool) awkValue {
	if b {
		return awkValue{k: awkNum, n: 1}
	}
	return awkValue{k: awkNum}
}

// awkIsBlank is awk's space for numbers: leading and trailing blanks
// around a numeric string.
func awkIsBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func awkIsDigit(c byte) bool { return c >= '0' && c <= '9' }

// awkScanNum finds the numeric prefix of s after leading blanks: s[start:end]
// (end == start when there is none).
func awkScanNum(s string) (start, end int) {
	i := 0
	for i < len(s) && awkIsBlank(s[i]) {
		i++
	}
	start = i
	j := i
	signed := false
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
		signed = true
	}
	digits := 0
	for j < len(s) && awkIsDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && awkIsDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		// gawk: only "+inf", "-inf", "+nan", "-nan" (any case) are special.
		if signed && len(s)-(i+1) >= 3 {
			w := strings.ToLower(s[i+1 : i+4])
			if w == "inf" || w == "nan" {
				e := i + 4
				if w == "inf" && len(s) >= i+9 && strings.EqualFold(s[i+1:i+9], "infinity") {
					e = i + 9
				}
				return start, e
			}
		}
		return start, start
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && awkIsDigit(s[k]) {
			for k < len(s) && awkIsDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return start, j
}

// awkParseNum converts a numeric text found by awkScanNum.
func awkParseNum(t string) float64 {
	if t == "" {
		return 0
	}
	if c := t[len(t)-1]; c == 'f' || c == 'F' || c == 'n' || c == 'N' || c == 'y' || c == 'Y' {
		neg := t[0] == '-'
		var v float64
		if strings.EqualFold(t[1:4], "nan") {
			v = math.NaN()
			if neg {
				v = math.Copysign(v, -1)
			}
			return v
		}
		if neg {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v
		}
		return 0
	}
	return v
}

// awkStrToNum is awk's string to number conversion: the longest numeric
// prefix, else 0.
func awkStrToNum(s string) float64 {
	// Fast path: a plain small integer.
	if n := len(s); n > 0 && n < 16 {
		v := 0
		i := 0
		neg := false
		if s[0] == '-' {
			neg = true
			i = 1
		}
		if i < n {
			j := i
			for j < n && awkIsDigit(s[j]) {
				v = v*10 + int(s[j]-'0')
				j++
			}
			if j == n {
				if neg {
					return float64(-v)
				}
				return float64(v)
			}
		}
	}
	st, en := awkScanNum(s)
	return awkParseNum(s[st:en])
}

// awkLooksNumeric reports whether all of s (but blanks) is a number, and
// its value.
func awkLooksNumeric(s string) (float64, bool) {
	st, en := awkScanNum(s)
	if en == st {
		return 0, false
	}
	for i := en; i < len(s); i++ {
		if !awkIsBlank(s[i]) {
			return 0, false
		}
	}
	return awkParseNum(s[st:en]), true
}

// awkNaNText is how C's printf writes a NaN or an infinity.
func awkNaNText(n float64) string {
	switch {
	case math.IsInf(n, 1):
		return "inf"
	case math.IsInf(n, -1):
		return "-inf"
	case math.Signbit(n):
		return "-nan"
	}
	return "nan"
}

// awkFmtNum converts a number to a string: integral values as integers,
// others with format (CONVFMT or OFMT).
func awkFmtNum(n float64, format string) string {
	if n == math.Trunc(n) {
		if math.IsInf(n, 0) {
			return awkNaNText(n)
		}
		if n > -1e18 && n < 1e18 {
			return strconv.FormatInt(int64(n), 10)
		}
		return strconv.FormatFloat(n, 'f', 0, 64)
	}
	if math.IsNaN(n) {
		return awkNaNText(n)
	}
	if format == "%.6g" {
		return strconv.FormatFloat(n, 'g', 6, 64)
	}
	s, err := awkFormat(format, []awkValue{awkNumV(n)}, "%.6g")
	if err != nil {
		return strconv.FormatFloat(n, 'g', 6, 64)
	}
	return s
}
