package fs

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// downgradeToFormat2 rewrites a closed store as format 2 wrote it: every
// record of every bucket but the chunk bodies unsealed, the version 2
// and no sealed copy of it.
func downgradeToFormat2(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		// Buckets format 4 added.
		for _, name := range append([][]byte{bucketSnapshots}, versions.Buckets...) {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if string(name) == "chunks" {
				return nil
			}
			type kv struct{ k, v []byte }
			var recs []kv
			if err := b.ForEach(func(k, v []byte) error {
				if string(name) == "meta" && (string(k) == "magic" || string(k) == "format") {
					return nil
				}
				if string(name) == "meta" && string(k) == "format_sealed" {
					recs = append(recs, kv{bytes.Clone(k), nil})
					return nil
				}
				open, err := sealed.Open(name, k, v)
				if err != nil {
					return err
				}
				recs = append(recs, kv{bytes.Clone(k), bytes.Clone(open)})
				return nil
			}); err != nil {
				return err
			}
			for _, r := range recs {
				var err error
				if r.v == nil {
					err = b.Delete(r.k)
				} else {
					err = b.Put(r.k, r.v)
				}
				if err != nil {
					return err
				}
			}
			if string(name) == "meta" {
				return b.Put([]byte("format"), binary.BigEndian.AppendUint32(nil, 2))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromFormat2: a store of every kind of record, rewritten as
// format 2, opens (sealing every record in the upgrade), reads back
// byte-identical, and fsck finds it clean, before and after a reopen.
func TestUpgradeFromFormat2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	buildFaultStore(t, path)
	downgradeToFormat2(t, path)
	// Format 2 as an older binary sees it: records bare.
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true})
	if err == nil {
		st.Close()
		t.Fatal("a read-only open of a format 2 store succeeded: the upgrade needs a read-write one")
	}
	for round := range 2 {
		f, err := Open(path, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("open (round %d): %v", round, err)
		}
		if silent, readErr := readFaultTree(f); silent != "" || readErr != "" {
			t.Errorf("round %d: %s %s", round, silent, readErr)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Check(st, false)
		st.Close()
		if err != nil || !rep.Clean() {
			t.Fatalf("fsck after the upgrade (round %d): %v %q", round, err, rep.Problems)
		}
		if rep.Inodes != 9 || rep.FileChunks == 0 { // root, 2 directories, 5 files, a symlink
			t.Errorf("fsck counts %d inodes, %d chunk references", rep.Inodes, rep.FileChunks)
		}
	}
}

// TestUpgradeFormat2Fixture: a store written by the previous release (the
// format 2 binary of commit e3fc558, through its FUSE mount: mkdir, seq,
// head -c of /dev/urandom, ln -s, ln, truncate, setfattr, chmod, mkfifo,
// mv) opens, upgrades, reads back byte-identical and passes fsck, also
// after a second open.
func TestUpgradeFormat2Fixture(t *testing.T) {
	gz, err := os.Open("testdata/format2-e3fc558.cfs.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ws.cfs")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	type want struct {
		path   string
		mode   uint32
		size   uint64
		sha    string // regular files
		target string // symlinks
	}
	wants := []want{
		{"/dir", syscall.S_IFDIR | 0o755, 0, "", ""},
		{"/dir/sub", syscall.S_IFDIR | 0o751, 0, "", ""},
		{"/dir/numbers.txt", syscall.S_IFREG | 0o644, 1288895, "5af7b95208fdcff454bab3f5eddf567a688a3796c703d4fef91072e38645c062", ""},
		{"/dir/sub/random.bin", syscall.S_IFREG | 0o644, 30000, "87810a5201ff67035c04856ad8a361e22e60fa908c6148354460d4fdc599516c", ""},
		{"/hard", syscall.S_IFREG | 0o644, 30000, "87810a5201ff67035c04856ad8a361e22e60fa908c6148354460d4fdc599516c", ""},
		{"/empty", syscall.S_IFREG | 0o644, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
		{"/small", syscall.S_IFREG | 0o644, 16, "866206fb85f7d3bfe68ab265044acc8347c5c80e7c417820449aebfd3758eee2", ""},
		{"/sparse", syscall.S_IFREG | 0o644, 5242883, "2a1245077fabec2599a5ebcc90097d5672efdbd9b7b188b0092f089220292033", ""},
		{"/link", syscall.S_IFLNK | 0o777, 15, "", "dir/numbers.txt"},
		{"/fifo", syscall.S_IFIFO | 0o644, 0, "", ""},
	}
	for round := range 2 {
		f, err := Open(path, Options{Logger: quietLog()})
		if err != nil {
			t.Fatalf("open (round %d): %v", round, err)
		}
		for _, w := range wants {
			ino := RootIno
			var a Attr
			for _, part := range strings.Split(w.path[1:], "/") {
				if a, err = f.Lookup(Caller{}, ino, part); err != nil {
					t.Fatalf("round %d: lookup %s: %v", round, w.path, err)
				}
				ino = a.Ino
			}
			if a.Mode != w.mode || a.Size != w.size {
				t.Errorf("round %d: %s: mode %#o size %d, want %#o %d", round, w.path, a.Mode, a.Size, w.mode, w.size)
			}
			switch {
			case w.sha != "":
				buf := make([]byte, a.Size+1)
				n, err := f.Read(context.Background(), ino, 0, buf)
				if err != nil {
					t.Fatalf("round %d: read %s: %v", round, w.path, err)
				}
				if got := fmt.Sprintf("%x", sha256.Sum256(buf[:n])); got != w.sha {
					t.Errorf("round %d: %s: sha256 %s, want %s", round, w.path, got, w.sha)
				}
			case w.target != "":
				if got, err := f.Readlink(ino); err != nil || got != w.target {
					t.Errorf("round %d: readlink %s: %q %v", round, w.path, got, err)
				}
			}
		}
		small, _ := f.Lookup(Caller{}, RootIno, "small")
		if v, err := f.GetXattr(small.Ino, "user.note"); err != nil || string(v) != "an xattr" {
			t.Errorf("round %d: xattr: %q %v", round, v, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		// fsck compares the stored root with the records' own sum:
		// the upgrade must have stored one.
		if r, err := StoreRoot(st); err != nil || r.IsZero() {
			t.Errorf("root after the upgrade (round %d): %s %v", round, r, err)
		}
		rep, err := Check(st, false)
		st.Close()
		if err != nil || !rep.Clean() {
			t.Fatalf("fsck after the upgrade (round %d): %v %q", round, err, rep.Problems)
		}
	}
}

// downgradeToFormat4 rewrites a closed store as format 4 wrote it: every
// sealed record (and every version a snapshot keeps) in format 4's
// envelope, an 8-byte birth epoch, and the version 4.
func downgradeToFormat4(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bare := map[string]bool{"chunks": true, string(versions.BucketSnapEpochs): true, string(versions.BucketBirths): true, string(versions.BucketDeaths): true}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bare[string(name)] {
				return nil
			}
			type kv struct{ k, v []byte }
			var recs []kv
			if err := b.ForEach(func(k, v []byte) error {
				if string(name) == "meta" && (string(k) == "magic" || string(k) == "format") {
					return nil
				}
				bn, bk := name, k
				if string(name) == string(versions.BucketHistory) {
					bn, bk = []byte(versions.Name(k[0])), k[1:len(k)-8]
				}
				val, birth, err := sealed.OpenBirth(bn, bk, v)
				if err != nil {
					return err
				}
				if string(name) == "meta" && string(k) == "format_sealed" {
					val = binary.BigEndian.AppendUint32(nil, 4)
				}
				recs = append(recs, kv{bytes.Clone(k), sealed.SealFormat4(bn, bk, val, birth)})
				return nil
			}); err != nil {
				return err
			}
			for _, r := range recs {
				if err := b.Put(r.k, r.v); err != nil {
					return err
				}
			}
			if string(name) == "meta" {
				return b.Put([]byte("format"), binary.BigEndian.AppendUint32(nil, 4))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromFormat4: a store with a snapshot and versions it keeps,
// rewritten as format 4, opens (resealing every record and kept version
// in format 5's envelope, their birth epochs kept), reads back the same
// live tree and the same snapshot, and fsck finds it clean.
func TestUpgradeFromFormat4(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	buildFaultStore(t, path)
	f, err := Open(path, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Repeat([]byte("version one "), 1000)
	a := putFile(t, f, RootIno, "up-a", v1)
	putFile(t, f, RootIno, "up-b", []byte("bee"))
	if _, err := f.CreateSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(a.Ino); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(ctx, a.Ino, 100, []byte("CHANGED"), false); err != nil {
		t.Fatal(err)
	}
	f.Release(a.Ino)
	if err := f.Unlink(RootIno, "up-b"); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "up-new", []byte("born after"))
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	live := manifest(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToFormat4(t, path)
	for round := range 2 {
		f, err := Open(path, Options{Logger: quietLog()})
		if err != nil {
			t.Fatalf("open (round %d): %v", round, err)
		}
		if got := manifest(t, f); got != live {
			t.Errorf("round %d: live tree after the upgrade:\n%s\nwant:\n%s", round, got, live)
		}
		v, err := f.SnapshotView("s1")
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{"up-a": v1, "up-b": []byte("bee")} {
			at, err := v.Lookup(RootIno, name)
			if err != nil {
				t.Fatalf("round %d: snapshot lookup %s: %v", round, name, err)
			}
			buf := make([]byte, len(want)+10)
			n, err := v.Read(at.Ino, 0, buf)
			if err != nil || !bytes.Equal(buf[:n], want) {
				t.Errorf("round %d: snapshot %s: %d bytes, %v", round, name, n, err)
			}
		}
		if _, err := v.Lookup(RootIno, "up-new"); err == nil {
			t.Errorf("round %d: the snapshot sees a file born after it", round)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		// fsck compares the stored root with the records' own sum:
		// the upgrade must have stored one.
		if r, err := StoreRoot(st); err != nil || r.IsZero() {
			t.Errorf("root after the upgrade (round %d): %s %v", round, r, err)
		}
		rep, err := Check(st, false)
		st.Close()
		if err != nil || !rep.Clean() {
			t.Fatalf("fsck after the upgrade (round %d): %v %q", round, err, rep.Problems)
		}
	}
}
