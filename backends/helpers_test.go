package backends_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
)

// pluginBin is the test plugin, built once for the whole test binary.
var pluginBin string

// The handshake environment a go-plugin plugin needs to stay up when it
// is started by hand (see pluginapi.Handshake).
const (
	ownerEnv  = "COMPUTERFS_PLUGIN_OWNER"
	cookieEnv = "COMPUTERFS_PLUGIN=5f2c1c9e-backend"
)

func TestMain(m *testing.M) {
	if os.Getenv(hostModeEnv) != "" {
		hostMode()
		return
	}
	if os.Getenv(reaperModeEnv) != "" {
		reaperMode()
		return
	}
	dir, err := os.MkdirTemp("", "cfs-backends-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "computerfs-plugin-test")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", pluginBin, "./internal/testplugin")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the test plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pluginDir returns a new directory holding the test plugin installed
// under each of ids (symlinks: the plugin takes its ID from its name).
func pluginDir(t *testing.T, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, id := range ids {
		if err := os.Symlink(pluginBin, filepath.Join(dir, backends.Prefix+id)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lockedBuf collects the runtime's log: it is written from plugin
// goroutines that may outlive a test, so it must not be t.Log.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type harness struct {
	rt    *backends.Runtime
	ws    *workspace.WS
	owner string
	logs  *lockedBuf
}

// newWS opens a fresh workspace, closed at the end of the test.
func newWS(t *testing.T) (*workspace.WS, string) {
	t.Helper()
	wsPath := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return workspace.New(f, workspace.Options{}), wsPath
}

// newHarness opens a workspace and a runtime over it. At the end of the
// test the runtime is closed, and no plugin process of its owner may be
// left.
func newHarness(t *testing.T, dirs []string, mod func(*backends.Options)) *harness {
	t.Helper()
	ws, wsPath := newWS(t)
	logs := &lockedBuf{}
	opts := backends.Options{
		Dirs: dirs, WS: ws, Owner: wsPath,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&opts)
	}
	rt, err := backends.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{rt: rt, ws: ws, owner: opts.Owner, logs: logs}
	t.Cleanup(func() {
		rt.Close()
		if left := waitNoPlugins(h.owner, 5*time.Second); len(left) > 0 {
			t.Errorf("plugin processes left after Close: %v", left)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("runtime log:\n%s", logs.String())
		}
	})
	return h
}

// exec runs req with a generous deadline and returns the result and its
// output.
func (h *harness) exec(t *testing.T, req *backends.Request) (*backends.Result, string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	res, err := h.rt.Exec(ctx, req, &stdout, &stderr)
	return res, stdout.String(), stderr.String(), err
}

// mustEcho runs `echo args...` on backend id and checks it succeeded.
func (h *harness) mustEcho(t *testing.T, id string, args ...string) *backends.Result {
	t.Helper()
	res, out, errOut, err := h.exec(t, &backends.Request{Backend: id, Argv: append([]string{"echo"}, args...)})
	if err != nil {
		t.Fatalf("echo on %s: %v", id, err)
	}
	if backends.ExitStatus(res.Exit) != 0 {
		t.Fatalf("echo on %s: exit %d (%s), stderr %q", id, backends.ExitStatus(res.Exit), res.Exit.Reason, errOut)
	}
	if want := strings.Join(args, " ") + "\n"; out != want {
		t.Fatalf("echo on %s: stdout %q, want %q", id, out, want)
	}
	return res
}

// info returns backend id's entry in List(ctx, false).
func (h *harness) info(t *testing.T, id string) *pb.BackendInfo {
	t.Helper()
	for _, bi := range h.rt.List(context.Background(), false) {
		if bi.Id == id {
			return bi
		}
	}
	t.Fatalf("backend %s not listed", id)
	return nil
}

// pluginPids lists the live processes marked with owner (the plugin
// processes of a runtime, or ones started by hand with the mark).
func pluginPids(owner string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := ownerEnv + "=" + owner
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				if alive(pid) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// waitNoPlugins waits until no process is marked with owner, and returns
// those still there at the deadline.
func waitNoPlugins(owner string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := pluginPids(owner)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onePlugin returns the single plugin process of owner.
func onePlugin(t *testing.T, owner string) int {
	t.Helper()
	pids := pluginPids(owner)
	if len(pids) != 1 {
		t.Fatalf("want one plugin process, have %v", pids)
	}
	return pids[0]
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// waitDead waits until pid is gone (or a zombie).
func waitDead(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func ppidOf(pid int) int {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}
