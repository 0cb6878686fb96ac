package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"
	"syscall"
	"time"
)

func init() { register("cp", filCpMain) }

var filCpSpec = optSpec{
	short: "abdfHilLnPprRsS:t:TuvxZ",
	long: map[string]bool{
		"archive": false, "backup": false, "force": false, "interactive": false,
		"link": false, "dereference": false, "no-clobber": false,
		"no-dereference": false, "preserve": false, "no-preserve": true,
		"parents": false, "recursive": false, "remove-destination": false,
		"strip-trailing-slashes": false, "symbolic-link": false, "suffix": true,
		"target-directory": true, "no-target-directory": false, "update": false,
		"verbose": false, "one-file-system": false, "context": false,
		"attributes-only": false, "sparse": true, "reflink": false,
	},
	alias: map[string]string{
		"archive": "a", "force": "f", "interactive": "i", "link": "l",
		"dereference": "L", "no-clobber": "n", "no-dereference": "P",
		"recursive": "R", "symbolic-link": "s", "suffix": "S",
		"target-directory": "t", "no-target-directory": "T", "update": "u",
		"verbose": "v", "one-file-system": "x", "context": "Z",
	},
}

type filCp struct {
	e                                    *Env
	recursive, force, noClobber, update  bool
	verbose, preserveMode, preserveTimes bool
	deref                                int // 'L', 'H', 'P' or 0 (default)
	removeDest                           bool

	// The top-level source and destination being copied, and the
	// directory made for it: met again inside the source, it is a copy
	// into itself.
	topSrc, topDst string
	madeTop        string
	intoSelf       bool
}

// filCpMain copies files. Regular files are copied with FS.CopyFile (which
// shares data). -p and -a preserve mode and modification time (not
// ownership, access time or hard links, which the FS does not expose).
func filCpMain(ctx context.Context, e *Env, args []string) int {
	// --preserve takes an optional argument.
	var rest []string
	preserve := false
	for _, a := range args {
		if a == "--preserve" || strings.HasPrefix(a, "--preserve=") {
			preserve = true
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, code, ok := filParse(e, "cp", &filCpSpec, rest, 1)
	if !ok {
		return code
	}
	c := &filCp{e: e}
	if preserve {
		c.preserveMode, c.preserveTimes = true, true
	}
	noT, haveT, strip := false, false, false
	tdir := ""
	for _, o := range opts {
		switch o.name {
		case "a":
			c.recursive, c.deref, c.preserveMode, c.preserveTimes = true, 'P', true, true
		case "d":
			c.deref = 'P'
		case "p":
			c.preserveMode, c.preserveTimes = true, true
		case "no-preserve":
			for _, a := range strings.Split(o.value, ",") {
				switch a {
				case "mode":
					c.preserveMode = false
				case "timestamps":
					c.preserveTimes = false
				case "all":
					c.preserveMode, c.preserveTimes = false, false
				}
			}
		case "r", "R":
			c.recursive = true
		case "f":
			c.force = true
		case "n":
			c.noClobber = true
		case "u":
			c.update = true
		case "v":
			c.verbose = true
		case "L", "H", "P":
			c.deref = int(o.name[0])
		case "T":
			noT = true
		case "t":
			tdir, haveT = o.value, true
		case "remove-destination":
			c.removeDest = true
		case "strip-trailing-slashes":
			strip = true
		case "i":
			return fail(e, "cp", 1, "interactive mode (-i) is not supported")
		case "l":
			return fail(e, "cp", 1, "hard links (-l) are not supported")
		case "s":
			return fail(e, "cp", 1, "symbolic links (-s) are not supported")
		case "parents":
			return fail(e, "cp", 1, "--parents is not supported")
		}
	}
	if strip {
		for i, p := range operands {
			if t := strings.TrimRight(p, "/"); t != "" {
				operands[i] = t
			}
		}
	}
	pairs, code, ok := filPlanTargets(ctx, e, "cp", operands, tdir, haveT, noT)
	if !ok {
		return code
	}
	status := 0
	for _, pr := range pairs {
		if ctx.Err() != nil {
			return 1
		}
		if !c.top(ctx, pr.src, pr.dst) {
			status = 1
		}
	}
	return status
}

// top copies one command-line source.
func (c *filCp) top(ctx context.Context, src, dst string) bool {
	e := c.e
	follow := c.deref == 'L' || c.deref == 'H' || c.deref == 0 && !c.recursive
	var sfi FileInfo
	var err error
	if follow {
		sfi, err = filStat(ctx, e, src)
	} else {
		sfi, err = filLstat(ctx, e, src)
	}
	if err != nil {
		fail(e, "cp", 1, "cannot stat %s: %s", filQuote(src), errText(err))
		return false
	}
	sabs := e.Abs(src)
	if sfi.IsDir() && !c.recursive {
		fail(e, "cp", 1, "-r not specified; omitting directory %s", filQuote(src))
		return false
	}
	dabs, err := filAbs(e, dst)
	if err != nil {
		fail(e, "cp", 1, "cannot create regular file %s: %s", filQuote(dst), errText(err))
		return false
	}
	c.topSrc, c.topDst, c.madeTop, c.intoSelf = src, dst, "", false
	if sfi.IsDir() && filRealpath(ctx, e, dabs) == filRealpath(ctx, e, sabs) {
		fail(e, "cp", 1, "cannot copy a directory, %s, into itself, %s", filQuote(src), filQuote(dst))
		return false
	}
	return c.copy(ctx, sabs, dabs, src, dst, sfi, follow)
}

// copy copies sabs (shown as sdisp, described by sfi) to dabs.
func (c *filCp) copy(ctx context.Context, sabs, dabs, sdisp, ddisp string, sfi FileInfo, followed bool) bool {
	e := c.e
	if ctx.Err() != nil {
		return false
	}
	dfi, derr := e.FS.Lstat(ctx, dabs)
	exists := derr == nil
	if exists {
		// The destination as written to: through a symlink.
		tfi := dfi
		if dfi.Mode&iofs.ModeSymlink != 0 {
			if t, err := e.FS.Stat(ctx, dabs); err == nil {
				tfi = t
			}
		}
		srcReal := filRealpathDir(ctx, e, sabs)
		if followed {
			srcReal = filRealpath(ctx, e, sabs)
		}
		dstReal := filRealpath(ctx, e, dabs)
		if sfi.Mode&iofs.ModeSymlink != 0 {
			dstReal = filRealpathDir(ctx, e, dabs)
		}
		if c.removeDest {
			dstReal = filRealpathDir(ctx, e, dabs)
		}
		if srcReal == dstReal {
			fail(e, "cp", 1, "%s and %s are the same file", filQuote(sdisp), filQuote(ddisp))
			return false
		}
		if c.noClobber {
			return true
		}
		if c.update && !sfi.IsDir() && !sfi.ModTime.After(tfi.ModTime) {
			return true
		}
		switch {
		case sfi.IsDir() && !tfi.IsDir():
			fail(e, "cp", 1, "cannot overwrite non-directory %s with directory %s", filQuote(ddisp), filQuote(sdisp))
			return false
		case !sfi.IsDir() && tfi.IsDir() && dfi.Mode&iofs.ModeSymlink == 0:
			fail(e, "cp", 1, "cannot overwrite directory %s with non-directory", filQuote(ddisp))
			return false
		}
	}
	switch {
	case sfi.IsDir():
		return c.copyDir(ctx, sabs, dabs, sdisp, ddisp, sfi, exists && dfi.IsDir())
	case sfi.Mode&iofs.ModeSymlink != 0:
		return c.copySymlink(ctx, sabs, dabs, sdisp, ddisp, sfi, exists)
	case !sfi.Mode.IsRegular():
		fail(e, "cp", 1, "cannot create special file %s: %s", filQuote(ddisp), errnoText(syscall.EOPNOTSUPP))
		return false
	}
	return c.copyFile(ctx, sabs, dabs, sdisp, ddisp, sfi, dfi, exists)
}

func (c *filCp) emit(sdisp, ddisp string) {
	if c.verbose {
		fmt.Fprintf(c.e.Stdout, "%s -> %s\n", filQuote(sdisp), filQuote(ddisp))
	}
}

func (c *filCp) copyFile(ctx context.Context, sabs, dabs, sdisp, ddisp string, sfi, dfi FileInfo, exists bool) bool {
	e := c.e
	target := dabs
	if exists && dfi.Mode&iofs.ModeSymlink != 0 {
		if _, err := e.FS.Stat(ctx, dabs); err != nil {
			fail(e, "cp", 1, "not writing through dangling symlink %s", filQuote(ddisp))
			return false
		}
		target = filRealpath(ctx, e, dabs)
	}
	if strings.HasSuffix(ddisp, "/") && !exists {
		c.emit(sdisp, ddisp)
		fail(e, "cp", 1, "cannot create regular file %s: %s", filQuote(ddisp), errnoText(syscall.ENOTDIR))
		return false
	}
	var oldMode iofs.FileMode
	if exists {
		if t, err := e.FS.Stat(ctx, target); err == nil {
			oldMode = t.Mode
		}
		if c.removeDest {
			if err := e.FS.Remove(ctx, dabs); err != nil {
				fail(e, "cp", 1, "cannot remove %s: %s", filQuote(ddisp), errText(err))
				return false
			}
			exists, target = false, dabs
		}
	}
	c.emit(sdisp, ddisp)
	if err := e.FS.CopyFile(ctx, sabs, target); err != nil {
		if pe, ok := err.(*iofs.PathError); ok && pe.Path == sabs {
			fail(e, "cp", 1, "cannot open %s for reading: %s", filQuote(sdisp), errText(err))
			return false
		}
		if c.force && exists {
			// -f: remove a destination that cannot be opened and retry.
			if rerr := e.FS.Remove(ctx, target); rerr == nil {
				if err = e.FS.CopyFile(ctx, sabs, target); err == nil {
					exists = false
				}
			}
		}
		if err != nil {
			fail(e, "cp", 1, "cannot create regular file %s: %s", filQuote(ddisp), errText(err))
			return false
		}
	}
	// The mode: the source's with -p; an existing file keeps its own; a
	// new one gets the source's less the umask and set-id bits.
	want := filGoMode(filUnixMode(sfi.Mode))
	switch {
	case c.preserveMode:
	case exists:
		want = filGoMode(filUnixMode(oldMode))
	default:
		want = sfi.Mode.Perm() &^ filUmask
	}
	if t, err := e.FS.Stat(ctx, target); err == nil && filUnixMode(t.Mode) != filUnixMode(want) {
		if err := e.FS.Chmod(ctx, target, want); err != nil {
			fail(e, "cp", 1, "preserving permissions for %s: %s", filQuote(ddisp), errText(err))
			return false
		}
	}
	return c.times(ctx, target, ddisp, sfi.ModTime)
}

func (c *filCp) times(ctx context.Context, dabs, ddisp string, mtime time.Time) bool {
	if !c.preserveTimes {
		return true
	}
	if err := c.e.FS.Chtimes(ctx, dabs, time.Time{}, mtime); err != nil {
		fail(c.e, "cp", 1, "preserving times for %s: %s", filQuote(ddisp), errText(err))
		return false
	}
	return true
}

func (c *filCp) copySymlink(ctx context.Context, sabs, dabs, sdisp, ddisp string, sfi FileInfo, exists bool) bool {
	e := c.e
	target := sfi.Target
	if target == "" {
		t, err := e.FS.Readlink(ctx, sabs)
		if err != nil {
			fail(e, "cp", 1, "cannot read symbolic link %s: %s", filQuote(sdisp), errText(err))
			return false
		}
		target = t
	}
	if exists {
		if err := e.FS.Remove(ctx, dabs); err != nil {
			fail(e, "cp", 1, "cannot remove %s: %s", filQuote(ddisp), errText(err))
			return false
		}
		if c.verbose {
			fmt.Fprintf(e.Stdout, "removed %s\n", filQuote(ddisp))
		}
	}
	if err := e.FS.Symlink(ctx, target, dabs); err != nil {
		fail(e, "cp", 1, "cannot create symbolic link %s: %s", filQuote(ddisp), errText(err))
		return false
	}
	c.emit(sdisp, ddisp)
	return true
}

func (c *filCp) copyDir(ctx context.Context, sabs, dabs, sdisp, ddisp string, sfi FileInfo, exists bool) bool {
	e := c.e
	if !exists {
		if err := e.FS.Mkdir(ctx, dabs, 0o700); err != nil {
			fail(e, "cp", 1, "cannot create directory %s: %s", filQuote(ddisp), errText(err))
			return false
		}
		if c.madeTop == "" {
			c.madeTop = dabs
		}
		c.emit(sdisp, ddisp)
	}
	ents, err := e.FS.ReadDir(ctx, sabs)
	if err != nil {
		fail(e, "cp", 1, "cannot access %s: %s", filQuote(sdisp), errText(err))
		return false
	}
	ok := true
	for _, ent := range ents {
		if ctx.Err() != nil {
			return false
		}
		cs, cd := path.Join(sabs, ent.Name), path.Join(dabs, ent.Name)
		if cs == c.madeTop && ent.IsDir() {
			fail(e, "cp", 1, "cannot copy a directory, %s, into itself, %s", filQuote(c.topSrc), filQuote(c.topDst))
			c.intoSelf = true
			ok = false
			break
		}
		var fi FileInfo
		follow := c.deref == 'L'
		if follow {
			t, err := e.FS.Stat(ctx, cs)
			if err != nil {
				fail(e, "cp", 1, "cannot stat %s: %s", filQuote(filJoin(sdisp, ent.Name)), errText(err))
				ok = false
				continue
			}
			fi = t
		} else {
			fi = ent
			if fi.Mode&iofs.ModeSymlink != 0 && fi.Target == "" {
				fi.Target, _ = e.FS.Readlink(ctx, cs)
			}
		}
		if !c.copy(ctx, cs, cd, filJoin(sdisp, ent.Name), filJoin(ddisp, ent.Name), fi, follow) {
			ok = false
		}
		if c.intoSelf {
			break
		}
	}
	// The directory's mode: the source's with -p, else the source's less
	// the umask for a new one.
	if !exists || c.preserveMode {
		want := filGoMode(filUnixMode(sfi.Mode))
		if !c.preserveMode {
			want = sfi.Mode.Perm() &^ filUmask
		}
		if err := e.FS.Chmod(ctx, dabs, iofs.ModeDir|want); err != nil {
			fail(e, "cp", 1, "preserving permissions for %s: %s", filQuote(ddisp), errText(err))
			ok = false
		}
	}
	if c.preserveTimes {
		if !c.times(ctx, dabs, ddisp, sfi.ModTime) {
			ok = false
		}
	}
	return ok
}
