package bench

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

//go:embed jobs/*.fio
var builtinJobs embed.FS

// JobSource is a job file with its text, which real fio is given.
type JobSource struct {
	Path string // "jobs/x.fio" for built-in files
	Text []byte
	Job  *JobFile
}

// LoadJobFiles parses the built-in job files (bench/jobs/*.fio) and then
// the files at paths.
func LoadJobFiles(paths []string) ([]JobSource, error) {
	var out []JobSource
	names, err := fs.Glob(builtinJobs, "jobs/*.fio")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, n := range names {
		text, err := builtinJobs.ReadFile(n)
		if err != nil {
			return nil, err
		}
		jf, err := ParseJobFile(n, bytes.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("built-in job file: %w", err)
		}
		out = append(out, JobSource{Path: n, Text: text, Job: jf})
	}
	seen := map[string]bool{}
	for _, s := range out {
		seen[s.Job.Name] = true
	}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("job file: %w", err)
		}
		jf, err := ParseJobFile(p, bytes.NewReader(text))
		if err != nil {
			return nil, err
		}
		if seen[jf.Name] {
			return nil, fmt.Errorf("job file %s: a job file named %q is already loaded", p, jf.Name)
		}
		seen[jf.Name] = true
		out = append(out, JobSource{Path: p, Text: text, Job: jf})
	}
	return out, nil
}

// JobWorkload runs a job file with the Go engine: files for read jobs are
// laid out untimed; the metrics are MiB/s, IOPS and latency percentiles.
func JobWorkload(src JobSource) Workload {
	jf := src.Job
	return Workload{
		Name:    "jobs/" + jf.Name,
		Desc:    fmt.Sprintf("Go engine: %s", describeJobs(jf)),
		Primary: MetricMiBs,
		Setup:   func(ctx context.Context, e *Env) error { return LayoutJobFile(ctx, jf, e.Dir) },
		Run: func(ctx context.Context, e *Env) (Metrics, error) {
			st, err := RunJobFile(ctx, jf, e.Dir)
			if err != nil {
				return nil, err
			}
			return st.Metrics(), nil
		},
	}
}

func describeJobs(jf *JobFile) string {
	s := ""
	for i, j := range jf.Jobs {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s bs=%s size=%s numjobs=%d", j.RW, fmtBytes(j.BS), fmtBytes(j.Size), j.NumJobs)
		if j.Fsync > 0 {
			s += fmt.Sprintf(" fsync=%d", j.Fsync)
		}
		if j.Direct {
			s += " direct=1"
		}
		if j.Runtime > 0 {
			s += " runtime=" + j.Runtime.String()
		}
	}
	return s
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "g"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "m"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// FioWorkload runs a job file through the real fio (fio lays out read
// files itself, outside its own numbers). The wall clock includes fio's
// start-up and layout; the metrics are fio's.
func FioWorkload(src JobSource, fioPath string) Workload {
	jf := src.Job
	return Workload{
		Name:    "fio/" + jf.Name,
		Desc:    "fio: " + describeJobs(jf),
		Primary: MetricMiBs,
		Setup: func(ctx context.Context, e *Env) error {
			// group_reporting makes fio report the file's jobs together,
			// as the Go engine does; a second [global] section is allowed.
			text := append([]byte("[global]\ngroup_reporting=1\n"), src.Text...)
			return os.WriteFile(filepath.Join(e.Dir, "job.fio"), text, 0o644)
		},
		Run: func(ctx context.Context, e *Env) (Metrics, error) {
			out, err := runCmd(ctx, e.Dir, nil, fioPath, "--output-format=json", "--directory="+e.Dir, filepath.Join(e.Dir, "job.fio"))
			if err != nil {
				return nil, err
			}
			return ParseFioJSON(out)
		},
	}
}

// FioPath finds fio on PATH.
func FioPath() (string, bool) {
	p, err := exec.LookPath("fio")
	return p, err == nil
}

type fioDir struct {
	IOBytes int64   `json:"io_bytes"`
	BW      float64 `json:"bw_bytes"`
	IOPS    float64 `json:"iops"`
	Clat    struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

type fioOutput struct {
	Jobs []struct {
		Name  string `json:"jobname"`
		Error int    `json:"error"`
		Read  fioDir `json:"read"`
		Write fioDir `json:"write"`
	} `json:"jobs"`
}

// ParseFioJSON reads fio --output-format=json output: throughput and IOPS
// summed over its job groups, latency percentiles (completion latency) the
// worst of them.
func ParseFioJSON(out []byte) (Metrics, error) {
	// fio may print warnings before the JSON document.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var fo fioOutput
	if err := json.Unmarshal(out, &fo); err != nil {
		return nil, fmt.Errorf("parse fio output: %w", err)
	}
	if len(fo.Jobs) == 0 {
		return nil, errors.New("parse fio output: no jobs")
	}
	m := Metrics{MetricMiBs: 0, MetricIOPS: 0, MetricP50: 0, MetricP99: 0, MetricP999: 0}
	for _, j := range fo.Jobs {
		if j.Error != 0 {
			return nil, fmt.Errorf("fio job %s failed with error %d", j.Name, j.Error)
		}
		for _, d := range []fioDir{j.Read, j.Write} {
			if d.IOBytes == 0 {
				continue
			}
			m[MetricMiBs] += d.BW / (1 << 20)
			m[MetricIOPS] += d.IOPS
			for key, name := range map[string]string{"50.000000": MetricP50, "99.000000": MetricP99, "99.900000": MetricP999} {
				m[name] = max(m[name], d.Clat.Percentile[key]/1000)
			}
		}
	}
	return m, nil
}
