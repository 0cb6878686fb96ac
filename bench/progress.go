package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// IsTerminal reports whether w is a terminal (a progress bar is drawn only
// on one).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}

// terminalWidth is the width of the terminal w, or 80.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 80
	}
	var ws struct{ Row, Col, X, Y uint16 }
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
	if e != 0 || ws.Col < 20 {
		return 80
	}
	return int(ws.Col)
}

// progress shows how far a run is: a bar redrawn in place on a terminal,
// otherwise one line per finished workload.
type progress struct {
	w     io.Writer
	bar   bool
	total int
	done  int
	start time.Time
	drawn bool
	width int // of the terminal: the bar's line must not wrap
}

func newProgress(w io.Writer, bar bool, total int) *progress {
	p := &progress{w: w, bar: bar, total: total, start: time.Now(), width: 80}
	if bar {
		p.width = terminalWidth(w)
	}
	return p
}

// begin says which run starts.
func (p *progress) begin(workload, target string, round, runs int) {
	if p.w == nil || !p.bar {
		return
	}
	run := fmt.Sprintf("run %d/%d", round, runs)
	if round == 0 {
		run = "warm-up"
	}
	const width = 30
	frac := float64(p.done) / float64(max(p.total, 1))
	n := int(frac * width)
	eta := ""
	if p.done > 0 {
		left := time.Duration(float64(time.Since(p.start)) / frac * (1 - frac))
		eta = " ETA " + left.Round(time.Second).String()
	}
	line := fmt.Sprintf("[%s%s] %3.0f%% %s on %s, %s%s", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, workload, target, run, eta)
	if r := []rune(line); len(r) > p.width-1 {
		line = string(r[:p.width-1])
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.drawn = true
}

// skip counts steps done (or skipped).
func (p *progress) skip(n int) { p.done += n }

// workloadDone reports a finished workload (in line mode).
func (p *progress) workloadDone(wr *WorkloadResult) {
	if p.w == nil || p.bar {
		return
	}
	var parts []string
	for _, r := range wr.Results {
		switch {
		case r.Error != "":
			parts = append(parts, r.Target+" FAILED")
		case r.Primary != nil:
			parts = append(parts, r.Target+" "+formatPrimary(wr.Primary, r.Primary.Median))
		}
	}
	fmt.Fprintf(p.w, "bench: [%d/%d] %s: %s\n", p.done, p.total, wr.Name, strings.Join(parts, ", "))
}

func (p *progress) finish() {
	if p.w != nil && p.bar && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
