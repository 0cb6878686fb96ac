package chunkstore

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3/bao"
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

// TestVerifyInPlaceMatchesBao checks verifyInPlace against
// bao.VerifyChunk on ranges of one to three groups spread over bodies of
// lengths around group and power-of-two boundaries: intact (which must
// verify), with a byte flipped in the range (which must not), with a
// node of the tree or a byte of the root changed, and cut short, run
// past a group, shifted off its group or past the body's end.
func TestVerifyInPlaceMatchesBao(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 1023, 1024, outboardGroup - 1, outboardGroup, outboardGroup + 1,
		3*outboardGroup + 5, outboardMin - 1, outboardMin, outboardMin + 1, 100_000, 1 << 20, 1<<20 + 1} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(r.Uint32())
		}
		ob, id := encodeOutboard(body)
		tree := ob[1:]
		groups := (n + outboardGroup - 1) / outboardGroup
		check := func(what string, data, tree []byte, lo int, root ID) {
			t.Helper()
			got := verifyInPlace(data, tree, uint64(lo), root)
			want := bao.VerifyChunk(data, tree, outboardGroupLog, uint64(lo), root)
			if got != want {
				t.Fatalf("%d bytes, %s at %d (+%d): verifyInPlace %v, bao.VerifyChunk %v", n, what, lo, len(data), got, want)
			}
		}
		for i := 0; i < groups; i += 1 + groups/16 {
			for k := 1; k <= 3 && i+k <= groups; k++ {
				lo, hi := i*outboardGroup, min((i+k)*outboardGroup, n)
				data := bytes.Clone(body[lo:hi])
				check("intact", data, tree, lo, id)
				if !verifyInPlace(data, tree, uint64(lo), id) {
					t.Fatalf("%d bytes: intact range at %d does not verify", n, lo)
				}
				data[r.IntN(len(data))] ^= 1 << r.IntN(8)
				check("a flipped byte", data, tree, lo, id)
				if verifyInPlace(data, tree, uint64(lo), id) {
					t.Fatalf("%d bytes: a flipped byte in the range at %d verifies", n, lo)
				}
				bad := bytes.Clone(tree)
				if len(bad) > 8 {
					bad[8+r.IntN(len(bad)-8)] ^= 0x10
					check("a flipped node", body[lo:hi], bad, lo, id)
				}
				root := id
				root[r.IntN(len(root))] ^= 4
				check("another root", body[lo:hi], tree, lo, root)
				check("a short range", body[lo:hi-1], tree, lo, id)
				if hi+1 <= n {
					check("a range past a group", body[lo:hi+1], tree, lo, id)
				}
				check("a shifted offset", body[lo:hi], tree, lo+1, id)
				check("a range past the end", body[lo:hi], tree, n-len(body[lo:hi])+1, id)
			}
		}
		check("an empty range", nil, tree, 0, id)
		check("a cut tree", body[:min(n, outboardGroup)], tree[:len(tree)-1], 0, id)
		check("no tree", body[:min(n, outboardGroup)], tree[:4], 0, id)
	}
}

// FuzzVerifyInPlace: verifyInPlace answers as bao.VerifyChunk does for
// any groups, tree and offset, and never panics.
func FuzzVerifyInPlace(f *testing.F) {
	body := make([]byte, 100_000)
	for i := range body {
		body[i] = byte(i * 13 / 5)
	}
	ob, id := encodeOutboard(body)
	f.Add(body[outboardGroup:3*outboardGroup], ob[1:], uint32(outboardGroup), id[:])
	f.Add(body[6*outboardGroup:], ob[1:], uint32(6*outboardGroup), id[:])
	f.Add([]byte{}, ob[1:], uint32(0), id[:])
	small := make([]byte, 8)
	binary.LittleEndian.PutUint64(small, 5)
	f.Add([]byte("hello"), small, uint32(0), make([]byte, 32))
	f.Fuzz(func(t *testing.T, data, tree []byte, off uint32, root []byte) {
		var r ID
		copy(r[:], root)
		got := verifyInPlace(data, tree, uint64(off), r)
		want := bao.VerifyChunk(data, tree, outboardGroupLog, uint64(off), r)
		if got != want {
			t.Fatalf("verifyInPlace %v, bao.VerifyChunk %v", got, want)
		}
	})
}
