package bench

import (
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

// BenchmarkJSExec times one exec round trip on a warm js plugin: the
// request to the runtime, a fresh QuickJS VM running a trivial module
// (`export default (i) => i.n * 2`) with structured input, and its result
// and exit back. The target is under 10 ms.
func BenchmarkJSExec(b *testing.B) {
	dir := b.TempDir()
	plugins := filepath.Join(dir, "plugins")
	out, err := exec.Command("go", "build", "-o", filepath.Join(plugins, "computerfs-plugin-js"), "../cmd/plugin-js").CombinedOutput()
	if err != nil {
		b.Fatalf("build the js plugin: %v\n%s", err, out)
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
		res, err := rt.Exec(ctx, &backends.Request{Backend: "js", Argv: []string{"export default (i) => i.n * 2"}, Input: []byte(`{"n":3}`)}, io.Discard, io.Discard)
		if err != nil || backends.ExitStatus(res.Exit) != 0 || string(res.Result) != "6" {
			b.Fatalf("exec: %v, %+v, %s", err, res, res.Result)
		}
	}
	run() // start the plugin
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}
