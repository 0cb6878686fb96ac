package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// TargetSpec is an extra target: a directory the caller names.
type TargetSpec struct {
	Name string
	Dir  string
}

// ParseTargetSpec reads NAME=DIR.
func ParseTargetSpec(s string) (TargetSpec, error) {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || dir == "" {
		return TargetSpec{}, fmt.Errorf("target %q: want NAME=DIR", s)
	}
	if strings.ContainsAny(name, "/ \t") {
		return TargetSpec{}, fmt.Errorf("target %q: the name may not contain '/' or spaces", s)
	}
	return TargetSpec{Name: name, Dir: dir}, nil
}

// Config says what Run runs.
type Config struct {
	// Runs is the number of counted runs of each workload on each target,
	// after one warm-up round (5 if 0).
	Runs int
	// Only selects the workloads whose names match this regular
	// expression (all if empty).
	Only string
	// Targets are the built-in targets to use (DefaultTargets if nil).
	Targets []string
	// Extra are more targets, given as directories.
	Extra []TargetSpec
	// Baseline is the target ratios are relative to (ext4 if empty).
	Baseline string
	// Scratch is where inputs, the ext4 target and the computerfs store
	// go (chosen by ChooseScratch if empty).
	Scratch string
	// JobFiles are job files to run besides the built-in ones.
	JobFiles []string
	// Fio also runs every job file through the real fio, if installed.
	Fio bool
	// Scenarios names scale scenarios to run. Naming any without Only
	// skips the workloads.
	Scenarios []string
	// All runs every workload and every scenario.
	All bool
	// InContainer runs the timed commands of the shell workloads in a
	// runc container each (the container backend), with the target's
	// directory as /workspace: what an agent in a container sees. The
	// samples' seconds are the commands' own time, measured inside the
	// container; MetricWall adds the containers' start. Setup, cleanup and
	// drop_caches stay on the host. The job files and the scale scenarios
	// do not run (a note says so). It needs root and runc.
	InContainer bool
	// KeepSetupDirty starts each timed step right after the workload's
	// setup, without settling it first: ext4 and tmpfs still hold the
	// setup's writes dirty in memory, and computerfs may still be hashing
	// and committing them during the step. By default every target is
	// settled (the workspace committed, every filesystem synced) between
	// setup and the timed step.
	KeepSetupDirty bool

	Params ScenarioParams
	// Progress receives a progress bar (ProgressBar, for a terminal) or
	// one line per finished workload; nil for neither.
	Progress    io.Writer
	ProgressBar bool
	Logger      *slog.Logger
}

// Catalog is what a configuration selects.
type Catalog struct {
	Workloads []Workload
	Scenarios []Scenario
	Notes     []string
}

// Select returns the workloads and scenarios cfg selects, in run order.
func Select(cfg Config) (*Catalog, error) {
	c := &Catalog{}
	all := ShellWorkloads()
	srcs, err := LoadJobFiles(cfg.JobFiles)
	if err != nil {
		return nil, err
	}
	fioPath, haveFio := FioPath()
	if cfg.Fio && !haveFio {
		c.Notes = append(c.Notes, "fio is not installed (Debian: apt-get install fio): the job files ran only with the Go engine")
	}
	data, notes := DataWorkloads()
	all = append(all, data...)
	c.Notes = append(c.Notes, notes...)
	for _, s := range srcs {
		all = append(all, JobWorkload(s))
		if cfg.Fio && haveFio {
			all = append(all, FioWorkload(s, fioPath))
		}
	}
	var only *regexp.Regexp
	if cfg.Only != "" {
		if only, err = regexp.Compile(cfg.Only); err != nil {
			return nil, fmt.Errorf("--only: %w", err)
		}
	}
	runWorkloads := cfg.All || cfg.Only != "" || len(cfg.Scenarios) == 0
	var skipped []string
	if runWorkloads {
		for _, w := range all {
			if only != nil && !only.MatchString(w.Name) {
				continue
			}
			if cfg.InContainer && !w.commands {
				skipped = append(skipped, w.Name)
				continue
			}
			c.Workloads = append(c.Workloads, w)
		}
	}
	if len(skipped) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("--in-container: %d job-file workload(s) skipped (%s): they run in the bench process or through fio, not as shell commands",
			len(skipped), strings.Join(skipped, ", ")))
	}
	var skippedScenarios []string
	for _, s := range Scenarios() {
		if cfg.All || slices.Contains(cfg.Scenarios, s.Name) {
			if cfg.InContainer {
				skippedScenarios = append(skippedScenarios, s.Name)
				continue
			}
			c.Scenarios = append(c.Scenarios, s)
		}
	}
	if len(skippedScenarios) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("--in-container: scenario(s) %s skipped: the scale scenarios run only on the host, without --in-container",
			strings.Join(skippedScenarios, ", ")))
	}
	for _, name := range cfg.Scenarios {
		if !slices.ContainsFunc(Scenarios(), func(s Scenario) bool { return s.Name == name }) {
			var names []string
			for _, s := range Scenarios() {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("unknown scenario %q (scenarios: %s)", name, strings.Join(names, ", "))
		}
	}
	if len(c.Workloads) == 0 && len(c.Scenarios) == 0 {
		if cfg.InContainer {
			return nil, fmt.Errorf("--in-container runs only the shell workloads, and none is selected (--only %q)", cfg.Only)
		}
		return nil, fmt.Errorf("no workload matches --only %q", cfg.Only)
	}
	return c, nil
}

// Report is the outcome of a run.
type Report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Host     HostInfo  `json:"host"`
	Runs     int       `json:"runs"`
	WarmUp   int       `json:"warm_up_rounds"`
	Baseline string    `json:"baseline"`
	// InContainer: the shell workloads' timed commands ran in runc
	// containers, timed inside them (Config.InContainer).
	InContainer bool `json:"in_container,omitempty"`
	// SetupSettled: every target was settled between a workload's setup
	// and its timed step (see Config.KeepSetupDirty).
	SetupSettled bool              `json:"setup_settled"`
	Scratch      string            `json:"scratch"`
	Targets      []*Target         `json:"targets"`
	Workloads    []*WorkloadResult `json:"workloads"`
	Scenarios    []*ScenarioResult `json:"scenarios,omitempty"`
	Notes        []string          `json:"notes,omitempty"`
}

// HostInfo describes the machine.
type HostInfo struct {
	Kernel    string `json:"kernel"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
}

// WorkloadResult is one workload on every target.
type WorkloadResult struct {
	Name           string          `json:"name"`
	Desc           string          `json:"desc"`
	Primary        string          `json:"primary_metric"`
	HigherIsBetter bool            `json:"higher_is_better"`
	Results        []*TargetResult `json:"results"`
}

// TargetResult is one workload on one target.
type TargetResult struct {
	Target  string   `json:"target"`
	Samples []Sample `json:"samples"`
	// Primary summarises the primary metric over the counted runs.
	Primary *Summary `json:"primary,omitempty"`
	// Ratio is Primary's median over the baseline target's.
	Ratio   *float64           `json:"ratio,omitempty"`
	Seconds *Summary           `json:"seconds,omitempty"`
	Metrics map[string]Summary `json:"metrics,omitempty"`
	Error   string             `json:"error,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
}

// Sample is one counted run.
type Sample struct {
	Seconds float64 `json:"seconds"`
	Metrics Metrics `json:"metrics,omitempty"`
}

// Failures lists the workloads and scenarios that failed, with why.
func (r *Report) Failures() []string {
	var out []string
	for _, w := range r.Workloads {
		for _, t := range w.Results {
			if t.Error != "" {
				out = append(out, fmt.Sprintf("%s on %s: %s", w.Name, t.Target, t.Error))
			}
		}
	}
	for _, s := range r.Scenarios {
		if s.Error != "" {
			out = append(out, fmt.Sprintf("scenario %s: %s", s.Name, s.Error))
		}
		for _, c := range s.Checks {
			if !c.OK {
				out = append(out, fmt.Sprintf("scenario %s: check %q failed: %s", s.Name, c.Name, c.Detail))
			}
		}
	}
	return out
}

func hostInfo() HostInfo {
	k, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return HostInfo{Kernel: strings.TrimSpace(string(k)), CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}

// Run sets up the targets, runs the selected workloads on each of them
// (targets interleaved, one warm-up round, then cfg.Runs counted rounds),
// runs the selected scenarios, and tears everything down. The report holds
// the failures of single workloads; the error is for what stopped the run
// as a whole (and for a teardown that failed).
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Runs == 0 {
		cfg.Runs = 5
	}
	if cfg.Runs < 0 {
		return nil, fmt.Errorf("runs must be at least 1, not %d", cfg.Runs)
	}
	if cfg.Baseline == "" {
		cfg.Baseline = TargetExt4
	}
	d := DefaultScenarioParams()
	cfg.Params.Scale = orDefault(cfg.Params.Scale, d.Scale)
	cfg.Params.Files = orDefault(cfg.Params.Files, d.Files)
	cfg.Params.Bytes = orDefault(cfg.Params.Bytes, d.Bytes)
	if cfg.Params.Scale < 0 || cfg.Params.Files < 0 || cfg.Params.Bytes < 0 {
		return nil, errors.New("scale, files and bytes must not be negative")
	}
	cat, err := Select(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.InContainer {
		if err := ContainerAvailable(); err != nil {
			return nil, err
		}
		// The report's target names carry the suffix; the baseline may
		// be named either way.
		cfg.Baseline = strings.TrimSuffix(cfg.Baseline, ContainerSuffix)
	}
	names := cfg.Targets
	if names == nil {
		names = DefaultTargets()
	}
	for _, n := range names {
		if n != TargetComputerfs && n != TargetExt4 && n != TargetTmpfs && n != TargetNopt1m {
			return nil, fmt.Errorf("unknown target %q (built-in targets: %s; add others with NAME=DIR)", n, strings.Join(DefaultTargets(), ", "))
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("target %q given twice", n)
		}
		seen[n] = true
	}
	for _, x := range cfg.Extra {
		if seen[x.Name] {
			return nil, fmt.Errorf("target %q given twice", x.Name)
		}
		seen[x.Name] = true
	}

	scratch, scratchNote, err := ChooseScratch(cfg.Scratch)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(scratch, "computerfs-bench-")
	if err != nil {
		return nil, fmt.Errorf("scratch directory: %w", err)
	}
	// Absolute, so that the inputs' paths mean the same in a container.
	if abs, aerr := filepath.Abs(root); aerr == nil {
		root = abs
	}
	rep = &Report{Started: time.Now(), Host: hostInfo(), Runs: cfg.Runs, WarmUp: 1, Baseline: cfg.Baseline, Scratch: root, InContainer: cfg.InContainer, SetupSettled: !cfg.KeepSetupDirty}
	rep.Notes = append(rep.Notes, scratchNote)
	rep.Notes = append(rep.Notes, cat.Notes...)

	var targets []*Target
	defer func() {
		var errs []error
		for i := len(targets) - 1; i >= 0; i-- {
			if cerr := targets[i].Close(); cerr != nil {
				errs = append(errs, fmt.Errorf("tear down target %s: %w", targets[i].Name, cerr))
			}
		}
		if rerr := os.RemoveAll(root); rerr != nil {
			errs = append(errs, fmt.Errorf("remove scratch: %w", rerr))
		}
		rep.Seconds = time.Since(rep.Started).Seconds()
		err = errors.Join(append([]error{err}, errs...)...)
	}()

	inputs, err := NewInputs(filepath.Join(root, "inputs"), log)
	if err != nil {
		return rep, err
	}
	if len(cat.Workloads) > 0 {
		for _, n := range names {
			var t *Target
			switch n {
			case TargetComputerfs:
				t, err = ComputerfsTarget(root, ComputerfsOptions{Logger: log, AllowOther: cfg.InContainer})
			case TargetExt4:
				t, err = Ext4Target(root)
			case TargetTmpfs:
				t, err = TmpfsTarget(root)
			case TargetNopt1m:
				t, err = Nopt1mTarget(root)
			}
			if err != nil {
				return rep, err
			}
			targets = append(targets, t)
		}
		for _, x := range cfg.Extra {
			t, err := DirTarget(x.Name, x.Dir)
			if err != nil {
				return rep, err
			}
			t.Note = "given with --target"
			targets = append(targets, t)
		}
		if cfg.InContainer {
			for i, t := range targets {
				if err := putInContainer(ctx, t, filepath.Join(root, fmt.Sprintf("container-%d", i)), []string{inputs.Dir}); err != nil {
					return rep, err
				}
			}
			rep.Baseline += ContainerSuffix
			rep.Notes = append(rep.Notes, "--in-container: each timed command ran in a runc container of its own (the container backend, "+
				"its default limits), on the target's directory as /workspace; the times are measured inside the containers and exclude "+
				"their start; WALL is the timed step's wall clock, the containers' start and teardown included")
		}
		rep.Targets = targets
		if !seen[cfg.Baseline] {
			rep.Notes = append(rep.Notes, fmt.Sprintf("no baseline target %q: ratios are left out", cfg.Baseline))
		}
		if err := runWorkloads(ctx, cfg, cat.Workloads, targets, inputs, rep, log); err != nil {
			return rep, err
		}
	}
	for _, s := range cat.Scenarios {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := &ScenarioResult{Name: s.Name, Desc: s.Desc}
		rep.Scenarios = append(rep.Scenarios, res)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: scenario %s ...\n", s.Name)
		}
		start := time.Now()
		serr := inputs.Prepare(ctx, s.Needs)
		if serr == nil {
			senv := &ScenarioEnv{Root: root, Inputs: inputs, Params: cfg.Params, Log: log}
			senv.Fuse.Logger = log
			serr = s.Run(ctx, senv, res)
		}
		res.Seconds = time.Since(start).Seconds()
		if serr != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			res.Error = serr.Error()
			log.Error("scenario failed", "scenario", s.Name, "err", serr)
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: scenario %s done in %.1fs\n", s.Name, res.Seconds)
		}
	}
	return rep, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func runWorkloads(ctx context.Context, cfg Config, workloads []Workload, targets []*Target, inputs *Inputs, rep *Report, log *slog.Logger) error {
	prog := newProgress(cfg.Progress, cfg.ProgressBar, len(workloads)*len(targets)*(cfg.Runs+1))
	defer prog.finish()
	for wi := range workloads {
		w := &workloads[wi]
		wr := &WorkloadResult{Name: w.Name, Desc: w.Desc, Primary: orDefault(w.Primary, MetricSeconds), HigherIsBetter: w.HigherIsBetter()}
		rep.Workloads = append(rep.Workloads, wr)
		for _, t := range targets {
			wr.Results = append(wr.Results, &TargetResult{Target: t.Name})
		}
		if err := inputs.Prepare(ctx, w.Needs); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for _, r := range wr.Results {
				r.Error = err.Error()
			}
			prog.skip((cfg.Runs + 1) * len(targets))
			prog.workloadDone(wr)
			continue
		}
		for round := 0; round <= cfg.Runs; round++ {
			for ti, t := range targets {
				tr := wr.Results[ti]
				if tr.Error != "" {
					prog.skip(1)
					continue
				}
				prog.begin(w.Name, t.Name, round, cfg.Runs)
				s, notes, err := RunOnce(ctx, w, t, inputs, round, !cfg.KeepSetupDirty, log)
				prog.skip(1)
				if ctx.Err() != nil {
					return fmt.Errorf("%s on %s: %w", w.Name, t.Name, ctx.Err())
				}
				for _, n := range notes {
					if !slices.Contains(tr.Notes, n) {
						tr.Notes = append(tr.Notes, n)
					}
				}
				if err != nil {
					tr.Error = err.Error()
					log.Error("workload failed", "workload", w.Name, "target", t.Name, "round", round, "err", err)
					continue
				}
				if round > 0 {
					tr.Samples = append(tr.Samples, s)
				}
			}
		}
		summarize(wr, rep.Baseline)
		prog.workloadDone(wr)
	}
	return nil
}

// RunOnce runs a workload once on a target in a fresh directory: setup,
// a settling of the target if settleSetup is set, the timed run, cleanup,
// then removal of the directory and a settling of the target (so that one
// run's write-back does not land in the next one's time). It returns the
// notes the run made.
func RunOnce(ctx context.Context, w *Workload, t *Target, in *Inputs, round int, settleSetup bool, log *slog.Logger) (Sample, []string, error) {
	dir := filepath.Join(t.Dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(w.Name, "/", "_"), round))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Sample{}, nil, fmt.Errorf("setup: %w", err)
	}
	if t.enter != nil {
		t.enter()
		defer t.leave()
	}
	e := &Env{Dir: dir, Target: t, Inputs: in, Log: log, runner: t.runner}
	fail := func(stage string, err error) (Sample, []string, error) {
		os.RemoveAll(dir)
		return Sample{}, e.notes, fmt.Errorf("%s: %w", stage, err)
	}
	if w.Setup != nil {
		if err := w.Setup(ctx, e); err != nil {
			return fail("setup", err)
		}
	}
	// Settle the target before the clock starts, so that the timed step
	// does not pay for the setup's writes: computerfs would still be
	// hashing and committing them, and ext4's flusher may write them back
	// during the step.
	if settleSetup {
		if err := settle(ctx, t); err != nil {
			return fail("setup", err)
		}
	}
	v0 := readVitals(t.reads)
	start := time.Now()
	m, err := w.Run(ctx, e)
	elapsed := time.Since(start)
	if err != nil {
		return fail("run", err)
	}
	for k, x := range v0.metrics(readVitals(t.reads)) {
		if m == nil {
			m = Metrics{}
		}
		if _, ok := m[k]; !ok {
			m[k] = x
		}
	}
	if w.Cleanup != nil {
		if err := w.Cleanup(ctx, e); err != nil {
			return fail("cleanup", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return Sample{}, e.notes, fmt.Errorf("cleanup: %w", err)
	}
	if err := settle(ctx, t); err != nil {
		return Sample{}, e.notes, fmt.Errorf("cleanup: %w", err)
	}
	if t.runner != nil && w.commands {
		// In containers: the commands' own time, measured inside them;
		// the wall clock with the containers' start is a metric.
		if m == nil {
			m = Metrics{}
		}
		m[MetricWall] = elapsed.Seconds()
		return Sample{Seconds: e.inner.Seconds(), Metrics: m}, e.notes, nil
	}
	return Sample{Seconds: elapsed.Seconds(), Metrics: m}, e.notes, nil
}

// settle commits the target's workspace, if it is ours, and syncs every
// filesystem. A target served by another process (--target: a daemon of
// another build, a loopback) gets an fsync of its directory as well:
// sync(2) never reaches a FUSE server (the kernel sends it no request),
// so without it a daemon that defers its commits would
// do the setup's work inside the timed step, and ours would not.
func settle(ctx context.Context, t *Target) error {
	if t.FS != nil {
		if err := t.FS.Sync(ctx); err != nil {
			return fmt.Errorf("sync workspace: %w", err)
		}
	} else if err := fsyncDir(t.Dir); err != nil {
		return err
	}
	syscall.Sync()
	return nil
}

// fsyncDir fsyncs directory dir (FUSE_FSYNCDIR on a FUSE mount).
func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("settle %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) {
		return fmt.Errorf("settle: fsync %s: %w", dir, err)
	}
	return nil
}

// summarize computes each target's statistics and ratio to the baseline.
func summarize(wr *WorkloadResult, baseline string) {
	var base float64
	for _, tr := range wr.Results {
		if len(tr.Samples) == 0 {
			continue
		}
		secs := make([]float64, len(tr.Samples))
		for i, s := range tr.Samples {
			secs[i] = s.Seconds
		}
		ss := Summarize(secs)
		tr.Seconds = &ss
		keys := map[string]bool{}
		for _, s := range tr.Samples {
			for k := range s.Metrics {
				keys[k] = true
			}
		}
		if len(keys) > 0 {
			tr.Metrics = map[string]Summary{}
		}
		for k := range keys {
			var xs []float64
			for _, s := range tr.Samples {
				if v, ok := s.Metrics[k]; ok {
					xs = append(xs, v)
				}
			}
			tr.Metrics[k] = Summarize(xs)
		}
		p := ss
		if wr.Primary != MetricSeconds {
			p = tr.Metrics[wr.Primary]
		}
		if p.N > 0 {
			tr.Primary = &p
		}
		if tr.Target == baseline && tr.Primary != nil {
			base = tr.Primary.Median
		}
	}
	for _, tr := range wr.Results {
		if tr.Primary == nil {
			continue
		}
		if r := Ratio(tr.Primary.Median, base); !math.IsNaN(r) {
			tr.Ratio = &r
		}
	}
}
