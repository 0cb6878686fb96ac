package containerinit

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets this test binary be the init under test: started with
// CFS_INIT_UNDER_TEST=1, it runs Main instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("CFS_INIT_UNDER_TEST") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// startControlled starts the init in control mode on the host (no
// container: the protocol is the same) and waits for its "ready".
func startControlled(t *testing.T) (*net.UnixConn, *bufio.Reader, *exec.Cmd) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, child := os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "child")
	defer child.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--control", "3")
	cmd.Env = append(os.Environ(), "CFS_INIT_UNDER_TEST=1")
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := fc.(*net.UnixConn)
	t.Cleanup(func() { conn.Close() })
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("no ready from the init: %q %v", line, err)
	}
	conn.SetReadDeadline(time.Time{})
	return conn, r, cmd
}

func TestControlProtocol(t *testing.T) {
	tests := []struct {
		name     string
		cmd      Command
		stdin    string
		signal   int // sent once the command has printed "ready"
		wantOut  string
		wantErr  string // substring of stderr
		wantCode int
	}{
		{name: "output and exit code", cmd: Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, wantOut: "out\n", wantErr: "err", wantCode: 3},
		{name: "stdin", cmd: Command{Argv: []string{"tr", "a-z", "A-Z"}}, stdin: "piped\n", wantOut: "PIPED\n"},
		{name: "directory and environment", cmd: Command{Argv: []string{"sh", "-c", `pwd; echo "$FOO"`}, Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}, Dir: "/"}, wantOut: "/\nbar\n"},
		{name: "only the request's environment", cmd: Command{Argv: []string{"/usr/bin/env"}, Env: []string{"A=1"}}, wantOut: "A=1\n"},
		{name: "command not found", cmd: Command{Argv: []string{"no-such-command-anywhere"}}, wantErr: "command not found", wantCode: 127},
		{name: "signal forwarded", cmd: Command{Argv: []string{"sh", "-c", "echo ready; exec sleep 30"}}, signal: 15, wantOut: "ready\n", wantCode: 128 + 15},
		{name: "signal to the group", cmd: Command{Argv: []string{"sh", "-c", "trap 'echo term; exit 9' TERM; echo ready; sleep 30 & wait"}}, signal: 15, wantOut: "ready\nterm\n", wantCode: 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cmd.Env == nil {
				tc.cmd.Env = []string{"PATH=/usr/bin:/bin"}
			}
			conn, r, _ := startControlled(t)
			inR, inW, _ := os.Pipe()
			outR, outW, _ := os.Pipe()
			errR, errW, _ := os.Pipe()
			line, _ := json.Marshal(tc.cmd)
			if _, _, err := conn.WriteMsgUnix(append(line, '\n'), unix.UnixRights(int(inR.Fd()), int(outW.Fd()), int(errW.Fd())), nil); err != nil {
				t.Fatal(err)
			}
			inR.Close()
			outW.Close()
			errW.Close()
			go func() {
				io.WriteString(inW, tc.stdin)
				inW.Close()
			}()
			stderrc := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(errR)
				stderrc <- string(b)
			}()
			var out strings.Builder
			br := bufio.NewReader(outR)
			if tc.signal != 0 {
				first, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("no ready from the command: %v", err)
				}
				out.WriteString(first)
				time.Sleep(50 * time.Millisecond) // let the trap be set
				if _, err := conn.Write([]byte("signal 15\n")); err != nil {
					t.Fatal(err)
				}
			}
			rest, _ := io.ReadAll(br)
			out.Write(rest)
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			status, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("no exit status: %v", err)
			}
			if want := "exit " + itoa(tc.wantCode) + "\n"; status != want {
				t.Errorf("status %q, want %q", status, want)
			}
			if out.String() != tc.wantOut {
				t.Errorf("stdout %q, want %q", out.String(), tc.wantOut)
			}
			if stderr := <-stderrc; !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.wantErr)
			}
		})
	}
}

// A warm container never used: the plugin closes the socket, the init
// exits 0.
func TestControlUnused(t *testing.T) {
	conn, _, cmd := startControlled(t)
	conn.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the unused init exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unused init did not exit")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestLookPath(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		env       []string
		wantOK    bool
	}{
		{name: "in PATH", cmd: "sh", env: []string{"PATH=/nonexistent:/bin"}, wantOK: true},
		{name: "default PATH", cmd: "sh", env: nil, wantOK: true},
		{name: "absolute", cmd: "/bin/sh", wantOK: true},
		{name: "missing", cmd: "no-such-command-anywhere", env: []string{"PATH=/bin"}},
		{name: "not executable", cmd: "passwd", env: []string{"PATH=/etc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lookPath(tc.cmd, tc.env)
			if (err == nil) != tc.wantOK {
				t.Errorf("lookPath(%q, %v): %v", tc.cmd, tc.env, err)
			}
		})
	}
}

func FuzzParseCommand(f *testing.F) {
	f.Add([]byte(`{"argv":["sh","-c","true"],"env":["PATH=/bin"],"dir":"/workspace"}` + "\nsignal 15\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"argv":["a\u0000b"]}` + "\n"))
	f.Add([]byte("not json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, rest, err := parseCommand(data)
		if err != nil {
			return
		}
		if len(rest) >= len(data) {
			t.Fatalf("rest %d bytes of %d", len(rest), len(data))
		}
		for _, kv := range cmd.Env {
			if !strings.Contains(kv, "=") {
				t.Fatalf("accepted env entry %q", kv)
			}
		}
	})
}
