package intentlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrDamaged is wrapped by Read's error when a bad record is followed by a
// good record of the same generation (damage, not a torn tail).
var ErrDamaged = errors.New("intent log damaged")

// MaxPayload is the largest payload a record can hold.
const MaxPayload = 8 << 20

const (
	magic      = "CFIL"
	headerSize = 28
	// extendStep is the least the file is extended by, with zeros, when
	// an append would pass its size.
	extendStep = 4 << 20
	// reuseLimit is the largest existing file Create reuses as it is.
	reuseLimit = 64 << 20
	// keepBuf is the largest record buffer a Log keeps between appends.
	keepBuf = 1 << 20
)

// Record is one record of a generation: its lsn and its payload.
type Record struct {
	LSN     uint64
	Payload []byte
}

// recordSize is the size on disk of a record with a payload of n bytes.
func recordSize(n int) int64 { return (headerSize + int64(n) + 7) &^ 7 }

func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// appendRecord appends the encoding of a record, padding included, to b.
func appendRecord(b []byte, gen, lsn uint64, payload []byte) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, 0) // crc, set below
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = binary.LittleEndian.AppendUint64(b, lsn)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	crc := crc32.Checksum(b[start+8:], castagnoli())
	binary.LittleEndian.PutUint32(b[start+4:], crc)
	for pad := recordSize(len(payload)) - int64(len(b)-start); pad > 0; pad-- {
		b = append(b, 0)
	}
	return b
}

// decodeAt decodes the record of generation gen at offset off of data. It
// reports false if there is no valid record of gen there.
func decodeAt(data []byte, off int64, gen uint64) (Record, int64, bool) {
	if off < 0 || off+headerSize > int64(len(data)) {
		return Record{}, 0, false
	}
	h := data[off : off+headerSize]
	if string(h[:4]) != magic || binary.LittleEndian.Uint64(h[8:]) != gen {
		return Record{}, 0, false
	}
	n := binary.LittleEndian.Uint32(h[24:])
	if n > MaxPayload {
		return Record{}, 0, false
	}
	size := recordSize(int(n))
	if off+size > int64(len(data)) {
		return Record{}, 0, false
	}
	end := off + headerSize + int64(n)
	if crc32.Checksum(data[off+8:end], castagnoli()) != binary.LittleEndian.Uint32(h[4:]) {
		return Record{}, 0, false
	}
	for _, c := range data[end : off+size] {
		if c != 0 {
			return Record{}, 0, false
		}
	}
	return Record{
		LSN:     binary.LittleEndian.Uint64(h[16:]),
		Payload: data[off+headerSize : end : end],
	}, size, true
}

// Read returns the valid records of generation gen in path, in order,
// starting at lsn 1 and consecutive: it stops at the first record that is
// not a valid record of gen with the next lsn (bad magic, bad checksum,
// other generation, length past the end, zeros). A missing file is no
// records and no error.
//
// If, after that point, a valid record of gen with a larger lsn is found
// anywhere later in the file (at any 8-byte-aligned offset), the error
// wraps ErrDamaged and says at which offset the valid prefix ended, and
// the records of the prefix are still returned.
//
// The payloads share one buffer holding the file.
func Read(path string, gen uint64) ([]Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("intentlog: read %s: %w", path, err)
	}
	var recs []Record
	var off int64
	for {
		r, size, ok := decodeAt(data, off, gen)
		if !ok || r.LSN != uint64(len(recs))+1 {
			break
		}
		recs = append(recs, r)
		off += size
	}
	last := uint64(len(recs))
	// Look for a valid record of gen beyond the prefix, starting with the
	// offset where it ended (a valid record there with a wrong lsn is
	// damage too).
	for p := off; p < int64(len(data)); {
		i := bytes.Index(data[p:], []byte(magic))
		if i < 0 {
			break
		}
		q := p + int64(i)
		if q%8 != 0 {
			p = (q + 7) &^ 7
			continue
		}
		if r, _, ok := decodeAt(data, q, gen); ok && r.LSN > last {
			return recs, fmt.Errorf("intentlog: %s: valid records of generation %d end at offset %d (lsn %d), "+
				"but a valid record with lsn %d is at offset %d: %w", path, gen, off, last, r.LSN, q, ErrDamaged)
		}
		p = q + 8
	}
	return recs, nil
}

// Log appends records of one generation to a log file. Its methods are
// safe for concurrent use.
type Log struct {
	path string
	gen  uint64
	f    *os.File

	// fdatasync syncs the file's data; a hook for tests.
	fdatasync func(*os.File) error

	mu    sync.Mutex // serialises appends; guards the fields below
	off   int64      // where the next record goes
	alloc int64      // size of the file: [off, alloc) holds zeros or stale records
	buf   []byte     // encoding buffer

	last   atomic.Uint64         // lsn of the last record written
	size   atomic.Int64          // off, for Size
	poison atomic.Pointer[error] // the first I/O error; the log is unusable after it

	smu       sync.Mutex    // the group sync; guards the fields below
	running   chan struct{} // closed when the running fdatasync ends; nil if none runs
	synced    uint64        // every record up to this lsn is durable
	dirSynced bool          // the directory was fsynced (by the first fdatasync)
	nsync     int64         // number of fdatasyncs run, for tests
}

// Create opens (creating, mode 0600) the log file at path for appending
// records of generation gen, starting at offset 0 and lsn 1. The file's old
// contents are not read; they are overwritten as records are appended
// (records of other generations past the end stop Read, so no truncation
// is needed; but a file larger than 64 MiB is truncated to 0 first).
// Create syncs nothing; the first Sync also fsyncs the file's directory.
func Create(path string, gen uint64) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("intentlog: create: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("intentlog: create: %w", err)
	}
	alloc := fi.Size()
	if alloc > reuseLimit {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("intentlog: create %s: truncate from %d bytes: %w", path, alloc, err)
		}
		alloc = 0
	}
	return &Log{path: path, gen: gen, f: f, alloc: alloc, fdatasync: fdatasync}, nil
}

func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Fdatasync(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// syncDir fsyncs the directory holding path.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) poisoned() error {
	if p := l.poison.Load(); p != nil {
		return *p
	}
	return nil
}

// fail poisons the log with err, unless it already is, and returns the
// poison.
func (l *Log) fail(err error) error {
	l.poison.CompareAndSwap(nil, &err)
	return l.poisoned()
}

// Append writes one record (at the end of what is written) and returns its
// lsn. It does not sync. Payloads larger than MaxPayload are refused with
// an error. A failed write poisons the log. Safe for concurrent use; lsns
// follow the order of the calls.
func (l *Log) Append(payload []byte) (uint64, error) {
	if len(payload) > MaxPayload {
		return 0, fmt.Errorf("intentlog: %s: payload of %d bytes is larger than %d", l.path, len(payload), MaxPayload)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.poisoned(); err != nil {
		return 0, err
	}
	lsn := l.last.Load() + 1
	off := l.off
	size := recordSize(len(payload))
	if off+size > l.alloc {
		if err := l.extend(off + size); err != nil {
			return 0, l.fail(err)
		}
	}
	l.buf = appendRecord(l.buf[:0], l.gen, lsn, payload)
	_, err := l.f.WriteAt(l.buf, off)
	if cap(l.buf) > keepBuf {
		l.buf = nil
	}
	if err != nil {
		return 0, l.fail(fmt.Errorf("intentlog: %s: write record %d at offset %d: %w", l.path, lsn, off, err))
	}
	l.off += size
	l.size.Store(l.off)
	l.last.Store(lsn)
	return lsn, nil
}

// extend makes the file at least need bytes long by writing zeros past its
// size, at least extendStep bytes of them. It leaves alone [alloc, need),
// which the record about to be written covers. l.mu is held.
func (l *Log) extend(need int64) error {
	to := max(l.alloc+extendStep, need)
	to = (to + extendStep - 1) / extendStep * extendStep
	from := max(l.alloc, need)
	zeros := make([]byte, min(to-from, keepBuf))
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := l.f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("intentlog: %s: extend with zeros at offset %d: %w", l.path, off, err)
		}
		off += n
	}
	l.alloc = to
	return nil
}

// LastLSN is the lsn of the last appended record (0 if none).
func (l *Log) LastLSN() uint64 { return l.last.Load() }

// Size is the number of bytes of records written so far.
func (l *Log) Size() int64 { return l.size.Load() }

// Sync returns once every record up to lsn is durable (fdatasync). Group
// commit: if a sync is running, it waits for it; if it covered lsn, it
// returns; otherwise one of the waiters runs the next fdatasync, which
// covers every record appended before it started. ctx cancels the wait
// (not an fdatasync already running); a Sync that would have to wait or
// start an fdatasync returns ctx's error if ctx is done. A failed fdatasync
// poisons the log: every later Append and Sync returns that error
// (wrapped). lsn must not be larger than LastLSN.
func (l *Log) Sync(ctx context.Context, lsn uint64) error {
	if err := l.poisoned(); err != nil {
		return err
	}
	if last := l.last.Load(); lsn > last {
		return fmt.Errorf("intentlog: %s: sync of lsn %d past the last appended lsn %d", l.path, lsn, last)
	}
	l.smu.Lock()
	for {
		if err := l.poisoned(); err != nil {
			l.smu.Unlock()
			return err
		}
		if l.synced >= lsn {
			l.smu.Unlock()
			return nil
		}
		if done := l.running; done != nil {
			l.smu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
			l.smu.Lock()
			continue
		}
		if err := ctx.Err(); err != nil {
			l.smu.Unlock()
			return err
		}
		done := make(chan struct{})
		l.running = done
		dirSynced := l.dirSynced
		l.smu.Unlock()

		// Every record up to target has been written: Append stores its
		// lsn after the write returned.
		target := l.last.Load()
		err := l.fdatasync(l.f)
		if err != nil {
			err = fmt.Errorf("intentlog: %s: fdatasync: %w", l.path, err)
		} else if !dirSynced {
			if err = syncDir(l.path); err != nil {
				err = fmt.Errorf("intentlog: %s: sync directory: %w", l.path, err)
			}
		}
		if err != nil {
			l.fail(err)
		}

		l.smu.Lock()
		l.nsync++
		l.running = nil
		close(done)
		if err == nil {
			l.dirSynced = true
			l.synced = max(l.synced, target)
		}
	}
}

// Close closes the file. It does not sync.
func (l *Log) Close() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("intentlog: close %s: %w", l.path, err)
	}
	return nil
}

// Remove removes the log file at path, if there is one, and fsyncs its
// directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("intentlog: %w", err)
	}
	if err := syncDir(path); err != nil {
		return fmt.Errorf("intentlog: remove %s: sync directory: %w", path, err)
	}
	return nil
}
