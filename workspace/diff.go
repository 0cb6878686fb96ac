package workspace

import "github.com/computerfs/computerfs/internal/textdiff"

// unifiedDiff returns a unified diff of a and b in the format of GNU
// "diff -u --label oldName --label newName" (see textdiff.Unified).
func unifiedDiff(oldName, newName string, a, b []byte, context int) string {
	return textdiff.Unified(oldName, newName, a, b, context)
}
