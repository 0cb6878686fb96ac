package shell

// Memory. The interpreter grows without bound on its own: a variable
// doubled in a loop, a command substitution capturing a large output.
// Three layers bound it, from the gentlest:
//
//  1. Each run (memWatch) measures what its script holds (variables,
//     arrays, the command substitution being captured, its process
//     substitutions) at every command and loop iteration, at most every
//     millisecond, and ends the run with "memory limit" past
//     Options.MemoryBytes.
//  2. The backend's watchdog (Backend.watch) samples the plugin's heap
//     every few milliseconds while execs run; past the plugin's limit it
//     ends the run that holds the most, so the others go on, and the
//     plugin returns the memory to the system afterwards.
//  3. The plugin's address space is capped (setrlimit, see Backend's
//     Configure), so that what neither layer sees in time (one word
//     expanded to gigabytes in a single step) ends the plugin, which the
//     host restarts, rather than the host.

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

// memWatch is one run's accounting.
type memWatch struct {
	limit int64
	stop  func(error)  // ends the run
	last  atomic.Int64 // unix ns of the last measure
	held  atomic.Int64 // bytes held at the last measure
	peak  atomic.Int64
}

func (m *memWatch) init(limit int64) {
	if limit <= 0 {
		limit = DefaultMemoryBytes
	}
	m.limit = limit
}

func memoryLimitError(held, limit int64) error {
	return &limitError{reason: fmt.Sprintf("memory limit: the script held %d MiB, over the limit of %d MiB", held>>20, limit>>20), memory: true}
}

// check measures what the run holds, at most every millisecond.
func (m *memWatch) check(hc interp.HandlerContext) error {
	now := time.Now().UnixNano()
	if last := m.last.Load(); now-last < int64(time.Millisecond) || !m.last.CompareAndSwap(last, now) {
		return nil
	}
	n := envBytes(hc.Env)
	if sb, ok := hc.Stdout.(*strings.Builder); ok {
		n += int64(sb.Len())
	}
	m.held.Store(n)
	if n > m.peak.Load() {
		m.peak.Store(n)
	}
	if n > m.limit {
		return memoryLimitError(n, m.limit)
	}
	return nil
}

// envBytes is what a script's variables hold.
func envBytes(env expand.Environ) int64 {
	var n int64
	env.Each(func(name string, vr expand.Variable) bool {
		n += int64(len(name)) + 32
		switch vr.Kind {
		case expand.String, expand.NameRef:
			n += int64(len(vr.Str))
		case expand.Indexed:
			for _, s := range vr.List {
				n += int64(len(s)) + 16
			}
		case expand.Associative:
			for k, v := range vr.Map {
				n += int64(len(k)+len(v)) + 48
			}
		}
		return true
	})
	return n
}

// capture bounds what one of our commands writes into a command
// substitution (the interpreter captures it in a strings.Builder).
func (m *memWatch) capture(w io.Writer) io.Writer {
	sb, ok := w.(*strings.Builder)
	if !ok {
		return w
	}
	return &captureWriter{sb: sb, m: m}
}

type captureWriter struct {
	sb *strings.Builder
	m  *memWatch
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if n := int64(c.sb.Len() + len(p)); n > c.m.limit {
		c.m.held.Store(n)
		err := memoryLimitError(n, c.m.limit)
		c.m.stop(err)
		return 0, err
	}
	return c.sb.Write(p)
}
