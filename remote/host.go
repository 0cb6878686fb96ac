package remote

import (
	"context"
	"fmt"
	"sync"

	"github.com/computerfs/computerfs/fs"
)

// Pick is remote name of workspace ws, or, when name is "", its only
// remote, or origin among several.
func Pick(ws, name string) (string, Remote, error) {
	cfg, err := LoadConfig(ws)
	if err != nil {
		return "", Remote{}, err
	}
	if name == "" {
		switch len(cfg.Remotes) {
		case 0:
			return "", Remote{}, fmt.Errorf("%s has no remote: computerfs remote add NAME s3://BUCKET/PREFIX", ws)
		case 1:
			for n := range cfg.Remotes {
				name = n
			}
		default:
			if _, ok := cfg.Remotes["origin"]; !ok {
				return "", Remote{}, fmt.Errorf("%s has several remotes and none is origin: name one", ws)
			}
			name = "origin"
		}
	}
	r, ok := cfg.Remotes[name]
	if !ok {
		return "", Remote{}, fmt.Errorf("%s has no remote %s (computerfs remote list)", ws, name)
	}
	return name, r, nil
}

// Host does the pushes and pulls of a served workspace on the daemon's
// open FS (the daemon's Push and Pull calls), one at a time, and with
// its Syncer's (which takes Host as its Lock).
type Host struct {
	FS *fs.FS
	WS string // the store's path: the remotes file is beside it
	// Apply moves the live tree on a pull (the file API's, which tells
	// the mount); the FS's ApplyTree if nil.
	Apply ApplyFunc
	// Options are given to every client (tests: credentials).
	Options ClientOptions

	mu sync.Mutex
}

// Lock and Unlock serialise the Host's transfers with a Syncer's.
func (h *Host) Lock()   { h.mu.Lock() }
func (h *Host) Unlock() { h.mu.Unlock() }

func (h *Host) client(ctx context.Context, name string) (string, Remote, *Client, error) {
	name, r, err := Pick(h.WS, name)
	if err != nil {
		return "", Remote{}, nil, err
	}
	c, err := ClientFor(ctx, r, h.Options)
	if err != nil {
		return "", Remote{}, nil, err
	}
	return name, r, c, nil
}

// Push is PushFS of the served workspace to remote name ("": the
// default), under the Host's lock. It returns the remote's name and
// configuration with the report.
func (h *Host) Push(ctx context.Context, name string, opts PushOptions) (string, Remote, *PushReport, error) {
	name, r, c, err := h.client(ctx, name)
	if err != nil {
		return "", Remote{}, nil, err
	}
	h.Lock()
	defer h.Unlock()
	opts.Remote = name
	rep, err := PushFS(ctx, h.FS, h.WS, c, opts)
	return name, r, rep, err
}

// Pull is PullFS into the served workspace from remote name ("": the
// default), live, under the Host's lock.
func (h *Host) Pull(ctx context.Context, name string, opts PullOptions) (string, Remote, *CloneReport, error) {
	name, r, c, err := h.client(ctx, name)
	if err != nil {
		return "", Remote{}, nil, err
	}
	h.Lock()
	defer h.Unlock()
	opts.Remote = name
	if opts.Apply == nil {
		opts.Apply = h.Apply
	}
	rep, err := PullFS(ctx, h.FS, h.WS, c, opts)
	return name, r, rep, err
}
