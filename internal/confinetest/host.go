package confinetest

import (
	"crypto/sha256"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"
)

// HostState is what a host directory holds, for a confinement test to
// compare before and after an attempt: path -> mode, size, mtime and a
// hash of the content.
func HostState(root string) map[string]string {
	st := map[string]string{}
	filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			st[p] = "error: " + err.Error()
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		st[p] = desc
		return nil
	})
	return st
}

// Changes lists what differs between two HostStates: changed, created
// and removed paths, sorted.
func Changes(before, after map[string]string) []string {
	var out []string
	for p, d := range before {
		switch a, ok := after[p]; {
		case !ok:
			out = append(out, "removed "+p)
		case a != d:
			out = append(out, fmt.Sprintf("changed %s: %q -> %q", p, d, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// MkdirOwned makes dir owned by uid (and gid uid) with mode, as another
// user would have made it first: for tests of squatted directories.
func MkdirOwned(dir string, uid int, mode os.FileMode) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}
