package workspace

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
)

// EditError reports why edit number Index (0-based) of an edit call could
// not be applied. It wraps syscall.EINVAL, so errors.Is(err,
// syscall.EINVAL) holds for every EditError.
type EditError struct {
	Index  int
	Reason string
	// Count is how many times Old was found when that was the problem
	// (0 for "not found", n > 1 for an ambiguous match), else 0.
	Count int
}

func (e *EditError) Error() string {
	return fmt.Sprintf("edit %d: %s", e.Index, e.Reason)
}

// Unwrap makes errors.Is(err, syscall.EINVAL) and errors.As(err,
// *syscall.Errno) see an EditError as EINVAL.
func (e *EditError) Unwrap() error { return syscall.EINVAL }

// applyEdits applies edits in order, each to the result of the previous
// one, and returns the final content and how many replacements each edit
// made. It is all or nothing: on an error out is nil and nothing should be
// written. out never aliases content.
//
// Each Old must occur exactly once, unless ReplaceAll is set, in which case
// it must occur at least once and every non-overlapping occurrence (left to
// right) is replaced. Overlapping occurrences count as ambiguous: "aa" in
// "aaa" occurs twice.
//
// Line endings are preserved. A file is CRLF when most of its "\n" are
// preceded by "\r" (judged once, on content). If Old does not occur
// verbatim, it is retried with its line endings converted to the file's:
// in a CRLF file bare "\n" become "\r\n" (existing "\r\n" stay), in an LF
// file "\r\n" become "\n"; New is converted the same way. In a CRLF file an
// Old without any "\n" says nothing about line endings, so the bare "\n" of
// its New become "\r\n" too. Otherwise New is inserted verbatim.
//
// Content is treated as bytes; it need not be valid UTF-8.
func applyEdits(content []byte, edits []Edit) (out []byte, counts []int, err error) {
	crlf := isCRLF(content)
	cur := content
	counts = make([]int, len(edits))
	for i, e := range edits {
		if e.Old == "" {
			return nil, nil, &EditError{Index: i, Reason: "old string is empty"}
		}
		if e.Old == e.New {
			return nil, nil, &EditError{Index: i, Reason: "old and new are the same"}
		}
		old, nw := e.Old, e.New
		n, at := findOld(cur, old, e.ReplaceAll)
		if n == 0 {
			// Retry with the file's line endings.
			var old2, new2 string
			switch {
			case crlf && hasBareLF(old):
				old2, new2 = lfToCRLF(old), lfToCRLF(nw)
			case !crlf && strings.Contains(old, "\r\n"):
				old2, new2 = crlfToLF(old), crlfToLF(nw)
			}
			if old2 != "" {
				if n2, at2 := findOld(cur, old2, e.ReplaceAll); n2 > 0 {
					old, nw, n, at = old2, new2, n2, at2
				}
			}
		} else if crlf && !strings.Contains(old, "\n") {
			nw = lfToCRLF(nw)
		}
		switch {
		case n == 0:
			return nil, nil, &EditError{Index: i, Reason: "old string not found"}
		case n > 1 && !e.ReplaceAll:
			return nil, nil, &EditError{Index: i, Count: n,
				Reason: fmt.Sprintf("old string occurs %d times; give more context or set replace_all", n)}
		}
		if e.ReplaceAll {
			cur = bytes.Replace(cur, []byte(old), []byte(nw), -1)
		} else {
			next := make([]byte, 0, len(cur)-len(old)+len(nw))
			next = append(next, cur[:at]...)
			next = append(next, nw...)
			next = append(next, cur[at+len(old):]...)
			cur = next
		}
		counts[i] = n
	}
	if len(edits) == 0 {
		cur = bytes.Clone(content)
	}
	return cur, counts, nil
}

// findOld reports how often old occurs in s and, when n == 1, where.
// With all set n is the number of non-overlapping occurrences (what
// bytes.Replace replaces). Without it n is 0, 1, or (for an ambiguous
// match) at least 2: the non-overlapping count, but never below 2 when a
// second, overlapping occurrence exists.
func findOld(s []byte, old string, all bool) (n, at int) {
	ob := []byte(old)
	if all {
		return bytes.Count(s, ob), -1
	}
	at = bytes.Index(s, ob)
	if at < 0 {
		return 0, -1
	}
	if bytes.Index(s[at+1:], ob) < 0 {
		return 1, at
	}
	return max(bytes.Count(s, ob), 2), -1
}

// isCRLF reports whether most of the "\n" in b are preceded by "\r".
func isCRLF(b []byte) bool {
	lf := bytes.Count(b, []byte("\n"))
	crlf := bytes.Count(b, []byte("\r\n"))
	return lf > 0 && 2*crlf > lf
}

// hasBareLF reports whether s has a "\n" not preceded by "\r".
func hasBareLF(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			return true
		}
	}
	return false
}

// lfToCRLF turns every bare "\n" of s into "\r\n", leaving "\r\n" alone.
func lfToCRLF(s string) string {
	if !hasBareLF(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// crlfToLF turns every "\r\n" of s into "\n".
func crlfToLF(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}
