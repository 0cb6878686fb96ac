package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

func init() { register("tail", txtTailMain) }

var txtTailSpec = optSpec{
	short: "c:n:fFqs:vz0123456789",
	long: map[string]bool{
		"bytes": true, "lines": true, "follow": false, "quiet": false, "silent": false,
		"verbose": false, "zero-terminated": false, "retry": false, "pid": true,
		"sleep-interval": true, "max-unchanged-stats": true,
	},
	alias: map[string]string{
		"bytes": "c", "lines": "n", "quiet": "q", "silent": "q",
		"verbose": "v", "zero-terminated": "z", "sleep-interval": "s",
	},
}

// txtTailObsolete parses tail's obsolete first argument (-N[bcl][f],
// +N[bcl][f]) when the command line has the form that allows it.
func txtTailObsolete(rest []string) (ok bool, count uint64, fromStart, lines, follow bool, bad bool) {
	n := len(rest) + 1
	if !(n == 2 || (n == 3 && !(len(rest[1]) > 1 && rest[1][0] == '-')) || (n >= 3 && n <= 4 && rest[1] == "--")) {
		return false, 0, false, false, false, false
	}
	a := rest[0]
	if a == "" {
		return
	}
	p := a[1:]
	switch a[0] {
	case '+':
		fromStart = true
	case '-':
		if p == "" || p == "c" {
			return
		}
	default:
		return
	}
	i := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	num := p[:i]
	p = p[i:]
	def := uint64(10)
	lines = true
	if p != "" {
		switch p[0] {
		case 'b':
			def *= 512
			lines = false
			p = p[1:]
		case 'c':
			lines = false
			p = p[1:]
		case 'l':
			p = p[1:]
		}
	}
	if strings.HasPrefix(p, "f") {
		follow = true
		p = p[1:]
	}
	if p != "" {
		return false, 0, false, false, false, false
	}
	if num == "" {
		return true, def, fromStart, lines, follow, false
	}
	v, overflow, good := txtParseSize(num)
	if !good || overflow {
		return true, 0, fromStart, lines, follow, true
	}
	if def != 10 {
		if v > ^uint64(0)/512 {
			return true, 0, fromStart, lines, follow, true
		}
		v *= 512
	}
	return true, v, fromStart, lines, follow, false
}

func txtTailMain(ctx context.Context, e *Env, args []string) int {
	count := uint64(10)
	lines, fromStart, follow := true, false, false
	header := 0
	delim := byte('\n')
	rest := args[1:]
	if ok, n, fs, ln, fo, bad := txtTailObsolete(rest); ok {
		if bad {
			return fail(e, "tail", 1, "invalid number: %s", txtQuoteL(rest[0]))
		}
		count, fromStart, lines, follow = n, fs, ln, fo
		rest = rest[1:]
	}
	// --follow takes an optional argument, which optSpec cannot say.
	for i, a := range rest {
		if a == "--" {
			break
		}
		if name, _, ok := strings.Cut(a, "="); ok && len(name) > 3 && strings.HasPrefix("--follow", name) {
			rest = append(append(append([]string(nil), rest[:i]...), "--follow"), rest[i+1:]...)
		}
	}
	opts, operands, err := txtTailSpec.parse(rest)
	if err != nil {
		return badUsage(e, "tail", err, 1)
	}
	for _, o := range opts {
		switch o.name {
		case "c", "n":
			v := o.value
			fs := false
			if strings.HasPrefix(v, "+") {
				fs = true
				v = v[1:]
			} else if strings.HasPrefix(v, "-") {
				v = v[1:]
			}
			n, overflow, good := txtParseSize(v)
			what := "lines"
			if o.name == "c" {
				what = "bytes"
			}
			if !good || strings.HasPrefix(v, "+") || strings.HasPrefix(v, "-") {
				return fail(e, "tail", 1, "invalid number of %s: %s", what, txtQuoteL(o.value))
			}
			if overflow {
				return fail(e, "tail", 1, "invalid number of %s: %s: Value too large for defined data type", what, txtQuoteL(o.value))
			}
			count, fromStart, lines = n, fs, o.name == "n"
		case "f", "F", "follow":
			follow = true
		case "q":
			header = -1
		case "v":
			header = 1
		case "z":
			delim = 0
		case "retry", "pid", "s", "max-unchanged-stats":
		default:
			return fail(e, "tail", 1, "option used in invalid context -- %s", o.name)
		}
	}
	if follow {
		return fail(e, "tail", 1, "-f is not supported")
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	showHeaders := header == 1 || (header == 0 && len(operands) > 1)
	out := txtOut(e)
	status := 0
	first := true
	for _, name := range operands {
		if ctx.Err() != nil {
			break
		}
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			if txtIsDirErr(err) {
				if showHeaders {
					txtWriteHeader(out, name, &first)
				}
				fmt.Fprintf(e.Stderr, "tail: error reading %s: %s\n", txtQuoteAF(name), errText(err))
			} else {
				fmt.Fprintf(e.Stderr, "tail: cannot open %s for reading: %s\n", txtQuoteAF(name), errText(err))
			}
			status = 1
			continue
		}
		if showHeaders {
			txtWriteHeader(out, name, &first)
		}
		er := &txtErrReader{r: r}
		switch {
		case fromStart && lines:
			err = txtTailSkipLines(out, er, count, delim)
		case fromStart:
			skip := count
			if skip > 0 {
				skip--
			}
			_, err = io.CopyN(io.Discard, er, int64(min(skip, 1<<62)))
			if err == nil {
				_, err = io.Copy(out, er)
			} else if err == io.EOF {
				err = nil
			}
		case lines:
			err = txtTailLines(out, er, count, delim)
		default:
			err = txtTailBytes(out, er, count)
		}
		r.Close()
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			if er.err == nil {
				return txtWriteFail(e, "tail", err)
			}
			out.Flush()
			fmt.Fprintf(e.Stderr, "tail: error reading %s: %s\n", txtQuoteAF(name), errText(err))
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "tail", err)
	}
	if ctx.Err() != nil {
		return 130
	}
	return status
}

// txtTailSkipLines copies r from its line n (1-based) on.
func txtTailSkipLines(out *bufio.Writer, r io.Reader, n uint64, delim byte) error {
	skip := n
	if skip > 0 {
		skip--
	}
	buf := make([]byte, 64<<10)
	for {
		m, err := r.Read(buf)
		chunk := buf[:m]
		for skip > 0 && len(chunk) > 0 {
			i := bytes.IndexByte(chunk, delim)
			if i < 0 {
				chunk = nil
				break
			}
			chunk = chunk[i+1:]
			skip--
		}
		if skip == 0 && len(chunk) > 0 {
			if _, werr := out.Write(chunk); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// txtTailLines writes the last n lines of r, holding only those in
// memory.
func txtTailLines(out *bufio.Writer, r io.Reader, n uint64, delim byte) error {
	if n == 0 {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var ring [][]byte // a queue of at most n lines, oldest at head
	head := 0
	var cur []byte
	for {
		chunk, err := br.ReadSlice(delim)
		if len(chunk) > 0 {
			if cur == nil && uint64(len(ring)-head) >= n {
				// Reuse the oldest line's storage.
				cur = ring[head][:0]
				ring[head] = nil
				head++
			}
			cur = append(cur, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if cur != nil && (err != nil || cur[len(cur)-1] == delim) {
			ring = append(ring, cur)
			cur = nil
			if head > 1024 && head > len(ring)/2 {
				ring = append(ring[:0], ring[head:]...)
				head = 0
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	for _, l := range ring[head:] {
		if _, err := out.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// txtTailBytes writes the last n bytes of r.
func txtTailBytes(out *bufio.Writer, r io.Reader, n uint64) error {
	var keep []byte
	buf := make([]byte, 64<<10)
	for {
		m, err := r.Read(buf)
		keep = append(keep, buf[:m]...)
		if excess := uint64(len(keep)) - min(n, uint64(len(keep))); excess > 0 && (excess >= n || excess >= 1<<20) {
			keep = append(keep[:0], keep[excess:]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if uint64(len(keep)) > n {
		keep = keep[uint64(len(keep))-n:]
	}
	_, err := out.Write(keep)
	return err
}
