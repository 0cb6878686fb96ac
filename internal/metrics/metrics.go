// Package metrics is the daemon's instruments, in one Prometheus
// registry per daemon (never the global default one): FUSE requests by
// op with latency histograms, errors and bytes moved (a fusefs.Observer),
// execs by backend and exit class with duration histograms (a backends
// OnExec hook), and what the store and the backends say at each scrape
// (chunk statistics, dedup and compression ratios, limit and use, read
// cache decodes, commit write time, backend restarts). Listen serves them
// over HTTP, with net/http/pprof when asked.
//
// The FUSE observer is on the request path of every request: it reads
// the clock twice and does a few atomic adds into series resolved when
// the Daemon is made, with no allocation, no lock and no map lookup.
package metrics

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Sources are what the scrape-time metrics read.
type Sources struct {
	FS *fs.FS
	// Backends lists the backends without starting any; nil for none.
	Backends func(ctx context.Context) []*pb.BackendInfo
}

// Daemon holds one daemon's registry and its instruments.
type Daemon struct {
	reg          *prometheus.Registry
	fuseDur      [fusefs.NumOps]prometheus.Histogram
	fuseErrs     [fusefs.NumOps]prometheus.Counter
	readBytes    prometheus.Counter
	writtenBytes prometheus.Counter
	lastFsync    atomic.Int64 // ns
	execDur      *prometheus.HistogramVec
	store        *storeCollector
}

// fuseBuckets run from 10 µs (a cached GETATTR) to 2.6 s (an fsync behind
// a large commit), four times apart.
var fuseBuckets = prometheus.ExponentialBuckets(10e-6, 4, 10)

// execBuckets run from 1 ms (a warm shell builtin) to about 17 minutes.
var execBuckets = prometheus.ExponentialBuckets(1e-3, 4, 11)

// New makes a daemon's registry: the Go runtime's and the process's
// collectors, the instruments, and collectors reading src at each scrape.
func New(src Sources) *Daemon {
	d := &Daemon{reg: prometheus.NewRegistry()}
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "computerfs_fuse_request_duration_seconds", Help: "FUSE requests the mount answered, by op: the time the daemon took to serve each.",
		Buckets: fuseBuckets,
	}, []string{"op"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "computerfs_fuse_request_errors_total", Help: "FUSE requests answered with an error, by op (a lookup of a missing name is no error).",
	}, []string{"op"})
	for op := fusefs.Op(0); op < fusefs.NumOps; op++ {
		d.fuseDur[op] = dur.WithLabelValues(op.String()).(prometheus.Histogram)
		d.fuseErrs[op] = errs.WithLabelValues(op.String())
	}
	d.readBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "computerfs_fuse_read_bytes_total", Help: "Bytes the mount's READ requests returned."})
	d.writtenBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "computerfs_fuse_written_bytes_total", Help: "Bytes the mount's WRITE and COPY_FILE_RANGE requests wrote."})
	d.execDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "computerfs_exec_duration_seconds", Help: "Execs by backend and how they ended (ok, error, timeout, output_cut, memory): their duration.",
		Buckets: execBuckets,
	}, []string{"backend", "exit"})
	d.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		dur, errs, d.readBytes, d.writtenBytes, d.execDur,
	)
	d.store = &storeCollector{fs: src.FS}
	d.store.firstTx, _ = d.store.txID()
	d.reg.MustRegister(d.store)
	if src.Backends != nil {
		d.reg.MustRegister(&backendCollector{list: src.Backends})
	}
	return d
}

// Registry is the daemon's registry.
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }

// Request implements fusefs.Observer.
func (d *Daemon) Request(op fusefs.Op, took time.Duration, errno syscall.Errno, bytes int) {
	if op >= fusefs.NumOps {
		return
	}
	d.fuseDur[op].Observe(took.Seconds())
	if errno != 0 {
		d.fuseErrs[op].Inc()
	}
	switch op {
	case fusefs.OpRead:
		d.readBytes.Add(float64(bytes))
	case fusefs.OpWrite, fusefs.OpCopyFileRange:
		d.writtenBytes.Add(float64(bytes))
	case fusefs.OpFsync, fusefs.OpFsyncDir:
		d.lastFsync.Store(int64(took))
	}
}

// Exec counts an exec that ended: the backends' OnExec hook.
func (d *Daemon) Exec(res *backends.Result) {
	if res == nil || res.Exit == nil {
		return
	}
	d.execDur.WithLabelValues(res.Backend, backends.ExitClass(res.Exit)).Observe(time.Duration(res.Exit.DurationNs).Seconds())
}

// FuseStats is what the mount served so far, by op, for the daemon's
// status.
func (d *Daemon) FuseStats() wsrpc.FuseStats {
	out := wsrpc.FuseStats{LastFsync: time.Duration(d.lastFsync.Load())}
	var m dto.Metric
	for op := fusefs.Op(0); op < fusefs.NumOps; op++ {
		m.Reset()
		if d.fuseDur[op].Write(&m) != nil || m.Histogram.GetSampleCount() == 0 {
			continue
		}
		h := m.Histogram
		fo := &pb.FuseOp{Op: op.String(), Count: h.GetSampleCount(), TotalNs: int64(h.GetSampleSum() * 1e9)}
		m.Reset()
		if d.fuseErrs[op].Write(&m) == nil {
			fo.Errors = uint64(m.Counter.GetValue())
		}
		out.Ops = append(out.Ops, fo)
	}
	out.ReadBytes = counterValue(d.readBytes)
	out.WrittenBytes = counterValue(d.writtenBytes)
	return out
}

func counterValue(c prometheus.Counter) uint64 {
	var m dto.Metric
	if c.Write(&m) != nil {
		return 0
	}
	return uint64(m.Counter.GetValue())
}

// Commits is how many write transactions the store has committed since
// New (bbolt numbers them).
func (d *Daemon) Commits() uint64 {
	id, err := d.store.txID()
	if err != nil || id < d.store.firstTx {
		return 0
	}
	return id - d.store.firstTx
}

// storeCollector reads the store's chunk statistics, limit and use, the
// read cache's decodes, and its commits and bbolt's time writing them, at
// each scrape.
type storeCollector struct {
	fs      *fs.FS
	firstTx uint64 // the last commit's ID when the collector was made
}

// txID is the ID of the store's last commit.
func (c *storeCollector) txID() (uint64, error) {
	var id uint64
	err := c.fs.Store().View(func(tx *chunkstore.Tx) error {
		id = uint64(tx.ID())
		return nil
	})
	return id, err
}

var (
	descChunks      = prometheus.NewDesc("computerfs_store_chunks", "Distinct chunks stored, as of the last commit.", nil, nil)
	descLogical     = prometheus.NewDesc("computerfs_store_logical_bytes", "Plaintext bytes files refer to, counting every reference.", nil, nil)
	descUnique      = prometheus.NewDesc("computerfs_store_unique_bytes", "Plaintext bytes of distinct chunks (after deduplication).", nil, nil)
	descStored      = prometheus.NewDesc("computerfs_store_stored_bytes", "Bytes of stored chunk bodies (after compression).", nil, nil)
	descDedup       = prometheus.NewDesc("computerfs_store_dedup_ratio", "Logical bytes over unique bytes (1 when nothing is shared).", nil, nil)
	descCompression = prometheus.NewDesc("computerfs_store_compression_ratio", "Unique bytes over stored bytes.", nil, nil)
	descLimit       = prometheus.NewDesc("computerfs_limit_bytes", "The workspace size limit.", nil, nil)
	descUsed        = prometheus.NewDesc("computerfs_used_bytes", "Bytes counted against the limit: unique bytes stored and chunk buffers in flight.", nil, nil)
	descFileBytes   = prometheus.NewDesc("computerfs_store_file_bytes", "Size of the store file.", nil, nil)
	descDecodes     = prometheus.NewDesc("computerfs_chunk_cache_decodes_total", "Chunks decoded and verified from the store into the read cache (its misses; reads it serves decode nothing).", nil, nil)
	descWriteTime   = prometheus.NewDesc("computerfs_store_commit_write_seconds_total", "Time the store spent writing commits to disk (pages, meta page, fsync); over computerfs_store_commits_total, the mean commit write latency.", nil, nil)
	descCommits     = prometheus.NewDesc("computerfs_store_commits_total", "Write transactions the store committed (the committer's group commits, and gc's and limit's).", nil, nil)
	descPageWrites  = prometheus.NewDesc("computerfs_store_commit_page_writes_total", "Writes of pages the store's commits made.", nil, nil)
	descIntent      = prometheus.NewDesc("computerfs_intent_records_total", "Records appended to the intent log: fsyncs made durable without a commit, and truncations of files that have records.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descChunks, descLogical, descUnique, descStored, descDedup, descCompression, descLimit, descUsed, descFileBytes, descDecodes, descWriteTime, descPageWrites, descCommits, descIntent} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	store := c.fs.Store()
	var st chunkstore.Stats
	var txID uint64
	if store.View(func(tx *chunkstore.Tx) error {
		var err error
		txID = uint64(tx.ID())
		st, err = tx.Stats()
		return err
	}) == nil {
		counter(descCommits, float64(txID-min(txID, c.firstTx)))
		gauge(descChunks, float64(st.Chunks))
		gauge(descLogical, float64(st.LogicalBytes))
		gauge(descUnique, float64(st.UniqueBytes))
		gauge(descStored, float64(st.StoredBytes))
		gauge(descDedup, st.DedupRatio())
		gauge(descCompression, st.CompressionRatio())
	}
	limit, used := c.fs.Limit()
	gauge(descLimit, float64(limit))
	gauge(descUsed, float64(used))
	if fi, err := statFile(store.Path()); err == nil {
		gauge(descFileBytes, float64(fi))
	}
	counter(descDecodes, float64(c.fs.ChunksDecoded()))
	counter(descIntent, float64(c.fs.IntentRecords()))
	tx := store.DB().Stats().TxStats
	counter(descWriteTime, tx.GetWriteTime().Seconds())
	counter(descPageWrites, float64(tx.GetWrite()))
}

// backendCollector reads the backends' state and restarts at each scrape.
type backendCollector struct {
	list func(ctx context.Context) []*pb.BackendInfo
}

var (
	descReady    = prometheus.NewDesc("computerfs_backend_ready", "1 when the backend's plugin process is running and ready, else 0.", []string{"backend"}, nil)
	descRestarts = prometheus.NewDesc("computerfs_backend_restarts_total", "Times the backend's plugin was started again after its process went away.", []string{"backend"}, nil)
	descStarted  = prometheus.NewDesc("computerfs_backend_execs_started_total", "Execs started on the backend.", []string{"backend"}, nil)
)

func (c *backendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descReady
	ch <- descRestarts
	ch <- descStarted
}

func (c *backendCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, b := range c.list(ctx) {
		ready := 0.0
		if b.State == backends.StateReady {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, b.Id)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(b.Restarts), b.Id)
		ch <- prometheus.MustNewConstMetric(descStarted, prometheus.CounterValue, float64(b.Execs), b.Id)
	}
}

// Sample is the value of the first series of family name whose labels
// include labels (a counter's or gauge's value, a histogram's count), and
// whether there is one: for tests and tools that read a scrape.
func Sample(fams []*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, l := range m.Label {
					found = found || l.GetName() == k && l.GetValue() == v
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}
