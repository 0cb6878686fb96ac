package remote

import (
	"bytes"
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
)

// sampleManifest is the manifest of a small real workspace.
func sampleManifest(t testing.TB) []byte {
	ws := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := fs.Open(ws, fs.Options{ChunkSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Create(fs.Caller{}, fs.RootIno, "f", fs.NewNode{Mode: syscall.S_IFREG | 0o644})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(context.Background(), a.Ino, 0, bytes.Repeat([]byte("x"), 5000), false)
	f.Release(a.Ino)
	if _, err := f.CreateSnapshot(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	var recs []fs.TreeRecord
	snap, err := fs.ExportSnapshot(f.Store(), "s", func(r fs.TreeRecord) error { recs = append(recs, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	root := snap.Root
	return EncodeManifest(&Manifest{ManifestHeader: ManifestHeader{Format: 1, Snapshot: "s", Root: root.String(), ChunkSize: 4096}, Records: recs})
}

// FuzzDecodeManifest: any bytes decode to a manifest whose records sum
// to its root, or fail with ErrFormat; never a panic or a huge
// allocation; what decodes encodes back to a manifest that decodes the
// same.
func FuzzDecodeManifest(f *testing.F) {
	seed := sampleManifest(f)
	if _, err := DecodeManifest(seed, 1<<20); err != nil {
		f.Fatalf("the seed manifest does not decode: %v", err)
	}
	f.Add(seed)
	f.Add([]byte(manifestMagic))
	f.Add([]byte("CFSMAN1\n\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b, 1<<20)
		if err != nil {
			return
		}
		m2, err := DecodeManifest(EncodeManifest(m), 1<<20)
		if err != nil {
			t.Fatalf("re-encoded manifest: %v", err)
		}
		if m2.Root != m.Root || len(m2.Records) != len(m.Records) {
			t.Fatalf("round trip changed the manifest")
		}
	})
}

// FuzzDecodeChunk: a chunk object decodes only to the plaintext of its
// ID, within the limit.
func FuzzDecodeChunk(f *testing.F) {
	data := bytes.Repeat([]byte("chunk "), 100)
	f.Add(encodeChunk(data))
	f.Add(append([]byte{codecRaw}, data...))
	f.Add([]byte{codecS2, 0xff, 0xff, 0xff, 0xff, 0x0f})
	id := chunkstore.Sum(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeChunk(id, b, 4096)
		if err == nil && !bytes.Equal(got, data) {
			t.Fatalf("decoded %d bytes that are not the chunk", len(got))
		}
	})
}

// FuzzDecodeRef: refs decode or fail with ErrFormat.
func FuzzDecodeRef(f *testing.F) {
	f.Add([]byte(`{"manifest":"` + string(bytes.Repeat([]byte("a"), 64)) + `","root":"` + string(bytes.Repeat([]byte("0"), 64)) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeRef(b)
	})
}
