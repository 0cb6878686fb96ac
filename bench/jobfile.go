package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The job-file format is a subset of fio's INI: a [global] section sets
// defaults for the job sections after it, every other [name] section is a
// job, and the keys are
//
//	rw       read, write, randread or randwrite
//	bs       block size: 4k, 1m, 512, ... (4k if unset)
//	size     bytes per job (required)
//	numjobs  parallel copies of the job, each with its own file (1 if unset)
//	fsync    fsync after every N writes (0: never)
//	direct   1 for O_DIRECT, 0 for buffered I/O
//	runtime  a cap on the job's duration: 10, 10s, 500ms, 2m
//	iodepth  only 1: the engine does synchronous I/O
//
// Lines starting with # or ; are comments. Anything else is an error that
// names its line, so that a job file the engine would misread is refused
// rather than run differently from fio.

// RW is a job's I/O pattern.
type RW string

// The I/O patterns.
const (
	Read      RW = "read"
	Write     RW = "write"
	RandRead  RW = "randread"
	RandWrite RW = "randwrite"
)

// IsWrite reports whether the pattern writes.
func (rw RW) IsWrite() bool { return rw == Write || rw == RandWrite }

// IsRandom reports whether the pattern picks random offsets.
func (rw RW) IsRandom() bool { return rw == RandRead || rw == RandWrite }

// Job is one job section, with the [global] defaults applied.
type Job struct {
	Name    string
	RW      RW
	BS      int64 // bytes per I/O
	Size    int64 // bytes per copy of the job
	NumJobs int
	Fsync   int // fsync every Fsync writes; 0 never
	Direct  bool
	Runtime time.Duration // 0: no cap
	IODepth int
}

// JobFile is a parsed job file.
type JobFile struct {
	Name string // the file's base name without .fio, for reports
	Jobs []Job
}

// ParseError is a job-file error with its line number.
type ParseError struct {
	File string
	Line int // 1-based; 0 for errors about the file as a whole
	Err  error
}

func (e *ParseError) Error() string {
	file := e.File
	if file == "" {
		file = "job file"
	}
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", file, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", file, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Limits keep a job file from asking for absurd resources.
const (
	maxNumJobs = 256
	maxBS      = 64 << 20
	maxSize    = 1 << 50
)

type section struct {
	name string
	line int
	job  Job
	set  map[string]bool
}

// ParseJobFile reads a job file; name is used in errors and reports.
func ParseJobFile(name string, r io.Reader) (*JobFile, error) {
	fail := func(line int, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Err: fmt.Errorf(format, args...)}
	}
	global := Job{BS: 4096, NumJobs: 1, IODepth: 1}
	globalSet := map[string]bool{}
	var cur *section
	var jobs []*section
	seen := map[string]int{}

	finish := func(s *section) error {
		if s == nil || s.name == "global" {
			return nil
		}
		if !s.set["rw"] {
			return fail(s.line, "job %q: no rw (want read, write, randread or randwrite)", s.name)
		}
		if !s.set["size"] {
			return fail(s.line, "job %q: no size", s.name)
		}
		if s.job.Size < s.job.BS {
			return fail(s.line, "job %q: size %d is smaller than bs %d", s.name, s.job.Size, s.job.BS)
		}
		jobs = append(jobs, s)
		return nil
	}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fail(lineNo, "section header %q has no closing ]", line)
			}
			sname := strings.TrimSpace(line[1 : len(line)-1])
			if sname == "" {
				return nil, fail(lineNo, "empty section name")
			}
			if strings.ContainsAny(sname, "[]/\\\x00") || !isPrintable(sname) {
				return nil, fail(lineNo, "section name %q: use letters, digits, '-', '_' and '.'", sname)
			}
			if err := finish(cur); err != nil {
				return nil, err
			}
			if sname == "global" {
				cur = &section{name: "global", line: lineNo}
				continue
			}
			if prev, ok := seen[sname]; ok {
				return nil, fail(lineNo, "job %q already defined on line %d", sname, prev)
			}
			seen[sname] = lineNo
			set := map[string]bool{}
			for k := range globalSet {
				set[k] = true
			}
			cur = &section{name: sname, line: lineNo, job: global, set: set}
			cur.job.Name = sname
			continue
		}
		if cur == nil {
			return nil, fail(lineNo, "%q is outside any section (start with [global] or [jobname])", line)
		}
		key, val, ok := strings.Cut(line, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok {
			return nil, fail(lineNo, "%q: want key=value", line)
		}
		if val == "" {
			return nil, fail(lineNo, "%s: empty value", key)
		}
		target := &cur.job
		if cur.name == "global" {
			target = &global
		}
		if err := setKey(target, key, val); err != nil {
			return nil, fail(lineNo, "%s=%s: %w", key, val, err)
		}
		if cur.name == "global" {
			globalSet[key] = true
		} else {
			cur.set[key] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{File: name, Line: lineNo + 1, Err: err}
	}
	if err := finish(cur); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, &ParseError{File: name, Err: errors.New("no jobs (a job is a section other than [global])")}
	}
	jf := &JobFile{Name: strings.TrimSuffix(baseName(name), ".fio")}
	for _, s := range jobs {
		jf.Jobs = append(jf.Jobs, s.job)
	}
	return jf, nil
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			if r != ' ' {
				return false
			}
		}
	}
	return true
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func setKey(j *Job, key, val string) error {
	switch key {
	case "rw":
		switch RW(val) {
		case Read, Write, RandRead, RandWrite:
			j.RW = RW(val)
		default:
			return errors.New("want read, write, randread or randwrite")
		}
	case "bs":
		n, err := parseBytes(val)
		if err != nil {
			return err
		}
		if n == 0 || n > maxBS {
			return fmt.Errorf("want a block size from 1 byte to %d MiB", maxBS>>20)
		}
		j.BS = n
	case "size":
		n, err := parseBytes(val)
		if err != nil {
			return err
		}
		if n == 0 || n > maxSize {
			return errors.New("want a size above 0 and at most 1 PiB")
		}
		j.Size = n
	case "numjobs":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > maxNumJobs {
			return fmt.Errorf("want a whole number from 1 to %d", maxNumJobs)
		}
		j.NumJobs = n
	case "fsync":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return errors.New("want a whole number of writes (0: never)")
		}
		j.Fsync = n
	case "direct":
		switch val {
		case "0":
			j.Direct = false
		case "1":
			j.Direct = true
		default:
			return errors.New("want 0 or 1")
		}
	case "runtime":
		d, err := parseRuntime(val)
		if err != nil {
			return err
		}
		j.Runtime = d
	case "iodepth":
		n, err := strconv.Atoi(val)
		if err != nil {
			return errors.New("want a whole number")
		}
		if n != 1 {
			return errors.New("only iodepth=1 is supported: the engine does synchronous I/O")
		}
		j.IODepth = n
	default:
		return fmt.Errorf("unknown key %q (supported: rw, bs, size, numjobs, fsync, direct, runtime, iodepth)", key)
	}
	return nil
}

// parseBytes reads fio-style sizes: 4096, 4k, 4K, 4KiB, 1m, 2g (powers of
// 1024, as fio's default kb_base).
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(s)
	t = strings.TrimSuffix(t, "b")
	t = strings.TrimSuffix(t, "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		case 'p':
			mult = 1 << 50
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	if t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// parseRuntime reads fio-style durations: seconds by default, or with an
// ms, s, m or h suffix.
func parseRuntime(s string) (time.Duration, error) {
	t := strings.ToLower(s)
	unit := time.Second
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}} {
		if strings.HasSuffix(t, u.suffix) {
			t, unit = strings.TrimSuffix(t, u.suffix), u.d
			break
		}
	}
	if t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("invalid duration %q (want seconds, or a number with ms, s, m or h)", s)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > int64(24*time.Hour/unit) {
		return 0, fmt.Errorf("invalid duration %q (want seconds, or a number with ms, s, m or h, at most a day)", s)
	}
	return time.Duration(n) * unit, nil
}

// String formats the job file in the same format; ParseJobFile reads it back
// to an equal value.
func (jf *JobFile) String() string {
	var b strings.Builder
	for i, j := range jf.Jobs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s]\nrw=%s\nbs=%d\nsize=%d\nnumjobs=%d\n", j.Name, j.RW, j.BS, j.Size, j.NumJobs)
		if j.Fsync > 0 {
			fmt.Fprintf(&b, "fsync=%d\n", j.Fsync)
		}
		if j.Direct {
			b.WriteString("direct=1\n")
		}
		if j.Runtime > 0 {
			fmt.Fprintf(&b, "runtime=%dms\n", j.Runtime/time.Millisecond)
		}
		fmt.Fprintf(&b, "iodepth=%d\n", j.IODepth)
	}
	return b.String()
}

// TotalBytes is the data the job file moves if no runtime cap cuts it short.
func (jf *JobFile) TotalBytes() int64 {
	var n int64
	for _, j := range jf.Jobs {
		n += j.Size / j.BS * j.BS * int64(j.NumJobs)
	}
	return n
}
