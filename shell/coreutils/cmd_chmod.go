package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"
)

func init() { register("chmod", filChmodMain) }

var filChmodSpec = optSpec{
	short: "Rcfv",
	long: map[string]bool{
		"changes": false, "silent": false, "quiet": false, "verbose": false,
		"recursive": false, "reference": true, "no-preserve-root": false,
		"preserve-root": false,
	},
	alias: map[string]string{"changes": "c", "silent": "f", "quiet": "f", "verbose": "v", "recursive": "R"},
}

type filChmod struct {
	e                       *Env
	changes                 []filModeChange
	ref                     *uint32
	recursive, verbose, chg bool
	silent, preserveRoot    bool
	diagnose                bool
}

func filChmodMain(ctx context.Context, e *Env, args []string) int {
	// "chmod -w file": an option-looking mode is the mode.
	var modes []string
	rest := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' && strings.IndexByte("rwxXstugoa,+=01234567", a[1]) >= 0 {
			modes = append(modes, a)
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, code, ok := filParse(e, "chmod", &filChmodSpec, rest, 1)
	if !ok {
		return code
	}
	c := &filChmod{e: e}
	var ref string
	haveRef := false
	for _, o := range opts {
		switch o.name {
		case "R":
			c.recursive = true
		case "c":
			c.chg = true
		case "v":
			c.verbose = true
		case "f":
			c.silent = true
		case "reference":
			ref, haveRef = o.value, true
		case "preserve-root":
			c.preserveRoot = true
		case "no-preserve-root":
			c.preserveRoot = false
		}
	}
	mode := strings.Join(modes, ",")
	if !haveRef && mode == "" {
		if len(operands) == 0 {
			return badUsage(e, "chmod", fmt.Errorf("missing operand"), 1)
		}
		mode, operands = operands[0], operands[1:]
	}
	if len(operands) == 0 {
		if mode == "" || haveRef && len(modes) == 0 {
			return badUsage(e, "chmod", fmt.Errorf("missing operand"), 1)
		}
		return badUsage(e, "chmod", fmt.Errorf("missing operand after %s", filQuoteLocale(mode)), 1)
	}
	if haveRef {
		fi, err := filStat(ctx, e, ref)
		if err != nil {
			return fail(e, "chmod", 1, "failed to get attributes of %s: %s", filQuote(ref), errText(err))
		}
		m := filUnixMode(fi.Mode)
		c.ref = &m
	} else {
		ch, ok := filParseMode(mode)
		if !ok {
			return badUsage(e, "chmod", fmt.Errorf("invalid mode: %s", filQuoteLocale(mode)), 1)
		}
		c.changes = ch
		c.diagnose = len(modes) > 0
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		if !c.operand(ctx, p) {
			status = 1
		}
	}
	return status
}

func (c *filChmod) operand(ctx context.Context, p string) bool {
	e := c.e
	lfi, err := filLstat(ctx, e, p)
	if err != nil {
		if !c.silent {
			failCh := fmt.Sprintf("cannot access %s: %s", filQuote(p), errText(err))
			if c.verbose {
				fmt.Fprintf(e.Stdout, "%s could not be accessed\n", filQuote(p))
			}
			fail(e, "chmod", 1, "%s", failCh)
		}
		return false
	}
	fi := lfi
	if lfi.Mode&iofs.ModeSymlink != 0 {
		fi, err = e.FS.Stat(ctx, e.Abs(p))
		if err != nil {
			if !c.silent {
				if c.verbose {
					fmt.Fprintf(e.Stdout, "%s could not be accessed\n", filQuote(p))
				}
				if filErrno(err) == syscall.ENOENT {
					fail(e, "chmod", 1, "cannot operate on dangling symlink %s", filQuote(p))
				} else {
					fail(e, "chmod", 1, "cannot access %s: %s", filQuote(p), errText(err))
				}
			}
			return false
		}
	}
	abs := e.Abs(p)
	if c.recursive && c.preserveRoot && abs == "/" && fi.IsDir() {
		fail(e, "chmod", 1, "it is dangerous to operate recursively on %s", filQuote(p))
		fail(e, "chmod", 1, "use --no-preserve-root to override this failsafe")
		return false
	}
	ok := c.one(ctx, abs, p, fi)
	if c.recursive && fi.IsDir() {
		if !c.tree(ctx, abs, filTrimSlashes(p)) {
			ok = false
		}
	}
	return ok
}

func (c *filChmod) tree(ctx context.Context, abs, disp string) bool {
	e := c.e
	ents, err := e.FS.ReadDir(ctx, abs)
	if err != nil {
		if !c.silent {
			fail(e, "chmod", 1, "cannot read directory %s: %s", filQuote(disp), errText(err))
		}
		return false
	}
	ok := true
	for _, ent := range ents {
		if ctx.Err() != nil {
			return false
		}
		cabs, cdisp := filJoin(abs, ent.Name), filJoin(disp, ent.Name)
		if ent.Mode&iofs.ModeSymlink != 0 {
			if c.verbose {
				fmt.Fprintf(e.Stdout, "neither symbolic link %s nor referent has been changed\n", filQuote(cdisp))
			}
			continue
		}
		if !c.one(ctx, cabs, cdisp, ent) {
			ok = false
		}
		if ent.IsDir() && !c.tree(ctx, cabs, cdisp) {
			ok = false
		}
	}
	return ok
}

// one changes the mode of one file, whose current state is fi.
func (c *filChmod) one(ctx context.Context, abs, disp string, fi FileInfo) bool {
	e := c.e
	old := filUnixMode(fi.Mode)
	var nm uint32
	if c.ref != nil {
		nm = *c.ref
	} else {
		nm, _ = filAdjustMode(old, fi.IsDir(), filUmask, c.changes)
	}
	changed := nm != old
	if changed {
		if err := e.FS.Chmod(ctx, abs, fi.Mode&iofs.ModeType|filGoMode(nm)); err != nil {
			if !c.silent {
				fail(e, "chmod", 1, "changing permissions of %s: %s", filQuote(disp), errText(err))
			}
			return false
		}
	}
	if c.verbose || c.chg && changed {
		typ := fi.Mode & iofs.ModeType
		if changed {
			fmt.Fprintf(e.Stdout, "mode of %s changed from %04o (%s) to %04o (%s)\n", filQuote(disp),
				old, filModeString(typ | filGoMode(old))[1:], nm, filModeString(typ | filGoMode(nm))[1:])
		} else {
			fmt.Fprintf(e.Stdout, "mode of %s retained as %04o (%s)\n", filQuote(disp), old, filModeString(typ | filGoMode(old))[1:])
		}
	}
	if c.diagnose && c.ref == nil {
		naive, _ := filAdjustMode(old, fi.IsDir(), 0, c.changes)
		if nm&^naive != 0 {
			typ := fi.Mode & iofs.ModeType
			fail(e, "chmod", 1, "%s: new permissions are %s, not %s", filQuoteF(disp),
				filModeString(typ | filGoMode(nm))[1:], filModeString(typ | filGoMode(naive))[1:])
			return false
		}
	}
	return true
}

// filQuoteF quotes a name as GNU's quotef does: bare unless it needs
// quoting.
func filQuoteF(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("'\"\\$`*?[]{}()<>|&;#~!^=", c) >= 0 {
			return filQuote(s)
		}
	}
	return s
}
