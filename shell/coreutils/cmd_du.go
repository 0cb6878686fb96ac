package coreutils

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strconv"
)

func init() { register("du", filDuMain) }

var filDuSpec = optSpec{
	short: "0abcd:hHkLlmPsSx",
	long: map[string]bool{
		"null": false, "all": false, "apparent-size": false, "bytes": false,
		"total": false, "max-depth": true, "human-readable": false,
		"dereference-args": false, "dereference": false, "count-links": false,
		"no-dereference": false, "summarize": false, "separate-dirs": false,
		"one-file-system": false, "si": false, "block-size": true,
	},
	alias: map[string]string{
		"null": "0", "all": "a", "bytes": "b", "total": "c", "max-depth": "d",
		"human-readable": "h", "dereference-args": "H", "dereference": "L",
		"count-links": "l", "no-dereference": "P", "summarize": "s",
		"separate-dirs": "S", "one-file-system": "x",
	},
}

type filDu struct {
	e                              *Env
	ctx                            context.Context
	all, apparent, human, separate bool
	follow                         bool
	maxDepth                       int // -1: no limit
	unit                           int64
	nul                            bool
	status                         int
}

// filDuMain reports disk usage. Usage is approximated as whole 4 KiB blocks
// per file and directory (see filBlocks), which is what ext4 reports for
// files written normally; -b and --apparent-size are exact.
func filDuMain(ctx context.Context, e *Env, args []string) int {
	opts, operands, code, ok := filParse(e, "du", &filDuSpec, args, 1)
	if !ok {
		return code
	}
	d := &filDu{e: e, ctx: ctx, maxDepth: -1, unit: 1024}
	summarize, total, derefArgs := false, false, false
	for _, o := range opts {
		switch o.name {
		case "0":
			d.nul = true
		case "a":
			d.all = true
		case "apparent-size":
			d.apparent = true
		case "b":
			d.apparent, d.unit, d.human = true, 1, false
		case "c":
			total = true
		case "d":
			n, err := strconv.Atoi(o.value)
			if err != nil || n < 0 {
				return badUsage(e, "du", fmt.Errorf("invalid maximum depth %s", filQuoteLocale(o.value)), 1)
			}
			d.maxDepth = n
		case "h", "si":
			d.human = true
		case "k":
			d.unit, d.human = 1024, false
		case "m":
			d.unit, d.human = 1024*1024, false
		case "H":
			derefArgs = true
		case "L":
			d.follow, derefArgs = true, true
		case "P":
			d.follow, derefArgs = false, false
		case "s":
			summarize = true
		case "S":
			d.separate = true
		case "block-size":
			n, ok := filBlockSize(o.value)
			if !ok {
				return fail(e, "du", 1, "invalid --block-size argument %s", filQuoteLocale(o.value))
			}
			d.unit = n
		}
	}
	if summarize && d.all {
		return badUsage(e, "du", fmt.Errorf("cannot both summarize and show all entries"), 1)
	}
	if summarize {
		switch {
		case d.maxDepth > 0:
			return badUsage(e, "du", fmt.Errorf("warning: summarizing conflicts with --max-depth=%d", d.maxDepth), 1)
		case d.maxDepth == 0:
			fail(e, "du", 1, "warning: summarizing is the same as using --max-depth=0")
		}
		d.maxDepth = 0
	}
	if len(operands) == 0 {
		operands = []string{"."}
	}
	var sum int64
	for _, p := range operands {
		if ctx.Err() != nil {
			return 1
		}
		var fi FileInfo
		var err error
		if derefArgs {
			fi, err = filStat(ctx, e, p)
		} else {
			fi, err = filLstat(ctx, e, p)
		}
		if err != nil {
			fail(e, "du", 1, "cannot access %s: %s", filQuote(p), errText(err))
			d.status = 1
			continue
		}
		abs, _ := filAbs(e, p)
		sum += d.walk(abs, filTrimSlashes(p), fi, 0)
	}
	if total {
		d.print(sum, "total")
	}
	return d.status
}

// filBlockSize parses --block-size: N, K, M, G, KB, MB...
func filBlockSize(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n := int64(1)
	if i > 0 {
		v, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || v <= 0 {
			return 0, false
		}
		n = v
	}
	suffix := s[i:]
	mult := map[string]int64{
		"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
		"kB": 1000, "KB": 1000, "MB": 1000 * 1000, "GB": 1000 * 1000 * 1000,
	}
	m, ok := mult[suffix]
	if !ok || i == 0 && suffix == "" {
		return 0, false
	}
	return n * m, true
}

func (d *filDu) size(fi FileInfo) int64 {
	if d.apparent {
		return fi.Size
	}
	return filBlocks(fi) * 512
}

// walk returns the usage (bytes) of abs, shown as disp, printing it and
// what it holds as the options ask.
func (d *filDu) walk(abs, disp string, fi FileInfo, depth int) int64 {
	own := d.size(fi)
	if !fi.IsDir() {
		if d.all && (d.maxDepth < 0 || depth <= d.maxDepth) || depth == 0 {
			d.print(own, disp)
		}
		return own
	}
	ents, err := d.e.FS.ReadDir(d.ctx, abs)
	if err != nil {
		fail(d.e, "du", 1, "cannot read directory %s: %s", filQuote(disp), errText(err))
		d.status = 1
	}
	total := own
	subdirs := int64(0)
	for _, c := range ents {
		if d.ctx.Err() != nil {
			return total
		}
		cabs := path.Join(abs, c.Name)
		if d.follow && c.Mode&iofs.ModeSymlink != 0 {
			if t, err := d.e.FS.Stat(d.ctx, cabs); err == nil {
				c = t
			}
		}
		n := d.walk(cabs, filJoin(disp, c.Name), c, depth+1)
		total += n
		if c.IsDir() {
			subdirs += n
		}
	}
	shown := total
	if d.separate {
		shown -= subdirs
	}
	if d.maxDepth < 0 || depth <= d.maxDepth {
		d.print(shown, disp)
	}
	return total
}

func (d *filDu) print(bytes int64, name string) {
	var s string
	switch {
	case d.human:
		s = filHuman(bytes)
	default:
		s = strconv.FormatInt((bytes+d.unit-1)/d.unit, 10)
	}
	end := "\n"
	if d.nul {
		end = "\x00"
	}
	fmt.Fprintf(d.e.Stdout, "%s\t%s%s", s, name, end)
}
