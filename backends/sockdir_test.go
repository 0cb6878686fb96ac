package backends_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/backends"
)

// TestPluginSocketDir: go-plugin's socket directory for a plugin is made
// in the private runtime directory, not in TMPDIR itself, and a runtime
// directory another user made first fails the plugin's start, saying
// why, with nothing made in it.
func TestPluginSocketDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		squat  bool
		refuse string
	}{
		{"private", false, ""},
		{"squatted", true, "refusing runtime directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_RUNTIME_DIR", "")
			rtDir := filepath.Join(tmp, fmt.Sprintf("computerfs-%d", os.Geteuid()))
			if tc.squat {
				if os.Geteuid() != 0 {
					t.Skip("needs root, to make a directory of another user")
				}
				if err := os.Mkdir(rtDir, 0o777); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(rtDir, 65534, 65534); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(rtDir, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarness(t, []string{pluginDir(t, "test")}, nil)
			_, out, _, err := h.exec(t, &backends.Request{Backend: "test", Argv: []string{"procenv"}})
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), rtDir) {
					t.Fatalf("exec with a squatted runtime directory: %v, want %q about %s", err, tc.refuse, rtDir)
				}
				if ents, _ := os.ReadDir(rtDir); len(ents) != 0 {
					t.Errorf("made %v in the squatted directory", ents)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var dir string
			for _, kv := range strings.Split(out, "\n") {
				if v, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
					dir = v
				}
			}
			if filepath.Dir(dir) != rtDir {
				t.Fatalf("the plugin's socket directory is %q, want one in %s", dir, rtDir)
			}
			if fi, err := os.Lstat(rtDir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("runtime directory: %v %v, want mode 0700", fi, err)
			}
			h.rt.Close()
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("the plugin's socket directory is still there after Close: %v", err)
			}
		})
	}
}
