// Command computerfs is the workspace daemon and its command-line tools:
// mount a workspace, check it, collect its garbage and report on it.
//
// The daemon (mount, serve) holds the store, so no other process can
// open it meanwhile: the tools that work on a store (fsck, stats, gc,
// limit) ask a running daemon over its control socket instead, through
// wsrpc's Daemon service, and print the same output; status asks it how
// it is doing. The daemon keeps its metrics in one registry of its own
// (internal/metrics), fed by fusefs's Observer and backends' OnExec, and
// serves them over HTTP with --metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
)

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env carries what every command writes to; nothing global.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
}

func allCommands() []command {
	return []command{
		{"init", "[WORKSPACE]", "create a new workspace (--limit SIZE); refuses a path that exists", cmdInit},
		{"mount", "[WORKSPACE [MOUNTPOINT]]", "mount a workspace (--create makes a missing one) and serve it until unmounted", cmdMount},
		{"serve", "[WORKSPACE]", "serve a workspace's file API on its control socket, without a mount (--create makes a missing one)", cmdServe},
		{"umount", "MOUNTPOINT", "unmount a mounted workspace", cmdUmount},
		{"fs", "COMMAND ...", "read, write, edit, list and search a workspace (computerfs fs help)", cmdFS},
		{"backends", "", "list the execution backends: ID, state, limits, description", cmdBackends},
		{"exec", "[-b BACKEND] -- COMMAND...", "run a command on a backend against the workspace", cmdExec},
		{"mcp", "[-w WS] [--http ADDR]", "serve the workspace's tools (read, edit, grep, exec...) to an agent over MCP", cmdMCP},
		{"status", "[WORKSPACE|MOUNTPOINT]", "ask a workspace's daemon how it is doing: pid, uptime, sizes, commit lag, FUSE traffic, backends, last execs", cmdStatus},
		{"fsck", "WORKSPACE", "check every chunk, reference count, inode and entry; --repair fixes what is safe", cmdFsck},
		{"snapshot", "create|list|rm|restore|diff WORKSPACE [NAME [OTHER|PATH...]]", "named read-only states of a workspace: create (instant), list, rm, restore NAME [PATH...] (live, in one commit), diff NAME [OTHER] (OTHER: a later snapshot; none: now; --patch: unified diffs of text files)", cmdSnapshot},
		{"execs", "[-w WS]", "list the recent execs: backend, command, exit, files changed, whether they can be undone", cmdExecs},
		{"undo", "[-w WS] [EXEC-ID]", "revert exactly what an exec changed (the last one by default), refusing if later changes touched the same files (--force)", cmdUndo},
		{"audit", "[-w WS] [--since SEQ] [--backend ID] [--denied] [--json] | --verify [--anchor SEQ:HASH]", "the audit log: every exec and policy verdict, hash-chained in the store; --verify checks the chain", cmdAudit},
		{"scrub", "WORKSPACE", "read and verify every chunk and record, at a bounded rate (--rate); read-only", cmdScrub},
		{"stats", "WORKSPACE", "report sizes, deduplication and compression", cmdStats},
		{"gc", "WORKSPACE", "delete chunks no file refers to", cmdGC},
		{"limit", "WORKSPACE [SIZE]", "show or change the workspace size limit", cmdLimit},
		{"remote", "add NAME s3://BUCKET/PREFIX | list", "a workspace's remotes on S3-compatible storage (--endpoint URL, --region R; credentials from the AWS variables and files)", cmdRemote},
		{"push", "[-w WS] [NAME]", "upload a snapshot (--snapshot S; default: a new one) to a remote: only the chunks it lacks, then its manifest; refused if another host pushed since", cmdPush},
		{"clone", "s3://BUCKET/PREFIX WS", "build a new workspace from a remote (--snapshot S), every chunk and the root verified", cmdClone},
		{"pull", "[-w WS] [NAME]", "replace a workspace with its remote's newest push (--force: discard local changes)", cmdPull},
		{"publish", "[-w WS] PATH", "upload one file to the remote and print a presigned GET URL (--expires 1h)", cmdPublish},
		{"bench", "", "run the fio-style benchmarks side by side on computerfs, ext4 and tmpfs", cmdBench},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "computerfs: a durable, content-addressed workspace mounted with FUSE\n\nUsage:\n")
	for _, c := range allCommands() {
		fmt.Fprintf(w, "  computerfs %-7s %-26s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nmount(8) and /etc/fstab (type fuse.computerfs) run it as mount.fuse3 does:\n  computerfs /path/ws.cfs MOUNTPOINT -o allow_other,limit=SIZE,memory-limit=SIZE,create\n")
	fmt.Fprintf(w, "\nRun 'computerfs COMMAND --help' for a command's options.\n")
}

func main() {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	e.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	os.Exit(run(context.Background(), e, os.Args[1:]))
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("COMPUTERFS_LOG"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmds := allCommands()
	if src, mnt, opts, ok := helperArgs(args); ok {
		// mount(8) by way of mount.fuse3: see fstab.go.
		margs, err := helperMountArgs(src, mnt, opts)
		if err != nil {
			fmt.Fprintf(e.stderr, "computerfs: %v\n", err)
			return 2
		}
		cmds, args = []command{{name: "mount", run: cmdMount}}, append([]string{"mount"}, margs...)
	}
	for _, c := range cmds {
		if c.name == args[0] {
			err := c.run(ctx, e, args[1:])
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			if ec, ok := err.(exitCode); ok {
				return int(ec) // the command has said why (usage)
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "computerfs %s: %v\n", c.name, err)
				var ec exitCode
				if errors.As(err, &ec) {
					return int(ec)
				}
				var ue usageError
				if errors.As(err, &ue) {
					return 2
				}
				return 1
			}
			return 0
		}
	}
	names := make([]string, len(allCommands()))
	for i, c := range allCommands() {
		names[i] = c.name
	}
	sort.Strings(names)
	fmt.Fprintf(e.stderr, "computerfs: unknown command %q (commands: %s)\n", args[0], strings.Join(names, ", "))
	return 2
}

// exitCode lets a command choose its exit status along with its message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command line that does not parse (exit status 2, as for
// a wrong number of arguments); the flag package has printed the usage.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// newFlags makes a FlagSet whose --help prints the command's usage.
func newFlags(e *env, name, args, summary string) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(e.stderr)
	fl.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: computerfs %s [options] %s\n\n%s\n\nOptions:\n", name, args, summary)
		fl.PrintDefaults()
	}
	return fl
}

func commandInfo(name string) (string, string) {
	for _, c := range allCommands() {
		if c.name == name {
			return c.args, c.summary
		}
	}
	return "", ""
}

func parse(e *env, name string, args []string, setup func(*flag.FlagSet)) (*flag.FlagSet, error) {
	a, s := commandInfo(name)
	fl := newFlags(e, name, a, s)
	if setup != nil {
		setup(fl)
	}
	if err := fl.Parse(interleave(fl, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	return fl, nil
}

// interleave moves flags after positional arguments to the front, so that
// "computerfs mount ws mnt --daemon" works as users expect.
func interleave(fl *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") {
				if f := fl.Lookup(name); f != nil {
					if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
						if i+1 < len(args) {
							flags = append(flags, args[i+1])
							i++
						}
					}
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
