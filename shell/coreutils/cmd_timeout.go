package coreutils

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

func init() { register("timeout", txtTimeoutMain) }

var txtTimeoutSpec = optSpec{short: "k:s:v", long: map[string]bool{"kill-after": true, "signal": true, "verbose": false, "preserve-status": false, "foreground": false},
	alias: map[string]string{"kill-after": "k", "signal": "s", "verbose": "v"}}

// timeout runs a command with a time limit: past it the command is
// stopped (there is no process to signal: its context ends) and timeout
// exits 124, as GNU's does, or with the command's status under
// --preserve-status (128+15 for TERM, the signal GNU would send).
func txtTimeoutMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, err := txtParsePlus(&txtTimeoutSpec, args[1:])
	if err != nil {
		return badUsage(e, "timeout", err, 125)
	}
	preserve, verbose := false, false
	sig := "TERM"
	for _, o := range opts {
		switch o.name {
		case "preserve-status":
			preserve = true
		case "v":
			verbose = true
		case "s":
			sig = strings.TrimPrefix(strings.ToUpper(o.value), "SIG")
		}
	}
	if len(operands) < 2 {
		if len(operands) == 0 {
			return badUsage(e, "timeout", errors.New("missing operand"), 125)
		}
		return badUsage(e, "timeout", fmt.Errorf("missing operand after %s", txtQuoteL(operands[0])), 125)
	}
	d, ok := timeoutDuration(operands[0])
	if !ok {
		fmt.Fprintf(e.Stderr, "timeout: invalid time interval %s\nTry 'timeout --help' for more information.\n", txtQuoteL(operands[0]))
		return 125
	}
	if e.Run == nil {
		fmt.Fprintln(e.Stderr, "timeout: cannot run commands here")
		return 126
	}
	run := ctx
	cancel := func() {}
	if d > 0 {
		run, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	status := e.Run(run, operands[1:], e.Stdin, e.Stdout, e.Stderr)
	if d > 0 && errors.Is(run.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		if verbose {
			fmt.Fprintf(e.Stderr, "timeout: sending signal %s to command %s\n", sig, txtQuoteL(operands[1]))
		}
		if sig == "KILL" || sig == "9" {
			return 128 + 9 // as a shell reports a command killed by SIGKILL
		}
		if preserve {
			return 128 + 15
		}
		return 124
	}
	return status
}

// timeoutDuration reads DURATION as sleep does; an interval too long
// to count is no limit, as GNU's.
func timeoutDuration(s string) (time.Duration, bool) {
	f, ok := txtInterval(s)
	if !ok {
		return 0, false
	}
	if f*1e9 >= math.MaxInt64 {
		return 0, true
	}
	return time.Duration(math.Ceil(f * 1e9)), true
}
