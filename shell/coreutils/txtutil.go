package coreutils

// Helpers shared by the text commands (cat, head, tail, wc, sort, uniq,
// cut, tr, tee, basename, dirname, seq, date, sleep, base64, md5sum,
// sha256sum, env, realpath). Every package-level name here starts with
// "txt".

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// txtParse parses a command line's options; on a getopt error it prints
// GNU's complaint and returns ok false with status.
func txtParse(e *Env, name string, spec *optSpec, args []string, status int) (opts []opt, operands []string, code int, ok bool) {
	opts, operands, err := spec.parse(args[1:])
	if err != nil {
		return nil, nil, badUsage(e, name, err, status), false
	}
	return opts, operands, 0, true
}

// txtCtxReader checks ctx before every read, so that a command looping
// over a big input stops soon after the context is cancelled.
type txtCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *txtCtxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	return c.r.Read(p)
}

// txtStdin is e.Stdin, never nil.
func txtStdin(e *Env) io.Reader {
	if e.Stdin == nil {
		return strings.NewReader("")
	}
	return e.Stdin
}

// txtOpen opens an input operand: "-" is standard input (which is not
// closed), anything else a file relative to e.Dir. The reader honours
// ctx.
func txtOpen(ctx context.Context, e *Env, operand string) (io.ReadCloser, error) {
	if operand == "-" {
		return io.NopCloser(&txtCtxReader{ctx, txtStdin(e)}), nil
	}
	f, err := e.FS.Open(ctx, e.Abs(operand))
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{&txtCtxReader{ctx, f}, f}, nil
}

// txtIsDirErr tells whether err is EISDIR (the FS reports a directory
// when it is opened; GNU finds out when it reads).
func txtIsDirErr(err error) bool { return errors.Is(err, syscall.EISDIR) }

// txtIsCtxErr tells whether err comes from a cancelled context.
func txtIsCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// txtOut is a buffered standard output.
func txtOut(e *Env) *bufio.Writer { return bufio.NewWriterSize(e.Stdout, 64<<10) }

// txtCEscape is the C escape of a byte, as quotearg writes it.
func txtCEscape(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\%03o`, c)
}

// txtQuoteAF quotes s as GNU's quoteaf/quote in shell-escape-always
// style: 'x', "it's", 'a'$'\n”b'.
func txtQuoteAF(s string) string { return txtShellQuote(s, false, false) }

// txtQuoteF quotes s as GNU's quotef: only when needed, and colons too:
// x, 'a b', 'a:b'.
func txtQuoteF(s string) string { return txtShellQuote(s, true, true) }

// txtShellQuote follows gnulib quotearg's shell-escape styles.
func txtShellQuote(s string, elide, colon bool) string {
	if elide {
		if s == "" {
			return "''"
		}
		plain := true
		for i := 0; i < len(s) && plain; {
			r, size := utf8.DecodeRuneInString(s[i:])
			c := s[i]
			switch {
			case r == utf8.RuneError && size == 1, size == 1 && !txtPrintable(r):
				plain = false
			case size > 1:
				plain = txtPrintable(r)
			case c == '{' || c == '}':
				if len(s) == 1 {
					plain = false
				}
			case c == '#' || c == '~':
				if i == 0 {
					plain = false
				}
			case strings.IndexByte(" !\"$&()*;<=>[^`|'?\\\t\n", c) >= 0:
				plain = false
			case c == ':' && colon:
				plain = false
			}
			i += size
		}
		if plain {
			return s
		}
	}
	var b strings.Builder
	b.WriteByte('\'')
	inEsc := false
	hasSingle := false
	compat := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		if (r == utf8.RuneError && size == 1) || (size == 1 && !txtPrintable(r)) || (size > 1 && !txtPrintable(r)) {
			compat = false
			if !inEsc {
				b.WriteString("'$'")
				inEsc = true
			}
			for k := 0; k < size; k++ {
				b.WriteString(txtCEscape(s[i+k]))
			}
			i += size
			continue
		}
		switch {
		case c == '\'':
			hasSingle = true
		case size > 1:
		case c == ' ' || c == '{' || c == '}' || c == '#' || c == '~':
		case strings.IndexByte("%+,-./:]_", c) >= 0 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z'):
		case strings.IndexByte("!\"$&()*;<=>[^`|?\\", c) >= 0:
			compat = false
		}
		if inEsc {
			b.WriteString("''")
			inEsc = false
		}
		if c == '\'' {
			b.WriteString(`'\''`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if hasSingle && compat {
		return "\"" + s + "\""
	}
	b.WriteByte('\'')
	return b.String()
}

// txtPrintable is iswprint in a UTF-8 locale, near enough.
func txtPrintable(r rune) bool {
	if r < 0x80 {
		return r >= 0x20 && r < 0x7f
	}
	return unicode.IsGraphic(r)
}

// txtQuoteL quotes s as GNU's quote() does in a UTF-8 locale: ‘x’,
// with C escapes for control characters.
func txtQuoteL(s string) string {
	var b strings.Builder
	b.WriteString("\u2018")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case (r == utf8.RuneError && size == 1) || (size == 1 && !txtPrintable(r)):
			b.WriteString(txtCEscape(c))
			i++
			continue
		case c == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("\u2019")
	return b.String()
}

// txtParseSize parses a count with GNU's xstrtoumax multiplier
// suffixes (b, k/K, m/M, ..., with optional B or iB), the way head and
// tail read -n and -c. It reports overflow separately.
func txtParseSize(s string) (n uint64, overflow bool, ok bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false, false
	}
	for _, c := range s[:i] {
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			overflow = true
			n = ^uint64(0)
			continue
		}
		if !overflow {
			n = n*10 + d
		}
	}
	suf := s[i:]
	if suf == "" {
		return n, overflow, true
	}
	mult, ok := txtSuffixMult(suf)
	if !ok {
		return 0, false, false
	}
	if mult == ^uint64(0) || (mult != 1 && n > ^uint64(0)/mult) {
		return ^uint64(0), true, true
	}
	return n * mult, overflow, true
}

// txtSuffixMult is the multiplier of a size suffix (b, k, K, m, M, G,
// T, P, E, Z, Y, optionally followed by B for powers of 1000 or iB).
func txtSuffixMult(suf string) (uint64, bool) {
	if suf == "b" {
		return 512, true
	}
	c := suf[0]
	if c == 'k' || c == 'm' {
		c -= 'a' - 'A'
	}
	idx := strings.IndexByte("KMGTPEZY", c)
	if idx < 0 {
		return 0, false
	}
	base := uint64(1024)
	switch suf[1:] {
	case "", "iB":
	case "B":
		base = 1000
	default:
		return 0, false
	}
	m := uint64(1)
	for k := 0; k <= idx; k++ {
		if m > ^uint64(0)/base {
			return ^uint64(0), true
		}
		m *= base
	}
	return m, true
}

// txtHeaderName is how head and tail name an operand in a header.
func txtHeaderName(operand string) string {
	if operand == "-" {
		return "standard input"
	}
	return operand
}

// txtErrReader remembers the error its reader returned, to tell read
// errors from write errors after io.Copy.
type txtErrReader struct {
	r   io.Reader
	err error
}

func (r *txtErrReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// txtWriteFail reports a failure to write standard output: a closed
// pipe ends the command quietly with SIGPIPE's status, as it would kill
// GNU's; anything else is "name: write error: ...".
func txtWriteFail(e *Env, name string, err error) int {
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) {
		return 141
	}
	return fail(e, name, 1, "write error: %s", errText(err))
}

// txtOutErr is the sticky error of a buffered output, if a flush has
// failed (bufio.Writer.Write returns it for an empty write).
func txtOutErr(out *bufio.Writer) error {
	_, err := out.Write(nil)
	return err
}

// txtParsePlus parses like getopt with a leading '+' in its option
// string: options end at the first operand (no permutation).
func txtParsePlus(spec *optSpec, args []string) ([]opt, []string, error) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			opts, _, err := spec.parse(args[:i])
			return opts, args[i+1:], err
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		i++
		if strings.HasPrefix(a, "--") {
			name := a[2:]
			if !strings.Contains(name, "=") {
				if _, takes, err := spec.matchLong(name); err == nil && takes && i < len(args) {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			known, takes := spec.shortTakes(a[j])
			if known && takes {
				if j == len(a)-1 && i < len(args) {
					i++
				}
				break
			}
		}
	}
	opts, _, err := spec.parse(args[:i])
	return opts, args[i:], err
}
