package chunkstore

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// realRecords stores a few chunks in a fresh store and returns the raw
// values of its index entries, bodies and stats record, as found on disk.
func realRecords(f *testing.F) (index, bodies [][]byte, stats []byte) {
	f.Helper()
	s, err := Open(filepath.Join(f.TempDir(), "seed.cfs"), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	datas := [][]byte{
		nil,
		[]byte("x"),
		make([]byte, 4096),
		[]byte(strings.Repeat("compressible text ", 500)),
		bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 100),
	}
	for i := range 3 {
		b := make([]byte, 300+i*1000)
		for j := range b {
			b[j] = byte(j*j*31 + j>>3 + i*7)
		}
		datas = append(datas, b)
	}
	err = s.Update(func(tx *Tx) error {
		for i, d := range datas {
			p := Prepare(d, nil)
			for range i%3 + 1 {
				if _, err := tx.Put(&p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	s.DB().View(func(tx *bolt.Tx) error {
		sealed.In(tx, bucketIndex).ForEach(func(k, v []byte) error {
			index = append(index, bytes.Clone(v))
			return nil
		})
		tx.Bucket(bucketBodies).ForEach(func(k, v []byte) error {
			bodies = append(bodies, bytes.Clone(BodyValue(tx.Bucket(bucketBodies), k)))
			return nil
		})
		v, _ := sealed.In(tx, bucketMeta).Get(keyStats)
		stats = bytes.Clone(v)
		return nil
	})
	if len(index) != len(datas) || len(bodies) != len(datas) || len(stats) != 32 {
		f.Fatalf("seed store has %d entries, %d bodies, %d-byte stats", len(index), len(bodies), len(stats))
	}
	return index, bodies, stats
}

func FuzzDecodeIndexEntry(f *testing.F) {
	index, _, _ := realRecords(f)
	for _, v := range index {
		f.Add(v)
	}
	f.Add(indexEntry{Seq: 1<<64 - 1, Refs: 1<<64 - 1, Len: 1<<32 - 1, Stored: 1<<32 - 1}.encode())
	f.Add(make([]byte, indexEntrySize))
	f.Add([]byte{})
	f.Add(make([]byte, indexEntrySize+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		e, err := decodeIndexEntry(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("decodeIndexEntry modified its input")
		}
		if err != nil {
			if len(b) == indexEntrySize && e.Refs != 0 && e.Seq != 0 {
				t.Fatalf("well-formed entry %+v refused: %v", e, err)
			}
			return
		}
		if len(b) != indexEntrySize || e.Refs == 0 || e.Seq == 0 {
			t.Fatalf("accepted %x as %+v", b, e)
		}
		if got := e.encode(); !bytes.Equal(got, b) {
			t.Fatalf("encode(decode(%x)) = %x", b, got)
		}
	})
}

func FuzzDecodeBodyHeader(f *testing.F) {
	_, bodies, _ := realRecords(f)
	for _, v := range bodies {
		f.Add(v)
		f.Add(v[:bodyHeaderSize])
	}
	f.Add(bodyHeader{Codec: CodecS2, Len: 64 << 20}.append(nil))
	f.Add(bodyHeader{Codec: 2, Len: 1}.append(nil))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeBodyHeader(b)
		if err != nil {
			if len(b) >= bodyHeaderSize && (b[0] == CodecRaw || b[0] == CodecS2) && h.Len <= 64<<20 {
				t.Fatalf("well-formed header %x refused: %v", b[:bodyHeaderSize], err)
			}
			return
		}
		if len(b) < bodyHeaderSize || (h.Codec != CodecRaw && h.Codec != CodecS2) || h.Len > 64<<20 {
			t.Fatalf("accepted %x as %+v", b, h)
		}
		if got := h.append(nil); !bytes.Equal(got, b[:bodyHeaderSize]) {
			t.Fatalf("append(decode(%x)) = %x", b[:bodyHeaderSize], got)
		}
	})
}

func FuzzDecodeBody(f *testing.F) {
	_, bodies, _ := realRecords(f)
	for i, v := range bodies {
		f.Add(v, uint16(i*700))
	}
	// An S2 stream whose header claims more than it holds.
	enc := s2.Encode(nil, bytes.Repeat([]byte("ab"), 1000))
	f.Add(append(bodyHeader{Codec: CodecS2, Len: 2000}.append(nil), enc[:len(enc)/2]...), uint16(0))
	f.Add(append(bodyHeader{Codec: CodecRaw, Len: 3}.append(nil), "abcd"...), uint16(2))
	f.Fuzz(func(t *testing.T, raw []byte, dstCap uint16) {
		orig := bytes.Clone(raw)
		dst := make([]byte, 0, int(dstCap))
		out, err := decodeBody(raw, dst)
		if !bytes.Equal(raw, orig) {
			t.Fatal("decodeBody modified its input")
		}
		if err != nil {
			return
		}
		h, herr := decodeBodyHeader(raw)
		if herr != nil {
			t.Fatalf("decodeBody accepted a body whose header does not decode: %v", herr)
		}
		if len(out) != int(h.Len) {
			t.Fatalf("decoded %d bytes, header says %d", len(out), h.Len)
		}
		switch h.Codec {
		case CodecRaw:
			if !bytes.Equal(out, raw[bodyHeaderSize:]) {
				t.Fatal("raw body decoded to different bytes")
			}
		case CodecS2:
			want, err := s2.Decode(nil, raw[bodyHeaderSize:])
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("S2 body decoded differently from s2.Decode (%v)", err)
			}
		}
		if len(out) > 0 && len(raw) > bodyHeaderSize {
			// The result never aliases the stored value.
			if &out[0] == &raw[bodyHeaderSize:][:1][0] {
				t.Fatal("decodeBody returned a slice of its input")
			}
		}
		if int(h.Len) <= int(dstCap) && len(out) > 0 && &out[0] != &dst[:1][0] {
			t.Fatal("decodeBody did not use dst although it had room")
		}
	})
}

func FuzzDecodeStats(f *testing.F) {
	_, _, stats := realRecords(f)
	f.Add(stats)
	f.Add(Stats{}.encode())
	f.Add(Stats{Chunks: 1<<64 - 1, LogicalBytes: 1, UniqueBytes: 2, StoredBytes: 3}.encode())
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeStats(b)
		if (err == nil) != (len(b) == 32) {
			t.Fatalf("decodeStats(%d bytes): err %v", len(b), err)
		}
		if err != nil {
			return
		}
		if got := st.encode(); !bytes.Equal(got, b) {
			t.Fatalf("encode(decode(%x)) = %x", b, got)
		}
		// The ratios never panic or go negative.
		if d, c := st.DedupRatio(), st.CompressionRatio(); d < 0 || c < 0 {
			t.Fatalf("negative ratio %v %v", d, c)
		}
	})
}

// FuzzOutboard: an outboard value of any bytes, checked against a body
// of any length and verified with any groups, never panics, and never
// verifies bytes other than the body's.
func FuzzOutboard(f *testing.F) {
	body := make([]byte, 200_000)
	for i := range body {
		body[i] = byte(i * 7 / 3)
	}
	ob, _ := encodeOutboard(body)
	f.Add(ob, uint32(len(body)), uint32(70_000), uint16(4096), uint32(0), byte(0))
	f.Add(ob, uint32(len(body)), uint32(199_000), uint16(1000), uint32(3), byte(1))
	f.Add(ob[:40], uint32(len(body)), uint32(0), uint16(1), uint32(9), byte(0x80))
	f.Add([]byte{4, 1, 0, 0, 0, 0, 0, 0, 0}, uint32(1), uint32(0), uint16(1), uint32(0), byte(0))
	f.Fuzz(func(t *testing.T, v []byte, dataLen, off uint32, n uint16, flipAt uint32, flip byte) {
		orig := bytes.Clone(v)
		o, err := decodeOutboard(v, int(dataLen))
		if !bytes.Equal(v, orig) {
			t.Fatal("decodeOutboard modified its input")
		}
		if err != nil {
			return
		}
		if int(dataLen) != len(body) {
			// A well-formed outboard of another length: verifying
			// anything against this body's ID must fail.
			data := make([]byte, dataLen)
			lo, hi := o.blocks(int(off)%int(dataLen), int(n)+1, int(dataLen))
			if o.verify(data[lo:hi], lo, Sum(body)) {
				t.Fatal("verified bytes of another length against the body's ID")
			}
			return
		}
		o2 := int(off) % len(body)
		lo, hi := o.blocks(o2, int(n)+1, len(body))
		if lo%o.groupSize != 0 || hi <= lo || hi > len(body) || lo > o2 || hi < min(o2+int(n)+1, len(body)) {
			t.Fatalf("blocks(%d, %d) = [%d, %d): not group-aligned cover", o2, int(n)+1, lo, hi)
		}
		groups := bytes.Clone(body[lo:hi])
		if flip != 0 {
			groups[int(flipAt)%len(groups)] ^= flip
		}
		if o.verify(groups, lo, Sum(body)) && !bytes.Equal(groups, body[lo:hi]) {
			t.Fatal("verified bytes that are not the body's")
		}
		if bytes.Equal(v, ob) && flip == 0 && !o.verify(groups, lo, Sum(body)) {
			t.Fatal("the body's own outboard does not verify its groups")
		}
	})
}
