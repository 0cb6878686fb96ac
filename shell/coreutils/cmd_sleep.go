package coreutils

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

func init() { register("sleep", txtSleepMain) }

var txtSleepSpec = optSpec{long: map[string]bool{}}

func txtSleepMain(ctx context.Context, e *Env, args []string) int {
	_, operands, code, ok := txtParse(e, "sleep", &txtSleepSpec, args, 1)
	if !ok {
		return code
	}
	if len(operands) == 0 {
		return badUsage(e, "sleep", errors.New("missing operand"), 1)
	}
	total := 0.0
	bad := false
	for _, a := range operands {
		f, ok := txtInterval(a)
		if !ok {
			fmt.Fprintf(e.Stderr, "sleep: invalid time interval %s\n", txtQuoteL(a))
			bad = true
			continue
		}
		total += f
	}
	if bad {
		fmt.Fprintf(e.Stderr, "Try 'sleep --help' for more information.\n")
		return 1
	}
	d := time.Duration(math.MaxInt64)
	if total*1e9 < float64(math.MaxInt64) {
		d = time.Duration(math.Ceil(total * 1e9))
	}
	if d <= 0 {
		return 0
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return 0
	case <-ctx.Done():
		return 130
	}
}

// txtInterval reads a time interval as sleep and timeout take it: a
// number of seconds, or with an s, m, h or d suffix; in seconds.
func txtInterval(a string) (float64, bool) {
	s := a
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 's':
			s = s[:n-1]
		case 'm':
			s, mult = s[:n-1], 60
		case 'h':
			s, mult = s[:n-1], 3600
		case 'd':
			s, mult = s[:n-1], 86400
		}
	}
	v, isNaN, ok := txtStrtold(s)
	if !ok || isNaN || v.Sign() < 0 || strings.TrimSpace(s) != strings.TrimLeft(s, " \t\n\v\f\r") {
		return 0, false
	}
	f, _ := v.Float64()
	return f * mult, true
}
