package mcpserver

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzNumberLines: read's line decoder gives the same window whatever the
// size of its buffer (long lines are read in pieces), numbers lines as cat
// -n does, and, when no line is cut, gives back the file's lines.
func FuzzNumberLines(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), 1, 10)
	f.Add([]byte(strings.Repeat("é", 3000)+"\n"+strings.Repeat("x\xe2\x82", 900)+"\r\n"), 1, 2)
	f.Add([]byte("\n\n\n"), 2, 1)
	f.Add([]byte("\xff\xfe\r"), 1, 1)
	f.Fuzz(func(t *testing.T, data []byte, start, limit int) {
		start = 1 + abs(start)%8
		limit = 1 + abs(limit)%8
		small, err := numberLines(bufio.NewReaderSize(bytes.NewReader(data), 16), start, limit, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		big, err := numberLines(bufio.NewReaderSize(bytes.NewReader(data), 1<<16), start, limit, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		if small.text.String() != big.text.String() || small.lines != big.lines || small.cut != big.cut || small.shown != big.shown {
			t.Fatalf("buffer sizes disagree:\n%q (%d lines, %d cut)\n%q (%d lines, %d cut)", small.text.String(), small.lines, small.cut, big.text.String(), big.lines, big.cut)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if big.lines != len(lines) || !big.eof {
			t.Fatalf("%d lines, want %d", big.lines, len(lines))
		}
		var want strings.Builder
		for i := start - 1; i < len(lines) && i < start-1+limit; i++ {
			l := strings.TrimSuffix(strings.TrimSuffix(string(lines[i]), "\n"), "\r")
			if utf8.RuneCountInString(l) > maxLineChars {
				return // cut: shown differently, checked above
			}
			want.WriteString(l + "\n")
		}
		var raw strings.Builder
		for i, l := range strings.SplitAfter(big.text.String(), "\n") {
			if l == "" {
				continue
			}
			if len(l) < 7 || l[6] != '\t' || strings.TrimSpace(l[:6]) != itoa(start+i) {
				t.Fatalf("line %d not numbered as cat -n: %q", i, l)
			}
			raw.WriteString(l[7:])
		}
		if raw.String() != want.String() {
			t.Fatalf("lines %q, want %q", raw.String(), want.String())
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}

func itoa(n int) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// FuzzSplitGlobs: rg --glob's argument splits at top-level commas and
// spaces only, never inside braces, and loses no pattern character.
func FuzzSplitGlobs(f *testing.F) {
	f.Add("*.ts, *.tsx")
	f.Add("*.{ts,tsx} !*.d.ts")
	f.Add("}{,,{")
	f.Fuzz(func(t *testing.T, s string) {
		parts := splitGlobs(s)
		if !utf8.ValidString(s) {
			return // split it must; joined, invalid bytes may make new characters
		}
		strip := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r == ',' || unicode.IsSpace(r) {
					return -1
				}
				return r
			}, s)
		}
		if strip(strings.Join(parts, "")) != strip(s) {
			t.Fatalf("splitGlobs(%q) = %q lost characters", s, parts)
		}
		for _, p := range parts {
			if p == "" || strings.TrimSpace(p) != p {
				t.Fatalf("splitGlobs(%q) = %q: empty or padded part", s, parts)
			}
		}
	})
}
