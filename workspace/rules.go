package workspace

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Path rules say, by glob, which workspace paths a view may change
// (allow), only read (read_only), or not see at all (deny). The policy
// file gives them (backends.Policy's "paths"); a view carries them
// (WithRules) and every operation checks the canonical path it reaches,
// after symlinks, so no spelling of a path gets around them.
//
// # Patterns
//
// A pattern is a glob of the glob.go syntax ('*', '?', '[...]', '{a,b}',
// '**' as a whole segment) naming workspace paths, always from the
// workspace's root whatever the root of the view or the backend:
//
//	"/vendor/**"  starts with '/': anchored at the workspace root.
//	".env"        no leading '/': matches at any depth, as "/**/.env"
//	"a/*.pem"     likewise: "/**/a/*.pem" (unlike .gitignore, a '/' inside
//	              does not anchor; only a leading one does)
//
// A rule that matches a directory covers everything below it: "/secrets"
// and "/secrets/**" both deny the files under /secrets, and the first also
// denies the directory itself. The root directory is never matched.
// Patterns are refused when they are empty, malformed, hold a ".."
// segment (canonical paths have none), or could match only the root.
//
// # Precedence
//
// Rules come in layers: the policy's top level, then a backend's own.
// Within a layer the last rule (in file order) matching the path or one
// of its directories decides, as in .gitignore; a path no rule matches is
// allowed. Across layers the strictest verdict wins (deny over read_only
// over allow): the top level is a floor no backend goes below, except
// that a backend rule with exactly the same pattern as a top-level rule
// replaces it for that backend. And a denied directory denies everything
// below it, whatever a later rule says of the paths inside (they could
// not be reached).
//
// So "write only under /out" is {"/**": "read_only", "/out/**": "allow"}
// in one layer: /out itself stays read-only (it cannot be removed or
// renamed) while everything under it may change.
//
// # Verdicts
//
// A denied path looks absent: looking it up, reading, listing, removing
// or renaming it fails with ENOENT and listings, glob, grep, tree and du
// leave it out; creating it or renaming, copying or writing onto it fails
// with EACCES (whether or not it exists, so that says nothing). A
// read-only path fails every change with EROFS. Each such error's cause
// is a *RuleError naming the rule.
//
// A directory that holds a protected path (denied or read-only, where it
// is or where it would go) cannot be renamed: EACCES, or EROFS. A
// recursive copy leaves the denied entries behind and fails on an entry
// that would land on a protected path; a recursive remove leaves denied
// entries (the directory then stays, ENOTEMPTY). The change feed leaves
// denied paths out, snapshots read through the view obey its rules, and
// a restore or an undo through it is refused when it would change a
// protected path (for an undo, the paths its exec changed, which must be
// known).
//
// Rules are on paths, not inodes: a hard link made by a door the rules
// do not bind (the daemon's own mount, which is the host user's) gives a
// file a second name, judged as that name.

// Verdict is what a path rule decides.
type Verdict uint8

const (
	// Allow leaves the path to the view's other limits.
	Allow Verdict = iota
	// ReadOnly refuses every change to the path (EROFS).
	ReadOnly
	// Deny makes the path absent (ENOENT) and uncreatable (EACCES).
	Deny
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case ReadOnly:
		return "read_only"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// ParseVerdict reads "allow", "read_only" or "deny".
func ParseVerdict(s string) (Verdict, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "read_only":
		return ReadOnly, nil
	case "deny":
		return Deny, nil
	}
	return 0, fmt.Errorf("verdict %q: want allow, read_only or deny", s)
}

// Rule is one pattern and its verdict.
type Rule struct {
	Pattern string
	Verdict Verdict
}

// Rules are compiled layers of path rules. A nil *Rules allows all.
type Rules struct {
	layers [][]compiledRule
	// states is how many NFA states Verdict steps: the sum over the
	// rules' alternatives of 2*(len+1).
	states int
}

type compiledRule struct {
	Rule
	g *globPattern
}

// RuleError is the cause of an error a path rule decided.
type RuleError struct {
	Rule  Rule
	Errno syscall.Errno
	// decided is the canonical workspace path a lookup was denied on,
	// for the denial hook.
	decided string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%v %s%q: %s)", e.Errno.Error(), RuleErrorMarker, e.Rule.Pattern, e.Rule.Verdict)
}

// RuleErrorMarker is in the message of every error a path rule decided,
// for what sees only the message (an error that crossed a wire).
const RuleErrorMarker = "(path rule "

// Unwrap makes errors.Is(err, e.Errno) true.
func (e *RuleError) Unwrap() error { return e.Errno }

// compileRule compiles one rule, refusing the patterns the package
// comment lists.
func compileRule(r Rule) (compiledRule, error) {
	p := r.Pattern
	if p == "" {
		return compiledRule{}, errors.New("empty pattern")
	}
	if r.Verdict > Deny {
		return compiledRule{}, fmt.Errorf("pattern %q: bad verdict %d", p, r.Verdict)
	}
	if err := checkPath(p); err != nil {
		return compiledRule{}, fmt.Errorf("pattern %q: %w", p, err)
	}
	src := p
	if !strings.HasPrefix(p, "/") {
		src = "**/" + p
	}
	g, err := compileGlob(src)
	if err != nil {
		return compiledRule{}, fmt.Errorf("pattern %q: %w", p, err)
	}
	for _, alt := range g.alts {
		for _, s := range alt {
			if s.literal && s.lit == ".." {
				return compiledRule{}, fmt.Errorf("pattern %q: a \"..\" segment never matches a canonical path", p)
			}
		}
		if len(alt) == 0 {
			return compiledRule{}, fmt.Errorf("pattern %q: matches only the root, which rules never match", p)
		}
	}
	return compiledRule{Rule: r, g: g}, nil
}

// CompileRules compiles layers of rules (see the package comment for
// precedence): layers[0] is the top level, each next one a backend's. It
// returns nil when there is no rule at all.
func CompileRules(layers ...[]Rule) (*Rules, error) {
	rs := &Rules{}
	n := 0
	for i, layer := range layers {
		var out []compiledRule
		for _, r := range layer {
			c, err := compileRule(r)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
			for _, alt := range c.g.alts {
				rs.states += 2 * (len(alt) + 1)
			}
		}
		// A later layer's rule with the same pattern replaces an earlier
		// layer's.
		for j := 0; j < i; j++ {
			kept := rs.layers[j][:0]
			for _, c := range rs.layers[j] {
				if !hasPattern(layer, c.Pattern) {
					kept = append(kept, c)
				}
			}
			rs.layers[j] = kept
		}
		rs.layers = append(rs.layers, out)
		n += len(out)
	}
	if n == 0 {
		return nil, nil
	}
	return rs, nil
}

func hasPattern(rules []Rule, p string) bool {
	for _, r := range rules {
		if r.Pattern == p {
			return true
		}
	}
	return false
}

// Verdict decides canonical workspace path p ("/a/b"), and returns the
// rule that did (the zero Rule for a path no rule matches).
func (rs *Rules) Verdict(p string) (Verdict, Rule) {
	if rs == nil {
		return Allow, Rule{}
	}
	segs := globSplitPath(p)
	if len(segs) == 0 {
		return Allow, Rule{}
	}
	// Each rule's alternatives run as NFAs stepped one segment at a time
	// (globStates, incrementally): a rule matches p or a directory above
	// it when one reaches its end after some prefix.
	buf := make([]bool, rs.states)
	type nfa struct {
		alt       []globSeg
		cur, next []bool
		dead      bool
	}
	runs := make([][][]nfa, len(rs.layers)) // layer, rule, alternative
	matched := make([][]bool, len(rs.layers))
	for l, layer := range rs.layers {
		runs[l] = make([][]nfa, len(layer))
		matched[l] = make([]bool, len(layer))
		for i := range layer {
			for _, alt := range layer[i].g.alts {
				n := len(alt) + 1
				r := nfa{alt: alt, cur: buf[:n:n], next: buf[n : 2*n : 2*n]}
				buf = buf[2*n:]
				r.cur[0] = true
				globClosure(alt, r.cur)
				runs[l][i] = append(runs[l][i], r)
			}
		}
	}
	var v Verdict
	var by Rule
	for _, seg := range segs {
		v, by = Allow, Rule{}
		for l, layer := range rs.layers {
			lv, lby := Allow, Rule{}
			for i := range layer {
				for a := range runs[l][i] {
					r := &runs[l][i][a]
					if r.dead {
						continue
					}
					r.dead = !globStep(r.alt, seg, r.cur, r.next)
					r.cur, r.next = r.next, r.cur
					if r.cur[len(r.alt)] {
						matched[l][i] = true
					}
				}
				if matched[l][i] {
					lv, lby = layer[i].Verdict, layer[i].Rule
				}
			}
			if lv > v || by.Pattern == "" && lby.Pattern != "" && lv == v {
				v, by = lv, lby
			}
		}
		if v == Deny {
			return Deny, by // a denied directory denies all below it
		}
	}
	return v, by
}

// globStep moves the NFA of alt over one segment, from states cur into
// next (cleared first), and says whether any state is live.
func globStep(alt []globSeg, seg string, cur, next []bool) bool {
	clear(next)
	live := false
	for i := 0; i < len(alt); i++ {
		if !cur[i] {
			continue
		}
		if alt[i].star {
			next[i] = true
			live = true
		} else if alt[i].match(seg) {
			next[i+1] = true
			live = true
		}
	}
	globClosure(alt, next)
	return live
}

// Restricts says whether any rule could restrict a path strictly below
// directory dir (a canonical workspace path): when false, everything
// below dir has dir's verdict or is allowed, so a walk need not check.
func (rs *Rules) Restricts(dir string) bool {
	if rs == nil {
		return false
	}
	for _, layer := range rs.layers {
		for _, c := range layer {
			if c.Verdict != Allow && c.g.CouldMatchBelow(dir) {
				return true
			}
		}
	}
	return false
}

// String lists rs's layers and rules: two Rules with the same string
// decide every path alike.
func (rs *Rules) String() string {
	if rs == nil {
		return "[]"
	}
	var b strings.Builder
	for i, layer := range rs.layers {
		if i > 0 {
			b.WriteString(" | ")
		}
		for j, c := range layer {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: %s", c.Pattern, c.Verdict)
		}
	}
	return b.String()
}

// Empty says whether rs has no rule.
func (rs *Rules) Empty() bool { return rs == nil }
