package chunkstore_test

import (
	"bytes"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// TestPrepareFramed checks that a chunk prepared in its frame, or in
// place with its header written in front by the caller, is stored and
// read back exactly as one prepared the ordinary way, raw or not.
func TestPrepareFramed(t *testing.T) {
	random := make([]byte, 64<<10)
	rand.Read(random)
	text := bytes.Repeat([]byte("the same line again\n"), 4000)
	for _, tc := range []struct {
		name  string
		data  []byte
		codec byte
	}{
		{"raw", random, chunkstore.CodecRaw},
		{"s2", text, chunkstore.CodecS2},
	} {
		for _, inPlace := range []bool{false, true} {
			name := tc.name
			if inPlace {
				name += "-in-place"
			}
			t.Run(name, func(t *testing.T) {
				st, err := chunkstore.Open(filepath.Join(t.TempDir(), "ws"), chunkstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				frame := append(make([]byte, chunkstore.HeaderSize), tc.data...)
				var p chunkstore.Prepared
				if inPlace {
					var header []byte
					p, header = chunkstore.PrepareInPlace(frame[chunkstore.HeaderSize:], nil)
					if (header != nil) != (tc.codec == chunkstore.CodecRaw) {
						t.Fatalf("header %x for codec %d", header, tc.codec)
					}
					if header != nil {
						copy(frame, header)
						p.SetValue(frame)
					}
				} else {
					p = chunkstore.PrepareFramed(frame, nil)
				}
				if p.Codec != tc.codec || p.ID != chunkstore.Sum(tc.data) || p.Len != len(tc.data) {
					t.Fatalf("prepared %+v", p)
				}
				if !bytes.Equal(frame[chunkstore.HeaderSize:], tc.data) {
					t.Fatal("PrepareFramed changed the plaintext")
				}
				if err := st.Update(func(tx *chunkstore.Tx) error {
					_, err := tx.Put(&p)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				var got []byte
				if err := st.View(func(tx *chunkstore.Tx) error {
					got, err = tx.Get(p.ID, nil)
					if err != nil {
						return err
					}
					problems, err := tx.Check(nil)
					if len(problems) > 0 {
						t.Errorf("check: %v", problems)
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.data) {
					t.Fatal("read back different data")
				}
			})
		}
	}
}
