package workspace

import (
	"context"

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
