package main

import (
	"github.com/computerfs/computerfs/audit"
	"github.com/spf13/cobra"
)

// computerfs audit: the hash-chained audit log, or its verification.
type auditOptions struct {
	ws                 string
	query              audit.Query
	json, verify, head bool
	anchors            []audit.Head
}

func newAuditCmd(e *env) *cobra.Command {
	var o auditOptions
	c := &cobra.Command{
		Use:   "audit [--since SEQ] [--backend ID] [--denied] [--json] | --verify [--anchor SEQ:HASH]",
		Short: "the audit log: every exec and policy verdict, hash-chained in the store; --verify checks the chain",
		Args:  argRange(0, 0),
		RunE:  func(c *cobra.Command, args []string) error { return runAudit(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store (or its mountpoint)")
	f.Uint64Var(&o.query.Since, "since", 0, "only records after this sequence number")
	f.StringVar(&o.query.Backend, "backend", "", "only this backend's records")
	f.BoolVar(&o.query.Denied, "denied", false, "only denied verdicts")
	f.IntVarP(&o.query.Limit, "last", "n", 0, "only the last N records (0: all)")
	f.BoolVar(&o.json, "json", false, "print JSON for machines")
	f.BoolVar(&o.verify, "verify", false, "check the chain: exit 3 naming every edit, deletion or truncation found")
	f.Func("anchor", "with --verify: a head printed earlier by --head (SEQ:HASH), kept outside the workspace; repeatable", func(s string) error {
		h, err := audit.ParseHead(s)
		o.anchors = append(o.anchors, h)
		return err
	})
	f.BoolVar(&o.head, "head", false, "verify, then print the last record's SEQ:HASH, an anchor to keep elsewhere")
	return c
}
