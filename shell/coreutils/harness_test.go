package coreutils

// The differential test harness: a command runs once through this
// package on a copy of a tree and once as the real GNU tool (through
// bash) on another copy; stdout, stderr, exit status and the resulting
// trees must agree.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// fixedNow is the clock of both sides where a command reads it.
var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// makeTree builds the standard test tree in a new directory.
func makeTree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"a.txt":            "alpha\nbeta\ngamma\nalpha beta\n",
		"b.txt":            "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n",
		"nums.txt":         "10\n9\n100\n-3\n2.5\n10\n",
		"csv.txt":          "name,age,city\nann,31,paris\nbob,25,rome\ncid,40,oslo\n",
		"noeol.txt":        "last line without newline",
		"empty.txt":        "",
		"crlf.txt":         "dos\r\nline\r\n",
		"src/main.go":      "package main\n\n// TODO: more\nfunc main() {\n\tprintln(\"hi\")\n}\n",
		"src/util.go":      "package main\n\nfunc helper() int { return 42 } // TODO later\n",
		"src/README.md":    "# Title\n\nSome *text*.\nTODO: write docs\n",
		"src/sub/deep.txt": "deep\nfile\n",
		".hidden":          "secret\n",
		"dup.txt":          "x\nx\ny\ny\ny\nz\nx\n",
		"data.json":        `{"name":"computerfs","tags":["fs","fuse"],"n":3,"nested":{"a":[1,2,{"b":null}]}}` + "\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("ab\x00cd\nTODO\x00\n"), 0o644)
	os.Symlink("a.txt", filepath.Join(dir, "link.txt"))
	os.Mkdir(filepath.Join(dir, "emptydir"), 0o755)
	os.Chmod(filepath.Join(dir, "src/main.go"), 0o755)
	// Fixed times, so that ls -l and find -newer agree on both sides.
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink == 0 {
			os.Chtimes(p, fixedNow.Add(-time.Hour), fixedNow.Add(-time.Hour))
		}
		return nil
	})
	os.Chtimes(filepath.Join(dir, "b.txt"), fixedNow, fixedNow)
	return dir
}

// copyTree copies src into a new directory, keeping modes and times.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

type outcome struct {
	stdout, stderr string
	code           int
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", o.code, o.stdout, o.stderr)
}

// testEnv is an Env over dir, working in cwd (a workspace path).
func testEnv(dir, cwd string, stdin io.Reader, stdout, stderr io.Writer) *Env {
	e := &Env{
		FS: DirFS{Root: dir}, Dir: cwd, Vars: map[string]string{"HOME": "/", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Now: func() time.Time { return fixedNow },
	}
	e.Run = func(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
		f, ok := Lookup(args[0])
		if !ok {
			fmt.Fprintf(errw, "%s: command not found\n", args[0])
			return 127
		}
		sub := *e
		sub.Stdin, sub.Stdout, sub.Stderr = in, out, errw
		return f(ctx, &sub, args)
	}
	return e
}

// runOurs runs one command of this package on dir.
func runOurs(t testing.TB, dir, stdin string, args ...string) outcome {
	t.Helper()
	f, ok := Lookup(args[0])
	if !ok {
		t.Fatalf("no command %q", args[0])
	}
	var out, errb bytes.Buffer
	e := testEnv(dir, "/", strings.NewReader(stdin), &out, &errb)
	code := f(context.Background(), e, args)
	return outcome{out.String(), errb.String(), code}
}

// runGNU runs the same command line with the real tools in dir.
func runGNU(t testing.TB, dir, stdin string, args ...string) outcome {
	t.Helper()
	var quoted []string
	for _, a := range args {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	cmd := exec.Command("bash", "-c", strings.Join(quoted, " "))
	cmd.Dir = dir
	cmd.Env = []string{"HOME=/", "PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "TZ=UTC"}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return outcome{out.String(), errb.String(), code}
}

// treeState lists a tree's paths, modes, sizes and contents, for
// comparing the effects of two runs.
func treeState(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d", rel, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		} else if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// compareGNU runs args both ways on copies of tree and fails the test on
// any difference in stdout, stderr, exit status or resulting tree.
func compareGNU(t *testing.T, tree, stdin string, args ...string) {
	t.Helper()
	ours, gnu := copyTree(t, tree), copyTree(t, tree)
	a := runOurs(t, ours, stdin, args...)
	b := runGNU(t, gnu, stdin, args...)
	if a.stdout != b.stdout || a.stderr != b.stderr || a.code != b.code {
		t.Errorf("%q differs from GNU:\nours: %s\nGNU:  %s", args, a, b)
		return
	}
	if sa, sb := treeState(t, ours), treeState(t, gnu); sa != sb {
		t.Errorf("%q leaves a different tree:\nours:\n%s\nGNU:\n%s", args, sa, sb)
	}
}
