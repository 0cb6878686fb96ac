// Package containerinit is the PID 1 of the container backend's
// containers, in the manner of tini. It is its own small package, with no
// dependency beyond the standard library and x/sys, so that the binary
// built from it (cmd/computerfs-container-init) starts in a few
// milliseconds: it runs once per container, on the path of every exec.
// It must not import the rest of computerfs.
package containerinit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Arg, as a binary's first argument, makes it a container's init: the
// container plugin passes it to whatever binary serves as the init (the
// small one built from this package, or the plugin itself).
const Arg = "--computerfs-container-init"

// DefaultPath is the PATH a command gets when its environment has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command is what the plugin sends a warm container's init on its
// control pipe: one JSON line, then "signal N" lines.
type Command struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// forwarded are the signals init passes to the command's process group.
var forwarded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGCONT,
}

// Main is a container's PID 1, in the manner of tini: it asks the
// kernel to kill it when its parent (runc, the plugin's child) dies, so
// that a plugin killed with SIGKILL takes its containers' processes with
// it; it runs argv (after "--") in its own process group, forwards the signals a
// process is sent to stop (a plain `sleep` as PID 1 would ignore
// SIGTERM), reaps orphans, and returns the command's exit code, or
// 128+signal.
//
// With "--proxy SOCKET" first, it forwards ProxyAddr (on the container's
// loopback) to the unix socket SOCKET, the daemon's egress proxy, for
// the container's life.
//
// With the arguments "--control N" it is a warm container's init: it
// reads the command (argv, environment, directory) as one JSON line from
// fd N, then "signal S" lines to forward.
func Main(argv []string) int {
	// Before anything else: if runc dies from here on, so do we, and with
	// PID 1 the whole namespace.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "computerfs init: parent-death signal: %v\n", err)
		return 126
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)

	if len(argv) >= 2 && argv[0] == "--proxy" {
		if err := forwardProxy(argv[1]); err != nil {
			fmt.Fprintf(os.Stderr, "computerfs init: egress proxy: %v\n", err)
			return 126
		}
		argv = argv[2:]
	}

	if len(argv) == 2 && argv[0] == "--control" {
		fd, err := strconv.Atoi(argv[1])
		if err != nil {
			fmt.Fprintf(os.Stderr, "computerfs init: bad control socket %q\n", argv[1])
			return 126
		}
		return controlled(fd, sigs)
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	pid, code := start(Command{Argv: argv, Env: os.Environ()}, [3]int{0, 1, 2})
	if pid == 0 {
		return code
	}
	return wait(pid, sigs)
}

// controlled is a warm container's init: it says "ready", gets the command and its
// stdin, stdout and stderr on the control socket (SCM_RIGHTS: they never
// pass through runc, so the output ends when the command does, not when
// runc has torn the container down), forwards "signal N" lines, and
// reports "exit N" there before it exits.
func controlled(fd int, sigs <-chan os.Signal) int {
	syscall.CloseOnExec(fd) // not the command's
	// The container is up: the plugin may lend it to an exec.
	if _, err := unix.Write(fd, []byte("ready\n")); err != nil {
		return 0
	}
	cmd, stdio, rest, err := receive(fd)
	if err != nil {
		// The plugin let the warm container go unused, or died.
		return 0
	}
	pid, code := start(cmd, stdio)
	for _, f := range stdio {
		syscall.Close(f)
	}
	if pid != 0 {
		go forwardSignals(fd, rest, pid)
		code = wait(pid, sigs)
	}
	unix.Write(fd, fmt.Appendf(nil, "exit %d\n", code))
	return code
}

// receive reads the command's line and the three descriptors sent with it.
func receive(fd int) (cmd Command, stdio [3]int, rest []byte, err error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return cmd, stdio, nil, fmt.Errorf("no command: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return cmd, stdio, nil, fmt.Errorf("no descriptors: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 3 {
		return cmd, stdio, nil, fmt.Errorf("want 3 descriptors, got %d: %v", len(fds), err)
	}
	copy(stdio[:], fds)
	data := buf[:n]
	for bytes.IndexByte(data, '\n') < 0 {
		m, err := unix.Read(fd, buf)
		if err != nil || m <= 0 {
			return cmd, stdio, nil, fmt.Errorf("command cut short: %v", err)
		}
		data = append(data, buf[:m]...)
	}
	cmd, rest, err = parseCommand(data)
	return cmd, stdio, rest, err
}

// parseCommand decodes the command's line from the start of data and
// returns what follows it.
func parseCommand(data []byte) (Command, []byte, error) {
	var cmd Command
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return cmd, nil, errors.New("no end of line after the command")
	}
	if err := json.Unmarshal(line, &cmd); err != nil {
		return cmd, nil, fmt.Errorf("bad command: %w", err)
	}
	for _, kv := range cmd.Env {
		if !strings.Contains(kv, "=") || strings.IndexByte(kv, 0) >= 0 {
			return cmd, nil, fmt.Errorf("bad environment entry %q", kv)
		}
	}
	for _, a := range cmd.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return cmd, nil, errors.New("a NUL byte in an argument")
		}
	}
	return cmd, rest, nil
}

// forwardSignals passes "signal N" lines to the command's process group
// until the plugin closes the socket.
func forwardSignals(fd int, rest []byte, pid int) {
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(rest), os.NewFile(uintptr(fd), "control")))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		var n int
		if _, err := fmt.Sscanf(line, "signal %d", &n); err == nil && n > 0 {
			syscall.Kill(-pid, syscall.Signal(n))
		}
	}
}

// start runs the command in its own process group with stdio as its
// descriptors 0, 1 and 2. It returns its pid, or 0 and the exit code of
// a command that could not start (having said why on its stderr).
func start(cmd Command, stdio [3]int) (pid, code int) {
	fail := func(code int, format string, args ...any) (int, int) {
		unix.Write(stdio[2], fmt.Appendf(nil, format, args...))
		return 0, code
	}
	if len(cmd.Argv) == 0 {
		return fail(127, "computerfs init: no command\n")
	}
	path, err := lookPath(cmd.Argv[0], cmd.Env)
	if err != nil {
		return fail(127, "%s: command not found\n", cmd.Argv[0])
	}
	pid, err = syscall.ForkExec(path, cmd.Argv, &syscall.ProcAttr{
		Dir:   cmd.Dir,
		Env:   cmd.Env,
		Files: []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		code := 127
		if err == syscall.EACCES || err == syscall.ENOEXEC {
			code = 126
		}
		return fail(code, "%s: %v\n", cmd.Argv[0], err)
	}
	return pid, 0
}

// wait forwards signals to pid's process group and reaps every child
// until pid exits; it returns its exit code, or 128+signal.
func wait(pid int, sigs <-chan os.Signal) int {
	for s := range sigs {
		if s != syscall.SIGCHLD {
			syscall.Kill(-pid, s.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || got <= 0 {
				break
			}
			if got != pid {
				continue // an orphan, reaped
			}
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
	return 126 // not reached: sigs is never closed
}

// lookPath finds a command as a shell would, with the command's own PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// ProxyAddr is where a container's processes find the egress proxy:
// HTTP_PROXY and HTTPS_PROXY name it.
const ProxyAddr = "127.0.0.1:3128"

// forwardProxy listens on ProxyAddr and copies each connection to and
// from a new connection to the unix socket sock. Its goroutines end with
// the container (init is its PID 1).
func forwardProxy(sock string) error {
	ln, err := net.Listen("tcp", ProxyAddr)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("unix", sock)
				if err != nil {
					fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ncomputerfs: the egress proxy cannot be reached: %v\n", err)
					return
				}
				defer up.Close()
				done := make(chan struct{})
				go func() {
					io.Copy(up, c)
					up.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				io.Copy(c, up)
				c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return nil
}
