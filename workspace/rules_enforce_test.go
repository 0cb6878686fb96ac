package workspace_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/workspace"
)

// ruledWS is a workspace with a tree, and a view of it under rules.
func ruledWS(t *testing.T, layers ...[]workspace.Rule) (full, view *workspace.WS) {
	t.Helper()
	ctx := context.Background()
	fsys := apitest.OpenFS(t, filepath.Join(t.TempDir(), "ws.cfs"), 0)
	full = workspace.New(fsys, workspace.Options{})
	for p, data := range map[string]string{
		"/.env": "TOP=secret", "/app/.env": "APP=secret", "/app/main.go": "package main // secret-free",
		"/app/key.pem": "PEM", "/vendor/lib/x.go": "package lib", "/out/keep": "k", "/src/a.go": "package a",
		"/secrets/db": "password", "/secrets/sub/deep": "deeper",
	} {
		if _, err := full.WriteFile(ctx, p, []byte(data), workspace.WriteOptions{Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"/app/env-link": ".env", "/link-dir": "secrets", "/dotdot": "secrets/../src"} {
		if err := full.Symlink(ctx, target, link); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := workspace.CompileRules(layers...)
	if err != nil {
		t.Fatal(err)
	}
	return full, full.WithRules(rs)
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
		return
	}
	var re *workspace.RuleError
	if !errors.As(err, &re) {
		t.Errorf("%s: %v names no rule", what, err)
	}
}

func TestRulesDeny(t *testing.T) {
	ctx := context.Background()
	_, w := ruledWS(t, ordered(t, "**/.env=deny", "*.pem=deny", "/secrets=deny"))
	// Reads: absent, also through symlinks and "..".
	for _, p := range []string{"/.env", "/app/.env", "/app/key.pem", "/app/env-link", "/secrets", "/secrets/db", "/link-dir/db", "/link-dir", "/app/../.env", "/secrets/../src/a.go"} {
		_, err := w.Stat(ctx, p)
		wantErrno(t, "stat "+p, err, syscall.ENOENT)
		_, _, err = w.ReadFile(ctx, p, 0)
		wantErrno(t, "read "+p, err, syscall.ENOENT)
	}
	// A path through a denied directory that comes back out is refused
	// too: it would tell what the directory is.
	_, err := w.Stat(ctx, "/dotdot/a.go")
	wantErrno(t, "stat /dotdot/a.go", err, syscall.ENOENT)
	_, err = w.Lstat(ctx, "/app/env-link") // the link itself is allowed
	if err != nil {
		t.Errorf("lstat the link: %v", err)
	}
	// Listings, glob, grep, tree, du leave denied paths out.
	ls, err := w.List(ctx, "/", workspace.ListOptions{Recursive: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ls.Entries {
		if strings.Contains(e.Path, ".env") && e.Type != "symlink" || strings.HasSuffix(e.Path, ".pem") || strings.HasPrefix(e.Path, "/secrets") {
			t.Errorf("list shows %s", e.Path)
		}
	}
	g, err := w.Glob(ctx, "**", workspace.GlobOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Paths {
		if strings.HasSuffix(p, "/.env") || strings.HasSuffix(p, ".pem") || strings.HasPrefix(p, "/secrets") {
			t.Errorf("glob shows %s", p)
		}
	}
	if g, err := w.Glob(ctx, "/secrets/*", workspace.GlobOptions{}); err != nil || len(g.Paths) != 0 {
		t.Errorf("glob /secrets/*: %v, %v", g.Paths, err)
	}
	gr, err := w.Grep(ctx, "/", workspace.GrepOptions{Pattern: "secret", Mode: "files"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range gr.Files {
		if f.Path != "/app/main.go" {
			t.Errorf("grep finds %s", f.Path)
		}
	}
	if len(gr.Files) != 1 {
		t.Errorf("grep: %+v", gr.Files)
	}
	du, err := w.Du(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	fullDu, _ := ruledWS(t)
	all, err := fullDu.Du(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	// .env, app/.env, key.pem, secrets/db, secrets/sub/deep; secrets, secrets/sub.
	if all.Files-du.Files != 5 || all.Dirs-du.Dirs != 2 {
		t.Errorf("du: %d files %d dirs of %d, %d", du.Files, du.Dirs, all.Files, all.Dirs)
	}
	tr, err := w.Tree(ctx, "/", workspace.TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tr.Children {
		if c.Name == ".env" || c.Name == "secrets" {
			t.Errorf("tree shows %s", c.Path)
		}
	}
	// Creating or writing: EACCES, whether it exists or not.
	for _, p := range []string{"/.env", "/new/.env", "/app/env-link", "/secrets/new", "/x.pem"} {
		_, err := w.WriteFile(ctx, p, []byte("x"), workspace.WriteOptions{Parents: true})
		wantErrno(t, "write "+p, err, syscall.EACCES)
	}
	_, err = w.Mkdir(ctx, "/secrets", workspace.MkdirOptions{Parents: true})
	wantErrno(t, "mkdir -p /secrets", err, syscall.EACCES)
	_, err = w.Mkdir(ctx, "/d/.env/x", workspace.MkdirOptions{Parents: true})
	wantErrno(t, "mkdir -p /d/.env/x", err, syscall.EACCES)
	wantErrno(t, "symlink to .env", w.Symlink(ctx, "x", "/src/.env"), syscall.EACCES)
	_, err = w.SetAttr(ctx, "/src/.env", workspace.SetAttrOptions{Create: true})
	wantErrno(t, "touch .env", err, syscall.EACCES)
	_, err = w.Edit(ctx, "/app/.env", []workspace.Edit{{Old: "APP", New: "X"}}, workspace.EditOptions{})
	wantErrno(t, "edit .env", err, syscall.ENOENT)
	// Removing or moving a denied path: it is not there.
	_, err = w.Remove(ctx, "/app/.env", workspace.RemoveOptions{})
	wantErrno(t, "remove .env", err, syscall.ENOENT)
	wantErrno(t, "rename .env away", w.Rename(ctx, "/app/.env", "/app/plain", workspace.RenameOptions{}), syscall.ENOENT)
	_, err = w.Copy(ctx, "/app/.env", "/app/plain", workspace.CopyOptions{})
	wantErrno(t, "copy .env", err, syscall.ENOENT)
	_, err = w.Copy(ctx, "/app/env-link", "/app/plain", workspace.CopyOptions{})
	wantErrno(t, "copy a link to .env", err, syscall.ENOENT)
	// Onto a denied path.
	wantErrno(t, "rename onto .env", w.Rename(ctx, "/src/a.go", "/src/.env", workspace.RenameOptions{}), syscall.EACCES)
	_, err = w.Copy(ctx, "/src/a.go", "/src/.env", workspace.CopyOptions{})
	wantErrno(t, "copy onto .env", err, syscall.EACCES)
	// A directory holding a denied path cannot move: the move would
	// carry what the view cannot see.
	wantErrno(t, "rename /app", w.Rename(ctx, "/app", "/app2", workspace.RenameOptions{}), syscall.EACCES)
	if _, err := w.Stat(ctx, "/app/main.go"); err != nil {
		t.Errorf("after a refused rename: %v", err)
	}
	// A recursive copy leaves denied entries behind.
	if _, err := w.Copy(ctx, "/app", "/app3", workspace.CopyOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat(ctx, "/app3/main.go"); err != nil {
		t.Error(err)
	}
	// A recursive remove leaves them too (and the directory).
	_, err = w.Remove(ctx, "/app", workspace.RemoveOptions{Recursive: true})
	if !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rm -r /app: %v, want ENOTEMPTY", err)
	}
}

// TestRulesRewind: a restore or undo through a view under rules is
// refused when it would change a protected path, and goes when not.
func TestRulesRewind(t *testing.T) {
	ctx := context.Background()
	full, w := ruledWS(t, ordered(t, "**/.env=deny", "/vendor/**=read_only"))
	f := full.FS()
	if _, err := f.CreateSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := full.WriteFile(ctx, "/app/.env", []byte("changed"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := full.WriteFile(ctx, "/src/a.go", []byte("changed"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := w.Restore(ctx, "s", nil)
	wantErrno(t, "restore over .env", err, syscall.EACCES)
	if _, err := w.Restore(ctx, "s", []string{"/src"}); err != nil {
		t.Errorf("restore /src: %v", err)
	}
	if b, _, _ := full.ReadFile(ctx, "/src/a.go", 0); string(b) != "package a" {
		t.Errorf("after the restore /src/a.go is %q", b)
	}
	if b, _, _ := full.ReadFile(ctx, "/app/.env", 0); string(b) != "changed" {
		t.Errorf("the restore of /src changed .env: %q", b)
	}
	// Undo of an exec that changed vendor: refused; of one that did not: done.
	exec := func(id, p string) {
		cp, err := full.BeginExec(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := full.WriteFile(ctx, p, []byte(id), workspace.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := full.EndExec(ctx, cp, fs.ExecRecord{Paths: []string{p}}); err != nil {
			t.Fatal(err)
		}
	}
	exec("e1", "/vendor/lib/x.go")
	_, _, err = w.Undo(ctx, fs.UndoOptions{Exec: "e1"})
	wantErrno(t, "undo a vendor change", err, syscall.EROFS)
	exec("e2", "/out/keep")
	if _, _, err := w.Undo(ctx, fs.UndoOptions{}); err != nil {
		t.Errorf("undo /out: %v", err)
	}
	if b, _, _ := full.ReadFile(ctx, "/out/keep", 0); string(b) != "k" {
		t.Errorf("after the undo /out/keep is %q", b)
	}
}

func TestRulesDenyCopyOut(t *testing.T) {
	ctx := context.Background()
	full, w := ruledWS(t, ordered(t, "/app/*.pem=deny"))
	// Copying /app elsewhere must not carry key.pem out from under the
	// rule.
	if _, err := w.Copy(ctx, "/app", "/elsewhere", workspace.CopyOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := full.Stat(ctx, "/elsewhere/key.pem"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("key.pem copied out: %v", err)
	}
	// Nor can /app be renamed away from it.
	wantErrno(t, "rename /app", w.Rename(ctx, "/app", "/moved", workspace.RenameOptions{}), syscall.EACCES)
	// Nor can a pem be moved in.
	if _, err := full.WriteFile(ctx, "/tmpd/key.pem", []byte("x"), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "rename a pem into /app", w.Rename(ctx, "/tmpd/key.pem", "/app/new.pem", workspace.RenameOptions{}), syscall.EACCES)
	// A directory whose entries would land on denied paths cannot move.
	rs, _ := workspace.CompileRules(ordered(t, "/dst/*.pem=deny"))
	wantErrno(t, "rename a dir onto denied names", full.WithRules(rs).Rename(ctx, "/tmpd", "/dst", workspace.RenameOptions{}), syscall.EACCES)
}

func TestRulesReadOnly(t *testing.T) {
	ctx := context.Background()
	full, w := ruledWS(t, ordered(t, "/**=read_only", "/out/**=allow"))
	// Reads work.
	if _, _, err := w.ReadFile(ctx, "/src/a.go", 0); err != nil {
		t.Fatal(err)
	}
	// Every change outside /out/** is EROFS.
	p := func(v uint32) *uint32 { return &v }
	checks := map[string]error{}
	_, checks["write"] = w.WriteFile(ctx, "/src/a.go", []byte("x"), workspace.WriteOptions{})
	_, checks["create"] = w.WriteFile(ctx, "/src/b.go", []byte("x"), workspace.WriteOptions{})
	_, checks["append"] = w.WriteFile(ctx, "/src/a.go", []byte("x"), workspace.WriteOptions{Append: true})
	_, checks["edit"] = w.Edit(ctx, "/src/a.go", []workspace.Edit{{Old: "package", New: "pkg"}}, workspace.EditOptions{})
	_, checks["mkdir"] = w.Mkdir(ctx, "/newdir", workspace.MkdirOptions{})
	_, checks["mkdir -p"] = w.Mkdir(ctx, "/n1/n2", workspace.MkdirOptions{Parents: true})
	_, checks["remove"] = w.Remove(ctx, "/src/a.go", workspace.RemoveOptions{})
	_, checks["remove /out"] = w.Remove(ctx, "/out", workspace.RemoveOptions{Recursive: true})
	checks["rename"] = w.Rename(ctx, "/src/a.go", "/src/c.go", workspace.RenameOptions{})
	checks["rename out of /out"] = w.Rename(ctx, "/out/keep", "/kept", workspace.RenameOptions{})
	checks["rename into /out"] = w.Rename(ctx, "/src/a.go", "/out/a.go", workspace.RenameOptions{})
	checks["rename /out"] = w.Rename(ctx, "/out", "/out2", workspace.RenameOptions{})
	_, checks["copy"] = w.Copy(ctx, "/out/keep", "/kept", workspace.CopyOptions{})
	checks["symlink"] = w.Symlink(ctx, "x", "/l")
	_, checks["chmod"] = w.SetAttr(ctx, "/src/a.go", workspace.SetAttrOptions{Perm: p(0o600)})
	_, checks["touch"] = w.SetAttr(ctx, "/t", workspace.SetAttrOptions{Create: true})
	_, checks["chmod through a link"] = w.SetAttr(ctx, "/dotdot/a.go", workspace.SetAttrOptions{Perm: p(0o600)})
	for what, err := range checks {
		wantErrno(t, what, err, syscall.EROFS)
	}
	// Under /out everything may change.
	if _, err := w.WriteFile(ctx, "/out/new/file", []byte("x"), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Copy(ctx, "/src/a.go", "/out/a.go", workspace.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(ctx, "/out/new", "/out/newer", workspace.RenameOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Remove(ctx, "/out/newer", workspace.RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := full.Stat(ctx, "/src/a.go"); err != nil {
		t.Fatal(err)
	}
}

func TestRulesSubAndSnapshot(t *testing.T) {
	ctx := context.Background()
	full, w := ruledWS(t, ordered(t, "/app/.env=deny", "/app/main.go=read_only"))
	// Rules name workspace paths whatever the view's root.
	sub, err := w.Sub(ctx, "/app", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.Stat(ctx, "/.env")
	wantErrno(t, "sub stat /.env", err, syscall.ENOENT)
	_, err = sub.WriteFile(ctx, "/main.go", nil, workspace.WriteOptions{})
	wantErrno(t, "sub write /main.go", err, syscall.EROFS)
	// And a view made by Sub then given rules.
	sub2, err := full.Sub(ctx, "/app", false)
	if err != nil {
		t.Fatal(err)
	}
	sub2 = sub2.WithRules(w.Rules())
	_, err = sub2.Stat(ctx, "/.env")
	wantErrno(t, "sub+rules stat /.env", err, syscall.ENOENT)
	ls, err := sub2.List(ctx, "/", workspace.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ls.Entries {
		names = append(names, e.Name)
	}
	if slices.Contains(names, ".env") || !slices.Contains(names, "main.go") {
		t.Errorf("sub list: %v", names)
	}
	// A view rooted at a denied directory sees nothing.
	sec, err := full.Sub(ctx, "/secrets", false)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := workspace.CompileRules(ordered(t, "/secrets=deny"))
	_, err = sec.WithRules(rs).List(ctx, "/", workspace.ListOptions{})
	wantErrno(t, "list a denied root", err, syscall.ENOENT)
	// Snapshots keep the view's rules.
	if _, err := full.FS().CreateSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	snap, err := w.Snapshot(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = snap.ReadFile(ctx, "/app/.env", 0)
	wantErrno(t, "snapshot read .env", err, syscall.ENOENT)
	// The change feed leaves denied paths out.
	since := full.LastChange()
	if _, err := full.WriteFile(ctx, "/app/.env", []byte("new"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := full.WriteFile(ctx, "/app/other", []byte("new"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ch, err := w.Changes(ctx, since, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ch.Changes {
		if strings.Contains(c.Path+c.NewPath, ".env") {
			t.Errorf("changes show %+v", c)
		}
	}
	if len(ch.Changes) == 0 {
		t.Error("changes show nothing")
	}
}
