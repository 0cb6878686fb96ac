// Command computerfs-plugin-js is the JavaScript backend: a computerfs
// plugin (see package pluginapi) serving package jsbackend, which runs ES
// modules in a fresh QuickJS engine per exec.
package main

import (
	"github.com/computerfs/computerfs/jsbackend"
	"github.com/computerfs/computerfs/pluginapi"
)

func main() {
	pluginapi.Serve(&jsbackend.Backend{})
}
