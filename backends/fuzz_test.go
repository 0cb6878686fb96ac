package backends

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCommandsOf: the router's parse of a script (wrappers such as xargs
// and env unwrapped) never panics and the command names it finds are
// non-empty; the ES module test never panics either.
func FuzzCommandsOf(f *testing.F) {
	for _, s := range []string{"grep -rn TODO . | sort | head", "for i in 1 2; do echo $i; done", "x=$(ls); $x", "a && b || c", "'unterminated",
		"find . | xargs -I{} -n 1 gofmt -l {}", "env -u X A=1 timeout -s KILL 5 nice -n 3 make", "command -v git", "export default () => 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		isESModule(script)
		names, _, err := commandsOf(script)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" {
				t.Fatalf("an empty command name from %q", script)
			}
		}
	})
}

// FuzzPolicyJSON: any policy file either fails to load or loads into a
// policy that checks, writes back, and reads again as the same version.
func FuzzPolicyJSON(f *testing.F) {
	for _, s := range []string{
		`{"backends": {"container": {"network": "none"}}}`,
		`{"backends": {"container": {"network": {"allow": ["a.test", "10.0.0.0/8:443"], "hosts": {"a.test": "10.0.0.1"}}}}}`,
		`{"backends": {"container": {"network": {"allow": ["a.test"]}, "commands": ["git"], "deny_commands": ["curl"]}},
		  "secrets": {"s": {"from_env": "X", "backends": ["container"], "inject": {"hosts": ["a.test"], "header": "Authorization"}}}}`,
		`{"paths": {"**/.env": "deny"}}`, `{"backends": {"c": {"network": 1}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		p := filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		pol, err := LoadPolicy(p)
		if err != nil {
			return
		}
		b, err := json.Marshal(pol)
		if err != nil {
			t.Fatalf("marshal a loaded policy: %v", err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := LoadPolicy(p)
		if err != nil {
			t.Fatalf("a policy written back does not load: %v\n%s", err, b)
		}
		if PolicyVersion(again) != PolicyVersion(pol) {
			t.Fatalf("the version changed on a round trip:\n%s", b)
		}
	})
}
