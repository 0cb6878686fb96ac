package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"
)

func init() { register("rmdir", filRmdirMain) }

var filRmdirSpec = optSpec{
	short: "pv",
	long:  map[string]bool{"parents": false, "verbose": false, "ignore-fail-on-non-empty": false},
	alias: map[string]string{"parents": "p", "verbose": "v"},
}

func filRmdirMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "rmdir", &filRmdirSpec, args, 1)
	if !ok {
		return code
	}
	parents, verbose, ignoreNonEmpty := false, false, false
	for _, o := range opts {
		switch o.name {
		case "p":
			parents = true
		case "v":
			verbose = true
		case "ignore-fail-on-non-empty":
			ignoreNonEmpty = true
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "rmdir", fmt.Errorf("missing operand"), 1)
	}
	// remove removes one directory; it reports whether it did, and whether
	// an error was ignored.
	remove := func(p string) (bool, error) {
		if verbose {
			fmt.Fprintf(e.Stdout, "rmdir: removing directory, %s\n", filQuote(p))
		}
		abs, err := filAbs(e, p)
		if err != nil {
			return false, err
		}
		fi, err := e.FS.Lstat(ctx, abs)
		if err != nil {
			return false, err
		}
		if fi.Mode&iofs.ModeSymlink != 0 && strings.HasSuffix(p, "/") {
			if t, err := e.FS.Stat(ctx, abs); err == nil && t.IsDir() {
				return false, syscall.ELOOP
			}
			return false, syscall.ENOTDIR
		}
		if !fi.IsDir() {
			return false, syscall.ENOTDIR
		}
		if filIsDotOrDotDot(p) {
			return false, syscall.EINVAL
		}
		if err := e.FS.Remove(ctx, abs); err != nil {
			return false, err
		}
		return true, nil
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		if _, err := remove(p); err != nil {
			if ignoreNonEmpty && filErrno(err) == syscall.ENOTEMPTY {
				continue
			}
			status = 1
			filRmdirFail(e, "failed to remove %s: %s", p, err)
			continue
		}
		if !parents {
			continue
		}
		q := p
		for {
			q = strings.TrimRight(q, "/")
			i := strings.LastIndexByte(q, '/')
			if i < 0 {
				break
			}
			q = strings.TrimRight(q[:i], "/")
			if q == "" {
				break
			}
			if _, err := remove(q); err != nil {
				if ignoreNonEmpty && filErrno(err) == syscall.ENOTEMPTY {
					break
				}
				status = 1
				filRmdirFail(e, "failed to remove directory %s: %s", q, err)
				break
			}
		}
	}
	return status
}

func filRmdirFail(e *Env, format, p string, err error) {
	text := errText(err)
	if filErrno(err) == syscall.ELOOP {
		text = "Symbolic link not followed"
	}
	fail(e, "rmdir", 1, format, filQuote(p), text)
}
