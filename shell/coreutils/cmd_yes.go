package coreutils

import (
	"bufio"
	"context"
	"strings"
)

func init() { register("yes", txtYesMain) }

var txtYesSpec = optSpec{long: map[string]bool{}}

// yes prints its operands (or "y") until its output closes or ctx ends.
func txtYesMain(ctx context.Context, e *Env, args []string) int {
	_, operands, code, ok := txtParse(e, "yes", &txtYesSpec, args, 1)
	if !ok {
		return code
	}
	line := "y\n"
	if len(operands) > 0 {
		line = strings.Join(operands, " ") + "\n"
	}
	// Write in blocks, as GNU does, so a pipe reader sees few writes.
	block := strings.Repeat(line, max(1, 8192/len(line)))
	w := bufio.NewWriterSize(e.Stdout, len(block))
	for ctx.Err() == nil {
		if _, err := w.WriteString(block); err != nil {
			return 0 // the reader went away: GNU dies of SIGPIPE, quietly here
		}
		if err := w.Flush(); err != nil {
			return 0
		}
	}
	return 1
}
