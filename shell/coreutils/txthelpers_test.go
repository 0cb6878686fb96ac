package coreutils

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// txtCase is one command line compared with GNU's.
type txtCase struct {
	stdin string
	args  []string
}

// txtC builds a case without stdin.
func txtC(args ...string) txtCase { return txtCase{args: args} }

// txtI builds a case with stdin.
func txtI(stdin string, args ...string) txtCase { return txtCase{stdin: stdin, args: args} }

// txtTree is the standard tree plus extra files.
func txtTree(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := makeTree(t)
	for name, content := range extra {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// txtRun compares every case with GNU on tree.
func txtRun(t *testing.T, tree string, cases []txtCase) {
	t.Helper()
	for _, c := range cases {
		c := c
		name := strings.Join(c.args, " ")
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			compareGNU(t, tree, c.stdin, c.args...)
		})
	}
}

// txtExpect runs ours and checks stdout, stderr and status.
func txtExpect(t *testing.T, tree, stdin string, wantOut, wantErr string, wantCode int, args ...string) {
	t.Helper()
	o := runOurs(t, tree, stdin, args...)
	if o.stdout != wantOut || o.stderr != wantErr || o.code != wantCode {
		t.Errorf("%q:\ngot:  %s\nwant: %s", args, o, outcome{wantOut, wantErr, wantCode})
	}
}

// txtCompareAbs compares with GNU where output names absolute paths:
// the GNU side's tree prefix is removed from its output.
func txtCompareAbs(t *testing.T, tree, stdin string, args ...string) {
	t.Helper()
	ours, gnu := copyTree(t, tree), copyTree(t, tree)
	a := runOurs(t, ours, stdin, args...)
	b := runGNU(t, gnu, stdin, args...)
	real, err := filepath.EvalSymlinks(gnu)
	if err != nil {
		t.Fatal(err)
	}
	fix := func(s string) string {
		s = strings.ReplaceAll(s, real+"/", "/")
		s = strings.ReplaceAll(s, real, "/")
		return s
	}
	b.stdout, b.stderr = fix(b.stdout), fix(b.stderr)
	if a.stdout != b.stdout || a.stderr != b.stderr || a.code != b.code {
		t.Errorf("%q differs from GNU:\nours: %s\nGNU:  %s", args, a, b)
	}
}

var _ = context.Background
