package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// randomData returns n reproducible incompressible bytes.
func randomData(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 1})
	r.Read(b)
	return b
}

// textData returns n bytes of numbered lines of text: every chunk differs,
// but all compress well.
func textData(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %08d: the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs\n", i)
	}
	return b.Bytes()[:n]
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (sha256 %x), want %d bytes (sha256 %x)", path, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func TestUsage(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"mount", "--help"}, {"umount", "--help"}, {"fsck", "--help"},
		{"stats", "-h"}, {"gc", "--help"}, {"limit", "-help"}, {"status", "--help"},
	} {
		r := cli(t, home, args...)
		out := r.stdout + r.stderr
		if r.code != 0 || !strings.Contains(out, "Usage") {
			t.Errorf("computerfs %s: want exit 0 and usage, got %v", strings.Join(args, " "), r)
		}
		if len(args) == 2 && !strings.Contains(out, "computerfs "+args[0]) {
			t.Errorf("computerfs %s: usage does not name the command: %v", strings.Join(args, " "), r)
		}
	}
	r := cli(t, home, "mount", "--help")
	for _, opt := range []string{"-daemon", "-limit", "-allow-other", "-metrics", "-metrics-any-address", "-pprof", "tell file paths"} {
		if !strings.Contains(r.stderr+r.stdout, opt) {
			t.Errorf("mount --help does not list %s: %v", opt, r)
		}
	}
	r = cli(t, home, "fsck", "--help")
	for _, opt := range []string{"-repair", "-json"} {
		if !strings.Contains(r.stderr+r.stdout, opt) {
			t.Errorf("fsck --help does not list %s: %v", opt, r)
		}
	}

	// No command: usage, exit 2.
	r = cli(t, home)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "Usage") {
		t.Errorf("computerfs with no command: want exit 2 and usage, got %v", r)
	}
	r = cli(t, home, "frobnicate")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) || !strings.Contains(r.stderr, "fsck") {
		t.Errorf("unknown command: want exit 2 naming it and the commands, got %v", r)
	}

	// Bad arguments: exit 2 with the command's usage.
	for _, args := range [][]string{
		{"fsck"}, {"fsck", "a", "b"}, {"stats"}, {"gc"}, {"gc", "a", "b"},
		{"umount"}, {"umount", "a", "b"}, {"limit"}, {"limit", "a", "1G", "c"},
		{"mount", "a", "b", "c"}, {"mount", "--bogus"}, {"fsck", "--nope", "x"},
		{"stats", "--json=maybe", "x"},
	} {
		r := cli(t, home, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "Usage: computerfs "+args[0]) {
			t.Errorf("computerfs %s: want exit 2 and usage, got %v", strings.Join(args, " "), r)
		}
	}

	// Bad values: a non-zero exit and a message saying what is wrong.
	dir := t.TempDir()
	r = cli(t, home, "mount", "--limit", "lots", filepath.Join(dir, "ws.cfs"), filepath.Join(dir, "mnt"))
	if r.code == 0 || !strings.Contains(r.stderr, `invalid size "lots"`) {
		t.Errorf("mount --limit lots: %v", r)
	}
	if isMounted(filepath.Join(dir, "mnt")) {
		detach(t, filepath.Join(dir, "mnt"))
		t.Errorf("mount --limit lots mounted anyway")
	}
	r = cli(t, home, "mount", "--allow-other", "maybe", filepath.Join(dir, "ws.cfs"), filepath.Join(dir, "mnt"))
	if r.code == 0 || !strings.Contains(r.stderr, "--allow-other") {
		t.Errorf("mount --allow-other maybe: %v", r)
	}
	if isMounted(filepath.Join(dir, "mnt")) {
		detach(t, filepath.Join(dir, "mnt"))
		t.Errorf("mount --allow-other maybe mounted anyway")
	}
	r = cli(t, home, "umount", filepath.Join(dir, "not-mounted"))
	if r.code == 0 || !strings.Contains(r.stderr, "not-mounted") {
		t.Errorf("umount of a path that is not mounted: %v", r)
	}
}

// TestMountForeground mounts in the foreground, writes through the mount,
// stops the daemon with SIGINT or SIGTERM and remounts to find the files.
func TestMountForeground(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	files := map[string][]byte{}
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGINT} {
		p := startMount(t, home, ws, mnt)
		for name, data := range files {
			checkFile(t, filepath.Join(mnt, name), data)
		}
		// New files of every size class, in a new directory.
		dir := fmt.Sprintf("round%d", i)
		if err := os.Mkdir(filepath.Join(mnt, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for j, n := range []int{0, 1, 4095, 1 << 20, 3<<20 + 17} {
			name := fmt.Sprintf("%s/f%d", dir, j)
			data := randomData(n, uint64(i*10+j))
			writeFile(t, filepath.Join(mnt, name), data)
			files[name] = data
		}
		if err := os.Symlink("f1", filepath.Join(mnt, dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("after %v: exit %d, want 0\n%s", sig, code, p.output())
		}
		if isMounted(mnt) {
			t.Fatalf("after %v the daemon exited but %s is still mounted", sig, mnt)
		}
		if n := strings.Count(p.stdout.String(), "mounted at"); n != 1 {
			t.Errorf("stdout has %d \"mounted at\" lines, want 1:\n%s", n, p.stdout.String())
		}
		if !strings.Contains(p.stdout.String(), ws) || !strings.Contains(p.stdout.String(), mnt) {
			t.Errorf("mounted line does not name workspace and mountpoint:\n%s", p.stdout.String())
		}
		if !strings.Contains(p.stderr.String(), "workspace closed") {
			t.Errorf("after %v: no \"workspace closed\" in the log:\n%s", sig, p.stderr.String())
		}
		r := fsckClean(t, home, ws)
		if !strings.Contains(r.stdout, fmt.Sprintf("%d inodes", 1+len(files)+2*(i+1))) {
			t.Errorf("fsck counts: %v", r)
		}
	}
	// Once more, checking the symlinks, then stopped by umount.
	p := startMount(t, home, ws, mnt)
	for name, data := range files {
		checkFile(t, filepath.Join(mnt, name), data)
	}
	if target, err := os.Readlink(filepath.Join(mnt, "round2/link")); err != nil || target != "f1" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	mustCLI(t, home, "umount", mnt)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("after umount: exit %d\n%s", code, p.output())
	}
	if !strings.Contains(p.stderr.String(), "unmounted from outside") {
		t.Errorf("no \"unmounted from outside\" in the log:\n%s", p.stderr.String())
	}
	fsckClean(t, home, ws)
}

// TestMountDaemon: --daemon returns with the mount live; umount ends it.
func TestMountDaemon(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	pid := runDaemon(t, home, ws, mnt)
	if !isMounted(mnt) {
		t.Fatalf("mount --daemon returned but %s is not mounted", mnt)
	}
	// Usable at once.
	data := randomData(2<<20+5, 7)
	writeFile(t, filepath.Join(mnt, "right-away"), data)
	checkFile(t, filepath.Join(mnt, "right-away"), data)
	if !processAlive(pid) {
		t.Fatalf("daemon %d is not running", pid)
	}
	if sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0); int(sid) != pid {
		t.Errorf("daemon %d runs in session %d, want its own", pid, sid)
	}
	mustCLI(t, home, "umount", mnt)
	if !waitGone(pid, 30*time.Second) {
		t.Fatalf("daemon %d still running 30s after umount", pid)
	}
	if isMounted(mnt) {
		t.Fatalf("%s still mounted after umount", mnt)
	}
	log, err := os.ReadFile(ws + ".log") // one log per workspace, beside it

	if err != nil {
		t.Fatalf("daemon log: %v", err)
	}
	for _, want := range []string{"mounted at", "unmounted from outside", "workspace closed"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("daemon log lacks %q:\n%s", want, log)
		}
	}
	fsckClean(t, home, ws)

	// The data is there for the next mount, and a daemon stops on SIGTERM.
	pid = runDaemon(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "right-away"), data)
	syscall.Kill(pid, syscall.SIGTERM)
	if !waitGone(pid, 30*time.Second) {
		t.Fatalf("daemon %d still running 30s after SIGTERM", pid)
	}
	if isMounted(mnt) {
		t.Fatalf("%s still mounted after the daemon's SIGTERM", mnt)
	}
	fsckClean(t, home, ws)
}

// TestMountInUse: a workspace serves one daemon at a time.
func TestMountInUse(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	mnt2 := filepath.Join(filepath.Dir(mnt), "mnt2")
	pid := runDaemon(t, home, ws, mnt)
	t.Cleanup(func() { detach(t, mnt2) })

	r := cli(t, home, "mount", ws, mnt2)
	if r.code == 0 || !strings.Contains(r.stderr, "in use") || !strings.Contains(r.stderr, ws) {
		t.Errorf("second foreground mount: want failure saying the workspace is in use, got %v", r)
	}
	if r.took > 3*time.Second {
		t.Errorf("second mount took %v to fail", r.took)
	}
	r = cli(t, home, "mount", ws, mnt2, "--daemon")
	if r.code == 0 || !strings.Contains(r.stderr, "in use") {
		t.Errorf("second daemon mount: want failure saying the workspace is in use, got %v", r)
	}
	if r.took > 3*time.Second {
		t.Errorf("second daemon mount took %v to fail", r.took)
	}
	if isMounted(mnt2) {
		t.Errorf("second mount mounted %s", mnt2)
	}
	// fsck, stats, gc and limit work through the daemon
	// (TestMaintenanceLive); repairing needs the store closed.
	r = cli(t, home, "fsck", "--repair", ws)
	if r.code == 0 || !strings.Contains(r.stderr, "in use") {
		t.Errorf("fsck --repair of a mounted workspace: want failure saying it is in use, got %v", r)
	}
	// The first mount is unharmed.
	writeFile(t, filepath.Join(mnt, "still-works"), []byte("yes"))
	checkFile(t, filepath.Join(mnt, "still-works"), []byte("yes"))
	mustCLI(t, home, "umount", mnt)
	if !waitGone(pid, 30*time.Second) {
		t.Fatalf("daemon %d still running after umount", pid)
	}
	fsckClean(t, home, ws)
}

// makeStore fills a workspace through a foreground mount and unmounts it.
func makeStore(t *testing.T, home, ws, mnt string, files map[string][]byte, args ...string) {
	t.Helper()
	p := startMount(t, home, ws, mnt, args...)
	for name, data := range files {
		if dir := filepath.Dir(name); dir != "." {
			if err := os.MkdirAll(filepath.Join(mnt, dir), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(mnt, name), data)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("mount exit %d\n%s", code, p.output())
	}
}

// updateStore opens a closed workspace directly to damage it.
func updateStore(t *testing.T, ws string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	st, err := chunkstore.Open(ws, chunkstore.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.DB().Update(fn); err != nil {
		t.Fatal(err)
	}
}

// chunkCountsJSON is the chunks object of fsck's and stats' JSON.
type chunkCountsJSON struct {
	Chunks       uint64 `json:"chunks"`
	LogicalBytes uint64 `json:"logical_bytes"`
	UniqueBytes  uint64 `json:"unique_bytes"`
	StoredBytes  uint64 `json:"stored_bytes"`
}

type fsckJSON struct {
	Inodes     int             `json:"inodes"`
	Dirents    int             `json:"dirents"`
	FileChunks int             `json:"file_chunks"`
	Chunks     chunkCountsJSON `json:"chunks"`
	Problems   []string        `json:"problems"`
	Repaired   []string        `json:"repaired"`
	Notes      []string        `json:"notes"`
}

func fsckReport(t *testing.T, home, ws string, args ...string) (fsckJSON, result) {
	t.Helper()
	r := cli(t, home, append([]string{"fsck", "--json"}, append(args, ws)...)...)
	var rep fsckJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("fsck --json output does not parse: %v\n%v", err, r)
	}
	return rep, r
}

func TestFsck(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	big := randomData(3<<20, 1) // three raw chunks
	files := map[string][]byte{
		"big":         big,
		"small":       []byte("hello, world\n"),
		"dir/victim":  randomData(5000, 2),
		"dir/another": textData(100000),
	}
	makeStore(t, home, ws, mnt, files)

	r := fsckClean(t, home, ws)
	if !strings.Contains(r.stdout, "6 inodes, 5 entries, 6 chunk references, 6 chunks") {
		t.Errorf("fsck counts: %v", r)
	}
	rep, r := fsckReport(t, home, ws)
	if r.code != 0 || len(rep.Problems) != 0 || rep.Inodes != 6 || rep.Dirents != 5 || rep.FileChunks != 6 || rep.Chunks.Chunks != 6 {
		t.Errorf("fsck --json of a clean store: %+v\n%v", rep, r)
	}

	// Damage 1: flip a byte in the body of one of big's chunks.
	var damaged string
	updateStore(t, ws, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("chunks"))
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			v := chunkstore.BodyValue(b, k)
			if v[0] == chunkstore.CodecRaw && len(v) == 37+1<<20 {
				nv := bytes.Clone(v)
				nv[37+12345] ^= 0x40
				damaged = hex.EncodeToString(nv[5:11])
				return chunkstore.PutBodyValue(b, bytes.Clone(k), nv)
			}
		}
		return fmt.Errorf("no raw 1 MiB chunk body found")
	})
	r = cli(t, home, "fsck", ws)
	if r.code == 0 || !strings.Contains(r.stdout, "damage: chunk "+damaged+": hash mismatch") || strings.Contains(r.stdout, "\nclean") {
		t.Errorf("fsck of a flipped chunk byte: want a hash mismatch of %s, got %v", damaged, r)
	}
	if !strings.Contains(r.stderr, "--repair") {
		t.Errorf("fsck does not suggest --repair: %v", r)
	}
	rep, r = fsckReport(t, home, ws)
	if r.code == 0 || len(rep.Problems) == 0 || !strings.Contains(strings.Join(rep.Problems, "\n"), damaged) {
		t.Errorf("fsck --json of a flipped chunk byte: %+v\n%v", rep, r)
	}
	// The mount reports the damage as EIO, not as wrong data.
	p := startMount(t, home, ws, mnt)
	if got, err := os.ReadFile(filepath.Join(mnt, "big")); err == nil {
		t.Errorf("reading a damaged file succeeded (%d bytes, equal: %v)", len(got), bytes.Equal(got, big))
	} else if !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("reading a damaged file: %v, want EIO", err)
	}
	checkFile(t, filepath.Join(mnt, "dir/victim"), files["dir/victim"])
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)

	r = cli(t, home, "fsck", "--repair", ws)
	if !strings.Contains(r.stdout, "repaired: deleted damaged chunk "+damaged) {
		t.Errorf("fsck --repair: %v", r)
	}
	fsckClean(t, home, ws)

	// Damage 2: delete the inode an entry names.
	var victim uint64
	updateStore(t, ws, func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("dirents")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if strings.HasSuffix(string(k), "victim") {
				victim = binary.BigEndian.Uint64(v)
				return tx.Bucket([]byte("inodes")).Delete(v[:8])
			}
		}
		return fmt.Errorf("no entry victim")
	})
	r = cli(t, home, "fsck", ws)
	if r.code == 0 || !strings.Contains(r.stdout, `damage: entry "victim" in directory`) || !strings.Contains(r.stdout, fmt.Sprintf("names missing inode %d", victim)) {
		t.Errorf("fsck of a missing inode: %v", r)
	}
	rep, r = fsckReport(t, home, ws, "--repair")
	if len(rep.Repaired) == 0 || len(rep.Problems) == 0 {
		t.Errorf("fsck --json --repair: %+v\n%v", rep, r)
	}
	fsckClean(t, home, ws)

	// Damage 3: a wrong link count, repaired in place.
	updateStore(t, ws, func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("dirents")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if strings.HasSuffix(string(k), "small") {
				// Sealed again, as a bug (not the disk) would write it.
				b := sealed.In(tx, []byte("inodes"))
				rec, err := b.Get(v[:8])
				if err != nil {
					return err
				}
				rec = bytes.Clone(rec)
				binary.BigEndian.PutUint32(rec[5:], 7) // nlink
				return b.Put(bytes.Clone(v[:8]), rec)
			}
		}
		return fmt.Errorf("no entry small")
	})
	r = cli(t, home, "fsck", ws)
	if r.code == 0 || !strings.Contains(r.stdout, "has link count 7, but 1 names") {
		t.Errorf("fsck of a wrong link count: %v", r)
	}
	r = cli(t, home, "fsck", "--repair", ws)
	if !strings.Contains(r.stdout, "repaired: set link count of inode") {
		t.Errorf("fsck --repair of a link count: %v", r)
	}
	fsckClean(t, home, ws)

	// What was not damaged is intact.
	p = startMount(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "small"), files["small"])
	checkFile(t, filepath.Join(mnt, "dir/another"), files["dir/another"])
	if _, err := os.Stat(filepath.Join(mnt, "dir/victim")); !os.IsNotExist(err) {
		t.Errorf("dir/victim after repair: %v, want it gone", err)
	}
	// The file that lost a chunk is not left in place reading zeros:
	// it is in /lost+found, under its inode number.
	if _, err := os.Stat(filepath.Join(mnt, "big")); !os.IsNotExist(err) {
		t.Errorf("big after repair: %v, want it moved to /lost+found", err)
	}
	lost, _ := filepath.Glob(filepath.Join(mnt, "lost+found", "#*"))
	var got []byte
	for _, l := range lost {
		if st, err := os.Stat(l); err == nil && st.Size() == int64(len(big)) {
			got, err = os.ReadFile(l)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(got) != len(big) {
		t.Fatalf("big after repair: not in /lost+found (%v)", lost)
	}
	// One chunk reads as zeros now; the other two are intact.
	var zero, same int
	for i := 0; i < 3; i++ {
		c := got[i<<20 : (i+1)<<20]
		switch {
		case bytes.Equal(c, big[i<<20:(i+1)<<20]):
			same++
		case bytes.Count(c, []byte{0}) == len(c):
			zero++
		}
	}
	if zero != 1 || same != 2 {
		t.Errorf("big after repair: %d chunks intact, %d zero; want 2 and 1", same, zero)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.output())
	}
	fsckClean(t, home, ws)
}

type statsJSON struct {
	FormatVersion int             `json:"format_version"`
	ChunkSize     int             `json:"chunk_size"`
	LimitBytes    uint64          `json:"limit_bytes"`
	Inodes        int             `json:"inodes"`
	FileBytes     uint64          `json:"file_bytes"`
	Chunks        chunkCountsJSON `json:"chunks"`
}

func stats(t *testing.T, home, ws string) (statsJSON, string) {
	t.Helper()
	r := mustCLI(t, home, "stats", "--json", ws)
	var s statsJSON
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("stats --json does not parse: %v\n%v", err, r)
	}
	return s, mustCLI(t, home, "stats", ws).stdout
}

func TestStats(t *testing.T) {
	needFUSE(t)
	const size = 4 << 20
	ratio := regexp.MustCompile(`after (deduplication|compression), ([0-9.]+)x`)
	ratios := func(t *testing.T, out string) (dedup, comp float64) {
		m := ratio.FindAllStringSubmatch(out, -1)
		if len(m) != 2 {
			t.Fatalf("stats output has no ratios:\n%s", out)
		}
		dedup, _ = strconv.ParseFloat(m[0][2], 64)
		comp, _ = strconv.ParseFloat(m[1][2], 64)
		return
	}

	t.Run("dedup", func(t *testing.T) {
		home, ws, mnt := tempWorkspace(t)
		data := randomData(size, 3)
		makeStore(t, home, ws, mnt, map[string][]byte{"a": data, "sub/b": data})
		s, out := stats(t, home, ws)
		c := s.Chunks
		if s.FormatVersion != chunkstore.FormatVersion || s.ChunkSize != 1<<20 || s.LimitBytes != 10<<30 || s.Inodes != 4 || s.FileBytes != 2*size {
			t.Errorf("stats: %+v", s)
		}
		if c.Chunks != 4 || c.LogicalBytes != 2*size || c.UniqueBytes != size || c.StoredBytes != size {
			t.Errorf("stats chunks of two identical random files: %+v", c)
		}
		dedup, comp := ratios(t, out)
		if dedup != 2 || comp != 1 {
			t.Errorf("dedup %.2fx, compression %.2fx; want 2 and 1:\n%s", dedup, comp, out)
		}
		for _, want := range []string{"workspace      " + ws, "chunks         4", "logical bytes  8.0 MiB", "unique bytes   4.0 MiB", "file size      8.0 MiB", "limit          10.0 GiB (4.0 MiB used"} {
			if !strings.Contains(out, want) {
				t.Errorf("stats output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("compression", func(t *testing.T) {
		home, ws, mnt := tempWorkspace(t)
		data := textData(size)
		makeStore(t, home, ws, mnt, map[string][]byte{"text": data})
		s, out := stats(t, home, ws)
		c := s.Chunks
		if c.Chunks != 4 || c.LogicalBytes != size || c.UniqueBytes != size || c.StoredBytes == 0 || c.StoredBytes > size/2 {
			t.Errorf("stats chunks of a text file: %+v", c)
		}
		dedup, comp := ratios(t, out)
		if dedup != 1 || comp <= 2 || math.Abs(comp-float64(c.UniqueBytes)/float64(c.StoredBytes)) > 0.01 {
			t.Errorf("dedup %.2fx, compression %.2fx; want 1 and > 2:\n%s", dedup, comp, out)
		}
	})
	t.Run("empty", func(t *testing.T) {
		home, ws, mnt := tempWorkspace(t)
		makeStore(t, home, ws, mnt, nil)
		s, out := stats(t, home, ws)
		if s.Inodes != 1 || s.Chunks.Chunks != 0 || s.FileBytes != 0 {
			t.Errorf("stats of an empty workspace: %+v", s)
		}
		if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("stats of an empty workspace:\n%s", out)
		}
	})
}

func TestGC(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	makeStore(t, home, ws, mnt, map[string][]byte{"f": randomData(1<<20+10, 4)})
	r := mustCLI(t, home, "gc", ws)
	if !strings.Contains(r.stdout, "freed 0 unreferenced chunks (0 B), 0 unreachable bodies (0 B); corrected 0 reference counts") {
		t.Errorf("gc of a clean store: %v", r)
	}
	// A chunk no file refers to, as a crash between commits of an older
	// format might leave.
	st, err := chunkstore.Open(ws, chunkstore.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	stray := randomData(100000, 5)
	err = st.Update(func(tx *chunkstore.Tx) error {
		p := chunkstore.Prepare(stray, nil)
		_, err := tx.Put(&p)
		return err
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	r = cli(t, home, "fsck", ws)
	if r.code == 0 || !strings.Contains(r.stdout, "has reference count 1, but 0 references") {
		t.Errorf("fsck of an unreferenced chunk: %v", r)
	}
	r = mustCLI(t, home, "gc", ws)
	if !strings.Contains(r.stdout, "freed 1 unreferenced chunks (97.7 KiB)") {
		t.Errorf("gc of an unreferenced chunk: %v", r)
	}
	fsckClean(t, home, ws)
	r = mustCLI(t, home, "gc", ws)
	if !strings.Contains(r.stdout, "freed 0 unreferenced chunks") {
		t.Errorf("second gc: %v", r)
	}
	s, _ := stats(t, home, ws)
	if s.Chunks.Chunks != 2 || s.Chunks.UniqueBytes != 1<<20+10 {
		t.Errorf("stats after gc: %+v", s)
	}
}

func statfsBytes(t *testing.T, mnt string) (total, free uint64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatalf("statfs %s: %v", mnt, err)
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize)
}

func TestLimit(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	makeStore(t, home, ws, mnt, map[string][]byte{"f": randomData(2<<20, 6)})
	r := mustCLI(t, home, "limit", ws)
	if strings.TrimSpace(r.stdout) != "limit 10.0 GiB, used 2.0 MiB" {
		t.Errorf("limit: %v", r)
	}
	r = mustCLI(t, home, "limit", ws, "64M")
	if strings.TrimSpace(r.stdout) != "limit 64.0 MiB, used 2.0 MiB" {
		t.Errorf("limit 64M: %v", r)
	}
	r = mustCLI(t, home, "limit", ws)
	if strings.TrimSpace(r.stdout) != "limit 64.0 MiB, used 2.0 MiB" {
		t.Errorf("limit after setting it: %v", r)
	}
	r = cli(t, home, "limit", ws, "lots")
	if r.code == 0 || !strings.Contains(r.stderr, "invalid size") {
		t.Errorf("limit lots: %v", r)
	}
	// Below what is stored (0 included): refused, and the limit stays.
	for _, small := range []string{"0", "1M"} {
		r = cli(t, home, "limit", ws, small)
		if r.code == 0 || !strings.Contains(r.stderr, "below the 2.0 MiB the workspace already stores") {
			t.Errorf("limit %s: %v", small, r)
		}
	}
	if r = mustCLI(t, home, "limit", ws); strings.TrimSpace(r.stdout) != "limit 64.0 MiB, used 2.0 MiB" {
		t.Errorf("limit after refusals: %v", r)
	}
	fsckClean(t, home, ws)

	p := startMount(t, home, ws, mnt)
	total, free := statfsBytes(t, mnt)
	if total != 64<<20 || free != 62<<20 {
		t.Errorf("statfs: %d bytes, %d free; want 64 MiB, 62 MiB", total, free)
	}
	if df, err := exec.LookPath("df"); err == nil {
		out, err := exec.Command(df, "-B1", "--output=size", mnt).CombinedOutput()
		if err != nil || !strings.Contains(string(out), strconv.Itoa(64<<20)) {
			t.Errorf("df -B1 %s: %v\n%s", mnt, err, out)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)

	// mount --limit changes the limit of an existing workspace.
	p = startMount(t, home, ws, mnt, "--limit", "1G")
	if total, _ := statfsBytes(t, mnt); total != 1<<30 {
		t.Errorf("statfs after mount --limit 1G: %d bytes", total)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)
	r = mustCLI(t, home, "limit", ws)
	if strings.TrimSpace(r.stdout) != "limit 1.0 GiB, used 2.0 MiB" {
		t.Errorf("limit after mount --limit 1G: %v", r)
	}
	fsckClean(t, home, ws)
}

// TestLimitENOSPC fills a workspace past its limit.
func TestLimitENOSPC(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	p := startMount(t, home, ws, mnt, "--limit", "16M")
	if total, _ := statfsBytes(t, mnt); total != 16<<20 {
		t.Errorf("statfs: %d bytes, want 16 MiB", total)
	}
	keep := randomData(3<<20+100, 8)
	writeFile(t, filepath.Join(mnt, "keep"), keep)
	out, err := exec.Command("dd", "if=/dev/urandom", "of="+filepath.Join(mnt, "big"), "bs=1M", "count=32", "conv=fsync").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left on device") {
		t.Errorf("dd of 32 MiB into a 16 MiB workspace: %v\n%s", err, out)
	}
	checkFile(t, filepath.Join(mnt, "keep"), keep)
	if st, err := os.Stat(filepath.Join(mnt, "big")); err != nil || st.Size() > 16<<20 {
		t.Errorf("big: %v, %v", st, err)
	}
	// Deleting frees the space again.
	if err := os.Remove(filepath.Join(mnt, "big")); err != nil {
		t.Fatal(err)
	}
	more := randomData(8<<20, 9)
	var werr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if werr = os.WriteFile(filepath.Join(mnt, "more"), more, 0o644); werr == nil {
			break
		}
	}
	if werr != nil {
		t.Errorf("writing 8 MiB after freeing space: %v", werr)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.output())
	}
	fsckClean(t, home, ws)
	p = startMount(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "keep"), keep)
	if werr == nil {
		checkFile(t, filepath.Join(mnt, "more"), more)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)
	fsckClean(t, home, ws)
}

// TestBadStore: files that are not (whole) workspaces are refused with a
// message naming them, never with a crash.
func TestBadStore(t *testing.T) {
	needFUSE(t)
	home, good, mnt := tempWorkspace(t)
	makeStore(t, home, good, mnt, map[string][]byte{"a": randomData(6<<20, 10), "b": []byte("b")})
	real, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := map[string]func(path string) error{
		"head5000": func(p string) error { return os.WriteFile(p, real[:5000], 0o600) },
		"half":     func(p string) error { return os.WriteFile(p, real[:3<<20], 0o600) },
		"random":   func(p string) error { return os.WriteFile(p, randomData(10<<10, 11), 0o600) },
		"text":     func(p string) error { return os.WriteFile(p, textData(20000), 0o600) },
		"bigtext":  func(p string) error { return os.WriteFile(p, textData(1<<20), 0o600) },
		"dir":      func(p string) error { return os.Mkdir(p, 0o755) },
		"empty":    func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"missing":  func(p string) error { return nil },
		"bbolt": func(p string) error {
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				return err
			}
			db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("something"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
			return db.Close()
		},
		"newer": func(p string) error {
			if err := os.WriteFile(p, real, 0o600); err != nil {
				return err
			}
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				return err
			}
			db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("meta")).Put([]byte("format"), binary.BigEndian.AppendUint32(nil, 99))
			})
			return db.Close()
		},
	}
	wantMsg := map[string]string{
		"head5000": "truncated", "half": "truncated", "random": "not a computerfs workspace",
		"text": "not a computerfs workspace", "bigtext": "not a computerfs workspace",
		"dir": "is a directory", "empty": "no computerfs workspace at " + filepath.Join(dir, "empty.cfs") + " (the file is empty)",
		"missing": "no computerfs workspace at " + filepath.Join(dir, "missing.cfs") + " (no such file)",
		"bbolt":   "not a computerfs workspace", "newer": "newer computerfs",
	}
	for name, mk := range bad {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".cfs")
			if err := mk(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			cmds := [][]string{{"fsck", path}, {"fsck", "--repair", path}, {"fsck", "--json", path}, {"stats", path}, {"stats", "--json", path}, {"gc", path}, {"limit", path}, {"limit", path, "1G"}}
			// Nothing but init creates a workspace unasked, and no
			// command takes one of these for one.
			mnt := filepath.Join(dir, name+".mnt")
			cmds = append(cmds, []string{"mount", path, mnt}, []string{"mount", path, mnt, "--daemon"}, []string{"serve", path},
				[]string{"fs", "cat", "-w", path, "/a"}, []string{"fs", "write", "-w", path, "/a"}, []string{"exec", "-w", path, "--", "true"},
				[]string{"backends", "-w", path}, []string{"execs", "-w", path}, []string{"undo", "-w", path},
				[]string{"snapshot", "list", path}, []string{"snapshot", "create", path, "s"}, []string{"scrub", path})
			switch name {
			case "empty", "dir":
				// --create makes a missing workspace, and overwrites nothing.
				cmds = append(cmds, []string{"mount", path, mnt, "--create"}, []string{"serve", path, "--create"}, []string{"status", path})
			case "missing":
				cmds = append(cmds, []string{"status", path})
			}
			for _, args := range cmds {
				r := cli(t, home, args...)
				if r.code == 0 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, wantMsg[name]) {
					t.Errorf("computerfs %s: want failure naming %s and saying %q, got %v", strings.Join(args, " "), path, wantMsg[name], r)
				}
				if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 && args[0] != "mount" && args[0] != "serve" {
					t.Errorf("computerfs %s: more than one line of error:\n%s", strings.Join(args, " "), r.stderr)
				}
			}
			if m := filepath.Join(dir, name+".mnt"); isMounted(m) {
				detach(t, m)
				t.Errorf("mount of a bad store mounted")
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("the tools changed the bad file (%d bytes, now %d)", len(before), len(after))
			}
		})
	}
	fsckClean(t, home, good)
}

// TestMountSignalRightAway signals the daemon the moment it reports the
// mount live: the signal must unmount cleanly, not kill the process with
// the mount left behind.
func TestMountSignalRightAway(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	for i := range 6 {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		p := startMount(t, home, ws, mnt)
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("%v right after mounting: exit %d, want 0\n%s", sig, code, p.output())
		}
		if isMounted(mnt) {
			t.Fatalf("%v right after mounting left %s mounted", sig, mnt)
		}
	}
	fsckClean(t, home, ws)
}

// TestMountBusy: umount refuses a mount with an open file; SIGTERM detaches
// it at once, and the daemon exits, keeping the data, once the file closes.
func TestMountBusy(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	p := startMount(t, home, ws, mnt)
	f, err := os.Create(filepath.Join(mnt, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("before ")); err != nil {
		t.Fatal(err)
	}
	r := cli(t, home, "umount", mnt)
	if r.code == 0 || !strings.Contains(r.stderr, "busy") {
		t.Errorf("umount of a busy mount: %v", r)
	}
	if !isMounted(mnt) {
		t.Fatalf("umount of a busy mount unmounted it")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); isMounted(mnt); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGTERM did not detach a busy mount\n%s", p.output())
		}
	}
	select {
	case <-p.exited:
		t.Fatalf("daemon exited with a file still open\n%s", p.output())
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := f.Write([]byte("after")); err != nil {
		t.Errorf("write to a file open across the detach: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.output())
	}
	fsckClean(t, home, ws)
	p = startMount(t, home, ws, mnt)
	checkFile(t, filepath.Join(mnt, "held"), []byte("before after"))
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t, 30*time.Second)
	fsckClean(t, home, ws)
}

// mountOptionsOf returns the mount options of mnt from mountinfo (both the
// per-mount and the superblock ones).
func mountOptionsOf(t *testing.T, mnt string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == mnt {
			return line
		}
	}
	t.Fatalf("%s is not in mountinfo", mnt)
	return ""
}

// The mount serves its owner alone unless --allow-other yes; then the
// kernel checks permissions for everyone.
func TestMountAllowOther(t *testing.T) {
	needFUSE(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv (util-linux)")
	}
	for _, tc := range []struct {
		name        string
		args        []string
		wantOptions bool // allow_other and default_permissions
	}{
		{name: "default"},
		{name: "auto", args: []string{"--allow-other", "auto"}},
		{name: "yes", args: []string{"--allow-other", "yes"}, wantOptions: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws, mnt := tempWorkspace(t)
			startMount(t, home, ws, mnt, tc.args...)
			os.WriteFile(filepath.Join(mnt, "public"), []byte("for all\n"), 0o644)
			os.WriteFile(filepath.Join(mnt, "private"), []byte("mine\n"), 0o600)
			line := mountOptionsOf(t, mnt)
			if has := strings.Contains(line, "allow_other") && strings.Contains(line, "default_permissions"); has != tc.wantOptions {
				t.Errorf("allow_other and default_permissions: %v, want %v: %s", has, tc.wantOptions, line)
			}
			asNobody := func(args ...string) (string, error) {
				out, err := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...).CombinedOutput()
				return string(out), err
			}
			// The test's own directories above the mount (made 0700 by
			// t.TempDir) must let nobody through; nothing above them is
			// touched.
			for d := filepath.Dir(mnt); len(d) > len(testRoot(t, mnt)); d = filepath.Dir(d) {
				os.Chmod(d, 0o755)
			}
			os.Chmod(testRoot(t, mnt), 0o755)
			out, err := asNobody("cat", filepath.Join(mnt, "public"))
			if tc.wantOptions {
				if err != nil || out != "for all\n" {
					t.Errorf("nobody reading a 0644 file: %v %q", err, out)
				}
				if out, err := asNobody("cat", filepath.Join(mnt, "private")); err == nil || !strings.Contains(out, "Permission denied") {
					t.Errorf("nobody reading a 0600 file of root's: %v %q", err, out)
				}
			} else if err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("nobody on an owner-only mount: %v %q", err, out)
			}
		})
	}
}

// testRoot is the directory t.TempDir made for this test (the parent of
// its numbered directory), which holds mnt.
func testRoot(t *testing.T, mnt string) string {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	rel, err := filepath.Rel(tmp, mnt)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is not under %s", mnt, tmp)
	}
	first := strings.Split(rel, string(filepath.Separator))[0]
	if first == "" || first == "." {
		t.Fatalf("%s has no test directory under %s", mnt, tmp)
	}
	return filepath.Join(tmp, first)
}
