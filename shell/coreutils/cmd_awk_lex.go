package coreutils

// The awk lexer. Division and regular expression literals share '/':
// the parser asks for a regex (awkLexer.regex) where an operand is due.

import (
	"fmt"
	"strconv"
	"strings"
)

type awkTok int

const (
	awkTEOF awkTok = iota
	awkTNewline
	awkTLbrace
	awkTRbrace
	awkTLparen
	awkTRparen
	awkTLbracket
	awkTRbracket
	awkTSemi
	awkTComma
	awkTAdd
	awkTSub
	awkTMul
	awkTDiv
	awkTMod
	awkTPow
	awkTAssign
	awkTAddAssign
	awkTSubAssign
	awkTMulAssign
	awkTDivAssign
	awkTModAssign
	awkTPowAssign
	awkTEq
	awkTNe
	awkTLt
	awkTLe
	awkTGt
	awkTGe
	awkTMatch
	awkTNoMatch
	awkTNot
	awkTAnd
	awkTOr
	awkTQuestion
	awkTColon
	awkTIncr
	awkTDecr
	awkTDollar
	awkTPipe
	awkTAppend
	awkTNumber
	awkTString
	awkTRegex
	awkTName
	awkTFuncName
	awkTBuiltin
	awkTBegin
	awkTEnd
	awkTFunction
	awkTIf
	awkTElse
	awkTWhile
	awkTFor
	awkTDo
	awkTBreak
	awkTContinue
	awkTNext
	awkTNextfile
	awkTExit
	awkTReturn
	awkTDelete
	awkTIn
	awkTGetline
	awkTPrint
	awkTPrintf
)

var awkKeywords = map[string]awkTok{
	"BEGIN": awkTBegin, "END": awkTEnd, "function": awkTFunction, "func": awkTFunction,
	"if": awkTIf, "else": awkTElse, "while": awkTWhile, "for": awkTFor, "do": awkTDo,
	"break": awkTBreak, "continue": awkTContinue, "next": awkTNext, "nextfile": awkTNextfile,
	"exit": awkTExit, "return": awkTReturn, "delete": awkTDelete, "in": awkTIn,
	"getline": awkTGetline, "print": awkTPrint, "printf": awkTPrintf,
}

var awkBuiltins = map[string]bool{
	"length": true, "substr": true, "index": true, "split": true, "sub": true,
	"gsub": true, "match": true, "sprintf": true, "tolower": true, "toupper": true,
	"int": true, "sqrt": true, "exp": true, "log": true, "sin": true, "cos": true,
	"atan2": true, "rand": true, "srand": true, "close": true, "fflush": true,
	"system": true,
}

var awkTokNames = map[awkTok]string{
	awkTEOF: "end of file", awkTNewline: "end of line", awkTLbrace: "{", awkTRbrace: "}",
	awkTLparen: "(", awkTRparen: ")", awkTLbracket: "[", awkTRbracket: "]", awkTSemi: ";",
	awkTComma: ",", awkTAdd: "+", awkTSub: "-", awkTMul: "*", awkTDiv: "/", awkTMod: "%",
	awkTPow: "^", awkTAssign: "=", awkTAddAssign: "+=", awkTSubAssign: "-=", awkTMulAssign: "*=",
	awkTDivAssign: "/=", awkTModAssign: "%=", awkTPowAssign: "^=", awkTEq: "==", awkTNe: "!=",
	awkTLt: "<", awkTLe: "<=", awkTGt: ">", awkTGe: ">=", awkTMatch: "~", awkTNoMatch: "!~",
	awkTNot: "!", awkTAnd: "&&", awkTOr: "||", awkTQuestion: "?", awkTColon: ":",
	awkTIncr: "++", awkTDecr: "--", awkTDollar: "$", awkTPipe: "|", awkTAppend: ">>",
}

type awkToken struct {
	tok  awkTok
	str  string // names, strings, regexes, numbers' text
	num  float64
	line int
}

func (t awkToken) String() string {
	switch t.tok {
	case awkTNumber:
		return t.str
	case awkTString:
		return strconv.Quote(t.str)
	case awkTRegex:
		return "/" + t.str + "/"
	case awkTName, awkTFuncName, awkTBuiltin:
		return t.str
	}
	if s, ok := awkTokNames[t.tok]; ok {
		return s
	}
	for k, v := range awkKeywords {
		if v == t.tok {
			return k
		}
	}
	return "?"
}

type awkLexer struct {
	src  string
	pos  int
	line int
}

type awkSyntaxError struct {
	line int
	msg  string
}

func (e *awkSyntaxError) Error() string {
	return fmt.Sprintf("syntax error at source line %d: %s", e.line, e.msg)
}

func (l *awkLexer) errorf(format string, args ...any) {
	panic(&awkSyntaxError{l.line, fmt.Sprintf(format, args...)})
}

// next scans one token.
func (l *awkLexer) next() awkToken {
	for {
		if l.pos >= len(l.src) {
			return awkToken{tok: awkTEOF, line: l.line}
		}
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
			continue
		case c == '\\' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n':
			l.pos += 2
			l.line++
			continue
		case c == '\\' && l.pos+2 < len(l.src) && l.src[l.pos+1] == '\r' && l.src[l.pos+2] == '\n':
			l.pos += 3
			l.line++
			continue
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
			continue
		}
		break
	}
	start := l.pos
	c := l.src[l.pos]
	l.pos++
	t := awkToken{line: l.line}
	two := func(next byte, yes, no awkTok) awkTok {
		if l.pos < len(l.src) && l.src[l.pos] == next {
			l.pos++
			return yes
		}
		return no
	}
	switch c {
	case '\n':
		t.tok = awkTNewline
		l.line++
	case '{':
		t.tok = awkTLbrace
	case '}':
		t.tok = awkTRbrace
	case '(':
		t.tok = awkTLparen
	case ')':
		t.tok = awkTRparen
	case '[':
		t.tok = awkTLbracket
	case ']':
		t.tok = awkTRbracket
	case ';':
		t.tok = awkTSemi
	case ',':
		t.tok = awkTComma
	case '+':
		if l.pos < len(l.src) && l.src[l.pos] == '+' {
			l.pos++
			t.tok = awkTIncr
		} else {
			t.tok = two('=', awkTAddAssign, awkTAdd)
		}
	case '-':
		if l.pos < len(l.src) && l.src[l.pos] == '-' {
			l.pos++
			t.tok = awkTDecr
		} else {
			t.tok = two('=', awkTSubAssign, awkTSub)
		}
	case '*':
		if l.pos < len(l.src) && l.src[l.pos] == '*' {
			l.pos++
			t.tok = two('=', awkTPowAssign, awkTPow)
		} else {
			t.tok = two('=', awkTMulAssign, awkTMul)
		}
	case '/':
		t.tok = two('=', awkTDivAssign, awkTDiv)
	case '%':
		t.tok = two('=', awkTModAssign, awkTMod)
	case '^':
		t.tok = two('=', awkTPowAssign, awkTPow)
	case '=':
		t.tok = two('=', awkTEq, awkTAssign)
	case '!':
		if l.pos < len(l.src) && l.src[l.pos] == '~' {
			l.pos++
			t.tok = awkTNoMatch
		} else {
			t.tok = two('=', awkTNe, awkTNot)
		}
	case '<':
		t.tok = two('=', awkTLe, awkTLt)
	case '>':
		if l.pos < len(l.src) && l.src[l.pos] == '>' {
			l.pos++
			t.tok = awkTAppend
		} else {
			t.tok = two('=', awkTGe, awkTGt)
		}
	case '~':
		t.tok = awkTMatch
	case '&':
		if l.pos < len(l.src) && l.src[l.pos] == '&' {
			l.pos++
			t.tok = awkTAnd
		} else {
			l.errorf("unexpected character '&'")
		}
	case '|':
		t.tok = two('|', awkTOr, awkTPipe)
	case '?':
		t.tok = awkTQuestion
	case ':':
		t.tok = awkTColon
	case '$':
		t.tok = awkTDollar
	case '"':
		t.tok = awkTString
		t.str = l.string()
	default:
		switch {
		case awkIsDigit(c) || c == '.' && l.pos < len(l.src) && awkIsDigit(l.src[l.pos]):
			l.pos = start
			t.tok = awkTNumber
			t.str, t.num = l.number()
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for l.pos < len(l.src) && (l.src[l.pos] == '_' || awkIsDigit(l.src[l.pos]) ||
				l.src[l.pos] >= 'a' && l.src[l.pos] <= 'z' || l.src[l.pos] >= 'A' && l.src[l.pos] <= 'Z') {
				l.pos++
			}
			t.str = l.src[start:l.pos]
			if kw, ok := awkKeywords[t.str]; ok {
				t.tok = kw
			} else if awkBuiltins[t.str] {
				t.tok = awkTBuiltin
			} else if l.pos < len(l.src) && l.src[l.pos] == '(' {
				t.tok = awkTFuncName
			} else {
				t.tok = awkTName
			}
		default:
			if c >= 0x20 && c < 0x7f {
				l.errorf("unexpected character '%c'", c)
			}
			l.errorf("unexpected character 0x%02x", c)
		}
	}
	return t
}

func (l *awkLexer) number() (string, float64) {
	start := l.pos
	for l.pos < len(l.src) && awkIsDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		for l.pos < len(l.src) && awkIsDigit(l.src[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		k := l.pos + 1
		if k < len(l.src) && (l.src[k] == '+' || l.src[k] == '-') {
			k++
		}
		if k < len(l.src) && awkIsDigit(l.src[k]) {
			for k < len(l.src) && awkIsDigit(l.src[k]) {
				k++
			}
			l.pos = k
		}
	}
	text := l.src[start:l.pos]
	return text, awkParseNum(text)
}

// string scans a string literal after its opening quote, decoding escapes.
func (l *awkLexer) string() string {
	var b strings.Builder
	for {
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			l.errorf("runaway string constant \"%s ...", awkTrunc(b.String(), 10))
		}
		c := l.src[l.pos]
		l.pos++
		if c == '"' {
			return b.String()
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if l.pos >= len(l.src) {
			b.WriteByte('\\')
			continue
		}
		if l.src[l.pos] == '\n' { // continuation
			l.pos++
			l.line++
			continue
		}
		if l.src[l.pos] == '\\' {
			b.WriteByte('\\')
			l.pos++
			continue
		}
		if ch, n, ok := awkEscapeChar(l.src[l.pos:]); ok {
			b.WriteByte(ch)
			l.pos += n
			continue
		}
		// Unknown escapes keep their backslash (as mawk does), which
		// keeps "\." a literal dot when the string is used as a regex.
		b.WriteByte('\\')
	}
}

// regex scans a regex literal; the opening '/' (or "/=") was the last
// token.
func (l *awkLexer) regex(afterDivAssign bool) string {
	start := l.pos
	if afterDivAssign {
		start--
	}
	inBracket := false
	for {
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			l.errorf("runaway regular expression /%s ...", awkTrunc(l.src[start:l.pos], 10))
		}
		c := l.src[l.pos]
		switch {
		case c == '\\' && l.pos+1 < len(l.src):
			if l.src[l.pos+1] == '\n' {
				l.errorf("runaway regular expression /%s ...", awkTrunc(l.src[start:l.pos], 10))
			}
			l.pos += 2
			continue
		case c == '[' && !inBracket:
			inBracket = true
			l.pos++
			// A ']' right after '[' or '[^' is a member.
			if l.pos < len(l.src) && l.src[l.pos] == '^' {
				l.pos++
			}
			if l.pos < len(l.src) && l.src[l.pos] == ']' {
				l.pos++
			}
			continue
		case c == '[' && inBracket && l.pos+1 < len(l.src) && l.src[l.pos+1] == ':':
			if end := strings.Index(l.src[l.pos+2:], ":]"); end >= 0 && !strings.ContainsAny(l.src[l.pos+2:l.pos+2+end], "\n]/") {
				l.pos += 2 + end + 2
				continue
			}
		case c == ']' && inBracket:
			inBracket = false
		case c == '/' && !inBracket:
			l.pos++
			return l.src[start : l.pos-1]
		}
		l.pos++
	}
}

func awkTrunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
