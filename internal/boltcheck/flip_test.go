package boltcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestFlip changes one byte at a time of a small bbolt file, at positions
// spread over every page, and runs Check on each copy: it must not panic
// or hang. Every copy Check finds clean (Err is nil) is then opened with
// bbolt, read, written and read again in a child process (bbolt may die
// of a fault or a stack overflow, which no recover catches); it must not
// fault, panic, hang or lose data in the write. A sample of the copies
// Check reports is given to bbolt as well, to count what the report saved.
func TestFlip(t *testing.T) {
	small := dbSpec{pageSize: 1024, keys: 60, valSize: 30, nested: 4, bigVal: 2500, inline: 6, deep: 3, bigKeys: 2, deletes: true}
	big := dbSpec{keys: 150, valSize: 40, nested: 6, bigVal: 6000, inline: 8, deep: 3, bigKeys: 4, deletes: true}
	bigNoSync := big
	bigNoSync.noFreelistSync = true
	tests := []struct {
		name     string
		spec     dbSpec
		n        int // flips
		reported int // reported flips to give to bbolt
		long     bool
	}{
		{name: "small", spec: small, n: 1500},
		{name: "4k pages", spec: big, n: 5000, reported: 100, long: true},
		{name: "4k pages no freelist sync", spec: bigNoSync, n: 2500, reported: 50, long: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.long && testing.Short() {
				t.Skip("long")
			}
			n, reported := tt.n, tt.reported
			if raceEnabled {
				n, reported = n/5, 0
			}
			flipTest(t, tt.spec, n, reported)
		})
	}
}

type flipCase struct {
	pos  int
	mask byte
}

// flipCases picks n positions of a file of size bytes, spread over every
// page: each page's header, then evenly over the rest, each with a mask
// of one bit or, for every fourth, all eight.
func flipCases(size, ps, n int) []flipCase {
	seen := map[int]bool{}
	var pos []int
	add := func(p int) {
		if p < size && !seen[p] {
			seen[p] = true
			pos = append(pos, p)
		}
	}
	for p := 0; p < size; p += ps {
		for j := 0; j < pageHeaderSize; j++ {
			add(p + j)
		}
	}
	for i := 0; len(pos) < n && i < 4*n; i++ {
		add(int(uint64(i) * uint64(size) / uint64(n)))
		add(int(uint64(i)*uint64(size)/uint64(n)) + int(mix(uint64(i))%97))
	}
	slices.Sort(pos)
	cases := make([]flipCase, len(pos))
	for i, p := range pos {
		h := mix(uint64(p))
		cases[i] = flipCase{pos: p, mask: 1 << (h % 8)}
		if h%4 == 0 {
			cases[i].mask = 0xFF
		}
	}
	return cases
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func flipTest(t *testing.T, spec dbSpec, n, reportedSample int) {
	start := time.Now()
	dir := t.TempDir()
	basePath := filepath.Join(dir, "base.db")
	buildDB(t, basePath, spec)
	data := readFile(t, basePath)
	r, err := checkBytes(data, Options{})
	if err != nil || len(r.Problems) > 0 {
		t.Fatalf("base: %v %v", err, r.Problems)
	}
	ps := r.PageSize
	cases := flipCases(len(data), ps, n)

	// Check each copy, in one goroutine, with a deadline per case.
	type result struct {
		rep   *Report
		err   error
		panic any
	}
	work := make(chan flipCase)
	results := make(chan result)
	go func() {
		buf := bytes.Clone(data)
		for c := range work {
			func() {
				var res result
				defer func() {
					if p := recover(); p != nil {
						res.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
					}
					results <- res
				}()
				buf[c.pos] ^= c.mask
				defer func() { buf[c.pos] ^= c.mask }()
				res.rep, res.err = checkBytes(buf, Options{})
			}()
		}
	}()
	defer close(work)
	var clean, reported []flipCase
	var nInvalid, nDamaged, nHarmless, nClean int
	var checkTime time.Duration
	for _, c := range cases {
		t0 := time.Now()
		work <- c
		var res result
		select {
		case res = <-results:
		case <-time.After(10 * time.Second):
			t.Fatalf("flip %#x at %d (page %d): Check hangs", c.mask, c.pos, c.pos/ps)
		}
		checkTime += time.Since(t0)
		switch {
		case res.panic != nil:
			t.Fatalf("flip %#x at %d (page %d): Check panics: %v", c.mask, c.pos, c.pos/ps, res.panic)
		case res.err != nil:
			nInvalid++
			reported = append(reported, c)
		case res.rep.Err() != nil:
			nDamaged++
			reported = append(reported, c)
		case len(res.rep.Problems) > 0:
			nHarmless++
			clean = append(clean, c)
		default:
			nClean++
			clean = append(clean, c)
		}
	}
	t.Logf("%d flips of a %d-page file (%d-byte pages): Check took %v in all (%v each)",
		len(cases), len(data)/ps, ps, checkTime.Round(time.Millisecond), (checkTime / time.Duration(len(cases))).Round(time.Microsecond))
	t.Logf("Check: %d not a bbolt file, %d damaged, %d harmless problems only, %d clean", nInvalid, nDamaged, nHarmless, nClean)

	t0 := time.Now()
	outcomes := boltOutcomes(t, dir, basePath, clean, 10*time.Second)
	boltTime := time.Since(t0)
	var failures []string
	count := map[string]int{}
	for i, o := range outcomes {
		kind, _, _ := strings.Cut(o, " ")
		count[kind]++
		if kind == "FAIL" {
			failures = append(failures, fmt.Sprintf("flip %#x at %d (page %d, offset %d): %s", clean[i].mask, clean[i].pos, clean[i].pos/ps, clean[i].pos%ps, o))
		}
	}
	t.Logf("bbolt on the %d flips Check passed (%v): %d read the same data, %d read changed data (a value or key changed in place), %d refused (an error, no fault), %d FAILURES (fault, panic, hang or damage by a write)",
		len(clean), boltTime.Round(time.Millisecond), count["same"], count["changed"], count["refused"], count["FAIL"])
	for _, o := range outcomes {
		if strings.HasPrefix(o, "refused") {
			t.Logf("for instance: %s", o)
			break
		}
	}
	for _, f := range failures {
		t.Error(f)
	}

	if reportedSample > 0 && len(reported) > 0 {
		var sample []flipCase
		for i := 0; i < reportedSample; i++ {
			sample = append(sample, reported[i*len(reported)/reportedSample])
		}
		sample = slices.Compact(sample)
		count := map[string]int{}
		var examples []string
		t0 := time.Now()
		sampled := boltOutcomes(t, dir, basePath, sample, 2*time.Second)
		boltTime := time.Since(t0)
		for i, o := range sampled {
			kind, rest, _ := strings.Cut(o, " ")
			count[kind]++
			how, _, _ := strings.Cut(rest, ":")
			if kind == "FAIL" {
				count[how]++
			}
			if kind == "FAIL" && count[how] <= 2 {
				examples = append(examples, fmt.Sprintf("flip %#x at %d (page %d, offset %d): %.200s", sample[i].mask, sample[i].pos, sample[i].pos/ps, sample[i].pos%ps, o))
			}
		}
		t.Logf("bbolt on %d of the flips Check reported (%v): %d FAILED (%d killed the process, %d hung, %d panics or faults recovered, %d damage by a write), %d refused, %d read changed data, %d read the same data",
			len(sample), boltTime.Round(time.Millisecond), count["FAIL"], count["child died (exit status 2)"], count["hang"], count["panic"], count["FAIL"]-count["child died (exit status 2)"]-count["hang"]-count["panic"], count["refused"], count["changed"], count["same"])
		for _, e := range examples {
			t.Logf("for instance: %s", e)
		}
	}
	t.Logf("%v in all", time.Since(start).Round(time.Millisecond))
}

const (
	flipChildEnv = "BOLTCHECK_FLIP_CHILD" // cases file
	flipFromEnv  = "BOLTCHECK_FLIP_FROM"  // first case
)

// boltOutcomes runs the cases through bbolt in child processes, a new one
// after each crash or hang, and returns each case's outcome: "same",
// "changed", "refused …" or "FAIL …".
func boltOutcomes(t *testing.T, dir, basePath string, cases []flipCase, timeout time.Duration) []string {
	var list strings.Builder
	fmt.Fprintln(&list, basePath)
	for _, c := range cases {
		fmt.Fprintln(&list, c.pos, c.mask)
	}
	listPath := writeFile(t, dir, "cases", []byte(list.String()))
	if raceEnabled {
		timeout *= 3
	}
	out := make([]string, len(cases))
	for next := 0; next < len(cases); {
		next = runFlipChild(t, listPath, next, out, timeout)
	}
	return out
}

// runFlipChild runs one child from case from, fills out, and returns the
// case to go on from.
func runFlipChild(t *testing.T, listPath string, from int, out []string, timeout time.Duration) int {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlipChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), flipChildEnv+"="+listPath, flipFromEnv+"="+strconv.Itoa(from))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "flip ") {
				lines <- sc.Text()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	cur := from
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if cur >= len(out) {
					return cur
				}
				tail := stderr.String()
				if i := strings.Index(tail, "fatal error"); i >= 0 {
					tail = tail[i:]
				}
				tail, _, _ = strings.Cut(tail, "\n\n")
				out[cur] = fmt.Sprintf("FAIL child died (%v): %.300s", err, tail)
				return cur + 1
			}
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 {
				continue
			}
			i, _ := strconv.Atoi(f[2])
			switch f[1] {
			case "start":
				cur = i
				timer.Reset(timeout)
			case "done":
				if len(f) == 4 && i < len(out) {
					out[i] = f[3]
				}
				cur = i + 1
			}
		case <-timer.C:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			out[cur] = fmt.Sprintf("FAIL hang: no outcome after %v", timeout)
			return cur + 1
		}
	}
}

// TestFlipChild is the child process of TestFlip.
func TestFlipChild(t *testing.T) {
	listPath := os.Getenv(flipChildEnv)
	if listPath == "" {
		t.Skip("the child process of TestFlip")
	}
	from, _ := strconv.Atoi(os.Getenv(flipFromEnv))
	lines := strings.Split(strings.TrimSpace(string(readFile(t, listPath))), "\n")
	basePath := lines[0]
	var cases []flipCase
	for _, l := range lines[1:] {
		var c flipCase
		if _, err := fmt.Sscan(l, &c.pos, &c.mask); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	base := readFile(t, basePath)
	dir := t.TempDir()

	debug.SetPanicOnFault(true)
	debug.SetMaxStack(64 << 20)
	want, res := boltTry(writeFile(t, dir, "base.db", base), "")
	if res != "same" {
		t.Fatalf("base: %s", res)
	}
	for i := from; i < len(cases); i++ {
		c := cases[i]
		fmt.Printf("flip start %d\n", i)
		d := bytes.Clone(base)
		d[c.pos] ^= c.mask
		// A file of its own: a panic in bolt.Open leaks its descriptor
		// and its lock.
		path := writeFile(t, dir, fmt.Sprintf("flip-%d.db", i), d)
		_, res := boltTry(path, want)
		os.Remove(path)
		fmt.Printf("flip done %d %s\n", i, strings.ReplaceAll(res, "\n", " | "))
	}
}

var flipMark = []byte("\xffflip")

func skipFlip(k []byte) bool { return bytes.HasPrefix(k, flipMark) }

// boltTry opens path with bbolt as chunkstore does, reads every key,
// writes into every top-level bucket and a new one, reads again, reopens
// and reads again. It returns the digest of the data and the outcome:
// "same" (as want), "changed", "refused …" (an error from bbolt) or
// "FAIL …" (a panic or fault, or data changed by the write).
func boltTry(path, want string) (digest, outcome string) {
	defer func() {
		if p := recover(); p != nil {
			outcome = fmt.Sprintf("FAIL panic: %.200v", p)
		}
	}()
	opts := &bolt.Options{
		Timeout:         time.Second,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 1 << 30,
		NoSync:          true,
	}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return "", "refused open: " + err.Error()
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	d1, _, err := digestDB(db, nil)
	if err != nil {
		return "", "refused read: " + err.Error()
	}
	outcome = "same"
	if want != "" && d1 != want {
		outcome = "changed"
	}
	err = db.Update(func(tx *bolt.Tx) error {
		var names [][]byte
		if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, bytes.Clone(name))
			return nil
		}); err != nil {
			return err
		}
		for _, name := range names {
			b := tx.Bucket(name)
			for j := 0; j < 3; j++ {
				if err := b.Put(fmt.Appendf(bytes.Clone(flipMark), "-%d", j), bytes.Repeat([]byte{byte(j)}, 200)); err != nil {
					return err
				}
			}
		}
		b, err := tx.CreateBucket(flipMark)
		if err != nil {
			return err
		}
		for j := 0; j < 40; j++ {
			if err := b.Put([]byte{byte(j)}, bytes.Repeat([]byte{byte(j)}, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return d1, "refused write: " + err.Error()
	}
	if d2, _, err := digestDB(db, skipFlip); err != nil || d2 != d1 {
		return d1, fmt.Sprintf("FAIL the write changed other data (%v)", err)
	}
	if err := db.Close(); err != nil {
		return d1, "refused close: " + err.Error()
	}
	db = nil
	if db, err = bolt.Open(path, 0o600, opts); err != nil {
		return d1, "FAIL reopen after the write: " + err.Error()
	}
	if d3, _, err := digestDB(db, skipFlip); err != nil || d3 != d1 {
		return d1, fmt.Sprintf("FAIL after the write and a reopen, other data changed (%v)", err)
	}
	db.Close()
	db = nil
	rep, err := Check(context.Background(), path, Options{})
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return d1, "FAIL bbolt's write left a damaged file: " + err.Error()
	}
	return d1, outcome
}
