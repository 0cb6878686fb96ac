// Command computerfs-plugin-container is the container backend: a
// computerfs plugin (see package pluginapi) serving package
// containerbackend. It runs as root and needs runc.
package main

import (
	"github.com/computerfs/computerfs/containerbackend"
	"github.com/computerfs/computerfs/pluginapi"
)

func main() {
	pluginapi.Serve(&containerbackend.Backend{})
}
