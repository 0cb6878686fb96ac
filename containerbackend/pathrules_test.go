package containerbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
)

// A container given a policy view of the workspace (what the daemon
// mounts for a backend with path rules) cannot see a denied file, by any
// name, nor make one, nor change a read-only one; the plain mount keeps
// them as they were.
func TestPathRulesInContainer(t *testing.T) {
	skipUnlessRunc(t)
	const secret = "CONTAINER-PATHRULE-SECRET-4be1"
	m := testmount.New(t, testmount.Options{})
	for p, data := range map[string]string{".env": secret, "app/.env": secret, "app/k.pem": secret, "app/main.go": "package main", "vendor/lib.go": "package lib"} {
		full := filepath.Join(m.Dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(".env", filepath.Join(m.Dir, "env-link"))
	os.Mkdir(filepath.Join(m.Dir, "out"), 0o777)
	rs, err := workspace.CompileRules(
		[]workspace.Rule{{Pattern: "**/.env", Verdict: workspace.Deny}, {Pattern: "*.pem", Verdict: workspace.Deny}},
		[]workspace.Rule{{Pattern: "/vendor/**", Verdict: workspace.ReadOnly}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "view")
	os.Mkdir(dir, 0o755)
	view, err := fusefs.Mount(m.FS, dir, fusefs.Options{AllowOther: true, Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { view.Unmount() })
	b := &Backend{StateDir: testStateDir, Init: initBin}
	if err := b.Configure(context.Background(), &pluginapi.Config{MountPath: dir}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		checkClean(t, b)
	})
	script := strings.Join([]string{
		"cd /workspace",
		"cat .env env-link app/.env app/k.pem ../workspace/app/.env 2>&1",
		"ls -a . app",
		"find / -xdev -name .env 2>/dev/null; grep -r " + secret[:9] + " . 2>&1",
		"echo pwned > .env 2>&1; echo pwned > out/.env 2>&1; mv app/main.go app/.env 2>&1; mv app app2 2>&1",
		"echo pwned > vendor/lib.go 2>&1; echo pwned >> vendor/lib.go 2>&1; rm vendor/lib.go 2>&1; touch vendor/new 2>&1; ln vendor/lib.go out/lib 2>&1",
		"echo fine > out/ok && cat out/ok",
		"exit 0",
	}, "\n")
	r := run(t, b, script, &pb.Limits{TimeoutMs: 30000}, "", nil)
	out := r.stdout + r.stderr
	t.Logf("%s", out)
	if strings.Contains(out, secret) {
		t.Errorf("a denied file reached the container:\n%s", out)
	}
	for _, want := range []string{".env: No such file", "ermission denied", "ead-only file system", "fine"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for p, want := range map[string]string{".env": secret, "app/.env": secret, "app/main.go": "package main", "vendor/lib.go": "package lib"} {
		if b, err := os.ReadFile(filepath.Join(m.Dir, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	for _, p := range []string{"out/.env", "vendor/new", "out/lib", "app2"} {
		if _, err := os.Lstat(filepath.Join(m.Dir, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
}
