// Package mcpserver is the agent's own door onto a workspace: a Model
// Context Protocol server (built on github.com/modelcontextprotocol/go-sdk)
// whose tools are the ones agents are trained on, named and shaped as
// Claude Code's are: read, write, edit, multi_edit, glob, grep, ls and
// exec; and snapshot and diff, over the workspace's snapshots.
//
// It owns the MCP tool surface: the tools' names, input and output
// schemas, annotations, descriptions and text; the per-session record of
// what each client has read (write and edit refuse a file the session has
// not read, and compare-and-swap against the content hash it read); how
// output is numbered, cut and described; progress and cancellation of
// execs; and the HTTP transport's bearer token.
//
// It works only through a workspace.API (the daemon's wsrpc client, a
// workspace.WS on a store this process opened, or, in a daemon serving a
// session handed to it, the daemon's file API view) and an Executor (the
// daemon's Executor service, or a backends.Runtime in this process), and
// Snapshots (the daemon's, or ones its caller makes on a store). It
// must not touch the store's internals (fs, chunkstore): every read and
// change goes through the file API, which journals it and tells the mount.
//
// Over stdio, stdout carries the protocol only: logs go to stderr, and
// the backends' plugins get /dev/null as stdin (package backends sees to
// that), so nothing can steal or corrupt the client's stream.
//
// It also owns the handoff of a stdio session to the daemon (handoff.go):
// the client's stdin and stdout passed over the control socket, which
// package wsrpc sorts from its gRPC connections and gives to the daemon's
// handler.
package mcpserver
