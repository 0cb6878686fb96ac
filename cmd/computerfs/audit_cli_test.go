package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/audit"
	bolt "go.etcd.io/bbolt"
)

// TestAuditCLI: execs and refusals through a real daemon reach `computerfs
// audit`; its filters and JSON; --verify passes, then, on the store with
// a record deleted through bbolt, fails (exit 3) naming it, offline.
func TestAuditCLI(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	createStore(t, ws)
	pol := `{"backends": {"shell": {"commands": ["echo", "cat"], "allow_env": ["FOO"]}, "off": {"disabled": true}}}`
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	d := startServe(t, home, ws)
	exec := func(args ...string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, append([]string{"exec", "-w", ws}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := exec("-b", "shell", "--env", "FOO=not-in-the-log", "--", "echo hi > /a && cat /a"); r.code != 0 {
		t.Fatalf("exec: %v", r)
	}
	exec("-b", "shell", "--", "wc -l /a")                      // the shell refuses wc
	exec("-b", "shell", "--env", "TOKEN=s3cr3t", "--", "echo") // the policy refuses TOKEN
	exec("-b", "nosuch", "--", "true")                         // no such backend

	r := cli(t, home, "audit", "-w", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "policy") || !strings.Contains(r.stdout, "exec        allowed shell [exec]") || !strings.Contains(r.stdout, "-- echo hi > /a && cat /a") {
		t.Fatalf("audit: %v", r)
	}
	if strings.Contains(r.stdout, "not-in-the-log") || strings.Contains(r.stdout, "s3cr3t") {
		t.Errorf("an environment value in the log: %s", r.stdout)
	}
	r = cli(t, home, "audit", "-w", ws, "--denied", "--json")
	var denied []struct {
		Seq      uint64   `json:"seq"`
		Rule     string   `json:"rule"`
		Backend  string   `json:"backend"`
		Verdict  string   `json:"verdict"`
		EnvNames []string `json:"env_names"`
		Hash     string   `json:"hash"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &denied); err != nil || len(denied) != 3 {
		t.Fatalf("audit --denied --json: %v %v", err, r)
	}
	rules := []string{}
	for _, x := range denied {
		rules = append(rules, x.Rule)
		if x.Verdict != "denied" || len(x.Hash) != 64 {
			t.Errorf("denied record: %+v", x)
		}
	}
	if strings.Join(rules, ",") != "commands,allow_env,backend" {
		t.Errorf("rules of the refusals: %v", rules)
	}
	if r := cli(t, home, "audit", "-w", ws, "--backend", "nosuch"); r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("audit --backend nosuch: %v", r)
	}
	if r := cli(t, home, "audit", "-w", ws, "--since", "4"); r.code != 0 || strings.HasPrefix(r.stdout, "1 ") || !strings.HasPrefix(r.stdout, "5 ") {
		t.Errorf("audit --since 4: %v", r)
	}
	r = cli(t, home, "audit", "-w", ws, "--verify")
	if r.code != 0 || !strings.Contains(r.stdout, "audit log OK") || !strings.Contains(r.stdout, "2 exec records cross-checked") {
		t.Fatalf("audit --verify: %v", r)
	}
	r = cli(t, home, "audit", "-w", ws, "--head")
	anchor := strings.TrimSpace(r.stdout)
	if _, err := audit.ParseHead(anchor); r.code != 0 || err != nil {
		t.Fatalf("audit --head: %v %v", r, err)
	}
	d.stop(t)

	// Offline, on the store: verified against the anchor; then a record
	// deleted with bbolt is found.
	if r := cli(t, home, "audit", "-w", ws, "--verify", "--anchor", anchor); r.code != 0 {
		t.Fatalf("offline verify with the anchor: %v", r)
	}
	db, err := bolt.Open(ws, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(audit.BucketName).Delete(binary.BigEndian.AppendUint64(nil, 2))
	})
	db.Close()
	r = cli(t, home, "audit", "-w", ws, "--verify")
	if r.code != 3 || !strings.Contains(r.stderr, "records 2 to 2 are missing") {
		t.Errorf("verify of a log with a record deleted: %v", r)
	}
	if r := cli(t, home, "fsck", ws); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "audit log: records 2 to 2 are missing") {
		t.Errorf("fsck of a log with a record deleted: %v", r)
	}
}
