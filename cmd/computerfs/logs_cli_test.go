package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var daemonLogIn = regexp.MustCompile(`log in (\S+)`)

// TestDaemonLogPerWorkspace: each --daemon logs into WS.log beside its
// store (no shared daemon.log), or, when the store's directory is one
// others can write, into a log named after the store in the home.
func TestDaemonLogPerWorkspace(t *testing.T) {
	home := t.TempDir()
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o1777) // as /tmp
	wss := []string{filepath.Join(t.TempDir(), "a.cfs"), filepath.Join(t.TempDir(), "b.cfs"), filepath.Join(shared, "c.cfs")}
	for i, ws := range wss {
		t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
		d := startServe(t, home, ws)
		m := daemonLogIn.FindStringSubmatch(d.started)
		if m == nil {
			t.Fatalf("serve --daemon does not say where it logs: %q", d.started)
		}
		want := ws + ".log"
		if i == 2 {
			want = filepath.Join(home, "logs", "c.cfs-")
		}
		if !strings.HasPrefix(m[1], want) {
			t.Errorf("daemon of %s logs in %s, want %s...", ws, m[1], want)
		}
		d.stop(t)
		log, err := os.ReadFile(m[1])
		if err != nil || !strings.Contains(string(log), "serving") || !strings.Contains(string(log), ws) || !strings.Contains(string(log), "workspace closed") {
			t.Errorf("log %s: %v\n%s", m[1], err, log)
		}
		for _, other := range wss {
			if other != ws && strings.Contains(string(log), other) {
				t.Errorf("log %s names %s too", m[1], other)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(home, "daemon.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shared daemon.log: %v", err)
	}
}

// TestOneOffQuiet: exec and backends without a daemon run the backends in
// their own process for one call and print no daemon log lines, unless
// COMPUTERFS_LOG asks for them.
func TestOneOffQuiet(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws.cfs")
	t.Cleanup(func() { waitNoPlugins(t, ws, 5*time.Second) })
	mustCLI(t, home, "init", ws)
	for _, args := range [][]string{{"exec", "-w", ws, "--", "echo hi > /f; cat /f"}, {"backends", "-w", ws}, {"fs", "cat", "-w", ws, "/f"}} {
		r, err := runCfs(home, "", nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		if r.code != 0 || r.stderr != "" {
			t.Errorf("computerfs %s: want exit 0 and nothing on stderr: %v", strings.Join(args, " "), r)
		}
	}
	r, err := runCfs(home, "", []string{"COMPUTERFS_LOG=info"}, "exec", "-w", ws, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || !strings.Contains(r.stderr, "backend started") {
		t.Errorf("exec with COMPUTERFS_LOG=info: want the backend's start logged: %v", r)
	}
	// go-plugin's own debug lines only at debug level.
	r, err = runCfs(home, "", []string{"COMPUTERFS_LOG=debug"}, "exec", "-w", ws, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "level=DEBUG") {
		t.Errorf("exec with COMPUTERFS_LOG=debug logs no debug line: %v", r)
	}
	r, err = runCfs(home, "", []string{"COMPUTERFS_LOG=info"}, "exec", "-w", ws, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stderr, "level=DEBUG") || strings.Contains(r.stderr, "plugin address") || strings.Contains(r.stderr, "mTLS") {
		t.Errorf("go-plugin's debug lines at info level: %v", r)
	}
}

func TestUserError(t *testing.T) {
	st := status.Error(codes.NotFound, "read /x: no such file or directory")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{st, "read /x: no such file or directory"},
		{fmt.Errorf("fs cat through its daemon: %w", st), "fs cat through its daemon: read /x: no such file or directory"},
		{errors.New("rpc error: code = Unavailable desc = connection refused: rpc error: code = Internal desc = inner"), "connection refused: inner"},
		{errors.New("plain"), "plain"},
	} {
		if got := userError(tc.err); got != tc.want {
			t.Errorf("userError(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
