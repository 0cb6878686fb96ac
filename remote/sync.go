package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/computerfs/computerfs/fs"
)

// Syncer pushes a served workspace to a remote in the background
// (continuous sync): every Every, if the workspace's root moved since
// the last push, it takes a snapshot (sync-TIME) and pushes it; a
// failed push is retried with bounded exponential backoff (1 s doubling
// to 60 s) while its state says "pending", as the reference's sync
// does. No write of the workspace waits for it: a push reads its
// snapshot. Each sync snapshot is deleted once a later one is pushed.
// Its state is kept in WS.sync.json (SyncStatePath) for computerfs
// status.
type Syncer struct {
	FS     *fs.FS
	WS     string // the store's path: its remotes file and state file are beside it
	Remote string
	Client *Client
	Every  time.Duration
	Log    *slog.Logger
	// MinBackoff and MaxBackoff bound the retry delays (1 s and 60 s if 0).
	MinBackoff, MaxBackoff time.Duration
	// Kick, if not nil, makes the syncer look at once (after an exec)
	// rather than at its next tick; a retry's backoff still holds.
	Kick <-chan struct{}
	// Lock, if set, is held across each push: the daemon's Host, whose
	// pushes and pulls must not interleave with the syncer's.
	Lock sync.Locker

	mu    sync.Mutex
	state SyncState
}

// SyncState is a Syncer's state, as status shows it.
type SyncState struct {
	Remote   string `json:"remote"`
	URL      string `json:"url"`
	State    string `json:"state"` // idle, pushing, pending (a failure being retried), conflict (stopped: pull first)
	Every    string `json:"every"`
	LastPush string `json:"last_push,omitempty"`
	LastRoot string `json:"last_root,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	Uploaded int    `json:"uploaded_chunks"`
	Attempts int    `json:"attempts,omitempty"` // failures in a row
	NextTry  string `json:"next_try,omitempty"`
	Error    string `json:"error,omitempty"`
	Pid      int    `json:"pid"`
}

// SyncStatePath is the state file of workspace ws's syncers.
func SyncStatePath(ws string) string {
	return strings.TrimSuffix(ConfigPath(ws), ".remotes.json") + ".sync.json"
}

// ReadSyncState reads ws's sync state file (nil if none).
func ReadSyncState(ws string) (*SyncState, error) {
	b, err := os.ReadFile(SyncStatePath(ws))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s SyncState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sync state %s: %w", SyncStatePath(ws), err)
	}
	return &s, nil
}

// State is the syncer's state now.
func (s *Syncer) State() SyncState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *Syncer) set(fn func(*SyncState)) {
	s.mu.Lock()
	fn(&s.state)
	st := s.state
	s.mu.Unlock()
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := writeFileAtomic(SyncStatePath(s.WS), append(b, '\n')); err != nil && s.Log != nil {
		s.Log.Warn("sync state not written", "err", err)
	}
}

// Run syncs until ctx ends; it removes the state file when it returns.
func (s *Syncer) Run(ctx context.Context) {
	if s.MinBackoff == 0 {
		s.MinBackoff = time.Second
	}
	if s.MaxBackoff == 0 {
		s.MaxBackoff = time.Minute
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	defer os.Remove(SyncStatePath(s.WS))
	s.set(func(st *SyncState) {
		*st = SyncState{Remote: s.Remote, URL: s.Client.loc.String(), State: "idle", Every: s.Every.String(), Pid: os.Getpid()}
		if cfg, err := LoadConfig(s.WS); err == nil {
			st.LastRoot = cfg.Cursors[s.Remote].Root
		}
	})
	wait := s.Every
	backoff := s.MinBackoff
	var lastSnap, unpushed string
	// conflictAt is the cursor's manifest when a push was refused (the
	// remote moved): no push is tried until a pull moves it.
	var conflictAt string
	// Sync snapshots of an earlier run: all but the one last pushed go.
	var pendingSnap string
	if cfg, err := LoadConfig(s.WS); err == nil {
		lastSnap = cfg.Cursors[s.Remote].Snapshot
		if p := cfg.Cursors[s.Remote].Pending; p != nil {
			pendingSnap = p.Snapshot
		}
	}
	if snaps, err := s.FS.Snapshots(); err == nil {
		for _, sn := range snaps {
			if strings.HasPrefix(sn.Name, "sync-") && sn.Name != lastSnap && sn.Name != pendingSnap {
				s.dropSnapshot(sn.Name)
			}
		}
	}
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-s.kick(wait):
			timer.Stop()
		}
		wait = s.Every
		if conflictAt != "" {
			if s.cursorManifest() == conflictAt || s.cursorManifest() == "" && conflictAt == "-" {
				continue
			}
			conflictAt = ""
		}
		s.lock()
		root, err := s.FS.Root(ctx)
		if err != nil {
			s.unlock()
			if ctx.Err() != nil {
				return
			}
			s.Log.Warn("sync: read the root", "err", err)
			continue
		}
		if root.String() == s.State().LastRoot || s.synced(root.String()) {
			s.unlock()
			continue
		}
		s.set(func(st *SyncState) { st.State = "pushing" })
		if unpushed != "" {
			s.dropSnapshot(unpushed)
		}
		unpushed = "sync-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		var rep *PushReport
		_, err = s.FS.CreateSnapshot(ctx, unpushed)
		if err == nil {
			rep, err = PushFS(ctx, s.FS, s.WS, s.Client, PushOptions{Remote: s.Remote, Snapshot: unpushed})
		}
		s.unlock()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrRollback) {
				// Stopped until a pull (or a push through the daemon)
				// moves the cursor: then it tries again.
				s.Log.Error("sync stopped until a pull: the remote moved", "remote", s.Remote, "err", err)
				s.set(func(st *SyncState) { st.State, st.Error = "conflict", err.Error() })
				conflictAt = s.cursorManifest()
				if conflictAt == "" {
					conflictAt = "-"
				}
				continue
			}
			s.set(func(st *SyncState) {
				st.State, st.Error = "pending", err.Error()
				st.Attempts++
				st.NextTry = time.Now().Add(backoff).UTC().Format(time.RFC3339)
			})
			s.Log.Warn("sync: push failed; retrying", "remote", s.Remote, "in", backoff, "err", err)
			wait = backoff
			backoff = min(backoff*2, s.MaxBackoff)
			continue
		}
		unpushed = ""
		backoff = s.MinBackoff
		if strings.HasPrefix(lastSnap, "sync-") && lastSnap != rep.Snapshot {
			s.dropSnapshot(lastSnap)
		}
		lastSnap = rep.Snapshot
		s.set(func(st *SyncState) {
			st.State, st.Error, st.Attempts, st.NextTry = "idle", "", 0, ""
			st.LastPush, st.LastRoot, st.Snapshot, st.Uploaded = now(), rep.Root, rep.Snapshot, rep.Uploaded
		})
		s.Log.Info("sync: pushed", "remote", s.Remote, "snapshot", rep.Snapshot, "uploaded", rep.Uploaded)
	}
}

func (s *Syncer) cursorManifest() string {
	cfg, err := LoadConfig(s.WS)
	if err != nil {
		return ""
	}
	return cfg.Cursors[s.Remote].Manifest
}

func (s *Syncer) lock() {
	if s.Lock != nil {
		s.Lock.Lock()
	}
}

func (s *Syncer) unlock() {
	if s.Lock != nil {
		s.Lock.Unlock()
	}
}

// synced says whether the remote's cursor is at root already (a push or
// pull through the daemon moved it): then the state says so, and there
// is nothing to push.
func (s *Syncer) synced(root string) bool {
	cfg, err := LoadConfig(s.WS)
	if err != nil {
		return false
	}
	cur := cfg.Cursors[s.Remote]
	if cur.Root != root {
		return false
	}
	s.set(func(st *SyncState) {
		st.State, st.Error, st.Attempts, st.NextTry = "idle", "", 0, ""
		st.LastRoot, st.Snapshot = cur.Root, cur.Snapshot
	})
	return true
}

func (s *Syncer) dropSnapshot(name string) {
	if _, err := fs.DeleteSnapshot(s.FS.Store(), name); err != nil && !errors.Is(err, fs.ErrNoSnapshot) {
		s.Log.Warn("sync: delete a sync snapshot", "snapshot", name, "err", err)
	}
}

// kick is the Kick channel while no retry is waiting (wait is the tick).
func (s *Syncer) kick(wait time.Duration) <-chan struct{} {
	if wait != s.Every {
		return nil
	}
	return s.Kick
}

// PushStatus says whether the workspace as it is now is on the remote a
// Syncer pushes to, for an exec's result.
type PushStatus struct {
	Remote, URL string
	// State is "pushed" (the remote's HEAD, as last synced, is this
	// tree), "pending" (not yet: the push follows, retried while it
	// fails) or "conflict" (stopped until a pull).
	State                                      string
	Root                                       string // the workspace's root now
	PushedRoot, PushedManifest, PushedSnapshot string // the cursor
	Error                                      string // the last failure, while retried
}

// Status is where the workspace stands against the remote now: call it
// when an exec returns (before the syncer is kicked).
func (s *Syncer) Status(ctx context.Context) PushStatus {
	st := s.State()
	ps := PushStatus{Remote: s.Remote, URL: s.Client.loc.String(), State: "pending", Error: st.Error}
	if root, err := s.FS.Root(ctx); err == nil {
		ps.Root = root.String()
	}
	if cfg, err := LoadConfig(s.WS); err == nil {
		cur := cfg.Cursors[s.Remote]
		ps.PushedRoot, ps.PushedManifest, ps.PushedSnapshot = cur.Root, cur.Manifest, cur.Snapshot
	}
	switch {
	case st.State == "conflict":
		ps.State = "conflict"
	case ps.Root != "" && ps.Root == ps.PushedRoot:
		ps.State, ps.Error = "pushed", ""
	}
	return ps
}
