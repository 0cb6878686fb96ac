package remote

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/zeebo/blake3"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/versions"
)

// ErrFormat is the cause of a remote object that does not decode: never
// trusted, never installed.
var ErrFormat = errors.New("malformed remote object")

// manifestMagic starts every manifest object (FORMAT.md).
const manifestMagic = "CFSMAN1\n"

// ManifestHeader describes a pushed snapshot.
type ManifestHeader struct {
	Format    int    `json:"format"`
	Snapshot  string `json:"snapshot"`
	Epoch     uint64 `json:"epoch"`
	Created   int64  `json:"created"`
	Root      string `json:"root"`
	ChunkSize int    `json:"chunk_size"`
	Records   int    `json:"records"`
	// Parent is the manifest the pusher last synced with ("" if none).
	Parent   string `json:"parent,omitempty"`
	Host     string `json:"host,omitempty"`
	PushedAt string `json:"pushed_at,omitempty"`
	// Generation is the ref's (Ref.Generation), sealed in the manifest
	// so that a ref cannot claim another for it.
	Generation uint64 `json:"generation,omitempty"`
}

// Manifest is a decoded manifest: its header and the snapshot's records.
type Manifest struct {
	ManifestHeader
	Records []fs.TreeRecord
}

// root is the header's root, parsed.
func (m *Manifest) root() (versions.Root, error) { return versions.ParseRoot(m.Root) }

// Chunks is the set of chunks the records name.
func (m *Manifest) Chunks() []chunkstore.ID {
	seen := make(map[chunkstore.ID]bool)
	var out []chunkstore.ID
	for _, r := range m.Records {
		if id, ok := r.Chunk(); ok && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// EncodeManifest lays out a manifest: the magic, then S2 (block format)
// of uvarint len(header) ‖ header JSON ‖ uvarint count ‖ records, each
// bucket id ‖ uvarint len(key) ‖ key ‖ uvarint len(value) ‖ value.
func EncodeManifest(m *Manifest) []byte {
	h := m.ManifestHeader
	h.Records = len(m.Records)
	hj, _ := json.Marshal(h)
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(hj)))
	body = append(body, hj...)
	body = binary.AppendUvarint(body, uint64(len(m.Records)))
	for _, r := range m.Records {
		body = append(body, r.Bucket)
		body = binary.AppendUvarint(body, uint64(len(r.Key)))
		body = append(body, r.Key...)
		body = binary.AppendUvarint(body, uint64(len(r.Value)))
		body = append(body, r.Value...)
	}
	return append([]byte(manifestMagic), s2.Encode(nil, body)...)
}

// maxManifest bounds a manifest's decoded size.
const maxManifest = 4 << 30

// DecodeManifest decodes a manifest of at most limit decoded bytes and
// checks that its records sum to the root its header states. It
// returns ErrFormat for anything else.
func DecodeManifest(b []byte, limit int) (*Manifest, error) {
	if !bytes.HasPrefix(b, []byte(manifestMagic)) {
		return nil, fmt.Errorf("manifest: %w: bad magic", ErrFormat)
	}
	b = b[len(manifestMagic):]
	n, err := s2.DecodedLen(b)
	if err != nil || n > limit {
		return nil, fmt.Errorf("manifest: %w: decoded length %d (%v)", ErrFormat, n, err)
	}
	body, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w: %v", ErrFormat, err)
	}
	p := body
	next := func(what string) (uint64, error) {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, fmt.Errorf("manifest: %w: %s", ErrFormat, what)
		}
		p = p[k:]
		return v, nil
	}
	bytesOf := func(what string) ([]byte, error) {
		l, err := next(what)
		if err != nil {
			return nil, err
		}
		if l > uint64(len(p)) {
			return nil, fmt.Errorf("manifest: %w: %s of %d bytes past the end", ErrFormat, what, l)
		}
		v := p[:l]
		p = p[l:]
		return v, nil
	}
	hj, err := bytesOf("header")
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	if err := json.Unmarshal(hj, &m.ManifestHeader); err != nil {
		return nil, fmt.Errorf("manifest: %w: header: %v", ErrFormat, err)
	}
	if m.Format != 1 {
		return nil, fmt.Errorf("manifest: %w: format %d, this binary reads 1", ErrFormat, m.Format)
	}
	if m.ChunkSize < 4096 || m.ChunkSize > 4<<20 || m.ChunkSize&(m.ChunkSize-1) != 0 {
		return nil, fmt.Errorf("manifest: %w: chunk size %d", ErrFormat, m.ChunkSize)
	}
	count, err := next("record count")
	if err != nil {
		return nil, err
	}
	if count != uint64(m.ManifestHeader.Records) || count > uint64(len(p))/3 {
		return nil, fmt.Errorf("manifest: %w: %d records", ErrFormat, count)
	}
	m.Records = make([]fs.TreeRecord, 0, count)
	for range count {
		if len(p) == 0 {
			return nil, fmt.Errorf("manifest: %w: truncated", ErrFormat)
		}
		r := fs.TreeRecord{Bucket: p[0]}
		p = p[1:]
		if r.Key, err = bytesOf("key"); err != nil {
			return nil, err
		}
		if r.Value, err = bytesOf("value"); err != nil {
			return nil, err
		}
		m.Records = append(m.Records, r)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("manifest: %w: %d bytes after the records", ErrFormat, len(p))
	}
	if err := fs.CheckTree(m.Records, m.ChunkSize); err != nil {
		return nil, fmt.Errorf("manifest: %w: %v", ErrFormat, err)
	}
	want, err := m.root()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w: root: %v", ErrFormat, err)
	}
	got, err := fs.TreeRoot(m.Records)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w: %v", ErrFormat, err)
	}
	if got != want {
		return nil, fmt.Errorf("manifest: %w: its records sum to root %s, its header says %s", ErrFormat, got, want)
	}
	return m, nil
}

// ManifestID names a manifest object: BLAKE3-256 of its bytes, in hex.
func ManifestID(b []byte) string {
	s := blake3.Sum256(b)
	return fmt.Sprintf("%x", s[:])
}

// Chunk object codecs (FORMAT.md).
const (
	codecRaw byte = 0
	codecS2  byte = 1
)

// encodeChunk is a chunk object: a codec byte, then the plaintext, S2
// compressed when that saves an eighth.
func encodeChunk(data []byte) []byte {
	if len(data) >= 64 {
		enc := s2.Encode(nil, data)
		if len(enc) <= len(data)-len(data)/8 {
			return append([]byte{codecS2}, enc...)
		}
	}
	return append([]byte{codecRaw}, data...)
}

// decodeChunk decodes a chunk object of at most limit plaintext bytes
// and checks it against its ID.
func decodeChunk(id chunkstore.ID, b []byte, limit int) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("chunk %s: %w: empty object", id, ErrFormat)
	}
	var data []byte
	switch b[0] {
	case codecRaw:
		data = b[1:]
	case codecS2:
		n, err := s2.DecodedLen(b[1:])
		if err != nil || n > limit {
			return nil, fmt.Errorf("chunk %s: %w: decoded length %d (%v)", id, ErrFormat, n, err)
		}
		if data, err = s2.Decode(nil, b[1:]); err != nil {
			return nil, fmt.Errorf("chunk %s: %w: %v", id, ErrFormat, err)
		}
	default:
		return nil, fmt.Errorf("chunk %s: %w: codec %d", id, ErrFormat, b[0])
	}
	if len(data) > limit {
		return nil, fmt.Errorf("chunk %s: %w: %d bytes", id, ErrFormat, len(data))
	}
	if chunkstore.Sum(data) != id {
		return nil, fmt.Errorf("chunk %s: %w: content does not match its ID", id, ErrFormat)
	}
	return data, nil
}

// Ref is a pointer to a manifest: the workspace's HEAD, or a named
// snapshot's (FORMAT.md).
type Ref struct {
	Manifest string `json:"manifest"`
	Root     string `json:"root"`
	Snapshot string `json:"snapshot"`
	Parent   string `json:"parent,omitempty"`
	Host     string `json:"host,omitempty"`
	PushedAt string `json:"pushed_at,omitempty"`
	// Generation counts the pushes that moved HEAD: its parent's plus
	// one (0: pushed before generations). A HEAD whose generation is
	// below one seen before was rolled back.
	Generation uint64 `json:"generation,omitempty"`
}

func decodeRef(b []byte) (Ref, error) {
	var r Ref
	if err := json.Unmarshal(b, &r); err != nil {
		return Ref{}, fmt.Errorf("ref: %w: %v", ErrFormat, err)
	}
	if len(r.Manifest) != 64 || !isHex(r.Manifest) {
		return Ref{}, fmt.Errorf("ref: %w: manifest %q", ErrFormat, r.Manifest)
	}
	if _, err := versions.ParseRoot(r.Root); err != nil {
		return Ref{}, fmt.Errorf("ref: %w: root %q", ErrFormat, r.Root)
	}
	return r, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
