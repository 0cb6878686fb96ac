package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

func init() { register("ls", filLsMain) }

var filLsSpec = optSpec{
	short: "aAdFgGhHiLlnoprRsStU1",
	long: map[string]bool{
		"all": false, "almost-all": false, "directory": false, "classify": false,
		"no-group": false, "human-readable": false, "inode": false,
		"dereference": false, "dereference-command-line": false,
		"numeric-uid-gid": false, "reverse": false, "recursive": false,
		"size": false, "full-time": false, "si": false, "group-directories-first": false,
	},
	alias: map[string]string{
		"all": "a", "almost-all": "A", "directory": "d", "classify": "F",
		"no-group": "G", "human-readable": "h", "inode": "i", "dereference": "L",
		"dereference-command-line": "H", "numeric-uid-gid": "n", "reverse": "r",
		"recursive": "R", "size": "s",
	},
}

type filLs struct {
	e                                   *Env
	ctx                                 context.Context
	all, almostAll, dirs, long, human   bool
	inode, size, recursive, reverse     bool
	fullTime, noOwner, noGroup, numeric bool
	classify, slash, derefAll, derefCmd bool
	dirsFirst                           bool
	sortBy                              byte // 'n'ame, 't'ime, 'S'ize, 'U'nsorted
	now                                 time.Time
	printed                             bool // something was listed already
	status                              int
}

// filLsEnt is one file to list: its name as shown, its path, its status
// and, for symlinks, what they point to.
type filLsEnt struct {
	name, abs string
	fi        FileInfo
	target    *FileInfo // the symlink's target, if it resolves
}

// filLsMain lists directories. Output is one name per line (stdout is never
// a terminal here). Owners are numbers except root; block counts are
// whole 4 KiB blocks (see filBlocks). "Recent" dates are judged against
// the shell's clock, Env.Now.
func filLsMain(ctx context.Context, e *Env, args []string) int {
	var rest []string
	for _, a := range args {
		switch a {
		case "--color", "--color=never", "--color=no", "--color=none", "--color=auto", "--color=tty", "--color=if-tty":
			continue
		}
		rest = append(rest, a)
	}
	opts, operands, code, ok := filParse(e, "ls", &filLsSpec, rest, 2)
	if !ok {
		return code
	}
	l := &filLs{e: e, ctx: ctx, sortBy: 'n', now: e.Now()}
	for _, o := range opts {
		switch o.name {
		case "a":
			l.all, l.almostAll = true, false
		case "A":
			l.almostAll, l.all = true, false
		case "d":
			l.dirs = true
		case "F":
			l.classify, l.slash = true, false
		case "p":
			l.slash, l.classify = true, false
		case "l":
			l.long = true
		case "1":
		case "g":
			l.long, l.noOwner = true, true
		case "o":
			l.long, l.noGroup = true, true
		case "G":
			l.noGroup = true
		case "n":
			l.long, l.numeric = true, true
		case "h", "si":
			l.human = true
		case "i":
			l.inode = true
		case "s":
			l.size = true
		case "R":
			l.recursive = true
		case "r":
			l.reverse = true
		case "t":
			l.sortBy = 't'
		case "S":
			l.sortBy = 'S'
		case "U":
			l.sortBy = 'U'
		case "L":
			l.derefAll = true
		case "H":
			l.derefCmd = true
		case "full-time":
			l.long, l.fullTime = true, true
		case "group-directories-first":
			l.dirsFirst = true
		}
	}
	if len(operands) == 0 {
		operands = []string{"."}
	}
	// Command-line symlinks to directories are followed unless the listing
	// is long, of directories themselves, or classified.
	followCmd := l.derefAll || l.derefCmd || !(l.long || l.dirs || l.classify || l.slash)
	var files, dirs []filLsEnt
	for _, p := range operands {
		if ctx.Err() != nil {
			return 2
		}
		abs, err := filAbs(e, p)
		var fi FileInfo
		if err == nil {
			fi, err = filLstat(ctx, e, p)
		}
		if err != nil {
			fail(e, "ls", 2, "cannot access %s: %s", filQuote(p), errText(err))
			l.status = 2
			continue
		}
		ent := filLsEnt{name: p, abs: abs, fi: fi}
		if fi.Mode&iofs.ModeSymlink != 0 {
			if t, err := e.FS.Stat(ctx, abs); err == nil {
				ent.target = &t
				if l.derefAll || l.derefCmd || followCmd && t.IsDir() && !l.dirs {
					ent.fi = t
					ent.target = nil
				}
			} else if l.derefAll || l.derefCmd {
				fail(e, "ls", 2, "cannot access %s: %s", filQuote(p), errText(err))
				l.status = 2
				continue
			}
		}
		if ent.fi.IsDir() && !l.dirs {
			dirs = append(dirs, ent)
		} else {
			files = append(files, ent)
		}
	}
	l.sort(files)
	l.sort(dirs)
	if len(files) > 0 {
		// Widths count the directory operands too, as GNU's do.
		l.print(files, false, append(append([]filLsEnt(nil), files...), dirs...))
		l.printed = true
	}
	header := len(operands) > 1 || l.recursive || len(files) > 0 || l.status != 0
	for _, d := range dirs {
		if ctx.Err() != nil {
			return 2
		}
		l.listDir(d.abs, d.name, header, true)
	}
	return l.status
}

// listDir lists directory abs, shown as name.
func (l *filLs) listDir(abs, name string, header, top bool) {
	e := l.e
	ents, err := e.FS.ReadDir(l.ctx, abs)
	if err != nil {
		if top {
			l.status = 2
		} else if l.status == 0 {
			l.status = 1
		}
		fail(e, "ls", 1, "cannot open directory %s: %s", filQuote(name), errText(err))
		return
	}
	if l.printed {
		fmt.Fprintln(e.Stdout)
	}
	if header {
		fmt.Fprintf(e.Stdout, "%s:\n", name)
	}
	l.printed = true
	var list []filLsEnt
	if l.all {
		for _, dot := range []string{".", ".."} {
			p := path.Join(abs, dot)
			if fi, err := e.FS.Stat(l.ctx, p); err == nil {
				fi.Name = dot
				list = append(list, filLsEnt{name: dot, abs: p, fi: fi})
			}
		}
	}
	for _, fi := range ents {
		if strings.HasPrefix(fi.Name, ".") && !l.all && !l.almostAll {
			continue
		}
		ent := filLsEnt{name: fi.Name, abs: path.Join(abs, fi.Name), fi: fi}
		if fi.Mode&iofs.ModeSymlink != 0 && (l.long || l.classify || l.slash || l.derefAll || l.dirsFirst) {
			if t, err := e.FS.Stat(l.ctx, ent.abs); err == nil {
				if l.derefAll {
					ent.fi = t
				} else {
					ent.target = &t
				}
			}
		}
		if fi.Mode&iofs.ModeSymlink != 0 && ent.fi.Target == "" && l.long && !l.derefAll {
			ent.fi.Target, _ = e.FS.Readlink(l.ctx, ent.abs)
		}
		list = append(list, ent)
	}
	l.sort(list)
	l.print(list, true, list)
	if !l.recursive {
		return
	}
	for _, ent := range list {
		if l.ctx.Err() != nil {
			return
		}
		if ent.fi.IsDir() && ent.name != "." && ent.name != ".." && (ent.fi.Mode&iofs.ModeSymlink == 0) {
			l.listDir(ent.abs, filJoin(name, ent.name), true, false)
		}
	}
}

func (l *filLs) sort(list []filLsEnt) {
	less := func(a, b filLsEnt) int {
		switch l.sortBy {
		case 't':
			if c := b.fi.ModTime.Compare(a.fi.ModTime); c != 0 {
				return c
			}
		case 'S':
			if a.fi.Size != b.fi.Size {
				if a.fi.Size > b.fi.Size {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a.name, b.name)
	}
	if l.sortBy == 'U' {
		return
	}
	sort.SliceStable(list, func(i, j int) bool {
		if l.dirsFirst {
			di, dj := list[i].isDir(), list[j].isDir()
			if di != dj {
				return di
			}
		}
		c := less(list[i], list[j])
		if l.reverse {
			return c > 0
		}
		return c < 0
	})
}

func (ent *filLsEnt) isDir() bool {
	return ent.fi.IsDir() || ent.target != nil && ent.target.IsDir()
}

// print lists entries, in columns as wide as those of widthOf needs;
// withTotal adds the long format's "total" line.
func (l *filLs) print(list []filLsEnt, withTotal bool, widthOf []filLsEnt) {
	w := l.e.Stdout
	var b strings.Builder
	blocksK := func(fi FileInfo) int64 { return (filBlocks(fi) + 1) / 2 }
	showBlocks := func(k int64) string {
		if l.human {
			return filHuman(k * 1024)
		}
		return strconv.FormatInt(k, 10)
	}
	if withTotal && (l.long || l.size) {
		var total int64
		for _, ent := range list {
			total += blocksK(ent.fi)
		}
		fmt.Fprintf(&b, "total %s\n", showBlocks(total))
	}
	// Column widths.
	var wIno, wBlk, wLink, wOwner, wGroup, wSize int
	for _, ent := range widthOf {
		fi := ent.fi
		wIno = max(wIno, len(strconv.FormatUint(fi.Ino, 10)))
		wBlk = max(wBlk, len(showBlocks(blocksK(fi))))
		wLink = max(wLink, len(strconv.FormatUint(uint64(fi.Nlink), 10)))
		wOwner = max(wOwner, len(l.owner(fi.Uid)))
		wGroup = max(wGroup, len(l.group(fi.Gid)))
		wSize = max(wSize, len(l.sizeText(fi)))
	}
	for _, ent := range list {
		fi := ent.fi
		if l.inode {
			fmt.Fprintf(&b, "%*d ", wIno, fi.Ino)
		}
		if l.size {
			fmt.Fprintf(&b, "%*s ", wBlk, showBlocks(blocksK(fi)))
		}
		if l.long {
			fmt.Fprintf(&b, "%s %*d ", filModeString(fi.Mode), wLink, fi.Nlink)
			if !l.noOwner {
				fmt.Fprintf(&b, "%-*s ", wOwner, l.owner(fi.Uid))
			}
			if !l.noGroup {
				fmt.Fprintf(&b, "%-*s ", wGroup, l.group(fi.Gid))
			}
			fmt.Fprintf(&b, "%*s %s ", wSize, l.sizeText(fi), l.date(fi.ModTime))
		}
		b.WriteString(ent.name)
		if l.long && fi.Mode&iofs.ModeSymlink != 0 {
			b.WriteString(" -> ")
			b.WriteString(fi.Target)
			if l.classify && ent.target != nil {
				b.WriteString(filLsIndicator(*ent.target, true))
			} else if l.slash && ent.target != nil && ent.target.IsDir() {
				b.WriteString("/")
			}
		} else if l.classify {
			b.WriteString(filLsIndicator(fi, false))
		} else if l.slash && fi.IsDir() {
			b.WriteString("/")
		}
		b.WriteByte('\n')
	}
	fmt.Fprint(w, b.String())
}

// filLsIndicator is ls -F's suffix for a file.
func filLsIndicator(fi FileInfo, target bool) string {
	m := fi.Mode
	switch {
	case m.IsDir():
		return "/"
	case m&iofs.ModeSymlink != 0:
		if target {
			return ""
		}
		return "@"
	case m&iofs.ModeNamedPipe != 0:
		return "|"
	case m&iofs.ModeSocket != 0:
		return "="
	case m.IsRegular() && m&0o111 != 0:
		return "*"
	}
	return ""
}

func (l *filLs) owner(uid uint32) string {
	if l.numeric {
		return strconv.FormatUint(uint64(uid), 10)
	}
	return filUser(uid)
}

func (l *filLs) group(gid uint32) string {
	if l.numeric {
		return strconv.FormatUint(uint64(gid), 10)
	}
	return filGroup(gid)
}

func (l *filLs) sizeText(fi FileInfo) string {
	if l.human {
		return filHuman(fi.Size)
	}
	return strconv.FormatInt(fi.Size, 10)
}

// date is the long format's time: "Nov 30 11:00" within the past six
// months, else "Nov 30  2025".
func (l *filLs) date(t time.Time) string {
	t = t.UTC()
	if l.fullTime {
		return t.Format("2006-01-02 15:04:05.000000000 -0700")
	}
	const halfYear = 31556952 / 2 * time.Second
	if t.After(l.now.Add(-halfYear)) && t.Before(l.now) {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}
