package coreutils

// sed: GNU sed 4.9's script language, options, output and exit
// statuses.
//
// The compiler follows sed/compile.c (same parsing decisions, same
// error messages and character positions), the executor follows
// sed/execute.c (cycle, ranges, append queue, missing final newline).
// Regular expressions go through grp_regex.go (glibc's BRE/ERE syntax
// translated to RE2, leftmost-longest).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

func init() { register("sed", sedMain) }

// Exit statuses.
const (
	sedExitBadUsage = 1
	sedExitBadInput = 2
	sedExitPanic    = 4
)

// sedCancelled is execute's status when the context is done.
const sedCancelled = -2

// sedFatal ends the command: msg goes to stderr as is.
type sedFatal struct {
	msg    string
	status int
}

// Address types.
const (
	sedAddrNull = iota
	sedAddrRegex
	sedAddrNum
	sedAddrNumMod
	sedAddrStep
	sedAddrStepMod
	sedAddrLast
)

// Range states.
const (
	sedRangeInactive = iota
	sedRangeActive
	sedRangeClosed
)

// Replacement case conversions.
const (
	sedReplAsIs       = 0
	sedReplUpper      = 1
	sedReplLower      = 2
	sedReplUpperFirst = 4
	sedReplLowerFirst = 8
	sedReplModifiers  = sedReplUpperFirst | sedReplLowerFirst
)

type sedRegex struct {
	g       *grpRegex
	ngroups int
}

type sedAddr struct {
	typ  int
	n    int64
	step int64
	re   *sedRegex // nil with sedAddrRegex: the last regex used
}

type sedReplPart struct {
	prefix []byte
	id     int
	typ    int
}

type sedSubst struct {
	re     *sedRegex
	repl   []sedReplPart
	maxID  int
	global bool
	print  int
	eval   bool
	numb   int64
	outf   *sedOutput
}

type sedOutput struct {
	name           string
	w              *bufio.Writer
	closer         io.Closer
	missingNewline bool
}

type sedReadFile struct {
	name string
	r    *bufio.Reader
	c    io.Closer
	eof  bool
}

type sedCmd struct {
	a1, a2     *sedAddr
	rangeState int
	bang       bool
	cmd        byte
	text       []byte
	intArg     int64
	jump       int
	label      string
	fname      string
	readAppend bool
	inf        *sedReadFile
	outf       *sedOutput
	subst      *sedSubst
	ymap       map[string]string
}

// sedSource is one piece of script: an -e string or a -f file.
type sedSource struct {
	b        []byte
	pos      int
	name     string // file name; "" for -e strings
	line     int64
	exprNum  int
	finished bool // compilation of this piece is over: char 0
}

type sedLabel struct {
	idx  int
	name string
	src  sedSource // where a block started
}

type sedCompiler struct {
	run         *sedRun
	src         *sedSource
	prog        []*sedCmd
	labels      []sedLabel
	jumps       []sedLabel
	blocks      []sedLabel
	exprCount   int
	firstScript bool
	pending     *bytes.Buffer // text of an a/i/c command that goes on in the next piece
	pendingCmd  *sedCmd
	ere         bool
}

const sedEOF = -1

func (c *sedCompiler) inchar() int {
	s := c.src
	if s.pos >= len(s.b) {
		return sedEOF
	}
	ch := int(s.b[s.pos])
	s.pos++
	if ch == '\n' {
		s.line++
	}
	return ch
}

func (c *sedCompiler) savchar(ch int) {
	if ch == sedEOF {
		return
	}
	s := c.src
	if ch == '\n' && s.line > 0 {
		s.line--
	}
	s.pos--
}

func sedIsBlank(ch int) bool { return ch == ' ' || ch == '\t' }

func sedIsSpace(ch int) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'
}

func sedIsDigit(ch int) bool { return ch >= '0' && ch <= '9' }

func (c *sedCompiler) inNonblank() int {
	for {
		ch := c.inchar()
		if !sedIsBlank(ch) {
			return ch
		}
	}
}

// badProg reports a script error in GNU's words and ends the command.
func (c *sedCompiler) badProg(why string) {
	panic(sedFatal{sedWhere(c.src) + why, sedExitBadUsage})
}

func sedWhere(s *sedSource) string {
	if s.name != "" {
		return fmt.Sprintf("sed: file %s line %d: ", s.name, s.line)
	}
	pos := s.pos
	if s.finished {
		pos = 0
	}
	return fmt.Sprintf("sed: -e expression #%d, char %d: ", s.exprNum, pos)
}

func sedPanic(format string, args ...any) {
	panic(sedFatal{"sed: " + fmt.Sprintf(format, args...), sedExitPanic})
}

func (c *sedCompiler) readEndOfCmd() {
	ch := c.inNonblank()
	if ch == '}' || ch == '#' {
		c.savchar(ch)
	} else if ch != sedEOF && ch != '\n' && ch != ';' {
		c.badProg("extra characters after command")
	}
}

func (c *sedCompiler) inInteger(ch int) int64 {
	var num int64
	for sedIsDigit(ch) {
		num = num*10 + int64(ch-'0')
		ch = c.inchar()
	}
	c.savchar(ch)
	return num
}

func (c *sedCompiler) readFilename() string {
	if c.run.sandbox {
		c.badProg("e/r/w commands disabled in sandbox mode")
	}
	var b []byte
	ch := c.inNonblank()
	for ch != sedEOF && ch != '\n' {
		b = append(b, byte(ch))
		ch = c.inchar()
	}
	return string(b)
}

// getOpenfile reads a file name and returns its output, opening (and
// truncating) it now, as GNU does at compile time.
func (c *sedCompiler) getOpenWrite() *sedOutput {
	name := c.readFilename()
	if name == "" {
		c.badProg("missing filename in r/R/w/W commands")
	}
	return c.run.openWrite(name)
}

func (c *sedCompiler) getOpenRead() *sedReadFile {
	name := c.readFilename()
	if name == "" {
		c.badProg("missing filename in r/R/w/W commands")
	}
	r := c.run
	if f, ok := r.rfiles[name]; ok {
		return f
	}
	f := &sedReadFile{name: name}
	r.rfiles[name] = f
	r.rfileOrder = append(r.rfileOrder, f)
	return f
}

// snarfCharClass copies a bracket expression after its '['.
func (c *sedCompiler) snarfCharClass(b *[]byte) int {
	state := 0
	delim := 0
	ch := c.inchar()
	if ch == '^' {
		*b = append(*b, byte(ch))
		ch = c.inchar()
	}
	if ch == ']' {
		*b = append(*b, byte(ch))
		ch = c.inchar()
	}
	for ; ; ch = func() int { *b = append(*b, byte(ch)); return c.inchar() }() {
		mb := ch >= 0x80
		switch ch {
		case sedEOF, '\n':
			return ch
		case '.', ':', '=':
			if mb {
				continue
			}
			if state == 1 {
				delim = ch
				state = 2
				continue
			} else if state == 2 && ch == delim {
				state = 3
				continue
			}
		case '[':
			if state == 0 {
				state = 1
			}
			continue
		case ']':
			if state == 0 || state == 1 {
				return ch
			} else if state == 3 {
				state = 0
			}
		}
		state &^= 1
	}
}

// matchSlash reads up to the delimiter slash; nil when unterminated.
func (c *sedCompiler) matchSlash(slash int, regex bool) []byte {
	if slash >= 0x80 {
		c.badProg("delimiter character is not a single-byte character")
	}
	b := []byte{}
	var ch int
	for {
		ch = c.inchar()
		if ch == sedEOF || ch == '\n' {
			break
		}
		if ch == slash {
			return b
		} else if ch == '\\' {
			ch = c.inchar()
			if ch == sedEOF {
				break
			} else if ch != '\n' && (ch != slash || (!regex && ch == '&')) {
				b = append(b, '\\')
			}
		} else if ch == '[' && regex {
			b = append(b, byte(ch))
			ch = c.snarfCharClass(&b)
			if ch != ']' {
				break
			}
		}
		b = append(b, byte(ch))
	}
	if ch == '\n' {
		c.savchar(ch)
	}
	return nil
}

func (c *sedCompiler) readLabel() string {
	var b []byte
	ch := c.inNonblank()
	for ch != sedEOF && ch != '\n' && !sedIsBlank(ch) && ch != ';' && ch != '}' && ch != '#' {
		b = append(b, byte(ch))
		ch = c.inchar()
	}
	c.savchar(ch)
	return string(b)
}

// Text types for sedNormalize.
const (
	sedTextBuffer = iota
	sedTextReplacement
	sedTextRegex
)

func sedConvertNumber(buf []byte, i int, base int) (byte, int) {
	// buf[i] is the letter (d, o or x).
	n := 0
	max := 1
	p := i + 1
	for ; p < len(buf) && max <= 255; p, max = p+1, max*base {
		d := -1
		ch := buf[p]
		switch {
		case ch >= '0' && ch <= '9':
			d = int(ch - '0')
		case ch >= 'a' && ch <= 'f':
			d = int(ch-'a') + 10
		case ch >= 'A' && ch <= 'F':
			d = int(ch-'A') + 10
		}
		if d < 0 || base <= d {
			break
		}
		n = n*base + d
	}
	if p == i+1 {
		return buf[i], p
	}
	return byte(n), p
}

// sedNormalize processes \X escapes (GNU's normalize_text).
func (c *sedCompiler) sedNormalize(buf []byte, typ int) []byte {
	out := make([]byte, 0, len(buf))
	p := 0
	for p < len(buf) {
		if buf[p] >= 0x80 {
			_, w := utf8.DecodeRune(buf[p:])
			out = append(out, buf[p:p+w]...)
			p += w
			continue
		}
		if buf[p] == '\\' && p+1 < len(buf) {
			p++
			switch buf[p] {
			case 'a':
				out = append(out, '\a')
				p++
				continue
			case 'f':
				out = append(out, '\f')
				p++
				continue
			case '\n', 'n':
				out = append(out, '\n')
				p++
				continue
			case 'r':
				out = append(out, '\r')
				p++
				continue
			case 't':
				out = append(out, '\t')
				p++
				continue
			case 'v':
				out = append(out, '\v')
				p++
				continue
			case 'd', 'x', 'o':
				base := map[byte]int{'d': 10, 'x': 16, 'o': 8}[buf[p]]
				ch, np := sedConvertNumber(buf, p, base)
				p = np
				if typ == sedTextReplacement && (ch == '&' || ch == '\\') {
					out = append(out, '\\')
				}
				out = append(out, ch)
				continue
			case 'c':
				p++
				if p < len(buf) {
					out = append(out, byte(unicode.ToUpper(rune(buf[p])))^0x40)
					if buf[p] == '\\' {
						p++
						if p >= len(buf) || buf[p] != '\\' {
							c.badProg("recursive escaping after \\c not allowed")
						}
					}
					p++
					continue
				}
				if typ != sedTextBuffer {
					out = append(out, '\\')
				}
				continue
			default:
				if typ != sedTextBuffer {
					out = append(out, '\\')
				}
			}
		}
		out = append(out, buf[p])
		p++
	}
	return out
}

func (c *sedCompiler) compileRegex(b []byte, icase, mline bool, neededSub int) *sedRegex {
	if len(b) == 0 {
		if icase || mline {
			c.badProg("cannot specify modifiers on empty regexp")
		}
		return nil
	}
	pat := c.sedNormalize(b, sedTextRegex)
	syn := grpSyntax{ere: c.ere, sed: true, icase: icase, mline: mline}
	pp, err := grpParse(string(pat), syn)
	if err != nil {
		c.badProg(err.Error())
	}
	if neededSub > 0 && pp.ngroups < neededSub-1 {
		c.badProg(fmt.Sprintf("invalid reference \\%d on `s' command's RHS", neededSub-1))
	}
	if pp.dfaErr != "" {
		sedPanic("%s", pp.dfaErr)
	}
	g, err := grpCompileParsed(pp, syn)
	if err != nil {
		c.badProg(err.Error())
	}
	return &sedRegex{g: g, ngroups: pp.ngroups}
}

func (c *sedCompiler) compileAddress(ch int) (*sedAddr, bool) {
	a := &sedAddr{typ: sedAddrNull, n: -1}
	switch {
	case ch == '/' || ch == '\\':
		a.typ = sedAddrRegex
		if ch == '\\' {
			ch = c.inchar()
		}
		b := c.matchSlash(ch, true)
		if b == nil {
			c.badProg("unterminated address regex")
		}
		icase, mline := false, false
		for {
			ch = c.inNonblank()
			switch ch {
			case 'I':
				icase = true
				continue
			case 'M':
				mline = true
				continue
			}
			c.savchar(ch)
			a.re = c.compileRegex(b, icase, mline, 0)
			return a, true
		}
	case sedIsDigit(ch):
		a.n = c.inInteger(ch)
		a.typ = sedAddrNum
		ch = c.inNonblank()
		if ch != '~' {
			c.savchar(ch)
		} else {
			step := c.inInteger(c.inNonblank())
			if step > 0 {
				a.step = step
				a.typ = sedAddrNumMod
			}
		}
	case ch == '+' || ch == '~':
		a.step = c.inInteger(c.inNonblank())
		if a.step != 0 {
			if ch == '+' {
				a.typ = sedAddrStep
			} else {
				a.typ = sedAddrStepMod
			}
		}
	case ch == '$':
		a.typ = sedAddrLast
	default:
		return nil, false
	}
	return a, true
}

// setupReplacement parses the replacement of an s command.
func (c *sedCompiler) setupReplacement(sub *sedSubst, text []byte) {
	text = c.sedNormalize(text, sedTextReplacement)
	replType, saveType := sedReplAsIs, sedReplAsIs
	base := 0
	var parts []sedReplPart
	newPart := func(prefix []byte) *sedReplPart {
		parts = append(parts, sedReplPart{prefix: append([]byte(nil), prefix...), id: -1, typ: replType})
		return &parts[len(parts)-1]
	}
	for p := 0; p < len(text); p++ {
		if text[p] == '\\' {
			tail := newPart(text[base:p])
			replType = saveType
			p++
			if p == len(text) {
				tail.prefix = append(tail.prefix, '\\')
			} else {
				switch ch := text[p]; {
				case ch >= '0' && ch <= '9':
					tail.id = int(ch - '0')
					sub.maxID = max(sub.maxID, tail.id)
				case ch == 'L':
					replType, saveType = sedReplLower, sedReplLower
				case ch == 'U':
					replType, saveType = sedReplUpper, sedReplUpper
				case ch == 'E':
					replType, saveType = sedReplAsIs, sedReplAsIs
				case ch == 'l':
					saveType = replType
					replType |= sedReplLowerFirst
				case ch == 'u':
					saveType = replType
					replType |= sedReplUpperFirst
				default:
					tail.prefix = append(tail.prefix, ch)
				}
			}
			base = p + 1
		} else if text[p] == '&' {
			tail := newPart(text[base:p])
			replType = saveType
			tail.id = 0
			base = p + 1
		}
	}
	if base < len(text) {
		newPart(text[base:])
	}
	sub.repl = parts
}

// readText reads the text of a, i or c (GNU's read_text).
func (c *sedCompiler) readText(cmd *sedCmd, leadin int) {
	if cmd != nil {
		c.pending = &bytes.Buffer{}
		c.pendingCmd = cmd
		cmd.text = nil
	}
	if leadin == sedEOF {
		return
	}
	if leadin != '\n' {
		c.pending.WriteByte(byte(leadin))
	}
	ch := c.inchar()
	for ch != sedEOF && ch != '\n' {
		if ch == '\\' {
			ch = c.inchar()
			if ch != sedEOF {
				c.pending.WriteByte('\\')
			}
		}
		if ch == sedEOF {
			c.pending.WriteByte('\n')
			return
		}
		c.pending.WriteByte(byte(ch))
		ch = c.inchar()
	}
	c.pending.WriteByte('\n')
	c.pendingCmd.text = c.sedNormalize(c.pending.Bytes(), sedTextBuffer)
	c.pending = nil
}

// compileProgram compiles the current source piece.
func (c *sedCompiler) compileProgram() {
	if c.pending != nil {
		c.readText(nil, '\n')
	}
	for {
		ch := c.inchar()
		for ch == ';' || sedIsSpace(ch) {
			ch = c.inchar()
		}
		if ch == sedEOF {
			break
		}
		cmd := &sedCmd{intArg: -1}
		if a, ok := c.compileAddress(ch); ok {
			if a.typ == sedAddrStep || a.typ == sedAddrStepMod {
				c.badProg("invalid usage of +N or ~N as first address")
			}
			cmd.a1 = a
			ch = c.inNonblank()
			if ch == ',' {
				a2, ok := c.compileAddress(c.inNonblank())
				if !ok {
					c.badProg("unexpected `,'")
				}
				cmd.a2 = a2
				ch = c.inNonblank()
			}
			if cmd.a1.typ == sedAddrNum && cmd.a1.n == 0 &&
				((cmd.a2 == nil && ch != 'r') || (cmd.a2 != nil && cmd.a2.typ != sedAddrRegex)) {
				c.badProg("invalid usage of line address 0")
			}
		}
		if ch == '!' {
			cmd.bang = true
			ch = c.inNonblank()
			if ch == '!' {
				c.badProg("multiple `!'s")
			}
		}
		cmd.cmd = byte(ch)
		switch ch {
		case '#':
			if cmd.a1 != nil {
				c.badProg("comments don't accept any addresses")
			}
			ch = c.inchar()
			if ch == 'n' && c.firstScript && c.src.line < 2 && c.src.pos == 2 {
				c.run.noAutoprint = true
			}
			for ch != sedEOF && ch != '\n' {
				ch = c.inchar()
			}
			continue
		case 'v':
			version := c.readLabel()
			if version == "" {
				version = "4.0"
			}
			if sedVersionCmp(version, "4.9") > 0 {
				c.badProg("expected newer version of sed")
			}
			continue
		case '{':
			c.blocks = append(c.blocks, sedLabel{idx: len(c.prog), src: *c.src})
			cmd.bang = !cmd.bang
		case '}':
			if len(c.blocks) == 0 {
				c.badProg("unexpected `}'")
			}
			if cmd.a1 != nil {
				c.badProg("`}' doesn't want any addresses")
			}
			c.readEndOfCmd()
			open := c.blocks[len(c.blocks)-1]
			c.prog[open.idx].jump = len(c.prog)
			c.blocks = c.blocks[:len(c.blocks)-1]
		case 'e':
			if c.run.sandbox {
				c.badProg("e/r/w commands disabled in sandbox mode")
			}
			ch = c.inNonblank()
			if ch == sedEOF || ch == '\n' {
				break
			}
			c.readTextToSlash(cmd, ch)
		case 'a', 'i', 'c':
			ch = c.inNonblank()
			c.readTextToSlash(cmd, ch)
		case ':':
			if cmd.a1 != nil {
				c.badProg(": doesn't want any addresses")
			}
			label := c.readLabel()
			if label == "" {
				c.badProg("\":\" lacks a label")
			}
			c.labels = append(c.labels, sedLabel{idx: len(c.prog), name: label})
		case 'T', 'b', 't':
			c.jumps = append(c.jumps, sedLabel{idx: len(c.prog), name: c.readLabel()})
		case 'Q', 'q', 'L', 'l':
			if (ch == 'Q' || ch == 'q') && cmd.a2 != nil {
				c.badProg("command only uses one address")
			}
			ch = c.inNonblank()
			if sedIsDigit(ch) {
				cmd.intArg = c.inInteger(ch)
			} else {
				cmd.intArg = -1
				c.savchar(ch)
			}
			c.readEndOfCmd()
		case '=', 'd', 'D', 'F', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'z', 'x':
			c.readEndOfCmd()
		case 'r':
			name := c.readFilename()
			if name == "" {
				c.badProg("missing filename in r/R/w/W commands")
			}
			cmd.fname = name
			if cmd.a1 != nil && cmd.a1.typ == sedAddrNum && cmd.a1.n == 0 && cmd.a2 == nil {
				cmd.a1.n = 1
				cmd.readAppend = false
			} else {
				cmd.readAppend = true
			}
		case 'R':
			cmd.inf = c.getOpenRead()
		case 'W', 'w':
			cmd.outf = c.getOpenWrite()
		case 's':
			slash := c.inchar()
			b := c.matchSlash(slash, true)
			if b == nil {
				c.badProg("unterminated `s' command")
			}
			b2 := c.matchSlash(slash, false)
			if b2 == nil {
				c.badProg("unterminated `s' command")
			}
			sub := &sedSubst{}
			c.setupReplacement(sub, b2)
			icase, mline := c.markSubstOpts(sub)
			sub.re = c.compileRegex(b, icase, mline, sub.maxID+1)
			if sub.eval && c.run.sandbox {
				c.badProg("e/r/w commands disabled in sandbox mode")
			}
			cmd.subst = sub
		case 'y':
			slash := c.inchar()
			b := c.matchSlash(slash, false)
			if b == nil {
				c.badProg("unterminated `y' command")
			}
			src := c.sedNormalize(b, sedTextBuffer)
			b2 := c.matchSlash(slash, false)
			if b2 == nil {
				c.badProg("unterminated `y' command")
			}
			dst := c.sedNormalize(b2, sedTextBuffer)
			srcChars, dstChars := sedChars(src), sedChars(dst)
			if len(srcChars) != len(dstChars) {
				c.badProg("strings for `y' command are different lengths")
			}
			cmd.ymap = map[string]string{}
			for i := len(srcChars) - 1; i >= 0; i-- {
				cmd.ymap[srcChars[i]] = dstChars[i]
			}
			c.readEndOfCmd()
		case sedEOF:
			c.badProg("missing command")
		default:
			c.badProg(fmt.Sprintf("unknown command: `%c'", ch))
		}
		c.prog = append(c.prog, cmd)
	}
}

// sedChars splits b into characters (invalid bytes stand alone).
func sedChars(b []byte) []string {
	var out []string
	for len(b) > 0 {
		_, w := utf8.DecodeRune(b)
		out = append(out, string(b[:w]))
		b = b[w:]
	}
	return out
}

func (c *sedCompiler) readTextToSlash(cmd *sedCmd, ch int) {
	if ch == sedEOF {
		c.badProg("expected \\ after `a', `c' or `i'")
	}
	if ch == '\\' {
		ch = c.inchar()
	} else {
		c.savchar(ch)
		ch = '\n'
	}
	c.readText(cmd, ch)
}

func (c *sedCompiler) markSubstOpts(sub *sedSubst) (icase, mline bool) {
	for {
		ch := c.inNonblank()
		switch ch {
		case 'i', 'I':
			icase = true
		case 'm', 'M':
			mline = true
		case 'e':
			sub.eval = true
		case 'p':
			if sub.print != 0 {
				c.badProg("multiple `p' options to `s' command")
			}
			if sub.eval {
				sub.print |= 2
			} else {
				sub.print |= 1
			}
		case 'g':
			if sub.global {
				c.badProg("multiple `g' options to `s' command")
			}
			sub.global = true
		case 'w':
			sub.outf = c.getOpenWrite()
			return
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if sub.numb != 0 {
				c.badProg("multiple number options to `s' command")
			}
			sub.numb = c.inInteger(ch)
			if sub.numb == 0 {
				c.badProg("number option to `s' command may not be zero")
			}
		case '}', '#':
			c.savchar(ch)
			return
		case sedEOF, '\n', ';':
			return
		case '\r':
			if c.inchar() == '\n' {
				return
			}
			c.badProg("unknown option to `s'")
		default:
			c.badProg("unknown option to `s'")
		}
	}
}

// sedVersionCmp compares dotted version strings numerically.
func sedVersionCmp(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (c *sedCompiler) compileString(s string) {
	c.exprCount++
	c.src = &sedSource{b: []byte(s), exprNum: c.exprCount}
	c.compileProgram()
	c.src.finished = true
	c.firstScript = false
}

func (c *sedCompiler) compileFile(name string) {
	var data []byte
	r := c.run
	if name == "-" {
		b, err := io.ReadAll(r.e.Stdin)
		if err != nil {
			sedPanic("couldn't open file %s: %s", name, errText(err))
		}
		data = b
	} else {
		f, err := grpOpen(r.ctx, r.e, name)
		if err != nil {
			sedPanic("couldn't open file %s: %s", name, errText(err))
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			sedPanic("couldn't open file %s: %s", name, errText(err))
		}
		data = b
	}
	c.src = &sedSource{b: data, name: name, line: 1}
	c.compileProgram()
	c.src.finished = true
	c.firstScript = false
}

// finish checks what needs the whole program (GNU's check_final_program).
func (c *sedCompiler) finish() {
	if len(c.blocks) > 0 {
		b := c.blocks[len(c.blocks)-1]
		src := b.src // where the '{' was: its line, or char 0
		src.finished = true
		panic(sedFatal{sedWhere(&src) + "unmatched `{'", sedExitBadUsage})
	}
	if c.pending != nil {
		if c.pending.Len() > 0 {
			c.pendingCmd.text = append([]byte(nil), c.pending.Bytes()...)
		}
		c.pending = nil
	}
	for _, j := range c.jumps {
		found := -1
		for i := len(c.labels) - 1; i >= 0; i-- {
			if c.labels[i].name == j.name {
				found = c.labels[i].idx
				break
			}
		}
		if found < 0 {
			if j.name != "" {
				sedPanic("can't find label for jump to `%s'", j.name)
			}
			found = len(c.prog)
		}
		c.prog[j.idx].jump = found
	}
}

// sedLine is the pattern or hold space.
type sedLine struct {
	b       []byte
	chomped bool
}

type sedAppend struct {
	text  []byte
	fname string
}

type sedRun struct {
	ctx         context.Context
	e           *Env
	prog        []*sedCmd
	noAutoprint bool
	separate    bool
	inPlace     bool
	suffix      string // "*" without backup
	delim       byte
	lineLen     int64
	follow      bool
	sandbox     bool
	posix       bool

	files      []string
	fileIdx    int
	in         *bufio.Reader
	inCloser   io.Closer
	inName     string
	inOpen     bool
	inTemp     string // in-place: temp output
	inTarget   string // in-place: file to replace, as named
	inMode     iofs.FileMode
	lineNo     int64
	resetNext  bool
	badCount   int
	line, hold sedLine
	replaced   bool
	appendQ    []sedAppend
	out        *sedOutput
	stdout     *sedOutput
	stderr     *sedOutput
	devStdout  *sedOutput // w /dev/stdout: stdout, with its own missing newline
	lastRe     *sedRegex
	wfiles     map[string]*sedOutput
	wfileOrder []*sedOutput
	rfiles     map[string]*sedReadFile
	rfileOrder []*sedReadFile
	lastSrc    sedSource
}

func (r *sedRun) openWrite(name string) *sedOutput {
	switch name {
	case "/dev/stdout":
		return r.devStdout
	case "/dev/stderr":
		return r.stderr
	}
	if o, ok := r.wfiles[name]; ok {
		return o
	}
	wc, err := r.e.FS.Create(r.ctx, r.e.Abs(name), false, 0o644)
	if err != nil {
		sedPanic("couldn't open file %s: %s", name, errText(err))
	}
	o := &sedOutput{name: name, w: bufio.NewWriter(wc), closer: wc}
	r.wfiles[name] = o
	r.wfileOrder = append(r.wfileOrder, o)
	return o
}

func (r *sedRun) outputMissingNewline(o *sedOutput) {
	if o.missingNewline {
		o.w.WriteByte(r.delim)
		o.missingNewline = false
	}
}

func (r *sedRun) outputLine(text []byte, nl bool, o *sedOutput) {
	r.outputMissingNewline(o)
	o.w.Write(text)
	if nl {
		o.w.WriteByte(r.delim)
	} else {
		o.missingNewline = true
	}
}

func (r *sedRun) dumpAppend() {
	r.outputMissingNewline(r.out)
	for _, a := range r.appendQ {
		if a.text != nil {
			r.out.w.Write(a.text)
		}
		if a.fname != "" {
			r.printFile(a.fname)
		}
	}
	r.appendQ = r.appendQ[:0]
}

func (r *sedRun) printFile(name string) {
	var rd io.Reader
	if name == "/dev/stdin" {
		rd = r.e.Stdin
	} else {
		f, err := r.e.FS.Open(r.ctx, r.e.Abs(name))
		if err != nil {
			return
		}
		defer f.Close()
		rd = f
	}
	io.Copy(r.out.w, rd)
}

// openNext opens the next input file; false when it cannot be read.
func (r *sedRun) openNext(name string) {
	r.inName = name
	r.inOpen = false
	if name == "-" && !r.inPlace {
		r.in = bufio.NewReaderSize(r.e.Stdin, 64*1024)
		r.inCloser = nil
		r.inOpen = true
		r.out = r.stdout
		return
	}
	target := name
	if r.follow {
		target = r.resolve(name)
	}
	st, err := grpStat(r.ctx, r.e, name)
	if err != nil {
		r.stdout.w.Flush()
		fmt.Fprintf(r.e.Stderr, "sed: can't read %s: %s\n", name, errText(err))
		r.badCount++
		return
	}
	if st.IsDir() {
		if r.inPlace {
			sedPanic("couldn't edit %s: not a regular file", name)
		}
		r.in = nil
		r.inCloser = nil
		r.inOpen = true
		r.out = r.stdout
		return
	}
	f, err := grpOpen(r.ctx, r.e, name)
	if err != nil {
		r.stdout.w.Flush()
		fmt.Fprintf(r.e.Stderr, "sed: can't read %s: %s\n", name, errText(err))
		r.badCount++
		return
	}
	r.in = bufio.NewReaderSize(f, 64*1024)
	r.inCloser = f
	r.inOpen = true
	if !r.inPlace {
		r.out = r.stdout
		return
	}
	if !st.Mode.IsRegular() {
		f.Close()
		sedPanic("couldn't edit %s: not a regular file", name)
	}
	dir := path.Dir(r.e.Abs(target))
	shown := "."
	if i := strings.LastIndexByte(target, '/'); i >= 0 {
		shown = target[:i]
	}
	var wc io.WriteCloser
	var tmp string
	for i := 0; ; i++ {
		rnd := "sed" + sedRandName()
		tmp = path.Join(dir, rnd)
		if _, err := r.e.FS.Lstat(r.ctx, tmp); err == nil && i < 100 {
			continue
		}
		wc, err = r.e.FS.Create(r.ctx, tmp, false, 0o600)
		if err != nil {
			f.Close()
			sedPanic("couldn't open temporary file %s/%s: %s", shown, rnd, errText(err))
		}
		break
	}
	r.inTemp = tmp
	r.inTarget = target
	r.inMode = st.Mode
	r.out = &sedOutput{name: tmp, w: bufio.NewWriterSize(wc, 64*1024), closer: wc}
}

func sedRandName() string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

// resolve follows the symlinks of a file name, as GNU's follow_symlink:
// a relative target is taken from the link's directory.
func (r *sedRun) resolve(p string) string {
	for i := 0; i < 40; i++ {
		fi, err := r.e.FS.Lstat(r.ctx, r.e.Abs(p))
		if err != nil || fi.Mode&iofs.ModeSymlink == 0 {
			return p
		}
		t := fi.Target
		if t == "" {
			t, _ = r.e.FS.Readlink(r.ctx, r.e.Abs(p))
		}
		if path.IsAbs(t) || !strings.Contains(p, "/") {
			p = t
		} else {
			p = p[:strings.LastIndexByte(p, '/')+1] + t
		}
	}
	return p
}

// closedown finishes the current input (and in-place output).
func (r *sedRun) closedown() {
	if !r.inOpen {
		return
	}
	r.inOpen = false
	if r.inCloser != nil {
		r.inCloser.Close()
	}
	r.in = nil
	if r.inPlace && r.inTemp != "" {
		o := r.out
		o.w.Flush()
		if err := o.closer.Close(); err != nil {
			r.e.FS.Remove(r.ctx, r.inTemp)
			sedPanic("couldn't close %s: %s", r.inTemp, errText(err))
		}
		r.e.FS.Chmod(r.ctx, r.inTemp, r.inMode.Perm()|(r.inMode&(iofs.ModeSetuid|iofs.ModeSetgid|iofs.ModeSticky)))
		if r.suffix != "*" {
			backup := strings.ReplaceAll(r.suffix, "*", r.inTarget)
			if err := r.e.FS.Rename(r.ctx, r.e.Abs(r.inTarget), r.e.Abs(backup)); err != nil {
				r.e.FS.Remove(r.ctx, r.inTemp)
				sedPanic("cannot rename %s: %s", r.inTarget, errText(err))
			}
		}
		if err := r.e.FS.Rename(r.ctx, r.inTemp, r.e.Abs(r.inTarget)); err != nil {
			r.e.FS.Remove(r.ctx, r.inTemp)
			sedPanic("cannot rename %s: %s", r.inTemp, errText(err))
		}
		r.inTemp = ""
		r.out = r.stdout
	}
}

// readLine reads one line of the current input into buf; false at EOF.
func (r *sedRun) readLine(dst *sedLine) bool {
	if r.in == nil {
		if r.inOpen {
			// A directory: GNU's getdelim fails on it.
			sedPanic("read error on %s: Is a directory", r.inName)
		}
		return false
	}
	start := len(dst.b)
	for {
		chunk, err := r.in.ReadSlice(r.delim)
		dst.b = append(dst.b, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			sedPanic("read error on %s: %s", r.inName, errText(err))
		}
		break
	}
	n := len(dst.b)
	if n == start {
		return false
	}
	if dst.b[n-1] == r.delim {
		dst.b = dst.b[:n-1]
	} else {
		dst.chomped = false
	}
	return true
}

func (r *sedRun) resetAddresses() {
	for _, c := range r.prog {
		if c.a1 != nil && c.a1.typ == sedAddrNum && c.a1.n == 0 {
			c.rangeState = sedRangeActive
		} else {
			c.rangeState = sedRangeInactive
		}
	}
}

// readPatternSpace reads the next line (appending with a delimiter for N).
func (r *sedRun) readPatternSpace(appendMode bool) bool {
	if len(r.appendQ) > 0 {
		r.dumpAppend()
	}
	r.replaced = false
	if !appendMode {
		r.line.b = r.line.b[:0]
	}
	r.line.chomped = true
	for !r.readLine(&r.line) {
		r.closedown()
		if r.fileIdx >= len(r.files) {
			return false
		}
		if r.resetNext {
			r.lineNo = 0
			r.hold.b = r.hold.b[:0]
			r.resetAddresses()
			for _, f := range r.rfileOrder {
				f.rewind()
			}
			if r.inPlace {
				r.stdout.missingNewline = false
			}
			r.resetNext = r.separate
		}
		r.openNext(r.files[r.fileIdx])
		r.fileIdx++
	}
	r.lineNo++
	return true
}

func (f *sedReadFile) rewind() {
	if f.c != nil {
		f.c.Close()
	}
	f.r, f.c, f.eof = nil, nil, false
}

// lastFileWithData opens the following files until one has data.
func (r *sedRun) lastFileWithData() bool {
	for {
		r.closedown()
		if r.fileIdx >= len(r.files) {
			return true
		}
		r.openNext(r.files[r.fileIdx])
		r.fileIdx++
		if r.inOpen && r.in != nil {
			if _, err := r.in.Peek(1); err == nil {
				return false
			}
		}
	}
}

// testEOF reports whether the current line is the last ($).
func (r *sedRun) testEOF() bool {
	if !r.inOpen || r.in == nil {
		return r.separate || r.lastFileWithData()
	}
	if _, err := r.in.Peek(1); err != nil {
		return r.separate || r.lastFileWithData()
	}
	return false
}

func (r *sedRun) matchRegex(re *sedRegex, b []byte) bool {
	if re == nil {
		re = r.lastRe
		if re == nil {
			panic(sedFatal{sedWhere(&r.lastSrc) + "no previous regular expression", sedExitBadUsage})
		}
	} else {
		r.lastRe = re
	}
	return re.g.match(b)
}

func (r *sedRun) matchAn(a *sedAddr) bool {
	switch a.typ {
	case sedAddrNull:
		return true
	case sedAddrRegex:
		return r.matchRegex(a.re, r.line.b)
	case sedAddrNumMod:
		return r.lineNo >= a.n && (r.lineNo-a.n)%a.step == 0
	case sedAddrStep, sedAddrStepMod:
		return a.n <= r.lineNo
	case sedAddrLast:
		return r.testEOF()
	case sedAddrNum:
		return a.n == r.lineNo
	}
	return false
}

func (r *sedRun) matchAddress(c *sedCmd) bool {
	if c.a1 == nil {
		return true
	}
	if c.rangeState != sedRangeActive {
		if c.a2 == nil {
			return r.matchAn(c.a1)
		}
		if c.a1.typ == sedAddrNum {
			if c.rangeState == sedRangeClosed || r.lineNo < c.a1.n {
				return false
			}
		} else if !r.matchAn(c.a1) {
			return false
		}
		c.rangeState = sedRangeActive
		switch c.a2.typ {
		case sedAddrRegex:
			return true
		case sedAddrNum:
			if r.lineNo >= c.a2.n {
				c.rangeState = sedRangeClosed
			}
			return r.lineNo <= c.a2.n || r.matchAn(c.a1)
		case sedAddrStep:
			c.a2.n = r.lineNo + c.a2.step
			return true
		case sedAddrStepMod:
			c.a2.n = r.lineNo + c.a2.step - r.lineNo%c.a2.step
			return true
		}
	}
	if c.a2.typ == sedAddrNum {
		if r.lineNo >= c.a2.n {
			c.rangeState = sedRangeClosed
		}
		return r.lineNo <= c.a2.n
	}
	if r.matchAn(c.a2) {
		c.rangeState = sedRangeClosed
	}
	return true
}

// doList is the l command.
func (r *sedRun) doList(lineLen int64) {
	o := r.out
	r.outputMissingNewline(o)
	var width int64
	for _, ch := range r.line.b {
		var ob []byte
		if ch < 0x80 && ch >= 0x20 && ch != 0x7f {
			ob = append(ob, ch)
			if ch == '\\' {
				ob = append(ob, '\\')
			}
		} else {
			ob = append(ob, '\\')
			switch ch {
			case '\a':
				ob = append(ob, 'a')
			case '\b':
				ob = append(ob, 'b')
			case '\f':
				ob = append(ob, 'f')
			case '\n':
				ob = append(ob, 'n')
			case '\r':
				ob = append(ob, 'r')
			case '\t':
				ob = append(ob, 't')
			case '\v':
				ob = append(ob, 'v')
			default:
				ob = append(ob, fmt.Sprintf("%03o", ch)...)
			}
		}
		if width+int64(len(ob)) >= lineLen && lineLen > 0 {
			o.w.WriteByte('\\')
			o.w.WriteByte(r.delim)
			width = 0
		}
		o.w.Write(ob)
		width += int64(len(ob))
	}
	o.w.WriteByte('$')
	o.w.WriteByte(r.delim)
}

func sedAppendModified(dst []byte, s []byte, typ int) []byte {
	if typ == sedReplAsIs {
		return append(dst, s...)
	}
	for len(s) > 0 {
		rn, w := utf8.DecodeRune(s)
		if rn == utf8.RuneError && w <= 1 {
			typ &^= sedReplModifiers
			if typ == sedReplAsIs {
				return append(dst, s...)
			}
			dst = append(dst, s[0])
			s = s[1:]
			continue
		}
		s = s[w:]
		if typ&sedReplModifiers != 0 {
			if typ&sedReplUpperFirst != 0 {
				rn = unicode.ToUpper(rn)
			} else {
				rn = unicode.ToLower(rn)
			}
			typ &^= sedReplModifiers
			if typ == sedReplAsIs {
				dst = utf8.AppendRune(dst, rn)
				return append(dst, s...)
			}
		} else if typ&sedReplUpper != 0 {
			rn = unicode.ToUpper(rn)
		} else {
			rn = unicode.ToLower(rn)
		}
		dst = utf8.AppendRune(dst, rn)
	}
	return dst
}

func (r *sedRun) appendReplacement(dst []byte, parts []sedReplPart, regs []int) []byte {
	replMod := 0
	for _, p := range parts {
		i := p.id
		var cur int
		if p.typ&sedReplModifiers != 0 {
			cur = p.typ
		} else {
			cur = p.typ | replMod
		}
		replMod = 0
		if len(p.prefix) > 0 {
			dst = sedAppendModified(dst, p.prefix, cur)
			cur &^= sedReplModifiers
		}
		if i >= 0 && 2*i+1 < len(regs) {
			s, e := regs[2*i], regs[2*i+1]
			if e == s && p.typ&sedReplModifiers != 0 {
				replMod = cur & sedReplModifiers
			} else if e != s {
				dst = sedAppendModified(dst, r.line.b[s:e], cur)
			}
		}
	}
	return dst
}

func (r *sedRun) doSubst(sub *sedSubst) {
	re := sub.re
	if re == nil {
		re = r.lastRe
		if re == nil {
			panic(sedFatal{sedWhere(&r.lastSrc) + "no previous regular expression", sedExitBadUsage})
		}
	} else {
		r.lastRe = re
	}
	line := r.line.b
	first := re.g.findAt(line, 0)
	if first == nil {
		return
	}
	var out []byte
	start, lastEnd := 0, 0
	var count int64
	numb := max(sub.numb, 1)
	regs := first
	for {
		offset := regs[0]
		matched := regs[1] - regs[0]
		if start < offset {
			out = append(out, line[start:offset]...)
			start = offset
		}
		again := true
		if (matched > 0 || count == 0 || offset > lastEnd) && func() bool { count++; return count >= numb }() {
			r.replaced = true
			out = r.appendReplacement(out, sub.repl, regs)
			again = sub.global
		} else {
			if matched == 0 {
				if start < len(line) {
					_, w := utf8.DecodeRune(line[offset:])
					matched = w
				} else {
					break
				}
			}
			out = append(out, line[offset:offset+matched]...)
		}
		start = offset + matched
		lastEnd = regs[1]
		if !again || start > len(line) {
			break
		}
		regs = re.g.findAt(line, start)
		if regs == nil {
			break
		}
	}
	if start < len(line) {
		out = append(out, line[start:]...)
	}
	r.line.b = out
	if count < numb {
		return
	}
	if sub.print&1 != 0 {
		r.outputLine(r.line.b, r.line.chomped, r.out)
	}
	if sub.eval {
		sedPanic("option `e' not supported")
	}
	if sub.print&2 != 0 {
		r.outputLine(r.line.b, r.line.chomped, r.out)
	}
	if sub.outf != nil {
		r.outputLine(r.line.b, r.line.chomped, sub.outf)
	}
}

func (r *sedRun) translate(m map[string]string) {
	var out []byte
	b := r.line.b
	for len(b) > 0 {
		_, w := utf8.DecodeRune(b)
		ch := string(b[:w])
		if t, ok := m[ch]; ok {
			out = append(out, t...)
		} else {
			out = append(out, b[:w]...)
		}
		b = b[w:]
	}
	r.line.b = out
}

func (f *sedReadFile) readLine(r *sedRun) ([]byte, bool) {
	if f.eof {
		return nil, false
	}
	if f.r == nil {
		var rd io.Reader
		if f.name == "/dev/stdin" {
			rd = r.e.Stdin
		} else {
			fh, err := r.e.FS.Open(r.ctx, r.e.Abs(f.name))
			if err != nil {
				f.eof = true
				return nil, false
			}
			f.c = fh
			rd = fh
		}
		f.r = bufio.NewReader(rd)
	}
	var line []byte
	for {
		chunk, err := f.r.ReadSlice(r.delim)
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			f.eof = true
		}
		break
	}
	if len(line) == 0 {
		return nil, false
	}
	return line, true
}

// execute runs the script on the pattern space; -1 ends the cycle.
func (r *sedRun) execute() int {
	prog := r.prog
	pc := 0
	steps := 0
	for pc < len(prog) {
		if steps++; steps&1023 == 0 && r.ctx.Err() != nil {
			return sedCancelled
		}
		c := prog[pc]
		if r.matchAddress(c) != c.bang {
			switch c.cmd {
			case 'a':
				if c.text != nil {
					r.appendQ = append(r.appendQ, sedAppend{text: c.text})
				}
			case '{', 'b':
				pc = c.jump
				continue
			case '}', '#', ':':
			case 'c':
				if c.rangeState != sedRangeActive && c.text != nil {
					r.outputLine(c.text[:len(c.text)-1], true, r.out)
				}
				return -1
			case 'd':
				return -1
			case 'D':
				i := bytes.IndexByte(r.line.b, r.delim)
				if i < 0 {
					return -1
				}
				r.line.b = append(r.line.b[:0], r.line.b[i+1:]...)
				pc = 0
				continue
			case 'e':
				sedPanic("`e' command not supported")
			case 'g':
				r.line.b = append(r.line.b[:0], r.hold.b...)
				r.line.chomped = r.hold.chomped
			case 'G':
				r.line.b = append(r.line.b, r.delim)
				r.line.b = append(r.line.b, r.hold.b...)
				r.line.chomped = r.hold.chomped
			case 'h':
				r.hold.b = append(r.hold.b[:0], r.line.b...)
				r.hold.chomped = r.line.chomped
			case 'H':
				r.hold.b = append(r.hold.b, r.delim)
				r.hold.b = append(r.hold.b, r.line.b...)
				r.hold.chomped = r.line.chomped
			case 'i':
				if c.text != nil {
					r.outputLine(c.text[:len(c.text)-1], true, r.out)
				}
			case 'l':
				n := c.intArg
				if n == -1 {
					n = r.lineLen
				}
				r.doList(n)
			case 'n':
				if !r.noAutoprint {
					r.outputLine(r.line.b, r.line.chomped, r.out)
				}
				if r.testEOF() || !r.readPatternSpace(false) {
					return -1
				}
			case 'N':
				r.line.b = append(r.line.b, r.delim)
				if r.testEOF() || !r.readPatternSpace(true) {
					r.line.b = r.line.b[:len(r.line.b)-1]
					if !r.posix && !r.noAutoprint {
						r.outputLine(r.line.b, r.line.chomped, r.out)
					}
					return -1
				}
			case 'p':
				r.outputLine(r.line.b, r.line.chomped, r.out)
			case 'P':
				i := bytes.IndexByte(r.line.b, r.delim)
				if i >= 0 {
					r.outputLine(r.line.b[:i], true, r.out)
				} else {
					r.outputLine(r.line.b, r.line.chomped, r.out)
				}
			case 'q':
				if !r.noAutoprint {
					r.outputLine(r.line.b, r.line.chomped, r.out)
				}
				r.dumpAppend()
				if c.intArg == -1 {
					return 0
				}
				return int(c.intArg)
			case 'Q':
				if c.intArg == -1 {
					return 0
				}
				return int(c.intArg)
			case 'r':
				if c.readAppend {
					r.appendQ = append(r.appendQ, sedAppend{fname: c.fname})
				} else {
					r.printFile(c.fname)
				}
			case 'R':
				if text, ok := c.inf.readLine(r); ok {
					r.appendQ = append(r.appendQ, sedAppend{text: text})
				}
			case 's':
				r.doSubst(c.subst)
			case 't':
				if r.replaced {
					r.replaced = false
					pc = c.jump
					continue
				}
			case 'T':
				if !r.replaced {
					pc = c.jump
					continue
				}
				r.replaced = false
			case 'w':
				r.outputLine(r.line.b, r.line.chomped, c.outf)
			case 'W':
				i := bytes.IndexByte(r.line.b, r.delim)
				if i >= 0 {
					r.outputLine(r.line.b[:i], true, c.outf)
				} else {
					r.outputLine(r.line.b, r.line.chomped, c.outf)
				}
			case 'x':
				r.line, r.hold = r.hold, r.line
			case 'y':
				r.translate(c.ymap)
			case 'z':
				r.line.b = r.line.b[:0]
			case '=':
				r.outputMissingNewline(r.out)
				fmt.Fprintf(r.out.w, "%d%c", r.lineNo, r.delim)
			case 'F':
				r.outputMissingNewline(r.out)
				fmt.Fprintf(r.out.w, "%s%c", r.inName, r.delim)
			}
		}
		pc++
	}
	if !r.noAutoprint {
		r.outputLine(r.line.b, r.line.chomped, r.out)
	}
	return -1
}

var sedGetoptSpec = &getoptLong{
	short: "bsnrzuEe:f:l:i::",
	long: []longOpt{
		{"binary", 0, "b"},
		{"regexp-extended", 0, "r"},
		{"debug", 0, "debug"},
		{"in-place", 2, "i"},
		{"expression", 1, "e"},
		{"file", 1, "f"},
		{"line-length", 1, "l"},
		{"null-data", 0, "z"},
		{"zero-terminated", 0, "z"},
		{"quiet", 0, "n"},
		{"posix", 0, "posix"},
		{"silent", 0, "n"},
		{"sandbox", 0, "sandbox"},
		{"separate", 0, "s"},
		{"unbuffered", 0, "u"},
		{"version", 0, "version"},
		{"help", 0, "help"},
		{"follow-symlinks", 0, "follow-symlinks"},
	},
}

func sedMain(ctx context.Context, e *Env, args []string) (status int) {
	if e.Stdin == nil {
		sub := *e
		sub.Stdin = strings.NewReader("")
		e = &sub
	}
	stdout := &sedOutput{name: "/dev/stdout", w: bufio.NewWriterSize(e.Stdout, 64*1024)}
	r := &sedRun{
		ctx: ctx, e: e, delim: '\n', lineLen: 70, suffix: "",
		stdout: stdout, out: stdout,
		stderr: &sedOutput{name: "/dev/stderr", w: bufio.NewWriterSize(e.Stderr, 4096)},
		wfiles: map[string]*sedOutput{}, rfiles: map[string]*sedReadFile{},
	}
	r.line.chomped, r.hold.chomped = true, true
	r.devStdout = &sedOutput{name: "/dev/stdout", w: stdout.w}
	defer func() {
		if x := recover(); x != nil {
			f, ok := x.(sedFatal)
			if !ok {
				panic(x)
			}
			if r.inTemp != "" {
				if r.out != nil && r.out.closer != nil {
					r.out.closer.Close()
				}
				r.e.FS.Remove(r.ctx, r.inTemp)
				r.inTemp = ""
			}
			r.flushAll()
			fmt.Fprintln(e.Stderr, f.msg)
			status = f.status
			return
		}
		r.flushAll()
	}()
	c := &sedCompiler{run: r, firstScript: true}
	opts, operands, perr := sedGetoptSpec.parse(args[1:])
	haveScript := false
	for _, op := range opts {
		switch op.name {
		case "n":
			r.noAutoprint = true
		case "e":
			c.compileString(op.value)
			r.lastSrc = *c.src
			haveScript = true
		case "f":
			c.compileFile(op.value)
			r.lastSrc = *c.src
			haveScript = true
		case "i":
			r.separate = true
			r.inPlace = true
			switch {
			case !op.set || op.value == "":
				r.suffix = "*"
			case strings.Contains(op.value, "*"):
				r.suffix = op.value
			default:
				r.suffix = "*" + op.value
			}
		case "l":
			r.lineLen = sedAtoi(op.value)
		case "posix":
			r.posix = true
		case "r", "E":
			c.ere = true
		case "s":
			r.separate = true
		case "sandbox":
			r.sandbox = true
		case "follow-symlinks":
			r.follow = true
		case "z":
			r.delim = 0
		case "u", "b", "debug":
		case "version":
			stdout.w.WriteString(sedVersion)
			return 0
		case "help":
			stdout.w.WriteString(sedUsage + "E-mail bug reports to: <bug-sed@gnu.org>.\n")
			return 0
		}
	}
	if perr != nil {
		stdout.w.Flush()
		fmt.Fprintf(e.Stderr, "sed: %s\n%s", perr, sedUsage)
		return sedExitBadUsage
	}
	if !haveScript {
		if len(operands) == 0 {
			stdout.w.Flush()
			fmt.Fprint(e.Stderr, sedUsage)
			return sedExitBadUsage
		}
		c.compileString(operands[0])
		r.lastSrc = *c.src
		operands = operands[1:]
	}
	c.finish()
	r.prog = c.prog

	if len(operands) > 0 {
		r.files = operands
	} else if r.inPlace {
		sedPanic("no input files")
	} else {
		r.files = []string{"-"}
	}
	r.resetNext = true
	status = 0
	for r.readPatternSpace(false) {
		st := r.execute()
		if st == sedCancelled || ctx.Err() != nil {
			status = sedExitPanic
			break
		}
		if st != -1 {
			status = st & 0xff
			break
		}
	}
	r.closedown()
	if r.badCount > 0 {
		status = sedExitBadInput
	}
	return status
}

// sedAtoi is C's atoi.
func sedAtoi(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var n int64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}

func (r *sedRun) flushAll() {
	r.stdout.w.Flush()
	r.stderr.w.Flush()
	for _, o := range r.wfileOrder {
		o.w.Flush()
		if o.closer != nil {
			o.closer.Close()
		}
	}
	r.wfileOrder = nil
	for _, f := range r.rfileOrder {
		if f.c != nil {
			f.c.Close()
		}
	}
	r.rfileOrder = nil
}

const sedVersion = `sed (GNU sed) 4.9
Packaged by Debian
Copyright (C) 2022 Free Software Foundation, Inc.
License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.

Written by Jay Fenlason, Tom Lord, Ken Pizzini,
Paolo Bonzini, Jim Meyering, and Assaf Gordon.

This sed program was built with SELinux support.
SELinux is disabled on this system.

GNU sed home page: <https://www.gnu.org/software/sed/>.
General help using GNU software: <https://www.gnu.org/gethelp/>.
E-mail bug reports to: <bug-sed@gnu.org>.
`

const sedUsage = `Usage: sed [OPTION]... {script-only-if-no-other-script} [input-file]...

  -n, --quiet, --silent
                 suppress automatic printing of pattern space
      --debug
                 annotate program execution
  -e script, --expression=script
                 add the script to the commands to be executed
  -f script-file, --file=script-file
                 add the contents of script-file to the commands to be executed
  --follow-symlinks
                 follow symlinks when processing in place
  -i[SUFFIX], --in-place[=SUFFIX]
                 edit files in place (makes backup if SUFFIX supplied)
  -l N, --line-length=N
                 specify the desired line-wrap length for the ` + "`l'" + ` command
  --posix
                 disable all GNU extensions.
  -E, -r, --regexp-extended
                 use extended regular expressions in the script
                 (for portability use POSIX -E).
  -s, --separate
                 consider files as separate rather than as a single,
                 continuous long stream.
      --sandbox
                 operate in sandbox mode (disable e/r/w commands).
  -u, --unbuffered
                 load minimal amounts of data from the input files and flush
                 the output buffers more often
  -z, --null-data
                 separate lines by NUL characters
      --help     display this help and exit
      --version  output version information and exit

If no -e, --expression, -f, or --file option is given, then the first
non-option argument is taken as the sed script to interpret.  All
remaining arguments are names of input files; if no input files are
specified, then the standard input is read.

GNU sed home page: <https://www.gnu.org/software/sed/>.
General help using GNU software: <https://www.gnu.org/gethelp/>.
`
