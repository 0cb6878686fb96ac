package plugincheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/containerbackend"
	"github.com/computerfs/computerfs/plugincheck"
)

// bin holds the plugins the tests check, built once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cfs-plugincheck-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds a package into bin as name (once per test binary).
func build(t *testing.T, pkg, name string) string {
	t.Helper()
	out := filepath.Join(bin, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out+".tmp", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		t.Fatal(err)
	}
	return out
}

func report(t *testing.T, rep *plugincheck.Report) string {
	var b strings.Builder
	for _, c := range rep.Checks {
		fmt.Fprintf(&b, "  %-4s %-13s %s\n", c.Status, c.Name, c.Reason)
	}
	if rep.Log != "" {
		fmt.Fprintf(&b, "log:\n%s\n", rep.Log)
	}
	return b.String()
}

func status(rep *plugincheck.Report, name string) string {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return ""
}

// Every fault of the broken plugin fails the check that names it, first;
// without a fault the same plugin passes every check.
func TestFaults(t *testing.T) {
	fault := build(t, "./internal/faultplugin", "faultplugin")
	probes, err := plugincheck.LoadProbes("testdata/fault.check.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fault, check, reason string
	}{
		{"none", "", ""},
		{"nohandshake", plugincheck.CheckHandshake, "Unrecognized remote plugin message: faultplugin: starting up"},
		{"wrongid", plugincheck.CheckDescribe, `says its ID is "someone-else"`},
		{"ignoreterm", plugincheck.CheckTimeout, "ignored SIGTERM"},
		{"flood", plugincheck.CheckOutputLimit, "did not end an exec it was told to kill"},
		{"crash", plugincheck.CheckOutput, "exec stream broke"},
		{"noexit", plugincheck.CheckExecPrefix + "argv", "without an exit message"},
		{"anykind", plugincheck.CheckUnknownKind, "must refuse it"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "computerfs-plugin-fault-"+tc.fault)
			if err := os.Symlink(fault, path); err != nil {
				t.Fatal(err)
			}
			rep, err := plugincheck.Run(context.Background(), plugincheck.Options{Path: path, Probes: probes, NoMount: true})
			if err != nil {
				t.Fatal(err)
			}
			failed := rep.Failed()
			if tc.check == "" {
				if !rep.OK || len(failed) > 0 {
					t.Fatalf("the plugin without a fault fails %v:\n%s", failed, report(t, rep))
				}
				for _, c := range rep.Checks {
					if c.Status != plugincheck.Pass {
						t.Errorf("check %s: %s (%s), want pass", c.Name, c.Status, c.Reason)
					}
				}
				return
			}
			if rep.OK || len(failed) == 0 || failed[0] != tc.check {
				t.Fatalf("fault %s: failed %v, want %s first:\n%s", tc.fault, failed, tc.check, report(t, rep))
			}
			for _, c := range rep.Checks {
				if c.Name == tc.check && !strings.Contains(c.Reason, tc.reason) {
					t.Errorf("fault %s: check %s says %q, want it to say %q", tc.fault, c.Name, c.Reason, tc.reason)
				}
			}
			// Whatever failed, the plugin is gone at the end.
			if st := status(rep, plugincheck.CheckShutdown); st == "" {
				t.Errorf("no shutdown check:\n%s", report(t, rep))
			}
		})
	}
}

// Our three backends pass every check (the container with runc, as root,
// on a FUSE mount of the check's workspace).
func TestBuiltinBackends(t *testing.T) {
	for _, id := range []string{"shell", "js", "container"} {
		t.Run(id, func(t *testing.T) {
			if id == "container" {
				if os.Geteuid() != 0 {
					t.Skip("the container backend needs root")
				}
				if _, err := containerbackend.FindRunc(); err != nil {
					t.Skip(err)
				}
				build(t, "../cmd/computerfs-container-init", "computerfs-container-init")
			}
			path := build(t, "../cmd/plugin-"+id, "computerfs-plugin-"+id)
			rep, err := plugincheck.Run(context.Background(), plugincheck.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK {
				t.Fatalf("%s fails %v:\n%s", id, rep.Failed(), report(t, rep))
			}
			want := map[string]string{"stdin": plugincheck.Pass}
			if id == "js" {
				want["stdin"] = plugincheck.Skip // no stdin feature
			}
			for _, c := range rep.Checks {
				if w, ok := want[c.Name]; ok && c.Status != w || !ok && c.Status != plugincheck.Pass {
					t.Errorf("%s: check %s: %s (%s)", id, c.Name, c.Status, c.Reason)
				}
			}
		})
	}
}

// A file that is not a plugin's is refused before anything runs.
func TestName(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, reason string }{
		{"not-a-plugin", "is not a plugin's name"},
		{"computerfs-plugin-Upper", "is not a plugin's name"},
		{"computerfs-plugin-noexec", "not an executable file"},
	} {
		p := filepath.Join(dir, tc.name)
		mode := os.FileMode(0o755)
		if strings.HasSuffix(tc.name, "noexec") {
			mode = 0o644
		}
		os.WriteFile(p, []byte("#!/bin/sh\n"), mode)
		rep, err := plugincheck.Run(context.Background(), plugincheck.Options{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || len(rep.Checks) != 1 || rep.Checks[0].Name != plugincheck.CheckName || !strings.Contains(rep.Checks[0].Reason, tc.reason) {
			t.Errorf("%s: %+v, want the name check to fail saying %q", tc.name, rep.Checks, tc.reason)
		}
	}
}
