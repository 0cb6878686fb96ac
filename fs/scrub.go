package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
)

// ScrubOptions configure Scrub.
type ScrubOptions struct {
	// Rate bounds the chunk bytes (as stored) read per second; 0 for no
	// bound.
	Rate int64
	// Batch is how many records each read transaction covers (512 if 0):
	// a live workspace's commits wait for no scrub, and a scrub holds no
	// transaction for long.
	Batch int
	// Progress, if set, is called as the scrub goes with the stored bytes
	// verified so far and the total.
	Progress func(done, total uint64)
}

// ScrubReport is what a scrub verified and found.
type ScrubReport struct {
	Chunks  int      `json:"chunks"`  // chunks whose bodies were read and hashed
	Bytes   uint64   `json:"bytes"`   // their stored bytes
	Records int      `json:"records"` // metadata records whose seals were verified
	Files   int      `json:"files"`   // chunk lists checked against their summaries
	Damage  []string `json:"damage"`  // what is damaged, by path where one is known
	Seconds float64  `json:"seconds"`
}

// Clean reports whether the scrub found nothing damaged.
func (r *ScrubReport) Clean() bool { return len(r.Damage) == 0 }

// Scrub verifies every chunk body (against its ID) and every record's
// seal of a store that may be live (a daemon serving it, writing as the
// scrub goes), a batch of records per read transaction, at a bounded
// rate, like zpool scrub. Every file's chunk list is checked against its
// summary. Damage is reported by the workspace paths it touches. What a
// concurrent commit changes between two batches is not damage: a chunk
// list found disagreeing with its summary is checked again in one
// transaction before it is reported. Scrub changes nothing; fsck
// --repair mends.
func Scrub(ctx context.Context, store *chunkstore.Store, opts ScrubOptions) (*ScrubReport, error) {
	start := time.Now()
	if opts.Batch <= 0 {
		opts.Batch = 512
	}
	rep := &ScrubReport{}
	var total uint64
	if err := store.View(func(tx *chunkstore.Tx) error {
		st, err := tx.Stats()
		total = st.StoredBytes
		return err
	}); err != nil {
		return rep, fmt.Errorf("scrub: %w", err)
	}
	pace := func() error {
		if opts.Progress != nil {
			opts.Progress(min(rep.Bytes, total), total)
		}
		if opts.Rate > 0 {
			ahead := time.Duration(float64(rep.Bytes)/float64(opts.Rate)*float64(time.Second)) - time.Since(start)
			if ahead > 0 {
				select {
				case <-time.After(ahead):
				case <-ctx.Done():
				}
			}
		}
		return ctx.Err()
	}

	// Chunks.
	bad := make(map[chunkstore.ID]string)
	var after []byte
	for {
		var problems []chunkstore.Problem
		err := store.View(func(tx *chunkstore.Tx) error {
			last, ok, p, err := tx.VerifyRange(after, opts.Batch)
			after, problems = last, p
			for _, ci := range ok {
				rep.Chunks++
				rep.Bytes += uint64(ci.Stored)
			}
			rep.Records += len(ok) + len(p)
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		for _, p := range problems {
			if p.Outboard {
				// The data is intact: reads fall back to the whole body.
				rep.Damage = append(rep.Damage, p.String()+"; fsck --repair rebuilds it")
				continue
			}
			bad[p.ID] = p.Detail
		}
		if err := pace(); err != nil {
			return rep, err
		}
		if after == nil {
			break
		}
	}

	// Records, and chunk lists against their summaries.
	type damaged struct {
		ino  Ino // 0 if the record names no inode
		what string
	}
	var found []damaged
	var suspects []Ino // chunk lists that disagreed with their summary
	usesBad := make(map[Ino][]string)
	usedBad := make(map[chunkstore.ID]bool)
	for _, name := range [][]byte{[]byte("meta"), []byte("chunkidx"), bucketInodes, bucketDirents, bucketChunks, bucketXattrs, bucketOrphans, bucketJournal, bucketSnapshots, audit.BucketName} {
		after = nil
		var cur Ino
		var sum listSum
		flush := func(tx *chunkstore.Tx) error {
			if cur == 0 {
				return nil
			}
			rep.Files++
			want, err := storedListSum(tx, cur)
			if err != nil || want.Known && want.listSum != sum {
				suspects = append(suspects, cur)
			}
			cur, sum = 0, listSum{}
			return nil
		}
		for {
			err := store.View(func(tx *chunkstore.Tx) error {
				if string(name) == "chunkidx" {
					// Verified with the bodies above.
					after = nil
					return nil
				}
				last, err := tx.Sealed(name).WalkRange(after, opts.Batch, func(k, v []byte, damage error) error {
					if chunkstore.Unsealed(name, k) {
						return nil // checked as the store opened
					}
					rep.Records++
					if damage != nil {
						d := damaged{what: describeKey(string(name), k) + ": " + damage.Error()}
						if len(k) >= 8 && string(name) != "meta" && string(name) != string(bucketJournal) && string(name) != string(audit.BucketName) {
							d.ino = keyIno(k[:8])
						}
						found = append(found, d)
					}
					if !bytes.Equal(name, bucketChunks) || len(k) != 16 {
						return nil
					}
					ino := keyIno(k)
					if ino != cur {
						flush(tx)
						cur = ino
					}
					if damage == nil {
						sum.add(binary.BigEndian.Uint64(k[8:]), v, +1)
						if len(v) == chunkstore.IDSize {
							if why, ok := bad[chunkstore.ID(v)]; ok {
								usedBad[chunkstore.ID(v)] = true
								usesBad[ino] = append(usesBad[ino], fmt.Sprintf("bytes %d and on: chunk %s: %s",
									binary.BigEndian.Uint64(k[8:])*uint64(store.ChunkSize()), chunkstore.ID(v).Short(), why))
							}
						}
					}
					return nil
				})
				after = last
				if err == nil && last == nil && bytes.Equal(name, bucketChunks) {
					err = flush(tx)
				}
				return err
			})
			if err != nil {
				return rep, fmt.Errorf("scrub: %w", err)
			}
			if err := pace(); err != nil {
				return rep, err
			}
			if after == nil {
				break
			}
		}
	}

	// The versions snapshots keep: each sealed under its own bucket and
	// key.
	after = nil
	for {
		err := store.View(func(tx *chunkstore.Tx) error {
			h := tx.Bucket(versions.BucketHistory)
			if h == nil {
				after = nil
				return nil
			}
			c := h.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for i := 0; k != nil && i < opts.Batch; i++ {
				rep.Records++
				name := versions.Name(k[0])
				if len(k) < 9 || name == "" {
					found = append(found, damaged{what: fmt.Sprintf("snapshot history key %x: malformed", k)})
				} else if _, err := sealed.Open([]byte(name), k[1:len(k)-8], v); err != nil {
					found = append(found, damaged{what: "a version a snapshot keeps: " + err.Error()})
				}
				after = bytes.Clone(k)
				k, v = c.Next()
			}
			if k == nil {
				after = nil
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("scrub: %w", err)
		}
		if err := pace(); err != nil {
			return rep, err
		}
		if after == nil {
			break
		}
	}

	forks, err := scrubForkRecords(ctx, store, opts.Batch, bad, rep, pace)
	if err != nil {
		return rep, fmt.Errorf("scrub: %w", err)
	}

	// Paths, and the suspects checked again, in one transaction.
	err = store.View(func(tx *chunkstore.Tx) error {
		names := make(map[Ino]dirName)
		tx.Sealed(bucketDirents).Walk(func(k, v []byte, damage error) error {
			if damage == nil && len(k) > 8 {
				if d, err := decodeDirent(v); err == nil {
					if _, ok := names[d.Ino]; !ok {
						names[d.Ino] = dirName{parent: keyIno(k), name: string(k[8:])}
					}
				}
			}
			return nil
		})
		c := checker{names: names}
		seen := make(map[Ino]bool)
		for _, d := range found {
			seen[d.ino] = true
		}
		for _, ino := range suspects {
			if seen[ino] {
				continue // its damaged record is reported below
			}
			want, err := storedListSum(tx, ino)
			if err == nil {
				_, err = verifyListSum(tx, ino, want)
			}
			if err != nil {
				if _, gone, _ := inodeGone(tx, ino); !gone {
					rep.Damage = append(rep.Damage, fmt.Sprintf("%s: %v", c.path(ino), err))
				}
			}
		}
		for ino, uses := range usesBad {
			for _, u := range uses {
				rep.Damage = append(rep.Damage, fmt.Sprintf("%s: %s", c.path(ino), u))
			}
		}
		for id, why := range bad {
			if !usedBad[id] {
				rep.Damage = append(rep.Damage, fmt.Sprintf("chunk %s (no file uses it): %s", id.Short(), why))
			}
		}
		for _, d := range found {
			if d.ino != 0 {
				rep.Damage = append(rep.Damage, fmt.Sprintf("%s: %s", c.path(d.ino), d.what))
			} else {
				rep.Damage = append(rep.Damage, d.what)
			}
		}
		rep.Damage = append(rep.Damage, forks.report(store, tx, bad)...)
		return nil
	})
	sort.Strings(rep.Damage)
	rep.Seconds = time.Since(start).Seconds()
	if opts.Progress != nil {
		opts.Progress(total, total)
	}
	return rep, err
}

// inodeGone says whether ino no longer has an inode record (a file
// removed while the scrub went on).
func inodeGone(tx *chunkstore.Tx, ino Ino) (Attr, bool, error) {
	v, err := tx.Sealed(bucketInodes).Get(inoKey(ino))
	if err != nil || v == nil {
		return Attr{}, v == nil && err == nil, err
	}
	a, _, err := decodeInode(ino, v)
	return a, false, err
}

// forkScrub is what a scrub found in the forks' records, by fork.
type forkScrub map[string]*forkFound

type forkFound struct {
	damaged  []forkRecordFault // records whose seal or tag failed
	suspects []Ino             // regular files the fork changed, their lists checked against their summaries at the end
	uses     []forkChunkUse    // chunk-list records naming a damaged chunk
	record   error             // the fork's own record, if damaged
}

type forkRecordFault struct {
	bucket, key []byte
	err         error
}

type forkChunkUse struct {
	key []byte
	id  chunkstore.ID
	why string
}

// scrubForkRecords verifies the seals of every fork's records (forks/ID,
// fork.go), a batch per read transaction, noting the chunk-list records
// that name a damaged chunk and the files whose lists are to be checked
// against their summaries. A fork merged or discarded meanwhile is left.
func scrubForkRecords(ctx context.Context, store *chunkstore.Store, batch int, bad map[chunkstore.ID]string, rep *ScrubReport, pace func() error) (forkScrub, error) {
	out := make(forkScrub)
	var ids []string
	if err := store.View(func(tx *chunkstore.Tx) error {
		var values []string
		ids, values = forkIDs(tx.Tx)
		for _, k := range values {
			rep.Damage = append(rep.Damage, fmt.Sprintf("forks: a value %q where a fork's bucket belongs", k))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, id := range ids {
		ff := &forkFound{}
		out[id] = ff
		gone := false
		if err := store.View(func(tx *chunkstore.Tx) error {
			rep.Records++
			if forkBucket(tx.Tx, id) == nil {
				gone = true
				return nil
			}
			_, _, ff.record = readForkRecord(tx.Tx, id)
			return nil
		}); err != nil {
			return nil, err
		}
		for _, o := range forkOwn {
			if gone {
				break
			}
			name := forkSealName(id, o.name)
			var after []byte
			for {
				err := store.View(func(tx *chunkstore.Tx) error {
					b := forkBucket(tx.Tx, id)
					if b == nil {
						gone, after = true, nil
						return nil
					}
					ob := b.Bucket(o.name)
					if ob == nil {
						ff.damaged = append(ff.damaged, forkRecordFault{bucket: o.name, err: fmt.Errorf("bucket missing")})
						after = nil
						return nil
					}
					w := sealed.Wrap(ob, name, 0)
					c := ob.Cursor()
					k, raw := c.First()
					if after != nil {
						if k, raw = c.Seek(after); bytes.Equal(k, after) {
							k, raw = c.Next()
						}
					}
					for i := 0; k != nil && i < batch; i++ {
						rep.Records++
						var v []byte
						var err error
						switch {
						case o.overlay:
							v, _, err = w.OverlayGet(k)
						case raw == nil:
							err = fmt.Errorf("a nested bucket where a record belongs")
						default:
							_, err = sealed.Open(name, k, raw)
						}
						switch {
						case err != nil:
							ff.damaged = append(ff.damaged, forkRecordFault{bucket: o.name, key: bytes.Clone(k), err: err})
						case v == nil:
						case bytes.Equal(o.name, bucketChunks) && len(k) == 16 && len(v) == chunkstore.IDSize:
							if why, ok := bad[chunkstore.ID(v)]; ok {
								ff.uses = append(ff.uses, forkChunkUse{key: bytes.Clone(k), id: chunkstore.ID(v), why: why})
							}
						case bytes.Equal(o.name, bucketInodes) && len(k) == 8:
							if a, _, sum, err := decodeInodeSum(keyIno(k), v); err == nil && a.IsRegular() && sum.Known {
								ff.suspects = append(ff.suspects, keyIno(k))
							}
						}
						after = bytes.Clone(k)
						k, raw = c.Next()
					}
					if k == nil {
						after = nil
					}
					return nil
				})
				if err != nil {
					return nil, err
				}
				if err := pace(); err != nil {
					return nil, err
				}
				if after == nil {
					break
				}
			}
		}
		if gone {
			delete(out, id)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// report names what the scrub found in the forks, each line by fork ID
// and path, in tx (the forks' chunk lists checked again against their
// summaries, and their records against the trees they see).
func (fs forkScrub) report(store *chunkstore.Store, tx *chunkstore.Tx, bad map[chunkstore.ID]string) []string {
	ids := make([]string, 0, len(fs))
	for id := range fs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	cs := uint64(store.ChunkSize())
	var out []string
	for _, id := range ids {
		ff := fs[id]
		fi, b, recovered, err := readForkRecordOrRecover(tx.Tx, id)
		if b == nil {
			continue // merged or discarded since
		}
		if ff.record != nil || recovered {
			why := ff.record
			if why == nil {
				_, _, why = readForkRecord(tx.Tx, id)
			}
			out = append(out, fmt.Sprintf("fork %s: its record: %v (it cannot be opened or merged; fsck --repair rebuilds it, or discard the fork)", id, why))
		}
		if err != nil {
			continue
		}
		fx, err := forkView(store, tx.Tx, fi)
		if err != nil {
			continue
		}
		n := newForkNamer(fx, fi, cs)
		for _, d := range ff.damaged {
			what := string(d.bucket)
			if d.key != nil {
				what = n.key(string(d.bucket), d.key)
			}
			out = append(out, n.damage(what, "%v", d.err))
		}
		for _, u := range ff.uses {
			out = append(out, n.damage(n.key(string(bucketChunks), u.key), "chunk %s: %s", u.id.Short(), u.why))
		}
		for _, ino := range ff.suspects {
			want, err := storedListSum(fx, ino)
			if err == nil {
				_, err = verifyListSum(fx, ino, want)
			}
			if err != nil {
				out = append(out, n.damage(n.path(ino), "%v", err))
			}
		}
		// Cross-references (chunks are checked above: only a missing
		// one is news here).
		out = append(out, forkTreeProblems(fx, fi, b, cs, func(id chunkstore.ID) bool {
			if _, ok := bad[id]; ok {
				return true // reported above, by the record that uses it
			}
			has, err := tx.Has(id)
			return err == nil && has
		})...)
	}
	return out
}
