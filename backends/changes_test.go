package backends

import (
	"reflect"
	"testing"

	"github.com/computerfs/computerfs/workspace"
)

func TestCoalesceChanges(t *testing.T) {
	ch := func(op, path string, newPath ...string) workspace.Change {
		c := workspace.Change{Op: op, Path: path}
		if len(newPath) > 0 {
			c.NewPath = newPath[0]
		}
		return c
	}
	ops := func(cs []workspace.Change) []string {
		var s []string
		for _, c := range cs {
			s = append(s, c.Op+" "+c.Path+" "+c.NewPath)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		in   []workspace.Change
		want []workspace.Change
	}{
		{"empty", nil, nil},
		{"create write attr is one create",
			[]workspace.Change{ch("create", "/a"), ch("write", "/a"), ch("attr", "/a"), ch("xattr", "/a")},
			[]workspace.Change{ch("create", "/a")}},
		{"many writes are one write",
			[]workspace.Change{ch("write", "/a"), ch("write", "/a"), ch("write", "/b"), ch("write", "/a")},
			[]workspace.Change{ch("write", "/a"), ch("write", "/b")}},
		{"attr then write is a write",
			[]workspace.Change{ch("attr", "/a"), ch("write", "/a"), ch("attr", "/a")},
			[]workspace.Change{ch("write", "/a")}},
		{"remove ends the run",
			[]workspace.Change{ch("create", "/a"), ch("remove", "/a"), ch("create", "/a"), ch("write", "/a")},
			[]workspace.Change{ch("create", "/a"), ch("remove", "/a"), ch("create", "/a")}},
		{"rename ends both names",
			[]workspace.Change{ch("write", "/a"), ch("write", "/b"), ch("rename", "/a", "/b"), ch("write", "/b"), ch("write", "/a")},
			[]workspace.Change{ch("write", "/a"), ch("write", "/b"), ch("rename", "/a", "/b"), ch("write", "/b"), ch("write", "/a")}},
		{"unnamed changes are all kept",
			[]workspace.Change{ch("write", ""), ch("write", "")},
			[]workspace.Change{ch("write", ""), ch("write", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := coalesceChanges(tc.in)
			if !reflect.DeepEqual(ops(got), ops(tc.want)) {
				t.Errorf("got %q, want %q", ops(got), ops(tc.want))
			}
			if !reflect.DeepEqual(changedPaths(got), changedPaths(tc.in)) {
				t.Errorf("paths changed: %q vs %q", changedPaths(got), changedPaths(tc.in))
			}
		})
	}
}
