package chunkstore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

func getInto(s *chunkstore.Store, id chunkstore.ID, buf []byte) ([]byte, error) {
	var out []byte
	err := s.View(func(tx *chunkstore.Tx) error {
		var err error
		out, err = tx.GetInto(id, buf)
		return err
	})
	return out, err
}

// TestGetIntoDirect checks that GetInto reads a cold raw body with an
// outboard with O_DIRECT into the buffer it is given, a body in the page
// cache through the page cache, and everything else as Get does; and
// that a buffer too small for a direct read still gets the body.
func TestGetIntoDirect(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "ws.cfs"), chunkstore.Options{})
	if !directIO(t, dir) {
		t.Skip("the filesystem of the test's directory refuses O_DIRECT")
	}
	full, _ := put(t, s, randBytes(61, 1<<20))
	short, _ := put(t, s, randBytes(62, 700_001))
	text, _ := put(t, s, textBytes(4, 1<<20))
	small, _ := put(t, s, randBytes(63, 32<<10))
	want := map[chunkstore.ID][]byte{full.ID: randBytes(61, 1<<20), short.ID: randBytes(62, 700_001),
		text.ID: textBytes(4, 1<<20), small.ID: randBytes(63, 32<<10)}
	size := chunkstore.ReadBufSize(1 << 20)
	tests := []struct {
		name   string
		id     chunkstore.ID
		cold   bool
		buf    int
		direct bool
	}{
		{"1 MiB raw, cold", full.ID, true, size, true},
		{"700,001 bytes raw, cold", short.ID, true, size, true},
		{"1 MiB raw, in the page cache", full.ID, false, size, false},
		{"1 MiB raw, cold, buffer too small", full.ID, true, 1 << 20, false},
		{"compressed, cold", text.ID, true, size, false},
		{"32 KiB raw, cold", small.ID, true, size, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cold {
				if err := s.DropCaches(); err != nil {
					t.Fatal(err)
				}
			} else if _, err := get(s, tt.id); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, tt.buf)
			before := s.DirectReads()
			got, err := getInto(s, tt.id, buf)
			if err != nil || !bytes.Equal(got, want[tt.id]) {
				t.Fatalf("GetInto: %d bytes, %v", len(got), err)
			}
			if d := s.DirectReads() - before; (d == 1) != tt.direct {
				t.Errorf("%d direct reads, want direct %v", d, tt.direct)
			}
			if len(got) > 0 && cap(got) > 0 {
				p, b := &got[0], buf[:cap(buf)]
				inside := false
				for i := range b {
					if &b[i] == p {
						inside = true
						break
					}
				}
				if !inside && tt.buf >= 1<<20 {
					t.Error("the plaintext is not in the buffer given")
				}
			}
		})
	}
}

// TestGetIntoDirectDamage flips a byte of a body's plaintext on the disk:
// a cold GetInto (O_DIRECT) is ErrCorrupt naming the chunk, never data.
func TestGetIntoDirectDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ws.cfs")
	s := openStore(t, path, chunkstore.Options{})
	if !directIO(t, dir) {
		t.Skip("the filesystem of the test's directory refuses O_DIRECT")
	}
	data := randBytes(64, 1<<20)
	p, _ := put(t, s, data)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, data[900_000:900_064])
	if i < 0 {
		t.Fatal("plaintext not found in the file")
	}
	b[i+3] ^= 0x01
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[i:i+4096], int64(i)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // so that DropCaches can drop the page
		t.Fatal(err)
	}
	f.Close()
	log, logs := newLogger()
	s = openStore(t, path, chunkstore.Options{Logger: log, MustExist: true})
	if err := s.DropCaches(); err != nil {
		t.Fatal(err)
	}
	before := s.DirectReads()
	if _, err := getInto(s, p.ID, make([]byte, chunkstore.ReadBufSize(1<<20))); !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Errorf("GetInto of a damaged body: %v, want ErrCorrupt", err)
	}
	if s.DirectReads() == before {
		t.Error("the damaged body was not read with O_DIRECT")
	}
	if !bytes.Contains(logs.Bytes(), []byte(p.ID.String())) {
		t.Errorf("the log does not name the chunk: %s", logs)
	}
}

// directIO reports whether files in dir can be opened with O_DIRECT.
func directIO(t *testing.T, dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "ws.cfs"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
