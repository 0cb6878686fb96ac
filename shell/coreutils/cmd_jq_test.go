package coreutils

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jqTree is the standard tree plus a few files for jq: a program file,
// a module directory, a JSON stream and an object with unsorted keys.
func jqTree(t *testing.T) string {
	t.Helper()
	dir := makeTree(t)
	files := map[string]string{
		"prog.jq":         ".tags | map(ascii_upcase)\n",
		"lib/util.jq":     "def double: . * 2;\ndef greet: \"hi \\(.)\";\n",
		"lib/conf.json":   `{"z":1,"a":2}` + "\n",
		"stream.json":     "{\"b\":2,\"a\":1}\n[1,\n2]\n\"s\" 3 true\nnull\n",
		"unsorted.json":   `{"zeta":1,"alpha":{"y":[3,1,2],"x":null},"mid":"m"}` + "\n",
		"bad.json":        "{\"a\":1}\n{\"b\":2}{\n",
		"people.json":     `[{"name":"ann","age":31,"city":"paris"},{"name":"bob","age":25,"city":"rome"},{"name":"cid","age":40,"city":"oslo"}]` + "\n",
		"three.json":      "1\n2\n3\n",
		"lines_noeol.txt": "a\nb",
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
	return dir
}

// TestJqGNU compares jq with the real one (jq 1.6 here) on the same
// trees: stdout, stderr and exit status must agree.
func TestJqGNU(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq not installed")
	}
	tree := jqTree(t)
	cases := []struct {
		stdin string
		args  []string
	}{
		// formatting
		{"", []string{".", "data.json"}},
		{"", []string{"-c", ".", "data.json"}},
		{"", []string{".", "unsorted.json"}},
		{"", []string{"-S", ".", "unsorted.json"}},
		{"", []string{"--tab", ".", "data.json"}},
		{"", []string{"--indent", "1", ".", "data.json"}},
		{"", []string{"--indent", "0", ".nested", "data.json"}},
		{"", []string{"--indent", "-1", ".tags", "data.json"}},
		{"", []string{"--tab", "--indent", "3", ".tags", "data.json"}},
		{"", []string{"--indent", "3", "--tab", "-c", ".tags", "data.json"}},
		{"", []string{"-n", "-c", `[1, 1.0, 1.5, 100000000000000000000, 1e17, 1e15, 1e-5, 0.0001, 3.141592653589793238, 1/3, 1e1000, -1e1000, infinite, nan]`}},
		{"12345678901234567890 123456789012345678 -0 1E2 .5 +1", []string{"-c", "."}},
		{"", []string{"-n", `"é\u0001\u007f☃😀\t\"\\"`}},
		{"", []string{"-n", "-a", `"é\u0001\u007f☃😀"`}},
		{"\"é\"", []string{"-r", "-a", "."}},
		// paths, select, map, keys
		{"", []string{".name", "data.json"}},
		{"", []string{".tags[]", "data.json"}},
		{"", []string{".[]", "data.json"}},
		{"", []string{".nested.a[2].b", "data.json"}},
		{"", []string{"-c", "[paths]", "data.json"}},
		{"", []string{"-c", "[leaf_paths]", "data.json"}},
		{"", []string{"-c", "path(..)", "data.json"}},
		{"", []string{"-c", "tostream", "data.json"}},
		{"", []string{"-S", "keys", "unsorted.json"}},
		{"", []string{"-c", "keys_unsorted, keys", "unsorted.json"}},
		{"", []string{"-c", "to_entries", "unsorted.json"}},
		{"", []string{"-c", "with_entries(.value |= type)", "unsorted.json"}},
		{"", []string{"-c", "map_values(tojson)", "unsorted.json"}},
		{"", []string{"-c", "del(.alpha) | .new = 1 | .zeta = 0", "unsorted.json"}},
		{"", []string{"-c", "{mid, zeta}, {zeta, mid}", "unsorted.json"}},
		{"", []string{"-c", ". + {q: 1}, tojson, tostring", "unsorted.json"}},
		{"", []string{"-c", "[.[] | select(.age > 30) | .name]", "people.json"}},
		{"", []string{"-c", "map(.age) | add, min, max, length", "people.json"}},
		{"", []string{"-c", "sort_by(.age) | map(.name)", "people.json"}},
		{"", []string{"-c", "group_by(.age > 30) | map(map(.name))", "people.json"}},
		{"", []string{"-c", "map({(.name): .age}) | add", "people.json"}},
		{"", []string{"-c", "INDEX(.name) | keys", "people.json"}},
		{"", []string{"-c", "to_entries | map(.key)", "data.json"}},
		{"", []string{"-c", "[.. | numbers]", "data.json"}},
		{"", []string{"-c", `walk(if type == "number" then . + 1 else . end)`, "data.json"}},
		{"", []string{"-c", "reduce .tags[] as $t (0; . + ($t | length))", "data.json"}},
		{"", []string{"-c", "[foreach (1,2,3) as $x (0; . + $x; [$x, .])]", "-n"}},
		{"", []string{"-c", "[limit(3; range(10))], first(range(5;10)), [range(0; 10; 3)]", "-n"}},
		{"", []string{"-c", `.name | test("^comp"), sub("o"; "0"), gsub("o"; "0"), [splits("u")], ascii_upcase`, "data.json"}},
		{"", []string{"-c", `.name | capture("(?<head>[a-z]{4})(?<tail>.*)")`, "data.json"}},
		{"", []string{"-c", `[.tags[] | ltrimstr("f")], (.tags | join("-")), ([1, null, "a", true] | join(","))`, "data.json"}},
		{"", []string{"-c", "try (1 | .a) catch ., try error(\"x\") catch ., (.x? // \"none\")", "-n"}},
		{"", []string{"-c", "$__loc__, input_filename, input_line_number", "data.json"}},
		{"", []string{"-c", "input_filename, input_line_number", "three.json", "data.json"}},
		// arithmetic and merges
		{"", []string{"-n", "-c", `[(1,2) + (10,20)], [(1,2) * (10,20)], ["x" * 0, "x" * 0.5, "ab" * 3.7, 2 * "x"]`}},
		{"", []string{"-n", "-c", `9007199254740993 + 0, 4611686018427387904 * 4, (null + 1), ([1] + [2]), ({} + {})`}},
		{"", []string{"-n", "-c", `{"a":{"b":1,"c":2},"d":1} * {"a":{"e":1,"b":3},"f":2}`}},
		{`{"y":{"x":1},"nested":{"a":1}}`, []string{"-c", "[.y, .nested] | add, (.nested + .y), (.y * .nested), reduce .[] as $o ({}; . + $o)"}},
		{"", []string{"-c", ". as $o | keys | map({(.): ($o[.] | type)}) | add", "unsorted.json"}},
		{"", []string{"-c", "to_entries | sort_by(.key) | reverse | from_entries", "unsorted.json"}},
		{"", []string{"-c", "del(.. | select(. == null)), ((.. | numbers) |= . + 1)", "unsorted.json"}},
		{"", []string{"-n", "[1] * 2"}},
		// string formats
		{"", []string{"-r", "[.name, .n, null, true, 1.5] | @csv", "data.json"}},
		{"", []string{"-r", `["a\tb", "c\\d", 2] | @tsv`, "-n"}},
		{"", []string{"-r", ".tags | @json, @text", "data.json"}},
		{"", []string{"-r", ".name | @base64, (@base64 | @base64d)", "data.json"}},
		{"", []string{"-r", `@sh "echo \(.name) \(.tags)"`, "data.json"}},
		{"", []string{"-r", `"<a href='x'>&</a>" | @html`, "-n"}},
		{"", []string{"-r", `"a b&c=é!*'()~" | @uri`, "-n"}},
		{"", []string{"-r", `[1e-5, 1e17, 0.1] | @csv, @sh, tostring`, "-n"}},
		// options and variables
		{"", []string{"-r", ".tags[]", "data.json"}},
		{"", []string{"-j", ".tags[]", "data.json"}},
		{"", []string{"-rc", ".tags", "data.json"}},
		{"", []string{"-n", "-c", "--arg", "x", "1", "--argjson", "y", `{"b":2,"a":1}`, "[$x, $y, $ARGS]"}},
		{"", []string{"-n", "--arg", "x", "1", "--arg", "x", "2", "$x"}},
		{"", []string{"-n", "-c", "$ARGS", "--args", "a", "-r", "b"}},
		{"", []string{"-n", "-c", "$ARGS", "--jsonargs", "1", `{"z":1,"a":2}`}},
		{"", []string{"-n", "-c", "$d", "--slurpfile", "d", "stream.json"}},
		{"", []string{"-n", "$d", "--rawfile", "d", "a.txt"}},
		{"", []string{"-n", "-c", "$d", "--argfile", "d", "data.json"}},
		{"", []string{"-n", "--slurpfile", "x", "nope", "$x"}},
		{"", []string{"-n", "--slurpfile", "x", "a.txt", "$x"}},
		{"", []string{"-s", "-c", ".", "nums.txt", "stream.json"}},
		{"", []string{"-s", "add / length", "nums.txt"}},
		{"", []string{"-c", ".", "stream.json"}},
		{"", []string{"-R", ".", "a.txt", "lines_noeol.txt", "noeol.txt"}},
		{"", []string{"-Rs", ".", "noeol.txt", "a.txt"}},
		{"", []string{"-Rn", "-c", "[inputs]", "a.txt"}},
		{"", []string{"-n", "-c", "[inputs]", "three.json", "stream.json"}},
		{"", []string{"-c", "--stream", ".", "data.json"}},
		{"", []string{"-c", "--seq", ".tags", "data.json"}},
		{"", []string{"-f", "prog.jq", "data.json"}},
		{"", []string{"-L", "lib", "-n", "-c", `import "util" as u; [2 | u::double], ("x" | u::greet)`}},
		{"", []string{"-L", "lib", "-n", "-c", `include "util"; 21 | double`}},
		{"", []string{"-L", "lib", "-n", "-c", `import "conf" as $c; $c`}},
		{"1", []string{}},
		{"", []string{".name", "--", "data.json"}},
		{"", []string{"--version"}},
		{"", []string{"-h"}},
		// exit statuses
		{"", []string{"-e", ".nested.a[2].b", "data.json"}},
		{"", []string{"-e", ".name", "data.json"}},
		{"", []string{"-e", "empty", "data.json"}},
		{"true false", []string{"-e", "."}},
		{"1 true", []string{"-e", "select(. == 1)"}},
		{"1 2 3", []string{"., halt"}},
		{"1 2", []string{"{a: .} | halt_error"}},
		{"", []string{"-n", `"bye\n" | halt_error(3)`}},
		// runtime errors
		{"", []string{".name.x", "data.json"}},
		{"", []string{".tags.x", "data.json"}},
		{"", []string{".[0]", "data.json"}},
		{"", []string{".n[]", "data.json"}},
		{"", []string{`.n + "a"`, "data.json"}},
		{"", []string{`error("boom")`, "data.json"}},
		{"", []string{`error({"a":1})`, "data.json"}},
		{"1 2\n3\n", []string{".n[]"}},
		{"1\n2\n\n3", []string{".[]"}},
		{"\"a\" {}", []string{".a"}},
		{"", []string{"-n", "[1,2,3,4,5,6,7,8,9] - 1"}},
		{"", []string{"-n", `"abcdefghijklmnopqrstuvwxyz" * {}`}},
		{"", []string{"-n", "{} | has(0), (1 % 0)"}},
		{"", []string{"-n", "true | length"}},
		{"", []string{"-n", "1 | keys"}},
		{"", []string{"-n", `"a" | tonumber`}},
		{"", []string{"-n", `"{" | fromjson`}},
		{"", []string{"-n", "{} | sort"}},
		{"", []string{"-n", "[{}] | @csv"}},
		{"", []string{"-n", `"abc" | .[0]`}},
		{"", []string{"-n", "[1] | .a = 1"}},
		{"", []string{".x", "nums.txt", "three.json"}},
		// input errors
		{"", []string{".", "nonexist.json"}},
		{"", []string{"-c", ".", "three.json", "nope", "three.json"}},
		{"", []string{"-c", ".", "three.json", "emptydir", "three.json"}},
		{"", []string{"-c", ".", "bad.json"}},
		{"{\"a\":1\n", []string{"."}},
		{"[1,2", []string{"."}},
		{"{\"a\" 1}", []string{"."}},
		{"[1,,2]", []string{"."}},
		{"\"abc", []string{"."}},
		{"{'a':1}", []string{"."}},
		{"1 ]", []string{"-c", "."}},
		{"[1,2,]", []string{"."}},
		{"{\"a\":}", []string{"."}},
		{"\"\\ud800\"", []string{"."}},
		{"\"a\tb\"", []string{"."}},
		{"nullnull", []string{"."}},
		{"\ufeff[1]", []string{"-c", "."}},
		// usage and compile errors
		{"", []string{"--foo", "."}},
		{"", []string{"-rx", "."}},
		{"", []string{"--arg", "x"}},
		{"", []string{"--argjson", "x", "{a", "."}},
		{"", []string{"--indent", "9", ".", "data.json"}},
		{"", []string{"--", "."}},
		{"", []string{"-f", "nope", "."}},
		{"", []string{"-n", ".a["}},
		{"", []string{"-n", ".a + "}},
		{"", []string{"-n", ".a | }"}},
		{"", []string{"-n", "{a:}"}},
		{"", []string{"-n", ".a | foo"}},
		{"", []string{"-n", ". as [$a] | $b"}},
		{"", []string{"-n", `import "nope" as n; .`}},
	}
	for _, c := range cases {
		c := c
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			compareGNU(t, tree, c.stdin, append([]string{"jq"}, c.args...)...)
		})
	}
}

// TestJqExpected checks what cannot be compared with jq 1.6: behaviour
// that depends on the Env, and the documented differences.
func TestJqExpected(t *testing.T) {
	tree := jqTree(t)
	now := strconv.FormatInt(fixedNow.Unix(), 10)
	cases := []struct {
		name           string
		stdin          string
		args           []string
		stdout, stderr string
		code           int
	}{
		{"env", "", []string{"-n", "-r", "$ENV.HOME, env.PATH, $ENV.NOPE"}, "/\n/usr/bin:/bin\nnull\n", "", 0},
		{"now", "", []string{"-n", "now, (now | todate)"}, now + "\n\"2026-11-30T12:00:00Z\"\n", "", 0},
		{"localtime is UTC without TZ", "", []string{"-n", "-c", "0 | localtime, strflocaltime(\"%H:%M %Z\")"}, "[1970,0,1,0,0,0,4,0]\n\"00:00 UTC\"\n", "", 0},
		{"no colour", "", []string{"-C", "-c", ".tags", "data.json"}, "[\"fs\",\"fuse\"]\n", "", 0},
		{"key order kept", `{"b":1,"a":{"d":1,"c":2}}`, []string{"-c", ".a, .[], keys_unsorted, (to_entries | from_entries), tojson"},
			"{\"d\":1,\"c\":2}\n1\n{\"d\":1,\"c\":2}\n[\"b\",\"a\"]\n{\"b\":1,\"a\":{\"d\":1,\"c\":2}}\n\"{\\\"b\\\":1,\\\"a\\\":{\\\"d\\\":1,\\\"c\\\":2}}\"\n", "", 0},
		{"construction order", "", []string{"-n", "-c", `{z: 1, a: 2}, {a: 1, z: 2}, ({b: 1} + {c: 2})`}, "{\"z\":1,\"a\":2}\n{\"a\":1,\"z\":2}\n{\"b\":1,\"c\":2}\n", "", 0},
		{"sort by value", `{"x":3,"y":1,"z":2}`, []string{"-c", "to_entries | sort_by(.value) | from_entries"}, "{\"y\":1,\"z\":2,\"x\":3}\n", "", 0},
		{"no more inputs (jq 1.7 wording)", "", []string{"-c", "[., input]", "three.json", "nums.txt"}, "[1,2]\n[3,10]\n[9,100]\n[-3,2.5]\n", "jq: error (at nums.txt:6): No more inputs\n", 5},
		{"error(null) (jq 1.7)", "", []string{"-n", "error(null)"}, "", "jq: error (at <unknown>) (not a string): null\n", 5},
		{"from_entries k/v (jq 1.7)", `[{"k":"a","v":1},{"name":"b","value":2}]`, []string{"-c", "from_entries"}, "{\"a\":1,\"b\":2}\n", "", 0},
		{"limit 0 (jq 1.7)", "", []string{"-n", "-c", "[limit(0; 1, 2)], [limit(-1; 1, 2)]"}, "[]\n[1,2]\n", "", 0},
		{"jsonargs error", "", []string{"-n", "--jsonargs", "$ARGS", "x"}, "", "jq: Invalid JSON text passed to --jsonargs\n" + jqDieText, 2},
		{"debug and stderr", "", []string{"-n", "-c", `{"a":1} | debug | stderr | .a`}, "1\n", "[\"DEBUG:\",{\"a\":1}]\n{\"a\":1}", 0},
		{"module outside search path", "", []string{"-n", `import "util" as u; 1`}, "", "jq: error: module not found: util\n\njq: 1 compile error\n", 3},
		{"~/.jq is loaded", "", []string{"-n", "myhome"}, "", "jq: error: myhome/0 is not defined at <top-level>, line 1:\nmyhome\njq: 1 compile error\n", 3},
		{"stdin dash", "[1]", []string{"-c", ".", "-"}, "[1]\n", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runOurs(t, tree, c.stdin, append([]string{"jq"}, c.args...)...)
			if got.stdout != c.stdout || got.stderr != c.stderr || got.code != c.code {
				t.Errorf("jq %q:\ngot  %s\nwant exit %d\n--- stdout\n%s--- stderr\n%s", c.args, got, c.code, c.stdout, c.stderr)
			}
		})
	}
	// ~/.jq: HOME is "/" in the test Env.
	if err := os.WriteFile(filepath.Join(tree, ".jq"), []byte("def myhome: \"home\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runOurs(t, tree, "", "jq", "-n", "myhome"); got.stdout != "\"home\"\n" || got.code != 0 {
		t.Errorf("~/.jq: %s", got)
	}
}

// TestJqCancel checks that an endless filter stops when ctx is done.
func TestJqCancel(t *testing.T) {
	for _, prog := range []string{"repeat(.)", "last(range(1e15))", "def f: f; f"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var out, errb strings.Builder
		e := testEnv(t.TempDir(), "/", strings.NewReader(""), &out, &errb)
		f, _ := Lookup("jq")
		start := time.Now()
		f(ctx, e, []string{"jq", "-n", prog})
		cancel()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: ran %v after cancel", prog, d)
		}
		if errb.Len() != 0 {
			t.Errorf("%s: stderr %q", prog, errb.String())
		}
	}
}

// TestJqNoHostAccess checks that files come from the FS only: a path
// outside the tree is not found even if it exists on the host.
func TestJqNoHostAccess(t *testing.T) {
	tree := jqTree(t)
	host := filepath.Join(t.TempDir(), "host.json")
	os.WriteFile(host, []byte("1\n"), 0o644)
	got := runOurs(t, tree, "", "jq", ".", host)
	if got.code != 2 || !strings.Contains(got.stderr, "No such file or directory") {
		t.Errorf("host file read through FS: %s", got)
	}
	got = runOurs(t, tree, "", "jq", "-n", "-L", filepath.Dir(host), `import "host" as $h; $h`)
	if got.code != 3 {
		t.Errorf("module from host: %s", got)
	}
}

// jqPipeWriter fails like a pipe whose reader has gone, after n bytes.
type jqPipeWriter struct{ n int }

func (w *jqPipeWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, io.ErrClosedPipe
	}
	w.n -= len(p)
	return len(p), nil
}

// TestJqClosedPipe checks that jq ends, quietly and with SIGPIPE's
// status, when its output is closed: jq -n 'repeat(1)' | head -1.
func TestJqClosedPipe(t *testing.T) {
	var errb strings.Builder
	e := testEnv(t.TempDir(), "/", strings.NewReader(""), &jqPipeWriter{n: 100}, &errb)
	f, _ := Lookup("jq")
	done := make(chan int)
	go func() { done <- f(context.Background(), e, []string{"jq", "-n", "repeat(1)"}) }()
	select {
	case code := <-done:
		if code != 141 || errb.Len() != 0 {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("jq did not stop writing to a closed pipe")
	}
}
