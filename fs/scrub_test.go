package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestScrub(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, tx *bolt.Tx)
		want   []string // in the report, in order of appearance
	}{
		{name: "clean"},
		{
			name: "a chunk body",
			damage: func(t *testing.T, tx *bolt.Tx) {
				// The second chunk of /a/b/big (and of its hard link).
				id := chunkstore.Sum(faultTree()[5].data[4096 : 2*4096])
				idx, err := sealed.In(tx, []byte("chunkidx")).Get(id[:])
				if err != nil || idx == nil {
					t.Fatalf("index entry: %v", err)
				}
				bodies := tx.Bucket([]byte("chunks"))
				v := bytes.Clone(chunkstore.BodyValue(bodies, idx[:8]))
				v[len(v)-1] ^= 1
				chunkstore.PutBodyValue(bodies, idx[:8], v)
			},
			want: []string{"bytes 4096 and on: chunk"},
		},
		{
			name:   "an inode record",
			damage: func(t *testing.T, tx *bolt.Tx) { flipRecord(t, tx, bucketInodes, inoKey(5), 3) },
			want:   []string{"/small: inode 5: workspace record damaged"},
		},
		{
			name:   "a chunk list record",
			damage: func(t *testing.T, tx *bolt.Tx) { flipRecord(t, tx, bucketChunks, chunkKey(7, 2), 3) },
			want:   []string{"inode 7, chunk 2: workspace record damaged"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ws.cfs")
			buildFaultStore(t, path)
			if tt.damage != nil {
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := db.Update(func(tx *bolt.Tx) error { tt.damage(t, tx); return nil }); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var calls int
			rep, err := Scrub(context.Background(), st, ScrubOptions{Batch: 3, Progress: func(done, total uint64) {
				calls++
				if done > total {
					t.Errorf("progress %d of %d", done, total)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", rep)
			if rep.Files != 4 || rep.Records < 40 || calls < 3 { // small, text, big (and its link), sparse
				t.Errorf("scrub verified %d files, %d records, with %d progress calls", rep.Files, rep.Records, calls)
			}
			all := strings.Join(rep.Damage, "\n")
			if tt.want == nil {
				if !rep.Clean() || rep.Chunks == 0 || rep.Bytes == 0 {
					t.Errorf("clean store: %+v", rep)
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("report does not say %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestScrubLive: a scrub of a workspace that is being written finds
// nothing wrong (each batch is its own transaction: what commits change
// between them is not damage), under -race.
func TestScrubLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog(), CommitInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("f%d", i%20)
			a, err := f.Create(Caller{}, RootIno, name, NewNode{Mode: syscall.S_IFREG | 0o644})
			if err != nil {
				a, err = f.Lookup(Caller{}, RootIno, name)
				if err != nil {
					t.Error(err)
					return
				}
				f.Open(a.Ino)
			}
			data := bytes.Repeat([]byte{byte(i)}, 4096*(1+i%5)+i)
			if _, err := f.Write(ctx, a.Ino, int64(i%3)*4096, data, false); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			f.Release(a.Ino)
			if i%7 == 0 {
				f.Unlink(RootIno, name)
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	for range 5 {
		rep, err := Scrub(ctx, f.store, ScrubOptions{Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() {
			t.Errorf("a live workspace: %q", rep.Damage)
		}
	}
	cancel()
	wg.Wait()
}

// TestScrubRate: the rate bounds the bytes read per second.
func TestScrubRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	buildFaultStore(t, path)
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := Scrub(context.Background(), st, ScrubOptions{Batch: 1, Rate: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(rep.Bytes) / float64(100<<10); rep.Seconds < want*0.9 {
		t.Errorf("%d bytes in %.3fs at 100 KiB/s: want at least %.3fs", rep.Bytes, rep.Seconds, want)
	}
}
