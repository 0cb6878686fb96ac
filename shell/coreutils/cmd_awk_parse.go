package coreutils

// The awk parser: a recursive descent over POSIX awk's grammar, building
// a tree in which variables are resolved to global or local slots.

import (
	"regexp"
)

// Expressions.
type awkExpr interface{}

type (
	awkLit      struct{ v awkValue }
	awkRegexLit struct {
		src string
		re  *regexp.Regexp
	}
	awkVar struct {
		name  string
		local bool
		idx   int
	}
	awkIndex struct {
		arr   *awkVar
		index []awkExpr
	}
	awkField  struct{ index awkExpr }
	awkAssign struct {
		lhs awkExpr
		op  awkTok // awkTAssign or a compound one
		rhs awkExpr
	}
	awkCond   struct{ cond, yes, no awkExpr }
	awkBinary struct {
		op   awkTok
		l, r awkExpr
	}
	awkConcat struct{ parts []awkExpr }
	awkUnary  struct {
		op awkTok
		x  awkExpr
	}
	awkIncr struct {
		lhs      awkExpr
		pre, dec bool
	}
	awkMatchExpr struct {
		l, re awkExpr
		neg   bool
	}
	awkInExpr struct {
		index []awkExpr
		arr   *awkVar
	}
	awkCall struct {
		name string
		fn   *awkFunc
		args []awkExpr
		line int
	}
	awkBuiltinCall struct {
		id   awkBuiltinID
		name string
		args []awkExpr
	}
	awkGetline struct {
		kind awkGetlineKind
		lhs  awkExpr // nil: $0
		src  awkExpr // file or command
	}
	awkGroup struct{ list []awkExpr } // (a, b): before "in", or print's arguments
)

type awkGetlineKind uint8

const (
	awkGetlinePlain awkGetlineKind = iota
	awkGetlineFile
	awkGetlineCmd
)

type awkBuiltinID uint8

const (
	awkBLength awkBuiltinID = iota
	awkBSubstr
	awkBIndex
	awkBSplit
	awkBSub
	awkBGsub
	awkBMatch
	awkBSprintf
	awkBTolower
	awkBToupper
	awkBInt
	awkBSqrt
	awkBExp
	awkBLog
	awkBSin
	awkBCos
	awkBAtan2
	awkBRand
	awkBSrand
	awkBClose
	awkBFflush
	awkBSystem
)

var awkBuiltinInfo = map[string]struct {
	id       awkBuiltinID
	min, max int
}{
	"length": {awkBLength, 0, 1}, "substr": {awkBSubstr, 2, 3}, "index": {awkBIndex, 2, 2},
	"split": {awkBSplit, 2, 3}, "sub": {awkBSub, 2, 3}, "gsub": {awkBGsub, 2, 3},
	"match": {awkBMatch, 2, 2}, "sprintf": {awkBSprintf, 1, -1}, "tolower": {awkBTolower, 1, 1},
	"toupper": {awkBToupper, 1, 1}, "int": {awkBInt, 1, 1}, "sqrt": {awkBSqrt, 1, 1},
	"exp": {awkBExp, 1, 1}, "log": {awkBLog, 1, 1}, "sin": {awkBSin, 1, 1}, "cos": {awkBCos, 1, 1},
	"atan2": {awkBAtan2, 2, 2}, "rand": {awkBRand, 0, 0}, "srand": {awkBSrand, 0, 1},
	"close": {awkBClose, 1, 2}, "fflush": {awkBFflush, 0, 1}, "system": {awkBSystem, 1, 1},
}

// Statements.
type awkStmt interface{}

type (
	awkExprStmt struct{ e awkExpr }
	awkPrint    struct {
		printf bool
		args   []awkExpr
		redir  awkTok // 0, awkTGt, awkTAppend or awkTPipe
		dest   awkExpr
	}
	awkIf struct {
		cond      awkExpr
		then, els []awkStmt
	}
	awkWhile struct {
		cond awkExpr
		body []awkStmt
	}
	awkDo struct {
		body []awkStmt
		cond awkExpr
	}
	awkFor struct {
		init awkStmt
		cond awkExpr
		post awkStmt
		body []awkStmt
	}
	awkForIn struct {
		v    *awkVar
		arr  *awkVar
		body []awkStmt
	}
	awkBlock   struct{ body []awkStmt }
	awkCtlStmt struct{ ctl awkCtl }
	awkExit    struct{ e awkExpr }
	awkReturn  struct{ e awkExpr }
	awkDelete  struct {
		arr   *awkVar
		index []awkExpr // nil: the whole array
	}
)

type awkCtl uint8

const (
	awkCtlNone awkCtl = iota
	awkCtlBreak
	awkCtlContinue
	awkCtlNext
	awkCtlNextFile
	awkCtlExit
	awkCtlReturn
)

type awkItem struct {
	pat, pat2 awkExpr
	isRange   bool
	hasAction bool
	action    []awkStmt
}

type awkFunc struct {
	name    string
	params  []string
	body    []awkStmt
	defined bool
	line    int
}

type awkProgram struct {
	begins, ends [][]awkStmt
	items        []*awkItem
	funcs        map[string]*awkFunc
	globals      map[string]int
	globalNames  []string
}

// The special variables have the first global slots.
const (
	awkVNR = iota
	awkVNF
	awkVFNR
	awkVFS
	awkVOFS
	awkVORS
	awkVRS
	awkVFILENAME
	awkVSUBSEP
	awkVRSTART
	awkVRLENGTH
	awkVCONVFMT
	awkVOFMT
	awkVENVIRON
	awkVARGC
	awkVARGV
	awkNumSpecial
)

var awkSpecialNames = [awkNumSpecial]string{
	"NR", "NF", "FNR", "FS", "OFS", "ORS", "RS", "FILENAME", "SUBSEP", "RSTART",
	"RLENGTH", "CONVFMT", "OFMT", "ENVIRON", "ARGC", "ARGV",
}

type awkParser struct {
	lex    awkLexer
	tok    awkToken
	ntok   int
	prog   *awkProgram
	locals map[string]int // the current function's parameters
	inFunc bool
	inRule int // 0 main rules, 1 BEGIN, 2 END
	loops  int
	noGt   bool // in print's arguments: '>' is a redirection
	// printStart is the token number of print's first argument, where a
	// parenthesized list may be its argument list.
	printStart int
	depth      int
	calls      []*awkCall
}

// awkParse parses a program.
func awkParse(src string) (prog *awkProgram, err error) {
	p := &awkParser{lex: awkLexer{src: src, line: 1}, printStart: -1}
	p.prog = &awkProgram{funcs: map[string]*awkFunc{}, globals: map[string]int{}}
	for i, n := range awkSpecialNames {
		p.prog.globals[n] = i
		p.prog.globalNames = append(p.prog.globalNames, n)
	}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*awkSyntaxError)
			if !ok {
				panic(r)
			}
			prog, err = nil, se
		}
	}()
	p.advance()
	p.program()
	for _, c := range p.calls {
		f, ok := p.prog.funcs[c.name]
		if !ok || !f.defined {
			panic(&awkSyntaxError{c.line, "function " + c.name + " never defined"})
		}
		if len(c.args) > len(f.params) {
			panic(&awkSyntaxError{c.line, "too many arguments in call to " + c.name})
		}
		c.fn = f
	}
	for name, f := range p.prog.funcs {
		if _, ok := p.prog.globals[name]; ok {
			panic(&awkSyntaxError{f.line, "function name " + name + " used as a variable"})
		}
	}
	return p.prog, nil
}

func (p *awkParser) advance() {
	p.tok = p.lex.next()
	p.ntok++
}

func (p *awkParser) errorf(format string, args ...any) {
	p.lex.line = p.tok.line
	p.lex.errorf(format, args...)
}

func (p *awkParser) unexpected() {
	if p.tok.tok == awkTEOF {
		p.errorf("unexpected end of program")
	}
	if p.tok.tok == awkTNewline {
		p.errorf("unexpected newline")
	}
	p.errorf("unexpected %s", p.tok)
}

func (p *awkParser) expect(t awkTok) {
	if p.tok.tok != t {
		if t == awkTRbrace && p.tok.tok == awkTEOF {
			p.errorf("missing } near end of file")
		}
		p.errorf("expected %s, found %s", awkTokNames[t], p.tok)
	}
	p.advance()
}

func (p *awkParser) optNewlines() {
	for p.tok.tok == awkTNewline {
		p.advance()
	}
}

func (p *awkParser) skipTerms() {
	for p.tok.tok == awkTNewline || p.tok.tok == awkTSemi {
		p.advance()
	}
}

// peek scans the token after the current one without consuming it.
func (p *awkParser) peek() awkTok {
	l := p.lex
	return l.next().tok
}

func (p *awkParser) program() {
	p.skipTerms()
	for p.tok.tok != awkTEOF {
		p.item()
		p.skipTerms()
	}
}

func (p *awkParser) item() {
	switch p.tok.tok {
	case awkTBegin:
		p.advance()
		p.optNewlines()
		p.inRule = 1
		p.prog.begins = append(p.prog.begins, p.block())
		p.inRule = 0
	case awkTEnd:
		p.advance()
		p.optNewlines()
		p.inRule = 2
		p.prog.ends = append(p.prog.ends, p.block())
		p.inRule = 0
	case awkTFunction:
		p.function()
	case awkTLbrace:
		p.prog.items = append(p.prog.items, &awkItem{hasAction: true, action: p.block()})
	default:
		it := &awkItem{pat: p.expr()}
		if p.tok.tok == awkTComma {
			p.advance()
			p.optNewlines()
			it.isRange = true
			it.pat2 = p.expr()
		}
		if p.tok.tok == awkTLbrace {
			it.hasAction = true
			it.action = p.block()
		} else if p.tok.tok != awkTNewline && p.tok.tok != awkTSemi && p.tok.tok != awkTEOF {
			p.unexpected()
		}
		p.prog.items = append(p.prog.items, it)
	}
}

func (p *awkParser) function() {
	line := p.tok.line
	p.advance()
	if p.tok.tok != awkTName && p.tok.tok != awkTFuncName {
		p.errorf("expected a function name, found %s", p.tok)
	}
	name := p.tok.str
	if f, ok := p.prog.funcs[name]; ok && f.defined {
		p.errorf("function %s redefined", name)
	}
	p.advance()
	p.expect(awkTLparen)
	f := p.prog.funcs[name]
	if f == nil {
		f = &awkFunc{name: name}
		p.prog.funcs[name] = f
	}
	f.defined, f.line = true, line
	p.locals = map[string]int{}
	for p.tok.tok != awkTRparen {
		if p.tok.tok != awkTName {
			p.errorf("expected a parameter name, found %s", p.tok)
		}
		if _, dup := p.locals[p.tok.str]; dup {
			p.errorf("duplicate parameter %s in function %s", p.tok.str, name)
		}
		if p.tok.str == name {
			p.errorf("function %s: parameter %s shadows the function", name, name)
		}
		p.locals[p.tok.str] = len(f.params)
		f.params = append(f.params, p.tok.str)
		p.advance()
		if p.tok.tok == awkTComma {
			p.advance()
			p.optNewlines()
		} else if p.tok.tok != awkTRparen {
			p.unexpected()
		}
	}
	p.advance()
	p.optNewlines()
	p.inFunc = true
	f.body = p.block()
	p.inFunc = false
	p.locals = nil
}

func (p *awkParser) block() []awkStmt {
	p.expect(awkTLbrace)
	var out []awkStmt
	for {
		p.skipTerms()
		if p.tok.tok == awkTRbrace {
			break
		}
		if p.tok.tok == awkTEOF {
			p.errorf("missing } near end of file")
		}
		out = append(out, p.stmt())
	}
	p.advance()
	if out == nil {
		out = []awkStmt{}
	}
	return out
}

// body parses the statement controlled by if, while, for or do.
func (p *awkParser) body() []awkStmt {
	if p.tok.tok == awkTSemi {
		p.advance()
		return []awkStmt{}
	}
	p.optNewlines()
	s := p.stmt()
	if b, ok := s.(*awkBlock); ok {
		return b.body
	}
	return []awkStmt{s}
}

func (p *awkParser) stmt() awkStmt {
	switch p.tok.tok {
	case awkTLbrace:
		return &awkBlock{p.block()}
	case awkTSemi:
		p.advance()
		return &awkBlock{}
	case awkTIf:
		p.advance()
		p.expect(awkTLparen)
		cond := p.expr()
		p.expect(awkTRparen)
		s := &awkIf{cond: cond, then: p.body()}
		// Look past terminators for an else.
		save, saveTok, saveN := p.lex, p.tok, p.ntok
		p.skipTerms()
		if p.tok.tok == awkTElse {
			p.advance()
			p.optNewlines()
			s.els = p.body()
		} else {
			p.lex, p.tok, p.ntok = save, saveTok, saveN
		}
		return s
	case awkTWhile:
		p.advance()
		p.expect(awkTLparen)
		cond := p.expr()
		p.expect(awkTRparen)
		p.loops++
		s := &awkWhile{cond: cond, body: p.body()}
		p.loops--
		return s
	case awkTDo:
		p.advance()
		p.optNewlines()
		p.loops++
		body := p.body()
		p.loops--
		p.skipTerms()
		if p.tok.tok != awkTWhile {
			p.errorf("expected while after do body, found %s", p.tok)
		}
		p.advance()
		p.expect(awkTLparen)
		cond := p.expr()
		p.expect(awkTRparen)
		p.endSimple()
		return &awkDo{body: body, cond: cond}
	case awkTFor:
		return p.forStmt()
	}
	s := p.simple()
	p.endSimple()
	return s
}

func (p *awkParser) forStmt() awkStmt {
	p.advance()
	p.expect(awkTLparen)
	var init awkStmt
	if p.tok.tok != awkTSemi {
		init = p.simple()
		if es, ok := init.(*awkExprStmt); ok && p.tok.tok == awkTRparen {
			if in, ok := es.e.(*awkInExpr); ok && len(in.index) == 1 {
				if v, ok := in.index[0].(*awkVar); ok {
					p.advance()
					p.loops++
					s := &awkForIn{v: v, arr: in.arr, body: p.body()}
					p.loops--
					return s
				}
			}
		}
	}
	p.expect(awkTSemi)
	p.optNewlines()
	var cond awkExpr
	if p.tok.tok != awkTSemi {
		cond = p.expr()
	}
	p.expect(awkTSemi)
	p.optNewlines()
	var post awkStmt
	if p.tok.tok != awkTRparen {
		post = p.simple()
	}
	p.expect(awkTRparen)
	p.loops++
	s := &awkFor{init: init, cond: cond, post: post, body: p.body()}
	p.loops--
	return s
}

// endSimple consumes a simple statement's terminator.
func (p *awkParser) endSimple() {
	switch p.tok.tok {
	case awkTSemi, awkTNewline:
		p.advance()
	case awkTRbrace, awkTEOF:
	default:
		p.unexpected()
	}
}

func (p *awkParser) isTerm() bool {
	switch p.tok.tok {
	case awkTSemi, awkTNewline, awkTRbrace, awkTEOF:
		return true
	}
	return false
}

func (p *awkParser) simple() awkStmt {
	switch p.tok.tok {
	case awkTPrint, awkTPrintf:
		return p.printStmt()
	case awkTDelete:
		p.advance()
		if p.tok.tok != awkTName {
			p.errorf("expected an array name after delete, found %s", p.tok)
		}
		v := p.varRef(p.tok.str)
		p.advance()
		s := &awkDelete{arr: v}
		if p.tok.tok == awkTLbracket {
			p.advance()
			s.index = p.exprList(awkTRbracket)
		}
		return s
	case awkTNext, awkTNextfile:
		if p.inRule != 0 && !p.inFunc {
			p.errorf("%s used in a BEGIN or END action", p.tok)
		}
		ctl := awkCtlNext
		if p.tok.tok == awkTNextfile {
			ctl = awkCtlNextFile
		}
		p.advance()
		return &awkCtlStmt{ctl}
	case awkTBreak, awkTContinue:
		if p.loops == 0 {
			p.errorf("%s outside a loop", p.tok)
		}
		ctl := awkCtlBreak
		if p.tok.tok == awkTContinue {
			ctl = awkCtlContinue
		}
		p.advance()
		return &awkCtlStmt{ctl}
	case awkTExit:
		p.advance()
		s := &awkExit{}
		if !p.isTerm() {
			s.e = p.expr()
		}
		return s
	case awkTReturn:
		if !p.inFunc {
			p.errorf("return outside a function")
		}
		p.advance()
		s := &awkReturn{}
		if !p.isTerm() {
			s.e = p.expr()
		}
		return s
	}
	return &awkExprStmt{p.expr()}
}

func (p *awkParser) printStmt() awkStmt {
	s := &awkPrint{printf: p.tok.tok == awkTPrintf}
	p.advance()
	switch p.tok.tok {
	case awkTSemi, awkTNewline, awkTRbrace, awkTEOF, awkTGt, awkTAppend, awkTPipe:
	default:
		saveNoGt, saveStart := p.noGt, p.printStart
		p.noGt, p.printStart = true, p.ntok
		first := p.expr()
		p.printStart = -1
		s.args = []awkExpr{first}
		for p.tok.tok == awkTComma {
			p.advance()
			p.optNewlines()
			s.args = append(s.args, p.expr())
		}
		p.noGt, p.printStart = saveNoGt, saveStart
		if g, ok := first.(*awkGroup); ok && len(s.args) == 1 {
			s.args = g.list
		}
	}
	if s.printf && len(s.args) == 0 {
		p.errorf("printf: no format")
	}
	switch p.tok.tok {
	case awkTGt, awkTAppend, awkTPipe:
		s.redir = p.tok.tok
		p.advance()
		saveNoGt := p.noGt
		p.noGt = true
		s.dest = p.ternary()
		p.noGt = saveNoGt
	}
	return s
}

// varRef resolves a name to a local or global slot.
func (p *awkParser) varRef(name string) *awkVar {
	if p.locals != nil {
		if i, ok := p.locals[name]; ok {
			return &awkVar{name: name, local: true, idx: i}
		}
	}
	i, ok := p.prog.globals[name]
	if !ok {
		i = len(p.prog.globalNames)
		p.prog.globals[name] = i
		p.prog.globalNames = append(p.prog.globalNames, name)
	}
	return &awkVar{name: name, idx: i}
}

func (p *awkParser) exprList(end awkTok) []awkExpr {
	saveNoGt := p.noGt
	p.noGt = false
	var out []awkExpr
	p.optNewlines()
	for {
		out = append(out, p.expr())
		if p.tok.tok != awkTComma {
			break
		}
		p.advance()
		p.optNewlines()
	}
	p.optNewlines()
	p.expect(end)
	p.noGt = saveNoGt
	return out
}

func awkIsLvalue(e awkExpr) bool {
	switch e.(type) {
	case *awkVar, *awkIndex, *awkField:
		return true
	}
	return false
}

// expr parses an expression (assignments are lowest, right-associative).
func (p *awkParser) expr() awkExpr {
	p.depth++
	if p.depth > 1000 {
		p.errorf("expression nested too deeply")
	}
	defer func() { p.depth-- }()
	lhs := p.ternary()
	switch op := p.tok.tok; op {
	case awkTAssign, awkTAddAssign, awkTSubAssign, awkTMulAssign, awkTDivAssign, awkTModAssign, awkTPowAssign:
		if !awkIsLvalue(lhs) {
			if op == awkTDivAssign {
				return lhs
			}
			p.errorf("assignment to a non-variable")
		}
		p.advance()
		p.optNewlines()
		return &awkAssign{lhs: lhs, op: op, rhs: p.expr()}
	}
	return lhs
}

func (p *awkParser) ternary() awkExpr {
	cond := p.or()
	if p.tok.tok != awkTQuestion {
		return cond
	}
	p.advance()
	p.optNewlines()
	yes := p.expr()
	p.optNewlines()
	p.expect(awkTColon)
	p.optNewlines()
	no := p.expr()
	return &awkCond{cond, yes, no}
}

func (p *awkParser) or() awkExpr {
	l := p.and()
	for p.tok.tok == awkTOr {
		p.advance()
		p.optNewlines()
		l = &awkBinary{awkTOr, l, p.and()}
	}
	return l
}

func (p *awkParser) and() awkExpr {
	l := p.in()
	for p.tok.tok == awkTAnd {
		p.advance()
		p.optNewlines()
		l = &awkBinary{awkTAnd, l, p.in()}
	}
	return l
}

func (p *awkParser) in() awkExpr {
	l := p.match()
	for p.tok.tok == awkTIn {
		p.advance()
		if p.tok.tok != awkTName {
			p.errorf("expected an array name after in, found %s", p.tok)
		}
		arr := p.varRef(p.tok.str)
		p.advance()
		idx := []awkExpr{l}
		if g, ok := l.(*awkGroup); ok {
			idx = g.list
		}
		l = &awkInExpr{index: idx, arr: arr}
	}
	return l
}

func (p *awkParser) match() awkExpr {
	l := p.compare()
	for p.tok.tok == awkTMatch || p.tok.tok == awkTNoMatch {
		neg := p.tok.tok == awkTNoMatch
		p.advance()
		l = &awkMatchExpr{l: l, re: p.compare(), neg: neg}
	}
	return l
}

func (p *awkParser) compare() awkExpr {
	l := p.concat()
	for {
		switch op := p.tok.tok; op {
		case awkTPipe:
			if p.peek() != awkTGetline {
				return l
			}
			p.advance()
			p.advance()
			g := &awkGetline{kind: awkGetlineCmd, src: l}
			if p.tok.tok == awkTName || p.tok.tok == awkTDollar {
				g.lhs = p.lvalue()
			}
			l = g
		case awkTGt:
			if p.noGt {
				return l
			}
			fallthrough
		case awkTEq, awkTNe, awkTLt, awkTLe, awkTGe:
			p.advance()
			l = &awkBinary{op, l, p.concat()}
		default:
			return l
		}
	}
}

// concatStart tells whether the current token can begin the right
// operand of a concatenation.
func (p *awkParser) concatStart() bool {
	switch p.tok.tok {
	case awkTNumber, awkTString, awkTName, awkTFuncName, awkTBuiltin, awkTDollar,
		awkTNot, awkTLparen, awkTIncr, awkTDecr:
		return true
	}
	return false
}

func (p *awkParser) concat() awkExpr {
	l := p.additive()
	if !p.concatStart() {
		return l
	}
	parts := []awkExpr{l}
	for p.concatStart() {
		parts = append(parts, p.additive())
	}
	return &awkConcat{parts}
}

func (p *awkParser) additive() awkExpr {
	l := p.multiplicative()
	for p.tok.tok == awkTAdd || p.tok.tok == awkTSub {
		op := p.tok.tok
		p.advance()
		l = &awkBinary{op, l, p.multiplicative()}
	}
	return l
}

func (p *awkParser) multiplicative() awkExpr {
	l := p.unary()
	for p.tok.tok == awkTMul || p.tok.tok == awkTDiv || p.tok.tok == awkTMod {
		op := p.tok.tok
		p.advance()
		l = &awkBinary{op, l, p.unary()}
	}
	return l
}

func (p *awkParser) unary() awkExpr {
	switch op := p.tok.tok; op {
	case awkTNot, awkTSub, awkTAdd:
		p.advance()
		return &awkUnary{op, p.unary()}
	}
	return p.pow()
}

func (p *awkParser) pow() awkExpr {
	base := p.postfix()
	if p.tok.tok == awkTPow {
		p.advance()
		// Right-associative, and the exponent may carry a sign.
		return &awkBinary{awkTPow, base, p.unary()}
	}
	return base
}

func (p *awkParser) postfix() awkExpr {
	if op := p.tok.tok; op == awkTIncr || op == awkTDecr {
		p.advance()
		x := p.postfix()
		if !awkIsLvalue(x) {
			p.errorf("%s applied to a non-variable", awkTokNames[op])
		}
		return &awkIncr{lhs: x, pre: true, dec: op == awkTDecr}
	}
	x := p.primary()
	if op := p.tok.tok; (op == awkTIncr || op == awkTDecr) && awkIsLvalue(x) {
		p.advance()
		return &awkIncr{lhs: x, dec: op == awkTDecr}
	}
	return x
}

// lvalue parses getline's variable: a name, an element or a field.
func (p *awkParser) lvalue() awkExpr {
	if p.tok.tok == awkTDollar {
		p.advance()
		return &awkField{p.fieldOperand()}
	}
	name := p.tok.str
	p.advance()
	v := p.varRef(name)
	if p.tok.tok == awkTLbracket {
		p.advance()
		return &awkIndex{arr: v, index: p.exprList(awkTRbracket)}
	}
	return v
}

// fieldOperand parses what follows '$'.
func (p *awkParser) fieldOperand() awkExpr {
	switch op := p.tok.tok; op {
	case awkTIncr, awkTDecr:
		return p.postfix()
	case awkTSub, awkTAdd, awkTNot:
		p.advance()
		return &awkUnary{op, p.fieldOperand()}
	}
	return p.primary()
}

func (p *awkParser) primary() awkExpr {
	t := p.tok
	switch t.tok {
	case awkTNumber:
		p.advance()
		return &awkLit{awkNumV(t.num)}
	case awkTString:
		p.advance()
		return &awkLit{awkStrV(t.str)}
	case awkTDiv, awkTDivAssign:
		src := p.lex.regex(t.tok == awkTDivAssign)
		re, err := awkCompileRegex(src)
		if err != nil {
			p.errorf("%v", err)
		}
		p.advance()
		return &awkRegexLit{src, re}
	case awkTDollar:
		p.advance()
		return &awkField{p.fieldOperand()}
	case awkTNot, awkTSub, awkTAdd:
		p.advance()
		return &awkUnary{t.tok, p.unary()}
	case awkTIncr, awkTDecr:
		return p.postfix()
	case awkTLparen:
		start := p.ntok
		p.advance()
		saveNoGt, saveStart := p.noGt, p.printStart
		p.noGt, p.printStart = false, -1
		p.optNewlines()
		e := p.expr()
		if p.tok.tok == awkTComma {
			list := []awkExpr{e}
			for p.tok.tok == awkTComma {
				p.advance()
				p.optNewlines()
				list = append(list, p.expr())
			}
			p.optNewlines()
			p.expect(awkTRparen)
			p.noGt, p.printStart = saveNoGt, saveStart
			switch p.tok.tok {
			case awkTIn:
				return &awkGroup{list}
			case awkTSemi, awkTNewline, awkTRbrace, awkTEOF, awkTGt, awkTAppend, awkTPipe:
				if start == p.printStart {
					return &awkGroup{list}
				}
			}
			p.errorf("unexpected parenthesized list")
		}
		p.optNewlines()
		p.expect(awkTRparen)
		p.noGt, p.printStart = saveNoGt, saveStart
		return e
	case awkTGetline:
		p.advance()
		g := &awkGetline{kind: awkGetlinePlain}
		if p.tok.tok == awkTName || p.tok.tok == awkTDollar {
			g.lhs = p.lvalue()
		}
		if p.tok.tok == awkTLt {
			p.advance()
			g.kind = awkGetlineFile
			g.src = p.postfix()
		}
		return g
	case awkTName:
		p.advance()
		v := p.varRef(t.str)
		if p.tok.tok == awkTLbracket {
			p.advance()
			return &awkIndex{arr: v, index: p.exprList(awkTRbracket)}
		}
		return v
	case awkTFuncName:
		p.advance()
		p.expect(awkTLparen)
		c := &awkCall{name: t.str, line: t.line}
		if p.tok.tok != awkTRparen {
			c.args = p.exprList(awkTRparen)
		} else {
			p.advance()
		}
		if _, ok := p.prog.funcs[t.str]; !ok {
			p.prog.funcs[t.str] = &awkFunc{name: t.str}
		}
		p.calls = append(p.calls, c)
		return c
	case awkTBuiltin:
		return p.builtin()
	}
	p.unexpected()
	return nil
}

func (p *awkParser) builtin() awkExpr {
	t := p.tok
	info := awkBuiltinInfo[t.str]
	p.advance()
	b := &awkBuiltinCall{id: info.id, name: t.str}
	if p.tok.tok != awkTLparen {
		if info.id == awkBLength {
			return b
		}
		p.errorf("expected ( after %s", t.str)
	}
	p.advance()
	if p.tok.tok != awkTRparen {
		b.args = p.exprList(awkTRparen)
	} else {
		p.advance()
	}
	if len(b.args) < info.min || info.max >= 0 && len(b.args) > info.max {
		p.errorf("wrong number of arguments in call to %s", t.str)
	}
	switch info.id {
	case awkBSplit:
		if _, ok := b.args[1].(*awkVar); !ok {
			p.errorf("split: second argument must be an array name")
		}
	case awkBSub, awkBGsub:
		if len(b.args) == 3 && !awkIsLvalue(b.args[2]) {
			p.errorf("%s: third argument must be a variable, element or field", t.str)
		}
	}
	return b
}
