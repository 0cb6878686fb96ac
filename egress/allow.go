// Package egress is the daemon's filtering proxy (issue 17): the only
// way out of a sandbox whose network policy is an allow-list. A sandbox
// (a container in its own network namespace, with nothing but loopback)
// reaches it through a unix socket bound into it; its HTTP_PROXY and
// HTTPS_PROXY name it. The proxy serves HTTP CONNECT (any TCP, TLS
// included, end to end: the proxy never sees inside) and plain HTTP
// (absolute URLs), resolves names itself (the sandbox needs no DNS: a
// client sends names in CONNECT and in URLs), and lets through only what
// the allow-list names. A refusal fails at once with 403 and a message
// naming the host and the policy; every verdict goes to a callback (the
// audit log). Secrets can be added to plain HTTP requests to listed
// hosts, so that their values never enter the sandbox.
//
// It owns the proxy's listener, the connections it makes and the
// allow-list's syntax. It knows nothing of backends, policies or the
// audit log (those come in as Options), and touches no file but its
// socket.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// An allow-list entry is one of:
//
//	"registry.example.test"      that name, any port
//	"*.example.org"              any name below example.org (not the name itself)
//	"registry.example.test:443"  that name, that port
//	"10.1.0.0/16", "2001:db8::/32", "192.0.2.7"   addresses (CIDR or one)
//	"10.1.0.0/16:443"            (a CIDR and a port; "[2001:db8::1]:443" for one v6 address)
//
// A name matches names only, an address range addresses only: a client
// that connects to an allowed name's address by its number is refused
// unless the address is listed too. Names are compared without case and
// without a final dot.

// Allow is a compiled allow-list.
type Allow struct {
	entries []entry
}

type entry struct {
	name   string // exact name, or suffix (".example.org") when wildcard
	wild   bool
	prefix netip.Prefix // valid for an address entry
	port   int          // 0: any
	text   string       // as given
}

// ParseAllow compiles an allow-list, refusing malformed entries.
func ParseAllow(list []string) (*Allow, error) {
	a := &Allow{}
	for _, s := range list {
		e, err := parseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("network allow-list entry %q: %w", s, err)
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

func parseEntry(s string) (entry, error) {
	e := entry{text: s}
	if s == "" || strings.TrimSpace(s) != s {
		return e, errors.New("empty, or spaces around it")
	}
	host := s
	// A port: after the last ':' of a name or an IPv4 form, or after
	// "]" of a bracketed v6 address. A bare v6 address or prefix has
	// several colons and no port.
	if strings.HasPrefix(s, "[") {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return e, err
		}
		host = h
		if e.port, err = parsePort(p); err != nil {
			return e, err
		}
	} else if strings.Count(s, ":") == 1 {
		h, p, _ := strings.Cut(s, ":")
		host = h
		var err error
		if e.port, err = parsePort(p); err != nil {
			return e, err
		}
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		e.prefix = pfx.Masked()
		return e, nil
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		e.prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		return e, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		e.wild, name = true, rest
	}
	if err := checkName(name); err != nil {
		return e, err
	}
	if e.wild {
		e.name = "." + name
	} else {
		e.name = name
	}
	return e, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q: want 1 to 65535", p)
	}
	return n, nil
}

// checkName accepts DNS names: labels of letters, digits, '-' and '_',
// 1 to 63 bytes, 253 in all.
func checkName(n string) error {
	if n == "" || len(n) > 253 {
		return errors.New("not a host name")
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > 63 {
			return errors.New("not a host name: an empty or long label")
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("not a host name: %q", c)
			}
		}
	}
	return nil
}

// Match says whether host (a name or an address, as a client gave it)
// and port are allowed, and by which entry.
func (a *Allow) Match(host string, port int) (entry string, ok bool) {
	if a == nil {
		return "", false
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	addr, err := netip.ParseAddr(host)
	isAddr := err == nil
	if isAddr {
		addr = addr.Unmap()
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range a.entries {
		if e.port != 0 && e.port != port {
			continue
		}
		switch {
		case e.prefix.IsValid():
			if isAddr && e.prefix.Contains(addr) {
				return e.text, true
			}
		case isAddr:
		case e.wild:
			if strings.HasSuffix(name, e.name) {
				return e.text, true
			}
		case name == e.name:
			return e.text, true
		}
	}
	return "", false
}

// String lists the entries as given.
func (a *Allow) String() string {
	if a == nil {
		return ""
	}
	out := make([]string, len(a.entries))
	for i, e := range a.entries {
		out[i] = e.text
	}
	return strings.Join(out, ", ")
}
