package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/workspace"
	"golang.org/x/sys/unix"
)

// policyViews are the daemon's policy views of the workspace: for each
// backend that needs the mount and has path rules (the container), a
// second FUSE mount of the same store under those rules, which the
// backend binds instead of the plain mount (see fusefs/rules.go and
// containerbackend/doc.go). Every mount tells the others of the changes
// made through it, and the file API's changes reach them all: each is a
// workspace.Notifier's target.
type policyViews struct {
	f          *fs.FS
	allowOther bool
	fsName     string
	log        *slog.Logger
	// readOnly and noExec are the main mount's ro and noexec: its views
	// are no less strict.
	readOnly, noExec bool

	mu    sync.Mutex
	main  *fusefs.Server            // the plain mount, once up
	views map[string]*fusefs.Server // by backend
	rules map[string]string         // the rules each view was mounted with (Rules.String)
	seq   int                       // names the mountpoints of remounted views
	dir   string                    // holds their mountpoints
	// forks are the mounts of forks (for backends that need the mount
	// and run an exec in a fork), by fork ‖ "/" ‖ backend.
	forks map[string]*forkMount
}

type forkMount struct {
	fork string
	srv  *fusefs.Server
}

func newPolicyViews(f *fs.FS, allowOther bool, fsName string, log *slog.Logger) *policyViews {
	return &policyViews{f: f, allowOther: allowOther, fsName: fsName, log: log, views: map[string]*fusefs.Server{}, rules: map[string]string{}, forks: map[string]*forkMount{}}
}

// setMain records the plain mount, and whether other users may use it
// (the views follow: the container's root needs allow_other).
func (v *policyViews) setMain(s *fusefs.Server, allowOther bool) {
	v.mu.Lock()
	v.main, v.allowOther = s, allowOther
	v.mu.Unlock()
}

// mount returns the mountpoint of backend id's view, mounting it the
// first time (backends.Options.ViewMount).
//
// A view mounted under other rules (the policy was reloaded: the backend
// restarts, so nothing binds the old view any more) is unmounted, and
// one under the new rules mounted at a new mountpoint.
func (v *policyViews) mount(id string, rules *workspace.Rules, onDeny func(workspace.Denial)) (string, error) {
	v.mu.Lock()
	if s, ok := v.views[id]; ok {
		if v.rules[id] == rules.String() {
			v.mu.Unlock()
			return s.Mountpoint(), nil
		}
		delete(v.views, id)
		v.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.Shutdown(ctx)
		cancel()
		if err != nil {
			v.log.Error("unmount a policy view of old rules", "backend", id, "mountpoint", s.Mountpoint(), "err", err)
		}
		os.Remove(s.Mountpoint())
		v.log.Info("policy view unmounted: its rules changed", "backend", id, "mountpoint", s.Mountpoint())
		v.mu.Lock()
	}
	defer v.mu.Unlock()
	if s, ok := v.views[id]; ok { // mounted meanwhile
		return s.Mountpoint(), nil
	}
	if err := v.dirLocked(); err != nil {
		return "", err
	}
	mnt := filepath.Join(v.dir, id)
	if _, remount := v.rules[id]; remount {
		v.seq++
		mnt = filepath.Join(v.dir, fmt.Sprintf("%s.%d", id, v.seq))
	}
	if err := os.Mkdir(mnt, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("policy view of %s: %w", id, err)
	}
	s, err := fusefs.Mount(v.f, mnt, fusefs.Options{AllowOther: v.allowOther, Logger: v.log, FsName: v.fsName + " (" + id + viewSuffix, Rules: rules, OnDeny: onDeny, ReadOnly: v.readOnly, NoExec: v.noExec,
		Changed: func(parent fs.Ino, name string, ino fs.Ino) { v.tell(id, parent, name, ino) }})
	if err != nil {
		return "", fmt.Errorf("policy view of %s: %w", id, err)
	}
	v.views[id] = s
	v.rules[id] = rules.String()
	v.log.Info("policy view mounted", "backend", id, "mountpoint", mnt)
	return mnt, nil
}

// dirLocked makes the directory that holds the mountpoints.
func (v *policyViews) dirLocked() error {
	if v.dir != "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "computerfs-views-")
	if err != nil {
		return fmt.Errorf("policy views: %w", err)
	}
	v.dir = dir
	return nil
}

// mountFork returns the mountpoint of fork's mount for backend
// (backends.Options.ForkMount), mounting it the first time: a FUSE mount
// of the fork under backend's rules, which the fork's file API tells of
// its changes (api.SetForkNotifier).
func (v *policyViews) mountFork(api *workspace.WS) func(fork, backend string, rules *workspace.Rules) (string, error) {
	return func(fork, backend string, rules *workspace.Rules) (string, error) {
		v.mu.Lock()
		defer v.mu.Unlock()
		key := fork + "/" + backend
		if m, ok := v.forks[key]; ok {
			return m.srv.Mountpoint(), nil
		}
		if err := v.dirLocked(); err != nil {
			return "", err
		}
		fk, err := v.f.OpenFork(fork)
		if err != nil {
			return "", err
		}
		mnt := filepath.Join(v.dir, "fork-"+fork+"-"+backend)
		if err := os.Mkdir(mnt, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("mount of fork %s: %w", fork, err)
		}
		s, err := fusefs.Mount(fk, mnt, fusefs.Options{AllowOther: v.allowOther, Logger: v.log, FsName: v.fsName + " (fork " + fork + " for " + backend + viewSuffix, Rules: rules})
		if err != nil {
			return "", fmt.Errorf("mount of fork %s: %w", fork, err)
		}
		v.forks[key] = &forkMount{fork: fork, srv: s}
		var targets []workspace.Notifier
		for _, m := range v.forks {
			if m.fork == fork {
				targets = append(targets, m.srv)
			}
		}
		api.SetForkNotifier(fork, notifiers(targets))
		v.log.Info("fork mounted", "fork", fork, "backend", backend, "mountpoint", mnt)
		return mnt, nil
	}
}

// notifiers tells each of its notifiers.
type notifiers []workspace.Notifier

func (ns notifiers) Invalidate(parent fs.Ino, name string, ino fs.Ino) {
	for _, n := range ns {
		n.Invalidate(parent, name, ino)
	}
}

// closeFork unmounts fork's mounts (before it is merged or discarded,
// after the backends that bound them stopped).
func (v *policyViews) closeFork(ctx context.Context, fork string) {
	v.mu.Lock()
	var ms []*forkMount
	for k, m := range v.forks {
		if m.fork == fork {
			ms = append(ms, m)
			delete(v.forks, k)
		}
	}
	v.mu.Unlock()
	for _, m := range ms {
		mnt := m.srv.Mountpoint()
		if err := m.srv.Shutdown(ctx); err != nil {
			v.log.Error("unmount a fork", "fork", fork, "err", err)
		}
		os.Remove(mnt)
	}
}

// tell passes a change made through mount from ("" for the plain one)
// to every other mount.
func (v *policyViews) tell(from string, parent fs.Ino, name string, ino fs.Ino) {
	v.mu.Lock()
	if len(v.views) == 0 {
		v.mu.Unlock()
		return // the plain mount's writes cost no more without views
	}
	targets := make([]*fusefs.Server, 0, len(v.views)+1)
	if from != "" && v.main != nil {
		targets = append(targets, v.main)
	}
	for id, s := range v.views {
		if id != from {
			targets = append(targets, s)
		}
	}
	v.mu.Unlock()
	for _, s := range targets {
		s.Invalidate(parent, name, ino)
	}
}

// fromMain is the plain mount's fusefs.Options.Changed.
func (v *policyViews) fromMain(parent fs.Ino, name string, ino fs.Ino) { v.tell("", parent, name, ino) }

// Invalidate tells every mount of a change made through the file API.
func (v *policyViews) Invalidate(parent fs.Ino, name string, ino fs.Ino) {
	v.mu.Lock()
	main := v.main
	v.mu.Unlock()
	if main != nil {
		main.Invalidate(parent, name, ino)
	}
	v.tell("", parent, name, ino)
}

// close unmounts the views (after the backends that bind them stopped).
func (v *policyViews) close(ctx context.Context) {
	v.mu.Lock()
	views := v.views
	v.views = map[string]*fusefs.Server{}
	dir := v.dir
	var forks []string
	for _, m := range v.forks {
		forks = append(forks, m.fork)
	}
	v.mu.Unlock()
	for _, fork := range forks {
		v.closeFork(ctx, fork)
	}
	for id, s := range views {
		if err := s.Shutdown(ctx); err != nil {
			v.log.Error("unmount a policy view", "backend", id, "err", err)
		}
	}
	if dir != "" {
		for _, s := range views {
			os.Remove(s.Mountpoint())
		}
		os.Remove(dir)
	}
}

// viewSuffix ends the FUSE source of every policy view (Options.FsName:
// the plain mount's mountpoint, then " (ID policy view)"), and of every
// fork's mount (" (fork FORK for ID policy view)"), so that a killed
// daemon's are all found and detached (detachStaleViews).
const viewSuffix = " policy view)"

// detachStaleViews detaches the policy views (forks' mounts included) of mountpoint mnt left by a
// daemon that is gone (killed: their FUSE connection answers statfs with ENOTCONN),
// and removes their mountpoints; it returns how many it detached. A live
// daemon's views answer, and are left alone. umount of the plain mount
// calls it, and so does the next mount at mnt.
func detachStaleViews(mnt string, log *slog.Logger) int {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return 0
	}
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range mounts {
		if m.FSType != "fuse.computerfs" || !strings.HasPrefix(m.Source, abs+" (") || !strings.HasSuffix(m.Source, viewSuffix) {
			continue
		}
		// statfs always goes to the daemon (stat may be answered from
		// the kernel's cache): a dead one's connection says ENOTCONN.
		var st unix.Statfs_t
		if err := unix.Statfs(m.Point, &st); !errors.Is(err, unix.ENOTCONN) {
			continue // served: a live daemon's
		}
		if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil {
			log.Warn("detach a stale policy view", "mountpoint", m.Point, "err", err)
			continue
		}
		n++
		os.Remove(m.Point)
		if dir := filepath.Dir(m.Point); strings.HasPrefix(filepath.Base(dir), "computerfs-views-") {
			os.Remove(dir) // once empty
		}
		log.Info("detached a stale policy view of a daemon that is gone", "mountpoint", m.Point, "view", m.Source)
	}
	return n
}
