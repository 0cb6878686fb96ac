package fusefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/computerfs/computerfs/workspace"
)

// TestPolicyView: a second mount of the same workspace under path rules
// (what the container backend binds) shows no denied path, refuses to
// make one, and refuses changes to read-only ones, whatever the way in;
// the plain mount beside it sees everything.
func TestPolicyView(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	for p, data := range map[string]string{".env": "SECRET", "app/.env": "SECRET", "app/main.go": "package main", "vendor/lib.go": "package lib", "out/keep": "k"} {
		full := filepath.Join(m.Dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"env-link": ".env", "app-link": "app"} {
		if err := os.Symlink(target, filepath.Join(m.Dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := workspace.CompileRules([]workspace.Rule{{Pattern: "**/.env", Verdict: workspace.Deny}, {Pattern: "/vendor/**", Verdict: workspace.ReadOnly}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "view")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	view, err := fusefs.Mount(m.FS, dir, fusefs.Options{AllowOther: true, Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Unmount()
	at := func(p string) string { return filepath.Join(dir, p) }
	errno := func(what string, err error, want syscall.Errno) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	for _, p := range []string{".env", "app/.env", "env-link", "app-link/.env", "app/../.env"} {
		_, err := os.ReadFile(at(p))
		errno("read "+p, err, syscall.ENOENT)
	}
	ents, err := os.ReadDir(at("app"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if slices.Contains(names, ".env") || !slices.Contains(names, "main.go") {
		t.Errorf("ls app: %v", names)
	}
	errno("create .env", os.WriteFile(at("out/.env"), []byte("x"), 0o644), syscall.EACCES)
	errno("write through the link", os.WriteFile(at("env-link"), []byte("x"), 0o644), syscall.EACCES)
	errno("rename onto .env", os.Rename(at("out/keep"), at("out/.env")), syscall.EACCES)
	errno("rename a dir holding .env", os.Rename(at("app"), at("app2")), syscall.EACCES)
	errno("mkdir .env", os.Mkdir(at("out/.env"), 0o755), syscall.EACCES)
	// Read-only.
	if b, err := os.ReadFile(at("vendor/lib.go")); err != nil || string(b) != "package lib" {
		t.Errorf("read vendor: %q %v", b, err)
	}
	errno("truncate vendor", os.WriteFile(at("vendor/lib.go"), []byte("x"), 0o644), syscall.EROFS)
	_, err = os.OpenFile(at("vendor/lib.go"), os.O_WRONLY|os.O_APPEND, 0)
	errno("open vendor to append", err, syscall.EROFS)
	_, err = os.OpenFile(at("vendor/lib.go"), os.O_RDWR, 0)
	errno("open vendor read-write", err, syscall.EROFS)
	if f, err := os.Open(at("vendor/lib.go")); err != nil {
		t.Errorf("open vendor to read: %v", err)
	} else {
		f.Close()
	}
	errno("chmod vendor", os.Chmod(at("vendor/lib.go"), 0o600), syscall.EROFS)
	errno("rm vendor", os.Remove(at("vendor/lib.go")), syscall.EROFS)
	errno("create in vendor", os.WriteFile(at("vendor/new"), nil, 0o644), syscall.EROFS)
	errno("rename vendor", os.Rename(at("vendor"), at("v2")), syscall.EROFS)
	errno("move out of vendor", os.Rename(at("vendor/lib.go"), at("out/lib.go")), syscall.EROFS)
	errno("link out of vendor", os.Link(at("vendor/lib.go"), at("out/lib.go")), syscall.EROFS)
	// Allowed paths work.
	if err := os.WriteFile(at("out/new"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(at("out/new"), at("out/newer")); err != nil {
		t.Fatal(err)
	}
	// The plain mount sees it all, and the secret as it was.
	if b, err := os.ReadFile(filepath.Join(m.Dir, "app/.env")); err != nil || string(b) != "SECRET" {
		t.Errorf("plain mount .env: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(m.Dir, "out/newer")); err != nil || string(b) != "fine" {
		t.Errorf("plain mount out/newer: %q %v", b, err)
	}
	if _, err := os.Stat(at(".snapshots")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf(".snapshots in a policy view: %v", err)
	}
}

// TestPolicyViewCoherent: with each mount's Changed telling the other,
// a change made through either shows at once through the other, though
// both cache for an hour; and a rename by the other mount out of a
// denied name's reach is judged by the new path.
func TestPolicyViewCoherent(t *testing.T) {
	var viewSrv, mainSrv atomic.Pointer[fusefs.Server]
	tell := func(p *atomic.Pointer[fusefs.Server]) func(fs.Ino, string, fs.Ino) {
		return func(parent fs.Ino, name string, ino fs.Ino) {
			if s := p.Load(); s != nil {
				s.Invalidate(parent, name, ino)
			}
		}
	}
	m := testmount.New(t, testmount.Options{Fuse: fusefs.Options{Changed: tell(&viewSrv)}})
	mainSrv.Store(m.Server)
	rs, err := workspace.CompileRules([]workspace.Rule{{Pattern: "/secret/**", Verdict: workspace.Deny}, {Pattern: "/ro/**", Verdict: workspace.ReadOnly}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "view")
	os.Mkdir(dir, 0o755)
	view, err := fusefs.Mount(m.FS, dir, fusefs.Options{AllowOther: true, Rules: rs, Changed: tell(&mainSrv)})
	if err != nil {
		t.Fatal(err)
	}
	viewSrv.Store(view)
	defer func() { viewSrv.Store(nil); view.Unmount() }()
	mp, vp := func(p string) string { return filepath.Join(m.Dir, p) }, func(p string) string { return filepath.Join(dir, p) }
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	os.WriteFile(mp("f"), []byte("one"), 0o644)
	if got := read(vp("f")); got != "one" {
		t.Fatalf("view reads %q", got)
	}
	os.WriteFile(mp("f"), []byte("two!"), 0o644)
	if got := read(vp("f")); got != "two!" {
		t.Errorf("after a write through the mount, view reads %q", got)
	}
	os.WriteFile(vp("f"), []byte("three"), 0o644)
	if got := read(mp("f")); got != "three" {
		t.Errorf("after a write through the view, mount reads %q", got)
	}
	os.WriteFile(vp("g"), []byte("new"), 0o644)
	if got := read(mp("g")); got != "new" {
		t.Errorf("a file made through the view: mount reads %q", got)
	}
	os.Remove(mp("g"))
	if _, err := os.Stat(vp("g")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("removed through the mount, the view still has g: %v", err)
	}
	// A file the view knows, moved by the other mount under /secret.
	os.WriteFile(mp("h"), []byte("h"), 0o644)
	if got := read(vp("h")); got != "h" {
		t.Fatalf("view reads h as %q", got)
	}
	os.Mkdir(mp("secret"), 0o755)
	if err := os.Rename(mp("h"), mp("secret/h")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vp("secret/h")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("secret/h through the view: %v", err)
	}
	if _, err := os.Stat(vp("h")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("h through the view after the move: %v", err)
	}
}
