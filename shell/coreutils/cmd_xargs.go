package coreutils

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

func init() { register("xargs", filXargsMain) }

var filXargsSpec = optSpec{
	short: "0a:d:E:I:L:n:oP:prs:tx",
	long: map[string]bool{
		"null": false, "arg-file": true, "delimiter": true, "eof": true,
		"replace": true, "max-lines": true, "max-args": true, "max-procs": true,
		"interactive": false, "no-run-if-empty": false, "max-chars": true,
		"verbose": false, "exit": false, "open-tty": false, "show-limits": false,
		"process-slot-var": true,
	},
	alias: map[string]string{
		"null": "0", "arg-file": "a", "delimiter": "d", "eof": "E", "replace": "I",
		"max-lines": "L", "max-args": "n", "max-procs": "P", "interactive": "p",
		"no-run-if-empty": "r", "max-chars": "s", "verbose": "t", "exit": "x",
		"open-tty": "o",
	},
}

// filXargsMaxChars is the command-line size xargs builds up to, as GNU's
// default buffer (128 KiB).
const filXargsMaxChars = 128 * 1024

// filXargsMain builds command lines from standard input and runs them
// through Env.Run, one at a time (-P is accepted and ignored). Exit
// statuses: 123 if a command failed, 124 if one exited 255, 126/127 when
// a command could not be run (status 126/127 from Run), 1 for bad input.
func filXargsMain(ctx context.Context, e *Env, args []string) int {
	// Options end at the first operand (the command): no permutation.
	argv := args[1:]
	end := len(argv)
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			end = i
			break
		}
		if len(a) < 2 || a[0] != '-' {
			end = i
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, hasVal := strings.Cut(a[2:], "=")
			if full, takes, err := filXargsSpec.matchLong(name); err == nil && takes && !hasVal && full != "" {
				i++
			}
			continue
		}
		// A short cluster: skip a separate value.
		for j := 1; j < len(a); j++ {
			known, takes := filXargsSpec.shortTakes(a[j])
			if !known {
				break
			}
			if takes {
				if j+1 == len(a) {
					i++
				}
				break
			}
		}
	}
	var cmd []string
	optArgs := argv[:min(end, len(argv))]
	if end < len(argv) {
		cmd = argv[end:]
		if cmd[0] == "--" {
			cmd = cmd[1:]
		}
	}
	opts, _, code, ok := filParse(e, "xargs", &filXargsSpec, append([]string{"xargs"}, optArgs...), 1)
	if !ok {
		return code
	}
	x := &filXargs{e: e, ctx: ctx, maxChars: filXargsMaxChars}
	var delim *byte
	argFile := ""
	for _, o := range opts {
		switch o.name {
		case "0":
			z := byte(0)
			delim = &z
		case "d":
			d, ok := filXargsDelim(o.value)
			if !ok {
				return fail(e, "xargs", 1, "invalid input delimiter specification %s: the delimiter must be either a single character or an escape sequence starting with \\.", o.value)
			}
			delim = &d
		case "a":
			argFile = o.value
		case "E":
			x.eof = o.value
		case "I":
			r := o.value
			if r == "" {
				r = "{}"
			}
			x.replace, x.maxLines, x.maxArgs = &r, 1, 0
		case "L":
			v := o.value
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return badUsage(e, "xargs", fmt.Errorf("value %s for -L option should be >= 1", v), 1)
			}
			x.maxLines, x.maxArgs, x.replace = n, 0, nil
		case "n":
			n, err := strconv.Atoi(o.value)
			if err != nil || n < 1 {
				return badUsage(e, "xargs", fmt.Errorf("value %s for -n option should be >= 1", o.value), 1)
			}
			x.maxArgs = n
			if x.replace == nil {
				x.maxLines = 0
			}
		case "s":
			n, err := strconv.Atoi(o.value)
			if err != nil {
				return badUsage(e, "xargs", fmt.Errorf("invalid number \"%s\" for -s option", o.value), 1)
			}
			if n < 1 {
				fmt.Fprintf(e.Stderr, "xargs: value %s for -s option should be >= 1\n", o.value)
				n = 1
			}
			x.maxChars = n
		case "P":
			if _, err := strconv.Atoi(o.value); err != nil {
				return badUsage(e, "xargs", fmt.Errorf("invalid number \"%s\" for -P option", o.value), 1)
			}
		case "r":
			x.noRunEmpty = true
		case "t":
			x.trace = true
		case "x":
			x.exitOnSize = true
		case "p", "o":
			return fail(e, "xargs", 1, "interactive mode (-%s) is not supported", o.name)
		case "show-limits":
		}
	}
	if len(cmd) == 0 {
		cmd = []string{"echo"}
	}
	x.cmd = cmd
	if x.cmdSize() > x.maxChars {
		return fail(e, "xargs", 1, "cannot fit single argument within argument list size limit")
	}
	in := e.Stdin
	if argFile != "" {
		abs, err := filAbs(e, argFile)
		var rc io.ReadCloser
		if err == nil {
			rc, err = e.FS.Open(ctx, abs)
		}
		if err != nil {
			return fail(e, "xargs", 1, "Cannot open input file %s: %s", filQuoteLocale(argFile), errText(err))
		}
		defer rc.Close()
		in = rc
	}
	if in == nil {
		in = strings.NewReader("")
	}
	r := bufio.NewReader(in)
	var err error
	if delim != nil {
		err = x.readDelim(r, *delim)
	} else {
		err = x.readWords(r)
	}
	if x.stop {
		return x.status
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "xargs: %s\n", err)
		return 1
	}
	if x.quoteErr {
		if x.status == 0 {
			return 1
		}
		return x.status
	}
	x.flush(true)
	return x.status
}

type filXargs struct {
	e          *Env
	ctx        context.Context
	cmd        []string
	replace    *string
	maxArgs    int
	maxLines   int
	maxChars   int
	eof        string
	noRunEmpty bool
	trace      bool
	exitOnSize bool

	items     []string
	lines     int
	size      int
	ran       bool
	status    int
	stop      bool
	lastBlank bool
	quoteErr  bool
}

func filXargsDelim(s string) (byte, bool) {
	if len(s) == 1 {
		return s[0], true
	}
	if len(s) < 2 || s[0] != '\\' {
		return 0, false
	}
	switch s[1] {
	case 'a':
		return '\a', len(s) == 2
	case 'b':
		return '\b', len(s) == 2
	case 'f':
		return '\f', len(s) == 2
	case 'n':
		return '\n', len(s) == 2
	case 'r':
		return '\r', len(s) == 2
	case 't':
		return '\t', len(s) == 2
	case 'v':
		return '\v', len(s) == 2
	case '\\':
		return '\\', len(s) == 2
	case 'x':
		v, err := strconv.ParseUint(s[2:], 16, 8)
		return byte(v), err == nil
	}
	v, err := strconv.ParseUint(s[1:], 8, 8)
	return byte(v), err == nil
}

// add takes one input item; endOfLine marks the end of a logical line.
func (x *filXargs) add(item string, endOfLine bool) {
	if x.stop {
		return
	}
	if x.replace != nil {
		x.items = []string{item}
		x.flush(false)
		return
	}
	if x.size+len(item)+1 > x.maxChars-x.cmdSize() {
		if len(x.items) == 0 {
			fmt.Fprintln(x.e.Stderr, "xargs: argument line too long")
			x.status, x.stop = 1, true
			return
		}
		x.flush(false)
	}
	x.items = append(x.items, item)
	x.size += len(item) + 1
	if endOfLine {
		x.lines++
	}
	if x.maxArgs > 0 && len(x.items) >= x.maxArgs || x.maxLines > 0 && x.lines >= x.maxLines {
		x.flush(false)
	}
}

func (x *filXargs) cmdSize() int {
	n := 0
	for _, a := range x.cmd {
		n += len(a) + 1
	}
	return n
}

// flush runs the command on the pending items; at the end of input it
// runs it once even without items, unless -r.
func (x *filXargs) flush(final bool) {
	if x.stop || x.ctx.Err() != nil {
		return
	}
	if len(x.items) == 0 && (!final || x.ran || x.noRunEmpty || x.replace != nil) {
		return
	}
	var argv []string
	if x.replace != nil {
		line := ""
		if len(x.items) > 0 {
			line = x.items[0]
		}
		for _, a := range x.cmd {
			argv = append(argv, strings.ReplaceAll(a, *x.replace, line))
		}
	} else {
		argv = append(append([]string(nil), x.cmd...), x.items...)
	}
	x.items, x.lines, x.size, x.ran = nil, 0, 0, true
	if x.trace {
		fmt.Fprintln(x.e.Stderr, strings.Join(argv, " "))
	}
	if x.e.Run == nil {
		fmt.Fprintf(x.e.Stderr, "xargs: %s: No such file or directory\n", argv[0])
		x.status, x.stop = 127, true
		return
	}
	st := x.e.Run(x.ctx, argv, strings.NewReader(""), x.e.Stdout, x.e.Stderr)
	switch {
	case st == 0:
	case st == 255:
		fmt.Fprintf(x.e.Stderr, "xargs: %s: exited with status 255; aborting\n", argv[0])
		x.status, x.stop = 124, true
	case st == 126 || st == 127:
		x.status, x.stop = st, true
	default:
		x.status = 123
	}
}

// readDelim splits input at delim, without quote processing.
func (x *filXargs) readDelim(r *bufio.Reader, delim byte) error {
	for !x.stop {
		item, err := r.ReadString(delim)
		if err == io.EOF {
			if item != "" {
				x.add(item, true)
			}
			return nil
		}
		if err != nil {
			return err
		}
		item = item[:len(item)-1]
		if x.eof != "" && item == x.eof {
			return nil
		}
		x.add(item, true)
	}
	return nil
}

// readWords splits input into blank-separated words with quotes and
// backslashes, as GNU xargs does by default; with -I and -L, lines
// matter.
func (x *filXargs) readWords(r *bufio.Reader) error {
	var word strings.Builder
	inWord := false
	var lineItems []string
	emit := func() bool {
		w := word.String()
		word.Reset()
		inWord = false
		if x.eof != "" && w == x.eof {
			return false
		}
		lineItems = append(lineItems, w)
		return true
	}
	endLine := func() {
		if x.replace != nil {
			if len(lineItems) > 0 {
				x.add(strings.Join(lineItems, " "), true)
			}
		} else {
			for i, it := range lineItems {
				x.add(it, i == len(lineItems)-1)
			}
		}
		lineItems = nil
	}
	for !x.stop {
		c, err := r.ReadByte()
		if err == io.EOF {
			if inWord && !emit() {
				endLine()
				return nil
			}
			endLine()
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case c == '\n':
			if inWord && !emit() {
				endLine()
				return nil
			}
			// A line ending in a blank continues (for -L).
			if x.maxLines > 0 && x.replace == nil && word.Len() == 0 && len(lineItems) > 0 && x.lastBlank {
				x.lastBlank = false
				continue
			}
			endLine()
		case c == ' ' || c == '\t':
			if x.replace != nil && len(lineItems) == 0 && !inWord {
				continue
			}
			if x.replace != nil {
				word.WriteByte(c)
				inWord = true
				x.lastBlank = true
				continue
			}
			if inWord && !emit() {
				endLine()
				return nil
			}
			x.lastBlank = true
			continue
		case c == '\'' || c == '"':
			inWord = true
			for {
				d, err := r.ReadByte()
				if err != nil || d == '\n' {
					kind := "single"
					if c == '"' {
						kind = "double"
					}
					fmt.Fprintf(x.e.Stderr, "xargs: unmatched %s quote; by default quotes are special to xargs unless you use the -0 option\n", kind)
					x.quoteErr = true
					endLine()
					x.flush(false)
					return nil
				}
				if d == c {
					break
				}
				word.WriteByte(d)
			}
		case c == '\\':
			d, err := r.ReadByte()
			if err != nil {
				word.WriteByte(c)
			} else {
				word.WriteByte(d)
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
		x.lastBlank = false
	}
	return nil
}
