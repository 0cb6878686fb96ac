package coreutils

import (
	"fmt"
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

func (s *optSpec) shortTakes(c byte) (known, takes bool) {
	i := strings.IndexByte(s.short, c)
	if i < 0 || c == ':' {
		return false, false
	}
	return true, i+1 < len(s.short) && s.short[i+1] == ':'
}

// parse splits args (without the command name) into options and
// operands, permuting as GNU does: options may follow operands, "--" ends
// options, and "-" is an operand. Long options may be abbreviated to any
// unambiguous prefix.
func (s *optSpec) parse(args []string) ([]opt, []string, error) {
	var opts []opt
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			return opts, operands, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			full, takes, err := s.matchLong(name)
			if err != nil {
				return nil, nil, err
			}
			if takes && !hasVal {
				if i+1 >= len(args) {
					return nil, nil, &optError{fmt.Sprintf("option '--%s' requires an argument", full)}
				}
				i++
				val = args[i]
			} else if !takes && hasVal {
				return nil, nil, &optError{fmt.Sprintf("option '--%s' doesn't allow an argument", full)}
			}
			if short, ok := s.alias[full]; ok {
				full = short
			}
			opts = append(opts, opt{full, val})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				known, takes := s.shortTakes(c)
				if !known {
					return nil, nil, &optError{fmt.Sprintf("invalid option -- '%c'", c)}
				}
				if !takes {
					opts = append(opts, opt{string(c), ""})
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, nil, &optError{fmt.Sprintf("option requires an argument -- '%c'", c)}
					}
					i++
					val = args[i]
				}
				opts = append(opts, opt{string(c), val})
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

func (s *optSpec) matchLong(name string) (string, bool, error) {
	if takes, ok := s.long[name]; ok {
		return name, takes, nil
	}
	var found []string
	for l := range s.long {
		if strings.HasPrefix(l, name) {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], s.long[found[0]], nil
	case 0:
		return "", false, &optError{fmt.Sprintf("unrecognized option '--%s'", name)}
	}
	return "", false, &optError{fmt.Sprintf("option '--%s' is ambiguous", name)}
}

// badUsage prints getopt's complaint and GNU's hint, and returns status.
func badUsage(e *Env, name string, err error, status int) int {
	fmt.Fprintf(e.Stderr, "%s: %s\nTry '%s --help' for more information.\n", name, err, name)
	return status
}
