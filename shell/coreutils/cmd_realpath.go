package coreutils

import (
	"context"
	"errors"
	iofs "io/fs"
	"strings"
	"syscall"
)

func init() { register("realpath", txtRealpathMain) }

var txtRealpathSpec = optSpec{
	short: "EeLmPqsz",
	long: map[string]bool{
		"canonicalize": false, "canonicalize-existing": false, "canonicalize-missing": false,
		"logical": false, "physical": false, "quiet": false, "strip": false, "no-symlinks": false,
		"zero": false, "relative-to": true, "relative-base": true,
	},
	alias: map[string]string{
		"canonicalize": "E", "canonicalize-existing": "e", "canonicalize-missing": "m",
		"logical": "L", "physical": "P", "quiet": "q", "strip": "s", "no-symlinks": "s", "zero": "z",
	},
}

// Canonicalization modes, as gnulib's canonicalize_mode_t.
const (
	txtCanExisting   = 0
	txtCanAllButLast = 1
	txtCanMissing    = 2
)

func txtErrno(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	if errors.Is(err, iofs.ErrNotExist) {
		return syscall.ENOENT
	}
	return syscall.EIO
}

// txtCanonicalize is gnulib's canonicalize_filename_mode over the
// workspace FS. name is resolved against dir.
func txtCanonicalize(ctx context.Context, e *Env, name string, mode int, logical bool) (string, error) {
	if name == "" {
		return "", syscall.ENOENT
	}
	if !strings.HasPrefix(name, "/") {
		name = strings.TrimSuffix(e.Dir, "/") + "/" + name
	}
	dest := "/"
	numLinks := 0
	seen := map[string]bool{}
	rest := name
	accessible := func(p string) error {
		_, err := e.FS.Stat(ctx, p)
		return err
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			break
		}
		comp := rest
		end := ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, end = rest[:i], rest[i:]
		}
		rest = end
		switch comp {
		case ".":
			continue
		case "..":
			if dest != "/" {
				dest = dest[:strings.LastIndexByte(dest, '/')]
				if dest == "" {
					dest = "/"
				}
			}
			continue
		}
		parent := dest
		if dest == "/" {
			dest = "/" + comp
		} else {
			dest = dest + "/" + comp
		}
		var target string
		isLink := false
		var lerr error
		if !logical {
			fi, err := e.FS.Lstat(ctx, dest)
			if err != nil {
				lerr = err
			} else if fi.Mode&iofs.ModeSymlink != 0 {
				isLink = true
				target = fi.Target
				if target == "" {
					if target, err = e.FS.Readlink(ctx, dest); err != nil {
						return "", err
					}
				}
			}
		}
		if isLink {
			if numLinks < 20 {
				numLinks++
			} else if comp != "" {
				key := parent + "\x00" + comp
				if seen[key] {
					if mode == txtCanMissing {
						continue
					}
					return "", syscall.ELOOP
				}
				seen[key] = true
			}
			rest = target + rest
			if strings.HasPrefix(target, "/") {
				dest = "/"
			} else {
				dest = parent
			}
			continue
		}
		if mode == txtCanMissing {
			continue
		}
		var err error
		switch {
		case txtSuffixNeedsDir(end):
			fi, serr := e.FS.Stat(ctx, dest)
			if serr != nil {
				err = serr
			} else if !fi.IsDir() {
				err = syscall.ENOTDIR
			}
		case !logical:
			err = lerr
		case end != "":
			err = nil
		default:
			err = accessible(dest)
		}
		if err == nil {
			continue
		}
		if mode == txtCanAllButLast && txtErrno(err) == syscall.ENOENT && strings.Trim(end, "/") == "" {
			continue
		}
		return "", txtErrno(err)
	}
	return dest, nil
}

// txtSuffixNeedsDir is gnulib's suffix_requires_dir_check: a trailing
// slash, or a "." or ".." component, needs the name to be a directory.
func txtSuffixNeedsDir(end string) bool {
	for strings.HasPrefix(end, "/") {
		end = strings.TrimLeft(end, "/")
		if end == "" {
			return true
		}
		if end[0] != '.' {
			return false
		}
		end = end[1:]
		if end == "" || (end[0] == '.' && (len(end) == 1 || end[1] == '/')) {
			return true
		}
	}
	return false
}

// txtRealpathCanon canonicalizes twice in logical mode, as realpath's
// realpath_canon does.
func txtRealpathCanon(ctx context.Context, e *Env, name string, mode int, noLinks, logical bool) (string, error) {
	p, err := txtCanonicalize(ctx, e, name, mode, noLinks)
	if err == nil && logical {
		p, err = txtCanonicalize(ctx, e, p, mode, false)
	}
	return p, err
}

// txtPathPrefix tells whether prefix is path or one of its parents.
func txtPathPrefix(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// txtRelPath writes path relative to dir (both canonical).
func txtRelPath(path, dir string) string {
	common := 0
	i := 0
	for i < len(path) && i < len(dir) && path[i] == dir[i] {
		if path[i] == '/' {
			common = i + 1
		}
		i++
	}
	if (i == len(path) && i == len(dir)) || (i == len(dir) && i < len(path) && path[i] == '/') || (i == len(path) && i < len(dir) && dir[i] == '/') {
		common = i
	}
	relto := strings.TrimPrefix(dir[common:], "/")
	fname := strings.TrimPrefix(path[common:], "/")
	if relto != "" {
		s := ".." + strings.Repeat("/..", strings.Count(relto, "/"))
		if fname != "" {
			s += "/" + fname
		}
		return s
	}
	if fname == "" {
		return "."
	}
	return fname
}

func txtRealpathMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := txtParse(e, "realpath", &txtRealpathSpec, args, 1)
	if !ok {
		return code
	}
	mode := txtCanAllButLast
	noLinks, logical, quiet, zero := false, false, false, false
	relTo, relBase := "", ""
	hasRelTo, hasRelBase := false, false
	for _, o := range opts {
		switch o.name {
		case "E":
			mode = txtCanAllButLast
		case "e":
			mode = txtCanExisting
		case "m":
			mode = txtCanMissing
		case "L":
			noLinks, logical = true, true
		case "s":
			noLinks, logical = true, false
		case "P":
			noLinks, logical = false, false
		case "q":
			quiet = true
		case "z":
			zero = true
		case "relative-to":
			relTo, hasRelTo = o.value, true
		case "relative-base":
			relBase, hasRelBase = o.value, true
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "realpath", errors.New("missing operand"), 1)
	}
	if hasRelBase && !hasRelTo {
		relTo, hasRelTo = relBase, true
	}
	needDir := mode == txtCanExisting
	canon := func(p string) (string, error) { return txtRealpathCanon(ctx, e, p, mode, noLinks, logical) }
	checkDir := func(name, p string) int {
		if !needDir {
			return 0
		}
		fi, err := e.FS.Stat(ctx, p)
		if err != nil {
			return fail(e, "realpath", 1, "cannot stat %s: %s", txtQuoteAF(p), errText(err))
		}
		if !fi.IsDir() {
			return fail(e, "realpath", 1, "%s: %s", txtQuoteF(name), errnoText(syscall.ENOTDIR))
		}
		return 0
	}
	var canRelTo, canRelBase string
	useRelTo, useRelBase := false, false
	if hasRelTo {
		p, err := canon(relTo)
		if err != nil {
			return fail(e, "realpath", 1, "%s: %s", txtQuoteF(relTo), errText(err))
		}
		if c := checkDir(relTo, p); c != 0 {
			return c
		}
		canRelTo, useRelTo = p, true
	}
	if hasRelBase && relBase == relTo {
		canRelBase, useRelBase = canRelTo, true
	} else if hasRelBase {
		p, err := canon(relBase)
		if err != nil {
			return fail(e, "realpath", 1, "%s: %s", txtQuoteF(relBase), errText(err))
		}
		if c := checkDir(relBase, p); c != 0 {
			return c
		}
		if txtPathPrefix(p, canRelTo) {
			canRelBase, useRelBase = p, true
		} else {
			canRelBase, useRelBase = canRelTo, true
			useRelTo = false
		}
	}
	out := txtOut(e)
	status := 0
	for _, name := range operands {
		p, err := canon(name)
		if err != nil {
			if !quiet {
				out.Flush()
				fail(e, "realpath", 1, "%s: %s", txtQuoteF(name), errText(err))
			}
			status = 1
			continue
		}
		if useRelTo && !(useRelBase && !txtPathPrefix(canRelBase, p)) {
			p = txtRelPath(p, canRelTo)
		}
		out.WriteString(p)
		if zero {
			out.WriteByte(0)
		} else {
			out.WriteByte('\n')
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, "realpath", err)
	}
	return status
}
