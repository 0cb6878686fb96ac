package coreutils

import (
	"context"
	"errors"
	"strings"
)

func init() { register("dirname", txtDirnameMain) }

var txtDirnameSpec = optSpec{
	short: "z",
	long:  map[string]bool{"zero": false},
	alias: map[string]string{"zero": "z"},
}

// txtDirName is GNU dirname's directory part of p.
func txtDirName(p string) string {
	prefix := 0
	if strings.HasPrefix(p, "/") {
		prefix = 1
	}
	// last_component: the start of the last component.
	last := 0
	for last < len(p) && p[last] == '/' {
		last++
	}
	sawSlash := false
	for i := last; i < len(p); i++ {
		if p[i] == '/' {
			sawSlash = true
		} else if sawSlash {
			last = i
			sawSlash = false
		}
	}
	n := last
	for prefix < n && p[n-1] == '/' {
		n--
	}
	if n == 0 {
		return "."
	}
	return p[:n]
}

func txtDirnameMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "dirname", &txtDirnameSpec, args, 1)
	if !ok {
		return code
	}
	term := "\n"
	for _, o := range opts {
		if o.name == "z" {
			term = "\x00"
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "dirname", errors.New("missing operand"), 1)
	}
	var b strings.Builder
	for _, p := range operands {
		b.WriteString(txtDirName(p))
		b.WriteString(term)
	}
	if _, err := e.Stdout.Write([]byte(b.String())); err != nil {
		return txtWriteFail(e, "dirname", err)
	}
	return 0
}
