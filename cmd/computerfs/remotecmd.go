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

	"github.com/computerfs/computerfs/remote"
	"github.com/computerfs/computerfs/workspace"
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

// pickRemote is the named remote of ws, or its only one.
func pickRemote(ws, name string) (string, remote.Remote, error) {
	cfg, err := remote.LoadConfig(ws)
	if err != nil {
		return "", remote.Remote{}, err
	}
	if name == "" {
		switch len(cfg.Remotes) {
		case 0:
			return "", remote.Remote{}, fmt.Errorf("%s has no remote: computerfs remote add NAME s3://BUCKET/PREFIX", ws)
		case 1:
			for n := range cfg.Remotes {
				name = n
			}
		default:
			if _, ok := cfg.Remotes["origin"]; !ok {
				return "", remote.Remote{}, fmt.Errorf("%s has several remotes and none is origin: name one", ws)
			}
			name = "origin"
		}
	}
	r, ok := cfg.Remotes[name]
	if !ok {
		return "", remote.Remote{}, fmt.Errorf("%s has no remote %s (computerfs remote list)", ws, name)
	}
	return name, r, nil
}

// refuseServed fails when a daemon serves ws: push and pull work on a
// closed workspace.
func refuseServed(ctx context.Context, ws, what string) error {
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d != nil {
		closeD()
		return fmt.Errorf("%s is served by a daemon: %s works on a workspace no daemon holds (unmount or stop it first)", ws, what)
	}
	return nil
}

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

// openRemote resolves the workspace of o (a store no daemon holds) and
// its remote called name (or the default one), for push and pull.
func openRemote(ctx context.Context, o remoteOpts, name, verb string) (ws, remoteName string, r remote.Remote, c *remote.Client, err error) {
	fail := func(err error) (string, string, remote.Remote, *remote.Client, error) {
		return "", "", remote.Remote{}, nil, err
	}
	if ws, err = workspaceArg(o.ws); err != nil {
		return fail(err)
	}
	if err := requireWorkspace(ws); err != nil {
		return fail(err)
	}
	if err := refuseServed(ctx, ws, verb); err != nil {
		return fail(err)
	}
	if remoteName, r, err = pickRemote(ws, name); err != nil {
		return fail(err)
	}
	if c, err = remote.ClientFor(ctx, r, remote.ClientOptions{}); err != nil {
		return fail(err)
	}
	return ws, remoteName, r, c, nil
}

func runPush(ctx context.Context, e *env, o remoteOpts, name string) error {
	ws, name, r, c, err := openRemote(ctx, o, name, "push")
	if err != nil {
		return err
	}
	rep, err := remote.Push(ctx, ws, c, remote.PushOptions{Remote: name, Snapshot: o.snapshot, Progress: progressTo(e.stderr)})
	if err != nil {
		if errors.Is(err, remote.ErrConflict) {
			return codedError{err, exitConflict}
		}
		return err
	}
	if o.asJSON {
		return printJSON(e, map[string]any{"remote": name, "url": r.URL, "snapshot": rep.Snapshot, "root": rep.Root, "manifest": rep.Manifest,
			"chunks": rep.Chunks, "checked": rep.Checked, "uploaded": rep.Uploaded, "uploaded_bytes": rep.UploadedBytes,
			"plain_bytes": rep.PlainBytes, "manifest_bytes": rep.ManifestBytes, "up_to_date": rep.UpToDate})
	}
	if rep.UpToDate {
		fmt.Fprintf(e.stdout, "%s already has this tree (root %.12s); snapshot %s\n", r.URL, rep.Root, rep.Snapshot)
		return nil
	}
	fmt.Fprintf(e.stdout, "pushed snapshot %s to %s: root %s; %d of %d chunks uploaded (%d bytes), manifest %.12s (%d bytes)\n",
		rep.Snapshot, r.URL, rep.Root, rep.Uploaded, rep.Chunks, rep.UploadedBytes, rep.Manifest, rep.ManifestBytes)
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
	c, err := remote.ClientFor(ctx, r, remote.ClientOptions{})
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	rep, err := remote.Clone(ctx, c, ws, remote.CloneOptions{Snapshot: o.snapshot, RemoteName: o.name, Remote: r, Progress: progressTo(e.stderr)})
	if err != nil {
		return err
	}
	return reportFetch(e, o, "cloned", url, ws, rep)
}

func reportFetch(e *env, o remoteOpts, verb, url, ws string, rep *remote.CloneReport) error {
	if o.asJSON {
		return printJSON(e, map[string]any{"url": url, "workspace": ws, "snapshot": rep.Snapshot, "root": rep.Root, "manifest": rep.Manifest,
			"records": rep.Records, "chunks": rep.Chunks, "downloaded": rep.Downloaded, "downloaded_bytes": rep.DownloadedBytes, "up_to_date": rep.UpToDate})
	}
	if rep.UpToDate {
		fmt.Fprintf(e.stdout, "%s is up to date with %s (root %.12s)\n", ws, url, rep.Root)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s snapshot %s of %s into %s: root %s verified; %d of %d chunks downloaded (%d bytes)\n",
		verb, rep.Snapshot, url, ws, rep.Root, rep.Downloaded, rep.Chunks, rep.DownloadedBytes)
	return nil
}

func runPull(ctx context.Context, e *env, o remoteOpts, name string) error {
	ws, name, r, c, err := openRemote(ctx, o, name, "pull")
	if err != nil {
		return err
	}
	rep, err := remote.Pull(ctx, ws, c, remote.PullOptions{Remote: name, Snapshot: o.snapshot, Force: o.force, Progress: progressTo(e.stderr)})
	if err != nil {
		if errors.Is(err, remote.ErrConflict) {
			return codedError{err, exitConflict}
		}
		return err
	}
	return reportFetch(e, o, "pulled", r.URL, ws, rep)
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
	c, err := remote.ClientFor(ctx, r, remote.ClientOptions{})
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
