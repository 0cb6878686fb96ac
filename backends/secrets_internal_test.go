package backends

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSecrets(t *testing.T) {
	proxied := map[string]BackendPolicy{"container": {Network: &NetworkPolicy{Mode: "proxy", Allow: []string{"a.test"}}}, "shell": {}}
	tests := []struct {
		name string
		sp   SecretPolicy
		want string // "" when valid
	}{
		{"env", SecretPolicy{FromEnv: "X", Backends: []string{"shell"}, Env: "X"}, ""},
		{"inject", SecretPolicy{FromFile: "/f", Backends: []string{"container"}, Inject: &SecretInject{Hosts: []string{"a.test"}, Header: "Authorization"}}, ""},
		{"two sources", SecretPolicy{FromEnv: "X", FromFile: "/f", Backends: []string{"shell"}, Env: "X"}, "exactly one"},
		{"no source", SecretPolicy{Backends: []string{"shell"}, Env: "X"}, "exactly one"},
		{"no backend", SecretPolicy{FromEnv: "X", Env: "X"}, "no backends"},
		{"no way in", SecretPolicy{FromEnv: "X", Backends: []string{"shell"}}, "give env"},
		{"bad env", SecretPolicy{FromEnv: "X", Backends: []string{"shell"}, Env: "A=B"}, "bad env"},
		{"bad header", SecretPolicy{FromEnv: "X", Backends: []string{"container"}, Inject: &SecretInject{Hosts: []string{"a.test"}, Header: "X: y"}}, "header"},
		{"no hosts", SecretPolicy{FromEnv: "X", Backends: []string{"container"}, Inject: &SecretInject{Header: "H"}}, "hosts"},
		{"inject without proxy", SecretPolicy{FromEnv: "X", Backends: []string{"shell"}, Inject: &SecretInject{Hosts: []string{"a.test"}, Header: "H"}}, "not an allow-list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSecrets(Policy{Backends: proxied, Secrets: map[string]SecretPolicy{"s": tt.sp}})
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("checkSecrets = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestLoadSecrets: values from a file (its final newline dropped) and
// the environment; a missing or short one refuses the policy, and the
// error holds no value.
func TestLoadSecrets(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	os.WriteFile(file, []byte("from-the-file-123\n"), 0o600)
	t.Setenv("CFS_TEST_SECRET_X", "from-the-env-456")
	t.Setenv("CFS_TEST_SECRET_SHORT", "short")
	pol := Policy{Secrets: map[string]SecretPolicy{
		"a": {FromFile: file, Backends: []string{"shell"}, Env: "A"},
		"b": {FromEnv: "CFS_TEST_SECRET_X", Backends: []string{"js"}, Env: "B"},
	}}
	c, err := compile(pol)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	c.secretEnv("shell", env)
	if len(env) != 1 || env["A"] != "from-the-file-123" {
		t.Errorf("the shell's secrets: %v", env)
	}
	if got := c.redact("x from-the-env-456 from-the-file-123"); got != "x [secret b] [secret a]" {
		t.Errorf("redact: %q", got)
	}
	for name, sp := range map[string]SecretPolicy{
		"missing file": {FromFile: filepath.Join(dir, "nope"), Backends: []string{"shell"}, Env: "A"},
		"missing env":  {FromEnv: "CFS_TEST_SECRET_NONE", Backends: []string{"shell"}, Env: "A"},
		"short":        {FromEnv: "CFS_TEST_SECRET_SHORT", Backends: []string{"shell"}, Env: "A"},
	} {
		_, err := compile(Policy{Secrets: map[string]SecretPolicy{"s": sp}})
		if err == nil || strings.Contains(err.Error(), "short\"") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRedactor: values split across writes, one byte at a time, at the
// end, overlapping a partial match, are all replaced; nothing else is
// changed or lost.
func TestRedactor(t *testing.T) {
	c := &compiledPolicy{secrets: []secret{{name: "a", value: "SECRETVALUE1"}, {name: "b", value: "tok-zzzzzzzz"}}}
	in := "start SECRETVALUE1 mid SECRETSECRETVALUE1 tok-zzzzzzz tok-zzzzzzzz end SECRETVALUE1"
	want := "start [secret a] mid SECRET[secret a] tok-zzzzzzz [secret b] end [secret a]"
	for _, chunk := range []int{1, 2, 5, 7, 100} {
		var out bytes.Buffer
		w := newRedactor(&out, c)
		for i := 0; i < len(in); i += chunk {
			w.Write([]byte(in[i:min(i+chunk, len(in))]))
		}
		flushOutput(w)
		if out.String() != want {
			t.Errorf("chunks of %d: %q", chunk, out.String())
		}
	}
}
