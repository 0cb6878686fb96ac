package workspace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

const (
	// grepMaxLine caps the bytes of one line kept for matching and output;
	// the rest of a longer line is read and dropped (but still checked for
	// NUL bytes).
	grepMaxLine = 8 << 20
	// grepBinaryPeek is how much of a file is checked for a NUL byte before
	// anything is emitted, as GNU grep checks its first buffer.
	grepBinaryPeek = 32 << 10
	// grepReadBuffer is the bufio buffer size; it must be at least
	// grepBinaryPeek.
	grepReadBuffer = 64 << 10
)

// lineMatcher decides whether a line matches a grep pattern, and scans
// files for matching lines.
//
// Semantics:
//   - A literal pattern (the default) matches a line containing it; with
//     IgnoreCase, case is folded the Unicode way (RE2's (?i), i.e. simple
//     case folding: "k" matches "K" and the Kelvin sign U+212A).
//   - With Regex, the pattern is RE2 syntax (package regexp), matched
//     against each line on its own, so '^' and '$' anchor at the line's
//     ends. IgnoreCase prefixes "(?i)".
//   - The empty pattern matches every line.
//   - Lines end at '\n' and never contain it, so a pattern containing a
//     newline never matches (GNU grep would split it into several
//     patterns). A '\r' before the '\n' is part of the line.
type lineMatcher struct {
	all     bool           // empty pattern
	lit     []byte         // literal, case-sensitive
	re      *regexp.Regexp // regex, or literal with IgnoreCase
	fold    []byte         // literal with IgnoreCase, not valid UTF-8
	maxLine int            // grepMaxLine; smaller in tests
}

// newLineMatcher compiles opts.Pattern as opts.Regex and opts.IgnoreCase
// say. An invalid regular expression is an error wrapping syscall.EINVAL.
func newLineMatcher(opts GrepOptions) (*lineMatcher, error) {
	m := &lineMatcher{maxLine: grepMaxLine}
	switch {
	case opts.Pattern == "":
		m.all = true
	case opts.Regex:
		expr := opts.Pattern
		if opts.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("grep: invalid regular expression %q: %v: %w", opts.Pattern, err, syscall.EINVAL)
		}
		m.re = re
	case opts.IgnoreCase && !utf8.ValidString(opts.Pattern):
		// RE2 rejects invalid UTF-8; fold by hand.
		m.fold = []byte(opts.Pattern)
	case opts.IgnoreCase:
		m.re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(opts.Pattern))
	default:
		m.lit = []byte(opts.Pattern)
	}
	return m, nil
}

// match reports whether line (without its '\n') matches.
func (m *lineMatcher) match(line []byte) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.Match(line)
	case m.fold != nil:
		return grepFoldContains(line, m.fold)
	default:
		return bytes.Index(line, m.lit) >= 0
	}
}

// grepFoldContains reports whether s contains pat under Unicode simple case
// folding, as RE2's (?i) folds, comparing the bytes of invalid UTF-8
// exactly. It is for patterns RE2 refuses, so it need not be fast.
func grepFoldContains(s, pat []byte) bool {
	for i := 0; ; {
		if grepFoldPrefix(s[i:], pat) {
			return true
		}
		if i == len(s) {
			return false
		}
		_, w := utf8.DecodeRune(s[i:])
		i += w
	}
}

func grepFoldPrefix(s, pat []byte) bool {
	for len(pat) > 0 {
		if len(s) == 0 {
			return false
		}
		pr, pw := utf8.DecodeRune(pat)
		sr, sw := utf8.DecodeRune(s)
		if (pr == utf8.RuneError && pw == 1) || (sr == utf8.RuneError && sw == 1) {
			if pw != sw || pat[0] != s[0] {
				return false
			}
		} else if pr != sr {
			f := unicode.SimpleFold(pr)
			for f != pr && f != sr {
				f = unicode.SimpleFold(f)
			}
			if f != sr {
				return false
			}
		}
		pat, s = pat[pw:], s[sw:]
	}
	return true
}

// scan reads r line by line and calls emit, in order, for each matching
// line and for up to before/after lines of context around each match
// (GrepLine.Context set), with GNU grep's rules: a line is emitted once
// even when context groups overlap or touch, so a formatter can put "--"
// between consecutive emitted lines whose numbers are not consecutive.
// path is copied into each GrepLine. Line numbers are 1-based; a last line
// without '\n' counts; Text excludes the '\n'. Lines longer than
// grepMaxLine are truncated to it, for matching and output.
//
// It returns the number of matching lines emitted (or, with emit nil, the
// number of matching lines in r). emit returning false stops the scan
// early, with a nil error.
//
// Binary files are detected as GNU grep does: if the first grepBinaryPeek
// bytes hold a NUL byte, scan emits nothing and returns binary true. A NUL
// in a later line makes it binary from that line on: nothing more is
// emitted. Once binary, with emit non-nil the scan stops at the next
// matching line (counting it in matches, so matches > 0 tells that the
// binary file matches); with emit nil it counts all matching lines.
func (m *lineMatcher) scan(r io.Reader, path string, before, after int, emit func(GrepLine) bool) (matches int, binary bool, err error) {
	return m.run(r, path, before, after, emit, false)
}

// count returns the number of matching lines in r, and whether r is binary
// (a NUL byte in its first grepBinaryPeek bytes or in a line before the
// end). Binary files are counted like text, as "grep -c" does.
func (m *lineMatcher) count(r io.Reader) (matches int, binary bool, err error) {
	return m.run(r, "", 0, 0, nil, false)
}

// hasMatch reports whether some line of r matches, reading no further than
// the first match. binary reports a NUL byte in the first grepBinaryPeek
// bytes or in a line read.
func (m *lineMatcher) hasMatch(r io.Reader) (matched, binary bool, err error) {
	n, binary, err := m.run(r, "", 0, 0, nil, true)
	return n > 0, binary, err
}

func (m *lineMatcher) run(r io.Reader, path string, before, after int, emit func(GrepLine) bool, stopAtFirst bool) (matches int, binary bool, err error) {
	before = max(before, 0)
	after = max(after, 0)
	maxLine := m.maxLine
	if maxLine <= 0 {
		maxLine = grepMaxLine
	}
	lr := &grepLineReader{br: bufio.NewReaderSize(r, grepReadBuffer), max: maxLine}

	head, err := lr.br.Peek(grepBinaryPeek)
	if err != nil && err != io.EOF {
		return 0, false, err
	}
	binary = bytes.IndexByte(head, 0) >= 0

	// Lines are emitted as they come: a match flushes the held
	// before-context lines (all after the last line emitted, since emitted
	// lines are never held and a flush empties the ring) and starts an
	// after-context run, so no line is emitted twice.
	var ring grepRing
	afterLeft := 0 // lines of after-context still to emit
	for lineNo := 1; ; lineNo++ {
		line, nul, err := lr.next()
		if err == io.EOF {
			return matches, binary, nil
		}
		if err != nil {
			return matches, binary, err
		}
		if nul {
			binary = true
		}
		matched := m.match(line)

		if emit == nil || binary {
			if matched {
				matches++
				if stopAtFirst || emit != nil {
					return matches, binary, nil
				}
			}
			continue
		}

		switch {
		case matched:
			for _, e := range ring.drain() {
				if !emit(GrepLine{Path: path, Line: e.num, Text: string(e.text), Context: true}) {
					return matches, binary, nil
				}
			}
			matches++
			afterLeft = after
			if !emit(GrepLine{Path: path, Line: lineNo, Text: string(line)}) {
				return matches, binary, nil
			}
		case afterLeft > 0:
			afterLeft--
			if !emit(GrepLine{Path: path, Line: lineNo, Text: string(line), Context: true}) {
				return matches, binary, nil
			}
		case before > 0:
			ring.push(before, lineNo, line)
		}
	}
}

// grepLineReader reads lines of at most max bytes (the rest of a longer
// line is dropped) without a per-line allocation in the common case.
type grepLineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

// next returns the next line without its '\n' (valid until the next call),
// whether the line, including any dropped part, holds a NUL byte, and
// io.EOF when there are no more lines.
func (lr *grepLineReader) next() (line []byte, nul bool, err error) {
	lr.buf = lr.buf[:0]
	got := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil && !got && len(chunk) <= lr.max+1 {
			// The whole line is in the bufio buffer.
			line = chunk[:len(chunk)-1]
			return line, bytes.IndexByte(line, 0) >= 0, nil
		}
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return nil, false, err
		}
		data := chunk
		if err == nil {
			data = chunk[:len(chunk)-1]
		}
		if len(chunk) > 0 {
			got = true
		}
		if bytes.IndexByte(data, 0) >= 0 {
			nul = true
		}
		if room := lr.max - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, data[:min(room, len(data))]...)
		}
		switch err {
		case nil:
			return lr.buf, nul, nil
		case io.EOF:
			if !got {
				return nil, false, io.EOF
			}
			return lr.buf, nul, nil
		}
		// bufio.ErrBufferFull: the line goes on.
	}
}

// grepRing holds the last few lines not emitted, for before-context.
type grepRing struct {
	entries []grepRingEntry
	start   int // index of the oldest entry once full
	n       int // entries in use
	out     []grepRingEntry
}

type grepRingEntry struct {
	num  int
	text []byte
}

// push adds a copy of line, dropping the oldest line beyond size.
func (r *grepRing) push(size, num int, line []byte) {
	var e *grepRingEntry
	if r.n < size {
		if r.n == len(r.entries) {
			r.entries = append(r.entries, grepRingEntry{})
		}
		e = &r.entries[(r.start+r.n)%len(r.entries)]
		r.n++
	} else {
		e = &r.entries[r.start]
		r.start = (r.start + 1) % len(r.entries)
	}
	e.num = num
	e.text = append(e.text[:0], line...)
}

// drain returns the held lines, oldest first, and empties the ring. The
// result is valid until the next push.
func (r *grepRing) drain() []grepRingEntry {
	r.out = r.out[:0]
	for i := 0; i < r.n; i++ {
		r.out = append(r.out, r.entries[(r.start+i)%len(r.entries)])
	}
	r.start, r.n = 0, 0
	return r.out
}

// ---- include / exclude ----

// fileFilter applies grep's Include and Exclude globs to file paths
// relative to the searched directory. A pattern with no '/' is matched
// against the file's base name, any other against the whole relative path
// (so "*.go" selects Go files at any depth, "cmd/*.go" only those directly
// in cmd, and "**/testdata/**" everything under any testdata directory).
// A file is allowed when it matches some include pattern (or there are
// none) and no exclude pattern. Empty patterns are ignored.
type fileFilter struct {
	include, exclude []fileFilterGlob
}

type fileFilterGlob struct {
	g    *globPattern
	path bool // match the relative path, not the base name
}

// newFileFilter compiles include and exclude; a malformed pattern is an
// error wrapping syscall.EINVAL.
func newFileFilter(include, exclude []string) (*fileFilter, error) {
	f := &fileFilter{}
	var err error
	if f.include, err = compileFileFilterGlobs(include); err != nil {
		return nil, err
	}
	if f.exclude, err = compileFileFilterGlobs(exclude); err != nil {
		return nil, err
	}
	return f, nil
}

func compileFileFilterGlobs(patterns []string) ([]fileFilterGlob, error) {
	var out []fileFilterGlob
	for _, p := range patterns {
		if p == "" {
			continue
		}
		g, err := compileGlob(p)
		if err != nil {
			return nil, err
		}
		out = append(out, fileFilterGlob{g: g, path: strings.Contains(p, "/")})
	}
	return out, nil
}

func (fg *fileFilterGlob) match(rel, base string) bool {
	if fg.path {
		return fg.g.Match(rel)
	}
	return fg.g.Match(base)
}

// Allow reports whether the file at rel passes the filter. A nil filter
// allows everything.
func (f *fileFilter) Allow(rel string) bool {
	if f == nil {
		return true
	}
	rel = strings.TrimRight(rel, "/")
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	if len(f.include) > 0 {
		ok := false
		for i := range f.include {
			if f.include[i].match(rel, base) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for i := range f.exclude {
		if f.exclude[i].match(rel, base) {
			return false
		}
	}
	return true
}

// matchesFileFilters is newFileFilter(include, exclude).Allow(rel), for a
// single use; a walker should build the fileFilter once.
func matchesFileFilters(rel string, include, exclude []string) (bool, error) {
	f, err := newFileFilter(include, exclude)
	if err != nil {
		return false, err
	}
	return f.Allow(rel), nil
}
