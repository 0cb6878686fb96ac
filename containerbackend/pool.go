package containerbackend

import (
	"context"
	"log/slog"
	"sync"
)

// pool keeps warm containers: started ahead with the default limits, each
// one's init waiting for a command. An exec with the default limits takes
// one and skips runc's creation of namespaces, mounts and cgroups (about
// 100 ms here); a replacement starts in the background at once.
//
// Locking: mu guards ready, starting and closed. Containers are started
// and cleaned up without it.
type pool struct {
	b      *Backend
	size   int
	params specParams // the warm containers' spec, init included
	limits limitsKey
	log    *slog.Logger

	mu       sync.Mutex
	ready    []*container
	starting int
	closed   bool
	wg       sync.WaitGroup // background starts
}

func newPool(b *Backend, size int, params specParams, limits limitsKey) *pool {
	p := &pool{b: b, size: size, params: params, limits: limits, log: b.log()}
	p.fill()
	return p
}

// fill starts containers until size are ready or starting.
func (p *pool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.starting < p.size {
		p.starting++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			c, err := p.b.startContainer(p.params, p.limits)
			p.mu.Lock()
			p.starting--
			if err == nil && p.closed {
				p.mu.Unlock()
				c.kill()
				c.cleanup(p.b)
				return
			}
			if err == nil {
				p.ready = append(p.ready, c)
			}
			p.mu.Unlock()
			if err != nil {
				// The exec that wanted it starts its own; the next take
				// tries again.
				p.log.Warn("container backend: warm container failed to start", "err", err)
			}
		}()
	}
}

// take returns a warm container made with lim, or nil. The caller calls
// fill once its exec is done.
func (p *pool) take(ctx context.Context, lim limitsKey) *container {
	if lim != p.limits {
		return nil
	}
	for {
		p.mu.Lock()
		if p.closed || len(p.ready) == 0 {
			p.mu.Unlock()
			return nil
		}
		c := p.ready[0]
		p.ready = p.ready[1:]
		p.mu.Unlock()
		if !c.exited() {
			// The replacement starts once this exec is done: two
			// cores are too few to build a container beside the exec
			// without slowing it down (the exec's end calls fill).
			return c
		}
		// Died while it waited (killed, or out of memory at start).
		c.cleanup(p.b)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// close stops filling, waits for the starts under way and removes every
// warm container.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	for _, c := range ready {
		c.kill()
		c.cleanup(p.b)
	}
}
