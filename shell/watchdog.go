package shell

import (
	"fmt"
	"os/user"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// DefaultHeapLimit is the plugin's heap for all its execs together.
const DefaultHeapLimit = 1 << 30

// watchPeriod is how often the watchdog samples the heap.
const watchPeriod = 5 * time.Millisecond

// watchdog samples the plugin's heap while runs are active and ends the
// run that holds the most when the heap goes past the limit. Its
// goroutine runs only while some run does: the first track starts it,
// and it returns when the last run has ended.
type watchdog struct {
	mu      sync.Mutex
	runs    map[*run]time.Time // active, with their start
	running bool
}

// track registers rn while it runs.
func (w *watchdog) track(rn *run, limit int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[*run]time.Time{}
	}
	w.runs[rn] = time.Now()
	if !w.running {
		w.running = true
		go w.loop(limit)
	}
}

// untrack ends rn's registration. When rn held a lot of memory, or was
// ended for it, the plugin gives the memory back to the system now.
func (w *watchdog) untrack(rn *run) {
	w.mu.Lock()
	delete(w.runs, rn)
	release := rn.mem.peak.Load() > 64<<20 || rn.memStopped.Load()
	w.mu.Unlock()
	if release {
		debug.FreeOSMemory()
	}
}

func (w *watchdog) loop(limit int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(watchPeriod)
	defer t.Stop()
	for range t.C {
		w.mu.Lock()
		if len(w.runs) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		metrics.Read(sample)
		heap := int64(sample[0].Value.Uint64())
		if heap > limit {
			if rn := w.heaviestLocked(); rn != nil {
				rn.memStopped.Store(true)
				rn.cancel(&limitError{memory: true, reason: fmt.Sprintf(
					"memory limit: the shell backend's heap reached %d MiB, over its limit of %d MiB, and this exec held the most (%d MiB)",
					heap>>20, limit>>20, rn.mem.held.Load()>>20)})
			}
		}
		w.mu.Unlock()
	}
}

// heaviestLocked is the run that held the most at its last measure, the
// newest among equals; one already stopped is skipped.
func (w *watchdog) heaviestLocked() *run {
	var best *run
	var bestHeld int64 = -1
	var bestStart time.Time
	for rn, start := range w.runs {
		if rn.memStopped.Load() {
			continue
		}
		held := rn.mem.held.Load() + rn.psubs.held()
		if held > bestHeld || held == bestHeld && start.After(bestStart) {
			best, bestHeld, bestStart = rn, held, start
		}
	}
	return best
}

// limitPlugin sets the Go runtime's soft memory limit to the heap limit,
// so that the collector works harder before the watchdog has to act, and
// caps the process's address space well above it, so that an
// allocation neither sees in time ends the plugin, not the host. It
// also makes os/user's one read of the host's passwd (for test -O and
// -G) now, before any script runs.
func limitPlugin(heapLimit int64) error {
	debug.SetMemoryLimit(heapLimit + heapLimit/4)
	as := uint64(3*heapLimit + 2<<30)
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err != nil {
		return fmt.Errorf("address space limit: %w", err)
	}
	if cur.Max != ^uint64(0) && cur.Max < as {
		as = cur.Max
	}
	if cur.Cur == ^uint64(0) || cur.Cur > as {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
			return fmt.Errorf("address space limit of %d bytes: %w", as, err)
		}
	}
	_, _ = user.Current()
	return nil
}
