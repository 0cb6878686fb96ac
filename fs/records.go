package fs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// Bucket names of the fs layer (FORMAT.md in chunkstore describes them).
var (
	bucketInodes  = []byte("inodes")
	bucketDirents = []byte("dirents")
	bucketChunks  = []byte("fchunks")
	bucketXattrs  = []byte("xattrs")
	bucketOrphans = []byte("orphans")
	bucketMeta    = []byte("meta")
	// bucketSums held the chunk list summaries in format 6 and before;
	// a diff reads the versions snapshots kept of it from then.
	bucketSums = []byte("fsums")
	// bucketSnapshots: name → snapshot record (snapshot.go).
	bucketSnapshots = []byte("snapshots")
)

// Keys of the fs layer in the shared meta bucket.
var (
	keyNextIno = []byte("next_ino")
	keyLimit   = []byte("limit_bytes")
	// keyEpoch is the number of the last commit: every record a commit
	// writes is born at its epoch (fs/SNAPSHOTS.md).
	keyEpoch = []byte("epoch")
)

// Ino is an inode number: the FUSE node ID and st_ino. Never reused.
type Ino uint64

// RootIno is the root directory, as FUSE numbers it.
const RootIno Ino = 1

// Attr is an inode's metadata, as stored.
type Attr struct {
	Ino    Ino
	Mode   uint32 // type and permission bits, exactly as given
	Nlink  uint32
	Uid    uint32
	Gid    uint32
	Rdev   uint32
	Size   uint64
	Atime  int64 // nanoseconds since the epoch
	Mtime  int64
	Ctime  int64
	Btime  int64
	Parent Ino // directories: the one directory that names it; others: a hint, a directory that named them (0 in old records)
	// Blocks is st_blocks, in 512-byte units: what the file's stored
	// chunks take (holes take nothing). Filled in by the FS when it hands
	// out attributes; not part of the record.
	Blocks uint64
}

// IsDir and friends test the type bits.
func (a *Attr) IsDir() bool     { return a.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func (a *Attr) IsRegular() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFREG }
func (a *Attr) IsSymlink() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// Inode record versions: 2 from format 7, whose regular files carry
// their chunk list's summary; 1 before (format 6 and older: the summary
// was a record of the fsums bucket). A version 1 record can still be met
// in a store of format 7: a version a snapshot kept from before the
// upgrade, put back by a restore or an undo.
const (
	inodeRecordV1      = 1
	inodeRecordVersion = 2
)
const inodeFixedSize = 1 + 4*5 + 8*6

// inodeSum is a regular file's chunk list summary as its inode record
// holds it. Known is false for a version 1 record, which has none: the
// list is then taken as it is (read from the store) until the next
// commit of the file writes one.
type inodeSum struct {
	listSum
	Known bool
}

// encodeInode lays out an inode record: a version byte, the fixed fields
// big-endian, then a symlink's target, or a regular file's chunk list
// summary (empty when the list is: else uvarint count, 8-byte mix).
// A regular file's record whose summary is not known is written in
// version 1, without one.
func encodeInode(a *Attr, target string, sum inodeSum) []byte {
	b := make([]byte, 0, inodeFixedSize+len(target)+binary.MaxVarintLen64+8)
	version := byte(inodeRecordVersion)
	if a.IsRegular() && !sum.Known {
		version = inodeRecordV1
	}
	b = append(b, version)
	b = binary.BigEndian.AppendUint32(b, a.Mode)
	b = binary.BigEndian.AppendUint32(b, a.Nlink)
	b = binary.BigEndian.AppendUint32(b, a.Uid)
	b = binary.BigEndian.AppendUint32(b, a.Gid)
	b = binary.BigEndian.AppendUint32(b, a.Rdev)
	b = binary.BigEndian.AppendUint64(b, a.Size)
	b = binary.BigEndian.AppendUint64(b, uint64(a.Atime))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Mtime))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Ctime))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Btime))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Parent))
	if a.IsRegular() && version == inodeRecordVersion && sum.listSum != (listSum{}) {
		b = binary.AppendUvarint(b, sum.Count)
		return binary.BigEndian.AppendUint64(b, sum.Mix)
	}
	return append(b, target...)
}

var errBadRecord = errors.New("malformed record")

func decodeInode(ino Ino, b []byte) (Attr, string, error) {
	a, target, _, err := decodeInodeSum(ino, b)
	return a, target, err
}

// decodeInodeSum is decodeInode with a regular file's chunk list
// summary.
func decodeInodeSum(ino Ino, b []byte) (Attr, string, inodeSum, error) {
	if len(b) < inodeFixedSize {
		return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: %d bytes", ino, errBadRecord, len(b))
	}
	if b[0] != inodeRecordVersion && b[0] != inodeRecordV1 {
		return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: record version %d", ino, errBadRecord, b[0])
	}
	// Fixed offsets, one bounds check: a node load decodes one record.
	f := (*[inodeFixedSize]byte)(b)
	be := binary.BigEndian
	a := Attr{
		Ino:    ino,
		Mode:   be.Uint32(f[1:]),
		Nlink:  be.Uint32(f[5:]),
		Uid:    be.Uint32(f[9:]),
		Gid:    be.Uint32(f[13:]),
		Rdev:   be.Uint32(f[17:]),
		Size:   be.Uint64(f[21:]),
		Atime:  int64(be.Uint64(f[29:])),
		Mtime:  int64(be.Uint64(f[37:])),
		Ctime:  int64(be.Uint64(f[45:])),
		Btime:  int64(be.Uint64(f[53:])),
		Parent: Ino(be.Uint64(f[61:])),
	}
	p := b[inodeFixedSize:]
	switch a.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK, syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK:
	default:
		return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: file type %#o", ino, errBadRecord, a.Mode&syscall.S_IFMT)
	}
	sum := inodeSum{Known: true}
	if a.IsRegular() {
		switch {
		case b[0] == inodeRecordV1:
			sum.Known = false
			if len(p) != 0 {
				return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: target on a non-symlink", ino, errBadRecord)
			}
		case len(p) != 0:
			c, n := binary.Uvarint(p)
			if n <= 0 || len(p) != n+8 {
				return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: chunk list summary of %d bytes", ino, errBadRecord, len(p))
			}
			sum.Count, sum.Mix = c, binary.BigEndian.Uint64(p[n:])
			if sum.listSum == (listSum{}) {
				return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: an empty chunk list summary written out", ino, errBadRecord)
			}
		}
		return a, "", sum, nil
	}
	target := string(p)
	if target != "" && !a.IsSymlink() {
		return Attr{}, "", inodeSum{}, fmt.Errorf("inode %d: %w: target on a non-symlink", ino, errBadRecord)
	}
	return a, target, sum, nil
}

func inoKey(ino Ino) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(ino)) }

func keyIno(k []byte) Ino { return Ino(binary.BigEndian.Uint64(k)) }

// direntKey is the parent's inode number followed by the name.
func direntKey(parent Ino, name string) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(name)), uint64(parent)), name...)
}

// dirent is a directory entry's value: the child and its file type, so
// that readdir needs no inode reads.
type dirent struct {
	Ino  Ino
	Type uint32 // S_IFMT bits of the child
}

func encodeDirent(d dirent) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(d.Ino))
	return binary.BigEndian.AppendUint32(b, d.Type)
}

func decodeDirent(b []byte) (dirent, error) {
	if len(b) != 12 {
		return dirent{}, fmt.Errorf("dirent: %w: %d bytes", errBadRecord, len(b))
	}
	d := dirent{Ino: Ino(binary.BigEndian.Uint64(b)), Type: binary.BigEndian.Uint32(b[8:])}
	if d.Ino == 0 || d.Type&^uint32(syscall.S_IFMT) != 0 {
		return dirent{}, fmt.Errorf("dirent: %w: ino %d type %#o", errBadRecord, d.Ino, d.Type)
	}
	return d, nil
}

// chunkKey is the inode number followed by the chunk index.
func chunkKey(ino Ino, idx uint64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(ino))
	return binary.BigEndian.AppendUint64(b, idx)
}

func xattrKey(ino Ino, name string) []byte { return direntKey(ino, name) }

func u64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// listSum summarises a file's chunk list (in its inode record; the fsums
// bucket before format 7): how many
// records it has and the XOR of a mix of each record's index and chunk
// ID. A record that vanished (its key damaged, its page misrouted) or
// changed reads as a hole or as another chunk without any seal failing;
// the summary, kept in the same commits as the list, tells. XOR makes
// each change O(1): adding and removing a record are the same step.
type listSum struct {
	Count uint64
	Mix   uint64
}

const listSumSize = 16

// add counts record (idx, id) in or out of the sum.
func (s *listSum) add(idx uint64, id []byte, sign int) {
	s.Mix ^= mixChunk(idx, id)
	if sign > 0 {
		s.Count++
	} else {
		s.Count--
	}
}

// mixChunk spreads an index over 64 bits (splitmix64's finaliser) and
// XORs it with the ID's first 8 bytes: records that differ in either
// contribute different words.
func mixChunk(idx uint64, id []byte) uint64 {
	z := idx + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	if len(id) >= 8 {
		z ^= binary.BigEndian.Uint64(id)
	}
	return z
}

func (s listSum) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, listSumSize), s.Count)
	return binary.BigEndian.AppendUint64(b, s.Mix)
}

func decodeListSum(b []byte) (listSum, error) {
	if len(b) != listSumSize {
		return listSum{}, fmt.Errorf("chunk list summary: %w: %d bytes", errBadRecord, len(b))
	}
	return listSum{Count: binary.BigEndian.Uint64(b), Mix: binary.BigEndian.Uint64(b[8:])}, nil
}
