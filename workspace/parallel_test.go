package workspace

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/computerfs/computerfs/fs"
)

// parallelRecorder is an fs.Options.Heavy that records parallel work
// (fs.AllCPUs) and how much work is under way.
type parallelRecorder struct {
	mu       sync.Mutex
	active   int
	parallel int // Begins with fs.AllCPUs
}

func (r *parallelRecorder) Begin(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active++
	if n == fs.AllCPUs {
		r.parallel++
	}
}

func (r *parallelRecorder) End() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
}

// TestGrepParallel checks that Grep tells a governed daemon's
// internal/procs (through fs.Options.Heavy) that its workers want every
// CPU, and that it ends what it began.
func TestGrepParallel(t *testing.T) {
	rec := &parallelRecorder{}
	f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{Heavy: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New(f, Options{})
	ctx := context.Background()
	for _, name := range []string{"/a", "/b", "/c"} {
		if _, err := w.Write(ctx, name, strings.NewReader("needle\nhay\n"), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := w.Grep(ctx, "/", GrepOptions{Pattern: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 3 {
		t.Fatalf("grep: %d lines, want 3: %+v", len(res.Lines), res.Lines)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.parallel != 1 {
		t.Errorf("grep told %d parallel works, want 1", rec.parallel)
	}
	if rec.active != 0 {
		t.Errorf("after grep: %d works not ended", rec.active)
	}
}
