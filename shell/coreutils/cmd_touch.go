package coreutils

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"
)

func init() { register("touch", filTouchMain) }

var filTouchSpec = optSpec{
	short: "acd:fhmr:t:",
	long: map[string]bool{
		"no-create": false, "date": true, "reference": true, "time": true,
		"no-dereference": false,
	},
	alias: map[string]string{"no-create": "c", "date": "d", "reference": "r", "no-dereference": "h"},
}

// filTouchMain sets files' times, creating missing files. The FS has no
// access times to read: with -m (or -a) the other time is passed as the
// zero time, which FS.Chtimes leaves unchanged (as os.Chtimes does).
func filTouchMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "touch", &filTouchSpec, args, 1)
	if !ok {
		return code
	}
	noCreate, onlyA, onlyM := false, false, false
	when := e.Now()
	for _, o := range opts {
		switch o.name {
		case "c":
			noCreate = true
		case "a":
			onlyA = true
		case "m":
			onlyM = true
		case "h":
			// Symlinks' own times cannot be set through the FS; times go
			// to the target.
		case "time":
			switch o.value {
			case "atime", "access", "use":
				onlyA = true
			case "mtime", "modify":
				onlyM = true
			default:
				fmt.Fprintf(e.Stderr, "touch: invalid argument %s for '--time'\nValid arguments are:\n  - 'atime', 'access', 'use'\n  - 'mtime', 'modify'\nTry 'touch --help' for more information.\n", filQuoteLocale(o.value))
				return 1
			}
		case "d":
			t, ok := filParseDate(o.value, e.Now())
			if !ok {
				return fail(e, "touch", 1, "invalid date format %s", filQuoteLocale(o.value))
			}
			when = t
		case "t":
			t, ok := filParseStamp(o.value, e.Now())
			if !ok {
				return fail(e, "touch", 1, "invalid date format %s", filQuoteLocale(o.value))
			}
			when = t
		case "r":
			fi, err := filStat(ctx, e, o.value)
			if err != nil {
				return fail(e, "touch", 1, "failed to get attributes of %s: %s", filQuote(o.value), errText(err))
			}
			when = fi.ModTime
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "touch", fmt.Errorf("missing file operand"), 1)
	}
	if !onlyA && !onlyM {
		onlyA, onlyM = true, true
	}
	var atime, mtime time.Time
	if onlyA {
		atime = when
	}
	if onlyM {
		mtime = when
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		if p == "-" {
			// Standard output: nothing to touch here.
			continue
		}
		abs, err := filAbs(e, p)
		if err != nil {
			status = fail(e, "touch", 1, "cannot touch %s: %s", filQuote(p), errText(err))
			continue
		}
		_, serr := e.FS.Stat(ctx, abs)
		if serr != nil && filErrno(serr) == syscall.ENOENT && !strings.HasSuffix(p, "/") {
			if noCreate {
				continue
			}
			w, err := e.FS.Create(ctx, abs, true, 0o644)
			if err == nil {
				err = w.Close()
			}
			if err != nil {
				status = fail(e, "touch", 1, "cannot touch %s: %s", filQuote(p), errText(err))
				continue
			}
		} else if serr != nil {
			if noCreate && filErrno(serr) == syscall.ENOENT {
				continue
			}
			status = fail(e, "touch", 1, "setting times of %s: %s", filQuote(p), errText(serr))
			continue
		} else if _, err := filStat(ctx, e, p); err != nil {
			status = fail(e, "touch", 1, "setting times of %s: %s", filQuote(p), errText(err))
			continue
		}
		if err := e.FS.Chtimes(ctx, abs, atime, mtime); err != nil {
			status = fail(e, "touch", 1, "setting times of %s: %s", filQuote(p), errText(err))
		}
	}
	return status
}
