package backends_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/workspace"
)

func writePolicy(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyPaths(t *testing.T) {
	p, err := backends.LoadPolicy(writePolicy(t, `{
		"paths": {"**/.env": "deny", "**/*.pem": "deny", "/vendor/**": "allow"},
		"backends": {
			"container": {"paths": {"/vendor/**": "read_only"}},
			"js": {"paths": {"/**": "read_only", "/out/**": "allow"}},
			"shell": {}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Paths; len(got) != 3 || got[0].Pattern != "**/.env" || got[2].Pattern != "/vendor/**" || got[2].Verdict != workspace.Allow {
		t.Fatalf("top-level paths out of order: %+v", got)
	}
	check := func(id, path string, want workspace.Verdict) {
		t.Helper()
		var rs *workspace.Rules
		var err error
		if id == "" {
			rs, err = p.FileRules()
		} else {
			rs, err = p.PathRules(id)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, by := rs.Verdict(path); got != want {
			t.Errorf("%s %s: %s (by %q), want %s", id, path, got, by.Pattern, want)
		}
	}
	check("", "/a/.env", workspace.Deny)
	check("", "/vendor/x", workspace.Allow)
	check("shell", "/k.pem", workspace.Deny)
	check("container", "/vendor/x", workspace.ReadOnly) // same pattern: the backend's replaces
	check("container", "/vendor/.env", workspace.Deny)  // the floor holds
	check("js", "/out/a", workspace.Allow)
	check("js", "/src/a", workspace.ReadOnly)
	check("js", "/out/.env", workspace.Deny)
	check("nobody", "/x", workspace.Allow)

	// Round trip keeps the order.
	b, err := json.Marshal(p.Backends["js"].Paths)
	if err != nil || string(b) != `{"/**":"read_only","/out/**":"allow"}` {
		t.Errorf("marshal: %s, %v", b, err)
	}

	// No paths: no rules.
	p, err = backends.LoadPolicy(writePolicy(t, `{"backends": {"shell": {"root": "/"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := p.PathRules("shell"); rs != nil || err != nil {
		t.Errorf("no paths: %v, %v", rs, err)
	}
}

func TestPolicyPathsRefused(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"paths": {"[a": "deny"}}`, `pattern "[a"`},
		{`{"paths": {"a": "readonly"}}`, `want allow, read_only or deny`},
		{`{"paths": {"a": "deny", "a": "allow"}}`, `"a" given twice`},
		{`{"paths": ["a"]}`, `want an object`},
		{`{"paths": {"a": true}}`, `want a verdict string`},
		{`{"paths": {"/": "deny"}}`, `matches only the root`},
		{`{"backends": {"js": {"paths": {"/a/../b": "deny"}}}}`, `backend js: paths: pattern "/a/../b"`},
		{`{"paths": {"": "deny"}}`, `empty pattern`},
	} {
		_, err := backends.LoadPolicy(writePolicy(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.text, err, tc.want)
		}
	}
}
