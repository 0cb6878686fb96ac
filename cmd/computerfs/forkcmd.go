package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
)

// Forks of a workspace (fs/fork.go) from the command line:
//
//	computerfs fork [-w WS] [--json] create [ID] | list | changes ID | merge ID | discard ID
//	computerfs exec --fork [--merge|--discard] -- COMMAND
//
// The work is in runFork and in execFork (options structs, parsed
// elsewhere), so that another flag parser can call them.

// forkOps reaches a workspace's forks: through its daemon
// (*wsrpc.DaemonClient), or on a store this process holds (localForks).
type forkOps interface {
	CreateFork(ctx context.Context, id string) (fs.ForkInfo, error)
	Forks(ctx context.Context) ([]fs.ForkInfo, error)
	ForkChanges(ctx context.Context, id string) ([]fs.ForkChange, error)
	MergeFork(ctx context.Context, id string) (*fs.RewindReport, error)
	DiscardFork(ctx context.Context, id string) (*fs.ForkDropReport, error)
}

// localForks is forkOps on a workspace.WS this process serves.
type localForks struct{ w *workspace.WS }

func (l localForks) CreateFork(ctx context.Context, id string) (fs.ForkInfo, error) {
	return l.w.CreateFork(ctx, id)
}
func (l localForks) Forks(context.Context) ([]fs.ForkInfo, error) { return l.w.Forks() }
func (l localForks) ForkChanges(ctx context.Context, id string) ([]fs.ForkChange, error) {
	return l.w.ForkChanges(ctx, id)
}
func (l localForks) MergeFork(ctx context.Context, id string) (*fs.RewindReport, error) {
	return l.w.MergeFork(ctx, id)
}
func (l localForks) DiscardFork(ctx context.Context, id string) (*fs.ForkDropReport, error) {
	return l.w.DiscardFork(ctx, id)
}

// forkOptions are computerfs fork's parsed options.
type forkOptions struct {
	WS   string
	JSON bool
	Op   string // create, list, changes, merge, discard
	ID   string
}

// runFork is computerfs fork's work, through the workspace's daemon or
// on the store.
func runFork(ctx context.Context, e *env, o forkOptions) error {
	return onWorkspace(ctx, e, o.WS, func(d *wsrpc.DaemonClient) error {
		return forkOp(ctx, e, d, o)
	}, func(f *fs.FS) error {
		w, err := fileView(workspace.New(f, workspace.Options{}))
		if err != nil {
			return err
		}
		return forkOp(ctx, e, localForks{w}, o)
	})
}

func forkOp(ctx context.Context, e *env, ops forkOps, o forkOptions) error {
	switch o.Op {
	case "create":
		fi, err := ops.CreateFork(ctx, o.ID)
		if err != nil {
			return err
		}
		if o.JSON {
			return printJSON(e, fi)
		}
		fmt.Fprintln(e.stdout, fi.ID)
	case "list":
		forks, err := ops.Forks(ctx)
		if err != nil {
			return err
		}
		if o.JSON {
			if forks == nil {
				forks = []fs.ForkInfo{}
			}
			return printJSON(e, forks)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFROM COMMIT\tCREATED\tRECORDS\tOPEN")
		for _, fi := range forks {
			open := fmt.Sprint(fi.Open)
			if fi.Damaged {
				open = "damaged record (fsck --repair, or discard)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", fi.ID, fi.Epoch, time.Unix(0, fi.Created).Format(time.RFC3339), fi.Records, open)
		}
		return tw.Flush()
	case "changes":
		ch, err := ops.ForkChanges(ctx, o.ID)
		if err != nil {
			return err
		}
		if o.JSON {
			if ch == nil {
				ch = []fs.ForkChange{}
			}
			return printJSON(e, ch)
		}
		printForkChanges(e.stdout, ch)
	case "merge":
		rep, err := ops.MergeFork(ctx, o.ID)
		if err != nil {
			return forkError(err)
		}
		if o.JSON {
			if rep.Paths == nil {
				rep.Paths = []string{}
			}
			return printJSON(e, map[string]any{"fork": o.ID, "records": rep.Records, "paths": rep.Paths, "epoch": rep.Epoch, "seconds": rep.Seconds})
		}
		fmt.Fprintf(e.stdout, "merged fork %s: %d records in %.3fs\n", o.ID, rep.Records, rep.Seconds)
		for _, p := range rep.Paths {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
	case "discard":
		rep, err := ops.DiscardFork(ctx, o.ID)
		if err != nil {
			return err
		}
		if o.JSON {
			return printJSON(e, map[string]any{"fork": o.ID, "records": rep.Records, "chunks": rep.Chunks})
		}
		fmt.Fprintf(e.stdout, "discarded fork %s: %d records, %d chunk references released\n", o.ID, rep.Records, rep.Chunks)
	}
	return nil
}

// forkError gives a merge's conflict the exit status undo's has.
func forkError(err error) error {
	var ce *fs.ForkConflictError
	if errors.As(err, &ce) || strings.Contains(err.Error(), "were changed in the workspace too") {
		return codedError{err, exitConflict}
	}
	return err
}

func printForkChanges(w io.Writer, ch []fs.ForkChange) {
	for _, c := range ch {
		fmt.Fprintf(w, "  %-8s %s\n", c.Op, c.Path)
	}
}

// execForkOptions are exec's fork flags.
type execForkOptions struct {
	Fork    bool   // run in a new fork
	In      string // run in this existing fork
	Merge   bool   // merge the fork after, if the command succeeded
	Discard bool   // discard the fork after
}

func (o execForkOptions) active() bool { return o.Fork || o.In != "" }

func (o execForkOptions) check() error {
	switch {
	case o.Fork && o.In != "":
		return usageError{errors.New("--fork and --in-fork: one or the other")}
	case o.Merge && o.Discard:
		return usageError{errors.New("--merge and --discard: one or the other")}
	case (o.Merge || o.Discard) && !o.active():
		return usageError{errors.New("--merge and --discard need --fork or --in-fork")}
	}
	return nil
}

// beginExecFork picks the fork an exec runs in: a new one, or the one
// named.
func beginExecFork(ctx context.Context, e *env, ops forkOps, o execForkOptions) (string, error) {
	if o.In != "" {
		return o.In, nil
	}
	fi, err := ops.CreateFork(ctx, "")
	if err != nil {
		return "", fmt.Errorf("fork the workspace: %w", err)
	}
	fmt.Fprintf(e.stderr, "computerfs exec: running in fork %s\n", fi.ID)
	return fi.ID, nil
}

// endExecFork tells what the exec changed in its fork (on stderr: stdout
// is the command's), then merges or discards the fork as asked. A merge
// happens only if the command succeeded; a fork not merged or discarded
// stays, and the message says how to.
func endExecFork(ctx context.Context, e *env, ops forkOps, o execForkOptions, id string, succeeded bool) error {
	ch, err := ops.ForkChanges(ctx, id)
	if err != nil {
		return fmt.Errorf("fork %s: what it changed: %w", id, err)
	}
	fmt.Fprintf(e.stderr, "computerfs exec: fork %s: %d change(s)\n", id, len(ch))
	printForkChanges(e.stderr, ch)
	switch {
	case o.Discard:
		if _, err := ops.DiscardFork(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "computerfs exec: discarded fork %s\n", id)
	case o.Merge && succeeded:
		rep, err := ops.MergeFork(ctx, id)
		if err != nil {
			fmt.Fprintf(e.stderr, "computerfs exec: fork %s kept: computerfs fork discard %s drops it\n", id, id)
			return forkError(err)
		}
		fmt.Fprintf(e.stderr, "computerfs exec: merged fork %s (%d records)\n", id, rep.Records)
	default:
		why := ""
		if o.Merge {
			why = " (not merged: the command failed)"
		}
		fmt.Fprintf(e.stderr, "computerfs exec: fork %s kept%s: computerfs fork merge %s | computerfs fork discard %s\n", id, why, id, id)
	}
	return nil
}
