package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUndoAcrossBackends: an agent's session on a mounted workspace, one
// exec per backend (shell's sed -i, a js module writing files through
// node:fs, a container's build), then undo of each in turn, last first:
// the tree is then the snapshot's again (diff empty), and the mount
// shows it at once. An exec whose file a later one changed is refused,
// naming the file (exit 4), until --force.
func TestUndoAcrossBackends(t *testing.T) {
	needContainers(t)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	installJSPlugin(t, home)
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	readme := "hello, workspace\nhello again\n"
	mainGo := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built\") }\n"
	makeStore(t, home, ws, mnt, map[string][]byte{"proj/README": []byte(readme), "proj/go.mod": []byte("module x\n"), "proj/main.go": []byte(mainGo)})
	startMount(t, home, ws, mnt)
	exec := func(args ...string) result {
		t.Helper()
		// The container's go build runs under its own 3m --timeout; the
		// CLI's one-minute default would cut it first on a loaded machine.
		r, err := runCfsWithin(4*time.Minute, home, "", nil, append([]string{"exec", "-w", ws}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if r.code != 0 {
			t.Fatalf("exec %v: %v", args, r)
		}
		return r
	}
	rootOf := func(r result) string {
		t.Helper()
		_, root, ok := strings.Cut(strings.TrimSpace(r.stdout), ", root ")
		if r.code != 0 || !ok || len(root) != 64 {
			t.Fatalf("snapshot create: %v", r)
		}
		return root
	}
	startRoot := rootOf(cli(t, home, "snapshot", "create", mnt, "start"))
	exec("-b", "shell", "--cwd", "/proj", "--", "sed -i s/hello/bye/ README && echo new > new.txt")
	exec("-b", "js", "--", `import { writeFile, mkdir } from "node:fs/promises";
await mkdir("/proj/gen", { recursive: true });
await writeFile("/proj/gen/a.json", JSON.stringify({ a: 1 }));
await writeFile("/proj/README", "rewritten by js\n");`)
	// A real build in the container: the host's Go toolchain (its
	// userland is bound in), caches in the container's own /tmp.
	gobin := "/usr/local/go/bin"
	if _, err := os.Stat(filepath.Join(gobin, "go")); err != nil {
		t.Fatalf("the test builds with the host's Go in the container: %v", err)
	}
	exec("-b", "container", "--cwd", "/proj", "--timeout", "3m", "--env", "GOCACHE=/tmp/gocache", "--env", "GOPATH=/tmp/gopath", "--env", "GOTOOLCHAIN=local", "--env", "GOFLAGS=-buildvcs=false",
		"--", "export PATH="+gobin+":$PATH; mkdir -p build && go build -o build/app . && ./build/app > build/out && rm go.mod && chmod 600 README")
	checkFile(t, filepath.Join(mnt, "proj/build/out"), []byte("built\n"))
	checkFile(t, filepath.Join(mnt, "proj/README"), []byte("rewritten by js\n"))

	r := cli(t, home, "execs", "-w", mnt, "--json")
	var execs []struct {
		ID       string
		Backend  string
		Undoable bool
		Changed  []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &execs); err != nil || len(execs) != 3 {
		t.Fatalf("execs --json: %v %v", err, r)
	}
	for i, want := range []string{"shell", "js", "container"} {
		if execs[i].Backend != want || !execs[i].Undoable || len(execs[i].Changed) == 0 {
			t.Errorf("exec %d: %+v, want an undoable %s exec", i, execs[i], want)
		}
	}
	// The js exec rewrote the README the shell's sed had changed: undoing
	// the shell's now is refused, naming it.
	r = cli(t, home, "undo", "-w", ws, execs[0].ID)
	if r.code != 4 || !strings.Contains(r.stderr, "/proj/README") {
		t.Errorf("undo of an exec whose file changed since: %v", r)
	}
	for i := 2; i >= 0; i-- {
		r := cli(t, home, "undo", "-w", mnt)
		if r.code != 0 || !strings.Contains(r.stdout, "undid exec "+execs[i].ID) {
			t.Fatalf("undo %d: %v", i, r)
		}
	}
	if r := cli(t, home, "snapshot", "diff", "--json", mnt, "start"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("after undoing every exec the tree differs from the snapshot: %v", r)
	}
	// Root-identical too, at once: every record as it was, and no inode
	// left over. The build made files through the container's mount
	// after the kernel had opened others there (build/app-go-tmp-umask,
	// build/app, build/out): it sends no RELEASE for them, so an open
	// reference taken at their CREATE would keep them, deleted by the
	// undo, as orphans that count in the root (fusefs openCreated).
	if root := rootOf(cli(t, home, "snapshot", "create", mnt, "end")); root != startRoot {
		r := cli(t, home, "fsck", ws)
		t.Errorf("after undoing every exec the root is %s, the snapshot's %s; fsck: %v", root, startRoot, r)
	}
	// Through the mount, at once (the kernel was told).
	checkFile(t, filepath.Join(mnt, "proj/README"), []byte(readme))
	checkFile(t, filepath.Join(mnt, "proj/go.mod"), []byte("module x\n"))
	checkFile(t, filepath.Join(mnt, "proj/main.go"), []byte(mainGo))
	for _, gone := range []string{"proj/build", "proj/gen", "proj/new.txt"} {
		if _, err := os.Stat(filepath.Join(mnt, gone)); !os.IsNotExist(err) {
			t.Errorf("%s after the undo: %v", gone, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(mnt, "proj/README")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("README's mode after the undo: %v %v", fi.Mode(), err)
	}
	if r := cli(t, home, "undo", "-w", mnt); r.code == 0 || !strings.Contains(r.stderr, "nothing to undo") {
		t.Errorf("undo with nothing left: %v", r)
	}
	r = cli(t, home, "execs", "-w", ws)
	if r.code != 0 || strings.Count(r.stdout, "undone") != 3 {
		t.Errorf("execs after the undos: %v", r)
	}
	// --force puts back a file a later change touched.
	exec("-b", "shell", "--", "echo one > /f")
	exec("-b", "shell", "--", "echo two > /f")
	r = cli(t, home, "execs", "-w", ws, "--json", "-n", "2")
	if err := json.Unmarshal([]byte(r.stdout), &execs); err != nil || len(execs) != 2 {
		t.Fatalf("execs -n 2: %v %v", err, r)
	}
	if r := cli(t, home, "undo", "-w", ws, execs[0].ID); r.code != 4 || !strings.Contains(r.stderr, "/f") {
		t.Errorf("undo of the first write: %v", r)
	}
	if r := cli(t, home, "undo", "-w", ws, "--force", execs[0].ID); r.code != 0 {
		t.Errorf("undo --force: %v", r)
	}
	if _, err := os.Stat(filepath.Join(mnt, "f")); !os.IsNotExist(err) {
		t.Errorf("/f after the forced undo of its creation: %v", err)
	}
}
