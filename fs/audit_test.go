package fs

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"
)

// busyAudited runs execs from several goroutines at once, each writing a
// file and recording its exec and a verdict, and returns the count of
// records.
func busyAudited(t *testing.T, f *FS) int {
	t.Helper()
	ctx := context.Background()
	const workers, each = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				cp, err := f.BeginExec(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 != 2 { // every third changes nothing
					putFile(t, f, RootIno, id, []byte(id))
				}
				f.Audit(audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "hostfs", Backend: "test", Rule: "read_only", ExecID: id})
				exit := i % 2
				rec, err := f.EndExec(ctx, cp, ExecRecord{Backend: "test", Command: id,
					Audit: &audit.Record{Kind: audit.KindExec, Verdict: audit.Allowed, Backend: "test", Argv: []string{"echo", id}, Exit: &exit}})
				if err != nil {
					t.Error(err)
					return
				}
				if !rec.Audited || rec.Audit.After != rec.After || rec.Audit.Before != rec.Before {
					t.Errorf("exec %s: record %+v, audit %+v", id, rec, rec.Audit)
				}
			}
		}()
	}
	wg.Wait()
	return workers * each * 2
}

// TestAuditChain: the log of a busy workspace verifies, holds every
// record once with its exec's states, survives a reopen and fsck; and
// every way of tampering with it through bbolt is detected.
func TestAuditChain(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	n := busyAudited(t, f)
	rep, err := f.AuditVerify(ctx, nil)
	if err != nil || !rep.OK() || rep.Records != uint64(n) || rep.Execs != n/2 {
		t.Fatalf("verify: %v %+v (want %d records)", err, rep, n)
	}
	recs, err := f.AuditRecords(ctx, audit.Query{})
	if err != nil || len(recs) != n {
		t.Fatalf("records: %d %v", len(recs), err)
	}
	execs, _ := f.Execs()
	after := map[string]uint64{}
	for _, e := range execs {
		after[e.ID] = e.After
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if r.Kind == audit.KindExec && r.After != after[r.ExecID] {
			t.Errorf("exec %s: audit after %d, exec record %d", r.ExecID, r.After, after[r.ExecID])
		}
	}
	if d, _ := f.AuditRecords(ctx, audit.Query{Denied: true, Since: 10, Limit: 5}); len(d) != 5 || d[0].Verdict != audit.Denied || d[0].Seq <= 10 {
		t.Errorf("query denied since 10, limit 5: %+v", d)
	}
	anchor, err := audit.ParseHead(rep.Last)
	if err != nil {
		t.Fatal(err)
	}
	// The last record is an exec's (a verdict before it, in its worker).
	f.Audit(audit.Record{Kind: audit.KindPolicy, PolicyVersion: "v2"})
	cp, err := f.BeginExec(ctx, "last")
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "last", []byte("x"))
	if _, err := f.EndExec(ctx, cp, ExecRecord{Audit: &audit.Record{Kind: audit.KindExec, Backend: "test"}}); err != nil {
		t.Fatal(err)
	}
	fsckClosed(t, f, path)

	tamper := func(name string, edit func(t *testing.T, b *bolt.Bucket), anchors []audit.Head, want string) {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ws.cfs")
			copyStore(t, path, p)
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(audit.BucketName)
				if b == nil {
					t.Fatal("no audit bucket")
				}
				edit(t, b)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			g, err := Open(p, Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			rep, err := g.AuditVerify(ctx, anchors)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				if !rep.OK() {
					t.Fatalf("problems: %q", rep.Problems)
				}
				return
			}
			if rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), want) {
				t.Fatalf("want a problem with %q, got %q", want, rep.Problems)
			}
			if rep.Err() == nil {
				t.Fatal("Err is nil")
			}
		})
	}
	key := func(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
	total := uint64(n + 2)
	// reseal puts val under key, sealed with the birth it had, as a tool
	// that knows the format would.
	reseal := func(t *testing.T, b *bolt.Bucket, k, val []byte) {
		_, birth, err := sealed.OpenBirth(audit.BucketName, k, b.Get(k))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(k, sealed.Seal(audit.BucketName, k, val, birth)); err != nil {
			t.Fatal(err)
		}
	}
	open := func(t *testing.T, b *bolt.Bucket, k []byte) []byte {
		v, err := sealed.Open(audit.BucketName, k, b.Get(k))
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), v...)
	}
	// rechain recomputes every hash from seq on, and the head, as one who
	// knows the chain would.
	rechain := func(t *testing.T, b *bolt.Bucket, from uint64) {
		prev := make([]byte, 32)
		if from > 1 {
			prev = open(t, b, key(from-1))[:32]
		}
		var seq uint64
		c := b.Cursor()
		for k, _ := c.Seek(key(from)); k != nil && len(k) == 8; k, _ = c.Next() {
			seq = binary.BigEndian.Uint64(k)
			v := open(t, b, k)
			h := blake3.New()
			h.Write([]byte("computerfs audit v1"))
			h.Write(k)
			h.Write(prev)
			h.Write(v[32:])
			prev = h.Sum(nil)
			copy(v, prev)
			reseal(t, b, k, v)
			c.Seek(k)
		}
		head := open(t, b, []byte("head"))
		binary.BigEndian.PutUint64(head, seq)
		copy(head[8:], prev)
		reseal(t, b, []byte("head"), head)
	}
	tamper("untouched", func(t *testing.T, b *bolt.Bucket) {}, []audit.Head{anchor}, "")
	tamper("a byte edited, resealed", func(t *testing.T, b *bolt.Bucket) {
		v := open(t, b, key(5))
		v = []byte(strings.Replace(string(v), `"backend":"test"`, `"backend":"tesT"`, 1))
		reseal(t, b, key(5), v)
	}, nil, "record 5: hash does not chain")
	tamper("a byte edited, not resealed", func(t *testing.T, b *bolt.Bucket) {
		v := append([]byte(nil), b.Get(key(6))...)
		v[40] ^= 1
		b.Put(key(6), v)
	}, nil, "record 6: seal does not match")
	tamper("a record deleted", func(t *testing.T, b *bolt.Bucket) {
		b.Delete(key(7))
	}, nil, "records 7 to 7 are missing")
	tamper("a record deleted, the rest renumbered", func(t *testing.T, b *bolt.Bucket) {
		for s := uint64(7); s < total; s++ {
			v := open(t, b, key(s+1))
			_, birth, _ := sealed.OpenBirth(audit.BucketName, key(s+1), b.Get(key(s+1)))
			b.Put(key(s), sealed.Seal(audit.BucketName, key(s), v, birth))
		}
		b.Delete(key(total))
	}, nil, "record 7: hash does not chain")
	tamper("the tail truncated", func(t *testing.T, b *bolt.Bucket) {
		b.Delete(key(total))
		b.Delete(key(total - 1))
	}, nil, fmt.Sprintf("records %d to %d were truncated", total-1, total))
	tamper("the tail truncated, the head rewritten", func(t *testing.T, b *bolt.Bucket) {
		b.Delete(key(total))
		rechain(t, b, total-1)
	}, nil, "have no audit record (records deleted or truncated): last")
	tamper("the head deleted", func(t *testing.T, b *bolt.Bucket) {
		b.Delete([]byte("head"))
	}, nil, "the head record is missing")
	tamper("rewritten whole, against an anchor", func(t *testing.T, b *bolt.Bucket) {
		// The first denial (the workers' records interleave: which
		// sequence number it has depends on the run).
		seq := uint64(1)
		v := open(t, b, key(seq))
		for !strings.Contains(string(v), `"verdict":"denied"`) {
			seq++
			v = open(t, b, key(seq))
		}
		v = []byte(strings.Replace(string(v), `"verdict":"denied"`, `"verdict":"allowed"`, 1))
		v = []byte(strings.Replace(string(v), `"verdict":"allowed","door":"hostfs"`, `"verdict":"allowed","door":"exec"`, 1))
		reseal(t, b, key(seq), v)
		rechain(t, b, seq)
	}, []audit.Head{anchor}, fmt.Sprintf("record %d: hash", anchor.Seq))
	tamper("rewritten whole, no anchor", func(t *testing.T, b *bolt.Bucket) {
		v := open(t, b, key(3))
		v = []byte(strings.Replace(string(v), `"backend":"test"`, `"backend":"tesT"`, 1))
		reseal(t, b, key(3), v)
		rechain(t, b, 3)
	}, nil, "") // what the chain cannot see, said in package audit's doc
	tamper("the bucket deleted", func(t *testing.T, b *bolt.Bucket) {
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			b.Delete(k)
		}
	}, nil, "have no audit record")
	_ = hex.EncodeToString

	// fsck reports a broken chain (and repairs nothing).
	p := filepath.Join(t.TempDir(), "ws.cfs")
	copyStore(t, path, p)
	db, _ := bolt.Open(p, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(audit.BucketName).Delete(key(9)) })
	db.Close()
	st, err := chunkstore.Open(p, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(st, false)
	if err != nil || r.Clean() || !strings.Contains(strings.Join(r.Problems, "\n"), "audit log: records 9 to 9 are missing") {
		t.Fatalf("fsck: %v %q", err, r.Problems)
	}
	st.Close()

	// scrub verifies the log's seals: a byte flipped on disk is found,
	// named as an audit record.
	p = filepath.Join(t.TempDir(), "ws.cfs")
	copyStore(t, path, p)
	db, _ = bolt.Open(p, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(audit.BucketName)
		v := append([]byte(nil), b.Get(key(11))...)
		v[50] ^= 0x20
		return b.Put(key(11), v)
	})
	db.Close()
	st, err = chunkstore.Open(p, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srep, err := Scrub(ctx, st, ScrubOptions{})
	if err != nil || len(srep.Damage) != 1 || !strings.Contains(srep.Damage[0], "audit record 11") {
		t.Fatalf("scrub: %v %q", err, srep.Damage)
	}
}

// TestAuditInterrupted: an exec a crash interrupted is recorded by the
// next open, in the same transaction as its exec record.
func TestAuditInterrupted(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	if _, err := f.BeginExec(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	putFile(t, f, RootIno, "made", []byte("made by the exec"))
	f.Close()
	f, err := Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := f.AuditRecords(ctx, audit.Query{})
	if err != nil || len(recs) != 1 || recs[0].Kind != audit.KindInterrupted || recs[0].ExecID != "long" || recs[0].After <= recs[0].Before {
		t.Fatalf("%+v %v", recs, err)
	}
	if rep, err := f.AuditVerify(ctx, nil); err != nil || !rep.OK() || rep.Execs != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
}

func copyStore(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
}

// BenchmarkExecAudit: what an exec's audit record costs: an exec that
// writes one small file, with and without its record (and a verdict),
// reporting bbolt pages written per exec. The record rides with the
// exec's own commit, so the commits per exec do not change.
//
//	go test -run '^$' -bench ExecAudit -benchtime 300x ./fs
func BenchmarkExecAudit(b *testing.B) {
	for _, withAudit := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", withAudit), func(b *testing.B) {
			ctx := context.Background()
			f, err := Open(filepath.Join(b.TempDir(), "ws.cfs"), Options{Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			db := f.Store().DB()
			before := db.Stats()
			f.mu.Lock()
			epoch0 := f.epoch
			f.mu.Unlock()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("x%d", i)
				cp, err := f.BeginExec(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				putFile(b, f, RootIno, id, []byte(id))
				rec := ExecRecord{Backend: "shell", Command: "echo " + id + " > " + id}
				if withAudit {
					exit := 0
					f.Audit(audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "hostfs", Rule: "read_only", Backend: "shell", ExecID: id, Path: "/ro/" + id})
					rec.Audit = &audit.Record{Kind: audit.KindExec, Verdict: audit.Allowed, Door: "exec", Backend: "shell", Reason: "policy: every command (echo) runs in process on the shell",
						Argv: []string{"echo " + id + " > " + id}, EnvNames: []string{"HOME", "LANG", "PATH"}, PolicyVersion: "4d01d25015207c478734e4db96215a9c", Exit: &exit, Paths: []string{"/" + id}}
				}
				if _, err := f.EndExec(ctx, cp, rec); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := db.Stats()
			d := after.Sub(&before)
			b.ReportMetric(float64(d.TxStats.GetPageCount())/float64(b.N), "pages/exec")
			f.mu.Lock()
			b.ReportMetric(float64(f.epoch-epoch0)/float64(b.N), "commits/exec")
			f.mu.Unlock()
		})
	}
}
