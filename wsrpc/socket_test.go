package wsrpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/internal/confinetest"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// nobody is the other user the squatters run as.
const nobody = 65534

// needRoot skips unless the test can make files of another user.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make files of another user")
	}
}

// longStore is a store path whose socket beside it would be too long, so
// that its socket goes to the runtime directory.
func longStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 110))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "ws.cfs")
}

// listen serves a fresh workspace at store on its control socket.
func listen(t *testing.T, store string) (*wsrpc.ControlServer, error) {
	t.Helper()
	f := apitest.OpenFS(t, store, 0)
	ws := workspace.New(f, workspace.Options{})
	cs, err := wsrpc.Listen(store, wsrpc.NewServer(func(context.Context) (*workspace.WS, error) { return ws, nil }), apitest.Logger(t))
	if err == nil {
		t.Cleanup(cs.Close)
	}
	return cs, err
}

// tree lists what is under dir (following nothing), with owners.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		out = append(out, fmt.Sprintf("%s %s %d", p, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid))
		return nil
	})
	return out
}

// TestRuntimeDirSquatted: a runtime directory that another user made
// first, or that others can write, or that is not a directory of its
// own, is refused by the daemon and by the client, which say which
// directory, whose, its mode and why, and make nothing in it.
func TestRuntimeDirSquatted(t *testing.T) {
	needRoot(t)
	me := os.Geteuid()
	for _, tc := range []struct {
		name string
		// make puts the squatter's file at dir; it returns the directories
		// whose content must stay as it was.
		make func(t *testing.T, dir string) []string
		want []string // in both errors, besides the directory
	}{
		{"nobody's, 0777", func(t *testing.T, dir string) []string {
			mkdirAs(t, dir, nobody, 0o777)
			return []string{dir}
		}, []string{fmt.Sprintf("owner uid %d", nobody), "drwxrwxrwx (0777)", fmt.Sprintf("not owned by uid %d", me)}},
		{"nobody's, 0755", func(t *testing.T, dir string) []string {
			mkdirAs(t, dir, nobody, 0o755)
			return []string{dir}
		}, []string{fmt.Sprintf("owner uid %d", nobody), "(0755)", "not owned by uid"}},
		{"nobody's, 0700", func(t *testing.T, dir string) []string {
			mkdirAs(t, dir, nobody, 0o700)
			return []string{dir}
		}, []string{fmt.Sprintf("owner uid %d", nobody), "(0700)", "not owned by uid"}},
		{"ours, 0777", func(t *testing.T, dir string) []string {
			mkdirAs(t, dir, me, 0o777)
			return []string{dir}
		}, []string{fmt.Sprintf("owner uid %d", me), "(0777)", "group or others have access"}},
		{"ours, 0750", func(t *testing.T, dir string) []string {
			mkdirAs(t, dir, me, 0o750)
			return []string{dir}
		}, []string{"(0750)", "want mode 0700"}},
		{"symlink to nobody's directory", func(t *testing.T, dir string) []string {
			target := filepath.Join(t.TempDir(), "elsewhere")
			mkdirAs(t, target, nobody, 0o777)
			symlinkAs(t, target, dir, nobody)
			return []string{target}
		}, []string{"symlink (to ", "elsewhere)", fmt.Sprintf("owner uid %d", nobody)}},
		{"symlink to a private directory of ours", func(t *testing.T, dir string) []string {
			target := filepath.Join(t.TempDir(), "elsewhere")
			mkdirAs(t, target, me, 0o700)
			symlinkAs(t, target, dir, nobody)
			return []string{target}
		}, []string{"symlink (to "}},
		{"a regular file", func(t *testing.T, dir string) []string {
			if err := os.WriteFile(dir, []byte("squat"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return nil
		}, []string{"not a directory", fmt.Sprintf("owner uid %d", nobody)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_RUNTIME_DIR", "")
			dir := filepath.Join(tmp, fmt.Sprintf("computerfs-%d", me))
			keep := tc.make(t, dir)
			before := map[string][]string{}
			for _, d := range keep {
				before[d] = tree(t, d)
			}
			store := longStore(t)
			want := append([]string{"refusing runtime directory " + dir + " ("}, tc.want...)

			_, err := listen(t, store)
			checkRefusal(t, "Listen", err, dir, want)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, err = wsrpc.Dial(ctx, store)
			checkRefusal(t, "Dial", err, dir, want)
			if errors.Is(err, wsrpc.ErrNoDaemon) {
				t.Errorf("Dial: %v is ErrNoDaemon: the caller would go on without the daemon", err)
			}
			_, err = wsrpc.SocketPath(store)
			checkRefusal(t, "SocketPath", err, dir, want)

			for _, d := range keep {
				if after := tree(t, d); !slices.Equal(after, before[d]) {
					t.Errorf("the squatted directory changed:\nbefore %q\nafter  %q", before[d], after)
				}
			}
			if fi, err := os.Lstat(dir); err == nil && fi.Mode().IsRegular() {
				if data, _ := os.ReadFile(dir); string(data) != "squat" {
					t.Errorf("the squatted file now holds %q", data)
				}
			}
		})
	}
}

func checkRefusal(t *testing.T, what string, err error, dir string, want []string) {
	t.Helper()
	var ue *wsrpc.UnsafeDirError
	if !errors.As(err, &ue) {
		t.Errorf("%s: %v, want an UnsafeDirError", what, err)
		return
	}
	if ue.Dir != dir {
		t.Errorf("%s: refuses %s, want %s", what, ue.Dir, dir)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

func symlinkAs(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeDirParentOpen: a TMPDIR that others can write and that is
// not sticky is refused before anything is made in it.
func TestRuntimeDirParentOpen(t *testing.T) {
	needRoot(t)
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	store := longStore(t)
	_, err := listen(t, store)
	dir := filepath.Join(tmp, fmt.Sprintf("computerfs-%d", os.Geteuid()))
	checkRefusal(t, "Listen", err, dir, []string{"(not made yet)", "its parent " + tmp + " (owner uid 0, mode drwxrwxrwx)", "not sticky"})
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("Listen made %v in a parent others can write", ents)
	}
	// Sticky, as /tmp is, it is fine.
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := listen(t, longStore(t)); err != nil {
		t.Fatalf("Listen in a sticky TMPDIR: %v", err)
	}
}

// TestRuntimeDirChoice: the runtime directory is $XDG_RUNTIME_DIR/computerfs
// when XDG_RUNTIME_DIR is usable, else computerfs-EUID in TMPDIR, made
// 0700; the daemon and the client agree on it and talk there.
func TestRuntimeDirChoice(t *testing.T) {
	me := os.Geteuid()
	for _, tc := range []struct {
		name string
		xdg  func(t *testing.T) string // XDG_RUNTIME_DIR
		inX  bool                      // whether the socket goes under it
	}{
		{"no XDG_RUNTIME_DIR", func(t *testing.T) string { return "" }, false},
		{"XDG_RUNTIME_DIR of ours", func(t *testing.T) string { return t.TempDir() }, true},
		{"relative XDG_RUNTIME_DIR", func(t *testing.T) string { return "run/user" }, false},
		{"missing XDG_RUNTIME_DIR", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, false},
		{"XDG_RUNTIME_DIR others can write", func(t *testing.T) string {
			d := t.TempDir()
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
			return d
		}, false},
		{"XDG_RUNTIME_DIR of nobody", func(t *testing.T) string {
			needRoot(t)
			d := t.TempDir()
			if err := os.Chown(d, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return d
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			xdg := tc.xdg(t)
			t.Setenv("XDG_RUNTIME_DIR", xdg)
			want := filepath.Join(tmp, fmt.Sprintf("computerfs-%d", me))
			if tc.inX {
				want = filepath.Join(xdg, "computerfs")
			}
			if got := wsrpc.RuntimeDirPath(); got != want {
				t.Fatalf("RuntimeDirPath() = %s, want %s", got, want)
			}
			store := longStore(t)
			cs, err := listen(t, store)
			if err != nil {
				t.Fatalf("Listen: %v", err)
			}
			if filepath.Dir(cs.Path()) != want {
				t.Errorf("socket at %s, want it in %s", cs.Path(), want)
			}
			fi, err := os.Lstat(want)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("runtime directory %s: %v %v, want a 0700 directory", want, fi, err)
			}
			if p, err := wsrpc.SocketPath(store); err != nil || p != cs.Path() {
				t.Errorf("SocketPath = %s, %v; want %s", p, err, cs.Path())
			}
			c := dial(t, store)
			if _, err := c.Stat(context.Background(), "/"); err != nil {
				t.Errorf("stat through the socket: %v", err)
			}
		})
	}
}

// TestDialUntrustedSocket: the client talks only to a socket that this
// user or root made and serves; another one is refused (not taken for a
// missing daemon) whatever the directory it is in.
func TestDialUntrustedSocket(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, sock string)
		want string
	}{
		{"a socket of nobody's", func(t *testing.T, sock string) {
			lis, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lis.Close() })
			if err := os.Chown(sock, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("it belongs to uid %d", nobody)},
		{"a socket nobody serves", func(t *testing.T, sock string) {
			listenAs(t, nobody, sock)
		}, fmt.Sprintf("it is served by uid %d", nobody)},
		{"a regular file", func(t *testing.T, sock string) {
			if err := os.WriteFile(sock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a socket"},
		{"a symlink to a live socket of ours", func(t *testing.T, sock string) {
			real := filepath.Join(t.TempDir(), "s")
			lis, err := net.Listen("unix", real)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lis.Close() })
			if err := os.Symlink(real, sock); err != nil {
				t.Fatal(err)
			}
		}, "not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "ws.cfs")
			sock, err := wsrpc.SocketPath(store)
			if err != nil {
				t.Fatal(err)
			}
			tc.make(t, sock)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, closeFn, err := wsrpc.Dial(ctx, store)
			if err == nil {
				closeFn()
				t.Fatal("Dial talks to it")
			}
			if !errors.Is(err, wsrpc.ErrUntrustedSocket) || errors.Is(err, wsrpc.ErrNoDaemon) {
				t.Errorf("Dial: %v, want ErrUntrustedSocket", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), sock) {
				t.Errorf("Dial: %q does not say %q about %s", err, tc.want, sock)
			}
		})
	}
}

// listenAs has a process of uid listen on a unix socket, then moves the
// socket to sock, owned by root: only the peer's credentials tell.
func listenAs(t *testing.T, uid int, sock string) {
	t.Helper()
	// A copy of the test binary that uid can run, in a directory it can
	// write.
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(dir, "sock")
	mkdirAs(t, sockDir, uid, 0o700)
	tmpSock := filepath.Join(sockDir, "s")
	cmd := exec.Command(bin, "-test.run=^TestHelperListener$")
	cmd.Env = append(os.Environ(), "WSRPC_TEST_LISTEN="+tmpSock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("helper listener as uid %d: %q, %v", uid, line, err)
	}
	go io.Copy(io.Discard, out)
	if err := os.Chown(tmpSock, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmpSock, sock); err != nil {
		t.Fatal(err)
	}
}

// TestHelperListener is listenAs's other process, not a test.
func TestHelperListener(t *testing.T) {
	path := os.Getenv("WSRPC_TEST_LISTEN")
	if path == "" {
		t.Skip("a helper process of TestDialUntrustedSocket")
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	os.Chmod(path, 0o777)
	fmt.Println("listening")
	for {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		go io.Copy(io.Discard, c)
	}
}

func mkdirAs(t *testing.T, dir string, uid int, mode os.FileMode) {
	t.Helper()
	if err := confinetest.MkdirOwned(dir, uid, mode); err != nil {
		t.Fatal(err)
	}
}
