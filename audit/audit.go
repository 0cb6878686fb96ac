// Package audit owns the workspace's audit log: an append-only,
// hash-chained list of records of every exec and every policy verdict,
// kept in the bucket "audit" of the workspace's bbolt file (issue 17).
//
// It owns that bucket's layout, the records' JSON format and the chain,
// and nothing else: it begins no transaction, opens no file and knows no
// other bucket. Package fs decides when records are written (they ride
// with its commits, so that the log costs no fsync of its own) and
// passes the bucket in; backends decides what is recorded. It must never
// write a record's value in place or delete one: the only writes are
// Append's.
//
// # Layout
//
// The bucket is optional: it is created by the first commit that appends
// a record, so stores from before it open unchanged (no format bump).
// Every value is sealed (package sealed: CRC32C over bucket, key and
// value, and the record's birth epoch).
//
//   - seq(8, big-endian) → hash(32) ‖ body: record seq, from 1 with no gap;
//     body is the record's JSON (Record, Seq included).
//   - "head" → seq(8) ‖ hash(32) ‖ time(8): the last record's sequence
//     number and hash, rewritten by every append.
//   - "policy" → the policy version of the last policy record, so that
//     the next one says what it replaced (Record.PreviousPolicy).
//
// hash(n) = BLAKE3-256("computerfs audit v1" ‖ seq(8) ‖ hash(n-1) ‖ body),
// hash(0) being 32 zero bytes. A record's hash so covers every record
// before it.
//
// # What the chain proves (threat model)
//
// Anyone who can write the file can rewrite the whole log consistently:
// recompute every hash from the record they change onwards, rewrite the
// head and reseal. Nothing inside one file can prevent that, and the log
// does not claim to. What Verify detects:
//
//   - a record edited in place, even resealed so that its CRC passes:
//     its hash no longer matches its body (unless every later hash and
//     the head were recomputed too);
//   - a record deleted: a gap in the sequence numbers, or (renumbered) a
//     broken chain;
//   - the tail truncated: the head names a record that is not there;
//   - the tail truncated and the head rewritten to match, or the bucket
//     deleted whole: caught when an exec record of package fs (kept for
//     the last 500 execs, in the snapshots bucket, and needed for undo)
//     says its audit record was written with it (VerifyOptions.Execs)
//     and the log has none for that exec. Deleting those exec records
//     too defeats this (and loses their undo);
//   - a full rewrite: only against an anchor kept outside the file (the
//     head that `computerfs audit --head` prints, shipped elsewhere):
//     Verify with Anchors checks that the chain still has that hash at
//     that sequence number, which no rewrite of the records up to it can
//     keep without breaking BLAKE3.
//
// Records never hold environment values, only names; argv is recorded as
// given (capped), so secrets must not be passed in argv.
package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/computerfs/computerfs/internal/sealed"
	"github.com/zeebo/blake3"
	bolt "go.etcd.io/bbolt"
)

// BucketName is the log's bucket.
var BucketName = []byte("audit")

var keyHead = []byte("head")

// keyPolicy holds the policy version of the last policy record.
var keyPolicy = []byte("policy")

const hashSize = 32

// Kinds of record.
const (
	KindExec        = "exec"        // an exec ran (Verdict allowed)
	KindVerdict     = "verdict"     // a policy decision on its own (usually denied)
	KindPolicy      = "policy"      // the policy was loaded or changed
	KindInterrupted = "interrupted" // an exec the workspace's close interrupted (found at the next open)
)

// Verdicts.
const (
	Allowed = "allowed"
	Denied  = "denied"
)

// Record is one entry of the log. Seq and Hash are set by the log: Seq
// when the record is appended, Hash when it is read (it is not part of
// the body).
type Record struct {
	Seq  uint64 `json:"seq"`
	Time int64  `json:"time_unix_ns"`
	Kind string `json:"kind"`
	// Verdict is Allowed or Denied ("" for policy records).
	Verdict string `json:"verdict,omitempty"`
	// Door is the way in that the verdict concerns: "exec" (the runtime
	// starting an exec), "hostfs" (a backend's file calls), "shell" (the
	// shell backend's own command checks).
	Door    string `json:"door,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Reason says why the backend was chosen.
	Reason string `json:"reason,omitempty"`
	// Rule names the policy rule behind a verdict ("disabled",
	// "allow_env", "commands", "read_only", "root", "token").
	Rule string `json:"rule,omitempty"`
	// Detail is the refusal's message or the operation refused.
	Detail        string   `json:"detail,omitempty"`
	Path          string   `json:"path,omitempty"`
	ExecID        string   `json:"exec_id,omitempty"`
	Argv          []string `json:"argv,omitempty"`
	ArgvTruncated bool     `json:"argv_truncated,omitempty"`
	File          string   `json:"file,omitempty"`
	Cwd           string   `json:"cwd,omitempty"`
	// EnvNames are the names of the variables the exec was given (never
	// their values).
	EnvNames      []string `json:"env_names,omitempty"`
	PolicyVersion string   `json:"policy_version,omitempty"`
	// PreviousPolicy, on a policy record, is the version the last policy
	// record had (set by Append): a change shows as the two differing.
	PreviousPolicy string `json:"previous_policy,omitempty"`
	Exit           *int   `json:"exit,omitempty"`
	ExitClass      string `json:"exit_class,omitempty"`
	DurationNs     int64  `json:"duration_ns,omitempty"`
	// Paths are the paths the exec changed (at most MaxPaths).
	Paths          []string `json:"paths,omitempty"`
	PathsTruncated bool     `json:"paths_truncated,omitempty"`
	// Before and After are the workspace states (commit epochs) the exec
	// started from and left (see fs.ExecRecord).
	Before uint64 `json:"before_epoch,omitempty"`
	After  uint64 `json:"after_epoch,omitempty"`
	// Denials counts the verdicts of an exec's doors that were denied;
	// only the first MaxDenialsPerExec have records of their own.
	Denials int `json:"denials,omitempty"`
	// Repeats, on a summary record of a Coalescer (Detail says so),
	// counts the refusals like it (same door, backend, exec, rule and
	// path) that got no record of their own in the window that ended.
	Repeats int `json:"repeats,omitempty"`

	Hash string `json:"-"`
}

// Bounds on what one record holds.
const (
	MaxPaths          = 1000
	MaxArgvBytes      = 4096
	MaxDetailBytes    = 1000
	MaxDenialsPerExec = 20
)

// Trim caps r's lists and strings to the bounds above.
func (r *Record) Trim() {
	if len(r.Paths) > MaxPaths {
		r.Paths, r.PathsTruncated = r.Paths[:MaxPaths], true
	}
	n := 0
	for i, a := range r.Argv {
		n += len(a)
		if n > MaxArgvBytes {
			r.Argv, r.ArgvTruncated = append(r.Argv[:i:i], a[:max(0, len(a)-(n-MaxArgvBytes))]), true
			break
		}
	}
	if len(r.Detail) > MaxDetailBytes {
		r.Detail = r.Detail[:MaxDetailBytes]
	}
	r.Detail = strings.ToValidUTF8(r.Detail, "\uFFFD")
}

// Head is the log's last record: its sequence number and hash.
type Head struct {
	Seq  uint64
	Hash [hashSize]byte
}

func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Seq, hex.EncodeToString(h.Hash[:])) }

// ParseHead reads the form Head.String writes (SEQ:HEX), an anchor.
func ParseHead(s string) (Head, error) {
	var h Head
	seq, hx, ok := strings.Cut(s, ":")
	if !ok {
		return h, fmt.Errorf("anchor %q: want SEQ:HASH", s)
	}
	if _, err := fmt.Sscanf(seq, "%d", &h.Seq); err != nil || h.Seq == 0 {
		return h, fmt.Errorf("anchor %q: bad sequence number", s)
	}
	b, err := hex.DecodeString(hx)
	if err != nil || len(b) != hashSize {
		return h, fmt.Errorf("anchor %q: the hash is not %d hex bytes", s, hashSize)
	}
	copy(h.Hash[:], b)
	return h, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func chain(seq uint64, prev [hashSize]byte, body []byte) [hashSize]byte {
	h := blake3.New()
	h.Write([]byte("computerfs audit v1"))
	h.Write(seqKey(seq))
	h.Write(prev[:])
	h.Write(body)
	var out [hashSize]byte
	copy(out[:], h.Sum(nil))
	return out
}

// ErrBroken wraps every problem Verify finds.
var ErrBroken = errors.New("audit log broken")

// readHead reads the head (zero Head, false if none).
func readHead(b sealed.Bucket) (Head, bool, error) {
	var h Head
	v, err := b.Get(keyHead)
	if err != nil || v == nil {
		return h, false, err
	}
	if len(v) < 8+hashSize {
		return h, false, fmt.Errorf("%w: head record of %d bytes", ErrBroken, len(v))
	}
	h.Seq = binary.BigEndian.Uint64(v)
	copy(h.Hash[:], v[8:])
	return h, true, nil
}

// Append adds recs to the log in tx, in order, and returns the head after
// them. Their Seq is set, and their Time if 0 (to now). The bucket is created if missing; epoch is the
// birth epoch of the values (the commit's). It trusts the head: Verify
// is what checks the chain.
func Append(tx *bolt.Tx, epoch uint64, now int64, recs []*Record) (Head, error) {
	if _, err := tx.CreateBucketIfNotExists(BucketName); err != nil {
		return Head{}, err
	}
	b := sealed.InAt(tx, BucketName, epoch)
	head, _, err := readHead(b)
	if err != nil {
		return head, err
	}
	b.Raw().FillPercent = 1.0 // appended at the end
	var policy []byte         // the last policy version, if a record here changes it
	for _, r := range recs {
		if r.Kind == KindPolicy {
			if policy == nil {
				if policy, err = b.Get(keyPolicy); err != nil {
					return head, err
				}
			}
			r.PreviousPolicy = string(policy)
			policy = []byte(r.PolicyVersion)
		}
		r.Seq = head.Seq + 1
		if r.Time == 0 {
			r.Time = now
		}
		r.Trim()
		r.Hash = ""
		body, err := json.Marshal(r)
		if err != nil {
			return head, err
		}
		h := chain(r.Seq, head.Hash, body)
		if err := b.Put(seqKey(r.Seq), append(h[:], body...)); err != nil {
			return head, err
		}
		head = Head{Seq: r.Seq, Hash: h}
		r.Hash = hex.EncodeToString(h[:])
	}
	if policy != nil {
		if err := b.Put(keyPolicy, policy); err != nil {
			return head, err
		}
	}
	if len(recs) > 0 {
		v := append(seqKey(head.Seq), head.Hash[:]...)
		if err := b.Put(keyHead, binary.BigEndian.AppendUint64(v, uint64(now))); err != nil {
			return head, err
		}
	}
	return head, nil
}

// Query selects records.
type Query struct {
	Since   uint64 // only records with Seq > Since
	Backend string // only records of this backend
	Denied  bool   // only denied verdicts
	Limit   int    // at most this many, the last ones (0: all)
}

func (q *Query) match(r *Record) bool {
	return (q.Backend == "" || r.Backend == q.Backend) && (!q.Denied || r.Verdict == Denied)
}

// Read returns the records q selects, oldest first. It does not verify
// the chain (Verify does); a record whose seal or JSON is damaged is an
// error.
func Read(tx *bolt.Tx, q Query) ([]Record, error) {
	b := sealed.In(tx, BucketName)
	if !b.Exists() {
		return nil, nil
	}
	var out []Record
	c := b.Cursor()
	for k, v, err := c.Seek(seqKey(q.Since + 1)); k != nil; k, v, err = c.Next() {
		if len(k) != 8 {
			continue
		}
		if err != nil {
			return out, err
		}
		r, err := decode(k, v)
		if err != nil {
			return out, err
		}
		if q.match(&r) {
			out = append(out, r)
			if q.Limit > 0 && len(out) > 2*q.Limit {
				out = append(out[:0], out[len(out)-q.Limit:]...)
			}
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

func decode(k, v []byte) (Record, error) {
	var r Record
	seq := binary.BigEndian.Uint64(k)
	if len(v) < hashSize {
		return r, fmt.Errorf("%w: record %d is %d bytes", ErrBroken, seq, len(v))
	}
	if err := json.Unmarshal(v[hashSize:], &r); err != nil {
		return r, fmt.Errorf("%w: record %d: %v", ErrBroken, seq, err)
	}
	r.Hash = hex.EncodeToString(v[:hashSize])
	return r, nil
}

// ExecRef is an exec whose record elsewhere in the store (package fs's
// exec records) says that its audit record was written in the same
// commit.
type ExecRef struct {
	ID string
}

// VerifyOptions add checks against records outside the log.
type VerifyOptions struct {
	// Execs are the execs whose exec records say they were audited: each
	// must have a record in the log.
	Execs []ExecRef
	// Anchors are heads kept outside the file: the chain must still hold
	// each hash at its sequence number.
	Anchors []Head
}

// Report is what Verify found.
type Report struct {
	Records  uint64   `json:"records"`
	Head     string   `json:"head,omitempty"` // SEQ:HASH as the head record says
	Last     string   `json:"last,omitempty"` // SEQ:HASH of the last record as chained
	Execs    int      `json:"execs_checked"`
	Anchors  int      `json:"anchors_checked"`
	Problems []string `json:"problems,omitempty"`
}

// OK says whether Verify found nothing wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Err is nil if OK, else an error wrapping ErrBroken that names the
// first problems.
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	p := r.Problems
	more := ""
	if len(p) > 5 {
		p, more = p[:5], fmt.Sprintf(" (and %d more)", len(r.Problems)-5)
	}
	return fmt.Errorf("%w: %s%s", ErrBroken, strings.Join(p, "; "), more)
}

const maxProblems = 100

// Verify walks the whole log: sequence numbers from 1 with no gap, every
// seal, every hash against the chain, the head against the last record,
// and the checks of opts.
func Verify(tx *bolt.Tx, opts VerifyOptions) *Report {
	rep := &Report{}
	problem := func(format string, args ...any) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		}
	}
	b := sealed.In(tx, BucketName)
	if !b.Exists() {
		if len(opts.Execs) > 0 {
			problem("there is no audit log, but %d exec record(s) say theirs was written: the log was deleted", len(opts.Execs))
		}
		if len(opts.Anchors) > 0 {
			problem("there is no audit log, but %d anchor(s) were given: the log was deleted", len(opts.Anchors))
		}
		return rep
	}
	anchors := map[uint64][hashSize]byte{}
	for _, a := range opts.Anchors {
		anchors[a.Seq] = a.Hash
	}
	var prev [hashSize]byte
	var expect uint64 = 1
	seen := map[string]bool{}
	c := b.Raw().Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			if !bytes.Equal(k, keyHead) && !bytes.Equal(k, keyPolicy) {
				problem("unknown key %s", sealed.KeyString(k))
			}
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		val, err := sealed.Open(BucketName, k, v)
		if err != nil {
			problem("record %d: seal does not match (damaged or edited without resealing): %v", seq, err)
			// Its hash is still the chain's best guess for the next.
			if len(v) >= hashSize {
				copy(prev[:], v[:hashSize])
			}
			expect = seq + 1
			rep.Records++
			continue
		}
		rep.Records++
		if seq != expect {
			if seq > expect {
				problem("records %d to %d are missing (deleted)", expect, seq-1)
			} else {
				problem("record %d out of order", seq)
			}
		}
		expect = seq + 1
		if len(val) < hashSize {
			problem("record %d: %d bytes, too short for its hash", seq, len(val))
			continue
		}
		body := val[hashSize:]
		var stored [hashSize]byte
		copy(stored[:], val[:hashSize])
		if want := chain(seq, prev, body); want != stored {
			problem("record %d: hash does not chain (the record, or one before it, was edited, deleted or reordered)", seq)
		}
		var r Record
		if err := json.Unmarshal(body, &r); err != nil {
			problem("record %d: body is not a record: %v", seq, err)
		} else {
			if r.Seq != seq {
				problem("record %d: its body says sequence number %d (moved)", seq, r.Seq)
			}
			if r.ExecID != "" && (r.Kind == KindExec || r.Kind == KindInterrupted) {
				seen[r.ExecID] = true
			}
		}
		if a, ok := anchors[seq]; ok {
			rep.Anchors++
			if a != stored {
				problem("record %d: hash %x is not the anchor's %x (the log was rewritten)", seq, stored[:8], a[:8])
			}
			delete(anchors, seq)
		}
		prev = stored
	}
	last := Head{Seq: expect - 1, Hash: prev}
	if rep.Records > 0 {
		rep.Last = last.String()
	}
	head, ok, err := readHead(b)
	switch {
	case err != nil:
		problem("head: %v", err)
	case !ok && rep.Records > 0:
		problem("the head record is missing (deleted)")
	case ok:
		rep.Head = head.String()
		if head.Seq > last.Seq {
			problem("the head names record %d but the log ends at %d: records %d to %d were truncated", head.Seq, last.Seq, last.Seq+1, head.Seq)
		} else if head.Seq < last.Seq {
			problem("the head names record %d but the log goes on to %d (the head was rewritten)", head.Seq, last.Seq)
		} else if head.Hash != last.Hash {
			problem("the head's hash is not record %d's (the head or the record was rewritten)", head.Seq)
		}
	}
	var left []uint64
	for seq := range anchors {
		left = append(left, seq)
	}
	sort.Slice(left, func(i, j int) bool { return left[i] < left[j] })
	for _, seq := range left {
		rep.Anchors++
		problem("anchor record %d is not in the log (truncated)", seq)
	}
	var missing []string
	for _, e := range opts.Execs {
		rep.Execs++
		if !seen[e.ID] {
			missing = append(missing, e.ID)
		}
	}
	if len(missing) > 0 {
		problem("%d exec(s) the store's exec records name have no audit record (records deleted or truncated): %s", len(missing), strings.Join(missing[:min(len(missing), 10)], ", "))
	}
	return rep
}
