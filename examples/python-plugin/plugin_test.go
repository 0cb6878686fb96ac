// Package pyplugin_test runs the Python backend example
// (computerfs-plugin-pyupper) under the real computerfs binary: with a
// daemon, and with the CLI hosting the runtime itself. It proves that a
// backend written without Go and without pluginapi can be started,
// described, configured, reach the workspace through HostFS, and run
// execs.
package pyplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const python = "/usr/bin/python3"

// pluginFiles are what an installation of the example holds.
var pluginFiles = []string{
	"computerfs-plugin-pyupper",
	"backend_pb2.py", "workspace_pb2.py", "goplugin_pb2.py", "health_pb2.py",
}

// requirePython skips the test when Debian's python3 cannot import what
// the plugin needs, unless CFS_REQUIRE_EXAMPLES=1 (CI) makes that a
// failure.
func requirePython(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import grpc, google.protobuf, cryptography").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("%s cannot run the plugin (install python3-grpcio python3-protobuf python3-cryptography): %v\n%s", python, err, out)
	if os.Getenv("CFS_REQUIRE_EXAMPLES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

type harness struct {
	t         *testing.T
	bin       string // the computerfs binary
	home      string
	pluginDir string
	env       []string
}

func setup(t *testing.T) *harness {
	t.Helper()
	requirePython(t)
	tmp := t.TempDir()
	h := &harness{t: t, bin: filepath.Join(tmp, "bin", "computerfs"), home: filepath.Join(tmp, "home"), pluginDir: filepath.Join(tmp, "plugins")}

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool(), "build", "-o", h.bin, "./cmd/computerfs")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/computerfs: %v\n%s", err, out)
	}

	// Install the plugin the way a user would: the script and its message
	// classes, copied into a plugin directory of their own.
	for _, dir := range []string{h.home, h.pluginDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range pluginFiles {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "computerfs-plugin-") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(h.pluginDir, name), b, mode); err != nil {
			t.Fatal(err)
		}
	}

	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPUTERFS_") {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env,
		"COMPUTERFS_HOME="+h.home,
		"COMPUTERFS_PLUGIN_PATH="+h.pluginDir,
		"COMPUTERFS_WORKSPACE="+filepath.Join(h.home, "ws.cfs"),
	)
	t.Cleanup(func() { h.checkNoPlugins() })
	return h
}

// result is how one computerfs command ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// run runs computerfs with args; stdin is a string, an *os.File or nil.
func (h *harness) run(stdin any, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	switch in := stdin.(type) {
	case string:
		cmd.Stdin = strings.NewReader(in)
	case *os.File:
		cmd.Stdin = in
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		h.t.Fatalf("computerfs %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		h.t.Fatalf("computerfs %s: timed out: %s", strings.Join(args, " "), r)
	}
	return r
}

// want checks a command's stdout and exit status.
func (h *harness) want(r result, stdout string, code int, what string) {
	h.t.Helper()
	if r.stdout != stdout || r.code != code {
		h.t.Errorf("%s: got %s; want exit %d, stdout %q", what, r, code, stdout)
	}
}

var daemonLine = regexp.MustCompile(`daemon (\d+) serving`)

// daemonLogLine finds the log a --daemon names.
var daemonLogLine = regexp.MustCompile(`log in (\S+)`)

// startDaemon runs "computerfs serve --daemon --create" and returns a func that
// stops it (also registered as a cleanup, for a test that fails first).
func (h *harness) startDaemon() func() {
	h.t.Helper()
	r := h.run(nil, "serve", "--daemon", "--create")
	m := daemonLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		h.t.Fatalf("serve --daemon: %s", r)
	}
	pid, _ := strconv.Atoi(m[1])
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if h.t.Failed() {
			if m := daemonLogLine.FindStringSubmatch(r.stdout); m != nil {
				if b, err := os.ReadFile(m[1]); err == nil {
					h.t.Logf("%s:\n%s", m[1], b)
				}
			}
		}
		syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 10*time.Second) {
			h.t.Errorf("daemon %d did not exit within 10s of SIGTERM; killing it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
	h.t.Cleanup(stop)
	return stop
}

// waitGone waits for a process that is not our child to exit (or to be a
// zombie nobody has reaped yet).
func waitGone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if s := string(b); strings.Contains(s, ") Z ") || strings.Contains(s, ") X ") {
				return true
			}
		}
	}
	return false
}

// pluginProcs lists the live processes running our installed plugin.
func (h *harness) pluginProcs() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), filepath.Join(h.pluginDir, "computerfs-plugin-pyupper")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoPlugins fails the test if a plugin process outlived its host.
func (h *harness) checkNoPlugins() {
	var pids []int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if pids = h.pluginProcs(); len(pids) == 0 {
			return
		}
	}
	h.t.Errorf("plugin processes left behind: %v", pids)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

type backendInfo struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	State       string   `json:"state"`
	Path        string   `json:"path"`
	Description string   `json:"description"`
	Accepts     []string `json:"accepts"`
	LastError   string   `json:"last_error"`
	Execs       int64    `json:"execs"`
	Restarts    int64    `json:"restarts"`
	Defaults    *struct {
		TimeoutMs   int64 `json:"timeout_ms"`
		OutputBytes int64 `json:"output_bytes"`
	} `json:"default_limits"`
}

func (h *harness) backend() backendInfo {
	h.t.Helper()
	r := h.run(nil, "backends", "--json")
	if r.code != 0 {
		h.t.Fatalf("backends --json: %s", r)
	}
	var list []backendInfo
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		h.t.Fatalf("backends --json: %v\n%s", err, r.stdout)
	}
	for _, b := range list {
		if b.ID == "pyupper" {
			return b
		}
	}
	h.t.Fatalf("backends --json does not list pyupper:\n%s", r.stdout)
	return backendInfo{}
}

func TestPythonPlugin(t *testing.T) {
	h := setup(t)
	stop := h.startDaemon()

	if r := h.run("hello", "fs", "write", "-p", "/docs/a.txt"); r.code != 0 {
		t.Fatalf("fs write: %s", r)
	}

	t.Run("describe", func(t *testing.T) {
		b := h.backend()
		if b.State != "ready" || b.LastError != "" {
			t.Fatalf("pyupper is %q (last error %q), want ready", b.State, b.LastError)
		}
		if !strings.HasPrefix(b.Description, "A demonstration backend written in Python") || !strings.Contains(b.Description, "'upper TEXT...'") {
			t.Errorf("description: %q", b.Description)
		}
		if b.Version != "0.1.0" || len(b.Accepts) != 1 || b.Accepts[0] != "argv" {
			t.Errorf("version %q, accepts %q; want 0.1.0, [argv]", b.Version, b.Accepts)
		}
		if b.Defaults == nil || b.Defaults.TimeoutMs != 30000 || b.Defaults.OutputBytes != 4<<20 {
			t.Errorf("default limits: %+v", b.Defaults)
		}
		if b.Path != filepath.Join(h.pluginDir, "computerfs-plugin-pyupper") {
			t.Errorf("path %q", b.Path)
		}
	})

	t.Run("exec", func(t *testing.T) {
		h := *h
		h.t = t
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "upper", "hi", "there"), "HI THERE\n", 0, "upper")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "read", "/docs/a.txt"), "HELLO", 0, "read")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--cwd", "/docs", "--", "read", "a.txt"), "HELLO", 0, "read relative to cwd")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "write", "/docs/b.txt", "yo"), "", 0, "write")
		h.want(h.run(nil, "fs", "cat", "/docs/b.txt"), "yo", 0, "fs cat what the plugin wrote")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "exit", "5"), "", 5, "exit 5")
		h.want(h.run("abc\n", "exec", "-b", "pyupper", "--", "stdin"), "ABC\n", 0, "stdin")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--input", "{}", "--", "result", `{"n":1}`), "{\"n\":1}\n", 0, "result")
		if r := h.run(nil, "exec", "-b", "pyupper", "--env", "FOO=bar", "--", "env"); r.code != 0 || !strings.Contains(r.stdout, "FOO=bar\nHOME=/\n") {
			t.Errorf("env: %s", r)
		}
		if r := h.run(nil, "exec", "-b", "pyupper", "--", "read", "/docs/missing"); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
			t.Errorf("read a missing file: %s; want exit 1, ENOENT on stderr", r)
		}
		if r := h.run(nil, "exec", "-b", "pyupper", "--", "nosuch"); r.code != 127 || !strings.Contains(r.stderr, "unknown sub-command") {
			t.Errorf("unknown sub-command: %s; want exit 127", r)
		}
		// 200 KiB of stdin: several chunks each way.
		big := strings.Repeat("abcdefgh", 25<<10)
		if r := h.run(big, "exec", "-b", "pyupper", "--", "stdin"); r.code != 0 || r.stdout != strings.ToUpper(big) {
			t.Errorf("stdin of %d bytes: exit %d, %d bytes out, stderr %q", len(big), r.code, len(r.stdout), r.stderr)
		}
		// A command still reading stdin at its timeout: the host sends
		// SIGTERM, the plugin ends the exec with that signal.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r := h.run(pr, "exec", "-b", "pyupper", "--timeout", "1s", "--", "stdin")
		pr.Close()
		pw.Close()
		if r.code != 124 || !strings.Contains(r.stderr, "timed out") {
			t.Errorf("timeout: %s; want exit 124, timed out", r)
		}
		// Output past the limit: the host cuts it and sends SIGKILL, the
		// plugin stops reading the file and ends the exec: 141, as every
		// backend's cut output.
		if r := h.run(strings.Repeat("z", 1<<20), "fs", "write", "/docs/big"); r.code != 0 {
			t.Fatalf("fs write /docs/big: %s", r)
		}
		if r := h.run(nil, "exec", "-b", "pyupper", "--output-limit", "10K", "--", "read", "/docs/big"); r.code != 141 || r.stdout != strings.Repeat("Z", 10<<10) || !strings.Contains(r.stderr, "output went past") {
			t.Errorf("output limit: exit %d, %d bytes out, stderr %q; want exit 141, 10240 bytes", r.code, len(r.stdout), r.stderr)
		}
		// No exec above broke the protocol: the plugin never restarted.
		if b := h.backend(); b.State != "ready" || b.Restarts != 0 || b.Execs < 13 {
			t.Errorf("after the execs: state %q, restarts %d, execs %d, last error %q", b.State, b.Restarts, b.Execs, b.LastError)
		}
	})

	// The daemon kills its plugins on its way out.
	stop()
	h.checkNoPlugins()

	t.Run("no-daemon", func(t *testing.T) {
		h := *h
		h.t = t
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "upper", "hi", "there"), "HI THERE\n", 0, "upper without a daemon")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "read", "/docs/b.txt"), "YO", 0, "read without a daemon")
		h.want(h.run("xyz", "exec", "-b", "pyupper", "--", "stdin"), "XYZ", 0, "stdin without a daemon")
		h.want(h.run(nil, "exec", "-b", "pyupper", "--", "exit", "3"), "", 3, "exit without a daemon")
	})
}

// `computerfs plugin check` passes every check on the installed plugin,
// with the probes of check.json.
func TestPythonPluginCheck(t *testing.T) {
	h := setup(t)
	r := h.run(nil, "plugin", "check", filepath.Join(h.pluginDir, "computerfs-plugin-pyupper"), "--probes", "check.json", "--json")
	var rep struct {
		OK     bool `json:"ok"`
		Checks []struct{ Name, Status, Reason string }
		Log    string `json:"log"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("plugin check: %v\n%s", err, r)
	}
	for _, c := range rep.Checks {
		if c.Status != "pass" {
			t.Errorf("check %s: %s: %s", c.Name, c.Status, c.Reason)
		}
	}
	if r.code != 0 || !rep.OK || len(rep.Checks) < 16 {
		t.Fatalf("plugin check: exit %d, ok %v, %d checks\n%s", r.code, rep.OK, len(rep.Checks), rep.Log)
	}
}
