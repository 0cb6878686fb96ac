package coreutils

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

func init() { register("date", txtDateMain) }

var txtDateSpecOpts = optSpec{
	short: "d:f:r:s:uR",
	long: map[string]bool{
		"date": true, "file": true, "reference": true, "set": true, "utc": false,
		"universal": false, "rfc-email": false, "rfc-2822": false, "rfc-822": false,
		"rfc-3339": true, "debug": false, "iso-8601": false,
	},
	alias: map[string]string{
		"date": "d", "file": "f", "reference": "r", "set": "s", "utc": "u",
		"universal": "u", "rfc-email": "R", "rfc-2822": "R", "rfc-822": "R",
	},
}

var txtDateSetRe = regexp.MustCompile(`^(\d\d)(\d\d)(\d\d)(\d\d)((\d\d)?\d\d)?(\.\d\d)?$`)

func txtDateMain(ctx context.Context, e *Env, args []string) int {
	// -I takes an optional attached argument, which optSpec cannot say:
	// turn it into --iso-8601[=FMT].
	var rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			split := false
			for j := 1; j < len(a); j++ {
				if strings.IndexByte("dfrs", a[j]) >= 0 {
					break
				}
				if a[j] == 'I' {
					if j > 1 {
						rest = append(rest, a[:j])
					}
					if j+1 < len(a) {
						rest = append(rest, "--iso-8601="+a[j+1:])
					} else {
						rest = append(rest, "--iso-8601")
					}
					split = true
					break
				}
			}
			if split {
				continue
			}
		}
		rest = append(rest, a)
	}
	rest, isoOpts := txtOptArgs(rest, "iso-8601")
	opts, operands, err := txtDateSpecOpts.parse(rest)
	if err != nil {
		return badUsage(e, "date", err, 1)
	}
	var dateStr, batchFile, refFile, setStr string
	var hasDate, hasBatch, hasRef, hasSet, utc bool
	format, hasFormat := "", false
	setFormat := func(f string) bool {
		if hasFormat {
			fail(e, "date", 1, "multiple output formats specified")
			return false
		}
		format, hasFormat = f, true
		return true
	}
	// Options in command line order: -I and --iso-8601 were pulled out,
	// so handle them first; the order only matters for the error.
	for _, o := range isoOpts {
		words := []string{"hours", "minutes", "date", "seconds", "ns"}
		w := "date"
		if o.value != "" {
			var ok bool
			if w, ok = txtArgMatch(o.value, words); !ok {
				return txtDateBadArg(e, "--iso-8601", o.value, words)
			}
		}
		f := map[string]string{
			"date": "%Y-%m-%d", "hours": "%Y-%m-%dT%H%:z", "minutes": "%Y-%m-%dT%H:%M%:z",
			"seconds": "%Y-%m-%dT%H:%M:%S%:z", "ns": "%Y-%m-%dT%H:%M:%S,%N%:z",
		}[w]
		if !setFormat(f) {
			return 1
		}
	}
	for _, o := range opts {
		switch o.name {
		case "d":
			dateStr, hasDate = o.value, true
		case "f":
			batchFile, hasBatch = o.value, true
		case "r":
			refFile, hasRef = o.value, true
		case "s":
			setStr, hasSet = o.value, true
		case "u":
			utc = true
		case "R":
			if !setFormat("%a, %d %b %Y %H:%M:%S %z") {
				return 1
			}
		case "rfc-3339":
			words := []string{"date", "seconds", "ns"}
			w, ok := txtArgMatch(o.value, words)
			if !ok {
				return txtDateBadArg(e, "--rfc-3339", o.value, words)
			}
			f := map[string]string{"date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S%:z", "ns": "%Y-%m-%d %H:%M:%S.%N%:z"}[w]
			if !setFormat(f) {
				return 1
			}
		}
	}
	n := 0
	for _, b := range []bool{hasDate, hasBatch, hasRef} {
		if b {
			n++
		}
	}
	if n > 1 {
		return badUsage(e, "date", errors.New("the options to specify dates for printing are mutually exclusive"), 1)
	}
	if hasSet && n > 0 {
		return badUsage(e, "date", errors.New("the options to print and set the time may not be used together"), 1)
	}
	if len(operands) > 1 {
		return badUsage(e, "date", fmt.Errorf("extra operand %s", txtQuoteL(operands[1])), 1)
	}
	setOperand := false
	if len(operands) == 1 {
		if strings.HasPrefix(operands[0], "+") {
			if !setFormat(operands[0][1:]) {
				return 1
			}
		} else if hasSet || n > 0 {
			return badUsage(e, "date", fmt.Errorf("the argument %s lacks a leading '+';\nwhen using an option to specify date(s), any non-option\nargument must be a format string beginning with '+'", txtQuoteL(operands[0])), 1)
		} else {
			setOperand = true
		}
	}
	if !hasFormat {
		format = "%a %b %e %H:%M:%S %Z %Y"
	}
	tz, tzSet := e.Vars["TZ"]
	loc := txtLocation(tz, tzSet)
	if utc {
		loc = time.FixedZone("UTC", 0)
	}
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	out := txtOut(e)
	show := func(t time.Time) {
		out.WriteString(txtStrftime(format, t.In(loc)))
		out.WriteByte('\n')
	}
	status := 0
	switch {
	case hasBatch:
		r, err := txtOpen(ctx, e, batchFile)
		if err != nil {
			return failPath(e, "date", txtQuoteF(batchFile), err, 1)
		}
		br := bufio.NewReader(r)
		for {
			line, rerr := br.ReadString('\n')
			if line != "" {
				line = strings.TrimSuffix(line, "\n")
				t, perr := txtParseDate(line, now, loc)
				if perr != nil {
					out.Flush()
					fail(e, "date", 1, "invalid date %s", txtQuoteL(line))
					status = 1
				} else {
					show(t)
				}
			}
			if rerr != nil {
				if rerr != io.EOF {
					out.Flush()
					failPath(e, "date", txtQuoteF(batchFile), rerr, 1)
					status = 1
				}
				break
			}
		}
		r.Close()
	case hasRef:
		fi, err := e.FS.Stat(ctx, e.Abs(refFile))
		if err != nil {
			return failPath(e, "date", txtQuoteF(refFile), err, 1)
		}
		show(fi.ModTime)
	case hasSet || setOperand:
		var t time.Time
		if hasSet {
			var perr error
			if t, perr = txtParseDate(setStr, now, loc); perr != nil {
				return fail(e, "date", 1, "invalid date %s", txtQuoteL(setStr))
			}
		} else {
			m := txtDateSetRe.FindStringSubmatch(operands[0])
			var ok bool
			if m != nil {
				t, ok = txtDateSetTime(m, now.In(loc), loc)
			}
			if !ok {
				return fail(e, "date", 1, "invalid date %s", txtQuoteL(operands[0]))
			}
		}
		// The workspace has no clock to set.
		fail(e, "date", 1, "cannot set date: Operation not permitted")
		status = 1
		show(t)
	case hasDate:
		t, perr := txtParseDate(dateStr, now, loc)
		if perr != nil {
			return fail(e, "date", 1, "invalid date %s", txtQuoteL(dateStr))
		}
		show(t)
	default:
		show(now)
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "date", err)
	}
	return status
}

// txtDateSetTime reads date's MMDDhhmm[[CC]YY][.ss] operand.
func txtDateSetTime(m []string, now time.Time, loc *time.Location) (time.Time, bool) {
	atoi := func(s string) int {
		v := 0
		for _, c := range s {
			v = v*10 + int(c-'0')
		}
		return v
	}
	month, day, hour, min := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
	year := now.Year()
	switch len(m[5]) {
	case 2:
		year = atoi(m[5]) + 1900
		if atoi(m[5]) < 69 {
			year += 100
		}
	case 4:
		year = atoi(m[5])
	}
	sec := 0
	if m[7] != "" {
		sec = atoi(m[7][1:])
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || min > 59 || sec > 60 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, 0, loc)
	if t.Day() != day {
		return time.Time{}, false
	}
	return t, true
}

func txtDateBadArg(e *Env, option, val string, words []string) int {
	return txtBadArg(e, "date", option, val, words)
}
