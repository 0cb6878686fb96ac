package jsbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// The tests run execs through the real runtime and a real workspace:
// the plugin is built once, and one runtime (one warm plugin) serves
// every test, so each hostile module also shows the next exec works.
var (
	pluginDir string
	setupOnce sync.Once
	shared    *host
	setupErr  error
)

type host struct {
	rt *backends.Runtime
	ws *workspace.WS
	f  *fs.FS
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cfs-jsbackend-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = filepath.Join(dir, "plugins")
	cmd := exec.Command("go", "build", "-o", filepath.Join(pluginDir, backends.Prefix+"js"), "../cmd/plugin-js")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the js plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if shared != nil {
		shared.rt.Close()
		shared.f.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func getHost(t testing.TB) *host {
	t.Helper()
	setupOnce.Do(func() {
		wsPath := filepath.Join(filepath.Dir(pluginDir), "ws.cfs")
		f, err := fs.Open(wsPath, fs.Options{})
		if err != nil {
			setupErr = err
			return
		}
		ws := workspace.New(f, workspace.Options{})
		rt, err := backends.New(backends.Options{Dirs: []string{pluginDir}, WS: ws, Owner: wsPath,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			f.Close()
			setupErr = err
			return
		}
		shared = &host{rt: rt, ws: ws, f: f}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

type out struct {
	res            *backends.Result
	stdout, stderr string
	code           int
}

func (o out) String() string {
	return fmt.Sprintf("exit %d %+v\nresult %s\nstdout %q\nstderr %q", o.code, o.res.Exit, o.res.Result, o.stdout, o.stderr)
}

func run(t *testing.T, req *backends.Request) out {
	t.Helper()
	h := getHost(t)
	if req.Backend == "" {
		req.Backend = "js"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	res, err := h.rt.Exec(ctx, req, &stdout, &stderr)
	if err != nil {
		t.Fatalf("exec: %v (stderr %q)", err, stderr.String())
	}
	return out{res: res, stdout: stdout.String(), stderr: stderr.String(), code: backends.ExitStatus(res.Exit)}
}

func js(t *testing.T, src string, input string) out {
	t.Helper()
	req := &backends.Request{Argv: []string{src}}
	if input != "" {
		req.Input = []byte(input)
	}
	return run(t, req)
}

func mustOK(t *testing.T, o out) {
	t.Helper()
	if o.code != 0 {
		t.Fatalf("want success:\n%s", o)
	}
}

// healthy checks the plugin still serves a plain exec.
func healthy(t *testing.T) {
	t.Helper()
	o := js(t, `export default (i) => i.n + 1`, `{"n":41}`)
	mustOK(t, o)
	if string(o.res.Result) != "42" {
		t.Fatalf("the next exec is not healthy:\n%s", o)
	}
}

func TestDouble(t *testing.T) {
	o := js(t, `export default (i) => i.n * 2`, `{"n":3}`)
	mustOK(t, o)
	if string(o.res.Result) != "6" {
		t.Fatalf("result %s, want 6\n%s", o.res.Result, o)
	}
}

func TestAsyncDefault(t *testing.T) {
	o := js(t, `const sleep = (ms) => new Promise(r => setTimeout(r, ms));
export default async function (input, ctx) {
  await sleep(5);
  const v = await Promise.resolve(input.x);
  return { v, cwd: ctx.cwd };
}`, `{"x":"hi"}`)
	mustOK(t, o)
	if string(o.res.Result) != `{"v":"hi","cwd":"/"}` {
		t.Fatalf("result %s\n%s", o.res.Result, o)
	}
}

func TestNoResultAndTopLevelAwait(t *testing.T) {
	o := js(t, `const x = await Promise.resolve(1); console.log("x", x)`, "")
	mustOK(t, o)
	if o.res.Result != nil || o.stdout != "x 1\n" {
		t.Fatalf("%s", o)
	}
	o = js(t, `export default (i) => i`, "")
	mustOK(t, o)
	if string(o.res.Result) != "null" {
		t.Fatalf("null input: %s", o)
	}
}

func TestConsole(t *testing.T) {
	o := js(t, `console.log("a", 1, {b: [1, "x"]}, null, undefined);
console.info("info"); console.debug("debug %d%%", 5);
console.error("err", new Map([[1,2]])); console.warn("warn");
export default () => undefined`, "")
	mustOK(t, o)
	if want := "a 1 { b: [ 1, 'x' ] } null undefined\ninfo\ndebug 5%\n"; o.stdout != want {
		t.Errorf("stdout %q, want %q", o.stdout, want)
	}
	if want := "err Map(1) { 1 => 2 }\nwarn\n"; o.stderr != want {
		t.Errorf("stderr %q, want %q", o.stderr, want)
	}
	if o.res.Result != nil {
		t.Errorf("undefined gave a result: %s", o.res.Result)
	}
}

func TestThrow(t *testing.T) {
	o := js(t, "function inner() { throw new Error('boom'); }\nexport default () => inner()", "")
	if o.code != 1 || !strings.Contains(o.stderr, "Uncaught Error: boom") || !strings.Contains(o.stderr, "inner") {
		t.Fatalf("%s", o)
	}
	o = js(t, "export default async () => { throw new TypeError('async boom') }", "")
	if o.code != 1 || !strings.Contains(o.stderr, "Uncaught (in promise) TypeError: async boom") {
		t.Fatalf("%s", o)
	}
	o = js(t, "syntax error here", "")
	if o.code != 1 || !strings.Contains(o.stderr, "SyntaxError") {
		t.Fatalf("%s", o)
	}
	o = js(t, "process.exit(3)", "")
	if o.code != 3 {
		t.Fatalf("process.exit(3): %s", o)
	}
	healthy(t)
}

func TestJSONRoundTrip(t *testing.T) {
	in := `{"a":[1,2.5,-3,{"b":null,"c":true}],"s":"h\u00e9llo \"q\" \n","n":{"deep":{"er":[[],[{}]]}},"big":12345678901234}`
	o := js(t, `export default (i) => i`, in)
	mustOK(t, o)
	var a, b any
	json.Unmarshal([]byte(in), &a)
	if err := json.Unmarshal(o.res.Result, &b); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("round trip: %s", o.res.Result)
	}
}

func TestFiles(t *testing.T) {
	h := getHost(t)
	ctx := context.Background()
	if _, err := h.ws.WriteFile(ctx, "/files/in.txt", []byte("hello from the workspace\n"), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	o := js(t, `import { readFile, writeFile, appendFile, mkdir, readdir, stat, lstat, rm, rename, copyFile, symlink, readlink, access, glob, grep } from "node:fs/promises";
import * as fsp from "fs/promises";
import { join } from "node:path";
export default async () => {
  const text = await readFile("/files/in.txt", "utf8");
  const bytes = await readFile("/files/in.txt");
  await mkdir("/files/out/deep", { recursive: true });
  await writeFile("/files/out/deep/a.txt", text.toUpperCase());
  await appendFile("/files/out/deep/a.txt", "more\n");
  await writeFile("/files/out/bin", new Uint8Array([0, 255, 1]));
  const bin = await readFile("/files/out/bin");
  await copyFile("/files/out/deep/a.txt", "/files/out/b.txt");
  await rename("/files/out/b.txt", "/files/out/c.txt");
  await symlink("c.txt", "/files/out/link");
  const link = await readlink("/files/out/link");
  const ents = await readdir("/files/out", { withFileTypes: true });
  const st = await stat("/files/out/deep/a.txt");
  const lst = await lstat("/files/out/link");
  let enoent = null;
  try { await readFile("/files/missing"); } catch (e) { enoent = { code: e.code, message: e.message, isError: e instanceof Error }; }
  let accessErr = null;
  try { await access("/nope"); } catch (e) { accessErr = e.code; }
  await writeFile(join("/files", "gone.txt"), "x");
  await rm("/files/gone.txt");
  await rm("/files/gone.txt", { force: true });
  return {
    text, bytes: bytes.length, isU8: bytes instanceof Uint8Array, bin: Array.from(bin), link,
    ents: ents.map(e => [e.name, e.isFile(), e.isDirectory(), e.isSymbolicLink()]),
    st: [st.size, st.isFile(), st.isDirectory(), typeof st.mtimeMs, st.mode & 0o777],
    lst: lst.isSymbolicLink(), enoent, accessErr,
    glob: await glob("/files/**/*.txt"),
    grep: (await grep("HELLO", "/files/out")).map(l => [l.path, l.line, l.text]),
    same: fsp.readFile === readFile,
  };
};`, "")
	mustOK(t, o)
	var got struct {
		Text   string
		Bytes  int
		IsU8   bool
		Bin    []int
		Link   string
		Ents   [][]any
		St     []any
		Lst    bool
		Enoent map[string]any
		Access string `json:"accessErr"`
		Glob   []string
		Grep   [][]any
		Same   bool
	}
	if err := json.Unmarshal(o.res.Result, &got); err != nil {
		t.Fatal(err, string(o.res.Result))
	}
	t.Logf("%s", o.res.Result)
	if got.Text != "hello from the workspace\n" || got.Bytes != 25 || !got.IsU8 || fmt.Sprint(got.Bin) != "[0 255 1]" || got.Link != "c.txt" {
		t.Errorf("reads: %s", o.res.Result)
	}
	if fmt.Sprint(got.Ents) != "[[bin true false false] [c.txt true false false] [deep false true false] [link false false true]]" {
		t.Errorf("readdir: %v", got.Ents)
	}
	if fmt.Sprint(got.St) != "[30 true false number 420]" || !got.Lst {
		t.Errorf("stat: %v %v", got.St, got.Lst)
	}
	if got.Enoent["code"] != "ENOENT" || got.Enoent["isError"] != true || !strings.Contains(got.Enoent["message"].(string), "ENOENT") || got.Access != "ENOENT" {
		t.Errorf("errors: %v %v", got.Enoent, got.Access)
	}
	if fmt.Sprint(got.Glob) != "[/files/in.txt /files/out/c.txt /files/out/deep/a.txt]" {
		t.Errorf("glob: %v", got.Glob)
	}
	if len(got.Grep) != 2 {
		t.Errorf("grep: %v", got.Grep)
	}
	if !got.Same {
		t.Errorf("fs/promises and node:fs/promises differ")
	}
	// Seen through the workspace API.
	data, _, err := h.ws.ReadFile(ctx, "/files/out/deep/a.txt", 1<<20)
	if err != nil || string(data) != "HELLO FROM THE WORKSPACE\nmore\n" {
		t.Fatalf("ws.ReadFile: %q, %v", data, err)
	}
	data, _, err = h.ws.ReadFile(ctx, "/files/out/bin", 1<<20)
	if err != nil || !bytes.Equal(data, []byte{0, 255, 1}) {
		t.Fatalf("ws.ReadFile bin: %q, %v", data, err)
	}
}

func TestImports(t *testing.T) {
	h := getHost(t)
	ctx := context.Background()
	write := func(p, s string) {
		if _, err := h.ws.WriteFile(ctx, p, []byte(s), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	write("/proj/lib/math.js", "import { twice } from './util/twice.js';\nexport const quad = (n) => twice(twice(n));\n")
	write("/proj/lib/util/twice.js", "export const twice = (n) => n * 2;\n")
	write("/proj/main.js", "import { quad } from './lib/math.js';\nimport data from './data.json';\nexport default (i) => ({ q: quad(i.n), data });\n")
	write("/proj/data.json", `{"k":[1,2]}`)
	// A file module, with relative imports from its own directory.
	o := run(t, &backends.Request{File: "/proj/main.js", Input: []byte(`{"n":5}`)})
	mustOK(t, o)
	if string(o.res.Result) != `{"q":20,"data":{"k":[1,2]}}` {
		t.Fatalf("%s", o)
	}
	// Inline source resolves from the cwd.
	o = run(t, &backends.Request{Argv: []string{`import { quad } from './lib/math.js'; export default () => quad(1)`}, Cwd: "/proj"})
	mustOK(t, o)
	if string(o.res.Result) != "4" {
		t.Fatalf("%s", o)
	}
	// node:path.
	o = js(t, `import path from "node:path"; import { join } from "path";
export default () => [path.join("/a/b", "../c", "d.txt"), path.dirname("/a/b/c"), path.basename("/a/b.txt", ".txt"), path.extname("x.tar.gz"),
  path.resolve("x/y"), path.relative("/a/b/c", "/a/d"), path.normalize("/a//b/../c/."), path.sep, join("a", "b")]`, "")
	mustOK(t, o)
	if string(o.res.Result) != `["/a/c/d.txt","/a/b","b",".gz","/x/y","../../d","/a/c","/","a/b"]` {
		t.Fatalf("%s", o)
	}
	// Escaping the workspace, bare packages and host modules fail clearly.
	for _, c := range []struct{ src, want string }{
		{`import '../../../etc/passwd'`, "cannot load module '/etc/passwd' from the workspace"},
		{`import x from 'lodash'`, "cannot find module 'lodash'"},
		{`import x from 'node:child_process'`, "cannot find module 'node:child_process'"},
		{`export default async () => await import('/missing.js')`, "cannot load module '/missing.js'"},
	} {
		o = js(t, c.src, "")
		if o.code != 1 || !strings.Contains(o.stderr, c.want) {
			t.Errorf("%s: want %q in stderr\n%s", c.src, c.want, o)
		}
	}
	healthy(t)
}

func TestEnvAndGlobals(t *testing.T) {
	o := run(t, &backends.Request{Argv: []string{`export default () => ({ env: process.env, cwd: process.cwd(),
  net: [typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof require, typeof std, typeof os] })`},
		Env: map[string]string{"ONLY": "this"}, Cwd: "/"})
	mustOK(t, o)
	var got struct {
		Env map[string]string
		Cwd string
		Net []string
	}
	json.Unmarshal(o.res.Result, &got)
	if got.Env["ONLY"] != "this" || got.Cwd != "/" {
		t.Fatalf("%s", o)
	}
	if _, ok := got.Env["PATH"]; ok && os.Getenv("PATH") == got.Env["PATH"] {
		t.Errorf("process.env leaks the plugin's environment: %v", got.Env)
	}
	for _, n := range got.Net {
		if n != "undefined" {
			t.Errorf("a network or host object is defined: %v", got.Net)
		}
	}
}

func TestTimeout(t *testing.T) {
	t0 := time.Now()
	o := run(t, &backends.Request{Argv: []string{`export default () => { while (true) {} }`}, Timeout: 500 * time.Millisecond})
	if !o.res.Exit.TimedOut || !strings.Contains(o.res.Exit.Reason, "timed out") {
		t.Fatalf("%s", o)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the loop ran %s", d)
	}
	// A loop that catches its own interruption still ends.
	o = run(t, &backends.Request{Argv: []string{`export default () => { for (;;) { try { while (true) {} } catch (e) {} } }`}, Timeout: 300 * time.Millisecond})
	if !o.res.Exit.TimedOut {
		t.Fatalf("caught interrupt: %s", o)
	}
	healthy(t)
}

func TestMemory(t *testing.T) {
	o := js(t, `export default () => { const a = new Uint8Array(1024 * 1024 * 1024); a[5] = 1; return a.length; }`, "")
	if o.code == 0 || !strings.Contains(o.res.Exit.Reason, "memory") {
		t.Fatalf("%s", o)
	}
	o = js(t, `export default () => { const a = []; for (;;) a.push("x".repeat(1000) + a.length); }`, "")
	if o.code == 0 || !strings.Contains(o.res.Exit.Reason, "memory") {
		t.Fatalf("%s", o)
	}
	healthy(t)
}

func TestRecursion(t *testing.T) {
	o := js(t, `function f(n) { return f(n + 1) + 1; } export default () => f(0)`, "")
	if o.code != 1 || !strings.Contains(o.res.Exit.Reason, "stack overflow") {
		t.Fatalf("%s", o)
	}
	healthy(t)
}

func TestOutputAndResultLimits(t *testing.T) {
	o := run(t, &backends.Request{Argv: []string{`export default () => { for (;;) console.log("spam spam spam") }`}, OutputLimit: 10000})
	if o.code == 0 || !o.res.Exit.Truncated || !strings.Contains(o.res.Exit.Reason, "output") || len(o.stdout) > 10000 {
		t.Fatalf("exit %+v, %d bytes", o.res.Exit, len(o.stdout))
	}
	o = js(t, `export default () => "x".repeat(2 << 20)`, "")
	if o.code == 0 || !strings.Contains(o.res.Exit.Reason, "result") || o.res.Result != nil {
		t.Fatalf("%s", o.res.Exit)
	}
	healthy(t)
}

func TestConcurrentExecs(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := getHost(t)
			var stdout bytes.Buffer
			res, err := h.rt.Exec(context.Background(), &backends.Request{Backend: "js",
				Argv:  []string{`export default async (i) => { let s = 0; for (let k = 0; k < 200000; k++) s += k % 7; await null; return [i.n, s] }`},
				Input: []byte(fmt.Sprintf(`{"n":%d}`, i))}, &stdout, io.Discard)
			if err != nil || backends.ExitStatus(res.Exit) != 0 || string(res.Result) != fmt.Sprintf("[%d,599994]", i) {
				errs <- fmt.Sprintf("exec %d: %v %+v %s", i, err, res, res.Result)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestModuleLimits(t *testing.T) {
	h := getHost(t)
	ctx := context.Background()
	write := func(p, s string) {
		if _, err := h.ws.WriteFile(ctx, p, []byte(s), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	// A chain of 70 modules, each importing the next: the 65th import is
	// one too deep.
	for i := range 70 {
		src := fmt.Sprintf("export const n = %d;\n", i)
		if i < 69 {
			src = fmt.Sprintf("import { n as m } from './m%d.js';\nexport const n = m + 1;\n", i+1)
		}
		write(fmt.Sprintf("/deep/m%d.js", i), src)
	}
	o := run(t, &backends.Request{File: "/deep/m0.js"})
	if o.code != 1 || o.res.Exit.Reason != "import depth over 64" || !strings.Contains(o.stderr, "import depth over 64") {
		t.Fatalf("depth:\n%s", o)
	}
	// A chain of 60 is fine.
	write("/deep/m60.js", "export const n = 0;\n")
	o = run(t, &backends.Request{Argv: []string{`import { n } from './m0.js'; export default () => n`}, Cwd: "/deep"})
	mustOK(t, o)
	if string(o.res.Result) != "60" {
		t.Fatalf("depth 61:\n%s", o)
	}
	// 300 modules imported by one.
	var main strings.Builder
	for i := range 300 {
		write(fmt.Sprintf("/many/m%d.js", i), fmt.Sprintf("export default %d;\n", i))
		fmt.Fprintf(&main, "import m%d from './m%d.js';\n", i, i)
	}
	main.WriteString("export default () => m299;\n")
	write("/many/main.js", main.String())
	o = run(t, &backends.Request{File: "/many/main.js"})
	if o.code != 1 || o.res.Exit.Reason != "module limit: more than 256 modules imported" || !strings.Contains(o.stderr, "module limit") {
		t.Fatalf("count:\n%s", o)
	}
	// Dynamic imports count too, even when the module catches the failure.
	o = run(t, &backends.Request{Argv: []string{`export default async () => {
  for (let i = 0; i < 300; i++) { try { await import('./m' + i + '.js'); } catch (e) {} }
  return "went on";
}`}, Cwd: "/many"})
	if o.code != 1 || o.res.Exit.Reason != "module limit: more than 256 modules imported" || o.res.Result != nil {
		t.Fatalf("dynamic count:\n%s", o)
	}
	// 200 is fine.
	main.Reset()
	for i := range 200 {
		fmt.Fprintf(&main, "import m%d from './m%d.js';\n", i, i)
	}
	main.WriteString("export default () => m199;\n")
	write("/many/ok.js", main.String())
	o = run(t, &backends.Request{File: "/many/ok.js"})
	mustOK(t, o)
	if string(o.res.Result) != "199" {
		t.Fatalf("200 modules:\n%s", o)
	}
	healthy(t)
}

func TestURL(t *testing.T) {
	o := js(t, `export default () => {
  const u = new URL("https://User:pw@Example.COM:8443/a/b/../c%20d/./e.txt?q=1&x=a+b&q=2#frag");
  const parts = [u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin, u.href];
  const sp = u.searchParams;
  const params = [sp.get("q"), sp.getAll("q"), sp.get("x"), sp.has("x"), sp.has("nope"), sp.get("nope"), [...sp], [...sp.keys()]];
  sp.set("q", "3"); sp.append("new", "a b&c=d"); sp.delete("x");
  const after = [u.search, u.href, String(sp)];
  u.hash = ""; u.pathname = "/z"; u.port = "443";
  const set = u.href;
  const rel = [
    new URL("../x/y?z#w", "http://h.example/a/b/c").href,
    new URL("/abs", "https://h.example:8080/a/b").href,
    new URL("//other.example/p", "https://h.example/a").href,
    new URL("?only=q", "http://h.example/a/b?old").href,
    new URL("#h", "http://h.example/a/b?k").href,
    new URL("sub/", new URL("http://h.example/dir/")).href,
    new URL("http://h.example:80/").href,
    new URL("file:///tmp/a%20b.txt").pathname,
    new URL("mailto:someone@example.com").pathname,
  ];
  const bad = [];
  for (const [s, b] of [["not a url"], ["/rel"], ["http://"], ["http://a:99999/"], ["x", "mailto:a@b"]]) {
    try { new URL(s, b); bad.push("parsed " + s); } catch (e) { bad.push(e instanceof TypeError && e.code); }
  }
  const q = new URLSearchParams("?a=1&b=%C3%A9&c=x+y&a=2");
  const fromObj = new URLSearchParams({ k: "v w", n: 1 }).toString();
  const fromPairs = new URLSearchParams([["x", "1"], ["y", "!'()~*"]]).toString();
  const seen = [];
  q.forEach((v, k) => seen.push(k + "=" + v));
  return { parts, params, after, set, rel, bad, q: [q.get("b"), q.get("c"), q.size, seen, String(q)], fromObj, fromPairs,
    canParse: [URL.canParse("http://x/"), URL.canParse("nope"), URL.canParse("y", "http://x/")], json: JSON.stringify({ u: new URL("http://x/") }) };
}`, "")
	mustOK(t, o)
	var got struct {
		Parts, Rel, After  []string
		Params             []any
		Set                string
		Bad                []any
		Q                  []any
		FromObj, FromPairs string
		CanParse           []bool
		JSON               string
	}
	if err := json.Unmarshal(o.res.Result, &got); err != nil {
		t.Fatal(err, string(o.res.Result))
	}
	for _, c := range []struct{ got, want string }{
		{fmt.Sprint(got.Parts), "[https: User pw example.com:8443 example.com 8443 /a/c%20d/e.txt ?q=1&x=a+b&q=2 #frag https://example.com:8443 https://User:pw@example.com:8443/a/c%20d/e.txt?q=1&x=a+b&q=2#frag]"},
		{fmt.Sprint(got.Params), "[1 [1 2] a b true false <nil> [[q 1] [x a b] [q 2]] [q x q]]"},
		{fmt.Sprint(got.After), "[?q=3&new=a+b%26c%3Dd https://User:pw@example.com:8443/a/c%20d/e.txt?q=3&new=a+b%26c%3Dd#frag q=3&new=a+b%26c%3Dd]"},
		{got.Set, "https://User:pw@example.com/z?q=3&new=a+b%26c%3Dd"},
		{fmt.Sprint(got.Rel), "[http://h.example/a/x/y?z#w https://h.example:8080/abs https://other.example/p http://h.example/a/b?only=q http://h.example/a/b?k#h http://h.example/dir/sub/ http://h.example/ /tmp/a%20b.txt someone@example.com]"},
		{fmt.Sprint(got.Bad), "[ERR_INVALID_URL ERR_INVALID_URL ERR_INVALID_URL ERR_INVALID_URL ERR_INVALID_URL]"},
		{fmt.Sprint(got.Q), "[é x y 4 [a=1 b=é c=x y a=2] a=1&b=%C3%A9&c=x+y&a=2]"},
		{got.FromObj, "k=v+w&n=1"},
		{got.FromPairs, "x=1&y=%21%27%28%29%7E*"},
		{fmt.Sprint(got.CanParse), "[true false true]"},
		{got.JSON, `{"u":"http://x/"}`},
	} {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
}

func TestUnhandledRejection(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`export default () => Promise.reject(42)`, "Uncaught (in promise) 42"},
		{`export default async () => { await new Promise(r => setTimeout(r, 5)); throw new RangeError("later") }`, "Uncaught (in promise) RangeError: later"},
		{`export default Promise.reject(new Error("a rejected value"))`, "Uncaught (in promise) Error: a rejected value"},
		{`export default () => ({ then(ok, no) { no(new Error("thenable")) } })`, "Uncaught (in promise) Error: thenable"},
		{`await Promise.reject(new Error("top level"))`, "Uncaught Error: top level"},
	} {
		o := js(t, c.src, "")
		if o.code != 1 || !strings.Contains(o.stderr, c.want) || o.res.Result != nil {
			t.Errorf("%s: want exit 1 and %q on stderr\n%s", c.src, c.want, o)
		}
	}
	// A rejection the module handles is not one.
	o := js(t, `export default async () => { try { await Promise.reject(new Error("x")) } catch (e) { return "caught " + e.message } }`, "")
	mustOK(t, o)
	if string(o.res.Result) != `"caught x"` {
		t.Fatalf("%s", o)
	}
	healthy(t)
}

func TestInputLimit(t *testing.T) {
	o := js(t, `export default (i) => i.length`, `"`+strings.Repeat("x", 1<<20)+`"`)
	if o.code != 2 || !strings.Contains(o.res.Exit.Reason, "structured input is") || !strings.Contains(o.res.Exit.Reason, "over the limit of 1048576") {
		t.Fatalf("%+v", o.res.Exit)
	}
	o = js(t, `export default (i) => i.length`, `"`+strings.Repeat("x", 1000)+`"`)
	mustOK(t, o)
	if string(o.res.Result) != "1000" {
		t.Fatalf("%s", o)
	}
}

// A signal ends a module that waits on a timer (no JavaScript running to
// interrupt), as a process would end: signal set, status 128+signal.
func TestSignalWhileWaiting(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		sigs := make(chan syscall.Signal, 1)
		time.AfterFunc(300*time.Millisecond, func() { sigs <- sig })
		t0 := time.Now()
		o := run(t, &backends.Request{Argv: []string{`await new Promise(r => setTimeout(r, 1e9))`}, Signals: sigs, Timeout: 20 * time.Second})
		if o.res.Exit.Signal != int32(sig) || o.code != 128+int(sig) || o.res.Exit.TimedOut {
			t.Errorf("%s: %s", sig, o)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("%s ended the module after %s", sig, d)
		}
	}
	healthy(t)
}
