package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
)

const pullWorkerEnv = "COMPUTERFS_PULL_WORKER"

// pullWorker is TestPullKilled's pulling process: it pulls origin into
// the workspace $COMPUTERFS_PULL_WORKER from the server of
// $COMPUTERFS_PULL_ENDPOINT, putting one chunk per batch and saying on
// stdout where it is ("ready", "download N", "batch N"), until the test
// kills it.
func pullWorker(ws string) {
	ctx := context.Background()
	loc, err := ParseURL(os.Getenv("COMPUTERFS_PULL_URL"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	c, err := NewClient(ctx, loc, ClientOptions{Endpoint: os.Getenv("COMPUTERFS_PULL_ENDPOINT"), Region: os.Getenv("AWS_REGION"),
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""), Concurrency: 2})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	_, err = PullFS(ctx, f, ws, c, PullOptions{Remote: "origin",
		Progress: func(p Progress) { fmt.Printf("download %d\n", p.Done) },
		Apply: func(ctx context.Context, recs []fs.TreeRecord, chunk func(chunkstore.ID) ([]byte, error), o fs.ApplyTreeOptions) (*fs.RewindReport, fs.Snapshot, error) {
			o.BatchBytes = testChunk
			o.Batched = func(n, _ int) {
				fmt.Printf("batch %d\n", n)
				time.Sleep(3 * time.Millisecond)
			}
			r, _, s, err := f.ApplyTree(ctx, recs, chunk, o)
			return r, s, err
		}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pulled")
}

// TestPullKilled: a pull from a real S3 server, in a process of its
// own, killed with SIGKILL at 20 points (randomized delays while it
// downloads and puts its batches, and right after a randomly chosen
// batch's commit), leaves a store that fsck finds clean as it is; the
// next open releases what the pull held (fsck clean again, gc finds
// nothing to free or correct, the store has the chunks it had before
// the pull), and the next pull completes, root-identical with the
// pushed workspace, downloading nothing again that the killed one had
// spooled.
func TestPullKilled(t *testing.T) {
	if ws := os.Getenv(pullWorkerEnv); ws != "" {
		pullWorker(ws)
		return
	}
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, base := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "base.cfs")
	const url = "s3://cfs/ws"
	c := testClient(t, s, url, Retry{})
	writeWS(t, a, randomFiles(1, 20))
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, c, base, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	changed := randomFiles(2, 40)
	for p, b := range randomFiles(1, 20) {
		if len(changed) < 50 {
			changed[p] = append(b[:len(b)/2:len(b)/2], []byte("changed")...) // shares its first chunk
		}
	}
	writeWS(t, a, changed)
	if _, err := Push(ctx, a, c, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	want, wantRoot := readWS(t, a)
	baseChunks := chunksIn(t, base)

	copyWS := func(to string) {
		t.Helper()
		for _, p := range []string{"", ".remotes.json"} {
			b, err := os.ReadFile(base + p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to+p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// run pulls ws in a worker process, killed at after its ready line
	// (if after > 0) or when kill says so of a line it prints (if not
	// nil). It returns whether the kill came before the worker ended,
	// and the lines printed.
	var lastRun time.Duration
	run := func(ws string, after time.Duration, kill func(line string) bool) (killed bool, lines []string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestPullKilled$")
		cmd.Env = append(os.Environ(), pullWorkerEnv+"="+ws, "COMPUTERFS_PULL_URL="+url, "COMPUTERFS_PULL_ENDPOINT="+s.Endpoint)
		cmd.Env = append(cmd.Env, s.Env()...)
		cmd.Stderr = io.Discard
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		var timer *time.Timer
		var ready time.Time
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if line == "ready" {
				ready = time.Now()
			}
			if line == "ready" && after > 0 {
				timer = time.AfterFunc(after, func() { cmd.Process.Signal(syscall.SIGKILL) })
			}
			if kill != nil && kill(line) {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		if !ready.IsZero() {
			lastRun = time.Since(ready)
		}
		if timer != nil {
			timer.Stop()
		}
		st := cmd.ProcessState.Sys().(syscall.WaitStatus)
		killed = st.Signaled() && st.Signal() == syscall.SIGKILL
		if !killed && cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("pull worker: %v\n%s", cmd.ProcessState, strings.Join(lines, "\n"))
		}
		return killed, lines
	}

	// A pull left alone: how long it takes and how many batches.
	ws0 := filepath.Join(dir, "whole.cfs")
	copyWS(ws0)
	_, lines := run(ws0, 0, nil)
	took := lastRun
	batches := 0
	for _, l := range lines {
		var n int
		if _, err := fmt.Sscanf(l, "batch %d", &n); err == nil {
			batches = n
		}
	}
	if batches < 10 {
		t.Fatalf("the pull put %d batches, want many", batches)
	}
	if got, root := readWS(t, ws0); root != wantRoot {
		t.Fatalf("whole pull: root %s, want %s", root, wantRoot)
	} else {
		sameTree(t, got, want)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	rounds := 20
	var inBatches int
	for round := range rounds {
		ws := filepath.Join(dir, fmt.Sprintf("r%02d.cfs", round))
		copyWS(ws)
		if round%4 == 3 {
			// With the chunks already spooled (a pull killed before),
			// so the kill lands among the batches.
			os.MkdirAll(SpoolDir(ws), 0o700)
			ents, _ := os.ReadDir(SpoolDir(filepath.Join(dir, fmt.Sprintf("r%02d.cfs", round-1))))
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(SpoolDir(filepath.Join(dir, fmt.Sprintf("r%02d.cfs", round-1))), e.Name()))
				os.WriteFile(filepath.Join(SpoolDir(ws), e.Name()), b, 0o600)
			}
		}
		var what string
		var at time.Duration
		var kill func(string) bool
		if round%2 == 0 {
			at = 1 + time.Duration(rng.Int64N(int64(took)))
			what = fmt.Sprintf("after %v", at.Round(time.Millisecond))
		} else {
			k := 1 + rng.IntN(batches)
			what = fmt.Sprintf("after batch %d", k)
			kill = func(line string) bool { return line == fmt.Sprintf("batch %d", k) }
		}
		killed, lines := run(ws, at, kill)
		last := ""
		if len(lines) > 0 {
			last = lines[len(lines)-1]
		}
		if strings.HasPrefix(last, "batch") {
			inBatches++
		}
		t.Logf("round %d: killed %s (%v), at %q", round, what, killed, last)

		fsck(t, ws) // as the kill left it: the holds are counted
		f, err := fs.Open(ws, fs.Options{})
		if err != nil {
			t.Fatalf("round %d: open after the kill: %v", round, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fsck(t, ws)
		st, err := chunkstore.Open(ws, chunkstore.Options{MustExist: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := fs.GC(st)
		st.Close()
		if err != nil || rep.ChunksFreed+rep.RefsCorrected+rep.BodiesFreed > 0 {
			t.Errorf("round %d: gc after the release: %+v, %v", round, rep, err)
		}
		if _, root := readWS(t, ws); root != wantRoot {
			if n := chunksIn(t, ws); n != baseChunks {
				t.Errorf("round %d: %d chunks after the release, %d before the pull", round, n, baseChunks)
			}
		}
		prep, err := Pull(ctx, ws, c, PullOptions{Remote: "origin"})
		if err != nil {
			t.Fatalf("round %d: the next pull: %v", round, err)
		}
		if strings.HasPrefix(last, "batch") && prep.Downloaded != 0 {
			// Killed once every chunk was downloaded: the next pull
			// takes them all from the spool.
			t.Errorf("round %d: the next pull downloaded %d chunks again", round, prep.Downloaded)
		}
		got, root := readWS(t, ws)
		if root != wantRoot {
			t.Errorf("round %d: root %s after the next pull, want %s", round, root, wantRoot)
		}
		sameTree(t, got, want)
		fsck(t, ws)
	}
	if inBatches < rounds/4 {
		t.Errorf("only %d of %d kills landed among the batches", inBatches, rounds)
	}
}
