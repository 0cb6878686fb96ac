package fs

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// An exec that writes a few bytes over more stored chunks than the
// buffer pool holds (sparse slots, merged by workers that need commits
// to free buffers) has its record in the commit of its last changes:
// undo finds every file as the exec left it, none "changed since".
func TestUndoPartialWrites(t *testing.T) {
	ctx := context.Background()
	f, err := Open(filepath.Join(t.TempDir(), "ws.cfs"), Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var inos []Ino
	for i := range 300 {
		a := putFile(t, f, RootIno, fmt.Sprintf("f%03d", i), bytes.Repeat([]byte{byte('a' + i%26)}, 3000+i))
		inos = append(inos, a.Ino)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := manifest(t, f)
	for round := range 3 {
		id := fmt.Sprintf("e%d", round)
		execAs(t, f, id, func() {
			for _, ino := range inos {
				if _, err := f.Open(ino); err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(ctx, ino, 0, []byte(fmt.Sprintf("exec %d\n", round)), false); err != nil {
					t.Fatal(err)
				}
				f.Release(ino)
			}
		})
		if _, _, _, err := f.Undo(ctx, UndoOptions{Exec: id}); err != nil {
			t.Fatalf("round %d: undo: %v", round, err)
		}
		if got := manifest(t, f); got != before {
			t.Fatalf("round %d: after the undo the tree differs from before the exec", round)
		}
	}
}
