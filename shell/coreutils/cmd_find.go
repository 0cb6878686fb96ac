package coreutils

import (
	"bytes"
	"context"
	"fmt"
	iofs "io/fs"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func init() { register("find", filFindMain) }

// filFindMain searches directory trees. Entries are visited in the order the
// FS lists them (by name), where GNU find follows readdir order.
func filFindMain(ctx context.Context, e *Env, args []string) int {
	f := &filFind{e: e, ctx: ctx, maxDepth: -1, now: e.Now(), follow: 'P'}
	args = args[1:]
	// Leading options.
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-H" || a == "-L" || a == "-P":
			f.follow = a[1]
			args = args[1:]
			continue
		case a == "-D" && len(args) > 1:
			args = args[2:]
			continue
		case strings.HasPrefix(a, "-O"):
			args = args[1:]
			continue
		}
		break
	}
	var roots []string
	for len(args) > 0 {
		a := args[0]
		if len(a) > 1 && a[0] == '-' || a == "(" || a == "!" || a == ")" || a == "," {
			break
		}
		roots = append(roots, a)
		args = args[1:]
	}
	p := &filFindParser{f: f, args: args}
	var expr filFindNode
	if len(args) > 0 {
		var err error
		expr, err = p.parse()
		if err != nil {
			fmt.Fprintf(e.Stderr, "find: %s\n", err)
			return 1
		}
	}
	if !p.hasAction {
		if expr == nil {
			expr = &filFindPrint{}
		} else {
			expr = &filFindAnd{expr, &filFindPrint{}}
		}
	}
	if expr == nil {
		expr = filFindConst(true)
	}
	f.expr = expr
	if len(roots) == 0 {
		roots = []string{"."}
	}
	for _, r := range roots {
		if ctx.Err() != nil {
			break
		}
		f.walkRoot(r)
		if f.quit {
			break
		}
	}
	for _, x := range p.execs {
		x.flush(f)
	}
	if ctx.Err() != nil {
		return 1
	}
	return f.status
}

type filFind struct {
	e        *Env
	ctx      context.Context
	expr     filFindNode
	follow   byte // 'P', 'L', 'H'
	maxDepth int
	minDepth int
	depth    bool // post-order
	daystart bool
	now      time.Time
	status   int
	quit     bool
}

// filFindEnt is the file being looked at.
type filFindEnt struct {
	path  string // as printed
	abs   string
	root  string // the starting point it was found under
	fi    FileInfo
	depth int
	prune bool
	// stat is the followed status of a symlink, computed on demand.
	statDone bool
	stat     FileInfo
	statErr  error
}

func (f *filFind) errPath(p string, err error) {
	fmt.Fprintf(f.e.Stderr, "find: %s: %s\n", filQuoteLocale(p), errText(err))
	f.status = 1
}

func (f *filFind) walkRoot(root string) {
	abs, err := filAbs(f.e, root)
	var fi FileInfo
	if err == nil {
		if f.follow == 'P' {
			fi, err = filLstat(f.ctx, f.e, root)
		} else {
			fi, err = filStat(f.ctx, f.e, root)
			if err != nil && filErrno(err) == syscall.ENOENT {
				// A dangling symlink is itself.
				if l, lerr := f.e.FS.Lstat(f.ctx, abs); lerr == nil {
					fi, err = l, nil
				}
			}
		}
	}
	if err != nil {
		f.errPath(root, err)
		return
	}
	f.visit(&filFindEnt{path: root, abs: abs, root: root, fi: fi}, nil)
}

func (f *filFind) visit(ent *filFindEnt, ancestors []string) {
	if f.quit || f.ctx.Err() != nil {
		return
	}
	inRange := ent.depth >= f.minDepth
	if !f.depth && inRange {
		f.expr.eval(f, ent)
	}
	if f.quit {
		return
	}
	if ent.fi.IsDir() && (f.maxDepth < 0 || ent.depth < f.maxDepth) && (!ent.prune || f.depth) {
		f.descend(ent, ancestors)
	}
	if f.depth && inRange && !f.quit {
		f.expr.eval(f, ent)
	}
}

func (f *filFind) descend(ent *filFindEnt, ancestors []string) {
	if f.follow == 'L' {
		real := filRealpath(f.ctx, f.e, ent.abs)
		for _, a := range ancestors {
			if a == real {
				fmt.Fprintf(f.e.Stderr, "find: File system loop detected; %s is part of the same file system loop as %s.\n", filQuoteLocale(ent.path), filQuoteLocale(ent.root))
				f.status = 1
				return
			}
		}
		ancestors = append(ancestors, real)
	}
	ents, err := f.e.FS.ReadDir(f.ctx, ent.abs)
	if err != nil {
		f.errPath(ent.path, err)
		return
	}
	for _, c := range ents {
		if f.quit || f.ctx.Err() != nil {
			return
		}
		child := &filFindEnt{path: filJoin(ent.path, c.Name), abs: path.Join(ent.abs, c.Name), root: ent.root, fi: c, depth: ent.depth + 1}
		if f.follow == 'L' && c.Mode&iofs.ModeSymlink != 0 {
			if t, err := f.e.FS.Stat(f.ctx, child.abs); err == nil {
				t.Name = c.Name
				child.fi = t
			}
		}
		f.visit(child, ancestors)
	}
}

// statOf is the status of the file a symlink points to (or the file).
func (f *filFind) statOf(ent *filFindEnt) (FileInfo, error) {
	if ent.fi.Mode&iofs.ModeSymlink == 0 {
		return ent.fi, nil
	}
	if !ent.statDone {
		ent.stat, ent.statErr = f.e.FS.Stat(f.ctx, ent.abs)
		ent.statDone = true
	}
	return ent.stat, ent.statErr
}

// The expression tree.

type filFindNode interface {
	eval(f *filFind, ent *filFindEnt) bool
}

type filFindConst bool

func (c filFindConst) eval(*filFind, *filFindEnt) bool { return bool(c) }

type filFindAnd struct{ a, b filFindNode }

func (n *filFindAnd) eval(f *filFind, ent *filFindEnt) bool {
	return n.a.eval(f, ent) && !f.quit && n.b.eval(f, ent)
}

type filFindOr struct{ a, b filFindNode }

func (n *filFindOr) eval(f *filFind, ent *filFindEnt) bool {
	return n.a.eval(f, ent) || !f.quit && n.b.eval(f, ent)
}

type filFindComma struct{ a, b filFindNode }

func (n *filFindComma) eval(f *filFind, ent *filFindEnt) bool {
	n.a.eval(f, ent)
	return !f.quit && n.b.eval(f, ent)
}

type filFindNot struct{ a filFindNode }

func (n *filFindNot) eval(f *filFind, ent *filFindEnt) bool { return !n.a.eval(f, ent) }

type filFindTest func(f *filFind, ent *filFindEnt) bool

func (t filFindTest) eval(f *filFind, ent *filFindEnt) bool { return t(f, ent) }

type filFindPrint struct {
	nul    bool         // -print0
	format []filFindFmt // -printf
}

func (n *filFindPrint) eval(f *filFind, ent *filFindEnt) bool {
	if n.format != nil {
		var b strings.Builder
		for _, d := range n.format {
			d(f, ent, &b)
		}
		fmt.Fprint(f.e.Stdout, b.String())
		return true
	}
	sep := byte('\n')
	if n.nul {
		sep = 0
	}
	fmt.Fprintf(f.e.Stdout, "%s%c", ent.path, sep)
	return true
}

// filFindExec is -exec CMD ; (once per file) or -exec CMD {} + (batched).
type filFindExec struct {
	argv    []string
	batch   bool
	pending []string
	size    int
}

const filFindBatchMax = 128 * 1024

func (x *filFindExec) eval(f *filFind, ent *filFindEnt) bool {
	if x.batch {
		x.pending = append(x.pending, ent.path)
		x.size += len(ent.path) + 1
		if x.size >= filFindBatchMax {
			x.flush(f)
		}
		return true
	}
	argv := make([]string, len(x.argv))
	for i, a := range x.argv {
		argv[i] = strings.ReplaceAll(a, "{}", ent.path)
	}
	return f.run(argv) == 0
}

func (x *filFindExec) flush(f *filFind) {
	if len(x.pending) == 0 || f.ctx.Err() != nil {
		return
	}
	argv := append(append([]string(nil), x.argv...), x.pending...)
	x.pending, x.size = nil, 0
	if f.run(argv) != 0 {
		f.status = 1
	}
}

func (f *filFind) run(argv []string) int {
	if f.e.Run == nil {
		fmt.Fprintf(f.e.Stderr, "find: %s: %s\n", filQuoteLocale(argv[0]), errnoText(syscall.ENOSYS))
		f.status = 1
		return 127
	}
	return f.e.Run(f.ctx, argv, f.e.Stdin, f.e.Stdout, f.e.Stderr)
}

// The parser.

type filFindParser struct {
	f         *filFind
	args      []string
	pos       int
	hasAction bool
	execs     []*filFindExec
	regexType string
}

type filFindErr string

func (e filFindErr) Error() string { return string(e) }

func (p *filFindParser) peek() (string, bool) {
	if p.pos < len(p.args) {
		return p.args[p.pos], true
	}
	return "", false
}

func (p *filFindParser) parse() (filFindNode, error) {
	n, err := p.parseComma()
	if err != nil {
		return nil, err
	}
	if t, ok := p.peek(); ok {
		if t == ")" {
			return nil, filFindErr("you have too many ')'")
		}
		return nil, filFindErr(fmt.Sprintf("paths must precede expression: `%s'", t))
	}
	return n, nil
}

func (p *filFindParser) parseComma() (filFindNode, error) {
	a, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || t != "," {
			return a, nil
		}
		p.pos++
		if _, ok := p.peek(); !ok {
			return nil, filFindErr("invalid expression; you have used a binary operator ',' with nothing after it.")
		}
		b, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		a = &filFindComma{a, b}
	}
}

func (p *filFindParser) parseOr() (filFindNode, error) {
	a, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || t != "-o" && t != "-or" {
			return a, nil
		}
		p.pos++
		if n, ok := p.peek(); !ok || n == ")" || n == "," || n == "-o" || n == "-or" || n == "-a" || n == "-and" {
			if !ok {
				return nil, filFindErr(fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing after it.", t))
			}
			return nil, filFindErr(fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing after it.", t))
		}
		b, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		a = &filFindOr{a, b}
	}
}

func (p *filFindParser) parseAnd() (filFindNode, error) {
	a, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || t == ")" || t == "-o" || t == "-or" || t == "," {
			return a, nil
		}
		if t == "-a" || t == "-and" {
			p.pos++
			if n, ok := p.peek(); !ok || n == ")" || n == "-o" || n == "-or" || n == "," || n == "-a" || n == "-and" {
				return nil, filFindErr(fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing after it.", t))
			}
		}
		b, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		a = &filFindAnd{a, b}
	}
}

func (p *filFindParser) parseUnary() (filFindNode, error) {
	t, ok := p.peek()
	if !ok {
		return nil, filFindErr("invalid expression")
	}
	switch t {
	case "!", "-not":
		p.pos++
		if n, ok := p.peek(); !ok || n == ")" || n == "-o" || n == "-or" || n == "-a" || n == "-and" || n == "," {
			return nil, filFindErr(fmt.Sprintf("expected an expression after '%s'", t))
		}
		a, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &filFindNot{a}, nil
	case "(":
		p.pos++
		if n, ok := p.peek(); ok && n == ")" {
			return nil, filFindErr("invalid expression; empty parentheses are not allowed.")
		}
		a, err := p.parseComma()
		if err != nil {
			return nil, err
		}
		if n, ok := p.peek(); !ok || n != ")" {
			return nil, filFindErr("invalid expression; I was expecting to find a ')' somewhere but did not see one.")
		}
		p.pos++
		return a, nil
	case ")":
		return nil, filFindErr("invalid expression; you have too many ')'")
	case "-o", "-or", "-a", "-and", ",":
		return nil, filFindErr(fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing before it.", t))
	}
	p.pos++
	return p.primary(t)
}

// arg takes the argument of primary name.
func (p *filFindParser) arg(name string) (string, error) {
	if p.pos >= len(p.args) {
		return "", filFindErr(fmt.Sprintf("missing argument to `%s'", name))
	}
	a := p.args[p.pos]
	p.pos++
	return a, nil
}

func (p *filFindParser) primary(name string) (filFindNode, error) {
	f := p.f
	switch name {
	case "-print":
		p.hasAction = true
		return &filFindPrint{}, nil
	case "-print0":
		p.hasAction = true
		return &filFindPrint{nul: true}, nil
	case "-printf":
		p.hasAction = true
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		return &filFindPrint{format: filFindParseFormat(a)}, nil
	case "-fprint", "-fprint0", "-fprintf", "-fls", "-ok", "-okdir", "-execdir":
		return nil, filFindErr(fmt.Sprintf("%s is not supported", name))
	case "-ls":
		p.hasAction = true
		return filFindTest(filFindLs), nil
	case "-prune":
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			ent.prune = true
			return true
		}), nil
	case "-quit":
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			f.quit = true
			return true
		}), nil
	case "-delete":
		p.hasAction = true
		f.depth = true
		return filFindTest(filFindDelete), nil
	case "-exec":
		p.hasAction = true
		var argv []string
		for {
			if p.pos >= len(p.args) {
				return nil, filFindErr("missing argument to `-exec'")
			}
			a := p.args[p.pos]
			p.pos++
			if a == ";" {
				break
			}
			if a == "+" && len(argv) > 0 && argv[len(argv)-1] == "{}" {
				x := &filFindExec{argv: argv[:len(argv)-1], batch: true}
				if len(x.argv) == 0 {
					return nil, filFindErr("missing argument to `-exec'")
				}
				p.execs = append(p.execs, x)
				return x, nil
			}
			argv = append(argv, a)
		}
		if len(argv) == 0 {
			return nil, filFindErr("missing argument to `-exec'")
		}
		return &filFindExec{argv: argv}, nil
	case "-true":
		return filFindConst(true), nil
	case "-false":
		return filFindConst(false), nil
	// Global options: always true.
	case "-maxdepth", "-mindepth":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 || !filDigits(strings.TrimPrefix(a, "+")) {
			return nil, filFindErr(fmt.Sprintf("Expected a positive decimal integer argument to %s, but got %s", name, filQuoteLocale(a)))
		}
		if name == "-maxdepth" {
			f.maxDepth = n
		} else {
			f.minDepth = n
		}
		return filFindConst(true), nil
	case "-depth", "-d":
		f.depth = true
		return filFindConst(true), nil
	case "-follow":
		f.follow = 'L'
		return filFindConst(true), nil
	case "-daystart":
		f.daystart = true
		return filFindConst(true), nil
	case "-xdev", "-mount", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-nowarn", "-warn":
		return filFindConst(true), nil
	case "-regextype":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		switch a {
		case "emacs", "posix-basic", "posix-extended", "posix-egrep", "egrep", "grep", "findutils-default", "posix-awk", "awk", "gnu-awk", "posix-minimal-basic", "sed":
		default:
			return nil, filFindErr(fmt.Sprintf("Unknown regular expression type %s; valid types are ‘findutils-default’, ‘ed’, ‘emacs’, ‘gnu-awk’, ‘grep’, ‘posix-awk’, ‘awk’, ‘posix-basic’, ‘posix-egrep’, ‘egrep’, ‘posix-extended’, ‘posix-minimal-basic’, ‘sed’.", filQuoteLocale(a)))
		}
		p.regexType = a
		return filFindConst(true), nil
	// Tests.
	case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-lname", "-ilname":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		fold := strings.HasPrefix(name, "-i")
		switch strings.TrimPrefix(strings.TrimPrefix(name, "-"), "i") {
		case "name":
			return filFindTest(func(f *filFind, ent *filFindEnt) bool {
				return filFnmatch(a, filFindBase(ent.path), fold)
			}), nil
		case "lname":
			return filFindTest(func(f *filFind, ent *filFindEnt) bool {
				if ent.fi.Mode&iofs.ModeSymlink == 0 {
					return false
				}
				return filFnmatch(a, filFindTarget(f, ent), fold)
			}), nil
		}
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			return filFnmatch(a, ent.path, fold)
		}), nil
	case "-regex", "-iregex":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		re, err := filFindRegexp(a, p.regexType, name == "-iregex")
		if err != nil {
			return nil, filFindErr(fmt.Sprintf("Invalid regular expression %s", filQuoteLocale(a)))
		}
		return filFindTest(func(f *filFind, ent *filFindEnt) bool { return re.MatchString(ent.path) }), nil
	case "-type", "-xtype":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		if a == "" {
			return nil, filFindErr(fmt.Sprintf("Arguments to %s should contain at least one letter", name))
		}
		var want []byte
		for i := 0; i < len(a); i += 2 {
			if !strings.Contains("fdlpsbcD", a[i:i+1]) {
				return nil, filFindErr(fmt.Sprintf("Unknown argument to %s: %c", name, a[i]))
			}
			want = append(want, a[i])
			if i+1 < len(a) {
				if a[i+1] != ',' {
					return nil, filFindErr(fmt.Sprintf("Must separate multiple arguments to %s using: ','", name))
				}
				if i+2 >= len(a) {
					return nil, filFindErr(fmt.Sprintf("Last file type in list argument to %s is missing, i.e., list is ending on: ','", name))
				}
			}
		}
		xtype := name == "-xtype"
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			fi := ent.fi
			if xtype {
				if f.follow == 'P' || f.follow == 'H' && ent.depth > 0 {
					if t, err := f.statOf(ent); err == nil {
						fi = t
					}
				} else if l, err := f.e.FS.Lstat(f.ctx, ent.abs); err == nil {
					fi = l
				}
			}
			return bytes.IndexByte(want, filFindTypeLetter(fi)) >= 0
		}), nil
	case "-newer", "-anewer", "-cnewer":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		var ref FileInfo
		if f.follow == 'P' {
			ref, err = filLstat(f.ctx, f.e, a)
		} else {
			ref, err = filStat(f.ctx, f.e, a)
		}
		if err != nil {
			return nil, filFindErr(fmt.Sprintf("%s: %s", filQuoteLocale(a), errText(err)))
		}
		t := ref.ModTime
		return filFindTest(func(f *filFind, ent *filFindEnt) bool { return ent.fi.ModTime.After(t) }), nil
	case "-size":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		return filFindSize(a)
	case "-empty":
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			switch {
			case ent.fi.IsDir():
				ents, err := f.e.FS.ReadDir(f.ctx, ent.abs)
				return err == nil && len(ents) == 0
			case ent.fi.Mode.IsRegular():
				return ent.fi.Size == 0
			}
			return false
		}), nil
	case "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		cmp, n, ok := filFindNumArg(a)
		if !ok {
			return nil, filFindErr(fmt.Sprintf("invalid argument `%s' to `%s'", a, name))
		}
		unit := 86400.0
		if strings.HasSuffix(name, "min") {
			unit = 60
		}
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			now := f.now
			if f.daystart && unit == 86400 {
				y, m, d := now.UTC().Date()
				now = time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Add(24 * time.Hour)
			}
			age := now.Sub(ent.fi.ModTime).Seconds() / unit
			if unit == 86400 {
				age = math.Floor(age)
				return filFindCmp(cmp, age, float64(n))
			}
			// Minutes: GNU compares the age rounded up.
			return filFindCmp(cmp, math.Ceil(age), float64(n))
		}), nil
	case "-newermt":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		t, ok := filParseDate(a, f.now)
		if !ok {
			return nil, filFindErr(fmt.Sprintf("I cannot figure out how to interpret %s as a date or time", filQuoteLocale(a)))
		}
		return filFindTest(func(f *filFind, ent *filFindEnt) bool { return ent.fi.ModTime.After(t) }), nil
	case "-perm":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		return filFindPerm(a)
	case "-user", "-group", "-uid", "-gid":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		var id uint32
		switch {
		case a == "root" && (name == "-user" || name == "-group"):
		case filDigits(a):
			v, _ := strconv.ParseUint(a, 10, 32)
			id = uint32(v)
		default:
			if name == "-user" {
				return nil, filFindErr(fmt.Sprintf("%s is not the name of a known user", filQuoteLocale(a)))
			}
			if name == "-group" {
				return nil, filFindErr(fmt.Sprintf("%s is not the name of an existing group", filQuoteLocale(a)))
			}
			return nil, filFindErr(fmt.Sprintf("invalid argument `%s' to `%s'", a, name))
		}
		group := name == "-group" || name == "-gid"
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			if group {
				return ent.fi.Gid == id
			}
			return ent.fi.Uid == id
		}), nil
	case "-nouser", "-nogroup":
		return filFindConst(false), nil
	case "-links":
		a, err := p.arg(name)
		if err != nil {
			return nil, err
		}
		cmp, n, ok := filFindNumArg(a)
		if !ok {
			return nil, filFindErr(fmt.Sprintf("invalid argument `%s' to `%s'", a, name))
		}
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			return filFindCmp(cmp, float64(ent.fi.Nlink), float64(n))
		}), nil
	case "-readable", "-writable":
		return filFindConst(true), nil
	case "-executable":
		return filFindTest(func(f *filFind, ent *filFindEnt) bool {
			fi, err := f.statOf(ent)
			return err == nil && (fi.IsDir() || fi.Mode&0o111 != 0)
		}), nil
	}
	if strings.HasPrefix(name, "-") {
		return nil, filFindErr(fmt.Sprintf("unknown predicate `%s'", name))
	}
	return nil, filFindErr(fmt.Sprintf("paths must precede expression: `%s'", name))
}

func filFindBase(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" {
		return "/"
	}
	return t[strings.LastIndexByte(t, '/')+1:]
}

func filFindTarget(f *filFind, ent *filFindEnt) string {
	if ent.fi.Target != "" {
		return ent.fi.Target
	}
	t, _ := f.e.FS.Readlink(f.ctx, ent.abs)
	return t
}

func filFindTypeLetter(fi FileInfo) byte {
	m := fi.Mode
	switch {
	case m.IsDir():
		return 'd'
	case m&iofs.ModeSymlink != 0:
		return 'l'
	case m&iofs.ModeNamedPipe != 0:
		return 'p'
	case m&iofs.ModeSocket != 0:
		return 's'
	case m&iofs.ModeCharDevice != 0:
		return 'c'
	case m&iofs.ModeDevice != 0:
		return 'b'
	}
	return 'f'
}

// filFindNumArg parses "+N", "-N" or "N".
func filFindNumArg(a string) (cmp byte, n int64, ok bool) {
	cmp = '='
	if strings.HasPrefix(a, "+") || strings.HasPrefix(a, "-") {
		cmp = a[0]
		a = a[1:]
	}
	if !filDigits(a) {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return cmp, n, err == nil
}

func filFindCmp(cmp byte, v, n float64) bool {
	switch cmp {
	case '+':
		return v > n
	case '-':
		return v < n
	}
	return v == n
}

func filFindSize(a string) (filFindNode, error) {
	s := a
	cmp := byte('=')
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		cmp = s[0]
		s = s[1:]
	}
	unit := int64(512)
	if s != "" {
		switch c := s[len(s)-1]; c {
		case 'c':
			unit = 1
		case 'w':
			unit = 2
		case 'b':
			unit = 512
		case 'k':
			unit = 1024
		case 'M':
			unit = 1024 * 1024
		case 'G':
			unit = 1024 * 1024 * 1024
		default:
			if c < '0' || c > '9' {
				return nil, filFindErr(fmt.Sprintf("invalid -size type `%c'", c))
			}
			s += "b"
		}
		s = s[:len(s)-1]
	}
	if !filDigits(s) {
		return nil, filFindErr(fmt.Sprintf("invalid argument `%s' to `-size'", a))
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return filFindTest(func(f *filFind, ent *filFindEnt) bool {
		units := (ent.fi.Size + unit - 1) / unit
		return filFindCmp(cmp, float64(units), float64(n))
	}), nil
}

func filFindPerm(a string) (filFindNode, error) {
	kind := byte('=')
	s := a
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") {
		kind = s[0]
		s = s[1:]
	} else if strings.HasPrefix(s, "+") && s != "+" && s[1] >= '0' && s[1] <= '7' {
		return nil, filFindErr(fmt.Sprintf("invalid mode %s", filQuoteLocale(a)))
	}
	ch, ok := filParseMode(s)
	if !ok {
		return nil, filFindErr(fmt.Sprintf("invalid mode %s", filQuoteLocale(a)))
	}
	want, _ := filAdjustMode(0, false, 0, ch)
	return filFindTest(func(f *filFind, ent *filFindEnt) bool {
		m := filUnixMode(ent.fi.Mode)
		switch kind {
		case '-':
			return m&want == want
		case '/':
			return want == 0 || m&want != 0
		}
		return m == want
	}), nil
}

func filFindDelete(f *filFind, ent *filFindEnt) bool {
	if ent.depth == 0 && (ent.path == "." || strings.TrimRight(ent.path, "/") == ".") {
		return true
	}
	if err := f.e.FS.Remove(f.ctx, ent.abs); err != nil {
		fmt.Fprintf(f.e.Stderr, "find: cannot delete %s: %s\n", filQuoteLocale(ent.path), errText(err))
		f.status = 1
		return false
	}
	return true
}

func filFindLs(f *filFind, ent *filFindEnt) bool {
	fi := ent.fi
	name := ent.path
	if fi.Mode&iofs.ModeSymlink != 0 {
		name += " -> " + filFindTarget(f, ent)
	}
	t := fi.ModTime.UTC()
	date := t.Format("Jan _2 15:04")
	if !(t.After(f.now.Add(-31556952/2*time.Second)) && t.Before(f.now.Add(time.Hour))) {
		date = t.Format("Jan _2  2006")
	}
	fmt.Fprintf(f.e.Stdout, "%9d %6d %s %3d %-8s %-8s %12d %s %s\n", fi.Ino, (filBlocks(fi)+1)/2,
		filModeString(fi.Mode), fi.Nlink, filUser(fi.Uid), filGroup(fi.Gid), fi.Size, date, name)
	return true
}

// filFindRegexp compiles a find -regex pattern, which must match the
// whole path.
func filFindRegexp(pat, typ string, fold bool) (*regexp.Regexp, error) {
	var b strings.Builder
	switch typ {
	case "posix-extended", "posix-egrep", "egrep", "posix-awk", "awk", "gnu-awk":
		b.WriteString(pat)
	default:
		// Emacs and basic syntax: \( \) \| group and alternate, bare
		// ( ) | { } are literal (basic: \{ \} are intervals).
		basic := typ == "posix-basic" || typ == "grep" || typ == "sed" || typ == "posix-minimal-basic"
		for i := 0; i < len(pat); i++ {
			c := pat[i]
			switch {
			case c == '\\' && i+1 < len(pat):
				i++
				switch n := pat[i]; n {
				case '(', ')', '|':
					b.WriteByte(n)
				case '{', '}':
					if basic {
						b.WriteByte(n)
					} else {
						b.WriteString(`\` + string(n))
					}
				default:
					b.WriteByte('\\')
					b.WriteByte(n)
				}
			case c == '(' || c == ')' || c == '|' || c == '{' || c == '}':
				b.WriteByte('\\')
				b.WriteByte(c)
			case (c == '+' || c == '?') && basic:
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '[':
				// Copy a bracket expression verbatim.
				j := i + 1
				if j < len(pat) && pat[j] == '^' {
					j++
				}
				if j < len(pat) && pat[j] == ']' {
					j++
				}
				for j < len(pat) && pat[j] != ']' {
					if pat[j] == '[' && j+1 < len(pat) && pat[j+1] == ':' {
						if k := strings.Index(pat[j:], ":]"); k > 0 {
							j += k + 2
							continue
						}
					}
					j++
				}
				if j >= len(pat) {
					b.WriteString(`\[`)
					continue
				}
				class := pat[i : j+1]
				class = strings.ReplaceAll(class, `\`, `\\`)
				b.WriteString(class)
				i = j
			default:
				b.WriteByte(c)
			}
		}
	}
	prefix := "^(?s:"
	if fold {
		prefix = "^(?is:"
	}
	return regexp.Compile(prefix + b.String() + ")$")
}

// -printf.

type filFindFmt func(f *filFind, ent *filFindEnt, b *strings.Builder)

func filFindParseFormat(s string) []filFindFmt {
	out := []filFindFmt{}
	lit := func(t string) {
		out = append(out, func(_ *filFind, _ *filFindEnt, b *strings.Builder) { b.WriteString(t) })
	}
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			lit(text.String())
			text.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'c':
				// Stop printing here.
				flush()
				return out
			case '0':
				text.WriteByte(0)
			default:
				text.WriteString(filEscapes(`\` + string(s[i])))
			}
		case c == '%' && i+1 < len(s):
			j := i + 1
			for j < len(s) && strings.IndexByte("-+ #0", s[j]) >= 0 {
				j++
			}
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			if j >= len(s) {
				text.WriteString(s[i:])
				i = len(s)
				break
			}
			mods := s[i+1 : j]
			d := s[j]
			var sub byte
			if (d == 'T' || d == 'A' || d == 'C' || d == 'B') && j+1 < len(s) {
				j++
				sub = s[j]
			}
			i = j
			if d == '%' {
				text.WriteByte('%')
				continue
			}
			flush()
			out = append(out, filFindDirective(d, sub, mods))
		default:
			text.WriteByte(c)
		}
	}
	flush()
	return out
}

func filFindDirective(d, sub byte, mods string) filFindFmt {
	str := func(get func(f *filFind, ent *filFindEnt) string) filFindFmt {
		return func(f *filFind, ent *filFindEnt, b *strings.Builder) {
			b.WriteString(filStatStr(mods, get(f, ent)))
		}
	}
	num := func(get func(f *filFind, ent *filFindEnt) int64) filFindFmt {
		return func(f *filFind, ent *filFindEnt, b *strings.Builder) {
			b.WriteString(filStatNum(mods, get(f, ent)))
		}
	}
	switch d {
	case 'p':
		return str(func(f *filFind, ent *filFindEnt) string { return ent.path })
	case 'f':
		return str(func(f *filFind, ent *filFindEnt) string { return filFindBase(ent.path) })
	case 'h':
		return str(func(f *filFind, ent *filFindEnt) string {
			p := strings.TrimRight(ent.path, "/")
			i := strings.LastIndexByte(p, '/')
			switch {
			case i < 0:
				return "."
			case i == 0:
				return "/"
			}
			return p[:i]
		})
	case 'P':
		return str(func(f *filFind, ent *filFindEnt) string {
			if ent.depth == 0 {
				return ""
			}
			return strings.TrimPrefix(strings.TrimPrefix(ent.path, ent.root), "/")
		})
	case 'H':
		return str(func(f *filFind, ent *filFindEnt) string { return ent.root })
	case 'd':
		return num(func(f *filFind, ent *filFindEnt) int64 { return int64(ent.depth) })
	case 's':
		return num(func(f *filFind, ent *filFindEnt) int64 { return ent.fi.Size })
	case 'k':
		return num(func(f *filFind, ent *filFindEnt) int64 { return (filBlocks(ent.fi) + 1) / 2 })
	case 'b':
		return num(func(f *filFind, ent *filFindEnt) int64 { return filBlocks(ent.fi) })
	case 'm':
		return func(f *filFind, ent *filFindEnt, b *strings.Builder) {
			b.WriteString(fmt.Sprintf("%"+mods+"o", filUnixMode(ent.fi.Mode)))
		}
	case 'M':
		return str(func(f *filFind, ent *filFindEnt) string { return filModeString(ent.fi.Mode) })
	case 'y':
		return str(func(f *filFind, ent *filFindEnt) string { return string(filFindTypeLetter(ent.fi)) })
	case 'Y':
		return str(func(f *filFind, ent *filFindEnt) string {
			if ent.fi.Mode&iofs.ModeSymlink == 0 {
				return string(filFindTypeLetter(ent.fi))
			}
			t, err := f.statOf(ent)
			if err != nil {
				if filErrno(err) == syscall.ELOOP {
					return "L"
				}
				return "N"
			}
			return string(filFindTypeLetter(t))
		})
	case 'l':
		return str(func(f *filFind, ent *filFindEnt) string {
			if ent.fi.Mode&iofs.ModeSymlink == 0 {
				return ""
			}
			return filFindTarget(f, ent)
		})
	case 'u':
		return str(func(f *filFind, ent *filFindEnt) string { return filUser(ent.fi.Uid) })
	case 'g':
		return str(func(f *filFind, ent *filFindEnt) string { return filGroup(ent.fi.Gid) })
	case 'U':
		return num(func(f *filFind, ent *filFindEnt) int64 { return int64(ent.fi.Uid) })
	case 'G':
		return num(func(f *filFind, ent *filFindEnt) int64 { return int64(ent.fi.Gid) })
	case 'i':
		return num(func(f *filFind, ent *filFindEnt) int64 { return int64(ent.fi.Ino) })
	case 'n':
		return num(func(f *filFind, ent *filFindEnt) int64 { return int64(ent.fi.Nlink) })
	case 't', 'a', 'c':
		return str(func(f *filFind, ent *filFindEnt) string { return filFindCtime(ent.fi.ModTime) })
	case 'T', 'A', 'C', 'B':
		return str(func(f *filFind, ent *filFindEnt) string { return filFindTimeField(ent.fi.ModTime, sub) })
	}
	// An unknown directive prints as is.
	return func(_ *filFind, _ *filFindEnt, b *strings.Builder) { b.WriteString("%" + mods + string(d)) }
}

// filFindCtime is %t: ctime(3) with nanoseconds (and GNU's extra digit).
func filFindCtime(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%s %s %2d %02d:%02d:%02d.%09d0 %d", t.Format("Mon"), t.Format("Jan"), t.Day(),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Year())
}

// filFindTimeField is %Tk.
func filFindTimeField(t time.Time, k byte) string {
	t = t.UTC()
	switch k {
	case '@':
		return fmt.Sprintf("%d.%09d0", t.Unix(), t.Nanosecond())
	case 'Y':
		return strconv.Itoa(t.Year())
	case 'y':
		return fmt.Sprintf("%02d", t.Year()%100)
	case 'm':
		return fmt.Sprintf("%02d", int(t.Month()))
	case 'd':
		return fmt.Sprintf("%02d", t.Day())
	case 'e':
		return fmt.Sprintf("%2d", t.Day())
	case 'H':
		return fmt.Sprintf("%02d", t.Hour())
	case 'k':
		return fmt.Sprintf("%2d", t.Hour())
	case 'I':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return fmt.Sprintf("%02d", h)
	case 'l':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return fmt.Sprintf("%2d", h)
	case 'M':
		return fmt.Sprintf("%02d", t.Minute())
	case 'S':
		return fmt.Sprintf("%02d.%09d0", t.Second(), t.Nanosecond())
	case 'p':
		if t.Hour() < 12 {
			return "AM"
		}
		return "PM"
	case 'T', 'X':
		return fmt.Sprintf("%02d:%02d:%02d.%09d0", t.Hour(), t.Minute(), t.Second(), t.Nanosecond())
	case 'r':
		return t.Format("03:04:05 PM")
	case 'D', 'x':
		return t.Format("01/02/06")
	case 'F':
		return t.Format("2006-01-02")
	case '+':
		return fmt.Sprintf("%s+%02d:%02d:%02d.%09d0", t.Format("2006-01-02"), t.Hour(), t.Minute(), t.Second(), t.Nanosecond())
	case 'a':
		return t.Format("Mon")
	case 'A':
		return t.Format("Monday")
	case 'b', 'h':
		return t.Format("Jan")
	case 'B':
		return t.Format("January")
	case 'c':
		return t.Format("Mon Jan _2 15:04:05 2006")
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay())
	case 'Z':
		return "UTC"
	case 'z':
		return "+0000"
	case 's':
		return strconv.FormatInt(t.Unix(), 10)
	case 'u':
		wd := int(t.Weekday())
		if wd == 0 {
			wd = 7
		}
		return strconv.Itoa(wd)
	case 'w':
		return strconv.Itoa(int(t.Weekday()))
	}
	return "?"
}
