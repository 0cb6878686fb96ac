package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/s3test"
	"github.com/computerfs/computerfs/remote"
)

// TestRemoteCLI: a workspace written through a real FUSE mount is
// pushed to a real S3 server with the CLI, cloned into a second store
// (the same files, the same root), a push killed with SIGKILL midway is
// completed by the next (uploading only what it lacks), a second host's
// stale push is refused with exit 4, and a published file's link
// serves it over plain HTTP.
func TestRemoteCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := tempWorkspace(t)
	files := map[string][]byte{"README": []byte("hello from host one\n"), "src/big.bin": randomData(3<<20, 1), "src/text": textData(200000)}
	makeStore(t, home, ws, mnt, files, "--create")
	mustCLI(t, home, "remote", "add", "-w", ws, "origin", "s3://cfs/team/ws", "--endpoint", s.Endpoint)
	var push struct {
		Snapshot, Root            string
		Chunks, Uploaded, Checked int
	}
	r := mustCLI(t, home, "push", "-w", ws, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &push); err != nil {
		t.Fatalf("push --json: %v\n%s", err, r)
	}
	if push.Uploaded != push.Chunks || push.Chunks < 4 {
		t.Errorf("first push: %+v", push)
	}

	clone := filepath.Join(filepath.Dir(ws), "clone.cfs")
	r = mustCLI(t, home, "clone", "s3://cfs/team/ws", clone, "--endpoint", s.Endpoint)
	if !strings.Contains(r.stdout, "root "+push.Root+" verified") {
		t.Errorf("clone output: %s", r.stdout)
	}
	for name, want := range files {
		got := mustCLI(t, home, "fs", "cat", "-w", clone, "/"+name).stdout
		if got != string(want) {
			t.Errorf("%s in the clone: %d bytes, want %d", name, len(got), len(want))
		}
	}
	var snaps []struct{ Name, Root string }
	if err := json.Unmarshal([]byte(mustCLI(t, home, "snapshot", "list", clone, "--json").stdout), &snaps); err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].Name != push.Snapshot || snaps[0].Root != push.Root {
		t.Errorf("clone's snapshots %+v, want %s with root %s", snaps, push.Snapshot, push.Root)
	}
	fsckClean(t, home, clone)

	// More data, and a push killed once some of it is up.
	more := map[string][]byte{}
	for i := range 6 {
		more[fmt.Sprintf("more/f%d", i)] = randomData(2<<20, uint64(10+i))
	}
	makeStore(t, home, ws, mnt, more)
	cmd := exec.Command(cfsBin, "push", "-w", ws)
	cmd.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	chunksDir := filepath.Join(s.Dir(), "cfs", "chunks")
	before := countFiles(chunksDir)
	deadline := time.Now().Add(60 * time.Second)
	for countFiles(chunksDir) < before+2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	mid := countFiles(chunksDir) - before
	r = mustCLI(t, home, "push", "-w", ws, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &push); err != nil {
		t.Fatalf("push --json: %v\n%s", err, r)
	}
	if push.Uploaded >= push.Checked || push.Uploaded > push.Checked-mid {
		t.Errorf("push after a killed one: %+v, the killed one had uploaded %d", push, mid)
	}
	t.Logf("killed push uploaded %d chunks; the next uploaded %d of %d checked", mid, push.Uploaded, push.Checked)
	r = mustCLI(t, home, "pull", "-w", clone)
	if !strings.Contains(r.stdout, "root "+push.Root+" verified") {
		t.Errorf("pull output: %s", r.stdout)
	}
	for name, want := range more {
		if got := mustCLI(t, home, "fs", "cat", "-w", clone, "/"+name).stdout; got != string(want) {
			t.Errorf("%s after pull: %d bytes, want %d", name, len(got), len(want))
		}
	}

	// A second host: a clone that falls behind is refused.
	other := filepath.Join(filepath.Dir(ws), "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/team/ws", other, "--endpoint", s.Endpoint)
	mustCLI(t, home, "fs", "rm", "-w", ws, "/README")
	mustCLI(t, home, "push", "-w", ws)
	mustCLI(t, home, "fs", "rm", "-w", other, "/more/f0")
	r = cli(t, home, "push", "-w", other)
	if r.code != 4 || !strings.Contains(r.stderr, "pull it first") {
		t.Errorf("stale push: want exit 4 naming the fix\n%v", r)
	}

	// An encrypted remote: a new key at add, the clone given it.
	key := filepath.Join(filepath.Dir(ws), "remote.key")
	mustCLI(t, home, "remote", "add", "-w", ws, "vault", "s3://cfs/vault", "--endpoint", s.Endpoint, "--key-file", key, "--new-key")
	r = mustCLI(t, home, "push", "-w", ws, "vault", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &push); err != nil {
		t.Fatalf("push --json: %v\n%s", err, r)
	}
	r = cli(t, home, "clone", "s3://cfs/vault", filepath.Join(filepath.Dir(ws), "nokey.cfs"), "--endpoint", s.Endpoint)
	if r.code == 0 || !strings.Contains(r.stderr, "key") {
		t.Errorf("clone of an encrypted remote without its key\n%v", r)
	}
	vclone := filepath.Join(filepath.Dir(ws), "vault.cfs")
	r = mustCLI(t, home, "clone", "s3://cfs/vault", vclone, "--endpoint", s.Endpoint, "--key-file", key)
	if !strings.Contains(r.stdout, "root "+push.Root+" verified") {
		t.Errorf("encrypted clone: %s", r.stdout)
	}

	// Publish.
	r = mustCLI(t, home, "publish", "-w", ws, "--remote", "origin", "/src/text", "--expires", "10m")
	resp, err := http.Get(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != string(files["src/text"]) {
		t.Errorf("published link: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// startS3 starts a versitygw server with the bucket cfs and points this
// test's AWS variables (which the CLI's S3 client reads) at it.
func startS3(t *testing.T) *s3test.Server {
	s := s3test.Start(t)
	s.Bucket("cfs")
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return s
}

// remoteWorkspace makes a new workspace (tempWorkspace) whose remote
// origin is s3://cfs/PREFIX on s.
func remoteWorkspace(t *testing.T, s *s3test.Server, prefix string) (home, ws, mnt string) {
	home, ws, mnt = tempWorkspace(t)
	mustCLI(t, home, "init", ws)
	mustCLI(t, home, "remote", "add", "-w", ws, "origin", "s3://cfs/"+prefix, "--endpoint", s.Endpoint)
	return home, ws, mnt
}

func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestContinuousSyncCLI: a daemon mounted with --push-every pushes what
// is written through its mount in the background; status shows the
// sync; a clone of the remote has the files, and the daemon stops
// cleanly.
func TestContinuousSyncCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := remoteWorkspace(t, s, "synced")
	pid := runDaemon(t, home, ws, mnt, "--push-every", "200ms")
	data := randomData(1<<20, 5)
	writeFile(t, filepath.Join(mnt, "file"), data)
	var st struct {
		Sync *struct {
			State    string `json:"state"`
			Root     string `json:"last_root"`
			Snapshot string `json:"snapshot"`
		} `json:"sync"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := mustCLI(t, home, "status", ws, "--json")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatal(err)
		}
		if st.Sync != nil && st.Sync.State == "idle" && st.Sync.Root != "" {
			// Pushed something: is it the file?
			clone := filepath.Join(t.TempDir(), "c.cfs")
			if r := cli(t, home, "clone", "s3://cfs/synced", clone, "--endpoint", s.Endpoint); r.code == 0 {
				if got := cli(t, home, "fs", "cat", "-w", clone, "/file"); got.stdout == string(data) {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never synced: %+v", st.Sync)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := mustCLI(t, home, "status", ws); !strings.Contains(r.stdout, "idle to origin") {
		t.Errorf("status does not show the sync:\n%s", r.stdout)
	}

	// The daemon killed with SIGKILL while it pushes: the next one
	// completes the push, and the remote stays consistent throughout.
	chunksDir := filepath.Join(s.Dir(), "cfs", "chunks")
	before := countFiles(chunksDir)
	big := randomData(48<<20, 6)
	fh, err := os.Create(filepath.Join(mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil { // durable before the kill, as POSIX promises
		t.Fatal(err)
	}
	fh.Close()
	deadline = time.Now().Add(60 * time.Second)
	for countFiles(chunksDir) < before+3 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid, 20*time.Second) {
		t.Fatalf("daemon %d survived SIGKILL", pid)
	}
	t.Logf("killed the daemon with %d of 48 new chunks uploaded", countFiles(chunksDir)-before)
	detach(t, mnt)
	// Whatever HEAD names now clones whole (the remote is consistent).
	mid := filepath.Join(t.TempDir(), "mid.cfs")
	mustCLI(t, home, "clone", "s3://cfs/synced", mid, "--endpoint", s.Endpoint)
	fsckClean(t, home, mid)
	pid = runDaemon(t, home, ws, mnt, "--push-every", "200ms")
	deadline = time.Now().Add(90 * time.Second)
	for {
		clone := filepath.Join(t.TempDir(), "c.cfs")
		if r := cli(t, home, "clone", "s3://cfs/synced", clone, "--endpoint", s.Endpoint); r.code == 0 {
			if got := cli(t, home, "fs", "cat", "-w", clone, "/big"); got.stdout == string(big) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted daemon never pushed the file; status:\n%s", cli(t, home, "status", ws).stdout)
		}
		time.Sleep(300 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if !waitGone(pid, 20*time.Second) {
		t.Fatalf("daemon %d did not stop", pid)
	}
}

// TestLazyMountCLI: mount --remote serves a pushed workspace's files at
// once, read-only, while the clone goes on in the background; once it
// is done and the mount stopped, the clone is fsck-clean with the
// pushed root.
func TestLazyMountCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := tempWorkspace(t)
	files := map[string][]byte{"a/readme": []byte("lazy\n"), "big": randomData(8<<20, 3)}
	makeStore(t, home, ws, mnt, files, "--create")
	mustCLI(t, home, "remote", "add", "-w", ws, "origin", "s3://cfs/lazy", "--endpoint", s.Endpoint)
	var push struct{ Root string }
	if err := json.Unmarshal([]byte(mustCLI(t, home, "push", "-w", ws, "--json").stdout), &push); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(filepath.Dir(ws), "lazy.cfs")
	lmnt := filepath.Join(filepath.Dir(ws), "lmnt")
	p := startMount(t, home, clone, lmnt, "--remote", "s3://cfs/lazy", "--endpoint", s.Endpoint)
	for name, want := range files {
		checkFile(t, filepath.Join(lmnt, name), want)
	}
	if err := os.WriteFile(filepath.Join(lmnt, "new"), nil, 0o644); err == nil {
		t.Errorf("created a file in a lazy mount")
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.output(), "cloned into") {
		if time.Now().After(deadline) {
			t.Fatalf("background clone never finished\n%s", p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("lazy mount exit %d\n%s", code, p.output())
	}
	fsckClean(t, home, clone)
	var snaps []struct{ Root string }
	if err := json.Unmarshal([]byte(mustCLI(t, home, "snapshot", "list", clone, "--json").stdout), &snaps); err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].Root != push.Root {
		t.Errorf("clone's snapshots %+v, want root %s", snaps, push.Root)
	}
	if _, err := os.Stat(clone + ".clone.d"); !os.IsNotExist(err) {
		t.Errorf("spool left: %v", err)
	}
}

// TestRemoteThroughDaemon: push and pull of a mounted workspace go
// through its daemon: push --json says what the offline push says; a
// pull moves the live tree (the mount shows the pulled files at once,
// even one whose old content the kernel had cached) and keeps the
// workspace's snapshots and exec records; a pull over a change made
// through the mount is refused with exit 4 naming the file, and --force
// replaces it; fsck is clean.
func TestRemoteThroughDaemon(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := remoteWorkspace(t, s, "live")
	runDaemon(t, home, ws, mnt)
	writeFile(t, filepath.Join(mnt, "shared"), []byte("version 1\n"))
	writeFile(t, filepath.Join(mnt, "big"), randomData(3<<20, 7))
	if r := mustCLI(t, home, "exec", "-w", ws, "-b", "shell", "--", "echo by exec > /by-exec"); r.code != 0 {
		t.Fatal(r)
	}
	mustCLI(t, home, "snapshot", "create", ws, "mine")
	var push struct {
		Remote, URL, Snapshot, Root string
		Chunks, Uploaded            int
	}
	r := mustCLI(t, home, "push", "-w", ws, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &push); err != nil {
		t.Fatalf("push --json: %v\n%s", err, r)
	}
	if push.Remote != "origin" || push.URL != "s3://cfs/live" || push.Uploaded != push.Chunks || push.Chunks < 3 || push.Root == "" {
		t.Errorf("push through the daemon: %+v", push)
	}
	// Another host changes the workspace.
	other := filepath.Join(filepath.Dir(ws), "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/live", other, "--endpoint", s.Endpoint)
	if got, err := os.ReadFile(filepath.Join(mnt, "shared")); err != nil || string(got) != "version 1\n" {
		t.Fatalf("read before pull: %q %v", got, err) // the kernel caches it now
	}
	mustCLIIn(t, home, "version 2 from the other host\n", "fs", "write", "-w", other, "/shared")
	mustCLIIn(t, home, "new\n", "fs", "write", "-w", other, "/from-other")
	mustCLI(t, home, "push", "-w", other)

	r = mustCLI(t, home, "pull", "-w", ws)
	if !strings.Contains(r.stdout, "verified") || !strings.Contains(r.stdout, "snapshots and exec records are kept") {
		t.Errorf("pull output: %s", r.stdout)
	}
	for name, want := range map[string]string{"shared": "version 2 from the other host\n", "from-other": "new\n", "by-exec": "by exec\n"} {
		if got, err := os.ReadFile(filepath.Join(mnt, name)); err != nil || string(got) != want {
			t.Errorf("%s through the mount after pull: %q, %v; want %q", name, got, err, want)
		}
	}
	snaps := mustCLI(t, home, "snapshot", "list", ws).stdout
	if !strings.Contains(snaps, "mine") {
		t.Errorf("snapshots after pull:\n%s", snaps)
	}
	if execs := mustCLI(t, home, "execs", "-w", ws).stdout; !strings.Contains(execs, "by-exec") {
		t.Errorf("exec records after pull:\n%s", execs)
	}

	// A change through the mount, and another push from the other host:
	// the pull is refused, naming the file, until --force.
	writeFile(t, filepath.Join(mnt, "local-only"), []byte("mine\n"))
	mustCLIIn(t, home, "version 3\n", "fs", "write", "-w", other, "/shared")
	mustCLI(t, home, "push", "-w", other)
	r = cli(t, home, "pull", "-w", ws)
	if r.code != 4 || !strings.Contains(r.stderr, "/local-only") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("pull over a local change: want exit 4 naming /local-only\n%v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(mnt, "local-only")); string(got) != "mine\n" {
		t.Errorf("a refused pull changed the mount: %q", got)
	}
	mustCLI(t, home, "pull", "-w", ws, "--force")
	if got, err := os.ReadFile(filepath.Join(mnt, "shared")); err != nil || string(got) != "version 3\n" {
		t.Errorf("shared after pull --force: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "local-only")); !os.IsNotExist(err) {
		t.Errorf("local-only after pull --force: %v", err)
	}
	// The snapshot taken before still has the local file's history.
	if got := mustCLI(t, home, "fs", "cat", "-w", ws, "--snapshot", "mine", "/shared").stdout; got != "version 1\n" {
		t.Errorf("snapshot mine's /shared: %q", got)
	}
	mustCLI(t, home, "umount", mnt)
	fsckClean(t, home, ws)
}

// mustCLIIn runs the binary with stdin and fails unless it exits 0.
func mustCLIIn(t *testing.T, home, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(cfsBin, args...)
	cmd.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("computerfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestExecSyncStatusCLI: with --push-every, an exec's result (exec
// --json) says whether what it left is on the remote: "pending" for an
// exec that changed something (the push follows), and, once the syncer
// has pushed, "pushed" with the pushed root for one that changed
// nothing.
func TestExecSyncStatusCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := remoteWorkspace(t, s, "execsync")
	runDaemon(t, home, ws, mnt, "--push-every", "1h") // pushes after execs only
	type syncOut struct {
		Remote, URL, State, Root string
		PushedRoot               string `json:"pushed_root"`
	}
	exec := func(script string) syncOut {
		t.Helper()
		var out struct{ Sync *syncOut }
		r := mustCLI(t, home, "exec", "-w", ws, "-b", "shell", "--json", "--", script)
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Sync == nil {
			t.Fatalf("exec --json: no sync (%v)\n%s", err, r.stdout)
		}
		return *out.Sync
	}
	st := exec("echo changed > /f")
	if st.State != "pending" || st.Remote != "origin" || st.URL != "s3://cfs/execsync" || st.Root == "" || st.Root == st.PushedRoot {
		t.Errorf("exec that changed a file: sync %+v, want pending", st)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := exec("true")
		if got.State == "pushed" {
			if got.PushedRoot != st.Root || got.Root != st.Root {
				t.Errorf("pushed: %+v, want root %s", got, st.Root)
			}
			break
		}
		if got.State != "pending" || time.Now().After(deadline) {
			t.Fatalf("exec after the push: %+v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHeadRollbackCLI: the HEAD object rewritten in the server's backing
// directory to an older push's: pull, push and clone refuse it with exit
// 4 saying it was rolled back (the clone through the user's book of
// HEADs seen), and --force accepts it.
func TestHeadRollbackCLI(t *testing.T) {
	s := startS3(t)
	home, ws, _ := remoteWorkspace(t, s, "rb")
	mustCLIIn(t, home, "one\n", "fs", "write", "-w", ws, "/x")
	mustCLI(t, home, "push", "-w", ws)
	headFile := filepath.Join(s.Dir(), "cfs", "rb", "HEAD")
	old, err := os.ReadFile(headFile)
	if err != nil {
		t.Fatalf("the HEAD object in versitygw's directory: %v", err)
	}
	mustCLIIn(t, home, "two\n", "fs", "write", "-w", ws, "/x")
	mustCLI(t, home, "push", "-w", ws)
	other := filepath.Join(filepath.Dir(ws), "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/rb", other, "--endpoint", s.Endpoint)
	if err := os.WriteFile(headFile, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"pull", "-w", other},
		{"push", "-w", ws},
		{"clone", "s3://cfs/rb", filepath.Join(filepath.Dir(ws), "third.cfs"), "--endpoint", s.Endpoint},
		{"mount", "--remote", "s3://cfs/rb", "--endpoint", s.Endpoint, filepath.Join(filepath.Dir(ws), "lazy.cfs"), filepath.Join(filepath.Dir(ws), "lazy")},
	} {
		if r := cli(t, home, args...); r.code != 4 || !strings.Contains(r.stderr, "rolled back") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%s over a rolled-back HEAD: want exit 4 saying so\n%v", args[0], r)
		}
	}
	mustCLI(t, home, "clone", "s3://cfs/rb", filepath.Join(filepath.Dir(ws), "third.cfs"), "--endpoint", s.Endpoint, "--force")
	mustCLI(t, home, "pull", "-w", other, "--force")
	if got := mustCLI(t, home, "fs", "cat", "-w", other, "/x").stdout; got != "one\n" {
		t.Errorf("x after pull --force of the old HEAD: %q", got)
	}
	if fuseOK() {
		// The lazy mount's --force, as clone's and pull's.
		if err := os.WriteFile(headFile, old, 0o644); err != nil {
			t.Fatal(err)
		}
		lmnt := filepath.Join(filepath.Dir(ws), "lazy")
		p := startMount(t, home, filepath.Join(filepath.Dir(ws), "lazy.cfs"), lmnt, "--remote", "s3://cfs/rb", "--endpoint", s.Endpoint, "--force", "--no-clone")
		checkFile(t, filepath.Join(lmnt, "x"), []byte("one\n"))
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Errorf("lazy mount --force exit %d\n%s", code, p.output())
		}
	}
}

// TestSnapshotRefRollbackCLI: a pushed snapshot's ref rewritten in the
// server's backing directory (to another push's ref: another root and
// generation) is refused by pull --snapshot, clone --snapshot (through
// the user's book) and a lazy mount --snapshot with exit 4 saying it
// was rolled back; --force accepts it on each.
func TestSnapshotRefRollbackCLI(t *testing.T) {
	s := startS3(t)
	home, ws, _ := remoteWorkspace(t, s, "sr")
	dir := filepath.Dir(ws)
	mustCLIIn(t, home, "one\n", "fs", "write", "-w", ws, "/x")
	mustCLI(t, home, "snapshot", "create", ws, "first")
	mustCLI(t, home, "push", "-w", ws, "--snapshot", "first")
	mustCLIIn(t, home, "two\n", "fs", "write", "-w", ws, "/x")
	mustCLI(t, home, "snapshot", "create", ws, "rel")
	mustCLI(t, home, "push", "-w", ws, "--snapshot", "rel")
	other := filepath.Join(dir, "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/sr", other, "--endpoint", s.Endpoint, "--snapshot", "first")
	mustCLI(t, home, "pull", "-w", other, "--snapshot", "rel")
	relFile := filepath.Join(s.Dir(), "cfs", "sr", "snapshots", "rel")
	first, err := os.ReadFile(filepath.Join(s.Dir(), "cfs", "sr", "snapshots", "first"))
	if err != nil {
		t.Fatalf("the snapshot ref in versitygw's directory: %v", err)
	}
	if err := os.WriteFile(relFile, first, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"pull", "-w", other, "--snapshot", "rel"},
		{"clone", "s3://cfs/sr", filepath.Join(dir, "third.cfs"), "--endpoint", s.Endpoint, "--snapshot", "rel"},
		{"mount", "--remote", "s3://cfs/sr", "--endpoint", s.Endpoint, "--snapshot", "rel", filepath.Join(dir, "lazy.cfs"), filepath.Join(dir, "lazy")},
	} {
		if r := cli(t, home, args...); r.code != 4 || !strings.Contains(r.stderr, "rolled back") || !strings.Contains(r.stderr, "snapshot rel") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%s --snapshot over a rewritten ref: want exit 4 saying so\n%v", args[0], r)
		}
	}
	mustCLI(t, home, "clone", "s3://cfs/sr", filepath.Join(dir, "third.cfs"), "--endpoint", s.Endpoint, "--snapshot", "rel", "--force")
	if got := mustCLI(t, home, "fs", "cat", "-w", filepath.Join(dir, "third.cfs"), "/x").stdout; got != "one\n" {
		t.Errorf("x after clone --force of the rewritten ref: %q", got)
	}
	mustCLI(t, home, "pull", "-w", other, "--snapshot", "rel", "--force")
	if got := mustCLI(t, home, "fs", "cat", "-w", other, "/x").stdout; got != "one\n" {
		t.Errorf("x after pull --force of the rewritten ref: %q", got)
	}
}

// TestSyncResumesAfterPullCLI: a daemon syncing with --push-every stops
// (conflict) when another host pushes; a pull through the daemon moves
// the mount to the other host's tree, and the sync starts again: the
// next change through the mount is pushed.
func TestSyncResumesAfterPullCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, mnt := remoteWorkspace(t, s, "resume")
	runDaemon(t, home, ws, mnt, "--push-every", "200ms")
	syncState := func() string {
		var st struct {
			Sync *struct {
				State string `json:"state"`
				Root  string `json:"last_root"`
			} `json:"sync"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, home, "status", ws, "--json").stdout), &st); err != nil || st.Sync == nil {
			t.Fatalf("status --json: no sync (%v)", err)
		}
		return st.Sync.State + " " + st.Sync.Root
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never %s: sync %s", what, syncState())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	clonesWith := func(name, want string) bool {
		c := filepath.Join(t.TempDir(), "c.cfs")
		if r := cli(t, home, "clone", "s3://cfs/resume", c, "--endpoint", s.Endpoint); r.code != 0 {
			return false
		}
		return cli(t, home, "fs", "cat", "-w", c, "/"+name).stdout == want
	}
	writeFile(t, filepath.Join(mnt, "a"), []byte("from the daemon\n"))
	waitFor("pushed a", func() bool { return clonesWith("a", "from the daemon\n") })

	other := filepath.Join(filepath.Dir(ws), "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/resume", other, "--endpoint", s.Endpoint)
	mustCLIIn(t, home, "from the other host\n", "fs", "write", "-w", other, "/b")
	mustCLI(t, home, "push", "-w", other)
	writeFile(t, filepath.Join(mnt, "c"), []byte("meanwhile\n"))
	waitFor("stopped", func() bool { return strings.HasPrefix(syncState(), "conflict") })

	mustCLI(t, home, "pull", "-w", ws, "--force")
	if got, err := os.ReadFile(filepath.Join(mnt, "b")); err != nil || string(got) != "from the other host\n" {
		t.Fatalf("b through the mount after pull: %q %v", got, err)
	}
	writeFile(t, filepath.Join(mnt, "d"), []byte("after the pull\n"))
	waitFor("pushed d", func() bool { return clonesWith("d", "after the pull\n") })
	if !clonesWith("b", "from the other host\n") {
		t.Error("the push after the pull lost the other host's file")
	}
}

// fuseOK says whether mounts can run here (needFUSE skips otherwise).
func fuseOK() bool {
	_, err := os.Stat("/dev/fuse")
	return os.Geteuid() == 0 && err == nil
}

// TestPullKilledDaemonCLI: the daemon killed with SIGKILL while it
// pulls (through it, live) a change of 144 MiB, at a random moment once
// every chunk is downloaded (as it puts its 64 MiB batches and applies
// the tree), three times: each time the store is fsck-clean as the kill
// left it, the next pull (offline: its open releases what the killed
// one held) completes on the pushed root, and fsck and gc find nothing
// to report, free or correct.
func TestPullKilledDaemonCLI(t *testing.T) {
	needFUSE(t)
	s := startS3(t)
	home, ws, _ := remoteWorkspace(t, s, "pk")
	dir := filepath.Dir(ws)
	mustCLIIn(t, home, "base\n", "fs", "write", "-w", ws, "/base")
	mustCLI(t, home, "push", "-w", ws)
	other := filepath.Join(dir, "other.cfs")
	mustCLI(t, home, "clone", "s3://cfs/pk", other, "--endpoint", s.Endpoint)
	for i := range 3 {
		mustCLIIn(t, home, string(randomData(48<<20, uint64(30+i))), "fs", "write", "-w", other, fmt.Sprintf("/big%d", i))
	}
	var pushed struct{ Root string }
	if err := json.Unmarshal([]byte(mustCLI(t, home, "push", "-w", other, "--json").stdout), &pushed); err != nil {
		t.Fatal(err)
	}
	hit := 0
	for round := range 3 {
		rws := filepath.Join(dir, fmt.Sprintf("r%d.cfs", round))
		for _, suffix := range []string{"", ".remotes.json"} {
			b, err := os.ReadFile(ws + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rws+suffix, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		mnt := filepath.Join(dir, fmt.Sprintf("m%d", round))
		pid := runDaemon(t, home, rws, mnt)
		pull := exec.Command(cfsBin, "pull", "-w", rws)
		pull.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
		if err := pull.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- pull.Wait() }()
		deadline := time.Now().Add(120 * time.Second)
		for countFiles(remote.SpoolDir(rws)) < 144 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		delay := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
		time.Sleep(delay)
		syscall.Kill(pid, syscall.SIGKILL)
		if !waitGone(pid, 20*time.Second) {
			t.Fatalf("daemon %d survived SIGKILL", pid)
		}
		<-done
		detach(t, mnt)
		held := false
		st, err := chunkstore.Open(rws, chunkstore.Options{ReadOnly: true, MustExist: true})
		if err != nil {
			t.Fatal(err)
		}
		st.View(func(tx *chunkstore.Tx) error { held = tx.Bucket([]byte("holds")) != nil; return nil })
		st.Close()
		if held {
			hit++
		}
		t.Logf("round %d: killed %v after the downloads; holds left: %v", round, delay.Round(time.Millisecond), held)
		fsckClean(t, home, rws)
		var rep struct{ Root string }
		if err := json.Unmarshal([]byte(mustCLI(t, home, "pull", "-w", rws, "--json").stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Root != pushed.Root {
			t.Errorf("round %d: pulled root %s, want %s", round, rep.Root, pushed.Root)
		}
		fsckClean(t, home, rws)
		var gc struct {
			ChunksFreed   int `json:"chunks_freed"`
			RefsCorrected int `json:"refs_corrected"`
			BodiesFreed   int `json:"bodies_freed"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, home, "gc", rws, "--json").stdout), &gc); err != nil {
			t.Fatal(err)
		}
		if gc.ChunksFreed+gc.RefsCorrected+gc.BodiesFreed != 0 {
			t.Errorf("round %d: gc after the next pull: %+v", round, gc)
		}
		os.RemoveAll(rws)
	}
	t.Logf("%d of 3 kills left a pull's holds", hit)
}
