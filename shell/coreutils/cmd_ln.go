package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"
	"syscall"
)

func init() { register("ln", filLnMain) }

var filLnSpec = optSpec{
	short: "bdfFinLPrsSt:Tv",
	long: map[string]bool{
		"backup": false, "directory": false, "force": false, "interactive": false,
		"logical": false, "no-dereference": false, "no-target-directory": false,
		"physical": false, "relative": false, "symbolic": false, "suffix": true,
		"target-directory": true, "verbose": false,
	},
	alias: map[string]string{
		"directory": "d", "force": "f", "interactive": "i", "logical": "L",
		"no-dereference": "n", "no-target-directory": "T", "physical": "P",
		"relative": "r", "symbolic": "s", "suffix": "S", "target-directory": "t",
		"verbose": "v",
	},
}

type filLn struct {
	e                                      *Env
	symbolic, force, noDeref, verbose, rel bool
}

// filLnMain makes symbolic links. The FS has no hard links: ln without -s
// fails with "Operation not supported".
func filLnMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "ln", &filLnSpec, args, 1)
	if !ok {
		return code
	}
	l := &filLn{e: e}
	noTargetDir := false
	targetDir, haveTargetDir := "", false
	for _, o := range opts {
		switch o.name {
		case "s":
			l.symbolic = true
		case "f":
			l.force = true
		case "n":
			l.noDeref = true
		case "v":
			l.verbose = true
		case "r":
			l.rel = true
		case "T":
			noTargetDir = true
		case "t":
			targetDir, haveTargetDir = o.value, true
		case "i":
			return fail(e, "ln", 1, "interactive mode (-i) is not supported")
		}
	}
	if l.rel && !l.symbolic {
		return fail(e, "ln", 1, "cannot do --relative without --symbolic")
	}
	if haveTargetDir && noTargetDir {
		return fail(e, "ln", 1, "cannot combine --target-directory and --no-target-directory")
	}
	if len(operands) == 0 {
		return badUsage(e, "ln", fmt.Errorf("missing file operand"), 1)
	}
	if haveTargetDir {
		fi, err := filStat(ctx, e, targetDir)
		if err != nil {
			return fail(e, "ln", 1, "failed to access %s: %s", filQuote(targetDir), errText(err))
		}
		if !fi.IsDir() {
			return fail(e, "ln", 1, "target %s is not a directory", filQuote(targetDir))
		}
		return l.intoDir(ctx, operands, targetDir)
	}
	if noTargetDir {
		if len(operands) == 1 {
			return badUsage(e, "ln", fmt.Errorf("missing destination file operand after %s", filQuote(operands[0])), 1)
		}
		if len(operands) > 2 {
			return badUsage(e, "ln", fmt.Errorf("extra operand %s", filQuote(operands[2])), 1)
		}
		return l.link(ctx, operands[0], operands[1], operands[1])
	}
	if len(operands) == 1 {
		return l.intoDir(ctx, operands, ".")
	}
	last := operands[len(operands)-1]
	isDir := l.isDirTarget(ctx, last)
	if len(operands) == 2 && !isDir {
		return l.link(ctx, operands[0], last, last)
	}
	if !isDir {
		_, err := filStat(ctx, e, last)
		if err != nil {
			return fail(e, "ln", 1, "target %s: %s", filQuote(last), errText(err))
		}
		return fail(e, "ln", 1, "target %s: %s", filQuote(last), errnoText(syscall.ENOTDIR))
	}
	return l.intoDir(ctx, operands[:len(operands)-1], last)
}

// isDirTarget reports whether the last operand is a directory to link
// into (with -n, a symlink to one is not).
func (l *filLn) isDirTarget(ctx context.Context, p string) bool {
	if l.noDeref {
		if fi, err := filLstat(ctx, l.e, p); err != nil || fi.Mode&iofs.ModeSymlink != 0 && !strings.HasSuffix(p, "/") {
			return false
		}
	}
	fi, err := filStat(ctx, l.e, p)
	return err == nil && fi.IsDir()
}

func (l *filLn) intoDir(ctx context.Context, targets []string, dir string) int {
	status := 0
	for _, t := range targets {
		if ctx.Err() != nil {
			return 1
		}
		base := path.Base(strings.TrimRight(t, "/"))
		if strings.Trim(t, "/") == "" {
			base = "/"
		}
		if s := l.link(ctx, t, filJoin(dir, base), filJoin(dir, base)); s != 0 {
			status = s
		}
	}
	return status
}

// link makes link name (shown as disp) to target.
func (l *filLn) link(ctx context.Context, target, name, disp string) int {
	e := l.e
	if !l.symbolic {
		fi, err := filLstat(ctx, e, target)
		if err != nil {
			return fail(e, "ln", 1, "failed to access %s: %s", filQuote(target), errText(err))
		}
		if fi.IsDir() {
			return fail(e, "ln", 1, "%s: hard link not allowed for directory", filQuoteF(target))
		}
		return fail(e, "ln", 1, "failed to create hard link %s => %s: %s", filQuote(disp), filQuote(target), errnoText(syscall.EOPNOTSUPP))
	}
	cantCreate := func(err error) int {
		if target == "" {
			return fail(e, "ln", 1, "failed to create symbolic link %s -> %s: %s", filQuote(disp), filQuote(target), errText(err))
		}
		return fail(e, "ln", 1, "failed to create symbolic link %s: %s", filQuote(disp), errText(err))
	}
	if target == "" {
		return cantCreate(syscall.ENOENT)
	}
	abs, err := filAbs(e, name)
	if err != nil {
		return cantCreate(err)
	}
	if l.rel {
		target = filRelTarget(ctx, e, target, path.Dir(abs))
	}
	if strings.HasSuffix(name, "/") {
		if _, err := e.FS.Lstat(ctx, abs); err == nil {
			return cantCreate(syscall.EEXIST)
		}
		return cantCreate(syscall.ENOENT)
	}
	if l.force {
		if fi, err := e.FS.Lstat(ctx, abs); err == nil {
			if fi.IsDir() {
				return fail(e, "ln", 1, "%s: cannot overwrite directory", filQuoteF(disp))
			}
			src := target
			if !path.IsAbs(src) {
				src = path.Join(path.Dir(abs), src)
			}
			if fi.Mode&iofs.ModeSymlink == 0 && path.Clean(src) == abs {
				return fail(e, "ln", 1, "%s and %s are the same file", filQuote(target), filQuote(disp))
			}
			if err := e.FS.Remove(ctx, abs); err != nil {
				return fail(e, "ln", 1, "cannot remove %s: %s", filQuote(disp), errText(err))
			}
		}
	}
	if err := e.FS.Symlink(ctx, target, abs); err != nil {
		return cantCreate(err)
	}
	if l.verbose {
		fmt.Fprintf(e.Stdout, "%s -> %s\n", filQuote(disp), filQuote(target))
	}
	return 0
}

// filRealpath resolves p (absolute) following symlinks in every
// component, as far as they exist.
func filRealpath(ctx context.Context, e *Env, p string) string {
	parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0 && hops < 40; {
		c := parts[0]
		parts = parts[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := e.FS.Lstat(ctx, next)
		if err != nil || fi.Mode&iofs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		t := fi.Target
		if t == "" {
			t, _ = e.FS.Readlink(ctx, next)
		}
		if path.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(strings.TrimPrefix(t, "/"), "/"), parts...)
	}
	return cur
}

// filRealpathDir resolves the directory part of p, not its last
// component.
func filRealpathDir(ctx context.Context, e *Env, p string) string {
	if p == "/" {
		return p
	}
	return path.Join(filRealpath(ctx, e, path.Dir(p)), path.Base(p))
}

// filRelTarget is ln -r's target: target (relative to the working
// directory) made relative to directory dir, both resolved.
func filRelTarget(ctx context.Context, e *Env, target, dir string) string {
	from := filRealpath(ctx, e, dir)
	to := filRealpath(ctx, e, e.Abs(target))
	fp := strings.Split(strings.Trim(from, "/"), "/")
	tp := strings.Split(strings.Trim(to, "/"), "/")
	if from == "/" {
		fp = nil
	}
	if to == "/" {
		tp = nil
	}
	i := 0
	for i < len(fp) && i < len(tp) && fp[i] == tp[i] {
		i++
	}
	var out []string
	for range fp[i:] {
		out = append(out, "..")
	}
	out = append(out, tp[i:]...)
	if len(out) == 0 {
		return "."
	}
	return strings.Join(out, "/")
}
