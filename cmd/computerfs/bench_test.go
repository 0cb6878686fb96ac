package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchListInContainer: under --in-container only the shell workloads
// are listed, and a note says what is skipped.
func TestBenchListInContainer(t *testing.T) {
	r := mustCLI(t, t.TempDir(), "bench", "--list", "--in-container")
	if !strings.Contains(r.stdout, "create-1000") || !strings.Contains(r.stdout, "git-clone-shallow") {
		t.Fatalf("shell workloads missing:\n%v", r)
	}
	if strings.Contains(r.stdout, "\njobs/") || !strings.Contains(r.stdout, "job-file workload(s) skipped") {
		t.Fatalf("job files listed, or no note:\n%v", r)
	}
	r = cli(t, t.TempDir(), "bench", "--in-container", "--only", "^jobs/")
	if r.code == 0 || !strings.Contains(r.stderr, "--in-container runs only the shell workloads") {
		t.Fatalf("only job files under --in-container:\n%v", r)
	}
}

// TestBenchInContainer runs one cheap workload in containers on a tmpfs.
func TestBenchInContainer(t *testing.T) {
	needFUSE(t)
	if _, err := exec.LookPath("runc"); err != nil {
		if _, err := os.Stat("/usr/sbin/runc"); err != nil {
			t.Skip("runc is not installed")
		}
	}
	r := mustCLI(t, t.TempDir(), "bench", "--in-container", "--runs", "1", "--targets", "tmpfs", "--baseline", "tmpfs", "--only", "^tree-find$")
	for _, want := range []string{"tmpfs/container", "WALL", "exclude container start", "1.00x"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("no %q in the table:\n%v", want, r)
		}
	}
}
