package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/versions"
)

// ApplyFunc moves a workspace's live tree to a pulled one:
// fs.FS.ApplyTree, or the daemon's file API's, which also tells the
// mount what changed.
type ApplyFunc func(ctx context.Context, recs []fs.TreeRecord, chunk func(chunkstore.ID) ([]byte, error), opts fs.ApplyTreeOptions) (*fs.RewindReport, fs.Snapshot, error)

// PullOptions say what to pull.
type PullOptions struct {
	Remote   string // the remote's name in ws's remotes file
	Snapshot string // "" is the HEAD
	// Force discards changes made to ws since it last synced, and
	// accepts a HEAD older than the newest seen, or a snapshot ref other
	// than the one seen (ErrRollback otherwise).
	Force    bool
	Progress func(Progress)
	// Apply moves the live tree (the FS's ApplyTree if nil).
	Apply ApplyFunc
}

// LocalChangesError is a pull refused because the workspace changed
// since it last synced with the remote: the pull would replace those
// changes. It wraps ErrConflict.
type LocalChangesError struct {
	WS, Remote string
	// Paths are the paths changed since the snapshot last synced, when
	// that snapshot is still there to compare with.
	Paths []string
	Since string // the snapshot (or "" when the workspace never synced)
}

func (e *LocalChangesError) Error() string {
	what := "it never synced with " + e.Remote
	if e.Since != "" {
		what = "since it last synced with " + e.Remote + " (snapshot " + e.Since + ")"
	}
	files := ""
	if len(e.Paths) > 0 {
		ps, more := e.Paths, ""
		if len(ps) > 20 {
			ps, more = ps[:20], fmt.Sprintf(" and %d more", len(e.Paths)-20)
		}
		files = ": " + strings.Join(ps, ", ") + more
	}
	return fmt.Sprintf("%s has changes %s that the pull would replace%s; push them first, or pull --force to replace them (the workspace's snapshots keep its history either way)", e.WS, what, files)
}

func (e *LocalChangesError) Unwrap() error { return ErrConflict }

// Pull is PullFS of the closed workspace ws, opened for the call.
func Pull(ctx context.Context, ws string, c *Client, opts PullOptions) (*CloneReport, error) {
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		return nil, fmt.Errorf("pull: open %s: %w", ws, err)
	}
	rep, err := PullFS(ctx, f, ws, c, opts)
	if cerr := f.Close(); err == nil && cerr != nil {
		return nil, fmt.Errorf("pull: close %s: %w", ws, cerr)
	}
	return rep, err
}

// PullFS brings the remote's HEAD (or opts.Snapshot) into the open
// workspace f (whose store is ws) as a snapshot of it, and moves its
// live tree there in one commit (opts.Apply): its own snapshots and
// exec records stay. Chunks it lacks are downloaded, verified, into
// SpoolDir(ws) (a killed pull's are reused), and the tree is checked
// against the snapshot's root before and as it is applied. It refuses
// (a *LocalChangesError, naming the files) when ws changed since it
// last synced with the remote, unless opts.Force.
func PullFS(ctx context.Context, f *fs.FS, ws string, c *Client, opts PullOptions) (*CloneReport, error) {
	cfg, err := LoadConfig(ws)
	if err != nil {
		return nil, err
	}
	cur := cfg.Cursors[opts.Remote]
	rel := "HEAD"
	if opts.Snapshot != "" {
		rel = "snapshots/" + snapKey(opts.Snapshot)
	}
	ref, _, err := c.getRef(ctx, rel)
	if err != nil && !errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("pull %s: %w", c.loc, err)
	}
	if !opts.Force {
		var rerr error
		if rel == "HEAD" {
			rerr = c.checkHead(cfg, opts.Remote, ref, err == nil)
		} else {
			rerr = c.checkSnapshot(cfg, opts.Remote, opts.Snapshot, ref, err == nil)
		}
		if rerr != nil {
			return nil, fmt.Errorf("pull: %w", rerr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pull %s: nothing there (no %s)", c.loc, rel)
	}
	note := func() error {
		if rel != "HEAD" {
			return c.noteSnapshot(cfg, opts.Remote, opts.Snapshot, ref)
		}
		return c.noteHead(cfg, opts.Remote, ref)
	}
	if cur.Pending != nil && ref.Manifest == cur.Pending.Manifest {
		cur = *cur.Pending // a push that landed before it was recorded
	}
	local, err := f.Root(ctx)
	if err != nil {
		return nil, fmt.Errorf("pull: %w", err)
	}
	if local.String() == ref.Root {
		cur = Cursor{Manifest: ref.Manifest, Root: ref.Root, Snapshot: cur.Snapshot, At: now()}
		if cur.Snapshot == "" {
			cur.Snapshot = ref.Snapshot
		}
		cfg.Cursors[opts.Remote] = cur
		if err := note(); err != nil {
			return nil, err
		}
		return &CloneReport{Snapshot: ref.Snapshot, Root: ref.Root, Manifest: ref.Manifest, UpToDate: true}, cfg.Save(ws)
	}
	if !opts.Force && local.String() != cur.Root {
		return nil, fmt.Errorf("pull %s: %w", c.loc, localChanges(f, ws, opts.Remote, cur))
	}
	m, err := c.manifest(ctx, ref.Manifest)
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("pull %s: manifest %s is missing", c.loc, ref.Manifest)
	}
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", c.loc, err)
	}
	if m.Root != ref.Root || m.Generation != ref.Generation {
		return nil, fmt.Errorf("pull %s: %w: manifest %s has root %s, generation %d; its ref says %s, %d", c.loc, ErrFormat, short(ref.Manifest), short(m.Root), m.Generation, short(ref.Root), ref.Generation)
	}
	if err := note(); err != nil {
		return nil, err
	}
	if m.ChunkSize != f.ChunkSize() {
		return nil, fmt.Errorf("pull %s: the snapshot has chunks of %d bytes, this workspace %d: clone it into a new workspace instead", c.loc, m.ChunkSize, f.ChunkSize())
	}
	if err := fs.CheckTree(m.Records, m.ChunkSize); err != nil {
		return nil, fmt.Errorf("pull %s: %w", c.loc, err)
	}
	root, err := versions.ParseRoot(m.Root)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w: %v", c.loc, ErrFormat, err)
	}
	rep := &CloneReport{Snapshot: m.Snapshot, Root: m.Root, Manifest: ref.Manifest, Records: len(m.Records), Chunks: len(m.Chunks())}
	spool := SpoolDir(ws)
	have := func(id chunkstore.ID) bool {
		var ok bool
		f.Store().View(func(tx *chunkstore.Tx) error { ok, _ = tx.Has(id); return nil })
		return ok
	}
	if rep.Downloaded, rep.DownloadedBytes, err = c.download(ctx, m, spool, have, opts.Progress); err != nil {
		return nil, fmt.Errorf("pull %s: %w", c.loc, err)
	}
	// The local snapshot: the pushed name, unless the workspace has one
	// of that name already.
	name := m.Snapshot
	if snaps, err := f.Snapshots(); err == nil {
		for _, s := range snaps {
			if s.Name == name {
				name = "pull-" + time.Now().UTC().Format("20060102T150405.000000000Z")
				break
			}
		}
	}
	apply := opts.Apply
	if apply == nil {
		apply = func(ctx context.Context, recs []fs.TreeRecord, chunk func(chunkstore.ID) ([]byte, error), o fs.ApplyTreeOptions) (*fs.RewindReport, fs.Snapshot, error) {
			r, _, s, err := f.ApplyTree(ctx, recs, chunk, o)
			return r, s, err
		}
	}
	rr, snap, err := apply(ctx, m.Records, func(id chunkstore.ID) ([]byte, error) { return ReadSpooled(spool, id) }, fs.ApplyTreeOptions{Root: root, Snapshot: name})
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", c.loc, err)
	}
	os.RemoveAll(spool)
	rep.LocalSnapshot, rep.Changed = snap.Name, rr.Records
	// The marker of the last sync goes, as a push drops its own: it is
	// a point of the remote's history, kept there.
	if old := cur.Snapshot; old != snap.Name && (strings.HasPrefix(old, "push-") || strings.HasPrefix(old, "sync-")) {
		if _, err := fs.DeleteSnapshot(f.Store(), old); err != nil && !errors.Is(err, fs.ErrNoSnapshot) {
			return nil, fmt.Errorf("pull: delete snapshot %s: %w", old, err)
		}
	}
	cfg.Cursors[opts.Remote] = Cursor{Manifest: ref.Manifest, Root: ref.Root, Snapshot: snap.Name, At: now()}
	if err := cfg.Save(ws); err != nil {
		return nil, err
	}
	return rep, nil
}

// localChanges says what changed in f since cursor cur: the paths, when
// the snapshot cur names is still there with cur's root.
func localChanges(f *fs.FS, ws, remote string, cur Cursor) error {
	e := &LocalChangesError{WS: ws, Remote: remote}
	if cur.Root == "" {
		return e
	}
	e.Since = cur.Snapshot
	snaps, err := f.Snapshots()
	if err != nil {
		return e
	}
	for _, s := range snaps {
		if s.Name == cur.Snapshot && s.Root.String() == cur.Root {
			if d, err := fs.DiffSnapshots(f.Store(), s.Name, ""); err == nil {
				for _, x := range d {
					p := x.Path
					if p == "" {
						p = x.OldPath
					}
					e.Paths = append(e.Paths, p)
				}
			}
		}
	}
	return e
}
