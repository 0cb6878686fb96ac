package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/computerfs/computerfs/workspace"
)

// BenchmarkShellExecEcho times one exec round trip on a warm shell
// plugin: the request to the runtime, the plugin's interpreter running
// `echo hi`, its output and exit back. The target is under 5 ms.
func BenchmarkShellExecEcho(b *testing.B) { benchShellExec(b, "echo hi", "hi\n") }

// BenchmarkShellExecWrite is BenchmarkShellExecEcho with a command that
// changes the workspace (`echo hi > /f; echo hi`): it pays the exec's
// checkpoints, a commit (and its fsync) of what it changed together with
// its record, so that undo can revert it.
func BenchmarkShellExecWrite(b *testing.B) { benchShellExec(b, "echo hi > /f; echo hi", "hi\n") }

func benchShellExec(b *testing.B, script, want string) {
	dir := b.TempDir()
	plugins := filepath.Join(dir, "plugins")
	out, err := exec.Command("go", "build", "-o", filepath.Join(plugins, "computerfs-plugin-shell"), "../cmd/plugin-shell").CombinedOutput()
	if err != nil {
		b.Fatalf("build the shell plugin: %v\n%s", err, out)
	}
	wsPath := filepath.Join(dir, "ws.cfs")
	f, err := fs.Open(wsPath, fs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rt, err := backends.New(backends.Options{Dirs: []string{plugins}, WS: workspace.New(f, workspace.Options{}), Owner: wsPath,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	run := func() {
		var stdout bytes.Buffer
		res, err := rt.Exec(ctx, &backends.Request{Backend: "shell", Argv: []string{script}}, &stdout, io.Discard)
		if err != nil || backends.ExitStatus(res.Exit) != 0 || stdout.String() != want {
			b.Fatalf("exec: %v, %+v, %q", err, res, stdout.String())
		}
	}
	run() // start the plugin
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// BenchmarkContainerExecTrue times the container backend's start-up: one
// exec of `true` (kind argv) from the request to the runtime, through the
// real plugin subprocess (cmd/plugin-container), runc creating and
// starting the container, `true` running, to the exit and the container's
// deletion back at the host. The workspace is a real computerfs mount
// (internal/testmount), bind-mounted at /workspace as in the daemon. The
// issue's target is under 150 ms. Needs root and runc.
func BenchmarkContainerExecTrue(b *testing.B) {
	needContainer(b)
	dir := b.TempDir()
	plugins := filepath.Join(dir, "plugins")
	// As make builds them: the plugin, and its init beside it.
	for _, c := range [][2]string{{"computerfs-plugin-container", "../cmd/plugin-container"}, {"computerfs-container-init", "../cmd/computerfs-container-init"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(plugins, c[0]), c[1])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", c[0], err, out)
		}
	}
	for _, mode := range []struct {
		name string
		pool string
		idle time.Duration // untimed, before each exec
	}{
		// A warm container is ready: the exec after an agent's pause.
		{name: "warm", pool: "1", idle: 400 * time.Millisecond},
		// No pool: runc makes the container on the exec's path.
		{name: "cold", pool: "0"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			m := testmount.New(b, testmount.Options{})
			policy := backends.Policy{Backends: map[string]backends.BackendPolicy{"container": {Settings: map[string]string{"pool": mode.pool}}}}
			rt, err := backends.New(backends.Options{Dirs: []string{plugins}, WS: workspace.New(m.FS, workspace.Options{}), MountPath: m.Dir,
				Owner: m.Workspace, Policy: policy, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ctx := context.Background()
			run := func() {
				var stderr bytes.Buffer
				res, err := rt.Exec(ctx, &backends.Request{Backend: "container", Kind: "argv", Argv: []string{"true"}}, io.Discard, &stderr)
				if err != nil || backends.ExitStatus(res.Exit) != 0 {
					b.Fatalf("exec: %v, %+v, %q", err, res, stderr.String())
				}
			}
			run() // start the plugin, warm runc and the caches
			b.ResetTimer()
			for b.Loop() {
				if mode.idle > 0 {
					b.StopTimer()
					time.Sleep(mode.idle)
					b.StartTimer()
				}
				run()
			}
		})
	}
}
