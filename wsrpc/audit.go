package wsrpc

import (
	"context"
	"encoding/json"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Audit queries the workspace's audit log, or verifies it.
func (s *DaemonServer) Audit(ctx context.Context, req *pb.AuditRequest) (*pb.AuditResponse, error) {
	w, err := s.ws()
	if err != nil {
		return nil, err
	}
	if req.Verify {
		var anchors []audit.Head
		for _, a := range req.Anchors {
			h, err := audit.ParseHead(a)
			if err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			anchors = append(anchors, h)
		}
		rep, err := w.AuditVerify(ctx, anchors)
		if err != nil {
			return nil, status.Errorf(codeOf(err), "audit log of %s: %v", s.store, err)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &pb.AuditResponse{ReportJson: string(b)}, nil
	}
	recs, err := w.AuditRecords(ctx, audit.Query{Since: req.Since, Backend: req.Backend, Denied: req.Denied, Limit: int(req.Limit)})
	if err != nil {
		return nil, status.Errorf(codeOf(err), "audit log of %s: %v", s.store, err)
	}
	out := &pb.AuditResponse{}
	for i := range recs {
		b, err := json.Marshal(auditJSON(&recs[i]))
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		out.RecordsJson = append(out.RecordsJson, string(b))
	}
	return out, nil
}

// auditJSON is a record with its hash, as the wire and the CLI show it.
type auditRecordJSON struct {
	*audit.Record
	Hash string `json:"hash"`
}

func auditJSON(r *audit.Record) auditRecordJSON { return auditRecordJSON{r, r.Hash} }

// AuditRecords is workspace.WS.AuditRecords on the daemon's workspace.
func (c *DaemonClient) AuditRecords(ctx context.Context, q audit.Query) ([]audit.Record, error) {
	r, err := c.c.Audit(ctx, &pb.AuditRequest{Since: q.Since, Backend: q.Backend, Denied: q.Denied, Limit: int32(q.Limit)})
	if err != nil {
		return nil, PlainError(err)
	}
	out := make([]audit.Record, 0, len(r.RecordsJson))
	for _, s := range r.RecordsJson {
		var j struct {
			audit.Record
			Hash string `json:"hash"`
		}
		if err := json.Unmarshal([]byte(s), &j); err != nil {
			return nil, err
		}
		j.Record.Hash = j.Hash
		out = append(out, j.Record)
	}
	return out, nil
}

// AuditVerify is workspace.WS.AuditVerify on the daemon's workspace.
func (c *DaemonClient) AuditVerify(ctx context.Context, anchors []audit.Head) (*audit.Report, error) {
	req := &pb.AuditRequest{Verify: true}
	for _, a := range anchors {
		req.Anchors = append(req.Anchors, a.String())
	}
	r, err := c.c.Audit(ctx, req)
	if err != nil {
		return nil, PlainError(err)
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(r.ReportJson), &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
