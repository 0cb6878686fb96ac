package backends_test

import (
	"context"
	"errors"
	iofs "io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/workspace"
)

func writeWS(t *testing.T, ws *workspace.WS, p, data string) {
	t.Helper()
	if _, err := ws.WriteFile(context.Background(), p, []byte(data), workspace.WriteOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
}

func readWS(ws *workspace.WS, p string) (string, error) {
	b, _, err := ws.ReadFile(context.Background(), p, 0)
	return string(b), err
}

func changed(res *backends.Result, p string) bool {
	for _, c := range res.Changes {
		if c.Path == p || c.NewPath == p {
			return true
		}
	}
	return false
}

func TestHostFS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{pluginDir(t, "test")}, nil)
	writeWS(t, h.ws, "/dir/hello.txt", "hello from the workspace\n")

	tests := []struct {
		name      string
		req       backends.Request
		status    int
		stdout    string
		stderrHas string
	}{
		{name: "read", req: backends.Request{Argv: []string{"read", "/dir/hello.txt"}}, stdout: "hello from the workspace\n"},
		{name: "read relative to cwd", req: backends.Request{Argv: []string{"read", "hello.txt"}, Cwd: "/dir"}, stdout: "hello from the workspace\n"},
		{name: "read missing", req: backends.Request{Argv: []string{"read", "/nope"}}, status: 1, stderrHas: "no such file"},
		{name: "bad token", req: backends.Request{Argv: []string{"read-badtoken", "/dir/hello.txt"}}, status: 1, stderrHas: "unknown or expired exec token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Backend = "test"
			res, out, errOut, err := h.exec(t, &req)
			if err != nil {
				t.Fatal(err)
			}
			if got := backends.ExitStatus(res.Exit); got != tc.status {
				t.Errorf("exit %d (%v), stderr %q; want %d", got, res.Exit, errOut, tc.status)
			}
			if out != tc.stdout {
				t.Errorf("stdout %q, want %q", out, tc.stdout)
			}
			if !strings.Contains(errOut, tc.stderrHas) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.stderrHas)
			}
		})
	}
	if t.Failed() {
		return
	}

	t.Run("bad token is PermissionDenied", func(t *testing.T) {
		_, _, errOut, _ := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"read-badtoken", "/dir/hello.txt"}})
		if !strings.Contains(errOut, "PermissionDenied") {
			t.Errorf("stderr %q: want a PermissionDenied status", errOut)
		}
	})

	t.Run("write", func(t *testing.T) {
		res, _, errOut, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/x", "data"}})
		if err != nil {
			t.Fatal(err)
		}
		if backends.ExitStatus(res.Exit) != 0 {
			t.Fatalf("write: %v, stderr %q", res.Exit, errOut)
		}
		if got, err := readWS(h.ws, "/x"); err != nil || got != "data" {
			t.Errorf("/x = %q, %v", got, err)
		}
		if !changed(res, "/x") {
			t.Errorf("changes %+v do not list /x", res.Changes)
		}
		for _, c := range res.Changes {
			if strings.HasPrefix(c.Path, "/dir") {
				t.Errorf("a change from before the exec is listed: %+v", c)
			}
		}
		// And the plugin reads back what it wrote.
		_, out, _, _ := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"read", "/x"}})
		if out != "data" {
			t.Errorf("read back %q", out)
		}
	})

	t.Run("write into a missing directory", func(t *testing.T) {
		res, _, errOut, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/no/such/dir/f", "data"}})
		if err != nil {
			t.Fatal(err)
		}
		if backends.ExitStatus(res.Exit) != 1 || !strings.Contains(errOut, "no such file") {
			t.Errorf("exit %v, stderr %q", res.Exit, errOut)
		}
	})
}

func TestHostFSReadOnly(t *testing.T) {
	t.Parallel()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"test": {ReadOnly: true}}}
	h := newHarness(t, []string{pluginDir(t, "test", "other")}, func(o *backends.Options) { o.Policy = pol })
	writeWS(t, h.ws, "/f", "content")

	res, _, errOut, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/x", "data"}})
	if err != nil {
		t.Fatal(err)
	}
	if backends.ExitStatus(res.Exit) != 1 || !strings.Contains(errOut, "read-only") {
		t.Errorf("write under a read-only policy: exit %v, stderr %q", res.Exit, errOut)
	}
	if _, err := readWS(h.ws, "/x"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("/x after a refused write: %v", err)
	}
	if len(res.Changes) != 0 {
		t.Errorf("changes after a refused write: %+v", res.Changes)
	}
	// Overwriting is refused too, and reading is fine.
	res, _, _, _ = h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/f", "new"}})
	if backends.ExitStatus(res.Exit) != 1 {
		t.Errorf("overwrite under a read-only policy: %v", res.Exit)
	}
	if got, _ := readWS(h.ws, "/f"); got != "content" {
		t.Errorf("/f = %q", got)
	}
	_, out, _, _ := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"read", "/f"}})
	if out != "content" {
		t.Errorf("read under a read-only policy: %q", out)
	}
	// Another backend without the policy may write.
	res, _, _, _ = h.exec(t, &backends.Request{Backend: "other", Argv: []string{"write", "/y", "ok"}})
	if backends.ExitStatus(res.Exit) != 0 {
		t.Errorf("write on a backend without the policy: %v", res.Exit)
	}
}

func TestHostFSRoot(t *testing.T) {
	t.Parallel()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"test": {Root: "/sub"}}}
	h := newHarness(t, []string{pluginDir(t, "test")}, func(o *backends.Options) { o.Policy = pol })
	writeWS(t, h.ws, "/sub/f", "inside")
	writeWS(t, h.ws, "/sub/dir/g", "deeper")
	writeWS(t, h.ws, "/outside", "secret")

	for _, tc := range []struct {
		argv      []string
		cwd       string
		status    int
		stdout    string
		stderrHas string
	}{
		{argv: []string{"read", "/f"}, stdout: "inside"},
		{argv: []string{"read", "g"}, cwd: "/dir", stdout: "deeper"},
		{argv: []string{"read", "../f"}, cwd: "/dir", stdout: "inside"},
		// HostFS cleans a relative path against the cwd: ../outside is
		// /outside of the view, that is /sub/outside.
		{argv: []string{"read", "../outside"}, status: 1, stderrHas: "no such file"},
		{argv: []string{"read", "../../outside"}, cwd: "/dir", status: 1, stderrHas: "no such file"},
		{argv: []string{"read", "/../outside"}, status: 1, stderrHas: "escapes"},
		{argv: []string{"read", "/dir/../../outside"}, status: 1, stderrHas: "escapes"},
		{argv: []string{"read", "/sub/f"}, status: 1, stderrHas: "no such file"}, // the view's paths are relative to its root
		{argv: []string{"read", "/outside"}, status: 1, stderrHas: "no such file"},
	} {
		t.Run(strings.Join(tc.argv, " ")+" in "+tc.cwd, func(t *testing.T) {
			res, out, errOut, err := h.exec(t, &backends.Request{Backend: "test", Argv: tc.argv, Cwd: tc.cwd})
			if err != nil {
				t.Fatal(err)
			}
			if backends.ExitStatus(res.Exit) != tc.status || out != tc.stdout {
				t.Errorf("exit %v, stdout %q, stderr %q; want %d, %q", res.Exit, out, errOut, tc.status, tc.stdout)
			}
			if !strings.Contains(errOut, tc.stderrHas) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.stderrHas)
			}
			if strings.Contains(out, "secret") {
				t.Errorf("escaped the policy root: %q", out)
			}
		})
	}

	res, _, errOut, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", "/new", "x"}})
	if err != nil || backends.ExitStatus(res.Exit) != 0 {
		t.Fatalf("write: %v %v %q", res.Exit, err, errOut)
	}
	if got, err := readWS(h.ws, "/sub/new"); err != nil || got != "x" {
		t.Errorf("/sub/new = %q, %v", got, err)
	}
	if _, err := readWS(h.ws, "/new"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("/new outside the root: %v", err)
	}
	if !changed(res, "/sub/new") {
		t.Errorf("changes %+v do not list /sub/new", res.Changes)
	}
	for _, p := range []string{"../escape", "/../escape"} {
		res, _, errOut, _ := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"write", p, "x"}})
		if backends.ExitStatus(res.Exit) != 1 || !strings.Contains(errOut, "escapes") {
			t.Errorf("write %s: exit %v, stderr %q; want an escape error", p, res.Exit, errOut)
		}
		if _, err := readWS(h.ws, "/escape"); err == nil {
			t.Errorf("a write to %s escaped the policy root", p)
		}
	}
}

// A policy root that does not exist fails the exec, and says why.
func TestHostFSRootMissing(t *testing.T) {
	t.Parallel()
	pol := backends.Policy{Backends: map[string]backends.BackendPolicy{"test": {Root: "/missing"}}}
	h := newHarness(t, []string{pluginDir(t, "test")}, func(o *backends.Options) { o.Policy = pol })
	_, _, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"echo"}})
	if err == nil || !strings.Contains(err.Error(), "policy root /missing") {
		t.Errorf("exec with a missing policy root: %v", err)
	}
}
