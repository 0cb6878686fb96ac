package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// JobStats are the results of one run of a job file, all its jobs
// together (as fio's group_reporting).
type JobStats struct {
	Elapsed        time.Duration
	Bytes          int64
	Ops            int64
	P50, P99, P999 time.Duration
}

// MiBs is the throughput in MiB/s.
func (s JobStats) MiBs() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / (1 << 20) / s.Elapsed.Seconds()
}

// IOPS is the number of I/O operations per second.
func (s JobStats) IOPS() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}

// Metrics reports the stats as a workload's metrics.
func (s JobStats) Metrics() Metrics {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return Metrics{
		MetricMiBs: s.MiBs(),
		MetricIOPS: s.IOPS(),
		MetricP50:  us(s.P50),
		MetricP99:  us(s.P99),
		MetricP999: us(s.P999),
	}
}

// jobPath names a job copy's file as fio does: jobname.jobnumber.filenumber.
func jobPath(dir string, j *Job, clone int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%d.0", j.Name, clone))
}

const (
	ioAlign  = 4096    // O_DIRECT alignment of buffers and offsets
	poolSpan = 2 << 20 // write buffers are taken from random places in a pool this big
)

// alignedBuf returns n bytes whose address is a multiple of ioAlign.
func alignedBuf(n int) []byte {
	b := make([]byte, n+ioAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (ioAlign - 1))
	if off != 0 {
		off = ioAlign - off
	}
	return b[off : off+n : off+n]
}

// dataSource hands out write buffers of incompressible data that never
// repeat a chunk: each is taken from a random place in a random pool and
// stamped with a sequence number, so that computerfs cannot deduplicate
// what fio's scrambled buffers would not let it deduplicate either.
type dataSource struct {
	pool []byte
	bs   int
	rng  *rand.Rand
	id   uint64
	seq  uint64
}

func newDataSource(bs int64, seed uint64) *dataSource {
	d := &dataSource{pool: alignedBuf(poolSpan + int(bs)), bs: int(bs), rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), id: seed}
	rand.NewChaCha8(seedBytes(seed)).Read(d.pool)
	return d
}

func (d *dataSource) next() []byte {
	off := d.rng.IntN(poolSpan/ioAlign) * ioAlign
	b := d.pool[off : off+d.bs]
	var stamp [16]byte
	binary.LittleEndian.PutUint64(stamp[:], d.id<<40^d.seq)
	binary.LittleEndian.PutUint64(stamp[8:], d.rng.Uint64())
	copy(b, stamp[:])
	d.seq++
	return b
}

func jobSeed(jobIndex, clone int) uint64 { return uint64(jobIndex)<<16 | uint64(clone) + 1 }

// LayoutJobFile writes, fsyncs and evicts from the page cache the files
// that the file's read jobs read (fio's layout phase, untimed).
func LayoutJobFile(ctx context.Context, jf *JobFile, dir string) error {
	for ji := range jf.Jobs {
		j := &jf.Jobs[ji]
		if j.RW.IsWrite() {
			continue
		}
		for c := range j.NumJobs {
			if err := layoutFile(ctx, jobPath(dir, j, c), j, jobSeed(ji, c)); err != nil {
				return fmt.Errorf("lay out job %s: %w", j.Name, err)
			}
		}
	}
	return nil
}

func layoutFile(ctx context.Context, path string, j *Job, seed uint64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	bs := min(j.BS, 1<<20)
	src := newDataSource(bs, seed^0xa5a5)
	size := j.Size / j.BS * j.BS
	for off := int64(0); off < size; off += bs {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := src.next()[:min(bs, size-off)]
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := fadviseDontNeed(f); err != nil {
		return fmt.Errorf("fadvise %s: %w", path, err)
	}
	return f.Close()
}

// fadviseDontNeed drops the file's clean pages from the page cache (fio's
// invalidate=1).
func fadviseDontNeed(f *os.File) error {
	const posixFadvDontneed = 4
	_, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, posixFadvDontneed, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

type jobWorker struct {
	job    *Job
	f      *os.File
	blocks int64
	order  []int // a permutation of the blocks for random jobs
	rng    *rand.Rand
	src    *dataSource
	rbuf   []byte
	lat    []time.Duration
	bytes  int64
	ops    int64
	err    error
}

// maxPerm bounds the blocks of a random job visited in a shuffled order;
// beyond it offsets are drawn with replacement.
const maxPerm = 1 << 22

func newJobWorker(dir string, j *Job, ji, clone int) (*jobWorker, error) {
	flags := os.O_RDONLY
	if j.RW.IsWrite() {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	if j.Direct {
		flags |= syscall.O_DIRECT
	}
	path := jobPath(dir, j, clone)
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", j.Name, err)
	}
	w := &jobWorker{job: j, f: f, blocks: j.Size / j.BS, rng: rand.New(rand.NewPCG(jobSeed(ji, clone), 17))}
	if j.RW.IsRandom() && w.blocks <= maxPerm {
		w.order = w.rng.Perm(int(w.blocks))
	}
	if j.RW.IsWrite() {
		w.src = newDataSource(j.BS, jobSeed(ji, clone))
	} else {
		w.rbuf = alignedBuf(int(j.BS))
	}
	w.lat = make([]time.Duration, 0, min(w.blocks, 1<<16))
	return w, nil
}

func (w *jobWorker) run(ctx context.Context, start time.Time) {
	j := w.job
	var deadline time.Time
	if j.Runtime > 0 {
		deadline = start.Add(j.Runtime)
	}
	writes := 0
	for i := int64(0); i < w.blocks; i++ {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				w.err = err
				return
			}
		}
		blk := i
		switch {
		case w.order != nil:
			blk = int64(w.order[i])
		case j.RW.IsRandom():
			blk = w.rng.Int64N(w.blocks)
		}
		off := blk * j.BS
		t0 := time.Now()
		if !deadline.IsZero() && t0.After(deadline) {
			return
		}
		var n int
		var err error
		if j.RW.IsWrite() {
			n, err = w.f.WriteAt(w.src.next(), off)
		} else {
			n, err = w.f.ReadAt(w.rbuf, off)
		}
		w.lat = append(w.lat, time.Since(t0))
		if err == nil && int64(n) != j.BS {
			err = fmt.Errorf("short I/O: %d of %d bytes at offset %d", n, j.BS, off)
		}
		if err != nil {
			w.err = fmt.Errorf("job %s: %s %s: %w", j.Name, j.RW, w.f.Name(), err)
			return
		}
		w.bytes += int64(n)
		w.ops++
		if j.RW.IsWrite() && j.Fsync > 0 {
			if writes++; writes%j.Fsync == 0 {
				if err := w.f.Sync(); err != nil {
					w.err = fmt.Errorf("job %s: fsync %s: %w", j.Name, w.f.Name(), err)
					return
				}
			}
		}
	}
}

// RunJobFile runs every job of the file at once, each copy (numjobs) in
// its own goroutine on its own file in dir. Read jobs need LayoutJobFile
// first. Opening the files is not timed.
func RunJobFile(ctx context.Context, jf *JobFile, dir string) (JobStats, error) {
	var workers []*jobWorker
	defer func() {
		for _, w := range workers {
			w.f.Close()
		}
	}()
	for ji := range jf.Jobs {
		j := &jf.Jobs[ji]
		for c := range j.NumJobs {
			w, err := newJobWorker(dir, j, ji, c)
			if err != nil {
				return JobStats{}, err
			}
			workers = append(workers, w)
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, start)
		}()
	}
	wg.Wait()
	st := JobStats{Elapsed: time.Since(start)}
	var errs []error
	var lat []time.Duration
	for _, w := range workers {
		if w.err != nil {
			errs = append(errs, w.err)
		}
		if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("close %s: %w", w.f.Name(), err))
		}
		st.Bytes += w.bytes
		st.Ops += w.ops
		lat = append(lat, w.lat...)
	}
	if err := errors.Join(errs...); err != nil {
		return st, err
	}
	slices.Sort(lat)
	st.P50, st.P99, st.P999 = Percentile(lat, 50), Percentile(lat, 99), Percentile(lat, 99.9)
	return st, nil
}
