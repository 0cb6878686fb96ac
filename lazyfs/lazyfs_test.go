package lazyfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
	"github.com/computerfs/computerfs/remote"
)

func needFUSE(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mount tests run as root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

// putFiles writes files (name to content) into f's root directory and
// returns their inodes by name.
func putFiles(t *testing.T, f *fs.FS, files map[string][]byte) map[string]fs.Ino {
	t.Helper()
	inos := make(map[string]fs.Ino, len(files))
	for name, data := range files {
		a, err := f.Create(fs.Caller{}, fs.RootIno, name, fs.NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(context.Background(), a.Ino, 0, data, false); err != nil {
			t.Fatal(err)
		}
		f.Release(a.Ino)
		inos[name] = a.Ino
	}
	return inos
}

// pushTo pushes the closed workspace ws to s3://cfs/ws on s and returns
// the client of that remote and the push's report.
func pushTo(t *testing.T, s *s3test.Server, ws string) (*remote.Client, *remote.PushReport) {
	t.Helper()
	ctx := context.Background()
	loc, _ := remote.ParseURL("s3://cfs/ws")
	cl, err := remote.NewClient(ctx, loc, remote.ClientOptions{Endpoint: s.Endpoint, Region: s.Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := remote.Push(ctx, ws, cl, remote.PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	return cl, rep
}

// TestLazyMount: a pushed snapshot mounted lazily serves a small file
// after fetching only its chunk (plus read-ahead), not the workspace;
// a large file read sequentially comes whole; names, symlinks and
// xattrs are the snapshot's; writes are EROFS; a clone into the same
// spool then downloads only what the mount had not.
func TestLazyMount(t *testing.T) {
	needFUSE(t)
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	const cs = 64 << 10
	f, err := fs.Open(ws, fs.Options{ChunkSize: cs})
	if err != nil {
		t.Fatal(err)
	}
	c := fs.Caller{}
	files := map[string][]byte{"small": []byte("small file\n"), "big": random(40*cs+123, 1)}
	for i := range 20 {
		files["other"+string(rune('a'+i))] = random(3*cs, uint64(10+i))
	}
	smallIno := putFiles(t, f, files)["small"]
	if _, err := f.Create(c, fs.RootIno, "ln", fs.NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "small"}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetXattr(smallIno, "user.note", []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cl, rep := pushTo(t, s, ws)

	clone := filepath.Join(dir, "clone.cfs")
	m, err := cl.Snapshot(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	lm, err := New(m, cl, mnt, Options{Spool: remote.SpoolDir(clone)})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Unmount()

	got, err := os.ReadFile(filepath.Join(mnt, "small"))
	if err != nil || !bytes.Equal(got, files["small"]) {
		t.Fatalf("small through the lazy mount: %q %v", got, err)
	}
	if n := lm.Fetches(); n != 1 {
		t.Errorf("reading one small file fetched %d chunks of %d", n, rep.Chunks)
	}
	if tg, err := os.Readlink(filepath.Join(mnt, "ln")); err != nil || tg != "small" {
		t.Errorf("readlink: %q %v", tg, err)
	}
	buf := make([]byte, 16)
	if n, err := syscall.Getxattr(filepath.Join(mnt, "small"), "user.note", buf); err != nil || string(buf[:n]) != "kept" {
		t.Errorf("xattr: %q %v", buf[:n], err)
	}
	if ents, err := os.ReadDir(mnt); err != nil || len(ents) != len(files)+1 {
		t.Errorf("readdir: %d entries (%v), want %d", len(ents), err, len(files)+1)
	}
	if err := os.WriteFile(filepath.Join(mnt, "small"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write: %v, want EROFS", err)
	}
	got, err = os.ReadFile(filepath.Join(mnt, "big"))
	if err != nil || !bytes.Equal(got, files["big"]) {
		t.Fatalf("big through the lazy mount: %d bytes, %v", len(got), err)
	}
	fetched := lm.Fetches()
	if fetched > 1+41+4 {
		t.Errorf("fetched %d chunks for small and big (42 chunks)", fetched)
	}

	// A clone sharing the spool downloads the rest only.
	crep, err := remote.Clone(ctx, cl, clone, remote.CloneOptions{KeepSpool: true})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Downloaded != rep.Chunks-fetched {
		t.Errorf("clone after the mount's reads downloaded %d chunks, want %d - %d", crep.Downloaded, rep.Chunks, fetched)
	}
	if crep.Root != rep.Root {
		t.Errorf("clone root %s, want %s", crep.Root, rep.Root)
	}
}

// TestLazyMountDamage: a chunk object altered on the server is never
// served by a lazy mount: reading its file fails with EIO (checked
// against its content ID), nothing of it is spooled, and the other
// files read whole.
func TestLazyMountDamage(t *testing.T) {
	needFUSE(t)
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	const cs = 64 << 10
	f, err := fs.Open(ws, fs.Options{ChunkSize: cs})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"good": random(2*cs, 1), "bad": random(2*cs+10, 2)}
	putFiles(t, f, files)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cl, _ := pushTo(t, s, ws)
	// The second chunk of bad, altered where the server keeps it.
	id := chunkstore.Sum(files["bad"][cs : 2*cs])
	obj := filepath.Join(s.Dir(), "cfs", "chunks", id.String()[:2], id.String())
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(obj, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := cl.Snapshot(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	spool := remote.SpoolDir(filepath.Join(dir, "clone.cfs"))
	lm, err := New(m, cl, mnt, Options{Spool: spool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Unmount()
	if got, err := os.ReadFile(filepath.Join(mnt, "good")); err != nil || !bytes.Equal(got, files["good"]) {
		t.Errorf("good through the lazy mount: %d bytes, %v", len(got), err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "bad")); !errors.Is(err, syscall.EIO) {
		t.Errorf("bad through the lazy mount: %v, want EIO", err)
	}
	if _, err := os.Stat(filepath.Join(spool, id.String())); !os.IsNotExist(err) {
		t.Errorf("the altered chunk was spooled: %v", err)
	}
}
