package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/wsrpc"
)

// cmdAudit is computerfs audit [-w WS] [--since SEQ] [--backend ID]
// [--denied] [-n N] [--json], or --verify [--anchor SEQ:HASH]..., or
// --head: the workspace's audit log (package audit), through its daemon
// or on the store when none serves it.
func runAudit(ctx context.Context, e *env, o auditOptions, args []string) error {
	ws, q, asJSON, verify, head, anchors := o.ws, o.query, o.json, o.verify, o.head, o.anchors
	var err error
	if verify || head {
		var rep *audit.Report
		err := onWorkspace(ctx, e, ws, func(d *wsrpc.DaemonClient) error {
			rep, err = d.AuditVerify(ctx, anchors)
			return err
		}, func(f *fs.FS) error {
			rep, err = f.AuditVerify(ctx, anchors)
			return err
		})
		if err != nil {
			return err
		}
		switch {
		case asJSON:
			if err := printJSON(e, map[string]any{"ok": rep.OK(), "report": rep}); err != nil {
				return err
			}
		case head && rep.OK():
			fmt.Fprintln(e.stdout, rep.Last)
		case rep.OK():
			fmt.Fprintf(e.stdout, "audit log OK: %d records, last %s; %d exec records cross-checked, %d anchors\n", rep.Records, orNone(rep.Last), rep.Execs, rep.Anchors)
		default:
			for _, p := range rep.Problems {
				fmt.Fprintf(e.stderr, "audit log: %s\n", p)
			}
		}
		if !rep.OK() {
			return codedError{fmt.Errorf("the audit log is broken: %d problem(s) (%d records)", len(rep.Problems), rep.Records), exitFailed}
		}
		return nil
	}
	if len(anchors) > 0 {
		return codedError{errors.New("--anchor goes with --verify"), exitUsage}
	}
	var recs []audit.Record
	err = onWorkspace(ctx, e, ws, func(d *wsrpc.DaemonClient) error {
		recs, err = d.AuditRecords(ctx, q)
		return err
	}, func(f *fs.FS) error {
		recs, err = f.AuditRecords(ctx, q)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		out := []any{}
		for i := range recs {
			out = append(out, struct {
				*audit.Record
				Hash string `json:"hash"`
				At   string `json:"time"`
			}{&recs[i], recs[i].Hash, time.Unix(0, recs[i].Time).UTC().Format(time.RFC3339Nano)})
		}
		return printJSON(e, out)
	}
	for _, r := range recs {
		fmt.Fprintln(e.stdout, auditLine(&r))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// auditLine is one record on one line.
func auditLine(r *audit.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5d %s %-11s", r.Seq, time.Unix(0, r.Time).Format("2006-01-02 15:04:05"), r.Kind)
	if r.Verdict != "" {
		fmt.Fprintf(&b, " %-7s", r.Verdict)
	}
	if r.Backend != "" {
		fmt.Fprintf(&b, " %s", r.Backend)
	}
	if r.Door != "" || r.Rule != "" {
		fmt.Fprintf(&b, " [%s%s]", r.Door, map[bool]string{true: "/" + r.Rule, false: ""}[r.Rule != ""])
	}
	if r.ExecID != "" {
		fmt.Fprintf(&b, " %s", r.ExecID)
	}
	switch r.Kind {
	case audit.KindExec:
		exit := 0
		if r.Exit != nil {
			exit = *r.Exit
		}
		fmt.Fprintf(&b, " exit %d %s, %d changed", exit, time.Duration(r.DurationNs).Round(time.Millisecond), len(r.Paths))
		if r.After > r.Before {
			fmt.Fprintf(&b, " (epochs %d..%d)", r.Before, r.After)
		}
		if r.Denials > 0 {
			fmt.Fprintf(&b, ", %d denied", r.Denials)
		}
	case audit.KindPolicy:
		fmt.Fprintf(&b, " version %s", r.PolicyVersion)
		switch r.PreviousPolicy {
		case "":
		case r.PolicyVersion:
			b.WriteString(" (unchanged)")
		default:
			fmt.Fprintf(&b, " (changed from %s)", r.PreviousPolicy)
		}
	}
	if r.Path != "" {
		fmt.Fprintf(&b, " %s", r.Path)
	}
	if r.Detail != "" && r.Kind != audit.KindExec {
		fmt.Fprintf(&b, ": %s", oneLine(r.Detail, 100))
	}
	if len(r.Argv) > 0 {
		fmt.Fprintf(&b, " -- %s", oneLine(strings.Join(r.Argv, " "), 60))
	} else if r.File != "" {
		fmt.Fprintf(&b, " -- %s", r.File)
	}
	return b.String()
}
