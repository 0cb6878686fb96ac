package coreutils

// awk's input (records, fields, getline, the main input's files) and
// output (print, printf, redirections, close, fflush).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Field splitting.

type awkSplitKind uint8

const (
	awkSplitSpace awkSplitKind = iota // runs of blanks, ignoring ends
	awkSplitChar                      // a literal separator
	awkSplitRegex
	awkSplitEmpty // each character a field
)

type awkSplitter struct {
	kind awkSplitKind
	sep  string
	re   *regexp.Regexp
}

// newSplitter interprets a field separator: " " is the default blank
// splitting, "" splits characters, another single character is literal
// and anything longer a regular expression. In paragraph mode a newline
// always separates fields too.
func (in *awkInterp) newSplitter(fs string, paragraph bool) *awkSplitter {
	key := "n" + fs
	if paragraph {
		key = "p" + fs
	}
	if sp, ok := in.splitRe[key]; ok {
		return sp
	}
	sp := &awkSplitter{}
	switch {
	case fs == " ":
		sp.kind = awkSplitSpace
	case fs == "":
		sp.kind = awkSplitEmpty
	case utf8.RuneCountInString(fs) == 1:
		if paragraph && fs != "\n" {
			sp.kind = awkSplitRegex
			sp.re = in.dynRegex("[" + awkBracketQuote(fs) + "\n]")
		} else {
			sp.kind = awkSplitChar
			sp.sep = fs
		}
	default:
		sp.kind = awkSplitRegex
		if paragraph {
			sp.re = in.dynRegex("(" + fs + ")|\n")
		} else {
			sp.re = in.dynRegex(fs)
		}
	}
	if len(in.splitRe) > 100 {
		clear(in.splitRe)
	}
	in.splitRe[key] = sp
	return sp
}

// awkBracketQuote quotes a character for use in a bracket expression.
func awkBracketQuote(s string) string {
	if len(s) == 1 && strings.IndexByte(`\]^-[`, s[0]) >= 0 {
		return `\` + s
	}
	return s
}

func (sp *awkSplitter) split(s string, emit func(string)) {
	switch sp.kind {
	case awkSplitSpace:
		i := 0
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
				i++
			}
			if i >= len(s) {
				return
			}
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
				j++
			}
			emit(s[i:j])
			i = j
		}
	case awkSplitEmpty:
		for i := 0; i < len(s); {
			_, n := utf8.DecodeRuneInString(s[i:])
			emit(s[i : i+n])
			i += n
		}
	case awkSplitChar:
		if s == "" {
			return
		}
		for {
			i := strings.Index(s, sp.sep)
			if i < 0 {
				emit(s)
				return
			}
			emit(s[:i])
			s = s[i+len(sp.sep):]
		}
	case awkSplitRegex:
		if s == "" {
			return
		}
		start := 0
		for _, m := range sp.re.FindAllStringIndex(s, -1) {
			if m[0] == m[1] {
				continue
			}
			emit(s[start:m[0]])
			start = m[1]
		}
		emit(s[start:])
	}
}

// Records.

// awkReader reads records from a stream.
type awkReader struct {
	r     io.Reader
	c     io.Closer
	buf   []byte
	start int
	eof   bool
	err   error
}

type awkCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c awkCtxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (in *awkInterp) newReader(r io.Reader, c io.Closer) *awkReader {
	return &awkReader{r: awkCtxReader{in.ctx, r}, c: c}
}

// fill reads more input into the buffer; it reports false at the end.
func (rd *awkReader) fill() bool {
	if rd.eof {
		return false
	}
	if rd.start > 0 && rd.start >= len(rd.buf)/2 {
		n := copy(rd.buf, rd.buf[rd.start:])
		rd.buf = rd.buf[:n]
		rd.start = 0
	}
	if len(rd.buf)-rd.start > awkMaxStr {
		rd.err = fmt.Errorf("record too long (more than %d bytes)", awkMaxStr)
		rd.eof = true
		return false
	}
	if cap(rd.buf)-len(rd.buf) < 32<<10 {
		nb := make([]byte, len(rd.buf), 2*cap(rd.buf)+64<<10)
		copy(nb, rd.buf)
		rd.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := rd.r.Read(rd.buf[len(rd.buf):cap(rd.buf)])
		rd.buf = rd.buf[:len(rd.buf)+n]
		if err != nil {
			if err != io.EOF {
				rd.err = err
			}
			rd.eof = true
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	return true
}

// readRecord reads the next record according to RS.
func (in *awkInterp) readRecord(rd *awkReader) (string, bool, error) {
	rec, ok := in.scanRecord(rd)
	if rd.err != nil {
		err := rd.err
		rd.err = nil
		return "", false, err
	}
	return rec, ok, nil
}

func (in *awkInterp) scanRecord(rd *awkReader) (string, bool) {
	rs := in.rs
	switch {
	case len(rs) == 1:
		c := rs[0]
		from := rd.start
		for {
			if i := bytes.IndexByte(rd.buf[from:], c); i >= 0 {
				end := from + i
				rec := string(rd.buf[rd.start:end])
				rd.start = end + 1
				return rec, true
			}
			from = len(rd.buf)
			off := from - rd.start
			if !rd.fill() {
				break
			}
			from = rd.start + off
		}
		if rd.start < len(rd.buf) {
			rec := string(rd.buf[rd.start:])
			rd.start = len(rd.buf)
			return rec, true
		}
		return "", false
	case rs == "":
		// Paragraph mode: skip leading newlines, end at a blank line.
		for {
			for rd.start < len(rd.buf) && rd.buf[rd.start] == '\n' {
				rd.start++
			}
			if rd.start < len(rd.buf) || !rd.fill() {
				break
			}
		}
		from := rd.start
		for {
			if i := bytes.Index(rd.buf[from:], []byte("\n\n")); i >= 0 {
				end := from + i
				rec := string(rd.buf[rd.start:end])
				rd.start = end + 2
				return rec, true
			}
			off := len(rd.buf) - rd.start
			if off > 0 {
				off--
			}
			if !rd.fill() {
				break
			}
			from = rd.start + off
		}
		if rd.start < len(rd.buf) {
			rec := strings.TrimRight(string(rd.buf[rd.start:]), "\n")
			rd.start = len(rd.buf)
			return rec, rec != ""
		}
		return "", false
	default:
		if in.rsRegex == nil {
			in.rsRegex = in.dynRegex(rs)
		}
		re := in.rsRegex
		for {
			data := rd.buf[rd.start:]
			for pos := 0; pos <= len(data); {
				loc := re.FindIndex(data[pos:])
				if loc == nil {
					break
				}
				m0, m1 := pos+loc[0], pos+loc[1]
				if m0 == m1 {
					pos = m1 + 1 // an empty match separates nothing
					continue
				}
				if m1 == len(data) && !rd.eof {
					break // the match might go on
				}
				rec := string(data[:m0])
				rd.start += m1
				return rec, true
			}
			if rd.eof {
				break
			}
			rd.fill() // at the end, scan once more knowing it
		}
		if rd.start < len(rd.buf) {
			rec := string(rd.buf[rd.start:])
			rd.start = len(rd.buf)
			return rec, true
		}
		return "", false
	}
}

func (in *awkInterp) stdin() *awkReader {
	if in.stdinRd == nil {
		var r io.Reader = in.e.Stdin
		if r == nil {
			r = strings.NewReader("")
		}
		in.stdinRd = in.newReader(r, nil)
	}
	return in.stdinRd
}

// awkCmdAssign recognizes a var=value operand.
func awkCmdAssign(arg string) (name, value string, ok bool) {
	eq := strings.IndexByte(arg, '=')
	if eq <= 0 || !awkIsName(arg[:eq]) {
		return "", "", false
	}
	return arg[:eq], arg[eq+1:], true
}

func awkIsName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && awkIsDigit(c)) {
			return false
		}
	}
	_, kw := awkKeywords[s]
	return !kw && !awkBuiltins[s]
}

// awkUnescape decodes escape sequences as in a string literal, for -v
// and command-line assignments.
func awkUnescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if ch, n, ok := awkEscapeChar(s[i+1:]); ok {
			b.WriteByte(ch)
			i += n
			continue
		}
		b.WriteByte('\\')
	}
	return b.String()
}

// assignVar assigns name=value from the command line.
func (in *awkInterp) assignVar(name, value string) {
	i, ok := in.prog.globals[name]
	if !ok {
		return // the program never uses it
	}
	if _, isFunc := in.prog.funcs[name]; isFunc {
		in.fatal("can't assign to %s; it's a function", name)
	}
	in.setVar(&awkVar{name: name, idx: i}, awkInputV(awkUnescape(value)))
}

// openNextMain moves to the next operand of the main input.
func (in *awkInterp) openNextMain() bool {
	if in.mainDone {
		return false
	}
	if in.argIdx == 0 {
		in.argIdx = 1
	}
	argv := in.globals[awkVARGV].arr
	for {
		argc := awkToNum(in.globals[awkVARGC].v)
		if float64(in.argIdx) >= argc {
			break
		}
		i := in.argIdx
		in.argIdx++
		v, ok := argv.get(strconv.Itoa(i))
		if !ok {
			continue
		}
		arg := in.toStr(v)
		if arg == "" {
			continue
		}
		if name, val, ok := awkCmdAssign(arg); ok {
			in.assignVar(name, val)
			continue
		}
		in.sawFile = true
		in.globals[awkVFILENAME].v = awkStrV(arg)
		in.fnr = 0
		if arg == "-" || arg == "/dev/stdin" {
			in.mainRd = in.stdin()
			return true
		}
		f, err := in.e.FS.Open(in.ctx, in.e.Abs(arg))
		if err != nil {
			panic(&awkFatalError{msg: fmt.Sprintf("cannot open %s (%s)", arg, errText(err)), code: 2, plain: true})
		}
		in.mainRd = in.newReader(f, f)
		return true
	}
	in.mainDone = true
	if !in.sawFile {
		in.sawFile = true
		in.mainRd = in.stdin()
		return true
	}
	return false
}

func (in *awkInterp) closeMain() {
	if in.mainRd != nil && in.mainRd.c != nil {
		in.mainRd.c.Close()
	}
	in.mainRd = nil
}

// readMain reads the main input's next record.
func (in *awkInterp) readMain() (string, bool) {
	for {
		if in.mainRd == nil && !in.openNextMain() {
			return "", false
		}
		rec, ok, err := in.readRecord(in.mainRd)
		if err != nil {
			msg := fmt.Sprintf("read error on %s (%s)", in.toStr(in.globals[awkVFILENAME].v), errText(err))
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				msg = err.Error()
			}
			panic(&awkFatalError{msg: msg, code: 2, plain: true})
		}
		if ok {
			return rec, true
		}
		in.closeMain()
	}
}

func (in *awkInterp) getline(x *awkGetline) awkValue {
	var rec string
	switch x.kind {
	case awkGetlineCmd:
		cmd := in.toStr(in.eval(x.src))
		in.fatal("input pipes are not supported (\"%s\" | getline): no command can run", cmd)
	case awkGetlineFile:
		name := in.toStr(in.eval(x.src))
		rd, ok := in.inputs[name]
		if !ok {
			if name == "-" || name == "/dev/stdin" {
				rd = in.stdin()
			} else {
				if len(in.inputs) >= awkMaxOpen {
					in.fatal("too many open input files (more than %d): close some with close()", awkMaxOpen)
				}
				f, err := in.e.FS.Open(in.ctx, in.e.Abs(name))
				if err != nil {
					return awkNumV(-1)
				}
				rd = in.newReader(f, f)
			}
			in.inputs[name] = rd
		}
		r, ok, err := in.readRecord(rd)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				panic(&awkFatalError{msg: err.Error(), code: 2, plain: true})
			}
			return awkNumV(-1)
		}
		if !ok {
			return awkNumV(0)
		}
		rec = r
		if x.lhs == nil {
			in.setRecord(rec)
			return awkNumV(1)
		}
	default:
		if in.phase == 2 && in.mainDone && in.mainRd == nil {
			return awkNumV(0)
		}
		r, ok := in.readMain()
		if !ok {
			return awkNumV(0)
		}
		rec = r
		in.nr++
		in.fnr++
		if x.lhs == nil {
			in.setRecord(rec)
			return awkNumV(1)
		}
	}
	in.assign(x.lhs, awkInputV(rec))
	return awkNumV(1)
}

// Output.

type awkOutput struct {
	name   string
	w      *bufio.Writer
	c      io.Closer // nil for the standard streams
	stderr bool
	used   uint64
}

func (in *awkInterp) outputFor(redir awkTok, name string) *awkOutput {
	if redir == awkTPipe {
		in.fatal("output pipes are not supported (print | \"%s\"): no command can run", name)
	}
	if o, ok := in.outputs[name]; ok {
		in.useClock++
		o.used = in.useClock
		return o
	}
	switch name {
	case "/dev/stdout", "-":
		return in.out
	case "/dev/stderr":
		return in.errOut
	case "":
		in.fatal("null file name in print redirection")
	}
	if len(in.outputs) >= awkMaxOpen {
		// Close the least recently used file; it reopens appending.
		var lru *awkOutput
		for _, o := range in.outputs {
			if lru == nil || o.used < lru.used {
				lru = o
			}
		}
		in.closeOutput(lru)
		in.reopen[lru.name] = true
	}
	appendMode := redir == awkTAppend || in.reopen[name]
	f, err := in.e.FS.Create(in.ctx, in.e.Abs(name), appendMode, 0o644)
	if err != nil {
		in.fatal("cannot open \"%s\" for output (%s)", name, errText(err))
	}
	in.useClock++
	o := &awkOutput{name: name, w: bufio.NewWriterSize(f, 8<<10), c: f, used: in.useClock}
	in.outputs[name] = o
	return o
}

func (in *awkInterp) closeOutput(o *awkOutput) error {
	delete(in.outputs, o.name)
	err := o.w.Flush()
	if o.c != nil {
		if cerr := o.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// writeErr ends the program after a failed write.
func (in *awkInterp) writeErr(o *awkOutput, err error) {
	if o.c == nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe)) {
		panic(&awkFatalError{code: 141, quiet: true})
	}
	name := o.name
	if o == in.out {
		name = "standard output"
	}
	in.fatal("write failure on %s (%s)", name, errText(err))
}

func (in *awkInterp) printRecord(o *awkOutput) {
	o.w.WriteString(in.getRecord())
	if _, err := o.w.WriteString(in.ors); err != nil {
		in.writeErr(o, err)
	}
	if o.stderr {
		o.w.Flush()
	}
}

func (in *awkInterp) print(x *awkPrint) {
	o := in.out
	if x.dest != nil {
		o = in.outputFor(x.redir, in.toStr(in.eval(x.dest)))
	}
	if x.printf {
		args := make([]awkValue, len(x.args)-1)
		for i, a := range x.args[1:] {
			args[i] = in.eval(a)
		}
		s := in.sprintf(in.toStr(in.eval(x.args[0])), args)
		if _, err := o.w.WriteString(s); err != nil {
			in.writeErr(o, err)
		}
	} else if len(x.args) == 0 {
		in.printRecord(o)
		return
	} else {
		for i, a := range x.args {
			if i > 0 {
				o.w.WriteString(in.ofs)
			}
			o.w.WriteString(in.outStr(in.eval(a)))
		}
		if _, err := o.w.WriteString(in.ors); err != nil {
			in.writeErr(o, err)
		}
	}
	if o.stderr {
		o.w.Flush()
	}
}

// closeStream implements close(): it closes an output or input stream.
func (in *awkInterp) closeStream(name string) int {
	status := -1
	if in.reopen[name] {
		delete(in.reopen, name)
		status = 0
	}
	if o, ok := in.outputs[name]; ok {
		status = 0
		if err := in.closeOutput(o); err != nil {
			status = -1
		}
	} else if name == "/dev/stdout" || name == "-" {
		if err := in.out.w.Flush(); err != nil {
			in.writeErr(in.out, err)
		}
		status = 0
	} else if name == "/dev/stderr" {
		in.errOut.w.Flush()
		status = 0
	}
	if rd, ok := in.inputs[name]; ok {
		delete(in.inputs, name)
		if rd.c != nil {
			rd.c.Close()
		}
		status = 0
	}
	return status
}

func (in *awkInterp) flushAll() int {
	if err := in.out.w.Flush(); err != nil {
		in.writeErr(in.out, err)
	}
	in.errOut.w.Flush()
	for _, o := range in.outputs {
		if err := o.w.Flush(); err != nil {
			in.writeErr(o, err)
		}
	}
	return 0
}

// closeAll flushes and closes every stream at the end; after a fatal
// error it only tries.
func (in *awkInterp) closeAll(failing bool) (fe *awkFatalError) {
	for _, rd := range in.inputs {
		if rd.c != nil {
			rd.c.Close()
		}
	}
	in.inputs = map[string]*awkReader{}
	in.closeMain()
	for _, o := range in.outputs {
		if err := in.closeOutput(o); err != nil && !failing && fe == nil {
			fe = &awkFatalError{msg: fmt.Sprintf("write failure on %s (%s)", o.name, errText(err)), code: 2}
		}
	}
	in.errOut.w.Flush()
	if err := in.out.w.Flush(); err != nil && !failing && fe == nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) {
			return &awkFatalError{code: 141, quiet: true}
		}
		fe = &awkFatalError{msg: fmt.Sprintf("write failure on standard output (%s)", errText(err)), code: 2}
	}
	if fe != nil && !fe.quiet {
		fmt.Fprintf(in.e.Stderr, "awk: %s\n", fe.msg)
	}
	return fe
}
