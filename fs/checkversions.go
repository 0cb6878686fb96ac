package fs

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/computerfs/computerfs/versions"
)

// checkVersions verifies what snapshots and exec checkpoints keep: every
// pin (snapepochs) belongs to a snapshot or an exec record, and every
// snapshot has its pin; then package versions' own indexes (kept
// versions, deaths, births: versions.Verify). With repair, pins of
// nothing are deleted, missing pins and index entries put back, and kept
// versions nothing pins any more dropped (their chunk references
// released). It runs before the chunk references are counted.
func (c *checker) checkVersions() error {
	pins := c.tx.Bucket(versions.BucketSnapEpochs)
	if pins == nil || c.tx.Bucket(bucketSnapshots) == nil {
		return nil
	}
	snaps := c.tx.Sealed(bucketSnapshots)
	execs := make(map[string]bool)
	if recs, err := readCheckpoints(c.tx); err != nil {
		c.problem("exec records: %v", err)
		return nil // damage: which pins are whose cannot be told
	} else {
		for _, r := range recs {
			execs[r.ID] = true
		}
	}
	forks, err := c.checkForks()
	if err != nil {
		return err
	}
	forkPinned := make(map[string]bool)
	var drop [][]byte
	pinned := make(map[string]uint64) // user snapshot name → pinned epoch
	cur := pins.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if len(k) < 8 {
			c.problem("snapshot pin %x is malformed", k)
			drop = append(drop, bytes.Clone(k))
			continue
		}
		epoch, name := binary.BigEndian.Uint64(k), k[8:]
		if id, ok := isForkPin(name); ok {
			if _, ok := forks[id]; !ok && forkBucket(c.tx.Tx, id) != nil {
				// A fork whose record cannot be read (reported with
				// the forks): its pin stays while it does.
				forkPinned[id] = true
			} else if fi, ok := forks[id]; !ok || fi.Epoch != epoch {
				c.problem("fork pin %q at commit %d: no such fork from that commit (it keeps old versions for nothing)", id, epoch)
				drop = append(drop, bytes.Clone(k))
			} else {
				forkPinned[id] = true
			}
			continue
		}
		if isCheckpointKey(name) {
			id, _, ok := bytes.Cut(name[1:], []byte{0})
			if !ok || !execs[string(id)] {
				c.problem("exec pin %q at commit %d: no exec record has it (it keeps old versions for nothing)", sealed.KeyString(name), epoch)
				drop = append(drop, bytes.Clone(k))
			}
			continue
		}
		v, err := snaps.Get(name)
		if err != nil {
			c.problem("snapshot %q: %v", name, err)
			continue
		}
		s, derr := decodeSnapshot(string(name), v)
		if v == nil || derr != nil || s.Epoch != epoch {
			c.problem("snapshot pin %q at commit %d: no such snapshot at that commit", name, epoch)
			drop = append(drop, bytes.Clone(k))
			continue
		}
		pinned[string(name)] = epoch
	}
	var missing [][]byte
	snaps.Walk(func(k, v []byte, damage error) error {
		if isCheckpointKey(k) || damage != nil {
			return nil // damage is reported with the sealed records
		}
		s, err := decodeSnapshot(string(k), v)
		if err != nil {
			c.problem("snapshot %q: %v", k, err)
			return nil
		}
		if e, ok := pinned[s.Name]; !ok || e != s.Epoch {
			c.problem("snapshot %s (commit %d) has no pin: later commits do not keep what it saw", s.Name, s.Epoch)
			missing = append(missing, append(binary.BigEndian.AppendUint64(nil, s.Epoch), k...))
		}
		return nil
	})
	for id, fi := range forks {
		if !forkPinned[id] {
			c.problem("fork %s (from commit %d) has no pin: the workspace's later commits do not keep what it reads", id, fi.Epoch)
			missing = append(missing, forkPinKey(fi.Epoch, id))
		}
	}
	if c.repair {
		for _, k := range drop {
			if err := pins.Delete(k); err != nil {
				return err
			}
			c.fixed("deleted snapshot pin %s", sealed.KeyString(k))
		}
		for _, k := range missing {
			if err := pins.Put(k, nil); err != nil {
				return err
			}
			c.fixed("pinned snapshot %s again (what later commits replaced before this is lost to it)", k[8:])
		}
	}
	problems, unpinned, err := versions.Verify(c.tx.Tx, c.repair)
	if err != nil {
		return fmt.Errorf("snapshot indexes: %w", err)
	}
	for _, p := range problems {
		c.problem("%s", p.What)
		if p.Fixed {
			c.fixed("%s: repaired", p.What)
		}
	}
	if unpinned > 0 {
		c.problem("%d kept record versions are pinned by no snapshot or exec (space nothing can reach)", unpinned)
		if c.repair {
			n, chunks, err := dropUnpinned(c.tx)
			if err != nil {
				return err
			}
			c.fixed("dropped %d kept versions nothing pins, releasing %d chunk references", n, chunks)
		}
	}
	return nil
}
