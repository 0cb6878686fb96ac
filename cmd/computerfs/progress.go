package main

import (
	"sync"
	"time"

	"github.com/computerfs/computerfs/bench"
	"github.com/schollz/progressbar/v3"
)

// progressDelay is how long work runs before its progress bar shows:
// quick work prints nothing.
const progressDelay = 2 * time.Second

// progress is a progress bar on stderr for work that runs longer than
// progressDelay, when stderr is a terminal: a bar when the total is
// known, else a spinner with the phase and elapsed time. The work calls
// set as often as it likes (it only stores the numbers); a goroutine that
// finish stops draws them. A nil *progress does nothing.
type progress struct {
	mu                sync.Mutex
	phase             string
	done, total       uint64
	bytes             bool
	delay             time.Duration
	stop, stopped     chan struct{}
	name              string
	bar               *progressbar.ProgressBar
	barTotal, barDone int64
}

// newProgress starts the progress of work called name; it returns nil
// when stderr is not a terminal. bytes says the counts are bytes.
func newProgress(e *env, name string, bytes bool) *progress {
	return newProgressAfter(e, name, bytes, progressDelay)
}

// newProgressAfter is newProgress with another delay.
func newProgressAfter(e *env, name string, bytes bool, delay time.Duration) *progress {
	if !bench.IsTerminal(e.stderr) {
		return nil
	}
	p := &progress{name: name, bytes: bytes, delay: delay, stop: make(chan struct{}), stopped: make(chan struct{})}
	go p.draw(e)
	return p
}

// set records how far the work is: total 0 means unknown.
func (p *progress) set(phase string, done, total uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.phase, p.done, p.total = phase, done, total
	p.mu.Unlock()
}

func (p *progress) draw(e *env) {
	defer close(p.stopped)
	start := time.NewTimer(p.delay)
	defer start.Stop()
	select {
	case <-start.C:
	case <-p.stop:
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		phase, done, total := p.phase, int64(p.done), int64(p.total)
		p.mu.Unlock()
		desc := p.name
		if phase != "" {
			desc += ": " + phase
		}
		if total <= 0 {
			total = -1 // a spinner
		}
		if p.bar == nil || total != p.barTotal {
			if p.bar != nil {
				p.bar.Clear()
			}
			p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription(desc),
				progressbar.OptionShowBytes(p.bytes), progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true),
				progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30), progressbar.OptionSetRenderBlankState(true),
				progressbar.OptionSetSpinnerChangeInterval(0)) // no goroutine of its own: this one draws
			p.barTotal = total
		}
		p.bar.Describe(desc)
		if done != p.barDone || total < 0 {
			p.bar.Set64(done)
			p.barDone = done
		}
		select {
		case <-tick.C:
		case <-p.stop:
			p.bar.Clear()
			return
		}
	}
}

// finish stops drawing and clears the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.stopped
}
