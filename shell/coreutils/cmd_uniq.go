package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

func init() { register("uniq", txtUniqMain) }

var txtUniqSpec = optSpec{
	short: "0123456789cdDf:is:uw:z",
	long: map[string]bool{
		"count": false, "repeated": false, "all-repeated": false, "skip-fields": true,
		"ignore-case": false, "skip-chars": true, "unique": false, "check-chars": true,
		"zero-terminated": false, "group": false,
	},
	alias: map[string]string{
		"count": "c", "repeated": "d", "skip-fields": "f", "ignore-case": "i",
		"skip-chars": "s", "unique": "u", "check-chars": "w", "zero-terminated": "z",
	},
}

// txtSizeOpt parses a count option the way uniq's size_opt does; big
// values saturate.
func txtSizeOpt(s string) (int, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	t = strings.TrimPrefix(t, "+")
	if t == "" {
		return 0, false
	}
	for _, c := range []byte(t) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > math.MaxInt32 {
		return math.MaxInt32, true
	}
	return int(n), true
}

// txtOptArgs pulls out long options with an optional argument
// (--name[=VALUE]), which optSpec cannot describe, before parsing.
func txtOptArgs(args []string, names ...string) (rest []string, found []opt) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		matched := false
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			name, val, hasVal := strings.Cut(a[2:], "=")
			for _, n := range names {
				if strings.HasPrefix(n, name) {
					if !hasVal {
						val = ""
					}
					found = append(found, opt{n, val})
					matched = true
					break
				}
			}
		}
		if !matched {
			rest = append(rest, a)
		}
	}
	return rest, found
}

// txtArgMatch matches an option argument against its valid words,
// accepting unambiguous prefixes as argmatch does.
func txtArgMatch(val string, words []string) (string, bool) {
	found := ""
	for _, w := range words {
		if w == val {
			return w, true
		}
		if val != "" && strings.HasPrefix(w, val) {
			if found != "" {
				return "", false
			}
			found = w
		}
	}
	return found, found != ""
}

// txtBadArg prints argmatch's complaint about an invalid argument.
func txtBadArg(e *Env, name, option, val string, words []string) int {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: invalid argument %s for %s\nValid arguments are:\n", name, txtQuoteL(val), txtQuoteL(option))
	for _, w := range words {
		fmt.Fprintf(&b, "  - %s\n", txtQuoteL(w))
	}
	fmt.Fprintf(&b, "Try '%s --help' for more information.\n", name)
	io.WriteString(e.Stderr, b.String())
	return 1
}

func txtUniqMain(ctx context.Context, e *Env, args []string) int {
	rest, special := txtOptArgs(args[1:], "all-repeated", "group")
	opts, operands, err := txtUniqSpec.parse(rest)
	if err != nil {
		return badUsage(e, "uniq", err, 1)
	}
	var count, repeated, unique, allRepeated, ignoreCase, grouping bool
	skipFields, skipChars, checkChars := 0, 0, math.MaxInt
	delim := byte('\n')
	allMethod, groupMethod := "none", "separate"
	for _, o := range special {
		if o.name == "all-repeated" {
			allRepeated = true
			if o.value != "" {
				w, ok := txtArgMatch(o.value, []string{"none", "prepend", "separate"})
				if !ok {
					return txtBadArg(e, "uniq", "--all-repeated", o.value, []string{"none", "prepend", "separate"})
				}
				allMethod = w
			}
		} else {
			grouping = true
			if o.value != "" {
				words := []string{"prepend", "append", "separate", "both"}
				w, ok := txtArgMatch(o.value, words)
				if !ok {
					return txtBadArg(e, "uniq", "--group", o.value, words)
				}
				groupMethod = w
			}
		}
	}
	digits := -1
	for _, o := range opts {
		if len(o.name) == 1 && o.name[0] >= '0' && o.name[0] <= '9' {
			if digits < 0 {
				digits = 0
			}
			digits = min(digits*10+int(o.name[0]-'0'), math.MaxInt32)
			skipFields = digits
			continue
		}
		digits = -1
		switch o.name {
		case "c":
			count = true
		case "d":
			repeated = true
		case "D":
			allRepeated = true
		case "f", "s", "w":
			n, ok := txtSizeOpt(o.value)
			if !ok {
				msg := map[string]string{"f": "invalid number of fields to skip", "s": "invalid number of bytes to skip", "w": "invalid number of bytes to compare"}[o.name]
				return fail(e, "uniq", 1, "%s: %s", o.value, msg)
			}
			switch o.name {
			case "f":
				skipFields = n
			case "s":
				skipChars = n
			case "w":
				checkChars = n
			}
		case "i":
			ignoreCase = true
		case "u":
			unique = true
		case "z":
			delim = 0
		}
	}
	if len(operands) > 2 {
		return badUsage(e, "uniq", fmt.Errorf("extra operand %s", txtQuoteL(operands[2])), 1)
	}
	if grouping && (count || repeated || unique || allRepeated) {
		return badUsage(e, "uniq", errors.New("--group is mutually exclusive with -c/-d/-D/-u"), 1)
	}
	if count && allRepeated {
		return badUsage(e, "uniq", errors.New("printing all duplicated lines and repeat counts is meaningless"), 1)
	}
	in := "-"
	if len(operands) > 0 {
		in = operands[0]
	}
	r, err := txtOpen(ctx, e, in)
	if err != nil {
		if txtIsCtxErr(err) {
			return 130
		}
		if txtIsDirErr(err) {
			return fail(e, "uniq", 1, "error reading %s", txtQuoteAF(in))
		}
		return failPath(e, "uniq", txtQuoteF(in), err, 1)
	}
	defer r.Close()
	var w io.Writer = e.Stdout
	var closer io.Closer
	if len(operands) > 1 && operands[1] != "-" {
		f, err := e.FS.Create(ctx, e.Abs(operands[1]), false, 0o644)
		if err != nil {
			return failPath(e, "uniq", txtQuoteF(operands[1]), err, 1)
		}
		w, closer = f, f
	}
	out := bufio.NewWriterSize(w, 64<<10)

	key := func(line []byte) []byte {
		i := 0
		for n := 0; n < skipFields && i < len(line); n++ {
			for i < len(line) && txtSortBlank(line[i]) {
				i++
			}
			for i < len(line) && !txtSortBlank(line[i]) {
				i++
			}
		}
		i += min(skipChars, len(line)-i)
		k := line[i:]
		if len(k) > checkChars {
			k = k[:checkChars]
		}
		return k
	}
	same := func(a, b []byte) bool {
		ka, kb := key(a), key(b)
		if ignoreCase {
			return bytes.Equal(txtASCIIUpper(ka), txtASCIIUpper(kb))
		}
		return bytes.Equal(ka, kb)
	}
	writeLine := func(l []byte) {
		out.Write(l)
		out.WriteByte(delim)
	}

	br := bufio.NewReaderSize(r, 64<<10)
	var prev []byte
	havePrev := false
	groupCount := 0
	firstGroup := true
	readErr := error(nil)
	readLine := func() ([]byte, bool) {
		var line []byte
		for {
			chunk, err := br.ReadSlice(delim)
			line = append(line, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				readErr = err
			}
			if len(line) == 0 {
				return nil, false
			}
			if line[len(line)-1] == delim && err == nil {
				line = line[:len(line)-1]
			}
			return line, true
		}
	}
	// flush ends a group of groupCount copies of prev (non -D modes).
	flush := func() {
		if groupCount == 0 {
			return
		}
		if (repeated && groupCount == 1) || (unique && groupCount > 1) {
			return
		}
		if count {
			fmt.Fprintf(out, "%7d ", groupCount)
		}
		writeLine(prev)
	}
	for {
		line, ok := readLine()
		if !ok || txtOutErr(out) != nil {
			break
		}
		newGroup := !havePrev || !same(prev, line)
		switch {
		case grouping:
			if newGroup {
				if groupMethod == "prepend" || groupMethod == "both" || !firstGroup {
					out.WriteByte(delim)
				}
				firstGroup = false
			}
			writeLine(line)
			prev, havePrev = line, true
		case allRepeated:
			if newGroup {
				groupCount = 1
				prev, havePrev = line, true
				continue
			}
			groupCount++
			if groupCount == 2 {
				if (allMethod == "separate" && !firstGroup) || allMethod == "prepend" {
					out.WriteByte(delim)
				}
				firstGroup = false
				writeLine(prev)
			}
			writeLine(line)
			prev = line
		default:
			if newGroup {
				flush()
				prev, havePrev = line, true
				groupCount = 1
			} else {
				groupCount++
			}
		}
	}
	if !grouping && !allRepeated {
		flush()
	}
	if grouping && !firstGroup && (groupMethod == "append" || groupMethod == "both") {
		out.WriteByte(delim)
	}
	werr := out.Flush()
	if closer != nil {
		if err := closer.Close(); err != nil && werr == nil {
			werr = err
		}
	}
	if readErr != nil {
		if txtIsCtxErr(readErr) {
			return 130
		}
		return fail(e, "uniq", 1, "error reading %s", txtQuoteAF(in))
	}
	if werr != nil {
		return txtWriteFail(e, "uniq", werr)
	}
	return 0
}

// txtASCIIUpper upper-cases ASCII letters only, as toupper does in the
// C.UTF-8 locale on bytes.
func txtASCIIUpper(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = txtUpper(c)
	}
	return out
}
