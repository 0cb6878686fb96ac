// Package confinetest holds the adversarial suite of the workspace's
// doors: escape attempts run through real plugin subprocesses (the shell,
// the JavaScript backend, and a third-party plugin written in Python from
// examples/python-plugin) on a real runtime and workspace, and through
// the file API. Each attempt is judged on the host side: was anything
// outside the workspace read (a secret in the output), created or
// changed? The container backend's own suite is in containerbackend; the
// interpreter's, with every TMPDIR and tilde game, in shell.
//
// Its one piece of code, HostState and Changes, is the host-side check
// the other packages' confinement tests share; it imports only the
// standard library, and its tests only what a daemon does.
package confinetest
