package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needContainer skips unless FUSE, tmpfs and runc containers can be used.
func needContainer(t testing.TB) {
	t.Helper()
	needMount(t)
	if err := ContainerAvailable(); err != nil {
		t.Skip(err)
	}
}

// ourCgroups lists the container backend's cgroups made by this process
// (cfs-<pid>-<n> under computerfs-container, in any hierarchy).
func ourCgroups(t testing.TB) []string {
	t.Helper()
	prefix := fmt.Sprintf("cfs-%d-", os.Getpid())
	dirs, _ := filepath.Glob("/sys/fs/cgroup/computerfs-container")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/computerfs-container")
	var out []string
	for _, d := range append(dirs, more...) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// TestRunInContainer is computerfs bench --in-container --runs 1 with
// three cheap workloads on tmpfs and computerfs: every command runs in a
// real runc container, and nothing of the containers is left afterwards.
func TestRunInContainer(t *testing.T) {
	needContainer(t)
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Runs:        1,
		Only:        "^(create-1000|tree-find|git-commit-100)$",
		Targets:     []string{TargetTmpfs, TargetComputerfs},
		Baseline:    TargetTmpfs,
		Scratch:     scratch,
		InContainer: true,
		Logger:      testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if !rep.InContainer || rep.Baseline != "tmpfs/container" {
		t.Errorf("in container %v, baseline %q", rep.InContainer, rep.Baseline)
	}
	var names []string
	for _, tg := range rep.Targets {
		names = append(names, tg.Name)
		if !strings.Contains(tg.Note, "exclude container start") {
			t.Errorf("target %s: note %q", tg.Name, tg.Note)
		}
	}
	if strings.Join(names, ",") != "tmpfs/container,computerfs/container" {
		t.Errorf("targets %v", names)
	}
	names = nil
	for _, w := range rep.Workloads {
		names = append(names, w.Name)
		for _, r := range w.Results {
			if len(r.Samples) != 1 {
				t.Fatalf("%s on %s: %d samples", w.Name, r.Target, len(r.Samples))
			}
			s := r.Samples[0]
			wall := s.Metrics[MetricWall]
			t.Logf("%s on %s: %.1f ms inside, %.1f ms with the containers", w.Name, r.Target, s.Seconds*1e3, wall*1e3)
			if s.Seconds <= 0 || wall <= s.Seconds {
				t.Errorf("%s on %s: inner %gs, wall %gs", w.Name, r.Target, s.Seconds, wall)
			}
			if r.Ratio == nil {
				t.Errorf("%s on %s: no ratio", w.Name, r.Target)
			}
		}
	}
	if strings.Join(names, ",") != "create-1000,tree-find,git-commit-100" {
		t.Errorf("workloads %v", names)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "WALL") || !strings.Contains(table.String(), "computerfs/container") {
		t.Errorf("table:\n%s", table.String())
	}
	// Nothing is left: Run's teardown fails on containers or bundles left
	// in a backend's state directory, then removes it with the scratch.
	if cg := ourCgroups(t); len(cg) > 0 {
		t.Errorf("cgroups left: %v", cg)
	}
	if mounted(t, scratch) {
		t.Error("a mount under the scratch directory is left behind")
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch directory not cleaned: %v", ents)
	}
}

// TestContainerRunnerErrors: a failing command's exit status and stderr
// come back, without the timer's line; stdout comes back whole.
func TestContainerRunnerErrors(t *testing.T) {
	needContainer(t)
	ctx := context.Background()
	dir := t.TempDir()
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := newContainerRunner(ctx, dir, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, inner, err := r.run(ctx, filepath.Join(dir, "sub"), nil, "bash", "-c", "pwd; echo $HOME $LC_ALL; seq 3")
	if err != nil || string(out) != "/workspace/sub\n/tmp C\n1\n2\n3\n" || inner <= 0 {
		t.Fatalf("%q %v %v", out, inner, err)
	}
	_, _, err = r.run(ctx, dir, nil, "bash", "-c", "echo broken >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3: broken") || strings.Contains(err.Error(), innerMarker) {
		t.Fatalf("err %v", err)
	}
	_, _, err = r.run(ctx, "/", nil, "true")
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("outside the workspace: %v", err)
	}
	if err := r.leftovers(); err != nil {
		t.Fatal(err)
	}
	if cg := ourCgroups(t); len(cg) > 0 {
		t.Errorf("cgroups left: %v", cg)
	}
}

func TestSplitInner(t *testing.T) {
	d, msg, err := splitInner("warning: x\n\n" + innerMarker + " 1700000000.250000 1700000001.000001\n")
	if err != nil || d != 750001*time.Microsecond || msg != "warning: x" {
		t.Fatalf("%v %q %v", d, msg, err)
	}
	if _, msg, err := splitInner("runc: oops\n"); err == nil || msg != "runc: oops" {
		t.Fatalf("%q %v", msg, err)
	}
	if _, _, err := splitInner(innerMarker + "  \n"); err == nil {
		t.Fatal("no times accepted")
	}
}

func TestSelectInContainer(t *testing.T) {
	c, err := Select(Config{InContainer: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Workloads) != len(ShellWorkloads()) {
		t.Errorf("%d workloads, want the %d shell workloads", len(c.Workloads), len(ShellWorkloads()))
	}
	for _, w := range c.Workloads {
		if !w.commands {
			t.Errorf("%s selected", w.Name)
		}
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "jobs/seqwrite-1m") {
		t.Errorf("notes %q", c.Notes)
	}
	c, err = Select(Config{InContainer: true, All: true})
	if err != nil || len(c.Scenarios) != 0 || !strings.Contains(strings.Join(c.Notes, "\n"), "scenario(s)") {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := Select(Config{InContainer: true, Only: "^jobs/"}); err == nil || !strings.Contains(err.Error(), "--in-container") {
		t.Fatalf("only job files: %v", err)
	}
}
