package backends_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
)

// What the host decides for every plugin (PROTOCOL.md): the kind an exec
// is sent with, the status of a command a signal ended, and the order of
// a timeout's signals.
func TestHostDecisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)

	t.Run("empty kind is the first accepted", func(t *testing.T) {
		res, out, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"kind"}})
		if err != nil || backends.ExitStatus(res.Exit) != 0 || out != "argv\n" {
			t.Errorf("kind sent: %q, %v, %v; want argv", out, res, err)
		}
	})
	t.Run("unknown kind refused by the host", func(t *testing.T) {
		before := h.info(t, "test").Execs
		_, _, _, err := h.exec(t, &backends.Request{Backend: "test", Kind: "js-module", Argv: []string{"kind"}})
		if !errors.Is(err, backends.ErrKind) || !strings.Contains(err.Error(), `runs argv, not "js-module"`) {
			t.Errorf("exec of a kind the plugin does not list: %v; want ErrKind", err)
		}
		if n := h.info(t, "test").Execs; n != before {
			t.Errorf("the plugin was sent the exec: execs %d -> %d", before, n)
		}
	})
	t.Run("signal status", func(t *testing.T) {
		sigs := make(chan syscall.Signal, 1)
		time.AfterFunc(200*time.Millisecond, func() { sigs <- syscall.SIGINT })
		res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"sleep", "10s"}, Signals: sigs})
		if err != nil || res.Exit.Signal != 2 || res.Exit.ExitCode != 130 || backends.ExitStatus(res.Exit) != 130 {
			t.Errorf("SIGINT: %v %v; want signal 2, exit_code 130 (the plugin reported exit_code 0)", res.Exit, err)
		}
	})
	t.Run("timeout: SIGTERM, then SIGKILL", func(t *testing.T) {
		t0 := time.Now()
		res, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"ignore-term"}, Timeout: 200 * time.Millisecond})
		took := time.Since(t0)
		if err != nil || !res.Exit.TimedOut || res.Exit.Signal != 9 || backends.ExitStatus(res.Exit) != backends.StatusTimedOut {
			t.Fatalf("a command ignoring SIGTERM: %v %v; want timed out, signal 9", res.Exit, err)
		}
		// SIGKILL comes termGrace (2s) after SIGTERM, not with it.
		if took < 2*time.Second {
			t.Errorf("SIGKILL came %s after the start: with the SIGTERM", took)
		}
		if bi := h.info(t, "test"); bi.State != backends.StateReady || bi.Restarts != 0 {
			t.Errorf("the plugin ended the exec on SIGKILL, yet: %v", bi)
		}
		res, _, _, err = h.exec(t, &backends.Request{Backend: "test", Argv: []string{"sleep", "10s"}, Timeout: 200 * time.Millisecond})
		if err != nil || !res.Exit.TimedOut || res.Exit.Signal != 15 || res.Exit.ExitCode != 143 {
			t.Errorf("a command ending on SIGTERM: %v %v; want timed out, signal 15", res.Exit, err)
		}
	})
	t.Run("output limit after exit 0", func(t *testing.T) {
		// The plugin's last chunk goes past the limit and its Exit 0
		// follows at once, before the host's SIGKILL can matter: the exec
		// is cut all the same, and the plugin is not at fault.
		res, out, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"overflow-exit0", "4096"}, OutputLimit: 1000})
		if err != nil || !res.Exit.Truncated || backends.ExitStatus(res.Exit) != backends.StatusOutputCut || out != strings.Repeat("o", 1000) {
			t.Errorf("overflow then exit 0: %v %v, %d bytes out; want truncated, status 141, 1000 bytes", res.Exit, err, len(out))
		}
		if bi := h.info(t, "test"); bi.State != backends.StateReady || bi.Restarts != 0 {
			t.Errorf("the plugin was blamed: %v", bi)
		}
	})
	t.Run("graceful stop", func(t *testing.T) {
		h.rt.Close()
		pid, graceful, ok := h.rt.Stopped("test")
		if !ok || pid <= 0 || !graceful {
			t.Errorf("Stopped: pid %d, graceful %v, ok %v; want a graceful stop", pid, graceful, ok)
		}
	})
}
