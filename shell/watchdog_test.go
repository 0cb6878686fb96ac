package shell

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/computerfs/computerfs/shell/coreutils"
)

func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// Past the plugin's heap limit, the watchdog ends the exec that holds
// the most; one running beside it is not touched, and the memory goes
// back to the system after.
func TestWatchdogEndsTheHeaviest(t *testing.T) {
	runtime.GC()
	limit := heapBytes() + 96<<20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	var w watchdog
	ws := t.TempDir()
	fsys := coreutils.DirFS{Root: ws}
	var wg sync.WaitGroup
	var heavy, light Outcome
	var lightOut bytes.Buffer
	wg.Add(2)
	go func() {
		defer wg.Done()
		// Its own limit is far away: only the watchdog can stop it.
		heavy = Run(context.Background(), `x=aaaaaaaaaaaaaaaa; for i in $(seq 40); do x=$x$x; done; echo no`,
			Options{FS: fsys, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, MemoryBytes: 8 << 30, watch: &w, heapLimit: limit})
	}()
	go func() {
		defer wg.Done()
		light = Run(context.Background(), `n=0; for i in $(seq 3000); do n=$((n+1)); done; echo $n`,
			Options{FS: fsys, Stdout: &lightOut, Stderr: &bytes.Buffer{}, watch: &w, heapLimit: limit})
	}()
	wg.Wait()
	if !heavy.MemoryLimit || heavy.ExitCode != 137 || !strings.Contains(heavy.Reason, "heap reached") {
		t.Errorf("heavy exec: %+v", heavy)
	}
	if light.ExitCode != 0 || lightOut.String() != "3000\n" {
		t.Errorf("light exec: %+v, stdout %q", light, lightOut.String())
	}
	if h := heapBytes(); h > limit {
		t.Errorf("heap after: %d MiB, limit %d MiB", h>>20, limit>>20)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		w.mu.Lock()
		done := !w.running
		w.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog goroutine did not stop after the last run")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
