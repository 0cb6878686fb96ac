package procs

import (
	"runtime"
	"testing"
	"time"
)

// waitProcs waits up to 5 s for GOMAXPROCS to be want.
func waitProcs(t *testing.T, want int, why string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", why, runtime.GOMAXPROCS(0), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdProcs waits d and fails if GOMAXPROCS is not want all along.
func holdProcs(t *testing.T, want int, d time.Duration, why string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", why, got, want)
		}
	}
}

// withProcs runs the test at GOMAXPROCS n, without the environment's
// GOMAXPROCS, and puts both back after.
func withProcs(t *testing.T, n string, procs int) {
	t.Setenv("GOMAXPROCS", n)
	old := runtime.GOMAXPROCS(procs)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

func TestGovernor(t *testing.T) {
	withProcs(t, "", 4)
	g := New(nil)
	if g == nil {
		t.Fatal("New: nil with 4 Ps and no GOMAXPROCS in the environment")
	}
	g.quiet = 20 * time.Millisecond
	if got := g.Max(); got != 4 {
		t.Fatalf("Max %d, want 4", got)
	}
	holdProcs(t, 4, 3*g.quiet, "not started")
	g.Start()
	waitProcs(t, 1, "started, nothing under way")

	// A trickle of work (less than RaiseBytes per window) leaves one P.
	for range 10 {
		g.Begin(64 << 10)
		g.End()
		time.Sleep(RaiseWindow / 4)
	}
	holdProcs(t, 1, 2*g.quiet, "a trickle of small work")

	// A burst raises it, and it stays up while work is under way.
	for range 4 {
		g.Begin(1 << 20)
	}
	waitProcs(t, 4, "4 MiB of work begun at once")
	holdProcs(t, 4, 3*g.quiet, "work still under way")
	for range 4 {
		g.End()
	}
	waitProcs(t, 1, "the work ended and the quiet period passed")

	// Parallel work (fs.AllCPUs) raises it at once and holds it up
	// until it ends, however long.
	g.Begin(-1)
	waitProcs(t, 4, "parallel work began")
	holdProcs(t, 4, 3*g.quiet, "parallel work under way")
	g.End()
	waitProcs(t, 1, "parallel work ended")

	// A long stream of work that each ends at once keeps it up.
	stop := time.Now().Add(5 * g.quiet)
	g.Begin(RaiseBytes)
	g.End()
	waitProcs(t, 4, "a stream began")
	for time.Now().Before(stop) {
		g.Begin(1 << 20)
		g.End()
		if got := runtime.GOMAXPROCS(0); got != 4 {
			t.Fatalf("a stream under way: GOMAXPROCS %d, want 4", got)
		}
		time.Sleep(time.Millisecond)
	}

	g.Stop()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("stopped: GOMAXPROCS %d, want 4 back", got)
	}
	g.Stop() // a second Stop does nothing
	g.Begin(RaiseBytes)
	g.End()
	holdProcs(t, 4, 2*g.quiet, "stopped, then work")

	// Started again, it governs again (the bench brackets each run).
	g.Start()
	g.Start() // a second Start does nothing
	waitProcs(t, 1, "started again")
	g.Stop()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("stopped again: GOMAXPROCS %d, want 4 back", got)
	}
}

func TestGovernorStopWhileLow(t *testing.T) {
	withProcs(t, "", 3)
	g := New(nil)
	g.quiet = 10 * time.Millisecond
	g.Start()
	waitProcs(t, 1, "started")
	g.Stop()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("stopped while low: GOMAXPROCS %d, want 3", got)
	}
}

// TestNoGovernor: an explicit GOMAXPROCS, or a single P, leaves nothing
// to govern, and a nil Governor's methods do nothing.
func TestNoGovernor(t *testing.T) {
	tests := []struct {
		name  string
		env   string
		procs int
	}{
		{"GOMAXPROCS in the environment", "2", 2},
		{"one P", "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withProcs(t, tc.env, tc.procs)
			g := New(nil)
			if g != nil {
				t.Fatalf("New: %+v, want nil", g)
			}
			g.Start()
			g.Begin(RaiseBytes)
			g.End()
			holdProcs(t, tc.procs, 50*time.Millisecond, "a nil governor")
			if got := g.Max(); got != tc.procs {
				t.Fatalf("Max %d, want %d", got, tc.procs)
			}
			g.Stop()
		})
	}
}
