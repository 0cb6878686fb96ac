package remote

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/computerfs/computerfs/internal/s3test"
)

// TestConcurrentPushes: two hosts, in sync with the same HEAD, push
// different changes at the same moment, ten times: every time exactly
// one push moves HEAD, the other is refused (ErrConflict: at its HEAD
// check, or by the conditional write if both got past it), and HEAD
// names the winner's tree, never the loser's nor a mix; the loser then
// pulls --force and both are in sync again.
func TestConcurrentPushes(t *testing.T) {
	ctx := context.Background()
	s := s3test.Start(t)
	s.Bucket("cfs")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs")
	writeWS(t, a, map[string][]byte{"x": []byte("start")})
	if _, err := Push(ctx, a, testClient(t, s, "s3://cfs/race", Retry{}), PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(ctx, testClient(t, s, "s3://cfs/race", Retry{}), b, CloneOptions{RemoteName: "origin"}); err != nil {
		t.Fatal(err)
	}
	hosts := []string{a, b}
	raced := 0
	for round := range 10 {
		for i, ws := range hosts {
			writeWS(t, ws, map[string][]byte{"x": []byte(fmt.Sprintf("round %d host %d", round, i)), fmt.Sprintf("h%d", i): randomFiles(uint64(round*2+i), 1)["d0/f000"]})
		}
		var wg sync.WaitGroup
		reps := make([]*PushReport, 2)
		errs := make([]error, 2)
		for i, ws := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reps[i], errs[i] = Push(ctx, ws, testClient(t, s, "s3://cfs/race", Retry{}), PushOptions{Remote: "origin"})
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("round %d: both pushes moved HEAD", round)
				}
				won = i
			case !errors.Is(err, ErrConflict):
				t.Fatalf("round %d: host %d: %v, want ErrConflict", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither push went through: %v", round, errs)
		}
		for _, err := range errs {
			if err != nil && errors.Is(err, ErrConflict) && strings.Contains(err.Error(), "meanwhile") {
				raced++
			}
		}
		head, _, err := testClient(t, s, "s3://cfs/race", Retry{}).getRef(ctx, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		if head.Root != reps[won].Root || head.Manifest != reps[won].Manifest {
			t.Fatalf("round %d: HEAD %s, the winner pushed %s", round, head.Root, reps[won].Root)
		}
		loser := hosts[1-won]
		if _, err := Pull(ctx, loser, testClient(t, s, "s3://cfs/race", Retry{}), PullOptions{Remote: "origin", Force: true}); err != nil {
			t.Fatalf("round %d: the loser's pull --force: %v", round, err)
		}
		_, wr := readWS(t, hosts[won])
		got, lr := readWS(t, loser)
		if lr != wr || got["x"] != fmt.Sprintf("round %d host %d", round, won) {
			t.Fatalf("round %d: after the pull the loser has x=%q root %s, the winner root %s", round, got["x"], lr, wr)
		}
		fsck(t, loser)
	}
	t.Logf("%d of 10 rounds raced to the conditional write of HEAD", raced)
}
