package backends

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/zeebo/blake3"
)

// Policy reload (issue 17): the daemon watches its policy file and, when
// it changes, reads and checks it whole, then swaps it in at once
// (SetPolicy). A file that does not load (bad JSON, an unknown field, a
// rule that does not compile) is refused: the error goes to the log
// (and, as a denied verdict of door "policy", to the audit log) and the
// policy in force stays.
//
// What a swap changes, and when:
//   - routing, environment, command lists and path rules of HostFS
//     backends (shell, js, third-party): from the next exec (an exec
//     reads the policy once, as it starts; one under way keeps its own);
//   - a backend whose own policy changed (its entry, the path rules it
//     gets, or its settings: the container's mount, network...) is
//     restarted at its next exec, under the new policy: its plugin
//     process ends, and an exec still running on it ends with it. The
//     container's policy view is remounted under the new rules then;
//   - the audit log gets a policy record with the new version and the
//     one it replaced (Record.PreviousPolicy).

// policy is the policy in force.
func (r *Runtime) policy() *Policy { return r.pol.Load() }

// Policy returns the policy in force.
func (r *Runtime) Policy() Policy { return *r.policy() }

// SetPolicy swaps pol in (after checking it) and records the change in
// the audit log with detail ("reloaded from PATH"). It returns false,
// doing nothing, when pol's version is the one in force.
func (r *Runtime) SetPolicy(pol Policy, detail string) (bool, error) {
	if err := pol.check(); err != nil {
		return false, err
	}
	old := r.policy()
	if PolicyVersion(*old) == PolicyVersion(pol) {
		return false, nil
	}
	c, err := compile(pol)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	r.pol.Store(&pol)
	r.compiled.Store(c)
	var changed []string
	var stale []*backend
	for id, b := range r.backends {
		if backendKey(*old, id) != backendKey(pol, id) {
			changed = append(changed, id)
			stale = append(stale, b)
		}
	}
	r.mu.Unlock()
	// Not under r.mu: ensure holds b.mu while it asks isClosed (r.mu).
	for _, b := range stale {
		b.mu.Lock()
		b.stale = true
		b.mu.Unlock()
	}
	r.auditPolicy(detail)
	r.log.Info("policy changed", "version", PolicyVersion(pol), "previous", PolicyVersion(*old), "backends_restarted_at_next_exec", changed)
	return true, nil
}

// backendKey is what backend id's plugin was started with under pol:
// a change of it restarts the plugin.
func backendKey(pol Policy, id string) string {
	bp := pol.For(id)
	b, _ := json.Marshal(struct {
		B   BackendPolicy
		Top PathRules
	}{bp, pol.Paths})
	return string(b)
}

// refusePolicy records a policy file that was not loaded.
func (r *Runtime) refusePolicy(path string, err error) {
	r.log.Error("policy file refused: the policy in force stays", "path", path, "err", err)
	r.auditRec(audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "policy", Rule: "reload",
		Detail: err.Error(), PolicyVersion: r.policyVersion()})
}

// WatchPolicy watches the policy file at path until ctx ends, every
// interval (a second if 0): when its content changes it loads it and
// calls SetPolicy, then apply (if set: the daemon's other users of the
// policy, such as the file API's rules) with the new policy. A file that
// does not load is refused (logged, audited) and the policy in force
// stays; so is a missing file, which LoadPolicy would read as the
// default policy (a deleted file must not lift every rule). It polls the
// file rather than watch its directory: editors replace files by
// renaming, and a poll of one stat a second costs nothing.
func (r *Runtime) WatchPolicy(ctx context.Context, path string, interval time.Duration, apply func(Policy)) {
	if interval <= 0 {
		interval = time.Second
	}
	last := fileSum(path)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sum := fileSum(path)
		if bytes.Equal(sum, last) {
			continue
		}
		last = sum
		r.ReloadPolicy(path, apply)
	}
}

// ReloadPolicy loads the policy file at path and swaps it in (see
// WatchPolicy); it returns whether the policy changed.
func (r *Runtime) ReloadPolicy(path string, apply func(Policy)) bool {
	if _, err := os.Stat(path); err != nil {
		r.refusePolicy(path, fmt.Errorf("policy %s: %w", path, err))
		return false
	}
	pol, err := LoadPolicy(path)
	if err != nil {
		r.refusePolicy(path, err)
		return false
	}
	changed, err := r.SetPolicy(pol, "reloaded from "+path)
	if err != nil {
		r.refusePolicy(path, fmt.Errorf("policy %s: %w", path, err))
		return false
	}
	if changed && apply != nil {
		apply(pol)
	}
	return changed
}

// fileSum is the BLAKE3 of the file at path, nil if it cannot be read.
func fileSum(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := blake3.Sum256(b)
	return s[:]
}
