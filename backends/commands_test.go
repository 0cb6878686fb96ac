package backends

import (
	"strings"
	"testing"
)

// commandVerdict: what an exec of a backend that does not check
// commands itself (the container) may start.
func TestCommandVerdict(t *testing.T) {
	allow := BackendPolicy{Commands: []string{"cat", "echo", "python3"}}
	deny := BackendPolicy{DenyCommands: []string{"curl", "wget"}}
	both := BackendPolicy{Commands: []string{"cat", "curl"}, DenyCommands: []string{"curl"}}
	tests := []struct {
		name   string
		pol    BackendPolicy
		argv   []string
		script bool
		rule   string // "" when allowed
		msg    string
	}{
		{"no lists", BackendPolicy{}, []string{"curl x"}, true, "", ""},
		{"allowed script", allow, []string{"echo hi > a; cat a | cat"}, true, "", ""},
		{"builtins", allow, []string{"cd /tmp; export A=1; if true; then echo; fi; for i in 1; do :; done"}, true, "", ""},
		{"not allowed", allow, []string{"echo hi; wget x"}, true, "commands", "wget is not in"},
		{"path of an allowed one", allow, []string{"/usr/bin/cat a"}, true, "", ""},
		{"wrapped", allow, []string{"env A=1 wget x"}, true, "commands", "wget"},
		{"xargs", allow, []string{"echo a | xargs rm"}, true, "commands", "rm"},
		{"computed name", allow, []string{"c=wget; $c x"}, true, "commands", "computes a command name"},
		{"unparsable", allow, []string{"echo ("}, true, "commands", "does not parse"},
		{"argv allowed", allow, []string{"python3", "-c", "import os"}, false, "", ""},
		{"argv not allowed", allow, []string{"/usr/bin/perl", "-e", "1"}, false, "commands", "perl"},
		{"argv denied", deny, []string{"/usr/bin/curl", "http://x"}, false, "deny_commands", "denies this backend the command curl"},
		{"denied in a script", deny, []string{"echo; (curl x) && true"}, true, "deny_commands", "curl"},
		{"deny list only: computed name passes", deny, []string{"c=ls; $c"}, true, "", ""},
		{"deny wins over allow", both, []string{"curl x"}, true, "deny_commands", "curl"},
		{"subshell in substitution", allow, []string{"echo $(wget -O- x)"}, true, "commands", "wget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := commandVerdict(tt.pol, tt.argv, tt.script)
			if rule != tt.rule || (err == nil) != (tt.rule == "") {
				t.Fatalf("commandVerdict = %q, %v; want rule %q", rule, err, tt.rule)
			}
			if err != nil && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
		})
	}
}
