package audit

import (
	"fmt"
	"testing"
	"time"
)

// TestCoalescer: repeats of a key get no record until the window ends,
// then one summary; the cap bounds the keys of a window and says how
// many refusals it left out; a window writes at most 2*PerWindow+1.
func TestCoalescer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := func(path string) Record {
		return Record{Kind: KindVerdict, Verdict: Denied, Door: "hostfs", Backend: "shell", Rule: `paths["**/.env"]=deny`, Path: path, Detail: "read"}
	}
	tests := []struct {
		name string
		run  func(c *Coalescer) []Record
		want []string // Path/Repeats of the records returned, in order
	}{
		{"one key looped", func(c *Coalescer) (out []Record) {
			for i := 0; i < 1000; i++ {
				out = append(out, c.Admit(rec("/.env"), t0.Add(time.Duration(i)*time.Millisecond))...)
			}
			return append(out, c.Flush(t0.Add(2*time.Second))...)
		}, []string{"/.env/0", "/.env/999"}},
		{"two windows", func(c *Coalescer) (out []Record) {
			out = append(out, c.Admit(rec("/a"), t0)...)
			out = append(out, c.Admit(rec("/a"), t0.Add(time.Second))...)
			out = append(out, c.Admit(rec("/a"), t0.Add(61*time.Second))...)
			return append(out, c.Flush(t0.Add(62*time.Second))...)
		}, []string{"/a/0", "/a/1", "/a/0"}},
		{"cap", func(c *Coalescer) (out []Record) {
			c.PerWindow = 3
			for i := 0; i < 10; i++ {
				out = append(out, c.Admit(rec(fmt.Sprintf("/%d", i)), t0)...)
			}
			return append(out, c.Flush(t0.Add(time.Second))...)
		}, []string{"/0/0", "/1/0", "/2/0", "/7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range tt.run(&Coalescer{}) {
				if r.Path == "" {
					got = append(got, fmt.Sprintf("/%d", r.Repeats))
				} else {
					got = append(got, fmt.Sprintf("%s/%d", r.Path, r.Repeats))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("records %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCoalescerSeed: records already in the log from the last window
// count as recorded; older ones and other kinds do not.
func TestCoalescerSeed(t *testing.T) {
	now := time.Unix(5000, 0)
	old := Record{Kind: KindVerdict, Verdict: Denied, Door: "api", Path: "/old", Time: now.Add(-2 * time.Minute).UnixNano()}
	recent := Record{Kind: KindVerdict, Verdict: Denied, Door: "api", Path: "/recent", Time: now.Add(-10 * time.Second).UnixNano()}
	c := &Coalescer{}
	c.Seed([]Record{old, recent, {Kind: KindExec, Path: "/exec", Time: now.UnixNano()}}, now)
	for _, tt := range []struct {
		path string
		want int
	}{{"/recent", 0}, {"/old", 1}, {"/exec", 1}, {"/new", 1}} {
		r := Record{Kind: KindVerdict, Verdict: Denied, Door: "api", Path: tt.path}
		if got := len(c.Admit(r, now.Add(time.Second))); got != tt.want {
			t.Errorf("%s: %d records, want %d", tt.path, got, tt.want)
		}
	}
}
