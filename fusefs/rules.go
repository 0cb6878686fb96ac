package fusefs

import (
	"strings"
	"sync"
	"syscall"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// # Policy views
//
// A mount with Options.Rules is a policy view of the workspace: a second
// FUSE server on the same fs.FS, whose kernel caches are its own, in
// which the paths the rules deny do not exist and the read-only ones
// refuse every change with EROFS (the semantics are workspace.Rules').
// The container backend bind-mounts it instead of the plain mount, so
// what a container's processes see is decided here, by path, whatever
// they are.
//
// FUSE speaks of nodes, not paths, so the view learns each node's paths
// as the kernel reaches them: a lookup of name in a directory whose path
// it knows (the root is "/"), a create, a rename through this mount. A
// denied name is answered ENOENT before the store is asked (and left out
// of listings); creating one is EACCES. Changes that name a node (write,
// setattr, fallocate, xattrs, link from it) are checked against every
// path the view knows for it, the strictest winning; a node whose every
// known path another door renamed or removed (Invalidate drops them)
// counts as read-only until the kernel looks it up again. A view answers
// OPEN (a plain mount does not, see Open), so opening a read-only file
// for writing fails with EROFS.
//
// Known limits, by design of path rules: a hard link made through
// another door gives an inode a second name the view may allow; the
// .snapshots views are not served (they would show denied paths as they
// were).

// viewPaths are the paths a policy view knows for each node the kernel
// holds: a node is forgotten with the kernel's last reference.
type viewPaths struct {
	rules *workspace.Rules
	mu    sync.Mutex
	nodes map[uint64]*viewNode
}

type viewNode struct {
	paths []string
	refs  uint64 // the kernel's lookup references
}

// maxPathsPerNode bounds what the view keeps of a node's hard links.
const maxPathsPerNode = 16

func newViewPaths(rs *workspace.Rules) *viewPaths {
	return &viewPaths{rules: rs, nodes: map[uint64]*viewNode{uint64(fs.RootIno): {paths: []string{"/"}, refs: 1}}}
}

// child is the path of name in directory node dir ("" if dir's is not
// known).
func (v *viewPaths) child(dir uint64, name string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[dir]
	if n == nil || len(n.paths) == 0 {
		return ""
	}
	ps := n.paths
	// A directory has one name.
	if ps[0] == "/" {
		return "/" + name
	}
	return ps[0] + "/" + name
}

// add records p as a path of node, which the kernel was just given a
// reference to.
func (v *viewPaths) add(node uint64, p string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[node]
	if n == nil {
		n = &viewNode{}
		v.nodes[node] = n
	}
	n.refs++
	if p == "" {
		return
	}
	for _, q := range n.paths {
		if q == p {
			return
		}
	}
	if len(n.paths) >= maxPathsPerNode {
		n.paths = n.paths[1:]
	}
	n.paths = append(n.paths, p)
}

// forget drops nlookup of the kernel's references to node.
func (v *viewPaths) forget(node, nlookup uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.nodes[node]
	if n == nil || node == uint64(fs.RootIno) {
		return
	}
	if n.refs <= nlookup {
		delete(v.nodes, node)
		return
	}
	n.refs -= nlookup
}

// drop forgets path p (of whatever node) and every path below it.
func (v *viewPaths) drop(p string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, n := range v.nodes {
		if id == uint64(fs.RootIno) {
			continue
		}
		kept := n.paths[:0]
		for _, q := range n.paths {
			if q != p && !strings.HasPrefix(q, p+"/") {
				kept = append(kept, q)
			}
		}
		n.paths = kept
	}
}

// move renames path from to to, and the paths below it.
func (v *viewPaths) move(from, to string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range v.nodes {
		for i, q := range n.paths {
			switch {
			case q == from:
				n.paths[i] = to
			case strings.HasPrefix(q, from+"/"):
				n.paths[i] = to + q[len(from):]
			}
		}
	}
}

// unnamed is the path of an O_TMPFILE file until it is linked.
const unnamed = "\x00unnamed"

// verdict of path p.
func (v *viewPaths) verdict(p string) workspace.Verdict {
	if p == unnamed {
		return workspace.Allow
	}
	if p == "" {
		return workspace.ReadOnly // unknown: changes refused
	}
	verdict, _ := v.rules.Verdict(p)
	return verdict
}

// nodeVerdict is the strictest verdict of node's known paths; a node
// with none known is read-only.
func (v *viewPaths) nodeVerdict(node uint64) workspace.Verdict {
	out, _ := v.nodeDecision(node)
	return out
}

// nodeDecision is nodeVerdict and the path that decided it ("" if none
// is known).
func (v *viewPaths) nodeDecision(node uint64) (workspace.Verdict, string) {
	v.mu.Lock()
	var ps []string
	if n := v.nodes[node]; n != nil {
		ps = append(ps, n.paths...)
	}
	v.mu.Unlock()
	if len(ps) == 0 {
		return workspace.ReadOnly, ""
	}
	out, by := workspace.Allow, ""
	for _, p := range ps {
		if vp := v.verdict(p); vp > out || by == "" {
			out, by = max(out, vp), p
		}
	}
	return out, by
}

// denied tells Options.OnDeny of a refusal of op on path p.
func (r *rawFS) denied(op, p string, errno syscall.Errno) {
	if r.opts.OnDeny == nil || p == "" || p == unnamed {
		return
	}
	_, rule := r.view.rules.Verdict(p)
	r.opts.OnDeny(workspace.Denial{Op: op, Path: p, Decided: p, Rule: rule, Errno: errno})
}

// denyLookup is what a lookup of a denied name answers: nothing there.
func denyLookup(out *fuse.EntryOut, r *rawFS) fuse.Status {
	out.NodeId = 0
	out.SetEntryTimeout(r.opts.NegativeTimeout)
	return fuse.OK
}

// createStatus says whether the view lets name be made in dir: a denied
// name is EACCES, a read-only one EROFS.
func (r *rawFS) createStatus(dir uint64, name string) (string, fuse.Status) {
	return r.nameStatus("create", dir, name, fuse.EACCES)
}

// removeStatus says whether name in dir may go (or be replaced): absent
// when denied, EROFS when read-only.
func (r *rawFS) removeStatus(dir uint64, name string) (string, fuse.Status) {
	return r.nameStatus("remove", dir, name, fuse.ENOENT)
}

// nameStatus is the view's verdict on name in dir as a status: denied
// for a denied path, EROFS for a read-only one.
func (r *rawFS) nameStatus(op string, dir uint64, name string, denied fuse.Status) (string, fuse.Status) {
	if r.view == nil {
		return "", fuse.OK
	}
	p := r.view.child(dir, name)
	switch r.view.verdict(p) {
	case workspace.Deny:
		r.denied(op, p, syscall.Errno(denied))
		return p, denied
	case workspace.ReadOnly:
		r.denied(op, p, syscall.EROFS)
		return p, fuse.EROFS
	}
	return p, fuse.OK
}

// changeStatus says whether node may change.
func (r *rawFS) changeStatus(node uint64) fuse.Status {
	if r.view == nil {
		return fuse.OK
	}
	v, p := r.view.nodeDecision(node)
	switch v {
	case workspace.Deny:
		r.denied("change", p, syscall.EACCES)
		return fuse.EACCES
	case workspace.ReadOnly:
		r.denied("change", p, syscall.EROFS)
		return fuse.EROFS
	}
	return fuse.OK
}

// movedStatus checks what a rename of directory ino from path from to
// path to would carry: every entry below, hidden ones too, must be
// allowed where it is and where it goes.
func (r *rawFS) movedStatus(ino fs.Ino, from, to string) fuse.Status {
	list, err := r.fs.ReadDir(ino)
	if err != nil {
		return errStatus(err)
	}
	for _, e := range list {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		ef, et := from+"/"+e.Name, to+"/"+e.Name
		for _, p := range []string{ef, et} {
			switch r.view.verdict(p) {
			case workspace.Deny:
				r.denied("rename", p, syscall.EACCES)
				return fuse.EACCES
			case workspace.ReadOnly:
				r.denied("rename", p, syscall.EROFS)
				return fuse.EROFS
			}
		}
		if e.Type == syscall.S_IFDIR {
			if st := r.movedStatus(e.Ino, ef, et); st != fuse.OK {
				return st
			}
		}
	}
	return fuse.OK
}

// renameStatus checks a rename through the view.
func (r *rawFS) renameStatus(h *fuse.InHeader, dir uint64, name string, newDir uint64, newName string, flags uint32) (from, to string, st fuse.Status) {
	if r.view == nil {
		return "", "", fuse.OK
	}
	from, st = r.removeStatus(dir, name)
	if st != fuse.OK {
		return "", "", st
	}
	to, st = r.createStatus(newDir, newName)
	if st != fuse.OK {
		return "", "", st
	}
	if from == "" || to == "" {
		return "", "", fuse.EROFS
	}
	c := caller(h)
	if a, err := r.fs.Lookup(c, fs.Ino(dir), name); err == nil && a.IsDir() && (r.view.rules.Restricts(from) || r.view.rules.Restricts(to)) {
		if st := r.movedStatus(a.Ino, from, to); st != fuse.OK {
			return "", "", st
		}
	}
	if flags&fs.RenameExchange != 0 {
		if a, err := r.fs.Lookup(c, fs.Ino(newDir), newName); err == nil && a.IsDir() && (r.view.rules.Restricts(from) || r.view.rules.Restricts(to)) {
			if st := r.movedStatus(a.Ino, to, from); st != fuse.OK {
				return "", "", st
			}
		}
	}
	return from, to, fuse.OK
}

// hides says whether a listing of dir leaves name out.
func (r *rawFS) hides(dir uint64, name string) bool {
	if r.view == nil || name == "." || name == ".." {
		return false
	}
	return r.view.verdict(r.view.child(dir, name)) == workspace.Deny
}

// viewInvalidate forgets the path another door changed.
func (r *rawFS) viewInvalidate(parent fs.Ino, name string) {
	if r.view == nil || parent == 0 || name == "" {
		return
	}
	if p := r.view.child(uint64(parent), name); p != "" {
		r.view.drop(p)
	}
}
