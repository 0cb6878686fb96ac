package coreutils

import (
	"bytes"
	"context"
	"io"
	iofs "io/fs"
	"strconv"
	"unicode"
	"unicode/utf8"
)

func init() { register("wc", txtWcMain) }

var txtWcSpec = optSpec{
	short: "clLmw",
	long: map[string]bool{
		"bytes": false, "chars": false, "lines": false, "max-line-length": false, "words": false,
	},
	alias: map[string]string{
		"bytes": "c", "chars": "m", "lines": "l", "max-line-length": "L", "words": "w",
	},
}

// txtWcCounts are one input's counts.
type txtWcCounts struct {
	lines, words, chars, bytes, maxLen int64
}

func txtWcMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "wc", &txtWcSpec, args, 1)
	if !ok {
		return code
	}
	var doLines, doWords, doChars, doBytes, doMax bool
	for _, o := range opts {
		switch o.name {
		case "c":
			doBytes = true
		case "m":
			doChars = true
		case "l":
			doLines = true
		case "L":
			doMax = true
		case "w":
			doWords = true
		}
	}
	if !(doLines || doWords || doChars || doBytes || doMax) {
		doLines, doWords, doBytes = true, true, true
	}
	named := len(operands) > 0
	if !named {
		operands = []string{"-"}
	}
	nOpts := 0
	for _, b := range []bool{doLines, doWords, doChars, doBytes, doMax} {
		if b {
			nOpts++
		}
	}

	// GNU's field width: the digits of the total size of the regular
	// files, at least 7 when an input is not a regular file, and 1 for a
	// single input and a single count.
	width := 1
	if !(len(operands) == 1 && nOpts == 1) {
		minWidth := 1
		var total int64
		for _, name := range operands {
			if name == "-" {
				// A redirected file may say what it is; a pipe cannot.
				if st, ok := e.Stdin.(interface{ Stat() (iofs.FileInfo, error) }); ok {
					if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
						total += fi.Size()
						continue
					}
				}
				minWidth = 7
				continue
			}
			fi, err := e.FS.Stat(ctx, e.Abs(name))
			if err != nil {
				continue
			}
			if fi.Mode.IsRegular() {
				total += fi.Size
			} else {
				minWidth = 7
			}
		}
		for ; total >= 10; total /= 10 {
			width++
		}
		width = max(width, minWidth)
	}

	out := txtOut(e)
	print := func(c txtWcCounts, name string, withName bool) {
		var b []byte
		add := func(v int64) {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			s := strconv.FormatInt(v, 10)
			for i := len(s); i < width; i++ {
				b = append(b, ' ')
			}
			b = append(b, s...)
		}
		if doLines {
			add(c.lines)
		}
		if doWords {
			add(c.words)
		}
		if doChars {
			add(c.chars)
		}
		if doBytes {
			add(c.bytes)
		}
		if doMax {
			add(c.maxLen)
		}
		if withName {
			b = append(b, ' ')
			b = append(b, name...)
		}
		b = append(b, '\n')
		out.Write(b)
	}

	status := 0
	var total txtWcCounts
	simple := !(doWords || doChars || doMax)
	for _, name := range operands {
		if ctx.Err() != nil {
			break
		}
		var c txtWcCounts
		r, err := txtOpen(ctx, e, name)
		if err != nil {
			if txtIsCtxErr(err) {
				break
			}
			out.Flush()
			failPath(e, "wc", txtQuoteF(name), err, 1)
			status = 1
			if !txtIsDirErr(err) {
				continue
			}
		} else {
			if simple {
				err = txtWcSimple(r, &c)
			} else {
				err = txtWcFull(r, &c)
			}
			r.Close()
			if err != nil {
				if txtIsCtxErr(err) {
					break
				}
				out.Flush()
				failPath(e, "wc", txtQuoteF(name), err, 1)
				status = 1
			}
		}
		print(c, name, named)
		total.lines += c.lines
		total.words += c.words
		total.chars += c.chars
		total.bytes += c.bytes
		total.maxLen = max(total.maxLen, c.maxLen)
	}
	if ctx.Err() != nil {
		out.Flush()
		return 130
	}
	if len(operands) > 1 {
		print(total, "total", true)
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "wc", err)
	}
	return status
}

func txtWcSimple(r io.Reader, c *txtWcCounts) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		c.bytes += int64(n)
		c.lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func txtWcFull(r io.Reader, c *txtWcCounts) error {
	buf := make([]byte, 64<<10+utf8.UTFMax)
	carry := 0
	var linePos int64
	inWord := false
	for {
		n, err := r.Read(buf[carry : len(buf)-utf8.UTFMax+carry])
		c.bytes += int64(n)
		data := buf[:carry+n]
		eof := err != nil
		i := 0
		for i < len(data) {
			b := data[i]
			if b < utf8.RuneSelf {
				i++
				c.chars++
				switch b {
				case '\n':
					c.lines++
					fallthrough
				case '\r', '\f':
					c.maxLen = max(c.maxLen, linePos)
					linePos = 0
					if inWord {
						c.words++
					}
					inWord = false
				case '\t':
					linePos += 8 - linePos%8
					if inWord {
						c.words++
					}
					inWord = false
				case ' ':
					linePos++
					fallthrough
				case '\v':
					if inWord {
						c.words++
					}
					inWord = false
				default:
					if b >= 0x20 && b < 0x7f {
						linePos++
						inWord = true
					}
				}
				continue
			}
			if !eof && !utf8.FullRune(data[i:]) {
				break
			}
			r, size := utf8.DecodeRune(data[i:])
			i += size
			if r == utf8.RuneError && size == 1 {
				continue
			}
			c.chars++
			switch {
			case txtIsWSpace(r) || r == 0xa0 || r == 0x2007 || r == 0x202f || r == 0x2060:
				linePos += int64(max(txtRuneWidth(r), 0))
				if inWord {
					c.words++
				}
				inWord = false
			case txtPrintable(r):
				linePos += int64(max(txtRuneWidth(r), 0))
				inWord = true
			}
		}
		carry = copy(buf, data[i:])
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	c.maxLen = max(c.maxLen, linePos)
	if inWord {
		c.words++
	}
	return nil
}

// txtIsWSpace is glibc's iswspace in a UTF-8 locale.
func txtIsWSpace(r rune) bool {
	switch {
	case r == ' ' || (r >= '\t' && r <= '\r'):
		return true
	case r == 0x1680, r >= 0x2000 && r <= 0x2006, r >= 0x2008 && r <= 0x200a,
		r == 0x2028, r == 0x2029, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// txtRuneWidth is wcwidth: 0 for combining marks, 2 for East Asian wide
// characters, -1 for control characters, else 1.
func txtRuneWidth(r rune) int {
	switch {
	case r == 0:
		return 0
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return -1
	case r == 0xad:
		return 1
	case r == 0x200b || (r >= 0x1160 && r <= 0x11ff):
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case txtWide(r):
		return 2
	}
	return 1
}

// txtWide tells whether r is an East Asian wide or fullwidth character.
func txtWide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115f, r == 0x2329, r == 0x232a,
		r >= 0x2e80 && r <= 0x303e, r >= 0x3041 && r <= 0x33ff,
		r >= 0x3400 && r <= 0x4dbf, r >= 0x4e00 && r <= 0x9fff,
		r >= 0xa000 && r <= 0xa4cf, r >= 0xa960 && r <= 0xa97f,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff,
		r >= 0xfe10 && r <= 0xfe19, r >= 0xfe30 && r <= 0xfe6f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x2fffd, r >= 0x30000 && r <= 0x3fffd:
		return true
	}
	return false
}
