package coreutils

// getopt_long, as glibc has it: options with optional arguments (sed's
// -i[SUFFIX], grep's --color[=WHEN]), long options in table order (for
// the "ambiguous; possibilities:" message) and each option's argv index
// (grep's digit options, -5). Every command's optSpec parses through it.

import (
	"fmt"
	"strings"
)

// longOpt is one long option: has is 0 (no argument), 1 (required)
// or 2 (optional); key is what the parser reports (a short letter or
// the long name).
type longOpt struct {
	name string
	has  int
	key  string
}

type getoptLong struct {
	short string // getopt string: "x" flag, "x:" required, "x::" optional
	long  []longOpt
}

// parsedOpt is a parsed option; set tells an optional argument given.
type parsedOpt struct {
	name  string
	value string
	set   bool
	// arg is the argv index the option came from (grep's digit
	// options accumulate within one argument only).
	arg int
}

func (g *getoptLong) shortHas(c byte) (bool, int) {
	if c == ':' {
		return false, 0
	}
	i := strings.IndexByte(g.short, c)
	if i < 0 {
		return false, 0
	}
	has := 0
	if i+1 < len(g.short) && g.short[i+1] == ':' {
		has = 1
		if i+2 < len(g.short) && g.short[i+2] == ':' {
			has = 2
		}
	}
	return true, has
}

func (g *getoptLong) matchLong(name string) (*longOpt, error) {
	for i := range g.long {
		if g.long[i].name == name {
			return &g.long[i], nil
		}
	}
	var found []*longOpt
	for i := range g.long {
		if strings.HasPrefix(g.long[i].name, name) {
			found = append(found, &g.long[i])
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	same := true
	for _, f := range found[1:] {
		if f.key != found[0].key || f.has != found[0].has {
			same = false
		}
	}
	if same {
		return found[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", name)
	for _, f := range found {
		fmt.Fprintf(&b, " '--%s'", f.name)
	}
	return nil, &optError{b.String()}
}

// parse splits args (without the command name) into options and
// operands, permuting as GNU getopt does.
func (g *getoptLong) parse(args []string) ([]parsedOpt, []string, error) {
	var opts []parsedOpt
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			return opts, operands, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			lo, err := g.matchLong(name)
			if err != nil {
				return nil, nil, err
			}
			if lo == nil {
				return nil, nil, &optError{fmt.Sprintf("unrecognized option '%s'", a)}
			}
			o := parsedOpt{name: lo.key, arg: i}
			switch lo.has {
			case 0:
				if hasVal {
					return nil, nil, &optError{fmt.Sprintf("option '--%s' doesn't allow an argument", lo.name)}
				}
			case 1:
				if !hasVal {
					if i+1 >= len(args) {
						return nil, nil, &optError{fmt.Sprintf("option '--%s' requires an argument", lo.name)}
					}
					i++
					val = args[i]
				}
				o.value, o.set = val, true
			case 2:
				o.value, o.set = val, hasVal
			}
			opts = append(opts, o)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				known, has := g.shortHas(c)
				if !known {
					return nil, nil, &optError{fmt.Sprintf("invalid option -- '%c'", c)}
				}
				o := parsedOpt{name: string(c), arg: i}
				if has == 0 {
					opts = append(opts, o)
					continue
				}
				val := a[j+1:]
				if has == 1 && val == "" {
					if i+1 >= len(args) {
						return nil, nil, &optError{fmt.Sprintf("option requires an argument -- '%c'", c)}
					}
					i++
					val = args[i]
					o.set = true
				}
				if val != "" {
					o.set = true
				}
				o.value = val
				opts = append(opts, o)
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}
