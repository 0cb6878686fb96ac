package fusefs

import (
	"testing"

	"github.com/computerfs/computerfs/workspace"
)

// viewPaths keeps a node's paths while the kernel holds it, follows
// renames, drops what another door changed, and judges a node by the
// strictest of its paths (read-only when it knows none).
func TestViewPaths(t *testing.T) {
	rs, err := workspace.CompileRules([]workspace.Rule{{Pattern: "/ro/**", Verdict: workspace.ReadOnly}, {Pattern: "/no", Verdict: workspace.Deny}})
	if err != nil {
		t.Fatal(err)
	}
	v := newViewPaths(rs)
	if p := v.child(1, "a"); p != "/a" {
		t.Fatalf("child of the root: %q", p)
	}
	v.add(2, "/a")    // a directory
	v.add(3, "/a/f")  // a file in it
	v.add(3, "/a/f")  // looked up again: one path, two references
	v.add(4, "/ro/x") // read-only
	v.add(4, "/free") // and a hard link elsewhere
	if got := v.child(2, "f"); got != "/a/f" {
		t.Errorf("child: %q", got)
	}
	if v.nodeVerdict(3) != workspace.Allow || v.nodeVerdict(4) != workspace.ReadOnly {
		t.Errorf("verdicts: %v %v", v.nodeVerdict(3), v.nodeVerdict(4))
	}
	v.move("/a", "/ro/a")
	if got := v.child(2, "f"); got != "/ro/a/f" || v.nodeVerdict(3) != workspace.ReadOnly {
		t.Errorf("after the move: %q %v", got, v.nodeVerdict(3))
	}
	v.drop("/ro/a")
	if got := v.child(2, "f"); got != "" || v.nodeVerdict(3) != workspace.ReadOnly {
		t.Errorf("after the drop: %q %v", got, v.nodeVerdict(3))
	}
	v.forget(3, 1)
	if v.nodes[3] == nil {
		t.Error("forgotten with a reference left")
	}
	v.forget(3, 1)
	if v.nodes[3] != nil {
		t.Error("kept after the last reference")
	}
	v.forget(1, 100)
	if v.child(1, "x") != "/x" {
		t.Error("the root was forgotten")
	}
	if v.verdict(unnamed) != workspace.Allow || v.verdict("") != workspace.ReadOnly || v.verdict("/no/x") != workspace.Deny {
		t.Error("special paths")
	}
}
