package coreutils

import (
	"fmt"
	"slices"
	"strings"
)

// optSpec describes a command's options the way getopt_long does: short
// is a getopt string ("nA:B:" — a letter followed by ':' takes a value),
// long maps long names to whether they take a value, and alias maps a
// long name to the short letter it stands for (so that callers handle
// one name).
type optSpec struct {
	short string
	long  map[string]bool
	alias map[string]string
}

// opt is one parsed option: its name (the short letter, or the long name
// when it has no alias) and its value.
type opt struct {
	name  string
	value string
}

// optError is a command line getopt would refuse; its message is GNU's.
type optError struct{ msg string }

func (e *optError) Error() string { return e.msg }

// getopt is the spec as a getopt_long table.
func (s *optSpec) getopt() *getoptLong {
	g := &getoptLong{short: s.short, long: make([]longOpt, 0, len(s.long))}
	for name, takes := range s.long {
		lo := longOpt{name: name, key: name}
		if takes {
			lo.has = 1
		}
		if short, ok := s.alias[name]; ok {
			lo.key = short
		}
		g.long = append(g.long, lo)
	}
	// getopt_long lists an ambiguous prefix's possibilities in the order
	// of its table; a map has none, so sort them.
	slices.SortFunc(g.long, func(a, b longOpt) int { return strings.Compare(a.name, b.name) })
	return g
}

// parse splits args (without the command name) into options and
// operands, permuting as GNU does: options may follow operands, "--" ends
// options, and "-" is an operand. Long options may be abbreviated to any
// unambiguous prefix.
func (s *optSpec) parse(args []string) ([]opt, []string, error) {
	gopts, operands, err := s.getopt().parse(args)
	if err != nil {
		return nil, nil, err
	}
	opts := make([]opt, len(gopts))
	for i, o := range gopts {
		opts[i] = opt{name: o.name, value: o.value}
	}
	return opts, operands, nil
}

// matchLong resolves a long option name, or an unambiguous prefix of one,
// to its full name and whether it takes a value.
func (s *optSpec) matchLong(name string) (full string, takes bool, err error) {
	lo, err := s.getopt().matchLong(name)
	if err != nil {
		return "", false, err
	}
	if lo == nil {
		return "", false, &optError{fmt.Sprintf("unrecognized option '--%s'", name)}
	}
	return lo.name, lo.has == 1, nil
}

// shortTakes reports whether c is a short option, and whether it takes a
// value.
func (s *optSpec) shortTakes(c byte) (known, takes bool) {
	known, has := s.getopt().shortHas(c)
	return known, has == 1
}

// badUsage prints getopt's complaint and GNU's hint, and returns status.
func badUsage(e *Env, name string, err error, status int) int {
	fmt.Fprintf(e.Stderr, "%s: %s\nTry '%s --help' for more information.\n", name, err, name)
	return status
}
