package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
)

func init() { register("paste", txtPasteMain) }

var txtPasteSpec = optSpec{short: "d:sz", long: map[string]bool{"delimiters": true, "serial": false, "zero-terminated": false},
	alias: map[string]string{"delimiters": "d", "serial": "s", "zero-terminated": "z"}}

// paste merges lines of files: side by side, or each file on one line
// with -s; delimiters cycle through -d's list (with \n, \t, \\ and \0).
func txtPasteMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "paste", &txtPasteSpec, args, 1)
	if !ok {
		return code
	}
	delims := []string{"\t"}
	serial := false
	term := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "d":
			delims = pasteDelims(o.value)
		case "s":
			serial = true
		case "z":
			term = 0
		}
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	out := bufio.NewWriter(e.Stdout)
	defer out.Flush()
	status := 0
	readers := make([]*bufio.Reader, len(operands))
	var stdin *bufio.Reader // every "-" reads the one standard input
	for i, name := range operands {
		if name == "-" && stdin != nil {
			readers[i] = stdin
			continue
		}
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			failPath(e, "paste", txtQuoteF(name), err, 1)
			return 1
		}
		defer r.Close()
		readers[i] = bufio.NewReader(r)
		if name == "-" {
			stdin = readers[i]
		}
	}
	next := func(r *bufio.Reader) ([]byte, bool) {
		line, err := r.ReadBytes(term)
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				fmt.Fprintf(e.Stderr, "paste: %v\n", err)
				status = 1
			}
			return nil, false
		}
		return bytes.TrimSuffix(line, []byte{term}), true
	}
	if serial {
		for _, r := range readers {
			n := 0
			for {
				line, ok := next(r)
				if !ok {
					break
				}
				if n > 0 && delims[(n-1)%len(delims)] != "" {
					out.WriteString(delims[(n-1)%len(delims)])
				}
				out.Write(line)
				n++
			}
			out.WriteByte(term)
		}
		return status
	}
	done := make([]bool, len(readers))
	for ctx.Err() == nil {
		var row bytes.Buffer
		any := false
		for i, r := range readers {
			if i > 0 {
				row.WriteString(delims[(i-1)%len(delims)])
			}
			if done[i] {
				continue
			}
			line, ok := next(r)
			if !ok {
				done[i] = true
				continue
			}
			any = true
			row.Write(line)
		}
		if !any {
			break
		}
		out.Write(row.Bytes())
		out.WriteByte(term)
	}
	return status
}

// pasteDelims reads -d's list; "\0" is the empty delimiter.
func pasteDelims(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				out = append(out, "\n")
			case 't':
				out = append(out, "\t")
			case '0':
				out = append(out, "")
			default:
				out = append(out, string(s[i]))
			}
			continue
		}
		out = append(out, string(c))
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}
