package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestContainerCommandLists: the container's policy lists the commands an
// exec may start (commands) and those it may not (deny_commands). Through
// a daemon and runc: an allowed script runs; a script naming a command
// not allowed, a denied one, a computed one, or an argv exec of a denied
// program is refused before anything runs (checked on the mount: the
// marker each script would make first is not there); every verdict is in
// the audit log.
func TestContainerCommandLists(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(`{
		"backends": {"container": {"commands": ["echo", "cat", "touch", "curl", "/bin/ls"], "deny_commands": ["curl", "wget"]}}
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	startMount(t, home, ws, mnt)
	exec := func(args ...string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, append([]string{"exec", "-w", ws, "-b", "container"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := exec("--", "touch /workspace/ran-ok; echo hi > /workspace/ok.txt; cat /workspace/ok.txt; ls / >/dev/null"); r.code != 0 || r.stdout != "hi\n" {
		t.Fatalf("allowed script: %v", r)
	}
	if _, err := os.Stat(filepath.Join(mnt, "ran-ok")); err != nil {
		t.Errorf("the allowed script did not run: %v", err)
	}
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"not allowed", []string{"--", "touch /workspace/ran-1; python3 -c 1"}, "python3 is not in"},
		{"denied", []string{"--", "touch /workspace/ran-2; curl http://example.test"}, "denies this backend the command curl"},
		{"denied, wrapped", []string{"--", "touch /workspace/ran-3; env X=1 wget x"}, "wget"},
		{"computed", []string{"--", "touch /workspace/ran-4; c=touch; $c /workspace/ran-4b"}, "computes a command name"},
		{"argv denied", []string{"--kind", "argv", "--", "/usr/bin/wget", "http://x"}, "denies this backend the command wget"},
	}
	for i, c := range refused {
		r := exec(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: %v; want a refusal naming %q", c.name, r, c.want)
		}
		// Judged on the mount: nothing of it ran.
		for _, p := range []string{"ran-" + string(rune('1'+i)), "ran-4b"} {
			if _, err := os.Stat(filepath.Join(mnt, p)); err == nil {
				t.Errorf("%s: %s was made: the refused exec ran", c.name, p)
			}
		}
	}
	r := cli(t, home, "audit", "-w", ws, "--backend", "container", "--json")
	var recs []struct {
		Kind, Verdict, Door, Rule, Detail string
	}
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit --json: %v %v", err, r)
	}
	var got []string
	for _, x := range recs {
		got = append(got, x.Kind+"/"+x.Verdict+"/"+x.Rule)
	}
	want := "exec/allowed/ verdict/denied/commands verdict/denied/deny_commands verdict/denied/deny_commands verdict/denied/commands verdict/denied/deny_commands"
	if strings.Join(got, " ") != want {
		t.Errorf("audit records of the container:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
