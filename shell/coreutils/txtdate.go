package coreutils

// Date parsing (GNU parse_datetime, the common part) and strftime
// formatting (gnulib nstrftime) for the date command.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones without the host's zoneinfo
	"unicode"
)

// txtLocation turns a TZ value into a location, as glibc reads TZ:
// unset or empty is UTC, a zoneinfo name ("Europe/Paris", optionally
// with a leading colon) loads that zone, and a POSIX string
// ("EST5EDT", "UTC0", "JST-9", "<+03>-3") gives its standard offset.
// Anything else is UTC under the name given, as glibc does.
func txtLocation(tz string, set bool) *time.Location {
	if !set || tz == "" {
		return time.UTC
	}
	name := strings.TrimPrefix(tz, ":")
	if name == "UTC" || name == "UTC0" || name == "GMT" || name == "GMT0" {
		return time.FixedZone(strings.TrimSuffix(name, "0"), 0)
	}
	if !strings.HasPrefix(tz, "<") && !strings.Contains(name, "..") {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	// POSIX TZ: std offset [dst [offset] [,rule]]
	s := tz
	var std string
	if strings.HasPrefix(s, "<") {
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return time.FixedZone(tz, 0)
		}
		std, s = s[1:end], s[end+1:]
	} else {
		i := 0
		for i < len(s) && unicode.IsLetter(rune(s[i])) {
			i++
		}
		std, s = s[:i], s[i:]
	}
	if len(std) < 3 {
		return time.FixedZone("UTC", 0)
	}
	sign := -1 // POSIX offsets are west of Greenwich
	if strings.HasPrefix(s, "-") {
		sign = 1
		s = s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	i := 0
	for i < len(s) && (txtIsDigit(s[i]) || s[i] == ':') {
		i++
	}
	if i == 0 {
		return time.FixedZone(std, 0)
	}
	parts := strings.Split(s[:i], ":")
	secs := 0
	mult := 3600
	for _, p := range parts {
		v, _ := strconv.Atoi(p)
		secs += v * mult
		mult /= 60
	}
	return time.FixedZone(std, sign*secs)
}

// txtDateTok is a token of a date string.
type txtDateTok struct {
	kind   byte // 'n' unsigned number, 's' signed number, 'w' word, or the punctuation itself
	val    int64
	digits int
	frac   int64 // nanoseconds after a '.' or ','
	hasFr  bool
	word   string
}

func txtDateLex(s string) ([]txtDateTok, bool) {
	var toks []txtDateTok
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || (c >= '\t' && c <= '\r'):
			i++
		case c == '(':
			depth := 0
			for i < len(s) {
				if s[i] == '(' {
					depth++
				} else if s[i] == ')' {
					depth--
				}
				i++
				if depth == 0 {
					break
				}
			}
		case txtIsDigit(c) || c == '+' || c == '-':
			sign := int64(0)
			if c == '+' || c == '-' {
				sign = 1
				if c == '-' {
					sign = -1
				}
				i++
				for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
					i++
				}
				if i >= len(s) || !txtIsDigit(s[i]) {
					continue // a lone sign is skipped
				}
			}
			st := i
			var v int64
			for i < len(s) && txtIsDigit(s[i]) {
				if v < math.MaxInt64/10-10 {
					v = v*10 + int64(s[i]-'0')
				} else {
					return nil, false
				}
				i++
			}
			t := txtDateTok{kind: 'n', val: v, digits: i - st}
			if sign != 0 {
				t.kind, t.val = 's', sign*v
			}
			if i+1 < len(s) && (s[i] == '.' || s[i] == ',') && txtIsDigit(s[i+1]) {
				i++
				var ns int64
				n := 0
				for i < len(s) && txtIsDigit(s[i]) {
					if n < 9 {
						ns = ns*10 + int64(s[i]-'0')
						n++
					}
					i++
				}
				for ; n < 9; n++ {
					ns *= 10
				}
				t.frac, t.hasFr = ns, true
			}
			toks = append(toks, t)
		case c < 0x80 && unicode.IsLetter(rune(c)):
			st := i
			for i < len(s) && (s[i] < 0x80 && unicode.IsLetter(rune(s[i])) || s[i] == '.') {
				i++
			}
			toks = append(toks, txtDateTok{kind: 'w', word: strings.ToLower(s[st:i])})
		case c == ':' || c == '/' || c == ',' || c == '@':
			toks = append(toks, txtDateTok{kind: c})
			i++
		default:
			return nil, false
		}
	}
	return toks, true
}

var txtMonthNames = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}
var txtDayNames = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// txtZones are the time zone abbreviations parse_datetime knows, in
// minutes east of UTC; dst marks daylight-saving names.
var txtZones = map[string]struct {
	off int
	dst bool
}{
	"gmt": {0, false}, "ut": {0, false}, "utc": {0, false}, "wet": {0, false}, "west": {0, true},
	"bst": {0, true}, "art": {-180, false}, "brt": {-180, false}, "brst": {-180, true},
	"nst": {-210, false}, "ndt": {-210, true}, "ast": {-240, false}, "adt": {-240, true},
	"clt": {-240, false}, "clst": {-240, true}, "est": {-300, false}, "edt": {-300, true},
	"cst": {-360, false}, "cdt": {-360, true}, "mst": {-420, false}, "mdt": {-420, true},
	"pst": {-480, false}, "pdt": {-480, true}, "akst": {-540, false}, "akdt": {-540, true},
	"hst": {-600, false}, "hast": {-600, false}, "hadt": {-600, true}, "sst": {-720, false},
	"wat": {60, false}, "cet": {60, false}, "cest": {60, true}, "met": {60, false},
	"mez": {60, false}, "mest": {60, true}, "mesz": {60, true}, "eet": {120, false},
	"eest": {120, true}, "cat": {120, false}, "sast": {120, false}, "eat": {180, false},
	"msk": {180, false}, "msd": {180, true}, "ist": {330, false}, "sgt": {480, false},
	"kst": {540, false}, "jst": {540, false}, "gst": {600, false}, "nzst": {720, false},
	"nzdt": {720, true}, "z": {0, false},
}

// txtDateWord classifies a word: 'M' month, 'D' weekday, 'U' unit,
// 'R' relative day word, 'O' ordinal, 'A' ago, 'P' meridian, 'Z' zone,
// 'S' dst; val is its value (unit: seconds, or -1 month, -12 year).
func txtDateWord(w string) (kind byte, val int) {
	switch w {
	case "am", "a.m.":
		return 'P', 1
	case "pm", "p.m.":
		return 'P', 2
	}
	abbrev := len(w) == 3 || (len(w) == 4 && w[3] == '.')
	for i, m := range txtMonthNames {
		if (abbrev && strings.HasPrefix(m, w[:3])) || w == m || w == "sept" && i == 8 {
			return 'M', i + 1
		}
	}
	for i, d := range txtDayNames {
		if (abbrev && strings.HasPrefix(d, w[:3])) || w == d {
			return 'D', i
		}
	}
	switch w {
	case "tues":
		return 'D', 2
	case "wednes":
		return 'D', 3
	case "thur", "thurs":
		return 'D', 4
	}
	if z, ok := txtZones[w]; ok && w != "z" {
		if z.dst {
			return 'Z', z.off + 60 + 100000
		}
		return 'Z', z.off
	}
	if w == "dst" {
		return 'S', 0
	}
	unit := func(u string) (byte, int, bool) {
		switch u {
		case "year":
			return 'U', -12, true
		case "month":
			return 'U', -1, true
		case "fortnight":
			return 'U', 14 * 86400, true
		case "week":
			return 'U', 7 * 86400, true
		case "day":
			return 'U', 86400, true
		case "hour":
			return 'U', 3600, true
		case "minute", "min":
			return 'U', 60, true
		case "second", "sec":
			return 'U', 1, true
		}
		return 0, 0, false
	}
	if k, v, ok := unit(w); ok {
		return k, v
	}
	if strings.HasSuffix(w, "s") {
		if k, v, ok := unit(w[:len(w)-1]); ok {
			return k, v
		}
	}
	switch w {
	case "tomorrow":
		return 'R', 1
	case "yesterday":
		return 'R', -1
	case "today", "now":
		return 'R', 0
	case "ago":
		return 'A', 0
	case "last":
		return 'O', -1
	case "this":
		return 'O', 0
	case "next", "first":
		return 'O', 1
	}
	ords := []string{"third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth"}
	for i, o := range ords {
		if w == o {
			return 'O', i + 3
		}
	}
	if len(w) == 1 && w == "z" {
		return 'Z', 0
	}
	return 0, 0
}

// txtDateSpec is what a date string says.
type txtDateSpec struct {
	year, month, day      int64
	yearDigits            int
	hour, min, sec, nsec  int64
	meridian              int // 0 24h, 1 am, 2 pm
	zone                  int // minutes east
	dateSeen, timeSeen    int
	daySeen, zoneSeen     int
	dstSeen               int
	relSeen               bool
	dayOrdinal, dayNumber int
	relYear, relMonth     int64
	relDay                int64
	relSec, relNs         int64
}

var txtErrBadDate = errors.New("invalid date")

// txtParseDate parses a date string relative to now in loc.
func txtParseDate(s string, now time.Time, loc *time.Location) (time.Time, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "@") {
		toks, ok := txtDateLex(t[1:])
		if !ok || len(toks) != 1 || (toks[0].kind != 'n' && toks[0].kind != 's') {
			return time.Time{}, txtErrBadDate
		}
		tk := toks[0]
		ns := tk.frac
		if tk.val < 0 && ns > 0 {
			return time.Unix(tk.val-1, 1e9-ns), nil
		}
		if tk.kind == 's' && tk.val == 0 && strings.Contains(t, "-") && ns > 0 {
			return time.Unix(-1, 1e9-ns), nil
		}
		return time.Unix(tk.val, ns), nil
	}
	toks, ok := txtDateLex(t)
	if !ok {
		return time.Time{}, txtErrBadDate
	}
	now = now.In(loc)
	p := &txtDateSpec{}
	if err := p.parse(toks); err != nil {
		return time.Time{}, err
	}
	if p.timeSeen > 1 || p.dateSeen > 1 || p.daySeen > 1 || p.dstSeen > 1 || p.zoneSeen > 1 {
		return time.Time{}, txtErrBadDate
	}
	year, month, day := int64(now.Year()), int64(now.Month()), int64(now.Day())
	if p.dateSeen > 0 {
		month, day = p.month, p.day
		switch {
		case p.yearDigits < 0:
			// no year given: this one
		case p.yearDigits == 2:
			year = p.year + 1900
			if p.year < 69 {
				year = p.year + 2000
			}
		default:
			year = p.year
		}
	}
	hour, min, sec, nsec := int64(now.Hour()), int64(now.Minute()), int64(now.Second()), int64(now.Nanosecond())
	switch {
	case p.timeSeen > 0:
		hour, min, sec, nsec = p.hour, p.min, p.sec, p.nsec
		switch p.meridian {
		case 0:
			if hour < 0 || hour > 23 {
				return time.Time{}, txtErrBadDate
			}
		default:
			if hour < 1 || hour > 12 {
				return time.Time{}, txtErrBadDate
			}
			if hour == 12 {
				hour = 0
			}
			if p.meridian == 2 {
				hour += 12
			}
		}
	case p.relSeen && p.dateSeen == 0 && p.daySeen == 0:
	default:
		hour, min, sec, nsec = 0, 0, 0, 0
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || min < 0 || min > 59 || sec < 0 || sec > 59 {
		return time.Time{}, txtErrBadDate
	}
	zl := loc
	if p.zoneSeen > 0 {
		zl = time.FixedZone("", p.zone*60)
	}
	// The date as given must exist.
	base := time.Date(int(year), time.Month(month), int(day), int(hour), int(min), int(sec), int(nsec), zl)
	if int64(base.Day()) != day || int64(base.Month()) != month {
		return time.Time{}, txtErrBadDate
	}
	if p.daySeen > 0 && p.dateSeen == 0 {
		wd := int(base.Weekday())
		add := (p.dayNumber-wd+7)%7 + 7*(p.dayOrdinal-txtB2i(0 < p.dayOrdinal && wd != p.dayNumber))
		day += int64(add)
	}
	r := time.Date(int(year+p.relYear), time.Month(month+p.relMonth), int(day+p.relDay), int(hour), int(min), int(sec), int(nsec), zl)
	r = r.Add(time.Duration(p.relSec)*time.Second + time.Duration(p.relNs))
	return r, nil
}

func txtB2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *txtDateSpec) parse(toks []txtDateTok) error {
	i := 0
	peek := func(k int) txtDateTok {
		if i+k < len(toks) {
			return toks[i+k]
		}
		return txtDateTok{}
	}
	wordKind := func(t txtDateTok) (byte, int) {
		if t.kind != 'w' {
			return 0, 0
		}
		return txtDateWord(t.word)
	}
	// rel applies n units; a following "ago" negates it.
	rel := func(n int64, unit int) {
		if k, _ := wordKind(peek(0)); k == 'A' {
			n = -n
			i++
		}
		switch {
		case unit == -12:
			p.relYear += n
		case unit == -1:
			p.relMonth += n
		case unit%86400 == 0:
			p.relDay += n * int64(unit/86400)
		default:
			p.relSec += n * int64(unit)
		}
		p.relSeen = true
	}
	// zoneOffset reads [+-]hh[mm] or [+-]hh:mm after a time or a zone.
	zoneOffset := func(t txtDateTok) (int, error) {
		v := t.val
		neg := v < 0
		if neg {
			v = -v
		}
		var mins int64
		if peek(0).kind == ':' && peek(1).kind == 'n' {
			mins = v*60 + peek(1).val
			i += 2
		} else if t.digits <= 2 {
			mins = v * 60
		} else {
			mins = v/100*60 + v%100
		}
		if mins > 24*60 {
			return 0, txtErrBadDate
		}
		if neg {
			mins = -mins
		}
		return int(mins), nil
	}
	for i < len(toks) {
		t := toks[i]
		i++
		switch t.kind {
		case ',':
			continue
		case 'n':
			n1 := peek(0)
			k1, v1 := wordKind(n1)
			switch {
			case n1.kind == ':' && peek(1).kind == 'n':
				// hh:mm[:ss[.frac]] [meridian] [zone offset]
				p.timeSeen++
				p.hour, p.min = t.val, peek(1).val
				p.sec, p.nsec = 0, 0
				i += 2
				if peek(0).kind == ':' && peek(1).kind == 'n' {
					p.sec, p.nsec = peek(1).val, peek(1).frac
					i += 2
				}
				p.meridian = 0
				if k, v := wordKind(peek(0)); k == 'P' {
					p.meridian = v
					i++
				}
				if nt := peek(0); nt.kind == 's' {
					i++
					off, err := zoneOffset(nt)
					if err != nil {
						return err
					}
					p.zone = off
					p.zoneSeen++
				}
			case n1.kind == '/' && peek(1).kind == 'n':
				p.dateSeen++
				a, b := t, peek(1)
				i += 2
				if peek(0).kind == '/' && peek(1).kind == 'n' {
					c := peek(1)
					i += 2
					if a.digits >= 4 {
						p.year, p.yearDigits, p.month, p.day = a.val, a.digits, b.val, c.val
					} else {
						p.month, p.day, p.year, p.yearDigits = a.val, b.val, c.val, c.digits
					}
				} else {
					p.month, p.day = a.val, b.val
					p.year, p.yearDigits = 0, 0
					p.keepYear()
				}
			case k1 == 'M':
				// day month [year]
				p.dateSeen++
				p.day, p.month = t.val, int64(v1)
				i++
				if nt := peek(0); nt.kind == 's' && nt.val <= 0 {
					p.year, p.yearDigits = -nt.val, nt.digits
					i++
				} else if nt.kind == 'n' {
					p.year, p.yearDigits = nt.val, nt.digits
					i++
				} else {
					p.keepYear()
				}
			case n1.kind == 's' && peek(1).kind == 's' && n1.val <= 0 && peek(1).val <= 0:
				p.dateSeen++
				p.year, p.yearDigits = t.val, t.digits
				p.month, p.day = -n1.val, -peek(1).val
				i += 2
				if w := peek(0); w.kind == 'w' && w.word == "t" && peek(1).kind == 'n' && peek(2).kind == ':' {
					i++
				}
			case k1 == 'P':
				p.timeSeen++
				p.hour, p.min, p.sec, p.nsec = t.val, 0, 0, 0
				p.meridian = v1
				i++
			case k1 == 'U':
				i++
				p.relUnit(t.val, v1, rel)
			default:
				p.number(t)
			}
		case 's':
			if k, v := wordKind(peek(0)); k == 'U' {
				i++
				p.relUnit(t.val, v, rel)
				continue
			}
			return txtErrBadDate
		case 'w':
			k, v := txtDateWord(t.word)
			switch k {
			case 'M':
				n1 := peek(0)
				switch {
				case n1.kind == 's' && peek(1).kind == 's':
					p.dateSeen++
					p.month, p.day = int64(v), -n1.val
					p.year, p.yearDigits = -peek(1).val, peek(1).digits
					i += 2
				case n1.kind == 'n':
					p.dateSeen++
					p.month, p.day = int64(v), n1.val
					i++
					if peek(0).kind == ',' && peek(1).kind == 'n' {
						p.year, p.yearDigits = peek(1).val, peek(1).digits
						i += 2
					} else {
						p.keepYear()
					}
				default:
					return txtErrBadDate
				}
			case 'D':
				p.daySeen++
				p.dayOrdinal, p.dayNumber = 0, v
				if peek(0).kind == ',' {
					i++
				}
			case 'O':
				k2, v2 := wordKind(peek(0))
				switch k2 {
				case 'U':
					i++
					p.relUnit(int64(v), v2, rel)
				case 'D':
					i++
					p.daySeen++
					p.dayOrdinal, p.dayNumber = v, v2
				default:
					return txtErrBadDate
				}
			case 'U':
				p.relUnit(1, v, rel)
			case 'R':
				p.relDay += int64(v)
				p.relSeen = true
			case 'Z':
				p.zoneSeen++
				off := v
				if off >= 50000 {
					off -= 100000
					p.dstSeen++
				}
				p.zone = off
				if nt := peek(0); nt.kind == 's' {
					if k2, _ := wordKind(peek(1)); k2 != 'U' {
						i++
						o, err := zoneOffset(nt)
						if err != nil {
							return err
						}
						p.zone += o
					}
				} else if k2, _ := wordKind(nt); k2 == 'S' {
					i++
					p.zone += 60
					p.dstSeen++
				}
			case 0:
				if t.word == "t" && peek(0).kind == 'n' && peek(1).kind == ':' {
					continue
				}
				return txtErrBadDate
			default:
				return txtErrBadDate
			}
		default:
			return txtErrBadDate
		}
	}
	return nil
}

// keepYear marks a date without a year: the current one is used.
func (p *txtDateSpec) keepYear() { p.yearDigits = -1 }

func (p *txtDateSpec) relUnit(n int64, unit int, rel func(int64, int)) { rel(n, unit) }

// number is parse_datetime's rule for a bare number.
func (p *txtDateSpec) number(t txtDateTok) {
	if p.dateSeen > 0 && p.yearDigits <= 0 && !p.relSeen && (p.timeSeen > 0 || t.digits > 2) {
		p.year, p.yearDigits = t.val, t.digits
		return
	}
	if t.digits > 4 {
		p.dateSeen++
		p.day = t.val % 100
		p.month = (t.val / 100) % 100
		p.year = t.val / 10000
		p.yearDigits = t.digits - 4
		return
	}
	p.timeSeen++
	if t.digits <= 2 {
		p.hour, p.min = t.val, 0
	} else {
		p.hour, p.min = t.val/100, t.val%100
	}
	p.sec, p.nsec = 0, 0
	p.meridian = 0
}

// txtStrftime formats t as GNU date's strftime does in the C locale.
func txtStrftime(format string, t time.Time) string { return txtStrftimeYr(format, t, 0, -1) }

// txtStrftimeYr is txtStrftime with the padding and width that a
// composite conversion (%c, %D, %F, %x) passes to its year.
func txtStrftimeYr(format string, t time.Time, yrPad byte, yrWidth int) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		start := i
		i++
		var pad byte
		upper, swap := false, false
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '_', '-', '0', '+':
				pad = format[i]
			case '^':
				upper = true
			case '#':
				swap = true
			default:
				break flags
			}
		}
		width := -1
		if i < len(format) && txtIsDigit(format[i]) {
			width = 0
			for i < len(format) && txtIsDigit(format[i]) {
				width = min(width*10+int(format[i]-'0'), 1<<20)
				i++
			}
		}
		colons := 0
		for i < len(format) && format[i] == ':' {
			colons++
			i++
		}
		// E and O pick alternative forms, the same as the plain ones in
		// the C locale.
		if i < len(format) && (format[i] == 'E' || format[i] == 'O') {
			i++
		}
		if i >= len(format) {
			b.WriteString(format[start:])
			break
		}
		conv := format[i]
		bad := func() { b.WriteString(txtPadStr(format[start:i+1], width, pad)) }
		// GNU pads a misused %% or colon one wider.
		badWide := func() { b.WriteString(txtPadStr(format[start:i+1], width+1, pad)) }
		if colons > 0 && conv != 'z' {
			badWide()
			continue
		}
		str := func(s string, lowerOnSwap bool) {
			switch {
			case swap && lowerOnSwap:
				s = strings.ToLower(s)
			case swap || upper:
				s = strings.ToUpper(s)
			}
			b.WriteString(txtPadStr(s, width, pad))
		}
		num := func(digits int, v int64, spacePad bool) {
			p := pad
			if p == 0 && spacePad {
				p = '_'
			}
			b.WriteString(txtPadNum(digits, v, false, width, p, 0))
		}
		year := func(digits int, v int64) {
			p, w := pad, width
			if p == 0 {
				p = yrPad
			}
			if w < 0 {
				w = yrWidth
			}
			b.WriteString(txtPadNum(digits, v, false, w, p, 0))
		}
		sub := func(f string) {
			s := txtStrftimeYr(f, t, pad, -1)
			if upper {
				s = strings.ToUpper(s)
			}
			b.WriteString(txtPadStr(s, width, pad))
		}
		_, offset := t.Zone()
		yr := int64(t.Year())
		switch conv {
		case 'a':
			str(t.Weekday().String()[:3], false)
		case 'A':
			str(t.Weekday().String(), false)
		case 'b', 'h':
			str(t.Month().String()[:3], false)
		case 'B':
			str(t.Month().String(), false)
		case 'c':
			sub("%a %b %e %H:%M:%S %Y")
		case 'C':
			year(2, txtFloorDiv(yr, 100))
		case 'd':
			num(2, int64(t.Day()), false)
		case 'D', 'x':
			sub("%m/%d/%y")
		case 'e':
			num(2, int64(t.Day()), true)
		case 'F':
			if pad == 0 && width < 0 {
				sub("%Y-%m-%d")
				break
			}
			s := txtStrftimeYr("%Y-%m-%d", t, pad, max(width-6, 0))
			if upper {
				s = strings.ToUpper(s)
			}
			b.WriteString(txtPadStr(s, width, pad))
		case 'g':
			y, _ := t.ISOWeek()
			year(2, (int64(y)%100+100)%100)
		case 'G':
			y, _ := t.ISOWeek()
			year(4, int64(y))
		case 'H':
			num(2, int64(t.Hour()), false)
		case 'I':
			num(2, int64((t.Hour()+11)%12+1), false)
		case 'j':
			num(3, int64(t.YearDay()), false)
		case 'k':
			num(2, int64(t.Hour()), true)
		case 'l':
			num(2, int64((t.Hour()+11)%12+1), true)
		case 'm':
			num(2, int64(t.Month()), false)
		case 'M':
			num(2, int64(t.Minute()), false)
		case 'n':
			b.WriteString(txtPadStr("\n", width, pad))
		case 'N':
			n := int64(t.Nanosecond())
			w := width
			if w <= 0 {
				w = 9
			}
			ndigs := 9
			for w < ndigs || (ndigs > 1 && n%10 == 0) {
				ndigs--
				n /= 10
			}
			s := fmt.Sprintf("%0*d", ndigs, n)
			p := pad
			if p == 0 {
				p = '0'
			}
			b.WriteString(s)
			if p != '-' && w > ndigs {
				fill := byte(' ')
				if p == '0' || p == '+' {
					fill = '0'
				}
				b.WriteString(strings.Repeat(string([]byte{fill}), w-ndigs))
			}
		case 'p':
			ap := "AM"
			if t.Hour() >= 12 {
				ap = "PM"
			}
			str(ap, true)
		case 'P':
			ap := "am"
			if t.Hour() >= 12 {
				ap = "pm"
			}
			b.WriteString(txtPadStr(ap, width, pad))
		case 'q':
			num(1, int64((t.Month()-1)/3+1), false)
		case 'r':
			sub("%I:%M:%S %p")
		case 'R':
			sub("%H:%M")
		case 's':
			b.WriteString(txtPadNum(1, t.Unix(), false, width, pad, 0))
		case 'S':
			num(2, int64(t.Second()), false)
		case 't':
			b.WriteString(txtPadStr("\t", width, pad))
		case 'T', 'X':
			sub("%H:%M:%S")
		case 'u':
			num(1, int64((t.Weekday()+6)%7+1), false)
		case 'U':
			num(2, int64((t.YearDay()-1+7-int(t.Weekday()))/7), false)
		case 'V':
			_, w := t.ISOWeek()
			num(2, int64(w), false)
		case 'w':
			num(1, int64(t.Weekday()), false)
		case 'W':
			num(2, int64((t.YearDay()-1+7-(int(t.Weekday())+6)%7)/7), false)
		case 'y':
			year(2, (yr%100+100)%100)
		case 'Y':
			year(4, yr)
		case 'z':
			neg := offset < 0
			off := offset
			if neg {
				off = -off
			}
			h, m, s := int64(off/3600), int64(off/60%60), int64(off%60)
			var digits int
			var v int64
			var mask uint
			switch colons {
			case 0:
				digits, v = 5, h*100+m
			case 1:
				digits, v, mask = 6, h*100+m, 04
			case 2:
				digits, v, mask = 9, h*10000+m*100+s, 024
			case 3:
				switch {
				case s != 0:
					digits, v, mask = 9, h*10000+m*100+s, 024
				case m != 0:
					digits, v, mask = 6, h*100+m, 04
				default:
					digits, v = 3, h
				}
			default:
				bad()
				continue
			}
			if neg {
				v = -v
			}
			b.WriteString(txtPadNum(digits, v, true, width, pad, mask))
		case 'Z':
			name, _ := t.Zone()
			str(name, true)
		case '%':
			if i-start > 1 {
				badWide()
				continue
			}
			b.WriteString(txtPadStr("%", width, pad))
		default:
			bad()
		}
	}
	return b.String()
}

func txtFloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// txtPadStr pads s to width with spaces (zeros under the '0' flag),
// as nstrftime's width_add does.
func txtPadStr(s string, width int, pad byte) string {
	if pad == '-' || width <= len(s) {
		return s
	}
	fill := " "
	if pad == '0' || pad == '+' {
		fill = "0"
	}
	return strings.Repeat(fill, width-len(s)) + s
}

// txtPadNum formats a number as nstrftime's do_number does: digits is
// the default width, sign forces a sign, mask places colons.
func txtPadNum(digits int, v int64, sign bool, width int, pad byte, mask uint) string {
	neg := v < 0
	u := v
	if neg {
		u = -v
	}
	var buf []byte
	for {
		if mask&1 != 0 {
			buf = append(buf, ':')
		}
		mask >>= 1
		buf = append(buf, byte('0'+u%10))
		u /= 10
		if u == 0 && mask == 0 {
			break
		}
	}
	for l, r := 0, len(buf)-1; l < r; l, r = l+1, r-1 {
		buf[l], buf[r] = buf[r], buf[l]
	}
	if pad == 0 {
		pad = '0'
	}
	if width < 0 {
		width = digits
	}
	signChar := ""
	if neg {
		signChar = "-"
	} else if sign {
		signChar = "+"
	}
	var out strings.Builder
	if signChar != "" {
		shortage := width - 1 - len(buf)
		if pad == '_' && shortage > 0 {
			out.WriteString(strings.Repeat(" ", shortage))
			width -= shortage
		}
		out.WriteString(signChar)
		width--
	}
	out.WriteString(txtPadStr(string(buf), width, pad))
	return out.String()
}
