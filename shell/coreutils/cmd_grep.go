package coreutils

// grep: GNU grep 3.8's options, output and exit statuses.
//
// Patterns are POSIX BRE (-G, default) or ERE (-E) translated to RE2 by
// grp_regex.go, fixed strings (-F), or Go (RE2) syntax for -P. Files
// are streamed line by line. Recursive searches (-r, -R) visit
// directory entries sorted by name (GNU uses the directory's own order,
// which is arbitrary).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

func init() { register("grep", grpMain) }

const (
	grpUsageShort = "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"
	grpBufSize    = 96 * 1024
)

var grpGetoptSpec = &getoptLong{
	short: "0123456789A:B:C:D:EFGHIJLNPRTUVX:abcd:e:f:hiLlm:noqRrsuvwxyZz",
	long: []longOpt{
		{"basic-regexp", 0, "G"},
		{"extended-regexp", 0, "E"},
		{"fixed-regexp", 0, "F"},
		{"fixed-strings", 0, "F"},
		{"perl-regexp", 0, "P"},
		{"after-context", 1, "A"},
		{"before-context", 1, "B"},
		{"binary-files", 1, "binary-files"},
		{"byte-offset", 0, "b"},
		{"context", 1, "C"},
		{"color", 2, "color"},
		{"colour", 2, "color"},
		{"count", 0, "c"},
		{"devices", 1, "D"},
		{"directories", 1, "d"},
		{"dereference-recursive", 0, "R"},
		{"exclude", 1, "exclude"},
		{"exclude-from", 1, "exclude-from"},
		{"exclude-dir", 1, "exclude-dir"},
		{"file", 1, "f"},
		{"files-with-matches", 0, "l"},
		{"files-without-match", 0, "L"},
		{"group-separator", 1, "group-separator"},
		{"help", 0, "help"},
		{"include", 1, "include"},
		{"ignore-case", 0, "i"},
		{"no-ignore-case", 0, "no-ignore-case"},
		{"initial-tab", 0, "T"},
		{"label", 1, "label"},
		{"line-buffered", 0, "line-buffered"},
		{"line-number", 0, "n"},
		{"line-regexp", 0, "x"},
		{"max-count", 1, "m"},
		{"no-filename", 0, "h"},
		{"no-group-separator", 0, "no-group-separator"},
		{"no-messages", 0, "s"},
		{"null", 0, "Z"},
		{"null-data", 0, "z"},
		{"only-matching", 0, "o"},
		{"quiet", 0, "q"},
		{"recursive", 0, "r"},
		{"regexp", 1, "e"},
		{"invert-match", 0, "v"},
		{"silent", 0, "q"},
		{"text", 0, "a"},
		{"binary", 0, "U"},
		{"unix-byte-offsets", 0, "u"},
		{"version", 0, "V"},
		{"with-filename", 0, "H"},
		{"word-regexp", 0, "w"},
	},
}

// grpExcludeSeg is a run of --include/--exclude patterns of one kind,
// as gnulib's exclude module groups them.
type grpExcludeSeg struct {
	include  bool
	wildcard bool
	pats     []string
}

type grpExclude struct{ segs []grpExcludeSeg } // in option order

func grpHasWildcards(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '?', '*', '[', ']':
			return true
		}
	}
	return false
}

func (x *grpExclude) add(pat string, include bool) {
	wild := grpHasWildcards(pat)
	if n := len(x.segs); n > 0 && x.segs[n-1].wildcard == wild && x.segs[n-1].include == include {
		x.segs[n-1].pats = append(x.segs[n-1].pats, pat)
		return
	}
	x.segs = append(x.segs, grpExcludeSeg{include: include, wildcard: wild, pats: []string{pat}})
}

// excluded reports whether name is excluded. Anchored matching compares
// the whole name (a base name in recursion); otherwise any suffix that
// follows a slash may match (command-line operands).
func (x *grpExclude) excluded(name string, anchored bool) bool {
	if len(x.segs) == 0 {
		return false
	}
	match := func(p string) bool {
		if grpFnmatch(p, name) {
			return true
		}
		if !anchored {
			for i := 0; i < len(name); i++ {
				if name[i] == '/' && i+1 < len(name) && name[i+1] != '/' {
					if grpFnmatch(p, name[i+1:]) {
						return true
					}
				}
			}
		}
		return false
	}
	for i := len(x.segs) - 1; i >= 0; i-- {
		for _, p := range x.segs[i].pats {
			if match(p) {
				return !x.segs[i].include
			}
		}
	}
	return x.segs[0].include
}

// grpMatcher selects lines: one unit for all the patterns, or one per
// pattern when some need back-references (RE2 cannot run them).
type grpMatcher struct {
	none  bool
	units []*grpUnit
}

// grpUnit is a compiled pattern (or alternation of patterns).
type grpUnit struct {
	re        *grpRegex
	word      *grpRegex // -w with RE2: pattern, empty group, then a non-word character or the end
	wordGroup int
	btWord    bool // -w with the backtracking matcher
}

func grpIsWordRune(r rune) bool {
	return r == '_' || grpWordRE.MatchString(string(r))
}

var grpWordRE = regexp.MustCompile(`^[` + grpClassWord + `]$`)

func grpWordBefore(b []byte, i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRune(b[:i])
	return grpIsWordRune(r)
}

func grpWordAfter(b []byte, i int) bool {
	if i >= len(b) {
		return false
	}
	r, _ := utf8.DecodeRune(b[i:])
	return grpIsWordRune(r)
}

func (u *grpUnit) find(line []byte, from int) (int, int, bool) {
	if u.btWord {
		for s := from; s <= len(line); {
			if !grpWordBefore(line, s) {
				best := -1
				for e := range u.re.bt.endsAt(line, s) {
					if e > best && !grpWordAfter(line, e) {
						best = e
					}
				}
				if best >= 0 {
					return s, best, true
				}
			}
			if s >= len(line) {
				break
			}
			_, w := utf8.DecodeRune(line[s:])
			s += w
		}
		return 0, 0, false
	}
	if u.word == nil {
		loc := u.re.findAt(line, from)
		if loc == nil {
			return 0, 0, false
		}
		return loc[0], loc[1], true
	}
	start := from
	for start <= len(line) {
		loc := u.word.findAt(line, start)
		if loc == nil {
			return 0, 0, false
		}
		s, e := loc[0], loc[2*u.wordGroup]
		if !grpWordBefore(line, s) {
			return s, e, true
		}
		if s >= len(line) {
			break
		}
		_, w := utf8.DecodeRune(line[s:])
		start = s + w
	}
	return 0, 0, false
}

func (u *grpUnit) match(line []byte) bool {
	if u.word == nil && !u.btWord {
		return u.re.match(line)
	}
	_, _, ok := u.find(line, 0)
	return ok
}

// find returns the leftmost-longest match at or after from.
func (m *grpMatcher) find(line []byte, from int) (int, int, bool) {
	if m.none {
		return 0, 0, false
	}
	bs, be, found := 0, 0, false
	for _, u := range m.units {
		s, e, ok := u.find(line, from)
		if ok && (!found || s < bs || (s == bs && e > be)) {
			bs, be, found = s, e, true
		}
	}
	return bs, be, found
}

func (m *grpMatcher) match(line []byte) bool {
	if m.none {
		return false
	}
	for _, u := range m.units {
		if u.match(line) {
			return true
		}
	}
	return false
}

type grpOptions struct {
	matcher      string // "G", "E", "F", "P"
	patterns     []string
	havePatterns bool
	icase        bool
	word, line   bool
	invert       bool
	count        bool
	list         byte // 'l', 'L' or 0
	quiet        bool
	noMessages   bool
	only         bool
	lineNumber   bool
	byteOffset   bool
	filename     int // -1 -h, 1 -H, 0 default
	maxCount     int64
	before       int64
	after        int64
	context      int64
	recursive    bool
	deref        bool
	dirs         string // read, skip, recurse
	devices      string
	binaryFiles  string // binary, text, without-match
	nullData     bool
	nullName     bool
	initialTab   bool
	label        string
	groupSep     *string
	include      grpExclude
	excludeDir   grpExclude
}

type grpRun struct {
	ctx      context.Context
	e        *Env
	o        grpOptions
	m        *grpMatcher
	out      *bufio.Writer
	outFile  int // 1 print names, 0 not, -1 decide per operand
	omitDot  bool
	used     bool
	errSeen  bool
	status   bool // some line selected
	quit     bool // -q matched: stop everything
	color    bool
	colors   grpColors
	eol      byte
	outQuiet bool
	doneOnM  bool
	visiting map[uint64]bool
	depth    int
}

func grpMain(ctx context.Context, e *Env, args []string) (code int) {
	if e.Stdin == nil {
		sub := *e
		sub.Stdin = strings.NewReader("")
		e = &sub
	}
	out := bufio.NewWriterSize(e.Stdout, 64*1024)
	defer out.Flush()
	g := &grpRun{ctx: ctx, e: e, out: out, eol: '\n'}
	o := &g.o
	o.matcher = ""
	o.maxCount = -1
	o.before, o.after, o.context = -1, -1, -1
	o.dirs, o.devices, o.binaryFiles = "read", "read_command_line", "binary"
	o.label = "(standard input)"
	sep := "--"
	o.groupSep = &sep
	showHelp, showVersion := false, false
	color := 0

	opts, operands, perr := grpGetoptSpec.parse(args[1:])
	die := func(status int, msg string) int {
		out.Flush()
		fmt.Fprintf(e.Stderr, "grep: %s\n", msg)
		return status
	}
	contextArg := func(v string, dst *int64) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrRange && n > 0 {
				*dst = n
				return true
			}
			return false
		}
		if n < 0 {
			return false
		}
		*dst = n
		return true
	}
	digitArg, digitVal := -1, int64(0)
	for _, op := range opts {
		switch op.name {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9":
			d := int64(op.name[0] - '0')
			if digitArg == op.arg {
				if digitVal < 1<<58 {
					digitVal = digitVal*10 + d
				}
			} else {
				digitVal = d
			}
			digitArg = op.arg
			o.context = digitVal
		case "A":
			if !contextArg(op.value, &o.after) {
				return die(2, op.value+": invalid context length argument")
			}
		case "B":
			if !contextArg(op.value, &o.before) {
				return die(2, op.value+": invalid context length argument")
			}
		case "C":
			if !contextArg(op.value, &o.context) {
				return die(2, op.value+": invalid context length argument")
			}
		case "D":
			switch op.value {
			case "read", "skip":
				o.devices = op.value
			default:
				return die(2, "unknown devices method")
			}
		case "E", "F", "G", "P":
			if o.matcher != "" && o.matcher != op.name {
				return die(2, "conflicting matchers specified")
			}
			o.matcher = op.name
		case "H":
			o.filename = 1
		case "h":
			o.filename = -1
		case "I":
			o.binaryFiles = "without-match"
		case "T":
			o.initialTab = true
		case "U":
		case "u":
			out.Flush()
			fmt.Fprintln(e.Stderr, "grep: warning: --unix-byte-offsets (-u) is obsolete")
		case "V":
			showVersion = true
		case "X":
			switch op.value {
			case "grep", "egrep", "fgrep", "perl":
				m := map[string]string{"grep": "G", "egrep": "E", "fgrep": "F", "perl": "P"}[op.value]
				if o.matcher != "" && o.matcher != m {
					return die(2, "conflicting matchers specified")
				}
				o.matcher = m
			default:
				return die(2, "invalid matcher "+op.value)
			}
		case "a":
			o.binaryFiles = "text"
		case "b":
			o.byteOffset = true
		case "c":
			o.count = true
		case "d":
			switch op.value {
			case "read", "skip", "recurse":
				o.dirs = op.value
				if op.value == "recurse" {
					o.recursive = true
				}
			default:
				out.Flush()
				fmt.Fprintf(e.Stderr, "grep: invalid argument ‘%s’ for ‘--directories’\nValid arguments are:\n  - ‘read’\n  - ‘recurse’\n  - ‘skip’\n%s", op.value, grpUsageShort)
				return 1
			}
		case "e":
			o.patterns = append(o.patterns, strings.Split(op.value, "\n")...)
			o.havePatterns = true
		case "f":
			pats, err := grpReadPatternFile(ctx, e, op.value)
			if err != nil {
				return die(2, op.value+": "+errText(err))
			}
			o.patterns = append(o.patterns, pats...)
			o.havePatterns = true
		case "i", "y":
			o.icase = true
		case "no-ignore-case":
			o.icase = false
		case "L":
			o.list = 'L'
		case "l":
			o.list = 'l'
		case "m":
			n, err := strconv.ParseInt(op.value, 10, 64)
			if err != nil {
				var ne *strconv.NumError
				if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
					if n > 0 {
						n = 1<<63 - 1
					} else {
						n = -1
					}
				} else {
					return die(2, "invalid max count")
				}
			}
			o.maxCount = n
		case "n":
			o.lineNumber = true
		case "o":
			o.only = true
		case "q":
			o.quiet = true
		case "R":
			o.deref = true
			o.recursive = true
			o.dirs = "recurse"
		case "r":
			o.recursive = true
			o.dirs = "recurse"
		case "s":
			o.noMessages = true
		case "v":
			o.invert = true
		case "w":
			o.word = true
		case "x":
			o.line = true
		case "Z":
			o.nullName = true
		case "z":
			o.nullData = true
		case "binary-files":
			switch op.value {
			case "binary", "text", "without-match":
				o.binaryFiles = op.value
			default:
				return die(2, "unknown binary-files type")
			}
		case "color":
			if op.set {
				switch op.value {
				case "always", "yes", "force":
					color = 1
				case "never", "no", "none":
					color = 0
				case "auto", "tty", "if-tty":
					color = 0
				default:
					showHelp = true
				}
			}
		case "exclude", "include":
			o.include.add(op.value, op.name == "include")
		case "exclude-from":
			pats, err := grpReadPatternFile(ctx, e, op.value)
			if err != nil {
				return die(2, op.value+": "+errText(err))
			}
			for _, p := range pats {
				o.include.add(p, false)
			}
		case "exclude-dir":
			p := strings.TrimRight(op.value, "/")
			if p == "" && op.value != "" {
				p = "/"
			}
			o.excludeDir.add(p, false)
		case "group-separator":
			v := op.value
			o.groupSep = &v
		case "no-group-separator":
			o.groupSep = nil
		case "help":
			showHelp = true
		case "label":
			o.label = op.value
		case "line-buffered":
		}
	}
	if perr != nil {
		out.Flush()
		fmt.Fprintf(e.Stderr, "grep: %s\n%s", perr, grpUsageShort)
		return 2
	}
	if showVersion {
		out.WriteString(grpVersion)
		return 0
	}
	if showHelp {
		out.WriteString(grpHelp)
		return 0
	}
	if color == 1 {
		cols, warns := grpParseColors(e.Vars)
		g.color, g.colors = true, cols
		out.Flush()
		for _, w := range warns {
			fmt.Fprintf(e.Stderr, "grep: %s\n", w)
		}
	}
	if !o.havePatterns {
		if len(operands) == 0 {
			out.Flush()
			fmt.Fprint(e.Stderr, grpUsageShort)
			return 2
		}
		o.patterns = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	if o.matcher == "" {
		o.matcher = "G"
	}
	if o.after < 0 {
		o.after = o.context
	}
	if o.before < 0 {
		o.before = o.context
	}
	if o.nullData {
		g.eol = 0
	}
	if o.quiet || o.list != 0 {
		o.count = false
		g.doneOnM = true
	}
	g.outQuiet = o.count || g.doneOnM
	if o.maxCount < 0 {
		o.maxCount = 1<<63 - 1
	}

	m, warns, err := grpBuildMatcher(o)
	if err != nil {
		return die(2, err.Error())
	}
	g.m = m
	if len(warns) > 0 {
		out.Flush()
		for _, w := range warns {
			fmt.Fprintf(e.Stderr, "grep: warning: %s\n", w)
		}
	}
	if o.maxCount == 0 {
		return 1
	}

	if len(operands) == 0 {
		if o.recursive {
			operands = []string{"."}
			g.omitDot = true
		} else {
			operands = []string{"-"}
		}
	}
	switch {
	case o.filename == 0 && len(operands) <= 1:
		if o.recursive {
			g.outFile = -1
		}
	default:
		if o.filename >= 0 {
			g.outFile = 1
		}
	}
	for _, op := range operands {
		if ctx.Err() != nil || g.quit {
			break
		}
		g.commandLine(op)
	}
	if g.quit {
		return 0
	}
	if ctx.Err() != nil {
		return 2
	}
	if g.errSeen {
		return 2
	}
	if g.status {
		return 0
	}
	return 1
}

// grpOpen opens a file operand; /dev/null and /dev/stdin are the
// usual special files, which a workspace does not hold.
func grpOpen(ctx context.Context, e *Env, name string) (io.ReadCloser, error) {
	switch e.Abs(name) {
	case "/dev/null":
		return io.NopCloser(strings.NewReader("")), nil
	case "/dev/stdin":
		return io.NopCloser(e.Stdin), nil
	}
	return e.FS.Open(ctx, e.Abs(name))
}

// grpStat is Stat with grpOpen's special files.
func grpStat(ctx context.Context, e *Env, name string) (FileInfo, error) {
	switch e.Abs(name) {
	case "/dev/null", "/dev/stdin":
		return FileInfo{Name: path.Base(name), Mode: iofs.ModeDevice | iofs.ModeCharDevice | 0o666}, nil
	}
	return e.FS.Stat(ctx, e.Abs(name))
}

func grpReadPatternFile(ctx context.Context, e *Env, name string) ([]string, error) {
	var r io.Reader
	if name == "-" {
		r = e.Stdin
	} else {
		f, err := grpOpen(ctx, e, name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n"), nil
}

// grpBuildMatcher compiles the patterns; warns are dfa's warnings.
func grpBuildMatcher(o *grpOptions) (m *grpMatcher, warns []string, err error) {
	if len(o.patterns) == 0 {
		return &grpMatcher{none: true}, nil, nil
	}
	syn := grpSyntax{ere: o.matcher == "E", icase: o.icase}
	var parts []string
	var parsed []*grpParsed
	backrefs := false
	longest := true
	switch o.matcher {
	case "F":
		for _, p := range o.patterns {
			parts = append(parts, regexp.QuoteMeta(p))
		}
	case "P":
		if len(o.patterns) > 1 {
			return nil, nil, errors.New("the -P option only supports a single pattern")
		}
		if _, err := regexp.Compile(o.patterns[0]); err != nil {
			return nil, nil, fmt.Errorf("unsupported -P pattern (Go RE2 syntax): %s", grpGoErr(err))
		}
		parts = append(parts, o.patterns[0])
		longest = false
	default:
		for _, p := range o.patterns {
			pp, err := grpParse(p, syn)
			if err != nil {
				return nil, nil, err
			}
			if pp.dfaErr != "" {
				return nil, nil, errors.New(pp.dfaErr)
			}
			backrefs = backrefs || pp.backref
			warns = append(warns, pp.warns...)
			parts = append(parts, pp.expr)
			parsed = append(parsed, pp)
		}
	}
	flags := ""
	if o.icase {
		flags = "(?i)"
	}
	if o.matcher != "P" {
		if flags == "" {
			flags = "(?s)"
		} else {
			flags = "(?is)"
		}
	}
	m = &grpMatcher{}
	if !backrefs {
		body := parts[0]
		if len(parts) > 1 {
			body = "(?:" + strings.Join(parts, ")|(?:") + ")"
		}
		u, err := grpRE2Unit(o, flags, body, longest)
		if err != nil {
			return nil, nil, err
		}
		u.setReq(grpUnionReq(o, parsed))
		m.units = append(m.units, u)
		return m, warns, nil
	}
	for _, pp := range parsed {
		if !pp.backref {
			u, err := grpRE2Unit(o, flags, pp.expr, true)
			if err != nil {
				return nil, nil, err
			}
			u.setReq(grpUnionReq(o, []*grpParsed{pp}))
			m.units = append(m.units, u)
			continue
		}
		node := pp.node
		if o.line {
			node = &grpNode{op: grpNConcat, kids: []*grpNode{{op: grpNAssert, re: `\A`}, node, {op: grpNAssert, re: `\z`}}}
		}
		bt, err := grpNewBT(node, pp.ngroups, syn)
		if err != nil {
			return nil, nil, err
		}
		m.units = append(m.units, &grpUnit{re: &grpRegex{bt: bt, ngroups: pp.ngroups, longest: true}, btWord: o.word && !o.line})
	}
	return m, warns, nil
}

// grpUnionReq is the prefilter of an alternation of grep patterns.
func grpUnionReq(o *grpOptions, parsed []*grpParsed) *grpReq {
	var lits [][]byte
	exact := true
	switch o.matcher {
	case "P":
		return nil
	case "F":
		for _, p := range o.patterns {
			lits = append(lits, []byte(p))
		}
	default:
		for _, pp := range parsed {
			q := grpReqOf(pp.node, false)
			if q == nil {
				return nil
			}
			lits = append(lits, q.lits...)
			exact = exact && q.exact
		}
	}
	if len(lits) == 0 || len(lits) > 16 {
		return nil
	}
	for _, l := range lits {
		if len(l) == 0 {
			return nil
		}
		if o.icase {
			for _, c := range l {
				if c >= 0x80 {
					return nil
				}
			}
		}
	}
	q := &grpReq{lits: lits, exact: exact && !o.line, fold: o.icase}
	if o.icase {
		for i, l := range q.lits {
			q.lits[i] = bytes.ToLower(l)
		}
	}
	return q
}

// setReq gives the unit's regexps a prefilter.
func (u *grpUnit) setReq(q *grpReq) {
	if q == nil {
		return
	}
	u.re.req = q
	if u.word != nil {
		u.word.req = &grpReq{lits: q.lits, fold: q.fold}
	}
}

// grpRE2Unit compiles an RE2 body with grep's -x and -w.
func grpRE2Unit(o *grpOptions, flags, body string, longest bool) (*grpUnit, error) {
	if o.line {
		body = "^(?:" + body + ")$"
	}
	re, err := grpCompile(flags, body, 0, longest)
	if err != nil {
		return nil, grpCompileErr(err)
	}
	u := &grpUnit{re: re}
	if o.word && !o.line {
		wbody := "(?:" + body + ")()(?:$|[^" + grpClassWord + "])"
		wre, err := grpCompile(flags, wbody, 0, longest)
		if err != nil {
			return nil, grpCompileErr(err)
		}
		u.word = wre
		u.wordGroup = wre.re.NumSubexp()
	}
	return u, nil
}

func grpGoErr(err error) string {
	var re *syntax.Error
	if errors.As(err, &re) {
		return re.Code.String() + ": `" + re.Expr + "`"
	}
	return err.Error()
}

// suppressible reports a file error unless -s.
func (g *grpRun) suppressible(name string, err error) {
	g.errSeen = true
	if !g.o.noMessages {
		g.out.Flush()
		fmt.Fprintf(g.e.Stderr, "grep: %s: %s\n", name, errText(err))
	}
}

func grpIsDevice(m iofs.FileMode) bool {
	return m&(iofs.ModeDevice|iofs.ModeCharDevice|iofs.ModeNamedPipe|iofs.ModeSocket) != 0
}

func (g *grpRun) commandLine(name string) {
	if name == "-" {
		g.searchFile(g.o.label, g.e.Stdin, -1)
		return
	}
	abs := g.e.Abs(name)
	st, err := grpStat(g.ctx, g.e, name)
	if err != nil {
		// A dangling symlink reads as missing, as open(2) would.
		g.suppressible(name, err)
		return
	}
	if st.IsDir() {
		switch g.o.dirs {
		case "skip":
			return
		case "recurse":
			if !g.omitDot && g.o.excludeDir.excluded(name, false) {
				return
			}
			if g.outFile < 0 {
				g.outFile = 1
			}
			g.visiting = map[uint64]bool{}
			g.walk(name, abs, st)
			return
		default:
			g.suppressible(name, &iofs.PathError{Op: "read", Path: name, Err: syscall.EISDIR})
			return
		}
	}
	if g.o.include.excluded(name, false) {
		return
	}
	if g.o.devices == "skip" && grpIsDevice(st.Mode) {
		return
	}
	if g.outFile < 0 {
		g.outFile = 0
	}
	g.openAndSearch(name, abs)
}

func (g *grpRun) openAndSearch(name, abs string) {
	f, err := grpOpen(g.ctx, g.e, abs)
	if err != nil {
		g.suppressible(name, err)
		return
	}
	defer f.Close()
	size := int64(-1)
	if st, err := grpStat(g.ctx, g.e, abs); err == nil && st.Mode.IsRegular() {
		size = st.Size
	}
	g.searchFile(name, f, size)
}

// walk searches the directory at abs (shown as name) recursively.
func (g *grpRun) walk(name, abs string, st FileInfo) {
	if g.ctx.Err() != nil || g.quit {
		return
	}
	// A loop through symlinks (-R): by inode, or by depth when the
	// file system has no inode numbers.
	if (st.Ino != 0 && g.visiting[st.Ino]) || g.depth > 256 {
		g.out.Flush()
		fmt.Fprintf(g.e.Stderr, "grep: %s: warning: recursive directory loop\n", name)
		return
	}
	if st.Ino != 0 {
		g.visiting[st.Ino] = true
		defer delete(g.visiting, st.Ino)
	}
	g.depth++
	defer func() { g.depth-- }()
	ents, err := g.e.FS.ReadDir(g.ctx, abs)
	if err != nil {
		g.suppressible(name, err)
		return
	}
	for _, ent := range ents {
		if g.ctx.Err() != nil || g.quit {
			return
		}
		childAbs := path.Join(abs, ent.Name)
		var child string
		switch {
		case g.omitDot && name == ".":
			child = ent.Name
		case strings.HasSuffix(name, "/"):
			child = name + ent.Name
		default:
			child = name + "/" + ent.Name
		}
		info := ent
		if ent.Mode&iofs.ModeSymlink != 0 {
			if !g.o.deref {
				continue
			}
			si, err := g.e.FS.Stat(g.ctx, childAbs)
			if err != nil {
				g.suppressible(child, err)
				continue
			}
			info = si
		}
		if info.IsDir() {
			if g.o.excludeDir.excluded(ent.Name, true) {
				continue
			}
			g.walk(child, childAbs, info)
			continue
		}
		if g.o.include.excluded(ent.Name, true) {
			continue
		}
		if grpIsDevice(info.Mode) && g.o.devices != "read" {
			continue
		}
		g.openAndSearch(child, childAbs)
	}
}

// grpCtxLine is a line kept for leading context.
type grpCtxLine struct {
	no   int64
	off  int64
	text []byte
}

// grpFile is the state of one file's search.
type grpFile struct {
	g         *grpRun
	name      string
	lineno    int64
	lastOut   int64 // number of the last line output; 0: none yet
	anyOut    bool
	pending   int64
	before    []grpCtxLine
	outleft   int64
	nlines    int64
	quiet     bool
	doneOnM   bool
	firstNull int64
	encErr    bool
	stop      bool
	width     int // -T: the width of line numbers and offsets
}

// searchFile searches r; size is the file's size (-1: not a regular
// file), which sets -T's number width as GNU's does.
func (g *grpRun) searchFile(name string, r io.Reader, size int64) {
	o := &g.o
	f := &grpFile{g: g, name: name, outleft: o.maxCount, quiet: g.outQuiet, doneOnM: g.doneOnM, firstNull: -1}
	if size < 0 {
		f.width = 19
	} else {
		f.width = len(strconv.FormatInt(size, 10))
	}
	checkNul := o.binaryFiles != "text" && g.eol != 0
	binary := false
	// GNU reads 96 KiB at a time and looks for NULs in each buffer
	// (the partial line left over from the last one, then the new
	// data): a file turns binary from the line that crosses into the
	// first buffer with a NUL.
	chunk := make([]byte, grpBufSize)
	var data []byte // unprocessed bytes: a partial line, then new data
	var offset int64
	var readErr error
	eof := false
	for !f.stop && !g.quit && !eof {
		if g.ctx.Err() != nil {
			return
		}
		n, err := io.ReadFull(r, chunk)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			eof = true
		} else if err != nil {
			readErr = err
			eof = true
		}
		if checkNul && !binary && bytes.IndexByte(chunk[:n], 0) >= 0 {
			binary = true
			if o.binaryFiles == "without-match" {
				f.nlines = 0
				break
			}
			if !o.count {
				f.doneOnM, f.quiet = true, true
			}
			f.firstNull = f.nlines
		}
		data = append(data, chunk[:n]...)
		// Complete lines.
		start := 0
		for !f.stop && !g.quit {
			i := bytes.IndexByte(data[start:], g.eol)
			var line []byte
			next := 0
			switch {
			case i >= 0:
				line = data[start : start+i]
				next = start + i + 1
			case eof && start < len(data):
				line = data[start:]
				next = len(data)
			default:
				next = -1
			}
			if next < 0 {
				break
			}
			if binary {
				// NULs end lines too, as GNU's nul_zapper does.
				sub, subOff := line, offset
				for !f.stop {
					k := bytes.IndexByte(sub, 0)
					if k < 0 {
						f.line(sub, subOff)
						break
					}
					f.line(sub[:k], subOff)
					sub = sub[k+1:]
					subOff += int64(k + 1)
				}
			} else {
				f.line(line, offset)
			}
			offset += int64(next - start)
			start = next
		}
		data = append(data[:0], data[start:]...)
	}
	if readErr != nil && !f.stop && !g.quit {
		g.suppressible(name, readErr)
	}
	if g.quit {
		return
	}
	if o.count {
		if g.outFile > 0 {
			g.printFilename(name)
			if o.nullName {
				g.out.WriteByte(0)
			} else {
				g.printSep(':')
			}
		}
		fmt.Fprintf(g.out, "%d\n", f.nlines)
	}
	if f.nlines > 0 {
		g.status = true
	}
	if (o.list == 'l' && f.nlines > 0) || (o.list == 'L' && f.nlines == 0) {
		g.printFilename(name)
		if o.nullName {
			g.out.WriteByte(0)
		} else {
			g.out.WriteByte('\n')
		}
	}
	if !g.outQuiet && (f.encErr || (f.firstNull >= 0 && f.firstNull < f.nlines)) {
		g.out.Flush()
		fmt.Fprintf(g.e.Stderr, "grep: %s: binary file matches\n", name)
	}
}

// line handles one line (without its terminator) at byte offset off.
func (f *grpFile) line(text []byte, off int64) {
	g := f.g
	o := &g.o
	f.lineno++
	if f.outleft <= 0 {
		if f.pending > 0 && !f.quiet {
			f.printLine(text, f.lineno, off, '-')
			f.pending--
		}
		if f.pending <= 0 {
			f.stop = true
		}
		return
	}
	selected := g.m.match(text) != o.invert
	if !selected {
		if f.pending > 0 && !f.quiet {
			f.printLine(text, f.lineno, off, '-')
			f.pending--
			return
		}
		if o.before > 0 && !f.quiet {
			if int64(len(f.before)) >= o.before {
				copy(f.before, f.before[1:])
				f.before = f.before[:len(f.before)-1]
			}
			f.before = append(f.before, grpCtxLine{f.lineno, off, append([]byte(nil), text...)})
		}
		return
	}
	f.nlines++
	if !f.quiet {
		first := f.lineno
		var ctx []grpCtxLine
		for _, c := range f.before {
			if c.no > f.lastOut && c.no >= f.lineno-o.before {
				ctx = append(ctx, c)
			}
		}
		if len(ctx) > 0 {
			first = ctx[0].no
		}
		if (o.before >= 0 || o.after >= 0) && g.used && (!f.anyOut || first != f.lastOut+1) && o.groupSep != nil {
			g.sgrStart(g.colors.se)
			g.out.WriteString(*o.groupSep)
			g.sgrEnd(g.colors.se)
			g.out.WriteByte('\n')
		}
		for _, c := range ctx {
			f.printLine(c.text, c.no, c.off, '-')
		}
		f.printLine(text, f.lineno, off, ':')
	}
	f.before = f.before[:0]
	if f.quiet {
		f.pending = 0
	} else {
		f.pending = max(0, o.after)
	}
	g.used = true
	f.outleft--
	if o.quiet {
		g.quit = true
		f.stop = true
		return
	}
	if f.doneOnM {
		f.stop = true
		return
	}
	if f.outleft <= 0 && f.pending <= 0 {
		f.stop = true
	}
}

// grpColors are GNU's GREP_COLORS capabilities.
type grpColors struct {
	ms, mc, sl, cx, fn, ln, bn, se string
	rv, ne                         bool
}

func grpParseColors(vars map[string]string) (grpColors, []string) {
	c := grpColors{ms: "01;31", mc: "01;31", fn: "35", ln: "32", bn: "32", se: "36"}
	var warns []string
	if v := vars["GREP_COLOR"]; v != "" {
		warns = append(warns, fmt.Sprintf("warning: GREP_COLOR='%s' is deprecated; use GREP_COLORS='mt=%s'", v, v))
		c.ms, c.mc = v, v
	}
	if v, ok := vars["GREP_COLORS"]; ok && v != "" {
		for _, item := range strings.Split(v, ":") {
			k, val, has := strings.Cut(item, "=")
			switch k {
			case "mt":
				if has {
					c.ms, c.mc = val, val
				}
			case "ms":
				c.ms = val
			case "mc":
				c.mc = val
			case "sl":
				c.sl = val
			case "cx":
				c.cx = val
			case "fn":
				c.fn = val
			case "ln":
				c.ln = val
			case "bn":
				c.bn = val
			case "se":
				c.se = val
			case "rv":
				c.rv = true
			case "ne":
				c.ne = true
			default:
				return c, warns
			}
		}
	}
	return c, warns
}

func (g *grpRun) sgrStart(cap string) {
	if g.color && cap != "" {
		g.out.WriteString("\x1b[" + cap + "m")
		if !g.colors.ne {
			g.out.WriteString("\x1b[K")
		}
	}
}

func (g *grpRun) sgrEnd(cap string) {
	if g.color && cap != "" {
		g.out.WriteString("\x1b[m")
		if !g.colors.ne {
			g.out.WriteString("\x1b[K")
		}
	}
}

func (g *grpRun) printFilename(name string) {
	g.sgrStart(g.colors.fn)
	g.out.WriteString(name)
	g.sgrEnd(g.colors.fn)
}

func (g *grpRun) printSep(sep byte) {
	g.sgrStart(g.colors.se)
	g.out.WriteByte(sep)
	g.sgrEnd(g.colors.se)
}

func (f *grpFile) printNum(n int64, cap string) {
	g := f.g
	g.sgrStart(cap)
	if g.o.initialTab {
		fmt.Fprintf(g.out, "%*d", f.width, n)
	} else {
		g.out.WriteString(strconv.FormatInt(n, 10))
	}
	g.sgrEnd(cap)
}

func (f *grpFile) head(no, off int64, sep byte) {
	g := f.g
	o := &g.o
	if g.outFile > 0 {
		g.printFilename(f.name)
		if o.nullName {
			g.out.WriteByte(0)
		} else {
			g.printSep(sep)
		}
	}
	if o.lineNumber {
		f.printNum(no, g.colors.ln)
		g.printSep(sep)
	}
	if o.byteOffset {
		f.printNum(off, g.colors.bn)
		g.printSep(sep)
	}
}

// printLine outputs a selected (':') or context ('-') line.
func (f *grpFile) printLine(text []byte, no, off int64, sep byte) {
	g := f.g
	o := &g.o
	checkEnc := o.binaryFiles != "text"
	matching := (sep == ':') != o.invert
	if !o.only && checkEnc && !utf8.Valid(text) {
		f.encErr = true
		if sep == '-' && f.pending > 0 {
			// GNU retries the same line until the trailing context
			// is used up.
			f.pending = 1
		}
		return
	}
	tab := func(n int) {
		if o.initialTab && (g.outFile > 0 || o.lineNumber || o.byteOffset) && n != 0 {
			g.out.WriteByte('\t')
		}
	}
	if !o.only {
		f.head(no, off, sep)
		tab(len(text))
	}
	lineColor, matchColor := "", ""
	if g.color {
		if (sep == ':') != (o.invert && g.colors.rv) {
			lineColor = g.colors.sl
		} else {
			lineColor = g.colors.cx
		}
		if sep == ':' {
			matchColor = g.colors.ms
		} else {
			matchColor = g.colors.mc
		}
	}
	rest := text
	if (o.only && matching) || (g.color && (lineColor != "" || matchColor != "")) {
		if matching && (o.only || matchColor != "") {
			cur := 0
			for pos := 0; pos <= len(text); {
				s, e, ok := g.m.find(text, pos)
				if !ok {
					break
				}
				if e == s {
					if s >= len(text) {
						break
					}
					_, w := utf8.DecodeRune(text[s:])
					pos = s + w
					continue
				}
				if o.only {
					if checkEnc && !utf8.Valid(text[s:e]) {
						f.encErr = true
						pos = e
						continue
					}
					osep := byte(':')
					if o.invert {
						osep = '-'
					}
					f.head(no, off+int64(s), osep)
					tab(e - s)
				} else {
					g.sgrStart(lineColor)
					g.out.Write(text[cur:s])
				}
				g.sgrStart(matchColor)
				g.out.Write(text[s:e])
				g.sgrEnd(matchColor)
				if o.only {
					g.out.WriteByte(g.eol)
				}
				cur = e
				pos = e
			}
			if o.only {
				rest = nil
			} else {
				rest = text[cur:]
			}
		}
		if !o.only && lineColor != "" {
			tail := rest
			if len(tail) > 0 && tail[len(tail)-1] == '\r' {
				tail = tail[:len(tail)-1]
			}
			if len(tail) > 0 {
				g.sgrStart(lineColor)
				g.out.Write(tail)
				g.sgrEnd(lineColor)
				rest = rest[len(tail):]
			}
		}
	}
	if !o.only {
		g.out.Write(rest)
		g.out.WriteByte(g.eol)
	}
	f.lastOut = no
	f.anyOut = true
}

const grpVersion = `grep (GNU grep) 3.8
Copyright (C) 2022 Free Software Foundation, Inc.
License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.

Written by Mike Haertel and others; see
<https://git.sv.gnu.org/cgit/grep.git/tree/AUTHORS>.
`

const grpHelp = `Usage: grep [OPTION]... PATTERNS [FILE]...
Search for PATTERNS in each FILE.
Example: grep -i 'hello world' menu.h main.c
PATTERNS can contain multiple patterns separated by newlines.

Pattern selection and interpretation:
  -E, --extended-regexp     PATTERNS are extended regular expressions
  -F, --fixed-strings       PATTERNS are strings
  -G, --basic-regexp        PATTERNS are basic regular expressions
  -P, --perl-regexp         PATTERNS are Perl regular expressions
  -e, --regexp=PATTERNS     use PATTERNS for matching
  -f, --file=FILE           take PATTERNS from FILE
  -i, --ignore-case         ignore case distinctions in patterns and data
      --no-ignore-case      do not ignore case distinctions (default)
  -w, --word-regexp         match only whole words
  -x, --line-regexp         match only whole lines
  -z, --null-data           a data line ends in 0 byte, not newline

Miscellaneous:
  -s, --no-messages         suppress error messages
  -v, --invert-match        select non-matching lines
  -V, --version             display version information and exit
      --help                display this help text and exit

Output control:
  -m, --max-count=NUM       stop after NUM selected lines
  -b, --byte-offset         print the byte offset with output lines
  -n, --line-number         print line number with output lines
      --line-buffered       flush output on every line
  -H, --with-filename       print file name with output lines
  -h, --no-filename         suppress the file name prefix on output
      --label=LABEL         use LABEL as the standard input file name prefix
  -o, --only-matching       show only nonempty parts of lines that match
  -q, --quiet, --silent     suppress all normal output
      --binary-files=TYPE   assume that binary files are TYPE;
                            TYPE is 'binary', 'text', or 'without-match'
  -a, --text                equivalent to --binary-files=text
  -I                        equivalent to --binary-files=without-match
  -d, --directories=ACTION  how to handle directories;
                            ACTION is 'read', 'recurse', or 'skip'
  -D, --devices=ACTION      how to handle devices, FIFOs and sockets;
                            ACTION is 'read' or 'skip'
  -r, --recursive           like --directories=recurse
  -R, --dereference-recursive  likewise, but follow all symlinks
      --include=GLOB        search only files that match GLOB (a file pattern)
      --exclude=GLOB        skip files that match GLOB
      --exclude-from=FILE   skip files that match any file pattern from FILE
      --exclude-dir=GLOB    skip directories that match GLOB
  -L, --files-without-match  print only names of FILEs with no selected lines
  -l, --files-with-matches  print only names of FILEs with selected lines
  -c, --count               print only a count of selected lines per FILE
  -T, --initial-tab         make tabs line up (if needed)
  -Z, --null                print 0 byte after FILE name

Context control:
  -B, --before-context=NUM  print NUM lines of leading context
  -A, --after-context=NUM   print NUM lines of trailing context
  -C, --context=NUM         print NUM lines of output context
  -NUM                      same as --context=NUM
      --group-separator=SEP  print SEP on line between matches with context
      --no-group-separator  do not print separator for matches with context
      --color[=WHEN],
      --colour[=WHEN]       use markers to highlight the matching strings;
                            WHEN is 'always', 'never', or 'auto'
  -U, --binary              do not strip CR characters at EOL (MSDOS/Windows)

When FILE is '-', read standard input.  With no FILE, read '.' if
recursive, '-' otherwise.  With fewer than two FILEs, assume -h.
Exit status is 0 if any line is selected, 1 otherwise;
if any error occurs and -q is not given, the exit status is 2.

Report bugs to: bug-grep@gnu.org
GNU grep home page: <https://www.gnu.org/software/grep/>
General help using GNU software: <https://www.gnu.org/gethelp/>
`
