package chunkstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	bolt "go.etcd.io/bbolt"
)

// TestOutboardFaults flips one byte at a time, at positions spread over
// the pages in use of a store holding raw bodies with outboards, and
// reads every 4 KiB range of every chunk through ReadAt, then whole: a
// read may fail (EIO), never return other bytes, and the process must
// not die. The flips that land in a body or an outboard are the cases
// that matter here; the rest exercise the store's own guards as the fs
// fault-injection test does.
func TestOutboardFaults(t *testing.T) {
	dir := t.TempDir()
	pristine := filepath.Join(dir, "pristine.cfs")
	s, err := chunkstore.Open(pristine, chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := map[chunkstore.ID][]byte{}
	for i, n := range []int{1 << 20, 256<<10 + 1000} {
		data := randBytes(uint64(90+i), n)
		p := chunkstore.Prepare(data, nil)
		if p.Outboard == nil {
			t.Fatal("no outboard")
		}
		if err := s.Update(func(tx *chunkstore.Tx) error { _, err := tx.Put(&p); return err }); err != nil {
			t.Fatal(err)
		}
		plain[p.ID] = data
	}
	var used int
	s.DB().View(func(tx *bolt.Tx) error { used = int(tx.Size()); return nil })
	s.Close()
	orig, err := os.ReadFile(pristine)
	if err != nil {
		t.Fatal(err)
	}
	flips := 120
	if testing.Short() {
		flips = 30
	}
	var failed, silent, unaffected int
	for i := range flips {
		pos := i*used/flips + (i*7919)%max(used/flips, 1)
		b := bytes.Clone(orig)
		b[pos] ^= 0x5a
		path := filepath.Join(dir, "case.cfs")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		logger, _ := newLogger()
		st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true, Logger: logger, MustExist: true})
		if err != nil {
			failed++
			continue
		}
		bad := false
		for id, data := range plain {
			for off := 0; off < len(data); off += 4096 {
				got, err := readAt(st, id, off, 4096)
				if err != nil {
					bad = true
					continue
				}
				if !bytes.Equal(got, data[off:min(off+4096, len(data))]) {
					silent++
					t.Errorf("flip at %d: ReadAt(%s, %d) returned other bytes without an error", pos, id.Short(), off)
					break
				}
			}
			got, err := get(st, id)
			if err == nil && !bytes.Equal(got, data) {
				silent++
				t.Errorf("flip at %d: Get(%s) returned other bytes without an error", pos, id.Short())
			}
			bad = bad || err != nil
		}
		st.Close()
		if bad {
			failed++
		} else {
			unaffected++
		}
	}
	t.Logf("%d flips over %d bytes in use: %d unaffected, %d detected (open or read failed), %d silent", flips, used, unaffected, failed, silent)
}
