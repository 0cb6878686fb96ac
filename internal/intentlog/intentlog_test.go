package intentlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/intentlog"
)

// payload is a deterministic payload of n bytes for record i.
func payload(i, n int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = byte(i*31 + j*7 + 1)
	}
	return p
}

// writeLog appends records of generation gen with the given payload sizes
// to a new log at path, syncs and closes it, and returns the offset of
// each record.
func writeLog(t testing.TB, path string, gen uint64, sizes []int) []int64 {
	t.Helper()
	l, err := intentlog.Create(path, gen)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for i, n := range sizes {
		offs = append(offs, l.Size())
		lsn, err := l.Append(payload(i, n))
		if err != nil {
			t.Fatal(err)
		}
		if lsn != uint64(i+1) {
			t.Fatalf("Append %d: lsn %d", i, lsn)
		}
	}
	if err := l.Sync(context.Background(), l.LastLSN()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return offs
}

// checkRecords checks that recs are the records writeLog wrote with sizes.
func checkRecords(t *testing.T, recs []intentlog.Record, sizes []int) {
	t.Helper()
	if len(recs) != len(sizes) {
		t.Fatalf("got %d records, want %d", len(recs), len(sizes))
	}
	for i, r := range recs {
		if r.LSN != uint64(i+1) {
			t.Errorf("record %d: lsn %d", i, r.LSN)
		}
		if !bytes.Equal(r.Payload, payload(i, sizes[i])) {
			t.Errorf("record %d: wrong payload (%d bytes, want %d)", i, len(r.Payload), sizes[i])
		}
	}
}

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
	}{
		{"empty", nil},
		{"one", []int{1}},
		{"various", []int{0, 1, 7, 8, 4096, 1 << 20, 0, 3}},
		{"max payload", []int{intentlog.MaxPayload, 5, intentlog.MaxPayload}},
		{"many small", repeat(2000, 17)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			writeLog(t, path, 7, tt.sizes)
			recs, err := intentlog.Read(path, 7)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, recs, tt.sizes)
		})
	}
}

func TestGenerations(t *testing.T) {
	tests := []struct {
		name    string
		write   func(t *testing.T, path string) // builds the file
		gen     uint64                          // read back
		want    []int                           // sizes of the records read back
		wantErr bool
	}{
		{
			name:  "missing file",
			write: func(t *testing.T, path string) {},
			gen:   1,
		},
		{
			name:  "other generation",
			write: func(t *testing.T, path string) { writeLog(t, path, 1, repeat(10, 50)) },
			gen:   2,
		},
		{
			name: "stale tail of older generation",
			write: func(t *testing.T, path string) {
				writeLog(t, path, 1, repeat(300, 100))
				writeLog(t, path, 2, []int{33, 0, 250, 9, 1})
			},
			gen:  2,
			want: []int{33, 0, 250, 9, 1},
		},
		{
			name: "stale tail of newer generation",
			write: func(t *testing.T, path string) {
				writeLog(t, path, 9, repeat(300, 64))
				writeLog(t, path, 3, repeat(7, 64))
			},
			gen:  3,
			want: repeat(7, 64),
		},
		{
			name: "older generation over-written",
			write: func(t *testing.T, path string) {
				writeLog(t, path, 1, repeat(30, 100))
				writeLog(t, path, 2, []int{10})
			},
			gen:     1,
			wantErr: true, // record 1 of gen 1 is gone but records 2.. remain
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			tt.write(t, path)
			recs, err := intentlog.Read(path, tt.gen)
			if tt.wantErr {
				if !errors.Is(err, intentlog.ErrDamaged) {
					t.Fatalf("err = %v, want ErrDamaged", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, recs, tt.want)
		})
	}
}

func TestTornTail(t *testing.T) {
	sizes := []int{100, 7, 4096, 0, 5000}
	last := len(sizes) - 1
	recSize := int64((intentlog.HeaderSize + sizes[last] + 7) &^ 7)
	tests := []struct {
		name string
		// cut is where the file is cut (truncated or zeroed from), relative
		// to the last record's offset.
		cut  int64
		zero bool // zero [cut, end of last record) instead of truncating
	}{
		{"truncate at 1", 1, false},
		{"truncate at 4", 4, false},
		{"truncate at 8", 8, false},
		{"truncate in header", 27, false},
		{"truncate after header", intentlog.HeaderSize, false},
		{"truncate in payload", 1000, false},
		{"truncate before padding", intentlog.HeaderSize + 5000, false},
		{"truncate last byte", recSize - 1, false},
		{"zero whole record", 0, true},
		{"zero from header", 20, true},
		{"zero from payload", 2000, true},
		{"zero last payload byte", intentlog.HeaderSize + 4999, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			offs := writeLog(t, path, 1, sizes)
			cut := offs[last] + tt.cut
			if tt.zero {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(make([]byte, offs[last]+recSize-cut), cut); err != nil {
					t.Fatal(err)
				}
				f.Close()
			} else if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			recs, err := intentlog.Read(path, 1)
			if err != nil {
				t.Fatalf("torn tail read as error: %v", err)
			}
			checkRecords(t, recs, sizes[:last])
		})
	}
}

func TestDamage(t *testing.T) {
	const n = 101 // payload size: 28+101 leaves 3 bytes of padding
	sizes := repeat(6, n)
	const bad = 2 // index of the damaged record
	tests := []struct {
		name string
		pos  int64 // byte flipped, relative to the damaged record
		bit  uint
	}{
		{"payload", intentlog.HeaderSize + 10, 3},
		{"last payload byte", intentlog.HeaderSize + n - 1, 0},
		{"magic", 1, 2},
		{"crc", 5, 7},
		{"gen", 8, 1},
		{"lsn low bit", 16, 0},
		{"lsn high bit", 23, 7},
		{"length low bit", 24, 0},
		{"length bit 5", 24, 5},
		{"length high bit", 27, 7},
		{"padding", intentlog.HeaderSize + n + 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			offs := writeLog(t, path, 1, sizes)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p := offs[bad] + tt.pos
			data[p] ^= 1 << tt.bit
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			recs, err := intentlog.Read(path, 1)
			if !errors.Is(err, intentlog.ErrDamaged) {
				t.Fatalf("err = %v, want ErrDamaged", err)
			}
			if want := fmt.Sprintf("end at offset %d ", offs[bad]); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not say %q and the path", err, want)
			}
			checkRecords(t, recs, sizes[:bad])
			flipped := data[offs[bad]+intentlog.HeaderSize : offs[bad]+intentlog.HeaderSize+n]
			for _, r := range recs {
				if bytes.Equal(r.Payload, flipped) {
					t.Fatalf("record %d: returned the damaged payload", r.LSN)
				}
			}
		})
	}
}

// TestCrafted reads files built record by record.
func TestCrafted(t *testing.T) {
	rec := func(lsn uint64, n int) []byte { return intentlog.EncodeRecord(1, lsn, payload(int(lsn), n)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	badPad := rec(1, 3)
	badPad[len(badPad)-1] = 1
	tests := []struct {
		name    string
		data    []byte
		want    int // records read back
		damaged bool
	}{
		{"empty file", nil, 0, false},
		{"zeros", make([]byte, 4096), 0, false},
		{"consecutive", cat(rec(1, 5), rec(2, 0), rec(3, 9)), 3, false},
		{"gap in lsns", cat(rec(1, 5), rec(2, 0), rec(4, 9)), 2, true},
		{"first lsn not 1", cat(rec(2, 5), rec(3, 5)), 0, true},
		{"repeated lsn", cat(rec(1, 5), rec(2, 5), rec(2, 5)), 2, false},
		{"smaller lsn after", cat(rec(1, 5), rec(2, 5), make([]byte, 64), rec(1, 5)), 2, false},
		{"nonzero padding", cat(badPad, rec(2, 5)), 0, true},
		{"nonzero padding at end", badPad, 0, false},
		{"padding cut off", rec(1, 3)[:intentlog.HeaderSize+3], 0, false},
		{"unaligned record after garbage", cat([]byte{1, 2, 3, 4}, rec(1, 8)), 0, false},
		{"good record after garbage", cat(rec(1, 8), []byte("garbage!"), rec(2, 8)), 1, true},
		{"other generation in between", cat(rec(1, 8), intentlog.EncodeRecord(2, 2, nil), rec(3, 8)), 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			recs, err := intentlog.Read(path, 1)
			if got := errors.Is(err, intentlog.ErrDamaged); got != tt.damaged || (err != nil && !got) {
				t.Fatalf("err = %v, want damaged %v", err, tt.damaged)
			}
			if len(recs) != tt.want {
				t.Fatalf("got %d records, want %d", len(recs), tt.want)
			}
			for i, r := range recs {
				if r.LSN != uint64(i+1) {
					t.Errorf("record %d: lsn %d", i, r.LSN)
				}
			}
		})
	}
}

func TestSyncConcurrent(t *testing.T) {
	const writers, each = 8, 200
	path := filepath.Join(t.TempDir(), "log")
	l, err := intentlog.Create(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				lsn, err := l.Append([]byte(fmt.Sprintf("writer %d record %d", w, i)))
				if err == nil {
					err = l.Sync(context.Background(), lsn)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := l.LastLSN(); got != writers*each {
		t.Fatalf("LastLSN = %d, want %d", got, writers*each)
	}
	n := intentlog.Fdatasyncs(l)
	t.Logf("%d records, %d fdatasyncs", writers*each, n)
	if n >= writers*each {
		t.Errorf("%d fdatasyncs for %d records: no group commit", n, writers*each)
	}
	recs, err := intentlog.Read(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*each {
		t.Fatalf("read %d records, want %d", len(recs), writers*each)
	}
	next := make([]int, writers) // each writer's records are in its order
	for _, r := range recs {
		var w, i int
		if _, err := fmt.Sscanf(string(r.Payload), "writer %d record %d", &w, &i); err != nil {
			t.Fatalf("record %d: %q: %v", r.LSN, r.Payload, err)
		}
		if i != next[w] {
			t.Fatalf("record %d: writer %d record %d, want record %d", r.LSN, w, i, next[w])
		}
		next[w]++
	}
}

func TestSyncContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		run  func(t *testing.T, l *intentlog.Log)
	}{
		{"already durable", func(t *testing.T, l *intentlog.Log) {
			lsn, _ := l.Append([]byte("a"))
			if err := l.Sync(context.Background(), lsn); err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(cancelled, lsn); err != nil {
				t.Fatalf("Sync of a durable lsn with a cancelled context: %v", err)
			}
		}},
		{"would start fdatasync", func(t *testing.T, l *intentlog.Log) {
			lsn, _ := l.Append([]byte("a"))
			if err := l.Sync(cancelled, lsn); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if n := intentlog.Fdatasyncs(l); n != 0 {
				t.Fatalf("%d fdatasyncs", n)
			}
		}},
		{"cancelled while waiting", func(t *testing.T, l *intentlog.Log) {
			waitWhileSyncing(t, l, func(ctx context.Context, lsn uint64) error {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(10*time.Millisecond, cancel)
				err := l.Sync(ctx, lsn)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				return err
			})
		}},
		{"deadline while waiting", func(t *testing.T, l *intentlog.Log) {
			waitWhileSyncing(t, l, func(ctx context.Context, lsn uint64) error {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				err := l.Sync(ctx, lsn)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want context.DeadlineExceeded", err)
				}
				return err
			})
		}},
		{"past the last lsn", func(t *testing.T, l *intentlog.Log) {
			l.Append([]byte("a"))
			if err := l.Sync(context.Background(), 2); err == nil {
				t.Fatal("Sync of an lsn not appended succeeded")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLog(t)
			tt.run(t, l)
		})
	}
}

// waitWhileSyncing holds an fdatasync of record 1 running while it
// appends record 2 and calls wait for it, then lets the fdatasync finish
// and checks that a Sync of record 2 still works.
func waitWhileSyncing(t *testing.T, l *intentlog.Log, wait func(context.Context, uint64) error) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	intentlog.SetFdatasync(l, func(f *os.File) error {
		first := false
		once.Do(func() { first = true })
		if first {
			// Only the first fdatasync is held, however late the
			// test reaches its wait for it.
			close(entered)
			<-release
		}
		return intentlog.RealFdatasync(f)
	})
	lsn1, _ := l.Append([]byte("one"))
	first := make(chan error, 1)
	go func() { first <- l.Sync(context.Background(), lsn1) }()
	<-entered
	lsn2, _ := l.Append([]byte("two"))
	if err := wait(context.Background(), lsn2); err == nil {
		t.Fatal("wait returned nil while the fdatasync was held")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background(), lsn2); err != nil {
		t.Fatal(err)
	}
}

func TestPoison(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		fail func(l *intentlog.Log) error // makes the log fail; returns the error
		want error
	}{
		{"fdatasync fails", func(l *intentlog.Log) error {
			intentlog.SetFdatasync(l, func(*os.File) error { return boom })
			lsn, err := l.Append([]byte("x"))
			if err != nil {
				return err
			}
			return l.Sync(context.Background(), lsn)
		}, boom},
		{"write fails", func(l *intentlog.Log) error {
			l.Close()
			_, err := l.Append([]byte("x"))
			return err
		}, os.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLog(t)
			lsn, err := l.Append([]byte("before"))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(context.Background(), lsn); err != nil {
				t.Fatal(err)
			}
			if err := tt.fail(l); !errors.Is(err, tt.want) {
				t.Fatalf("failing call: err = %v, want %v", err, tt.want)
			}
			intentlog.SetFdatasync(l, intentlog.RealFdatasync)
			if _, err := l.Append([]byte("after")); !errors.Is(err, tt.want) {
				t.Errorf("Append after failure: err = %v, want %v", err, tt.want)
			}
			for _, lsn := range []uint64{0, 1, l.LastLSN()} {
				if err := l.Sync(context.Background(), lsn); !errors.Is(err, tt.want) {
					t.Errorf("Sync(%d) after failure: err = %v, want %v", lsn, err, tt.want)
				}
			}
		})
	}
}

// newLog creates a log of generation 1 in a new directory, closed when
// the test ends.
func newLog(t *testing.T) *intentlog.Log {
	t.Helper()
	l, err := intentlog.Create(filepath.Join(t.TempDir(), "log"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAppendTooLarge(t *testing.T) {
	l := newLog(t)
	if _, err := l.Append(make([]byte, intentlog.MaxPayload+1)); err == nil {
		t.Fatal("Append of more than MaxPayload succeeded")
	}
	if lsn, err := l.Append([]byte("ok")); err != nil || lsn != 1 {
		t.Fatalf("Append after a refused one: lsn %d, err %v", lsn, err)
	}
}

func TestZeroExtension(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		existing int64 // size of the file before Create, -1 for none
		sizes    []int
		wantSize int64 // size of the file afterwards, on disk
	}{
		{"new file, small record", -1, []int{10}, 4 * mib},
		{"new file, past 4 MiB", -1, repeat(5, mib), 8 * mib},
		{"new file, big record", -1, []int{intentlog.MaxPayload}, 12 * mib},
		{"reused file counts as allocated", mib, []int{10, 100}, mib},
		{"reused file extended", mib, []int{mib}, 8 * mib},
		{"big file truncated", 65 * mib, []int{10}, 4 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if tt.existing >= 0 {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(path, tt.existing); err != nil {
					t.Fatal(err)
				}
			}
			l, err := intentlog.Create(path, 1)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for i, n := range tt.sizes {
				if _, err := l.Append(payload(i, n)); err != nil {
					t.Fatal(err)
				}
				want += int64(intentlog.HeaderSize+n+7) &^ 7
			}
			if got := l.Size(); got != want {
				t.Errorf("Size() = %d, want %d", got, want)
			}
			if err := l.Sync(context.Background(), l.LastLSN()); err != nil {
				t.Fatal(err)
			}
			l.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != tt.wantSize {
				t.Errorf("file size %d, want %d", fi.Size(), tt.wantSize)
			}
			recs, err := intentlog.Read(path, 1)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, recs, tt.sizes)
		})
	}
}

func TestRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	writeLog(t, path, 1, []int{5})
	if err := intentlog.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
	if err := intentlog.Remove(path); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	if recs, err := intentlog.Read(path, 1); err != nil || len(recs) != 0 {
		t.Fatalf("Read of a removed log: %d records, %v", len(recs), err)
	}
}

func FuzzRead(f *testing.F) {
	two := append(intentlog.EncodeRecord(1, 1, []byte("hello")), intentlog.EncodeRecord(1, 2, []byte("intent log, record two"))...)
	f.Add(two)
	f.Add(append(append([]byte{}, two...), make([]byte, 64)...))
	damaged := append([]byte{}, two...)
	damaged[30] ^= 1
	f.Add(damaged)
	f.Add(append(intentlog.EncodeRecord(2, 1, nil), intentlog.EncodeRecord(1, 1, nil)...))
	path := filepath.Join(f.TempDir(), "log")
	file, err := os.Create(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Overwrite and shorten rather than truncate to 0 and rewrite: ext4
		// starts writeback on close after the latter, which makes the
		// fuzzer slow.
		if _, err := file.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := file.Truncate(int64(len(data))); err != nil {
			t.Fatal(err)
		}
		recs, err := intentlog.Read(path, 1)
		if err != nil && !errors.Is(err, intentlog.ErrDamaged) {
			t.Fatalf("error other than ErrDamaged: %v", err)
		}
		off := 0
		for i, r := range recs {
			if r.LSN != uint64(i+1) {
				t.Fatalf("record %d: lsn %d", i, r.LSN)
			}
			enc := intentlog.EncodeRecord(1, r.LSN, r.Payload)
			if off+len(enc) > len(data) || !bytes.Equal(data[off:off+len(enc)], enc) {
				t.Fatalf("record %d at offset %d does not re-encode to the bytes there", i, off)
			}
			off += len(enc)
		}
	})
}

func BenchmarkAppendSync(b *testing.B) {
	l, err := intentlog.Create(filepath.Join(b.TempDir(), "log"), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	p := payload(0, 4096)
	ctx := context.Background()
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for b.Loop() {
		lsn, err := l.Append(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Sync(ctx, lsn); err != nil {
			b.Fatal(err)
		}
	}
}
