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
// tool (testdata/tsclient/client.mjs). Without node, npm or the registry
// it skips, unless CFS_REQUIRE_NODE=1 (as .ci/run sets) makes that a
// failure.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs packages from npm")
	}
	require := os.Getenv("CFS_REQUIRE_NODE") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (CFS_REQUIRE_NODE=1 makes this a failure)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("no node on PATH: install nodejs to run the TypeScript client")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("no npm on PATH: install npm to run the TypeScript client")
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tsclient", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		unavailable("npm ci (the registry may be unreachable): %v\n%s", err, out)
	}
	home, ws := binWorkspace(t)
	startServe(t, home, ws)
	run := exec.CommandContext(ctx, node, "client.mjs", filepath.Join(bins(t), "computerfs"), ws)
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
