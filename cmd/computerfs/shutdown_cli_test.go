package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// jsPlugin builds the js plugin once, for the tests that install it.
var jsPlugin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(cfsBin), "js", "computerfs-plugin-js")
	cmd := exec.Command("go", "build", "-o", bin, "../plugin-js")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make builds it
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "build the js plugin: " + e.err.Error() + "\n" + e.out }

// installJSPlugin puts the js plugin in home's plugins directory.
func installJSPlugin(t *testing.T, home string) {
	t.Helper()
	bin, err := jsPlugin()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "computerfs-plugin-js"), data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownAfterExecs: after an exec on every backend (the container
// one keeps a warm container holding the mount in its own mount
// namespace), umount, SIGTERM and SIGINT end the daemon within 5 s, with
// the store closed (fsck opens it at once), the mount gone and no plugin
// or container left. It used to hang: the daemon waited for the kernel
// to end the FUSE connection before it stopped the backends.
func TestShutdownAfterExecs(t *testing.T) {
	needContainers(t)
	for i, stop := range []string{"umount", "SIGTERM", "SIGINT", "SIGINT twice"} {
		t.Run(stop, func(t *testing.T) {
			home, ws, mnt := tempWorkspace(t)
			installContainerPlugin(t, home)
			installJSPlugin(t, home)
			pid := runDaemon(t, home, ws, mnt)
			marker := fmt.Sprintf("29%d.%d", i, os.Getpid()%1000) // sleep's argument
			for _, x := range []struct{ backend, code, want string }{
				{"shell", "echo from shell", "from shell\n"},
				{"js", "console.log('from js')", "from js\n"},
				{"container", "echo from container", "from container\n"},
			} {
				r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", x.backend, "--", x.code)
				if err != nil {
					t.Fatal(err)
				}
				if r.code != 0 || r.stdout != x.want {
					t.Fatalf("exec on %s: %v", x.backend, r)
				}
			}
			// And a container exec still running when the daemon is told
			// to stop.
			running := exec.Command(cfsBin, "exec", "-w", ws, "-b", "container", "--", "exec sleep "+marker)
			running.Env = append(os.Environ(), "COMPUTERFS_HOME="+home)
			if err := running.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				running.Process.Kill()
				running.Wait()
			})
			pluginOfStartedCommand(t, ws, marker)

			start := time.Now()
			switch stop {
			case "umount":
				r, err := runCfsWithin(20*time.Second, home, "", nil, "umount", mnt)
				if err != nil {
					t.Fatal(err)
				}
				if r.code != 0 {
					t.Fatalf("umount: %v", r)
				}
				if r.took > 5*time.Second {
					t.Errorf("umount took %v", r.took)
				}
			case "SIGTERM":
				syscall.Kill(pid, syscall.SIGTERM)
			case "SIGINT":
				syscall.Kill(pid, syscall.SIGINT)
			case "SIGINT twice":
				syscall.Kill(pid, syscall.SIGINT)
				time.Sleep(5 * time.Millisecond)
				syscall.Kill(pid, syscall.SIGINT)
			}
			if !waitGone(pid, 5*time.Second) {
				t.Fatalf("the daemon %d is still running 5s after %s\n%s", pid, stop, daemonLog(ws))
			}
			took := time.Since(start)
			t.Logf("%s: the daemon exited after %v", stop, took.Round(time.Millisecond))
			r, err := runCfsWithin(2*time.Second, home, "", nil, "fsck", ws)
			if err != nil {
				t.Fatalf("fsck right after the daemon exited: %v", err)
			}
			if r.code != 0 || !strings.Contains(r.stdout, "clean") {
				t.Errorf("fsck right after the daemon exited: %v", r)
			}
			if isMounted(mnt) {
				t.Errorf("%s is still mounted", mnt)
			}
			waitNoPlugins(t, ws, 5*time.Second)
			waitNoProcessWithArg(t, marker, "the container's command outlived the daemon")
			if stop != "SIGINT twice" {
				if log := daemonLog(ws); !strings.Contains(log, "workspace closed") {
					t.Errorf("the daemon did not close the workspace:\n%s", log)
				}
			}
		})
	}
}

// daemonLog is what the daemons of workspace ws logged (WS.log).
func daemonLog(ws string) string {
	data, _ := os.ReadFile(ws + ".log")
	return string(data)
}
