package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// BenchmarkShellExecEcho times one exec round trip on a warm shell
// plugin: the request to the runtime, the plugin's interpreter running
// `echo hi`, its output and exit back. The target is under 5 ms.
func BenchmarkShellExecEcho(b *testing.B) {
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
		res, err := rt.Exec(ctx, &backends.Request{Backend: "shell", Argv: []string{"echo hi"}}, &stdout, io.Discard)
		if err != nil || backends.ExitStatus(res.Exit) != 0 || stdout.String() != "hi\n" {
			b.Fatalf("exec: %v, %+v, %q", err, res, stdout.String())
		}
	}
	run() // start the plugin
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}
