package audit

import (
	"fmt"
	"sync"
	"time"
)

// Coalescer bounds what floods of refusals write to the log: a script
// looping on a denied path, or walking a tree of them, must not grow the
// log without bound. It decides which verdict records get written and
// counts the others; it writes nothing itself (the caller appends what
// Admit and Flush return), so it holds no store state.
//
// Time is cut into windows (Window, a minute by default). Within one:
//
//   - the first refusal of each key (door, backend, exec, rule, verdict,
//     path) gets its record; its repeats in the window are only counted;
//   - at most PerWindow keys get records; refusals past that are only
//     counted (so are new keys once MaxKeys are held).
//
// When a window ends (seen at the next Admit, or at Flush), each key
// that had repeats gets one summary record (Repeats = how many), and the
// refusals the cap left out get one record saying how many. So a window
// writes at most 2*PerWindow+1 records, whatever the rate of refusals:
// a loop on one denied path writes two records a minute.
type Coalescer struct {
	// Window is the length of a window (default time.Minute).
	Window time.Duration
	// PerWindow caps the keys recorded in a window (default 120).
	PerWindow int
	// MaxKeys caps the keys held (default 4096).
	MaxKeys int

	mu       sync.Mutex
	start    time.Time
	keys     map[coalesceKey]*coalesced
	admitted int
	capped   int // refusals the cap left out in this window
}

type coalesceKey struct {
	door, backend, exec, rule, verdict, path string
}

type coalesced struct {
	rec     Record
	repeats int
}

// Admit takes a verdict record rec made at now and returns the records
// to append: rec itself if it is the first of its key in the window,
// after the summaries of the window that ended, if one did.
func (c *Coalescer) Admit(rec Record, now time.Time) []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.turn(now, false)
	k := coalesceKey{rec.Door, rec.Backend, rec.ExecID, rec.Rule, rec.Verdict, rec.Path}
	if e := c.keys[k]; e != nil {
		e.repeats++
		return out
	}
	if c.admitted >= c.perWindow() || len(c.keys) >= c.maxKeys() {
		c.capped++
		return out
	}
	c.admitted++
	c.keys[k] = &coalesced{rec: rec}
	return append(out, rec)
}

// Seed counts recs (records already in the log, such as the last ones a
// previous process wrote) as admitted in the window starting at now if
// they were made within one window before it: a process that starts
// again and again (a one-off CLI looping on a denied path) then adds no
// record of a key the log already has from the last minute.
func (c *Coalescer) Seed(recs []Record, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.turn(now, true) // a fresh coalescer: nothing to summarise
	}
	w := c.Window
	if w <= 0 {
		w = time.Minute
	}
	for _, r := range recs {
		if r.Kind != KindVerdict || now.Sub(time.Unix(0, r.Time)) >= w {
			continue
		}
		k := coalesceKey{r.Door, r.Backend, r.ExecID, r.Rule, r.Verdict, r.Path}
		if c.keys[k] == nil && len(c.keys) < c.maxKeys() {
			r.Repeats = 0
			c.keys[k] = &coalesced{rec: r}
		}
	}
}

// Flush ends the window now and returns its summaries (at close).
func (c *Coalescer) Flush(now time.Time) []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn(now, true)
}

// turn starts a new window if the current one ended (or force), and
// returns the summaries of the one that ended.
func (c *Coalescer) turn(now time.Time, force bool) []Record {
	w := c.Window
	if w <= 0 {
		w = time.Minute
	}
	if c.keys != nil && !force && now.Sub(c.start) < w {
		return nil
	}
	var out []Record
	for _, e := range c.keys {
		if e.repeats == 0 {
			continue
		}
		s := e.rec
		s.Time = now.UnixNano()
		s.Repeats = e.repeats
		s.Detail = fmt.Sprintf("%d more refusals like this since %s (coalesced): %s", e.repeats, c.start.UTC().Format(time.RFC3339), e.rec.Detail)
		s.Trim()
		out = append(out, s)
	}
	if c.capped > 0 {
		out = append(out, Record{Time: now.UnixNano(), Kind: KindVerdict, Verdict: Denied, Repeats: c.capped,
			Detail: fmt.Sprintf("%d refusals since %s not recorded: over the log's rate limit", c.capped, c.start.UTC().Format(time.RFC3339))})
	}
	c.start, c.keys, c.admitted, c.capped = now, map[coalesceKey]*coalesced{}, 0, 0
	return out
}

func (c *Coalescer) perWindow() int {
	if c.PerWindow > 0 {
		return c.PerWindow
	}
	return 120
}

func (c *Coalescer) maxKeys() int {
	if c.MaxKeys > 0 {
		return c.MaxKeys
	}
	return 4096
}
