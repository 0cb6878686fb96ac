package workspace

import (
	"testing"
)

// The diff itself is tested in internal/textdiff; this checks the wrapper.
func TestUnifiedDiff(t *testing.T) {
	got := unifiedDiff("old", "new", []byte("a\nb\n"), []byte("a\nc\n"), 3)
	want := "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("old", "new", []byte("x"), []byte("x"), 3); got != "" {
		t.Errorf("equal texts give %q", got)
	}
}
