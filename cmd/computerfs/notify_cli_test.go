package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotify plays systemd's side of Type=notify with a real unixgram
// socket as $NOTIFY_SOCKET (no systemd here): the daemon must say
// READY=1, with its pid, once its mount (or control socket) is live, and
// STOPPING=1 when SIGTERM starts its shutdown; then exit 0 with the store
// clean. "unit" runs the ExecStart of contrib/systemd/computerfs@.service,
// its ${VARS} expanded as systemd does, the store and mountpoint set as
// `systemctl edit` would.
func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mount    bool
		abstract bool // an @name socket, in the abstract namespace
		unit     bool
	}{
		{name: "serve"},
		{name: "serve, abstract socket", abstract: true},
		{name: "mount", mount: true},
		{name: "unit", mount: true, unit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mount {
				needFUSE(t)
			}
			home, ws, mnt := tempWorkspace(t)
			mustCLI(t, home, "init", ws)
			sockPath := filepath.Join(t.TempDir(), "notify.sock")
			if tc.abstract {
				sockPath = "@computerfs-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			}
			sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer sock.Close()
			args := []string{"serve", ws}
			if tc.mount {
				args = []string{"mount", ws, mnt}
			}
			env := []string{"COMPUTERFS_HOME=" + home, "NOTIFY_SOCKET=" + sockPath}
			if tc.unit {
				args, env = unitExecStart(t, "work", map[string]string{"WORKSPACE": ws, "MOUNTPOINT": mnt, "COMPUTERFS_HOME": home})
				env = append(env, "NOTIFY_SOCKET="+sockPath)
			}
			cmd := exec.Command(cfsBin, args...)
			cmd.Env = append(os.Environ(), env...)
			out := newLineWriter("")
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			// Plugins run in process groups of their own: a daemon that is
			// killed leaves them holding its output for a while.
			cmd.WaitDelay = 5 * time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{}) // closed once waitErr is set
			var waitErr error
			go func() {
				waitErr = cmd.Wait()
				close(exited)
			}()
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-exited
				}
				detach(t, mnt)
			})

			ready := readDatagram(t, sock, out)
			if !strings.Contains("\n"+ready+"\n", "\nREADY=1\n") || !strings.Contains(ready, "MAINPID="+strconv.Itoa(cmd.Process.Pid)+"\n") {
				t.Fatalf("first message %q, want READY=1 and MAINPID=%d\n%s", ready, cmd.Process.Pid, out)
			}
			// Ready means live, at once.
			if tc.mount && !isMounted(mnt) {
				t.Errorf("READY=1 before %s is mounted", mnt)
			}
			if _, err := os.Stat(ws + ".sock"); err != nil {
				t.Errorf("READY=1 before the control socket is there: %v", err)
			}
			mustCLI(t, home, "fs", "write", "-w", ws, "/ready")

			cmd.Process.Signal(syscall.SIGTERM)
			if stopping := readDatagram(t, sock, out); !strings.HasPrefix(stopping, "STOPPING=1\n") {
				t.Errorf("after SIGTERM: %q, want STOPPING=1", stopping)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Fatalf("daemon exited with %v after SIGTERM\n%s", waitErr, out)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("daemon still running 30s after SIGTERM\n%s", out)
			}
			if tc.mount && isMounted(mnt) {
				t.Errorf("%s still mounted after the daemon exited", mnt)
			}
			fsckClean(t, home, ws)
		})
	}
}

// readDatagram waits (30 s at most) for one message on sock.
func readDatagram(t *testing.T, sock *net.UnixConn, out *lineWriter) string {
	t.Helper()
	sock.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	n, err := sock.Read(buf)
	if err != nil {
		t.Fatalf("no message on NOTIFY_SOCKET: %v\n%s", err, out)
	}
	return string(buf[:n])
}

// unitExecStart reads contrib/systemd/computerfs@.service and returns its
// ExecStart's arguments after the program, for instance name, and the
// environment it sets: its Environment= lines, then set over them, with
// %i, ${VAR} and $VAR (a word each, split on spaces) expanded as systemd
// does. It checks the unit is Type=notify and runs computerfs in the
// foreground.
func unitExecStart(t *testing.T, name string, set map[string]string) ([]string, []string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "contrib", "systemd", "computerfs@.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	var order []string
	var exec, typ string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.ReplaceAll(line, "%i", name)
		key, val, _ := strings.Cut(line, "=")
		switch key {
		case "Environment":
			k, v, _ := strings.Cut(val, "=")
			if _, ok := vars[k]; !ok {
				order = append(order, k)
			}
			vars[k] = v
		case "ExecStart":
			exec = val
		case "Type":
			typ = val
		}
	}
	if typ != "notify" {
		t.Errorf("the unit is Type=%s, want notify", typ)
	}
	if vars["WORKSPACE"] != "/var/lib/computerfs/"+name+".cfs" || vars["MOUNTPOINT"] != "/mnt/computerfs/"+name {
		t.Errorf("the unit's defaults: WORKSPACE=%s MOUNTPOINT=%s", vars["WORKSPACE"], vars["MOUNTPOINT"])
	}
	for k, v := range set {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	var args []string
	for _, w := range strings.Fields(exec) {
		switch {
		case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
			args = append(args, vars[w[2:len(w)-1]])
		case strings.HasPrefix(w, "$"):
			args = append(args, strings.Fields(vars[w[1:]])...)
		default:
			args = append(args, w)
		}
	}
	if len(args) < 2 || filepath.Base(args[0]) != "computerfs" || args[1] != "mount" {
		t.Fatalf("the unit's ExecStart: %q, want computerfs mount ...", exec)
	}
	for _, a := range args {
		if a == "--daemon" || a == "--create" {
			t.Errorf("the unit's ExecStart has %s: it must stay in the foreground, and never create a store", a)
		}
	}
	var env []string
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return args[1:], env
}

// TestNotifier: the environment is taken (the backends do not inherit
// it), no socket sends nothing, and a bad one is an error saying which.
func TestNotifier(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		addr, wantErr string
	}{
		{addr: ""},
		{addr: "relative.sock", wantErr: `NOTIFY_SOCKET="relative.sock": want an absolute socket path or an @abstract name`},
		{addr: "vsock:2:1234", wantErr: "want an absolute socket path"},
		{addr: filepath.Join(dir, "missing.sock"), wantErr: "notify the service manager on " + filepath.Join(dir, "missing.sock")},
	} {
		t.Setenv(notifySocketEnv, tc.addr)
		n := newNotifier()
		if v, ok := os.LookupEnv(notifySocketEnv); ok {
			t.Errorf("%s=%q still set after newNotifier", notifySocketEnv, v)
		}
		err := n.notify("READY=1")
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("NOTIFY_SOCKET=%q: %v, want %q", tc.addr, err, tc.wantErr)
		}
	}
}
