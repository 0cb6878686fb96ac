package coreutils

// Helpers shared by the file commands (ls, find, cp, mv, rm, ...). Every
// package-level name here starts with "fil".

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// filParse parses a command line's options; on a getopt error it prints
// GNU's complaint and returns ok false with status.
func filParse(e *Env, name string, spec *optSpec, args []string, status int) (opts []opt, operands []string, code int, ok bool) {
	opts, operands, err := spec.parse(args[1:])
	if err != nil {
		return nil, nil, badUsage(e, name, err, status), false
	}
	return opts, operands, 0, true
}

// filQuote quotes s the way GNU's quoteaf does (shell-escape-always
// style): 'x', "it's", 'a'$'\n”b'.
func filQuote(s string) string {
	needEsc := false
	hasSingle := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			needEsc = true
		}
		if c == '\'' {
			hasSingle = true
		}
	}
	if !utf8.ValidString(s) {
		needEsc = true
	}
	if !needEsc {
		if !hasSingle {
			return "'" + s + "'"
		}
		if !strings.ContainsAny(s, "\"$`\\") {
			return "\"" + s + "\""
		}
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteByte('\'')
	inEsc := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		if (r == utf8.RuneError && size == 1) || c < 0x20 || c == 0x7f {
			if !inEsc {
				b.WriteString("'$'")
				inEsc = true
			}
			b.WriteString(filCEscape(c))
			i++
			continue
		}
		if inEsc {
			b.WriteString("''")
			inEsc = false
		}
		if c == '\'' {
			b.WriteString(`'\''`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if inEsc {
		b.WriteString("'")
	} else {
		b.WriteByte('\'')
	}
	return b.String()
}

// filCEscape is the C escape of a byte, as quotearg writes it.
func filCEscape(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\%03o`, c)
}

// filQuoteLocale quotes s the way GNU's quote() does in a UTF-8 locale:
// ‘x’, with C escapes for control characters.
func filQuoteLocale(s string) string {
	var b strings.Builder
	b.WriteString("\u2018")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case (r == utf8.RuneError && size == 1) || c < 0x20 || c == 0x7f:
			b.WriteString(filCEscape(c))
			i++
			continue
		case c == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("\u2019")
	return b.String()
}

// filErrno is the errno of err, or 0.
func filErrno(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}

// filPathErr makes an error of errno for name.
func filPathErr(op, name string, errno syscall.Errno) error {
	return &iofs.PathError{Op: op, Path: name, Err: errno}
}

// filAbs resolves an operand as given; an empty operand names nothing.
func filAbs(e *Env, p string) (string, error) {
	if p == "" {
		return "", filPathErr("stat", p, syscall.ENOENT)
	}
	return e.Abs(p), nil
}

// filSlashed reports whether an operand ends in "/" (or "/." and the
// like), so that it must name a directory.
func filSlashed(p string) bool {
	return strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || p == "."
}

// filLstat is lstat(2) of an operand: it follows a symlink when the
// operand ends in a slash, and then requires a directory.
func filLstat(ctx context.Context, e *Env, p string) (FileInfo, error) {
	abs, err := filAbs(e, p)
	if err != nil {
		return FileInfo{}, err
	}
	if strings.HasSuffix(p, "/") && abs != "/" {
		fi, err := e.FS.Stat(ctx, abs)
		if err != nil {
			if filErrno(err) == syscall.ENOENT {
				if _, lerr := e.FS.Lstat(ctx, abs); lerr == nil {
					return FileInfo{}, filPathErr("lstat", p, syscall.ENOTDIR)
				}
			}
			return FileInfo{}, err
		}
		if !fi.IsDir() {
			return FileInfo{}, filPathErr("lstat", p, syscall.ENOTDIR)
		}
		return fi, nil
	}
	return e.FS.Lstat(ctx, abs)
}

// filStat is stat(2) of an operand, requiring a directory when it ends in
// a slash.
func filStat(ctx context.Context, e *Env, p string) (FileInfo, error) {
	abs, err := filAbs(e, p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := e.FS.Stat(ctx, abs)
	if err != nil {
		return FileInfo{}, err
	}
	if strings.HasSuffix(p, "/") && !fi.IsDir() {
		return FileInfo{}, filPathErr("stat", p, syscall.ENOTDIR)
	}
	return fi, nil
}

// filJoin joins a directory as the user wrote it and an entry name, the
// way fts does ("d/" + "x" is "d/x").
func filJoin(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// filTrimSlashes reduces trailing slashes to one, as fts_open does.
func filTrimSlashes(p string) string {
	for len(p) > 1 && strings.HasSuffix(p, "//") {
		p = p[:len(p)-1]
	}
	return p
}

// filModeString is the 10-character mode of ls -l and stat %A.
func filModeString(m iofs.FileMode) string {
	var b [10]byte
	switch {
	case m&iofs.ModeDir != 0:
		b[0] = 'd'
	case m&iofs.ModeSymlink != 0:
		b[0] = 'l'
	case m&iofs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&iofs.ModeSocket != 0:
		b[0] = 's'
	case m&iofs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&iofs.ModeDevice != 0:
		b[0] = 'b'
	default:
		b[0] = '-'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b[1+i] = rwx[i]
		} else {
			b[1+i] = '-'
		}
	}
	special := func(i int, set bool, lower, upper byte) {
		if !set {
			return
		}
		if b[i] == '-' {
			b[i] = upper
		} else {
			b[i] = lower
		}
	}
	special(3, m&iofs.ModeSetuid != 0, 's', 'S')
	special(6, m&iofs.ModeSetgid != 0, 's', 'S')
	special(9, m&iofs.ModeSticky != 0, 't', 'T')
	return string(b[:])
}

// filUnixMode is the permission and special bits of m as in st_mode
// (07777).
func filUnixMode(m iofs.FileMode) uint32 {
	out := uint32(m.Perm())
	if m&iofs.ModeSetuid != 0 {
		out |= 0o4000
	}
	if m&iofs.ModeSetgid != 0 {
		out |= 0o2000
	}
	if m&iofs.ModeSticky != 0 {
		out |= 0o1000
	}
	return out
}

// filGoMode is the inverse of filUnixMode.
func filGoMode(u uint32) iofs.FileMode {
	m := iofs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= iofs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= iofs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= iofs.ModeSticky
	}
	return m
}

// filUser and filGroup name ids: the FS knows numbers only; 0 is root.
func filUser(uid uint32) string {
	if uid == 0 {
		return "root"
	}
	return strconv.FormatUint(uint64(uid), 10)
}

func filGroup(gid uint32) string { return filUser(gid) }

// filBlocks approximates st_blocks (512-byte units) as ext4 allocates a
// file written normally: whole 4 KiB blocks, none for an empty file or a
// symlink (whose target fits in the inode), one for a directory.
func filBlocks(fi FileInfo) int64 {
	switch {
	case fi.Mode&iofs.ModeSymlink != 0:
		return 0
	case fi.IsDir():
		return max(8, (fi.Size+4095)/4096*8)
	case !fi.Mode.IsRegular():
		return 0
	}
	return (fi.Size + 4095) / 4096 * 8
}

// filIsDotOrDotDot reports whether p's last component is "." or "..".
func filIsDotOrDotDot(p string) bool {
	p = strings.TrimRight(p, "/")
	b := p[strings.LastIndexByte(p, '/')+1:]
	return b == "." || b == ".."
}

// filHuman formats a size as ls -h, du -h do: powers of 1024, one decimal
// below 10, rounded up.
func filHuman(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	const units = "KMGTPEZY"
	v := float64(n)
	u := -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	// Round up to one decimal when below 10, else to an integer.
	if v < 10 {
		t := filCeil(v * 10)
		if t >= 100 {
			return strconv.FormatInt(int64(filCeil(v)), 10) + string(units[u])
		}
		return fmt.Sprintf("%d.%d%c", int64(t)/10, int64(t)%10, units[u])
	}
	c := filCeil(v)
	if c >= 1024 && u < len(units)-1 {
		return "1.0" + string(units[u+1])
	}
	return strconv.FormatInt(int64(c), 10) + string(units[u])
}

func filCeil(v float64) float64 {
	i := float64(int64(v))
	if v > i {
		return i + 1
	}
	return i
}

// filPair is one source and its destination, as written and as shown.
type filPair struct{ src, dst string }

// filPlanTargets works out cp's and mv's sources and destinations from
// the operands, -t DIR and -T, printing GNU's complaint on a bad command
// line.
func filPlanTargets(ctx context.Context, e *Env, cmd string, operands []string, tdir string, haveT, noT bool) ([]filPair, int, bool) {
	into := func(srcs []string, dir string) []filPair {
		var out []filPair
		for _, s := range srcs {
			base := path.Base(strings.TrimRight(s, "/"))
			if strings.Trim(s, "/") == "" {
				base = "/"
			}
			out = append(out, filPair{s, filJoin(dir, base)})
		}
		return out
	}
	if haveT {
		if noT {
			return nil, fail(e, cmd, 1, "cannot combine --target-directory (-t) and --no-target-directory (-T)"), false
		}
		fi, err := filStat(ctx, e, tdir)
		if err != nil {
			return nil, fail(e, cmd, 1, "target directory %s: %s", filQuote(tdir), errText(err)), false
		}
		if !fi.IsDir() {
			return nil, fail(e, cmd, 1, "target directory %s: %s", filQuote(tdir), errnoText(syscall.ENOTDIR)), false
		}
		if len(operands) == 0 {
			return nil, badUsage(e, cmd, fmt.Errorf("missing file operand"), 1), false
		}
		return into(operands, tdir), 0, true
	}
	switch {
	case len(operands) == 0:
		return nil, badUsage(e, cmd, fmt.Errorf("missing file operand"), 1), false
	case len(operands) == 1:
		return nil, badUsage(e, cmd, fmt.Errorf("missing destination file operand after %s", filQuote(operands[0])), 1), false
	}
	if noT {
		if len(operands) > 2 {
			return nil, badUsage(e, cmd, fmt.Errorf("extra operand %s", filQuote(operands[2])), 1), false
		}
		return []filPair{{operands[0], operands[1]}}, 0, true
	}
	last := operands[len(operands)-1]
	fi, err := filStat(ctx, e, last)
	if err == nil && fi.IsDir() {
		return into(operands[:len(operands)-1], last), 0, true
	}
	if len(operands) == 2 {
		return []filPair{{operands[0], last}}, 0, true
	}
	if err == nil {
		err = syscall.ENOTDIR
	}
	return nil, fail(e, cmd, 1, "target %s: %s", filQuote(last), errText(err)), false
}

// filInside reports whether p is q or below it (both clean and absolute).
func filInside(p, q string) bool {
	return p == q || q == "/" || strings.HasPrefix(p, q+"/")
}
