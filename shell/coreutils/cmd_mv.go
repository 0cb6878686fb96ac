package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"
)

func init() { register("mv", filMvMain) }

var filMvSpec = optSpec{
	short: "bfinS:t:TuvZ",
	long: map[string]bool{
		"backup": false, "force": false, "interactive": false, "no-clobber": false,
		"suffix": true, "target-directory": true, "no-target-directory": false,
		"update": false, "verbose": false, "strip-trailing-slashes": false, "context": false,
	},
	alias: map[string]string{
		"force": "f", "interactive": "i", "no-clobber": "n", "suffix": "S",
		"target-directory": "t", "no-target-directory": "T", "update": "u",
		"verbose": "v", "context": "Z",
	},
}

func filMvMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "mv", &filMvSpec, args, 1)
	if !ok {
		return code
	}
	noClobber, update, verbose, noT, haveT, stripSlashes := false, false, false, false, false, false
	tdir := ""
	for _, o := range opts {
		switch o.name {
		case "f":
			noClobber = false
		case "n":
			noClobber = true
		case "u":
			update = true
		case "v":
			verbose = true
		case "T":
			noT = true
		case "t":
			tdir, haveT = o.value, true
		case "strip-trailing-slashes":
			stripSlashes = true
		case "i":
			return fail(e, "mv", 1, "interactive mode (-i) is not supported")
		}
	}
	if stripSlashes {
		for i, p := range operands {
			if t := strings.TrimRight(p, "/"); t != "" {
				operands[i] = t
			}
		}
	}
	pairs, code, ok := filPlanTargets(ctx, e, "mv", operands, tdir, haveT, noT)
	if !ok {
		return code
	}
	status := 0
	for _, pr := range pairs {
		if ctx.Err() != nil {
			return 1
		}
		if !filMvOne(ctx, e, pr.src, pr.dst, noClobber, update, verbose) {
			status = 1
		}
	}
	return status
}

func filMvOne(ctx context.Context, e *Env, src, dst string, noClobber, update, verbose bool) bool {
	sfi, err := filLstat(ctx, e, src)
	if err != nil {
		fail(e, "mv", 1, "cannot stat %s: %s", filQuote(src), errText(err))
		return false
	}
	cantMove := func(err error) bool {
		fail(e, "mv", 1, "cannot move %s to %s: %s", filQuote(src), filQuote(dst), errText(err))
		return false
	}
	sabs := e.Abs(src)
	if strings.HasSuffix(src, "/") {
		if l, err := e.FS.Lstat(ctx, sabs); err == nil && l.Mode&iofs.ModeSymlink != 0 {
			return cantMove(syscall.ENOTDIR)
		}
	}
	if filIsDotOrDotDot(src) || sabs == "/" {
		return cantMove(syscall.EBUSY)
	}
	dabs, err := filAbs(e, dst)
	if err != nil {
		return cantMove(err)
	}
	dfi, derr := e.FS.Lstat(ctx, dabs)
	if derr == nil {
		if filRealpathDir(ctx, e, sabs) == filRealpathDir(ctx, e, dabs) {
			fail(e, "mv", 1, "%s and %s are the same file", filQuote(src), filQuote(dst))
			return false
		}
		if noClobber {
			return true
		}
		if update && !sfi.ModTime.After(dfi.ModTime) {
			return true
		}
		switch {
		case sfi.IsDir() && !dfi.IsDir():
			fail(e, "mv", 1, "cannot overwrite non-directory %s with directory %s", filQuote(dst), filQuote(src))
			return false
		case !sfi.IsDir() && dfi.IsDir():
			fail(e, "mv", 1, "cannot overwrite directory %s with non-directory", filQuote(dst))
			return false
		}
	}
	if sfi.IsDir() && filInside(filRealpath(ctx, e, dabs), filRealpath(ctx, e, sabs)) {
		fail(e, "mv", 1, "cannot move %s to a subdirectory of itself, %s", filQuote(src), filQuote(dst))
		return false
	}
	if strings.HasSuffix(dst, "/") && derr != nil && !sfi.IsDir() {
		return cantMove(syscall.ENOTDIR)
	}
	replaced := false
	if derr == nil && dfi.IsDir() {
		// rename(2) replaces an empty directory; not every FS does.
		ents, err := e.FS.ReadDir(ctx, dabs)
		if err != nil {
			return cantMove(err)
		}
		if len(ents) > 0 {
			return cantMove(syscall.ENOTEMPTY)
		}
		if err := e.FS.Remove(ctx, dabs); err != nil {
			return cantMove(err)
		}
		replaced = true
	}
	if err := e.FS.Rename(ctx, sabs, dabs); err != nil {
		if replaced {
			// Put the empty directory back.
			e.FS.Mkdir(ctx, dabs, dfi.Mode.Perm())
		}
		return cantMove(err)
	}
	if verbose {
		fmt.Fprintf(e.Stdout, "renamed %s -> %s\n", filQuote(src), filQuote(dst))
	}
	return true
}
