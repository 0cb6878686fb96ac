package fusefs_test

// Special files, locks and permissions through the mount: FIFOs, unix
// sockets, flock, POSIX and OFD record locks, and other users under
// allow_other + default_permissions.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/testmount"
	"golang.org/x/sys/unix"
)

// ---------------------------------------------------------------------------
// 7. FIFOs and unix sockets

func TestFIFO(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	fifo := filepath.Join(m.Dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, fifo); st.Mode != unix.S_IFIFO|0o644 || st.Size != 0 {
		t.Fatalf("fifo: mode %o size %d", st.Mode, st.Size)
	}
	want := bytes.Repeat([]byte("through the pipe\n"), 10000) // > the pipe buffer

	t.Run("goroutine writer", func(t *testing.T) {
		// The reader opens non-blocking first, so neither open waits.
		rfd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := os.NewFile(uintptr(rfd), "fifo-r") // pollable: reads wait for data
		defer r.Close()
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := w.Write(want)
			w.Close()
			done <- err
		}()
		r.SetReadDeadline(time.Now().Add(30 * time.Second))
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("write: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("fifo carried %s", diffBytes(got, want))
		}
	})

	t.Run("process writer", func(t *testing.T) {
		if _, err := exec.LookPath("sh"); err != nil {
			t.Skip("sh not in PATH")
		}
		src := filepath.Join(t.TempDir(), "src")
		writeFile(t, src, want)
		cmd := command(t, "sh", "-c", `cat "$1" > "$2"`, "sh", src, fifo)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rfd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := os.NewFile(uintptr(rfd), "fifo-r")
		defer r.Close()
		r.SetReadDeadline(time.Now().Add(30 * time.Second))
		var got []byte
		buf := make([]byte, 64<<10)
		for len(got) < len(want) {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if errors.Is(err, io.EOF) && n == 0 {
				// No writer yet (or any more): wait for one.
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("read: %v", err)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v: %s", err, stderr.Bytes())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("fifo carried %s", diffBytes(got, want))
		}
	})

	// The FIFO stays a FIFO, empty, in the store.
	m = remount(t, m)
	if st := lstat(t, filepath.Join(m.Dir, "fifo")); st.Mode != unix.S_IFIFO|0o644 || st.Size != 0 {
		t.Errorf("fifo after remount: mode %o size %d", st.Mode, st.Size)
	}
}

func TestUnixSocket(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "sock")
	if len(path) >= 108 {
		t.Skipf("socket path %d bytes: too long for sun_path", len(path))
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen in the mount: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	if st := lstat(t, path); st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		t.Errorf("socket: mode %o", st.Mode)
	}
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = c.Write([]byte("echo: " + line))
		}
		served <- err
	}()
	c, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if reply != "echo: hello\n" {
		t.Errorf("reply %q", reply)
	}
	if err := <-served; err != nil {
		t.Errorf("server: %v", err)
	}
	// Another process can connect too (when a client tool is at hand).
	if _, err := exec.LookPath("python3"); err == nil {
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write([]byte("from the server\n"))
				c.Close()
			}
		}()
		out := run(t, command(t, "python3", "-c", `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1]); print(s.recv(100).decode().strip())`, path))
		if strings.TrimSpace(out) != "from the server" {
			t.Errorf("python client got %q", out)
		}
	}
	ln.Close()
	c.Close()
	// Go's listener removes the socket file when closed.
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after close: %v", err)
	}
	// A socket node made with mknod survives a remount.
	if err := unix.Mknod(filepath.Join(m.Dir, "node"), unix.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	m = remount(t, m)
	if st := lstat(t, filepath.Join(m.Dir, "node")); st.Mode != unix.S_IFSOCK|0o600 {
		t.Errorf("socket node after remount: mode %o", st.Mode)
	}
}

// ---------------------------------------------------------------------------
// 8. locks

func TestLocks(t *testing.T) {
	m := testmount.New(t, testmount.Options{})
	path := filepath.Join(m.Dir, "locked")
	writeFile(t, path, make([]byte, 4096))
	open := func() *os.File {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	t.Run("flock", func(t *testing.T) {
		if _, err := exec.LookPath("flock"); err != nil {
			t.Skip("flock (util-linux) not in PATH")
		}
		f := open()
		fd := int(f.Fd())
		try := func(args ...string) int {
			t.Helper()
			code, out := exitCode(t, command(t, "flock", append(args, path, "true")...))
			if code != 0 && code != 1 {
				t.Fatalf("flock %v: exit %d: %s", args, code, out)
			}
			return code
		}
		steps := []struct {
			hold int // our lock: LOCK_EX, LOCK_SH or LOCK_UN
			args []string
			want int // flock's exit: 0 got it, 1 conflict
		}{
			{unix.LOCK_EX, []string{"-n"}, 1},
			{unix.LOCK_EX, []string{"-n", "-s"}, 1},
			{unix.LOCK_SH, []string{"-n", "-s"}, 0},
			{unix.LOCK_SH, []string{"-n"}, 1},
			{unix.LOCK_UN, []string{"-n"}, 0},
		}
		for _, s := range steps {
			if err := unix.Flock(fd, s.hold|unix.LOCK_NB); err != nil {
				t.Fatalf("flock(%d): %v", s.hold, err)
			}
			if got := try(s.args...); got != s.want {
				t.Errorf("holding %d, flock %v exits %d, want %d", s.hold, s.args, got, s.want)
			}
		}
		// A second open file description in this process conflicts too.
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		g := open()
		if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("second description: flock %v, want EWOULDBLOCK", err)
		}
		f.Close() // closing releases the lock
		if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("flock after the holder closed: %v", err)
		}
		g.Close()
	})

	t.Run("posix", func(t *testing.T) {
		f := open()
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 0, Len: 100}
		if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
			t.Fatalf("F_SETLK: %v", err)
		}
		try := func(typ string, start, length int) (int, string) {
			t.Helper()
			code, out := exitCode(t, child(t, "trylock", path, typ, fmt.Sprint(start), fmt.Sprint(length)))
			if code != childOK && code != childConflict {
				t.Fatalf("child: exit %d: %s", code, out)
			}
			return code, out
		}
		cases := []struct {
			typ           string
			start, length int
			want          int
		}{
			{"w", 0, 100, childConflict},
			{"r", 50, 10, childConflict},
			{"w", 99, 1, childConflict},
			{"w", 100, 50, childOK}, // just past our range
			{"r", 200, 0, childOK},  // to EOF, from past our range
		}
		for _, c := range cases {
			code, out := try(c.typ, c.start, c.length)
			if code != c.want {
				t.Errorf("child %s lock [%d,+%d): exit %d, want %d\n%s", c.typ, c.start, c.length, code, c.want, out)
			}
			if c.want == childConflict && !strings.Contains(out, fmt.Sprintf("pid=%d", os.Getpid())) {
				t.Errorf("F_GETLK in the child does not name us (pid %d): %s", os.Getpid(), out)
			}
		}
		// Downgrade to a read lock: readers get in, writers do not.
		lk.Type = unix.F_RDLCK
		if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
			t.Fatal(err)
		}
		if code, out := try("r", 0, 100); code != childOK {
			t.Errorf("read lock under our read lock: exit %d\n%s", code, out)
		}
		if code, out := try("w", 0, 100); code != childConflict {
			t.Errorf("write lock under our read lock: exit %d\n%s", code, out)
		}
		lk.Type = unix.F_UNLCK
		if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
			t.Fatal(err)
		}
		if code, out := try("w", 0, 0); code != childOK {
			t.Errorf("after unlock: exit %d\n%s", code, out)
		}
	})

	t.Run("ofd", func(t *testing.T) {
		f1, f2 := open(), open()
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 0, Len: 10}
		if err := unix.FcntlFlock(f1.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			t.Fatalf("F_OFD_SETLK: %v", err)
		}
		// The same description may take it again (it owns the lock).
		if err := unix.FcntlFlock(f1.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			t.Errorf("F_OFD_SETLK again on the owner: %v", err)
		}
		other := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 5, Len: 10}
		if err := unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &other); !errors.Is(err, unix.EAGAIN) {
			t.Errorf("F_OFD_SETLK on a second fd: %v, want EAGAIN", err)
		}
		probe := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 0, Len: 0}
		if err := unix.FcntlFlock(f2.Fd(), unix.F_OFD_GETLK, &probe); err != nil {
			t.Fatal(err)
		}
		if probe.Type != unix.F_WRLCK || probe.Start != 0 || probe.Len != 10 || probe.Pid != -1 {
			t.Errorf("F_OFD_GETLK: %+v, want a write lock on [0,10) with pid -1", probe)
		}
		// OFD and process-owned locks conflict with each other as well.
		posix := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: 0, Len: 1}
		if err := unix.FcntlFlock(f2.Fd(), unix.F_SETLK, &posix); !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
			t.Errorf("F_SETLK against an OFD lock: %v, want EAGAIN", err)
		}
		outside := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: 10, Len: 10}
		if err := unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &outside); err != nil {
			t.Errorf("F_OFD_SETLK on a free range: %v", err)
		}
		f1.Close() // the lock goes with the description
		if err := unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &other); err != nil {
			t.Errorf("F_OFD_SETLK after the owner closed: %v", err)
		}
	})
}

// ---------------------------------------------------------------------------
// 14. allow_other and default_permissions

// asNobody runs a shell command as uid/gid 65534.
func asNobody(t *testing.T, script string, args ...string) (int, string) {
	t.Helper()
	cmd := command(t, "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false}}
	cmd.Dir = "/"
	return exitCode(t, cmd)
}

func TestAllowOther(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	m := testmount.New(t, testmount.Options{})
	// The test's temporary directories are 0700: let the other user
	// through to the mountpoint.
	for d := filepath.Dir(m.Dir); d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := func(name string) string { return filepath.Join(m.Dir, name) }
	if err := os.WriteFile(p("secret"), []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("public"), []byte("for everyone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("open"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p("open"), 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Mkdir(p("closed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("sticky"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p("sticky"), 0o1777); err != nil { // os.Chmod drops 01000
		t.Fatal(err)
	}
	if err := os.WriteFile(p("sticky/roots"), []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p("sticky/roots"), 0o666); err != nil {
		t.Fatal(err)
	}

	// Set-id files anyone may write: a write or truncation by another
	// user drops the set-id bits (group-executable, so both go).
	for _, name := range []string{"setid-write", "setid-trunc", "setid-otrunc"} {
		writeFile(t, p(name), []byte("data\n"))
		if err := unix.Chmod(p(name), 0o6777); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name   string
		script string
		args   []string
		ok     bool
		output string // expected in the output
	}{
		{"append to a set-id file", `echo more >> "$1"`, []string{p("setid-write")}, true, ""},
		{"truncate a set-id file", `truncate -s 2 "$1"`, []string{p("setid-trunc")}, true, ""},
		{"open a set-id file O_TRUNC", `: > "$1"`, []string{p("setid-otrunc")}, true, ""},
		{"read 0600 root file", `cat "$1"`, []string{p("secret")}, false, "Permission denied"},
		{"read 0644 file", `cat "$1"`, []string{p("public")}, true, "for everyone"},
		{"write 0644 root file", `echo x >> "$1"`, []string{p("public")}, false, "Permission denied"},
		{"create in 0777 dir", `echo mine > "$1/new" && cat "$1/new"`, []string{p("open")}, true, "mine"},
		{"mkdir in 0777 dir", `mkdir "$1/sub"`, []string{p("open")}, true, ""},
		{"create in 0755 root dir", `echo x > "$1/new"`, []string{p("closed")}, false, "Permission denied"},
		{"chmod a root file", `chmod 777 "$1"`, []string{p("public")}, false, "not permitted"},
		{"remove another's file in a sticky dir", `rm -f "$1/roots"`, []string{p("sticky")}, false, "not permitted"},
		{"list the root", `ls "$1"`, []string{m.Dir}, true, "public"},
	}
	for _, c := range cases {
		code, out := asNobody(t, c.script, c.args...)
		if (code == 0) != c.ok {
			t.Errorf("%s: exit %d, want success %v\n%s", c.name, code, c.ok, out)
		}
		if !strings.Contains(out, c.output) {
			t.Errorf("%s: output %q, want it to contain %q", c.name, out, c.output)
		}
	}
	for _, name := range []string{"open/new", "open/sub"} {
		st := lstat(t, p(name))
		if st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s made by 65534 is owned by %d:%d", name, st.Uid, st.Gid)
		}
	}
	for _, c := range []struct {
		name string
		data string
	}{{"setid-write", "data\nmore\n"}, {"setid-trunc", "da"}, {"setid-otrunc", ""}} {
		if st := lstat(t, p(c.name)); st.Mode != unix.S_IFREG|0o777 {
			t.Errorf("%s: mode %o after another user changed it, want %o", c.name, st.Mode, unix.S_IFREG|0o777)
		}
		checkFile(t, p(c.name), []byte(c.data))
	}
	checkFile(t, p("public"), []byte("for everyone\n"))
	checkFile(t, p("sticky/roots"), []byte("x"))
	if _, err := os.Lstat(p("closed/new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("closed/new: %v", err)
	}
	// Ownership of what the other user made is stored.
	m = remount(t, m)
	if st := lstat(t, p("open/new")); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("open/new after remount: owned by %d:%d", st.Uid, st.Gid)
	}
}
