package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func needMount(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("FUSE mounts and tmpfs need root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

func mounted(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), path)
}

// TestRunEndToEnd is computerfs bench --runs 1 --only create on the
// computerfs and ext4 targets.
func TestRunEndToEnd(t *testing.T) {
	needMount(t)
	scratch := t.TempDir()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Runs:     1,
		Only:     "create",
		Targets:  []string{TargetComputerfs, TargetExt4},
		Scratch:  scratch,
		Progress: &progress,
		Logger:   testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	var names []string
	for _, w := range rep.Workloads {
		names = append(names, w.Name)
	}
	if strings.Join(names, ",") != "create-1000,tree-create" {
		t.Fatalf("workloads %v, want create-1000 and tree-create", names)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].FSType != "fuse" || rep.Targets[1].FSType != "ext4" {
		t.Fatalf("targets %+v", rep.Targets)
	}
	for _, w := range rep.Workloads {
		if len(w.Results) != 2 {
			t.Fatalf("%s: %d results", w.Name, len(w.Results))
		}
		for _, r := range w.Results {
			if len(r.Samples) != 1 || r.Primary == nil || r.Primary.N != 1 || r.Ratio == nil || r.Primary.Median <= 0 {
				t.Fatalf("%s on %s: %+v", w.Name, r.Target, r)
			}
		}
		if *w.Results[1].Ratio != 1 {
			t.Errorf("%s: ext4's ratio to itself is %g", w.Name, *w.Results[1].Ratio)
		}
	}
	if n := strings.Count(progress.String(), "\n"); n != 2 {
		t.Errorf("progress has %d lines, want one per workload:\n%s", n, progress.String())
	}
	// Everything is torn down.
	if mounted(t, scratch) {
		t.Error("a mount under the scratch directory is left behind")
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch directory not cleaned: %v", ents)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "tree-create") || !strings.Contains(table.String(), "1.00x") {
		t.Errorf("table:\n%s", table.String())
	}
	if want := fmt.Sprintf("sum of the medians of 2 of the %d seed workloads", len(ShellWorkloads())); !strings.Contains(table.String(), want) {
		t.Errorf("table without %q:\n%s", want, table.String())
	}
}

// TestSeedSum sums the seed workloads that have a median on every target,
// and nothing else: not a failed one, not a data/ row.
func TestSeedSum(t *testing.T) {
	med := func(v float64) *Summary { return &Summary{N: 1, Median: v, Min: v, Max: v} }
	res := func(ext4, cfs float64, cfsErr string) []*TargetResult {
		c := &TargetResult{Target: "computerfs", Primary: med(cfs), Error: cfsErr}
		if cfsErr != "" {
			c.Primary = nil
		}
		return []*TargetResult{{Target: "ext4", Primary: med(ext4)}, c}
	}
	r := &Report{Baseline: "ext4", Workloads: []*WorkloadResult{
		{Name: "create-1000", Results: res(0.4, 0.3, "")},
		{Name: "tree-find", Results: res(0.02, 0.2, "")},
		{Name: "tree-rm", Results: res(0.3, 9, "boom")},
		{Name: "data/sqlite", Results: res(1, 3, "")},
		{Name: "data/fio-randwrite-4k", HigherIsBetter: true, Results: res(100, 10, "")},
	}}
	s := r.SeedSum()
	if s == nil {
		t.Fatal("no seed sum")
	}
	if strings.Join(s.Workloads, ",") != "create-1000,tree-find" || s.Of != len(ShellWorkloads()) {
		t.Fatalf("summed %v of %d", s.Workloads, s.Of)
	}
	if math.Abs(s.Seconds[0]-0.42) > 1e-9 || math.Abs(s.Seconds[1]-0.5) > 1e-9 || s.Ratio[0] != 1 || math.Abs(s.Ratio[1]-0.5/0.42) > 1e-9 {
		t.Fatalf("sums %v, ratios %v", s.Seconds, s.Ratio)
	}
	var b bytes.Buffer
	s.write(&b, "ext4")
	if !strings.Contains(b.String(), "1.19x") || !strings.Contains(b.String(), "2 of the") {
		t.Errorf("printed:\n%s", b.String())
	}
	if (&Report{Workloads: []*WorkloadResult{{Name: "data/sqlite", Results: res(1, 2, "")}}}).SeedSum() != nil {
		t.Error("a seed sum without seed workloads")
	}
}

func TestTmpfsTarget(t *testing.T) {
	needMount(t)
	root := t.TempDir()
	tg, err := TmpfsTarget(root)
	if err != nil {
		t.Fatal(err)
	}
	if tg.FSType != "tmpfs" {
		t.Errorf("fstype %s", tg.FSType)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, root) {
		t.Error("tmpfs still mounted")
	}
}

func TestRunOnceFailure(t *testing.T) {
	tg, err := DirTarget("dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	w := &Workload{Name: "fails", Run: timedShell(func(*Env) string { return "echo oops >&2; exit 3" })}
	_, _, err = RunOnce(context.Background(), w, tg, nil, 0, true, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "oops") || !strings.HasPrefix(err.Error(), "run: ") {
		t.Fatalf("err %v, want the exit status and stderr of the timed step", err)
	}
	if ents, _ := os.ReadDir(tg.Dir); len(ents) != 0 {
		t.Errorf("run directory left behind: %v", ents)
	}
	ok := &Workload{Name: "a/b", Setup: func(ctx context.Context, e *Env) error {
		e.Note("noted")
		return os.WriteFile(filepath.Join(e.Dir, "x"), nil, 0o644)
	}, Run: timedShell(func(*Env) string { return "test -f x" })}
	s, notes, err := RunOnce(context.Background(), ok, tg, nil, 1, true, testLogger(t))
	if err != nil || s.Seconds <= 0 || len(notes) != 1 {
		t.Fatalf("RunOnce = %+v, %v, %v", s, notes, err)
	}
}

func TestSelect(t *testing.T) {
	c, err := Select(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Workloads) < 20 || len(c.Scenarios) != 0 {
		t.Errorf("default selection: %d workloads, %d scenarios", len(c.Workloads), len(c.Scenarios))
	}
	c, err = Select(Config{Only: "^jobs/seq"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Workloads {
		if !strings.HasPrefix(w.Name, "jobs/seq") || w.Primary != MetricMiBs {
			t.Errorf("--only ^jobs/seq selected %s", w.Name)
		}
	}
	c, err = Select(Config{Scenarios: []string{"write-amp"}})
	if err != nil || len(c.Workloads) != 0 || len(c.Scenarios) != 1 {
		t.Errorf("--scenario write-amp: %v, %+v", err, c)
	}
	c, err = Select(Config{All: true})
	if err != nil || len(c.Scenarios) != len(Scenarios()) || len(c.Workloads) < 20 {
		t.Errorf("--all: %v", err)
	}
	if _, err := Select(Config{Scenarios: []string{"nope"}}); err == nil {
		t.Error("unknown scenario accepted")
	}
	if _, err := Select(Config{Only: "("}); err == nil {
		t.Error("bad regexp accepted")
	}
	if _, err := Select(Config{Only: "matches-nothing"}); err == nil {
		t.Error("empty selection accepted")
	}
}

func TestParseTargetSpec(t *testing.T) {
	if ts, err := ParseTargetSpec("xfs=/mnt/x"); err != nil || ts.Name != "xfs" || ts.Dir != "/mnt/x" {
		t.Errorf("got %+v, %v", ts, err)
	}
	for _, bad := range []string{"", "x", "=dir", "x=", "a/b=dir"} {
		if _, err := ParseTargetSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRealFio(t *testing.T) {
	fio, ok := FioPath()
	if !ok {
		t.Skip("fio is not installed")
	}
	srcs, err := LoadJobFiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := srcs[0]
	src.Text = []byte("[global]\nrw=write\nbs=64k\nsize=1m\nnumjobs=2\n[small]\n")
	w := FioWorkload(src, fio)
	tg, err := DirTarget("dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	s, _, err := RunOnce(context.Background(), &w, tg, nil, 0, true, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Metrics[MetricMiBs] <= 0 || s.Metrics[MetricIOPS] <= 0 {
		t.Errorf("fio metrics %v", s.Metrics)
	}
}

// TestMillionFilesScenarioSmall runs the million-files scenario at a few
// thousand files: it must build, mount cold and warm, and report every
// figure. Its checks are timings, which this test leaves to the bench.
func TestMillionFilesScenarioSmall(t *testing.T) {
	needMount(t)
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Scenarios: []string{"million-files"},
		Scratch:   scratch,
		Params:    ScenarioParams{Scale: 1, Files: 3000, Bytes: 3000 * 4096},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Error != "" {
		t.Fatalf("scenarios: %+v", rep.Scenarios)
	}
	got := map[string]float64{}
	for _, v := range rep.Scenarios[0].Values {
		got[v.Name] = v.Value
	}
	for _, name := range []string{
		"files", "open + mount (cold)", "stat p50, cold (2000 random paths)", "stat p50, warm",
		"stat p50, cold, 1000-file workspace (1000 paths)", "stat p50, warm, 1000-file workspace",
		"stat p50 ratio to the 1000-file workspace, cold", "stat p50 ratio to the 1000-file workspace, warm",
	} {
		if v, ok := got[name]; !ok || v <= 0 {
			t.Errorf("%q = %v (reported: %v)", name, v, ok)
		}
	}
	if got["files"] != 3000 {
		t.Errorf("files = %v, want 3000", got["files"])
	}
	if len(rep.Scenarios[0].Checks) != 2 {
		t.Errorf("checks: %+v", rep.Scenarios[0].Checks)
	}
	if mounted(t, scratch) {
		t.Error("a mount under the scratch directory is left behind")
	}
}

// TestSnapshotsScenarioSmall runs the snapshots scenario at 3,000 files:
// it must build both workspaces and report every figure, and each diff
// must find the 100 files. Its timing checks are the bench's.
func TestSnapshotsScenarioSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Scenarios: []string{"snapshots"},
		Scratch:   t.TempDir(),
		Params:    ScenarioParams{Scale: 1, Files: 3000, Bytes: 1},
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Error != "" {
		t.Fatalf("scenarios: %+v", rep.Scenarios)
	}
	got := map[string]float64{}
	for _, v := range rep.Scenarios[0].Values {
		got[v.Name] = v.Value
	}
	for _, n := range []int{1000, 3000} {
		for _, name := range []string{
			"snapshot create p50 (of 20), %d files", "diff of 100 files written as through the mount (journal paths), %d files",
			"diff of 100 files written by inode (parent directories read), %d files", "offline restore of 100 changed files (p50 of 5), %d files",
			"records restored, %d files",
		} {
			name := fmt.Sprintf(name, n)
			if v, ok := got[name]; !ok || v <= 0 {
				t.Errorf("%q = %v (reported: %v)", name, v, ok)
			}
		}
	}
	for _, c := range rep.Scenarios[0].Checks {
		if strings.HasPrefix(c.Name, "each diff lists") && !c.OK {
			t.Errorf("%s: %s", c.Name, c.Detail)
		}
	}
}
