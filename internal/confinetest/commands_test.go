package confinetest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
)

// TestShellDenyCommands: the shell refuses a command its policy denies
// (exit 126), though it is one the shell has, and nothing of it is done
// (checked on the workspace); the verdict is in the audit log.
func TestShellDenyCommands(t *testing.T) {
	base := t.TempDir()
	f, err := fs.Open(filepath.Join(base, "ws.cfs"), fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws := workspace.New(f, workspace.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := ws.WriteFile(ctx, "/keep", []byte("x"), workspace.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"shell": {DenyCommands: []string{"rm"}}}}
	rt, err := backends.New(backends.Options{Dirs: []string{pluginDir}, WS: ws, Owner: filepath.Join(base, "ws.cfs"), Policy: pol,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var stdout, stderr bytes.Buffer
	res, err := rt.Exec(ctx, &backends.Request{Backend: "shell", Argv: []string{"echo before; rm /keep; echo after"}}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "rm: command not allowed by the backend's policy") || stdout.String() != "before\nafter\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", backends.ExitStatus(res.Exit), stdout.String(), stderr.String())
	}
	if _, err := ws.Stat(ctx, "/keep"); err != nil {
		t.Errorf("/keep after a denied rm: %v", err)
	}
	recs, err := ws.AuditRecords(ctx, audit.Query{Denied: true})
	if err != nil || len(recs) != 1 || recs[0].Rule != "deny_commands" || !strings.HasSuffix(recs[0].Detail, ": rm") {
		t.Fatalf("%+v %v", recs, err)
	}
}
