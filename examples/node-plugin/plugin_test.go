// Package nodeplugin_test checks the Node.js backend example
// (computerfs-plugin-nodeecho) with `computerfs plugin check`, installed
// as a user would (npm ci, the .proto files beside it), and runs one exec
// through the CLI. It skips without node, npm or the npm registry, and
// fails instead when CFS_REQUIRE_NODE=1 (as in CI).
package nodeplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// copyTree copies src into dst (files and directories).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(out, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNodePlugin(t *testing.T) {
	require := os.Getenv("CFS_REQUIRE_NODE") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (CFS_REQUIRE_NODE=1 makes this a failure)", args...)
	}
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		// The host runs plugins with PATH=/usr/local/bin:/usr/bin:/bin.
		if _, err := os.Stat("/usr/local/bin/node"); err != nil {
			unavailable("no node in /usr/bin or /usr/local/bin: install nodejs")
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("no npm on PATH: install npm")
	}
	tmp := t.TempDir()
	root, _ := filepath.Abs("../..")

	// Install the plugin as a user would: its files, its packages, and
	// pluginapi's .proto files in proto/.
	plugins := filepath.Join(tmp, "plugins")
	inst := filepath.Join(tmp, "nodeecho")
	for _, name := range []string{"computerfs-plugin-nodeecho", "cert.js", "package.json", "package-lock.json", "check.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "computerfs-plugin-") {
			mode = 0o755
		}
		os.MkdirAll(inst, 0o755)
		if err := os.WriteFile(filepath.Join(inst, name), b, mode); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join(root, "pluginapi", "proto"), filepath.Join(inst, "proto"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = inst
	if out, err := install.CombinedOutput(); err != nil {
		unavailable("npm ci (the registry may be unreachable): %v\n%s", err, out)
	}
	// A symlink in a plugin directory: the ID is the link's name.
	os.MkdirAll(plugins, 0o755)
	if err := os.Symlink(filepath.Join(inst, "computerfs-plugin-nodeecho"), filepath.Join(plugins, "computerfs-plugin-nodeecho")); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(tmp, "computerfs")
	build := exec.Command(goTool(), "build", "-o", bin, "./cmd/computerfs")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/computerfs: %v\n%s", err, out)
	}

	t.Run("plugin check", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, bin, "plugin", "check", filepath.Join(plugins, "computerfs-plugin-nodeecho"), "--probes", filepath.Join(inst, "check.json"), "--json")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var rep struct {
			OK     bool `json:"ok"`
			Checks []struct{ Name, Status, Reason string }
			Log    string `json:"log"`
		}
		if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
			t.Fatalf("plugin check: %v, %v\n%s\n%s", err, jerr, stdout.String(), stderr.String())
		}
		for _, c := range rep.Checks {
			if c.Status != "pass" {
				t.Errorf("check %s: %s: %s", c.Name, c.Status, c.Reason)
			}
		}
		if err != nil || !rep.OK || len(rep.Checks) < 16 {
			t.Fatalf("plugin check: %v, ok %v, %d checks\n%s", err, rep.OK, len(rep.Checks), rep.Log)
		}
	})

	t.Run("exec", func(t *testing.T) {
		home := filepath.Join(tmp, "home")
		os.MkdirAll(home, 0o755)
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "COMPUTERFS_HOME=" + home,
			"COMPUTERFS_PLUGIN_PATH=" + plugins, "COMPUTERFS_WORKSPACE=" + filepath.Join(home, "ws.cfs")}
		run := func(stdin string, args ...string) (string, string, int) {
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("computerfs %v: %v", args, err)
			}
			return o.String(), e.String(), code
		}
		if _, e, code := run("", "init"); code != 0 {
			t.Fatalf("init: %d %s", code, e)
		}
		if o, e, code := run("", "exec", "-b", "nodeecho", "--", "echo", "hi", "there"); code != 0 || o != "hi there\n" {
			t.Errorf("echo: exit %d, stdout %q, stderr %q", code, o, e)
		}
		if o, e, code := run("", "exec", "-b", "nodeecho", "--", "write", "/n.txt", "from", "node"); code != 0 {
			t.Errorf("write: exit %d, stdout %q, stderr %q", code, o, e)
		}
		if o, e, code := run("", "fs", "cat", "/n.txt"); code != 0 || o != "from node\n" {
			t.Errorf("fs cat: exit %d, stdout %q, stderr %q", code, o, e)
		}
		if o, e, code := run("", "exec", "-b", "nodeecho", "--", "exit", "7"); code != 7 {
			t.Errorf("exit 7: exit %d, stdout %q, stderr %q", code, o, e)
		}
	})
}
