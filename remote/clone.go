package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/versions"
)

// CloneOptions say what to clone and how to record it.
type CloneOptions struct {
	// Snapshot is the pushed snapshot to clone; "" is the HEAD.
	Snapshot string
	// RemoteName and Remote are recorded in the new workspace's remotes
	// file, with the cursor of what was cloned.
	RemoteName string
	Remote     Remote
	Progress   func(Progress)
	// KeepSpool leaves the downloaded chunks in SpoolDir(ws) (a lazy
	// mount reads them).
	KeepSpool bool
	// Force accepts a HEAD older than the newest the client's HeadBook
	// has seen, or a snapshot ref other than the one it saw (ErrRollback
	// otherwise).
	Force bool
}

// CloneReport says what a clone did.
type CloneReport struct {
	Snapshot, Root, Manifest string
	Records                  int
	Chunks                   int   // distinct chunks in the snapshot
	Downloaded               int   // chunk objects downloaded
	DownloadedBytes          int64 // their bytes
	UpToDate                 bool  // pull: nothing to do
	// LocalSnapshot (pull) is the snapshot of the workspace that names
	// the pulled tree, taken in the commit that moved the live tree to
	// it; Changed is the records that commit put back or removed.
	LocalSnapshot string
	Changed       int
}

// DamageError is a clone or pull refused because chunks on the remote
// are missing or do not match their content IDs.
type DamageError struct {
	Missing, Corrupt []chunkstore.ID
	Paths            []string // the files that hold them
}

func (e *DamageError) Error() string {
	paths := e.Paths
	more := ""
	if len(paths) > 20 {
		paths, more = paths[:20], fmt.Sprintf(" and %d more", len(e.Paths)-20)
	}
	return fmt.Sprintf("%d chunks missing and %d damaged on the remote (nothing installed); files affected: %s%s",
		len(e.Missing), len(e.Corrupt), strings.Join(paths, ", "), more)
}

// Clone builds workspace ws (which must not exist) from c's HEAD or
// opts.Snapshot. Chunks are downloaded concurrently into ws.clone.d,
// each checked against its content ID (a killed clone's chunks are kept
// there and not fetched again), then the tree is built in
// ws.clone.partial, checked against the snapshot's root, and renamed to
// ws. Missing or damaged chunks fail it with a DamageError naming the
// files; nothing is installed.
func Clone(ctx context.Context, c *Client, ws string, opts CloneOptions) (*CloneReport, error) {
	if _, err := os.Lstat(ws); err == nil {
		return nil, fmt.Errorf("clone: %s exists", ws)
	}
	rel := "HEAD"
	if opts.Snapshot != "" {
		rel = "snapshots/" + snapKey(opts.Snapshot)
	}
	ref, _, err := c.getRef(ctx, rel)
	if !opts.Force && (err == nil || errors.Is(err, errNotFound)) {
		if rerr := c.checkRef(opts.Snapshot, ref, err == nil); rerr != nil {
			return nil, fmt.Errorf("clone: %w", rerr)
		}
	}
	if errors.Is(err, errNotFound) {
		if opts.Snapshot != "" {
			return nil, fmt.Errorf("clone %s: no snapshot %s there", c.loc, opts.Snapshot)
		}
		return nil, fmt.Errorf("clone %s: nothing pushed there (no HEAD)", c.loc)
	}
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", c.loc, err)
	}
	return c.cloneRef(ctx, ws, ref, opts)
}

func (c *Client) cloneRef(ctx context.Context, ws string, ref Ref, opts CloneOptions) (*CloneReport, error) {
	m, err := c.manifest(ctx, ref.Manifest)
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("clone %s: manifest %s is missing", c.loc, ref.Manifest)
	}
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", c.loc, err)
	}
	if m.Root != ref.Root || m.Generation != ref.Generation {
		return nil, fmt.Errorf("clone %s: %w: manifest %s has root %s, generation %d; its ref says %s, %d", c.loc, ErrFormat, short(ref.Manifest), short(m.Root), m.Generation, short(ref.Root), ref.Generation)
	}
	root, _ := versions.ParseRoot(m.Root)
	rep := &CloneReport{Snapshot: m.Snapshot, Root: m.Root, Manifest: ref.Manifest, Records: len(m.Records)}
	ids := m.Chunks()
	rep.Chunks = len(ids)

	spool := SpoolDir(ws)
	have := func(chunkstore.ID) bool { return false }
	if rep.Downloaded, rep.DownloadedBytes, err = c.download(ctx, m, spool, have, opts.Progress); err != nil {
		return nil, fmt.Errorf("clone %s: %w", c.loc, err)
	}
	readSpool := func(id chunkstore.ID) ([]byte, error) { return ReadSpooled(spool, id) }

	partial := ws + ".clone.partial"
	os.Remove(partial)
	nf, err := fs.Open(partial, fs.Options{ChunkSize: m.ChunkSize})
	if err != nil {
		return nil, fmt.Errorf("clone: create %s: %w", partial, err)
	}
	if err := nf.Close(); err != nil {
		return nil, fmt.Errorf("clone: create %s: %w", partial, err)
	}
	st, err := chunkstore.Open(partial, chunkstore.Options{MustExist: true})
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	if st.ChunkSize() != m.ChunkSize {
		st.Close()
		return nil, fmt.Errorf("clone: new store has chunk size %d, the snapshot %d", st.ChunkSize(), m.ChunkSize)
	}
	_, err = fs.ImportTree(st, m.Records, readSpool, fs.ImportOptions{Root: root, Snapshot: m.Snapshot})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", c.loc, err)
	}
	// Checked once more, as a reader will find it.
	if err := checkRoot(partial, root); err != nil {
		return nil, fmt.Errorf("clone %s: %w", c.loc, err)
	}
	if err := os.Rename(partial, ws); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	if err := syncDir(filepath.Dir(ws)); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	if !opts.KeepSpool {
		os.RemoveAll(spool)
	}
	cfg, err := LoadConfig(ws)
	if err != nil {
		return nil, err
	}
	if opts.RemoteName == "" {
		if err := c.noteRef(nil, "", opts.Snapshot, ref); err != nil {
			return nil, err
		}
	}
	if opts.RemoteName != "" {
		if opts.Remote.URL != "" {
			cfg.Remotes[opts.RemoteName] = opts.Remote
		}
		cfg.Cursors[opts.RemoteName] = Cursor{Manifest: ref.Manifest, Root: ref.Root, Snapshot: ref.Snapshot, At: now()}
		if err := c.noteRef(cfg, opts.RemoteName, opts.Snapshot, ref); err != nil {
			return nil, err
		}
		if err := cfg.Save(ws); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// SpoolDir is where chunks downloaded for workspace ws wait, verified,
// until its clone is built: a killed clone's downloads are reused.
func SpoolDir(ws string) string { return ws + ".clone.d" }

// download fetches the chunks of m that have lacks and spool does not
// hold yet into spool, concurrently, each checked against its ID.
// Missing or damaged ones fail it with a *DamageError naming the files
// that hold them.
func (c *Client) download(ctx context.Context, m *Manifest, spool string, have func(chunkstore.ID) bool, report func(Progress)) (int, int64, error) {
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return 0, 0, err
	}
	var need []chunkstore.ID
	for _, id := range m.Chunks() {
		if have(id) {
			continue
		}
		if _, err := ReadSpooled(spool, id); err == nil {
			continue
		}
		need = append(need, id)
	}
	pr := &progress{fn: report, phase: "download", total: len(need)}
	var mu sync.Mutex
	damage := &DamageError{}
	var downloaded atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.conc)
	for _, id := range need {
		g.Go(func() error {
			data, n, err := c.fetchChunk(gctx, id, m.ChunkSize)
			if errors.Is(err, errNotFound) || errors.Is(err, ErrFormat) {
				mu.Lock()
				if errors.Is(err, errNotFound) {
					damage.Missing = append(damage.Missing, id)
				} else {
					damage.Corrupt = append(damage.Corrupt, id)
				}
				mu.Unlock()
				pr.add(1, 0)
				return nil
			}
			if err != nil {
				return err
			}
			if err := WriteSpooled(spool, id, data); err != nil {
				return err
			}
			downloaded.Add(1)
			pr.add(1, int64(n))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	pr.finish()
	if len(damage.Missing)+len(damage.Corrupt) > 0 {
		bad := make(map[chunkstore.ID]bool)
		for _, id := range append(append([]chunkstore.ID(nil), damage.Missing...), damage.Corrupt...) {
			bad[id] = true
		}
		damage.Paths = fs.PathsOf(m.Records, bad)
		sortIDs(damage.Missing)
		sortIDs(damage.Corrupt)
		return 0, 0, damage
	}
	return int(downloaded.Load()), pr.bytes.Load(), nil
}

// ReadSpooled reads chunk id from spool, checked against its ID.
func ReadSpooled(spool string, id chunkstore.ID) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(spool, id.String()))
	if err != nil {
		return nil, err
	}
	if chunkstore.Sum(b) != id {
		return nil, fmt.Errorf("spooled chunk %s: %w", id, chunkstore.ErrCorrupt)
	}
	return b, nil
}

// WriteSpooled stores chunk id's plaintext in spool (atomically).
func WriteSpooled(spool string, id chunkstore.ID, data []byte) error {
	return writeFileAtomic(filepath.Join(spool, id.String()), data)
}

// fetchChunk downloads chunk id and returns its verified plaintext and
// the object's size: errNotFound if missing, ErrFormat if it does not
// decode to its ID.
func (c *Client) fetchChunk(ctx context.Context, id chunkstore.ID, chunkSize int) ([]byte, int, error) {
	b, _, err := c.get(ctx, c.chunkKey(id), int64(chunkSize)+int64(chunkSize)/8+1024+int64(sealOverhead))
	if err != nil {
		return nil, 0, err
	}
	if b, err = c.openChunk(id, b); err != nil {
		return nil, 0, err
	}
	data, err := decodeChunk(id, b, chunkSize)
	return data, len(b), err
}

// FetchChunk is a chunk of a manifest, downloaded and verified.
func (c *Client) FetchChunk(ctx context.Context, id chunkstore.ID, chunkSize int) ([]byte, error) {
	data, _, err := c.fetchChunk(ctx, id, chunkSize)
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("chunk %s: missing on the remote", id)
	}
	return data, err
}

// checkRef refuses, by the client's HeadBook, a HEAD (snap "") older
// than the newest seen, or a ref of snapshot snap other than the one
// seen (ErrRollback).
func (c *Client) checkRef(snap string, ref Ref, found bool) error {
	if snap == "" {
		return c.checkHead(nil, "", ref, found)
	}
	return c.checkSnapshot(nil, "", snap, ref, found)
}

// noteRef records ref as the HEAD seen (snap "") or as snapshot snap's.
func (c *Client) noteRef(cfg *Config, remote, snap string, ref Ref) error {
	if snap == "" {
		return c.noteHead(cfg, remote, ref)
	}
	return c.noteSnapshot(cfg, remote, snap, ref)
}

// Snapshot reads the manifest of the remote's HEAD, or of snapshot name
// (a lazy mount). A HEAD older than the newest the client's HeadBook
// has seen, or a snapshot ref other than the one seen, is refused
// (ErrRollback) unless force; the ref read is noted as seen.
func (c *Client) Snapshot(ctx context.Context, name string, force bool) (*Manifest, error) {
	rel := "HEAD"
	if name != "" {
		rel = "snapshots/" + snapKey(name)
	}
	ref, _, err := c.getRef(ctx, rel)
	if !force && (err == nil || errors.Is(err, errNotFound)) {
		if rerr := c.checkRef(name, ref, err == nil); rerr != nil {
			return nil, rerr
		}
	}
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%s: no %s there", c.loc, rel)
	}
	if err != nil {
		return nil, err
	}
	m, err := c.manifest(ctx, ref.Manifest)
	if err != nil {
		return nil, err
	}
	if m.Root != ref.Root || m.Generation != ref.Generation {
		return nil, fmt.Errorf("%s: %w: manifest %s has root %s, generation %d; its ref says %s, %d", c.loc, ErrFormat, short(ref.Manifest), short(m.Root), m.Generation, short(ref.Root), ref.Generation)
	}
	if err := c.noteRef(nil, "", name, ref); err != nil {
		return nil, err
	}
	return m, nil
}

func checkRoot(path string, want versions.Root) error {
	st, err := chunkstore.Open(path, chunkstore.Options{MustExist: true, ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	got, err := fs.StoreRoot(st)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: built workspace has root %s, the snapshot %s", fs.ErrRootMismatch, got, want)
	}
	return nil
}

func sortIDs(ids []chunkstore.ID) {
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
}
