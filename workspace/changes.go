package workspace

import (
	"context"
	"strings"
)

// Change is one record of the change feed, as the API shows it.
type Change struct {
	Seq     uint64 `json:"seq"`
	Time    int64  `json:"time"` // unix nanoseconds
	Op      string `json:"op"`   // create, remove, rename, link, write, attr, xattr
	Type    string `json:"type"`
	Path    string `json:"path"`
	NewPath string `json:"new_path,omitempty"`
}

// ChangesResult is one page of the change feed.
type ChangesResult struct {
	Changes []Change `json:"changes"`
	// Next is the sequence number to ask after for the next page.
	Next uint64 `json:"next"`
	// Last is the newest sequence number so far.
	Last uint64 `json:"last"`
}

// Changes lists the changes made after sequence number since, through
// any door, up to limit records (0: 1000). Asking for records already
// pruned fails with fs.ErrJournalPruned. A view (Sub) sees the changes
// under its root only, with its own paths.
func (w *WS) Changes(ctx context.Context, since uint64, limit int) (ChangesResult, error) {
	if w.snap != "" {
		return ChangesResult{}, pathErr("changes", w.rootDir, errSnapshotStill)
	}
	if limit <= 0 || limit > MaxLimit {
		limit = 1000
	}
	list, err := w.f.Changes(since, limit)
	if err != nil {
		return ChangesResult{}, pathErr("changes", w.rootDir, err)
	}
	out := ChangesResult{Changes: []Change{}, Next: list.Next, Last: list.Last}
	for _, c := range list.Changes {
		p, ok := w.inView(c.Path)
		np, nok := w.inView(c.NewPath)
		if w.rules != nil {
			// What the rules deny is not there for the view.
			if v, _ := w.rules.Verdict(c.Path); ok && v == Deny {
				p, ok = "", false
			}
			if v, _ := w.rules.Verdict(c.NewPath); nok && v == Deny {
				np, nok = "", false
			}
		}
		if !ok && !nok {
			continue
		}
		out.Changes = append(out.Changes, Change{Seq: c.Seq, Time: c.Time, Op: c.Op.String(), Type: TypeName(c.Type), Path: p, NewPath: np})
	}
	return out, nil
}

// inView translates a journal path into the view's paths.
func (w *WS) inView(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if w.rootDir == "/" {
		return p, true
	}
	if p == w.rootDir {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, w.rootDir+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// WaitChanges blocks until a change after since exists, or ctx ends.
func (w *WS) WaitChanges(ctx context.Context, since uint64) error {
	if w.snap != "" {
		return pathErr("changes", w.rootDir, errSnapshotStill)
	}
	return w.f.WaitChanges(ctx, since)
}

// LastChange is the newest sequence number of the change feed.
func (w *WS) LastChange() uint64 { return w.f.LastChange() }
