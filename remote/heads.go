package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Rollback detection. Every push that moves HEAD gives it the next
// generation (Ref.Generation, sealed in its manifest too). A workspace
// remembers, per remote, the newest HEAD it has seen (Config.Heads),
// and a user's HeadBook remembers it per remote URL for clones: a HEAD
// whose generation is below it, or equal with another manifest, or a
// HEAD gone where one was seen, was rolled back, by the server or by
// someone with access to the bucket, and push, pull and clone refuse it
// (ErrRollback) unless forced. On an encrypted remote the refs are
// sealed, so an old HEAD can only be replayed, which this catches; on
// a plain one anyone who can write the bucket can also forge a newer
// one, which no client can tell from a real push.

// HeadSeen is the newest HEAD seen on a remote, or the ref of a pushed
// snapshot seen there.
type HeadSeen struct {
	Manifest   string `json:"manifest"`
	Generation uint64 `json:"generation"`
	At         string `json:"at,omitempty"`
	Root       string `json:"root,omitempty"`
}

// Snapshot refs. A push writes snapshots/NAME once (only if absent),
// with the generation and manifest of its HEAD: a ref seen once never
// changes. Each workspace (Config.Snaps) and the user's book remember
// the refs they read with --snapshot and the snapshot every HEAD they
// saw named (the newest maxSnapsSeen per remote); a ref that is gone or
// names another manifest than the one seen was rewritten, and pull,
// clone and a lazy mount refuse it (ErrRollback) unless forced.

// maxSnapsSeen bounds the snapshot refs remembered per remote.
const maxSnapsSeen = 256

func (h HeadSeen) checkSnap(name string, ref Ref, found bool) error {
	switch {
	case h.Manifest == "":
		return nil
	case !found:
		return fmt.Errorf("%w: there is no snapshot %s where manifest %s (generation %d) was seen at %s", ErrRollback, name, short(h.Manifest), h.Generation, h.At)
	case ref.Manifest != h.Manifest:
		return fmt.Errorf("%w: snapshot %s is manifest %s (generation %d, root %s), but manifest %s (generation %d, root %s) was seen there at %s, and a pushed snapshot's ref is written once",
			ErrRollback, name, short(ref.Manifest), ref.Generation, short(ref.Root), short(h.Manifest), h.Generation, short(h.Root), h.At)
	}
	return nil
}

func (c *Client) snapBookKey(name string) string { return c.bookKey() + " snapshots/" + snapKey(name) }

// checkSnapshot refuses a snapshot ref other than the one seen: in cfg
// (remote name), if given, and in the user's book.
func (c *Client) checkSnapshot(cfg *Config, remote, name string, ref Ref, found bool) error {
	if cfg != nil {
		if err := cfg.Snaps[remote][name].checkSnap(name, ref, found); err != nil {
			return fmt.Errorf("%s: %w; if that is meant, --force accepts it", c.loc, err)
		}
	}
	book, err := c.readBook()
	if err != nil {
		return err
	}
	if err := book[c.snapBookKey(name)].checkSnap(name, ref, found); err != nil {
		return fmt.Errorf("%s: %w (as this user last saw it, in %s); if that is meant, --force accepts it", c.loc, err, c.book)
	}
	return nil
}

// noteSnap records ref as snapshot name's in cfg, pruned to the newest
// maxSnapsSeen of the remote.
func noteSnap(cfg *Config, remote, name string, h HeadSeen) {
	if cfg.Snaps == nil {
		cfg.Snaps = map[string]map[string]HeadSeen{}
	}
	m := cfg.Snaps[remote]
	if m == nil {
		m = map[string]HeadSeen{}
		cfg.Snaps[remote] = m
	}
	m[name] = h
	pruneSeen(m, func(string) bool { return true })
}

// pruneSeen drops the oldest entries of m that in says are of one
// remote's snapshots, down to maxSnapsSeen.
func pruneSeen(m map[string]HeadSeen, in func(string) bool) {
	var keys []string
	for k := range m {
		if in(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) <= maxSnapsSeen {
		return
	}
	at := func(k string) time.Time { t, _ := time.Parse(time.RFC3339Nano, m[k].At); return t }
	sort.Slice(keys, func(i, j int) bool { return at(keys[i]).Before(at(keys[j])) })
	for _, k := range keys[:len(keys)-maxSnapsSeen] {
		delete(m, k)
	}
}

// noteSnapshot records ref as the ref of snapshot name, in cfg (not
// saved: the caller saves it) and in the user's book.
func (c *Client) noteSnapshot(cfg *Config, remote, name string, ref Ref) error {
	return c.note(cfg, remote, nil, name, ref)
}

// newer says whether ref is at least as new as h.
func (h HeadSeen) check(ref Ref, found bool) error {
	switch {
	case h.Manifest == "":
		return nil
	case !found:
		return fmt.Errorf("%w: there is no HEAD where generation %d (manifest %s) was seen at %s", ErrRollback, h.Generation, short(h.Manifest), h.At)
	case ref.Generation < h.Generation, ref.Generation == h.Generation && ref.Manifest != h.Manifest && h.Generation > 0:
		return fmt.Errorf("%w: HEAD is generation %d (manifest %s, pushed %s), but generation %d (manifest %s) was seen there at %s",
			ErrRollback, ref.Generation, short(ref.Manifest), ref.PushedAt, h.Generation, short(h.Manifest), h.At)
	}
	return nil
}

func (c *Client) bookKey() string { return c.endpoint + " " + c.loc.String() }

// book reads the user's head book (empty if none or unset).
func (c *Client) readBook() (map[string]HeadSeen, error) {
	m := map[string]HeadSeen{}
	if c.book == "" {
		return m, nil
	}
	b, err := os.ReadFile(c.book)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.book, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", c.book, err)
	}
	return m, nil
}

// checkHead refuses a HEAD older than the newest seen: in cfg (remote
// name), if given, and in the user's book.
func (c *Client) checkHead(cfg *Config, name string, ref Ref, found bool) error {
	if cfg != nil {
		if err := cfg.Heads[name].check(ref, found); err != nil {
			return fmt.Errorf("%s: %w; if that is meant, --force accepts it", c.loc, err)
		}
	}
	book, err := c.readBook()
	if err != nil {
		return err
	}
	if err := book[c.bookKey()].check(ref, found); err != nil {
		return fmt.Errorf("%s: %w (as this user last saw it, in %s); if that is meant, --force accepts it", c.loc, err, c.book)
	}
	return nil
}

// noteHead records ref as the newest HEAD seen, in cfg (not saved: the
// caller saves it) and in the user's book. The book is a safeguard kept
// beside the workspaces' own memory: failing to write it (a read-only
// home) does not fail the transfer that saw the HEAD.
// The snapshot the HEAD names is noted as seen too.
func (c *Client) noteHead(cfg *Config, name string, ref Ref) error {
	return c.note(cfg, name, &ref, ref.Snapshot, ref)
}

// note records head (if not nil) as the HEAD seen, and ref as the ref of
// snapshot snap (if not ""), in cfg under remote name and in the book.
func (c *Client) note(cfg *Config, name string, head *Ref, snap string, ref Ref) error {
	h := HeadSeen{Manifest: ref.Manifest, Generation: ref.Generation, At: now(), Root: ref.Root}
	if cfg != nil {
		if head != nil {
			cfg.Heads[name] = h
		}
		if snap != "" {
			noteSnap(cfg, name, snap, h)
		}
	}
	if c.book == "" {
		return nil
	}
	book, err := c.readBook()
	if err != nil {
		return err
	}
	if head != nil {
		book[c.bookKey()] = h
	}
	if snap != "" {
		book[c.snapBookKey(snap)] = h
		prefix := c.bookKey() + " snapshots/"
		pruneSeen(book, func(k string) bool { return strings.HasPrefix(k, prefix) })
	}
	b, err := json.MarshalIndent(book, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.book), 0o700); err == nil {
		writeFileAtomic(c.book, append(b, '\n'))
	}
	return nil
}
