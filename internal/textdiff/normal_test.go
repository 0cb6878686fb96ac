package textdiff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gnuNormal runs GNU diff in its normal format on a and b.
func gnuNormal(t *testing.T, dir, a, b string) string {
	t.Helper()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("diff", "--text", pa, pb).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("diff: %v", err)
		}
	}
	return string(out)
}

func TestNormal(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"x\n", "x\n", ""},
		{"a\nb\n", "a\nc\n", "2c2\n< b\n---\n> c\n"},
		{"a\n", "a\nb\nc\n", "1a2,3\n> b\n> c\n"},
		{"a\nb\nc\n", "c\n", "1,2d0\n< a\n< b\n"},
		{"", "x", "0a1\n> x\n\\ No newline at end of file\n"},
		{"a\nb", "a\nb\n", "2c2\n< b\n\\ No newline at end of file\n---\n> b\n"},
		{"1\n2\n3\n4\n", "1\nx\n3\ny\nz\n", "2c2\n< 2\n---\n> x\n4c4,5\n< 4\n---\n> y\n> z\n"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		got := Normal([]byte(tt.a), []byte(tt.b))
		if got != tt.want {
			t.Errorf("Normal(%q, %q) =\n%s\nwant\n%s", tt.a, tt.b, got, tt.want)
		}
		if haveDiff {
			if gnu := gnuNormal(t, dir, tt.a, tt.b); gnu != tt.want {
				t.Errorf("GNU diff of %q, %q gives\n%s\nwant\n%s", tt.a, tt.b, gnu, tt.want)
			}
		}
	}
}

// TestNormalGNUExact compares with GNU diff where the diff is unique, and
// counts agreement on small random files, where it need not be.
func TestNormalGNUExact(t *testing.T) {
	if !haveDiff {
		t.Skip("no diff(1)")
	}
	r := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	fresh := 0
	for iter := 0; iter < 300; iter++ {
		var al, bl []string
		for i := r.IntN(25); i > 0; i-- {
			line := fmt.Sprintf("line %d\n", len(al))
			al = append(al, line)
			switch x := r.IntN(10); {
			case x == 0:
			case x == 1:
				fresh++
				bl = append(bl, fmt.Sprintf("new %d\n", fresh))
			case x == 2:
				for k := r.IntN(3); k >= 0; k-- {
					fresh++
					bl = append(bl, fmt.Sprintf("new %d\n", fresh))
				}
				bl = append(bl, line)
			default:
				bl = append(bl, line)
			}
		}
		a, b := strings.Join(al, ""), strings.Join(bl, "")
		if r.IntN(4) == 0 && a != "" {
			a = a[:len(a)-1]
		}
		if got, gnu := Normal([]byte(a), []byte(b)), gnuNormal(t, dir, a, b); got != gnu {
			t.Fatalf("a=%q\nb=%q\ngot:\n%s\nGNU:\n%s", a, b, got, gnu)
		}
	}
	alphabet := []string{"a", "b", "c", "", "d"}
	same, n := 0, 300
	for iter := 0; iter < n; iter++ {
		a := randFile(r, alphabet, 12)
		b := mutate(r, a, alphabet)
		got := Normal([]byte(a), []byte(b))
		if got == gnuNormal(t, dir, a, b) {
			same++
		}
	}
	t.Logf("%d/%d ambiguous diffs identical to GNU's", same, n)
}

// TestEditsFormats checks NormalEdits and UnifiedEdits agree with Normal
// and UnifiedHunks on random texts.
func TestEditsFormats(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	alphabet := []string{"a", "b", "c", "", "d"}
	for iter := 0; iter < 2000; iter++ {
		a := randFile(r, alphabet, 15)
		b := mutate(r, a, alphabet)
		cs := Edits([]byte(a), []byte(b))
		if got, want := NormalEdits([]byte(a), []byte(b), cs), Normal([]byte(a), []byte(b)); got != want {
			t.Fatalf("%q %q: NormalEdits\n%s\nNormal\n%s", a, b, got, want)
		}
		// Unified's hunks come from a wider window; they agree when the
		// context is 0 and otherwise apply all the same.
		ctx := r.IntN(4)
		got := UnifiedEdits([]byte(a), []byte(b), cs, ctx)
		if ctx == 0 {
			if want := UnifiedHunks([]byte(a), []byte(b), 0); got != want {
				t.Fatalf("%q %q: UnifiedEdits\n%s\nUnifiedHunks\n%s", a, b, got, want)
			}
		}
		if got != "" {
			got = "--- old\n+++ new\n" + got
		}
		checkApplies(t, a, b, got)
	}
}
