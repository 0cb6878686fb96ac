package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/term"
	"google.golang.org/grpc/codes"

	"github.com/computerfs/computerfs/remote"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// The remote commands (issue 18): remote add|list, push, clone, pull,
// publish. Flag parsing is thin; the work is in the run* functions,
// which take an options struct (package remote does the transfers).

// remoteOpts are the options of the remote commands.
type remoteOpts struct {
	ws       string
	endpoint string
	region   string
	snapshot string
	name     string
	force    bool
	expires  time.Duration
	asJSON   bool
	keyFile  string
	newKey   bool
}

func runRemoteAdd(e *env, o remoteOpts, name, url string) error {
	ws, err := workspaceArg(o.ws)
	if err != nil {
		return err
	}
	if err := requireWorkspace(ws); err != nil {
		return err
	}
	r := remote.Remote{URL: url, Endpoint: o.endpoint, Region: o.region}
	if o.newKey && o.keyFile == "" {
		return usageError{fmt.Errorf("--new-key needs --key-file PATH")}
	}
	if o.keyFile != "" {
		if r.KeyFile, err = filepath.Abs(o.keyFile); err != nil {
			return err
		}
		if o.newKey {
			if err := remote.NewKey(r.KeyFile); err != nil {
				return err
			}
		}
		if _, err := remote.ReadKey(r.KeyFile); err != nil {
			return err
		}
	}
	if err := remote.Add(ws, name, r); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "remote %s: %s\n", name, url)
	if o.newKey {
		fmt.Fprintf(e.stdout, "new key in %s: copy it to every host that clones or pulls; without it nothing pushed can be read\n", r.KeyFile)
	}
	return nil
}

func runRemoteList(e *env, o remoteOpts) error {
	ws, err := workspaceArg(o.ws)
	if err != nil {
		return err
	}
	cfg, err := remote.LoadConfig(ws)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(e, cfg)
	}
	names := make([]string, 0, len(cfg.Remotes))
	for n := range cfg.Remotes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := cfg.Remotes[n]
		line := n + " " + r.URL
		if r.Endpoint != "" {
			line += " endpoint " + r.Endpoint
		}
		if c, ok := cfg.Cursors[n]; ok {
			line += fmt.Sprintf(" synced %s (snapshot %s, root %.12s)", c.At, c.Snapshot, c.Root)
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}

// clientOptions are the options of every remote client: the user's
// book of the HEADs seen ($COMPUTERFS_HOME/remote-heads.json), which
// lets a clone detect a HEAD rolled back.
func clientOptions() remote.ClientOptions {
	return remote.ClientOptions{HeadBook: filepath.Join(defaultHome(), "remote-heads.json")}
}

// pickRemote is the named remote of ws, or its only one (or origin).
func pickRemote(ws, name string) (string, remote.Remote, error) { return remote.Pick(ws, name) }

// progressTo prints transfer progress on w when it is a terminal.
func progressTo(w io.Writer) func(remote.Progress) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(p remote.Progress) {
		fmt.Fprintf(w, "\r%s: %d/%d chunks, %.1f MiB ", p.Phase, p.Done, p.Total, float64(p.Bytes)/(1<<20))
		if p.Done == p.Total {
			fmt.Fprintln(w)
		}
	}
}

// transferError gives a transfer refused for a moved remote, local
// changes or a rolled-back HEAD the conflict exit status (4).
func transferError(err error) error {
	var ce *wsrpc.CallError
	if errors.Is(err, remote.ErrConflict) || errors.Is(err, remote.ErrRollback) || errors.As(err, &ce) && ce.Code == codes.FailedPrecondition {
		return codedError{err, exitConflict}
	}
	return err
}

// onRemote runs a push or pull of the workspace of o: through the
// daemon that serves it, which does the work on its open store, or,
// when none does, offline with a client of the remote called name.
func onRemote(ctx context.Context, o remoteOpts, name string, online func(ws string, d *wsrpc.DaemonClient) error, offline func(ws, name string, r remote.Remote, c *remote.Client) error) error {
	ws, err := workspaceArg(o.ws)
	if err != nil {
		return err
	}
	if err := requireWorkspace(ws); err != nil {
		return err
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeD()
		return transferError(online(ws, d))
	}
	name, r, err := pickRemote(ws, name)
	if err != nil {
		return err
	}
	c, err := remote.ClientFor(ctx, r, clientOptions())
	if err != nil {
		return err
	}
	return transferError(offline(ws, name, r, c))
}

func runPush(ctx context.Context, e *env, o remoteOpts, name string) error {
	opts := remote.PushOptions{Snapshot: o.snapshot, Force: o.force, Progress: progressTo(e.stderr)}
	return onRemote(ctx, o, name, func(_ string, d *wsrpc.DaemonClient) error {
		res, rep, err := d.Push(ctx, name, opts)
		if err != nil {
			return err
		}
		return reportPush(e, o, res.Remote, res.URL, rep)
	}, func(ws, name string, r remote.Remote, c *remote.Client) error {
		opts.Remote = name
		rep, err := remote.Push(ctx, ws, c, opts)
		if err != nil {
			return err
		}
		return reportPush(e, o, name, r.URL, rep)
	})
}

func reportPush(e *env, o remoteOpts, name, url string, rep *remote.PushReport) error {
	if o.asJSON {
		return printJSON(e, map[string]any{"remote": name, "url": url, "snapshot": rep.Snapshot, "root": rep.Root, "manifest": rep.Manifest,
			"chunks": rep.Chunks, "checked": rep.Checked, "uploaded": rep.Uploaded, "uploaded_bytes": rep.UploadedBytes,
			"plain_bytes": rep.PlainBytes, "manifest_bytes": rep.ManifestBytes, "up_to_date": rep.UpToDate})
	}
	if rep.UpToDate {
		fmt.Fprintf(e.stdout, "%s already has this tree (root %.12s); snapshot %s\n", url, rep.Root, rep.Snapshot)
		return nil
	}
	fmt.Fprintf(e.stdout, "pushed snapshot %s to %s: root %s; %d of %d chunks uploaded (%d bytes), manifest %.12s (%d bytes)\n",
		rep.Snapshot, url, rep.Root, rep.Uploaded, rep.Chunks, rep.UploadedBytes, rep.Manifest, rep.ManifestBytes)
	return nil
}

func runClone(ctx context.Context, e *env, o remoteOpts, url, ws string) error {
	r := remote.Remote{URL: url, Endpoint: o.endpoint, Region: o.region}
	if o.keyFile != "" {
		var err error
		if r.KeyFile, err = filepath.Abs(o.keyFile); err != nil {
			return err
		}
	}
	c, err := remote.ClientFor(ctx, r, clientOptions())
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	rep, err := remote.Clone(ctx, c, ws, remote.CloneOptions{Snapshot: o.snapshot, RemoteName: o.name, Remote: r, Force: o.force, Progress: progressTo(e.stderr)})
	if err != nil {
		return transferError(err)
	}
	return reportFetch(e, o, "cloned", url, ws, rep)
}

func reportFetch(e *env, o remoteOpts, verb, url, ws string, rep *remote.CloneReport) error {
	if o.asJSON {
		return printJSON(e, map[string]any{"url": url, "workspace": ws, "snapshot": rep.Snapshot, "root": rep.Root, "manifest": rep.Manifest,
			"records": rep.Records, "chunks": rep.Chunks, "downloaded": rep.Downloaded, "downloaded_bytes": rep.DownloadedBytes, "up_to_date": rep.UpToDate,
			"local_snapshot": rep.LocalSnapshot, "changed_records": rep.Changed})
	}
	if rep.UpToDate {
		fmt.Fprintf(e.stdout, "%s is up to date with %s (root %.12s)\n", ws, url, rep.Root)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s snapshot %s of %s into %s: root %s verified; %d of %d chunks downloaded (%d bytes)\n",
		verb, rep.Snapshot, url, ws, rep.Root, rep.Downloaded, rep.Chunks, rep.DownloadedBytes)
	if rep.LocalSnapshot != "" {
		fmt.Fprintf(e.stdout, "the workspace is now snapshot %s (%d records changed); its other snapshots and exec records are kept\n", rep.LocalSnapshot, rep.Changed)
	}
	return nil
}

func runPull(ctx context.Context, e *env, o remoteOpts, name string) error {
	opts := remote.PullOptions{Snapshot: o.snapshot, Force: o.force, Progress: progressTo(e.stderr)}
	return onRemote(ctx, o, name, func(ws string, d *wsrpc.DaemonClient) error {
		res, rep, err := d.Pull(ctx, name, opts)
		if err != nil {
			return err
		}
		return reportFetch(e, o, "pulled", res.URL, ws, rep)
	}, func(ws, name string, r remote.Remote, c *remote.Client) error {
		opts.Remote = name
		rep, err := remote.Pull(ctx, ws, c, opts)
		if err != nil {
			return err
		}
		return reportFetch(e, o, "pulled", r.URL, ws, rep)
	})
}

func runPublish(ctx context.Context, e *env, o remoteOpts, path string) error {
	ws, err := workspaceArg(o.ws)
	if err != nil {
		return err
	}
	if err := requireWorkspace(ws); err != nil {
		return err
	}
	_, r, err := pickRemote(ws, o.name)
	if err != nil {
		return err
	}
	api, closeAPI, err := openAPI(ctx, e, ws)
	if err != nil {
		return err
	}
	rd, err := api.Read(ctx, path, workspace.ReadOptions{})
	if err != nil {
		closeAPI()
		return err
	}
	data, err := io.ReadAll(io.LimitReader(rd, remote.MaxPublish+1))
	rd.Close()
	if cerr := closeAPI(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	c, err := remote.ClientFor(ctx, r, clientOptions())
	if err != nil {
		return err
	}
	u, err := remote.Publish(ctx, c, path, data, o.expires)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, u)
	return nil
}
