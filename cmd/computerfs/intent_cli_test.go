package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/fs"
)

// TestFsckIntentLog: fsck of a store a crash left with intent records
// says that the next open replays them, and the store is clean; after
// an open (which replays them) the note is gone.
func TestFsckIntentLog(t *testing.T) {
	dir := t.TempDir()
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws.cfs")
	f, err := fs.Open(ws, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	a, err := f.Create(fs.Caller{}, fs.RootIno, "db", fs.NewNode{Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := f.Write(ctx, a.Ino, int64(i)*4096, []byte(strings.Repeat("x", 4096)), false); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, a.Ino); err != nil { // the first commits and starts the log
			t.Fatal(err)
		}
	}
	// What a kill -9 leaves: the store and its log as they are now.
	crash := filepath.Join(dir, "crash.cfs")
	for _, suffix := range []string{"", "-intent"} {
		b, err := os.ReadFile(ws + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crash+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := fsckClean(t, home, crash)
	if !strings.Contains(r.stdout, "note: the intent log "+crash+"-intent holds 2 records") {
		t.Errorf("fsck of a store with intent records: %v", r)
	}
	rep, r := fsckReport(t, home, crash)
	if r.code != 0 || len(rep.Notes) != 1 || len(rep.Problems) != 0 {
		t.Errorf("fsck --json: %+v\n%v", rep, r)
	}
	g, err := fs.Open(crash, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if r := fsckClean(t, home, crash); strings.Contains(r.stdout, "note:") {
		t.Errorf("fsck after the replay: %v", r)
	}
}
