package workspace

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/computerfs/computerfs/fs"
)

// forkShared is what the views of one workspace share about its forks:
// each fork's notifier (its mount, if it has one), and who must let go
// of a fork before it is merged or discarded.
type forkShared struct {
	mu     sync.Mutex
	notify map[string]*atomic.Pointer[notifierBox]
	closer func(id string)
}

func newForkShared() *forkShared {
	return &forkShared{notify: make(map[string]*atomic.Pointer[notifierBox])}
}

func (s *forkShared) notifier(id string) *atomic.Pointer[notifierBox] {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.notify[id]
	if p == nil {
		p = new(atomic.Pointer[notifierBox])
		s.notify[id] = p
	}
	return p
}

// SetForkNotifier tells the file API of fork id whom to notify of its
// changes (a FUSE mount of the fork), nil for nobody.
func (w *WS) SetForkNotifier(id string, n Notifier) {
	p := w.forks.notifier(id)
	if n == nil {
		p.Store(nil)
		return
	}
	p.Store(&notifierBox{n})
}

// SetForkCloser has closer run before a fork is merged or discarded
// (with its ID): whoever serves the fork otherwise (a mount, the backends
// running in it) lets go of it.
func (w *WS) SetForkCloser(closer func(id string)) {
	w.forks.mu.Lock()
	w.forks.closer = closer
	w.forks.mu.Unlock()
}

func (w *WS) letGoOfFork(id string) {
	w.forks.mu.Lock()
	closer := w.forks.closer
	delete(w.forks.notify, id)
	w.forks.mu.Unlock()
	if closer != nil {
		closer(id)
	}
}

// Forks (fs/fork.go): copy-on-write branches of the workspace, each a
// whole file API of its own, merged into the workspace in one commit or
// discarded.

// CreateFork branches the workspace as of now into fork id ("" picks
// one) and returns it.
func (w *WS) CreateFork(ctx context.Context, id string) (fs.ForkInfo, error) {
	if err := w.wholeWritable("fork", id); err != nil {
		return fs.ForkInfo{}, err
	}
	fi, err := w.f.CreateFork(ctx, id)
	if err != nil {
		return fs.ForkInfo{}, pathErr("fork", id, err)
	}
	return fi, nil
}

// Fork is the file API over fork id, with w's options and path rules
// (the fork's files obey the workspace's rules). Its changes reach no
// mount of the workspace: they are the fork's.
func (w *WS) Fork(id string) (*WS, error) {
	if err := w.wholeWritable("fork", id); err != nil {
		return nil, err
	}
	fk, err := w.f.OpenFork(id)
	if err != nil {
		return nil, pathErr("fork", id, err)
	}
	v := New(fk, w.opts)
	v.rules = w.rules
	v.notify = w.forks.notifier(id)
	return v, nil
}

// ForkReader is an API that can give the file API of one of its
// workspace's forks (*WS, and wsrpc's Client).
type ForkReader interface {
	ForkAPI(id string) (API, error)
}

var _ ForkReader = (*WS)(nil)

// ForkAPI is Fork as an API.
func (w *WS) ForkAPI(id string) (API, error) { return w.Fork(id) }

// ForkID is the fork w serves ("" for the workspace).
func (w *WS) ForkID() string { return w.f.Fork() }

// Forks lists the workspace's forks.
func (w *WS) Forks() ([]fs.ForkInfo, error) { return w.f.Forks() }

// ForkChanges lists what fork id changed (paths in the fork).
func (w *WS) ForkChanges(ctx context.Context, id string) ([]fs.ForkChange, error) {
	fk, err := w.Fork(id)
	if err != nil {
		return nil, err
	}
	ch, err := fk.f.ForkChanges(ctx)
	if err != nil {
		return nil, pathErr("fork", id, err)
	}
	if w.rules != nil {
		kept := ch[:0]
		for _, c := range ch {
			if v, _ := w.rules.Verdict(c.Path); v != Deny {
				kept = append(kept, c)
			}
		}
		ch = kept
	}
	return ch, nil
}

// MergeFork applies what fork id changed to the workspace, in one
// commit, and drops the fork (fs.FS.MergeFork); the kernel is told to
// drop what it cached of what changed. A conflict with the workspace's
// own changes since the fork fails with an *fs.ForkConflictError
// naming the files, and changes nothing.
func (w *WS) MergeFork(ctx context.Context, id string) (*fs.RewindReport, error) {
	if err := w.wholeWritable("merge", id); err != nil {
		return nil, err
	}
	if w.rules != nil {
		fk, err := w.f.OpenFork(id)
		if err != nil {
			return nil, pathErr("merge", id, err)
		}
		ch, err := fk.ForkChanges(ctx)
		if err != nil {
			return nil, pathErr("merge", id, err)
		}
		paths := make([]string, len(ch))
		for i, c := range ch {
			paths[i] = c.Path
		}
		if err := w.rewindAllowed("merge", id, paths); err != nil {
			return nil, err
		}
	}
	w.letGoOfFork(id)
	rep, touched, err := w.f.MergeFork(ctx, id)
	if err != nil {
		return nil, err
	}
	w.invalidateTouched(touched)
	return rep, nil
}

// DiscardFork drops fork id and what it changed.
func (w *WS) DiscardFork(ctx context.Context, id string) (*fs.ForkDropReport, error) {
	if err := w.wholeWritable("discard", id); err != nil {
		return nil, err
	}
	if w.f.Fork() != "" {
		return nil, pathErr("discard", id, fmt.Errorf("%w", syscall.ENOTSUP))
	}
	w.letGoOfFork(id)
	rep, err := w.f.DiscardFork(ctx, id)
	if err != nil {
		return nil, pathErr("discard", id, err)
	}
	return rep, nil
}
