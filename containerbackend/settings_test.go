package containerbackend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// probeSrc is a static program for the containers: it runs in a root
// that has nothing else, and checks what bash cannot.
const probeSrc = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	mode := "hello"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "hello":
		fmt.Println("hello from the probe")
		b, err := os.ReadFile("/etc/os-release")
		fmt.Printf("os-release: %q %v\n", b, err)
		for _, p := range []string{"/usr", "/usr/bin/bash", "/bin/bash", "/workspace/in-ws", "/tmp", "/proc/self"} {
			if _, err := os.Stat(p); err != nil {
				fmt.Println(p, "absent")
			} else {
				fmt.Println(p, "present")
			}
		}
		fmt.Println("PATH=" + os.Getenv("PATH"))
		fmt.Println("write /probe-root:", os.WriteFile("/probe-root", nil, 0o644))
		fmt.Println("write /tmp/x:", os.WriteFile("/tmp/x", nil, 0o644))
	case "userns": // clone(CLONE_NEWUSER), which unshare(1) does not try
		cmd := exec.Command("/proc/self/exe", "noop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		fmt.Println("clone newuser:", cmd.Run())
	case "noop":
	}
}
`

// buildProbe compiles probeSrc, statically, to dst.
func buildProbe(t *testing.T, dst string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain to build the probe")
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "main.go"), []byte(probeSrc), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module probe\n\ngo 1.21\n"), 0o644)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", dst, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
}

// runArgv runs argv in a container.
func runArgv(t *testing.T, b *Backend, argv []string, env map[string]string) result {
	t.Helper()
	var out, errb syncBuffer
	x := &pluginapi.Exec{
		Start:  &pb.ExecStart{Argv: argv, Kind: "argv", Cwd: "/", Env: env, Limits: &pb.Limits{TimeoutMs: 20000}},
		Stdin:  strings.NewReader(""),
		Stdout: &out, Stderr: &errb,
	}
	t0 := time.Now()
	exit, err := b.Exec(context.Background(), x)
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return result{exit: exit, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(t0)}
}

// Invalid settings fail Configure, and say what is valid.
func TestSettingsErrors(t *testing.T) {
	skipUnlessRunc(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	badMountPoint := t.TempDir()
	os.WriteFile(filepath.Join(badMountPoint, "workspace"), nil, 0o644)
	badBundle := t.TempDir()
	os.MkdirAll(filepath.Join(badBundle, "rootfs"), 0o755)
	os.WriteFile(filepath.Join(badBundle, "config.json"), []byte("{not json"), 0o644)
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     []string
	}{
		{"network", map[string]string{"network": "bridge"}, []string{`"bridge"`, `"none"`, `"host"`}},
		{"seccomp", map[string]string{"seccomp": "strict"}, []string{`"strict"`, `"default"`, `"off"`}},
		{"read_only", map[string]string{"read_only": "yes"}, []string{`"read_only"`, `"true"`}},
		{"unknown", map[string]string{"netwrok": "host"}, []string{`unknown setting "netwrok"`, `"network"`}},
		{"commands", map[string]string{"commands": "ls"}, []string{"cannot limit commands"}},
		{"rootfs relative", map[string]string{"rootfs": "rootfs"}, []string{`"rootfs"`, "not an absolute path"}},
		{"rootfs missing", map[string]string{"rootfs": "/nonexistent/rootfs"}, []string{`"rootfs"`, "no such file"}},
		{"rootfs file", map[string]string{"rootfs": file}, []string{`"rootfs"`, "not a directory"}},
		{"rootfs mount point", map[string]string{"rootfs": badMountPoint}, []string{"mount point /workspace", "not a directory"}},
		{"rootfs bad bundle", map[string]string{"rootfs": badBundle}, []string{"OCI bundle", "config.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{StateDir: testStateDir}
			err := b.Configure(context.Background(), &pluginapi.Config{MountPath: t.TempDir(), Settings: tc.settings})
			if err == nil {
				t.Fatalf("Configure %v succeeded", tc.settings)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Configure %v: %q does not say %s", tc.settings, err, w)
				}
			}
		})
	}
}

// interfaces lists the interfaces in /proc/net/dev.
func interfaces(devFile string) []string {
	var names []string
	for i, line := range strings.Split(devFile, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && i >= 2 {
			names = append(names, strings.TrimSpace(name))
		}
	}
	sort.Strings(names)
	return names
}

// "network": "none" (and no setting) keeps the container off the host's
// network; "host" puts it on it.
func TestNetworkSetting(t *testing.T) {
	skipUnlessRunc(t)
	hostDev, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	hostIfs := interfaces(string(hostDev))
	if len(hostIfs) < 2 {
		t.Skipf("the host has no interface but loopback: %v", hostIfs)
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		host     bool
	}{
		{"default", nil, false},
		{"none", map[string]string{"network": "none"}, false},
		{"host", map[string]string{"network": "host"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBackendWith(t, tc.settings, nil)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan string, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				got <- line
			}()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			r := run(t, b, "cat /proc/net/dev; (echo from-container > /dev/tcp/127.0.0.1/"+port+") 2>/dev/null && echo connected || echo refused",
				&pb.Limits{TimeoutMs: 20000}, "", nil)
			if r.exit.ExitCode != 0 {
				t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
			ifs := interfaces(r.stdout)
			if tc.host {
				if strings.Join(ifs, " ") != strings.Join(hostIfs, " ") {
					t.Errorf("interfaces %v, want the host's %v", ifs, hostIfs)
				}
				if !strings.HasSuffix(r.stdout, "connected\n") {
					t.Errorf("no connection to the host's 127.0.0.1:%s: %q", port, r.stdout)
				}
				select {
				case line := <-got:
					if line != "from-container\n" {
						t.Errorf("the listener read %q", line)
					}
				case <-time.After(10 * time.Second):
					t.Error("the listener got nothing")
				}
			} else {
				if strings.Join(ifs, " ") != "lo" {
					t.Errorf("interfaces %v, want only lo", ifs)
				}
				if !strings.HasSuffix(r.stdout, "refused\n") {
					t.Errorf("connected to the host's 127.0.0.1:%s: %q", port, r.stdout)
				}
				select {
				case line := <-got:
					t.Errorf("the host's listener was reached: %q", line)
				default:
				}
			}
		})
	}
}

// writeBundleConfig writes an OCI config.json whose process has env.
func writeBundleConfig(t *testing.T, dir string, env []string) {
	t.Helper()
	cfg := map[string]any{
		"ociVersion": "1.0.2",
		"process":    map[string]any{"args": []string{"sh"}, "cwd": "/", "env": env, "user": map[string]int{"uid": 0, "gid": 0}},
		"root":       map[string]any{"path": "rootfs", "readonly": true},
	}
	js, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// "rootfs" replaces the host's userland: a plain directory, or an OCI
// bundle whose config gives the default PATH.
func TestRootfsSetting(t *testing.T) {
	skipUnlessRunc(t)
	const osRelease = "ID=computerfs-test\nNAME=\"probe userland\"\n"
	for _, tc := range []struct {
		name     string
		bundle   bool
		env      []string // the bundle's process.env
		probe    string   // where the probe goes, in the root
		argv0    string
		wantPath string
	}{
		{name: "directory", probe: "/bin/hello", argv0: "/bin/hello", wantPath: defaultPath},
		{name: "bundle", bundle: true, env: []string{"TERM=xterm", "PATH=/opt/probe/bin:/bin"}, probe: "/opt/probe/bin/hello", argv0: "hello", wantPath: "/opt/probe/bin:/bin"},
		{name: "bundle without PATH", bundle: true, env: []string{"TERM=xterm"}, probe: "/bin/hello", argv0: "/bin/hello", wantPath: defaultPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := dir
			if tc.bundle {
				root = filepath.Join(dir, "rootfs")
				writeBundleConfig(t, dir, tc.env)
			}
			buildProbe(t, filepath.Join(root, tc.probe))
			os.MkdirAll(filepath.Join(root, "etc"), 0o755)
			os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte(osRelease), 0o644)

			b, ws := newBackendWith(t, map[string]string{"rootfs": dir}, nil)
			os.WriteFile(filepath.Join(ws, "in-ws"), []byte("x"), 0o644)
			// The mount points were made in the root, where a failure is
			// Configure's.
			for _, d := range emptyDirs {
				if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
					t.Errorf("mount point %s not made in the root: %v", d, err)
				}
			}
			r := runArgv(t, b, []string{tc.argv0}, map[string]string{"HOME": "/tmp"})
			if r.exit.ExitCode != 0 {
				t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
			}
			for _, want := range []string{
				"hello from the probe\n",
				"os-release: " + strconv.Quote(osRelease) + " <nil>\n",
				"/usr absent\n", "/usr/bin/bash absent\n", "/bin/bash absent\n",
				"/workspace/in-ws present\n", "/tmp present\n", "/proc/self present\n",
				"PATH=" + tc.wantPath + "\n",
				"write /probe-root: open /probe-root: read-only file system\n",
				"write /tmp/x: <nil>\n",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, r.stdout)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "probe-root")); err == nil {
				t.Error("the container wrote into the configured root")
			}
			// The workspace is there, read-write.
			r = runArgv(t, b, []string{tc.argv0, "noop"}, nil)
			if r.exit.ExitCode != 0 {
				t.Errorf("noop: %v %q", r.exit, r.stderr)
			}
			// A script needs /bin/bash, which this root does not have.
			r = run(t, b, "echo hi", nil, "", nil)
			if r.exit.ExitCode == 0 {
				t.Errorf("a script ran without bash in the root: %q", r.stdout)
			}
		})
	}
}

// "read_only": "true" (the policy's read_only) mounts the workspace
// read-only; without it, it is read-write (TestWorkspaceWrite).
func TestReadOnlyWorkspace(t *testing.T) {
	b, ws := newBackendWith(t, map[string]string{"read_only": "true"}, nil)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("readable\n"), 0o644)
	r := run(t, b, "cat a.txt; echo x > /workspace/x; echo rc=$?; mkdir /workspace/d; rm a.txt; ls", nil, "", nil)
	if !strings.HasPrefix(r.stdout, "readable\nrc=1\n") || !strings.Contains(r.stdout, "a.txt") {
		t.Errorf("stdout %q", r.stdout)
	}
	if n := strings.Count(r.stderr, "Read-only file system"); n != 3 {
		t.Errorf("%d EROFS errors, want 3: %q", n, r.stderr)
	}
	for _, p := range []string{"x", "d"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s appeared in the read-only workspace: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
		t.Errorf("a.txt removed: %v", err)
	}
	// /tmp stays writable.
	r = run(t, b, "echo x > /tmp/x && cat /tmp/x", nil, "", nil)
	if r.exit.ExitCode != 0 || r.stdout != "x\n" {
		t.Errorf("/tmp: %v %q %q", r.exit, r.stdout, r.stderr)
	}
}

// The default seccomp profile refuses namespaces (and the rest of
// deniedSyscalls) and leaves an ordinary workload alone; "seccomp": "off"
// drops it.
func TestSeccomp(t *testing.T) {
	skipUnlessRunc(t)
	if _, err := os.Stat("/usr/bin/unshare"); err != nil {
		t.Skip("no unshare(1) on the host")
	}
	probeDir := t.TempDir()
	buildProbe(t, filepath.Join(probeDir, "probe"))
	gitEnv := map[string]string{"PATH": defaultPath, "HOME": "/tmp",
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
	_, gitErr := os.Stat("/usr/bin/git")
	for _, tc := range []struct {
		name     string
		settings map[string]string
		filtered bool
	}{
		{"default", nil, true},
		{"explicit default", map[string]string{"seccomp": "default"}, true},
		{"off", map[string]string{"seccomp": "off"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ws := newBackendWith(t, tc.settings, func(b *Backend) { b.ExtraBinds = []string{probeDir} })
			mode := "0"
			if tc.filtered {
				mode = "2"
			}
			r := run(t, b, "grep '^Seccomp:' /proc/self/status | tr -d '\\t'; unshare -U true; echo unshare=$?; "+
				"touch /tmp/t && mv /tmp/t /tmp/u && test -f /tmp/u && echo files-ok; "+filepath.Join(probeDir, "probe")+" userns", nil, "", nil)
			if !strings.HasPrefix(r.stdout, "Seccomp:"+mode+"\n") {
				t.Errorf("stdout %q, want Seccomp:%s first", r.stdout, mode)
			}
			if tc.filtered {
				if !strings.Contains(r.stdout, "unshare=1\n") || !strings.Contains(r.stderr, "unshare failed: Operation not permitted") {
					t.Errorf("unshare not refused: %q %q", r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout, "clone newuser: fork/exec /proc/self/exe: operation not permitted\n") {
					t.Errorf("clone(CLONE_NEWUSER) not refused: %q", r.stdout)
				}
			} else {
				if !strings.Contains(r.stdout, "unshare=0\n") || !strings.Contains(r.stdout, "clone newuser: <nil>\n") {
					t.Errorf("user namespaces refused without seccomp: %q %q", r.stdout, r.stderr)
				}
			}
			if !strings.Contains(r.stdout, "\nfiles-ok\n") {
				t.Errorf("file operations in /tmp: %q %q", r.stdout, r.stderr)
			}
			// An ordinary workload: git, with its child processes and
			// threads, bash, coreutils.
			if gitErr == nil {
				os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)
				r = run(t, b, "git init -q && git add . && git commit -qm first && git log --format=%s && ls -a | tr '\\n' ' ' && "+
					"bash -c 'sleep 0.1 & wait; echo waited' && date -u +%Y >/dev/null && echo done", nil, "", gitEnv)
				if r.exit.ExitCode != 0 || r.stdout != "first\n. .. .git a.txt waited\ndone\n" {
					t.Errorf("workload: %v %q %q", r.exit, r.stdout, r.stderr)
				}
			}
		})
	}
}

// A workspace directory (a policy root below the mount) that is swapped
// for a symlink after Configure is refused, not followed.
func TestWorkspaceSwapped(t *testing.T) {
	skipUnlessRunc(t)
	top := t.TempDir()
	sub := filepath.Join(top, "sub")
	secret := t.TempDir()
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "f"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(secret, "f"), []byte("secret\n"), 0o644)
	b := &Backend{StateDir: testStateDir}
	if err := b.Configure(context.Background(), &pluginapi.Config{MountPath: sub}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); checkClean(t, b) })
	if r := run(t, b, "cat f", nil, "", nil); r.stdout != "inside\n" {
		t.Fatalf("%v %q %q", r.exit, r.stdout, r.stderr)
	}
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, sub); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	_, err := b.Exec(context.Background(), &pluginapi.Exec{
		Start: &pb.ExecStart{Argv: []string{"cat f"}, Env: testEnv}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
	})
	if err == nil || !strings.Contains(err.Error(), "now resolves to "+secret) || strings.Contains(out.String(), "secret") {
		t.Fatalf("exec through a swapped-in symlink: %v, output %q", err, out.String())
	}
}

// The profile has what the settings documentation promises.
func TestSeccompProfile(t *testing.T) {
	p := seccompProfile(nil)
	if p.DefaultAction != "SCMP_ACT_ALLOW" || len(p.Architectures) == 0 && seccompArchs() != nil {
		t.Fatalf("%+v", p)
	}
	denied := map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action == "SCMP_ACT_ERRNO" && *s.ErrnoRet == uint(syscall.EPERM) && len(s.Args) == 0 {
			for _, n := range s.Names {
				denied[n] = true
			}
		}
	}
	for _, n := range []string{"kexec_load", "init_module", "bpf", "perf_event_open", "keyctl", "add_key", "mount", "umount2",
		"pivot_root", "unshare", "setns", "userfaultfd", "open_by_handle_at", "reboot", "clock_settime"} {
		if !denied[n] {
			t.Errorf("%s is allowed", n)
		}
	}
	for _, n := range []string{"personality", "clone", "ptrace", "execve", "openat"} {
		if denied[n] {
			t.Errorf("%s is denied outright", n)
		}
	}
	// runc's list of architectures filters ours.
	if got := seccompProfile([]string{"SCMP_ARCH_NONE"}).Architectures; len(got) != 0 {
		t.Errorf("architectures %v, want none of the unsupported", got)
	}
	js, _ := json.Marshal(p)
	t.Logf("profile: %d bytes of JSON", len(js))
}
