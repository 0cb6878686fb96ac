package boltcheck

import (
	"path/filepath"
	"testing"
)

// FuzzCheck runs Check on arbitrary file bytes: it must not panic (nor
// hang: the fuzzer times a slow input out). Each input is checked as it
// is, and again with both metas' checksums made right, so that mutations
// get past the metas into the pages.
func FuzzCheck(f *testing.F) {
	dir := f.TempDir()
	for i, spec := range []dbSpec{
		{pageSize: 1024},
		{pageSize: 1024, keys: 20, valSize: 20, nested: 2, bigVal: 1500, inline: 3, deep: 2, deletes: true},
		{pageSize: 512, keys: 40, valSize: 10, inline: 2, deletes: true, noFreelistSync: true},
	} {
		p := filepath.Join(dir, "seed"+string(rune('0'+i)))
		buildDB(f, p, spec)
		f.Add(readFile(f, p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOne(data)
		if len(data) < pageHeaderSize+metaSize {
			return
		}
		ps := int(u32(data[pageHeaderSize+8:]))
		if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 || len(data) < ps+pageHeaderSize+metaSize {
			return
		}
		fixMeta(data, ps, 0)
		fixMeta(data, ps, 1)
		fuzzOne(data)
	})
}

func fuzzOne(data []byte) {
	r, err := checkBytes(data, Options{})
	if err != nil {
		return
	}
	_ = r.Err()
	for _, p := range r.Problems {
		_ = p.String()
	}
}
