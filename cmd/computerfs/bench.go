package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
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
func (l *listFlag) Type() string   { return "string" }

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

func runBench(ctx context.Context, e *env, o *benchOptions, args []string) error {
	runs, only, jsonPath, svgPath := o.runs, o.only, o.jsonPath, o.svgPath
	targetsList, baseline, scratch := o.targetsList, o.baseline, o.scratch
	list, withFio, all, inContainer, keepDirty := o.list, o.withFio, o.all, o.inContainer, o.keepDirty
	scale, files, bytesStr, memLimit := o.scale, o.files, o.bytesStr, o.memLimit
	extra, jobs, scenarios := o.extra, o.jobs, o.scenarios
	if err := setMemoryLimit(memLimit); err != nil {
		return err
	}
	raiseProcs()
	if o.cpuProfile != "" {
		pf, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
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
