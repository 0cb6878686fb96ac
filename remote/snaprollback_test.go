package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/s3test"
)

// snapshotAs (re)makes local snapshot name of workspace ws.
func snapshotAs(t testing.TB, ws, name string) {
	t.Helper()
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fs.DeleteSnapshot(f.Store(), name); err != nil && !errors.Is(err, fs.ErrNoSnapshot) {
		t.Fatal(err)
	}
	if _, err := f.CreateSnapshot(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotRefRollback: a pushed snapshot's ref rewritten in the
// server's backing directory, to the same name's older ref (generation
// 1 where 2 was seen: replayable on an encrypted remote too), to
// another snapshot's ref (another root; plain remotes), or deleted, is
// refused by pull --snapshot, clone --snapshot (through the user's book)
// and a lazy mount's read of it, with ErrRollback; forced, each goes
// through, and lands on the old tree.
func TestSnapshotRefRollback(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
	}{{"plain", nil}, {"encrypted", bytes.Repeat([]byte{9}, KeySize)}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := s3test.Start(t)
			s.Bucket("cfs")
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.cfs"), filepath.Join(dir, "b.cfs")
			book := filepath.Join(dir, "heads.json")
			client := func() *Client {
				var c *Client
				if tc.key != nil {
					c = keyClient(t, s, "s3://cfs/snap", tc.key)
				} else {
					c = testClient(t, s, "s3://cfs/snap", Retry{})
				}
				c.book = book
				return c
			}
			c := client()
			writeWS(t, a, map[string][]byte{"x": []byte("one")})
			snapshotAs(t, a, "rel")
			if _, err := Push(ctx, a, c, PushOptions{Remote: "origin", Snapshot: "rel"}); err != nil {
				t.Fatal(err)
			}
			relFile := filepath.Join(s.Dir(), "cfs", c.key("snapshots/rel"))
			old, err := os.ReadFile(relFile)
			if err != nil {
				t.Fatalf("the snapshot ref in versitygw's directory: %v", err)
			}
			// The ref deleted (by someone with the bucket's keys) and
			// the name pushed again: generation 2.
			if _, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cfs"), Key: aws.String(c.key("snapshots/rel"))}); err != nil {
				t.Fatal(err)
			}
			writeWS(t, a, map[string][]byte{"x": []byte("two")})
			snapshotAs(t, a, "rel")
			if _, err := Push(ctx, a, c, PushOptions{Remote: "origin", Snapshot: "rel"}); err != nil {
				t.Fatal(err)
			}
			writeWS(t, a, map[string][]byte{"y": []byte("other")})
			snapshotAs(t, a, "other")
			if _, err := Push(ctx, a, c, PushOptions{Remote: "origin", Snapshot: "other"}); err != nil {
				t.Fatal(err)
			}
			if _, err := Clone(ctx, c, b, CloneOptions{RemoteName: "origin"}); err != nil {
				t.Fatal(err)
			}
			if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin", Snapshot: "rel"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := readWS(t, b); got["x"] != "two" {
				t.Fatalf("x after pull --snapshot rel: %q", got["x"])
			}
			current, err := os.ReadFile(relFile)
			if err != nil {
				t.Fatal(err)
			}
			otherRef, err := os.ReadFile(filepath.Join(s.Dir(), "cfs", c.key("snapshots/other")))
			if err != nil {
				t.Fatal(err)
			}

			rewrites := []struct {
				name string
				data []byte // nil: deleted
			}{{"older generation", old}, {"deleted", nil}}
			if tc.key == nil {
				rewrites = append(rewrites, struct {
					name string
					data []byte
				}{"another snapshot's ref", otherRef})
			}
			n := 0
			for _, rw := range rewrites {
				if rw.data == nil {
					os.Remove(relFile)
				} else if err := os.WriteFile(relFile, rw.data, 0o644); err != nil {
					t.Fatal(err)
				}
				c := client()
				if _, err := Pull(ctx, b, c, PullOptions{Remote: "origin", Snapshot: "rel"}); !errors.Is(err, ErrRollback) {
					t.Errorf("%s: pull --snapshot: %v, want ErrRollback", rw.name, err)
				}
				n++
				if _, err := Clone(ctx, c, filepath.Join(dir, "c"+string(rune('0'+n))+".cfs"), CloneOptions{Snapshot: "rel"}); !errors.Is(err, ErrRollback) {
					t.Errorf("%s: clone --snapshot (the user's book): %v, want ErrRollback", rw.name, err)
				}
				if _, err := c.Snapshot(ctx, "rel", false); !errors.Is(err, ErrRollback) {
					t.Errorf("%s: lazy mount's snapshot: %v, want ErrRollback", rw.name, err)
				}
				if rw.data == nil {
					continue
				}
				want := "one"
				if rw.name == "another snapshot's ref" {
					want = "two" // the other snapshot's tree: x two, y other
				}
				if m, err := c.Snapshot(ctx, "rel", true); err != nil {
					t.Errorf("%s: lazy mount --force: %v", rw.name, err)
				} else if m.Root == "" {
					t.Errorf("%s: lazy mount --force: no root", rw.name)
				}
				cw := filepath.Join(dir, "f"+string(rune('0'+n))+".cfs")
				if _, err := Clone(ctx, client(), cw, CloneOptions{Snapshot: "rel", Force: true}); err != nil {
					t.Errorf("%s: clone --force: %v", rw.name, err)
				} else if got, _ := readWS(t, cw); got["x"] != want {
					t.Errorf("%s: x after clone --force: %q, want %q", rw.name, got["x"], want)
				}
				// The forced reads noted the rewritten ref: put back the
				// real one and note it again for the next case.
				if err := os.WriteFile(relFile, current, 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := client().Snapshot(ctx, "rel", true); err != nil {
					t.Fatal(err)
				}
			}
			// Forced, pull takes the rewritten ref.
			if err := os.WriteFile(relFile, old, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Pull(ctx, b, client(), PullOptions{Remote: "origin", Snapshot: "rel", Force: true}); err != nil {
				t.Fatalf("pull --snapshot --force: %v", err)
			}
			if got, _ := readWS(t, b); got["x"] != "one" {
				t.Errorf("x after pull --force of the old ref: %q", got["x"])
			}
			fsck(t, b)
		})
	}
}

// TestSnapsSeenPruned: a remote's remembered snapshot refs are kept to
// the newest maxSnapsSeen (by when they were seen), per remote.
func TestSnapsSeenPruned(t *testing.T) {
	cfg := &Config{}
	base := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	for i := range maxSnapsSeen + 40 {
		// Times in the same second with trailing zeros trimmed, as
		// RFC 3339 writes them: ordered as times, not as strings.
		at := base.Add(time.Duration(i) * 10 * time.Microsecond).Format(time.RFC3339Nano)
		noteSnap(cfg, "origin", fmt.Sprintf("s%03d", i), HeadSeen{Manifest: "m", At: at})
	}
	noteSnap(cfg, "other", "kept", HeadSeen{Manifest: "m", At: base.Format(time.RFC3339Nano)})
	if n := len(cfg.Snaps["origin"]); n != maxSnapsSeen {
		t.Fatalf("%d snapshot refs kept, want %d", n, maxSnapsSeen)
	}
	for i := range 40 {
		if _, ok := cfg.Snaps["origin"][fmt.Sprintf("s%03d", i)]; ok {
			t.Errorf("s%03d, among the oldest, kept", i)
		}
	}
	if _, ok := cfg.Snaps["origin"][fmt.Sprintf("s%03d", maxSnapsSeen+39)]; !ok {
		t.Error("the newest dropped")
	}
	if _, ok := cfg.Snaps["other"]["kept"]; !ok {
		t.Error("another remote's ref dropped")
	}
}
