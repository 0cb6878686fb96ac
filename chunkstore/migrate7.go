package chunkstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
	bolt "go.etcd.io/bbolt"
)

// The records migrateFoldListSums rewrites are fs's (FORMAT.md,
// "inodes" and "fsums"); it is here because every upgrade step runs at
// open, before fs reads anything.
var (
	bucketFSInodes = []byte("inodes")
	bucketFSChunks = []byte("fchunks")
	bucketFSSums   = []byte("fsums")
)

const (
	inodeFixed6 = 69 // an inode record's version byte and fixed fields
	sIFMT       = 0o170000
	sIFREG      = 0o100000
)

// migrateFoldListSums (format 7) moves each regular file's chunk list
// summary from its fsums record into the end of its inode record, and
// drops the fsums bucket: a commit of a small file wrote a leaf and a
// branch page of fsums besides its inode's (BenchmarkCommitCost in fs).
// Every inode record becomes version 2, keeping its birth epoch; a
// regular file's gets uvarint count ‖ 8-byte mix when its summary is not
// zero. A file with a chunk list and no summary gets none (zero), so
// that its list still disagrees, as it did. A store without the bucket
// (format 2, upgraded in this same open) gets the summaries computed
// from the lists, as fs built them at open before. A damaged inode
// record, or a damaged summary, leaves the record as it was (fsck
// reports the one; the other's file is taken as its list is). The
// births entries of the summaries go; the versions snapshots keep of
// them stay (fs reads them for the inode records of then, which have
// none). The root identifier is computed anew: the records it sums
// changed.
func migrateFoldListSums(tx *bolt.Tx) error {
	inodes := tx.Bucket(bucketFSInodes)
	if inodes == nil {
		return nil // fs has not initialised the store
	}
	var computed map[uint64][16]byte
	sums := tx.Bucket(bucketFSSums)
	if sums == nil {
		var err error
		if computed, err = computeListSums(tx); err != nil {
			return err
		}
	}
	summary := func(k []byte) ([]byte, bool) {
		if sums == nil {
			s, ok := computed[binary.BigEndian.Uint64(k)]
			if !ok {
				return nil, true
			}
			return s[:], true
		}
		v := sums.Get(k)
		if v == nil {
			return nil, true
		}
		s, err := sealed.In(tx, bucketFSSums).Get(k)
		if err != nil || len(s) != 16 {
			return nil, false
		}
		return s, true
	}
	err := resealBucket(inodes, bucketFSInodes, func(name, k, v []byte) ([]byte, error) {
		val, birth, err := sealed.OpenBirth(name, k, v)
		if err != nil || len(val) < inodeFixed6 || val[0] != 1 || len(k) != 8 {
			return v, nil // damaged or malformed: fsck's
		}
		nv := append([]byte{2}, val[1:]...)
		if binary.BigEndian.Uint32(val[1:])&sIFMT == sIFREG {
			s, ok := summary(k)
			if !ok {
				return v, nil // a damaged summary: the record stays version 1
			}
			nv = nv[:inodeFixed6] // a regular file's record holds nothing more
			if s != nil && !bytes.Equal(s, make([]byte, 16)) {
				nv = binary.AppendUvarint(nv, binary.BigEndian.Uint64(s))
				nv = append(nv, s[8:16]...)
			}
		}
		return sealed.Seal(name, k, nv, birth), nil
	})
	if err != nil {
		return fmt.Errorf("fold the chunk list summaries into the inodes: %w", err)
	}
	if sums != nil {
		if err := tx.DeleteBucket(bucketFSSums); err != nil {
			return err
		}
	}
	if births := tx.Bucket(versions.BucketBirths); births != nil {
		id := versions.ID(bucketFSSums)
		var drop [][]byte
		c := births.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) > 8 && k[8] == id {
				drop = append(drop, bytes.Clone(k))
			}
		}
		for _, k := range drop {
			if err := births.Delete(k); err != nil {
				return err
			}
		}
	}
	return migrateRoot(tx)
}

// computeListSums is every chunk list's summary, as fs computes it
// (fs/records.go, listSum): count, then the XOR over the records of
// mix(index) ^ the first 8 bytes of the chunk ID.
func computeListSums(tx *bolt.Tx) (map[uint64][16]byte, error) {
	out := make(map[uint64][16]byte)
	err := sealed.In(tx, bucketFSChunks).Walk(func(k, v []byte, damage error) error {
		if damage != nil || len(k) != 16 || len(v) < 8 {
			return nil // fsck's to report; the file's summary then differs
		}
		ino := binary.BigEndian.Uint64(k)
		s := out[ino]
		count := binary.BigEndian.Uint64(s[:8]) + 1
		mix := binary.BigEndian.Uint64(s[8:]) ^ mixChunk(binary.BigEndian.Uint64(k[8:]), v)
		binary.BigEndian.PutUint64(s[:8], count)
		binary.BigEndian.PutUint64(s[8:], mix)
		out[ino] = s
		return nil
	})
	return out, err
}

// mixChunk is fs's: splitmix64's finaliser of the index, XOR the ID's
// first 8 bytes.
func mixChunk(idx uint64, id []byte) uint64 {
	z := idx + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return z ^ binary.BigEndian.Uint64(id)
}
