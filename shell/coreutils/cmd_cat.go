package coreutils

import (
	"bufio"
	"context"
	"io"
	"strconv"
)

func init() { register("cat", txtCatMain) }

var txtCatSpec = optSpec{
	short: "AbeEnstTuv",
	long: map[string]bool{
		"show-all": false, "number-nonblank": false, "show-ends": false, "number": false,
		"squeeze-blank": false, "show-tabs": false, "show-nonprinting": false,
	},
	alias: map[string]string{
		"show-all": "A", "number-nonblank": "b", "show-ends": "E", "number": "n",
		"squeeze-blank": "s", "show-tabs": "T", "show-nonprinting": "v",
	},
}

// txtCatState is cat's formatting state, which carries over from one
// file to the next as GNU's does.
type txtCatState struct {
	number, nonblank, squeeze, ends, tabs, nonprint bool

	lineNo  int64
	atStart bool // at the start of an output line
	blanks  int  // empty lines just seen
}

func txtCatMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "cat", &txtCatSpec, args, 1)
	if !ok {
		return code
	}
	st := &txtCatState{atStart: true}
	for _, o := range opts {
		switch o.name {
		case "A":
			st.nonprint, st.ends, st.tabs = true, true, true
		case "b":
			st.nonblank = true
		case "e":
			st.nonprint, st.ends = true, true
		case "E":
			st.ends = true
		case "n":
			st.number = true
		case "s":
			st.squeeze = true
		case "t":
			st.nonprint, st.tabs = true, true
		case "T":
			st.tabs = true
		case "v":
			st.nonprint = true
		}
	}
	if st.nonblank {
		st.number = true
	}
	plain := !(st.number || st.squeeze || st.ends || st.tabs || st.nonprint)
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	out := txtOut(e)
	status := 0
	for _, name := range operands {
		if ctx.Err() != nil {
			break
		}
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			failPath(e, "cat", txtQuoteF(name), err, 1)
			status = 1
			continue
		}
		er := &txtErrReader{r: r}
		if plain {
			_, err = io.Copy(out, er)
		} else {
			err = st.copy(out, er)
		}
		r.Close()
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			if er.err == nil {
				return txtWriteFail(e, "cat", err)
			}
			failPath(e, "cat", txtQuoteF(name), err, 1)
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "cat", err)
	}
	if ctx.Err() != nil {
		return 130
	}
	return status
}

func (st *txtCatState) copy(out *bufio.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var numBuf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if werr := txtOutErr(out); werr != nil {
			return werr
		}
		if len(chunk) > 0 && !(st.atStart && chunk[0] == '\n' && st.squeeze && st.blanks >= 1) {
			if st.atStart {
				blank := chunk[0] == '\n'
				if blank {
					st.blanks++
				} else {
					st.blanks = 0
				}
				if st.number && !(blank && st.nonblank) {
					st.lineNo++
					numBuf = st.fmtNum(numBuf[:0])
					out.Write(numBuf)
				}
			}
			line := chunk
			nl := line[len(line)-1] == '\n'
			if nl {
				line = line[:len(line)-1]
			}
			cr := nl && st.ends && len(line) > 0 && line[len(line)-1] == '\r'
			if cr {
				line = line[:len(line)-1]
			}
			st.writeBody(out, line)
			if cr {
				out.WriteString("^M")
			}
			if nl {
				if st.ends {
					out.WriteByte('$')
				}
				out.WriteByte('\n')
			}
			st.atStart = nl
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (st *txtCatState) fmtNum(b []byte) []byte {
	s := strconv.FormatInt(st.lineNo, 10)
	for i := len(s); i < 6; i++ {
		b = append(b, ' ')
	}
	b = append(b, s...)
	return append(b, '\t')
}

func (st *txtCatState) writeBody(out *bufio.Writer, line []byte) {
	if !st.tabs && !st.nonprint {
		out.Write(line)
		return
	}
	for _, c := range line {
		switch {
		case c == '\t':
			if st.tabs {
				out.WriteString("^I")
			} else {
				out.WriteByte(c)
			}
		case !st.nonprint:
			out.WriteByte(c)
		default:
			if c >= 128 {
				out.WriteString("M-")
				c -= 128
			}
			switch {
			case c < 32:
				out.WriteByte('^')
				out.WriteByte(c + 64)
			case c == 127:
				out.WriteString("^?")
			default:
				out.WriteByte(c)
			}
		}
	}
}
