package main

import (
	"strings"

	"github.com/computerfs/computerfs/bench"
	"github.com/spf13/cobra"
)

// computerfs bench: the fio-style benchmarks, side by side.
type benchOptions struct {
	runs                                       int
	only, jsonPath, svgPath                    string
	targetsList, baseline, scratch             string
	list, withFio, all, inContainer, keepDirty bool
	scale                                      float64
	files                                      int
	bytesStr                                   string
	extra, jobs, scenarios                     listFlag
	memLimit                                   string
	cpuProfile                                 string
}

func newBenchCmd(e *env) *cobra.Command {
	o := &benchOptions{scenarios: listFlag{split: true}}
	defaults := bench.DefaultScenarioParams()
	var scenarioNames []string
	for _, s := range bench.Scenarios() {
		scenarioNames = append(scenarioNames, s.Name)
	}
	c := &cobra.Command{
		Use:   "bench",
		Short: "run the fio-style benchmarks side by side on computerfs, ext4 and tmpfs",
		Args:  argRange(0, 0),
		RunE:  func(c *cobra.Command, args []string) error { return runBench(c.Context(), e, o, args) },
	}
	f := c.Flags()
	f.IntVar(&o.runs, "runs", 5, "counted runs of each workload on each target, after one warm-up round")
	f.StringVar(&o.only, "only", "", "run only the workloads whose names match this regular expression")
	f.BoolVar(&o.list, "list", false, "list the workloads, job files and scenarios, then exit")
	f.StringVar(&o.jsonPath, "json", "", "also write the full report, every sample included, as JSON to this `FILE`")
	f.StringVar(&o.svgPath, "svg", "", "also write a bar chart of the ratios to the baseline as SVG to this `FILE`")
	f.Var(&o.extra, "target", "add a target directory, as NAME=DIR (repeatable)")
	f.StringVar(&o.targetsList, "targets", strings.Join(bench.DefaultTargets(), ","), "the built-in targets to use, comma-separated (computerfs, ext4, tmpfs, nopt1m)")
	f.StringVar(&o.baseline, "baseline", bench.TargetExt4, "the target that ratios are relative to")
	f.StringVar(&o.scratch, "scratch", "", "directory for inputs, the ext4 target and the computerfs store (default: an ext4 temp directory)")
	f.Var(&o.jobs, "job", "also run this fio job file (repeatable); bench/jobs/*.fio are built in")
	f.BoolVar(&o.withFio, "fio", false, "also run every job file through the real fio (if installed) and show its numbers beside ours")
	f.Var(&o.scenarios, "scenario", "run this scale scenario ("+strings.Join(scenarioNames, ", ")+"); repeatable or comma-separated; without --only, the workloads are skipped")
	f.BoolVar(&o.all, "all", false, "run every workload and every scale scenario")
	f.BoolVar(&o.inContainer, "in-container", false, "run each timed command of the shell workloads in a runc container of its own, on the target as /workspace (times exclude the container's start; job files and scenarios are skipped; needs root and runc)")
	f.BoolVar(&o.keepDirty, "keep-setup-dirty", false, "start each timed step right after its setup, without committing the workspace and syncing every target first (ext4 then still holds the setup's writes in memory, and computerfs may still be committing them)")
	f.StringVar(&o.memLimit, "memory-limit", defaultMemoryLimit, "soft heap limit of this process, which serves the computerfs mount (as mount --memory-limit)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process, which serves the computerfs mount, to `FILE` (the whole run: bench one target to see its daemon alone)")
	f.Float64Var(&o.scale, "scale", 1, "multiply the sizes of the scale scenarios (0.01 for a quick look)")
	f.IntVar(&o.files, "files", defaults.Files, "files in the largest workspace of the million-files and snapshots scenarios, before --scale")
	f.StringVar(&o.bytesStr, "bytes", "20G", "data in the million-files scenario's workspace, before --scale")
	return c
}
