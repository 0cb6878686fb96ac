package coreutils

// Shell patterns as fnmatch(3) matches them without flags (find -name,
// -path): "*" and "?" match any character, "/" and a leading "." too.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// filFnmatch reports whether name matches pattern; fold ignores case.
func filFnmatch(pattern, name string, fold bool) bool {
	if fold {
		pattern, name = filFoldPattern(pattern), strings.ToLower(name)
	}
	return filMatchFrom(pattern, name)
}

// filFoldPattern lowercases a pattern's literal characters and ranges.
func filFoldPattern(p string) string { return strings.ToLower(p) }

func filMatchFrom(p, s string) bool {
	// Iterative matching with backtracking on the last "*".
	var starP, starS = -1, -1
	pi, si := 0, 0
	for {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				starP, starS = pi, si
				continue
			case '?':
				if si < len(s) {
					_, n := utf8.DecodeRuneInString(s[si:])
					pi++
					si += n
					continue
				}
			case '[':
				if si < len(s) {
					r, n := utf8.DecodeRuneInString(s[si:])
					if ok, end, valid := filMatchClass(p, pi, r); valid {
						if ok {
							pi = end
							si += n
							continue
						}
					} else if s[si] == '[' {
						// An unclosed "[" is literal.
						pi++
						si++
						continue
					}
				}
			case '\\':
				if pi+1 < len(p) {
					if si < len(s) && s[si] == p[pi+1] {
						pi += 2
						si++
						continue
					}
				} else if si < len(s) && s[si] == '\\' {
					pi++
					si++
					continue
				}
			default:
				if si < len(s) && s[si] == p[pi] {
					pi++
					si++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starP < 0 || starS >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		pi, si = starP, starS
	}
}

// filMatchClass matches r against the bracket expression at p[i] ("[");
// it returns whether it matched, the index after the "]", and whether
// the expression is well formed.
func filMatchClass(p string, i int, r rune) (matched bool, end int, valid bool) {
	j := i + 1
	negate := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		negate = true
		j++
	}
	first := true
	for j < len(p) {
		if p[j] == ']' && !first {
			return matched != negate, j + 1, true
		}
		first = false
		if p[j] == '[' && j+1 < len(p) && p[j+1] == ':' {
			if k := strings.Index(p[j+2:], ":]"); k >= 0 {
				if filCharClass(p[j+2:j+2+k], r) {
					matched = true
				}
				j += k + 4
				continue
			}
		}
		lo, n := utf8.DecodeRuneInString(p[j:])
		if p[j] == '\\' && j+1 < len(p) {
			lo, n = utf8.DecodeRuneInString(p[j+1:])
			n++
		}
		j += n
		hi := lo
		if j+1 < len(p) && p[j] == '-' && p[j+1] != ']' {
			var m int
			hi, m = utf8.DecodeRuneInString(p[j+1:])
			if p[j+1] == '\\' && j+2 < len(p) {
				hi, m = utf8.DecodeRuneInString(p[j+2:])
				m++
			}
			j += 1 + m
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return false, 0, false
}

func filCharClass(name string, r rune) bool {
	switch name {
	case "alpha":
		return unicode.IsLetter(r)
	case "digit":
		return r >= '0' && r <= '9'
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	case "upper":
		return unicode.IsUpper(r)
	case "lower":
		return unicode.IsLower(r)
	case "space":
		return unicode.IsSpace(r)
	case "blank":
		return r == ' ' || r == '\t'
	case "punct":
		return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r)
	case "print":
		return unicode.IsPrint(r)
	case "graph":
		return unicode.IsPrint(r) && r != ' '
	case "cntrl":
		return unicode.IsControl(r)
	case "xdigit":
		return strings.ContainsRune("0123456789abcdefABCDEF", r)
	}
	return false
}
