package coreutils

// The awk interpreter: a tree walker over the parsed program.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// Bounds that keep a runaway program from exhausting memory or stack.
const (
	awkMaxDepth  = 10000    // nested function calls
	awkMaxStr    = 64 << 20 // bytes in one string or record
	awkMaxFields = 1 << 20  // field index
	awkMaxElems  = 1 << 23  // array elements in all arrays
	awkMaxWidth  = 1 << 20  // printf width and precision
	awkMaxOpen   = 256      // output files kept open at once
)

// awkCell holds a variable: a scalar or an array. A function parameter
// whose argument was an untyped variable links to the caller's cell, so
// that using it as an array makes the caller's variable that array.
type awkCell struct {
	v    awkValue
	arr  *awkArray
	link *awkCell
}

func (c *awkCell) peekArray() *awkArray {
	if c.arr == nil && c.link != nil {
		c.arr = c.link.peekArray()
	}
	return c.arr
}

// awkArray is an associative array that remembers insertion order, so
// that for-in loops are deterministic. Entries live in fixed-size
// chunks, so that growing never copies them.
type awkArray struct {
	m      map[string]int
	chunks [][]awkEntry
	n      int // entries used, live or dead
	dead   int
	count  *int // elements in all arrays, for awkMaxElems
}

const awkChunk = 512

type awkEntry struct {
	key  string
	v    awkValue
	live bool
}

func awkNewArray(count *int) *awkArray {
	return &awkArray{m: map[string]int{}, count: count}
}

func (a *awkArray) len() int { return len(a.m) }

func (a *awkArray) ent(i int) *awkEntry { return &a.chunks[i/awkChunk][i%awkChunk] }

func (a *awkArray) has(key string) bool {
	_, ok := a.m[key]
	return ok
}

func (a *awkArray) get(key string) (awkValue, bool) {
	if i, ok := a.m[key]; ok {
		return a.ent(i).v, true
	}
	return awkValue{}, false
}

// ref returns key's value, creating the element.
func (a *awkArray) ref(key string) *awkValue {
	if i, ok := a.m[key]; ok {
		return &a.ent(i).v
	}
	*a.count++
	if *a.count > awkMaxElems {
		panic(&awkFatalError{msg: fmt.Sprintf("too many array elements (more than %d)", awkMaxElems)})
	}
	i := a.n
	if i/awkChunk >= len(a.chunks) {
		a.chunks = append(a.chunks, make([]awkEntry, awkChunk))
	}
	a.n++
	e := a.ent(i)
	e.key, e.live = key, true
	a.m[key] = i
	return &e.v
}

func (a *awkArray) set(key string, v awkValue) { *a.ref(key) = v }

func (a *awkArray) del(key string) {
	i, ok := a.m[key]
	if !ok {
		return
	}
	delete(a.m, key)
	*a.ent(i) = awkEntry{}
	a.dead++
	*a.count--
	if a.dead > 64 && a.dead > a.n/2 {
		keys := a.keys()
		vals := make([]awkValue, len(keys))
		for j, k := range keys {
			vals[j] = a.ent(a.m[k]).v
		}
		*a.count -= len(keys)
		a.m = make(map[string]int, len(keys))
		a.chunks, a.n, a.dead = nil, 0, 0
		for j, k := range keys {
			*a.ref(k) = vals[j]
		}
	}
}

func (a *awkArray) clear() {
	*a.count -= len(a.m)
	a.m = map[string]int{}
	a.chunks, a.n, a.dead = nil, 0, 0
}

func (a *awkArray) keys() []string {
	out := make([]string, 0, len(a.m))
	for i := 0; i < a.n; i++ {
		if e := a.ent(i); e.live {
			out = append(out, e.key)
		}
	}
	return out
}

// awkFatalError ends the program with status 2 (or code), after message
// msg (none when quiet).
type awkFatalError struct {
	msg   string
	code  int
	quiet bool
	plain bool // not a run time error of the program (a file, the context)
}

// awkCtlPanic carries next, nextfile and exit out of function bodies.
type awkCtlPanic struct{ ctl awkCtl }

type awkInterp struct {
	ctx     context.Context
	e       *Env
	prog    *awkProgram
	globals []awkCell
	frame   []awkCell
	depth   int
	retVal  awkValue
	phase   int // 0 BEGIN, 1 main, 2 END

	record      string
	recordStale bool // a field changed: $0 must be rebuilt
	fields      []awkValue
	nf          int
	splitDone   bool
	recSplit    *awkSplitter // how the current record splits
	fsSplit     *awkSplitter // how FS splits

	nr, fnr                             float64
	convfmt, ofmt, ofs, ors, subsep, rs string
	rsRegex                             *regexp.Regexp

	out       *awkOutput
	errOut    *awkOutput
	outputs   map[string]*awkOutput
	reopen    map[string]bool // outputs closed for lack of room: reopen appending
	useClock  uint64
	inputs    map[string]*awkReader
	stdinRd   *awkReader
	mainRd    *awkReader
	argIdx    int
	sawFile   bool
	mainDone  bool
	rangeOn   []bool
	exitCode  int
	reCache   map[string]*regexp.Regexp
	splitRe   map[string]*awkSplitter
	rng       *rand.Rand
	seed      float64
	ticks     uint32
	elems     int
	field0    *awkField
	emitField func(string)
}

func (in *awkInterp) fatal(format string, args ...any) {
	panic(&awkFatalError{msg: fmt.Sprintf(format, args...), code: 2})
}

// tick checks for cancellation now and then.
func (in *awkInterp) tick() {
	in.ticks++
	if in.ticks&1023 == 0 {
		if err := in.ctx.Err(); err != nil {
			panic(&awkFatalError{msg: err.Error(), code: 2, plain: true})
		}
	}
}

// Conversions.

func (in *awkInterp) toStr(v awkValue) string {
	switch v.k {
	case awkNum:
		return awkFmtNum(v.n, in.convfmt)
	case awkUninit:
		return ""
	}
	return v.s
}

// outStr converts for print: numbers with OFMT.
func (in *awkInterp) outStr(v awkValue) string {
	if v.k == awkNum {
		return awkFmtNum(v.n, in.ofmt)
	}
	return v.s
}

func awkToNum(v awkValue) float64 {
	switch v.k {
	case awkNum:
		return v.n
	case awkUninit:
		return 0
	}
	return awkStrToNum(v.s)
}

func (in *awkInterp) truth(v awkValue) bool {
	switch v.k {
	case awkNum:
		return v.n != 0
	case awkStr:
		return v.s != ""
	case awkStrnum:
		if n, ok := awkLooksNumeric(v.s); ok {
			return n != 0
		}
		return v.s != ""
	}
	return false
}

// numeric tells whether v compares as a number, and its value.
func awkNumeric(v awkValue) (float64, bool) {
	switch v.k {
	case awkNum:
		return v.n, true
	case awkUninit:
		return 0, true
	case awkStrnum:
		return awkLooksNumeric(v.s)
	}
	return 0, false
}

func (in *awkInterp) compare(op awkTok, a, b awkValue) bool {
	if x, ok := awkNumeric(a); ok {
		if y, ok := awkNumeric(b); ok {
			switch op {
			case awkTLt:
				return x < y
			case awkTLe:
				return x <= y
			case awkTGt:
				return x > y
			case awkTGe:
				return x >= y
			case awkTEq:
				return x == y
			}
			return x != y
		}
	}
	s, t := in.toStr(a), in.toStr(b)
	switch op {
	case awkTLt:
		return s < t
	case awkTLe:
		return s <= t
	case awkTGt:
		return s > t
	case awkTGe:
		return s >= t
	case awkTEq:
		return s == t
	}
	return s != t
}

// Variables.

func (in *awkInterp) cell(v *awkVar) *awkCell {
	if v.local {
		return &in.frame[v.idx]
	}
	return &in.globals[v.idx]
}

func (in *awkInterp) getVar(v *awkVar) awkValue {
	if !v.local && v.idx < awkNumSpecial {
		switch v.idx {
		case awkVNF:
			if !in.splitDone {
				in.splitRecord()
			}
			return awkNumV(float64(in.nf))
		case awkVNR:
			return awkNumV(in.nr)
		case awkVFNR:
			return awkNumV(in.fnr)
		}
	}
	c := in.cell(v)
	if c.arr != nil {
		in.fatal("can't use array %s in scalar context", v.name)
	}
	return c.v
}

func (in *awkInterp) setVar(v *awkVar, val awkValue) {
	if !v.local && v.idx < awkNumSpecial {
		in.setSpecial(v, val)
		return
	}
	c := in.cell(v)
	if c.arr != nil {
		in.fatal("can't assign to %s; it's an array name.", v.name)
	}
	c.v = val
}

func (in *awkInterp) setSpecial(v *awkVar, val awkValue) {
	switch v.idx {
	case awkVNF:
		n := awkToNum(val)
		if n < 0 || n > awkMaxFields {
			in.fatal("NF set to an invalid value %s", in.toStr(val))
		}
		in.setNF(int(n))
		return
	case awkVNR:
		in.nr = awkToNum(val)
		return
	case awkVFNR:
		in.fnr = awkToNum(val)
		return
	case awkVENVIRON, awkVARGV:
		in.fatal("can't assign to %s; it's an array name.", v.name)
	}
	in.globals[v.idx].v = val
	s := in.toStr(val)
	switch v.idx {
	case awkVFS:
		in.fsSplit = in.newSplitter(s, in.rs == "")
	case awkVRS:
		in.rs = s
		in.rsRegex = nil
		in.fsSplit = in.newSplitter(in.toStr(in.globals[awkVFS].v), in.rs == "")
	case awkVOFS:
		in.ofs = s
	case awkVORS:
		in.ors = s
	case awkVSUBSEP:
		in.subsep = s
	case awkVCONVFMT:
		in.convfmt = s
	case awkVOFMT:
		in.ofmt = s
	}
}

func (in *awkInterp) arrayOf(v *awkVar) *awkArray {
	c := in.cell(v)
	if c.arr != nil {
		return c.arr
	}
	return in.makeArray(c, v.name)
}

func (in *awkInterp) makeArray(c *awkCell, name string) *awkArray {
	if c.arr == nil {
		if c.v.k != awkUninit {
			in.fatal("can't use scalar %s as array", name)
		}
		if c.link != nil {
			c.arr = in.makeArray(c.link, name)
		} else {
			c.arr = awkNewArray(&in.elems)
		}
	}
	return c.arr
}

func (in *awkInterp) subscript(index []awkExpr) string {
	if len(index) == 1 {
		v := in.eval(index[0])
		if v.k == awkNum && v.n == math.Trunc(v.n) && v.n > -1e15 && v.n < 1e15 {
			return strconv.FormatInt(int64(v.n), 10)
		}
		return in.toStr(v)
	}
	var b strings.Builder
	for i, e := range index {
		if i > 0 {
			b.WriteString(in.subsep)
		}
		b.WriteString(in.toStr(in.eval(e)))
	}
	return b.String()
}

// Lvalues.

type awkLRef struct {
	kind  uint8 // 0 variable, 1 element, 2 field
	v     *awkVar
	arr   *awkArray
	key   string
	field int
}

func (in *awkInterp) lref(e awkExpr) awkLRef {
	switch x := e.(type) {
	case *awkVar:
		return awkLRef{kind: 0, v: x}
	case *awkIndex:
		arr := in.arrayOf(x.arr)
		return awkLRef{kind: 1, arr: arr, key: in.subscript(x.index)}
	case *awkField:
		return awkLRef{kind: 2, field: in.fieldIndex(x.index)}
	}
	in.fatal("assignment to a non-variable")
	return awkLRef{}
}

func (in *awkInterp) lget(r *awkLRef) awkValue {
	switch r.kind {
	case 0:
		return in.getVar(r.v)
	case 1:
		return *r.arr.ref(r.key)
	}
	return in.getField(r.field)
}

func (in *awkInterp) lset(r *awkLRef, v awkValue) {
	switch r.kind {
	case 0:
		in.setVar(r.v, v)
	case 1:
		r.arr.set(r.key, v)
	default:
		in.setField(r.field, v)
	}
}

func (in *awkInterp) assign(lhs awkExpr, v awkValue) {
	if x, ok := lhs.(*awkVar); ok {
		in.setVar(x, v)
		return
	}
	r := in.lref(lhs)
	in.lset(&r, v)
}

// Fields.

func (in *awkInterp) fieldIndex(e awkExpr) int {
	n := awkToNum(in.eval(e))
	if n < 0 || math.IsNaN(n) {
		in.fatal("trying to access out of range field %s", awkFmtNum(n, "%.6g"))
	}
	if n > awkMaxFields {
		in.fatal("field index %s too large", awkFmtNum(n, "%.6g"))
	}
	return int(n)
}

func (in *awkInterp) setRecord(s string) {
	in.record = s
	in.recordStale = false
	in.splitDone = false
	in.recSplit = in.fsSplit
}

func (in *awkInterp) getRecord() string {
	if in.recordStale {
		in.rebuildRecord()
	}
	return in.record
}

func (in *awkInterp) splitRecord() {
	in.fields = in.fields[:0]
	in.recSplit.split(in.record, in.emitField)
	in.nf = len(in.fields)
	in.splitDone = true
}

func (in *awkInterp) rebuildRecord() {
	var b strings.Builder
	for i := 0; i < in.nf; i++ {
		if i > 0 {
			b.WriteString(in.ofs)
		}
		b.WriteString(in.toStr(in.fields[i]))
		if b.Len() > awkMaxStr {
			in.fatal("record too long")
		}
	}
	in.record = b.String()
	in.recordStale = false
}

func (in *awkInterp) getField(i int) awkValue {
	if i == 0 {
		return awkInputV(in.getRecord())
	}
	if !in.splitDone {
		in.splitRecord()
	}
	if i > in.nf {
		return awkValue{}
	}
	return in.fields[i-1]
}

func (in *awkInterp) setField(i int, v awkValue) {
	if i == 0 {
		in.setRecord(in.toStr(v))
		return
	}
	if !in.splitDone {
		in.splitRecord()
	}
	for in.nf < i {
		in.fields = append(in.fields, awkValue{})
		in.nf++
	}
	if v.k == awkUninit {
		v = awkStrV("")
	}
	in.fields[i-1] = v
	in.recordStale = true
}

func (in *awkInterp) setNF(n int) {
	if !in.splitDone {
		in.splitRecord()
	}
	for in.nf < n {
		in.fields = append(in.fields, awkValue{})
		in.nf++
	}
	in.fields = in.fields[:n]
	in.nf = n
	in.recordStale = true
}

// Regular expressions.

func (in *awkInterp) dynRegex(s string) *regexp.Regexp {
	if re, ok := in.reCache[s]; ok {
		return re
	}
	re, err := awkCompileRegex(s)
	if err != nil {
		in.fatal("%v", err)
	}
	if len(in.reCache) >= 500 {
		clear(in.reCache)
	}
	in.reCache[s] = re
	return re
}

func (in *awkInterp) regexOf(e awkExpr) *regexp.Regexp {
	if r, ok := e.(*awkRegexLit); ok {
		return r.re
	}
	return in.dynRegex(in.toStr(in.eval(e)))
}

// Expressions.

func (in *awkInterp) eval(e awkExpr) awkValue {
	switch x := e.(type) {
	case *awkLit:
		return x.v
	case *awkVar:
		if x.local || x.idx >= awkNumSpecial {
			c := in.cell(x)
			if c.arr == nil {
				return c.v
			}
		}
		return in.getVar(x)
	case *awkField:
		return in.getField(in.fieldIndex(x.index))
	case *awkIndex:
		arr := in.arrayOf(x.arr)
		return *arr.ref(in.subscript(x.index))
	case *awkRegexLit:
		return awkBoolV(x.re.MatchString(in.getRecord()))
	case *awkAssign:
		return in.evalAssign(x)
	case *awkCond:
		if in.truth(in.eval(x.cond)) {
			return in.eval(x.yes)
		}
		return in.eval(x.no)
	case *awkBinary:
		return in.evalBinary(x)
	case *awkConcat:
		return in.evalConcat(x)
	case *awkUnary:
		v := in.eval(x.x)
		switch x.op {
		case awkTNot:
			return awkBoolV(!in.truth(v))
		case awkTSub:
			return awkNumV(-awkToNum(v))
		}
		return awkNumV(awkToNum(v))
	case *awkIncr:
		return in.evalIncr(x)
	case *awkMatchExpr:
		s := in.toStr(in.eval(x.l))
		re := in.regexOf(x.re)
		return awkBoolV(re.MatchString(s) != x.neg)
	case *awkInExpr:
		arr := in.arrayOf(x.arr)
		return awkBoolV(arr.has(in.subscript(x.index)))
	case *awkCall:
		return in.call(x)
	case *awkBuiltinCall:
		return in.builtin(x)
	case *awkGetline:
		return in.getline(x)
	case *awkGroup:
		in.fatal("syntax error: unexpected parenthesized list")
	}
	in.fatal("internal error: unknown expression %T", e)
	return awkValue{}
}

func (in *awkInterp) evalAssign(x *awkAssign) awkValue {
	if x.op == awkTAssign {
		v := in.eval(x.rhs)
		in.assign(x.lhs, v)
		return v
	}
	// As gawk and mawk: the right side first (y += y += 2 is 6).
	rv := awkToNum(in.eval(x.rhs))
	r := in.lref(x.lhs)
	cur := awkToNum(in.lget(&r))
	var n float64
	switch x.op {
	case awkTAddAssign:
		n = cur + rv
	case awkTSubAssign:
		n = cur - rv
	case awkTMulAssign:
		n = cur * rv
	case awkTDivAssign:
		if rv == 0 {
			in.fatal("division by zero in /=")
		}
		n = cur / rv
	case awkTModAssign:
		if rv == 0 {
			in.fatal("division by zero in %%=")
		}
		n = math.Mod(cur, rv)
	case awkTPowAssign:
		n = awkPow(cur, rv)
	}
	v := awkNumV(n)
	in.lset(&r, v)
	return v
}

func awkPow(x, y float64) float64 {
	if y == math.Trunc(y) && y >= 0 && y <= 1024 {
		r := 1.0
		b := x
		for n := int(y); n > 0; n >>= 1 {
			if n&1 == 1 {
				r *= b
			}
			b *= b
		}
		return r
	}
	return math.Pow(x, y)
}

func (in *awkInterp) evalBinary(x *awkBinary) awkValue {
	switch x.op {
	case awkTAnd:
		return awkBoolV(in.truth(in.eval(x.l)) && in.truth(in.eval(x.r)))
	case awkTOr:
		return awkBoolV(in.truth(in.eval(x.l)) || in.truth(in.eval(x.r)))
	case awkTLt, awkTLe, awkTGt, awkTGe, awkTEq, awkTNe:
		l := in.eval(x.l)
		r := in.eval(x.r)
		return awkBoolV(in.compare(x.op, l, r))
	}
	l := awkToNum(in.eval(x.l))
	r := awkToNum(in.eval(x.r))
	switch x.op {
	case awkTAdd:
		return awkNumV(l + r)
	case awkTSub:
		return awkNumV(l - r)
	case awkTMul:
		return awkNumV(l * r)
	case awkTDiv:
		if r == 0 {
			in.fatal("division by zero")
		}
		return awkNumV(l / r)
	case awkTMod:
		if r == 0 {
			in.fatal("division by zero in %%")
		}
		return awkNumV(math.Mod(l, r))
	case awkTPow:
		return awkNumV(awkPow(l, r))
	}
	in.fatal("internal error: unknown operator")
	return awkValue{}
}

func (in *awkInterp) evalConcat(x *awkConcat) awkValue {
	if len(x.parts) == 2 {
		a := in.toStr(in.eval(x.parts[0]))
		b := in.toStr(in.eval(x.parts[1]))
		if len(a)+len(b) > awkMaxStr {
			in.fatal("string too long (more than %d bytes)", awkMaxStr)
		}
		return awkStrV(a + b)
	}
	var b strings.Builder
	for _, p := range x.parts {
		s := in.toStr(in.eval(p))
		if b.Len()+len(s) > awkMaxStr {
			in.fatal("string too long (more than %d bytes)", awkMaxStr)
		}
		b.WriteString(s)
	}
	return awkStrV(b.String())
}

func (in *awkInterp) evalIncr(x *awkIncr) awkValue {
	d := 1.0
	if x.dec {
		d = -1
	}
	if v, ok := x.lhs.(*awkVar); ok && (v.local || v.idx >= awkNumSpecial) {
		c := in.cell(v)
		if c.arr != nil {
			in.fatal("can't use array %s in scalar context", v.name)
		}
		old := awkToNum(c.v)
		c.v = awkNumV(old + d)
		if x.pre {
			return c.v
		}
		return awkNumV(old)
	}
	r := in.lref(x.lhs)
	old := awkToNum(in.lget(&r))
	nv := awkNumV(old + d)
	in.lset(&r, nv)
	if x.pre {
		return nv
	}
	return awkNumV(old)
}

func (in *awkInterp) call(x *awkCall) awkValue {
	f := x.fn
	if in.depth >= awkMaxDepth {
		in.fatal("function call nesting too deep (more than %d calls) in %s", awkMaxDepth, f.name)
	}
	in.tick()
	frame := make([]awkCell, len(f.params))
	for i, a := range x.args {
		if v, ok := a.(*awkVar); ok && (v.local || v.idx >= awkNumSpecial || v.idx == awkVENVIRON || v.idx == awkVARGV) {
			c := in.cell(v)
			if arr := c.peekArray(); arr != nil {
				frame[i].arr = arr
			} else if c.v.k == awkUninit {
				frame[i].link = c
			} else {
				frame[i].v = c.v
			}
			continue
		}
		frame[i].v = in.eval(a)
	}
	saved := in.frame
	in.frame = frame
	in.depth++
	in.retVal = awkValue{}
	ctl := in.execBlock(f.body)
	in.frame = saved
	in.depth--
	switch ctl {
	case awkCtlNext, awkCtlNextFile, awkCtlExit:
		panic(awkCtlPanic{ctl})
	}
	v := in.retVal
	in.retVal = awkValue{}
	return v
}

// Statements.

func (in *awkInterp) execBlock(stmts []awkStmt) awkCtl {
	for _, s := range stmts {
		if c := in.exec(s); c != awkCtlNone {
			return c
		}
	}
	return awkCtlNone
}

func (in *awkInterp) exec(s awkStmt) awkCtl {
	switch x := s.(type) {
	case *awkExprStmt:
		in.eval(x.e)
	case *awkPrint:
		in.print(x)
	case *awkIf:
		if in.truth(in.eval(x.cond)) {
			return in.execBlock(x.then)
		} else if x.els != nil {
			return in.execBlock(x.els)
		}
	case *awkWhile:
		for in.truth(in.eval(x.cond)) {
			in.tick()
			switch c := in.execBlock(x.body); c {
			case awkCtlNone, awkCtlContinue:
			case awkCtlBreak:
				return awkCtlNone
			default:
				return c
			}
		}
	case *awkDo:
		for {
			in.tick()
			switch c := in.execBlock(x.body); c {
			case awkCtlNone, awkCtlContinue:
			case awkCtlBreak:
				return awkCtlNone
			default:
				return c
			}
			if !in.truth(in.eval(x.cond)) {
				break
			}
		}
	case *awkFor:
		if x.init != nil {
			in.exec(x.init)
		}
		for x.cond == nil || in.truth(in.eval(x.cond)) {
			in.tick()
			switch c := in.execBlock(x.body); c {
			case awkCtlNone, awkCtlContinue:
			case awkCtlBreak:
				return awkCtlNone
			default:
				return c
			}
			if x.post != nil {
				in.exec(x.post)
			}
		}
	case *awkForIn:
		arr := in.arrayOf(x.arr)
		for _, k := range arr.keys() {
			in.tick()
			if !arr.has(k) {
				continue
			}
			in.setVar(x.v, awkStrV(k))
			switch c := in.execBlock(x.body); c {
			case awkCtlNone, awkCtlContinue:
			case awkCtlBreak:
				return awkCtlNone
			default:
				return c
			}
		}
	case *awkBlock:
		return in.execBlock(x.body)
	case *awkCtlStmt:
		return x.ctl
	case *awkExit:
		if x.e != nil {
			in.exitCode = int(uint8(int64(awkToNum(in.eval(x.e)))))
		}
		return awkCtlExit
	case *awkReturn:
		if x.e != nil {
			in.retVal = in.eval(x.e)
		} else {
			in.retVal = awkValue{}
		}
		return awkCtlReturn
	case *awkDelete:
		arr := in.arrayOf(x.arr)
		if x.index == nil {
			arr.clear()
		} else {
			arr.del(in.subscript(x.index))
		}
	default:
		in.fatal("internal error: unknown statement %T", s)
	}
	return awkCtlNone
}

// runAction runs a rule's action, catching control flow that escapes
// function bodies.
func (in *awkInterp) runAction(stmts []awkStmt) (ctl awkCtl) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(awkCtlPanic)
			if !ok {
				panic(r)
			}
			in.frame, in.depth = nil, 0
			ctl = c.ctl
		}
	}()
	ctl = in.execBlock(stmts)
	if (ctl == awkCtlNext || ctl == awkCtlNextFile) && in.phase != 1 {
		in.fatal("next used in a BEGIN or END action")
	}
	return ctl
}

func (in *awkInterp) matches(i int, it *awkItem) bool {
	if it.pat == nil {
		return true
	}
	if !it.isRange {
		return in.truth(in.eval(it.pat))
	}
	if !in.rangeOn[i] {
		if !in.truth(in.eval(it.pat)) {
			return false
		}
		in.rangeOn[i] = true
	}
	if in.truth(in.eval(it.pat2)) {
		in.rangeOn[i] = false
	}
	return true
}

// run runs the program and returns the exit status.
func (in *awkInterp) run() (code int) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*awkFatalError)
			if !ok {
				panic(r)
			}
			in.closeAll(true)
			if !fe.quiet {
				if fe.plain {
					fmt.Fprintf(in.e.Stderr, "awk: %s\n", fe.msg)
				} else {
					fmt.Fprintf(in.e.Stderr, "awk: run time error: %s\n", fe.msg)
					if in.nr > 0 {
						fmt.Fprintf(in.e.Stderr, "\tFILENAME=%q FNR=%s NR=%s\n", in.toStr(in.globals[awkVFILENAME].v), awkFmtNum(in.fnr, "%.6g"), awkFmtNum(in.nr, "%.6g"))
					}
				}
			}
			code = fe.code
			if code == 0 {
				code = 2
			}
		}
	}()
	prog := in.prog
	exiting := false
	for _, b := range prog.begins {
		if in.runAction(b) == awkCtlExit {
			exiting = true
			break
		}
	}
	if !exiting && (len(prog.items) > 0 || len(prog.ends) > 0) {
		in.phase = 1
		exiting = in.mainLoop()
	}
	in.phase = 2
	for _, b := range prog.ends {
		if in.runAction(b) == awkCtlExit {
			break
		}
	}
	if err := in.closeAll(false); err != nil {
		return err.code
	}
	return in.exitCode
}

// mainLoop runs the main rules over the input; it reports whether exit
// ended it.
func (in *awkInterp) mainLoop() bool {
	items := in.prog.items
records:
	for {
		rec, ok := in.readMain()
		if !ok {
			return false
		}
		in.nr++
		in.fnr++
		in.setRecord(rec)
		in.tick()
		for i, it := range items {
			if !in.matches(i, it) {
				continue
			}
			if !it.hasAction {
				in.printRecord(in.out)
				continue
			}
			switch in.runAction(it.action) {
			case awkCtlNext:
				continue records
			case awkCtlNextFile:
				in.closeMain()
				continue records
			case awkCtlExit:
				return true
			}
		}
	}
}
