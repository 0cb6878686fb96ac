package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// formatSeconds shows a duration with three significant digits.
func formatSeconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 10e-3:
		return fmt.Sprintf("%.2fms", s*1e3)
	case s < 100e-3:
		return fmt.Sprintf("%.1fms", s*1e3)
	case s < 1:
		return fmt.Sprintf("%.0fms", s*1e3)
	case s < 10:
		return fmt.Sprintf("%.2fs", s)
	default:
		return fmt.Sprintf("%.1fs", s)
	}
}

func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func formatMicros(us float64) string { return formatSeconds(us / 1e6) }

func formatPrimary(metric string, v float64) string {
	if metric == MetricSeconds || metric == "" {
		return formatSeconds(v)
	}
	return formatNumber(v) + " " + metric
}

func formatRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *r)
}

func notRun(tr *TargetResult) string {
	if tr.Error != "" {
		return "FAILED"
	}
	return "not run"
}

// WriteTable writes the report for a terminal.
func (r *Report) WriteTable(w io.Writer) error {
	bw := &errWriter{w: w}
	if len(r.Workloads) > 0 {
		fmt.Fprintf(bw, "computerfs bench: median of %d runs per workload and target after %d warm-up round, targets interleaved\n", r.Runs, r.WarmUp)
		if r.InContainer {
			fmt.Fprintln(bw, "in containers: each timed command ran in a runc container of its own, on the target as /workspace")
		}
		if r.SetupSettled {
			fmt.Fprintln(bw, "between setup and timed step, every target was settled (workspace committed, filesystems synced)")
		} else {
			fmt.Fprintln(bw, "timed steps started right after setup, unsettled (--keep-setup-dirty)")
		}
	} else {
		fmt.Fprintln(bw, "computerfs bench: scale scenarios")
	}
	fmt.Fprintf(bw, "host: Linux %s, %d CPUs, %s; %s\n", r.Host.Kernel, r.Host.CPUs, r.Host.GoVersion, r.Started.Format("2006-01-02 15:04:05"))
	if len(r.Targets) > 0 {
		fmt.Fprintln(bw, "\ntargets:")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, t := range r.Targets {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.Name, t.FSType, t.Dir, t.Note)
		}
		tw.Flush()
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(bw, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintf(bw, "  %s\n", n)
		}
	}
	var timed, rates []*WorkloadResult
	for _, wr := range r.Workloads {
		if wr.HigherIsBetter {
			rates = append(rates, wr)
		} else {
			timed = append(timed, wr)
		}
	}
	if len(timed) > 0 {
		// Workloads run in containers also have the wall clock with the
		// containers' start.
		wall := false
		for _, wr := range timed {
			for _, tr := range wr.Results {
				if s, ok := tr.Metrics[MetricWall]; ok && s.N > 0 {
					wall = true
				}
			}
		}
		if wall {
			fmt.Fprintf(bw, "\nWorkloads: time of the timed step's commands, measured inside their containers (lower is better); ratio = median / %s median;\nWALL = median wall clock of the step, the containers' start and teardown included\n", r.Baseline)
		} else {
			fmt.Fprintf(bw, "\nWorkloads: wall-clock time of the timed step (lower is better); ratio = median / %s median\n", r.Baseline)
		}
		tw := &table{right: []bool{false, false, true, true, true, true, true}}
		head := []string{"WORKLOAD", "TARGET", "MEDIAN", "MIN", "MAX", "RATIO"}
		if wall {
			head = append(head, "WALL")
		}
		tw.row(head...)
		for _, wr := range timed {
			for i, tr := range wr.Results {
				name := wr.Name
				if i > 0 {
					name = ""
				}
				if tr.Error != "" || tr.Primary == nil {
					tw.row(name, tr.Target, notRun(tr))
					continue
				}
				p := tr.Primary
				row := []string{name, tr.Target, formatSeconds(p.Median), formatSeconds(p.Min), formatSeconds(p.Max), formatRatio(tr.Ratio)}
				if wall {
					w := math.NaN()
					if s, ok := tr.Metrics[MetricWall]; ok && s.N > 0 {
						w = s.Median
					}
					row = append(row, formatSeconds(w))
				}
				tw.row(row...)
			}
		}
		tw.write(bw)
		if ss := r.SeedSum(); ss != nil && len(ss.Workloads) > 1 {
			ss.write(bw, r.Baseline)
		}
	}
	if len(rates) > 0 {
		fmt.Fprintf(bw, "\nJob files: jobs/ is the Go engine, fio/ the real fio (data/ rows too); throughput in MiB/s, or IOPS for 4 KiB rows (higher is better);\nratio = median / %s median; IOPS and latency percentiles are medians over the runs\n", r.Baseline)
		tw := &table{right: []bool{false, false, true, true, true, true, true, true, true, true}}
		tw.row("JOB FILE", "TARGET", "RATE", "MIN", "MAX", "RATIO", "IOPS", "p50", "p99", "p99.9")
		for _, wr := range rates {
			for i, tr := range wr.Results {
				name := wr.Name
				if i > 0 {
					name = ""
				}
				if tr.Error != "" || tr.Primary == nil {
					tw.row(name, tr.Target, notRun(tr))
					continue
				}
				p := tr.Primary
				med := func(k string) float64 {
					if s, ok := tr.Metrics[k]; ok && s.N > 0 {
						return s.Median
					}
					return math.NaN()
				}
				tw.row(name, tr.Target,
					formatPrimary(wr.Primary, p.Median), formatNumber(p.Min), formatNumber(p.Max), formatRatio(tr.Ratio),
					formatNumber(med(MetricIOPS)), formatMicros(med(MetricP50)), formatMicros(med(MetricP99)), formatMicros(med(MetricP999)))
			}
		}
		tw.write(bw)
	}
	for _, s := range r.Scenarios {
		fmt.Fprintf(bw, "\nScenario %s: %s (%.1fs)\n", s.Name, s.Desc, s.Seconds)
		if s.Error != "" {
			fmt.Fprintf(bw, "  FAILED: %s\n", s.Error)
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, v := range s.Values {
			fmt.Fprintf(tw, "  %s\t%s\n", v.Name, strings.TrimSpace(formatNumber(v.Value)+" "+v.Unit))
		}
		tw.Flush()
		for _, c := range s.Checks {
			verdict := "PASS"
			if !c.OK {
				verdict = "FAIL"
			}
			fmt.Fprintf(bw, "  check %s: %s (%s)\n", c.Name, verdict, c.Detail)
		}
	}
	var runNotes []string
	for _, wr := range r.Workloads {
		for _, tr := range wr.Results {
			for _, n := range tr.Notes {
				runNotes = append(runNotes, fmt.Sprintf("%s on %s: %s", wr.Name, tr.Target, n))
			}
		}
	}
	if len(runNotes) > 0 {
		fmt.Fprintln(bw, "\nrun notes:")
		for _, n := range runNotes {
			fmt.Fprintf(bw, "  %s\n", n)
		}
	}
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintln(bw, "\nFAILURES:")
		for _, x := range f {
			fmt.Fprintf(bw, "  %s\n", strings.ReplaceAll(x, "\n", "\n    "))
		}
	}
	return bw.err
}

// WriteJSON writes the whole report, every sample included.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// table lays out columns, some aligned right.
type table struct {
	right []bool
	rows  [][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.right) && t.right[i] {
				b.WriteString(pad + c)
			} else if i < len(r)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// finite is v, or nil (JSON null) when v is NaN or infinite, which JSON
// cannot hold.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// MarshalJSON writes NaN and infinite statistics as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		N      int `json:"n"`
		Median any `json:"median"`
		Min    any `json:"min"`
		Max    any `json:"max"`
	}{s.N, finite(s.Median), finite(s.Min), finite(s.Max)})
}

// MarshalJSON writes NaN and infinite metrics as null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = finite(v)
	}
	return json.Marshal(out)
}

// MarshalJSON writes a NaN or infinite value as null.
func (v Value) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
		Unit  string `json:"unit,omitempty"`
	}{v.Name, finite(v.Value), v.Unit})
}

// SeedSum is the sum of the medians of the seed workloads (the shell
// workloads, ShellWorkloads) that succeeded on every target of a report,
// per target in the report's order: the figure issue 19 judges the
// suite by (at most 1.05x ext4).
type SeedSum struct {
	// Workloads are the seed workloads summed; Of is how many there are.
	Workloads []string `json:"workloads"`
	Of        int      `json:"of"`
	Targets   []string `json:"targets"`
	// Seconds[i] is the sum for Targets[i]; Ratio[i] its ratio to the
	// baseline's sum (NaN without a baseline).
	Seconds []float64 `json:"seconds"`
	Ratio   []float64 `json:"ratio"`
}

// SeedSum sums the seed workloads of r that have a median on every
// target, or returns nil if there are none.
func (r *Report) SeedSum() *SeedSum {
	seeds := ShellWorkloads()
	isSeed := make(map[string]bool, len(seeds))
	for _, w := range seeds {
		isSeed[w.Name] = true
	}
	var s *SeedSum
	for _, wr := range r.Workloads {
		if !isSeed[wr.Name] || wr.HigherIsBetter {
			continue
		}
		complete := len(wr.Results) > 0
		for _, tr := range wr.Results {
			if tr.Error != "" || tr.Primary == nil || math.IsNaN(tr.Primary.Median) {
				complete = false
			}
		}
		if !complete {
			continue
		}
		if s == nil {
			s = &SeedSum{Of: len(seeds)}
			for _, tr := range wr.Results {
				s.Targets = append(s.Targets, tr.Target)
			}
			s.Seconds = make([]float64, len(s.Targets))
		}
		if len(wr.Results) != len(s.Targets) {
			continue
		}
		s.Workloads = append(s.Workloads, wr.Name)
		for i, tr := range wr.Results {
			s.Seconds[i] += tr.Primary.Median
		}
	}
	if s == nil {
		return nil
	}
	base := math.NaN()
	for i, t := range s.Targets {
		if t == r.Baseline {
			base = s.Seconds[i]
		}
	}
	for _, v := range s.Seconds {
		s.Ratio = append(s.Ratio, v/base)
	}
	return s
}

// write prints the seed sum, one line per target.
func (s *SeedSum) write(w io.Writer, baseline string) {
	fmt.Fprintf(w, "\nsum of the medians of %d of the %d seed workloads (those before data/; ratio to %s's sum):\n", len(s.Workloads), s.Of, baseline)
	t := &table{right: []bool{false, true, true}}
	for i, name := range s.Targets {
		t.row("  "+name, formatSeconds(s.Seconds[i]), formatRatio(&s.Ratio[i]))
	}
	t.write(w)
}
