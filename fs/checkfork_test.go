package fs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	bolt "go.etcd.io/bbolt"
)

// uniqueData is n bytes no other file holds.
func uniqueData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// forkChunkIDs lists the chunks fork id's own chunk lists name.
func forkChunkIDs(t *testing.T, st *chunkstore.Store, id string) []chunkstore.ID {
	t.Helper()
	var ids []chunkstore.ID
	if err := st.View(func(tx *chunkstore.Tx) error {
		b := forkBucket(tx.Tx, id)
		if b == nil {
			return ErrNoFork
		}
		return sealed.OverlayRecords(b.Bucket(bucketChunks), forkSealName(id, bucketChunks), func(_, v []byte, tomb bool) error {
			if !tomb {
				ids = append(ids, chunkstore.ID(v))
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestForkGC: gc, live (as the daemon runs it, between two commits, the
// fork open with a write not yet committed) and offline, keeps every
// chunk a fork's file uses that nothing else does: the file reads back
// byte-identical after a reopen; fsck and scrub are clean. Once the fork
// is discarded, its chunks are gone and gc finds nothing left to free.
func TestForkGC(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	dir := forkBase(t, f)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := storeStats(t, f)
	fi, err := f.CreateFork(ctx, "gc")
	if err != nil {
		t.Fatal(err)
	}
	fk, err := f.OpenFork(fi.ID)
	if err != nil {
		t.Fatal(err)
	}
	big := uniqueData(1, 300_000) // 74 chunks of 4 KiB, in the fork only
	later := uniqueData(2, 50_000)
	putFile(t, fk, dir.Ino, "big", big)
	if err := fk.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	putFile(t, fk, dir.Ino, "later", later) // pending while gc runs
	g, err := GC(f.Store())
	if err != nil || g.ChunksFreed != 0 || g.RefsCorrected != 0 {
		t.Fatalf("live gc with a fork: %+v %v", g, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ids := forkChunkIDs(t, st, "gc")
	if len(ids) < 80 {
		t.Fatalf("the fork's lists name %d chunks", len(ids))
	}
	if g, err := GC(st); err != nil || g.ChunksFreed != 0 || g.RefsCorrected != 0 {
		t.Fatalf("offline gc with a fork: %+v %v", g, err)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck: %v %q", err, r.Problems)
	}
	if r, err := Scrub(ctx, st, ScrubOptions{Batch: 7}); err != nil || !r.Clean() {
		t.Fatalf("scrub: %v %+v", err, r)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	fk, err = f.OpenFork("gc")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"big": big, "later": later} {
		a, err := fk.Lookup(Caller{}, dir.Ino, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAllOf(t, fk, a.Ino); !bytes.Equal(got, want) {
			t.Errorf("%s in the fork after gc: %d bytes, differ from the %d written", name, len(got), len(want))
		}
	}
	if _, err := f.DiscardFork(ctx, "gc"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g, err = GC(st)
	if err != nil || g.RefsCorrected != 0 {
		t.Fatalf("gc after the discard: %+v %v", g, err)
	}
	if err := st.View(func(tx *chunkstore.Tx) error {
		for _, id := range ids {
			if has, err := tx.Has(id); err != nil || has {
				t.Errorf("chunk %s of the discarded fork: still stored (%v)", id.Short(), err)
			}
		}
		s, err := tx.Stats()
		if err == nil && s.Chunks != before.Chunks {
			t.Errorf("%d chunks after the discard and gc, %d before the fork", s.Chunks, before.Chunks)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck: %v %q", err, r.Problems)
	}
}

// TestForkDamage: damage to a fork's records (a byte flipped in each
// kind, a record resealed to say something wrong, a chunk it alone uses
// lost) is reported by fsck and by scrub, offline and on a served
// workspace, naming the fork and the path in it; nothing panics, and
// the damaged fork can still be discarded.
func TestForkDamage(t *testing.T) {
	forkRaw := func(tx *bolt.Tx, name []byte) *bolt.Bucket {
		return tx.Bucket(bucketForks).Bucket([]byte("hurt")).Bucket(name)
	}
	flip := func(t *testing.T, b *bolt.Bucket, key []byte) {
		t.Helper()
		v := b.Get(key)
		if v == nil {
			t.Fatalf("no record %x", key)
		}
		v = bytes.Clone(v)
		v[len(v)/2] ^= 0x10
		if err := b.Put(key, v); err != nil {
			t.Fatal(err)
		}
	}
	type fixture struct {
		dir, file, newFile, sub Ino // the fork's /dir, /dir/f0 (changed), /dir/new and /dir/sub (made in it)
		newChunk                chunkstore.ID
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, st *chunkstore.Store, x fixture)
		want   []string // in fsck's and scrub's reports
	}{
		{
			name: "the fork's record",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					flip(t, tx.Bucket(bucketForks).Bucket([]byte("hurt")), keyForkRecord)
					return nil
				})
			},
			want: []string{"fork hurt: its record"},
		},
		{
			name: "an inode record made in the fork",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error { flip(t, forkRaw(tx.Tx, bucketInodes), inoKey(x.newFile)); return nil })
			},
			want: []string{"fork hurt: /dir/new: workspace record damaged"},
		},
		{
			name: "an inode record changed in the fork",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error { flip(t, forkRaw(tx.Tx, bucketInodes), inoKey(x.file)); return nil })
			},
			want: []string{"fork hurt: /dir/f0 (its path at the fork point): workspace record damaged"},
		},
		{
			name: "a directory entry",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					flip(t, forkRaw(tx.Tx, bucketDirents), direntKey(x.dir, "new"))
					return nil
				})
			},
			want: []string{"fork hurt: /dir/new: workspace record damaged"},
		},
		{
			name: "a chunk list record",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					flip(t, forkRaw(tx.Tx, bucketChunks), chunkKey(x.newFile, 1))
					return nil
				})
			},
			want: []string{"fork hurt: /dir/new: bytes 4096 to 8192: workspace record damaged"},
		},
		{
			name: "an extended attribute",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					flip(t, forkRaw(tx.Tx, bucketXattrs), append(inoKey(x.newFile), "user.y"...))
					return nil
				})
			},
			want: []string{`fork hurt: /dir/new: extended attribute "user.y": workspace record damaged`},
		},
		{
			name: "the fork's meta",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error { flip(t, forkRaw(tx.Tx, bucketForkMeta), keyNextIno); return nil })
			},
			want: []string{"fork hurt: fork meta"},
		},
		{
			name: "an entry resealed to name a missing inode",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					fx, err := forkView(st, tx.Tx, ForkInfo{ID: "hurt", Epoch: 1})
					if err != nil {
						t.Fatal(err)
					}
					return fx.Sealed(bucketDirents).Put(direntKey(x.dir, "ghost"), encodeDirent(dirent{Ino: x.sub + 1000, Type: syscall.S_IFREG}))
				})
			},
			want: []string{"fork hurt: /dir/ghost: names inode"},
		},
		{
			name: "a directory's link count resealed",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error {
					fx, err := forkView(st, tx.Tx, ForkInfo{ID: "hurt", Epoch: 1})
					if err != nil {
						t.Fatal(err)
					}
					in := fx.Sealed(bucketInodes)
					v, err := in.Get(inoKey(x.dir))
					if err != nil {
						t.Fatal(err)
					}
					a, target, sum, err := decodeInodeSum(x.dir, v)
					if err != nil {
						t.Fatal(err)
					}
					a.Nlink += 5
					return in.Put(inoKey(x.dir), encodeInode(&a, target, sum))
				})
			},
			want: []string{"fork hurt: /dir: directory link count"},
		},
		{
			name: "a chunk only the fork uses, lost",
			damage: func(t *testing.T, st *chunkstore.Store, x fixture) {
				st.Update(func(tx *chunkstore.Tx) error { return tx.DeleteChunk(x.newChunk) })
			},
			want: []string{"fork hurt: /dir/new: bytes 0 to 4096: chunk"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f, path := openSmallChunks(t)
			dir := forkBase(t, f)
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			fi, err := f.CreateFork(ctx, "hurt")
			if err != nil {
				t.Fatal(err)
			}
			fk, err := f.OpenFork(fi.ID)
			if err != nil {
				t.Fatal(err)
			}
			x := fixture{dir: dir.Ino}
			x.file = putFile(t, fk, dir.Ino, "f0", []byte("changed in the fork")).Ino
			x.newFile = putFile(t, fk, dir.Ino, "new", uniqueData(3, 20_000)).Ino
			if err := fk.SetXattr(x.newFile, "user.y", []byte("2"), 0); err != nil {
				t.Fatal(err)
			}
			sub, err := fk.Create(Caller{}, dir.Ino, "sub", NewNode{Mode: syscall.S_IFDIR | 0o755})
			if err != nil {
				t.Fatal(err)
			}
			x.sub = sub.Ino
			x.newChunk = chunkstore.Sum(uniqueData(3, 20_000)[:4096])
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := Check(st, false); err != nil || !r.Clean() {
				t.Fatalf("fsck before the damage: %v %q", err, r.Problems)
			}
			tt.damage(t, st, x)
			check := func(how string, lines []string) {
				t.Helper()
				all := strings.Join(lines, "\n")
				for _, w := range tt.want {
					if !strings.Contains(all, w) {
						t.Errorf("%s does not say %q:\n%s", how, w, all)
					}
				}
			}
			r, err := Check(st, false)
			if err != nil {
				t.Fatalf("fsck: %v", err)
			}
			check("fsck", r.Problems)
			s, err := Scrub(ctx, st, ScrubOptions{Batch: 3})
			if err != nil {
				t.Fatalf("scrub: %v", err)
			}
			check("scrub", s.Damage)
			st.Close()
			// Served: the daemon's scrub runs on the open workspace.
			f, err = Open(path, Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			s, err = Scrub(ctx, f.Store(), ScrubOptions{})
			if err != nil {
				t.Fatalf("live scrub: %v", err)
			}
			check("live scrub", s.Damage)
			if _, err := f.DiscardFork(ctx, "hurt"); err != nil {
				t.Errorf("discard the damaged fork: %v", err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			st, err = chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if r, err := Check(st, true); err != nil {
				t.Fatalf("fsck --repair after the discard: %v", err)
			} else {
				t.Logf("repaired: %q", r.Repaired)
			}
			if r, err := Check(st, false); err != nil || !r.Clean() {
				t.Errorf("fsck after the discard and a repair: %v %q", err, r.Problems)
			}
		})
	}
}

// TestForkRecordRepair: fsck --repair rebuilds a fork's damaged record
// from its pin and its inode numbers; the fork then opens and reads as
// before.
func TestForkRecordRepair(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	dir := forkBase(t, f)
	fi, err := f.CreateFork(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	fk, _ := f.OpenFork(fi.ID)
	putFile(t, fk, dir.Ino, "new", []byte("made in the fork"))
	want := manifest(t, fk)
	f.Close()
	st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	st.Update(func(tx *chunkstore.Tx) error {
		b := tx.Bucket(bucketForks).Bucket([]byte("r"))
		v := bytes.Clone(b.Get(keyForkRecord))
		v[3] ^= 1
		return b.Put(keyForkRecord, v)
	})
	if list, err := ListForks(st); err != nil || len(list) != 1 || !list[0].Damaged {
		t.Errorf("fork list of a damaged fork: %+v %v", list, err)
	}
	if r, err := Check(st, true); err != nil || len(r.Repaired) == 0 {
		t.Fatalf("repair: %v %+v", err, r)
	}
	if r, err := Check(st, false); err != nil || !r.Clean() {
		t.Fatalf("fsck after the repair: %v %q", err, r.Problems)
	}
	st.Close()
	f, err = Open(path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fk, err = f.OpenFork("r")
	if err != nil {
		t.Fatal(err)
	}
	if got := manifest(t, fk); got != want {
		t.Errorf("the repaired fork:\n%s\nwant\n%s", got, want)
	}
}

// FuzzForkCheck: whatever a fork's buckets hold (a record put raw into
// one of them, sealed or not, with or without the overlay's tag), fsck
// and scrub report on it without panicking, and the fork can be
// discarded or the damage named; what they read never takes the
// workspace's own check down.
func FuzzForkCheck(f *testing.F) {
	dir := f.TempDir()
	tmpl := filepath.Join(dir, "tmpl.cfs")
	ws, err := Open(tmpl, Options{ChunkSize: 4096, Logger: quietLog()})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	d := forkBase(f, ws)
	fi, err := ws.CreateFork(ctx, "z")
	if err != nil {
		f.Fatal(err)
	}
	fk, err := ws.OpenFork(fi.ID)
	if err != nil {
		f.Fatal(err)
	}
	putFile(f, fk, d.Ino, "new", uniqueData(5, 9000))
	if err := ws.Close(); err != nil {
		f.Fatal(err)
	}
	template, err := os.ReadFile(tmpl)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), inoKey(d.Ino), []byte{1, 2, 3}, false)
	f.Add(uint8(1), direntKey(d.Ino, "x"), encodeDirent(dirent{Ino: 99, Type: syscall.S_IFREG}), true)
	f.Add(uint8(2), chunkKey(d.Ino, 0), make([]byte, 32), true)
	f.Add(uint8(7), keyNextIno, inoKey(5), true)
	f.Add(uint8(8), keyForkRecord, []byte("short"), true)
	n := 0
	f.Fuzz(func(t *testing.T, which uint8, key, val []byte, seal bool) {
		if len(key) == 0 || len(key) > 512 || len(val) > 4096 {
			return
		}
		n++
		path := filepath.Join(dir, fmt.Sprintf("ws%d.cfs", n))
		defer os.Remove(path)
		if err := os.WriteFile(path, template, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		st.Update(func(tx *chunkstore.Tx) error {
			fb := tx.Bucket(bucketForks).Bucket([]byte("z"))
			b, name := fb, bucketForks
			if i := int(which) % (len(forkOwn) + 1); i < len(forkOwn) {
				b, name = fb.Bucket(forkOwn[i].name), forkSealName("z", forkOwn[i].name)
			}
			v := val
			if seal {
				v = sealed.Append(name, key, bytes.Clone(val), 1)
			}
			return b.Put(bytes.Clone(key), v)
		})
		if _, err := Check(st, false); err != nil {
			t.Logf("fsck: %v", err)
		}
		if _, err := Scrub(ctx, st, ScrubOptions{Batch: 5}); err != nil {
			t.Logf("scrub: %v", err)
		}
		if _, err := ListForks(st); err != nil {
			t.Logf("fork list: %v", err)
		}
	})
}

// TestForkChangesMergedInode: a fork may change and delete the
// workspace's inodes that an earlier fork made and merged (numbers from
// that fork's range): fsck is clean with such a fork open, and after it
// merges. TestForkMergeKill's workers do this; a kill that left such a
// fork once made fsck report "inode ... lies outside the fork's range".
func TestForkChangesMergedInode(t *testing.T) {
	ctx := context.Background()
	f, path := openSmallChunks(t)
	first, err := f.CreateFork(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	fa, err := f.OpenFork(first.ID)
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, fa, RootIno, "kept", []byte("made in the first fork"))
	putFile(t, fa, RootIno, "gone", []byte("made in the first fork, deleted in the second"))
	if _, _, err := f.MergeFork(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	second, err := f.CreateFork(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	fb, err := f.OpenFork(second.ID)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := fb.Lookup(Caller{}, RootIno, "kept")
	if err != nil || kept.Ino < forkInoFloor {
		t.Fatalf("kept: %+v %v (want an inode of the first fork's range)", kept, err)
	}
	putFile(t, fb, RootIno, "kept", []byte("changed in the second fork"))
	mode := uint32(0o600)
	if _, err := fb.SetAttr(Caller{}, kept.Ino, SetAttrIn{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	if err := fb.Unlink(RootIno, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := fb.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := chunkstore.Open(path, chunkstore.Options{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := Check(st, false); err != nil || !r.Clean() {
			t.Errorf("fsck %s: %v %q", when, err, r.Problems)
		}
		st.Close()
		if f, err = Open(path, Options{Logger: quietLog()}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
	check("with the second fork open")
	if _, _, err := f.MergeFork(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	check("after the second merge")
}
