package containerbackend

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitArg, as a binary's first argument, makes it the container's init
// (see RunInit): the plugin's own executable is bind-mounted into each
// container and started this way, so no init binary has to exist in the
// userland.
const InitArg = "--computerfs-container-init"

// initPath is where the init binary appears in the container: on the
// private /dev tmpfs, so nothing is created in a configured rootfs.
const initPath = "/dev/.computerfs-init"

// forwarded are the signals init passes to the command's process group.
var forwarded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGCONT,
}

// MaybeRunInit runs RunInit and exits if the process was started as a
// container's init; otherwise it returns. Mains of binaries that can
// serve as Backend.Init call it first.
func MaybeRunInit() {
	if len(os.Args) >= 2 && os.Args[1] == InitArg {
		os.Exit(RunInit(os.Args[2:]))
	}
}

// RunInit is a container's PID 1, in the manner of tini: it asks the
// kernel to kill it when its parent (runc, the plugin's child) dies, so
// that a plugin killed with SIGKILL takes its containers' processes with
// it; it runs argv in its own process group, forwards the signals a
// process is sent to stop (a plain `sleep` as PID 1 would ignore
// SIGTERM), reaps orphans, and returns the command's exit code, or
// 128+signal.
func RunInit(argv []string) int {
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "computerfs init: no command")
		return 127
	}
	// Before anything else: if runc dies from here on, so do we, and with
	// PID 1 the whole namespace.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "computerfs init: parent-death signal: %v\n", err)
		return 126
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)

	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: command not found\n", argv[0])
		return 127
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
		if err == syscall.EACCES || err == syscall.ENOEXEC {
			return 126
		}
		return 127
	}
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

// runsIn says whether the executable bin can start in root: it is static,
// or its ELF interpreter exists there.
func runsIn(bin, root string) bool {
	f, err := elf.Open(bin)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		interp, err := io.ReadAll(p.Open())
		if err != nil {
			return false
		}
		_, err = os.Stat(filepath.Join(root, strings.TrimRight(string(interp), "\x00")))
		return err == nil
	}
	return true
}
