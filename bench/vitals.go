package bench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fusefs"
)

// Vitals: what one timed step cost the machine and this process, kept
// with each sample (the JSON report's per-run metrics) so that a slow
// round can be told apart from a slow build: was this process (which
// serves the computerfs and nopt1m mounts) short of CPU, did it read more
// than the file, was the disk busy with it or with others, did the
// kernel send small READs or few at a time. Read from /proc and
// /sys at the step's start and end: no sampling thread.
const (
	// MetricProcCPU is the CPU time of this process during the step, in
	// ms: the daemon's for the in-process targets (computerfs, nopt1m),
	// nearly nothing for the others (the commands run in children).
	MetricProcCPU = "proc_cpu_ms"
	// MetricProcRead is what this process read from block devices
	// (/proc/self/io read_bytes), in MiB.
	MetricProcRead = "proc_read_mib"
	// MetricHostBusy is the share of both CPUs' time spent running
	// anything (not idle, not waiting on I/O), in percent, machine-wide.
	MetricHostBusy = "host_busy_pct"
	// MetricLoad is the one-minute load average at the step's start.
	MetricLoad = "load1"
	// MetricDiskBusy is the share of the step the disks had a request in
	// flight, in percent; MetricDiskRead what they read (everyone's),
	// in MiB; MetricDiskQueue their mean number of requests in flight.
	MetricDiskBusy  = "disk_busy_pct"
	MetricDiskRead  = "disk_read_mib"
	MetricDiskQueue = "disk_queue"
	// The computerfs mount's READs during the step: how many, their mean
	// size in KiB, the mean time the daemon took to answer one in µs, and
	// how many it was answering at once on average (their summed time
	// over the step's).
	MetricFuseReads  = "fuse_reads"
	MetricFuseReadKB = "fuse_read_kib"
	MetricFuseReadUS = "fuse_read_us"
	MetricFuseReadIn = "fuse_read_inflight"
)

// vitals is one reading of the counters.
type vitals struct {
	at        time.Time
	cpu       time.Duration // this process, user + system
	readBytes int64         // this process, from block devices
	busy      uint64        // jiffies, all CPUs: not idle, not iowait
	total     uint64        // jiffies, all CPUs
	load      float64
	diskTicks uint64 // ms with requests in flight, summed over disks
	diskSect  uint64 // sectors read
	diskQueue uint64 // ms of requests in flight, weighted
	reads     readCounts
}

func readVitals(obs *readObserver) vitals {
	v := vitals{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		v.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "read_bytes: "); ok {
				v.readBytes, _ = strconv.ParseInt(rest, 10, 64)
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		if len(f) > 5 && f[0] == "cpu" {
			// user nice system idle iowait irq softirq steal (guest
			// time is counted in user already)
			for i, s := range f[1:min(len(f), 9)] {
				n, _ := strconv.ParseUint(s, 10, 64)
				v.total += n
				if i != 3 && i != 4 {
					v.busy += n
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 0 {
			v.load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if f, err := os.Open("/proc/diskstats"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			d := strings.Fields(sc.Text())
			if len(d) < 14 || !isDisk(d[2]) {
				continue
			}
			sect, _ := strconv.ParseUint(d[5], 10, 64)
			ticks, _ := strconv.ParseUint(d[12], 10, 64)
			queue, _ := strconv.ParseUint(d[13], 10, 64)
			v.diskSect += sect
			v.diskTicks += ticks
			v.diskQueue += queue
		}
		f.Close()
	}
	if obs != nil {
		v.reads = obs.load()
	}
	return v
}

// isDisk reports whether a block device is a disk (not a partition, a
// loop or zram device): one with a device behind it in /sys/block.
func isDisk(name string) bool {
	_, err := os.Stat("/sys/block/" + name + "/device")
	return err == nil
}

// metrics are what happened between a (the start) and b (the end).
func (a vitals) metrics(b vitals) Metrics {
	el := b.at.Sub(a.at)
	if el <= 0 {
		return nil
	}
	ms := float64(el) / float64(time.Millisecond)
	m := Metrics{
		MetricProcCPU:  float64(b.cpu-a.cpu) / float64(time.Millisecond),
		MetricProcRead: float64(b.readBytes-a.readBytes) / (1 << 20),
		MetricLoad:     a.load,
		MetricDiskBusy: min(100, float64(b.diskTicks-a.diskTicks)/ms*100),
		MetricDiskRead: float64(b.diskSect-a.diskSect) * 512 / (1 << 20),
	}
	m[MetricDiskQueue] = float64(b.diskQueue-a.diskQueue) / ms
	if t := b.total - a.total; t > 0 {
		m[MetricHostBusy] = float64(b.busy-a.busy) / float64(t) * 100
	}
	if n := b.reads.n - a.reads.n; n > 0 {
		m[MetricFuseReads] = float64(n)
		m[MetricFuseReadKB] = float64(b.reads.bytes-a.reads.bytes) / float64(n) / 1024
		took := float64(b.reads.took - a.reads.took)
		m[MetricFuseReadUS] = took / float64(n) / 1e3
		m[MetricFuseReadIn] = took / float64(el)
	}
	return m
}

// readObserver counts the computerfs mount's READs for the vitals. The
// daemon (`computerfs mount`) observes every request for its metrics,
// so the bench's mount paying for one is as mounted by default.
type readObserver struct {
	n, bytes, took atomic.Int64
}

type readCounts struct{ n, bytes, took int64 }

func (o *readObserver) Request(op fusefs.Op, took time.Duration, errno syscall.Errno, n int) {
	if op != fusefs.OpRead {
		return
	}
	o.n.Add(1)
	o.bytes.Add(int64(n))
	o.took.Add(int64(took))
}

func (o *readObserver) load() readCounts {
	return readCounts{o.n.Load(), o.bytes.Load(), o.took.Load()}
}
