package audit

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestAppendReadVerify(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "a.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var head Head
	for i := range 10 {
		db.Update(func(tx *bolt.Tx) error {
			v := Allowed
			if i%3 == 0 {
				v = Denied
			}
			head, err = Append(tx, uint64(i+1), int64(i+1), []*Record{{Kind: KindVerdict, Verdict: v, Backend: []string{"a", "b"}[i%2]}, {Kind: KindExec, ExecID: "x"}})
			return err
		})
	}
	if head.Seq != 20 {
		t.Fatalf("head %v", head)
	}
	db.View(func(tx *bolt.Tx) error {
		all, err := Read(tx, Query{})
		if err != nil || len(all) != 20 || all[19].Hash != head.String()[3:] {
			t.Fatalf("read: %d %v", len(all), err)
		}
		got, _ := Read(tx, Query{Backend: "a", Denied: true, Limit: 2})
		if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 13 || got[0].Time == 0 {
			t.Errorf("query: %+v", got)
		}
		got, _ = Read(tx, Query{Since: 1, Backend: "a", Denied: true})
		if len(got) != 1 || got[0].Seq != 13 {
			t.Errorf("query: %+v", got)
		}
		rep := Verify(tx, VerifyOptions{Execs: []ExecRef{{ID: "x"}}, Anchors: []Head{head}})
		if !rep.OK() || rep.Records != 20 || rep.Anchors != 1 || rep.Last != head.String() {
			t.Errorf("verify: %+v", rep)
		}
		rep = Verify(tx, VerifyOptions{Execs: []ExecRef{{ID: "y"}}, Anchors: []Head{{Seq: 25, Hash: head.Hash}}})
		if rep.OK() || !strings.Contains(rep.Err().Error(), "anchor record 25 is not in the log") || !strings.Contains(rep.Err().Error(), "no audit record") {
			t.Errorf("verify against a missing anchor and exec: %v", rep.Err())
		}
		return nil
	})
	if _, err := ParseHead(head.String()); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "1", "0:00", "x:ab", "3:abcd"} {
		if _, err := ParseHead(bad); err == nil {
			t.Errorf("ParseHead(%q) accepted", bad)
		}
	}
}

func TestTrim(t *testing.T) {
	r := Record{Argv: []string{strings.Repeat("a", 3000), strings.Repeat("b", 3000), "c"}, Paths: make([]string, MaxPaths+5), Detail: strings.Repeat("d", 2000) + "\xff"}
	r.Trim()
	n := 0
	for _, a := range r.Argv {
		n += len(a)
	}
	if n != MaxArgvBytes || len(r.Argv) != 2 || !r.ArgvTruncated || len(r.Paths) != MaxPaths || !r.PathsTruncated || len(r.Detail) != MaxDetailBytes {
		t.Errorf("trimmed: argv %d bytes in %d, %d paths, detail %d", n, len(r.Argv), len(r.Paths), len(r.Detail))
	}
}

func TestPolicyRecords(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "a.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error {
		_, err := Append(tx, 1, 1, []*Record{{Kind: KindPolicy, PolicyVersion: "v1"}, {Kind: KindExec}, {Kind: KindPolicy, PolicyVersion: "v1"}})
		return err
	})
	db.Update(func(tx *bolt.Tx) error {
		_, err := Append(tx, 2, 2, []*Record{{Kind: KindPolicy, PolicyVersion: "v2"}})
		return err
	})
	db.View(func(tx *bolt.Tx) error {
		recs, err := Read(tx, Query{})
		if err != nil || len(recs) != 4 || recs[0].PreviousPolicy != "" || recs[2].PreviousPolicy != "v1" || recs[3].PreviousPolicy != "v1" {
			t.Errorf("%+v %v", recs, err)
		}
		if rep := Verify(tx, VerifyOptions{}); !rep.OK() {
			t.Error(rep.Err())
		}
		return nil
	})
}
