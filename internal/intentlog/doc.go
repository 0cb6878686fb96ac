// Package intentlog is the intent log of a computerfs store, like ZFS's
// ZIL: a file beside the store to which an fsync appends the changes it
// must make durable, syncs, and returns, instead of running a full store
// commit. After a crash the filesystem reads the records back with Read
// and replays them.
//
// # What it owns
//
// The package owns the log file's format, appending records to it, the
// group sync that makes them durable, and reading them back. Payloads are
// opaque: it knows nothing of what they mean, of the store, or of when a
// generation is retired. It touches no file but the one at the path it is
// given (and, in Remove and the first Sync of a Log, an fsync of that
// file's directory). It starts no goroutines and keeps no global state.
//
// # On-disk format
//
// The file is a sequence of records, each starting at an 8-byte-aligned
// offset, the first at offset 0:
//
//	magic   [4]byte  "CFIL"
//	crc     uint32   CRC-32C (Castagnoli) of gen, lsn, length and payload
//	gen     uint64   generation
//	lsn     uint64   log sequence number, 1 for the first record of a generation
//	length  uint32   payload length, at most MaxPayload
//	payload [length]byte
//	padding zeros up to the next multiple of 8
//
// Integers are little-endian. A record's size is 28+length rounded up to
// 8. A record is valid if its magic, checksum, length and zero padding are
// right and it lies wholly within the file.
//
// Past the last record the file holds zeros (see Space) or the stale
// records of an older generation; both read as "no record", so a new
// generation can overwrite the file from offset 0 without truncating it.
// Each Create must use a generation never used before with that file
// (records of the same generation left further on would read as damage).
//
// # Invariants
//
//   - The records of one generation are written in lsn order, 1, 2, 3...,
//     back to back from offset 0; no record is ever rewritten.
//   - A record is durable once Sync(ctx, lsn) returned nil for its lsn or
//     a larger one. Nothing is durable before that.
//   - A torn tail is normal after a crash: the unsynced end of the log may
//     be missing, cut short or zeroed. Read returns the valid prefix and no
//     error.
//   - Damage in the middle is reported, never returned as data: Read stops
//     at the first record that is not the next valid record of the
//     generation, and if a valid record of the generation with a larger
//     lsn lies anywhere after that point, Read's error wraps ErrDamaged.
//     The prefix is still returned; the records after the damage are not.
//     Note that ErrDamaged may also come from a crash during writeback, if
//     the kernel wrote an unsynced record's pages before an earlier
//     unsynced record's; records after such a hole were never
//     acknowledged by Sync.
//   - After an fdatasync or a write fails, the log is poisoned: every later
//     Append and Sync returns that error. The caller must fall back to a
//     full store commit and start a new generation.
//
// # Space
//
// fdatasync after overwriting blocks that already exist is cheap, but an
// append that grows the file, or writes into fallocate'd (unwritten)
// extents, makes ext4 commit its journal on every fdatasync. So a Log
// keeps the file's size ahead of its write offset by writing zeros: when
// an append would pass the file's size, it first extends the file with
// zeros, at least 4 MiB at a time (more for a big record); the next Sync
// flushes them with the records. An existing file reused by Create counts
// as already allocated (a file of more than 64 MiB is truncated to 0
// first).
//
// # Locking
//
// Log.mu serialises appends: it is held while a record (and any zero
// extension) is written, so lsns follow the order of the calls and the
// records lie back to back. The group sync has its own mutex, Log.smu,
// with a channel per running fdatasync that waiters block on (with their
// context): an appender never waits behind an fdatasync. The last lsn,
// the size and the poison are atomics, so Sync and the accessors do not
// take mu either. One Sync at a time runs fdatasync; it first notes the
// last appended lsn, whose record is already written, and on success
// every record up to that lsn is durable. Sync callers whose lsn it did
// not cover wait for it, and then one of them runs the next fdatasync.
package intentlog
