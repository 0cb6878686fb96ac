package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master to read what is drawn, the
// slave to draw on.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	// Non-blocking, so that os.NewFile puts it in the poller and read
	// deadlines work.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// drawn reads what the master has, waiting a little for it.
func drawn(t *testing.T, m *os.File) string {
	t.Helper()
	m.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := m.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.String()
		}
	}
}

func TestProgress(t *testing.T) {
	// Not a terminal: nothing, and a nil *progress is safe to use.
	var buf bytes.Buffer
	p := newProgressAfter(&env{stderr: &buf}, "fsck", true, 0)
	if p != nil {
		t.Fatalf("a progress bar on a buffer")
	}
	p.set("chunks", 1, 2)
	p.finish()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if p := newProgressAfter(&env{stderr: w}, "fsck", true, 0); p != nil {
		t.Fatalf("a progress bar on a pipe")
	}

	// A terminal, work longer than the delay: a bar with the phase and
	// how far it is; then a spinner for a phase without a total.
	m, s := openPTY(t)
	p = newProgressAfter(&env{stderr: s}, "fsck", false, 0)
	p.set("chunks", 50, 100)
	time.Sleep(300 * time.Millisecond)
	p.set("inodes", 0, 0)
	time.Sleep(300 * time.Millisecond)
	p.finish()
	out := drawn(t, m)
	for _, want := range []string{"fsck: chunks", "50%", "50/100", "fsck: inodes"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal shows no %q: %q", want, out)
		}
	}

	// Work shorter than the delay: nothing drawn.
	p = newProgressAfter(&env{stderr: s}, "gc", false, time.Hour)
	p.set("chunks", 1, 2)
	time.Sleep(100 * time.Millisecond)
	p.finish()
	if out := drawn(t, m); out != "" {
		t.Errorf("quick work drew %q", out)
	}
}
