package chunkstore

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPrepareSamples: random data is found incompressible from samples
// and kept raw; text, and a chunk compressible only in its second half,
// are compressed; every prepared body decodes to its data.
func TestPrepareSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog 0123456789\n"), (1<<20)/55)
	// fio's write buffers: random but for 40 zero bytes every 512 (a
	// sample saves ~7%, the whole chunk short of an eighth).
	fio := bytes.Clone(random)
	for i := 0; i < len(fio); i += 512 {
		clear(fio[i+24 : i+64])
	}
	half := append(append([]byte(nil), random[:512<<10]...), text[:512<<10]...)
	tests := []struct {
		name      string
		data      []byte
		wantCodec byte
		wantSkip  bool
	}{
		{"random", random, CodecRaw, true},
		{"nearly random", fio, CodecRaw, true},
		{"text", text, CodecS2, false},
		{"random then text", half, CodecS2, false},
		{"small random", random[:4096], CodecRaw, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scratch := make([]byte, 0, len(tt.data)*2)
			if got := incompressible(tt.data, scratch[:cap(scratch)]); got != tt.wantSkip {
				t.Errorf("incompressible = %v, want %v", got, tt.wantSkip)
			}
			p := Prepare(tt.data, scratch)
			if p.Codec != tt.wantCodec {
				t.Errorf("codec %d, want %d", p.Codec, tt.wantCodec)
			}
			if p.ID != Sum(tt.data) || p.Len != len(tt.data) {
				t.Errorf("ID or length wrong")
			}
		})
	}
}
