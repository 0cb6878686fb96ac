package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInit: init makes a workspace, with the limit asked, and refuses
// any path where something exists, changing nothing there.
func TestInit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		before []byte // the file there first; nil: none
		dir    bool   // a directory there first
		code   int
		stderr string
		limit  string // limit's output after a success
	}{
		{name: "new", limit: "limit 10.0 GiB, used 0 B"},
		{name: "new with a limit", args: []string{"--limit", "20G"}, limit: "limit 20.0 GiB, used 0 B"},
		{name: "in a new directory", args: []string{"--limit", "1M"}, limit: "limit 1.0 MiB, used 0 B"},
		{name: "limit 0", args: []string{"--limit", "0"}, code: 2, stderr: "--limit: a workspace's limit must be above 0"},
		{name: "bad limit", args: []string{"--limit", "lots"}, code: 2, stderr: `invalid size "lots"`},
		{name: "empty file", before: []byte{}, code: 1, stderr: "already exists"},
		{name: "some file", before: []byte("notes\n"), code: 1, stderr: "already exists"},
		{name: "directory", dir: true, code: 1, stderr: "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws, _ := tempWorkspace(t)
			if tc.name == "in a new directory" {
				ws = filepath.Join(filepath.Dir(ws), "a", "b", "ws.cfs")
			}
			switch {
			case tc.before != nil:
				if err := os.WriteFile(ws, tc.before, 0o644); err != nil {
					t.Fatal(err)
				}
			case tc.dir:
				if err := os.Mkdir(ws, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := cli(t, home, append([]string{"init", ws}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("init: want exit %d saying %q, got %v", tc.code, tc.stderr, r)
			}
			if tc.code != 0 {
				if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 && tc.code != 2 {
					t.Errorf("more than one line of error:\n%s", r.stderr)
				}
				switch fi, err := os.Stat(ws); {
				case tc.dir:
					if err != nil || !fi.IsDir() {
						t.Errorf("the directory changed: %v, %v", fi, err)
					}
				case tc.before != nil:
					if b, _ := os.ReadFile(ws); !bytes.Equal(b, tc.before) {
						t.Errorf("init changed the file: %q", b)
					}
				case err == nil:
					t.Errorf("a refused init left a file")
				}
				return
			}
			if want := "computerfs: created workspace " + ws; !strings.HasPrefix(r.stdout, want) {
				t.Errorf("init said %q, want %q", r.stdout, want)
			}
			if fi, err := os.Stat(ws); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("new store: %v, %v; want mode 0600", fi, err)
			}
			fsckClean(t, home, ws)
			if r := mustCLI(t, home, "limit", ws); strings.TrimSpace(r.stdout) != tc.limit {
				t.Errorf("limit: %q, want %q", r.stdout, tc.limit)
			}
			if r := cli(t, home, "limit", ws, "0"); r.code != 2 || !strings.Contains(r.stderr, "a limit of 0 B leaves no room") {
				t.Errorf("limit 0 on an empty workspace: %v", r)
			}
			// Once made, it is there: a second init refuses it.
			if r := cli(t, home, "init", ws); r.code != 1 || !strings.Contains(r.stderr, ws+" already exists") {
				t.Errorf("second init: %v", r)
			}
		})
	}
}

// TestServeCreate: serve (as mount) creates a missing workspace only with
// --create, says so on stderr, and serves it; with the store there,
// --create changes nothing and says nothing.
func TestServeCreate(t *testing.T) {
	home, ws, _ := tempWorkspace(t)
	r := cli(t, home, "serve", ws, "--daemon")
	if r.code != 1 || !strings.Contains(r.stderr, "no computerfs workspace at "+ws+" (no such file)") {
		t.Fatalf("serve without --create: %v", r)
	}
	if _, err := os.Stat(ws); err == nil {
		t.Fatalf("serve without --create made %s", ws)
	}
	for i, want := range []string{"computerfs: created workspace " + ws + " (limit 1.0 GiB)\n", ""} {
		r := mustCLI(t, home, "serve", ws, "--daemon", "--create", "--limit", "1G")
		if r.stderr != want {
			t.Errorf("serve --create, run %d: stderr %q, want %q", i, r.stderr, want)
		}
		m := daemonPID.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("serve --daemon: %v", r)
		}
		pid, _ := strconv.Atoi(m[1])
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if r := mustCLI(t, home, "limit", ws); strings.TrimSpace(r.stdout) != "limit 1.0 GiB, used 0 B" {
			t.Errorf("limit through the daemon: %q", r.stdout)
		}
		syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 10*time.Second) {
			t.Fatalf("serve daemon %d still running 10s after SIGTERM", pid)
		}
	}
	fsckClean(t, home, ws)
}
