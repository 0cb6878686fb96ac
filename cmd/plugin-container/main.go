// Command computerfs-plugin-container is the container backend: a
// computerfs plugin (see package pluginapi) serving package
// containerbackend. It runs as root and needs runc. Started with
// containerbackend.InitArg, it is instead the init of one container.
package main

import (
	"fmt"
	"os"

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
	pluginapi.Serve(&containerbackend.Backend{Init: self})
}
