package containerbackend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// The host's secrets are not in the container: /etc holds only what a
// userland needs, copies of world-readable files, and the container's
// own users; the daemon's environment does not reach it.
func TestHostSecretsUnreachable(t *testing.T) {
	const secret = "CONTAINER-SECRET-9d1e"
	t.Setenv("CFS_CONTAINER_TEST_KEY", secret)
	b, ws := newBackend(t)
	// A root-only file and a world-readable one in a host directory that
	// is not bound, and the host /etc's own secrets.
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "root-only"), []byte(secret), 0o600)
	script := strings.Join([]string{
		"cat /etc/shadow /etc/gshadow /etc/sudoers 2>&1",
		"ls /etc/ssh /etc/ssl/private /etc/sudoers.d 2>&1",
		"cat " + filepath.Join(host, "root-only") + " 2>&1",
		"cat /proc/1/environ 2>&1 | tr '\\0' '\\n'",
		"env",
		"echo passwd:; cat /etc/passwd",
		"getent hosts localhost >/dev/null && echo resolves",
		"ls /etc/ssl/certs | head -1 >/dev/null && echo certs",
		"exit 0",
	}, "; ")
	r := run(t, b, script, &pb.Limits{TimeoutMs: 20000}, "", nil)
	out := r.stdout + r.stderr
	if strings.Contains(out, secret) {
		t.Errorf("a host secret reached the container:\n%s", out)
	}
	hostShadow, _ := os.ReadFile("/etc/shadow")
	for _, l := range strings.Split(string(hostShadow), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && len(f[1]) > 2 && strings.Contains(out, f[1]) {
			t.Errorf("a password hash of /etc/shadow reached the container")
		}
	}
	for _, want := range []string{"/etc/shadow: No such file", "/etc/ssl/private", "resolves", "certs", "passwd:\nroot:x:0:0:root:/root:/bin/bash\nnobody:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The host's /etc is untouched, and the workspace holds only what
	// the exec wrote there.
	if _, err := os.Stat(filepath.Join(ws, "etc")); err == nil {
		t.Errorf("an /etc appeared in the workspace")
	}
}

// makeEtc copies no file that only root may read, whatever its name.
func TestMakeEtcSkipsSecrets(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "etc")
	os.MkdirAll(filepath.Join(src, "ssl", "certs"), 0o755)
	os.MkdirAll(filepath.Join(src, "ssl", "private"), 0o700)
	os.WriteFile(filepath.Join(src, "ssl", "certs", "ca.pem"), []byte("cert"), 0o644)
	os.WriteFile(filepath.Join(src, "ssl", "certs", "key.pem"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(src, "ssl", "private", "k.pem"), []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(src, "shadow"), []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(src, "hosts"), []byte("127.0.0.1 localhost\n"), 0o644)
	os.Symlink("/usr/share/zoneinfo/UTC", filepath.Join(src, "localtime"))
	if err := makeEtc(src, dst); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"hosts": true, "localtime": true, "passwd": true, "ssl/certs/ca.pem": true,
		"ssl/certs/key.pem": false, "ssl/private": false, "shadow": false} {
		_, err := os.Lstat(filepath.Join(dst, p))
		if (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
}

// The container's root is not the host's: a user namespace maps it to
// host uid HostIDBase, so what only the host's root may read stays
// unreadable even in the host directories bound into the container, and
// nothing outside /workspace and the private /tmp can be written. Each
// case is checked from the host too: what exists there, the process's
// host uid, the owner of what the container wrote.
func TestConfinement(t *testing.T) {
	b, ws := newBackend(t)
	const secret = "CONFINE-SECRET-51c7"
	// Root-only files and a root-only directory in a bound host
	// directory (/usr is bound read-only).
	rootOnly, err := os.CreateTemp("/usr/local/share", "cfs-confine-*")
	if err != nil {
		t.Skipf("no root-only file can be made in /usr/local/share: %v", err)
	}
	t.Cleanup(func() { os.Remove(rootOnly.Name()) })
	rootOnly.WriteString(secret)
	rootOnly.Chmod(0o600)
	rootOnly.Close()
	groupOnly := rootOnly.Name() + "-0640"
	os.WriteFile(groupOnly, []byte(secret), 0o640)
	os.Chmod(groupOnly, 0o640)
	t.Cleanup(func() { os.Remove(groupOnly) })
	rootDir := rootOnly.Name() + "-dir"
	os.Mkdir(rootDir, 0o700)
	os.WriteFile(filepath.Join(rootDir, "f"), []byte(secret), 0o644)
	t.Cleanup(func() { os.RemoveAll(rootDir) })

	hostKeys, _ := filepath.Glob("/etc/ssh/ssh_host_*_key")
	private, _ := filepath.Glob("/etc/ssl/private/*")
	secrets := []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key",
		"/etc/ssh/ssh_host_ecdsa_key", "/etc/ssl/private/ssl-cert-snakeoil.key", rootOnly.Name(), groupOnly, filepath.Join(rootDir, "f")}
	seen := map[string]bool{}
	for _, p := range append(append(secrets, hostKeys...), private...) {
		if seen[p] {
			continue
		}
		seen[p] = true
		t.Run("read "+p, func(t *testing.T) {
			host, herr := os.ReadFile(p)
			r := runArgs(context.Background(), t, b, `cat "$1" 2>&1; echo "status $?"`, p)
			if !strings.Contains(r.stdout, "status 1") {
				t.Errorf("cat %s in the container did not fail (exists on the host: %v):\n%s", p, herr == nil, r.stdout)
			}
			if strings.Contains(r.stdout, secret) || herr == nil && len(host) > 0 && strings.Contains(r.stdout, strings.TrimSpace(string(host))) {
				t.Errorf("%s: its content reached the container", p)
			}
			t.Logf("on the host: readable %v; in the container: %s", herr == nil, strings.TrimSpace(r.stdout))
		})
	}
	t.Run("list "+rootDir, func(t *testing.T) {
		if r := runArgs(context.Background(), t, b, `ls "$1"`, rootDir); r.exit.ExitCode == 0 {
			t.Errorf("a host directory only root may read was listed: %q", r.stdout)
		}
	})

	for _, p := range []string{"/made-here", "/etc/made-here", "/usr/local/share/made-here", "/dev/.computerfs-init", "/proc/sys/kernel/hostname"} {
		t.Run("write "+p, func(t *testing.T) {
			r := runArgs(context.Background(), t, b, `echo x >> "$1"`, p)
			if r.exit.ExitCode == 0 {
				t.Errorf("%s was written in the container", p)
			}
			if strings.HasPrefix(p, "/usr/local/") {
				if _, err := os.Stat(p); err == nil {
					os.Remove(p)
					t.Errorf("%s appeared on the host", p)
				}
			}
		})
	}

	t.Run("identity", func(t *testing.T) {
		r := run(t, b, `id -u; id -g; touch /workspace/made-inside && ls -n /workspace/made-inside | cut -d' ' -f3`, nil, "", nil)
		if r.stdout != "0\n0\n0\n" {
			t.Errorf("id -u, id -g and the owner of a new file in the container: %q, want 0, 0, 0 (%s)", r.stdout, r.stderr)
		}
		// On the host, the workspace is id-mapped: the container's root
		// writes as the workspace's root.
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(ws, "made-inside"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("a file the container made in /workspace: %v uid %d gid %d on the host, want 0 0", err, st.Uid, st.Gid)
		}
		// The process itself is host uid HostIDBase.
		marker := fmt.Sprintf("cfs-confine-%d", os.Getpid())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan result, 1)
		go func() { done <- runArgs(ctx, t, b, `exec -a "$1" sleep 30`, marker) }()
		var uids, gids string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && uids == ""; time.Sleep(20 * time.Millisecond) {
			uids, gids = hostIDsOf(marker)
		}
		cancel()
		<-done
		want := fmt.Sprint(HostIDBase)
		if f := strings.Fields(uids); len(f) != 4 || f[0] != want || f[1] != want || f[2] != want || f[3] != want {
			t.Errorf("the container's root on the host: Uid: %q, want %s (all four)", uids, want)
		}
		if f := strings.Fields(gids); len(f) != 4 || f[0] != want {
			t.Errorf("the container's root on the host: Gid: %q, want %s", gids, want)
		}
	})

	t.Run("mountinfo", func(t *testing.T) {
		r := run(t, b, `cat /proc/self/mountinfo`, nil, "", nil)
		for _, host := range []string{b.StateDir, filepath.Dir(initBin), "rootfs-", StageDir} {
			if strings.Contains(r.stdout, host) {
				t.Errorf("the container's mountinfo shows the host path %s:\n%s", host, r.stdout)
			}
		}
		// The stage's mounts are the plugin's alone: not in the host's
		// mount table.
		if host, _ := os.ReadFile("/proc/1/mountinfo"); strings.Contains(string(host), StageDir) {
			t.Errorf("the host's mount table shows the stage:\n%s", host)
		}
	})
}

// runArgs runs a bash script with arguments ($1...) as an argv exec.
func runArgs(ctx context.Context, t *testing.T, b *Backend, script string, args ...string) result {
	var out, errb syncBuffer
	exit, err := b.Exec(ctx, &pluginapi.Exec{
		Start:  &pb.ExecStart{Argv: append([]string{"/bin/bash", "-c", script, "bash"}, args...), Kind: "argv", Env: testEnv},
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
	})
	if err != nil {
		t.Errorf("Exec %q %q: %v", script, args, err)
		return result{exit: &pb.Exit{ExitCode: -1}}
	}
	return result{exit: exit, stdout: out.String(), stderr: errb.String()}
}

// hostIDsOf reads the Uid and Gid lines of the host's process whose
// argv[0] is marker.
func hostIDsOf(marker string) (uids, gids string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), marker+"\x00") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Uid:"); ok {
				uids = v
			}
			if v, ok := strings.CutPrefix(l, "Gid:"); ok {
				gids = v
			}
		}
		return uids, gids
	}
	return "", ""
}
