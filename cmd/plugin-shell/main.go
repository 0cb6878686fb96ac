// Command computerfs-plugin-shell is the interpreted shell backend: a
// computerfs plugin (see package pluginapi) serving package shell.
package main

import (
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/shell"
)

func main() {
	pluginapi.Serve(&shell.Backend{})
}
