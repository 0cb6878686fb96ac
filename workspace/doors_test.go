package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/computerfs/computerfs/workspace"
)

// TestTwoDoorsNeverDisagree interleaves changes made through the file API
// with reads through the mount, and changes made through the mount with
// reads through the API. The kernel caches entries, negative entries,
// attributes, pages and listings for an hour: every API change must
// invalidate what it touched, or the mount shows stale data.
func TestTwoDoorsNeverDisagree(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	w := workspace.New(m.FS, workspace.Options{})
	w.SetNotifier(m.Server)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	host := func(p string) string { return filepath.Join(m.Dir, p) }
	names := []string{"a", "b", "c", "d/e", "d/f", "g/h/i"}
	content := func() []byte {
		b := make([]byte, rng.IntN(3*4096))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	listMount := func(dir string) []string {
		ents, err := os.ReadDir(host(dir))
		if err != nil {
			return nil
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	listAPI := func(dir string) []string {
		res, err := w.List(ctx, dir, workspace.ListOptions{Limit: 1000})
		if err != nil {
			return nil
		}
		var out []string
		for _, e := range res.Entries {
			out = append(out, e.Name)
		}
		sort.Strings(out)
		return out
	}
	for i := range 400 {
		name := names[rng.IntN(len(names))]
		step := fmt.Sprintf("step %d on %s", i, name)
		// Prime the kernel's caches through the mount first: a negative
		// entry, attributes, pages and the parent's listing.
		os.Stat(host(name))
		os.ReadFile(host(name))
		listMount(filepath.Dir(name))
		switch rng.IntN(8) {
		case 0, 1: // API write, mount read
			data := content()
			if _, err := w.WriteFile(ctx, name, data, workspace.WriteOptions{Parents: true}); err != nil {
				t.Fatalf("%s: api write: %v", step, err)
			}
			got, err := os.ReadFile(host(name))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: mount reads %d bytes (%v) after the API wrote %d", step, len(got), err, len(data))
			}
		case 2: // API append, mount read
			before, _ := os.ReadFile(host(name))
			more := content()
			if _, err := w.WriteFile(ctx, name, more, workspace.WriteOptions{Append: true, Parents: true}); err != nil {
				t.Fatalf("%s: api append: %v", step, err)
			}
			got, err := os.ReadFile(host(name))
			if want := append(before, more...); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: mount reads %d bytes (%v) after an append to %d", step, len(got), err, len(want))
			}
		case 3: // API remove, mount stat and list
			if _, err := w.Remove(ctx, name, workspace.RemoveOptions{Force: true}); err != nil {
				t.Fatalf("%s: api remove: %v", step, err)
			}
			if _, err := os.Stat(host(name)); !errors.Is(err, iofs.ErrNotExist) {
				t.Fatalf("%s: mount still sees a removed file: %v", step, err)
			}
		case 4: // API rename, mount sees both names right
			to := names[rng.IntN(len(names))]
			if _, err := os.Stat(host(name)); err != nil || to == name {
				continue
			}
			os.Stat(host(to))
			want, _ := os.ReadFile(host(name))
			if _, err := w.Mkdir(ctx, filepath.Dir(to), workspace.MkdirOptions{Parents: true}); err != nil {
				t.Fatalf("%s: api mkdir: %v", step, err)
			}
			if err := w.Rename(ctx, name, to, workspace.RenameOptions{}); err != nil {
				t.Fatalf("%s: api rename to %s: %v", step, to, err)
			}
			if _, err := os.Stat(host(name)); !errors.Is(err, iofs.ErrNotExist) {
				t.Fatalf("%s: mount still sees the old name: %v", step, err)
			}
			if got, err := os.ReadFile(host(to)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: mount reads %d bytes at the new name %s (%v), want %d", step, len(got), to, err, len(want))
			}
		case 5: // mount write, API read
			data := content()
			os.MkdirAll(filepath.Dir(host(name)), 0o755)
			if err := os.WriteFile(host(name), data, 0o644); err != nil {
				t.Fatalf("%s: mount write: %v", step, err)
			}
			got, _, err := w.ReadFile(ctx, name, 0)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: API reads %d bytes (%v) after the mount wrote %d", step, len(got), err, len(data))
			}
		case 6: // mount remove, API stat
			os.Remove(host(name))
			if _, err := w.Stat(ctx, name); !errors.Is(err, iofs.ErrNotExist) {
				t.Fatalf("%s: API still sees a file the mount removed: %v", step, err)
			}
		case 7: // API copy and chmod, mount stat
			if _, err := os.Stat(host(name)); err != nil {
				continue
			}
			dst := name + ".copy"
			if _, err := w.Copy(ctx, name, dst, workspace.CopyOptions{}); err != nil {
				t.Fatalf("%s: api copy: %v", step, err)
			}
			perm := uint32(0o600 + rng.IntN(2)*0o40)
			if _, err := w.SetAttr(ctx, dst, workspace.SetAttrOptions{Perm: &perm}); err != nil {
				t.Fatalf("%s: api chmod: %v", step, err)
			}
			fi, err := os.Stat(host(dst))
			if err != nil || uint32(fi.Mode().Perm()) != perm {
				t.Fatalf("%s: mount sees mode %v (%v), want %o", step, fi, err, perm)
			}
			want, _ := os.ReadFile(host(name))
			if got, err := os.ReadFile(host(dst)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: the copy reads %d bytes through the mount (%v), want %d", step, len(got), err, len(want))
			}
			w.Remove(ctx, dst, workspace.RemoveOptions{})
		}
		dir := filepath.Dir(name)
		if a, b := listMount(dir), listAPI(dir); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: listings of %s differ: mount %q, API %q", step, dir, a, b)
		}
	}
}
