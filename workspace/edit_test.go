package workspace

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestApplyEdits(t *testing.T) {
	tests := []struct {
		name    string
		content string
		edits   []Edit
		want    string
		counts  []int
		errIdx  int    // index in the EditError, when wantErr != ""
		wantErr string // substring of the error
		errCnt  int
	}{
		{name: "single", content: "hello world\n", edits: []Edit{{Old: "world", New: "there"}},
			want: "hello there\n", counts: []int{1}},
		{name: "delete", content: "a\nb\nc\n", edits: []Edit{{Old: "b\n", New: ""}},
			want: "a\nc\n", counts: []int{1}},
		{name: "no edits", content: "x", edits: nil, want: "x", counts: []int{}},
		{name: "sequential", content: "one two three",
			edits: []Edit{{Old: "one", New: "1"}, {Old: "1 two", New: "12"}},
			want:  "12 three", counts: []int{1, 1}},
		{name: "second sees first", content: "foo",
			edits:  []Edit{{Old: "foo", New: "bar"}, {Old: "foo", New: "baz"}},
			errIdx: 1, wantErr: "edit 1: old string not found"},
		{name: "not found", content: "abc", edits: []Edit{{Old: "x", New: "y"}},
			errIdx: 0, wantErr: "edit 0: old string not found"},
		{name: "first error wins", content: "x x x", edits: []Edit{{Old: "a", New: "b"}, {Old: "x", New: "y"}},
			errIdx: 0, wantErr: "edit 0: old string not found"},
		{name: "ambiguous count", content: "x x x", edits: []Edit{{Old: "x", New: "y"}},
			errIdx: 0, errCnt: 3,
			wantErr: "edit 0: old string occurs 3 times; give more context or set replace_all"},
		{name: "overlapping is ambiguous", content: "aaa", edits: []Edit{{Old: "aa", New: "b"}},
			errIdx: 0, errCnt: 2, wantErr: "occurs 2 times"},
		{name: "replace all", content: "x x x", edits: []Edit{{Old: "x", New: "yy", ReplaceAll: true}},
			want: "yy yy yy", counts: []int{3}},
		{name: "replace all once", content: "x", edits: []Edit{{Old: "x", New: "y", ReplaceAll: true}},
			want: "y", counts: []int{1}},
		{name: "replace all non-overlapping", content: "aaaa", edits: []Edit{{Old: "aaa", New: "b", ReplaceAll: true}},
			want: "ba", counts: []int{1}},
		{name: "replace all missing", content: "abc", edits: []Edit{{Old: "x", New: "y", ReplaceAll: true}},
			errIdx: 0, wantErr: "edit 0: old string not found"},
		{name: "empty old", content: "abc", edits: []Edit{{Old: "a", New: "b"}, {Old: "", New: "y"}},
			errIdx: 1, wantErr: "edit 1: old string is empty"},
		{name: "same", content: "abc", edits: []Edit{{Old: "a", New: "a"}},
			errIdx: 0, wantErr: "edit 0: old and new are the same"},
		{name: "error after success is atomic", content: "abc",
			edits:  []Edit{{Old: "a", New: "z"}, {Old: "q", New: "r"}},
			errIdx: 1, wantErr: "not found"},
		{name: "not utf8", content: "\xff\xfe\x00abc\x80", edits: []Edit{{Old: "\x00a", New: "\xc3"}},
			want: "\xff\xfe\xc3bc\x80", counts: []int{1}},

		// Line endings.
		{name: "crlf retry", content: "a\r\nb\r\nc\r\n", edits: []Edit{{Old: "a\nb\n", New: "x\ny\nz\n"}},
			want: "x\r\ny\r\nz\r\nc\r\n", counts: []int{1}},
		{name: "crlf retry mixed old", content: "a\r\nb\r\nc\r\n", edits: []Edit{{Old: "a\r\nb\n", New: "x\r\ny\n"}},
			want: "x\r\ny\r\nc\r\n", counts: []int{1}},
		{name: "crlf verbatim", content: "a\r\nb\r\nc\r\n", edits: []Edit{{Old: "a\r\nb", New: "x\ny"}},
			want: "x\ny\r\nc\r\n", counts: []int{1}},
		{name: "crlf single line old", content: "a\r\nb\r\n", edits: []Edit{{Old: "a", New: "a\nnew"}},
			want: "a\r\nnew\r\nb\r\n", counts: []int{1}},
		{name: "crlf replace all retry", content: "a\r\nb\r\na\r\nb\r\n",
			edits: []Edit{{Old: "a\nb", New: "c\nd", ReplaceAll: true}},
			want:  "c\r\nd\r\nc\r\nd\r\n", counts: []int{2}},
		{name: "crlf retry not found", content: "a\r\nb\r\n", edits: []Edit{{Old: "a\nc", New: "x"}},
			errIdx: 0, wantErr: "not found"},
		{name: "crlf retry ambiguous", content: "a\r\nb\r\na\r\nb\r\n", edits: []Edit{{Old: "a\nb", New: "x"}},
			errIdx: 0, errCnt: 2, wantErr: "occurs 2 times"},
		{name: "lf file crlf old", content: "a\nb\nc\n", edits: []Edit{{Old: "a\r\nb\r\n", New: "x\r\ny\r\n"}},
			want: "x\ny\nc\n", counts: []int{1}},
		{name: "lf file single line old", content: "a\nb\n", edits: []Edit{{Old: "a", New: "a\r\nnew"}},
			want: "a\r\nnew\nb\n", counts: []int{1}},
		{name: "minority crlf is lf", content: "a\r\nb\nc\n", edits: []Edit{{Old: "b", New: "b\nx"}},
			want: "a\r\nb\nx\nc\n", counts: []int{1}},
		{name: "crlf file bare lf verbatim", content: "a\r\nb\nc\r\nd\r\n", edits: []Edit{{Old: "b\nc", New: "x\ny"}},
			want: "a\r\nx\ny\r\nd\r\n", counts: []int{1}},
		{name: "conversion may make a no-op", content: "a\r\nb\r\n", edits: []Edit{{Old: "a\nb", New: "a\r\nb"}},
			want: "a\r\nb\r\n", counts: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := []byte(tt.content)
			content := bytes.Clone(orig)
			out, counts, err := applyEdits(content, tt.edits)
			if !bytes.Equal(content, orig) {
				t.Fatalf("content modified: %q", content)
			}
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("got %q, %v; want error %q", out, counts, tt.wantErr)
				}
				if out != nil || counts != nil {
					t.Errorf("error with output %q, %v", out, counts)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, syscall.EINVAL) {
					t.Errorf("error %v is not EINVAL", err)
				}
				var errno syscall.Errno
				if !errors.As(err, &errno) || errno != syscall.EINVAL {
					t.Errorf("errors.As errno = %v", errno)
				}
				var ee *EditError
				if !errors.As(err, &ee) {
					t.Fatalf("error %T is not an *EditError", err)
				}
				if ee.Index != tt.errIdx || ee.Count != tt.errCnt {
					t.Errorf("EditError index %d count %d, want %d %d", ee.Index, ee.Count, tt.errIdx, tt.errCnt)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if string(out) != tt.want {
				t.Errorf("got %q, want %q", out, tt.want)
			}
			if len(counts) != len(tt.counts) {
				t.Fatalf("counts %v, want %v", counts, tt.counts)
			}
			for i := range counts {
				if counts[i] != tt.counts[i] {
					t.Errorf("counts %v, want %v", counts, tt.counts)
				}
			}
			if len(out) > 0 && len(orig) > 0 && &out[0] == &content[0] {
				t.Errorf("output aliases content")
			}
		})
	}
}

func TestEditErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  *EditError
		want string
	}{
		{&EditError{Index: 2, Reason: "old string not found"}, "edit 2: old string not found"},
		{&EditError{Index: 0, Reason: "old string is empty"}, "edit 0: old string is empty"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	_, _, err := applyEdits([]byte("w\nx\nx\nx\n"), []Edit{{Old: "w", New: "v"}, {Old: "x", New: "y"}})
	if err == nil || err.Error() != "edit 1: old string occurs 3 times; give more context or set replace_all" {
		t.Errorf("got %v", err)
	}
}

// refApplyEdits is a slow, direct reading of applyEdits' rules.
func refApplyEdits(content string, edits []Edit) (string, []int, int) {
	lf, crlfN := 0, 0
	for i := 0; i < len(content); i++ {
		if content[i] == '\n' {
			lf++
			if i > 0 && content[i-1] == '\r' {
				crlfN++
			}
		}
	}
	crlf := crlfN*2 > lf
	toCRLF := func(s string) string {
		var b []byte
		for i := 0; i < len(s); i++ {
			if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
				b = append(b, '\r')
			}
			b = append(b, s[i])
		}
		return string(b)
	}
	toLF := func(s string) string {
		var b []byte
		for i := 0; i < len(s); i++ {
			if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b = append(b, s[i])
		}
		return string(b)
	}
	// positions of all (overlapping) occurrences
	find := func(s, old string) []int {
		var at []int
		for p := 0; p+len(old) <= len(s); p++ {
			if s[p:p+len(old)] == old {
				at = append(at, p)
			}
		}
		return at
	}
	cur := content
	counts := make([]int, len(edits))
	for i, e := range edits {
		if e.Old == "" || e.Old == e.New {
			return "", nil, i
		}
		old, nw := e.Old, e.New
		at := find(cur, old)
		if len(at) == 0 {
			var o2, n2 string
			if crlf && toCRLF(old) != old {
				o2, n2 = toCRLF(old), toCRLF(nw)
			} else if !crlf && strings.Contains(old, "\r\n") {
				o2, n2 = toLF(old), toLF(nw)
			}
			if o2 != "" {
				if at2 := find(cur, o2); len(at2) > 0 {
					old, nw, at = o2, n2, at2
				}
			}
		} else if crlf && !strings.Contains(old, "\n") {
			nw = toCRLF(nw)
		}
		if len(at) == 0 || len(at) > 1 && !e.ReplaceAll {
			return "", nil, i
		}
		var b strings.Builder
		last := 0
		for _, p := range at {
			if p < last {
				continue // overlaps the previous replacement
			}
			b.WriteString(cur[last:p])
			b.WriteString(nw)
			last = p + len(old)
			counts[i]++
		}
		b.WriteString(cur[last:])
		cur = b.String()
	}
	return cur, counts, -1
}

func FuzzApplyEdits(f *testing.F) {
	f.Add("hello world\n", "world", "there", false, "", "", false)
	f.Add("x x x", "x", "y", true, "y", "zz", true)
	f.Add("a\r\nb\r\nc\r\n", "a\nb", "x\ny", false, "c", "c\nd", false)
	f.Add("a\nb\nc\n", "a\r\nb", "x\r\ny", false, "", "", false)
	f.Add("aaaa", "aa", "a", true, "a", "aa", false)
	f.Add("\r\n\n\r\n", "\n", "\r\n", true, "\r", "", true)
	f.Fuzz(func(t *testing.T, content, old1, new1 string, all1 bool, old2, new2 string, all2 bool) {
		edits := []Edit{{Old: old1, New: new1, ReplaceAll: all1}}
		if old2 != "" || new2 != "" {
			edits = append(edits, Edit{Old: old2, New: new2, ReplaceAll: all2})
		}
		orig := []byte(content)
		in := bytes.Clone(orig)
		out, counts, err := applyEdits(in, edits)
		if !bytes.Equal(in, orig) {
			t.Fatalf("input modified")
		}
		want, wantCounts, wantErrIdx := refApplyEdits(content, edits)
		if err != nil {
			var ee *EditError
			if !errors.As(err, &ee) || !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("error %v (%T) is not an EINVAL EditError", err, err)
			}
			if out != nil || counts != nil {
				t.Fatalf("output with error")
			}
			if ee.Index != wantErrIdx {
				t.Fatalf("error at edit %d (%v), reference fails at %d (result %q)", ee.Index, err, wantErrIdx, want)
			}
			return
		}
		if wantErrIdx >= 0 {
			t.Fatalf("got %q, reference fails at edit %d", out, wantErrIdx)
		}
		if string(out) != want {
			t.Fatalf("got %q, reference %q", out, want)
		}
		for i := range counts {
			if counts[i] != wantCounts[i] || counts[i] < 1 || !edits[i].ReplaceAll && counts[i] != 1 {
				t.Fatalf("counts %v, reference %v", counts, wantCounts)
			}
		}
		last := edits[len(edits)-1]
		if !last.ReplaceAll && !strings.Contains(want, last.New) &&
			!strings.Contains(want, lfToCRLF(last.New)) && !strings.Contains(want, crlfToLF(last.New)) {
			t.Fatalf("New %q of the last edit not in output %q", last.New, out)
		}
	})
}
