package coreutils

// Date strings of touch -d (a subset of GNU's parse_datetime) and
// touch -t stamps.

import (
	"strconv"
	"strings"
	"time"
)

var filMonths = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
	"january": 1, "february": 2, "march": 3, "april": 4, "june": 6,
	"july": 7, "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
}

var filUnits = map[string]time.Duration{
	"sec": time.Second, "second": time.Second, "min": time.Minute, "minute": time.Minute,
	"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	"fortnight": 14 * 24 * time.Hour,
}

// filParseDate parses s as GNU date -d would, for the forms scripts use:
// "@SECONDS", "YYYY-MM-DD[ T]HH:MM[:SS[.NNN]][Z|±HH[:]MM|UTC]",
// "MM/DD/YYYY", "Mon DD YYYY", "DD Mon YYYY", "HH:MM", "now", "today",
// "yesterday", "tomorrow" and relative items like "2 days ago",
// "+1 hour", "next week". Times are UTC unless a zone is given.
func filParseDate(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	now = now.UTC()
	if strings.HasPrefix(s, "@") {
		return filParseEpoch(s[1:])
	}
	toks := filDateTokens(strings.ToLower(s))
	var (
		haveDate, haveTime, haveZone bool
		y, mo, d                     int
		hh, mm, ss, ns               int
		zoneOff                      int
		relMonths, relYears          int
		rel                          time.Duration
		relDays                      int
	)
	y, mo, d = now.Year(), int(now.Month()), now.Day()
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func() string {
			if i+1 < len(toks) {
				return toks[i+1]
			}
			return ""
		}
		switch {
		case t == "now":
		case t == "today":
		case t == "yesterday":
			relDays--
		case t == "tomorrow":
			relDays++
		case t == "t" && haveDate && !haveTime:
			// ISO 8601 separator.
		case (t == "z" || t == "utc" || t == "gmt" || t == "ut") && !haveZone:
			haveZone, zoneOff = true, 0
		case (t[0] == '+' || t[0] == '-') && haveTime && !haveZone && len(t) > 1 && filDigits(strings.ReplaceAll(t[1:], ":", "")) && len(strings.ReplaceAll(t[1:], ":", "")) == 4:
			z := strings.ReplaceAll(t[1:], ":", "")
			h, _ := strconv.Atoi(z[:2])
			m, _ := strconv.Atoi(z[2:])
			zoneOff = h*3600 + m*60
			if t[0] == '-' {
				zoneOff = -zoneOff
			}
			haveZone = true
		case strings.Count(t, "-") == 2 && filDigits(strings.ReplaceAll(t, "-", "")) && !haveDate:
			p := strings.Split(t, "-")
			if p[0] == "" || p[1] == "" || p[2] == "" {
				return time.Time{}, false
			}
			y, _ = strconv.Atoi(p[0])
			mo, _ = strconv.Atoi(p[1])
			d, _ = strconv.Atoi(p[2])
			haveDate = true
		case strings.Count(t, "/") == 2 && filDigits(strings.ReplaceAll(t, "/", "")) && !haveDate:
			p := strings.Split(t, "/")
			mo, _ = strconv.Atoi(p[0])
			d, _ = strconv.Atoi(p[1])
			y, _ = strconv.Atoi(p[2])
			if len(p[2]) == 2 {
				y = filTwoDigitYear(y)
			}
			haveDate = true
		case strings.Contains(t, ":") && !haveTime && filDigits(strings.NewReplacer(":", "", ".", "").Replace(t)):
			p := strings.Split(t, ":")
			if len(p) > 3 {
				return time.Time{}, false
			}
			hh, _ = strconv.Atoi(p[0])
			mm, _ = strconv.Atoi(p[1])
			if len(p) == 3 {
				sec, frac, _ := strings.Cut(p[2], ".")
				ss, _ = strconv.Atoi(sec)
				if frac != "" {
					frac = (frac + "000000000")[:9]
					ns, _ = strconv.Atoi(frac)
				}
			}
			if hh > 23 || mm > 59 || ss > 60 {
				return time.Time{}, false
			}
			if n := next(); n == "am" || n == "pm" {
				if hh == 12 {
					hh = 0
				}
				if n == "pm" {
					hh += 12
				}
				i++
			}
			haveTime = true
		case filMonths[t] != 0 && !haveDate:
			mo = int(filMonths[t])
			haveDate = true
			if n := next(); filDigits(n) && len(n) <= 2 {
				d, _ = strconv.Atoi(n)
				i++
				if n := next(); filDigits(n) && len(n) == 4 {
					y, _ = strconv.Atoi(n)
					i++
				}
			} else {
				d = 1
			}
		case filDigits(t) && len(t) <= 2 && filMonths[next()] != 0 && !haveDate:
			d, _ = strconv.Atoi(t)
			mo = int(filMonths[next()])
			i++
			if n := next(); filDigits(n) && len(n) == 4 {
				y, _ = strconv.Atoi(n)
				i++
			}
			haveDate = true
		default:
			// A relative item: [+-]N unit [ago], unit [ago], next/last unit.
			n := 1
			if t == "next" {
				i++
			} else if t == "last" {
				n = -1
				i++
			} else if v, err := strconv.Atoi(t); err == nil {
				n = v
				i++
			}
			if i >= len(toks) {
				return time.Time{}, false
			}
			u := strings.TrimSuffix(toks[i], "s")
			if i+1 < len(toks) && toks[i+1] == "ago" {
				n = -n
				i++
			}
			switch u {
			case "month":
				relMonths += n
			case "year":
				relYears += n
			case "day":
				relDays += n
			default:
				dur, ok := filUnits[u]
				if !ok {
					return time.Time{}, false
				}
				rel += time.Duration(n) * dur
			}
		}
	}
	var base time.Time
	switch {
	case haveDate || haveTime:
		loc := time.UTC
		if haveZone {
			loc = time.FixedZone("", zoneOff)
		}
		if mo < 1 || mo > 12 || d < 1 || d > 31 {
			return time.Time{}, false
		}
		base = time.Date(y, time.Month(mo), d, hh, mm, ss, ns, loc)
		if base.Day() != d {
			return time.Time{}, false
		}
	default:
		base = now
	}
	base = base.AddDate(relYears, relMonths, relDays).Add(rel)
	return base, true
}

func filParseEpoch(s string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(sec, "-")
	n, err := strconv.ParseInt(strings.TrimPrefix(sec, "+"), 10, 64)
	if err != nil || frac != "" && !filDigits(frac) {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if neg {
			ns = -ns
		}
	}
	return time.Unix(n, ns).UTC(), true
}

// filDateTokens splits a date string into words, keeping "2024-01-02",
// "10:00:00.5", "+0100" whole and splitting "2024-01-02t10:00z".
func filDateTokens(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
		// ISO "DATEtTIME[zone]".
		if i := strings.IndexByte(f, 't'); i == 10 && strings.Count(f[:i], "-") == 2 {
			out = append(out, f[:i], "t")
			f = f[i+1:]
		}
		if strings.Contains(f, ":") {
			if j := strings.IndexAny(f, "z+-"); j > 0 {
				out = append(out, f[:j])
				if f[j] == 'z' {
					out = append(out, "z")
				} else {
					out = append(out, f[j:])
				}
				continue
			}
		}
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func filDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func filTwoDigitYear(y int) int {
	if y < 69 {
		return 2000 + y
	}
	return 1900 + y
}

// filParseStamp parses touch -t's [[CC]YY]MMDDhhmm[.ss].
func filParseStamp(s string, now time.Time) (time.Time, bool) {
	main, sec, hasSec := strings.Cut(s, ".")
	if !filDigits(main) || hasSec && (len(sec) != 2 || !filDigits(sec)) {
		return time.Time{}, false
	}
	y := now.UTC().Year()
	switch len(main) {
	case 8:
	case 10:
		yy, _ := strconv.Atoi(main[:2])
		y = filTwoDigitYear(yy)
		main = main[2:]
	case 12:
		y, _ = strconv.Atoi(main[:4])
		main = main[4:]
	default:
		return time.Time{}, false
	}
	num := func(i int) int { v, _ := strconv.Atoi(main[i : i+2]); return v }
	mo, d, hh, mm := num(0), num(2), num(4), num(6)
	ss := 0
	if hasSec {
		ss, _ = strconv.Atoi(sec)
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, hh, mm, ss, 0, time.UTC)
	if t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}
