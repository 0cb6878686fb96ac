// Package procs governs how many Ps (runtime.GOMAXPROCS) the Go runtime
// of a daemon that serves a FUSE mount uses: one while nothing in the
// background wants a CPU of its own, all of them while something does.
//
// Why. A FUSE round trip is two wake-ups: the kernel wakes a daemon
// thread blocked reading /dev/fuse, and the daemon's reply wakes the
// program. With several Ps, the runtime adds its own: a P held by a
// thread blocked in that read is retaken by sysmon and handed to a new
// spinning thread, a goroutine made ready wakes an idle thread to run
// it, and a thread back from the read finds no P and queues its request
// for another. Each such wake-up of a thread on another CPU is an
// inter-processor interrupt; on a virtual machine whose idle vCPUs halt
// (Firecracker here, haltpoll.guest_halt_poll_ns=0) it costs tens of
// microseconds, more than the request itself. Measured on this 2-CPU
// machine, standalone daemons, 5 tries per daemon: find over a
// 1,111-directory tree 85-142 ms with the daemon's default 4 Ps, 83-168
// with 2, 57-114 with 1; 1,000 files created by a bash loop 89-182,
// 94-158 and 37-84 ms; tar xf of 2,635 files 776-974, 732-1,106 and
// 291-476 ms. With one P a ready goroutine finds no idle P, so nothing
// is woken that the request did not need.
//
// But one P serialises the Go code of the background work that does
// want a second CPU: hashing and compressing chunks, spill writes beside
// a long write, read-ahead decoding. Measured the same way, a 256 MiB
// sequential write ran at 707 against 813 MiB/s and a cold sequential
// read at 640 against 880 MiB/s with one P against 4. So the Governor
// raises GOMAXPROCS to its full value when such work begins (Begin), and
// lowers it to one once no such work has run for a quiet period
// (BENCHMARKS.md, session 19, has the rest).
//
// The Governor owns GOMAXPROCS while it runs and must be the only one
// to set it; it touches nothing else. A user's explicit GOMAXPROCS
// (the environment variable) wins: New returns nil then, and the
// methods of a nil *Governor do nothing. Changing GOMAXPROCS stops the
// world (its cost was not measured apart); the quiet period keeps that
// to twice per burst of background work.
package procs

import (
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// DefaultQuiet is how long background work must have all but
	// stopped (less than RaiseBytes begun, none under way) before the
	// Governor lowers GOMAXPROCS to one: longer than the commit
	// interval (100 ms), so that the commits of a steady stream of
	// small writes (each re-preparing the chunks they touched) do not
	// raise and lower it at every commit.
	DefaultQuiet = 250 * time.Millisecond
	// RaiseBytes of background work begun within RaiseWindow raise
	// GOMAXPROCS: 200 MiB/s, a long write or read streaming.
	RaiseBytes  = 4 << 20
	RaiseWindow = 20 * time.Millisecond
)

// Governor sets GOMAXPROCS to one or to its full value; see the package
// doc.
type Governor struct {
	max   int
	quiet time.Duration
	log   *slog.Logger

	epoch    time.Time
	active   atomic.Int64 // background work under way (Begin without End)
	bytes    atomic.Int64 // bytes of work begun, ever
	winStart atomic.Int64 // while low: since epoch, the start of the window winBytes counts
	winBytes atomic.Int64
	high     atomic.Bool   // GOMAXPROCS is max (or about to be)
	raise    chan struct{} // one pending request to raise

	mu   sync.Mutex    // serialises Start and Stop
	stop chan struct{} // closed by Stop; nil while not governing
	done chan struct{} // closed by run once it gave GOMAXPROCS back
}

// New returns a Governor for this process, not yet governing (Start), or
// nil when there is nothing to govern: GOMAXPROCS set in the environment
// (the user's choice) or a single CPU.
func New(log *slog.Logger) *Governor {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Governor{epoch: time.Now(), max: max, quiet: DefaultQuiet, log: log, raise: make(chan struct{}, 1)}
	g.high.Store(true)
	return g
}

// Start begins governing: GOMAXPROCS drops to one once the background
// has been quiet for the quiet period. Stop ends it; Start may follow
// again.
func (g *Governor) Start() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stop != nil {
		return
	}
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	go g.run(g.stop, g.done)
}

// Stop ends governing and gives GOMAXPROCS its full value back. A
// Governor not started has nothing to stop.
func (g *Governor) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stop == nil {
		return
	}
	close(g.stop)
	<-g.done
	g.stop, g.done = nil, nil
}

// Begin marks background work of n bytes that may want a CPU of its
// own as begun; End marks it ended. End is an atomic add; Begin a few
// and a clock read, and a yield when it asks for a raise.
// While GOMAXPROCS is low, Begin asks the Governor to raise it once
// RaiseBytes of such work began within RaiseWindow: a trickle of it (the
// files of a tar being extracted) is cheaper on one P than the wake-ups
// a second costs.
//
// n < 0 (fs.AllCPUs) is work that runs parallel workers: it raises
// GOMAXPROCS at once and holds it up until its End.
func (g *Governor) Begin(n int) {
	if g == nil {
		return
	}
	if n < 0 {
		n = RaiseBytes
	}
	g.active.Add(1)
	g.bytes.Add(int64(n))
	if g.high.Load() {
		return
	}
	now := time.Since(g.epoch).Nanoseconds()
	if w := g.winStart.Load(); now-w > int64(RaiseWindow) {
		if g.winStart.CompareAndSwap(w, now) {
			g.winBytes.Store(0)
		}
	}
	if g.winBytes.Add(int64(n)) < RaiseBytes {
		return
	}
	select {
	case g.raise <- struct{}{}:
		// With one P the Governor runs only when this goroutine lets
		// it: now, rather than after the work (or the scheduler's 10 ms
		// preemption).
		runtime.Gosched()
	default:
	}
}

// End marks the work a Begin marked as ended.
func (g *Governor) End() {
	if g == nil {
		return
	}
	g.active.Add(-1)
}

// run alternates between low (one P, waiting for a Begin) and high (all
// Ps, looking every quiet period for work begun or under way).
func (g *Governor) run(stop, done chan struct{}) {
	defer close(done)
	defer func() {
		g.high.Store(true)
		runtime.GOMAXPROCS(g.max)
	}()
	// Started with no work under way, it lowers at once: the bench
	// starts it at each run, and a run as short as the quiet period
	// would otherwise be served with every P.
	lowNow := g.active.Load() == 0
	for {
		// High: wait for a quiet period with no work under way and none begun.
		if !lowNow && !g.waitQuiet(stop) {
			return
		}
		lowNow = false
		g.winStart.Store(time.Since(g.epoch).Nanoseconds())
		g.winBytes.Store(0)
		g.high.Store(false)
		runtime.GOMAXPROCS(1)
		g.log.Debug("GOMAXPROCS lowered", "to", 1)
		select {
		case <-stop:
			return
		case <-g.raise:
			g.raiseNow()
		}
	}
}

// waitQuiet waits until a whole quiet period passed with less than
// RaiseBytes of work begun and none under way; false if the Governor
// was stopped.
func (g *Governor) waitQuiet(stop chan struct{}) bool {
	tick := time.NewTicker(g.quiet)
	defer tick.Stop()
	last := g.bytes.Load()
	for {
		select {
		case <-stop:
			return false
		case <-tick.C:
		}
		now := g.bytes.Load()
		if now-last < RaiseBytes && g.active.Load() == 0 {
			return true
		}
		last = now
	}
}

func (g *Governor) raiseNow() {
	g.high.Store(true)
	runtime.GOMAXPROCS(g.max)
	g.log.Debug("GOMAXPROCS raised", "to", g.max)
	// Drain a raise asked for while this one was under way.
	select {
	case <-g.raise:
	default:
	}
}

// Max is the GOMAXPROCS the Governor raises to.
func (g *Governor) Max() int {
	if g == nil {
		return runtime.GOMAXPROCS(0)
	}
	return g.max
}
