package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

func init() { register("head", txtHeadMain) }

var txtHeadSpec = optSpec{
	short: "c:n:qvz0123456789",
	long: map[string]bool{
		"bytes": true, "lines": true, "quiet": false, "silent": false,
		"verbose": false, "zero-terminated": false,
	},
	alias: map[string]string{
		"bytes": "c", "lines": "n", "quiet": "q", "silent": "q",
		"verbose": "v", "zero-terminated": "z",
	},
}

// txtHeadCount parses head's -n/-c value: [-]NUM[suffix].
func txtHeadCount(e *Env, name, val string, lines bool) (n uint64, elide bool, ok bool) {
	s := val
	if strings.HasPrefix(s, "-") {
		elide = true
		s = s[1:]
	}
	n, overflow, good := txtParseSize(s)
	what := "bytes"
	if lines {
		what = "lines"
	}
	if !good {
		fail(e, name, 1, "invalid number of %s: %s", what, txtQuoteL(val))
		return 0, false, false
	}
	if overflow {
		fail(e, name, 1, "invalid number of %s: %s: Value too large for defined data type", what, txtQuoteL(val))
		return 0, false, false
	}
	return n, elide, true
}

func txtHeadMain(ctx context.Context, e *Env, args []string) int {
	count := uint64(10)
	lines, elide := true, false
	header := 0 // -1 never, 1 always, 0 when several files
	delim := byte('\n')
	rest := args[1:]
	if len(rest) > 0 && len(rest[0]) > 1 && rest[0][0] == '-' && rest[0][1] >= '0' && rest[0][1] <= '9' {
		a := rest[0][1:]
		i := 0
		for i < len(a) && a[i] >= '0' && a[i] <= '9' {
			i++
		}
		num := a[:i]
		mult := ""
		for _, c := range []byte(a[i:]) {
			switch c {
			case 'c':
				lines, mult = false, ""
			case 'b', 'k', 'm':
				lines, mult = false, string(c)
			case 'l':
				lines = true
			case 'q':
				header = -1
			case 'v':
				header = 1
			case 'z':
				delim = 0
			default:
				fmt.Fprintf(e.Stderr, "head: invalid trailing option -- %c\nTry 'head --help' for more information.\n", c)
				return 1
			}
		}
		n, _, ok := txtHeadCount(e, "head", num+mult, lines)
		if !ok {
			return 1
		}
		count = n
		rest = rest[1:]
	}
	opts, operands, err := txtHeadSpec.parse(rest)
	if err != nil {
		return badUsage(e, "head", err, 1)
	}
	for _, o := range opts {
		switch o.name {
		case "c", "n":
			n, el, ok := txtHeadCount(e, "head", o.value, o.name == "n")
			if !ok {
				return 1
			}
			count, elide, lines = n, el, o.name == "n"
		case "q":
			header = -1
		case "v":
			header = 1
		case "z":
			delim = 0
		default:
			fmt.Fprintf(e.Stderr, "head: invalid trailing option -- %s\nTry 'head --help' for more information.\n", o.name)
			return 1
		}
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
				fmt.Fprintf(e.Stderr, "head: error reading %s: %s\n", txtQuoteAF(name), errText(err))
			} else {
				fmt.Fprintf(e.Stderr, "head: cannot open %s for reading: %s\n", txtQuoteAF(name), errText(err))
			}
			status = 1
			continue
		}
		if showHeaders {
			txtWriteHeader(out, name, &first)
		}
		er := &txtErrReader{r: r}
		switch {
		case lines && !elide:
			err = txtHeadLines(out, er, count, delim)
		case lines:
			err = txtHeadElideLines(out, er, count, delim)
		case !elide:
			_, err = io.CopyN(out, er, int64(min(count, 1<<62)))
			if err == io.EOF {
				err = nil
			}
		default:
			err = txtHeadElideBytes(out, er, count)
		}
		r.Close()
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			if er.err == nil {
				return txtWriteFail(e, "head", err)
			}
			out.Flush()
			fmt.Fprintf(e.Stderr, "head: error reading %s: %s\n", txtQuoteAF(name), errText(err))
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "head", err)
	}
	if ctx.Err() != nil {
		return 130
	}
	return status
}

// txtWriteHeader writes head's and tail's "==> name <==" line.
func txtWriteHeader(out *bufio.Writer, name string, first *bool) {
	if !*first {
		out.WriteByte('\n')
	}
	*first = false
	fmt.Fprintf(out, "==> %s <==\n", txtHeaderName(name))
}

func txtHeadLines(out *bufio.Writer, r io.Reader, n uint64, delim byte) error {
	if n == 0 {
		return nil
	}
	buf := make([]byte, 64<<10)
	for {
		m, err := r.Read(buf)
		if werr := txtOutErr(out); werr != nil {
			return werr
		}
		chunk := buf[:m]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, delim)
			if i < 0 {
				out.Write(chunk)
				break
			}
			out.Write(chunk[:i+1])
			chunk = chunk[i+1:]
			n--
			if n == 0 {
				return nil
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

func txtHeadElideLines(out *bufio.Writer, r io.Reader, n uint64, delim byte) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if n == 0 {
		_, err := io.Copy(out, br)
		return err
	}
	var queue [][]byte
	var cur []byte
	for {
		chunk, err := br.ReadSlice(delim)
		if werr := txtOutErr(out); werr != nil {
			return werr
		}
		cur = append(cur, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(cur) > 0 {
			queue = append(queue, cur)
			cur = nil
			if uint64(len(queue)) > n {
				out.Write(queue[0])
				queue[0] = nil
				queue = queue[1:]
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

func txtHeadElideBytes(out *bufio.Writer, r io.Reader, n uint64) error {
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		m, err := r.Read(buf)
		if werr := txtOutErr(out); werr != nil {
			return werr
		}
		pending = append(pending, buf[:m]...)
		// Flush once the excess is as big as what is kept, so that the
		// copying stays linear.
		if excess := uint64(len(pending)) - min(n, uint64(len(pending))); excess > 0 && (excess >= n || excess >= 1<<20) {
			out.Write(pending[:excess])
			pending = append(pending[:0], pending[excess:]...)
		}
		if err == io.EOF {
			if excess := uint64(len(pending)) - min(n, uint64(len(pending))); excess > 0 {
				out.Write(pending[:excess])
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}
