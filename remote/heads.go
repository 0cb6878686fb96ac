package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// HeadSeen is the newest HEAD seen on a remote.
type HeadSeen struct {
	Manifest   string `json:"manifest"`
	Generation uint64 `json:"generation"`
	At         string `json:"at,omitempty"`
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
func (c *Client) noteHead(cfg *Config, name string, ref Ref) error {
	h := HeadSeen{Manifest: ref.Manifest, Generation: ref.Generation, At: now()}
	if cfg != nil {
		cfg.Heads[name] = h
	}
	if c.book == "" {
		return nil
	}
	book, err := c.readBook()
	if err != nil {
		return err
	}
	book[c.bookKey()] = h
	b, err := json.MarshalIndent(book, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.book), 0o700); err == nil {
		writeFileAtomic(c.book, append(b, '\n'))
	}
	return nil
}
