package coreutils

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func runBc(t testing.TB, args []string, src string) (string, string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	e := &Env{FS: DirFS{Root: t.TempDir()}, Dir: "/", Stdin: strings.NewReader(src), Stdout: &out, Stderr: &errb, Now: time.Now}
	code := txtBcMain(ctx, e, append([]string{"bc"}, args...))
	return out.String(), errb.String(), code
}

func TestBc(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		src, want string
		code      int
	}{
		{nil, "1+2*3\n", "7\n", 0},
		{nil, "scale=3; 1/3\n", ".333\n", 0},
		{nil, "-7/2; -7%2\n", "-3\n-1\n", 0},
		{[]string{"-l"}, "e(0); l(1)\n", "1.00000000000000000000\n0\n", 0},
		{nil, "2^9999999999\n", "", 1},
		{nil, "x=10^1000000; x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x\n", "", 1},
		{nil, "1/0; 2\n", "2\n", 1},
		{nil, "while (1) 1\n", "", 1},
	} {
		out, _, code := runBc(t, tc.args, tc.src)
		if out != tc.want || code != tc.code {
			t.Errorf("bc %v <<< %q: %q, exit %d; want %q, exit %d", tc.args, tc.src, out, code, tc.want, tc.code)
		}
	}
}

// FuzzBc: no input makes bc panic or hang.
func FuzzBc(f *testing.F) {
	for _, s := range []string{"1+2", "scale=20; 4*a(1)", "obase=16; ibase=2; 1010.11", "x=3; x^=2; x++; --x", "\"str\"; 1 && 0 || !1", "sqrt(2) % 0.3", "-2^-2", "(1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 200 {
			return
		}
		runBc(t, []string{"-l"}, src)
	})
}
