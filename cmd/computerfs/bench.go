package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/computerfs/computerfs/bench"
	"github.com/computerfs/computerfs/internal/size"
)

// listFlag is a repeatable string flag; commas also separate values when
// split is set.
type listFlag struct {
	vals  []string
	split bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }

func (l *listFlag) Set(s string) error {
	if !l.split {
		l.vals = append(l.vals, s)
		return nil
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			l.vals = append(l.vals, v)
		}
	}
	return nil
}

func cmdBench(ctx context.Context, e *env, args []string) error {
	defaults := bench.DefaultScenarioParams()
	var (
		runs                                       int
		only, jsonPath, svgPath                    string
		targetsList, baseline, scratch             string
		list, withFio, all, inContainer, keepDirty bool
		scale                                      float64
		files                                      int
		bytesStr                                   string
		extra, jobs                                listFlag
		scenarios                                  = listFlag{split: true}
		scenarioNames                              []string
		memLimit                                   string
	)
	for _, s := range bench.Scenarios() {
		scenarioNames = append(scenarioNames, s.Name)
	}
	fl, err := parse(e, "bench", args, func(fl *flag.FlagSet) {
		fl.IntVar(&runs, "runs", 5, "counted runs of each workload on each target, after one warm-up round")
		fl.StringVar(&only, "only", "", "run only the workloads whose names match this regular expression")
		fl.BoolVar(&list, "list", false, "list the workloads, job files and scenarios, then exit")
		fl.StringVar(&jsonPath, "json", "", "also write the full report, every sample included, as JSON to this file")
		fl.StringVar(&svgPath, "svg", "", "also write a bar chart of the ratios to the baseline as SVG to this file")
		fl.Var(&extra, "target", "add a target directory, as NAME=DIR (repeatable)")
		fl.StringVar(&targetsList, "targets", strings.Join(bench.DefaultTargets(), ","), "the built-in targets to use, comma-separated (computerfs, ext4, tmpfs, nopt1m)")
		fl.StringVar(&baseline, "baseline", bench.TargetExt4, "the target that ratios are relative to")
		fl.StringVar(&scratch, "scratch", "", "directory for inputs, the ext4 target and the computerfs store (default: an ext4 temp directory)")
		fl.Var(&jobs, "job", "also run this fio job file (repeatable); bench/jobs/*.fio are built in")
		fl.BoolVar(&withFio, "fio", false, "also run every job file through the real fio (if installed) and show its numbers beside ours")
		fl.Var(&scenarios, "scenario", "run this scale scenario ("+strings.Join(scenarioNames, ", ")+"); repeatable or comma-separated; without --only, the workloads are skipped")
		fl.BoolVar(&all, "all", false, "run every workload and every scale scenario")
		fl.BoolVar(&inContainer, "in-container", false, "run each timed command of the shell workloads in a runc container of its own, on the target as /workspace (times exclude the container's start; job files and scenarios are skipped; needs root and runc)")
		fl.BoolVar(&keepDirty, "keep-setup-dirty", false, "start each timed step right after its setup, without committing the workspace and syncing every target first (ext4 then still holds the setup's writes in memory, and computerfs may still be committing them)")
		fl.StringVar(&memLimit, "memory-limit", defaultMemoryLimit, "soft heap limit of this process, which serves the computerfs mount (as mount --memory-limit)")
		fl.Float64Var(&scale, "scale", 1, "multiply the sizes of the scale scenarios (0.01 for a quick look)")
		fl.IntVar(&files, "files", defaults.Files, "files in the largest workspace of the million-files and snapshots scenarios, before --scale")
		fl.StringVar(&bytesStr, "bytes", "20G", "data in the million-files scenario's workspace, before --scale")
	})
	if err != nil {
		return err
	}
	if fl.NArg() != 0 {
		fl.Usage()
		return exitCode(2)
	}
	if err := setMemoryLimit(memLimit); err != nil {
		return err
	}
	nbytes, err := size.Parse(bytesStr)
	if err != nil {
		return usageError{fmt.Errorf("--bytes: %w", err)}
	}
	if nbytes == 0 {
		return usageError{fmt.Errorf("--bytes must be above 0")}
	}
	if runs < 1 {
		return usageError{fmt.Errorf("--runs must be at least 1, not %d", runs)}
	}
	if scale <= 0 {
		return usageError{fmt.Errorf("--scale must be above 0, not %g", scale)}
	}
	if files < 1 {
		return usageError{fmt.Errorf("--files must be at least 1, not %d", files)}
	}
	cfg := bench.Config{
		Runs:           runs,
		Only:           only,
		Targets:        []string{},
		Baseline:       baseline,
		Scratch:        scratch,
		JobFiles:       jobs.vals,
		Fio:            withFio,
		Scenarios:      scenarios.vals,
		All:            all,
		InContainer:    inContainer,
		KeepSetupDirty: keepDirty,
		Params:         bench.ScenarioParams{Scale: scale, Files: files, Bytes: int64(nbytes)},
		Logger:         e.log,
	}
	for _, t := range strings.Split(targetsList, ",") {
		if t = strings.TrimSpace(t); t != "" {
			cfg.Targets = append(cfg.Targets, t)
		}
	}
	for _, s := range extra.vals {
		ts, err := bench.ParseTargetSpec(s)
		if err != nil {
			return usageError{err}
		}
		cfg.Extra = append(cfg.Extra, ts)
	}
	if list {
		return listBench(e, cfg)
	}
	if len(cfg.Targets) == 0 && len(cfg.Extra) == 0 {
		return usageError{fmt.Errorf("no targets: give --targets or --target NAME=DIR")}
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Progress = e.stderr
	cfg.ProgressBar = bench.IsTerminal(e.stderr)
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		if werr := rep.WriteTable(e.stdout); werr != nil && err == nil {
			err = werr
		}
		if jsonPath != "" {
			if werr := writeFileWith(jsonPath, rep.WriteJSON); werr != nil && err == nil {
				err = werr
			}
		}
		if svgPath != "" {
			if werr := writeFileWith(svgPath, rep.WriteSVG); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		return err
	}
	if f := rep.Failures(); len(f) > 0 {
		return fmt.Errorf("%d failure(s); see FAILURES above", len(f))
	}
	return nil
}

func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func listBench(e *env, cfg bench.Config) error {
	cfg.All = cfg.Only == ""
	if cfg.Only != "" {
		cfg.Scenarios = nil
	}
	cat, err := bench.Select(cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMETRIC\tDESCRIPTION")
	for _, w := range cat.Workloads {
		metric := w.Primary
		if metric == "" {
			metric = bench.MetricSeconds
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", w.Name, metric, w.Desc)
	}
	tw.Flush()
	if len(cat.Scenarios) > 0 {
		fmt.Fprintln(e.stdout, "\nScale scenarios (run with --scenario NAME or --all):")
		tw = tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, s := range cat.Scenarios {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Desc)
		}
		tw.Flush()
	}
	for _, n := range cat.Notes {
		fmt.Fprintf(e.stdout, "\nnote: %s\n", n)
	}
	return nil
}
