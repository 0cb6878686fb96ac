package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// containerPluginBin is the container plugin TestMain builds, kept out of
// the directory beside cfsBin so that only the tests that want it (by
// putting it in their home's plugins directory) route commands to it.
var containerPluginBin string

// needContainers skips unless runc can run here (root, runc installed).
func needContainers(t *testing.T) {
	t.Helper()
	needFUSE(t)
	if _, err := exec.LookPath("runc"); err != nil {
		if _, err := os.Stat("/usr/sbin/runc"); err != nil {
			t.Skip("runc is not installed (apt-get install runc)")
		}
	}
	if containerPluginBin == "" {
		t.Skip("the container plugin was not built")
	}
}

// installContainerPlugin puts the container plugin in home's plugins
// directory, where the daemon looks after the directory of its binary.
func installContainerPlugin(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// With its init beside it, as make puts them in bin/.
	for _, name := range []string{"computerfs-plugin-container", "computerfs-container-init"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(containerPluginBin), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// containerPluginPids lists the container plugins started for ws.
func containerPluginPids(ws string) []int {
	var out []int
	for _, pid := range pluginPids(ws) {
		exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if strings.HasSuffix(exe, "computerfs-plugin-container") {
			out = append(out, pid)
		}
	}
	return out
}

// processesWithArg lists the pids whose argv contains arg.
// pluginOfStartedCommand waits (20 s at most) for a process with the
// argument marker, a container's command, and returns the one container
// plugin process of ws.
func pluginOfStartedCommand(t *testing.T, ws, marker string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(processesWithArg(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the container's process did not start")
		}
	}
	pids := containerPluginPids(ws)
	if len(pids) != 1 {
		t.Fatalf("container plugin processes: %v", pids)
	}
	return pids[0]
}

// waitNoProcessWithArg waits (5 s at most) until no process has the
// argument marker, and fails with what if one still does.
func waitNoProcessWithArg(t *testing.T, marker, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(processesWithArg(marker)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, processesWithArg(marker))
		}
	}
}

func processesWithArg(arg string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(append([]byte{0}, cmdline...), []byte("\x00"+arg+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// leftoversOf lists what the container plugin with pid left on the host:
// runc containers, bundles, rootfs directories and cgroups.
func leftoversOf(pid int) []string {
	const state = "/run/computerfs-container"
	prefix := "cfs-" + strconv.Itoa(pid) + "-"
	var left []string
	if out, err := exec.Command("runc", "--root", filepath.Join(state, "runc"), "list", "-q").Output(); err == nil {
		for _, id := range strings.Fields(string(out)) {
			if strings.HasPrefix(id, prefix) {
				left = append(left, "container "+id)
			}
		}
	}
	globs := []string{
		filepath.Join(state, "bundles", prefix+"*"),
		filepath.Join(state, "rootfs-"+strconv.Itoa(pid)),
		filepath.Join("/sys/fs/cgroup", "*", "computerfs-container", prefix+"*"),
		filepath.Join("/sys/fs/cgroup", "computerfs-container", prefix+"*"),
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		left = append(left, m...)
	}
	return left
}

// Real binaries in containers through the daemon, on the real FUSE mount,
// with the real plugin: what they write is the workspace the file API and
// the shell backend see, and a plugin killed mid-exec leaves nothing.
func TestContainerThroughDaemon(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	daemon := startMount(t, home, ws, mnt)

	type execResult = result
	run := func(t *testing.T, stdin string, args ...string) execResult {
		t.Helper()
		r, err := runCfs(home, stdin, nil, append([]string{"exec", "-w", ws}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(t *testing.T, path, content string) {
		t.Helper()
		fsMust(t, home, ws, content, "write", "-p", path)
	}
	put(t, "/proj/README", "hello, workspace\n")
	put(t, "/proj/go.mod", "module example.com/hello\n\ngo 1.21\n")
	// No imports: a cold build cache compiles the runtime alone, which
	// takes most of a minute on one core.
	put(t, "/proj/main.go", "package main\n\nfunc main() { println(\"hello from go\", 6*7) }\n")
	put(t, "/proj/Makefile", "out.txt: README\n\tsed 's/hello/HELLO/' README > out.txt\n")

	t.Run("git", func(t *testing.T) {
		r := run(t, "", "-b", "container", "--cwd", "/proj", "--record", "--",
			`git init -q -b main && git add . && git -c user.name=t -c user.email=t@example.com commit -qm first && git status --porcelain && git rev-parse HEAD`)
		head := strings.TrimSpace(r.stdout)
		if r.code != 0 || !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(head) {
			t.Fatalf("git in a container: %v", r)
		}
		if !strings.Contains(r.stderr, `"backend":"container"`) || !strings.Contains(r.stderr, "/proj/.git/HEAD") {
			t.Errorf("the exec record names neither the backend nor the repository's files: %s", r.stderr)
		}
		// Through the file API.
		if got := fsMust(t, home, ws, "", "cat", "/proj/.git/HEAD").stdout; got != "ref: refs/heads/main\n" {
			t.Errorf("HEAD through the file API: %q", got)
		}
		if got := fsMust(t, home, ws, "", "cat", "/proj/.git/refs/heads/main").stdout; strings.TrimSpace(got) != head {
			t.Errorf("refs/heads/main through the file API: %q, want %s", got, head)
		}
		// Through the shell backend: its own walk of the objects git wrote.
		sr := run(t, "", "-b", "shell", "--cwd", "/proj", "--", `cat .git/refs/heads/main; find .git/objects -type f | grep -c /`)
		lines := strings.Split(strings.TrimSpace(sr.stdout), "\n")
		if sr.code != 0 || len(lines) != 2 || lines[0] != head {
			t.Fatalf("the repository through the shell backend: %v", sr)
		}
		// 4 blobs, a tree and a commit.
		if n, _ := strconv.Atoi(lines[1]); n < 6 {
			t.Errorf("the shell backend sees %d objects, want at least 6", n)
		}
		// And git again, in a new container, on what it left.
		if r := run(t, "", "-b", "container", "--cwd", "/proj", "--", `git log --format=%s && git fsck --no-progress 2>&1`); r.code != 0 || !strings.HasPrefix(r.stdout, "first\n") {
			t.Errorf("git log/fsck in a second container: %v", r)
		}
	})

	t.Run("make", func(t *testing.T) {
		if r := run(t, "", "-b", "container", "--cwd", "/proj", "--", "make"); r.code != 0 {
			t.Fatalf("make: %v", r)
		}
		if got := fsMust(t, home, ws, "", "cat", "/proj/out.txt").stdout; got != "HELLO, workspace\n" {
			t.Errorf("make's output through the file API: %q", got)
		}
		// Timestamps survive the round trip: nothing to remake.
		if r := run(t, "", "-b", "container", "--cwd", "/proj", "--", "make"); r.code != 0 || !strings.Contains(r.stdout, "up to date") {
			t.Errorf("make a second time: %v", r)
		}
		// A newer source through the file API makes it remake.
		time.Sleep(10 * time.Millisecond)
		put(t, "/proj/README", "hello again\n")
		if r := run(t, "", "-b", "container", "--cwd", "/proj", "--", "make && cat out.txt"); r.code != 0 || !strings.HasSuffix(r.stdout, "HELLO again\n") {
			t.Errorf("make after the file API changed its source: %v", r)
		}
	})

	t.Run("go build", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go on this host")
		}
		// The host's toolchain; a cold build cache in the container's /tmp
		// (HOME is /tmp there unless the request says otherwise).
		r, err := runCfsWithin(6*time.Minute, home, "", nil, "exec", "-w", ws, "-b", "container", "--cwd", "/proj", "--timeout", "5m",
			"--env", "PATH="+filepath.Dir(goBin)+":/usr/bin:/bin",
			"--env", "GOTOOLCHAIN=local", "--env", "CGO_ENABLED=0",
			"--", "go build -o hello . && ./hello 2>&1")
		if err != nil {
			t.Fatal(err)
		}
		if r.code != 0 || r.stdout != "hello from go 42\n" {
			t.Fatalf("go build in a container: %v", r)
		}
		if st := fsMust(t, home, ws, "", "stat", "--json", "/proj/hello").stdout; !strings.Contains(st, `"mode"`) {
			t.Errorf("the built binary through the file API: %s", st)
		}
	})

	t.Run("node", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Skip("no node on this host")
		}
		r := run(t, "", "-b", "container", "--cwd", "/proj", "--",
			`node -e 'const fs = require("fs"); fs.writeFileSync("from-node.json", JSON.stringify({sum: [1, 2, 3].reduce((a, b) => a + b)})); console.log(fs.readFileSync("README", "utf8").trim())'`)
		if r.code != 0 || r.stdout != "hello again\n" {
			t.Fatalf("node -e in a container: %v", r)
		}
		if got := fsMust(t, home, ws, "", "cat", "/proj/from-node.json").stdout; got != `{"sum":6}` {
			t.Errorf("node's file through the file API: %q", got)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		if r := run(t, "piped\n", "-b", "container", "--", "tr a-z A-Z"); r.code != 0 || r.stdout != "PIPED\n" {
			t.Errorf("stdin into a container: %v", r)
		}
	})

	t.Run("limits", func(t *testing.T) {
		// Output past the cap ends the container.
		r := run(t, "", "-b", "container", "--output-limit", "1M", "--", "yes")
		if r.code != 141 || len(r.stdout) != 1<<20 || !strings.Contains(r.stderr, "limit") {
			t.Errorf("output past the cap: exit %d, %d bytes, %s", r.code, len(r.stdout), r.stderr)
		}
		r = run(t, "", "-b", "container", "--timeout", "300ms", "--", "echo start; exec sleep 60")
		if r.code != 124 || r.stdout != "start\n" || !strings.Contains(r.stderr, "time") || r.took > 10*time.Second {
			t.Errorf("a sleep past the timeout: %v", r)
		}
		// No network: only loopback.
		r = run(t, "", "-b", "container", "--", "exec 3<>/dev/tcp/1.1.1.1/53 && echo connected")
		if r.code == 0 || strings.Contains(r.stdout, "connected") {
			t.Errorf("a connection out of a container without network: %v", r)
		}
		// A read-only root: writes outside /workspace and /tmp fail.
		r = run(t, "", "-b", "container", "--", "touch /etc/x /usr/x /x 2>&1; echo > /tmp/ok && echo tmp ok")
		if strings.Count(r.stdout, "Read-only file system") != 3 || !strings.Contains(r.stdout, "tmp ok") {
			t.Errorf("writes outside the workspace: %v", r)
		}
	})

	t.Run("kill -9 of the plugin mid-exec", func(t *testing.T) {
		// A unique argument to find the container's process by.
		const marker = "31.4159"
		done := make(chan result, 1)
		go func() {
			r, _ := runCfs(home, "", nil, "exec", "-w", ws, "-b", "container", "--", "echo > /workspace/running; exec sleep "+marker)
			done <- r
		}()
		dead := pluginOfStartedCommand(t, ws, marker)
		syscall.Kill(dead, syscall.SIGKILL)
		select {
		case r := <-done:
			if r.code == 0 {
				t.Errorf("the exec whose plugin was killed succeeded: %v", r)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the exec whose plugin was killed did not end")
		}
		// The container's process goes with its plugin, at once.
		waitNoProcessWithArg(t, marker, "the container's process outlived its plugin")
		// The next exec starts a new plugin, which sweeps what the dead
		// one left.
		if r := run(t, "", "-b", "container", "--", "echo ok"); r.code != 0 || r.stdout != "ok\n" {
			t.Fatalf("the exec after a killed plugin: %v", r)
		}
		if left := leftoversOf(dead); len(left) > 0 {
			t.Errorf("the killed plugin left: %v", left)
		}
	})

	t.Run("routing", func(t *testing.T) {
		// No backend named: git is not a shell builtin, so the policy
		// sends it to the container.
		r := run(t, "", "--cwd", "/proj", "--record", "--", "git log --format=%s")
		if r.code != 0 || r.stdout != "first\n" || !strings.Contains(r.stderr, `"backend":"container"`) {
			t.Errorf("git with no backend named: %v", r)
		}
	})

	t.Run("kill -9 of the daemon mid-exec", func(t *testing.T) {
		const marker = "27.1828"
		go runCfs(home, "", nil, "exec", "-w", ws, "-b", "container", "--", "exec sleep "+marker)
		plugin := pluginOfStartedCommand(t, ws, marker)
		daemon.kill(t)
		// The plugin dies with the daemon, runc with the plugin, and the
		// container with runc.
		waitNoProcessWithArg(t, marker, "the container's process outlived the daemon")
		daemon = startMount(t, home, ws, mnt)
		if r := run(t, "", "-b", "container", "--cwd", "/proj", "--", "git log --format=%s"); r.code != 0 || r.stdout != "first\n" {
			t.Fatalf("the first exec after a new daemon: %v", r)
		}
		if left := leftoversOf(plugin); len(left) > 0 {
			t.Errorf("the plugin of the killed daemon left: %v", left)
		}
	})
}
