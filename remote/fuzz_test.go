package remote

import (
	"bytes"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
)

func sampleManifest(t testing.TB) []byte {
	recs := []fs.TreeRecord{
		{Bucket: fs.RecInodes, Key: []byte{0, 0, 0, 0, 0, 0, 0, 1}, Value: bytes.Repeat([]byte{1}, 69)},
		{Bucket: fs.RecChunks, Key: make([]byte, 16), Value: make([]byte, 32)},
	}
	root, err := fs.TreeRoot(recs)
	if err != nil {
		t.Fatal(err)
	}
	return EncodeManifest(&Manifest{ManifestHeader: ManifestHeader{Format: 1, Snapshot: "s", Root: root.String(), ChunkSize: 1 << 20}, Records: recs})
}

// FuzzDecodeManifest: any bytes decode to a manifest whose records sum
// to its root, or fail with ErrFormat; never a panic or a huge
// allocation; what decodes encodes back to a manifest that decodes the
// same.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(sampleManifest(f))
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
