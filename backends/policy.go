package backends

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
type Policy struct {
	// Default is the backend for execs the rules below do not place.
	Default  string                   `json:"default,omitempty"`
	Backends map[string]BackendPolicy `json:"backends,omitempty"`
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
	// Commands, when set, lists the only commands the shell may run.
	Commands []string `json:"commands,omitempty"`
	// Settings go to the backend's Configure (for example "network").
	Settings map[string]string `json:"settings,omitempty"`
	// Disabled backends are listed but never run.
	Disabled bool `json:"disabled,omitempty"`
}

// For returns the policy of backend id (the zero policy if none). Its
// Settings, which go to the backend's Configure, also carry the policy's
// restrictions a backend enforces itself: "commands" (comma-separated)
// when Commands is set, and "read_only": "true" when ReadOnly is.
func (p Policy) For(id string) BackendPolicy {
	bp := p.Backends[id]
	if len(bp.Commands) > 0 || bp.ReadOnly {
		s := map[string]string{}
		for k, v := range bp.Settings {
			s[k] = v
		}
		if len(bp.Commands) > 0 {
			s["commands"] = strings.Join(bp.Commands, ",")
		}
		if bp.ReadOnly {
			s["read_only"] = "true"
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
	return p, nil
}

func errPermission(msg string) error { return status.Error(codes.PermissionDenied, msg) }

// commandsOf lists the command names a shell script runs, as far as a
// parse can tell: literal first words of simple commands. ok is false
// when a command name is computed ($cmd), so nothing can be promised.
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
		lit := call.Args[0].Lit()
		if lit == "" {
			ok = false
			return true
		}
		if !seen[lit] {
			seen[lit] = true
			names = append(names, lit)
		}
		return true
	})
	sort.Strings(names)
	return names, ok, nil
}
