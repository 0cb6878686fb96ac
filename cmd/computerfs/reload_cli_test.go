package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/mountinfo"
)

// TestPolicyReload: the daemon swaps in a changed policy file without a
// restart, for every door (the file API, the shell through HostFS, the
// container on a policy view remounted under the new rules), audits the
// change with both versions, and refuses a bad file (and a deleted one),
// keeping the policy in force.
func TestPolicyReload(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	polPath := filepath.Join(home, "policy.json")
	writePol := func(s string) {
		t.Helper()
		// As editors do: a new file renamed over the old one.
		tmp := polPath + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, polPath); err != nil {
			t.Fatal(err)
		}
	}
	writePol(`{"paths": {"**/.env": "deny"}}`)
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	startMount(t, home, ws, mnt)
	for p, data := range map[string]string{".env": "ENV-CONTENT\n", "x.key": "KEY-CONTENT\n"} {
		if err := os.WriteFile(filepath.Join(mnt, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(backend, script string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", backend, "--", script)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// reads says which of .env and x.key each door can read.
	reads := func() string {
		t.Helper()
		var out []string
		for _, name := range []string{".env", "x.key"} {
			for _, door := range []string{"api", "shell", "container"} {
				var r result
				switch door {
				case "api":
					r = fsRun(t, home, ws, "", "cat", "/"+name)
				case "shell":
					r = exec("shell", "cat /"+name)
				case "container":
					r = exec("container", "cat /workspace/"+name)
				}
				if r.code == 0 && strings.HasSuffix(r.stdout, "-CONTENT\n") {
					out = append(out, door+":"+name)
				}
			}
		}
		return strings.Join(out, " ")
	}
	if got := reads(); got != "api:x.key shell:x.key container:x.key" {
		t.Fatalf("under the first policy: %q", got)
	}
	policyRecords := func() (out []struct {
		Kind, Verdict, Door, Rule, Detail string
		Version                           string `json:"policy_version"`
		Previous                          string `json:"previous_policy"`
	}) {
		t.Helper()
		r := cli(t, home, "audit", "-w", ws, "--json")
		var all []struct {
			Kind, Verdict, Door, Rule, Detail string
			Version                           string `json:"policy_version"`
			Previous                          string `json:"previous_policy"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
			t.Fatalf("audit --json: %v %v", err, r)
		}
		for _, x := range all {
			if x.Kind == "policy" || x.Door == "policy" {
				out = append(out, x)
			}
		}
		return out
	}
	waitRecords := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); len(policyRecords()) < n; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no new policy record: %+v", policyRecords())
			}
		}
	}

	writePol(`{"paths": {"**/*.key": "deny"}}`)
	waitRecords(2)
	if got := reads(); got != "api:.env shell:.env container:.env" {
		t.Errorf("after the reload: %q", got)
	}
	recs := policyRecords()
	if recs[1].Kind != "policy" || !strings.HasPrefix(recs[1].Detail, "reloaded from") || recs[1].Previous != recs[0].Version || recs[1].Version == recs[0].Version {
		t.Errorf("policy records: %+v", recs)
	}
	// One policy view is mounted: the old one went.
	if n := viewMounts(t, mnt); n != 1 {
		t.Errorf("policy view mounts after the reload: %d", n)
	}

	// A bad file, then none: refused, audited; the policy stays.
	writePol(`{"paths": {"**/*.key": "forbid"}}`)
	waitRecords(3)
	os.Remove(polPath)
	waitRecords(4)
	recs = policyRecords()
	for _, x := range recs[2:] {
		if x.Door != "policy" || x.Verdict != "denied" || x.Rule != "reload" || x.Version != recs[1].Version {
			t.Errorf("refused policy record: %+v", x)
		}
	}
	if !strings.Contains(recs[2].Detail, "forbid") || !strings.Contains(recs[3].Detail, "no such file") {
		t.Errorf("refusals: %q, %q", recs[2].Detail, recs[3].Detail)
	}
	if got := reads(); got != "api:.env shell:.env container:.env" {
		t.Errorf("after the refused files: %q", got)
	}
	if r := cli(t, home, "audit", "-w", ws, "--verify"); r.code != 0 {
		t.Errorf("audit --verify: %v", r)
	}
}

// viewMounts counts the policy views of the daemon of mountpoint mnt.
func viewMounts(t *testing.T, mnt string) int {
	t.Helper()
	abs, _ := filepath.Abs(mnt)
	entries, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.FSType == "fuse.computerfs" && strings.HasPrefix(e.Source, abs+" (") {
			n++
		}
	}
	return n
}
