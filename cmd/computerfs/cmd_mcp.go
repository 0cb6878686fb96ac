package main

import "github.com/spf13/cobra"

// computerfs mcp: the workspace's tools for an agent, over MCP.
type mcpOptions struct {
	ws, http, tokenFile string
	allowRemote, noExec bool
	// noHandoff keeps the session in this process even when a daemon
	// could take it (to measure one against the other).
	noHandoff bool
}

func newMCPCmd(e *env) *cobra.Command {
	var o mcpOptions
	c := &cobra.Command{
		Use:   "mcp [-w WS] [--http ADDR]",
		Short: "serve the workspace's tools (read, edit, grep, exec...) to an agent over MCP",
		Args:  argRange(0, 0),
		RunE:  func(c *cobra.Command, args []string) error { return runMCP(c.Context(), e, o, args) },
	}
	f := c.Flags()
	workspaceFlag(f, &o.ws, "workspace store")
	f.StringVar(&o.http, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
	f.StringVar(&o.tokenFile, "token-file", "", "with --http: the bearer token clients must send (default: a new one, printed on stderr)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "with --http: listen on an address other than loopback")
	f.BoolVar(&o.noExec, "no-exec", false, "leave out the exec tool (file tools only)")
	f.BoolVar(&o.noHandoff, "no-handoff", false, "over stdio with a daemon: serve the session here, calling the daemon, instead of handing stdio to it")
	f.MarkHidden("no-handoff")
	return c
}
