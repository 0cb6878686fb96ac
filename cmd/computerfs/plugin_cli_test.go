package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// computerfs plugin check: a built-in backend passes (exit 0, every check
// in the JSON report), a file that is not a plugin fails naming the check
// (exit 1), and a bad command line is a usage error.
func TestPluginCheckCLI(t *testing.T) {
	home := t.TempDir()
	type report struct {
		OK     bool `json:"ok"`
		Checks []struct{ Name, Status, Reason string }
	}
	check := func(path string) (report, result) {
		t.Helper()
		r, err := runCfs(home, "", nil, "plugin", "check", path, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("plugin check %s --json: %v\n%v", path, err, r)
		}
		return rep, r
	}
	paths := []string{filepath.Join(filepath.Dir(cfsBin), "computerfs-plugin-shell")}
	if os.Geteuid() == 0 && containerPluginBin != "" {
		paths = append(paths, containerPluginBin) // runc and a FUSE mount of the check's workspace
	}
	for _, p := range paths {
		rep, r := check(p)
		if r.code != 0 || !rep.OK || len(rep.Checks) < 16 {
			t.Errorf("plugin check %s: exit %d, %+v\n%s", filepath.Base(p), r.code, rep, r.stderr)
		}
		for _, c := range rep.Checks {
			if c.Status != "pass" {
				t.Errorf("%s: check %s: %s (%s)", filepath.Base(p), c.Name, c.Status, c.Reason)
			}
		}
	}

	bad := filepath.Join(home, "not-a-plugin")
	os.WriteFile(bad, []byte("#!/bin/sh\n"), 0o755)
	rep, r := check(bad)
	if r.code != 1 || rep.OK || len(rep.Checks) != 1 || rep.Checks[0].Name != "name" || rep.Checks[0].Status != "fail" {
		t.Errorf("plugin check of a file not named as a plugin: exit %d, %+v", r.code, rep)
	}
	r, _ = runCfs(home, "", nil, "plugin", "check", bad)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL  name") || !strings.Contains(r.stderr, "fails: name") {
		t.Errorf("plugin check, text: %v", r)
	}
	for _, args := range [][]string{{"plugin"}, {"plugin", "frob"}, {"plugin", "check"}} {
		if r, _ := runCfs(home, "", nil, args...); r.code != exitUsage {
			t.Errorf("computerfs %s: exit %d, want %d", strings.Join(args, " "), r.code, exitUsage)
		}
	}
}

// backends --json has every field of Describe, and the limits the host
// enforces where a backend states none (the container's output limit).
func TestBackendsJSONDescribes(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	createStore(t, ws)
	if containerPluginBin != "" {
		installContainerPlugin(t, home)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	r, err := runCfs(home, "", nil, "backends", "-w", ws, "--json")
	if err != nil || r.code != 0 {
		t.Fatalf("backends --json: %v %v", err, r)
	}
	type limits struct {
		TimeoutMs   int64 `json:"timeout_ms"`
		OutputBytes int64 `json:"output_bytes"`
		MaxCommands int64 `json:"max_commands"`
	}
	var list []struct {
		ID, State, Name, Version string
		Accepts, Features        []string
		NeedsMount               *bool   `json:"needs_mount"`
		Defaults                 *limits `json:"default_limits"`
		Max                      *limits `json:"max_limits"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("backends --json: %v\n%s", err, r.stdout)
	}
	seen := 0
	for _, b := range list {
		switch b.ID {
		case "shell":
			seen++
			if b.NeedsMount == nil || *b.NeedsMount || len(b.Features) == 0 || b.Name == "" || b.Version == "" || len(b.Accepts) != 2 ||
				b.Max == nil || b.Max.MaxCommands == 0 || b.Defaults == nil || b.Defaults.MaxCommands == 0 {
				t.Errorf("shell: %+v", b)
			}
		case "container":
			seen++
			// Without a mount it cannot start here, yet it is described,
			// with the output limits the host enforces on it.
			if b.NeedsMount == nil || !*b.NeedsMount || len(b.Features) == 0 || b.Defaults == nil || b.Defaults.OutputBytes != 16<<20 ||
				b.Max == nil || b.Max.OutputBytes != 1<<30 {
				t.Errorf("container: %+v (defaults %+v, max %+v)", b, b.Defaults, b.Max)
			}
		}
	}
	if want := map[bool]int{true: 2, false: 1}[containerPluginBin != ""]; seen != want {
		t.Errorf("backends --json lists %d of the backends: %s", seen, r.stdout)
	}
}
