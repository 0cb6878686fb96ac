package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
)

const testChunk = 64 << 10

// tree is a workspace's files by path: regular files' bytes, symlinks
// as "-> target", directories as "dir".
type tree map[string]string

// writeWS creates or updates workspace path with files (paths with
// slashes; parents made as needed).
func writeWS(t testing.TB, path string, files map[string][]byte) {
	t.Helper()
	f, err := fs.Open(path, fs.Options{ChunkSize: testChunk})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := fs.Caller{}
	for p, data := range files {
		parent := fs.RootIno
		names := strings.Split(p, "/")
		for _, d := range names[:len(names)-1] {
			a, err := f.Lookup(c, parent, d)
			if errors.Is(err, syscall.ENOENT) {
				a, err = f.Create(c, parent, d, fs.NewNode{Mode: syscall.S_IFDIR | 0o755})
			}
			if err != nil {
				t.Fatal(err)
			}
			parent = a.Ino
		}
		name := names[len(names)-1]
		a, err := f.Lookup(c, parent, name)
		if errors.Is(err, syscall.ENOENT) {
			a, err = f.Create(c, parent, name, fs.NewNode{Mode: syscall.S_IFREG | 0o644})
		} else if err == nil {
			_, err = f.Open(a.Ino)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(context.Background(), a.Ino, 0, data, false); err != nil {
			t.Fatal(err)
		}
		f.Release(a.Ino)
	}
	if err := f.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// readWS reads every file of workspace path, and its root.
func readWS(t testing.TB, path string) (tree, string) {
	t.Helper()
	f, err := fs.Open(path, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tree{}
	var walk func(ino fs.Ino, prefix string)
	walk = func(ino fs.Ino, prefix string) {
		list, err := f.ReadDir(ino)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			if d.Name == "." || d.Name == ".." {
				continue
			}
			p := prefix + d.Name
			a, err := f.GetAttr(d.Ino)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case a.IsDir():
				out[p] = "dir"
				walk(d.Ino, p+"/")
			case a.IsSymlink():
				tg, err := f.Readlink(d.Ino)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = "-> " + tg
			default:
				buf := make([]byte, a.Size)
				n, err := f.Read(context.Background(), d.Ino, 0, buf)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = string(buf[:n])
			}
		}
	}
	walk(fs.RootIno, "")
	root, err := f.Root(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out, root.String()
}

func sameTree(t testing.TB, got, want tree) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d paths, want %d", len(got), len(want))
	}
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s missing", p)
		} else if g != w {
			t.Errorf("%s differs: %d bytes, want %d", p, len(g), len(w))
		}
	}
}

// randomFiles makes n files of 1 to 3 chunks, half compressible.
func randomFiles(seed uint64, n int) map[string][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	files := make(map[string][]byte)
	for i := range n {
		size := testChunk + r.IntN(2*testChunk)
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if i%2 == 0 {
			for j := range b {
				b[j] = "abcdefgh\n"[b[j]%9]
			}
		}
		files[fmt.Sprintf("d%d/f%03d", i%4, i)] = b
	}
	return files
}

func testClient(t testing.TB, s *s3test.Server, url string, retry Retry) *Client {
	t.Helper()
	loc, err := ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(context.Background(), loc, ClientOptions{Endpoint: s.Endpoint, Region: s.Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chunksIn(t testing.TB, path string) int {
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n uint64
	st.View(func(tx *chunkstore.Tx) error {
		s, err := tx.Stats()
		n = s.Chunks
		return err
	})
	return int(n)
}

// TestPushClone: a workspace pushed through a real S3 server and cloned
// into a second store is byte-identical and root-identical and passes
// fsck; pushing again after changing 10% of its files uploads about
// those; a pull brings the clone up to date; a second workspace sharing
// most files, pushed to another prefix of the bucket, uploads only what
// differs.
func TestPushClone(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws1, ws2, ws3 := filepath.Join(dir, "one.cfs"), filepath.Join(dir, "two.cfs"), filepath.Join(dir, "three.cfs")
	files := randomFiles(1, 40)
	writeWS(t, ws1, files)
	c := testClient(t, s, "s3://cfs/team/one", Retry{})

	rep, err := Push(ctx, ws1, c, PushOptions{Remote: "origin", Snapshot: ""})
	if err != nil {
		t.Fatal(err)
	}
	total := chunksIn(t, ws1)
	if rep.Chunks != total || rep.Uploaded != total || rep.Checked != total {
		t.Errorf("first push: %+v, want %d chunks uploaded", rep, total)
	}
	want, root1 := readWS(t, ws1)
	if rep.Root != root1 {
		t.Errorf("pushed root %s, workspace root %s", rep.Root, root1)
	}

	crep, err := Clone(ctx, c, ws2, CloneOptions{RemoteName: "origin", Remote: Remote{URL: "s3://cfs/team/one", Endpoint: s.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Downloaded != total {
		t.Errorf("clone downloaded %d chunks, want %d", crep.Downloaded, total)
	}
	got, root2 := readWS(t, ws2)
	sameTree(t, got, want)
	if root2 != root1 {
		t.Errorf("clone root %s, want %s", root2, root1)
	}
	fsck(t, ws2)
	if _, err := os.Stat(ws2 + ".clone.d"); !os.IsNotExist(err) {
		t.Errorf("spool left behind: %v", err)
	}

	// An unchanged push uploads nothing.
	rep, err = Push(ctx, ws1, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploaded != 0 || rep.Checked != 0 || !rep.UpToDate {
		t.Errorf("unchanged push: %+v", rep)
	}

	// 10% of the files (4 of 40) rewritten.
	changed := map[string][]byte{}
	for p, b := range files {
		if len(changed) == 4 {
			break
		}
		nb := bytes.Clone(b)
		for i := 0; i < len(nb); i += testChunk {
			nb[i] ^= 0xff // every chunk of the file changes
		}
		changed[p] = nb
	}
	wantChunks := 0
	for _, b := range changed {
		wantChunks += (len(b) + testChunk - 1) / testChunk
	}
	writeWS(t, ws1, changed)
	rep, err = Push(ctx, ws1, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploaded != wantChunks || rep.Checked != wantChunks {
		t.Errorf("push after changing 4 files: uploaded %d, checked %d, want %d of %d", rep.Uploaded, rep.Checked, wantChunks, rep.Chunks)
	}
	want, root1 = readWS(t, ws1)

	prep, err := Pull(ctx, ws2, c, PullOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Downloaded != wantChunks {
		t.Errorf("pull downloaded %d chunks, want %d", prep.Downloaded, wantChunks)
	}
	got, root2 = readWS(t, ws2)
	sameTree(t, got, want)
	if root2 != root1 {
		t.Errorf("pulled root %s, want %s", root2, root1)
	}
	fsck(t, ws2)

	// Pushes keep one snapshot of their own: the last pushed.
	if snaps := snapshotsOf(t, ws1); len(snaps) != 1 || snaps[0] != rep.Snapshot {
		t.Errorf("snapshots after three pushes: %q, want [%s]", snaps, rep.Snapshot)
	}

	// A second workspace with most of the same files, and two of its own.
	own := randomFiles(99, 2)
	writeWS(t, ws3, files)
	writeWS(t, ws3, own)
	ownChunks := 0
	for _, b := range own {
		ownChunks += (len(b) + testChunk - 1) / testChunk
	}
	c3 := testClient(t, s, "s3://cfs/team/three", Retry{})
	rep, err = Push(ctx, ws3, c3, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploaded != ownChunks {
		t.Errorf("second workspace uploaded %d chunks, want %d (its own)", rep.Uploaded, ownChunks)
	}
}

func fsck(t testing.TB, path string) {
	t.Helper()
	st, err := chunkstore.Open(path, chunkstore.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := fs.Check(st, false)
	if err != nil || !rep.Clean() {
		t.Errorf("fsck %s: %v %v", path, err, rep.Problems)
	}
}

// TestPushConflict: a workspace that did not sync with a remote's HEAD
// cannot move it: a clone pushed to after another host's push is
// refused, as is a workspace never synced pushing to a taken prefix;
// the remote keeps the first host's tree.
func TestPushConflict(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, b, other := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs"), filepath.Join(dir, "other.cfs")
	writeWS(t, a, map[string][]byte{"x": []byte("from a")})
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, c, b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	writeWS(t, a, map[string][]byte{"x": []byte("a again")})
	first, err := Push(ctx, a, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	writeWS(t, b, map[string][]byte{"x": []byte("b's change")})
	if _, err := Push(ctx, b, c, PushOptions{Remote: "origin"}); !errors.Is(err, ErrConflict) {
		t.Errorf("b's push after a's: %v, want ErrConflict", err)
	}
	writeWS(t, other, map[string][]byte{"y": []byte("unrelated")})
	if _, err := Push(ctx, other, c, PushOptions{Remote: "origin"}); !errors.Is(err, ErrConflict) {
		t.Errorf("push of an unrelated workspace: %v, want ErrConflict", err)
	}
	// b cannot pull over its own change without --force; with it, it
	// gets a's tree, and can then push.
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin"}); !errors.Is(err, ErrConflict) {
		t.Errorf("pull over local changes: %v, want ErrConflict", err)
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin", Force: true}); err != nil {
		t.Fatal(err)
	}
	got, root := readWS(t, b)
	if got["x"] != "a again" || root != first.Root {
		t.Errorf("after pull --force: x=%q root %s, want a's (%s)", got["x"], root, first.Root)
	}
	writeWS(t, b, map[string][]byte{"x": []byte("b after pulling")})
	if _, err := Push(ctx, b, c, PushOptions{Remote: "origin"}); err != nil {
		t.Errorf("push after pull: %v", err)
	}
}

// TestDamagedRemote: a chunk object deleted and another altered on the
// server fail a clone, naming the files that hold them; nothing is
// installed. A pull of a missing or altered chunk fails the same way,
// the workspace untouched; an altered or missing manifest fails pull,
// clone and a lazy mount.
func TestDamagedRemote(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	files := map[string][]byte{
		"keep":         bytes.Repeat([]byte("k"), 1000),
		"gone/missing": bytes.Repeat([]byte("m"), 1000),
		"bad":          bytes.Repeat([]byte("b"), 1000),
	}
	writeWS(t, ws, files)
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "first.cfs")
	if _, err := Clone(ctx, c, first, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	obj := func(data []byte) string {
		id := chunkstore.Sum(data)
		return filepath.Join(s.Dir(), "cfs", "chunks", id.String()[:2], id.String())
	}
	if err := os.Remove(obj(files["gone/missing"])); err != nil {
		t.Fatal(err)
	}
	p := obj(files["bad"])
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(dir, "clone.cfs")
	_, err = Clone(ctx, c, clone, CloneOptions{})
	var de *DamageError
	if !errors.As(err, &de) {
		t.Fatalf("clone of a damaged remote: %v, want a DamageError", err)
	}
	if len(de.Missing) != 1 || len(de.Corrupt) != 1 || strings.Join(de.Paths, " ") != "/bad /gone/missing" {
		t.Errorf("damage: %d missing, %d corrupt, paths %q", len(de.Missing), len(de.Corrupt), de.Paths)
	}
	if !strings.Contains(err.Error(), "/gone/missing") {
		t.Errorf("message does not name the file: %v", err)
	}
	if _, err := os.Stat(clone); !os.IsNotExist(err) {
		t.Errorf("clone installed despite damage: %v", err)
	}

	// A pull whose new chunk is missing: refused, naming the file; the
	// workspace pulled into is untouched (the chunks it holds are not
	// fetched, so the damage above does not concern it).
	_, before := readWS(t, first)
	writeWS(t, ws, map[string][]byte{"new/file": bytes.Repeat([]byte("n"), 3000)})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(obj(bytes.Repeat([]byte("n"), 3000))); err != nil {
		t.Fatal(err)
	}
	_, err = Pull(ctx, first, c, PullOptions{Remote: "origin"})
	if !errors.As(err, &de) || strings.Join(de.Paths, " ") != "/new/file" {
		t.Errorf("pull of a missing chunk: %v, want a DamageError naming /new/file", err)
	}
	if _, after := readWS(t, first); after != before {
		t.Errorf("failed pull changed the workspace: root %s, was %s", after, before)
	}
	fsck(t, first)

	// A pull whose new chunk was altered: refused by its content ID,
	// naming the file, the workspace untouched.
	writeWS(t, ws, map[string][]byte{"new/other": bytes.Repeat([]byte("o"), 3000)})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	p = obj(bytes.Repeat([]byte("o"), 3000))
	if b, err = os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Pull(ctx, first, c, PullOptions{Remote: "origin"})
	if !errors.As(err, &de) || len(de.Corrupt) != 1 || !strings.Contains(strings.Join(de.Paths, " "), "/new/other") {
		t.Errorf("pull of an altered chunk: %v, want a DamageError naming /new/other", err)
	}
	if _, after := readWS(t, first); after != before {
		t.Errorf("failed pull changed the workspace: root %s, was %s", after, before)
	}

	// The manifest HEAD names altered, then missing: pull, clone and a
	// lazy mount's read of it refuse it (its ID is the hash of its
	// bytes), nothing installed or changed.
	head, _, err := c.getRef(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	mfile := filepath.Join(s.Dir(), "cfs", c.manifestKey(head.Manifest))
	mb, err := os.ReadFile(mfile)
	if err != nil {
		t.Fatalf("the manifest in versitygw's directory: %v", err)
	}
	for _, damage := range []string{"altered", "missing"} {
		if damage == "altered" {
			bad := bytes.Clone(mb)
			bad[len(bad)/2] ^= 1
			if err := os.WriteFile(mfile, bad, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(mfile); err != nil {
			t.Fatal(err)
		}
		if _, err := Pull(ctx, first, c, PullOptions{Remote: "origin"}); err == nil || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("pull of an %s manifest: %v", damage, err)
		}
		if _, after := readWS(t, first); after != before {
			t.Errorf("pull of an %s manifest changed the workspace", damage)
		}
		cl := filepath.Join(dir, "m-"+damage+".cfs")
		if _, err := Clone(ctx, c, cl, CloneOptions{}); err == nil || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("clone of an %s manifest: %v", damage, err)
		}
		if _, err := os.Stat(cl); !os.IsNotExist(err) {
			t.Errorf("clone of an %s manifest installed: %v", damage, err)
		}
		if _, err := c.Snapshot(ctx, "", false); err == nil || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("lazy mount of an %s manifest: %v", damage, err)
		}
	}
	fsck(t, first)
}

// TestServerStoppedMidPush: the server killed while a push uploads, and
// started again 1.5 s later: the push retries with backoff and
// completes, and a clone of the result is the workspace. Then a push
// cancelled midway (as a killed process leaves it) is completed by the
// next, which uploads only what the first had not.
func TestServerStoppedMidPush(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	writeWS(t, ws, randomFiles(7, 30))
	c := testClient(t, s, "s3://cfs/ws", Retry{Attempts: 20, Base: 50 * time.Millisecond, Max: 500 * time.Millisecond})
	c.conc = 2
	var once sync.Once
	restarted := make(chan struct{})
	rep, err := Push(ctx, ws, c, PushOptions{Remote: "origin", Progress: func(p Progress) {
		if p.Done >= 5 {
			once.Do(func() {
				s.Stop()
				go func() {
					time.Sleep(1500 * time.Millisecond)
					s.Restart()
					close(restarted)
				}()
			})
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-restarted
	if rep.Uploaded != rep.Chunks {
		t.Errorf("push across a restart: %+v", rep)
	}
	want, root := readWS(t, ws)
	clone := filepath.Join(dir, "clone.cfs")
	if _, err := Clone(ctx, c, clone, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	got, croot := readWS(t, clone)
	sameTree(t, got, want)
	if croot != root {
		t.Errorf("clone root %s, want %s", croot, root)
	}

	// Cancelled midway, then pushed again.
	writeWS(t, ws, randomFiles(8, 20))
	cctx, cancel := context.WithCancel(ctx)
	var first int
	_, err = Push(cctx, ws, c, PushOptions{Remote: "origin", Progress: func(p Progress) {
		if p.Done >= 6 && first == 0 {
			first = p.Done
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled push: %v", err)
	}
	rep, err = Push(ctx, ws, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploaded >= rep.Checked || rep.Uploaded == 0 {
		t.Errorf("resumed push uploaded %d of the %d chunks checked: the first had uploaded %d", rep.Uploaded, rep.Checked, first)
	}
	want, root = readWS(t, ws)
	if rep.Root != root {
		t.Errorf("resumed push root %s, workspace %s", rep.Root, root)
	}
	os.Remove(clone + ".remotes.json")
	if _, err := Pull(ctx, clone, c, PullOptions{Remote: "origin", Force: true}); err != nil {
		t.Fatal(err)
	}
	got, croot = readWS(t, clone)
	sameTree(t, got, want)
	if croot != root {
		t.Errorf("pulled root %s, want %s", croot, root)
	}
}

// TestConditionalWrites: the server honours the conditions HEAD's
// updates rely on: If-None-Match * on an existing object and If-Match
// with a stale ETag are refused with ErrConflict.
func TestConditionalWrites(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	k := c.key("HEAD")
	if err := c.put(ctx, k, []byte("one"), "*"); err != nil {
		t.Fatal(err)
	}
	if err := c.put(ctx, k, []byte("two"), "*"); !errors.Is(err, ErrConflict) {
		t.Errorf("If-None-Match * over an object: %v, want ErrConflict", err)
	}
	_, etag, err := c.get(ctx, k, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.put(ctx, k, []byte("two"), etag); err != nil {
		t.Errorf("If-Match the current ETag: %v", err)
	}
	if err := c.put(ctx, k, []byte("three"), etag); !errors.Is(err, ErrConflict) {
		t.Errorf("If-Match a stale ETag: %v, want ErrConflict", err)
	}
	if b, _, err := c.get(ctx, k, 100); err != nil || string(b) != "two" {
		t.Errorf("HEAD is %q (%v), want two", b, err)
	}
}

// TestPublish: a published file's presigned URL serves its bytes to a
// plain HTTP client; an expired one does not.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	data := []byte("published bytes\n")
	u, err := Publish(ctx, c, "/dir/report.txt", data, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Errorf("GET %s: %d %q", u, resp.StatusCode, got)
	}
	u, err = Publish(ctx, c, "report.txt", data, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	resp, err = http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Errorf("expired URL still served")
	}
}

func keyClient(t testing.TB, s *s3test.Server, url string, key []byte) *Client {
	t.Helper()
	loc, err := ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(context.Background(), loc, ClientOptions{Endpoint: s.Endpoint, Region: s.Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEncryptedRemote: with a key, nothing on the server holds a
// file's bytes, a chunk's content ID or a snapshot's root; a clone with
// the key is root-identical; without it, or with another key, the clone
// fails saying so; a second workspace pushed with the same key uploads
// only what differs (keyed IDs keep deduplication); an altered object
// is detected.
func TestEncryptedRemote(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := NewKey(keyFile); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	key, err := ReadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := bytes.Repeat([]byte("top secret text "), 2000)
	files := map[string][]byte{"secret": secret, "other": []byte("another file")}
	ws := filepath.Join(dir, "ws.cfs")
	writeWS(t, ws, files)
	c := keyClient(t, s, "s3://cfs/enc", key)
	rep, err := Push(ctx, ws, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	plainIDs := map[string]bool{}
	for _, b := range files {
		for i := 0; i < len(b); i += testChunk {
			plainIDs[chunkstore.Sum(b[i:min(i+testChunk, len(b))]).String()] = true
		}
	}
	filepath.WalkDir(filepath.Join(s.Dir(), "cfs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if plainIDs[d.Name()] {
			t.Errorf("object named by a plain chunk ID: %s", p)
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte("top secret")) || bytes.Contains(b, []byte(rep.Root)) || bytes.Contains(b, []byte(rep.Snapshot)) {
			t.Errorf("%s holds plaintext", p)
		}
		return nil
	})

	want, root := readWS(t, ws)
	clone := filepath.Join(dir, "clone.cfs")
	if _, err := Clone(ctx, c, clone, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	got, croot := readWS(t, clone)
	sameTree(t, got, want)
	if croot != root {
		t.Errorf("clone root %s, want %s", croot, root)
	}
	other := make([]byte, KeySize)
	for _, cl := range []*Client{testClient(t, s, "s3://cfs/enc", Retry{}), keyClient(t, s, "s3://cfs/enc", other)} {
		if _, err := Clone(ctx, cl, filepath.Join(dir, "nokey.cfs"), CloneOptions{}); !errors.Is(err, ErrEncrypted) {
			t.Errorf("clone without the key: %v, want ErrEncrypted", err)
		}
	}

	// Dedup under the key: a second workspace with the same big file.
	ws2 := filepath.Join(dir, "ws2.cfs")
	writeWS(t, ws2, map[string][]byte{"copy": secret, "mine": []byte("only here")})
	rep2, err := Push(ctx, ws2, keyClient(t, s, "s3://cfs/enc2", key), PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Uploaded != 1 {
		t.Errorf("second workspace uploaded %d chunks, want 1", rep2.Uploaded)
	}

	// An altered chunk object.
	victim := filepath.Join(s.Dir(), "cfs", c.chunkKey(chunkstore.Sum(secret)))
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0x40
	os.WriteFile(victim, b, 0o644)
	var de *DamageError
	if _, err := Clone(ctx, c, filepath.Join(dir, "damaged.cfs"), CloneOptions{}); !errors.As(err, &de) || len(de.Corrupt) != 1 {
		t.Errorf("clone with an altered object: %v", err)
	}
}

// TestSyncer: continuous sync of an open workspace pushes its changes
// in the background; with the server down it turns pending and retries
// with backoff, writes going on meanwhile; once the server is back it
// pushes, and a clone is the workspace. Only the last sync snapshot is
// kept.
func TestSyncer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	writeWS(t, ws, map[string][]byte{"a": []byte("one")})
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := testClient(t, s, "s3://cfs/ws", Retry{Attempts: 2, Base: 10 * time.Millisecond, Max: 20 * time.Millisecond})
	sy := &Syncer{FS: f, WS: ws, Remote: "origin", Client: c, Every: 50 * time.Millisecond, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}
	done := make(chan struct{})
	go func() { sy.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; f.Close() }()
	waitFor := func(what string, ok func(SyncState) bool) SyncState {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			st, err := ReadSyncState(ws)
			if err == nil && st != nil && ok(*st) {
				return *st
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("sync never %s: %+v", what, sy.State())
		return SyncState{}
	}
	root := func() string {
		r, err := f.Root(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r.String()
	}
	put := func(name, data string) {
		a, err := f.Create(fs.Caller{}, fs.RootIno, name, fs.NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(ctx, a.Ino, 0, []byte(data), false); err != nil {
			t.Fatal(err)
		}
		f.Release(a.Ino)
	}
	r1 := root()
	waitFor("pushed the first state", func(st SyncState) bool { return st.State == "idle" && st.LastRoot == r1 })

	s.Stop()
	put("b", "written while the server is down")
	r2 := root()
	st := waitFor("pending", func(st SyncState) bool { return st.State == "pending" && st.Attempts >= 2 })
	if st.Error == "" || st.NextTry == "" {
		t.Errorf("pending state without its error or next try: %+v", st)
	}
	put("c", "and more") // writes do not wait for the network
	r3 := root()
	s.Restart()
	waitFor("caught up", func(st SyncState) bool { return st.State == "idle" && st.LastRoot == r3 })
	_ = r2
	snaps, err := f.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Errorf("snapshots kept: %+v, want the last sync one", snaps)
	}
	clone := filepath.Join(dir, "clone.cfs")
	if _, err := Clone(ctx, c, clone, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	got, croot := readWS(t, clone)
	if croot != r3 || got["c"] != "and more" || got["b"] != "written while the server is down" {
		t.Errorf("clone of the synced workspace: root %s (want %s), files %q", croot, r3, got)
	}
}

func snapshotsOf(t testing.TB, ws string) []string {
	t.Helper()
	st, err := chunkstore.Open(ws, chunkstore.Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snaps, err := fs.ListSnapshots(st)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range snaps {
		out = append(out, s.Name)
	}
	return out
}

// TestCloneResumes: a clone cut off midway keeps what it downloaded in
// its spool, and the next one fetches only the rest.
func TestCloneResumes(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.cfs")
	writeWS(t, ws, randomFiles(3, 30))
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	rep, err := Push(ctx, ws, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(dir, "clone.cfs")
	cctx, cancel := context.WithCancel(ctx)
	c.conc = 2
	_, err = Clone(cctx, c, clone, CloneOptions{Progress: func(p Progress) {
		if p.Done >= 5 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cut-off clone: %v", err)
	}
	spooled, _ := os.ReadDir(SpoolDir(clone))
	if len(spooled) == 0 || len(spooled) >= rep.Chunks {
		t.Fatalf("%d chunks spooled of %d", len(spooled), rep.Chunks)
	}
	crep, err := Clone(ctx, c, clone, CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Downloaded != rep.Chunks-len(spooled) {
		t.Errorf("resumed clone downloaded %d, want %d - %d", crep.Downloaded, rep.Chunks, len(spooled))
	}
	want, root := readWS(t, ws)
	got, croot := readWS(t, clone)
	sameTree(t, got, want)
	if croot != root {
		t.Errorf("root %s, want %s", croot, root)
	}
}

// TestSyncerKick: with a long period, a kick (an exec) pushes at once.
func TestSyncerKick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := s3test.Start(t)
	s.Bucket("cfs")
	ws := filepath.Join(t.TempDir(), "ws.cfs")
	writeWS(t, ws, map[string][]byte{"a": []byte("kicked")})
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kick := make(chan struct{}, 1)
	sy := &Syncer{FS: f, WS: ws, Remote: "origin", Client: testClient(t, s, "s3://cfs/ws", Retry{}), Every: time.Hour, Kick: kick}
	done := make(chan struct{})
	go func() { sy.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; f.Close() }()
	kick <- struct{}{}
	deadline := time.Now().Add(30 * time.Second)
	for sy.State().LastPush == "" {
		if time.Now().After(deadline) {
			t.Fatalf("a kick did not push: %+v", sy.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPushKilledAfterHEAD: a push killed after it wrote HEAD but before
// it recorded so (its cursor still pending) is recognised by the next
// push as this workspace's own, which goes through.
func TestPushKilledAfterHEAD(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	ws := filepath.Join(t.TempDir(), "ws.cfs")
	writeWS(t, ws, map[string][]byte{"a": []byte("one")})
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(ws)
	if err != nil {
		t.Fatal(err)
	}
	first := cfg.Cursors["origin"]
	writeWS(t, ws, map[string][]byte{"a": []byte("two")})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	// As the kill leaves it: the old cursor, the landed push pending.
	cfg, _ = LoadConfig(ws)
	landed := cfg.Cursors["origin"]
	first.Pending = &landed
	cfg.Cursors["origin"] = first
	if err := cfg.Save(ws); err != nil {
		t.Fatal(err)
	}
	writeWS(t, ws, map[string][]byte{"a": []byte("three")})
	rep, err := Push(ctx, ws, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatalf("push after a push killed past HEAD: %v", err)
	}
	if rep.Checked != 1 {
		t.Errorf("checked %d chunks, want 1 (the landed push's manifest is known)", rep.Checked)
	}
	// Without the pending record it would be another host's push.
	cfg, _ = LoadConfig(ws)
	cfg.Cursors["origin"] = first
	cfg.Save(ws)
	writeWS(t, ws, map[string][]byte{"a": []byte("four")})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); !errors.Is(err, ErrConflict) {
		t.Errorf("push with a stale cursor: %v, want ErrConflict", err)
	}
}

// TestPullKeepsHistory: a pull brings the pushed snapshot in as a
// snapshot of the workspace and moves its tree there, keeping the
// workspace's own snapshots and exec records; a pull over changes made
// since the last sync is refused naming the files, and --force replaces
// them while the snapshots and exec records stay.
func TestPullKeepsHistory(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs")
	writeWS(t, a, map[string][]byte{"x": []byte("from a"), "d/y": bytes.Repeat([]byte("y"), 3*testChunk)})
	c := testClient(t, s, "s3://cfs/hist", Retry{})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, c, b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(b, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	writeWS(t, a, map[string][]byte{"x": []byte("a, second"), "z": []byte("new on a")})
	p2, err := Push(ctx, a, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Pull(ctx, b, c, PullOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LocalSnapshot != p2.Snapshot || rep.Downloaded != 2 {
		t.Errorf("pull: %+v, want local snapshot %s and 2 chunks downloaded", rep, p2.Snapshot)
	}
	got, root := readWS(t, b)
	want, wantRoot := readWS(t, a)
	sameTree(t, got, want)
	if root != wantRoot {
		t.Errorf("pulled root %s, want %s", root, wantRoot)
	}
	if snaps := strings.Join(snapshotsOf(t, b), " "); !strings.Contains(snaps, "mine") || !strings.Contains(snaps, p2.Snapshot) {
		t.Errorf("snapshots after pull: %s", snaps)
	}

	// An exec on b changes a file; a pushes again.
	f, err = fs.Open(b, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := f.BeginExec(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	nf, err := f.Create(fs.Caller{}, fs.RootIno, "by-exec", fs.NewNode{Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(ctx, nf.Ino, 0, []byte("exec output"), false); err != nil {
		t.Fatal(err)
	}
	f.Release(nf.Ino)
	if _, err := f.EndExec(ctx, cp, fs.ExecRecord{Backend: "test", Command: "e1"}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeWS(t, a, map[string][]byte{"x": []byte("a, third")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	_, before := readWS(t, b)
	_, err = Pull(ctx, b, c, PullOptions{Remote: "origin"})
	var lc *LocalChangesError
	if !errors.As(err, &lc) || !errors.Is(err, ErrConflict) || strings.Join(lc.Paths, " ") != "/by-exec" {
		t.Fatalf("pull over an exec's change: %v, want a LocalChangesError naming /by-exec", err)
	}
	if _, after := readWS(t, b); after != before {
		t.Fatal("a refused pull changed the workspace")
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin", Force: true}); err != nil {
		t.Fatal(err)
	}
	got, root = readWS(t, b)
	want, wantRoot = readWS(t, a)
	sameTree(t, got, want)
	if root != wantRoot {
		t.Errorf("pulled root %s, want %s", root, wantRoot)
	}
	f, err = fs.Open(b, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	execs, err := f.Execs()
	if err != nil || len(execs) != 1 || execs[0].Command != "e1" {
		t.Errorf("exec records after pull --force: %+v %v", execs, err)
	}
	v, err := f.SnapshotView("mine")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := v.Lookup(fs.RootIno, "x"); err != nil {
		t.Error(err)
	} else {
		buf := make([]byte, 64)
		n, _ := v.Read(a.Ino, 0, buf)
		if string(buf[:n]) != "from a" {
			t.Errorf("snapshot mine's x after two pulls: %q", buf[:n])
		}
	}
	f.Close()
	fsck(t, b)
	if snaps := strings.Join(snapshotsOf(t, b), " "); !strings.Contains(snaps, "mine") {
		t.Errorf("snapshots after pull --force: %s", snaps)
	}
}

// TestHeadRollback: HEAD rewritten (an S3 PutObject of an older HEAD
// object, as a server or anyone with the bucket's keys could) to an
// older push is refused by pull, push and clone with ErrRollback, as is
// a HEAD deleted; --force accepts it, and a forced push moves HEAD past
// every generation seen.
func TestHeadRollback(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs")
	c := testClient(t, s, "s3://cfs/rb", Retry{})
	writeWS(t, a, map[string][]byte{"x": []byte("one")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := c.get(ctx, c.key("HEAD"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	writeWS(t, a, map[string][]byte{"x": []byte("two")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	head, _, err := c.getRef(ctx, "HEAD")
	if err != nil || head.Generation != 2 {
		t.Fatalf("HEAD after two pushes: generation %d (%v), want 2", head.Generation, err)
	}
	book := filepath.Join(dir, "heads.json")
	cb := testClient(t, s, "s3://cfs/rb", Retry{})
	cb.book = book
	if _, err := Clone(ctx, cb, b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}

	// Rolled back to the first push.
	if err := c.put(ctx, c.key("HEAD"), old, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin"}); !errors.Is(err, ErrRollback) {
		t.Errorf("pull of a rolled-back HEAD: %v, want ErrRollback", err)
	}
	writeWS(t, a, map[string][]byte{"x": []byte("three")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); !errors.Is(err, ErrRollback) {
		t.Errorf("push onto a rolled-back HEAD: %v, want ErrRollback", err)
	}
	if _, err := Clone(ctx, cb, filepath.Join(dir, "c.cfs"), CloneOptions{}); !errors.Is(err, ErrRollback) {
		t.Errorf("clone (with the user's head book) of a rolled-back HEAD: %v, want ErrRollback", err)
	}
	if _, err := Clone(ctx, cb, filepath.Join(dir, "c.cfs"), CloneOptions{Force: true}); err != nil {
		t.Errorf("clone --force of a rolled-back HEAD: %v", err)
	}
	// Forced, a push moves HEAD on past what was seen.
	rep, err := Push(ctx, a, c, PushOptions{Remote: "origin", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if head, _, _ = c.getRef(ctx, "HEAD"); head.Generation != 3 || head.Manifest != rep.Manifest {
		t.Errorf("HEAD after a forced push: %+v, want generation 3, manifest %s", head, rep.Manifest)
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin"}); err != nil {
		t.Errorf("pull after the forced push: %v", err)
	}
	if got, _ := readWS(t, b); got["x"] != "three" {
		t.Errorf("x after pull: %q", got["x"])
	}

	// HEAD deleted where one was seen.
	if _, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cfs"), Key: aws.String(c.key("HEAD"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin"}); !errors.Is(err, ErrRollback) {
		t.Errorf("pull of a deleted HEAD: %v, want ErrRollback", err)
	}
	if _, err := Push(ctx, b, c, PushOptions{Remote: "origin"}); !errors.Is(err, ErrRollback) {
		t.Errorf("push where HEAD was deleted: %v, want ErrRollback", err)
	}
}

// TestPullResumes: a pull cut off while it downloads leaves the
// workspace as it was (and fsck-clean), its downloads spooled; the next
// pull fetches only the rest and lands on the pushed root.
func TestPullResumes(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	ws, b := filepath.Join(dir, "ws.cfs"), filepath.Join(dir, "b.cfs")
	writeWS(t, ws, map[string][]byte{"first": []byte("1")})
	c := testClient(t, s, "s3://cfs/ws", Retry{})
	if _, err := Push(ctx, ws, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, c, b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	writeWS(t, ws, randomFiles(4, 30))
	rep, err := Push(ctx, ws, c, PushOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	_, before := readWS(t, b)
	cctx, cancel := context.WithCancel(ctx)
	c.conc = 2
	_, err = Pull(cctx, b, c, PullOptions{Remote: "origin", Progress: func(p Progress) {
		if p.Done >= 5 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cut-off pull: %v", err)
	}
	if _, after := readWS(t, b); after != before {
		t.Fatal("a cut-off pull changed the workspace")
	}
	fsck(t, b)
	spooled, _ := os.ReadDir(SpoolDir(b))
	if len(spooled) == 0 || len(spooled) >= rep.Uploaded {
		t.Fatalf("%d chunks spooled of %d", len(spooled), rep.Uploaded)
	}
	prep, err := Pull(ctx, b, c, PullOptions{Remote: "origin"})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Downloaded != rep.Uploaded-len(spooled) {
		t.Errorf("resumed pull downloaded %d, want %d - %d", prep.Downloaded, rep.Uploaded, len(spooled))
	}
	want, root := readWS(t, ws)
	got, broot := readWS(t, b)
	sameTree(t, got, want)
	if broot != root {
		t.Errorf("root %s, want %s", broot, root)
	}
	fsck(t, b)
	if _, err := os.Stat(SpoolDir(b)); !os.IsNotExist(err) {
		t.Errorf("spool left after the pull: %v", err)
	}
}

// TestHeadRollbackEncrypted: on an encrypted remote, where refs cannot
// be forged without the key, an old sealed HEAD replayed is caught the
// same way.
func TestHeadRollbackEncrypted(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs")
	key := bytes.Repeat([]byte{7}, KeySize)
	c := keyClient(t, s, "s3://cfs/sealed", key)
	writeWS(t, a, map[string][]byte{"x": []byte("one")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := c.get(ctx, c.key("HEAD"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	writeWS(t, a, map[string][]byte{"x": []byte("two")})
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, c, b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	if err := c.put(ctx, c.key("HEAD"), old, ""); err != nil { // the replay: sealed, valid, old
		t.Fatal(err)
	}
	if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin"}); !errors.Is(err, ErrRollback) {
		t.Errorf("pull of a replayed sealed HEAD: %v, want ErrRollback", err)
	}
}
