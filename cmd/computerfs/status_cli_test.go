package main

// Tests of a workspace served by a daemon that is asked how it is doing:
// status, the maintenance commands through the daemon, and the metrics
// endpoint, each against a real daemon and mount.

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// statusOf runs status --json and decodes it.
func statusOf(t *testing.T, home, arg string) statusJSON {
	t.Helper()
	r := mustCLI(t, home, "status", "--json", arg)
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json does not parse: %v\n%v", err, r)
	}
	return st
}

// scrape GETs the metrics at addr and parses the text exposition format.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return fams
}

// sample is the value of a series of the scrape (see metrics.Sample):
// labels are name, value pairs.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return metrics.Sample(slices.Collect(maps.Values(fams)), name, want)
}

// TestStatusAndMetrics serves a mount with metrics, works on it through
// the mount and an exec, and checks what status and a real scrape tell;
// after umount, nothing of the daemon is left.
func TestStatusAndMetrics(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	pid := runDaemon(t, home, ws, mnt, "--metrics", "127.0.0.1:0")
	data := textData(3 << 20)
	writeFile(t, filepath.Join(mnt, "text"), data)
	f, err := os.OpenFile(filepath.Join(mnt, "text"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustCLI(t, home, "exec", "-w", ws, "-b", "shell", "--", "echo made > /d/by-exec; cat /d/by-exec")
	if r.stdout != "made\n" {
		t.Fatalf("exec: %v", r)
	}

	absWS, _ := filepath.Abs(ws)
	absMnt, _ := filepath.Abs(mnt)
	for _, arg := range []string{ws, mnt} {
		st := statusOf(t, home, arg)
		if st.Pid != int64(pid) || st.Mountpoint != absMnt || st.Store != absWS || st.Socket != absWS+".sock" {
			t.Errorf("status %s: pid %d, mountpoint %q, store %q, socket %q; want %d, %q, %q", arg, st.Pid, st.Mountpoint, st.Store, st.Socket, pid, absMnt, absWS)
		}
		if st.UptimeSeconds <= 0 || st.UptimeSeconds > 120 || st.StoreFileBytes <= 0 || st.StoreDiskBytes <= 0 {
			t.Errorf("status: uptime %v s, store %d bytes, %d on disk", st.UptimeSeconds, st.StoreFileBytes, st.StoreDiskBytes)
		}
		if st.Chunks.Chunks < 3 || st.Chunks.LogicalBytes < 3<<20 || st.Chunks.CompressionRatio <= 2 || st.LimitBytes != 10<<30 || st.UsedBytes < 3<<20 {
			t.Errorf("status: chunks %+v, limit %d, used %d", st.Chunks, st.LimitBytes, st.UsedBytes)
		}
		if st.Commit.IntervalMs != 100 || st.Commit.Fsyncs < 1 || st.Commit.FsyncMeanMs <= 0 || st.Commit.LastFsyncMs <= 0 || st.Commit.StorePageWrites <= 0 || st.Commit.Commits < 1 || st.Commit.WriteMeanMs <= 0 {
			t.Errorf("status: commit %+v", st.Commit)
		}
		if st.Fuse == nil || st.Fuse.Requests == 0 || st.Fuse.WrittenBytes != uint64(len(data)) {
			t.Errorf("status: fuse %+v", st.Fuse)
		}
		if !strings.HasPrefix(st.MetricsAddr, "127.0.0.1:") {
			t.Errorf("status: metrics at %q", st.MetricsAddr)
		}
		var shell *backendJSON
		for i := range st.Backends {
			if st.Backends[i].ID == "shell" {
				shell = &st.Backends[i]
			}
		}
		if shell == nil || shell.State != "ready" || shell.Pid <= 0 || !processAlive(int(shell.Pid)) || shell.Execs != 1 || shell.Restarts != 0 {
			t.Errorf("status: backends %+v", st.Backends)
		}
		if len(st.Execs) != 1 {
			t.Fatalf("status: %d execs, want 1", len(st.Execs))
		}
		var rec map[string]any
		json.Unmarshal(st.Execs[0], &rec)
		changed, _ := rec["changed"].([]any)
		if rec["backend"] != "shell" || rec["exit"] != float64(0) || len(changed) == 0 || changed[len(changed)-1] != "/d/by-exec" {
			t.Errorf("status: the exec just run: %v", rec)
		}
	}
	r = mustCLI(t, home, "status", mnt)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^daemon +pid \d+, up `), regexp.MustCompile(`(?m)^mountpoint +` + regexp.QuoteMeta(absMnt) + `$`),
		regexp.MustCompile(`(?m)^chunks +\d+: 3\.0 MiB logical`), regexp.MustCompile(`(?m)^commit +every 100ms while changes wait \(an fsync asks at once\); \d+ fsyncs`),
		regexp.MustCompile(`(?m)^  shell +ready +\d+ +1 +0`), regexp.MustCompile(`(?m)^  \S+ \S+ +shell +0 +\S+ +\d+ +x`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("status lacks %v:\n%s", want, r.stdout)
		}
	}

	st := statusOf(t, home, ws)
	fams := scrape(t, st.MetricsAddr)
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"computerfs_fuse_request_duration_seconds", []string{"op", "create"}, 1},
		{"computerfs_fuse_request_duration_seconds", []string{"op", "write"}, 3},
		{"computerfs_fuse_request_duration_seconds", []string{"op", "fsync"}, 1},
		{"computerfs_fuse_request_duration_seconds", []string{"op", "mkdir"}, 1},
		{"computerfs_fuse_written_bytes_total", nil, float64(len(data))},
		{"computerfs_exec_duration_seconds", []string{"backend", "shell", "exit", "ok"}, 1},
		{"computerfs_backend_ready", []string{"backend", "shell"}, 1},
		{"computerfs_store_chunks", nil, 3},
		{"computerfs_store_compression_ratio", nil, 2},
		{"computerfs_store_dedup_ratio", nil, 1},
		{"computerfs_limit_bytes", nil, 10 << 30},
		{"computerfs_store_commit_write_seconds_total", nil, 1e-9},
		{"computerfs_store_commits_total", nil, 1},
		{"go_goroutines", nil, 1},
	} {
		v, ok := sample(fams, c.name, c.labels...)
		if !ok || v < c.min {
			t.Errorf("metric %s%v = %v (present %v), want at least %v", c.name, c.labels, v, ok, c.min)
		}
	}
	if _, ok := sample(fams, "computerfs_backend_restarts_total", "backend", "shell"); !ok {
		t.Errorf("no restarts counter of the shell backend")
	}
	// pprof is off unless asked.
	if resp, err := http.Get("http://" + st.MetricsAddr + "/debug/pprof/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("pprof without --pprof: %v %v", resp.Status, err)
	} else {
		resp.Body.Close()
	}

	// umount: the daemon exits within 5 s, its listener and socket with it.
	mustCLI(t, home, "umount", mnt)
	if !waitGone(pid, 5*time.Second) {
		t.Fatalf("daemon %d still running 5 s after umount", pid)
	}
	if c, err := net.DialTimeout("tcp", st.MetricsAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("the metrics listener %s outlived the daemon", st.MetricsAddr)
	}
	if _, err := os.Lstat(absWS + ".sock"); !os.IsNotExist(err) {
		t.Errorf("the control socket outlived the daemon: %v", err)
	}
	fsckClean(t, home, ws)
}

// TestStatusNotServed: without a daemon, status says so on one line, and
// how to start one.
func TestStatusNotServed(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	makeStore(t, home, ws, mnt, map[string][]byte{"f": []byte("x")})
	for _, tc := range []struct {
		name string
		arg  string
		want []string
		code int
	}{
		{"store not served", ws, []string{ws + " is not served", "computerfs mount " + ws + " MOUNTPOINT --daemon"}, 1},
		{"no store", filepath.Join(filepath.Dir(ws), "none.cfs"), []string{"no computerfs workspace at " + filepath.Join(filepath.Dir(ws), "none.cfs") + " (no such file)", "computerfs init"}, 1},
		{"a directory, not a mount", mnt, []string{"no computerfs workspace is mounted there"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, home, "status", tc.arg)
			if r.code != tc.code || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stderr, "rpc error") {
				t.Errorf("want exit %d and one line: %v", tc.code, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q: %v", w, r)
				}
			}
		})
	}
}

// TestMetricsFlags: an address that is not loopback, unless forced, and
// --pprof or the force without --metrics, are refused before anything
// is mounted.
func TestMetricsFlags(t *testing.T) {
	home, ws, mnt := tempWorkspace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics", "0.0.0.0:9464"}, "not a loopback address"},
		{[]string{"--metrics", ":9464"}, "not a loopback address"},
		{[]string{"--metrics", "127.0.0.1"}, "want HOST:PORT"},
		{[]string{"--pprof"}, "need --metrics ADDR"},
		{[]string{"--metrics-any-address"}, "need --metrics ADDR"},
	} {
		for _, cmd := range [][]string{{"mount", ws, mnt}, {"serve", ws}} {
			args := append(append([]string(nil), cmd...), tc.args...)
			r := cli(t, home, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s: want exit 2 saying %q, got %v", strings.Join(args, " "), tc.want, r)
			}
		}
	}
	if isMounted(mnt) {
		t.Errorf("a refused mount mounted %s", mnt)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("a refused mount made the store: %v", err)
	}
}

// TestStatusServe: a daemon without a mount has no mountpoint and no
// FUSE traffic; the maintenance commands work through it too.
func TestStatusServe(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	d := startServe(t, home, ws)
	fsMust(t, home, ws, "some text\n", "write", "-p", "/a/b.txt")
	st := statusOf(t, home, ws)
	if st.Pid != int64(d.pid) || st.Mountpoint != "" || st.Fuse != nil || st.Chunks.LogicalBytes > 10 {
		t.Errorf("status of serve: pid %d (want %d), mountpoint %q, fuse %+v, chunks %+v", st.Pid, d.pid, st.Mountpoint, st.Fuse, st.Chunks)
	}
	r := mustCLI(t, home, "status", ws)
	if !strings.Contains(r.stdout, "none (served without a mount: the file API only)") || strings.Contains(r.stdout, "\nfuse ") {
		t.Errorf("status of serve:\n%s", r.stdout)
	}
	if r := mustCLI(t, home, "stats", ws); !strings.Contains(r.stdout, "file size      10 B") {
		t.Errorf("stats through serve:\n%s", r.stdout)
	}
	d.stop(t)
	fsckClean(t, home, ws)
}

// TestMaintenanceLive runs stats, fsck, gc and limit on a mounted
// workspace, through its daemon, and again on the same store unmounted:
// the outputs must be the same.
func TestMaintenanceLive(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	pid := runDaemon(t, home, ws, mnt)
	data := randomData(2<<20, 9)
	writeFile(t, filepath.Join(mnt, "a"), data)
	writeFile(t, filepath.Join(mnt, "b"), data) // deduplicated
	writeFile(t, filepath.Join(mnt, "text"), textData(1<<20+5))
	// No fsync: the daemon commits what is pending first.

	cmds := [][]string{
		{"stats", ws}, {"stats", "--json", ws}, {"fsck", ws}, {"fsck", "--json", ws},
		{"gc", ws}, {"gc", "--json", ws}, {"limit", ws}, {"limit", "--json", ws},
		{"limit", ws, "1G"}, {"limit", ws, "2G"},
	}
	online := map[string]result{}
	for _, args := range cmds {
		online[strings.Join(args, " ")] = mustCLI(t, home, args...)
	}
	// A mountpoint names its store.
	if r, w := mustCLI(t, home, "stats", mnt), mustCLI(t, home, "stats", ws); r.stdout != w.stdout {
		t.Errorf("stats of the mountpoint:\n%s\nof the store:\n%s", r.stdout, w.stdout)
	}
	if got := strings.TrimSpace(online["limit "+ws+" 1G"].stdout); got != "limit 1.0 GiB, used 3.0 MiB" {
		t.Errorf("limit 1G through the daemon: %q", got)
	}
	if total, _ := statfsBytes(t, mnt); total != 2<<30 {
		t.Errorf("statfs after limit 2G through the daemon: %d bytes", total)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fsck", "--repair", ws}, 1, "--repair needs the store closed"},
		{[]string{"limit", ws, "1M"}, 2, "below the 3.0 MiB the workspace already stores"},
		{[]string{"limit", ws, "lots"}, 2, "invalid size"},
	} {
		r := cli(t, home, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "rpc error") {
			t.Errorf("%s on a mounted workspace: want exit %d saying %q, got %v", strings.Join(tc.args, " "), tc.code, tc.want, r)
		}
	}
	mustCLI(t, home, "limit", ws, "10G")
	mustCLI(t, home, "umount", mnt)
	if !waitGone(pid, 5*time.Second) {
		t.Fatalf("daemon %d still running 5 s after umount", pid)
	}
	mustCLI(t, home, "limit", ws, "10G")
	for _, args := range cmds {
		key := strings.Join(args, " ")
		off := mustCLI(t, home, args...)
		if off.stdout != online[key].stdout {
			t.Errorf("%s: through the daemon:\n%s\noffline:\n%s", key, online[key].stdout, off.stdout)
		}
	}
}
