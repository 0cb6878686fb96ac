package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
)

// Progress is how far a transfer is: Done of Total chunks in Phase, and
// the object bytes sent or received.
type Progress struct {
	Phase       string
	Done, Total int
	Bytes       int64
}

// progress counts a transfer and reports it at most every 100 ms.
type progress struct {
	fn          func(Progress)
	phase       string
	total       int
	done, bytes atomic.Int64
	mu          sync.Mutex
	last        time.Time
}

func (p *progress) add(chunks int, bytes int64) {
	p.done.Add(int64(chunks))
	p.bytes.Add(bytes)
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) >= 100*time.Millisecond {
		p.last = time.Now()
		p.fn(Progress{Phase: p.phase, Done: int(p.done.Load()), Total: p.total, Bytes: p.bytes.Load()})
	}
}

func (p *progress) finish() {
	if p.fn != nil {
		p.fn(Progress{Phase: p.phase, Done: int(p.done.Load()), Total: p.total, Bytes: p.bytes.Load()})
	}
}

// PushOptions say what to push.
type PushOptions struct {
	// Remote names the remote in ws's remotes file, whose cursor the
	// push checks and moves.
	Remote string
	// Snapshot is the snapshot to push; "" takes one now, named
	// push-TIME.
	Snapshot string
	Progress func(Progress)
	// Host is recorded in the ref (os.Hostname() if "").
	Host string
	// Force accepts a HEAD older than the newest this workspace has
	// seen (ErrRollback otherwise).
	Force bool
}

// PushReport says what a push did.
type PushReport struct {
	Snapshot, Root, Manifest string
	Chunks                   int   // distinct chunks in the snapshot
	Checked                  int   // chunks asked about (HEAD): not in the manifest last synced
	Uploaded                 int   // chunk objects uploaded
	UploadedBytes            int64 // their bytes (compressed)
	PlainBytes               int64 // their plaintext bytes
	ManifestBytes            int
	UpToDate                 bool // the remote already had this snapshot's root
}

// Push uploads snapshot opts.Snapshot of the closed workspace ws to c:
// the chunks the bucket lacks, concurrently, then the manifest, a ref
// under snapshots/NAME and the workspace's HEAD. HEAD moves only if it
// is still what ws last synced with (a conditional write on its ETag):
// a remote another host pushed to since is refused with ErrConflict,
// never overwritten. A push killed midway leaves chunks only, which the
// next push finds and skips.
func Push(ctx context.Context, ws string, c *Client, opts PushOptions) (*PushReport, error) {
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		return nil, fmt.Errorf("push: open %s: %w", ws, err)
	}
	defer f.Close()
	return PushFS(ctx, f, ws, c, opts)
}

// PushFS is Push of an open workspace f whose store is ws (a daemon's:
// continuous sync). Only the snapshot it takes touches f; the rest reads
// the snapshot, so writes go on meanwhile.
func PushFS(ctx context.Context, f *fs.FS, ws string, c *Client, opts PushOptions) (rep *PushReport, err error) {
	cfg, err := LoadConfig(ws)
	if err != nil {
		return nil, err
	}
	cur := cfg.Cursors[opts.Remote]
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.Snapshot == "" {
		// A snapshot of its own, kept while it is the last pushed: the
		// one the previous push took goes once this one is up, and this
		// one goes if the push fails.
		opts.Snapshot = "push-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if _, err := f.CreateSnapshot(ctx, opts.Snapshot); err != nil {
			return nil, fmt.Errorf("push: %w", err)
		}
		defer func() {
			drop := opts.Snapshot
			if err == nil && !rep.UpToDate {
				drop = cur.Snapshot
				if !strings.HasPrefix(drop, "push-") || drop == opts.Snapshot {
					return
				}
			}
			if _, derr := fs.DeleteSnapshot(f.Store(), drop); derr != nil && !errors.Is(derr, fs.ErrNoSnapshot) {
				err = errors.Join(err, fmt.Errorf("push: delete snapshot %s: %w", drop, derr))
			}
		}()
	}
	m := &Manifest{ManifestHeader: ManifestHeader{Format: 1, ChunkSize: f.Store().ChunkSize(), Host: opts.Host}}
	snap, err := fs.ExportSnapshot(f.Store(), opts.Snapshot, func(r fs.TreeRecord) error {
		m.Records = append(m.Records, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	m.Snapshot, m.Epoch, m.Created, m.Root = snap.Name, snap.Epoch, snap.Created, snap.Root.String()
	rep = &PushReport{Snapshot: snap.Name, Root: m.Root}

	// Where the remote is.
	ref, etag, err := c.getRef(ctx, "HEAD")
	if err != nil && !errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("push to %s: HEAD: %w", c.loc, err)
	}
	found := err == nil
	rolledBack := false
	if rerr := c.checkHead(cfg, opts.Remote, ref, found); rerr != nil {
		if !errors.Is(rerr, ErrRollback) || !opts.Force {
			return nil, fmt.Errorf("push to %s: %w", c.loc, rerr)
		}
		rolledBack = true // forced: HEAD moves on from what is there
	}
	gen := max(ref.Generation, cfg.Heads[opts.Remote].Generation) + 1
	switch {
	case !found:
		etag = "*"
	default:
		if cur.Pending != nil && ref.Manifest == cur.Pending.Manifest {
			// The last push moved HEAD but was killed before it
			// recorded so: it is what this workspace synced with.
			cur = *cur.Pending
		}
		if ref.Manifest != cur.Manifest && ref.Root != m.Root && !rolledBack {
			return nil, fmt.Errorf("push to %s: %w: it holds snapshot %s (root %s) pushed by %s at %s, and this workspace last synced with %s; pull it first, or push to another prefix",
				c.loc, ErrConflict, ref.Snapshot, short(ref.Root), ref.Host, ref.PushedAt, orNothing(cur.Manifest))
		}
		m.Parent = ref.Manifest
	}

	// Chunks the remote is known to hold: those of the manifest last
	// synced with (uploaded before it was written).
	known := make(map[chunkstore.ID]bool)
	if cur.Manifest != "" && cur.Manifest == ref.Manifest {
		if pm, err := c.manifest(ctx, cur.Manifest); err == nil {
			for _, id := range pm.Chunks() {
				known[id] = true
			}
		} else if !errors.Is(err, errNotFound) {
			return nil, fmt.Errorf("push to %s: %w", c.loc, err)
		}
	}
	all := m.Chunks()
	rep.Chunks = len(all)
	var check []chunkstore.ID
	for _, id := range all {
		if !known[id] {
			check = append(check, id)
		}
	}
	rep.Checked = len(check)
	pr := &progress{fn: opts.Progress, phase: "upload", total: len(check)}
	var uploaded, plain atomic.Int64
	// Sealing chunks wants every CPU (a governed daemon, internal/procs).
	defer f.Parallel()()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.conc)
	for _, id := range check {
		g.Go(func() error {
			key := c.chunkKey(id)
			ok, err := c.has(gctx, key)
			if err != nil {
				return err
			}
			if ok {
				pr.add(1, 0)
				return nil
			}
			var data []byte
			if err := f.Store().View(func(tx *chunkstore.Tx) error {
				d, err := tx.Get(id, nil)
				data = d
				return err
			}); err != nil {
				return fmt.Errorf("read chunk %s: %w", id, err)
			}
			obj := c.sealChunk(id, encodeChunk(data))
			if err := c.put(gctx, key, obj, ""); err != nil {
				return err
			}
			uploaded.Add(1)
			plain.Add(int64(len(data)))
			pr.add(1, int64(len(obj)))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("push to %s: %w", c.loc, err)
	}
	pr.finish()
	rep.Uploaded, rep.UploadedBytes, rep.PlainBytes = int(uploaded.Load()), pr.bytes.Load(), plain.Load()

	if ref.Root == m.Root && ref.Manifest != "" {
		// Nothing to record: the remote's HEAD is this very tree.
		rep.UpToDate, rep.Manifest = true, ref.Manifest
		cfg.Cursors[opts.Remote] = Cursor{Manifest: ref.Manifest, Root: ref.Root, Snapshot: ref.Snapshot, At: now()}
		if err := c.noteHead(cfg, opts.Remote, ref); err != nil {
			return nil, err
		}
		return rep, cfg.Save(ws)
	}
	m.PushedAt = now()
	m.Generation = gen
	mid, msize, err := c.putManifest(ctx, EncodeManifest(m))
	if err != nil {
		return nil, fmt.Errorf("push to %s: %w", c.loc, err)
	}
	rep.Manifest, rep.ManifestBytes = mid, msize
	nref := Ref{Manifest: mid, Root: m.Root, Snapshot: m.Snapshot, Parent: m.Parent, Host: opts.Host, PushedAt: m.PushedAt, Generation: gen}
	srel := "snapshots/" + snapKey(m.Snapshot)
	if err := c.putRef(ctx, srel, nref, "*"); errors.Is(err, ErrConflict) {
		// Already there: fine if it names this tree.
		old, _, gerr := c.getRef(ctx, srel)
		if gerr != nil || old.Root != m.Root {
			return nil, fmt.Errorf("push to %s: %w: a snapshot named %s is already there with another root", c.loc, ErrConflict, m.Snapshot)
		}
	} else if err != nil {
		return nil, fmt.Errorf("push to %s: %w", c.loc, err)
	}
	// Recorded first, so that a push killed once HEAD is written is
	// known as ours by the next.
	pend := Cursor{Manifest: mid, Root: m.Root, Snapshot: m.Snapshot, At: m.PushedAt}
	withPending := cur
	withPending.Pending = &pend
	cfg.Cursors[opts.Remote] = withPending
	if err := cfg.Save(ws); err != nil {
		return nil, err
	}
	if err := c.putRef(ctx, "HEAD", nref, etag); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("push to %s: %w: another push moved its HEAD meanwhile; pull it first (the chunks and manifest uploaded stay, and cost nothing to push again)", c.loc, ErrConflict)
		}
		return nil, fmt.Errorf("push to %s: %w", c.loc, err)
	}
	cfg.Cursors[opts.Remote] = pend
	if err := c.noteHead(cfg, opts.Remote, nref); err != nil {
		return nil, err
	}
	if err := cfg.Save(ws); err != nil {
		return nil, err
	}
	return rep, nil
}

// manifest reads, checks and decodes manifest id.
func (c *Client) manifest(ctx context.Context, id string) (*Manifest, error) {
	b, _, err := c.get(ctx, c.manifestKey(id), maxManifest)
	if err != nil {
		return nil, err
	}
	if got := ManifestID(b); got != id {
		return nil, fmt.Errorf("manifest %s: %w: its bytes hash to %s", id, ErrFormat, got)
	}
	if c.enc != nil {
		if b, err = c.enc.open("manifest", b); err != nil {
			return nil, err
		}
	} else if isSealed(b) {
		return nil, fmt.Errorf("manifest %s: %w", id, ErrEncrypted)
	}
	return DecodeManifest(b, maxManifest)
}

// snapKey is a snapshot name as an object key segment: hex of its
// bytes when it holds anything but [A-Za-z0-9._-] (names may hold any
// byte but / and NUL).
func snapKey(name string) string {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') || name[0] == '.' {
			return fmt.Sprintf("x-%x", name)
		}
	}
	return name
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func orNothing(s string) string {
	if s == "" {
		return "nothing (no push or clone recorded)"
	}
	return "manifest " + short(s)
}
