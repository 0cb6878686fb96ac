package fs

import (
	"context"
	"strings"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/chunkstore"
)

// The audit log (package audit) lives in the store's bucket "audit". Its
// records ride with the commits as exec checkpoints do: Audit queues one,
// and the next commit appends it (the committer's next tick, if nothing
// commits sooner: a record costs no fsync of its own, and one that waits
// is lost by a crash within CommitInterval, as any change is that no
// fsync waited for). An exec's record rides with its EndExec record, in
// the same commit, so that neither is ever kept without the other; the
// exec record then says so (ExecRecord.Audited), which Verify checks.
// Sequence numbers are given by the commit, in the order records were
// queued.

// auditOp is a record waiting for a commit.
type auditOp struct {
	rec *audit.Record
	// after, when set, is the exec's afterPin: the record's After is the
	// epoch of the commit that carries both.
	after *afterPin
}

// Audit queues rec for the log. It never fails: a record that cannot be
// written fails its commit, which turns the workspace read-only.
func (f *FS) Audit(rec audit.Record) {
	if rec.Time == 0 {
		rec.Time = now()
	}
	if f.fork != nil {
		// The workspace's log: a fork keeps none of its own.
		if rec.Detail == "" || !strings.Contains(rec.Detail, "fork "+f.fork.ID) {
			rec.Detail = strings.TrimSpace(rec.Detail + " (in fork " + f.fork.ID + ")")
		}
		f.fork.parent.Audit(rec)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cps.audit = append(f.cps.audit, auditOp{rec: &rec})
}

// writeAuditTx appends the records of a commit at epoch, after its
// checkpoint ops (whose afterPins it reads).
func writeAuditTx(tx *chunkstore.Tx, ops []auditOp, epoch uint64) error {
	if len(ops) == 0 {
		return nil
	}
	recs := make([]*audit.Record, len(ops))
	for i, op := range ops {
		if op.after != nil {
			op.rec.After = op.after.epoch
		}
		recs[i] = op.rec
	}
	_, err := audit.Append(tx.Tx, epoch, now(), recs)
	return err
}

// AuditRecords commits what is pending and returns the log's records q
// selects, oldest first.
func (f *FS) AuditRecords(ctx context.Context, q audit.Query) ([]audit.Record, error) {
	if err := f.Sync(ctx); err != nil {
		return nil, err
	}
	var out []audit.Record
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		out, err = audit.Read(tx.Tx, q)
		return err
	})
	return out, err
}

// AuditVerify commits what is pending and checks the log's chain, its
// head, the anchors given and the exec records that say they were
// audited (audit.Verify).
func (f *FS) AuditVerify(ctx context.Context, anchors []audit.Head) (*audit.Report, error) {
	if err := f.Sync(ctx); err != nil {
		return nil, err
	}
	var rep *audit.Report
	err := f.view(func(tx *chunkstore.Tx) error {
		var err error
		rep, err = verifyAuditTx(tx, anchors)
		return err
	})
	return rep, err
}

func verifyAuditTx(tx *chunkstore.Tx, anchors []audit.Head) (*audit.Report, error) {
	recs, err := readCheckpoints(tx)
	if err != nil {
		return nil, err
	}
	opts := audit.VerifyOptions{Anchors: anchors}
	for _, r := range recs {
		if r.Audited {
			opts.Execs = append(opts.Execs, audit.ExecRef{ID: r.ID})
		}
	}
	return audit.Verify(tx.Tx, opts), nil
}

// checkAudit reports the audit log's problems (audit.Verify). Nothing is
// repaired: a broken chain is evidence, and stays as it is.
func (c *checker) checkAudit() error {
	rep, err := verifyAuditTx(c.tx, nil)
	if err != nil {
		// The exec records' damage is reported by their own checks.
		rep = audit.Verify(c.tx.Tx, audit.VerifyOptions{})
	}
	for _, p := range rep.Problems {
		c.problem("audit log: %s", p)
	}
	return nil
}
