package chunkstore

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestEncodeOutboardMatchesBao checks the in-place outboard walk against
// bao.Encode, and its root against the ID, for lengths around group and
// power-of-two boundaries.
func TestEncodeOutboardMatchesBao(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 1023, 1024, outboardGroup - 1, outboardGroup, outboardGroup + 1,
		3*outboardGroup + 5, outboardMin - 1, outboardMin, outboardMin + 1, 100_000,
		1<<20 - 1, 1 << 20, 1<<20 + 1, 4<<20 - 7} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		got, gotID := encodeOutboard(data)
		want, wantID := encodeOutboardBao(data)
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes: outboard differs from bao.Encode's", n)
		}
		if gotID != wantID || gotID != Sum(data) {
			t.Errorf("%d bytes: root %s, bao %s, ID %s", n, gotID.Short(), wantID.Short(), Sum(data).Short())
		}
	}
}

func BenchmarkEncodeOutboard(b *testing.B) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, bc := range []struct {
		name string
		fn   func([]byte) ([]byte, ID)
	}{{"inplace", encodeOutboard}, {"bao", encodeOutboardBao}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				bc.fn(data)
			}
		})
	}
}

func BenchmarkEncodeOutboardParallel(b *testing.B) {
	b.SetBytes(1 << 20)
	b.RunParallel(func(pb *testing.PB) {
		data := make([]byte, 1<<20)
		for i := range data {
			data[i] = byte(i * 7)
		}
		for pb.Next() {
			encodeOutboard(data)
		}
	})
}

func BenchmarkSumParallel(b *testing.B) {
	b.SetBytes(1 << 20)
	b.RunParallel(func(pb *testing.PB) {
		data := make([]byte, 1<<20)
		for i := range data {
			data[i] = byte(i * 7)
		}
		for pb.Next() {
			Sum(data)
		}
	})
}
