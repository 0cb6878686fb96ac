package coreutils

import (
	"context"
	"errors"
	"strings"
)

func init() { register("basename", txtBasenameMain) }

var txtBasenameSpec = optSpec{
	short: "as:z",
	long:  map[string]bool{"multiple": false, "suffix": true, "zero": false},
	alias: map[string]string{"multiple": "a", "suffix": "s", "zero": "z"},
}

// txtBaseName is GNU basename's last component of p, without trailing
// slashes.
func txtBaseName(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" {
		if p == "" {
			return ""
		}
		return "/"
	}
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		t = t[i+1:]
	}
	return t
}

func txtBasenameMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, err := txtParsePlus(&txtBasenameSpec, args[1:])
	if err != nil {
		return badUsage(e, "basename", err, 1)
	}
	multiple, suffix, term := false, "", "\n"
	for _, o := range opts {
		switch o.name {
		case "a":
			multiple = true
		case "s":
			multiple, suffix = true, o.value
		case "z":
			term = "\x00"
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "basename", errors.New("missing operand"), 1)
	}
	if !multiple {
		if len(operands) > 2 {
			return badUsage(e, "basename", errors.New("extra operand "+txtQuoteL(operands[2])), 1)
		}
		if len(operands) == 2 {
			suffix = operands[1]
		}
		operands = operands[:1]
	}
	var b strings.Builder
	for _, p := range operands {
		name := txtBaseName(p)
		if suffix != "" && name != "/" && name != suffix && strings.HasSuffix(name, suffix) {
			name = name[:len(name)-len(suffix)]
		}
		b.WriteString(name)
		b.WriteString(term)
	}
	if _, err := e.Stdout.Write([]byte(b.String())); err != nil {
		return txtWriteFail(e, "basename", err)
	}
	return 0
}
