package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

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
func runMCP(ctx context.Context, e *env, o mcpOptions, args []string) error {
	ws, httpAddr, tokenFile, allowRemote, noExec := o.ws, o.http, o.tokenFile, o.allowRemote, o.noExec
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	abs, _ := filepath.Abs(ws)
	if httpAddr == "" && !o.noHandoff {
		// A daemon holds the workspace: it serves the session itself, on
		// our stdio, with the store in its own process (a tool call is
		// then one hop, not two). This process waits for the end.
		handed, err := handOff(ctx, e, ws, mcpserver.HandoffRequest{NoExec: noExec, MountPoint: mountOf(abs)})
		if handed || err != nil {
			return err
		}
	}
	w, err := openMCPWorkspace(ctx, e, ws, !noExec)
	if err != nil {
		return err
	}
	defer w.close()
	srv, err := mcpserver.New(ctx, mcpserver.Options{API: w.api, Exec: w.exec, Snapshots: w.snaps, Forks: w.forks, MountPoint: mountOf(abs), Logger: e.log})
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
	msg := fmt.Sprintf("computerfs mcp: serving %s on http://%s/ (streamable HTTP)\n", ws, ln.Addr())
	if generated {
		msg += fmt.Sprintf("computerfs mcp: bearer token: %s\n", token)
	}
	io.WriteString(e.stderr, msg) // one write: a reader that sees the address sees the token
	return srv.ServeHTTP(ctx, ln, token)
}

// handOff hands this process's stdio to the daemon holding ws, if one
// does and takes it, and waits for the session's end: handed says so.
// Not handed and no error: serve the session here.
func handOff(ctx context.Context, e *env, ws string, req mcpserver.HandoffRequest) (handed bool, err error) {
	c, err := wsrpc.DialHandoff(ctx, ws)
	if errors.Is(err, wsrpc.ErrNoDaemon) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = mcpserver.Handoff(ctx, c, os.Stdin, os.Stdout, req, func() {
		e.log.Debug("mcp: handed to the daemon", "workspace", ws)
	})
	if errors.Is(err, mcpserver.ErrHandoffRefused) {
		e.log.Debug("mcp: the daemon did not take the session: serving it here", "err", err)
		return false, nil
	}
	return true, err
}

// handoffServer is the MCP server a daemon runs for a session handed to
// it: the file tools on the file API's view as it is at each call (files),
// exec, snapshots and forks through the daemon's own control socket, as
// any client's.
func handoffServer(ctx context.Context, e *env, ws string, files func() *workspace.WS, req mcpserver.HandoffRequest) (*mcpserver.Server, func(), error) {
	conn, err := wsrpc.DialConn(ctx, ws)
	if err != nil {
		return nil, nil, err
	}
	opts := mcpserver.Options{
		Files:      func() workspace.API { return files() },
		Snapshots:  mcpserver.DaemonSnapshots(wsrpc.NewDaemonClient(conn)),
		Forks:      wsrpc.NewDaemonClient(conn),
		MountPoint: req.MountPoint,
		Logger:     e.log,
	}
	if !req.NoExec {
		opts.Exec = mcpserver.RemoteExecutor(pb.NewExecutorClient(conn))
	}
	srv, err := mcpserver.New(ctx, opts)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return srv, func() { conn.Close() }, nil
}

// mcpWorkspace is what the MCP server works on.
type mcpWorkspace struct {
	api   workspace.API
	exec  mcpserver.Executor
	snaps mcpserver.Snapshots
	forks mcpserver.Forks
	close func()
}

// openMCPWorkspace reaches the workspace, its backends and its snapshots
// through the daemon holding it, or opens the store (and runs the
// backends) in this process when none does.
func openMCPWorkspace(ctx context.Context, e *env, ws string, withExec bool) (*mcpWorkspace, error) {
	conn, err := wsrpc.DialConn(ctx, ws)
	if err == nil {
		w := &mcpWorkspace{api: wsrpc.NewClient(conn), snaps: mcpserver.DaemonSnapshots(wsrpc.NewDaemonClient(conn)), forks: wsrpc.NewDaemonClient(conn), close: func() { conn.Close() }}
		if withExec {
			w.exec = mcpserver.RemoteExecutor(pb.NewExecutorClient(conn))
		}
		e.log.Debug("mcp: through the daemon", "workspace", ws)
		return w, nil
	}
	if !errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, err
	}
	// A host configured with a workspace that does not exist yet gets a
	// new one: mcp is the one command that creates a missing workspace
	// unasked (mount and serve want --create), since an agent host
	// spawns it with a path and no one reads its stderr. An empty file
	// or a directory is refused as everywhere (openHere).
	var f *fs.FS
	if _, serr := os.Stat(ws); errors.Is(serr, os.ErrNotExist) {
		e.log.Info("mcp: creating the workspace", "workspace", ws)
		if err := os.MkdirAll(filepath.Dir(ws), 0o700); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", ws, err)
		}
		f, err = fs.Open(ws, fs.Options{Logger: e.log})
	} else {
		f, err = openHere(e, ws)
	}
	if err != nil {
		return nil, err
	}
	api := workspace.New(f, workspace.Options{})
	files, err := fileView(api)
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &mcpWorkspace{api: files, snaps: storeSnapshots{f, files}, forks: localForks{files}, close: func() { f.Close() }}
	if !withExec {
		return w, nil
	}
	rt, closeRT, err := newRuntime(e, ws, api, "", nil, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	e.log.Debug("mcp: on the store, no daemon", "workspace", ws)
	w.exec = mcpserver.LocalExecutor(rt)
	w.close = func() {
		closeRT()
		f.Close()
	}
	return w, nil
}

// storeSnapshots are the snapshots of a store this process holds, as the
// daemon's Snapshot call makes them.
// Their diff leaves out what the file API's rules deny; restore and undo
// go through its view, which refuses them when they would change a path
// the rules protect.
type storeSnapshots struct {
	f   *fs.FS
	api *workspace.WS
}

func (s storeSnapshots) Create(ctx context.Context, name string) (mcpserver.Snapshot, error) {
	sn, err := s.f.CreateSnapshot(ctx, name)
	return mcpserver.Snapshot{Name: sn.Name, Epoch: sn.Epoch, Created: time.Unix(0, sn.Created)}, err
}

func (s storeSnapshots) List(ctx context.Context) ([]mcpserver.Snapshot, error) {
	list, err := s.f.Snapshots()
	out := []mcpserver.Snapshot{}
	for _, sn := range list {
		out = append(out, mcpserver.Snapshot{Name: sn.Name, Epoch: sn.Epoch, Created: time.Unix(0, sn.Created)})
	}
	return out, err
}

func (s storeSnapshots) Diff(ctx context.Context, name, other string) ([]mcpserver.DiffEntry, error) {
	// As the daemon does: what is pending is committed first, so that
	// "now" is now.
	if err := s.f.Sync(ctx); err != nil {
		return nil, fmt.Errorf("diff: commit what is pending first: %w", err)
	}
	d, err := fs.DiffSnapshots(s.f.Store(), name, other)
	out := []mcpserver.DiffEntry{}
	for _, e := range d {
		if s.denied(e.Path) || s.denied(e.OldPath) {
			continue
		}
		out = append(out, mcpserver.DiffEntry{Kind: e.Kind, Path: e.Path, OldPath: e.OldPath, Type: workspace.TypeName(e.Type), OldSize: e.OldSize, Size: e.Size})
	}
	return out, err
}

func (s storeSnapshots) denied(p string) bool {
	if s.api.Rules() == nil || p == "" {
		return false
	}
	v, _ := s.api.Rules().Verdict(p)
	return v == workspace.Deny
}

func (s storeSnapshots) Restore(ctx context.Context, name string, paths []string) (*fs.RewindReport, error) {
	return s.api.Restore(ctx, name, paths)
}

func (s storeSnapshots) Undo(ctx context.Context, opts fs.UndoOptions) (*fs.ExecRecord, *fs.RewindReport, error) {
	return s.api.Undo(ctx, opts)
}

// openHere opens the store of a workspace no daemon holds, in this
// process, for the commands that work through the daemon when one runs.
func openHere(e *env, ws string) (*fs.FS, error) {
	if err := requireWorkspace(ws); err != nil {
		return nil, err
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
