package chunkstore

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// indexEntry is the value of a chunkidx record (see FORMAT.md).
type indexEntry struct {
	Seq    uint64 // key of the body in the chunks bucket
	Refs   uint64 // references from files; always >= 1 when stored
	Len    uint32 // plaintext length
	Stored uint32 // stored body length, without its header
}

const indexEntrySize = 24

func (e indexEntry) encode() []byte {
	b := make([]byte, indexEntrySize)
	binary.BigEndian.PutUint64(b[0:], e.Seq)
	binary.BigEndian.PutUint64(b[8:], e.Refs)
	binary.BigEndian.PutUint32(b[16:], e.Len)
	binary.BigEndian.PutUint32(b[20:], e.Stored)
	return b
}

func decodeIndexEntry(b []byte) (indexEntry, error) {
	if len(b) != indexEntrySize {
		return indexEntry{}, fmt.Errorf("index entry is %d bytes, want %d", len(b), indexEntrySize)
	}
	e := indexEntry{
		Seq:    binary.BigEndian.Uint64(b[0:]),
		Refs:   binary.BigEndian.Uint64(b[8:]),
		Len:    binary.BigEndian.Uint32(b[16:]),
		Stored: binary.BigEndian.Uint32(b[20:]),
	}
	if e.Refs == 0 {
		return e, errors.New("index entry with zero references")
	}
	if e.Seq == 0 {
		return e, errors.New("index entry with sequence 0")
	}
	return e, nil
}

// bodyHeader precedes every stored body. It names the chunk so that fsck can
// tie a body back to its index entry.
type bodyHeader struct {
	Codec byte
	Len   uint32
	ID    ID
}

const bodyHeaderSize = 1 + 4 + IDSize

func (h bodyHeader) append(b []byte) []byte {
	b = append(b, h.Codec)
	b = binary.BigEndian.AppendUint32(b, h.Len)
	return append(b, h.ID[:]...)
}

func decodeBodyHeader(b []byte) (bodyHeader, error) {
	if len(b) < bodyHeaderSize {
		return bodyHeader{}, fmt.Errorf("body is %d bytes, shorter than its header", len(b))
	}
	h := bodyHeader{Codec: b[0], Len: binary.BigEndian.Uint32(b[1:])}
	copy(h.ID[:], b[5:bodyHeaderSize])
	if h.Codec != CodecRaw && h.Codec != CodecS2 {
		return h, fmt.Errorf("unknown codec %d", h.Codec)
	}
	if h.Len > 64<<20 {
		return h, fmt.Errorf("body length %d is implausible", h.Len)
	}
	return h, nil
}

// Stats summarise the chunks in a store.
type Stats struct {
	Chunks       uint64 // distinct chunks stored
	LogicalBytes uint64 // plaintext bytes referenced by files, counting every reference
	UniqueBytes  uint64 // plaintext bytes of distinct chunks
	StoredBytes  uint64 // bytes of stored bodies after compression
}

// DedupRatio is logical bytes over unique bytes (1 when nothing is shared).
func (s Stats) DedupRatio() float64 { return ratio(s.LogicalBytes, s.UniqueBytes) }

// CompressionRatio is unique plaintext bytes over stored bytes.
func (s Stats) CompressionRatio() float64 { return ratio(s.UniqueBytes, s.StoredBytes) }

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func (s Stats) encode() []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b[0:], s.Chunks)
	binary.BigEndian.PutUint64(b[8:], s.LogicalBytes)
	binary.BigEndian.PutUint64(b[16:], s.UniqueBytes)
	binary.BigEndian.PutUint64(b[24:], s.StoredBytes)
	return b
}

func decodeStats(b []byte) (Stats, error) {
	if len(b) != 32 {
		return Stats{}, fmt.Errorf("stats record is %d bytes, want 32", len(b))
	}
	return Stats{
		Chunks:       binary.BigEndian.Uint64(b[0:]),
		LogicalBytes: binary.BigEndian.Uint64(b[8:]),
		UniqueBytes:  binary.BigEndian.Uint64(b[16:]),
		StoredBytes:  binary.BigEndian.Uint64(b[24:]),
	}, nil
}

// Stats returns the counters kept with every change.
func (t *Tx) Stats() (Stats, error) {
	if t.w != nil && t.w.stats != nil {
		return *t.w.stats, nil
	}
	v, err := t.Sealed(bucketMeta).Get(keyStats)
	if err != nil {
		return Stats{}, t.damaged(err)
	}
	st, err := decodeStats(v)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return st, nil
}

// adjustStats changes the counters. They are read (and verified) once
// per transaction and written once, as it commits (flushStats): a
// commit of a hundred new chunks used to read, verify, seal and write
// the record a hundred times.
func (t *Tx) adjustStats(fn func(*Stats)) error {
	w := t.writes()
	if w.stats == nil {
		st, err := t.Stats()
		if err != nil {
			return err
		}
		w.stats = &st
	}
	fn(w.stats)
	return nil
}

// putStats writes st as the counters (fsck's recount).
func (t *Tx) putStats(st Stats) error {
	t.writes().stats = nil
	return t.Sealed(bucketMeta).Put(keyStats, st.encode())
}

// flushStats writes the counters adjustStats changed: Update calls it
// before it commits.
func (t *Tx) flushStats() error {
	if t.w == nil || t.w.stats == nil {
		return nil
	}
	st := *t.w.stats
	return t.putStats(st)
}
