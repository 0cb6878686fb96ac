package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClient runs a client from another ecosystem: the official
// TypeScript SDK (@modelcontextprotocol/sdk, from npm) spawns computerfs
// mcp over stdio, with a daemon holding the workspace, and calls every
// tool (testdata/tsclient/client.mjs); then does the same over streamable
// HTTP with a bearer token. Without node, npm or the registry
// it skips, unless CFS_REQUIRE_NODE=1 (as .ci/run sets) makes that a
// failure.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs packages from npm")
	}
	dir, node := npmInstall(t, "tsclient", os.Getenv("CFS_REQUIRE_NODE") == "1")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	home, ws := binWorkspace(t)
	startServe(t, home, ws)
	runClient := func(t *testing.T, args ...string) {
		run := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, args...)...)
		run.Dir = dir
		run.Env = cfsEnv(home)
		run.WaitDelay = 10 * time.Second
		out, err := run.CombinedOutput()
		if err != nil || !strings.Contains(string(out), " passed, 0 failed") {
			t.Fatalf("TypeScript client: %v\n%s", err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(line, "ok ") || strings.Contains(line, "passed,") {
				t.Log(line)
			}
		}
	}
	t.Run("stdio", func(t *testing.T) {
		runClient(t, filepath.Join(bins(t), "computerfs"), ws)
	})
	t.Run("http", func(t *testing.T) {
		// A fresh workspace: the checks expect their files missing.
		home2, ws2 := binWorkspace(t)
		startServe(t, home2, ws2)
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte("ts-client-token-0123456789\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		addr, _ := startHTTP(t, home2, ws2, "--token-file", tokenFile)
		runClient(t, "--http", "http://"+addr+"/", "ts-client-token-0123456789")
	})
}

// npmInstall copies testdata/NAME (package.json, its lock file and
// scripts) to a new directory and installs its packages there with npm
// ci. It skips the test when node, npm or the registry is missing, unless
// require. It returns the directory and node's path.
func npmInstall(t *testing.T, name string, require bool) (string, string) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (CFS_REQUIRE_NODE=1 makes this a failure)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("no node on PATH: install nodejs")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("no npm on PATH: install npm")
	}
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		unavailable("npm ci in %s (the registry may be unreachable): %v\n%s", name, err, out)
	}
	return dir, node
}
