package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// snakeKey is the one key style of every --json output.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// badKeys returns the keys of v, at any depth, that are not snake_case,
// each with its path.
func badKeys(v any, at string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !snakeKey.MatchString(k) {
				bad = append(bad, at+"."+k)
			}
			bad = append(bad, badKeys(x, at+"."+k)...)
		}
	case []any:
		for i, x := range v {
			bad = append(bad, badKeys(x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return bad
}

// jsonDocs decodes every JSON document in out (one, or one per line).
func jsonDocs(t *testing.T, out string, args []string) []any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var docs []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("computerfs %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
		}
		docs = append(docs, v)
	}
	if len(docs) == 0 {
		t.Fatalf("computerfs %s: no JSON output", strings.Join(args, " "))
	}
	return docs
}

// TestJSONKeys runs every command that has --json, offline and through a
// daemon, and checks that every key it prints is snake_case; and that
// exec --json reports what the exec did, in the one exit-status table.
func TestJSONKeys(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	mustCLI(t, home, "init", ws)
	run := func(stdin string, code int, args ...string) any {
		t.Helper()
		r, err := runCfsWithin(2*time.Minute, home, stdin, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		noCrash(t, r, args...)
		if r.code != code {
			t.Fatalf("computerfs %s: exit %d, want %d: %v", strings.Join(args, " "), r.code, code, r)
		}
		docs := jsonDocs(t, r.stdout, args)
		for _, d := range docs {
			if bad := badKeys(d, ""); len(bad) > 0 {
				t.Errorf("computerfs %s: keys not in snake_case: %v\n%s", strings.Join(args, " "), bad, r.stdout)
			}
		}
		return docs[0]
	}
	fsJSON := func(stdin string, code int, args ...string) any {
		return run(stdin, code, append([]string{"fs", args[0], "-w", ws, "--json"}, args[1:]...)...)
	}
	maintenance := func() {
		for _, c := range []string{"fsck", "stats", "gc", "limit", "scrub"} {
			run("", 0, c, ws, "--json")
		}
		for _, c := range []string{"execs", "audit", "backends"} {
			run("", 0, c, "-w", ws, "--json")
		}
		run("", 0, "audit", "-w", ws, "--verify", "--json")
	}

	// Offline: each command opens the store itself.
	fsJSON("hello\n", 0, "write", "-p", "/d/f.txt")
	fsJSON("", 0, "mkdir", "-p", "/e/f")
	fsJSON("", 0, "cp", "/d/f.txt", "/e/copy.txt")
	fsJSON("", 0, "mv", "/e/copy.txt", "/e/moved.txt")
	fsJSON("", 0, "edit", "/e/moved.txt", "--old", "hello", "--new", "hi")
	for _, args := range [][]string{{"cat", "/d/f.txt"}, {"ls", "-R", "/"}, {"stat", "/d/f.txt"}, {"glob", "**/*.txt"},
		{"grep", "-C1", "hello"}, {"grep", "-c", "hello"}, {"tree", "/"}, {"du", "/"}, {"changes"}} {
		fsJSON("", 0, args...)
	}
	fsJSON("", exitNoMatch, "grep", "nothing-matches-this")
	fsJSON("", 0, "rm", "-r", "/e")
	x := run("", 0, "exec", "-w", ws, "--json", "-b", "shell", "--", "echo out; echo err >&2; echo made > /d/g.txt").(map[string]any)
	if x["backend"] != "shell" || x["why"] == "" || x["exit"] != 0.0 || x["exit_class"] != "ok" || x["stdout"] != "out\n" || x["stderr"] != "err\n" ||
		x["truncated"] != false || x["timed_out"] != false || x["signal"] != nil || x["duration_ms"].(float64) <= 0 {
		t.Errorf("exec --json: %v", x)
	}
	if fc, _ := x["files_changed"].([]any); len(fc) == 0 || !strings.Contains(fmt.Sprint(fc), "/d/g.txt") {
		t.Errorf("exec --json: files_changed %v", x["files_changed"])
	}
	run("", 0, "snapshot", "create", ws, "s1", "--json")
	run("", 0, "snapshot", "list", ws, "--json")
	fsJSON("more\n", 0, "write", "/d/h.txt")
	run("", 0, "snapshot", "diff", ws, "s1", "--json", "--patch")
	run("", 0, "undo", "-w", ws, "--json")
	maintenance()

	// Through a daemon: the same commands ask it, and status answers.
	d := startServe(t, home, ws)
	run("", 0, "status", ws, "--json")
	maintenance()
	fsJSON("", 0, "ls", "/")
	fsJSON("", 0, "changes")
	// One table of exit statuses: the exec's own code, a timeout (124), a
	// cut output (141, and reported cut).
	for _, tc := range []struct {
		args  []string
		exit  int
		class string
		check func(map[string]any) bool
	}{
		{[]string{"--", "sh", "-c", "exit 7"}, 7, "error", func(x map[string]any) bool { return x["exit_code"] == 7.0 }},
		{[]string{"--timeout", "1s", "--", "sleep 30"}, 124, "timeout", func(x map[string]any) bool { return x["timed_out"] == true }},
		{[]string{"--output-limit", "1K", "--", "seq 1 100000"}, 141, "output_cut", func(x map[string]any) bool {
			out, _ := x["stdout"].(string)
			return x["truncated"] == true && len(out) <= 1024 && strings.HasPrefix(out, "1\n2\n")
		}},
	} {
		args := append([]string{"exec", "-w", ws, "-b", "shell", "--json"}, tc.args...)
		x := run("", tc.exit, args...).(map[string]any)
		if x["exit"] != float64(tc.exit) || x["exit_class"] != tc.class || !tc.check(x) {
			t.Errorf("computerfs %s: %v", strings.Join(args, " "), x)
		}
	}
	d.stop(t)
}
