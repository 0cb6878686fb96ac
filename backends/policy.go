package backends

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Policy says what each backend may reach and how execs that name no
// backend are routed. It is read from a JSON file:
//
//	{
//	  "default": "shell",
//	  "backends": {
//	    "shell":     {"root": "/", "read_only": false, "env": {"LANG": "C.UTF-8"}},
//	    "container": {"root": "/project", "settings": {"network": "none", "seccomp": "default"}},
//	    "js":        {"root": "/scripts", "read_only": true}
//	  }
//	}
//
// The container backend's settings (see package containerbackend):
// "network" is "none" (the default: loopback only) or "host" (the host's
// network namespace); "rootfs" is an absolute directory, or OCI bundle,
// whose tree replaces the host's userland as the container's read-only
// root; "seccomp" is "default" (a profile that refuses kernel modules,
// BPF, keyrings, mount, namespaces and the like) or "off". A backend that
// needs the workspace mounted sees the policy's root as its mount path
// and, with read_only, gets "read_only": "true" in its settings.
//
// "paths" holds path rules (package workspace, rules.go, says exactly
// what they mean): glob patterns of workspace paths, each "allow",
// "read_only" or "deny", in order:
//
//	{
//	  "paths": {"**/.env": "deny", "**/*.pem": "deny"},
//	  "backends": {
//	    "container": {"paths": {"/vendor/**": "read_only"}},
//	    "js":        {"paths": {"/**": "read_only", "/out/**": "allow"}}
//	  }
//	}
//
// The top level's bind the file API (CLI, daemon socket, MCP) and every
// backend; a backend's own come after them and bind that backend. Within
// one object the last matching rule wins; between the two the stricter
// verdict does, except that a backend rule with the same pattern as a
// top-level one replaces it. Patterns starting with '/' are anchored at
// the workspace root (not the backend's root), others match at any
// depth; a rule on a directory covers what is below it. A denied path
// is absent (ENOENT; EACCES on creating it), a read-only one refuses
// changes (EROFS), through every door: HostFS and the file API check
// the canonical path after symlinks.
//
// "commands" and "deny_commands" list, by name, the commands a backend
// may and may not run: {"container": {"commands": ["git", "make", "go"],
// "deny_commands": ["curl"]}}. The shell checks each command as it runs
// it (exit 126); for the container the runtime checks what an exec
// starts before starting it (argv[0], or every command a script names:
// see BackendPolicy.Commands) and refuses the exec whole. Each refusal
// is a verdict in the audit log.
type Policy struct {
	// Default is the backend for execs the rules below do not place.
	Default  string                   `json:"default,omitempty"`
	Backends map[string]BackendPolicy `json:"backends,omitempty"`
	// Paths are the path rules of the file API and every backend.
	Paths PathRules `json:"paths,omitempty"`
	// Secrets are named secrets granted to backends (secrets.go).
	Secrets map[string]SecretPolicy `json:"secrets,omitempty"`
}

// PathRules are path rules in the order the policy file gives them: a
// JSON object from pattern to "allow", "read_only" or "deny".
type PathRules []workspace.Rule

// UnmarshalJSON reads the object keeping its order, refusing duplicate
// patterns and unknown verdicts.
func (pr *PathRules) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("paths: %w", err)
	}
	if t == nil {
		*pr = nil
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("paths: want an object of pattern: verdict")
	}
	out := PathRules{}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("paths: %w", err)
		}
		pattern := t.(string) // an object's keys are strings
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("paths: pattern %q: want a verdict string: %w", pattern, err)
		}
		if seen[pattern] {
			return fmt.Errorf("paths: pattern %q given twice", pattern)
		}
		seen[pattern] = true
		verdict, err := workspace.ParseVerdict(v)
		if err != nil {
			return fmt.Errorf("paths: pattern %q: %w", pattern, err)
		}
		out = append(out, workspace.Rule{Pattern: pattern, Verdict: verdict})
	}
	*pr = out
	return nil
}

// MarshalJSON writes the object in order.
func (pr PathRules) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, r := range pr {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(r.Pattern)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, _ := json.Marshal(r.Verdict.String())
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FileRules are the path rules of the file API: the top level's (nil
// when there are none).
func (p Policy) FileRules() (*workspace.Rules, error) {
	rs, err := workspace.CompileRules(p.Paths)
	if err != nil {
		return nil, fmt.Errorf("policy paths: %w", err)
	}
	return rs, nil
}

// PathRules are the path rules of backend id: the top level's, then its
// own (nil when there are none).
func (p Policy) PathRules(id string) (*workspace.Rules, error) {
	rs, err := workspace.CompileRules(p.Paths, p.Backends[id].Paths)
	if err != nil {
		return nil, fmt.Errorf("policy of backend %s: paths: %w", id, err)
	}
	return rs, nil
}

// check refuses what would fail later: path rules that do not compile.
func (p Policy) check() error {
	if _, err := p.FileRules(); err != nil {
		return err
	}
	ids := make([]string, 0, len(p.Backends))
	for id := range p.Backends {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, err := p.PathRules(id); err != nil {
			return err
		}
		if err := checkNetwork(id, p.Backends[id]); err != nil {
			return err
		}
	}
	return checkSecrets(p)
}

// BackendPolicy is what one backend may reach.
type BackendPolicy struct {
	// Root is the workspace subtree the backend sees through HostFS ("/"
	// when empty); nothing above it can be reached. A backend that needs
	// the mount is given this directory of it as its mount path.
	Root string `json:"root,omitempty"`
	// ReadOnly refuses every change through HostFS; it reaches the
	// backend as the setting "read_only": "true" (the container backend
	// then mounts the workspace read-only).
	ReadOnly bool `json:"read_only,omitempty"`
	// Env is added to every exec's environment (the request's values win).
	Env map[string]string `json:"env,omitempty"`
	// AllowEnv, when set, lists the only variables a request may pass.
	AllowEnv []string `json:"allow_env,omitempty"`
	// Commands, when set, lists the only commands the backend may run,
	// and DenyCommands commands it may not (by name: "/usr/bin/curl" is
	// "curl"). The shell checks each command as it runs it; for other
	// backends (the container) the runtime checks what an exec starts
	// before it starts (commandVerdict): argv[0], or every command a
	// script names. Neither list sees what a program runs in turn (a
	// python started in a container can run curl): they say which
	// programs an exec may be started with, not what the sandbox holds.
	Commands     []string `json:"commands,omitempty"`
	DenyCommands []string `json:"deny_commands,omitempty"`
	// Settings go to the backend's Configure (for example "network").
	Settings map[string]string `json:"settings,omitempty"`
	// Disabled backends are listed but never run.
	Disabled bool `json:"disabled,omitempty"`
	// Paths are the backend's path rules, after the top level's (see
	// Policy).
	Paths PathRules `json:"paths,omitempty"`
	// Network is "none", "host" or an allow-list run through the
	// daemon's egress proxy (network.go); nil leaves it to the settings
	// (the container's default is none).
	Network *NetworkPolicy `json:"network,omitempty"`
}

// For returns the policy of backend id (the zero policy if none). Its
// Settings, which go to the backend's Configure, also carry the policy's
// restrictions a backend enforces itself: "commands" and "deny_commands"
// (comma-separated) when Commands or DenyCommands is set (given only to
// a backend that describes a "commands:" feature: the runtime checks the
// others'), and "read_only": "true" when ReadOnly is.
func (p Policy) For(id string) BackendPolicy {
	bp := p.Backends[id]
	if len(bp.Commands) > 0 || len(bp.DenyCommands) > 0 || bp.ReadOnly || bp.Network != nil {
		s := map[string]string{}
		for k, v := range bp.Settings {
			s[k] = v
		}
		if len(bp.Commands) > 0 {
			s["commands"] = strings.Join(bp.Commands, ",")
		}
		if len(bp.DenyCommands) > 0 {
			s["deny_commands"] = strings.Join(bp.DenyCommands, ",")
		}
		if bp.ReadOnly {
			s["read_only"] = "true"
		}
		if bp.Network != nil {
			// "proxy" comes with "proxy_socket", which the runtime adds
			// as it starts the backend (network.go).
			s["network"] = bp.Network.Mode
		}
		bp.Settings = s
	}
	return bp
}

// LoadPolicy reads a policy file; a missing file is the default policy.
func LoadPolicy(path string) (Policy, error) {
	var p Policy
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	if err := p.check(); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

func errPermission(msg string) error { return status.Error(codes.PermissionDenied, msg) }

// esModule matches the lines that make source an ES module rather than a
// shell script: a default export, an exported function, or an import from
// a module. ("export default_x=1" is shell: the \b needs a word's end.)
var esModule = regexp.MustCompile(`(?m)^[ \t]*(export[ \t]+default\b|export[ \t]+(async[ \t]+)?function\b|import[ \t]+[\w{*].*\bfrom[ \t]*['"]|import[ \t]*['"])`)

// wrappers are the commands that run another one given in their
// arguments, with the options of each that take a value.
var wrappers = map[string]map[string]bool{
	"xargs":   {"-I": true, "-i": false, "-n": true, "-P": true, "-L": true, "-l": false, "-d": true, "-s": true, "-E": true, "-e": false, "-a": true, "--max-args": true, "--max-procs": true, "--delimiter": true, "--arg-file": true, "--replace": false},
	"env":     {"-u": true, "--unset": true, "-C": true, "--chdir": true, "-S": true},
	"timeout": {"-s": true, "--signal": true, "-k": true, "--kill-after": true},
	"command": {},
	"nice":    {"-n": true, "--adjustment": true},
	"nohup":   {},
	"exec":    {"-a": true},
	"time":    {},
}

// wrapped returns the words of the command that wrapper name runs, given
// the words after it: none when it runs none (xargs alone runs echo, a
// shell command too; command -v only looks). known is false when they
// cannot be told (an option or its value that is not a literal).
func wrapped(name string, args []*syntax.Word) (rest []*syntax.Word, known bool) {
	valued, ok := wrappers[name]
	if !ok {
		return nil, true
	}
	for i := 0; i < len(args); i++ {
		a := args[i].Lit()
		switch {
		case a == "":
			return nil, false
		case name == "command" && (a == "-v" || a == "-V"):
			return nil, true
		case a == "--":
			return args[i+1:], true
		case name == "env" && strings.Contains(a, "="):
			continue // NAME=VALUE
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if k, _, found := strings.Cut(a, "="); found && valued[k] {
				continue // --opt=value
			}
			if valued[a] {
				i++ // its value is the next word
			}
			continue
		case name == "timeout":
			return args[i+1:], true // the duration, then the command
		}
		return args[i:], true
	}
	return nil, true
}

// isESModule says whether an exec's source is a JavaScript module: it goes
// to the js backend, not to a shell that would refuse its syntax. It is
// one when its first line of code is an import or an export, or when such
// a line is anywhere in source that is no shell script (a script that
// writes a module with a here-document stays a script).
func isESModule(src string) bool {
	if !esModule.MatchString(src) {
		return false
	}
	for _, line := range strings.Split(src, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/*") || strings.HasPrefix(l, "*") || strings.HasPrefix(l, "#!") {
			continue
		}
		if esModule.MatchString(l) {
			return true
		}
		break
	}
	_, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	return err != nil
}

// commandsOf lists the command names a shell script runs, as far as a
// parse can tell: literal first words of simple commands, and the
// commands that wrappers run (xargs CMD, env CMD, timeout N CMD, command
// CMD, nice CMD): those run too, and the shell has to have them. ok is
// false when a command name is computed ($cmd), so nothing can be promised.
func commandsOf(script string) (names []string, ok bool, err error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, false, err
	}
	ok = true
	seen := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, isCall := n.(*syntax.CallExpr)
		if !isCall || len(call.Args) == 0 {
			return true
		}
		args := call.Args
		for len(args) > 0 {
			lit := args[0].Lit()
			if lit == "" {
				ok = false
				return true
			}
			if !seen[lit] {
				seen[lit] = true
				names = append(names, lit)
			}
			var known bool
			args, known = wrapped(lit, args[1:])
			ok = ok && known
		}
		return true
	})
	sort.Strings(names)
	return names, ok, nil
}

// checksCommands says whether backend id checks the policy's command
// lists itself: the shell does, and any backend that describes a
// "commands:" feature.
func checksCommands(id string, desc *pb.Description) bool {
	if id == "shell" {
		return true
	}
	for _, f := range desc.GetFeatures() {
		if strings.HasPrefix(f, "commands:") {
			return true
		}
	}
	return false
}

// commandVerdict checks what an exec of a backend that does not check
// commands itself would start against pol's lists: argv[0] for an argv
// exec, every command a script names (its literal command words, and
// what wrappers such as env, xargs or timeout run) for a script. Shell
// builtins are always allowed. Under an allow list, a script whose
// command names cannot all be told ($cmd) is refused: nothing could be
// promised of it. It returns the rule that refused ("commands" or
// "deny_commands") and why, or "" when the exec may start.
func commandVerdict(pol BackendPolicy, argv []string, script bool) (rule string, err error) {
	if len(pol.Commands) == 0 && len(pol.DenyCommands) == 0 {
		return "", nil
	}
	var names []string
	if script {
		var ok bool
		var perr error
		names, ok, perr = commandsOf(strings.Join(argv, " "))
		if perr != nil {
			return "commands", fmt.Errorf("the policy lists the commands this backend may run, and the script does not parse: %w", perr)
		}
		if !ok && len(pol.Commands) > 0 {
			return "commands", errors.New("the policy lists the commands this backend may run, and the script computes a command name ($cmd), which cannot be checked")
		}
	} else if len(argv) > 0 {
		names = []string{argv[0]}
	}
	deny := map[string]bool{}
	for _, c := range pol.DenyCommands {
		deny[path.Base(c)] = true
	}
	allow := map[string]bool{}
	for _, c := range pol.Commands {
		allow[path.Base(c)] = true
	}
	var denied, notAllowed []string
	for _, n := range names {
		base := path.Base(n)
		switch {
		case deny[base]:
			denied = append(denied, base)
		case script && interp.IsBuiltin(base) && !strings.Contains(n, "/"):
		case len(allow) > 0 && !allow[base]:
			notAllowed = append(notAllowed, base)
		}
	}
	if len(denied) > 0 {
		return "deny_commands", fmt.Errorf("the policy denies this backend the command%s %s", plural(len(denied)), strings.Join(denied, ", "))
	}
	if len(notAllowed) > 0 {
		return "commands", fmt.Errorf("the command%s %s %s not in this backend's allowed commands (%s)", plural(len(notAllowed)), strings.Join(notAllowed, ", "), isAre(len(notAllowed)), strings.Join(pol.Commands, ", "))
	}
	return "", nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
