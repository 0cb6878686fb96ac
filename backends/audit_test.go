package backends_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
)

// TestAuditLog: every exec and every refusal of the policy reaches the
// workspace's audit log, with the policy's version, environment names
// and never their values; many execs at once keep the chain whole.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{
		"test": {ReadOnly: true},
		"rw":   {AllowEnv: []string{"FOO"}},
		"off":  {Disabled: true},
	}}
	h := newHarness(t, []string{pluginDir(t, "test", "rw", "off")}, func(o *backends.Options) { o.Policy = pol })
	version := backends.PolicyVersion(pol)

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _, _, err := h.exec(t, &backends.Request{Backend: "rw", Argv: []string{"write", fmt.Sprintf("/f%d", i), "data"}, Env: map[string]string{"FOO": "value-of-foo"}})
			if err != nil || backends.ExitStatus(res.Exit) != 0 {
				t.Errorf("write %d: %v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/x", "data"}})
	if err != nil || backends.ExitStatus(res.Exit) != 1 {
		t.Fatalf("write on a read-only backend: %v %v", res, err)
	}
	roID := res.ID
	if _, _, _, err := h.exec(t, &backends.Request{Backend: "rw", Argv: []string{"env"}, Env: map[string]string{"SECRET": "hunter2-secret-value"}}); err == nil {
		t.Fatal("a variable the policy does not allow was accepted")
	}
	if _, _, _, err := h.exec(t, &backends.Request{Backend: "off", Argv: []string{"echo"}}); err == nil {
		t.Fatal("a disabled backend ran")
	}
	h.exec(t, &backends.Request{Backend: "rw", Argv: []string{"read-badtoken", "/f1"}})

	recs, err := h.ws.AuditRecords(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(recs)
	if strings.Contains(string(all), "hunter2-secret-value") || strings.Contains(string(all), "value-of-foo") {
		t.Errorf("an environment value is in the audit log: %s", all)
	}
	if len(recs) == 0 || recs[0].Kind != audit.KindPolicy || recs[0].PolicyVersion != version {
		t.Fatalf("first record: %+v, want the policy loaded, version %s", recs[0], version)
	}
	var execs int
	seen := map[string]*audit.Record{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != audit.KindPolicy && r.PolicyVersion != version {
			t.Errorf("record %d: policy version %q", r.Seq, r.PolicyVersion)
		}
		switch {
		case r.Kind == audit.KindExec && r.Backend == "rw" && r.Argv[0] == "write":
			execs++
			// Changes made through any door while it ran: the
			// concurrent writes' too.
			if !slices.Contains(r.Paths, r.Argv[1]) || r.After <= r.Before || r.Exit == nil || *r.Exit != 0 || strings.Join(r.EnvNames, ",") != "FOO,HOME,LANG,PATH" || r.Argv[0] != "write" || r.Reason == "" {
				t.Errorf("exec record: %+v", r)
			}
		case r.Kind == audit.KindExec && r.ExecID == roID:
			// It changed nothing; its After may still be past its
			// Before when a commit (a queued verdict's, a tick's) lands
			// while it runs.
			if r.Denials != 1 || r.After < r.Before || len(r.Paths) != 0 {
				t.Errorf("read-only exec's record: %+v", r)
			}
		case r.Verdict == audit.Denied:
			seen[r.Rule] = r
		}
	}
	if execs != 8 {
		t.Errorf("%d exec records on rw, want 8", execs)
	}
	if r := seen["read_only"]; r == nil || r.Door != "hostfs" || r.ExecID != roID || r.Backend != "test" || r.Path != "/x" {
		t.Errorf("read-only refusal: %+v", r)
	}
	if r := seen["allow_env"]; r == nil || r.Backend != "rw" || strings.Join(r.EnvNames, ",") != "SECRET" || !strings.Contains(r.Detail, "SECRET") {
		t.Errorf("env refusal: %+v", r)
	}
	if r := seen["disabled"]; r == nil || r.Backend != "off" {
		t.Errorf("disabled refusal: %+v", r)
	}
	if r := seen["token"]; r == nil || r.Door != "hostfs" {
		t.Errorf("token refusal: %+v", r)
	}
	denied, _ := h.ws.AuditRecords(ctx, audit.Query{Denied: true})
	if len(denied) != len(seen) {
		t.Errorf("--denied: %d records, want %d", len(denied), len(seen))
	}
	if rep, err := h.ws.AuditVerify(ctx, nil); err != nil || !rep.OK() || rep.Execs != 10 {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

// TestAuditShellCommands: commands the shell's policy will refuse are a
// verdict in the log as the exec starts.
func TestAuditShellCommands(t *testing.T) {
	t.Parallel()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"shell": {Commands: []string{"echo", "cat"}}}}
	h := newHarness(t, []string{pluginDir(t, "shell")}, func(o *backends.Options) { o.Policy = pol })
	h.exec(t, &backends.Request{Backend: "shell", Argv: []string{"cd /; cat f | wc -l; curl x"}})
	recs, err := h.ws.AuditRecords(context.Background(), audit.Query{Denied: true})
	if err != nil || len(recs) != 1 || recs[0].Rule != "commands" || recs[0].Door != "shell" || !strings.HasSuffix(recs[0].Detail, ": curl, wc") {
		t.Fatalf("%+v %v", recs, err)
	}
}
