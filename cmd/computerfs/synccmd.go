package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"sync"
	"sync/atomic"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/remote"
)

// syncFlags are mount's and serve's continuous sync flags (issue 18).
type syncFlags struct {
	every  time.Duration
	remote string
}

func (s *syncFlags) register(fl *pflag.FlagSet) {
	fl.DurationVar(&s.every, "push-every", 0, "push the workspace to its remote in the background this often, and after every exec, when it changed (continuous sync; 0: never)")
	fl.StringVar(&s.remote, "push-remote", "", "the remote --push-every pushes to (default: the only one, or origin)")
}

// startSync starts the daemon's syncer when --push-every asks for one;
// the returned stop ends it and waits for it. A remote that cannot be
// reached at start fails the daemon's start (it is a configuration
// error); later failures only leave the sync pending.
func startSync(ctx context.Context, e *env, s syncFlags, h *remote.Host, kick <-chan struct{}, running *atomic.Pointer[remote.Syncer]) (stop func(), err error) {
	if s.every <= 0 {
		return func() {}, nil
	}
	name, r, err := pickRemote(h.WS, s.remote)
	if err != nil {
		return nil, fmt.Errorf("--push-every: %w", err)
	}
	c, err := remote.ClientFor(ctx, r, clientOptions())
	if err != nil {
		return nil, fmt.Errorf("--push-every: %w", err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sy := &remote.Syncer{FS: h.FS, WS: h.WS, Remote: name, Client: c, Every: s.every, Log: e.log, Kick: kick, Lock: h}
	var wg sync.WaitGroup
	wg.Go(func() { sy.Run(sctx) })
	running.Store(sy)
	return func() { running.Store(nil); cancel(); wg.Wait() }, nil
}

// afterExec wraps a daemon's exec hook so that every exec's result says
// where its changes stand against the remote the syncer pushes to, and
// kicks the syncer (a non-blocking send: one kick pending is enough).
func afterExec(onExec func(*backends.Result), kick chan struct{}, syncer *atomic.Pointer[remote.Syncer]) func(*backends.Result) {
	return func(r *backends.Result) {
		onExec(r)
		sy := syncer.Load()
		if sy == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st := sy.Status(ctx)
		cancel()
		r.Sync = &pb.SyncStatus{Remote: st.Remote, Url: st.URL, State: st.State, Root: st.Root,
			PushedRoot: st.PushedRoot, PushedManifest: st.PushedManifest, PushedSnapshot: st.PushedSnapshot, Error: st.Error}
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}
