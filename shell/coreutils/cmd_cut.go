package coreutils

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"sort"
)

func init() { register("cut", txtCutMain) }

var txtCutSpec = optSpec{
	short: "b:c:d:f:nsz",
	long: map[string]bool{
		"bytes": true, "characters": true, "delimiter": true, "fields": true,
		"only-delimited": false, "complement": false, "output-delimiter": true,
		"zero-terminated": false,
	},
	alias: map[string]string{
		"bytes": "b", "characters": "c", "delimiter": "d", "fields": "f",
		"only-delimited": "s", "zero-terminated": "z",
	},
}

// txtRange is an inclusive range of 1-based positions.
type txtRange struct{ lo, hi uint64 }

// txtCutList parses a cut LIST as GNU's set_fields does.
func txtCutList(s string, pos, complement bool) ([]txtRange, error) {
	msg := func(f, b string) error {
		if pos {
			return errors.New(b)
		}
		return errors.New(f)
	}
	var rs []txtRange
	var initial uint64 = 1
	var value uint64
	lhs, rhs, dash := false, false, false
	numStart := -1
	inDigits := false
	for i := 0; ; i++ {
		c := byte(0)
		if i < len(s) {
			c = s[i]
		}
		switch {
		case c == '-':
			inDigits = false
			if dash {
				return nil, msg("invalid field range", "invalid byte or character range")
			}
			dash = true
			if lhs && value == 0 {
				return nil, msg("fields are numbered from 1", "byte/character positions are numbered from 1")
			}
			if lhs {
				initial = value
			} else {
				initial = 1
			}
			value = 0
		case c == ',' || c == ' ' || c == '\t' || i >= len(s):
			inDigits = false
			if dash {
				dash = false
				if !lhs && !rhs {
					return nil, errors.New("invalid range with no endpoint: -")
				}
				if !rhs {
					rs = append(rs, txtRange{initial, math.MaxUint64})
				} else {
					if value < initial {
						return nil, errors.New("invalid decreasing range")
					}
					rs = append(rs, txtRange{initial, value})
				}
				value = 0
			} else {
				if value == 0 {
					return nil, msg("fields are numbered from 1", "byte/character positions are numbered from 1")
				}
				rs = append(rs, txtRange{value, value})
				value = 0
			}
			if i >= len(s) {
				goto done
			}
			lhs, rhs = false, false
		case c >= '0' && c <= '9':
			if !inDigits || numStart < 0 {
				numStart = i
			}
			inDigits = true
			if dash {
				rhs = true
			} else {
				lhs = true
			}
			d := uint64(c - '0')
			if value > (math.MaxUint64-d)/10 || value*10+d == math.MaxUint64 {
				j := numStart
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if pos {
					return nil, errors.New("byte/character offset " + txtQuoteL(s[numStart:j]) + " is too large")
				}
				return nil, errors.New("field number " + txtQuoteL(s[numStart:j]) + " is too large")
			}
			value = value*10 + d
		default:
			if pos {
				return nil, errors.New("invalid byte/character position " + txtQuoteL(s[i:]))
			}
			return nil, errors.New("invalid field value " + txtQuoteL(s[i:]))
		}
	}
done:
	if len(rs) == 0 {
		return nil, msg("missing list of fields", "missing list of byte/character positions")
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].lo != rs[j].lo {
			return rs[i].lo < rs[j].lo
		}
		return rs[i].hi < rs[j].hi
	})
	var merged []txtRange
	for _, r := range rs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	if complement {
		var comp []txtRange
		next := uint64(1)
		for _, r := range merged {
			if r.lo > next {
				comp = append(comp, txtRange{next, r.lo - 1})
			}
			if r.hi == math.MaxUint64 {
				next = math.MaxUint64
				break
			}
			next = r.hi + 1
		}
		if next != math.MaxUint64 {
			comp = append(comp, txtRange{next, math.MaxUint64})
		}
		merged = comp
	}
	return merged, nil
}

// txtInRanges tells whether position n is selected, and whether it
// starts a range.
func txtInRanges(rs []txtRange, n uint64) (in, start bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].hi >= n })
	if i < len(rs) && rs[i].lo <= n {
		return true, rs[i].lo == n
	}
	return false, false
}

func txtCutMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "cut", &txtCutSpec, args, 1)
	if !ok {
		return code
	}
	mode := byte(0)
	list := ""
	delim := byte('\t')
	delimSet := false
	suppress, complement := false, false
	outDelim, outDelimSet := "", false
	lineDelim := byte('\n')
	usage := func(msg string) int { return badUsage(e, "cut", errors.New(msg), 1) }
	for _, o := range opts {
		switch o.name {
		case "b", "c", "f":
			if mode != 0 {
				return usage("only one list may be specified")
			}
			mode, list = o.name[0], o.value
		case "d":
			if len(o.value) > 1 {
				return usage("the delimiter must be a single character")
			}
			delim, delimSet = 0, true
			if o.value != "" {
				delim = o.value[0]
			}
		case "s":
			suppress = true
		case "complement":
			complement = true
		case "output-delimiter":
			outDelim, outDelimSet = o.value, true
			if outDelim == "" {
				outDelim = "\x00"
			}
		case "z":
			lineDelim = 0
		}
	}
	if mode == 0 {
		return usage("you must specify a list of bytes, characters, or fields")
	}
	if delimSet && mode != 'f' {
		return usage("an input delimiter may be specified only when operating on fields")
	}
	if suppress && mode != 'f' {
		return usage("suppressing non-delimited lines makes sense\n\tonly when operating on fields")
	}
	ranges, err := txtCutList(list, mode != 'f', complement)
	if err != nil {
		return usage(err.Error())
	}
	if !outDelimSet {
		outDelim = string([]byte{delim})
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	out := txtOut(e)
	status := 0
	for _, name := range operands {
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			failPath(e, "cut", txtQuoteF(name), err, 1)
			status = 1
			continue
		}
		er := &txtErrReader{r: r}
		br := bufio.NewReaderSize(er, 64<<10)
		var line []byte
		for {
			chunk, rerr := br.ReadSlice(lineDelim)
			if werr := txtOutErr(out); werr != nil {
				r.Close()
				return txtWriteFail(e, "cut", werr)
			}
			line = append(line, chunk...)
			if rerr == bufio.ErrBufferFull {
				continue
			}
			if len(line) > 0 {
				if line[len(line)-1] == lineDelim {
					line = line[:len(line)-1]
				}
				if mode == 'f' {
					txtCutFields(out, line, ranges, delim, outDelim, suppress, lineDelim)
				} else {
					txtCutBytes(out, line, ranges, outDelim, outDelimSet, lineDelim)
				}
			}
			line = line[:0]
			if rerr != nil {
				if rerr != io.EOF {
					err = rerr
				}
				break
			}
		}
		r.Close()
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			out.Flush()
			failPath(e, "cut", txtQuoteF(name), err, 1)
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "cut", err)
	}
	if ctx.Err() != nil {
		return 130
	}
	return status
}

func txtCutBytes(out *bufio.Writer, line []byte, rs []txtRange, outDelim string, outDelimSet bool, lineDelim byte) {
	printed := false
	for _, r := range rs {
		if r.lo > uint64(len(line)) {
			break
		}
		hi := min(r.hi, uint64(len(line)))
		if outDelimSet && printed {
			out.WriteString(outDelim)
		}
		out.Write(line[r.lo-1 : hi])
		printed = true
	}
	out.WriteByte(lineDelim)
}

func txtCutFields(out *bufio.Writer, line []byte, rs []txtRange, delim byte, outDelim string, suppress bool, lineDelim byte) {
	if bytes.IndexByte(line, delim) < 0 {
		if !suppress {
			out.Write(line)
			out.WriteByte(lineDelim)
		}
		return
	}
	printed := false
	field := uint64(1)
	start := 0
	for i := 0; i <= len(line); i++ {
		if i < len(line) && line[i] != delim {
			continue
		}
		if in, _ := txtInRanges(rs, field); in {
			if printed {
				out.WriteString(outDelim)
			}
			out.Write(line[start:i])
			printed = true
		}
		field++
		start = i + 1
	}
	out.WriteByte(lineDelim)
}
