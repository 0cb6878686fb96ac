// Command computerfs-container-init is the PID 1 of the container
// backend's containers (see package containerinit): the container plugin
// finds it beside itself and bind-mounts it into each container. It is
// separate from the plugin only to start fast: it links the standard
// library alone. Build it static (CGO_ENABLED=0), as make does, so that
// it runs in any configured rootfs.
package main

import (
	"fmt"
	"os"

	"github.com/computerfs/computerfs/containerbackend/containerinit"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != containerinit.Arg {
		fmt.Fprintln(os.Stderr, "computerfs-container-init: the container plugin starts this, inside a container; it is not for running by hand")
		os.Exit(2)
	}
	os.Exit(containerinit.Main(os.Args[2:]))
}
