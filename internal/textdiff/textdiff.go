// Package textdiff compares texts line by line the way GNU diff does: a
// minimal edit script (Myers' algorithm, with GNU's sliding of changes and
// horizon), printed in the unified or the normal format.
package textdiff

import (
	"bytes"
	"hash/maphash"
	"strconv"
	"strings"
)

// Limits on the work a diff does. Below them the diff is minimal (it
// finds a longest common subsequence of lines); past them it settles for a
// valid but longer one, so a diff never costs more than about diffBudget
// steps after the linear work of reading the lines. (Variables for tests.)
var (
	// diffMaxHalfCost bounds the edit distance one middle-snake search
	// explores in each direction before it splits the problem at the
	// furthest point it reached instead.
	diffMaxHalfCost = 1024
	// diffBudget bounds the total steps of all searches; once spent, what
	// is left to compare is reported as one replaced block.
	diffBudget = 1 << 24
)

// Unified returns a unified diff of the lines of a and b in the format of
// GNU "diff -u --label oldName --label newName": a "---" and a "+++"
// header, then hunks with context lines of context (3 if context < 0).
// Incomplete last lines are marked "\ No newline at end of file". It is ""
// when a and b are equal.
func Unified(oldName, newName string, a, b []byte, context int) string {
	if bytes.Equal(a, b) {
		return ""
	}
	if context < 0 {
		context = 3
	}
	var out strings.Builder
	out.WriteString("--- ")
	out.WriteString(oldName)
	out.WriteString("\n+++ ")
	out.WriteString(newName)
	out.WriteString("\n")
	d := analyze(a, b, context)
	writeHunks(&out, d.la, d.lb, d.ca, d.cb, d.lineOff, d.context)
	return out.String()
}

// UnifiedHunks is Unified without the two header lines.
func UnifiedHunks(a, b []byte, context int) string {
	if bytes.Equal(a, b) {
		return ""
	}
	if context < 0 {
		context = 3
	}
	var out strings.Builder
	d := analyze(a, b, context)
	writeHunks(&out, d.la, d.lb, d.ca, d.cb, d.lineOff, d.context)
	return out.String()
}

// A Change is one block of an edit script: Del lines of the old text from
// line A on replaced by Ins lines of the new text from line B on (lines
// numbered from 0). When Del is 0, A is where the lines are inserted; when
// Ins is 0, B is where the deleted lines would have been.
type Change struct {
	A, Del, B, Ins int
}

// Edits returns a minimal edit script from a to b, as GNU diff finds it
// for its normal format (no context).
func Edits(a, b []byte) []Change {
	if bytes.Equal(a, b) {
		return nil
	}
	d := analyze(a, b, 0)
	cs := changesOf(d.ca, d.cb)
	for i := range cs {
		cs[i].A += d.lineOff
		cs[i].B += d.lineOff
	}
	return cs
}

// Normal returns a diff of the lines of a and b in GNU diff's normal
// format ("2c2", "< old", "---", "> new"). It is "" when a and b are
// equal.
func Normal(a, b []byte) string {
	return NormalEdits(a, b, Edits(a, b))
}

// NormalEdits is Normal for the edit script cs from a to b (as Edits
// returns, perhaps computed on transformed texts with the same lines).
func NormalEdits(a, b []byte, cs []Change) string {
	if len(cs) == 0 {
		return ""
	}
	la, lb := newLines(a), newLines(b)
	var out strings.Builder
	line := func(prefix string, l []byte) {
		out.WriteString(prefix)
		out.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
	rng := func(start, count int) {
		// 0-based start; a range of lines start+1..start+count.
		if count <= 1 {
			out.WriteString(strconv.Itoa(start + count))
			return
		}
		out.WriteString(strconv.Itoa(start + 1))
		out.WriteByte(',')
		out.WriteString(strconv.Itoa(start + count))
	}
	for _, c := range cs {
		switch {
		case c.Del == 0:
			out.WriteString(strconv.Itoa(c.A))
			out.WriteByte('a')
			rng(c.B, c.Ins)
		case c.Ins == 0:
			rng(c.A, c.Del)
			out.WriteByte('d')
			out.WriteString(strconv.Itoa(c.B))
		default:
			rng(c.A, c.Del)
			out.WriteByte('c')
			rng(c.B, c.Ins)
		}
		out.WriteByte('\n')
		for k := c.A; k < c.A+c.Del; k++ {
			line("< ", la.line(k))
		}
		if c.Del > 0 && c.Ins > 0 {
			out.WriteString("---\n")
		}
		for k := c.B; k < c.B+c.Ins; k++ {
			line("> ", lb.line(k))
		}
	}
	return out.String()
}

// UnifiedEdits is UnifiedHunks for the edit script cs from a to b.
func UnifiedEdits(a, b []byte, cs []Change, context int) string {
	if len(cs) == 0 {
		return ""
	}
	if context < 0 {
		context = 3
	}
	la, lb := newLines(a), newLines(b)
	context = min(context, max(la.n(), lb.n())+1)
	ca, cb := make([]bool, la.n()), make([]bool, lb.n())
	for _, c := range cs {
		for k := c.A; k < c.A+c.Del; k++ {
			ca[k] = true
		}
		for k := c.B; k < c.B+c.Ins; k++ {
			cb[k] = true
		}
	}
	var out strings.Builder
	writeHunks(&out, la, lb, ca, cb, 0, context)
	return out.String()
}

// analysis is the compared window of two texts: lines la and lb, which
// start at line lineOff (0-based) of both, and their changed flags.
type analysis struct {
	la, lb  lines
	ca, cb  []bool
	lineOff int
	context int
}

// analyze finds the changed lines of a and b, which differ, keeping
// context lines around them.
func analyze(a, b []byte, context int) analysis {
	// More context than lines changes nothing (and 2*context must not
	// overflow).
	context = min(context, max(len(a), len(b))+1)

	// Common prefix and suffix of whole lines are skipped cheaply. The
	// compared window keeps context lines of each (as GNU diff's horizon
	// does, so changes can slide into them), and the printed window another
	// context lines beyond, for context.
	pre := bytes.LastIndexByte(a[:commonPrefix(a, b)], '\n') + 1
	suf := commonSuffix(a[pre:], b[pre:])
	sa, sb := len(a)-suf, len(b)-suf
	if !atLineStart(a, sa) || !atLineStart(b, sb) {
		// The common suffix starts mid-line; skip to its next line.
		if k := bytes.IndexByte(a[sa:], '\n'); k < 0 {
			sa, sb = len(a), len(b)
		} else {
			sa, sb = sa+k+1, sb+k+1
		}
	}
	cs, _ := linesBack(a, pre, context)
	ps, headLines := linesBack(a, cs, context)
	ce, _ := linesForward(a, sa, context)
	pe, tailLines := linesForward(a, ce, context)
	lineOff := bytes.Count(a[:ps], []byte("\n"))
	la := newLines(a[ps:pe])
	lb := newLines(b[ps : sb+(pe-sa)])

	lo := headLines
	hiA, hiB := la.n()-tailLines, lb.n()-tailLines
	ca := make([]bool, la.n())
	cb := make([]bool, lb.n())
	ida, idb := internLines(la, lb, lo, hiA, hiB)
	diffIDs(ida, idb, ca[lo:hiA], cb[lo:hiB])
	slideChanges(ida, ca[lo:hiA], cb[lo:hiB])
	slideChanges(idb, cb[lo:hiB], ca[lo:hiA])
	return analysis{la, lb, ca, cb, lineOff, context}
}

// commonPrefix returns the length of the common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for _, step := range []int{1024, 32, 1} {
		for i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]) {
			i += step
		}
	}
	return i
}

// commonSuffix returns the length of the common suffix of a and b.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for _, step := range []int{1024, 32, 1} {
		for i+step <= n && bytes.Equal(a[len(a)-i-step:len(a)-i], b[len(b)-i-step:len(b)-i]) {
			i += step
		}
	}
	return i
}

func atLineStart(s []byte, i int) bool { return i == 0 || s[i-1] == '\n' }

// linesBack moves from line start i back by up to n lines and returns the
// new line start and how many lines it moved.
func linesBack(s []byte, i, n int) (int, int) {
	k := 0
	for ; k < n && i > 0; k++ {
		i = bytes.LastIndexByte(s[:i-1], '\n') + 1
	}
	return i, k
}

// linesForward moves from line start i forward by up to n lines and
// returns the new position and how many lines it moved.
func linesForward(s []byte, i, n int) (int, int) {
	k := 0
	for ; k < n && i < len(s); k++ {
		if j := bytes.IndexByte(s[i:], '\n'); j < 0 {
			i = len(s)
		} else {
			i += j + 1
		}
	}
	return i, k
}

// lines is text split into lines: line i is buf[off[i]:off[i+1]], with
// its "\n" except perhaps the last. (Offsets rather than slices keep the
// garbage collector out of it.)
type lines struct {
	buf []byte
	off []int
}

func newLines(s []byte) lines {
	off := make([]int, 1, bytes.Count(s, []byte("\n"))+2)
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '\n')
		if j < 0 {
			i = len(s)
		} else {
			i += j + 1
		}
		off = append(off, i)
	}
	return lines{s, off}
}

func (l lines) n() int            { return len(l.off) - 1 }
func (l lines) line(i int) []byte { return l.buf[l.off[i]:l.off[i+1]] }

// internLines numbers the distinct lines among lines lo to hiA of a and lo
// to hiB of b. A line without its "\n" differs from the same text with
// one.
func internLines(a, b lines, lo, hiA, hiB int) (ida, idb []int32) {
	// An open-addressing table of ids by line hash: unlike a
	// map[string]int32 it allocates no strings, and its slots are small.
	type slot struct {
		hash uint32 // high bits of the line's hash
		id   int32  // id+1, or 0 for an empty slot
	}
	type rep struct{ file, line int32 } // a line of each id
	size := 16
	for size < 2*(hiA+hiB-2*lo) {
		size <<= 1
	}
	mask := uint64(size - 1)
	slots := make([]slot, size)
	reps := make([]rep, 0, hiA-lo)
	files := [2]lines{a, b}
	seed := maphash.MakeSeed()
	num := func(f int32, hi int) []int32 {
		out := make([]int32, hi-lo)
		for i := lo; i < hi; i++ {
			l := files[f].line(i)
			h := maphash.Bytes(seed, l)
			for s := h & mask; ; s = (s + 1) & mask {
				sl := &slots[s]
				if sl.id == 0 {
					reps = append(reps, rep{f, int32(i)})
					*sl = slot{uint32(h >> 32), int32(len(reps))}
				} else if r := reps[sl.id-1]; sl.hash != uint32(h>>32) || !bytes.Equal(files[r.file].line(int(r.line)), l) {
					continue
				}
				out[i-lo] = sl.id - 1
				break
			}
		}
		return out
	}
	return num(0, hiA), num(1, hiB)
}

// diffIDs marks in ca and cb the lines of a and b outside a longest common
// subsequence (or, past the work limits, a long one).
func diffIDs(a, b []int32, ca, cb []bool) {
	// A line with no equal in the other file is certainly changed; leaving
	// such lines out shrinks the search (a rewritten region costs nothing)
	// without changing its result.
	n := 0
	for _, id := range a {
		n = max(n, int(id)+1)
	}
	for _, id := range b {
		n = max(n, int(id)+1)
	}
	inA := make([]bool, n)
	inB := make([]bool, n)
	for _, id := range a {
		inA[id] = true
	}
	for _, id := range b {
		inB[id] = true
	}
	keep := func(s []int32, other []bool, ch []bool) (kept []int32, index []int) {
		kept, index = make([]int32, 0, len(s)), make([]int, 0, len(s))
		for i, id := range s {
			if other[id] {
				kept = append(kept, id)
				index = append(index, i)
			} else {
				ch[i] = true
			}
		}
		return kept, index
	}
	ka, xa := keep(a, inB, ca)
	kb, xb := keep(b, inA, cb)

	m := &myers{a: ka, b: kb, ca: make([]bool, len(ka)), cb: make([]bool, len(kb)), budget: diffBudget}
	m.compare(0, len(ka), 0, len(kb))
	for k, c := range m.ca {
		ca[xa[k]] = c
	}
	for k, c := range m.cb {
		cb[xb[k]] = c
	}
}

// myers is Myers' O(ND) difference algorithm in its linear-space form: find
// the middle snake of an optimal path, recurse on both sides.
type myers struct {
	a, b   []int32
	ca, cb []bool
	vf, vb []int
	budget int
}

// compare marks the changed elements of a[a0:a1] and b[b0:b1].
func (m *myers) compare(a0, a1, b0, b1 int) {
	for {
		for a0 < a1 && b0 < b1 && m.a[a0] == m.b[b0] {
			a0, b0 = a0+1, b0+1
		}
		for a0 < a1 && b0 < b1 && m.a[a1-1] == m.b[b1-1] {
			a1, b1 = a1-1, b1-1
		}
		if a0 == a1 || b0 == b1 || m.budget <= 0 {
			for i := a0; i < a1; i++ {
				m.ca[i] = true
			}
			for j := b0; j < b1; j++ {
				m.cb[j] = true
			}
			return
		}
		x, y, ok := m.split(a0, a1, b0, b1)
		if !ok || x == a0 && y == b0 || x == a1 && y == b1 {
			// No common element (or, past the limits, no progress).
			for i := a0; i < a1; i++ {
				m.ca[i] = true
			}
			for j := b0; j < b1; j++ {
				m.cb[j] = true
			}
			return
		}
		m.compare(a0, x, b0, y)
		a0, b0 = x, y
	}
}

// split returns a point (x, y) on an optimal edit path through a[a0:a1],
// b[b0:b1] (or, past the limits, on some path) with a0 <= x <= a1 and
// b0 <= y <= b1, or ok false if the ranges have no element in common. The
// first and last elements of the two ranges differ and neither range is
// empty.
func (m *myers) split(a0, a1, b0, b1 int) (x, y int, ok bool) {
	a, b := m.a[a0:a1], m.b[b0:b1]
	n, nb := len(a), len(b)
	maxD := (n + nb + 1) / 2
	lim := min(maxD, diffMaxHalfCost)
	off := lim + 1
	size := 2*lim + 3
	if cap(m.vf) < size {
		m.vf = make([]int, size)
		m.vb = make([]int, size)
	}
	vf, vb := m.vf[:size], m.vb[:size]
	for i := range vf {
		vf[i], vb[i] = -1, -1
	}
	vf[off+1], vb[off+1] = 0, 0
	delta := n - nb
	oddDelta := delta%2 != 0
	// Diagonals that left the grid are not explored again.
	fLo, fHi, bLo, bHi := 0, 0, 0, 0
	bestF, bestFx, bestFy := -1, 0, 0
	bestB, bestBx, bestBy := -1, 0, 0
	for d := 0; d < lim && m.budget > 0; d++ {
		for k := -d + fLo; k <= d-fHi; k += 2 {
			i := off + k
			var x int
			if k == -d || k != d && vf[i-1] < vf[i+1] {
				x = vf[i+1]
			} else {
				x = vf[i-1] + 1
			}
			y := x - k
			x0 := x
			for x < n && y < nb && a[x] == b[y] {
				x, y = x+1, y+1
			}
			m.budget -= 1 + x - x0
			vf[i] = x
			switch {
			case x > n:
				fHi += 2
			case y > nb:
				fLo += 2
			default:
				if x+y > bestF {
					bestF, bestFx, bestFy = x+y, x, y
				}
				if oddDelta {
					if j := off + delta - k; j >= 0 && j < size && vb[j] != -1 && x >= n-vb[j] {
						return a0 + x, b0 + y, true
					}
				}
			}
		}
		for k := -d + bLo; k <= d-bHi; k += 2 {
			i := off + k
			var x int
			if k == -d || k != d && vb[i-1] < vb[i+1] {
				x = vb[i+1]
			} else {
				x = vb[i-1] + 1
			}
			y := x - k
			x0 := x
			for x < n && y < nb && a[n-x-1] == b[nb-y-1] {
				x, y = x+1, y+1
			}
			m.budget -= 1 + x - x0
			vb[i] = x
			switch {
			case x > n:
				bHi += 2
			case y > nb:
				bLo += 2
			default:
				if x+y > bestB {
					bestB, bestBx, bestBy = x+y, n-x, nb-y
				}
				if !oddDelta {
					if j := off + delta - k; j >= 0 && j < size && vf[j] != -1 {
						xf := vf[j]
						yf := xf - (j - off)
						if xf >= n-x {
							return a0 + xf, b0 + yf, true
						}
					}
				}
			}
		}
	}
	if lim == maxD && m.budget > 0 {
		// The paths never met: the edit distance is n+nb.
		return 0, 0, false
	}
	// Too costly: split where one search got furthest.
	if bestF >= bestB {
		return a0 + bestFx, b0 + bestFy, true
	}
	return a0 + bestBx, b0 + bestBy, true
}

// slideChanges moves runs of changed lines of one file (ids, ch) to where
// they read best, as GNU diff does: runs slide over equal lines to merge
// with neighbouring runs; a run that merges with nothing ends up as late
// as it can, or else at the last place where it lines up with a change in
// the other file (other), so deletions and insertions form one block.
// ch and other are the changed flags of the compared ranges of the two
// files, which have the same number of unchanged lines.
func slideChanges(ids []int32, ch, other []bool) {
	n := len(ch)
	// otherAt[u] is the index in the other file of its unchanged line u
	// (len(other) for u past the last).
	otherAt := make([]int, 0, n+1)
	for j, c := range other {
		if !c {
			otherAt = append(otherAt, j)
		}
	}
	otherAt = append(otherAt, len(other))
	// lines up reports whether a run of this file preceded by u unchanged
	// lines ends where a run of the other file does.
	linesUp := func(u int) bool {
		j := otherAt[u]
		return j > 0 && other[j-1]
	}

	u := 0 // unchanged lines before i
	for i := 0; i < n; {
		if !ch[i] {
			i, u = i+1, u+1
			continue
		}
		start, end := i, i
		for end < n && ch[end] {
			end++
		}
		for {
			runLen := end - start
			// Slide back while the line before equals the run's last.
			for start > 0 && ids[start-1] == ids[end-1] {
				start, end, u = start-1, end-1, u-1
				ch[start], ch[end] = true, false
				for start > 0 && ch[start-1] {
					start--
				}
			}
			// Slide forward while the run's first equals the line after.
			best := -1
			if linesUp(u) {
				best = end
			}
			for end < n && ids[start] == ids[end] {
				ch[start], ch[end] = false, true
				start, end, u = start+1, end+1, u+1
				for end < n && ch[end] {
					end++
				}
				if linesUp(u) {
					best = end
				}
			}
			if end-start == runLen {
				// Nothing merged: the run can sit anywhere it passed.
				for best >= 0 && end > best {
					start, end, u = start-1, end-1, u-1
					ch[start], ch[end] = true, false
				}
				break
			}
		}
		i = end
	}
}

// changesOf groups the changed lines into blocks.
func changesOf(ca, cb []bool) []Change {
	var changes []Change
	for i, j := 0, 0; i < len(ca) || j < len(cb); {
		if i < len(ca) && ca[i] || j < len(cb) && cb[j] {
			c := Change{A: i, B: j}
			for i < len(ca) && ca[i] {
				i++
			}
			for j < len(cb) && cb[j] {
				j++
			}
			c.Del, c.Ins = i-c.A, j-c.B
			changes = append(changes, c)
			continue
		}
		i, j = i+1, j+1
	}
	return changes
}

// writeHunks writes the hunks of the changes marked in ca and cb, whose
// lines la and lb start at line lineOff (0-based) of their files.
func writeHunks(out *strings.Builder, la, lb lines, ca, cb []bool, lineOff, context int) {
	changes := changesOf(ca, cb)

	line := func(prefix byte, l []byte) {
		out.WriteByte(prefix)
		out.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for len(changes) > 0 {
		// A hunk takes the changes separated by at most 2*context lines.
		k := 1
		for k < len(changes) && changes[k].A-(changes[k-1].A+changes[k-1].Del) <= 2*context {
			k++
		}
		hunk := changes[:k]
		changes = changes[k:]
		first, last := hunk[0], hunk[k-1]
		a0 := max(0, first.A-context)
		b0 := first.B - (first.A - a0)
		a1 := min(len(ca), last.A+last.Del+context)
		b1 := last.B + last.Ins + (a1 - (last.A + last.Del))

		out.WriteString("@@ -")
		writeRange(out, lineOff+a0, a1-a0)
		out.WriteString(" +")
		writeRange(out, lineOff+b0, b1-b0)
		out.WriteString(" @@\n")
		i := a0
		for _, c := range hunk {
			for ; i < c.A; i++ {
				line(' ', la.line(i))
			}
			for k := c.A; k < c.A+c.Del; k++ {
				line('-', la.line(k))
			}
			for k := c.B; k < c.B+c.Ins; k++ {
				line('+', lb.line(k))
			}
			i = c.A + c.Del
		}
		for ; i < a1; i++ {
			line(' ', la.line(i))
		}
	}
}

// writeRange writes a hunk range as GNU diff does: "start,count" with a
// 1-based start, just "start" for one line, and for no lines the number of
// the line before them with ",0".
func writeRange(out *strings.Builder, start, count int) {
	switch count {
	case 0:
		out.WriteString(strconv.Itoa(start))
		out.WriteString(",0")
	case 1:
		out.WriteString(strconv.Itoa(start + 1))
	default:
		out.WriteString(strconv.Itoa(start + 1))
		out.WriteByte(',')
		out.WriteString(strconv.Itoa(count))
	}
}
