package fusefs

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// An fsync completes when the caller is interrupted (a signal, which the
// kernel forwards as FUSE_INTERRUPT), as on ext4: returning EINTR from
// fsync makes SQLite fail its transaction. Both ways an fsync goes are
// run with the request already interrupted: a commit (a new file) and an
// intent record (pages over a committed file).
func TestFsyncIgnoresInterrupt(t *testing.T) {
	f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &rawFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), fs: f}
	interrupted := make(chan struct{})
	close(interrupted)
	ctx := context.Background()
	a, err := f.Create(fs.Caller{}, fs.RootIno, "db", fs.NewNode{Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	for i, way := range []string{"commit", "intent record"} {
		if _, err := f.Write(ctx, a.Ino, int64(i)*4096, []byte("page"), false); err != nil {
			t.Fatal(err)
		}
		before := f.IntentRecords()
		in := &fuse.FsyncIn{InHeader: fuse.InHeader{NodeId: uint64(a.Ino)}}
		if st := r.Fsync(interrupted, in); st != fuse.OK {
			t.Errorf("fsync (%s) of an interrupted request: %v", way, st)
		}
		if got := f.IntentRecords() > before; got != (way == "intent record") {
			t.Errorf("fsync went the wrong way: record %v, want %s", got, way)
		}
	}
}
