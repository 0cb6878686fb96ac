package confinetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/computerfs/computerfs/workspace"
)

// secret is in the daemon's environment, in a root-only host file and in
// files of a host directory beside the workspace: no backend may print it.
const secret = "DAEMON-SECRET-51c9e2"

var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cfs-confinetest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = filepath.Join(dir, "plugins")
	for _, p := range []string{"shell", "js"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(pluginDir, backends.Prefix+p), "../../cmd/plugin-"+p)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build the", p, "plugin:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// The daemon's secrets: what a careless host would hand its plugins.
	os.Setenv("CFS_TEST_API_KEY", secret)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// python reports whether the third-party plugin can run here, and
// installs it into the plugin directory.
func python(t *testing.T) bool {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf, cryptography").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("python3 cannot run the example plugin: %v\n%s", err, out)
		if os.Getenv("CFS_REQUIRE_EXAMPLES") == "1" {
			t.Fatal(msg)
		}
		t.Log(msg)
		return false
	}
	src := "../../examples/python-plugin"
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, "_pb2.py") && n != "computerfs-plugin-pyupper" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if n == "computerfs-plugin-pyupper" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(pluginDir, n), b, mode); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// topNames lists a directory's entries (for /tmp and the plugins' cwd).
func topNames(dir string) map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

type attempt struct {
	backend string
	name    string
	argv    []string
	env     map[string]string
}

func TestEveryDoor(t *testing.T) {
	withPython := python(t)
	base := t.TempDir()
	host := filepath.Join(base, "host") // beside the workspace, never in it
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"secret.txt": 0o644, "root-only": 0o600, "sh-interp-secret": 0o644, "lib.mjs": 0o644, "secret.sh": 0o755} {
		content := secret + "\n"
		switch name {
		case "lib.mjs":
			content = "export default " + fmt.Sprintf("%q", secret) + ";\n"
		case "secret.sh":
			content = "echo " + secret + "\n"
		}
		if err := os.WriteFile(filepath.Join(host, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}

	wsPath := filepath.Join(base, "ws.cfs")
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	ctx := context.Background()
	if _, err := ws.WriteFile(ctx, "/work/ok.txt", []byte("inside\n"), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	// Symlinks that point out: they must resolve in the workspace.
	for link, target := range map[string]string{
		"/work/to-host":     filepath.Join(host, "secret.txt"),
		"/work/to-hostdir":  host,
		"/work/to-shadow":   "/etc/shadow",
		"/work/up":          "../../../../../../../../" + filepath.Join(host, "secret.txt"),
		"/work/to-root-key": filepath.Join(host, "root-only"),
	} {
		if err := ws.Symlink(ctx, target, link); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := backends.New(backends.Options{Dirs: []string{pluginDir}, WS: ws, Owner: wsPath,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()

	hostFile := filepath.Join(host, "secret.txt")
	rootOnly := filepath.Join(host, "root-only")
	created := filepath.Join(host, "created")
	attempts := []attempt{
		// The shell: the interpreter's doors (more in package shell).
		{"shell", "read host file", []string{"cat " + hostFile + " " + rootOnly + " /etc/shadow"}, nil},
		{"shell", "write host file", []string{"echo pwned > " + created + "; echo pwned >> " + hostFile}, nil},
		{"shell", "TMPDIR write", []string{"echo pwned > $TMPDIR/sh-interp-created"}, map[string]string{"TMPDIR": host}},
		{"shell", "TMPDIR read", []string{"cat < $TMPDIR/sh-interp-secret"}, map[string]string{"TMPDIR": host}},
		{"shell", "TMPDIR via bash -c", []string{"export TMPDIR=" + host + "; bash -c 'cat < " + host + "/sh-interp-secret; echo x > " + host + "/sh-interp-new'"}, nil},
		{"shell", "plugin's /tmp", []string{"echo pwned > /tmp/sh-interp-created; cat /tmp/sh-interp-created"}, nil},
		{"shell", "process substitution", []string{"diff <(echo a) <(cat " + hostFile + ")"}, map[string]string{"TMPDIR": host}},
		{"shell", "source", []string{"source " + host + "/secret.sh; PATH=" + host + " . secret.sh"}, nil},
		{"shell", "symlinks out", []string{"cat /work/to-host /work/up /work/to-shadow /work/to-root-key; ls /work/to-hostdir/"}, nil},
		{"shell", "dotdot", []string{"cd /work && cat ../../../../../.." + hostFile}, nil},
		{"shell", "tilde and lookup", []string{"echo ~root; type -p secret.sh; command -v secret.sh"}, map[string]string{"PATH": host}},
		{"shell", "proc and dev", []string{"cat /proc/self/environ /proc/1/environ /dev/mem; env"}, nil},
		{"shell", "daemon env", []string{"echo $CFS_TEST_API_KEY; env | grep -c CFS_TEST_API_KEY"}, nil},
		{"shell", "eval", []string{"eval 'cat " + hostFile + "; echo x > " + created + "'"}, nil},
		// JavaScript: the module loader and node:fs/promises.
		{"js", "import host module", []string{`import s from "` + filepath.Join(host, "lib.mjs") + `"; export default () => s`}, nil},
		{"js", "dynamic import through a symlink", []string{`export default async () => (await import("/work/to-hostdir/lib.mjs")).default`}, nil},
		{"js", "read host files", []string{`import { readFile } from "node:fs/promises";
export default async () => { const out = []; for (const p of ["` + hostFile + `", "` + rootOnly + `", "/etc/shadow", "/work/to-host", "/work/up", "/proc/self/environ", "../../../../` + hostFile + `"]) { try { out.push(await readFile(p, "utf8")); } catch (e) { out.push(e.code); } } return out; }`}, nil},
		{"js", "write host files", []string{`import { writeFile, appendFile, symlink } from "node:fs/promises";
export default async () => { const out = []; for (const f of [() => writeFile("` + created + `", "x"), () => appendFile("` + hostFile + `", "x"), () => writeFile("/work/to-hostdir/new", "x"), () => writeFile("/work/to-host", "x")]) { try { await f(); out.push("ok"); } catch (e) { out.push(e.code); } } return out; }`}, nil},
		{"js", "env and globals", []string{`export default () => [JSON.stringify(process.env), typeof require, typeof std, typeof os, typeof fetch]`}, nil},
	}
	if withPython {
		attempts = append(attempts,
			attempt{"pyupper", "read host file", []string{"read", hostFile}, nil},
			attempt{"pyupper", "read dotdot", []string{"read", "../../../../../../../" + hostFile}, nil},
			attempt{"pyupper", "read symlink out", []string{"read", "/work/to-host"}, nil},
			attempt{"pyupper", "read root-only", []string{"read", "/work/to-root-key"}, nil},
			attempt{"pyupper", "write host file", []string{"write", created, "pwned"}, nil},
			attempt{"pyupper", "write through dir symlink", []string{"write", "/work/to-hostdir/new", "pwned"}, nil},
			attempt{"pyupper", "env", []string{"env"}, nil},
		)
	}

	before := HostState(host)
	tmpBefore := topNames("/tmp")
	for _, a := range attempts {
		t.Run(a.backend+"/"+a.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			res, err := rt.Exec(ctx, &backends.Request{Backend: a.backend, Argv: a.argv, Env: a.env, Cwd: "/work"}, &stdout, &stderr)
			if err != nil {
				t.Fatalf("exec: %v (stderr %q)", err, stderr.String())
			}
			all := stdout.String() + stderr.String() + string(res.Result) + res.Exit.GetReason()
			if strings.Contains(strings.ToUpper(all), secret) {
				t.Errorf("the host's secret reached the %s backend:\n%s", a.backend, all)
			}
			if strings.Contains(all, "panic") || strings.Contains(all, "internal error") {
				t.Errorf("the backend broke: %s", all)
			}
			t.Logf("exit %d: %s", backends.ExitStatus(res.Exit), strings.TrimSpace(all))
		})
	}
	for _, c := range Changes(before, HostState(host)) {
		t.Errorf("the host: %s", c)
	}
	for n := range topNames("/tmp") {
		if !tmpBefore[n] && strings.HasPrefix(n, "sh-interp-") {
			t.Errorf("/tmp/%s created", n)
		}
	}
	// The file API: the same paths, through the workspace's own calls.
	for _, p := range []string{hostFile, "/work/to-host", "/work/up", "/work/to-shadow", "../../.." + hostFile, "/work/to-hostdir/secret.txt"} {
		if b, _, err := ws.ReadFile(ctx, p, 1<<20); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("file API: %s read the host's secret", p)
		}
	}
	for _, p := range []string{created, "/work/to-hostdir/new", "/work/to-host"} {
		ws.WriteFile(ctx, p, []byte("pwned"), workspace.WriteOptions{Parents: true})
	}
	for _, c := range Changes(before, HostState(host)) {
		t.Errorf("file API writes reached the host: %s", c)
	}
	// The workspace kept what the attempts wrote inside it, and nothing
	// landed outside it: the writes through symlinks went nowhere or in.
	if _, _, err := ws.ReadFile(ctx, "/work/ok.txt", 1<<20); err != nil {
		t.Errorf("the workspace lost a file: %v", err)
	}
}

// shellPluginRSS is the resident size of the shell plugin serving ws.
func shellPluginRSS(t *testing.T, ws string) int64 {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("COMPUTERFS_PLUGIN_OWNER="+ws+"\x00")) {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if !strings.HasSuffix(exe, backends.Prefix+"shell") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, l := range strings.Split(string(status), "\n") {
			var kb int64
			if n, _ := fmt.Sscanf(l, "VmRSS: %d kB", &kb); n == 1 {
				return kb << 10
			}
		}
	}
	t.Fatal("no shell plugin running")
	return 0
}

// The reproduction of the issue: one exec that builds a 1 GiB string
// grew the plugin to 3 GiB, for good. Now it ends with "memory limit"
// (137), an exec beside it is unaffected, and the memory is returned.
func TestShellMemoryLimit(t *testing.T) {
	base := t.TempDir()
	wsPath := filepath.Join(base, "ws.cfs")
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	rt, err := backends.New(backends.Options{Dirs: []string{pluginDir}, WS: ws, Owner: wsPath,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	exec := func(script string) (*backends.Result, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		res, err := rt.Exec(ctx, &backends.Request{Backend: "shell", Argv: []string{script}}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("exec: %v", err)
		}
		return res, stdout.String() + stderr.String()
	}
	exec("true")
	rssBefore := shellPluginRSS(t, wsPath)
	var lightOut string
	var light *backends.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		light, lightOut = exec(`n=0; for i in $(seq 2000); do n=$((n+1)); done; echo $n`)
	}()
	res, out := exec(`x=aaaaaaaaaaaaaaaa; for i in $(seq 26); do x=$x$x; done; echo ${#x}`) // 1 GiB
	<-done
	if backends.ExitStatus(res.Exit) != 137 || !res.Exit.OomKilled || !strings.HasPrefix(res.Exit.Reason, "memory limit") {
		t.Errorf("the 1 GiB exec: exit %d %+v: %s", backends.ExitStatus(res.Exit), res.Exit, out)
	}
	if backends.ExitStatus(light.Exit) != 0 || lightOut != "2000\n" {
		t.Errorf("the exec beside it: %+v %q", light.Exit, lightOut)
	}
	rssAfter := shellPluginRSS(t, wsPath)
	t.Logf("shell plugin RSS: %d MiB before, %d MiB after", rssBefore>>20, rssAfter>>20)
	if rssAfter > rssBefore+128<<20 {
		t.Errorf("the plugin kept its memory: RSS %d MiB after, %d MiB before", rssAfter>>20, rssBefore>>20)
	}
	if _, out := exec(`echo fine`); out != "fine\n" {
		t.Errorf("the next exec: %q", out)
	}
}

// The mount: what a backend writes into the workspace gives no one on
// the host more than they had. A setuid-root binary in the workspace
// runs without its privilege (the mount is nosuid and nodev).
func TestMountGrantsNothing(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	m := testmount.New(t, testmount.Options{})
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var opts string
	for _, l := range strings.Split(string(info), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == m.Dir {
			opts = f[5]
		}
	}
	for _, want := range []string{"nosuid", "nodev"} {
		if !strings.Contains(","+opts+",", ","+want+",") {
			t.Errorf("mount options %q lack %s", opts, want)
		}
	}
	id, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "id"), id, 0o755); err != nil {
		t.Fatal(err)
	}
	// Whoever sets the bit (a backend's chmod lands in the same store),
	// the mount keeps it and shows it.
	bin := filepath.Join(m.Dir, "id")
	if err := os.Chmod(bin, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("the setuid bit did not stick: %v %v", fi.Mode(), err)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(m.Dir, "id"), "-u").CombinedOutput()
	if err != nil {
		t.Fatalf("run the setuid binary as nobody: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "65534" {
		t.Errorf("a setuid-root binary in the workspace ran with euid %s", got)
	}
}
