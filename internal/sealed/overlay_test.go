package sealed

import (
	"bytes"
	"path/filepath"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// mapBase is a Base over a sorted map.
type mapBase map[string][]byte

func (m mapBase) Get(key []byte) ([]byte, error) { return m[string(key)], nil }

func (m mapBase) Seek(key []byte, after bool) ([]byte, []byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if c := bytes.Compare([]byte(k), key); c > 0 || c == 0 && !after {
			return []byte(k), m[k], nil
		}
	}
	return nil, nil, nil
}

// runOverlay applies ops (from data: each op is 3 bytes, kind, key, value)
// to an overlay over base and to a model, and checks every read, the
// kept answers and a full merged walk against the model.
func runOverlay(t *testing.T, data []byte) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "o.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := mapBase{"a": []byte("A"), "c": []byte("C"), "e": []byte(""), "g": []byte("G")}
	model := map[string][]byte{}
	for k, v := range base {
		model[k] = v
	}
	own := map[string]bool{} // keys whose model value is the overlay's
	err = db.Update(func(tx *bolt.Tx) error {
		bb, err := tx.CreateBucket([]byte("ov"))
		if err != nil {
			return err
		}
		b := Overlay(bb, []byte("fork x inodes"), 3, base)
		for i := 0; i+2 < len(data); i += 3 {
			key := []byte{'a' + data[i+1]%8}
			val := []byte{'0' + data[i+2]%10}
			_, had := model[string(key)]
			fromBase := had && !own[string(key)]
			switch data[i] % 3 {
			case 0, 1:
				kept, err := b.PutKept(key, val)
				if err != nil {
					t.Fatal(err)
				}
				if kept != fromBase {
					t.Fatalf("op %d: put %s: kept %v, want %v", i/3, key, kept, fromBase)
				}
				model[string(key)], own[string(key)] = val, true
			case 2:
				kept, err := b.DeleteKept(key)
				if err != nil {
					t.Fatal(err)
				}
				if kept != fromBase {
					t.Fatalf("op %d: delete %s: kept %v, want %v", i/3, key, kept, fromBase)
				}
				delete(model, string(key))
				own[string(key)] = true
			}
			for k := byte('a'); k < 'a'+8; k++ {
				got, err := b.Get([]byte{k})
				if err != nil {
					t.Fatal(err)
				}
				want, ok := model[string([]byte{k})]
				if ok != (got != nil) || !bytes.Equal(got, want) {
					t.Fatalf("op %d: get %c: %q, want %q (%v)", i/3, k, got, want, ok)
				}
			}
			var walked []string
			c := b.Cursor()
			for k, v, err := c.First(); k != nil; k, v, err = c.Next() {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(v, model[string(k)]) {
					t.Fatalf("op %d: walk %s: %q, want %q", i/3, k, v, model[string(k)])
				}
				walked = append(walked, string(k))
			}
			var want []string
			for k := range model {
				want = append(want, k)
			}
			sort.Strings(want)
			if len(walked) != len(want) || len(want) > 0 && !equalStrings(walked, want) {
				t.Fatalf("op %d: walk %v, want %v", i/3, walked, want)
			}
		}
		// The overlay's own records: tombstones only for base keys.
		return OverlayRecords(bb, []byte("fork x inodes"), func(k, v []byte, tomb bool) error {
			if tomb && base[string(k)] == nil {
				t.Errorf("a tombstone for %s, which the base lacks", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func equalStrings(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOverlay(t *testing.T) {
	runOverlay(t, []byte{
		0, 1, 1, // put b
		2, 0, 0, // delete a (base): tombstone
		2, 1, 0, // delete b (own): gone
		0, 0, 5, // put a back
		2, 4, 0, // delete e (empty value in base)
		0, 7, 3, // put h
		2, 2, 0, 2, 2, 0, // delete c twice
		1, 2, 9, // put c again
	})
}

func FuzzOverlay(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 0, 0, 2, 1, 0})
	f.Add([]byte{2, 2, 2, 1, 2, 3, 2, 2, 2, 0, 6, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 300 {
			return
		}
		runOverlay(t, data)
	})
}
