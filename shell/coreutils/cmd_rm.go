package coreutils

import (
	"context"
	"fmt"
	"syscall"
)

func init() { register("rm", filRmMain) }

var filRmSpec = optSpec{
	short: "dfiIrRv",
	long: map[string]bool{
		"dir": false, "force": false, "recursive": false, "verbose": false,
		"interactive": true, "no-preserve-root": false, "preserve-root": true,
		"one-file-system": false,
	},
	alias: map[string]string{"dir": "d", "force": "f", "recursive": "r", "verbose": "v"},
}

type filRmOpts struct {
	force, recursive, dir, verbose, noPreserveRoot bool
}

func filRmMain(ctx context.Context, e *Env, args []string) int {
	// --interactive takes an optional argument: accept "--interactive=never".
	var rest []string
	for _, a := range args {
		if a == "--interactive=never" || a == "--interactive=no" || a == "--interactive=none" {
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, code, ok := filParse(e, "rm", &filRmSpec, rest, 1)
	if !ok {
		return code
	}
	var o filRmOpts
	for _, op := range opts {
		switch op.name {
		case "f":
			o.force = true
		case "r", "R":
			o.recursive = true
		case "d":
			o.dir = true
		case "v":
			o.verbose = true
		case "i", "I", "interactive":
			return fail(e, "rm", 1, "interactive removal (-i, -I) is not supported")
		case "no-preserve-root":
			o.noPreserveRoot = true
		}
	}
	if len(operands) == 0 {
		if o.force {
			return 0
		}
		return badUsage(e, "rm", fmt.Errorf("missing operand"), 1)
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		if !filRmOperand(ctx, e, p, &o) {
			status = 1
		}
	}
	return status
}

func filRmOperand(ctx context.Context, e *Env, p string, o *filRmOpts) bool {
	if o.recursive && filIsDotOrDotDot(p) {
		fail(e, "rm", 1, "refusing to remove '.' or '..' directory: skipping %s", filQuote(p))
		return false
	}
	fi, err := filLstat(ctx, e, p)
	if err != nil {
		if o.force && filErrno(err) == syscall.ENOENT {
			return true
		}
		fail(e, "rm", 1, "cannot remove %s: %s", filQuote(p), errText(err))
		return false
	}
	abs := e.Abs(p)
	if !fi.IsDir() {
		return filRmOne(ctx, e, abs, p, false, o)
	}
	if !o.recursive {
		if o.dir {
			return filRmOne(ctx, e, abs, p, true, o)
		}
		fail(e, "rm", 1, "cannot remove %s: %s", filQuote(p), errnoText(syscall.EISDIR))
		return false
	}
	if abs == "/" && !o.noPreserveRoot {
		fail(e, "rm", 1, "it is dangerous to operate recursively on %s", filQuote(p))
		fail(e, "rm", 1, "use --no-preserve-root to override this failsafe")
		return false
	}
	return filRmTree(ctx, e, abs, filTrimSlashes(p), o)
}

// filRmTree removes directory abs (shown as disp) and all it holds.
func filRmTree(ctx context.Context, e *Env, abs, disp string, o *filRmOpts) bool {
	ents, err := e.FS.ReadDir(ctx, abs)
	if err != nil {
		fail(e, "rm", 1, "cannot remove %s: %s", filQuote(disp), errText(err))
		return false
	}
	ok := true
	for _, ent := range ents {
		if ctx.Err() != nil {
			return false
		}
		cabs, cdisp := abs+"/"+ent.Name, filJoin(disp, ent.Name)
		if abs == "/" {
			cabs = "/" + ent.Name
		}
		if ent.IsDir() {
			if !filRmTree(ctx, e, cabs, cdisp, o) {
				ok = false
			}
			continue
		}
		if !filRmOne(ctx, e, cabs, cdisp, false, o) {
			ok = false
		}
	}
	if !ok {
		return false
	}
	return filRmOne(ctx, e, abs, disp, true, o)
}

func filRmOne(ctx context.Context, e *Env, abs, disp string, dir bool, o *filRmOpts) bool {
	if err := e.FS.Remove(ctx, abs); err != nil {
		if o.force && filErrno(err) == syscall.ENOENT {
			return true
		}
		fail(e, "rm", 1, "cannot remove %s: %s", filQuote(disp), errText(err))
		return false
	}
	if o.verbose {
		if dir {
			fmt.Fprintf(e.Stdout, "removed directory %s\n", filQuote(disp))
		} else {
			fmt.Fprintf(e.Stdout, "removed %s\n", filQuote(disp))
		}
	}
	return true
}
