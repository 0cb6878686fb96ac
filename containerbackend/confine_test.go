package containerbackend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
