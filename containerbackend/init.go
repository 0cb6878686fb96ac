package containerbackend

import (
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/computerfs/computerfs/containerbackend/containerinit"
)

// InitArg, as a binary's first argument, makes it a container's init (see
// package containerinit).
const InitArg = containerinit.Arg

// InitBinary is the name of the small init binary (cmd/computerfs-container-init),
// which the container plugin looks for beside itself.
const InitBinary = "computerfs-container-init"

// initPath is where the init binary appears in the container: on the
// private /dev tmpfs, so nothing is created in a configured rootfs.
const initPath = "/dev/.computerfs-init"

// proxyPath is where a container finds the egress proxy's socket, which
// its init forwards to containerinit.ProxyAddr.
const proxyPath = "/dev/.computerfs-proxy"

// initCommand is what a warm container's init gets on its control pipe.
type initCommand = containerinit.Command

// MaybeRunInit runs the init and exits if the process was started as a
// container's init; otherwise it returns. Mains of binaries that can
// serve as Backend.Init call it first.
func MaybeRunInit() {
	if len(os.Args) >= 2 && os.Args[1] == InitArg {
		os.Exit(containerinit.Main(os.Args[2:]))
	}
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
