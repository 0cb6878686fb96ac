// Command computerfs-plugin-container is the container backend: a
// computerfs plugin (see package pluginapi) serving package
// containerbackend. It runs as root and needs runc. Each container's init
// is computerfs-container-init from beside this executable, or, if that
// is missing, this executable itself started with
// containerbackend.InitArg (slower to start: it links gRPC).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/computerfs/computerfs/containerbackend"
	"github.com/computerfs/computerfs/pluginapi"
)

func main() {
	containerbackend.MaybeRunInit()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "computerfs-plugin-container: own executable: %v\n", err)
		os.Exit(1)
	}
	init := self
	if p := filepath.Join(filepath.Dir(self), containerbackend.InitBinary); isExecutable(p) {
		init = p
	}
	b := &containerbackend.Backend{Init: init}
	pluginapi.Serve(b) // returns when the host shuts the plugin down
	b.Close()          // the warm containers
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
