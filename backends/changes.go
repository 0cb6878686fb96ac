package backends

import "github.com/computerfs/computerfs/workspace"

// coalesceChanges folds the change journal of one exec into the list of
// files it changed, as a person would write it: a file created and then
// written, chmod'ed or given xattrs is one "create"; one written many
// times, or written and chmod'ed, is one "write" (attr or xattr when that is
// all that happened to it). Removes, renames and links are kept, in order,
// and end what came before them on the paths they name, so "create a, rm
// a, create a" stays three entries. The journal itself is not changed: undo
// and the exec record read their own copy.
func coalesceChanges(changes []workspace.Change) []workspace.Change {
	out := make([]workspace.Change, 0, len(changes))
	live := map[string]int{} // path -> index in out of its create or modify entry
	for _, c := range changes {
		switch c.Op {
		case "write", "attr", "xattr":
			if i, ok := live[c.Path]; ok && c.Path != "" {
				if c.Op == "write" && (out[i].Op == "attr" || out[i].Op == "xattr") {
					out[i].Op = "write"
				}
				continue
			}
			live[c.Path] = len(out)
		case "create":
			live[c.Path] = len(out)
		default: // remove, rename, link, and any op added later
			delete(live, c.Path)
			delete(live, c.NewPath)
		}
		out = append(out, c)
	}
	return out
}
