package coreutils

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/internal/textdiff"
)

func init() { register("diff", filDiffMain) }

var filDiffSpec = optSpec{
	short: "abiqrsNuU:wx:cC:",
	long: map[string]bool{
		"text": false, "brief": false, "recursive": false, "report-identical-files": false,
		"new-file": false, "label": true, "exclude": true, "unified": false,
		"context": false, "normal": false, "ignore-case": false,
		"ignore-space-change": false, "ignore-all-space": false, "strip-trailing-cr": false,
	},
	alias: map[string]string{
		"text": "a", "brief": "q", "recursive": "r", "report-identical-files": "s",
		"new-file": "N", "exclude": "x", "ignore-case": "i",
		"ignore-space-change": "b", "ignore-all-space": "w",
	},
}

type filDiff struct {
	e                                *Env
	ctx                              context.Context
	unified                          bool
	context                          int
	brief, recursive, identical, new bool
	text                             bool
	ignoreCase, ignoreSpace          bool
	ignoreAllSpace, stripCR          bool
	labels                           []string
	excludes                         []string
	switches                         string // the options, for "diff -r a/x b/x" lines
	stdin                            []byte
	stdinRead                        bool
}

// The status of a comparison: same, different, trouble.
const (
	filDiffSame    = 0
	filDiffDiffer  = 1
	filDiffTrouble = 2
)

// filDiffMain compares files line by line (GNU diff's normal and unified
// formats, -q, -s, -r, -N, -x, --label). Directory entries are compared
// in name order, as GNU's are.
func filDiffMain(ctx context.Context, e *Env, args []string) int {
	d := &filDiff{e: e, ctx: ctx, context: 3}
	// --unified and --context take an optional argument.
	var rest []string
	for _, a := range args {
		switch {
		case a == "--unified" || a == "--unifie" || a == "--unifi":
			d.unified = true
			continue
		case strings.HasPrefix(a, "--unified="):
			n, err := strconv.Atoi(a[len("--unified="):])
			if err != nil || n < 0 {
				return filDiffUsage(e, fmt.Sprintf("invalid context length '%s'", a[len("--unified="):]))
			}
			d.unified, d.context = true, n
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, err := filDiffSpec.parse(rest[1:])
	if err != nil {
		return filDiffUsage(e, err.Error())
	}
	for _, o := range opts {
		switch o.name {
		case "u":
			d.unified = true
		case "U":
			n, err := strconv.Atoi(o.value)
			if err != nil || n < 0 {
				return filDiffUsage(e, fmt.Sprintf("invalid context length '%s'", o.value))
			}
			d.unified, d.context = true, n
		case "q":
			d.brief = true
		case "s":
			d.identical = true
		case "r":
			d.recursive = true
		case "N":
			d.new = true
		case "a":
			d.text = true
		case "label":
			d.labels = append(d.labels, o.value)
		case "x":
			d.excludes = append(d.excludes, o.value)
		case "c", "C", "context":
			return fail(e, "diff", 2, "the context format (-c, -C) is not supported; use -u")
		case "normal":
			d.unified = false
		case "i":
			d.ignoreCase = true
		case "b":
			d.ignoreSpace = true
		case "w":
			d.ignoreAllSpace = true
		case "strip-trailing-cr":
			d.stripCR = true
		}
	}
	d.switches = filDiffSwitches(args[1:])
	switch {
	case len(operands) == 0:
		return filDiffUsage(e, "missing operand after 'diff'")
	case len(operands) == 1:
		return filDiffUsage(e, fmt.Sprintf("missing operand after '%s'", operands[0]))
	case len(operands) > 2:
		return filDiffUsage(e, fmt.Sprintf("extra operand '%s'", operands[2]))
	}
	return d.top(operands[0], operands[1])
}

func filDiffUsage(e *Env, msg string) int {
	fmt.Fprintf(e.Stderr, "diff: %s\ndiff: Try 'diff --help' for more information.\n", msg)
	return filDiffTrouble
}

// filDiffSwitches is the option part of a command line, quoted as GNU
// quotes it for the "diff -r a/x b/x" lines.
func filDiffSwitches(args []string) string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		out = append(out, filQuoteShell(a))
		if strings.HasPrefix(a, "--") {
			name, _, hasVal := strings.Cut(a[2:], "=")
			if full, takes, err := filDiffSpec.matchLong(name); err == nil && takes && !hasVal && full != "" && i+1 < len(args) {
				i++
				out = append(out, filQuoteShell(args[i]))
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			if known, takes := filDiffSpec.shortTakes(a[j]); known && takes {
				if j == len(a)-1 && i+1 < len(args) {
					i++
					out = append(out, filQuoteShell(args[i]))
				}
				break
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " " + strings.Join(out, " ")
}

// filQuoteShell quotes s for a shell only if it needs it.
func filQuoteShell(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("!\"$&'()*;<=>?[\\]^`{|}", c) >= 0 || (c == '#' || c == '~') && i == 0 {
			return filQuote(s)
		}
	}
	return s
}

// filDiffSide is one file being compared.
type filDiffSide struct {
	name    string // as shown
	abs     string
	fi      FileInfo
	missing bool // absent, and -N treats it as empty
	stdin   bool
}

func (d *filDiff) trouble(name string, err error) int {
	fmt.Fprintf(d.e.Stderr, "diff: %s: %s\n", name, errText(err))
	return filDiffTrouble
}

func (d *filDiff) side(name string) (filDiffSide, error) {
	if name == "-" {
		return filDiffSide{name: name, stdin: true, fi: FileInfo{Mode: 0o600, ModTime: d.e.Now()}}, nil
	}
	abs, err := filAbs(d.e, name)
	if err != nil {
		return filDiffSide{}, err
	}
	fi, err := filStat(d.ctx, d.e, name)
	if err != nil {
		return filDiffSide{}, err
	}
	return filDiffSide{name: name, abs: abs, fi: fi}, nil
}

func (d *filDiff) top(a, b string) int {
	sa, errA := d.side(a)
	sb, errB := d.side(b)
	if d.new {
		if errA != nil && errB == nil && filErrno(errA) == syscall.ENOENT {
			sa, errA = filDiffSide{name: a, missing: true}, nil
		}
		if errB != nil && errA == nil && filErrno(errB) == syscall.ENOENT {
			sb, errB = filDiffSide{name: b, missing: true}, nil
		}
	}
	if errA != nil || errB != nil {
		if errA != nil {
			d.trouble(a, errA)
		}
		if errB != nil {
			d.trouble(b, errB)
		}
		return filDiffTrouble
	}
	aDir, bDir := !sa.missing && sa.fi.IsDir(), !sb.missing && sb.fi.IsDir()
	switch {
	case aDir && bDir:
		return d.dirs(sa, sb)
	case aDir && !sb.missing:
		// Compare the file with its namesake in the directory.
		n := filJoin(a, filFindBase(b))
		s, err := d.side(n)
		if err != nil {
			return d.trouble(n, err)
		}
		return d.files(s, sb, false)
	case bDir && !sa.missing:
		n := filJoin(b, filFindBase(a))
		s, err := d.side(n)
		if err != nil {
			return d.trouble(n, err)
		}
		return d.files(sa, s, false)
	case aDir || bDir:
		return d.dirs(sa, sb)
	}
	return d.files(sa, sb, false)
}

func (d *filDiff) read(s filDiffSide) ([]byte, error) {
	if s.missing {
		return nil, nil
	}
	if s.stdin {
		if !d.stdinRead {
			d.stdinRead = true
			if d.e.Stdin != nil {
				b, err := io.ReadAll(d.e.Stdin)
				if err != nil {
					return nil, err
				}
				d.stdin = b
			}
		}
		return d.stdin, nil
	}
	r, err := d.e.FS.Open(d.ctx, s.abs)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (d *filDiff) excluded(name string) bool {
	for _, p := range d.excludes {
		if filFnmatch(p, name, false) {
			return true
		}
	}
	return false
}

// same reports whether a and b are the same file.
func (d *filDiff) same(a, b filDiffSide) bool {
	return !a.missing && !b.missing && !a.stdin && !b.stdin &&
		filRealpath(d.ctx, d.e, a.abs) == filRealpath(d.ctx, d.e, b.abs)
}

// dirs compares two directories (one may be missing, with -N).
func (d *filDiff) dirs(a, b filDiffSide) int {
	if d.same(a, b) {
		return filDiffSame
	}
	list := func(s filDiffSide) (map[string]FileInfo, error) {
		m := map[string]FileInfo{}
		if s.missing {
			return m, nil
		}
		ents, err := d.e.FS.ReadDir(d.ctx, s.abs)
		if err != nil {
			return nil, err
		}
		for _, fi := range ents {
			if !d.excluded(fi.Name) {
				m[fi.Name] = fi
			}
		}
		return m, nil
	}
	ma, err := list(a)
	if err != nil {
		return d.trouble(a.name, err)
	}
	mb, err := list(b)
	if err != nil {
		return d.trouble(b.name, err)
	}
	names := make([]string, 0, len(ma)+len(mb))
	for n := range ma {
		names = append(names, n)
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	status := filDiffSame
	note := func(s int) {
		status = max(status, s)
	}
	for _, n := range names {
		if d.ctx.Err() != nil {
			return filDiffTrouble
		}
		_, inA := ma[n]
		_, inB := mb[n]
		ca := filDiffSide{name: filJoin(a.name, n), abs: filJoin(a.abs, n)}
		cb := filDiffSide{name: filJoin(b.name, n), abs: filJoin(b.abs, n)}
		var errA, errB error
		if inA {
			ca.fi, errA = d.e.FS.Stat(d.ctx, ca.abs)
		}
		if inB {
			cb.fi, errB = d.e.FS.Stat(d.ctx, cb.abs)
		}
		if errA != nil || errB != nil {
			if errA != nil {
				d.trouble(ca.name, errA)
			}
			if errB != nil {
				d.trouble(cb.name, errB)
			}
			note(filDiffTrouble)
			continue
		}
		switch {
		case !inA || !inB:
			if !d.new {
				where := a.name
				if !inA {
					where = b.name
				}
				fmt.Fprintf(d.e.Stdout, "Only in %s: %s\n", where, n)
				note(filDiffDiffer)
				continue
			}
			if !inA {
				ca.missing = true
			} else {
				cb.missing = true
			}
			present := ca
			if !inA {
				present = cb
			}
			if present.fi.IsDir() {
				if d.recursive {
					note(d.dirs(ca, cb))
				} else {
					fmt.Fprintf(d.e.Stdout, "Only in %s: %s\n", map[bool]string{true: a.name, false: b.name}[inA], n)
					note(filDiffDiffer)
				}
				continue
			}
			note(d.files(ca, cb, true))
		case ca.fi.IsDir() && cb.fi.IsDir():
			if d.recursive {
				note(d.dirs(ca, cb))
			} else {
				fmt.Fprintf(d.e.Stdout, "Common subdirectories: %s and %s\n", ca.name, cb.name)
			}
		case ca.fi.IsDir() != cb.fi.IsDir() || !ca.fi.Mode.IsRegular() || !cb.fi.Mode.IsRegular():
			if ca.fi.Mode.Type() == cb.fi.Mode.Type() {
				note(d.files(ca, cb, true))
				continue
			}
			fmt.Fprintf(d.e.Stdout, "File %s is a %s while file %s is a %s\n", ca.name, filFileType(ca.fi), cb.name, filFileType(cb.fi))
			note(filDiffDiffer)
		default:
			note(d.files(ca, cb, true))
		}
	}
	return status
}

// files compares two files; inDir is set within a directory comparison.
func (d *filDiff) files(a, b filDiffSide, inDir bool) int {
	if d.same(a, b) {
		if d.identical {
			fmt.Fprintf(d.e.Stdout, "Files %s and %s are identical\n", a.name, b.name)
		}
		return filDiffSame
	}
	ba, err := d.read(a)
	if err != nil {
		return d.trouble(a.name, err)
	}
	bb, err := d.read(b)
	if err != nil {
		return d.trouble(b.name, err)
	}
	if d.stripCR {
		// GNU drops the CRs from the input itself.
		ba = bytes.ReplaceAll(ba, []byte("\r\n"), []byte("\n"))
		bb = bytes.ReplaceAll(bb, []byte("\r\n"), []byte("\n"))
	}
	binary := !d.text && (filDiffBinary(ba) || filDiffBinary(bb))
	same := bytes.Equal(ba, bb)
	var edits []textdiff.Change
	ignoring := d.ignoreCase || d.ignoreSpace || d.ignoreAllSpace
	if !same && !binary && ignoring {
		edits = textdiff.Edits(d.keys(ba), d.keys(bb))
		same = len(edits) == 0
	}
	if same {
		if d.identical {
			fmt.Fprintf(d.e.Stdout, "Files %s and %s are identical\n", a.name, b.name)
		}
		return filDiffSame
	}
	if d.brief {
		fmt.Fprintf(d.e.Stdout, "Files %s and %s differ\n", a.name, b.name)
		return filDiffDiffer
	}
	if binary {
		fmt.Fprintf(d.e.Stdout, "Binary files %s and %s differ\n", a.name, b.name)
		return filDiffDiffer
	}
	var out strings.Builder
	if inDir {
		fmt.Fprintf(&out, "diff%s %s %s\n", d.switches, a.name, b.name)
	}
	switch {
	case d.unified:
		la, lb := d.header(a, 0), d.header(b, 1)
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", la, lb)
		if ignoring {
			out.WriteString(textdiff.UnifiedEdits(ba, bb, edits, d.context))
		} else {
			out.WriteString(textdiff.UnifiedHunks(ba, bb, d.context))
		}
	case ignoring:
		out.WriteString(textdiff.NormalEdits(ba, bb, edits))
	default:
		out.WriteString(textdiff.Normal(ba, bb))
	}
	fmt.Fprint(d.e.Stdout, out.String())
	return filDiffDiffer
}

// keys maps each line of text to what -i, -b and -w compare, keeping
// the number of lines.
func (d *filDiff) keys(text []byte) []byte {
	var out []byte
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		line, nl := text, false
		if i >= 0 {
			line, nl, text = text[:i], true, text[i+1:]
		} else {
			text = nil
		}
		if d.ignoreCase {
			line = bytes.ToLower(line)
		}
		isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }
		switch {
		case d.ignoreAllSpace:
			var k []byte
			for _, c := range line {
				if !isSpace(c) {
					k = append(k, c)
				}
			}
			line, nl = k, true
		case d.ignoreSpace:
			var k []byte
			for j := 0; j < len(line); j++ {
				if isSpace(line[j]) {
					for j+1 < len(line) && isSpace(line[j+1]) {
						j++
					}
					if j+1 < len(line) {
						k = append(k, ' ')
					}
					continue
				}
				k = append(k, line[j])
			}
			line, nl = k, true
		}
		out = append(out, line...)
		if nl {
			out = append(out, '\n')
		}
	}
	return out
}

// header is a unified diff's file line: the label, or the name and
// modification time.
func (d *filDiff) header(s filDiffSide, i int) string {
	if i < len(d.labels) {
		return d.labels[i]
	}
	t := time.Unix(0, 0)
	if !s.missing {
		t = s.fi.ModTime
	}
	return s.name + "\t" + t.UTC().Format("2006-01-02 15:04:05.000000000 -0700")
}

// filDiffBinary reports whether data looks binary to GNU diff: a NUL in
// its first buffer.
func filDiffBinary(b []byte) bool {
	if len(b) > 1<<15 {
		b = b[:1<<15]
	}
	return bytes.IndexByte(b, 0) >= 0
}
