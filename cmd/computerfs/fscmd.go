package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// Exit statuses of `computerfs fs`, for scripts.
const (
	exitOK       = 0
	exitNoMatch  = 1 // grep or glob found nothing
	exitUsage    = 2
	exitFailed   = 3 // the operation failed; the message says why
	exitConflict = 4 // a compare-and-swap found the file changed
)

// codedError is an error with the exit status it calls for.
type codedError struct {
	err  error
	code exitCode
}

func (c codedError) Error() string   { return c.err.Error() }
func (c codedError) Unwrap() []error { return []error{c.err, c.code} }

type fsCommand struct {
	name, args, summary string
	run                 func(ctx context.Context, c *fsCtx, args []string) error
	flags               func(fl *pflag.FlagSet, o *fsOpts)
	minArgs, maxArgs    int // positional arguments (maxArgs -1: no bound)
}

// fsOpts holds every flag a subcommand may declare.
type fsOpts struct {
	ws       string
	json     bool
	snapshot string // read this snapshot instead of the live tree
	fork     string // work on this fork instead of the workspace

	// read
	offset, length int64
	line, lines    int
	// write
	appendMode, exclusive, parents, sync bool
	mode                                 string
	ifMatch                              string
	// edit
	old, new, editsFile string
	replaceAll, dryRun  bool
	// list, glob, grep pages
	recursive, long bool
	depth           int
	limit, pageOff  int
	all             bool
	// rm, cp, mv
	force, noClobber bool
	// stat
	lstat bool
	// glob
	dir string
	// grep
	regex, fixed, ignoreCase, filesWith, count bool
	include, exclude                           []string
	before, after, context                     int
	// changes
	since  uint64
	follow bool
}

// fsCtx is what a subcommand works with.
type fsCtx struct {
	e    *env
	api  workspace.API
	opts *fsOpts
	// changed says whether a flag was given on the command line.
	changed func(name string) bool
}

func fsCommands() []fsCommand {
	page := func(fl *pflag.FlagSet, o *fsOpts) {
		fl.IntVar(&o.limit, "limit", 0, "page size (default 200; 0 with --all for everything)")
		fl.IntVar(&o.pageOff, "offset", 0, "skip this many results (the next offset is printed on stderr)")
		fl.BoolVar(&o.all, "all", false, "fetch every page")
	}
	return []fsCommand{
		{"cat", "PATH", "print a file, or a byte or line range of it", fsCat, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.Int64Var(&o.offset, "offset", 0, "first byte")
			fl.Int64Var(&o.length, "length", 0, "bytes to print (0: to the end)")
			fl.IntVar(&o.line, "line", 0, "first line, 1-based")
			fl.IntVar(&o.lines, "lines", 0, "lines to print (0: to the end)")
		}, 1, 1},
		{"write", "PATH", "write stdin to a file (atomically replacing it)", fsWrite, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVar(&o.appendMode, "append", false, "append instead of replacing")
			fl.BoolVar(&o.exclusive, "exclusive", false, "fail if the file exists")
			fl.BoolVarP(&o.parents, "parents", "p", false, "create missing parent directories")
			fl.BoolVar(&o.sync, "sync", false, "return once the data is durable")
			fl.StringVar(&o.mode, "mode", "", "permission bits in octal, e.g. 0755")
			fl.StringVar(&o.ifMatch, "if-match", "", "only write if the file's content hash is this one")
		}, 1, 1},
		{"edit", "PATH", "replace exact strings in a file, all or none, and print the diff", fsEdit, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.StringVar(&o.old, "old", "", "the text to replace (must occur once unless --replace-all)")
			fl.StringVar(&o.new, "new", "", "the replacement")
			fl.BoolVar(&o.replaceAll, "replace-all", false, "replace every occurrence")
			fl.StringVar(&o.editsFile, "edits", "", `a JSON file (- for stdin) of several edits: [{"old":..,"new":..,"replace_all":..}]`)
			fl.BoolVar(&o.dryRun, "dry-run", false, "print the diff without writing")
			fl.StringVar(&o.ifMatch, "if-match", "", "only edit if the file's content hash is this one")
		}, 1, 1},
		{"ls", "[PATH]", "list a directory", fsLs, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.long, "long", "l", false, "long format: mode, size, time")
			fl.BoolVarP(&o.recursive, "recursive", "R", false, "recursive")
			fl.IntVar(&o.depth, "depth", 0, "with -R, how deep (0: no bound)")
			page(fl, o)
		}, 0, 1},
		{"stat", "PATH", "describe a file", fsStat, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVar(&o.lstat, "lstat", false, "describe a symlink itself, not its target")
		}, 1, 1},
		{"mkdir", "PATH...", "make directories", fsMkdir, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.parents, "parents", "p", false, "make parents as needed; an existing directory is fine")
			fl.StringVar(&o.mode, "mode", "", "permission bits in octal")
		}, 1, -1},
		{"rm", "PATH...", "remove files, or trees with -r", fsRm, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.recursive, "recursive", "r", false, "remove directories and their contents")
			fl.BoolVarP(&o.force, "force", "f", false, "ignore missing paths")
		}, 1, -1},
		{"mv", "SRC DST", "rename atomically (into DST if it is a directory)", fsMv, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.noClobber, "no-clobber", "n", false, "do not replace an existing DST")
		}, 2, 2},
		{"cp", "SRC DST", "copy, sharing data (into DST if it is a directory)", fsCp, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.recursive, "recursive", "r", false, "copy directories recursively")
			fl.BoolVarP(&o.noClobber, "no-clobber", "n", false, "do not replace an existing DST")
		}, 2, 2},
		{"glob", "PATTERN", "list paths matching a pattern (**, *, ?, [..], {a,b})", fsGlob, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.StringVar(&o.dir, "dir", "/", "where a relative pattern starts")
			page(fl, o)
		}, 1, 1},
		{"grep", "PATTERN [PATH]", "search file contents (literal by default)", fsGrep, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.BoolVarP(&o.regex, "extended-regexp", "E", false, "the pattern is an RE2 regular expression")
			fl.BoolVarP(&o.fixed, "fixed-strings", "F", false, "the pattern is a literal string (the default)")
			fl.BoolVarP(&o.ignoreCase, "ignore-case", "i", false, "ignore case")
			fl.BoolVarP(&o.filesWith, "files-with-matches", "l", false, "print only the paths of files with matches")
			fl.BoolVarP(&o.count, "count", "c", false, "print the number of matching lines per file")
			fl.StringArrayVar(&o.include, "include", nil, "search only files matching this glob (repeatable)")
			fl.StringArrayVar(&o.exclude, "exclude", nil, "skip files matching this glob (repeatable)")
			fl.IntVarP(&o.after, "after-context", "A", 0, "lines of context after a match")
			fl.IntVarP(&o.before, "before-context", "B", 0, "lines of context before a match")
			fl.IntVarP(&o.context, "context", "C", 0, "lines of context around a match")
			page(fl, o)
		}, 1, 2},
		{"tree", "[PATH]", "show a directory tree with sizes", fsTree, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.IntVar(&o.depth, "depth", 3, "how deep to show")
		}, 0, 1},
		{"du", "[PATH]", "total size and counts of a tree", fsDu, nil, 0, -1},
		{"changes", "", "list changes after a sequence number; --follow streams them", fsChanges, func(fl *pflag.FlagSet, o *fsOpts) {
			fl.Uint64Var(&o.since, "since", 0, "list changes after this sequence number")
			fl.BoolVar(&o.follow, "follow", false, "keep streaming new changes")
			fl.IntVar(&o.limit, "limit", 0, "records per page (default 1000)")
		}, 0, 0},
	}
}

// snapshotReaders are the commands that read and can read a snapshot
// (--snapshot); the others change the workspace.
var snapshotReaders = map[string]bool{"cat": true, "ls": true, "stat": true, "glob": true, "grep": true, "tree": true, "du": true}

func defaultWorkspace() string {
	if ws := os.Getenv("COMPUTERFS_WORKSPACE"); ws != "" {
		return ws
	}
	return filepath.Join(defaultHome(), "default.cfs")
}

// runFS runs fs subcommand cmd with options o on the workspace o.ws;
// changed says which flags the command line gave.
func runFS(ctx context.Context, e *env, cmd fsCommand, o *fsOpts, args []string, changed func(string) bool) error {
	if o.snapshot != "" && !snapshotReaders[cmd.name] {
		why := fmt.Sprintf("%s changes the workspace, and snapshot %s is read-only", cmd.name, o.snapshot)
		if cmd.name == "changes" {
			why = fmt.Sprintf("snapshot %s does not change", o.snapshot)
		}
		return fsFail(e, o, codedError{fmt.Errorf("--snapshot: %s; cat, ls, stat, glob, grep, tree and du read snapshots", why), exitUsage})
	}
	api, closeAPI, err := openAPI(ctx, e, o.ws)
	if err != nil {
		return fsFail(e, o, err)
	}
	if o.fork != "" {
		fk, err := openFork(api, o.fork)
		if err != nil {
			closeAPI()
			return fsFail(e, o, err)
		}
		api = fk
	}
	if o.snapshot != "" {
		snap, err := openSnapshot(ctx, api, o.snapshot)
		if err != nil {
			closeAPI()
			return fsFail(e, o, err)
		}
		api = snap
	}
	err = cmd.run(ctx, &fsCtx{e: e, api: api, opts: o, changed: changed}, args)
	if cerr := closeAPI(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	if _, plain := err.(exitCode); plain {
		return err // the command has reported (usage, nothing found)
	}
	return fsFail(e, o, err)
}

// fsFail reports an error the way the caller asked for, with its exit
// status.
func fsFail(e *env, o *fsOpts, err error) error {
	code := exitCode(exitFailed)
	var ce codedError
	switch {
	case errors.As(err, &ce):
		code = ce.code
	case errors.Is(err, workspace.ErrConflict):
		code = exitConflict
	}
	if code == exitUsage {
		fmt.Fprintf(e.stderr, "computerfs fs: %s\n", userError(err))
		return code
	}
	if o.json {
		errno := workspace.Errno(err)
		out := map[string]any{"error": userError(err), "errno": unix.ErrnoName(errno), "exit": int(code)}
		if errors.Is(err, workspace.ErrConflict) {
			out["errno"] = "CONFLICT"
		}
		json.NewEncoder(e.stderr).Encode(out)
	} else {
		fmt.Fprintf(e.stderr, "computerfs fs: %s\n", userError(err))
	}
	return code
}

// openAPI reaches the workspace through its daemon, or opens the store
// when no daemon holds it.
func openAPI(ctx context.Context, e *env, ws string) (workspace.API, func() error, error) {
	c, closeConn, err := wsrpc.Dial(ctx, ws)
	if err == nil {
		return c, closeConn, nil
	}
	if !errors.Is(err, wsrpc.ErrNoDaemon) {
		return nil, nil, err
	}
	f, err := openHere(e.quiet(), ws)
	if err != nil {
		return nil, nil, err
	}
	files, err := fileView(workspace.New(f, workspace.Options{}))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return files, f.Close, nil
}

// openFork is the API over fork id of api's workspace.
func openFork(api workspace.API, id string) (workspace.API, error) {
	fr, ok := api.(workspace.ForkReader)
	if !ok {
		return nil, fmt.Errorf("fork %s: this door cannot reach forks", id)
	}
	return fr.ForkAPI(id)
}

// openSnapshot is the read-only API over snapshot name of api's
// workspace.
func openSnapshot(ctx context.Context, api workspace.API, name string) (workspace.API, error) {
	sr, ok := api.(workspace.SnapshotReader)
	if !ok {
		return nil, fmt.Errorf("snapshot %s: this door cannot read snapshots", name)
	}
	return sr.SnapshotAPI(ctx, name)
}

func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func parseMode(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m&^0o7777 != 0 {
		return 0, codedError{fmt.Errorf("--mode %q: want octal permission bits such as 0644", s), exitUsage}
	}
	return uint32(m), nil
}

func fsCat(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	rd, err := c.api.Read(ctx, args[0], workspace.ReadOptions{Offset: o.offset, Length: o.length, Line: o.line, Lines: o.lines})
	if err != nil {
		return err
	}
	defer rd.Close()
	if !o.json {
		if _, err := io.Copy(c.e.stdout, rd); err != nil {
			return err
		}
		return nil
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	info := rd.Info()
	out := map[string]any{"path": info.Path, "size": info.Size}
	if h := rd.Hash(); h != "" {
		out["hash"] = h
	}
	if utf8.Valid(data) {
		out["content"] = string(data)
	} else {
		out["content_base64"] = base64.StdEncoding.EncodeToString(data)
	}
	return printJSON(c.e, out)
}

func fsWrite(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	mode, err := parseMode(o.mode)
	if err != nil {
		return err
	}
	res, err := c.api.Write(ctx, args[0], c.e.stdin, workspace.WriteOptions{
		Append: o.appendMode, Exclusive: o.exclusive, Perm: mode, IfMatch: o.ifMatch, Parents: o.parents, Sync: o.sync,
	})
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(c.e, res)
	}
	fmt.Fprintf(c.e.stdout, "%s: wrote %d bytes", res.Path, res.Written)
	if res.Hash != "" {
		fmt.Fprintf(c.e.stdout, ", hash %s", res.Hash)
	}
	fmt.Fprintln(c.e.stdout)
	return nil
}

func fsEdit(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	var edits []workspace.Edit
	switch {
	case o.editsFile != "":
		var data []byte
		var err error
		if o.editsFile == "-" {
			data, err = io.ReadAll(c.e.stdin)
		} else {
			data, err = os.ReadFile(o.editsFile)
		}
		if err != nil {
			return codedError{fmt.Errorf("--edits: %w", err), exitUsage}
		}
		if err := json.Unmarshal(data, &edits); err != nil {
			return codedError{fmt.Errorf("--edits: %w", err), exitUsage}
		}
	case c.changed("old"):
		edits = []workspace.Edit{{Old: o.old, New: o.new, ReplaceAll: o.replaceAll}}
	default:
		return codedError{errors.New("edit: give --old and --new, or --edits FILE"), exitUsage}
	}
	res, err := c.api.Edit(ctx, args[0], edits, workspace.EditOptions{IfMatch: o.ifMatch, DryRun: o.dryRun})
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(c.e, res)
	}
	fmt.Fprint(c.e.stdout, res.Diff)
	return nil
}

// pages calls fetch until it reports no next page (with --all) or once.
func pages(o *fsOpts, fetch func(offset, limit int) (next int, err error)) error {
	off := o.pageOff
	for {
		next, err := fetch(off, o.limit)
		if err != nil {
			return err
		}
		if next == 0 {
			return nil
		}
		if !o.all {
			return nextPage{next}
		}
		off = next
	}
}

// nextPage says more results exist: not a failure.
type nextPage struct{ next int }

func (n nextPage) Error() string { return fmt.Sprintf("more results: pass --offset %d", n.next) }

// finishPages prints where the next page starts, on stderr.
func finishPages(c *fsCtx, err error) error {
	var np nextPage
	if errors.As(err, &np) {
		if !c.opts.json {
			fmt.Fprintf(c.e.stderr, "computerfs fs: more results: pass --offset %d\n", np.next)
		}
		return nil
	}
	return err
}

func fsLs(ctx context.Context, c *fsCtx, args []string) error {
	p := "/"
	if len(args) == 1 {
		p = args[0]
	}
	o := c.opts
	var all workspace.ListResult
	tw := tabwriter.NewWriter(c.e.stdout, 0, 0, 1, ' ', tabwriter.AlignRight)
	err := pages(o, func(off, limit int) (int, error) {
		res, err := c.api.List(ctx, p, workspace.ListOptions{Recursive: o.recursive, Depth: o.depth, Limit: limit, Offset: off})
		if err != nil {
			return 0, err
		}
		if o.json {
			all.Entries = append(all.Entries, res.Entries...)
			all.Next = res.Next
			return res.Next, nil
		}
		for _, fi := range res.Entries {
			name := fi.Name
			if o.recursive {
				name = fi.Path
			}
			if fi.IsDir() {
				name += "/"
			}
			if o.long {
				target := ""
				if fi.Target != "" {
					target = " -> " + fi.Target
				}
				fmt.Fprintf(tw, "%s\t %d\t %s\t %s%s\t\n", modeString(&fi), fi.Size, fi.Mtime.Local().Format("2006-01-02 15:04"), name, target)
			} else {
				fmt.Fprintln(tw, name)
			}
		}
		return res.Next, nil
	})
	tw.Flush()
	if o.json && (err == nil || errors.As(err, new(nextPage))) {
		if all.Entries == nil {
			all.Entries = []workspace.FileInfo{}
		}
		if perr := printJSON(c.e, all); perr != nil {
			return perr
		}
	}
	return finishPages(c, err)
}

func modeString(fi *workspace.FileInfo) string {
	t := map[string]byte{"file": '-', "dir": 'd', "symlink": 'l', "fifo": 'p', "socket": 's', "char": 'c', "block": 'b'}[fi.Type]
	if t == 0 {
		t = '?'
	}
	b := []byte{t}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if fi.Mode&(1<<(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	return string(b)
}

func fsStat(ctx context.Context, c *fsCtx, args []string) error {
	stat := c.api.Stat
	if c.opts.lstat {
		stat = c.api.Lstat
	}
	fi, err := stat(ctx, args[0])
	if err != nil {
		return err
	}
	if c.opts.json {
		return printJSON(c.e, fi)
	}
	w := c.e.stdout
	fmt.Fprintf(w, "  Path: %s\n  Type: %s\n  Size: %d\n  Mode: %s (%04o)\n", fi.Path, fi.Type, fi.Size, modeString(&fi), fi.Mode)
	fmt.Fprintf(w, " Inode: %d  Links: %d  Uid: %d  Gid: %d\n", fi.Ino, fi.Nlink, fi.Uid, fi.Gid)
	fmt.Fprintf(w, "Modify: %s\n", fi.Mtime.Local().Format(time.RFC3339Nano))
	if fi.Target != "" {
		fmt.Fprintf(w, "Target: %s\n", fi.Target)
	}
	return nil
}

func fsMkdir(ctx context.Context, c *fsCtx, args []string) error {
	mode, err := parseMode(c.opts.mode)
	if err != nil {
		return err
	}
	var made []workspace.FileInfo
	for _, p := range args {
		fi, err := c.api.Mkdir(ctx, p, workspace.MkdirOptions{Parents: c.opts.parents, Perm: mode})
		if err != nil {
			return err
		}
		made = append(made, fi)
	}
	if c.opts.json {
		return printJSON(c.e, made)
	}
	return nil
}

func fsRm(ctx context.Context, c *fsCtx, args []string) error {
	total := 0
	for _, p := range args {
		n, err := c.api.Remove(ctx, p, workspace.RemoveOptions{Recursive: c.opts.recursive, Force: c.opts.force})
		total += n
		if err != nil {
			return err
		}
	}
	if c.opts.json {
		return printJSON(c.e, map[string]int{"removed": total})
	}
	return nil
}

// intoDir turns DST into DST/base(SRC) when DST is an existing directory,
// as mv and cp do.
func intoDir(ctx context.Context, api workspace.API, src, dst string) string {
	if fi, err := api.Stat(ctx, dst); err == nil && fi.IsDir() {
		return path.Join(dst, path.Base(strings.TrimRight(src, "/")))
	}
	return dst
}

func fsMv(ctx context.Context, c *fsCtx, args []string) error {
	src, dst := args[0], intoDir(ctx, c.api, args[0], args[1])
	if err := c.api.Rename(ctx, src, dst, workspace.RenameOptions{NoReplace: c.opts.noClobber}); err != nil {
		return err
	}
	if c.opts.json {
		return printJSON(c.e, map[string]string{"src": src, "dst": dst})
	}
	return nil
}

func fsCp(ctx context.Context, c *fsCtx, args []string) error {
	src, dst := args[0], intoDir(ctx, c.api, args[0], args[1])
	n, err := c.api.Copy(ctx, src, dst, workspace.CopyOptions{Recursive: c.opts.recursive, NoReplace: c.opts.noClobber})
	if err != nil {
		return err
	}
	if c.opts.json {
		return printJSON(c.e, map[string]any{"src": src, "dst": dst, "copied": n})
	}
	return nil
}

func fsGlob(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	var all workspace.GlobResult
	found := false
	err := pages(o, func(off, limit int) (int, error) {
		res, err := c.api.Glob(ctx, args[0], workspace.GlobOptions{Dir: o.dir, Limit: limit, Offset: off})
		if err != nil {
			return 0, err
		}
		found = found || len(res.Paths) > 0
		if o.json {
			all.Paths = append(all.Paths, res.Paths...)
			all.Next = res.Next
		} else {
			for _, p := range res.Paths {
				fmt.Fprintln(c.e.stdout, p)
			}
		}
		return res.Next, nil
	})
	if o.json && (err == nil || errors.As(err, new(nextPage))) {
		if all.Paths == nil {
			all.Paths = []string{}
		}
		if perr := printJSON(c.e, all); perr != nil {
			return perr
		}
	}
	if err := finishPages(c, err); err != nil {
		return err
	}
	if !found {
		return exitCode(exitNoMatch)
	}
	return nil
}

func fsGrep(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	if o.regex && o.fixed {
		return codedError{errors.New("grep: -E and -F exclude each other"), exitUsage}
	}
	p := "/"
	if len(args) == 2 {
		p = args[1]
	}
	opt := workspace.GrepOptions{Pattern: args[0], Regex: o.regex, IgnoreCase: o.ignoreCase, Include: o.include, Exclude: o.exclude, Before: o.before, After: o.after}
	if o.context > 0 {
		opt.Before, opt.After = max(opt.Before, o.context), max(opt.After, o.context)
	}
	switch {
	case o.filesWith && o.count:
		return codedError{errors.New("grep: -l and -c exclude each other"), exitUsage}
	case o.filesWith:
		opt.Mode = "files"
	case o.count:
		opt.Mode = "count"
	}
	var all workspace.GrepResult
	found := false
	lastPath, lastLine := "", 0
	err := pages(o, func(off, limit int) (int, error) {
		opt.Offset, opt.Limit = off, limit
		res, err := c.api.Grep(ctx, p, opt)
		if err != nil {
			return 0, err
		}
		found = found || len(res.Lines) > 0 || len(res.Files) > 0
		if o.json {
			all.Lines = append(all.Lines, res.Lines...)
			all.Files = append(all.Files, res.Files...)
			all.Skipped += res.Skipped
			all.Next = res.Next
			return res.Next, nil
		}
		w := c.e.stdout
		for _, f := range res.Files {
			if opt.Mode == "count" {
				fmt.Fprintf(w, "%s:%d\n", f.Path, f.Count)
			} else {
				fmt.Fprintln(w, f.Path)
			}
		}
		for _, l := range res.Lines {
			// GNU grep's separator between groups that do not touch.
			if (opt.Before > 0 || opt.After > 0) && lastPath != "" && (l.Path != lastPath || l.Line > lastLine+1) {
				fmt.Fprintln(w, "--")
			}
			sep := ':'
			if l.Context {
				sep = '-'
			}
			fmt.Fprintf(w, "%s%c%d%c%s\n", l.Path, sep, l.Line, sep, l.Text)
			lastPath, lastLine = l.Path, l.Line
		}
		return res.Next, nil
	})
	if o.json && (err == nil || errors.As(err, new(nextPage))) {
		if perr := printJSON(c.e, all); perr != nil {
			return perr
		}
	}
	if err := finishPages(c, err); err != nil {
		return err
	}
	if !found {
		return exitCode(exitNoMatch)
	}
	return nil
}

func fsTree(ctx context.Context, c *fsCtx, args []string) error {
	p := "/"
	if len(args) == 1 {
		p = args[0]
	}
	n, err := c.api.Tree(ctx, p, workspace.TreeOptions{Depth: c.opts.depth})
	if err != nil {
		return err
	}
	if c.opts.json {
		return printJSON(c.e, n)
	}
	fmt.Fprintf(c.e.stdout, "%s  [%s, %d files, %d dirs]\n", n.Path, humanBytes(n.Size), n.Files, n.Dirs)
	printTree(c.e.stdout, n, "")
	return nil
}

func printTree(w io.Writer, n *workspace.TreeNode, indent string) {
	for i, ch := range n.Children {
		branch, next := "├── ", "│   "
		if i == len(n.Children)-1 && n.Omitted == 0 {
			branch, next = "└── ", "    "
		}
		name := ch.Name
		if ch.Type == "dir" {
			name += "/"
		}
		fmt.Fprintf(w, "%s%s%s  [%s]\n", indent, branch, name, humanBytes(ch.Size))
		printTree(w, ch, indent+next)
	}
	if n.Omitted > 0 {
		fmt.Fprintf(w, "%s└── ... %d more\n", indent, n.Omitted)
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func fsDu(ctx context.Context, c *fsCtx, args []string) error {
	paths := args
	if len(paths) == 0 {
		paths = []string{"/"}
	}
	var out []*workspace.TreeNode
	for _, p := range paths {
		n, err := c.api.Du(ctx, p)
		if err != nil {
			return err
		}
		if c.opts.json {
			out = append(out, n)
			continue
		}
		fmt.Fprintf(c.e.stdout, "%d\t%s\t(%s, %d files, %d dirs)\n", n.Size, n.Path, humanBytes(n.Size), n.Files, n.Dirs)
	}
	if c.opts.json {
		return printJSON(c.e, out)
	}
	return nil
}

func fsChanges(ctx context.Context, c *fsCtx, args []string) error {
	o := c.opts
	since := o.since
	enc := json.NewEncoder(c.e.stdout)
	for {
		res, err := c.api.Changes(ctx, since, o.limit)
		if err != nil {
			if errors.Is(err, fs.ErrJournalPruned) {
				return codedError{fmt.Errorf("%w; rescan, then follow from --since %d", err, res.Last), exitFailed}
			}
			return err
		}
		if o.json && !o.follow {
			return printJSON(c.e, res)
		}
		for _, ch := range res.Changes {
			if o.json {
				if err := enc.Encode(ch); err != nil {
					return err
				}
				continue
			}
			line := fmt.Sprintf("%d\t%s\t%-6s\t%s", ch.Seq, time.Unix(0, ch.Time).Local().Format("2006-01-02T15:04:05.000"), ch.Op, ch.Path)
			if ch.NewPath != "" {
				line += " -> " + ch.NewPath
			}
			fmt.Fprintln(c.e.stdout, line)
		}
		if f, ok := c.e.stdout.(interface{ Sync() error }); ok && o.follow {
			f.Sync()
		}
		since = res.Next
		if len(res.Changes) > 0 && since < res.Last {
			continue // more pages now
		}
		if !o.follow {
			if !o.json {
				fmt.Fprintf(c.e.stderr, "computerfs fs: last change %d\n", res.Last)
			}
			return nil
		}
		if err := c.api.WaitChanges(ctx, since); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return err
		}
	}
}

// cmdServe runs the daemon without a mount: the control socket only.
func runServe(ctx context.Context, e *env, o serveOptions, args []string) error {
	daemon, create, limitStr, memLimit := o.daemon, o.create, o.limit, o.memLimit
	c := daemonConfig{metrics: o.metrics, sync: o.sync, readOnly: o.readOnly}
	var err error
	c.ws = defaultWorkspace()
	if len(args) == 1 {
		c.ws = args[0]
	}
	if limitStr != "" {
		if c.limit, err = parseLimit(limitStr); err != nil {
			return usageError{err}
		}
	}
	if err := setMemoryLimit(memLimit); err != nil {
		return err
	}
	raiseProcs()
	if err := c.metrics.check(); err != nil {
		return usageError{err}
	}
	if err := ensureWorkspace(e, c.ws, create, c.limit); err != nil {
		return err
	}
	if daemon {
		return startDaemon(e, c.ws, o.child)
	}
	ready := readyReporter()
	err = serve(ctx, e, c, ready)
	if err != nil {
		ready(err)
	}
	return err
}
