package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGNUFlags checks the command line's conventions on a real store (no
// daemon): combined one-letter flags, flags after the positional
// arguments, long names for one-letter flags, and "--".
func TestGNUFlags(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	mustCLI(t, home, "init", ws)
	fs := func(stdin string, args ...string) result {
		t.Helper()
		r, err := runCfs(home, stdin, nil, append([]string{"fs"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		noCrash(t, r, args...)
		return r
	}
	for _, p := range []string{"/d/sub/One.txt", "/d/two.txt", "/-dash"} {
		// -p before the path, -w after it.
		if r := fs("Hello there\n", "write", "-p", p, "-w", ws); r.code != 0 {
			t.Fatalf("fs write -p %s: %v", p, r)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stdout
		not  []string
	}{
		{name: "ls -lR", args: []string{"ls", "-lR", "/d"}, want: []string{"/d/sub/One.txt", "-rw-r--r--"}},
		{name: "ls -Rl after path", args: []string{"ls", "/d", "-Rl"}, want: []string{"/d/sub/One.txt", "-rw-r--r--"}},
		{name: "ls --long --recursive", args: []string{"ls", "--long", "--recursive", "/d"}, want: []string{"/d/sub/One.txt", "-rw-r--r--"}},
		{name: "grep -il", args: []string{"grep", "-il", "HELLO", "/d"}, want: []string{"/d/sub/One.txt\n", "/d/two.txt\n"}, not: []string{":1:"}},
		{name: "grep -i -l separate", args: []string{"grep", "-i", "-l", "HELLO", "/d"}, want: []string{"/d/two.txt\n"}},
		{name: "grep -ic", args: []string{"grep", "-ic", "hello", "/d"}, want: []string{"/d/two.txt:1"}},
		{name: "grep -C1 attached value", args: []string{"grep", "-C1", "Hello", "/d/two.txt"}, want: []string{"Hello there"}},
		{name: "grep case", args: []string{"grep", "-l", "HELLO", "/d"}, code: exitNoMatch},
		{name: "cat a dash path after --", args: []string{"cat", "--", "/-dash"}, want: []string{"Hello there"}},
		{name: "unknown combined", args: []string{"ls", "-lZ", "/d"}, code: exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fs("", append([]string{tc.args[0], "-w", ws}, tc.args[1:]...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %v", r.code, tc.code, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q: %v", w, r)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(r.stdout, n) {
					t.Errorf("stdout has %q: %v", n, r)
				}
			}
		})
	}
	// rm -rf: a tree and a missing path in one go.
	if r := fs("", "rm", "-rf", "/d", "/missing", "-w", ws); r.code != 0 {
		t.Fatalf("fs rm -rf: %v", r)
	}
	if r := fs("", "ls", "-w", ws, "/"); strings.Contains(r.stdout, "d/") || !strings.Contains(r.stdout, "-dash") {
		t.Errorf("after rm -rf /d: %v", r)
	}
	// Flags after the positional arguments, elsewhere too.
	if r := cli(t, home, "stats", ws, "--json"); r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
		t.Errorf("stats WS --json: %v", r)
	}
	if r := cli(t, home, "limit", ws, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"limit_bytes"`) {
		t.Errorf("limit WS --json: %v", r)
	}
}

// TestCompletion generates each shell's completion script and, where
// the shell is installed, checks that it parses; the hidden __complete
// command answers with the commands and a command's flags.
func TestCompletion(t *testing.T) {
	home := t.TempDir()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := mustCLI(t, home, "completion", sh)
		if !strings.Contains(r.stdout, "computerfs") || len(r.stdout) < 1000 {
			t.Errorf("completion %s: %v", sh, r)
			continue
		}
		if path, err := exec.LookPath(sh); err == nil {
			script := filepath.Join(t.TempDir(), "completion."+sh)
			writeFile(t, script, []byte(r.stdout))
			check := []string{"-n", script}
			if sh == "fish" {
				check = []string{"--no-execute", script}
			}
			if out, err := exec.Command(path, check...).CombinedOutput(); err != nil {
				t.Errorf("%s does not parse the completion script: %v\n%s", sh, err, out)
			}
		}
	}
	r := mustCLI(t, home, "__complete", "fs", "")
	for _, w := range []string{"cat", "grep", "rm", "write"} {
		if !strings.Contains(r.stdout, w+"\t") {
			t.Errorf("__complete fs: no %s: %v", w, r)
		}
	}
	r = mustCLI(t, home, "__complete", "fs", "rm", "-")
	for _, w := range []string{"--recursive", "--force", "-r", "-f"} {
		if !strings.Contains(r.stdout, w+"\t") && !strings.Contains(r.stdout, w+"\n") {
			t.Errorf("__complete fs rm -: no %s: %v", w, r)
		}
	}
	r = mustCLI(t, home, "__complete", "snapshot", "")
	if !strings.Contains(r.stdout, "restore") {
		t.Errorf("__complete snapshot: %v", r)
	}
}

// TestEveryCommandHelp asks every command and fs subcommand for --help.
func TestEveryCommandHelp(t *testing.T) {
	home := t.TempDir()
	cmds := commandNames()
	for _, c := range fsCommands() {
		cmds = append(cmds, "fs "+c.name)
	}
	for _, c := range cmds {
		args := append(strings.Fields(c), "--help")
		r := cli(t, home, args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "Usage") && c != "help" && c != "completion" {
			t.Errorf("computerfs %s --help: %v", c, r)
		}
	}
}
