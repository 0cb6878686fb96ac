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

	// Paths, and the suspects checked again, in one transaction.
	err := store.View(func(tx *chunkstore.Tx) error {
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
