package fs

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCommitPages says which bbolt pages, by bucket, one commit of one
// small fsync'd file writes into a store of 1,000 small files (the
// cost of git's and editors' small commits). bbolt copies every page it
// changes to a new page id, so the pages a commit wrote are the page
// ids that a walk of the file finds after it and not before. A
// measurement, not a check: set CFS_COMMIT_PAGES=1. It uses only API
// that release e3fc558 had, so that the same file measures it.
func TestCommitPages(t *testing.T) {
	if os.Getenv("CFS_COMMIT_PAGES") != "1" {
		t.Skip("a measurement: set CFS_COMMIT_PAGES=1")
	}
	path := filepath.Join(t.TempDir(), "ws.cfs")
	f, err := Open(path, Options{CommitInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	sync := func() {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	file := func(dir Ino, name string) {
		a, err := f.Create(Caller{}, dir, name, NewNode{Mode: syscall.S_IFREG | 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Open(a.Ino); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(ctx, a.Ino, 0, []byte("x\n"), false); err != nil {
			t.Fatal(err)
		}
		f.Release(a.Ino)
		f.Release(a.Ino)
	}
	for i := range 1000 {
		file(RootIno, fmt.Sprintf("f%d", i))
		if i%100 == 99 {
			sync()
		}
	}
	sync()
	total := map[string]int{}
	const rounds = 20
	for r := range rounds {
		before := pagesByBucket(t, path)
		file(RootIno, fmt.Sprintf("g%d", r))
		sync()
		after := pagesByBucket(t, path)
		for id, b := range after {
			if before[id] != b {
				total[b]++
			}
		}
	}
	var names []string
	sum := 0
	for b, n := range total {
		names = append(names, b)
		sum += n
	}
	sort.Strings(names)
	var out strings.Builder
	for _, b := range names {
		fmt.Fprintf(&out, "  %-28s %5.2f\n", b, float64(total[b])/rounds)
	}
	t.Logf("pages written per one-file commit (mean of %d), by bucket; meta pages not counted:\n%s  %-28s %5.2f", rounds, out.String(), "total", float64(sum)/rounds)
}

// pagesByBucket reads the bbolt file at path and names, for each page
// id in use (the first of an overflow run), what holds it: a bucket's
// path and "branch" or "leaf", "root" or "freelist".
func pagesByBucket(t *testing.T, path string) map[uint64]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	psz := int(le.Uint32(b[16+8:])) // meta: magic, version, pageSize
	meta := func(i int) []byte { return b[i*psz+16:] }
	m := meta(0)
	if le.Uint64(meta(1)[8+8+8+8+8+8:]) > le.Uint64(m[8+8+8+8+8+8:]) { // txid
		m = meta(1)
	}
	// meta: magic(4) version(4) pageSize(4) flags(4) root{pgid(8) seq(8)} freelist(8) pgid(8) txid(8)
	root := le.Uint64(m[16:])
	freelist := le.Uint64(m[32:])
	out := map[uint64]string{freelist: "freelist"}
	var walk func(id uint64, name string)
	walkPage := func(p []byte, id uint64, name string) {
		flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
		if id != 0 {
			kind := "leaf"
			if flags&0x01 != 0 {
				kind = "branch"
			}
			out[id] = name + " " + kind
		}
		for i := range count {
			e := p[16+i*16:]
			if flags&0x01 != 0 { // branch: pos, ksize, pgid
				walk(le.Uint64(e[8:]), name)
				continue
			}
			// leaf: flags, pos, ksize, vsize
			if le.Uint32(e)&0x01 == 0 {
				continue
			}
			pos, ks, vs := le.Uint32(e[4:]), le.Uint32(e[8:]), le.Uint32(e[12:])
			key := string(e[pos : pos+ks])
			val := e[pos+ks : pos+ks+vs]
			sub := key
			if name != "" {
				sub = name + "/" + key
			}
			if strings.HasPrefix(name, "chunks") {
				sub = "chunks/<body>"
			}
			if r := le.Uint64(val); r != 0 {
				walk(r, sub)
			}
			// an inline bucket lives in its parent's leaf
		}
	}
	walk = func(id uint64, name string) {
		walkPage(b[int(id)*psz:], id, name)
	}
	walkPage(b[int(root)*psz:], root, "")
	out[root] = "(root)"
	return out
}
