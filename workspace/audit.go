package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/computerfs/computerfs/audit"
)

// Audit queues a record for the workspace's audit log (fs.FS.Audit): it
// rides with the next commit.
func (w *WS) Audit(rec audit.Record) { w.f.Audit(rec) }

// AuditRecords returns the audit log's records q selects, oldest first.
func (w *WS) AuditRecords(ctx context.Context, q audit.Query) ([]audit.Record, error) {
	return w.f.AuditRecords(ctx, q)
}

// AuditVerify checks the audit log's chain (fs.FS.AuditVerify).
func (w *WS) AuditVerify(ctx context.Context, anchors []audit.Head) (*audit.Report, error) {
	return w.f.AuditVerify(ctx, anchors)
}

// DenialRecord is the audit record of path-rule refusal d made at door
// ("api" for the file API, "hostfs" for a backend's file calls, "mount"
// for a policy view's FUSE mount). The caller fills in what it knows of
// the backend and the exec.
func DenialRecord(d Denial, door string) audit.Record {
	p := d.Decided
	if p == "" {
		p = d.Path
	}
	return audit.Record{
		Kind: audit.KindVerdict, Verdict: audit.Denied, Door: door,
		Rule:   RuleName(d.Rule),
		Path:   p,
		Detail: d.Op + " " + d.Path + ": " + d.Errno.Error(),
	}
}

// RuleName is how the audit log names a path rule: paths["PATTERN"]=VERDICT.
func RuleName(r Rule) string {
	return fmt.Sprintf("paths[%q]=%s", r.Pattern, r.Verdict)
}

// AuditDenials returns a view of w whose path-rule refusals go to the
// workspace's audit log as door's (backend, policy version as given),
// through c, which bounds floods of them (audit.Coalescer).
//
// c is first seeded with the log's last refusals (audit.Coalescer.Seed),
// so that a process run again and again adds no record of a refusal the
// log has from the last minute.
func (w *WS) AuditDenials(door, backend, policyVersion string, c *audit.Coalescer) *WS {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if recent, err := w.f.AuditRecords(ctx, audit.Query{Denied: true, Limit: 200}); err == nil {
		c.Seed(recent, time.Now())
	}
	cancel()
	return w.WithDenialHook(func(d Denial) {
		rec := DenialRecord(d, door)
		rec.Backend, rec.PolicyVersion = backend, policyVersion
		for _, r := range c.Admit(rec, time.Now()) {
			w.Audit(r)
		}
	})
}
