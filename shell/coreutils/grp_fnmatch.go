package coreutils

// fnmatch(3) without flags (no FNM_PATHNAME, no FNM_PERIOD), as grep's
// --include/--exclude use it through gnulib's exclude module.

import "unicode"

// grpFnmatch reports whether name matches the shell pattern pat.
func grpFnmatch(pat, name string) bool {
	return grpFnmatchRunes([]rune(pat), []rune(name))
}

func grpFnmatchRunes(p, s []rune) bool {
	// Iterative matching with backtracking on the last '*'.
	pi, si := 0, 0
	starP, starS := -1, -1
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				starP, starS = pi, si
				continue
			case '?':
				pi++
				si++
				continue
			case '[':
				if ok, next, valid := grpFnBracket(p, pi, s[si]); valid {
					if ok {
						pi = next
						si++
						continue
					}
				} else if s[si] == '[' {
					pi++
					si++
					continue
				}
			case '\\':
				if pi+1 < len(p) {
					if p[pi+1] == s[si] {
						pi += 2
						si++
						continue
					}
				} else if s[si] == '\\' {
					pi++
					si++
					continue
				}
			default:
				if p[pi] == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// grpFnBracket matches c against the bracket expression at p[i] ('[').
// valid is false when the bracket is not closed (then '[' is literal).
func grpFnBracket(p []rune, i int, c rune) (matched bool, next int, valid bool) {
	j := i + 1
	neg := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		neg = true
		j++
	}
	first := true
	for {
		if j >= len(p) {
			return false, 0, false
		}
		if p[j] == ']' && !first {
			j++
			break
		}
		first = false
		if p[j] == '[' && j+1 < len(p) && p[j+1] == ':' {
			end := -1
			for k := j + 2; k+1 < len(p); k++ {
				if p[k] == ':' && p[k+1] == ']' {
					end = k
					break
				}
			}
			if end >= 0 {
				if grpFnClass(string(p[j+2:end]), c) {
					matched = true
				}
				j = end + 2
				continue
			}
		}
		lo := p[j]
		if lo == '\\' && j+1 < len(p) {
			j++
			lo = p[j]
		}
		j++
		hi := lo
		if j+1 < len(p) && p[j] == '-' && p[j+1] != ']' {
			hi = p[j+1]
			j += 2
			if hi == '\\' && j < len(p) {
				hi = p[j]
				j++
			}
		}
		if lo <= c && c <= hi {
			matched = true
		}
	}
	return matched != neg, j, true
}

func grpFnClass(name string, c rune) bool {
	switch name {
	case "alpha":
		return unicode.IsLetter(c)
	case "digit":
		return c >= '0' && c <= '9'
	case "alnum":
		return unicode.IsLetter(c) || (c >= '0' && c <= '9')
	case "upper":
		return unicode.IsUpper(c)
	case "lower":
		return unicode.IsLower(c)
	case "space":
		return unicode.IsSpace(c)
	case "blank":
		return c == ' ' || c == '\t'
	case "punct":
		return unicode.IsPunct(c) || unicode.IsSymbol(c)
	case "print":
		return unicode.IsPrint(c)
	case "graph":
		return unicode.IsGraphic(c) && c != ' '
	case "cntrl":
		return unicode.IsControl(c)
	case "xdigit":
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	}
	return false
}
