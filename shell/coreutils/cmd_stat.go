package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strconv"
	"strings"
	"time"
)

func init() { register("stat", filStatMain) }

var filStatSpec = optSpec{
	short: "c:fLt",
	long: map[string]bool{
		"format": true, "printf": true, "dereference": false, "terse": false,
		"file-system": false, "cached": true,
	},
	alias: map[string]string{"format": "c", "dereference": "L", "terse": "t", "file-system": "f"},
}

// filStatMain prints file status. What the FS does not know is approximated:
// the device is 0, access, change and birth times are the modification
// time (birth "-"), and blocks are whole 4 KiB blocks (see filBlocks).
func filStatMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "stat", &filStatSpec, args, 1)
	if !ok {
		return code
	}
	var format string
	haveFormat, printf, follow, terse := false, false, false, false
	for _, o := range opts {
		switch o.name {
		case "c":
			format, haveFormat, printf = o.value, true, false
		case "printf":
			format, haveFormat, printf = o.value, true, true
		case "L":
			follow = true
		case "t":
			terse = true
		case "f":
			return fail(e, "stat", 1, "file system status (-f) is not supported")
		}
	}
	if len(operands) == 0 {
		return badUsage(e, "stat", fmt.Errorf("missing operand"), 1)
	}
	status := 0
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		var fi FileInfo
		var err error
		if follow {
			fi, err = filStat(ctx, e, p)
		} else {
			fi, err = filLstat(ctx, e, p)
		}
		if err != nil {
			status = fail(e, "stat", 1, "cannot statx %s: %s", filQuote(p), errText(err))
			continue
		}
		if fi.Mode&iofs.ModeSymlink != 0 && fi.Target == "" {
			fi.Target, _ = e.FS.Readlink(ctx, e.Abs(p))
		}
		f := format
		switch {
		case haveFormat && printf:
			f = filEscapes(f)
		case haveFormat:
		case terse:
			f = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %W %o\n"
		default:
			f = filStatDefault(fi)
		}
		out := filStatFormat(f, p, fi)
		if haveFormat && !printf {
			out += "\n"
		}
		fmt.Fprint(e.Stdout, out)
	}
	return status
}

func filStatDefault(fi FileInfo) string {
	name := "  File: %n\n"
	if fi.Mode&iofs.ModeSymlink != 0 {
		name = "  File: %n -> " + strings.ReplaceAll(fi.Target, "%", "%%") + "\n"
	}
	return name +
		"  Size: %-10s\tBlocks: %-10b IO Block: %-6o %F\n" +
		"Device: %Hd,%Ld\tInode: %-11i Links: %h\n" +
		"Access: (%04a/%10.10A)  Uid: (%5u/%8U)   Gid: (%5g/%8G)\n" +
		"Access: %x\nModify: %y\nChange: %z\n Birth: %w\n"
}

// filStatFormat expands stat's format directives for file p.
func filStatFormat(f, p string, fi FileInfo) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(f) {
			b.WriteByte('%')
			break
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0'", f[j]) >= 0 {
			j++
		}
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j < len(f) && f[j] == '.' {
			j++
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
		}
		if j >= len(f) {
			b.WriteString(f[i:])
			break
		}
		mods := f[i+1 : j]
		d := f[j]
		if d == 'H' || d == 'L' {
			if j+1 < len(f) && (f[j+1] == 'd' || f[j+1] == 'r') {
				j++
				b.WriteString(filStatNum(mods, 0))
				i = j
				continue
			}
		}
		i = j
		if d == '%' {
			b.WriteByte('%')
			continue
		}
		b.WriteString(filStatDirective(d, mods, p, fi))
	}
	return b.String()
}

func filStatNum(mods string, n int64) string {
	return fmt.Sprintf("%"+strings.ReplaceAll(mods, "'", "")+"d", n)
}

func filStatStr(mods, s string) string {
	// Numeric flags mean nothing for strings.
	i := 0
	for i < len(mods) && strings.IndexByte("-+ #0'", mods[i]) >= 0 {
		i++
	}
	flags := strings.NewReplacer("'", "", "0", "", "+", "", " ", "", "#", "").Replace(mods[:i])
	return fmt.Sprintf("%"+flags+mods[i:]+"s", s)
}

func filStatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.000000000 -0700")
}

func filStatDirective(d byte, mods, p string, fi FileInfo) string {
	mode := filUnixMode(fi.Mode)
	switch d {
	case 'n':
		return filStatStr(mods, p)
	case 'N':
		s := filQuote(p)
		if fi.Mode&iofs.ModeSymlink != 0 {
			s += " -> " + filQuote(fi.Target)
		}
		return filStatStr(mods, s)
	case 's':
		return filStatNum(mods, fi.Size)
	case 'a':
		return fmt.Sprintf("%"+strings.ReplaceAll(mods, "'", "")+"o", mode)
	case 'A':
		return filStatStr(mods, filModeString(fi.Mode))
	case 'f':
		return fmt.Sprintf("%"+strings.ReplaceAll(mods, "'", "")+"x", filRawMode(fi.Mode))
	case 'F':
		return filStatStr(mods, filFileType(fi))
	case 'U':
		return filStatStr(mods, filUser(fi.Uid))
	case 'G':
		return filStatStr(mods, filGroup(fi.Gid))
	case 'u':
		return filStatNum(mods, int64(fi.Uid))
	case 'g':
		return filStatNum(mods, int64(fi.Gid))
	case 'i':
		return filStatNum(mods, int64(fi.Ino))
	case 'h':
		return filStatNum(mods, int64(fi.Nlink))
	case 'b':
		return filStatNum(mods, filBlocks(fi))
	case 'B':
		return filStatNum(mods, 512)
	case 'o':
		return filStatNum(mods, 4096)
	case 'd', 't', 'T', 'r', 'R':
		return filStatNum(mods, 0)
	case 'D':
		return fmt.Sprintf("%"+mods+"x", 0)
	case 'm':
		return filStatStr(mods, "/")
	case 'x', 'y', 'z':
		return filStatStr(mods, filStatTime(fi.ModTime))
	case 'X', 'Y', 'Z':
		return filStatNum(mods, fi.ModTime.Unix())
	case 'w':
		return filStatStr(mods, "-")
	case 'W':
		return filStatNum(mods, 0)
	}
	return "?"
}

// filRawMode is st_mode: the type bits and 07777.
func filRawMode(m iofs.FileMode) uint32 {
	t := uint32(0o100000)
	switch {
	case m&iofs.ModeDir != 0:
		t = 0o040000
	case m&iofs.ModeSymlink != 0:
		t = 0o120000
	case m&iofs.ModeNamedPipe != 0:
		t = 0o010000
	case m&iofs.ModeSocket != 0:
		t = 0o140000
	case m&iofs.ModeCharDevice != 0:
		t = 0o020000
	case m&iofs.ModeDevice != 0:
		t = 0o060000
	}
	return t | filUnixMode(m)
}

// filFileType is stat %F.
func filFileType(fi FileInfo) string {
	m := fi.Mode
	switch {
	case m&iofs.ModeDir != 0:
		return "directory"
	case m&iofs.ModeSymlink != 0:
		return "symbolic link"
	case m&iofs.ModeNamedPipe != 0:
		return "fifo"
	case m&iofs.ModeSocket != 0:
		return "socket"
	case m&iofs.ModeCharDevice != 0:
		return "character special file"
	case m&iofs.ModeDevice != 0:
		return "block special file"
	case fi.Size == 0:
		return "regular empty file"
	}
	return "regular file"
}

// filEscapes interprets the backslash escapes of stat --printf and
// find -printf: \n \t \\ \" \a \b \f \r \v, octal \NNN and hex \xHH.
func filEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		case '"':
			b.WriteByte('"')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'e':
			b.WriteByte(0x1b)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			if j == i+1 {
				b.WriteString(`\x`)
				continue
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			b.WriteByte(byte(v))
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
