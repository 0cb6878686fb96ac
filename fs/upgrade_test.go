package fs

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
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
