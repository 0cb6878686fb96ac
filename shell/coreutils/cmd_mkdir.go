package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"
)

func init() { register("mkdir", filMkdirMain) }

var filMkdirSpec = optSpec{
	short: "pm:vZ",
	long:  map[string]bool{"parents": false, "mode": true, "verbose": false, "context": false},
	alias: map[string]string{"parents": "p", "mode": "m", "verbose": "v", "context": "Z"},
}

func filMkdirMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "mkdir", &filMkdirSpec, args, 1)
	if !ok {
		return code
	}
	parents, verbose := false, false
	var mode *uint32
	for _, o := range opts {
		switch o.name {
		case "p":
			parents = true
		case "v":
			verbose = true
		case "m":
			ch, ok := filParseMode(o.value)
			if !ok {
				return fail(e, "mkdir", 1, "invalid mode %s", filQuoteLocale(o.value))
			}
			m, _ := filAdjustMode(0o777, true, filUmask, ch)
			mode = &m
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "mkdir", fmt.Errorf("missing operand"), 1)
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		if !filMkdir(ctx, e, p, parents, verbose, mode) {
			status = 1
		}
	}
	return status
}

// filMkdir makes directory p (and with parents its missing ancestors).
func filMkdir(ctx context.Context, e *Env, p string, parents, verbose bool, mode *uint32) bool {
	cantCreate := func(name string, err error) bool {
		fail(e, "mkdir", 1, "cannot create directory %s: %s", filQuoteLocale(name), errText(err))
		return false
	}
	if p == "" {
		return cantCreate(p, syscall.ENOENT)
	}
	made := func(name string) {
		if verbose {
			fmt.Fprintf(e.Stdout, "mkdir: created directory %s\n", filQuote(name))
		}
	}
	if parents {
		// Each ancestor, as written.
		for i := 1; i < len(p); i++ {
			if p[i] != '/' || p[i-1] == '/' {
				continue
			}
			prefix := p[:i]
			if rest := strings.TrimLeft(p[i:], "/"); rest == "" {
				break
			}
			abs := e.Abs(prefix)
			fi, err := e.FS.Stat(ctx, abs)
			if err == nil {
				if !fi.IsDir() {
					return cantCreate(prefix, syscall.ENOTDIR)
				}
				continue
			}
			if err := e.FS.Mkdir(ctx, abs, 0o755); err != nil {
				if filErrno(err) == syscall.EEXIST {
					continue
				}
				return cantCreate(prefix, err)
			}
			made(prefix)
		}
	}
	abs := e.Abs(p)
	if err := e.FS.Mkdir(ctx, abs, 0o755); err != nil {
		if parents && filErrno(err) == syscall.EEXIST {
			if fi, serr := e.FS.Stat(ctx, abs); serr == nil && fi.IsDir() {
				return true
			}
		}
		return cantCreate(p, err)
	}
	made(p)
	if mode != nil && *mode != 0o755 {
		if err := e.FS.Chmod(ctx, abs, iofs.ModeDir|filGoMode(*mode)); err != nil {
			fail(e, "mkdir", 1, "cannot set permissions of %s: %s", filQuoteLocale(p), errText(err))
			return false
		}
	}
	return true
}
