package backends_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
)

// TestReloadPolicy: a reload changes what the next exec may do; the
// backend whose policy changed is restarted (a new plugin process); an
// unchanged file does nothing; a bad file and a missing one are refused
// and audited, the policy in force staying. Execs run while reloads
// happen (-race).
func TestReloadPolicy(t *testing.T) {
	polPath := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(polPath, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"backends": {"shell": {"allow_env": ["A"]}}}`)
	pol, err := backends.LoadPolicy(polPath)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, []string{pluginDir(t, "shell")}, func(o *backends.Options) { o.Policy = pol })
	ctx := context.Background()
	run := func(env map[string]string) error {
		_, _, _, err := h.exec(t, &backends.Request{Backend: "shell", Argv: []string{"echo"}, Env: env})
		return err
	}
	pid := func() int64 {
		for _, b := range h.rt.List(ctx, false) {
			if b.Id == "shell" {
				return b.Pid
			}
		}
		return 0
	}
	if err := run(map[string]string{"B": "1"}); err == nil {
		t.Fatal("B allowed under the first policy")
	}
	if err := run(map[string]string{"A": "1"}); err != nil {
		t.Fatal(err)
	}
	first := pid()

	write(`{"backends": {"shell": {"allow_env": ["A", "B"]}}}`)
	// Reloads race with execs.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(map[string]string{"A": "1"})
		}()
	}
	if !h.rt.ReloadPolicy(polPath, nil) {
		t.Fatal("the changed file was not swapped in")
	}
	wg.Wait()
	if err := run(map[string]string{"B": "1"}); err != nil {
		t.Errorf("B under the new policy: %v", err)
	}
	if second := pid(); second == first || second == 0 {
		t.Errorf("the backend was not restarted under its new policy: pid %d, then %d", first, second)
	}
	if h.rt.ReloadPolicy(polPath, nil) {
		t.Error("an unchanged file changed the policy")
	}
	write(`{"backends": {"shell": {"allow_env": "A"}}}`)
	if h.rt.ReloadPolicy(polPath, nil) {
		t.Error("a bad file was swapped in")
	}
	os.Remove(polPath)
	if h.rt.ReloadPolicy(polPath, nil) {
		t.Error("a missing file was swapped in")
	}
	if err := run(map[string]string{"B": "1"}); err != nil {
		t.Errorf("the policy in force did not stay: %v", err)
	}
	recs, err := h.ws.AuditRecords(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var versions []string
	for _, r := range recs {
		if r.Kind == audit.KindPolicy {
			kinds = append(kinds, "policy")
			versions = append(versions, r.PolicyVersion+"<"+r.PreviousPolicy)
		}
		if r.Door == "policy" {
			kinds = append(kinds, r.Verdict+"/"+r.Rule)
		}
	}
	if strings.Join(kinds, " ") != "policy policy denied/reload denied/reload" {
		t.Errorf("policy records: %v", kinds)
	}
	if len(versions) == 2 && !strings.HasSuffix(versions[1], "<"+strings.Split(versions[0], "<")[0]) {
		t.Errorf("the reload's record does not name the version it replaced: %v", versions)
	}
}
