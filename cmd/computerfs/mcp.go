package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/mcpserver"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdMCP serves the workspace to an agent host as an MCP server: over
// stdio (what hosts spawn), or streamable HTTP with --http. Its stdout is
// the protocol's alone: logs go to stderr.
func cmdMCP(ctx context.Context, e *env, args []string) error {
	var ws, httpAddr, tokenFile string
	var allowRemote, noExec bool
	fl, err := parse(e, "mcp", args, func(fl *flag.FlagSet) {
		fl.StringVar(&ws, "w", defaultWorkspace(), "workspace store")
		fl.StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
		fl.StringVar(&tokenFile, "token-file", "", "with --http: the bearer token clients must send (default: a new one, printed on stderr)")
		fl.BoolVar(&allowRemote, "allow-remote", false, "with --http: listen on an address other than loopback")
		fl.BoolVar(&noExec, "no-exec", false, "leave out the exec tool (file tools only)")
	})
	if err != nil {
		return err
	}
	if fl.NArg() != 0 {
		fl.Usage()
		return exitCode(2)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	api, exe, closeWS, err := openMCPWorkspace(ctx, e, ws, !noExec)
	if err != nil {
		return err
	}
	defer closeWS()
	abs, _ := filepath.Abs(ws)
	srv, err := mcpserver.New(ctx, mcpserver.Options{API: api, Exec: exe, MountPoint: mountOf(abs), Logger: e.log})
	if err != nil {
		return err
	}
	if httpAddr == "" {
		e.log.Debug("mcp: serving on stdio", "workspace", ws)
		if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return fmt.Errorf("serve stdio: %w", err)
		}
		return nil
	}
	token, generated, err := mcpserver.Token(tokenFile)
	if err != nil {
		return usageError{err}
	}
	ln, err := mcpserver.Listen(httpAddr, allowRemote)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(e.stderr, "computerfs mcp: serving %s on http://%s/ (streamable HTTP)\n", ws, ln.Addr())
	if generated {
		fmt.Fprintf(e.stderr, "computerfs mcp: bearer token: %s\n", token)
	}
	return srv.ServeHTTP(ctx, ln, token)
}

// openMCPWorkspace reaches the workspace and its backends through the
// daemon holding it, or opens the store (and runs the backends) in this
// process when none does.
func openMCPWorkspace(ctx context.Context, e *env, ws string, withExec bool) (workspace.API, mcpserver.Executor, func(), error) {
	conn, err := wsrpc.DialConn(ctx, ws)
	if err == nil {
		var exe mcpserver.Executor
		if withExec {
			exe = mcpserver.RemoteExecutor(pb.NewExecutorClient(conn))
		}
		e.log.Debug("mcp: through the daemon", "workspace", ws)
		return wsrpc.NewClient(conn), exe, func() { conn.Close() }, nil
	}
	if !errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, nil, nil, err
	}
	// A host configured with a workspace that does not exist yet gets a
	// new one, as mount makes it.
	var f *fs.FS
	if _, serr := os.Stat(ws); errors.Is(serr, os.ErrNotExist) {
		e.log.Info("mcp: creating the workspace", "workspace", ws)
		if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
			return nil, nil, nil, fmt.Errorf("workspace %s: %w", ws, err)
		}
		f, err = fs.Open(ws, fs.Options{Logger: e.log})
	} else {
		f, err = openHere(e, ws)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	api := workspace.New(f, workspace.Options{})
	if !withExec {
		return api, nil, func() { f.Close() }, nil
	}
	rt, closeRT, err := newRuntime(e, ws, api, "", nil)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	e.log.Debug("mcp: on the store, no daemon", "workspace", ws)
	return api, mcpserver.LocalExecutor(rt), func() {
		closeRT()
		f.Close()
	}, nil
}

// openHere opens the store of a workspace no daemon holds, in this
// process, for the commands that work through the daemon when one runs.
func openHere(e *env, ws string) (*fs.FS, error) {
	if _, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("workspace %s: %w (create it with 'computerfs mount' or 'computerfs serve')", ws, err)
	}
	f, err := fs.Open(ws, fs.Options{Logger: e.log})
	if errors.Is(err, chunkstore.ErrInUse) {
		return nil, fmt.Errorf("%w; and no daemon answers on its control socket", err)
	}
	return f, err
}

// mountOf is where the store at abs is mounted, "" if nowhere.
func mountOf(abs string) string {
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mnt := ""
	for _, m := range mounts {
		if m.FSType == "fuse.computerfs" && m.Source == abs {
			mnt = m.Point
		}
	}
	return mnt
}
