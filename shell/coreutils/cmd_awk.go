package coreutils

// awk: POSIX awk, interpreted in process (parser in cmd_awk_parse.go,
// tree-walking interpreter in cmd_awk_interp.go, I/O in cmd_awk_io.go,
// built-ins and printf in cmd_awk_builtin.go, regular expressions in
// cmd_awk_regex.go).
//
// Supported: -F fs, -v var=value, -f progfile (repeatable), "--";
// BEGIN/END, patterns, range patterns, all POSIX expressions and
// statements, user functions (arrays by reference, recursion bounded to
// awkMaxDepth calls), getline in its plain, var and "< file" forms,
// print/printf with > and >> redirections ("/dev/stdout", "/dev/stderr"
// and "-" are the streams), close, fflush, the POSIX built-ins, ENVIRON
// (the shell's exported variables), ARGV/ARGC with var=value operands,
// RS as one character, "" (paragraphs) or a regular expression, FS as
// " ", one literal character, "" (each character) or a regular
// expression. Regular expressions are POSIX EREs matched leftmost-longest,
// with intervals {n,m} and gawk's \y \B \< \> \s \S \w \W.
//
// Differences from the host's mawk, on purpose (gawk or POSIX behaviour):
//   - no command runs: system(), "cmd" | getline and print | "cmd" stop
//     the program with an error (status 2);
//   - division by zero is a fatal error (status 2), as in gawk;
//   - strings are measured in UTF-8 characters (length, substr, index,
//     match, printf widths and %c), as gawk does in a UTF-8 locale;
//   - integral numbers print as integers however large (gawk), and
//     %d/%i/%x handle 64-bit values (mawk goes through 32 bits);
//   - for-in visits elements in insertion order;
//   - hexadecimal strings are not numbers ("0x1A"+0 is 0);
//   - a field beyond NF is the uninitialized value (POSIX);
//   - in paragraph mode a newline always separates fields (POSIX);
//   - substr rounds its positions and counts from position m even when m
//     is below 1 (POSIX, gawk);
//   - ** and **= are exponentiation, as in gawk; func is function.
// As in mawk, an input file that cannot be opened is fatal (status 2).
//
// Bounds: strings and records up to awkMaxStr bytes, awkMaxElems array
// elements in all, field indexes up to awkMaxFields, awkMaxDepth nested
// calls, awkMaxOpen output files (the least recently used is closed and
// reopened appending) and input files. Loops, calls, records and reads
// check the context, so a cancelled context stops any program.
//
// Errors: syntax errors ("awk: syntax error at source line N: ...") and
// run time errors ("awk: run time error: ...") exit with status 2; the
// wording is not mawk's or gawk's.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func init() { register("awk", awkMain) }

const awkUsageText = `usage: awk [-F fs][-v var=value][--] 'program text' [file ...]
       awk [-F fs][-v var=value][-f progfile ...][--] [file ...]
`

func awkMain(ctx context.Context, e *Env, args []string) int {
	var progFiles, assigns []string
	var fs *string
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		switch a {
		case "--version", "-version", "-V":
			fmt.Fprintln(e.Stdout, "awk (computerfs coreutils) POSIX awk")
			return 0
		case "--help", "-h":
			io.WriteString(e.Stdout, awkUsageText)
			return 0
		}
		opt := a[1]
		switch opt {
		case 'F', 'v', 'f', 'W':
			val := a[2:]
			if val == "" {
				if i+1 >= len(args) {
					fmt.Fprintf(e.Stderr, "awk: option requires an argument -- %c\n%s", opt, awkUsageText)
					return 2
				}
				i++
				val = args[i]
			}
			switch opt {
			case 'F':
				v := val
				fs = &v
			case 'v':
				if _, _, ok := awkCmdAssign(val); !ok {
					return fail(e, "awk", 2, "improper assignment: -v %s", val)
				}
				assigns = append(assigns, val)
			case 'f':
				progFiles = append(progFiles, val)
			case 'W':
				if strings.HasPrefix("version", val) {
					fmt.Fprintln(e.Stdout, "awk (computerfs coreutils) POSIX awk")
					return 0
				}
				// Other -W options of mawk (interactive, ...) change nothing here.
			}
		default:
			fmt.Fprintf(e.Stderr, "awk: not an option: %s\n%s", a, awkUsageText)
			return 2
		}
	}
	var src string
	if len(progFiles) == 0 {
		if i >= len(args) {
			io.WriteString(e.Stderr, awkUsageText)
			return 2
		}
		src = args[i]
		i++
	} else {
		var b strings.Builder
		for _, name := range progFiles {
			text, err := awkReadProgFile(ctx, e, name)
			if err != nil {
				return fail(e, "awk", 2, "couldn't open file %s (%s)", name, errText(err))
			}
			b.WriteString(text)
			b.WriteByte('\n')
		}
		src = b.String()
	}
	prog, err := awkParse(src)
	if err != nil {
		return fail(e, "awk", 2, "%v", err)
	}
	in := awkNewInterp(ctx, e, prog, args[i:])
	code := in.setup(fs, assigns)
	if code != 0 {
		return code
	}
	return in.run()
}

func awkReadProgFile(ctx context.Context, e *Env, name string) (string, error) {
	if name == "-" || name == "/dev/stdin" {
		if e.Stdin == nil {
			return "", nil
		}
		b, err := io.ReadAll(awkCtxReader{ctx, e.Stdin})
		return string(b), err
	}
	f, err := e.FS.Open(ctx, e.Abs(name))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(awkCtxReader{ctx, f}, awkMaxStr))
	return string(b), err
}

type awkStdWriter struct{ w io.Writer }

func (s awkStdWriter) Write(p []byte) (int, error) {
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func awkNewInterp(ctx context.Context, e *Env, prog *awkProgram, operands []string) *awkInterp {
	in := &awkInterp{
		ctx: ctx, e: e, prog: prog,
		globals: make([]awkCell, len(prog.globalNames)),
		convfmt: "%.6g", ofmt: "%.6g", ofs: " ", ors: "\n", subsep: "\x1c", rs: "\n",
		outputs: map[string]*awkOutput{}, reopen: map[string]bool{},
		inputs: map[string]*awkReader{}, reCache: map[string]*regexp.Regexp{},
		splitRe: map[string]*awkSplitter{},
		rangeOn: make([]bool, len(prog.items)),
		rng:     awkNewRand(0),
	}
	in.emitField = func(f string) { in.fields = append(in.fields, awkInputV(f)) }
	in.out = &awkOutput{name: "/dev/stdout", w: bufio.NewWriterSize(awkStdWriter{e.Stdout}, 32<<10)}
	in.errOut = &awkOutput{name: "/dev/stderr", w: bufio.NewWriterSize(awkStdWriter{e.Stderr}, 4<<10), stderr: true}
	g := in.globals
	g[awkVFS].v = awkStrV(" ")
	g[awkVOFS].v = awkStrV(" ")
	g[awkVORS].v = awkStrV("\n")
	g[awkVRS].v = awkStrV("\n")
	g[awkVSUBSEP].v = awkStrV("\x1c")
	g[awkVCONVFMT].v = awkStrV("%.6g")
	g[awkVOFMT].v = awkStrV("%.6g")
	g[awkVFILENAME].v = awkStrV("")
	g[awkVRSTART].v = awkNumV(0)
	g[awkVRLENGTH].v = awkNumV(-1)
	env := awkNewArray(&in.elems)
	names := make([]string, 0, len(e.Vars))
	for k := range e.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env.set(k, awkInputV(e.Vars[k]))
	}
	g[awkVENVIRON].arr = env
	argv := awkNewArray(&in.elems)
	argv.set("0", awkStrV("awk"))
	for j, op := range operands {
		argv.set(strconv.Itoa(j+1), awkInputV(op))
	}
	g[awkVARGV].arr = argv
	g[awkVARGC].v = awkNumV(float64(len(operands) + 1))
	in.fsSplit = in.newSplitter(" ", false)
	in.recSplit = in.fsSplit
	in.splitDone = true
	return in
}

// setup applies -F and -v; it returns a non-zero status on error.
func (in *awkInterp) setup(fs *string, assigns []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*awkFatalError)
			if !ok {
				panic(r)
			}
			fmt.Fprintf(in.e.Stderr, "awk: %s\n", fe.msg)
			code = 2
		}
	}()
	if fs != nil {
		v := awkUnescape(*fs)
		in.setVar(&awkVar{name: "FS", idx: awkVFS}, awkStrV(v))
	}
	for _, a := range assigns {
		name, val, _ := awkCmdAssign(a)
		in.assignVar(name, val)
	}
	return 0
}
