package coreutils

// jq: the JSON processor, as jq 1.6 behaves, on top of gojq.
//
// gojq evaluates the filters. Around it this file provides what the jq
// command line does and gojq's library does not, the way jq 1.6 does it:
// the option parser, the input reader (jq's own JSON parser, its error
// messages and its "(at file:line)" positions), the printer (jq's number
// and string formatting, indentation, -S, -a, -r, -j, --seq), the exit
// statuses, jq's wording for runtime and compile errors, and the
// preservation of object key order (gojq's objects are Go maps).
//
// Key order: objects read from the input, built by an object construction
// with constant keys, or made by from_entries, + or * remember their key
// order (by map identity, when it differs from the order guessed below).
// Other objects (set key by key: .[$k] = v, setpath, del ...) are ordered
// by the construction in the filter whose key set they match, else by
// the order in which their keys were first seen in the input or the
// filter. .[], keys_unsorted, to_entries, with_entries, map, add, paths,
// tostream, .., tojson and tostring follow that order.
//
// Files, stdin, $ENV, input_filename, now and local time come from the
// Env only; modules load through e.FS.

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/itchyny/gojq"
	"github.com/itchyny/timefmt-go"
)

func init() { register("jq", jqMain) }

// ---------------------------------------------------------------------
// Command line

const jqVersion = "1.6"

const jqDieText = "Use jq --help for help with command-line options,\nor see the jq manpage, or online docs  at https://stedolan.github.io/jq\n"

// jqExit is a status to return at once, its message already printed.
type jqExit struct{ code int }

func (x *jqExit) Error() string { return "exit " + strconv.Itoa(x.code) }

type jqNamed struct {
	name  string
	value any
}

type jqOpts struct {
	slurp, rawIn, nullIn, rawOut, rawNoLF, ascii, sortKeys bool
	fromFile, exitStatus, seq, stream                      bool
	pretty, tab                                            bool
	indent                                                 int
	program                                                string
	hasProgram                                             bool
	files                                                  []string
	named                                                  []jqNamed
	positional                                             []any
	libPaths                                               []string
}

func (r *jqRun) die() error {
	io.WriteString(r.stderr, jqDieText)
	return &jqExit{2}
}

func (r *jqRun) usage(code int, short bool) error {
	w := r.stderr
	if code == 0 {
		w = r.stdout
	}
	fmt.Fprintf(w, "jq - commandline JSON processor [version %s]\n\nUsage:\tjq [options] <jq filter> [file...]\n\tjq [options] --args <jq filter> [strings...]\n\tjq [options] --jsonargs <jq filter> [JSON_TEXTS...]\n\n"+
		"jq is a tool for processing JSON inputs, applying the given filter to\nits JSON text inputs and producing the filter's results as JSON on\nstandard output.\n\n"+
		"The simplest filter is ., which copies jq's input to its output\nunmodified (except for formatting, but note that IEEE754 is used\nfor number representation internally, with all that that implies).\n\n"+
		"For more advanced filters see the jq(1) manpage (\"man jq\")\nand/or https://stedolan.github.io/jq\n\n"+
		"Example:\n\n\t$ echo '{\"foo\": 0}' | jq .\n\t{\n\t\t\"foo\": 0\n\t}\n\n", jqVersion)
	if short {
		fmt.Fprintf(w, "For a listing of options, use jq --help.\n")
	} else {
		io.WriteString(w, "Some of the options include:\n"+
			"  -c               compact instead of pretty-printed output;\n"+
			"  -n               use `null` as the single input value;\n"+
			"  -e               set the exit status code based on the output;\n"+
			"  -s               read (slurp) all inputs into an array; apply filter to it;\n"+
			"  -r               output raw strings, not JSON texts;\n"+
			"  -R               read raw strings, not JSON texts;\n"+
			"  -C               colorize JSON;\n"+
			"  -M               monochrome (don't colorize JSON);\n"+
			"  -S               sort keys of objects on output;\n"+
			"  --tab            use tabs for indentation;\n"+
			"  --arg a v        set variable $a to value <v>;\n"+
			"  --argjson a v    set variable $a to JSON value <v>;\n"+
			"  --slurpfile a f  set variable $a to an array of JSON texts read from <f>;\n"+
			"  --rawfile a f    set variable $a to a string consisting of the contents of <f>;\n"+
			"  --args           remaining arguments are string arguments, not files;\n"+
			"  --jsonargs       remaining arguments are JSON arguments, not files;\n"+
			"  --               terminates argument processing;\n\n"+
			"Named arguments are also available as $ARGS.named[], while\n"+
			"positional arguments are available as $ARGS.positional[].\n"+
			"\nSee the manpage for more options.\n")
	}
	return &jqExit{code}
}

// jqIsOption mirrors jq's isoption: long options match exactly, short
// ones anywhere in a bundle (counted in *short).
func jqIsOption(text string, short byte, long string, nshort *int) bool {
	if text == "" || text[0] != '-' || (len(text) > 1 && text[1] == '-') {
		*nshort = 0
	}
	if text == "" || text[0] != '-' {
		return false
	}
	if len(text) > 1 && text[1] == '-' {
		return text[2:] == long
	}
	if short == 0 {
		return false
	}
	if strings.IndexByte(text, short) >= 0 {
		*nshort++
		return true
	}
	return false
}

func jqIsOptish(text string) bool {
	if len(text) < 2 || text[0] != '-' {
		return false
	}
	c := text[1]
	return c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func (r *jqRun) parseArgs(args []string) error {
	o := &r.opts
	o.pretty, o.indent = true, 2
	strArgs, jsonArgs, argsDone := false, false, false
	hasNamed := func(n string) bool {
		for _, x := range o.named {
			if x.name == n {
				return true
			}
		}
		return false
	}
	addOperand := func(a string) error {
		switch {
		case strArgs:
			o.positional = append(o.positional, a)
		case jsonArgs:
			v, err := r.parseOneJSON(a)
			if err != nil {
				fmt.Fprintf(r.stderr, "jq: Invalid JSON text passed to --jsonargs\n")
				return r.die()
			}
			o.positional = append(o.positional, v)
		default:
			o.files = append(o.files, a)
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		text := args[i]
		ns := 0
		if argsDone {
			if err := addOperand(text); err != nil {
				return err
			}
			continue
		}
		if text == "--" {
			if !o.hasProgram {
				return r.usage(2, true)
			}
			argsDone = true
			continue
		}
		if !jqIsOptish(text) {
			if o.hasProgram {
				if err := addOperand(text); err != nil {
					return err
				}
			} else {
				o.program, o.hasProgram = text, true
			}
			continue
		}
		if text[1] == 'L' {
			if len(text) > 2 {
				o.libPaths = append(o.libPaths, text[2:])
			} else if i >= len(args)-1 {
				fmt.Fprintf(r.stderr, "-L takes a parameter: (e.g. -L /search/path or -L/search/path)\n")
				return r.die()
			} else {
				o.libPaths = append(o.libPaths, args[i+1])
				i++
			}
			continue
		}
		flag := func(short byte, long string, set func()) bool {
			if jqIsOption(text, short, long, &ns) {
				set()
				return ns == 0
			}
			return false
		}
		if flag('s', "slurp", func() { o.slurp = true }) ||
			flag('r', "raw-output", func() { o.rawOut = true }) ||
			flag('c', "compact-output", func() { o.pretty, o.tab, o.indent = false, false, 0 }) ||
			flag('C', "color-output", func() {}) ||
			flag('M', "monochrome-output", func() {}) ||
			flag('a', "ascii-output", func() { o.ascii = true }) {
			continue
		}
		if jqIsOption(text, 0, "unbuffered", &ns) {
			continue
		}
		if flag('S', "sort-keys", func() { o.sortKeys = true }) ||
			flag('R', "raw-input", func() { o.rawIn = true }) ||
			flag('n', "null-input", func() { o.nullIn = true }) ||
			flag('f', "from-file", func() { o.fromFile = true }) ||
			flag('j', "join-output", func() { o.rawOut, o.rawNoLF = true, true }) {
			continue
		}
		if jqIsOption(text, 0, "tab", &ns) {
			o.indent, o.tab, o.pretty = 0, true, true
			continue
		}
		if jqIsOption(text, 0, "indent", &ns) {
			if i >= len(args)-1 {
				fmt.Fprintf(r.stderr, "jq: --indent takes one parameter\n")
				return r.die()
			}
			o.tab, o.indent, o.pretty = false, 0, false
			n := jqAtoi(args[i+1])
			if n < -1 || n > 7 {
				fmt.Fprintf(r.stderr, "jq: --indent takes a number between -1 and 7\n")
				return r.die()
			}
			switch {
			case n == -1:
				o.tab, o.pretty = true, true
			case n > 0:
				o.indent, o.pretty = n, true
			}
			i++
			continue
		}
		if jqIsOption(text, 0, "seq", &ns) {
			o.seq = true
			continue
		}
		if jqIsOption(text, 0, "stream", &ns) {
			o.stream = true
			continue
		}
		if jqIsOption(text, 0, "stream-errors", &ns) {
			continue
		}
		if flag('e', "exit-status", func() { o.exitStatus = true }) {
			continue
		}
		if jqIsOption(text, 0, "args", &ns) {
			strArgs, jsonArgs = true, false
			continue
		}
		if jqIsOption(text, 0, "jsonargs", &ns) {
			strArgs, jsonArgs = false, true
			continue
		}
		if jqIsOption(text, 0, "arg", &ns) {
			if i >= len(args)-2 {
				fmt.Fprintf(r.stderr, "jq: --arg takes two parameters (e.g. --arg varname value)\n")
				return r.die()
			}
			if !hasNamed(args[i+1]) {
				o.named = append(o.named, jqNamed{args[i+1], args[i+2]})
			}
			i += 2
			continue
		}
		if jqIsOption(text, 0, "argjson", &ns) {
			if i >= len(args)-2 {
				fmt.Fprintf(r.stderr, "jq: --argjson takes two parameters (e.g. --argjson varname text)\n")
				return r.die()
			}
			if !hasNamed(args[i+1]) {
				v, err := r.parseOneJSON(args[i+2])
				if err != nil {
					fmt.Fprintf(r.stderr, "jq: invalid JSON text passed to --argjson\n")
					return r.die()
				}
				o.named = append(o.named, jqNamed{args[i+1], v})
			}
			i += 2
			continue
		}
		if which := text; which == "--argfile" || which == "--rawfile" || which == "--slurpfile" {
			which = which[2:]
			if i >= len(args)-2 {
				fmt.Fprintf(r.stderr, "jq: --%s takes two parameters (e.g. --%s varname filename)\n", which, which)
				return r.die()
			}
			if !hasNamed(args[i+1]) {
				data, err := r.loadFile(args[i+2], which == "rawfile")
				if err != nil {
					fmt.Fprintf(r.stderr, "jq: Bad JSON in --%s %s %s: %s\n", which, args[i+1], args[i+2], err.Error())
					return &jqExit{2}
				}
				if a, ok := data.([]any); ok && which == "argfile" && len(a) == 1 {
					data = a[0]
				}
				o.named = append(o.named, jqNamed{args[i+1], data})
			}
			i += 2
			continue
		}
		if jqIsOption(text, 0, "debug-dump-disasm", &ns) || jqIsOption(text, 0, "debug-trace", &ns) {
			continue
		}
		if jqIsOption(text, 0, "debug-trace=all", &ns) {
			if ns == 0 {
				continue
			}
		}
		if jqIsOption(text, 'h', "help", &ns) {
			return r.usage(0, false)
		}
		if jqIsOption(text, 'V', "version", &ns) {
			fmt.Fprintf(r.stdout, "jq-%s\n", jqVersion)
			return &jqExit{0}
		}
		if len(text) != ns+1 {
			fmt.Fprintf(r.stderr, "jq: Unknown option %s\n", text)
			return r.die()
		}
	}
	return nil
}

// jqAtoi is C's atoi: leading blanks, a sign, digits; junk gives 0.
func jqAtoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	n := 0
	for i := 0; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<30 {
			break
		}
	}
	if neg {
		return -n
	}
	return n
}

// ---------------------------------------------------------------------
// The run

type jqRun struct {
	ctx       context.Context
	e         *Env
	opts      jqOpts
	stdout    *bufio.Writer
	stderr    io.Writer
	order     *jqOrder
	in        *jqInput
	enc       *jqEnc // main output
	cenc      *jqEnc // compact, unsorted: tojson, errors, debug
	progDir   string
	varValues []any
	werr      error // the first failed write to stdout
}

// jqStderr flushes stdout before each write to stderr, so that the two
// keep their order when they share a destination.
type jqStderr struct{ r *jqRun }

func (w jqStderr) Write(p []byte) (int, error) {
	w.r.stdout.Flush()
	return w.r.e.Stderr.Write(p)
}

func jqMain(ctx context.Context, e *Env, args []string) int {
	r := &jqRun{ctx: ctx, e: e, order: jqNewOrder()}
	r.stdout = bufio.NewWriterSize(e.Stdout, 32<<10)
	r.stderr = jqStderr{r}
	code, err := r.main(args[1:])
	if x, ok := err.(*jqExit); ok {
		code = x.code
	}
	if ferr := r.stdout.Flush(); ferr != nil && r.werr == nil {
		r.werr = ferr
	}
	if r.werr != nil {
		if errors.Is(r.werr, syscall.EPIPE) || errors.Is(r.werr, io.ErrClosedPipe) {
			return 141
		}
		fmt.Fprintf(e.Stderr, "jq: error: writing output failed: %s\n", errText(r.werr))
		return 2
	}
	return code
}

// out writes to stdout, remembering the first failure.
func (r *jqRun) out(s string) {
	if _, err := r.stdout.WriteString(s); err != nil && r.werr == nil {
		r.werr = err
	}
}

func (r *jqRun) main(args []string) (int, error) {
	if err := r.parseArgs(args); err != nil {
		return 2, err
	}
	o := &r.opts
	if !o.hasProgram {
		o.program = "."
	}
	r.enc = &jqEnc{o: r.order, pretty: o.pretty, tab: o.tab, indent: o.indent, ascii: o.ascii, sortKeys: o.sortKeys}
	r.cenc = &jqEnc{o: r.order}
	r.progDir = r.e.Dir
	src := o.program
	if o.fromFile {
		data, err := r.loadFile(o.program, true)
		if err != nil {
			fmt.Fprintf(r.stderr, "jq: %s\n", err.Error())
			return 2, nil
		}
		src = jqSkipShebang(data.(string))
		r.progDir = path.Dir(r.e.Abs(o.program))
	}
	r.in = &jqInput{r: r, files: o.files, raw: o.rawIn, slurp: o.slurp}
	if len(r.in.files) == 0 {
		r.in.files = []string{"-"}
	}
	code, err := r.compile(src)
	if err != nil {
		r.printCompileError(src, err)
		return 3, nil
	}
	return r.process(code), nil
}

func jqSkipShebang(p string) string {
	if !strings.HasPrefix(p, "#!") {
		return p
	}
	n := strings.IndexByte(p, '\n')
	if n < 0 || n+1 >= len(p) || p[n+1] != '#' {
		return p
	}
	m := strings.IndexByte(p[n+1:], '\n')
	if m < 0 {
		return p
	}
	n += 1 + m
	if n+1 >= len(p) || p[n+1] == '#' || p[n-1] != '\\' || (n >= 2 && p[n-2] == '\\') {
		return p
	}
	m = strings.IndexByte(p[n+1:], '\n')
	if m < 0 {
		return p
	}
	return p[n+1+m+1:]
}

// loadFile reads a file through the FS: its raw text, or the array of
// the JSON values in it (jq's jv_load_file).
func (r *jqRun) loadFile(name string, raw bool) (any, error) {
	rc, err := r.e.FS.Open(r.ctx, r.e.Abs(name))
	if err != nil {
		return nil, fmt.Errorf("Could not open %s: %s", name, errText(err))
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("Could not open %s: %s", name, errText(err))
	}
	if raw {
		return jqValidUTF8(string(data)), nil
	}
	p := jqNewParser(r.order, false)
	vals := []any{}
	if err := p.feedAll(data, func(v any) { vals = append(vals, v) }); err != nil {
		return nil, err
	}
	return vals, nil
}

// parseOneJSON parses a text holding exactly one JSON value.
func (r *jqRun) parseOneJSON(s string) (any, error) {
	p := jqNewParser(r.order, false)
	var vals []any
	if err := p.feedAll([]byte(s), func(v any) { vals = append(vals, v) }); err != nil {
		return nil, fmt.Errorf("%s (while parsing '%s')", err.Error(), s)
	}
	switch len(vals) {
	case 0:
		return nil, fmt.Errorf("Expected JSON value (while parsing '%s')", s)
	case 1:
		return vals[0], nil
	}
	return nil, fmt.Errorf("Unexpected extra JSON values (while parsing '%s')", s)
}

// ---------------------------------------------------------------------
// Compiling

type jqCompileError struct {
	msg    string
	offset int // into the program text; -1 if unknown
	plain  bool
}

func (e *jqCompileError) Error() string { return e.msg }

func (r *jqRun) compile(src string) (*gojq.Code, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, jqParseErrorOf(src, err)
	}
	rw := &jqRewriter{order: r.order}
	rw.locLines = jqLocLines(src)
	rw.query(q)
	var names []string
	var values []any
	named := make(map[string]any, len(r.opts.named))
	namedKeys := make([]string, 0, len(r.opts.named))
	for _, n := range r.opts.named {
		named[n.name] = n.value
		namedKeys = append(namedKeys, n.name)
		if jqIdentRe.MatchString(n.name) {
			names = append(names, "$"+n.name)
			values = append(values, n.value)
		}
	}
	r.order.track(named, namedKeys)
	positional := r.opts.positional
	if positional == nil {
		positional = []any{}
	}
	argsObj := map[string]any{"positional": positional, "named": named}
	r.order.track(argsObj, []string{"positional", "named"})
	names = append(names, "$ARGS")
	values = append(values, argsObj)
	r.varValues = values

	opts := []gojq.CompilerOption{
		gojq.WithModuleLoader(&jqLoader{r: r}),
		gojq.WithEnvironLoader(func() []string {
			keys := make([]string, 0, len(r.e.Vars))
			for k := range r.e.Vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			env := make([]string, 0, len(keys))
			for _, k := range keys {
				env = append(env, k+"="+r.e.Vars[k])
			}
			return env
		}),
		gojq.WithVariables(names),
	}
	opts = append(opts, r.functions()...)
	code, err := gojq.Compile(q, opts...)
	if err != nil {
		return nil, err
	}
	return code, nil
}

var jqIdentRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jqInitSource replaces gojq builtins whose behaviour differs from jq's
// (key order, number formatting, error wording) by ones over the
// functions of r.functions.
const jqInitSource = `
def _jq_each: if type == "object" then _jq_keys_unsorted[] as $k | .[$k] else .[] end;
def keys_unsorted: _jq_keys_unsorted;
def to_entries: [_jq_keys_unsorted[] as $k | {key: $k, value: .[$k]}];
def from_entries: _jq_from_entries;
def with_entries(f): to_entries | map(f) | from_entries;
def tojson: _jq_tojson;
def tostring: _jq_tostring;
def tonumber: _jq_tonumber;
def fromjson: _jq_fromjson;
def add: _jq_add;
def add(f): reduce f as $x (null; _jq_plus(.; $x));
def map(f): [_jq_each | f];
def recurse: recurse(_jq_each?);
def paths: path(..) | select(. != []);
def paths(node_filter): . as $dot | paths | select(. as $p | $dot | getpath($p) | node_filter);
def leaf_paths: paths(scalars);
def tostream: path(def r: (_jq_each? | r), .; r) as $p | getpath($p) | reduce path(_jq_each?) as $q ([$p, .]; [$p + $q]);
def limit($n; f): if $n > 0 then label $out | foreach f as $item (0; . + 1; $item, if . >= $n then break $out else empty end) elif $n == 0 then empty else f end;
def join($x): reduce _jq_each as $i (null; (if . == null then "" else . + $x end) + ($i | if . == null then "" elif type == "boolean" or type == "number" then tojson else . end)) // "";
def _jq_native_ltrimstr($x): ltrimstr($x);
def _jq_native_rtrimstr($x): rtrimstr($x);
def ltrimstr($x): if type == "string" and ($x | type) == "string" then _jq_native_ltrimstr($x) else . end;
def rtrimstr($x): if type == "string" and ($x | type) == "string" then _jq_native_rtrimstr($x) else . end;
def now: _jq_now;
def localtime: _jq_localtime;
def strflocaltime($f): _jq_strflocaltime($f);
def input_line_number: _jq_input_line_number;
def input: _jq_input;
def inputs: try repeat(_jq_input) catch if . == "No more inputs" then empty else error end;
def _tohtml: _jq_format("html");
def _touri: _jq_format("uri");
def _tocsv: _jq_format("csv");
def _totsv: _jq_format("tsv");
def _tosh: _jq_format("sh");
def _tobase64: _jq_format("base64");
def _tobase64d: _jq_format("base64d");
def format($f): _jq_format($f);
`

// ---------------------------------------------------------------------
// Custom functions

// jqError is an error raised by this file's functions, with jq's words;
// try/catch sees the message.
type jqError struct{ msg string }

func (e *jqError) Error() string { return e.msg }
func (e *jqError) Value() any    { return e.msg }

func jqErrorf(format string, args ...any) error { return &jqError{fmt.Sprintf(format, args...)} }

func (r *jqRun) functions() []gojq.CompilerOption {
	f := gojq.WithFunction
	return []gojq.CompilerOption{
		f("_jq_keys_unsorted", 0, 0, func(v any, _ []any) any {
			m, ok := v.(map[string]any)
			if !ok {
				switch v := v.(type) {
				case []any:
					out := make([]any, len(v))
					for i := range v {
						out[i] = i
					}
					return out
				}
				return jqErrorf("%s has no keys", r.typeErr(v))
			}
			keys := r.order.keys(m)
			out := make([]any, len(keys))
			for i, k := range keys {
				out[i] = k
			}
			return out
		}),
		f("_jq_from_entries", 0, 0, func(v any, _ []any) any {
			a, ok := v.([]any)
			if !ok {
				if m, ok := v.(map[string]any); ok {
					a = make([]any, 0, len(m))
					for _, k := range r.order.keys(m) {
						a = append(a, m[k])
					}
				} else {
					return jqErrorf("Cannot iterate over %s", r.typeErr(v))
				}
			}
			out := make(map[string]any, len(a))
			keys := make([]string, 0, len(a))
			for _, x := range a {
				e, ok := x.(map[string]any)
				if !ok {
					if x == nil {
						e = map[string]any{}
					} else {
						return jqErrorf("Cannot index %s with string \"key\"", jqTypeName(x))
					}
				}
				// jq 1.7: .key, else .k // .name // .Name // .K // .Key
				k := e["key"]
				if k == nil {
					k = e["Key"]
					for _, name := range []string{"k", "name", "Name", "K"} {
						if kv := e[name]; kv != nil && kv != false {
							k = kv
							break
						}
					}
				}
				ks, ok := k.(string)
				if !ok {
					ks = r.cenc.encode(k)
				}
				var val any
				if vv, ok := e["value"]; ok {
					val = vv
				} else if vv, ok := e["v"]; ok {
					val = vv
				} else {
					val = e["Value"]
				}
				if _, dup := out[ks]; !dup {
					keys = append(keys, ks)
				}
				out[ks] = val
			}
			r.order.track(out, keys)
			return out
		}),
		f("_jq_ord", 1, 1, func(v any, a []any) any {
			if m, ok := v.(map[string]any); ok {
				if n, ok := a[0].(int); ok {
					r.order.ord(m, n)
				}
			}
			return v
		}),
		f("_jq_add", 0, 0, func(v any, _ []any) any {
			var items []any
			switch x := v.(type) {
			case nil:
				return nil
			case []any:
				items = x
			case map[string]any:
				for _, k := range r.order.keys(x) {
					items = append(items, x[k])
				}
			default:
				return jqErrorf("Cannot iterate over %s", r.typeErr(v))
			}
			var acc any
			for _, x := range items {
				acc = r.plus(acc, x)
				if err, ok := acc.(error); ok {
					return err
				}
			}
			return acc
		}),
		f("_jq_plus", 2, 2, func(_ any, a []any) any { return r.plus(a[0], a[1]) }),
		f("_jq_times", 2, 2, func(_ any, a []any) any { return r.times(a[0], a[1]) }),
		f("_jq_tojson", 0, 0, func(v any, _ []any) any { return r.cenc.encode(v) }),
		f("_jq_tostring", 0, 0, func(v any, _ []any) any {
			if s, ok := v.(string); ok {
				return s
			}
			return r.cenc.encode(v)
		}),
		f("_jq_tonumber", 0, 0, func(v any, _ []any) any {
			if jqIsNumber(v) {
				return v
			}
			if s, ok := v.(string); ok {
				x, err := r.parseOneJSON(s)
				if err != nil {
					return &jqError{err.Error()}
				}
				if jqIsNumber(x) {
					return x
				}
			}
			return jqErrorf("%s cannot be parsed as a number", r.typeErr(v))
		}),
		f("_jq_fromjson", 0, 0, func(v any, _ []any) any {
			s, ok := v.(string)
			if !ok {
				return jqErrorf("%s only strings can be parsed", r.typeErr(v))
			}
			x, err := r.parseOneJSON(s)
			if err != nil {
				return &jqError{err.Error()}
			}
			return x
		}),
		f("_jq_chk", 1, 1, func(v any, a []any) any {
			switch v.(type) {
			case map[string]any, nil:
				return v
			}
			return jqErrorf("Cannot index %s with string %s", jqTypeName(v), r.cenc.encode(a[0]))
		}),
		f("_jq_chkn", 0, 0, func(v any, _ []any) any {
			if _, ok := v.(string); ok {
				return jqErrorf("Cannot index string with number")
			}
			return v
		}),
		f("_jq_now", 0, 0, func(any, []any) any {
			t := time.Now()
			if r.e.Now != nil {
				t = r.e.Now()
			}
			return float64(t.UnixNano()) / 1e9
		}),
		f("_jq_localtime", 0, 0, func(v any, _ []any) any {
			x, ok := jqToFloat(v)
			if !ok {
				return jqErrorf("localtime() requires a number")
			}
			t := jqEpochTime(x).In(r.location())
			return []any{t.Year(), int(t.Month()) - 1, t.Day(), t.Hour(), t.Minute(),
				float64(t.Second()) + float64(t.Nanosecond())/1e9, int(t.Weekday()), t.YearDay() - 1}
		}),
		f("_jq_strflocaltime", 1, 1, func(v any, a []any) any {
			format, ok := a[0].(string)
			if !ok {
				return jqErrorf("strflocaltime/1 requires a string format")
			}
			loc := r.location()
			var t time.Time
			if x, ok := jqToFloat(v); ok {
				t = jqEpochTime(x).In(loc)
			} else if arr, ok := v.([]any); ok && len(arr) >= 6 {
				var n [8]int
				var sec float64
				for i := 0; i < len(arr) && i < 8; i++ {
					x, ok := jqToFloat(arr[i])
					if !ok {
						return jqErrorf("strflocaltime/1 requires parsed datetime inputs")
					}
					n[i] = int(math.Floor(x))
					if i == 5 {
						sec = x
					}
				}
				t = time.Date(n[0], time.Month(n[1]+1), n[2], n[3], n[4], int(math.Floor(sec)),
					int((sec-math.Floor(sec))*1e9), loc)
			} else {
				return jqErrorf("strflocaltime/1 requires parsed datetime inputs")
			}
			return timefmt.Format(t, format)
		}),
		f("_jq_input_line_number", 0, 0, func(any, []any) any { return r.in.line }),
		f("_jq_input", 0, 0, func(any, []any) any {
			v, err, ok := r.in.next()
			if err != nil {
				return &jqError{err.Error()}
			}
			if !ok {
				return &jqError{"No more inputs"}
			}
			return v
		}),
		f("_jq_format", 1, 1, func(v any, a []any) any {
			name, ok := a[0].(string)
			if !ok {
				return jqErrorf("%s is not a valid format", r.typeErr(a[0]))
			}
			return r.format(name, v)
		}),
		f("input_filename", 0, 0, func(any, []any) any {
			if r.in.haveName {
				return r.in.name
			}
			return nil
		}),
		f("debug", 0, 0, func(v any, _ []any) any {
			io.WriteString(r.stderr, "[\"DEBUG:\","+r.cenc.encode(v)+"]\n")
			return v
		}),
		f("stderr", 0, 0, func(v any, _ []any) any {
			io.WriteString(r.stderr, r.cenc.encode(v))
			return v
		}),
	}
}

// plus is jq's +.
func (r *jqRun) plus(l, rv any) any {
	if l == nil {
		return rv
	}
	if rv == nil {
		return l
	}
	switch x := l.(type) {
	case int:
		if y, ok := rv.(int); ok {
			if s := x + y; (s > x) == (y > 0) {
				return s
			}
		}
	case string:
		if y, ok := rv.(string); ok {
			return x + y
		}
	case []any:
		if y, ok := rv.([]any); ok {
			out := make([]any, 0, len(x)+len(y))
			return append(append(out, x...), y...)
		}
	case map[string]any:
		if y, ok := rv.(map[string]any); ok {
			return r.merge(x, y, false)
		}
	}
	if fx, ok := jqToFloat(l); ok {
		if fy, ok := jqToFloat(rv); ok {
			return fx + fy
		}
	}
	return jqErrorf("%s and %s cannot be added", r.typeErr(l), r.typeErr(rv))
}

// times is jq's *.
func (r *jqRun) times(l, rv any) any {
	if x, ok := l.(int); ok {
		if y, ok := rv.(int); ok {
			if x == 0 || y == 0 {
				return 0
			}
			if p := x * y; p/y == x && !(x == -1 && y == math.MinInt) && !(y == -1 && x == math.MinInt) {
				return p
			}
		}
	}
	if fx, ok := jqToFloat(l); ok {
		if fy, ok := jqToFloat(rv); ok {
			return fx * fy
		}
	}
	str, sok := l.(string)
	num, nok := jqToFloat(rv)
	if !sok {
		str, sok = rv.(string)
		num, nok = jqToFloat(l)
	}
	if sok && nok {
		// jq 1.6: the string, then num-1 more copies (truncated); null
		// when that count is negative.
		n := num - 1
		if n < 0 && n > -1 {
			n = 0
		}
		if n < 0 || math.IsNaN(n) {
			return nil
		}
		if float64(len(str))*(n+1) > 1<<30 {
			return jqErrorf("Repeat string result too long")
		}
		return strings.Repeat(str, int(n)+1)
	}
	if x, ok := l.(map[string]any); ok {
		if y, ok := rv.(map[string]any); ok {
			return r.merge(x, y, true)
		}
	}
	return jqErrorf("%s and %s cannot be multiplied", r.typeErr(l), r.typeErr(rv))
}

// merge is object + object (deep: object * object), keeping jq's key
// order: the left's keys, then the right's new ones.
func (r *jqRun) merge(x, y map[string]any, deep bool) map[string]any {
	out := make(map[string]any, len(x)+len(y))
	keys := append([]string(nil), r.order.keys(x)...)
	for k, v := range x {
		out[k] = v
	}
	for _, k := range r.order.keys(y) {
		v := y[k]
		old, had := out[k]
		if !had {
			keys = append(keys, k)
		}
		if deep && had {
			om, ok1 := old.(map[string]any)
			vm, ok2 := v.(map[string]any)
			if ok1 && ok2 {
				v = r.merge(om, vm, true)
			}
		}
		out[k] = v
	}
	r.order.track(out, keys)
	return out
}

func (r *jqRun) location() *time.Location {
	if tz := r.e.Vars["TZ"]; tz != "" {
		tz = strings.TrimPrefix(tz, ":")
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return time.UTC
}

func jqEpochTime(x float64) time.Time {
	i := math.Floor(x)
	return time.Unix(int64(i), int64((x-i)*1e9)).UTC()
}

// format implements jq's @name string formats.
func (r *jqRun) format(name string, v any) any {
	switch name {
	case "text":
		if s, ok := v.(string); ok {
			return s
		}
		return r.cenc.encode(v)
	case "json":
		return r.cenc.encode(v)
	case "html":
		s, ok := v.(string)
		if !ok {
			s = r.cenc.encode(v)
		}
		return strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;", "'", "&apos;", `"`, "&quot;").Replace(s)
	case "uri":
		s, ok := v.(string)
		if !ok {
			s = r.cenc.encode(v)
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	case "csv", "tsv":
		a, ok := v.([]any)
		if !ok {
			return jqErrorf("%s cannot be %s-formatted, only an array can be", r.typeErr(v), name)
		}
		var b strings.Builder
		for i, x := range a {
			if i > 0 {
				if name == "csv" {
					b.WriteByte(',')
				} else {
					b.WriteByte('\t')
				}
			}
			switch x := x.(type) {
			case nil:
			case bool:
				if x {
					b.WriteString("true")
				} else {
					b.WriteString("false")
				}
			case string:
				if name == "csv" {
					b.WriteByte('"')
					b.WriteString(strings.ReplaceAll(x, `"`, `""`))
					b.WriteByte('"')
				} else {
					b.WriteString(strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\r", `\r`, "\n", `\n`).Replace(x))
				}
			default:
				if jqIsNumber(x) {
					b.WriteString(r.cenc.encode(x))
				} else {
					return jqErrorf("%s is not valid in a csv row", r.typeErr(x))
				}
			}
		}
		return b.String()
	case "sh":
		items, ok := v.([]any)
		if !ok {
			items = []any{v}
		}
		var b strings.Builder
		for i, x := range items {
			if i > 0 {
				b.WriteByte(' ')
			}
			switch x := x.(type) {
			case string:
				b.WriteByte('\'')
				b.WriteString(strings.ReplaceAll(x, "'", `'\''`))
				b.WriteByte('\'')
			case []any, map[string]any:
				return jqErrorf("%s can not be escaped for shell", r.typeErr(x))
			default:
				b.WriteString(r.cenc.encode(x))
			}
		}
		return b.String()
	case "base64":
		s, ok := v.(string)
		if !ok {
			s = r.cenc.encode(v)
		}
		return base64.StdEncoding.EncodeToString([]byte(s))
	case "base64d":
		s, ok := v.(string)
		if !ok {
			s = r.cenc.encode(v)
		}
		// jq's decoder: stop at '=', decode partial groups, reject a
		// lone trailing character.
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		out := make([]byte, 0, len(s)*3/4)
		code, n := uint32(0), 0
		for i := 0; i < len(s) && s[i] != '='; i++ {
			d := strings.IndexByte(alphabet, s[i])
			if d < 0 {
				return jqErrorf("%s is not valid base64 data", r.typeErr(s))
			}
			code = code<<6 | uint32(d)
			if n++; n == 4 {
				out = append(out, byte(code>>16), byte(code>>8), byte(code))
				code, n = 0, 0
			}
		}
		switch n {
		case 3:
			out = append(out, byte(code>>10), byte(code>>2))
		case 2:
			out = append(out, byte(code>>4))
		case 1:
			return jqErrorf("%s trailing base64 byte found", r.typeErr(s))
		}
		return jqValidUTF8(string(out))
	}
	return jqErrorf("%s is not a valid format", name)
}

// ---------------------------------------------------------------------
// Processing inputs

func (r *jqRun) process(code *gojq.Code) int {
	o := &r.opts
	ret := 14 // no output yet
	r.order.transient()
	if o.nullIn {
		ret = r.runOne(code, nil)
	} else {
		for r.in.failures == 0 {
			if r.ctx.Err() != nil || r.werr != nil {
				break
			}
			v, err, ok := r.in.next()
			if pe, isPE := err.(*jqParseErr); isPE && !pe.fatal {
				fmt.Fprintf(r.stderr, "ignoring parse error: %s\n", err.Error())
				continue
			}
			if err != nil {
				fmt.Fprintf(r.stderr, "parse error: %s\n", err.Error())
				ret = 4
				break
			}
			if !ok {
				break
			}
			ret = r.runOne(code, v)
			r.order.transient()
		}
	}
	if r.in.failures != 0 {
		ret = 2
	}
	if r.ctx.Err() != nil && ret == 14 {
		ret = 0
	}
	if ret >= 10 {
		if o.exitStatus {
			return ret - 10
		}
		return 0
	}
	return ret
}

// runOne runs the filter on one input and returns jq's per-input status:
// 0 ok, 11 last output false or null, 14 no output, 5 error, or a halt
// code.
func (r *jqRun) runOne(code *gojq.Code, v any) int {
	ret := 14
	iter := code.RunWithContext(r.ctx, v, r.varValues...)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := x.(error); ok {
			var he *gojq.HaltError
			if errors.As(err, &he) {
				if v := he.Value(); v != nil {
					if s, ok := v.(string); ok {
						io.WriteString(r.stderr, s)
					} else {
						io.WriteString(r.stderr, r.cenc.encode(v)+"\n")
					}
				}
				return he.ExitCode()
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return 5
			}
			r.printError(err)
			return 5
		}
		if s, ok := x.(string); ok && r.opts.rawOut {
			if r.opts.ascii {
				r.out(r.enc.encode(s))
			} else {
				r.out(jqValidUTF8(s))
			}
			ret = 0
		} else {
			if x == nil || x == false {
				ret = 11
			} else {
				ret = 0
			}
			if r.opts.seq {
				r.out("\x1e")
			}
			r.out(r.enc.encode(x))
		}
		if !r.opts.rawNoLF {
			r.out("\n")
		}
		if r.werr != nil {
			return 2
		}
	}
	return ret
}

func (r *jqRun) printError(err error) {
	msg, val, isStr := r.errorText(err)
	pos := r.in.position()
	if isStr {
		fmt.Fprintf(r.stderr, "jq: error (at %s): %s\n", pos, msg)
	} else {
		fmt.Fprintf(r.stderr, "jq: error (at %s) (not a string): %s\n", pos, r.cenc.encode(val))
	}
}

// ---------------------------------------------------------------------
// Input

// jqInput reads the inputs as jq 1.6 does: the files one after another
// into one parser, by chunks of at most 4095 bytes ending at a newline,
// counting lines per file for error positions.
type jqInput struct {
	r         *jqRun
	files     []string
	fi        int
	raw       bool
	slurp     bool
	cur       *bufio.Reader
	closer    io.Closer
	eof       bool  // the current file hit its end
	curErr    error // a read error, reported on the next read
	name      string
	haveName  bool
	line      int
	failures  int
	parser    *jqParser
	chunk     []byte
	pos       int
	partial   bool
	slurped   []any
	slurpDone bool
	rawAcc    []byte
	pending   []any // --stream events of the last value
	finished  bool
}

type jqErrReader struct{ err error }

func (r jqErrReader) Read([]byte) (int, error) { return 0, r.err }

func (in *jqInput) position() string {
	if !in.haveName {
		return "<unknown>"
	}
	return in.name + ":" + strconv.Itoa(in.line)
}

// readMore reads the next chunk, moving to the next file as needed, and
// reports whether it was the last (jq_util_input_read_more).
func (in *jqInput) readMore() bool {
	r := in.r
	if in.cur == nil || in.eof || in.curErr != nil {
		if in.curErr != nil {
			fmt.Fprintf(r.stderr, "Input error: %s\n", errText(in.curErr))
		}
		if in.cur != nil {
			if in.closer != nil {
				in.closer.Close()
			}
			in.cur, in.closer = nil, nil
			in.haveName, in.line = false, 0
		}
		in.curErr, in.eof = nil, false
		if in.fi < len(in.files) {
			f := in.files[in.fi]
			in.fi++
			in.name, in.haveName = f, true
			if f == "-" {
				in.name = "<stdin>"
				var stdin io.Reader = strings.NewReader("")
				if r.e.Stdin != nil {
					stdin = r.e.Stdin
				}
				in.cur = bufio.NewReaderSize(stdin, 4095)
			} else {
				rc, err := r.e.FS.Open(r.ctx, r.e.Abs(f))
				switch {
				case err != nil && errors.Is(err, syscall.EISDIR):
					in.cur = bufio.NewReaderSize(jqErrReader{syscall.EISDIR}, 16)
				case err != nil:
					fmt.Fprintf(r.stderr, "jq: error: Could not open file %s: %s\n", f, errText(err))
					in.failures++
				default:
					in.cur, in.closer = bufio.NewReaderSize(rc, 4095), rc
				}
			}
			in.line = 0
		}
	}
	in.chunk, in.pos = in.chunk[:0], 0
	if in.cur != nil {
		b, err := in.cur.ReadSlice('\n')
		in.chunk = append(in.chunk, b...)
		switch err {
		case nil, bufio.ErrBufferFull:
		case io.EOF:
			in.eof = true
		default:
			in.curErr = err
			in.failures++
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			in.line++
		}
	}
	return in.fi >= len(in.files) && (in.cur == nil || in.eof || in.curErr != nil)
}

// next returns the next input value (ok false at the end), or a parse
// error.
func (in *jqInput) next() (any, error, bool) {
	if len(in.pending) > 0 {
		v := in.pending[0]
		in.pending = in.pending[1:]
		return v, nil, true
	}
	if in.finished {
		return nil, nil, false
	}
	var v any
	var err error
	var ok bool
	if in.raw {
		v, ok = in.nextRaw()
	} else {
		v, err, ok = in.nextJSON()
	}
	if pe, isPE := err.(*jqParseErr); isPE && !pe.fatal {
		return nil, err, false
	}
	if err != nil || !ok {
		in.finished = true
		return v, err, ok
	}
	if in.r.opts.stream && !in.raw && !in.slurp {
		in.pending = jqStreamEvents(v, in.r.order)
		v = in.pending[0]
		in.pending = in.pending[1:]
	}
	return v, nil, true
}

func (in *jqInput) nextJSON() (any, error, bool) {
	if in.parser == nil {
		in.parser = jqNewParser(in.r.order, in.r.opts.seq)
	}
	if in.slurp && !in.slurpDone && in.slurped == nil {
		in.slurped = []any{}
	}
	isLast := false
	for n := 0; ; n++ {
		if n&63 == 63 && in.r.ctx.Err() != nil {
			return nil, nil, false
		}
		if in.pos >= len(in.chunk) {
			isLast = in.readMore()
			in.partial = !isLast
		}
		v, err, ok := in.parser.next(in.chunk, &in.pos, in.partial)
		if err != nil {
			return nil, err, false
		}
		if ok {
			if in.slurped == nil {
				return v, nil, true
			}
			in.slurped = append(in.slurped, v)
		}
		if isLast && in.pos >= len(in.chunk) {
			break
		}
	}
	if in.slurped != nil {
		v := in.slurped
		in.slurped, in.slurpDone = nil, true
		if in.r.opts.stream {
			var evs []any
			for _, x := range v {
				evs = append(evs, jqStreamEvents(x, in.r.order)...)
			}
			if evs == nil {
				evs = []any{}
			}
			return evs, nil, true
		}
		return v, nil, true
	}
	return nil, nil, false
}

func (in *jqInput) nextRaw() (any, bool) {
	var acc []byte
	have := false
	for n := 0; ; n++ {
		if n&63 == 63 && in.r.ctx.Err() != nil {
			return nil, false
		}
		isLast := in.readMore()
		if len(in.chunk) > 0 {
			if in.slurp {
				in.rawAcc = append(in.rawAcc, in.chunk...)
			} else {
				have = true
				if in.chunk[len(in.chunk)-1] == '\n' {
					acc = append(acc, in.chunk[:len(in.chunk)-1]...)
					return jqValidUTF8(string(acc)), true
				}
				acc = append(acc, in.chunk...)
			}
		}
		if isLast {
			break
		}
	}
	if in.slurp {
		if in.slurpDone {
			return nil, false
		}
		in.slurpDone = true
		s := jqValidUTF8(string(in.rawAcc))
		in.rawAcc = nil
		return s, true
	}
	if have {
		return jqValidUTF8(string(acc)), true
	}
	return nil, false
}

// jqStreamEvents is --stream: the [path, leaf] and [path] events of v.
func jqStreamEvents(v any, o *jqOrder) []any {
	var out []any
	var walk func(p []any, v any, top bool)
	cp := func(p []any) []any { return append([]any{}, p...) }
	walk = func(p []any, v any, top bool) {
		switch x := v.(type) {
		case []any:
			if len(x) == 0 {
				out = append(out, []any{cp(p), []any{}})
				return
			}
			for i, e := range x {
				walk(append(p, i), e, false)
			}
			out = append(out, []any{cp(append(p, len(x)-1))})
		case map[string]any:
			if len(x) == 0 {
				out = append(out, []any{cp(p), map[string]any{}})
				return
			}
			keys := o.keys(x)
			for _, k := range keys {
				walk(append(p, k), x[k], false)
			}
			out = append(out, []any{cp(append(p, keys[len(keys)-1]))})
		default:
			out = append(out, []any{cp(p), v})
		}
	}
	walk([]any{}, v, true)
	return out
}

// ---------------------------------------------------------------------
// JSON parser (jq 1.6's jv_parse, non-streaming)

type jqFrame struct {
	kind byte // '[', '{', 'k' (a key awaiting its value)
	arr  []any
	obj  map[string]any
	keys []string
	key  string
}

type jqParser struct {
	o      *jqOrder
	seq    bool
	stack  []jqFrame
	val    any
	hasVal bool
	tok    []byte
	st     int // 0 normal, 1 string, 2 string escape, 3 waiting for RS (--seq)
	line   int
	col    int
	bom    int
	atEOF  bool
	failed bool
	lastWS bool
}

func jqNewParser(o *jqOrder, seq bool) *jqParser {
	p := &jqParser{o: o, seq: seq, line: 1}
	if seq {
		p.st = 3
	}
	return p
}

// feedAll parses a whole text.
func (p *jqParser) feedAll(data []byte, emit func(any)) error {
	pos := 0
	for {
		v, err, ok := p.next(data, &pos, false)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		emit(v)
	}
}

func (p *jqParser) errorf(msg string) string {
	return fmt.Sprintf("%s at line %d, column %d", msg, p.line, p.col)
}

// next scans buf from *pos until a value is complete. partial says more
// input follows buf; without it the end of buf is the end of the input.
func (p *jqParser) next(buf []byte, pos *int, partial bool) (any, error, bool) {
	if p.failed || p.atEOF {
		return nil, nil, false
	}
	for *pos < len(buf) && p.bom < 3 {
		if buf[*pos] == "\xef\xbb\xbf"[p.bom] {
			*pos++
			p.bom++
		} else if p.bom == 0 {
			p.bom = 3
		} else {
			p.failed = true
			return nil, &jqParseErr{"Malformed BOM", true}, false
		}
	}
	for *pos < len(buf) {
		ch := buf[*pos]
		*pos++
		if p.st == 3 { // --seq: skipping to the next RS
			p.col++
			if ch == '\n' {
				p.line++
				p.col = 0
			}
			if ch == 0x1e {
				p.st = 0
			}
			continue
		}
		v, done, msg := p.scan(ch)
		if msg != "" {
			if p.seq {
				e := p.errorf(msg)
				if ch != 0x1e {
					e = fmt.Sprintf("%s (need RS to resync)", e)
				}
				p.reset()
				if ch != 0x1e {
					p.st = 3
				}
				return nil, &jqParseErr{e, false}, false
			}
			p.failed = true
			return nil, &jqParseErr{p.errorf(msg), true}, false
		}
		if done {
			return v, nil, true
		}
	}
	if partial {
		return nil, nil, false
	}
	// at EOF
	p.atEOF = true
	fatal := !p.seq
	at := fmt.Sprintf(" at EOF at line %d, column %d", p.line, p.col)
	if p.st == 3 {
		return nil, &jqParseErr{"Unfinished abandoned text" + at, false}, false
	}
	if p.st != 0 {
		p.failed = true
		return nil, &jqParseErr{"Unfinished string" + at, fatal}, false
	}
	if msg := p.checkLiteral(); msg != "" {
		p.failed = true
		return nil, &jqParseErr{msg + at, fatal}, false
	}
	if len(p.stack) != 0 {
		p.failed = true
		return nil, &jqParseErr{"Unfinished JSON term" + at, fatal}, false
	}
	if p.hasVal {
		v := p.val
		p.val, p.hasVal = nil, false
		if p.seq && !p.lastWS && jqIsNumber(v) {
			return nil, &jqParseErr{"Potentially truncated top-level numeric value" + at, false}, false
		}
		return v, nil, true
	}
	return nil, nil, false
}

// jqParseErr is a parse error of the input; with --seq it is not fatal.
type jqParseErr struct {
	msg   string
	fatal bool
}

func (e *jqParseErr) Error() string { return e.msg }

func (p *jqParser) reset() {
	p.stack, p.val, p.hasVal, p.tok, p.st = nil, nil, false, p.tok[:0], 0
}

// seqRS handles an RS character in --seq mode.
func (p *jqParser) seqRS() (any, bool, string) {
	topNum := len(p.stack) == 0 && p.hasVal && jqIsNumber(p.val)
	if !p.lastWS && (len(p.stack) > 0 || len(p.tok) > 0 || topNum) {
		if p.checkLiteral() == "" && len(p.stack) == 0 && p.hasVal && jqIsNumber(p.val) {
			return nil, false, "Potentially truncated top-level numeric value"
		}
		return nil, false, "Truncated value"
	}
	if msg := p.checkLiteral(); msg != "" {
		return nil, false, msg
	}
	if v, ok := p.checkDone(); ok {
		return v, true, ""
	}
	p.reset()
	return nil, false, ""
}

func (p *jqParser) scan(ch byte) (any, bool, string) {
	p.col++
	if ch == '\n' {
		p.line++
		p.col = 0
	}
	if p.seq && ch == 0x1e {
		return p.seqRS()
	}
	p.lastWS = false
	if p.st == 0 {
		var cls byte // 'l' literal, 'w' white, 's' structure, 'q' quote
		switch ch {
		case ' ', '\t', '\r', '\n':
			cls = 'w'
			p.lastWS = true
		case '"':
			cls = 'q'
		case '[', ',', ']', '{', ':', '}':
			cls = 's'
		default:
			cls = 'l'
		}
		var out any
		done := false
		if cls != 'l' {
			if msg := p.checkLiteral(); msg != "" {
				return nil, false, msg
			}
			if v, ok := p.checkDone(); ok {
				out, done = v, true
			}
		}
		switch cls {
		case 'l':
			p.tok = append(p.tok, ch)
		case 'q':
			p.st = 1
		case 's':
			if msg := p.token(ch); msg != "" {
				return nil, false, msg
			}
		}
		if v, ok := p.checkDone(); ok {
			out, done = v, true
		}
		return out, done, ""
	}
	if ch == '"' && p.st == 1 {
		if msg := p.foundString(); msg != "" {
			return nil, false, msg
		}
		p.st = 0
		v, ok := p.checkDone()
		return v, ok, ""
	}
	p.tok = append(p.tok, ch)
	if ch == '\\' && p.st == 1 {
		p.st = 2
	} else {
		p.st = 1
	}
	return nil, false, ""
}

func (p *jqParser) checkDone() (any, bool) {
	if len(p.stack) == 0 && p.hasVal {
		v := p.val
		p.val, p.hasVal = nil, false
		return v, true
	}
	return nil, false
}

func (p *jqParser) value(v any) string {
	if p.hasVal {
		return "Expected separator between values"
	}
	p.val, p.hasVal = v, true
	return ""
}

func (p *jqParser) token(ch byte) string {
	top := func() *jqFrame {
		if len(p.stack) == 0 {
			return nil
		}
		return &p.stack[len(p.stack)-1]
	}
	switch ch {
	case '[', '{':
		if len(p.stack) >= 10000 {
			return "Exceeds depth limit for parsing"
		}
		if p.hasVal {
			return "Expected separator between values"
		}
		if ch == '[' {
			p.stack = append(p.stack, jqFrame{kind: '[', arr: []any{}})
		} else {
			p.stack = append(p.stack, jqFrame{kind: '{', obj: map[string]any{}})
		}
	case ':':
		if !p.hasVal {
			return "Expected string key before ':'"
		}
		if t := top(); t == nil || t.kind != '{' {
			return "':' not as part of an object"
		}
		k, ok := p.val.(string)
		if !ok {
			return "Object keys must be strings"
		}
		p.o.see(k)
		p.stack = append(p.stack, jqFrame{kind: 'k', key: k})
		p.val, p.hasVal = nil, false
	case ',':
		if !p.hasVal {
			return "Expected value before ','"
		}
		t := top()
		if t == nil {
			return "',' not as part of an object or array"
		}
		switch t.kind {
		case '[':
			t.arr = append(t.arr, p.val)
			p.val, p.hasVal = nil, false
		case 'k':
			p.setKey()
		default:
			return "Objects must consist of key:value pairs"
		}
	case ']':
		t := top()
		if t == nil || t.kind != '[' {
			return "Unmatched ']'"
		}
		if p.hasVal {
			t.arr = append(t.arr, p.val)
		} else if len(t.arr) != 0 {
			return "Expected another array element"
		}
		p.val, p.hasVal = t.arr, true
		p.stack = p.stack[:len(p.stack)-1]
	case '}':
		t := top()
		if t == nil {
			return "Unmatched '}'"
		}
		if p.hasVal {
			if t.kind != 'k' {
				return "Objects must consist of key:value pairs"
			}
			p.setKey()
			t = top()
		} else {
			if t.kind != '{' {
				return "Unmatched '}'"
			}
			if len(t.obj) != 0 {
				return "Expected another key-value pair"
			}
		}
		p.o.track(t.obj, t.keys)
		p.val, p.hasVal = t.obj, true
		p.stack = p.stack[:len(p.stack)-1]
	}
	return ""
}

func (p *jqParser) setKey() {
	k := p.stack[len(p.stack)-1].key
	p.stack = p.stack[:len(p.stack)-1]
	o := &p.stack[len(p.stack)-1]
	if _, dup := o.obj[k]; !dup {
		o.keys = append(o.keys, k)
	}
	o.obj[k] = p.val
	p.val, p.hasVal = nil, false
}

func jqUnhex4(b []byte) int {
	r := 0
	for _, c := range b[:4] {
		var n int
		switch {
		case '0' <= c && c <= '9':
			n = int(c - '0')
		case 'a' <= c && c <= 'f':
			n = int(c-'a') + 10
		case 'A' <= c && c <= 'F':
			n = int(c-'A') + 10
		default:
			return -1
		}
		r = r<<4 | n
	}
	return r
}

func (p *jqParser) foundString() string {
	in := p.tok
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		i++
		if c == '\\' {
			if i >= len(in) {
				return "Expected escape character at end of string"
			}
			c = in[i]
			i++
			switch c {
			case '\\', '"', '/':
				out = append(out, c)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 't':
				out = append(out, '\t')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 'u':
				if i+4 > len(in) {
					return "Invalid \\uXXXX escape"
				}
				h := jqUnhex4(in[i:])
				if h < 0 {
					return "Invalid characters in \\uXXXX escape"
				}
				cp := rune(h)
				i += 4
				if 0xD800 <= cp && cp <= 0xDBFF {
					if i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
						return "Invalid \\uXXXX\\uXXXX surrogate pair escape"
					}
					s := jqUnhex4(in[i+2:])
					if !(0xDC00 <= s && s <= 0xDFFF) {
						return "Invalid \\uXXXX\\uXXXX surrogate pair escape"
					}
					i += 6
					cp = 0x10000 + ((cp-0xD800)<<10 | (rune(s) - 0xDC00))
				}
				out = utf8.AppendRune(out, cp)
			default:
				return "Invalid escape"
			}
		} else {
			if c < 0x20 {
				return "Invalid string: control characters from U+0000 through U+001F must be escaped"
			}
			out = append(out, c)
		}
	}
	p.tok = p.tok[:0]
	return p.value(jqValidUTF8(string(out)))
}

func (p *jqParser) checkLiteral() string {
	if len(p.tok) == 0 {
		return ""
	}
	tok := p.tok
	var pattern string
	var v any
	switch tok[0] {
	case 't':
		pattern, v = "true", true
	case 'f':
		pattern, v = "false", false
	case 'n':
		pattern, v = "null", nil
	}
	if pattern != "" {
		if string(tok) != pattern {
			return "Invalid literal"
		}
		if msg := p.value(v); msg != "" {
			return msg
		}
	} else {
		f, ok := jqStrtod(string(tok))
		if !ok {
			return "Invalid numeric literal"
		}
		if msg := p.value(jqNumber(f)); msg != "" {
			return msg
		}
	}
	p.tok = p.tok[:0]
	return ""
}

// jqStrtod accepts what C's strtod does of a whole token: decimal
// numbers with an optional sign and exponent, and infinities.
func jqStrtod(s string) (float64, bool) {
	t := s
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if l := strings.ToLower(t); l == "inf" || l == "infinity" {
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	i, digits := 0, 0
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		i++
		digits++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && '0' <= t[i] && t[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		k := j
		for k < len(t) && '0' <= t[k] && t[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	if i != len(t) {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if neg {
		f = -f
	}
	return f, true
}

// jqNumber gives gojq an int for integral values it can hold exactly.
func jqNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 && !(f == 0 && math.Signbit(f)) {
		return int(f)
	}
	return f
}

func jqValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// ---------------------------------------------------------------------
// Key order

type jqOrder struct {
	objs      map[unsafe.Pointer][]string // maps that outlive one input ($ARGS, --argjson, ...)
	tmp       map[unsafe.Pointer][]string // maps of the current input
	rank      map[string]int              // first seen in the input
	qrank     map[string]int              // first seen in the filter's object constructions
	cons      map[string][]string         // key set → a construction's order
	ambig     map[string]bool             // key sets built in more than one order
	consSizes map[int]bool                // the sizes of the key sets in cons
	built     [][]string                  // the constructions with constant keys
}

func jqNewOrder() *jqOrder {
	return &jqOrder{objs: map[unsafe.Pointer][]string{}, rank: map[string]int{}, qrank: map[string]int{},
		cons: map[string][]string{}, ambig: map[string]bool{}, consSizes: map[int]bool{}}
}

func jqMapPtr(m map[string]any) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

func (o *jqOrder) see(k string) {
	if _, ok := o.rank[k]; !ok {
		o.rank[k] = len(o.rank)
	}
}

func (o *jqOrder) track(m map[string]any, keys []string) {
	for _, k := range keys {
		o.see(k)
	}
	if len(m) > 1 && !o.implied(keys) {
		if o.tmp != nil {
			o.tmp[jqMapPtr(m)] = keys
		} else {
			o.objs[jqMapPtr(m)] = keys
		}
	}
}

// implied reports whether keys (all seen) are in the order keys() gives
// an untracked map with them, so that there is nothing to remember.
// The answer cannot change: ranks are never reassigned and the filter's
// constructions are all known before the input is read.
func (o *jqOrder) implied(keys []string) bool {
	if len(keys) < 2 {
		return true
	}
	if o.consSizes[len(keys)] {
		sig := jqKeySig(keys)
		if c, ok := o.cons[sig]; ok && !o.ambig[sig] {
			return strings.Join(c, "\x00") == strings.Join(keys, "\x00")
		}
	}
	allQ := len(o.qrank) > 0
	if allQ {
		for _, k := range keys {
			if _, ok := o.qrank[k]; !ok {
				allQ = false
				break
			}
		}
	}
	prev := -1
	for _, k := range keys {
		var r int
		if allQ {
			r = o.qrank[k]
		} else {
			r = o.rank[k]
		}
		if r <= prev {
			return false
		}
		prev = r
	}
	return true
}

// transient makes later tracking last until the next call; the maps of
// one input are forgotten when the next one starts.
func (o *jqOrder) transient() {
	if o.tmp == nil || len(o.tmp) > 0 {
		o.tmp = map[unsafe.Pointer][]string{}
	}
}

func jqKeySig(keys []string) string {
	s := append([]string{}, keys...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

// construction notes an object construction's keys and returns its
// number (for _jq_ord), or -1.
func (o *jqOrder) construction(keys []string) int {
	for _, k := range keys {
		if _, ok := o.qrank[k]; !ok {
			o.qrank[k] = len(o.qrank)
		}
	}
	if len(keys) < 2 {
		return -1
	}
	sig := jqKeySig(keys)
	if c, ok := o.cons[sig]; !ok {
		o.cons[sig] = keys
		o.consSizes[len(keys)] = true
	} else if strings.Join(c, "\x00") != strings.Join(keys, "\x00") {
		o.ambig[sig] = true
	}
	o.built = append(o.built, keys)
	return len(o.built) - 1
}

// ord is _jq_ord: an object built by construction n, when that key set
// is built in other orders too, remembers its order.
func (o *jqOrder) ord(m map[string]any, n int) {
	if n < 0 || n >= len(o.built) || len(o.ambig) == 0 || len(m) < 2 {
		return
	}
	keys := o.built[n]
	if len(keys) == len(m) && o.ambig[jqKeySig(keys)] {
		o.track(m, keys)
	}
}

// keys lists m's keys in jq's order, as well as it is known.
func (o *jqOrder) keys(m map[string]any) []string {
	if len(m) == 0 {
		return nil
	}
	if len(m) == 1 {
		for k := range m {
			return []string{k}
		}
	}
	rec, ok := o.tmp[jqMapPtr(m)]
	if !ok {
		rec, ok = o.objs[jqMapPtr(m)]
	}
	if ok {
		n := 0
		for _, k := range rec {
			if _, ok := m[k]; ok {
				n++
			}
		}
		if n == len(rec) && n == len(m) {
			return rec
		}
		out := make([]string, 0, len(m))
		seen := make(map[string]bool, len(m))
		for _, k := range rec {
			if _, ok := m[k]; ok {
				out = append(out, k)
				seen[k] = true
			}
		}
		var rest []string
		for k := range m {
			if !seen[k] {
				rest = append(rest, k)
			}
		}
		o.sortKeys(rest)
		return append(out, rest...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if sig := strings.Join(keys, "\x00"); !o.ambig[sig] {
		if c, ok := o.cons[sig]; ok {
			return c
		}
	}
	o.sortKeys(keys)
	return keys
}

func (o *jqOrder) sortKeys(keys []string) {
	allQ := true
	for _, k := range keys {
		if _, ok := o.qrank[k]; !ok {
			allQ = false
			break
		}
	}
	class := func(k string) (int, int) {
		if allQ {
			return 0, o.qrank[k]
		}
		if r, ok := o.rank[k]; ok {
			return 0, r
		}
		if r, ok := o.qrank[k]; ok {
			return 1, r
		}
		return 2, 0
	}
	sort.SliceStable(keys, func(i, j int) bool {
		ci, ri := class(keys[i])
		cj, rj := class(keys[j])
		if ci != cj {
			return ci < cj
		}
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
}

// ---------------------------------------------------------------------
// Output

type jqEnc struct {
	o        *jqOrder
	pretty   bool
	tab      bool
	indent   int
	ascii    bool
	sortKeys bool
	buf      []byte
}

func (w *jqEnc) encode(v any) string {
	w.buf = w.buf[:0]
	w.value(v, 0)
	return string(w.buf)
}

func (w *jqEnc) newline(depth int) {
	w.buf = append(w.buf, '\n')
	for i := 0; i < depth; i++ {
		if w.tab {
			w.buf = append(w.buf, '\t')
		} else {
			for j := 0; j < w.indent; j++ {
				w.buf = append(w.buf, ' ')
			}
		}
	}
}

func (w *jqEnc) value(v any, depth int) {
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		if x {
			w.buf = append(w.buf, "true"...)
		} else {
			w.buf = append(w.buf, "false"...)
		}
	case string:
		w.buf = jqAppendString(w.buf, x, w.ascii)
	case []any:
		if len(x) == 0 {
			w.buf = append(w.buf, "[]"...)
			return
		}
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if w.pretty {
				w.newline(depth + 1)
			}
			w.value(e, depth+1)
		}
		if w.pretty {
			w.newline(depth)
		}
		w.buf = append(w.buf, ']')
	case map[string]any:
		if len(x) == 0 {
			w.buf = append(w.buf, "{}"...)
			return
		}
		var keys []string
		if w.sortKeys {
			keys = make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		} else {
			keys = w.o.keys(x)
		}
		w.buf = append(w.buf, '{')
		for i, k := range keys {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if w.pretty {
				w.newline(depth + 1)
			}
			w.buf = jqAppendString(w.buf, k, w.ascii)
			w.buf = append(w.buf, ':')
			if w.pretty {
				w.buf = append(w.buf, ' ')
			}
			w.value(x[k], depth+1)
		}
		if w.pretty {
			w.newline(depth)
		}
		w.buf = append(w.buf, '}')
	default:
		if f, ok := jqToFloat(v); ok {
			w.buf = jqAppendNumber(w.buf, f)
		} else {
			w.buf = append(w.buf, fmt.Sprint(v)...)
		}
	}
}

func jqIsNumber(v any) bool {
	switch v.(type) {
	case int, float64, *big.Int, int64:
		return true
	}
	return false
}

func jqToFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	}
	return 0, false
}

// jqAppendNumber formats like jq 1.6 (jvp_dtoa_fmt): the shortest
// digits that read back, in plain or exponent form.
func jqAppendNumber(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, "null"...)
	}
	if math.IsInf(f, 1) {
		f = math.MaxFloat64
	} else if math.IsInf(f, -1) {
		f = -math.MaxFloat64
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		if f == 0 && math.Signbit(f) {
			return append(b, "-0"...)
		}
		return strconv.AppendInt(b, int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	if s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	e := strings.IndexByte(s, 'e')
	digits := strings.Replace(s[:e], ".", "", 1)
	exp, _ := strconv.Atoi(s[e+1:])
	decpt := exp + 1
	nd := len(digits)
	switch {
	case decpt <= -4 || decpt > nd+15:
		b = append(b, digits[0])
		if nd > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		x := decpt - 1
		if x < 0 {
			b = append(b, '-')
			x = -x
		} else {
			b = append(b, '+')
		}
		if x < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	case decpt <= 0:
		b = append(b, "0."...)
		for ; decpt < 0; decpt++ {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		if nd <= decpt {
			b = append(b, digits...)
			for i := nd; i < decpt; i++ {
				b = append(b, '0')
			}
		} else {
			b = append(b, digits[:decpt]...)
			b = append(b, '.')
			b = append(b, digits[decpt:]...)
		}
	}
	return b
}

func jqAppendString(b []byte, s string, ascii bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			r = 0xFFFD
		}
		if ascii {
			if r >= 0x10000 {
				r -= 0x10000
				hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
				b = append(b, '\\', 'u', hex[hi>>12&15], hex[hi>>8&15], hex[hi>>4&15], hex[hi&15])
				b = append(b, '\\', 'u', hex[lo>>12&15], hex[lo>>8&15], hex[lo>>4&15], hex[lo&15])
			} else {
				b = append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
			}
		} else if n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// ---------------------------------------------------------------------
// Rewriting the filter

// jqRewriter adjusts gojq's parse of the filter: constant-key indexing
// checks its input first (for jq's error words, with the key), .[] walks
// objects in key order, $__loc__ becomes its value, and the key orders of
// object constructions are noted.
type jqRewriter struct {
	order    *jqOrder
	locLines []int
	locSeen  int
}

// jqLocLines lists the lines of $__loc__ in the source, outside strings
// and comments.
func jqLocLines(src string) []int {
	var lines []int
	line, inStr := 1, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\n':
			line++
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case !inStr && strings.HasPrefix(src[i:], "$__loc__"):
			lines = append(lines, line)
			i += len("$__loc__") - 1
		}
	}
	return lines
}

func (rw *jqRewriter) locTerm() *gojq.Term {
	line := 1
	if rw.locSeen < len(rw.locLines) {
		line = rw.locLines[rw.locSeen]
	}
	rw.locSeen++
	return jqLocTerm(line)
}

func jqLocTerm(line int) *gojq.Term {
	return &gojq.Term{Type: gojq.TermTypeObject, Object: &gojq.Object{KeyVals: []*gojq.ObjectKeyVal{
		{Key: "file", Val: &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeString, Str: &gojq.String{Str: "<top-level>"}}}},
		{Key: "line", Val: &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeNumber, Number: strconv.Itoa(line)}}},
	}}}
}

func (rw *jqRewriter) query(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		rw.query(fd.Body)
	}
	if q.Term != nil {
		q.Term = rw.term(q.Term)
	}
	rw.query(q.Left)
	for _, p := range q.Patterns {
		rw.pattern(p)
	}
	rw.query(q.Right)
	// + and * go through Go, for jq's key order of merged objects;
	// gojq calls its own operators the same way, so the order of
	// evaluation of generator operands is unchanged.
	if (q.Op == gojq.OpAdd || q.Op == gojq.OpMul) && q.Term == nil && len(q.Patterns) == 0 && q.Left != nil && q.Right != nil {
		name := "_jq_plus"
		if q.Op == gojq.OpMul {
			name = "_jq_times"
		}
		q.Term = jqFuncTerm(name, q.Left, q.Right)
		q.Left, q.Right, q.Op = nil, nil, 0
	}
}

func (rw *jqRewriter) pattern(p *gojq.Pattern) {
	if p == nil {
		return
	}
	for _, e := range p.Array {
		rw.pattern(e)
	}
	for _, e := range p.Object {
		rw.str(e.KeyString)
		rw.query(e.KeyQuery)
		rw.pattern(e.Val)
	}
}

func (rw *jqRewriter) str(s *gojq.String) {
	if s == nil {
		return
	}
	for _, q := range s.Queries {
		rw.query(q)
	}
}

func (rw *jqRewriter) index(x *gojq.Index) {
	if x == nil {
		return
	}
	rw.str(x.Str)
	rw.query(x.Start)
	rw.query(x.End)
}

func (rw *jqRewriter) term(t *gojq.Term) *gojq.Term {
	if t == nil {
		return nil
	}
	switch t.Type {
	case gojq.TermTypeIndex:
		rw.index(t.Index)
	case gojq.TermTypeFunc:
		if t.Func.Name == "$__loc__" {
			l := rw.locTerm()
			l.SuffixList = t.SuffixList
			t = l
		} else {
			for _, a := range t.Func.Args {
				rw.query(a)
			}
		}
	case gojq.TermTypeObject:
		var keys []string
		constant := true
		for _, kv := range t.Object.KeyVals {
			switch {
			case kv.Key == "$__loc__":
				kv.Key = "__loc__"
				kv.Val = &gojq.Query{Term: rw.locTerm()}
				keys = append(keys, "__loc__")
			case kv.Key != "" && kv.Key[0] == '$':
				keys = append(keys, kv.Key[1:])
			case kv.Key != "":
				keys = append(keys, kv.Key)
				if kv.Val == nil {
					kv.Val = &gojq.Query{Term: jqPipeTerm(jqCheckedIndex(kv.Key))}
				}
			case kv.KeyString != nil && kv.KeyString.Queries == nil:
				keys = append(keys, kv.KeyString.Str)
				if kv.Val == nil {
					kv.Val = &gojq.Query{Term: jqPipeTerm(jqCheckedIndex(kv.KeyString.Str))}
				}
			default:
				constant = false
			}
			rw.str(kv.KeyString)
			rw.query(kv.KeyQuery)
			rw.query(kv.Val)
		}
		if constant {
			if n := rw.order.construction(keys); n >= 0 {
				b := *t
				b.SuffixList = nil
				arg := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeNumber, Number: strconv.Itoa(n)}}
				t = &gojq.Term{Type: gojq.TermTypeQuery, Query: jqPipe([]*gojq.Term{&b, jqFuncTerm("_jq_ord", arg)}), SuffixList: t.SuffixList}
			}
		} else {
			rw.order.construction(keys)
		}
	case gojq.TermTypeArray:
		rw.query(t.Array.Query)
	case gojq.TermTypeUnary:
		t.Unary.Term = rw.term(t.Unary.Term)
	case gojq.TermTypeFormat, gojq.TermTypeString:
		rw.str(t.Str)
	case gojq.TermTypeIf:
		rw.query(t.If.Cond)
		rw.query(t.If.Then)
		for _, e := range t.If.Elif {
			rw.query(e.Cond)
			rw.query(e.Then)
		}
		rw.query(t.If.Else)
	case gojq.TermTypeTry:
		rw.query(t.Try.Body)
		rw.query(t.Try.Catch)
	case gojq.TermTypeReduce:
		rw.query(t.Reduce.Query)
		for _, p := range t.Reduce.Patterns {
			rw.pattern(p)
		}
		rw.query(t.Reduce.Start)
		rw.query(t.Reduce.Update)
	case gojq.TermTypeForeach:
		rw.query(t.Foreach.Query)
		for _, p := range t.Foreach.Patterns {
			rw.pattern(p)
		}
		rw.query(t.Foreach.Start)
		rw.query(t.Foreach.Update)
		rw.query(t.Foreach.Extract)
	case gojq.TermTypeLabel:
		rw.query(t.Label.Body)
	case gojq.TermTypeQuery:
		rw.query(t.Query)
	}
	for _, s := range t.SuffixList {
		rw.index(s.Index)
	}
	return rw.split(t)
}

// jqConstKey returns the key of an index that does not depend on its
// input: a string, a number, or a slice of constants.
func jqConstKey(x *gojq.Index) (key any, ok bool) {
	if x.IsSlice {
		return nil, (x.Start == nil || jqConstQuery(x.Start)) && (x.End == nil || jqConstQuery(x.End))
	}
	if x.Name != "" {
		return x.Name, true
	}
	if x.Str != nil {
		if x.Str.Queries == nil {
			return x.Str.Str, true
		}
		return nil, false
	}
	if x.Start != nil && x.Start.Term != nil && jqConstQuery(x.Start) {
		switch x.Start.Term.Type {
		case gojq.TermTypeString:
			return x.Start.Term.Str.Str, true
		case gojq.TermTypeNumber:
			return 0, true
		case gojq.TermTypeUnary:
			return 0, true
		}
		return nil, true
	}
	return nil, false
}

func jqConstQuery(q *gojq.Query) bool {
	if q == nil || q.Term == nil || q.Left != nil || q.Right != nil || len(q.FuncDefs) > 0 || len(q.Term.SuffixList) > 0 {
		return false
	}
	t := q.Term
	switch t.Type {
	case gojq.TermTypeNumber, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse:
		return true
	case gojq.TermTypeString:
		return t.Str.Queries == nil
	case gojq.TermTypeUnary:
		return t.Unary.Term.Type == gojq.TermTypeNumber && len(t.Unary.Term.SuffixList) == 0
	}
	return false
}

func jqFuncTerm(name string, args ...*gojq.Query) *gojq.Term {
	return &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: args}}
}

// jqCheckedIndex is ._jq_chk("k") | .["k"].
func jqCheckedIndex(k string) []*gojq.Term {
	arg := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeString, Str: &gojq.String{Str: k}}}
	return []*gojq.Term{
		jqFuncTerm("_jq_chk", arg),
		{Type: gojq.TermTypeIndex, Index: &gojq.Index{Str: &gojq.String{Str: k}}},
	}
}

func jqPipe(steps []*gojq.Term) *gojq.Query {
	q := &gojq.Query{Term: steps[0]}
	for _, s := range steps[1:] {
		q = &gojq.Query{Left: q, Op: gojq.OpPipe, Right: &gojq.Query{Term: s}}
	}
	return q
}

func jqPipeTerm(steps []*gojq.Term) *gojq.Term {
	if len(steps) == 1 {
		return steps[0]
	}
	return &gojq.Term{Type: gojq.TermTypeQuery, Query: jqPipe(steps)}
}

func jqTryTerm(steps []*gojq.Term) *gojq.Term {
	return &gojq.Term{Type: gojq.TermTypeTry, Try: &gojq.Try{Body: jqPipe(steps)}}
}

// indexUnit turns one constant index into its steps.
func jqIndexUnit(x *gojq.Index) []*gojq.Term {
	k, _ := jqConstKey(x)
	plain := &gojq.Term{Type: gojq.TermTypeIndex, Index: x}
	switch k := k.(type) {
	case string:
		return jqCheckedIndex(k)
	case int:
		if !x.IsSlice {
			return []*gojq.Term{jqFuncTerm("_jq_chkn"), plain}
		}
	}
	return []*gojq.Term{plain}
}

// split rewrites t's constant suffixes into a pipe of steps.
func (rw *jqRewriter) split(t *gojq.Term) *gojq.Term {
	last := -1
	interesting := false
	for i, s := range t.SuffixList {
		switch {
		case s.Iter:
			interesting = true
		case s.Optional:
		case s.Index != nil:
			if _, ok := jqConstKey(s.Index); !ok {
				last = i
				interesting = false
			} else {
				interesting = true
			}
		}
	}
	baseConst := false
	if last < 0 && t.Type == gojq.TermTypeIndex {
		if k, ok := jqConstKey(t.Index); ok && k != nil {
			baseConst = true
		}
	}
	if !interesting && !baseConst {
		return t
	}
	var units [][]*gojq.Term
	var kinds []byte // 'b' base, 'i' index or iter, 'o' optional
	if last >= 0 {
		b := *t
		b.SuffixList = t.SuffixList[:last+1]
		units = append(units, []*gojq.Term{&b})
	} else {
		b := *t
		b.SuffixList = nil
		if baseConst {
			units = append(units, jqIndexUnit(t.Index))
		} else {
			units = append(units, []*gojq.Term{&b})
		}
	}
	kinds = append(kinds, 'b')
	for _, s := range t.SuffixList[last+1:] {
		switch {
		case s.Iter:
			units = append(units, []*gojq.Term{jqFuncTerm("_jq_each")})
			kinds = append(kinds, 'i')
		case s.Index != nil:
			units = append(units, jqIndexUnit(s.Index))
			kinds = append(kinds, 'i')
		case s.Optional:
			if kinds[len(kinds)-1] == 'i' {
				n := len(units) - 1
				units[n] = []*gojq.Term{jqTryTerm(units[n])}
			} else {
				var all []*gojq.Term
				for _, u := range units {
					all = append(all, u...)
				}
				units = [][]*gojq.Term{{jqTryTerm(all)}}
				kinds = []byte{'b'}
			}
			kinds[len(kinds)-1] = 'o'
		}
	}
	var steps []*gojq.Term
	for i, u := range units {
		for _, s := range u {
			if i == 0 && s.Type == gojq.TermTypeIdentity && len(s.SuffixList) == 0 && len(units) > 1 {
				continue
			}
			steps = append(steps, s)
		}
	}
	return jqPipeTerm(steps)
}

// ---------------------------------------------------------------------
// Modules

type jqLoader struct{ r *jqRun }

func (l *jqLoader) LoadInitModules() ([]*gojq.Query, error) {
	q, err := gojq.Parse(jqInitSource)
	if err != nil {
		return nil, err
	}
	qs := []*gojq.Query{q}
	r := l.r
	if home := r.e.Vars["HOME"]; home != "" {
		p := path.Join(r.e.Abs(home), ".jq")
		if fi, err := r.e.FS.Stat(r.ctx, p); err == nil && fi.Mode.IsRegular() {
			data, err := r.loadFile(p, true)
			if err != nil {
				return nil, err
			}
			mq, err := l.parseModule(data.(string), path.Dir(p))
			if err != nil {
				return nil, err
			}
			qs = append(qs, mq)
		}
	}
	return qs, nil
}

func (l *jqLoader) parseModule(src, dir string) (*gojq.Query, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	for _, imp := range q.Imports {
		if imp.Meta == nil {
			continue
		}
		for _, kv := range imp.Meta.KeyVals {
			if (kv.Key == "search" || kv.KeyString == "search") && kv.Val != nil && kv.Val.Str != "" {
				if !path.IsAbs(kv.Val.Str) {
					kv.Val.Str = path.Join(dir, kv.Val.Str)
				}
			}
		}
	}
	rw := &jqRewriter{order: l.r.order}
	rw.query(q)
	return q, nil
}

func (l *jqLoader) searchPaths(meta map[string]any) []string {
	r := l.r
	var dirs []string
	if meta != nil {
		switch s := meta["search"].(type) {
		case string:
			dirs = append(dirs, s)
		case []any:
			for _, x := range s {
				if x, ok := x.(string); ok {
					dirs = append(dirs, x)
				}
			}
		}
	}
	for i, d := range dirs {
		if !path.IsAbs(d) {
			dirs[i] = path.Join(r.progDir, d)
		}
	}
	lib := r.opts.libPaths
	if lib == nil {
		lib = []string{"~/.jq", "$ORIGIN/../lib/jq", "$ORIGIN/lib"}
	}
	for _, d := range lib {
		switch {
		case strings.HasPrefix(d, "$ORIGIN/"):
			continue
		case d == "~" || strings.HasPrefix(d, "~/"):
			home := r.e.Vars["HOME"]
			if home == "" {
				continue
			}
			d = path.Join(r.e.Abs(home), d[1:])
		default:
			d = r.e.Abs(d)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func (l *jqLoader) find(name, ext string, meta map[string]any) (string, error) {
	r := l.r
	for _, d := range l.searchPaths(meta) {
		for _, p := range []string{
			path.Join(d, name+ext),
			path.Join(d, name, path.Base(name)+ext),
			path.Join(d, name, "jq", "main"+ext),
		} {
			if fi, err := r.e.FS.Stat(r.ctx, p); err == nil && fi.Mode.IsRegular() {
				return p, nil
			}
		}
	}
	return "", &jqCompileError{msg: "module not found: " + name + "\n", offset: -1, plain: true}
}

func (l *jqLoader) LoadModuleWithMeta(name string, meta map[string]any) (*gojq.Query, error) {
	p, err := l.find(name, ".jq", meta)
	if err != nil {
		return nil, err
	}
	data, err := l.r.loadFile(p, true)
	if err != nil {
		return nil, &jqCompileError{msg: err.Error(), offset: -1, plain: true}
	}
	q, err := l.parseModule(data.(string), path.Dir(p))
	if err != nil {
		return nil, &jqCompileError{msg: jqParseErrorOf(data.(string), err).msg + " (in module " + name + ")", offset: -1, plain: true}
	}
	return q, nil
}

func (l *jqLoader) LoadJSONWithMeta(name string, meta map[string]any) (any, error) {
	p, err := l.find(name, ".json", meta)
	if err != nil {
		return nil, err
	}
	data, err := l.r.loadFile(p, false)
	if err != nil {
		return nil, &jqCompileError{msg: err.Error(), offset: -1, plain: true}
	}
	return data, nil
}

// ---------------------------------------------------------------------
// Errors

func jqTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if jqIsNumber(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// typeErr is jq's "type (value)" with the value cut to 11 bytes.
func (r *jqRun) typeErr(v any) string {
	s := r.cenc.encode(v)
	if len(s) > 14 {
		s = s[:11] + "..."
	}
	return jqTypeName(v) + " (" + s + ")"
}

// jqField reads an unexported field of one of gojq's error structs.
func jqField(err error, name string) (any, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() {
		return nil, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface(), true
}

// errorText renders a runtime error in jq's words. isStr false means
// the error value is to be printed as JSON ("(not a string)").
func (r *jqRun) errorText(err error) (string, any, bool) {
	var ve gojq.ValueError
	if errors.As(err, &ve) {
		if e, ok := ve.(*jqError); ok {
			return e.msg, nil, true
		}
		v := ve.Value()
		if s, ok := v.(string); ok {
			return s, nil, true
		}
		return "", v, false
	}
	name := reflect.TypeOf(err).String()
	name = strings.TrimPrefix(name, "*gojq.")
	field := func(n string) any { v, _ := jqField(err, n); return v }
	str := func(n string) string { s, _ := field(n).(string); return s }
	switch name {
	case "tryEndError":
		if e, ok := field("err").(error); ok {
			return r.errorText(e)
		}
	case "expectedObjectError":
		return "Cannot index " + jqTypeName(field("v")) + " with string", nil, true
	case "expectedArrayError":
		return "Cannot index " + jqTypeName(field("v")) + " with number", nil, true
	case "iteratorError":
		return "Cannot iterate over " + r.typeErr(field("v")), nil, true
	case "arrayIndexNegativeError":
		return "Out of bounds negative array index", nil, true
	case "arrayIndexTooLargeError":
		return "Array index too large", nil, true
	case "objectKeyNotStringError":
		return "Object keys must be strings", nil, true
	case "arrayIndexNotNumberError", "stringIndexNotNumberError":
		return "Cannot index " + jqTypeName(field("v")) + " with " + jqTypeName(field("v")), nil, true
	case "expectedStartEndError":
		return "Start and end indices of an array slice must be numbers", nil, true
	case "binopTypeError":
		verb := map[string]string{"add": "added", "subtract": "subtracted", "multiply": "multiplied",
			"divide": "divided", "modulo": "divided (remainder)"}[str("name")]
		if verb == "" {
			break
		}
		return r.typeErr(field("l")) + " and " + r.typeErr(field("r")) + " cannot be " + verb, nil, true
	case "zeroDivisionError":
		return r.typeErr(field("l")) + " and " + r.typeErr(field("r")) + " cannot be divided because the divisor is zero", nil, true
	case "zeroModuloError":
		return r.typeErr(field("l")) + " and " + r.typeErr(field("r")) + " cannot be divided (remainder) because the divisor is zero", nil, true
	case "unaryTypeError":
		if str("name") == "negate" {
			return r.typeErr(field("v")) + " cannot be negated", nil, true
		}
	case "formatNotFoundError":
		return strings.TrimPrefix(str("n"), "@") + " is not a valid format", nil, true
	case "formatRowError":
		return r.typeErr(field("v")) + " is not valid in a csv row", nil, true
	case "flattenDepthError":
		return "flatten depth must not be negative", nil, true
	case "invalidPathError", "invalidPathIterError":
		return "Invalid path expression with result " + r.typeErrValue(field("v")), nil, true
	case "func0TypeError":
		v := field("v")
		switch str("name") {
		case "keys", "to_entries":
			return r.typeErr(v) + " has no keys", nil, true
		case "length":
			return r.typeErr(v) + " has no length", nil, true
		case "utf8bytelength":
			return r.typeErr(v) + " only strings have UTF-8 byte length", nil, true
		case "explode", "ascii_downcase", "ascii_upcase":
			return "explode input must be a string", nil, true
		case "implode":
			return "implode input must be an array", nil, true
		case "sort":
			return r.typeErr(v) + " cannot be sorted, as it is not an array", nil, true
		case "add", "flatten", "min", "max", "unique", "reverse", "transpose", "any", "all":
			return "Cannot iterate over " + r.typeErr(v), nil, true
		case "tonumber":
			return r.typeErr(v) + " cannot be parsed as a number", nil, true
		case "floor", "sqrt", "fabs", "round", "ceil", "log", "log2", "log10", "exp", "exp2", "exp10",
			"sin", "cos", "tan", "asin", "acos", "atan", "significand", "gamma", "lgamma", "tgamma",
			"trunc", "logb", "cbrt", "sinh", "cosh", "tanh", "nearbyint", "rint":
			return r.typeErr(v) + " number required", nil, true
		case "test", "match", "_match":
			return r.typeErr(v) + " cannot be matched, as it is not a string", nil, true
		case "splits", "split":
			return "split input and separator must be strings", nil, true
		}
	case "func1TypeError":
		v, w := field("v"), field("w")
		switch str("name") {
		case "split":
			return "split input and separator must be strings", nil, true
		case "startswith":
			return "startswith() requires string inputs", nil, true
		case "endswith":
			return "endswith() requires string inputs", nil, true
		case "has":
			return "Cannot check whether " + jqTypeName(v) + " has a " + jqTypeName(w) + " key", nil, true
		case "contains", "inside":
			return r.typeErr(v) + " and " + r.typeErr(w) + " cannot have their containment checked", nil, true
		case "getpath", "setpath", "delpaths", "paths":
			return "Path must be specified as an array", nil, true
		case "_match", "test", "match", "capture", "scan", "splits", "sub", "gsub":
			return r.typeErr(v) + " cannot be matched, as it is not a string", nil, true
		case "flatten":
			return "Cannot iterate over " + r.typeErr(v), nil, true
		case "indices", "index", "rindex", "_indices":
			return "Cannot determine the indices", nil, true
		}
	case "func2TypeError":
		switch str("name") {
		case "_range", "range":
			return "Range bounds must be numeric", nil, true
		case "_match", "match", "test", "capture", "scan", "splits", "sub", "gsub":
			return r.typeErr(field("v")) + " cannot be matched, as it is not a string", nil, true
		}
	case "func0WrapError", "func1WrapError", "func2WrapError":
		if e, ok := field("err").(error); ok {
			return r.errorText(e)
		}
	}
	msg := err.Error()
	if msg == "break" {
		msg = "No more inputs"
	}
	return msg, nil, true
}

// typeErrValue is the value of an invalid path, as jq prints it.
func (r *jqRun) typeErrValue(v any) string {
	s := r.cenc.encode(v)
	if len(s) > 14 {
		s = s[:11] + "..."
	}
	return s
}

// jqParseErrorOf turns gojq's parse error into jq's syntax error.
func jqParseErrorOf(src string, err error) *jqCompileError {
	var pe *gojq.ParseError
	if !errors.As(err, &pe) {
		return &jqCompileError{msg: err.Error(), offset: -1}
	}
	var tok string
	start := pe.Offset - len(pe.Token)
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unexpected EOF") || strings.HasPrefix(msg, "unterminated string"):
		tok = "$end"
		start = jqLastTokenStart(src)
	case strings.HasPrefix(msg, "invalid escape sequence"):
		return &jqCompileError{msg: "Invalid escape at line 1, column 4 (while parsing '\"" + pe.Token + "\"')", offset: start}
	default:
		tok = jqTokenName(src, pe.Token, start)
	}
	if start < 0 {
		start = 0
	}
	expecting := ""
	if tok != "$end" && start <= len(src) {
		// bison's one common suggestion: after a whole program, the end.
		if prefix := src[:start]; strings.TrimSpace(prefix) == "" {
			expecting = ", expecting $end"
		} else if _, err := gojq.Parse(prefix); err == nil {
			expecting = ", expecting $end"
		}
	}
	return &jqCompileError{msg: "syntax error, unexpected " + tok + expecting + " (Unix shell quoting issues?)", offset: start}
}

var jqKeywords = map[string]bool{"or": true, "and": true, "module": true, "import": true, "include": true,
	"def": true, "as": true, "label": true, "break": true, "if": true, "then": true, "elif": true,
	"else": true, "end": true, "try": true, "catch": true, "reduce": true, "foreach": true, "__loc__": true}

func jqTokenName(src, tok string, start int) string {
	switch {
	case tok == "":
		return "$end"
	case jqKeywords[tok]:
		return tok
	case tok == "null" || tok == "true" || tok == "false":
		return "LITERAL"
	case len(tok) > 1 && tok[0] == '.' && !('0' <= tok[1] && tok[1] <= '9'):
		return "FIELD"
	case tok[0] == '$':
		return "'$'"
	case tok[0] == '@':
		return "FORMAT"
	case tok[0] == '"':
		return "QQSTRING_START"
	case '0' <= tok[0] && tok[0] <= '9' || tok[0] == '.' && len(tok) > 1:
		return "LITERAL"
	case tok[0] == '_' || 'a' <= tok[0] && tok[0] <= 'z' || 'A' <= tok[0] && tok[0] <= 'Z':
		return "IDENT"
	case len(tok) == 1 && strings.Contains(")]}", tok):
		// jq's lexer calls an unmatched closer an invalid character.
		open := map[byte]byte{')': '(', ']': '[', '}': '{'}[tok[0]]
		depth := 0
		for i := 0; i < start && i < len(src); i++ {
			switch src[i] {
			case open:
				depth++
			case tok[0]:
				depth--
			}
		}
		if depth > 0 {
			return "'" + tok + "'"
		}
		return "INVALID_CHARACTER"
	case len(tok) == 1 && strings.Contains(".[{(|,:;=<>+-*/%$?", tok):
		return "'" + tok + "'"
	case len(tok) == 1:
		return "INVALID_CHARACTER"
	}
	return tok
}

// jqLastTokenStart is where jq's lexer last matched, which bison reports
// for an unexpected end: the trailing blanks, else the last token.
func jqLastTokenStart(src string) int {
	n := len(src)
	if n == 0 {
		return 0
	}
	isWS := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	isID := func(c byte) bool {
		return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	if isWS(src[n-1]) {
		i := n - 1
		for i > 0 && isWS(src[i-1]) {
			i--
		}
		return i
	}
	if q := strings.LastIndexByte(src, '"'); q >= 0 && strings.Count(src, `"`)%2 == 1 {
		return q + 1
	}
	if isID(src[n-1]) {
		i := n - 1
		for i > 0 && (isID(src[i-1]) || src[i-1] == '.' && i >= 2 && '0' <= src[i] && src[i] <= '9') {
			i--
		}
		if i > 0 && src[i-1] == '.' {
			i--
		}
		return i
	}
	if n >= 2 {
		switch src[n-2:] {
		case "==", "!=", "<=", ">=", "//", "|=", "+=", "-=", "*=", "/=", "%=", "?/", "..":
			return n - 2
		}
		if n >= 3 && src[n-3:] == "//=" {
			return n - 3
		}
	}
	return n - 1
}

func (r *jqRun) printCompileError(src string, err error) {
	var ce *jqCompileError
	if !errors.As(err, &ce) {
		ce = jqCompileErrorOf(src, err)
	}
	if ce.plain {
		fmt.Fprintf(r.stderr, "jq: error: %s\njq: 1 compile error\n", ce.msg)
		return
	}
	if ce.offset < 0 {
		fmt.Fprintf(r.stderr, "jq: error: %s\n<unknown location>\njq: 1 compile error\n", ce.msg)
		return
	}
	off := ce.offset
	if off > len(src) {
		off = len(src)
	}
	line := strings.Count(src[:off], "\n")
	ls := strings.LastIndexByte(src[:off], '\n') + 1
	le := strings.IndexByte(src[off:], '\n')
	if le < 0 {
		le = len(src)
	} else {
		le = off + le
	}
	fmt.Fprintf(r.stderr, "jq: error: %s at <top-level>, line %d:\n%s%s\njq: 1 compile error\n",
		ce.msg, line+1, src[ls:le], strings.Repeat(" ", off-ls))
}

// jqCompileErrorOf renders gojq's compile errors in jq's words.
func jqCompileErrorOf(src string, err error) *jqCompileError {
	name := strings.TrimPrefix(reflect.TypeOf(err).String(), "*gojq.")
	switch name {
	case "funcNotFoundError":
		if f, ok := jqField(err, "f"); ok {
			if fn, ok := f.(*gojq.Func); ok {
				return &jqCompileError{msg: fmt.Sprintf("%s/%d is not defined", fn.Name, len(fn.Args)), offset: jqFindWord(src, fn.Name)}
			}
		}
	case "variableNotFoundError":
		if n, ok := jqField(err, "n"); ok {
			if s, ok := n.(string); ok {
				return &jqCompileError{msg: s + " is not defined", offset: jqFindWord(src, s)}
			}
		}
	case "breakError":
		if n, ok := jqField(err, "n"); ok {
			if s, ok := n.(string); ok {
				s = strings.TrimPrefix(s, "$")
				return &jqCompileError{msg: "$*label-" + s + " is not defined", offset: jqFindWord(src, "break")}
			}
		}
	case "inputNotAllowedError":
		return &jqCompileError{msg: "input is not allowed", offset: -1}
	}
	msg := err.Error()
	if pe := (*gojq.ParseError)(nil); errors.As(err, &pe) {
		return jqParseErrorOf(src, err)
	}
	return &jqCompileError{msg: msg, offset: -1, plain: true}
}

// jqFindWord finds name as a whole word of the program outside strings.
func jqFindWord(src, name string) int {
	isID := func(c byte) bool {
		return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			continue
		}
		if strings.HasPrefix(src[i:], name) {
			before := i == 0 || !isID(src[i-1]) && src[i-1] != '.' && (name[0] == '$' || src[i-1] != '$')
			after := i+len(name) >= len(src) || !isID(src[i+len(name)])
			if before && after {
				return i
			}
		}
	}
	return 0
}
