package fs

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
)

// realFSRecords builds a small workspace and returns the raw inode and
// directory entry records as stored.
func realFSRecords(f *testing.F) (inodes map[Ino][]byte, dirents [][]byte) {
	f.Helper()
	path := filepath.Join(f.TempDir(), "seed.cfs")
	fsys, err := Open(path, Options{ChunkSize: 4096, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	c := Caller{Uid: 1000, Gid: 1000}
	mk := func(parent Ino, name string, nn NewNode) Attr {
		a, err := fsys.Create(c, parent, name, nn)
		if err != nil {
			f.Fatal(err)
		}
		return a
	}
	d := mk(RootIno, "dir", NewNode{Mode: syscall.S_IFDIR | syscall.S_ISGID | 0o2775})
	file := mk(d.Ino, "file", NewNode{Mode: syscall.S_IFREG | 0o4755})
	fsys.Write(bg, file.Ino, 0, []byte("some data"), false)
	mk(RootIno, "link", NewNode{Mode: syscall.S_IFLNK | 0o777, Target: "dir/file"})
	mk(RootIno, "fifo", NewNode{Mode: syscall.S_IFIFO | 0o600})
	mk(RootIno, "sock", NewNode{Mode: syscall.S_IFSOCK | 0o644})
	mk(RootIno, "chr", NewNode{Mode: syscall.S_IFCHR | 0o620, Rdev: 0x0501})
	mk(RootIno, "blk", NewNode{Mode: syscall.S_IFBLK | 0o660, Rdev: 0x0803})
	if err := fsys.Close(); err != nil {
		f.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{ReadOnly: true})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	inodes = map[Ino][]byte{}
	st.View(func(tx *chunkstore.Tx) error {
		tx.Sealed(bucketInodes).ForEach(func(k, v []byte) error {
			inodes[keyIno(k)] = bytes.Clone(v)
			return nil
		})
		tx.Sealed(bucketDirents).ForEach(func(k, v []byte) error {
			dirents = append(dirents, bytes.Clone(v))
			return nil
		})
		return nil
	})
	if len(inodes) != 8 || len(dirents) != 7 {
		f.Fatalf("seed workspace has %d inodes, %d entries", len(inodes), len(dirents))
	}
	return inodes, dirents
}

var fileTypes = []uint32{syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK, syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK}

func validType(mode uint32) bool {
	for _, t := range fileTypes {
		if mode&syscall.S_IFMT == t {
			return true
		}
	}
	return false
}

func FuzzDecodeInode(f *testing.F) {
	inodes, _ := realFSRecords(f)
	for ino, v := range inodes {
		f.Add(uint64(ino), v)
	}
	f.Add(uint64(1), []byte{})
	f.Add(uint64(2), make([]byte, inodeFixedSize))
	long := encodeInode(&Attr{Mode: syscall.S_IFLNK | 0o777}, strings.Repeat("x", 4095), inodeSum{Known: true})
	f.Add(uint64(4), encodeInode(&Attr{Mode: syscall.S_IFREG | 0o644}, "", inodeSum{listSum{Count: 3, Mix: 7}, true}))
	f.Add(uint64(5), encodeInode(&Attr{Mode: syscall.S_IFREG | 0o644}, "", inodeSum{}))
	f.Add(uint64(3), long)
	f.Fuzz(func(t *testing.T, ino uint64, b []byte) {
		orig := bytes.Clone(b)
		a, target, sum, err := decodeInodeSum(Ino(ino), b)
		if !bytes.Equal(b, orig) {
			t.Fatal("decodeInode modified its input")
		}
		if err != nil {
			if a != (Attr{}) || target != "" || sum != (inodeSum{}) {
				t.Fatalf("error %v with a result %+v %q %+v", err, a, target, sum)
			}
			return
		}
		if len(b) < inodeFixedSize || b[0] != inodeRecordVersion && b[0] != inodeRecordV1 {
			t.Fatalf("accepted a %d-byte record of version %d", len(b), b[0])
		}
		if a.Ino != Ino(ino) || !validType(a.Mode) {
			t.Fatalf("decoded %+v", a)
		}
		if target != "" && !a.IsSymlink() {
			t.Fatalf("target %q on mode %#o", target, a.Mode)
		}
		// The encoding is canonical: what decodes re-encodes to itself.
		if b[0] == inodeRecordV1 && !a.IsRegular() {
			b = append([]byte{inodeRecordVersion}, b[1:]...) // rewritten in version 2
		}
		if got := encodeInode(&a, target, sum); !bytes.Equal(got, b) {
			t.Fatalf("encode(decode(%x)) = %x", b, got)
		}
	})
}

func FuzzInodeRoundTrip(f *testing.F) {
	inodes, _ := realFSRecords(f)
	for ino, v := range inodes {
		a, target, err := decodeInode(ino, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint64(a.Ino), a.Mode, a.Nlink, a.Uid, a.Gid, a.Rdev, a.Size, a.Atime, a.Mtime, a.Ctime, a.Btime, uint64(a.Parent), target)
	}
	f.Add(uint64(1<<63), uint32(0xffffffff), uint32(0), uint32(0xffffffff), uint32(0), uint32(1), uint64(1<<64-1), int64(-1<<63), int64(1<<63-1), int64(0), int64(-1), uint64(0), "")
	f.Fuzz(func(t *testing.T, ino uint64, mode, nlink, uid, gid, rdev uint32, size uint64, atime, mtime, ctime, btime int64, parent uint64, target string) {
		// Make the attributes valid: a known file type, and a target only
		// on a symlink.
		mode = mode&^syscall.S_IFMT | fileTypes[int(mode>>12)%len(fileTypes)]
		if mode&syscall.S_IFMT != syscall.S_IFLNK {
			target = ""
		}
		a := Attr{Ino: Ino(ino), Mode: mode, Nlink: nlink, Uid: uid, Gid: gid, Rdev: rdev, Size: size,
			Atime: atime, Mtime: mtime, Ctime: ctime, Btime: btime, Parent: Ino(parent)}
		b := encodeInode(&a, target, inodeSum{Known: true})
		if len(b) != inodeFixedSize+len(target) {
			t.Fatalf("record of %d bytes", len(b))
		}
		got, gotTarget, err := decodeInode(Ino(ino), b)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", a, err)
		}
		if got != a || gotTarget != target {
			t.Fatalf("decode(encode(%+v, %q)) = %+v, %q", a, target, got, gotTarget)
		}
	})
}

func FuzzDecodeDirent(f *testing.F) {
	_, dirents := realFSRecords(f)
	for _, v := range dirents {
		f.Add(v)
	}
	f.Add(encodeDirent(dirent{Ino: 1<<64 - 1, Type: syscall.S_IFMT}))
	f.Add(make([]byte, 12))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDirent(b)
		if err != nil {
			if d != (dirent{}) {
				t.Fatalf("error %v with a result %+v", err, d)
			}
			return
		}
		if len(b) != 12 || d.Ino == 0 || d.Type&^uint32(syscall.S_IFMT) != 0 {
			t.Fatalf("accepted %x as %+v", b, d)
		}
		if got := encodeDirent(d); !bytes.Equal(got, b) {
			t.Fatalf("encode(decode(%x)) = %x", b, got)
		}
	})
}

// FuzzDecodeForkRecord: a fork's record decodes or fails cleanly, and
// what decodes encodes back to the same bytes, its inode range inside
// the forks' numbers.
func FuzzDecodeForkRecord(f *testing.F) {
	f.Add(encodeForkRecord(&ForkInfo{Epoch: 7, Created: 1, InoBase: forkInoFloor, InoEnd: forkInoFloor + forkInoStride}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fi, err := decodeForkRecord("x", b)
		if err != nil {
			return
		}
		if fi.InoBase < forkInoFloor || fi.InoEnd <= fi.InoBase || fi.InoEnd > MaxIno {
			t.Fatalf("range %d-%d accepted", fi.InoBase, fi.InoEnd)
		}
		if got := encodeForkRecord(&fi); !bytes.Equal(got, b) {
			t.Fatalf("round trip %x, want %x", got, b)
		}
	})
}

// FuzzDecodeHold: a holds record (holds.go) of any bytes decodes or is
// refused, never panics; one that decodes names whole chunk IDs, at
// least one and at most holdIDs, and its key is twelve bytes.
func FuzzDecodeHold(f *testing.F) {
	id := chunkstore.Sum([]byte("x"))
	f.Add(holdKey(1, 0), id[:])
	f.Add(holdKey(1<<62, 7), append(bytes.Clone(id[:]), id[:]...))
	f.Add([]byte{1, 2, 3}, []byte{})
	f.Add(holdKey(5, 1), id[:31])
	f.Fuzz(func(t *testing.T, k, v []byte) {
		r, err := decodeHold(k, v)
		if err != nil {
			return
		}
		if len(k) != 12 || len(r.IDs) == 0 || len(r.IDs) > holdIDs || len(r.IDs)*chunkstore.IDSize != len(v) {
			t.Fatalf("decoded %d IDs from a %d-byte key and %d-byte value", len(r.IDs), len(k), len(v))
		}
		for i, id := range r.IDs {
			if !bytes.Equal(id[:], v[i*chunkstore.IDSize:(i+1)*chunkstore.IDSize]) {
				t.Fatalf("ID %d differs from its bytes", i)
			}
		}
		if !bytes.Equal(holdKey(r.Hold, r.Batch), k) {
			t.Fatal("key does not round-trip")
		}
	})
}
