package coreutils

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

func init() { register("base64", txtBase64Main) }

var txtBase64Spec = optSpec{
	short: "diw:",
	long:  map[string]bool{"decode": false, "ignore-garbage": false, "wrap": true},
	alias: map[string]string{"decode": "d", "ignore-garbage": "i", "wrap": "w"},
}

const txtB64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

var txtB64Index = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(txtB64Alphabet); i++ {
		t[txtB64Alphabet[i]] = int8(i)
	}
	return
}()

func txtBase64Main(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "base64", &txtBase64Spec, args, 1)
	if !ok {
		return code
	}
	decode, ignore := false, false
	wrap := 76
	for _, o := range opts {
		switch o.name {
		case "d":
			decode = true
		case "i":
			ignore = true
		case "w":
			v := strings.TrimLeft(o.value, " \t\n\v\f\r")
			n, err := strconv.ParseUint(v, 10, 63)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange || strings.HasPrefix(v, "-") {
					return fail(e, "base64", 1, "invalid wrap size: %s", txtQuoteL(o.value))
				}
				n = 1 << 62
			}
			wrap = int(min(n, 1<<62))
		}
	}
	if len(operands) > 1 {
		return badUsage(e, "base64", fmt.Errorf("extra operand %s", txtQuoteL(operands[1])), 1)
	}
	name := "-"
	if len(operands) == 1 {
		name = operands[0]
	}
	r, err := txtOpen(ctx, e, name)
	if err != nil {
		if txtIsCtxErr(err) {
			return 130
		}
		if txtIsDirErr(err) {
			return fail(e, "base64", 1, "read error: %s", errText(err))
		}
		return failPath(e, "base64", txtQuoteF(name), err, 1)
	}
	defer r.Close()
	out := txtOut(e)
	er := &txtErrReader{r: r}
	if decode {
		err = txtB64Decode(out, er, ignore)
	} else {
		err = txtB64Encode(out, er, wrap)
	}
	ferr := out.Flush()
	if err != nil {
		if txtIsCtxErr(err) {
			return 130
		}
		if errors.Is(err, txtErrB64Invalid) {
			if ferr != nil {
				return txtWriteFail(e, "base64", ferr)
			}
			return fail(e, "base64", 1, "invalid input")
		}
		if er.err != nil {
			return fail(e, "base64", 1, "read error: %s", errText(err))
		}
		return txtWriteFail(e, "base64", err)
	}
	if ferr != nil {
		return txtWriteFail(e, "base64", ferr)
	}
	return 0
}

func txtB64Encode(out *bufio.Writer, r io.Reader, wrap int) error {
	buf := make([]byte, 3*(16<<10))
	col := 0
	var enc [4]byte
	emit := func(b []byte) {
		for _, c := range b {
			if wrap > 0 && col == wrap {
				out.WriteByte('\n')
				col = 0
			}
			out.WriteByte(c)
			col++
		}
	}
	pending := 0
	for {
		if werr := txtOutErr(out); werr != nil {
			return werr
		}
		n, err := io.ReadFull(r, buf[pending:])
		n += pending
		full := n - n%3
		if err == nil {
			full = n
		}
		for i := 0; i+3 <= full; i += 3 {
			v := uint(buf[i])<<16 | uint(buf[i+1])<<8 | uint(buf[i+2])
			enc = [4]byte{txtB64Alphabet[v>>18&63], txtB64Alphabet[v>>12&63], txtB64Alphabet[v>>6&63], txtB64Alphabet[v&63]}
			emit(enc[:])
		}
		if err == nil {
			pending = 0
			continue
		}
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			return err
		}
		rest := buf[full:n]
		switch len(rest) {
		case 1:
			v := uint(rest[0]) << 16
			enc = [4]byte{txtB64Alphabet[v>>18&63], txtB64Alphabet[v>>12&63], '=', '='}
			emit(enc[:])
		case 2:
			v := uint(rest[0])<<16 | uint(rest[1])<<8
			enc = [4]byte{txtB64Alphabet[v>>18&63], txtB64Alphabet[v>>12&63], txtB64Alphabet[v>>6&63], '='}
			emit(enc[:])
		}
		if wrap > 0 && col > 0 {
			out.WriteByte('\n')
		}
		return nil
	}
}

var txtErrB64Invalid = errors.New("invalid input")

// txtB64Decode decodes as gnulib's base64_decode_ctx: groups of four,
// newlines skipped, bytes of a bad group up to the error written.
func txtB64Decode(out *bufio.Writer, r io.Reader, ignore bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var group [4]byte
	n := 0
	flush := func(final bool) bool {
		// decode_4 on group[:n]
		in := group[:n]
		if len(in) < 2 {
			return len(in) == 0
		}
		a, b := txtB64Index[in[0]], txtB64Index[in[1]]
		if a < 0 || b < 0 {
			return false
		}
		out.WriteByte(byte(a)<<2 | byte(b)>>4)
		if len(in) == 2 {
			return false
		}
		if in[2] == '=' {
			return len(in) == 4 && in[3] == '='
		}
		c := txtB64Index[in[2]]
		if c < 0 {
			return false
		}
		out.WriteByte(byte(b)<<4 | byte(c)>>2)
		if len(in) == 3 {
			return false
		}
		if in[3] == '=' {
			return true
		}
		d := txtB64Index[in[3]]
		if d < 0 {
			return false
		}
		out.WriteByte(byte(c)<<6 | byte(d))
		return true
	}
	for {
		c, err := br.ReadByte()
		if br.Buffered() == 0 {
			if werr := txtOutErr(out); werr != nil {
				return werr
			}
		}
		if err != nil {
			if err != io.EOF {
				return err
			}
			if n > 0 && !flush(true) {
				return txtErrB64Invalid
			}
			return nil
		}
		if c == '\n' {
			continue
		}
		if ignore && txtB64Index[c] < 0 && c != '=' {
			continue
		}
		group[n] = c
		n++
		if n == 4 {
			if !flush(false) {
				return txtErrB64Invalid
			}
			n = 0
		}
	}
}
