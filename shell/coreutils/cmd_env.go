package coreutils

import (
	"context"
	"errors"
	"sort"
	"strings"
	"syscall"
)

func init() { register("env", txtEnvMain) }

var txtEnvSpec = optSpec{
	short: "0iu:C:S:v",
	long: map[string]bool{
		"null": false, "ignore-environment": false, "unset": true, "chdir": true,
		"split-string": true, "debug": false,
	},
	alias: map[string]string{
		"null": "0", "ignore-environment": "i", "unset": "u", "chdir": "C",
		"split-string": "S", "debug": "v",
	},
}

// txtSplitString splits env -S's string: blanks separate arguments,
// quotes group them, and backslash escapes work as in GNU env.
func txtSplitString(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	have := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("no terminating quote in -S string")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			have = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						cur.WriteByte('\n')
					case 't':
						cur.WriteByte('\t')
					default:
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("no terminating quote in -S string")
			}
			have = true
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				cur.WriteByte('\n')
			case 't':
				cur.WriteByte('\t')
			case '_':
				cur.WriteByte(' ')
			case 'c':
				i = len(s)
			default:
				cur.WriteByte(s[i])
			}
			have = true
		case c == '#' && !have:
			i = len(s)
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args, nil
}

// txtEnvMain prints the environment (inherited variables sorted by name:
// the workspace keeps them in a map, not in environ order) or runs a
// command. The
// command runs through e.RunIn with the changed environment (or e.Run,
// without it, when the shell gives no RunIn).
func txtEnvMain(ctx context.Context, e *Env, args []string) int {
	// Options end at the first operand (getopt "+..."), and a lone "-"
	// means -i.
	rest := args[1:]
	var optArgs []string
	for len(rest) > 0 {
		a := rest[0]
		if a == "--" {
			rest = rest[1:]
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		optArgs = append(optArgs, a)
		rest = rest[1:]
		needs := false
		if strings.HasPrefix(a, "--") {
			name := a[2:]
			if !strings.Contains(name, "=") && name != "" {
				for _, l := range []string{"unset", "chdir", "split-string"} {
					if strings.HasPrefix(l, name) {
						needs = true
					}
				}
			}
		} else {
			for j := 1; j < len(a); j++ {
				if strings.IndexByte("uCS", a[j]) >= 0 {
					needs = j == len(a)-1
					break
				}
			}
		}
		if needs && len(rest) > 0 {
			optArgs = append(optArgs, rest[0])
			rest = rest[1:]
		}
	}
	opts, _, err := txtEnvSpec.parse(optArgs)
	if err != nil {
		return badUsage(e, "env", err, 125)
	}
	ignore, null := false, false
	var unset []string
	chdir := ""
	for _, o := range opts {
		switch o.name {
		case "i":
			ignore = true
		case "0":
			null = true
		case "u":
			unset = append(unset, o.value)
		case "C":
			chdir = o.value
		case "S":
			words, err := txtSplitString(o.value)
			if err != nil {
				return fail(e, "env", 125, "%s", err)
			}
			rest = append(words, rest...)
		}
	}
	if len(rest) > 0 && rest[0] == "-" {
		ignore = true
		rest = rest[1:]
	}
	vars := map[string]string{}
	if !ignore {
		for k, v := range e.Vars {
			vars[k] = v
		}
	}
	for _, u := range unset {
		if u == "" || strings.Contains(u, "=") {
			return fail(e, "env", 125, "cannot unset %s: Invalid argument", txtQuoteL(u))
		}
		delete(vars, u)
	}
	// The inherited variables come sorted (a map has no environ order);
	// new ones follow in command line order, as setenv appends them.
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for len(rest) > 0 && strings.Contains(rest[0], "=") {
		name, val, _ := strings.Cut(rest[0], "=")
		if _, ok := vars[name]; !ok {
			names = append(names, name)
		}
		vars[name] = val
		rest = rest[1:]
	}
	if len(rest) == 0 {
		if chdir != "" {
			return badUsage(e, "env", errors.New("must specify command with --chdir (-C)"), 125)
		}
		out := txtOut(e)
		term := byte('\n')
		if null {
			term = 0
		}
		for _, k := range names {
			out.WriteString(k)
			out.WriteByte('=')
			out.WriteString(vars[k])
			out.WriteByte(term)
		}
		if err := out.Flush(); err != nil {
			return txtWriteFail(e, "env", err)
		}
		return 0
	}
	if null {
		return badUsage(e, "env", errors.New("cannot specify --null (-0) with command"), 125)
	}
	if e.RunIn != nil {
		dir := e.Dir
		if chdir != "" {
			dir = e.Abs(chdir)
			if fi, err := e.FS.Stat(ctx, dir); err != nil || !fi.IsDir() {
				if err == nil {
					err = syscall.ENOTDIR
				}
				return fail(e, "env", 125, "cannot change directory to %s: %s", txtQuoteL(chdir), errText(err))
			}
		}
		return e.RunIn(ctx, rest, vars, dir, txtStdin(e), e.Stdout, e.Stderr)
	}
	if chdir != "" {
		// e.Run cannot run a command elsewhere; running it here instead
		// could do harm.
		return fail(e, "env", 125, "--chdir (-C) is not supported")
	}
	if e.Run == nil {
		return fail(e, "env", 126, "%s: cannot run commands here", txtQuoteL(rest[0]))
	}
	return e.Run(ctx, rest, txtStdin(e), e.Stdout, e.Stderr)
}
