package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binWorkspace is a home and a new store for the computerfs binary.
func binWorkspace(t *testing.T) (home, ws string) {
	t.Helper()
	dir := t.TempDir()
	home, ws = filepath.Join(dir, "home"), filepath.Join(dir, "ws.cfs")
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return home, ws
}

func cfsEnv(home string) []string {
	return append(os.Environ(), "COMPUTERFS_HOME="+home, "COMPUTERFS_LOG=debug")
}

// start starts cmd, in its own process group, until the test ends: then
// it gets SIGTERM, and SIGKILL (and the test fails) if it is still there
// 20 s later. The channel closes when it exits.
func start(t *testing.T, cmd *exec.Cmd, logs *lockedBuf) <-chan struct{} {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("%s did not stop on SIGTERM:\n%s", cmd.Args, logs)
		}
	})
	return exited
}

// startServe runs `computerfs serve WS` (the daemon without a mount) in
// its own process group until the test ends, or until stop.
func startServe(t *testing.T, home, ws string) (stop func()) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins(t), "computerfs"), "serve", ws)
	cmd.Env = cfsEnv(home)
	exited := startUntil(t, cmd, "serving")
	return func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-exited
	}
}

// startUntil starts cmd as start does and returns once it prints a line
// holding want on stdout (30 s at most).
func startUntil(t *testing.T, cmd *exec.Cmd, want string) <-chan struct{} {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	cmd.Stderr = logs
	exited := start(t, cmd, logs)
	ready := make(chan bool, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("%s exited before saying %q:\n%s", cmd.Args, want, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not say %q within 30 s:\n%s", cmd.Args, want, logs)
	}
	return exited
}

// connectStdio spawns `computerfs mcp -w WS` as an agent host does and
// connects the Go SDK's client to it.
func connectStdio(t *testing.T, home, ws string, flags ...string) (*mcp.ClientSession, *lockedBuf) {
	t.Helper()
	cs, logs, _ := connectStdioCmd(t, home, ws, flags...)
	return cs, logs
}

func connectStdioCmd(t *testing.T, home, ws string, flags ...string) (*mcp.ClientSession, *lockedBuf, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins(t), "computerfs"), append([]string{"mcp", "-w", ws}, flags...)...)
	cmd.Env = cfsEnv(home)
	logs := &lockedBuf{}
	cmd.Stderr = logs
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !strings.Contains(err.Error(), "signal") {
			t.Logf("close: %v", err)
		}
	})
	return cs, logs, cmd
}

// Over stdio, as Claude Code spawns it, with a daemon holding the
// workspace (which takes the session: mcp hands it its stdio; or, with
// --no-handoff, mcp serves it and calls the daemon) and without one: the
// same tools and answers, stdout the protocol's alone (any stray byte
// would break the session).
func TestStdio(t *testing.T) {
	for _, tc := range []struct {
		name    string
		daemon  bool
		flags   []string
		wantLog string
	}{
		{"daemon", true, nil, "handed to the daemon"},
		{"daemon, no handoff", true, []string{"--no-handoff"}, "through the daemon"},
		{"no daemon", false, nil, "on the store, no daemon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			daemon := tc.daemon
			home, ws := binWorkspace(t)
			if daemon {
				startServe(t, home, ws)
			}
			cs, logs, cmd := connectStdioCmd(t, home, ws, tc.flags...)
			ok(t, cs, "write", map[string]any{"file_path": "/src/main.go", "content": "package main\n\nfunc main() {}\n"})
			c := ok(t, cs, "snapshot", map[string]any{"name": "before"})
			if !strings.Contains(c.text, "snapshot before: the workspace as of commit") {
				t.Errorf("snapshot: %s", c.text)
			}
			c = ok(t, cs, "read", map[string]any{"file_path": "/src/main.go"})
			if !strings.Contains(c.text, "     3\tfunc main() {}") {
				t.Errorf("read: %s", c.text)
			}
			ok(t, cs, "edit", map[string]any{"file_path": "/src/main.go", "old_string": "func main() {}", "new_string": "func main() { println(1) }"})
			c = ok(t, cs, "exec", map[string]any{"command": "grep -c println src/main.go; echo x > /src/made.txt"})
			if !strings.HasPrefix(c.text, "1\n") || !strings.Contains(c.text, "/src/made.txt") || c.data["backend"] != "shell" {
				t.Errorf("exec: %s", c.text)
			}
			c = ok(t, cs, "glob", map[string]any{"pattern": "src/*"})
			if !strings.Contains(c.text, "/src/made.txt") {
				t.Errorf("glob: %s", c.text)
			}
			c = ok(t, cs, "grep", map[string]any{"pattern": "println", "output_mode": "content"})
			if c.text != "/src/main.go:3:func main() { println(1) }" {
				t.Errorf("grep: %s", c.text)
			}
			ok(t, cs, "ls", map[string]any{"path": "/src"})
			c = ok(t, cs, "diff", map[string]any{"from": "before"})
			if !strings.HasPrefix(c.text, "2 changes from before to now") || !strings.Contains(c.text, "modified /src/main.go (29 -> 41 bytes)") || !strings.Contains(c.text, "added    /src/made.txt (file, 2 bytes)") {
				t.Errorf("diff: %s", c.text)
			}
			c = ok(t, cs, "snapshot", map[string]any{"list": true})
			if !strings.HasPrefix(c.text, "before  commit ") {
				t.Errorf("snapshot list: %s", c.text)
			}
			fails(t, cs, "snapshot", map[string]any{"name": "before"}, "snapshot before")
			fails(t, cs, "diff", map[string]any{"from": "nope"}, "diff nope")
			// Undo the exec that made /src/made.txt, then restore the rest.
			c = ok(t, cs, "undo", map[string]any{})
			if !strings.Contains(c.text, "undid exec") || !strings.Contains(c.text, "/src/made.txt") {
				t.Errorf("undo: %s", c.text)
			}
			fails(t, cs, "read", map[string]any{"file_path": "/src/made.txt"}, "no such file")
			c = ok(t, cs, "restore", map[string]any{"name": "before"})
			if !strings.Contains(c.text, "restored the workspace to snapshot before") {
				t.Errorf("restore: %s", c.text)
			}
			c = ok(t, cs, "read", map[string]any{"file_path": "/src/main.go"})
			if !strings.Contains(c.text, "     3\tfunc main() {}") {
				t.Errorf("read after the restore: %s", c.text)
			}
			fails(t, cs, "undo", map[string]any{"exec_id": "nope"}, "no record of that exec")
			// A fork: an exec in it, the workspace untouched, then merged.
			c = ok(t, cs, "fork", map[string]any{"op": "create"})
			id, _ := c.data["id"].(string)
			if id == "" {
				t.Fatalf("fork create: %s", c.text)
			}
			ok(t, cs, "exec", map[string]any{"command": "echo forked > /src/forked.txt", "fork": id})
			fails(t, cs, "read", map[string]any{"file_path": "/src/forked.txt"}, "no such file")
			c = ok(t, cs, "fork", map[string]any{"op": "changes", "id": id})
			if !strings.Contains(c.text, "added    /src/forked.txt") {
				t.Errorf("fork changes: %s", c.text)
			}
			c = ok(t, cs, "fork", map[string]any{"op": "merge", "id": id})
			if !strings.Contains(c.text, "merged fork "+id) {
				t.Errorf("fork merge: %s", c.text)
			}
			c = ok(t, cs, "read", map[string]any{"file_path": "/src/forked.txt"})
			if !strings.Contains(c.text, "forked") {
				t.Errorf("read after the merge: %s", c.text)
			}
			// Exec's stdin is not the protocol's: cat reads nothing and the
			// session goes on.
			c = ok(t, cs, "exec", map[string]any{"command": "cat; echo still"})
			if !strings.HasPrefix(c.text, "still\n") {
				t.Errorf("exec with no stdin: %s", c.text)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("mcp's log does not say %q:\n%s", tc.wantLog, logs)
			}
			if !daemon {
				// The plugins mcp started read /dev/null, never the
				// protocol's stream.
				kids := childrenOf(cmd.Process.Pid)
				if len(kids) == 0 {
					t.Errorf("no plugin process under mcp (pid %d)", cmd.Process.Pid)
				}
				for _, pid := range kids {
					if fd0, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid)); err != nil || fd0 != "/dev/null" {
						t.Errorf("plugin %d: stdin %q (%v), want /dev/null", pid, fd0, err)
					}
				}
			}
		})
	}
}

// When the daemon goes, the tools say so and what to do; a session the
// daemon served itself ends, and mcp says why on stderr.
func TestDaemonGone(t *testing.T) {
	t.Run("no handoff", func(t *testing.T) {
		home, ws := binWorkspace(t)
		stop := startServe(t, home, ws)
		cs, _ := connectStdio(t, home, ws, "--no-handoff")
		ok(t, cs, "write", map[string]any{"file_path": "/a.txt", "content": "a\n"})
		stop()
		fails(t, cs, "read", map[string]any{"file_path": "/a.txt"}, "the workspace's daemon does not answer", "Start it again")
		fails(t, cs, "exec", map[string]any{"command": "echo hi"}, "the workspace's daemon does not answer")
	})
	t.Run("handoff", func(t *testing.T) {
		home, ws := binWorkspace(t)
		stop := startServe(t, home, ws)
		cs, logs, cmd := connectStdioCmd(t, home, ws)
		ok(t, cs, "write", map[string]any{"file_path": "/a.txt", "content": "a\n"})
		stop()
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"file_path": "/a.txt"}}); err == nil {
			t.Errorf("a call after the daemon stopped did not fail")
		}
		deadline := time.Now().Add(20 * time.Second)
		for cmd.ProcessState == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // the SDK's transport waits for it
			if strings.Contains(logs.String(), "daemon stopped") {
				break
			}
		}
		if !strings.Contains(logs.String(), "the workspace's daemon stopped, and this session with it: start the MCP server again") {
			t.Errorf("mcp's stderr does not say the daemon stopped:\n%s", logs)
		}
	})
}

// A host configured with a workspace that does not exist yet gets a new
// one, as mount makes it.
func TestStdioNewWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "deeper", "new.cfs")
	cs, logs := connectStdio(t, filepath.Join(dir, "home"), ws)
	ok(t, cs, "write", map[string]any{"file_path": "/hello.txt", "content": "hi\n"})
	c := ok(t, cs, "read", map[string]any{"file_path": "/hello.txt"})
	if c.text != "     1\thi\n" {
		t.Errorf("read: %q", c.text)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Errorf("no store at %s: %v\n%s", ws, err, logs)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

var servingOn = regexp.MustCompile(`on http://(\S+)/`)

// startHTTP runs `computerfs mcp --http 127.0.0.1:0 ARGS` and returns
// its address and what it printed on stderr once it serves.
func startHTTP(t *testing.T, home, ws string, args ...string) (string, *lockedBuf) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins(t), "computerfs"), append([]string{"mcp", "-w", ws, "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = cfsEnv(home)
	logs := &lockedBuf{}
	cmd.Stderr = logs
	exited := start(t, cmd, logs)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingOn.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs
		}
		select {
		case <-exited:
			t.Fatalf("mcp --http exited:\n%s", logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("mcp --http not serving after 30 s:\n%s", logs)
	return "", nil
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func TestHTTP(t *testing.T) {
	home, ws := binWorkspace(t)
	startServe(t, home, ws)
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "0123456789abcdef-test-token"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, logs := startHTTP(t, home, ws, "--token-file", tokenFile)
	if strings.Contains(logs.String(), token) {
		t.Errorf("a token from a file is printed:\n%s", logs)
	}
	url := "http://" + addr + "/"
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Basic " + token} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "bearer token") {
			t.Errorf("Authorization %q: %d %s, want 401", auth, resp.StatusCode, body)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs)
	}
	defer cs.Close()
	ok(t, cs, "write", map[string]any{"file_path": "/h.txt", "content": "over http\n"})
	c := ok(t, cs, "exec", map[string]any{"command": "cat h.txt"})
	if !strings.HasPrefix(c.text, "over http\n") {
		t.Errorf("exec: %s", c.text)
	}
	// A second HTTP session has its own read record.
	tr2 := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "http-test-2"}, nil).Connect(ctx, tr2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	fails(t, cs2, "write", map[string]any{"file_path": "/h.txt", "content": "x"}, "read it first")
	ok(t, cs, "write", map[string]any{"file_path": "/h.txt", "content": "again\n"})
}

func TestHTTPRefusals(t *testing.T) {
	home, ws := binWorkspace(t)
	loose := filepath.Join(t.TempDir(), "token")
	os.WriteFile(loose, []byte("0123456789abcdef0123\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not loopback", []string{"--http", "0.0.0.0:0"}, "not a loopback address"},
		{"token file others can read", []string{"--http", "127.0.0.1:0", "--token-file", loose}, "chmod 600"},
		{"no port", []string{"--http", "127.0.0.1"}, "HOST:PORT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bins(t), "computerfs"), append([]string{"mcp", "-w", ws}, tc.args...)...)
			cmd.Env = cfsEnv(home)
			out, err := cmd.CombinedOutput()
			if ee, isExit := err.(*exec.ExitError); !isExit || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("%v: %s, want exit 2 saying %q", err, out, tc.want)
			}
		})
	}
	// Without a token file, a token is made and printed.
	_, logs := startHTTP(t, home, ws, "--no-exec")
	if !regexp.MustCompile(`bearer token: [0-9a-f]{64}\n`).MatchString(logs.String()) {
		t.Errorf("no generated token on stderr:\n%s", logs)
	}
}

// With the workspace mounted, what the tools write is what the mount
// shows at once, what is written through the mount the tools read, and
// paths under the mount point (an agent with a shell there passes them)
// are the workspace paths they show.
func TestMounted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	home, ws := binWorkspace(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err == nil {
			t.Logf("%s was still mounted: detached", mnt)
		}
	})
	cmd := exec.Command(filepath.Join(bins(t), "computerfs"), "mount", ws, mnt)
	cmd.Env = cfsEnv(home)
	startUntil(t, cmd, "mounted at")
	cs, _ := connectStdio(t, home, ws)
	ok(t, cs, "write", map[string]any{"file_path": "/m/a.txt", "content": "from mcp\n"})
	if b, err := os.ReadFile(filepath.Join(mnt, "m", "a.txt")); err != nil || string(b) != "from mcp\n" {
		t.Errorf("through the mount: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "m", "host.txt"), []byte("from the mount\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostPath := filepath.Join(mnt, "m", "host.txt")
	c := ok(t, cs, "read", map[string]any{"file_path": hostPath})
	if c.text != "     1\tfrom the mount\n" || c.data["path"] != "/m/host.txt" {
		t.Errorf("read %s: %q %v", hostPath, c.text, c.data["path"])
	}
	ok(t, cs, "edit", map[string]any{"file_path": hostPath, "old_string": "the mount", "new_string": "an edit"})
	if b, err := os.ReadFile(hostPath); err != nil || string(b) != "from an edit\n" {
		t.Errorf("edited, through the mount: %q, %v", b, err)
	}
	c = ok(t, cs, "exec", map[string]any{"command": "cat m/host.txt", "cwd": mnt})
	if !strings.HasPrefix(c.text, "from an edit\n") {
		t.Errorf("exec with the mount point as cwd: %s", c.text)
	}
}
