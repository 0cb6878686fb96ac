package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// TestScrub: scrub reads a clean workspace through and says so; with a
// chunk damaged it names the file and the range, exits non-zero, and
// changes nothing (fsck still finds the same damage afterwards).
func TestScrub(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	big := randomData(3<<20, 7) // three raw chunks
	makeStore(t, home, ws, mnt, map[string][]byte{"dir/big": big, "small": []byte("hello\n")})

	r := cli(t, home, "scrub", "--rate", "1G", ws)
	if r.code != 0 || !strings.Contains(r.stdout, "4 chunks") || !strings.Contains(r.stdout, "\nclean\n") {
		t.Fatalf("scrub of a clean workspace: %v", r)
	}
	r = cli(t, home, "scrub", "--json", ws)
	var rep struct {
		Chunks, Records, Files int
		Bytes                  uint64
		Damage                 []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Chunks != 4 || rep.Files != 2 || rep.Bytes < 3<<20 {
		t.Fatalf("scrub --json: %+v %v\n%v", rep, err, r)
	}

	// Served: its daemon scrubs it, live, while a file is written.
	p := startMount(t, home, ws, mnt)
	if err := os.WriteFile(filepath.Join(mnt, "during"), randomData(1<<20, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	r = cli(t, home, "scrub", "--json", mnt)
	rep.Damage = nil
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Chunks < 4 || len(rep.Damage) != 0 {
		t.Fatalf("scrub through the daemon: %+v %v\n%v", rep, err, r)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)

	updateStore(t, ws, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("chunks"))
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			v := chunkstore.BodyValue(b, k)
			if v[0] == chunkstore.CodecRaw && len(v) == 37+1<<20 && bytes.Equal(v[37:37+64], big[1<<20:1<<20+64]) {
				nv := bytes.Clone(v)
				nv[37+999] ^= 1
				return chunkstore.PutBodyValue(b, bytes.Clone(k), nv)
			}
		}
		return fmt.Errorf("no body of big's second chunk")
	})
	r = cli(t, home, "scrub", ws)
	if r.code == 0 || !strings.Contains(r.stdout, "damage: /dir/big: bytes 1048576 and on: chunk") || !strings.Contains(r.stdout, "hash mismatch") {
		t.Fatalf("scrub of a damaged chunk: %v", r)
	}
	if r := cli(t, home, "scrub", ws); r.code == 0 {
		t.Errorf("a second scrub found nothing: scrub changed the store: %v", r)
	}
}

// TestScrubFork: a byte flipped in a fork's record (the entry of a file
// an exec made in the fork) makes scrub and fsck fail, each naming the
// fork and the file's path in it; the fork can still be discarded, and
// fsck is clean after.
func TestScrubFork(t *testing.T) {
	needFUSE(t)
	home, ws, mnt := tempWorkspace(t)
	makeStore(t, home, ws, mnt, map[string][]byte{"README": []byte("hello\n")})
	r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", "shell", "--fork", "--", "mkdir -p /d && echo in the fork > /d/made")
	if err != nil || r.code != 0 || !strings.Contains(r.stderr, "fork fork1 kept") {
		t.Fatalf("exec --fork: %v %v", r, err)
	}
	if r := cli(t, home, "scrub", ws); r.code != 0 || !strings.Contains(r.stdout, "\nclean\n") {
		t.Fatalf("scrub with a fork: %v", r)
	}
	updateStore(t, ws, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("forks")).Bucket([]byte("fork1")).Bucket([]byte("dirents"))
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if strings.HasSuffix(string(k), "made") {
				nv := bytes.Clone(v)
				nv[len(nv)/2] ^= 4
				return b.Put(bytes.Clone(k), nv)
			}
		}
		return fmt.Errorf("no entry of made in the fork")
	})
	for _, cmd := range []string{"scrub", "fsck"} {
		r := cli(t, home, cmd, ws)
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "fork fork1: /d/made: workspace record damaged") {
			t.Errorf("%s of a damaged fork: %v", cmd, r)
		}
	}
	if r := cli(t, home, "fork", "-w", ws, "discard", "fork1"); r.code != 0 {
		t.Fatalf("discard the damaged fork: %v", r)
	}
	if r := cli(t, home, "fsck", ws); r.code != 0 {
		t.Errorf("fsck after the discard: %v", r)
	}
}
