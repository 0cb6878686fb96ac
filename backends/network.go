package backends

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/egress"
	"github.com/computerfs/computerfs/wsrpc"
)

// Network per backend (issue 17). A backend's "network" in the policy is
// "none" (the default: no way out), "host" (the host's network), or an
// allow-list:
//
//	"container": {"network": {
//	    "allow": ["registry.example.test", "*.npmjs.org", "10.1.0.0/16", "api.example.com:443"],
//	    "hosts": {"registry.example.test": "10.200.0.2"}
//	}}
//
// With an allow-list, the runtime runs a filtering proxy for the backend
// (package egress) on a unix socket and gives the backend the settings
// "network": "proxy" and "proxy_socket": its path. The container backend
// binds that socket into each container, whose network namespace has
// nothing but loopback: its init forwards 127.0.0.1:3128 to the socket
// and HTTP_PROXY/HTTPS_PROXY name it, so the proxy is the container's
// only way out. "hosts" maps names to addresses before DNS, as
// /etc/hosts does (the proxy resolves every name itself: the container
// has no DNS). Each connection's verdict goes to the audit log (door
// "network"), coalesced as path denials are.

// NetworkPolicy is a backend's network: Mode "none", "host" or "proxy"
// (an allow-list).
type NetworkPolicy struct {
	Mode  string            `json:"-"`
	Allow []string          `json:"allow"`
	Hosts map[string]string `json:"hosts,omitempty"`
}

// UnmarshalJSON reads "none", "host" or {"allow": [...], "hosts": {...}}.
func (n *NetworkPolicy) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "none", "host":
			*n = NetworkPolicy{Mode: s}
			return nil
		}
		return fmt.Errorf(`network: %q is neither "none", "host" nor an object {"allow": [...]}`, s)
	}
	type plain NetworkPolicy
	var p plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf(`network: want "none", "host" or {"allow": [...], "hosts": {...}}: %w`, err)
	}
	*n = NetworkPolicy(p)
	n.Mode = "proxy"
	return nil
}

// MarshalJSON writes the form UnmarshalJSON reads.
func (n NetworkPolicy) MarshalJSON() ([]byte, error) {
	if n.Mode != "proxy" {
		return json.Marshal(n.Mode)
	}
	type plain NetworkPolicy
	return json.Marshal(plain(n))
}

// egressRules compiles a proxy's rules: the allow-list, the hosts, and
// the secrets injected into requests (secrets.go).
func (n *NetworkPolicy) egressRules() (*egress.Rules, error) {
	allow, err := egress.ParseAllow(n.Allow)
	if err != nil {
		return nil, err
	}
	r := &egress.Rules{Allow: allow, Hosts: map[string]netip.Addr{}}
	for name, a := range n.Hosts {
		addr, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("network hosts: %s: %w", name, err)
		}
		r.Hosts[strings.ToLower(strings.TrimSuffix(name, "."))] = addr.Unmap()
	}
	return r, nil
}

// checkNetwork refuses a backend policy whose network cannot work.
func checkNetwork(id string, bp BackendPolicy) error {
	// The proxy's socket is the runtime's to give: a policy that named
	// one could bind any host socket into a sandbox.
	if bp.Settings["network"] == "proxy" || bp.Settings["proxy_socket"] != "" {
		return fmt.Errorf(`backend %s: the settings "network": "proxy" and "proxy_socket" are the runtime's: give the backend "network": {"allow": [...]}`, id)
	}
	if bp.Network == nil {
		return nil
	}
	if _, ok := bp.Settings["network"]; ok {
		return fmt.Errorf("backend %s: network is given twice (the policy's \"network\" and the setting)", id)
	}
	if bp.Network.Mode == "proxy" {
		if _, err := bp.Network.egressRules(); err != nil {
			return fmt.Errorf("backend %s: %w", id, err)
		}
	}
	return nil
}

// proxies are the runtime's egress proxies, one per backend with an
// allow-list, made as the backend starts and closed with the runtime.
type proxies struct {
	mu  sync.Mutex
	dir string
	by  map[string]*egress.Proxy
}

// proxyFor returns the socket of backend id's proxy, starting it the
// first time. Its rules are the policy's at each connection.
func (r *Runtime) proxyFor(id string) (string, error) {
	r.egress.mu.Lock()
	defer r.egress.mu.Unlock()
	if p := r.egress.by[id]; p != nil {
		return p.Addr(), nil
	}
	if r.egress.dir == "" {
		base, err := wsrpc.RuntimeDir()
		if err != nil {
			return "", fmt.Errorf("egress proxy: %w", err)
		}
		dir, err := os.MkdirTemp(base, "egress-")
		if err != nil {
			return "", fmt.Errorf("egress proxy: %w", err)
		}
		// The plugin binds the socket into its sandboxes; only the
		// socket itself is open to others (0666), the directory is
		// searchable so that it can be reached by path.
		if err := os.Chmod(dir, 0o711); err != nil {
			return "", fmt.Errorf("egress proxy: %w", err)
		}
		r.egress.dir = dir
		r.egress.by = map[string]*egress.Proxy{}
	}
	p, err := egress.Listen(filepath.Join(r.egress.dir, id+".sock"), egress.Options{
		Rules:   func() *egress.Rules { return r.egressRules(id) },
		Verdict: func(v egress.Verdict) { r.networkVerdict(id, v) },
		Name:    "backend " + id,
		Logger:  r.log.With("backend", id, "egress", true),
	})
	if err != nil {
		return "", err
	}
	r.egress.by[id] = p
	return p.Addr(), nil
}

// closeProxies stops every proxy (at close).
func (r *Runtime) closeProxies() {
	r.egress.mu.Lock()
	by, dir := r.egress.by, r.egress.dir
	r.egress.by, r.egress.dir = nil, ""
	r.egress.mu.Unlock()
	for id, p := range by {
		if err := p.Close(); err != nil {
			r.log.Debug("egress proxy closed", "backend", id, "err", err)
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// egressRules are backend id's proxy rules under the policy in force:
// nil (all refused) when its network is not an allow-list any more.
func (r *Runtime) egressRules(id string) *egress.Rules {
	c := r.compiled.Load()
	if c == nil {
		return nil
	}
	return c.egress[id]
}

// compiledPolicy is what the runtime derives from a policy: the proxies'
// rules and the secrets' values (secrets.go).
type compiledPolicy struct {
	egress  map[string]*egress.Rules
	secrets []secret
}

// compile derives the compiled state of pol, reading the secrets'
// values.
func compile(pol Policy) (*compiledPolicy, error) {
	c := &compiledPolicy{egress: map[string]*egress.Rules{}}
	secrets, err := loadSecrets(pol)
	if err != nil {
		return nil, err
	}
	c.secrets = secrets
	ids := make([]string, 0, len(pol.Backends))
	for id := range pol.Backends {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		bp := pol.Backends[id]
		if bp.Network == nil || bp.Network.Mode != "proxy" {
			continue
		}
		rules, err := bp.Network.egressRules()
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", id, err)
		}
		for _, s := range secrets {
			if s.inject != nil && s.granted(id) {
				rules.Inject = append(rules.Inject, egress.Injection{Hosts: s.inject, Header: s.header, Value: s.headerValue()})
			}
		}
		c.egress[id] = rules
	}
	return c, nil
}

// networkVerdict records a proxy's decision: refusals and allowed
// connections alike, coalesced (the first of each host a minute).
func (r *Runtime) networkVerdict(id string, v egress.Verdict) {
	rec := audit.Record{Kind: audit.KindVerdict, Verdict: audit.Denied, Door: "network", Backend: id, Rule: "network",
		Path: fmt.Sprintf("%s:%d", v.Host, v.Port), Detail: v.Method + " " + v.Reason, PolicyVersion: r.policyVersion()}
	if v.Allowed {
		rec.Verdict = audit.Allowed
		rec.Rule = "network: " + v.Entry
		rec.Detail = strings.TrimSpace(v.Method + " " + v.Reason)
		if len(v.Injected) > 0 {
			rec.Detail += " (secret headers added: " + strings.Join(v.Injected, ", ") + ")"
		}
	}
	r.audit.mu.Lock()
	if e := r.execOfBackendLocked(id); e != nil {
		rec.ExecID = e.id
	}
	r.audit.mu.Unlock()
	for _, x := range r.audit.coalesce.Admit(rec, timeNow()) {
		r.auditRec(x)
	}
}
