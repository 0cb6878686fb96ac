package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
)

// Exec checkpoints (fs/SNAPSHOTS.md, "Exec checkpoints"): every exec
// names the state before it and the state after it, so that Undo can put
// back exactly the records it changed.
//
// BeginExec commits what is pending and takes the last commit's epoch
// as "before"; EndExec commits what the exec changed and takes "after".
// Each epoch is pinned like a snapshot's (a snapepochs entry named
// NUL ‖ id ‖ NUL ‖ "b" or "a", which no snapshot name can be), so that
// the versions alive at it are kept as later commits replace them. A pin
// is not written on its own: it rides with the next commit, before that
// commit's recorder reads the pins, so an exec that changes nothing
// costs no commit for its pins. The exec's record lives in the
// snapshots bucket under a key starting with NUL (which no snapshot
// name can): NUL ‖ start(8) ‖ id → JSON, sealed like every record.
//
// The last MaxCheckpoints records are kept; older ones are dropped with
// their pins, in batches, by the commit that writes a new record.

// MaxCheckpoints is how many exec records (and their pins) are kept.
const MaxCheckpoints = 500

// ExecRecord is what the store keeps of one exec.
type ExecRecord struct {
	ID      string `json:"id"`
	Before  uint64 `json:"before"` // the epoch the exec started from
	After   uint64 `json:"after"`  // the epoch its changes were committed in (Before: it changed nothing)
	Start   int64  `json:"start_unix_ns"`
	End     int64  `json:"end_unix_ns"`
	Backend string `json:"backend,omitempty"`
	Command string `json:"command,omitempty"`
	Exit    int    `json:"exit"`
	// Paths are the paths the exec changed (from the change journal),
	// at most maxExecPaths.
	Paths          []string `json:"paths,omitempty"`
	PathsTruncated bool     `json:"paths_truncated,omitempty"`
	// Undone is when Undo reverted it (0: never).
	Undone int64 `json:"undone_unix_ns,omitempty"`
	// Running: the exec has not ended (its record as BeginExec wrote it,
	// which rides with the first commit of its changes).
	Running bool `json:"running,omitempty"`
	// Interrupted: the workspace closed without the exec's end (a
	// crash); After is the last commit before the store was opened
	// again, and Paths are unknown.
	Interrupted bool `json:"interrupted,omitempty"`
	// Audited: the exec's audit record was written in the same commit
	// as this record (fs/audit.go); audit --verify checks it is there.
	Audited bool `json:"audited,omitempty"`
	// Audit, given to EndExec, is the exec's audit record: it rides with
	// the exec record, its Before and After set to the exec's.
	Audit *audit.Record `json:"-"`
	// RootBefore and RootAfter are the root identifiers (versions.Root,
	// in hex) of the states Before and After: an undo of the exec gives
	// back RootBefore when nothing else changed since. Empty where not
	// known (a record from before roots were kept, an interrupted exec's
	// RootAfter, an exec that changed nothing while other doors
	// committed).
	RootBefore string `json:"root_before,omitempty"`
	RootAfter  string `json:"root_after,omitempty"`
}

// Changed says whether the exec committed any change.
func (r *ExecRecord) Changed() bool { return r.After > r.Before }

const maxExecPaths = 1000
const maxCommandBytes = 1000

func isCheckpointKey(k []byte) bool { return len(k) > 0 && k[0] == 0 }

func checkpointKey(start int64, id string) []byte {
	k := binary.BigEndian.AppendUint64([]byte{0}, uint64(start))
	return append(k, id...)
}

func pinKey(epoch uint64, id string, phase byte) []byte {
	k := binary.BigEndian.AppendUint64(nil, epoch)
	k = append(k, 0)
	k = append(k, id...)
	return append(k, 0, phase)
}

// cpOp is a change to the checkpoints that rides with the next commit.
type cpOp struct {
	pin []byte // a snapepochs key to put
	key []byte // a record to put (in bucketSnapshots)
	val []byte
	// after, when set, makes the record's After the epoch of the commit
	// that carries it, pinned there; the commit sets after.epoch.
	after *afterPin
	// ride: the record does not need a commit of its own (an exec's
	// record as it starts: it goes with the first commit of its
	// changes, so that a crash while it runs leaves a record of them).
	ride bool
}

type afterPin struct {
	id    string
	epoch uint64
	// the roots of the exec's states, set by the commit (for EndExec's
	// answer)
	rootBefore, rootAfter string
	// done is set under mu once the commit that wrote the fields above
	// has ended well. The commit writes them in its transaction, without
	// mu: EndExec reads them only after it sees done.
	done bool
}

// publishAfterPinsLocked marks the afterPins of ops, which a commit has
// just written, done: their waiters (EndExec) may read them now.
func publishAfterPinsLocked(ops []cpOp) {
	for _, op := range ops {
		if op.after != nil {
			op.after.done = true
		}
	}
}

// checkpoints is the FS's side of exec checkpoints, under mu.
type checkpoints struct {
	pending []cpOp
	// audit are the audit records waiting for a commit (fs/audit.go).
	audit []auditOp
	// records counts the records in the store; only the committer (and
	// a rewind, with mu held and nothing in flight) changes it.
	records int
}

// hasRecords says whether a pending op needs a commit of its own (a
// record does; a pin waits for one).
func (c *checkpoints) hasRecords() bool {
	if len(c.audit) > 0 {
		return true
	}
	for _, op := range c.pending {
		if op.key != nil && !op.ride {
			return true
		}
	}
	return false
}

// ExecCheckpoint is an exec under way: BeginExec's result, for EndExec.
type ExecCheckpoint struct {
	id     string
	before uint64
	start  int64
	pin    []byte
	inFork bool
}

// Before is the epoch the exec started from.
func (c *ExecCheckpoint) Before() uint64 { return c.before }

// treeCleanLocked says that no change of the tree waits for a commit and
// none is being committed.
func (f *FS) treeCleanLocked() bool {
	return len(f.dirty) == 0 && len(f.dead) == 0 && len(f.jn.mem) == 0 && len(f.jn.flagged) == 0 && f.snapTaken == f.snapDone
}

// inFlightEpochLocked is the epoch that holds every change made so far
// once committed: the last commit's, or the one being committed.
func (f *FS) inFlightEpochLocked() uint64 {
	if f.snapTaken > f.snapDone {
		return f.epoch + 1
	}
	return f.epoch
}

// BeginExec commits what is pending and names the state as of now as
// the start of exec id.
func (f *FS) BeginExec(ctx context.Context, id string) (*ExecCheckpoint, error) {
	if id == "" || strings.ContainsRune(id, 0) {
		return nil, fmt.Errorf("exec id %q: %w", id, syscall.EINVAL)
	}
	if f.fork != nil {
		// A fork's execs are checkpointed by the fork itself: merge
		// or discard it. Nothing is pinned, nothing recorded.
		return &ExecCheckpoint{id: id, start: time.Now().UnixNano(), inFork: true}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("checkpoint before exec %s: %w", id, errWorkspaceClosed)
	}
	// Commit what is pending, unless nothing is (an exec record waiting
	// for a commit is not a change of the tree, and needs none now).
	if !f.treeCleanLocked() {
		if err := f.syncAllLocked(ctx); err != nil {
			return nil, fmt.Errorf("checkpoint before exec %s: %w", id, err)
		}
	}
	c := &ExecCheckpoint{id: id, before: f.inFlightEpochLocked(), start: time.Now().UnixNano()}
	c.pin = pinKey(c.before, id, 'b')
	val, err := json.Marshal(&ExecRecord{ID: id, Before: c.before, Start: c.start, Running: true})
	if err != nil {
		return nil, err
	}
	f.cps.pending = append(f.cps.pending, cpOp{pin: c.pin, key: checkpointKey(c.start, id), val: val, ride: true})
	return c, nil
}

// EndExec commits what the exec changed with its record, whose After is
// that commit's epoch, pinned. An exec that changed nothing costs no
// commit: its record rides with a later one. rec's ID, Before, After and
// Start are filled in.
func (f *FS) EndExec(ctx context.Context, c *ExecCheckpoint, rec ExecRecord) (*ExecRecord, error) {
	if c.inFork {
		// The exec's changes are committed (so that they are durable
		// when it returns, as the workspace's are); its audit record
		// goes to the workspace's log.
		rec.ID, rec.Start = c.id, c.start
		if rec.End == 0 {
			rec.End = time.Now().UnixNano()
		}
		if err := f.Sync(ctx); err != nil {
			return nil, fmt.Errorf("commit the changes of exec %s in fork %s: %w", c.id, f.Fork(), err)
		}
		if rec.Audit != nil && f.fork != nil {
			a := *rec.Audit
			a.ExecID = rec.ID
			if a.Time == 0 {
				a.Time = rec.Start
			}
			a.Detail = strings.TrimSpace(a.Detail + " (in fork " + f.fork.ID + ")")
			f.fork.parent.Audit(a)
		}
		rec.Audit = nil
		return &rec, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		// No commit runs after Close: the record would never be written.
		return nil, fmt.Errorf("checkpoint after exec %s: %w", c.id, errWorkspaceClosed)
	}
	rec.ID, rec.Before, rec.Start = c.id, c.before, c.start
	if rec.End == 0 {
		rec.End = time.Now().UnixNano()
	}
	if len(rec.Command) > maxCommandBytes {
		rec.Command = rec.Command[:maxCommandBytes]
	}
	if len(rec.Paths) > maxExecPaths {
		rec.Paths, rec.PathsTruncated = rec.Paths[:maxExecPaths], true
	}
	var aud *auditOp
	if rec.Audit != nil {
		a := *rec.Audit
		a.ExecID, a.Before = rec.ID, rec.Before
		if a.Time == 0 {
			a.Time = rec.Start
		}
		aud = &auditOp{rec: &a}
		rec.Audited, rec.Audit = true, &a
	}
	if f.inFlightEpochLocked() == c.before && f.treeCleanLocked() {
		// No commit since: the before pin and the starting record were
		// never written, and nothing needs keeping. The record rides
		// with a later commit.
		for i, op := range f.cps.pending {
			if bytes.Equal(op.pin, c.pin) {
				f.cps.pending = append(f.cps.pending[:i], f.cps.pending[i+1:]...)
				break
			}
		}
		rec.After = c.before
		val, err := json.Marshal(&rec)
		if err != nil {
			return nil, err
		}
		// Not kicked: the committer's next tick (or any commit before
		// it) takes it, so that execs that change nothing cost none.
		f.cps.pending = append(f.cps.pending, cpOp{key: checkpointKey(rec.Start, rec.ID), val: val})
		if aud != nil {
			aud.rec.After = c.before
			f.cps.audit = append(f.cps.audit, *aud)
		}
		return &rec, nil
	}
	// The record goes in the commit of the exec's last changes (or one
	// of its own), which is its After: a crash never keeps the changes
	// and loses the record that can undo them. Everything the exec wrote
	// is prepared first: a worker merging a write into a stored chunk
	// may need commits to free buffers, and those take part of the
	// exec's changes. Queued before them, the record would ride with the
	// first, and its After miss what came after (undo would see the rest
	// as later changes).
	for _, n := range f.dirty {
		f.sealAllLocked(n)
	}
	if err := f.waitPreparedLocked(ctx, nil); err != nil {
		return nil, fmt.Errorf("checkpoint after exec %s: %w", c.id, err)
	}
	val, err := json.Marshal(&rec)
	if err != nil {
		return nil, err
	}
	ap := &afterPin{id: c.id}
	f.cps.pending = append(f.cps.pending, cpOp{key: checkpointKey(rec.Start, rec.ID), val: val, after: ap})
	if aud != nil {
		aud.after = ap
		f.cps.audit = append(f.cps.audit, *aud)
	}
	if err := f.syncAllLocked(ctx); err != nil {
		return nil, fmt.Errorf("checkpoint after exec %s: %w", c.id, err)
	}
	for !ap.done {
		// syncAllLocked can return while the commit that took the
		// record is still writing it: wait for that commit to end, or
		// for its failure.
		if f.broken != nil {
			return nil, f.broken
		}
		// If Close ran while the exec's changes were prepared (mu is
		// released there), it committed them but not the record,
		// queued after: waitCommitLocked says so.
		if err := f.waitCommitLocked(ctx); err != nil {
			return nil, fmt.Errorf("checkpoint after exec %s: %w", c.id, err)
		}
	}
	rec.After, rec.RootBefore, rec.RootAfter = ap.epoch, ap.rootBefore, ap.rootAfter
	return &rec, nil
}

// writeCheckpointsTx writes pending checkpoint ops at the start of a
// commit, before its recorder reads the pins, and drops the oldest
// records past MaxCheckpoints. It returns the new count of records.
func writeCheckpointsTx(tx *chunkstore.Tx, ops []cpOp, records int, epoch uint64) (int, error) {
	if len(ops) == 0 {
		return records, nil
	}
	pins := tx.Bucket(versions.BucketSnapEpochs)
	snaps := tx.Sealed(bucketSnapshots)
	// The root before this commit changes anything: the state of epoch-1.
	start, hasRoot, err := tx.Root()
	if err != nil {
		hasRoot = false // damaged: fsck's to report; the records go without
	}
	for _, op := range ops {
		if op.pin != nil {
			if err := pins.Put(op.pin, nil); err != nil {
				return records, err
			}
		}
		if op.key != nil {
			val := op.val
			var r ExecRecord
			if err := json.Unmarshal(val, &r); err != nil {
				return records, err
			}
			if op.after != nil {
				r.After = epoch
				if old, err := snaps.Get(op.key); err == nil && old != nil {
					// The starting record's root before.
					var sr ExecRecord
					if json.Unmarshal(old, &sr) == nil && r.RootBefore == "" {
						r.RootBefore = sr.RootBefore
					}
				}
				if hasRoot && r.RootBefore == "" && r.Before == epoch-1 {
					r.RootBefore = start.String()
				}
				if err := pins.Put(pinKey(epoch, op.after.id, 'a'), nil); err != nil {
					return records, err
				}
				op.after.epoch, op.after.rootBefore = epoch, r.RootBefore
			} else if hasRoot && r.Before == epoch-1 {
				// A starting record rides with the exec's first commit;
				// an exec that changed nothing has one state.
				r.RootBefore = start.String()
				if !r.Running && r.After == r.Before {
					r.RootAfter = r.RootBefore
				}
			}
			if val, err = json.Marshal(&r); err != nil {
				return records, err
			}
			if had, err := snaps.Has(op.key); err != nil {
				return records, err
			} else if !had {
				records++
			}
			if err := snaps.Put(op.key, val); err != nil {
				return records, err
			}
		}
	}
	if records <= MaxCheckpoints+MaxCheckpoints/4 {
		return records, nil
	}
	// Drop the oldest down to MaxCheckpoints, with their pins.
	recs, err := readCheckpoints(tx)
	if err != nil {
		return records, err
	}
	drop := len(recs) - MaxCheckpoints
	for i := 0; i < drop; i++ {
		r := recs[i]
		if err := snaps.Delete(checkpointKey(r.Start, r.ID)); err != nil {
			return records, err
		}
		for _, k := range [][]byte{pinKey(r.Before, r.ID, 'b'), pinKey(r.After, r.ID, 'a')} {
			if err := pins.Delete(k); err != nil {
				return records, err
			}
		}
	}
	if _, _, err := dropUnpinned(tx); err != nil {
		return records, err
	}
	return len(recs) - drop, nil
}

// dropUnpinned deletes the kept versions no snapshot or checkpoint pins
// any more, releasing their chunks.
// endCheckpointRootsTx gives the exec records a commit ended (ops with
// an after pin) the root of the state it leaves: called last in the
// commit, once every record is written (exec records are not summed in
// the root, so writing them changes it not).
func endCheckpointRootsTx(tx *chunkstore.Tx, ops []cpOp) error {
	var root versions.Root
	known := false
	snaps := tx.Sealed(bucketSnapshots)
	for _, op := range ops {
		if op.key == nil || op.after == nil {
			continue
		}
		if !known {
			var ok bool
			var err error
			if root, ok, err = tx.Root(); err != nil || !ok {
				return nil // no root kept: the records go without
			}
			known = true
		}
		v, err := snaps.Get(op.key)
		if err != nil || v == nil {
			return err
		}
		var r ExecRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		r.RootAfter = root.String()
		op.after.rootAfter = r.RootAfter
		val, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		if err := snaps.Put(op.key, val); err != nil {
			return err
		}
	}
	return nil
}

func dropUnpinned(tx *chunkstore.Tx) (versionsDropped, chunks int, err error) {
	versionsDropped, err = versions.Unpinned(tx.Tx, func(id byte, key, sealedVal []byte) error {
		if versions.Name(id) != string(bucketChunks) {
			return nil
		}
		val, err := sealed.Open(bucketChunks, key, sealedVal)
		if err != nil || len(val) != chunkstore.IDSize {
			return nil // a damaged version: its reference stays (fsck)
		}
		chunks++
		return tx.Unref(chunkstore.ID(val))
	})
	return versionsDropped, chunks, err
}

// dropUnpinnedAfter is dropUnpinned after the pin at epoch was deleted:
// it looks only at the versions that pin could have kept.
func dropUnpinnedAfter(tx *chunkstore.Tx, epoch uint64) (versionsDropped, chunks int, err error) {
	versionsDropped, err = versions.UnpinnedAfter(tx.Tx, epoch, func(id byte, key, sealedVal []byte) error {
		if versions.Name(id) != string(bucketChunks) {
			return nil
		}
		val, err := sealed.Open(bucketChunks, key, sealedVal)
		if err != nil || len(val) != chunkstore.IDSize {
			return nil // a damaged version: its reference stays (fsck)
		}
		chunks++
		return tx.Unref(chunkstore.ID(val))
	})
	return versionsDropped, chunks, err
}

// readCheckpoints reads every exec record, oldest first.
func readCheckpoints(tx *chunkstore.Tx) ([]ExecRecord, error) {
	var out []ExecRecord
	c := tx.Sealed(bucketSnapshots).Cursor()
	for k, v, err := c.Seek([]byte{0}); k != nil && isCheckpointKey(k); k, v, err = c.Next() {
		if err != nil {
			return nil, err
		}
		var r ExecRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("exec record %s: %w: %v", sealed.KeyString(k), errBadRecord, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// endInterrupted ends the records of execs a crash interrupted: their
// After is epoch, the last commit, pinned. Called from load.
func endInterrupted(tx *chunkstore.Tx, epoch uint64) (int, error) {
	recs, err := readCheckpoints(tx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if !r.Running {
			continue
		}
		r.Running, r.Interrupted, r.After, r.Audited = false, true, epoch, true
		if _, err := audit.Append(tx.Tx, epoch, now(), []*audit.Record{{
			Time: r.Start, Kind: audit.KindInterrupted, Verdict: audit.Allowed, Door: "exec", ExecID: r.ID,
			Detail: "the workspace closed while the exec ran (a crash); After is the last commit before it opened again",
			Before: r.Before, After: epoch,
		}}); err != nil {
			return n, err
		}
		val, err := json.Marshal(&r)
		if err != nil {
			return n, err
		}
		if err := tx.Bucket(versions.BucketSnapEpochs).Put(pinKey(epoch, r.ID, 'a'), nil); err != nil {
			return n, err
		}
		if err := tx.Sealed(bucketSnapshots).Put(checkpointKey(r.Start, r.ID), val); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func countCheckpoints(tx *chunkstore.Tx) (int, error) {
	n := 0
	c := tx.Sealed(bucketSnapshots).Cursor()
	for k, _, err := c.Seek([]byte{0}); k != nil && isCheckpointKey(k); k, _, err = c.Next() {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// Execs lists the recorded execs, oldest first, including those whose
// record is not committed yet.
func (f *FS) Execs() ([]ExecRecord, error) {
	f.mu.Lock()
	var pending []ExecRecord
	for _, op := range f.cps.pending {
		if op.key != nil {
			var r ExecRecord
			if err := json.Unmarshal(op.val, &r); err == nil {
				pending = append(pending, r)
			}
		}
	}
	f.mu.Unlock()
	var out []ExecRecord
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		out, err = readCheckpoints(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A pending record is newer than the stored one of its exec.
	at := make(map[string]int, len(out))
	for i, r := range out {
		at[r.ID] = i
	}
	for _, r := range pending {
		if i, ok := at[r.ID]; ok {
			out[i] = r
		} else {
			at[r.ID] = len(out)
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// ErrNoExec is returned by Undo for an exec it has no record of.
var ErrNoExec = fmt.Errorf("no record of that exec (records are kept for the last %d): %w", MaxCheckpoints, syscall.ENOENT)

// ErrNothingToUndo is returned by Undo when no exec can be undone.
var ErrNothingToUndo = errors.New("nothing to undo")

// ConflictError is Undo's refusal: files the exec changed were changed
// again since.
type ConflictError struct {
	Exec  string
	Paths []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("exec %s: %d file(s) it changed were changed again since: %s (undo --force puts them back anyway)", e.Exec, len(e.Paths), strings.Join(e.Paths, ", "))
}

// Is makes errors.Is(err, syscall.EBUSY) true.
func (e *ConflictError) Is(target error) bool { return target == syscall.EBUSY }

// UndoOptions say which exec Undo reverts and how.
type UndoOptions struct {
	// Exec is the exec's ID; empty: the last exec that changed something
	// and is not undone.
	Exec string
	// Force puts back records changed again since the exec too.
	Force bool
}

// Undo reverts exactly the records exec changed (between its before and
// after states), in one commit, on the served workspace. If a later
// change touched the same files it refuses with a *ConflictError naming
// them, unless opts.Force. Directories whose entries the exec and later
// changes both touched are merged: the exec's entries go, the others
// stay. It costs in proportion to what changed since the exec began.
func (f *FS) Undo(ctx context.Context, opts UndoOptions) (*ExecRecord, *RewindReport, *Touched, error) {
	if f.fork != nil {
		return nil, nil, nil, ErrInFork
	}
	if err := f.Sync(ctx); err != nil {
		return nil, nil, nil, err
	}
	var rec ExecRecord
	rep, touched, err := f.rewindLive(ctx, func(tx *chunkstore.Tx) (*rewindPlan, error) {
		recs, err := readCheckpoints(tx)
		if err != nil {
			return nil, err
		}
		found := false
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if opts.Exec == "" && r.Changed() && r.Undone == 0 || opts.Exec != "" && r.ID == opts.Exec {
				rec, found = r, true
				break
			}
		}
		switch {
		case !found && opts.Exec == "":
			return nil, fmt.Errorf("%w: no recorded exec changed anything that is not undone yet", ErrNothingToUndo)
		case !found:
			return nil, fmt.Errorf("exec %s: %w", opts.Exec, ErrNoExec)
		case rec.Running:
			return nil, fmt.Errorf("exec %s: %w: it is still running", rec.ID, ErrNothingToUndo)
		case rec.Undone != 0:
			return nil, fmt.Errorf("exec %s: %w: it was undone at %s", rec.ID, ErrNothingToUndo, time.Unix(0, rec.Undone).Format(time.RFC3339))
		case !rec.Changed():
			return nil, fmt.Errorf("exec %s: %w: it changed nothing", rec.ID, ErrNothingToUndo)
		}
		plan, conflicts, err := undoPlan(tx, &rec, opts.Force)
		if err != nil {
			return nil, err
		}
		if len(conflicts) > 0 && !opts.Force {
			return nil, &ConflictError{Exec: rec.ID, Paths: conflicts}
		}
		rec.Undone = time.Now().UnixNano()
		val, err := json.Marshal(&rec)
		if err != nil {
			return nil, err
		}
		if err := tx.Sealed(bucketSnapshots).Put(checkpointKey(rec.Start, rec.ID), val); err != nil {
			return nil, err
		}
		return plan, nil
	})
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) || errors.Is(err, ErrNothingToUndo) || errors.Is(err, ErrNoExec) {
			return nil, nil, nil, err
		}
		return nil, nil, nil, fmt.Errorf("undo: %w", err)
	}
	return &rec, rep, touched, nil
}

// undoPlan is the plan that reverts rec, and the paths of the records
// it changed that changed again since (put back too if force).
func undoPlan(tx *chunkstore.Tx, rec *ExecRecord, force bool) (*rewindPlan, []string, error) {
	keys, err := changedKeys(tx, rec.Before)
	if err != nil {
		return nil, nil, err
	}
	atBefore := versions.NewAt(tx.Tx, rec.Before)
	atAfter := versions.NewAt(tx.Tx, rec.After)
	plan := &rewindPlan{merge: make(map[Ino]bool), mergeBase: make(map[Ino][]byte)}
	var conflictKeys []rewindTarget
	for _, k := range keys {
		then, err := atBefore.Get(k.bucket, k.key)
		if err != nil {
			return nil, nil, err
		}
		then = bytes.Clone(then)
		mid, err := atAfter.Get(k.bucket, k.key)
		if err != nil {
			return nil, nil, err
		}
		if bytes.Equal(then, mid) {
			continue // not the exec's change
		}
		now, err := tx.Sealed(k.bucket).Get(k.key)
		if err != nil {
			return nil, nil, err
		}
		if !bytes.Equal(now, mid) {
			if bytes.Equal(k.bucket, bucketInodes) && len(k.key) == 8 && then != nil && onlyDirLinks(keyIno(k.key), mid, now) {
				// A directory whose entries changed again since: its
				// record as it was before, with the links the entries
				// left give it.
				plan.merge[keyIno(k.key)] = true
				plan.mergeBase[keyIno(k.key)] = then
				continue
			}
			conflictKeys = append(conflictKeys, k)
			if !force {
				continue
			}
		}
		k.then = then
		plan.targets = append(plan.targets, k)
	}
	if len(conflictKeys) == 0 {
		return plan, nil, nil
	}
	return plan, conflictPaths(tx, rec, conflictKeys), nil
}

// onlyDirLinks says whether two versions of a directory's inode record
// differ only in what changes of its entries change: its link count, size
// and times.
func onlyDirLinks(ino Ino, a, b []byte) bool {
	if a == nil || b == nil {
		return false
	}
	x, tx, err1 := decodeInode(ino, a)
	y, ty, err2 := decodeInode(ino, b)
	if err1 != nil || err2 != nil || !x.IsDir() || !y.IsDir() || tx != ty {
		return false
	}
	x.Nlink, x.Size, x.Atime, x.Mtime, x.Ctime = y.Nlink, y.Size, y.Atime, y.Mtime, y.Ctime
	return x == y
}

// conflictPaths names the files of conflicting records: by the entries
// among them, by the paths the exec recorded, else by inode number.
func conflictPaths(tx *chunkstore.Tx, rec *ExecRecord, keys []rewindTarget) []string {
	live := func(bucket, key []byte) ([]byte, error) { return tx.Sealed(bucket).Get(key) }
	byIno := make(map[Ino]string)
	for _, p := range rec.Paths {
		clean := path.Clean("/" + p)
		if clean == "/" {
			byIno[RootIno] = "/"
			continue
		}
		if _, d, ok, err := resolveIn(live, clean); err == nil && ok {
			byIno[d.Ino] = clean
		}
	}
	// Files no recorded path names: one scan of the entries (this is
	// the refusal's path, not the undo's).
	var unknown []Ino
	for _, k := range keys {
		if len(k.key) >= 8 && !bytes.Equal(k.bucket, bucketDirents) {
			if ino := keyIno(k.key); byIno[ino] == "" {
				unknown = append(unknown, ino)
			}
		}
	}
	if len(unknown) > 0 {
		want := make(map[Ino]bool, len(unknown))
		for _, ino := range unknown {
			want[ino] = true
		}
		tx.Sealed(bucketDirents).Walk(func(k, v []byte, damage error) error {
			if damage != nil || len(k) <= 8 {
				return nil
			}
			d, err := decodeDirent(v)
			if err != nil || !want[d.Ino] {
				return nil
			}
			if dir := dirPathTx(tx, keyIno(k)); dir != "" || keyIno(k) == RootIno {
				if keyIno(k) == RootIno {
					dir = "/"
				}
				byIno[d.Ino] = path.Join(dir, string(k[8:]))
				delete(want, d.Ino)
			}
			if len(want) == 0 {
				return errStopWalk
			}
			return nil
		})
	}
	seen := make(map[string]bool)
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, k := range keys {
		if len(k.key) < 8 {
			continue
		}
		ino := keyIno(k.key)
		if bytes.Equal(k.bucket, bucketDirents) {
			dir := byIno[ino]
			if dir == "" {
				dir = dirPathTx(tx, ino)
			}
			if dir != "" {
				add(path.Join(dir, string(k.key[8:])))
				continue
			}
		} else if p := byIno[ino]; p != "" {
			add(p)
			continue
		} else if p := dirPathTx(tx, ino); p != "" {
			add(p)
			continue
		}
		add(fmt.Sprintf("inode %d", ino))
	}
	sort.Strings(out)
	return out
}

var errStopWalk = errors.New("stop")

// dirPathTx is directory ino's path now, through the parents directories
// record ("" if ino is not a directory or the walk fails).
func dirPathTx(tx *chunkstore.Tx, ino Ino) string {
	inodes, dirents := tx.Sealed(bucketInodes), tx.Sealed(bucketDirents)
	var parts []string
	cur := ino
	for depth := 0; cur != RootIno; depth++ {
		v, err := inodes.Get(inoKey(cur))
		if err != nil || v == nil || depth > maxDepth {
			return ""
		}
		a, _, err := decodeInode(cur, v)
		if err != nil || !a.IsDir() {
			return ""
		}
		name := ""
		prefix := inoKey(a.Parent)
		c := dirents.Cursor()
		for k, v, err := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v, err = c.Next() {
			if err != nil {
				continue
			}
			if d, err := decodeDirent(v); err == nil && d.Ino == cur {
				name = string(k[8:])
				break
			}
		}
		if name == "" {
			return ""
		}
		parts = append(parts, name)
		cur = a.Parent
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return "/" + strings.Join(parts, "/")
}
