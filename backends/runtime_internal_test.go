package backends

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sweep removes socket directories of dead plugins, old enough, and
// keeps a live one and a new one.
func TestSweepSockets(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleAfter)
	mk := func(name string, listen bool, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(p, "plugin1")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		if listen {
			t.Cleanup(func() { l.Close() })
		} else {
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close() // the socket file stays, nobody answers: a killed plugin's
		}
		os.Chtimes(p, mtime, mtime)
		return p
	}
	dead := mk("plugin-dir1", false, old)
	live := mk("plugin-dir2", true, old)
	fresh := mk("plugin-dir3", false, time.Now())
	deadProxy := mk("egress-123", false, old) // a killed daemon's egress proxy
	liveProxy := mk("egress-456", true, old)
	other := filepath.Join(dir, "not-ours")
	os.Mkdir(other, 0o700)
	os.Chtimes(other, old, old)
	if n := sweepSockets(dir); n != 2 {
		t.Errorf("removed %d, want 2", n)
	}
	for _, p := range []string{dead, deadProxy} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the dead %s is still there: %v", p, err)
		}
	}
	for _, p := range []string{live, fresh, other, liveProxy} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// A plugin's hclog lines keep their level; other stderr is a warning.
func TestPluginStderrLevels(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w := &logWriter{log: log, backend: "shell"}
	w.Write([]byte(`{"@level":"debug","@message":"configuring server automatic mTLS","@timestamp":"2026-12-01T23:38:20Z"}` + "\n" +
		`{"@level":"error","@message":"broke","@timestamp":"x","why":"disk"}` + "\npanic: boom\n"))
	out := buf.String()
	if strings.Contains(out, "mTLS") {
		t.Errorf("a debug line was logged at info: %s", out)
	}
	if !strings.Contains(out, `level=ERROR msg=broke backend=shell why=disk`) || !strings.Contains(out, `level=WARN msg="plugin stderr" backend=shell line="panic: boom"`) {
		t.Errorf("log: %s", out)
	}
}
