package coreutils

import (
	"context"
	"errors"
	"io"
	"syscall"
)

func init() { register("tee", txtTeeMain) }

var txtTeeSpec = optSpec{
	short: "aip",
	long:  map[string]bool{"append": false, "ignore-interrupts": false, "output-error": false},
	alias: map[string]string{"append": "a", "ignore-interrupts": "i"},
}

func txtTeeMain(ctx context.Context, e *Env, args []string) int {
	rest, special := txtOptArgs(args[1:], "output-error")
	opts, operands, code, ok := txtParse(e, "tee", &txtTeeSpec, append([]string{args[0]}, rest...), 1)
	if !ok {
		return code
	}
	appendMode, ignorePipe := false, false
	for _, o := range opts {
		switch o.name {
		case "a":
			appendMode = true
		case "p":
			ignorePipe = true
		}
	}
	for _, o := range special {
		words := []string{"warn", "warn-nopipe", "exit", "exit-nopipe"}
		if o.value == "" {
			ignorePipe = true
			continue
		}
		w, ok := txtArgMatch(o.value, words)
		if !ok {
			return txtBadArg(e, "tee", "--output-error", o.value, words)
		}
		ignorePipe = w == "warn-nopipe" || w == "exit-nopipe"
	}
	type sink struct {
		name string
		w    io.WriteCloser
	}
	status := 0
	var sinks []*sink
	for _, name := range operands {
		f, err := e.FS.Create(ctx, e.Abs(name), appendMode, 0o644)
		if err != nil {
			failPath(e, "tee", txtQuoteF(name), err, 1)
			status = 1
			continue
		}
		sinks = append(sinks, &sink{name, f})
	}
	stdout := e.Stdout
	in := &txtCtxReader{ctx, txtStdin(e)}
	buf := make([]byte, 64<<10)
	closedPipe := func(err error) bool {
		return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)
	}
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			if stdout != nil {
				if _, err := stdout.Write(buf[:n]); err != nil {
					if closedPipe(err) && !ignorePipe {
						status = 141
						break
					}
					if !closedPipe(err) {
						fail(e, "tee", 1, "standard output: %s", errText(err))
						status = 1
					}
					stdout = nil
				}
			}
			for _, s := range sinks {
				if s.w == nil {
					continue
				}
				if _, err := s.w.Write(buf[:n]); err != nil {
					failPath(e, "tee", txtQuoteF(s.name), err, 1)
					status = 1
					s.w.Close()
					s.w = nil
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if txtIsCtxErr(rerr) {
				status = 130
			} else {
				fail(e, "tee", 1, "read error: %s", errText(rerr))
				status = 1
			}
			break
		}
	}
	for _, s := range sinks {
		if s.w != nil {
			if err := s.w.Close(); err != nil {
				failPath(e, "tee", txtQuoteF(s.name), err, 1)
				if status == 0 {
					status = 1
				}
			}
		}
	}
	return status
}
