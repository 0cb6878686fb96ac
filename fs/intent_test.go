package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/intentlog"
)

// intentOpts: small chunks, and no commit but the ones a test asks for
// (an fsync that cannot be a record, Sync), so that a copy of the store
// and its log taken between two calls is what a crash would leave.
var intentOpts = Options{ChunkSize: 64 << 10, CommitInterval: time.Hour}

// intentWorkspace opens a new workspace with intentOpts (closed when
// the test ends) and creates the file "db" in it.
func intentWorkspace(t *testing.T) (*FS, string, Attr) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ws.cfs")
	opts := intentOpts
	opts.Logger = quietLog()
	f, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	a, err := f.Create(Caller{}, RootIno, "db", NewNode{Mode: 0o100644})
	if err != nil {
		t.Fatal(err)
	}
	return f, path, a
}

// fillCommitted writes pages 0-63 of ino (iteration 0's bytes) and
// fsyncs them: ino's first fsync commits, and starts the log.
func fillCommitted(t *testing.T, f *FS, ino Ino) {
	t.Helper()
	ctx := context.Background()
	for p := range 64 {
		if _, err := f.Write(ctx, ino, int64(p*pageSize), pageOf(0, p), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Fsync(ctx, ino); err != nil {
		t.Fatal(err)
	}
}

// crashCopy copies the store at path and its intent log into a new
// directory, as a crash would leave them, and opens the copy.
func crashCopy(t *testing.T, path string) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	cp := filepath.Join(dir, filepath.Base(path))
	for _, suffix := range []string{"", "-intent"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := intentOpts
	opts.Logger = quietLog()
	f, err := Open(cp, opts)
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	return f, cp
}

// intentCounts returns the records appended and the last commit's epoch.
func (f *FS) intentCounts() (records, epoch uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.in.records, f.epoch
}

func readAll(t *testing.T, f *FS, ino Ino) []byte {
	t.Helper()
	a, err := f.GetAttr(ino)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, a.Size+1)
	n, err := f.Read(context.Background(), ino, 0, b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

func pageOf(tag, page int) []byte {
	b := make([]byte, pageSize)
	r := rand.NewChaCha8([32]byte{byte(tag), byte(tag >> 8), byte(page), byte(page >> 8), 7})
	r.Read(b)
	binary.LittleEndian.PutUint64(b, uint64(tag))
	binary.LittleEndian.PutUint64(b[8:], uint64(page))
	return b
}

// TestIntentReplay runs changes made durable by fsyncs that are intent
// records, and commits around them, then takes the store and its log as
// a crash would leave them: the copy must open, hold exactly what the
// workspace held (everything was fsynced or committed), and fsck clean.
func TestIntentReplay(t *testing.T) {
	ctx := context.Background()
	type env struct {
		f   *FS
		ino Ino
	}
	write := func(t *testing.T, e env, tag int, pages ...int) {
		t.Helper()
		for _, p := range pages {
			if _, err := e.f.Write(ctx, e.ino, int64(p*pageSize), pageOf(tag, p), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	fsync := func(t *testing.T, e env, wantRecord bool) {
		t.Helper()
		before, _ := e.f.intentCounts()
		if err := e.f.Fsync(ctx, e.ino); err != nil {
			t.Fatal(err)
		}
		if after, _ := e.f.intentCounts(); (after > before) != wantRecord {
			t.Fatalf("fsync made a record: %v, want %v", !wantRecord, wantRecord)
		}
	}
	sync := func(t *testing.T, e env) {
		t.Helper()
		if err := e.f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	truncate := func(t *testing.T, e env, size uint64) {
		t.Helper()
		if _, err := e.f.SetAttr(Caller{}, e.ino, SetAttrIn{Size: &size}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		run  func(t *testing.T, e env)
	}{
		{"pages", func(t *testing.T, e env) {
			write(t, e, 1, 3, 17, 40)
			fsync(t, e, true)
		}},
		{"records in a row", func(t *testing.T, e env) {
			for i := range 20 {
				write(t, e, 10+i, i, (i*7)%64, 63-i)
				fsync(t, e, true)
			}
		}},
		{"growing", func(t *testing.T, e env) {
			write(t, e, 2, 64, 65, 100, 130) // past the end: the file grows into new chunks
			fsync(t, e, true)
			write(t, e, 3, 131)
			fsync(t, e, true)
		}},
		{"committed after a record", func(t *testing.T, e env) {
			// A page fsynced by a record, written again and committed:
			// the record must not bring back its older bytes.
			write(t, e, 4, 5, 6)
			fsync(t, e, true)
			write(t, e, 5, 5)
			sync(t, e)
			write(t, e, 6, 6)
			fsync(t, e, true)
		}},
		{"committed, not fsynced", func(t *testing.T, e env) {
			write(t, e, 7, 9)
			fsync(t, e, true)
			write(t, e, 8, 9, 10)
			sync(t, e)
		}},
		{"truncated and committed", func(t *testing.T, e env) {
			write(t, e, 9, 20, 62, 63)
			fsync(t, e, true)
			truncate(t, e, 30*pageSize)
			sync(t, e) // the truncation is in the store: nothing may come back past it
			write(t, e, 10, 40)
			fsync(t, e, true)
		}},
		{"truncation committed by another file's fsync", func(t *testing.T, e env) {
			// The commit takes the truncation and the attributes, not
			// the pages still dirty: the record's pages past the new
			// end must not come back when the file grows again, the
			// one before it must stay.
			write(t, e, 14, 20, 62, 63)
			fsync(t, e, true)
			truncate(t, e, 32*pageSize) // a chunk boundary: no tail to commit
			b, err := e.f.Create(Caller{}, RootIno, "other", NewNode{Mode: 0o100644})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.f.Write(ctx, b.Ino, 0, []byte("x"), false); err != nil {
				t.Fatal(err)
			}
			if err := e.f.Fsync(ctx, b.Ino); err != nil {
				t.Fatal(err)
			}
			write(t, e, 15, 70)
			fsync(t, e, true)
		}},
		{"truncated, not committed", func(t *testing.T, e env) {
			write(t, e, 11, 50)
			fsync(t, e, true)
			truncate(t, e, 45*pageSize)
			fsync(t, e, false) // a truncation waits for its commit: this fsync commits
			write(t, e, 12, 47)
			fsync(t, e, true)
		}},
		{"attributes", func(t *testing.T, e env) {
			write(t, e, 13, 1)
			mode, mtime := uint32(0o600), int64(1234567890123456789)
			if _, err := e.f.SetAttr(Caller{}, e.ino, SetAttrIn{Mode: &mode, Mtime: &mtime}); err != nil {
				t.Fatal(err)
			}
			fsync(t, e, true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, path, a := intentWorkspace(t)
			e := env{f, a.Ino}
			for p := range 64 {
				write(t, e, 0, p)
			}
			fsync(t, e, false) // a new file: committed, and the log starts
			tt.run(t, e)
			want := readAll(t, f, e.ino)
			wantAttr, _ := f.GetAttr(e.ino)

			g, cp := crashCopy(t, path)
			got := readAll(t, g, e.ino)
			if !bytes.Equal(got, want) {
				t.Errorf("after the crash: %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
			gotAttr, _ := g.GetAttr(e.ino)
			if gotAttr.Mode != wantAttr.Mode || gotAttr.Mtime != wantAttr.Mtime || gotAttr.Size != wantAttr.Size {
				t.Errorf("attributes after the crash: mode %o mtime %d size %d, want %o %d %d", gotAttr.Mode, gotAttr.Mtime, gotAttr.Size, wantAttr.Mode, wantAttr.Mtime, wantAttr.Size)
			}
			fsckClosed(t, g, cp)
			if _, err := os.Stat(cp + "-intent"); !os.IsNotExist(err) {
				t.Errorf("the log outlived Close: %v", err)
			}
		})
	}
}

// TestIntentSaves: a database's fsyncs are records, not commits.
func TestIntentSaves(t *testing.T) {
	ctx := context.Background()
	f, _, a := intentWorkspace(t)
	if _, err := f.Write(ctx, a.Ino, 0, bytes.Repeat([]byte("data"), 1<<18), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Fsync(ctx, a.Ino); err != nil {
		t.Fatal(err)
	}
	_, epoch := f.intentCounts()
	for i := range 50 {
		if _, err := f.Write(ctx, a.Ino, int64(i*3%256)*pageSize, pageOf(i, i), false); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, a.Ino); err != nil {
			t.Fatal(err)
		}
	}
	if records, e := f.intentCounts(); e != epoch || records != 50 {
		t.Errorf("50 fsyncs: %d commits and %d records, want 0 and 50", e-epoch, records)
	}
}

// FuzzDecodeIntent: any bytes decode to a record that encodes back to
// them, or to an error.
func FuzzDecodeIntent(f *testing.F) {
	r := &intentRecord{kind: intentData, ino: 42, attr: intentRecordAttr{Mode: 0o100644, Size: 9000, Mtime: 5},
		pages: []intentPage{{off: 0, data: pageOf(1, 0)}, {off: 2 * pageSize, data: []byte("tail")}}}
	f.Add(encodeIntent(r, 1<<20))
	f.Add(encodeIntent(&intentRecord{kind: intentTrunc, ino: 1}, 1<<20))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeIntent(b)
		if err != nil {
			return
		}
		if got := encodeIntent(r, 1<<20); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %d bytes differ from the %d decoded", len(got), len(b))
		}
	})
}

const intentWorkerEnv = "COMPUTERFS_INTENT_WORKER"

// intentPages is iteration i's pages of TestIntentKill's file.
func intentPages(i int) []int {
	r := rand.New(rand.NewPCG(uint64(i), 3))
	out := make([]int, 1+r.IntN(4))
	for k := range out {
		out[k] = r.IntN(intentKillPages)
	}
	return out
}

const intentKillPages = 200 // 800 KiB: 13 chunks of 64 KiB

// TestIntentKill kills a process that writes pages of a file at random
// and fsyncs after each batch (intent records, mostly), at random
// moments: every page must hold what the last fsync before the kill
// left there, or what a later write put there (never older bytes, never
// bytes no write made), and fsck must find the store clean.
func TestIntentKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.cfs")
	opts := Options{ChunkSize: 64 << 10, Logger: quietLog()}
	f, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	most := 0
	killRounds(t, path, "TestIntentWorker", intentWorkerEnv, 300, 97, 1500, func(round int, f *FS) {
		done, _ := os.ReadFile(path + ".done")
		lines := strings.Fields(string(done))
		if len(lines) == 0 {
			return
		}
		synced, err := strconv.Atoi(lines[len(lines)-1])
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, synced)
		a, err := f.Lookup(Caller{}, RootIno, "db")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		data := readAll(t, f, a.Ino)
		// last[p]: the iteration whose write of p the fsync of synced
		// made durable; later[p]: every iteration that wrote p.
		last := make([]int, intentKillPages)
		for i := range last {
			last[i] = -1
		}
		wrote := make(map[[2]int]bool)
		for i := 0; i <= synced+200; i++ {
			for _, p := range intentPages(i) {
				if i <= synced {
					last[p] = i
				}
				wrote[[2]int{i, p}] = true
			}
		}
		for p := range intentKillPages {
			var page []byte
			if (p+1)*pageSize <= len(data) {
				page = data[p*pageSize : (p+1)*pageSize]
			}
			if page == nil || bytes.Equal(page, make([]byte, pageSize)) {
				if last[p] >= 0 {
					t.Fatalf("round %d: page %d is empty; iteration %d wrote it, fsynced by %d", round, p, last[p], synced)
				}
				continue
			}
			tag := int(binary.LittleEndian.Uint64(page))
			if !wrote[[2]int{tag, p}] || tag < last[p] || !bytes.Equal(page, pageOf(tag, p)) {
				t.Fatalf("round %d: page %d holds iteration %d's bytes (valid: %v); the fsync of %d made %d's durable", round, p, tag, bytes.Equal(page, pageOf(tag, p)), synced, last[p])
			}
		}
	})
	if most == 0 {
		t.Fatal("no fsync returned before a kill")
	}
	t.Logf("%d fsyncs by the last round", most)
}

// TestIntentWorker is TestIntentKill's writer (run as a subprocess).
func TestIntentWorker(t *testing.T) {
	path := os.Getenv(intentWorkerEnv)
	if path == "" {
		t.Skip("run by TestIntentKill")
	}
	f, err := Open(path, Options{ChunkSize: 64 << 10, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done, err := os.OpenFile(path+".done", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	prev, _ := os.ReadFile(path + ".done")
	start := 0
	if l := strings.Fields(string(prev)); len(l) > 0 {
		n, _ := strconv.Atoi(l[len(l)-1])
		start = n + 1
	}
	a, err := f.Lookup(Caller{}, RootIno, "db")
	if err != nil {
		if a, err = f.Create(Caller{}, RootIno, "db", NewNode{Mode: 0o100644}); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, RootIno); err != nil {
			t.Fatal(err)
		}
	}
	// An iteration beyond what was made durable may have survived the
	// last kill: the pages it wrote are rewritten by the same
	// iterations again, with the same bytes.
	for i := start; ; i++ {
		for _, p := range intentPages(i) {
			if _, err := f.Write(ctx, a.Ino, int64(p*pageSize), pageOf(i, p), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Fsync(ctx, a.Ino); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(done, "%d\n", i); err != nil {
			t.Fatal(err)
		}
		if err := done.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntentDamagedLog: a log damaged in the middle (a flipped byte in
// the fifth of ten records) is kept aside, and the open replays the four
// records before the damage, never the damaged one's bytes.
func TestIntentDamagedLog(t *testing.T) {
	ctx := context.Background()
	f, path, a := intentWorkspace(t)
	fillCommitted(t, f, a.Ino)
	var afterFour []byte
	for i := 1; i <= 10; i++ {
		if _, err := f.Write(ctx, a.Ino, int64(i*pageSize), pageOf(i, i), false); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, a.Ino); err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			afterFour = readAll(t, f, a.Ino)
		}
	}
	if records, _ := f.intentCounts(); records != 10 {
		t.Fatalf("%d records, want 10", records)
	}
	// Flip a byte in the fifth record's payload (records are the same
	// size here: 28 header bytes, the payload, padding to 8).
	log, err := os.ReadFile(path + "-intent")
	if err != nil {
		t.Fatal(err)
	}
	size := len(log) // only to find the records' size below
	recSize := 0
	for off := 8; off < size; off += 8 {
		if string(log[off:off+4]) == "CFIL" {
			recSize = off
			break
		}
	}
	if recSize == 0 {
		t.Fatal("no second record in the log")
	}
	log[4*recSize+28+100] ^= 0x10
	dir := t.TempDir()
	cp := filepath.Join(dir, "ws.cfs")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp+"-intent", log, 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := Open(cp, Options{ChunkSize: intentOpts.ChunkSize, CommitInterval: time.Hour, Logger: quietLog()})
	if err != nil {
		t.Fatalf("open with a damaged log: %v", err)
	}
	if got := readAll(t, g, a.Ino); !bytes.Equal(got, afterFour) {
		t.Errorf("after the replay the file differs from its state after the fourth record at %d", firstDiff(got, afterFour))
	}
	kept, _ := filepath.Glob(cp + "-intent.damaged-*")
	if len(kept) != 1 {
		t.Errorf("damaged logs kept: %v, want one", kept)
	}
	fsckClosed(t, g, cp)
}

// TestIntentRestarts: a log past intentRestartAt starts anew at the
// first commit that holds everything its records said, and a crash after
// that replays nothing of the old generation over the committed file.
func TestIntentRestarts(t *testing.T) {
	ctx := context.Background()
	f, path, a := intentWorkspace(t)
	fillCommitted(t, f, a.Ino)
	f.mu.Lock()
	gen := f.in.gen
	f.mu.Unlock()
	for i := 1; i*(pageSize+100) < intentRestartAt+pageSize*4; i++ {
		if _, err := f.Write(ctx, a.Ino, int64(i%64*pageSize), pageOf(i, i%64), false); err != nil {
			t.Fatal(err)
		}
		if err := f.Fsync(ctx, a.Ino); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	got, size := f.in.gen, f.in.log.Size()
	f.mu.Unlock()
	if got != gen+1 || size != 0 {
		t.Fatalf("after the commit of a log of %d MiB: generation %d (was %d), log of %d bytes", intentRestartAt>>20, got, gen, size)
	}
	want := readAll(t, f, a.Ino)
	g, cp := crashCopy(t, path)
	if got := readAll(t, g, a.Ino); !bytes.Equal(got, want) {
		t.Errorf("after the crash the file differs at %d", firstDiff(got, want))
	}
	fsckClosed(t, g, cp)
}

// TestCheckIntentLog: fsck's view of the log beside a closed store.
func TestCheckIntentLog(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name         string
		log          func(t *testing.T, log []byte, gen uint64, path string) []byte // nil: no log
		wantNote     []string                                                       // substrings, one per note
		wantProblems int
	}{
		{"no log", nil, nil, 0},
		{"records", func(t *testing.T, log []byte, _ uint64, _ string) []byte { return log }, []string{"holds 3 records"}, 0},
		{"damaged", func(t *testing.T, log []byte, _ uint64, _ string) []byte {
			log = bytes.Clone(log)
			rec := bytes.Index(log[8:], []byte("CFIL")) + 8
			log[rec+40] ^= 1 // the second record's payload
			return log
		}, []string{"holds 1 records", "damaged"}, 0},
		{"a record the replay cannot read", func(t *testing.T, _ []byte, gen uint64, path string) []byte {
			l, err := intentlog.Create(path, gen)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			lsn, err := l.Append([]byte{9, 9, 9})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(ctx, lsn); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, []string{"holds 1 records"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, path, a := intentWorkspace(t)
			for i := range 4 {
				if _, err := f.Write(ctx, a.Ino, int64(i*pageSize), pageOf(i, i), false); err != nil {
					t.Fatal(err)
				}
				if err := f.Fsync(ctx, a.Ino); err != nil { // the first commits and starts the log
					t.Fatal(err)
				}
			}
			f.mu.Lock()
			gen := f.in.gen
			f.mu.Unlock()
			log, err := os.ReadFile(path + "-intent")
			if err != nil {
				t.Fatal(err)
			}
			cp := copyFile(t, path)
			if tt.log != nil {
				if err := os.WriteFile(cp+"-intent", tt.log(t, log, gen, cp+"-intent"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, err := chunkstore.Open(cp, chunkstore.Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			notes, problems, err := CheckIntentLog(st)
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != len(tt.wantNote) || len(problems) != tt.wantProblems {
				t.Fatalf("notes %q, problems %q; want %d notes, %d problems", notes, problems, len(tt.wantNote), tt.wantProblems)
			}
			for i, w := range tt.wantNote {
				if !strings.Contains(notes[i], w) {
					t.Errorf("note %q, want it to say %q", notes[i], w)
				}
			}
		})
	}
}
