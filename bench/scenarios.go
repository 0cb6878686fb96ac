package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/tailbuf"
)

// ScenarioParams size the scale scenarios.
type ScenarioParams struct {
	// Scale multiplies every size (1: the full sizes; 0.01 for a quick
	// look).
	Scale float64
	// Files and Bytes size the million-files workspace before scaling.
	Files int
	Bytes int64
}

// DefaultScenarioParams are the full sizes.
func DefaultScenarioParams() ScenarioParams {
	return ScenarioParams{Scale: 1, Files: 1_000_000, Bytes: 20 << 30}
}

func (p ScenarioParams) scaled(n int64) int64 { return max(int64(float64(n)*p.Scale), 1) }

// ScenarioEnv is what a scenario works with.
type ScenarioEnv struct {
	Root   string // a scratch directory on ext4 for its workspaces
	Inputs *Inputs
	Params ScenarioParams
	Log    *slog.Logger
	// Fuse are the mount options of the workspaces the scenario mounts.
	Fuse fusefs.Options
}

// Scenario is a scale test, run only when asked for: it reports values and
// pass/fail checks rather than timing a workload on every target.
type Scenario struct {
	Name  string
	Desc  string
	Needs []string
	Run   func(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error
}

// Value is one number a scenario reports.
type Value struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Check is a requirement a scenario tests.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// ScenarioResult is what a scenario found.
type ScenarioResult struct {
	Name    string  `json:"name"`
	Desc    string  `json:"desc"`
	Values  []Value `json:"values"`
	Checks  []Check `json:"checks,omitempty"`
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

func (r *ScenarioResult) add(name string, v float64, unit string) {
	r.Values = append(r.Values, Value{Name: name, Value: v, Unit: unit})
}

func (r *ScenarioResult) check(name string, ok bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// Scenarios lists the scale scenarios.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "rss-4g", Desc: "peak RSS of the in-process daemon while one process writes a 4 GiB file of incompressible data", Needs: []string{NeedRandOdd}, Run: scenarioRSS4G},
		{Name: "rss-8x512m", Desc: "peak RSS of the in-process daemon while 8 processes write 512 MiB each in parallel", Needs: []string{NeedRandOdd}, Run: scenarioRSS8x512},
		{Name: "write-amp", Desc: "bytes written to disk and store growth per logical byte for a 1 GiB sequential write of incompressible data", Needs: []string{NeedRandOdd}, Run: scenarioWriteAmp},
		{Name: "grep", Desc: "the file API's grep against GNU grep -rn over a few thousand Go source files, mounted and on ext4, warm and cold", Needs: []string{NeedSrcTar}, Run: scenarioGrep},
		{Name: "snapshots", Desc: "build workspaces of 1,000, 100,000 and 1,000,000 files (--files) through the fs API, then time snapshot create (< 10 ms, within 1.5x), diff and offline restore of 100 changed files in each", Run: scenarioSnapshots},
		{Name: "million-files", Desc: "build a workspace of 1,000,000 files and 20 GiB through the fs API, then time fs.Open + fusefs.Mount (< 1 s) and stat latency against a 1,000-file workspace", Run: scenarioMillionFiles},
	}
}

const mib = 1 << 20

// readStatus reads the "Name:   123 kB" fields of /proc/self/status, in
// bytes.
func readStatus() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/status: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[name] = v << 10
		}
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, errors.New("/proc/self/status has no VmRSS")
	}
	return out, nil
}

// rssSampler samples this process's RSS until stopped.
type rssSampler struct {
	stop    chan struct{}
	done    chan struct{}
	peak    map[string]int64 // bytes: VmRSS, RssAnon, RssFile
	samples int
	err     error
}

func startRSS(interval time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{}), peak: map[string]int64{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			st, err := readStatus()
			if err != nil {
				s.err = err
				return
			}
			// The whole RSS, its anonymous part (heap, buffers) and its
			// file-backed part (chiefly the store's mmap).
			for _, f := range []string{"VmRSS", "RssAnon", "RssFile"} {
				s.peak[f] = max(s.peak[f], st[f])
			}
			s.samples++
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peaks in bytes.
func (s *rssSampler) Stop() (map[string]int64, error) {
	close(s.stop)
	<-s.done
	return s.peak, s.err
}

// writerScript writes reps copies of the odd-sized random file to name,
// after skip bytes of it, so that no 1 MiB chunk repeats.
func writerScript(in *Inputs, name string, reps int64, skip int64) string {
	return fmt.Sprintf(`{ tail -c +%d %s; for ((i = 0; i < %d; i++)); do cat %s; done; } > %s`, skip+1, in.RandOdd, reps, in.RandOdd, name)
}

func freshMount(ctx context.Context, s *ScenarioEnv) (*Target, error) {
	return ComputerfsTarget(s.Root, ComputerfsOptions{Logger: s.Log})
}

func rssScenario(ctx context.Context, s *ScenarioEnv, r *ScenarioResult, procs int, perProc int64) error {
	t, err := freshMount(ctx, s)
	if err != nil {
		return err
	}
	defer t.Close()
	reps := max((s.Params.scaled(perProc)+RandOddSize-1)/RandOddSize, 1)
	before, err := readStatus()
	if err != nil {
		return err
	}
	var script strings.Builder
	script.WriteString("pids=()\n")
	for p := range procs {
		fmt.Fprintf(&script, "%s &\npids+=($!)\n", writerScript(s.Inputs, fmt.Sprintf("f%d", p), reps-1, int64(p)*12345))
	}
	script.WriteString(`for p in "${pids[@]}"; do wait "$p" || exit 1; done` + "\n")
	sampler := startRSS(50 * time.Millisecond)
	start := time.Now()
	runErr := sh(ctx, t.Dir, script.String())
	elapsed := time.Since(start)
	peak, sErr := sampler.Stop()
	if err := errors.Join(runErr, sErr); err != nil {
		return err
	}
	var total int64
	for p := range procs {
		st, err := os.Stat(filepath.Join(t.Dir, fmt.Sprintf("f%d", p)))
		if err != nil {
			return err
		}
		want := reps*RandOddSize - int64(p)*12345
		if st.Size() != want {
			return fmt.Errorf("f%d is %d bytes, want %d", p, st.Size(), want)
		}
		total += st.Size()
	}
	r.add("writers", float64(procs), "")
	r.add("written", float64(total)/mib, "MiB")
	r.add("time", elapsed.Seconds(), "s")
	r.add("throughput", float64(total)/mib/elapsed.Seconds(), "MiB/s")
	r.add("RSS before", float64(before["VmRSS"])/mib, "MiB")
	r.add("peak RSS (VmRSS)", float64(peak["VmRSS"])/mib, "MiB")
	r.add("peak RSS growth", float64(peak["VmRSS"]-before["VmRSS"])/mib, "MiB")
	r.add("peak anonymous RSS (RssAnon: heap, buffers)", float64(peak["RssAnon"])/mib, "MiB")
	r.add("peak file RSS (RssFile: the store's mmap)", float64(peak["RssFile"])/mib, "MiB")
	r.add("RSS samples (every 50 ms)", float64(sampler.samples), "")
	return nil
}

func scenarioRSS4G(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error {
	return rssScenario(ctx, s, r, 1, 4<<30)
}

func scenarioRSS8x512(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error {
	return rssScenario(ctx, s, r, 8, 512<<20)
}

// readIOWriteBytes reads write_bytes of /proc/PID/io ("self" for this
// process): the bytes the process caused to be sent to storage. A
// process's count includes the children it has reaped.
func readIOWriteBytes(pid string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return 0, fmt.Errorf("read /proc/%s/io: %w", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%s/io has no write_bytes", pid)
}

// runCountingWrites runs a bash script and returns the write_bytes of the
// script and its children, read before it exits: once reaped, a child's
// count is added to this process's, and must be taken out again to leave
// the daemon's own writes.
func runCountingWrites(ctx context.Context, dir, script string) (int64, error) {
	cmd := commandIn(ctx, dir, "bash", "-c", "set -e\n"+script+"\necho done\nread -r _ || true\n")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	stderr := tailbuf.New(2048)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start bash: %w", err)
	}
	line, rerr := bufio.NewReader(stdout).ReadString('\n')
	var n int64
	if rerr == nil && line == "done\n" {
		n, rerr = readIOWriteBytes(strconv.Itoa(cmd.Process.Pid))
	} else if rerr == nil {
		rerr = fmt.Errorf("unexpected output %q", line)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("bash -c %q: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	if rerr != nil {
		return 0, fmt.Errorf("bash -c %q: %w", script, rerr)
	}
	return n, nil
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func scenarioWriteAmp(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error {
	t, err := freshMount(ctx, s)
	if err != nil {
		return err
	}
	defer t.Close()
	if err := t.FS.Sync(ctx); err != nil {
		return err
	}
	syscall.Sync()
	wsBefore, err := fileSize(t.Workspace)
	if err != nil {
		return err
	}
	ioBefore, err := readIOWriteBytes("self")
	if err != nil {
		return err
	}
	reps := max((s.Params.scaled(1<<30)+RandOddSize-1)/RandOddSize, 1)
	start := time.Now()
	writer, err := runCountingWrites(ctx, t.Dir, writerScript(s.Inputs, "f", reps-1, 0))
	if err != nil {
		return err
	}
	if err := t.FS.Sync(ctx); err != nil {
		return fmt.Errorf("sync workspace: %w", err)
	}
	elapsed := time.Since(start)
	ioAfter, err := readIOWriteBytes("self")
	if err != nil {
		return err
	}
	wsAfter, err := fileSize(t.Workspace)
	if err != nil {
		return err
	}
	logical, err := fileSize(filepath.Join(t.Dir, "f"))
	if err != nil {
		return err
	}
	disk := ioAfter - ioBefore - writer
	growth := wsAfter - wsBefore
	r.add("logical bytes", float64(logical)/mib, "MiB")
	r.add("written to disk by the daemon (/proc/self/io write_bytes)", float64(disk)/mib, "MiB")
	r.add("write_bytes of the writer processes (excluded)", float64(writer)/mib, "MiB")
	r.add("write amplification", float64(disk)/float64(logical), "x")
	r.add("store file growth", float64(growth)/mib, "MiB")
	r.add("store growth per logical byte", float64(growth)/float64(logical), "x")
	r.add("time (write + sync)", elapsed.Seconds(), "s")
	return nil
}

// buildWorkspace makes a workspace of files small files (1000 to a
// directory) and bytes of incompressible data in files of at most 1 GiB,
// through the fs API.
func buildWorkspace(ctx context.Context, path string, files int, bytes int64, log *slog.Logger) error {
	limit := max(uint64(bytes)*2, fs.DefaultLimit)
	f, err := fs.Open(path, fs.Options{Limit: limit, Logger: log})
	if err != nil {
		return err
	}
	c := fs.Caller{}
	var dir fs.Ino
	for i := range files {
		if i%1000 == 0 {
			if err := ctx.Err(); err != nil {
				f.Close()
				return err
			}
			a, err := f.Create(c, fs.RootIno, fmt.Sprintf("d%04d", i/1000), fs.NewNode{Mode: syscall.S_IFDIR | 0o755})
			if err != nil {
				f.Close()
				return fmt.Errorf("mkdir: %w", err)
			}
			dir = a.Ino
		}
		if err := writeFile(ctx, f, dir, fmt.Sprintf("f%03d", i%1000), []byte(fmt.Sprintf("file %d\n", i))); err != nil {
			f.Close()
			return err
		}
	}
	const bigMax = 1 << 30
	nBig := (bytes + bigMax - 1) / bigMax
	src := newDataSource(1<<20, 99)
	for b := range nBig {
		size := bytes / nBig
		if b == nBig-1 {
			size = bytes - size*(nBig-1)
		}
		a, err := f.Create(c, fs.RootIno, fmt.Sprintf("big%02d", b), fs.NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			f.Close()
			return fmt.Errorf("create big file: %w", err)
		}
		if _, err := f.Open(a.Ino); err != nil {
			f.Close()
			return err
		}
		for off := int64(0); off < size; off += 1 << 20 {
			data := src.next()[:min(1<<20, size-off)]
			if _, err := f.Write(ctx, a.Ino, off, data, false); err != nil {
				f.Release(a.Ino)
				f.Close()
				return fmt.Errorf("write big file: %w", err)
			}
		}
		f.Release(a.Ino)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func writeFile(ctx context.Context, f *fs.FS, dir fs.Ino, name string, data []byte) error {
	a, err := f.Create(fs.Caller{}, dir, name, fs.NewNode{Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.Open(a.Ino); err != nil {
		return err
	}
	defer f.Release(a.Ino)
	if _, err := f.Write(ctx, a.Ino, 0, data, false); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

type mountTiming struct {
	open, mount time.Duration
	statP50     time.Duration
	statP99     time.Duration
	statMean    time.Duration
	stats       int
}

// timeMount drops the kernel's caches, opens and mounts a built workspace
// and stats random paths of it through the mount: cold, the store's pages
// read from the disk. Then it mounts the same open workspace again and
// stats the same paths: warm, as a daemon that has run for a while sees
// them (the kernel forgets its names and attributes at unmount, so every
// stat is a LOOKUP again, but the store's pages are cached and mapped).
func timeMount(ctx context.Context, s *ScenarioEnv, ws string, files int) (cold, warm mountTiming, err error) {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return cold, warm, fmt.Errorf("drop caches: %w", err)
	}
	t0 := time.Now()
	f, err := fs.Open(ws, fs.Options{Logger: s.Log})
	if err != nil {
		return cold, warm, err
	}
	defer f.Close()
	cold.open = time.Since(t0)
	if cold.mount, err = statThroughMount(ctx, s, f, files, &cold); err != nil {
		return cold, warm, err
	}
	_, err = statThroughMount(ctx, s, f, files, &warm)
	return cold, warm, err
}

// statThroughMount mounts f, stats random paths of it (the same ones for
// the same number of files) into mt, and unmounts. It returns how long the
// mount took.
func statThroughMount(ctx context.Context, s *ScenarioEnv, f *fs.FS, files int, mt *mountTiming) (time.Duration, error) {
	mnt, err := os.MkdirTemp(s.Root, "mnt-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(mnt)
	t0 := time.Now()
	srv, err := fusefs.Mount(f, mnt, s.Fuse)
	if err != nil {
		return 0, err
	}
	mount := time.Since(t0)
	defer srv.Unmount()
	// Distinct paths: a path stat'ed twice would be answered from the
	// kernel's cache the second time, without a LOOKUP.
	r := rand.New(rand.NewPCG(uint64(files), 5))
	n := min(files, 2000)
	picked := make(map[int]bool, n)
	lat := make([]time.Duration, 0, n)
	var sum time.Duration
	for range n {
		if err := ctx.Err(); err != nil {
			return mount, err
		}
		i := r.IntN(files)
		for picked[i] {
			i = (i + 1) % files
		}
		picked[i] = true
		p := filepath.Join(mnt, fmt.Sprintf("d%04d/f%03d", i/1000, i%1000))
		t := time.Now()
		if _, err := os.Stat(p); err != nil {
			return mount, err
		}
		d := time.Since(t)
		lat = append(lat, d)
		sum += d
	}
	slices.Sort(lat)
	mt.statP50, mt.statP99, mt.stats = Percentile(lat, 50), Percentile(lat, 99), n
	mt.statMean = sum / time.Duration(n)
	return mount, nil
}

func scenarioMillionFiles(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error {
	files := int(s.Params.scaled(int64(s.Params.Files)))
	bytes := s.Params.scaled(s.Params.Bytes)
	dir, err := os.MkdirTemp(s.Root, "million-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bigWS, smallWS := filepath.Join(dir, "big.cfs"), filepath.Join(dir, "small.cfs")
	smallFiles := 1000
	smallBytes := int64(float64(bytes) * float64(smallFiles) / float64(max(files, 1)))

	start := time.Now()
	if err := buildWorkspace(ctx, bigWS, files, bytes, s.Log); err != nil {
		return fmt.Errorf("build %d-file workspace: %w", files, err)
	}
	build := time.Since(start)
	if err := buildWorkspace(ctx, smallWS, smallFiles, smallBytes, s.Log); err != nil {
		return fmt.Errorf("build %d-file workspace: %w", smallFiles, err)
	}
	size, err := fileSize(bigWS)
	if err != nil {
		return err
	}
	big, bigWarm, err := timeMount(ctx, s, bigWS, files)
	if err != nil {
		return fmt.Errorf("mount %d-file workspace: %w", files, err)
	}
	small, smallWarm, err := timeMount(ctx, s, smallWS, smallFiles)
	if err != nil {
		return fmt.Errorf("mount %d-file workspace: %w", smallFiles, err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	r.add("files", float64(files), "")
	r.add("data", float64(bytes)/mib, "MiB")
	r.add("store file", float64(size)/mib, "MiB")
	r.add("build time (fs API)", build.Seconds(), "s")
	r.add("fs.Open (cold)", ms(big.open), "ms")
	r.add("fusefs.Mount (cold)", ms(big.mount), "ms")
	r.add("open + mount (cold)", ms(big.open+big.mount), "ms")
	r.add("open + mount, 1000-file workspace (cold)", ms(small.open+small.mount), "ms")
	r.add(fmt.Sprintf("stat p50, cold (%d random paths)", big.stats), us(big.statP50), "µs")
	r.add("stat p99, cold", us(big.statP99), "µs")
	r.add(fmt.Sprintf("stat p50, cold, 1000-file workspace (%d paths)", small.stats), us(small.statP50), "µs")
	r.add("stat p50 ratio to the 1000-file workspace, cold", float64(big.statP50)/float64(max(small.statP50, 1)), "x")
	r.add("stat p50, warm", us(bigWarm.statP50), "µs")
	r.add("stat p99, warm", us(bigWarm.statP99), "µs")
	r.add("stat p50, warm, 1000-file workspace", us(smallWarm.statP50), "µs")
	r.add("stat p50 ratio to the 1000-file workspace, warm", float64(bigWarm.statP50)/float64(max(smallWarm.statP50, 1)), "x")
	warmRatio := float64(bigWarm.statP50) / float64(max(smallWarm.statP50, 1))
	r.check("stat p50 within 2x of a 1000-file workspace, warm", warmRatio <= 2, "%.2fx", warmRatio)
	r.check("open + mount < 1 s", big.open+big.mount < time.Second, "%.0f ms for %d files and %.0f MiB", ms(big.open+big.mount), files, float64(bytes)/mib)
	return nil
}
