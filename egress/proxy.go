package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rules are what a proxy lets through, read at each request (a policy
// reload swaps them).
type Rules struct {
	// Allow lists the hosts that may be reached.
	Allow *Allow
	// Hosts maps names to addresses before any DNS (as /etc/hosts does):
	// names of servers that DNS does not know, such as a test's.
	Hosts map[string]netip.Addr
	// Inject adds headers to plain HTTP requests to matching hosts
	// (secrets the sandbox must not hold). HTTPS (CONNECT) is a tunnel
	// the proxy does not open: nothing is added there.
	Inject []Injection
}

// Injection is a header added to requests to some hosts.
type Injection struct {
	Hosts  *Allow
	Header string
	Value  string
}

// Verdict is one decision of the proxy, for the audit log.
type Verdict struct {
	Allowed bool
	Method  string // CONNECT, or the HTTP method of a plain request
	Host    string // as the client named it
	Port    int
	Entry   string // the allow-list entry that allowed it
	// Reason says why it was refused, or why an allowed one failed.
	Reason string
	// Injected names the headers added (never their values).
	Injected []string
}

// Options configure a Proxy.
type Options struct {
	// Rules gives the rules in force (nil or a nil Allow refuses all).
	Rules func() *Rules
	// Verdict, if set, hears of every decision. It must be quick.
	Verdict func(Verdict)
	// Resolver resolves names not in Rules.Hosts (nil: net.DefaultResolver).
	Resolver *net.Resolver
	// DialTimeout bounds a connection to an allowed host (10 s if 0).
	DialTimeout time.Duration
	// Name says whose proxy this is in refusals ("the container backend").
	Name   string
	Logger *slog.Logger
}

// Proxy is a filtering HTTP proxy on a unix socket.
type Proxy struct {
	opts      Options
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	rp        *httputil.ReverseProxy
	served    chan struct{}

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup // tunnels under way
}

// Listen serves a proxy on a new unix socket at path (mode 0666: a
// sandbox's unprivileged root connects to it), until Close.
func Listen(path string, opts Options) (*Proxy, error) {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Name == "" {
		opts.Name = "this sandbox"
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{opts: opts, ln: ln, served: make(chan struct{}), tunnels: map[net.Conn]struct{}{}}
	p.transport = &http.Transport{
		Proxy:                 nil, // never the daemon's own HTTP_PROXY
		DialContext:           p.dialChecked,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = "" },
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "computerfs egress proxy: "+r.URL.Host+": "+err.Error(), http.StatusBadGateway)
		},
		ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug)}
	go func() {
		defer close(p.served)
		p.srv.Serve(ln)
	}()
	return p, nil
}

// Addr is the socket's path.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy: the listener, requests under way and tunnels.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	<-p.served
	p.wg.Wait()
	p.transport.CloseIdleConnections()
	os.Remove(p.ln.Addr().String())
	return err
}

// decide checks host:port against the rules in force.
func (p *Proxy) decide(method, host string, port int) (Verdict, *Rules) {
	v := Verdict{Method: method, Host: host, Port: port}
	var rules *Rules
	if p.opts.Rules != nil {
		rules = p.opts.Rules()
	}
	if rules == nil || rules.Allow == nil {
		v.Reason = "the network policy of " + p.opts.Name + " allows no host"
		return v, rules
	}
	e, ok := rules.Allow.Match(host, port)
	if !ok {
		v.Reason = fmt.Sprintf("%s is not in the network policy of %s (allowed: %s)", net.JoinHostPort(host, strconv.Itoa(port)), p.opts.Name, rules.Allow)
		return v, rules
	}
	v.Allowed, v.Entry = true, e
	return v, rules
}

func (p *Proxy) verdict(v Verdict) {
	if p.opts.Verdict != nil {
		p.opts.Verdict(v)
	}
}

// ServeHTTP serves CONNECT and absolute-URL requests.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "computerfs egress proxy: want CONNECT or an absolute http:// URL", http.StatusBadRequest)
		return
	}
	host, port, err := splitHostPort(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "computerfs egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	v, rules := p.decide(r.Method, host, port)
	if !v.Allowed {
		p.verdict(v)
		http.Error(w, "computerfs: denied: "+v.Reason, http.StatusForbidden)
		return
	}
	out := r.Clone(r.Context())
	for _, inj := range rules.Inject {
		if _, ok := inj.Hosts.Match(host, port); ok {
			out.Header.Set(inj.Header, inj.Value)
			v.Injected = append(v.Injected, inj.Header)
		}
	}
	p.verdict(v)
	p.rp.ServeHTTP(w, out)
}

// connect opens a tunnel to an allowed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 0)
	if err == nil && port == 0 {
		err = errors.New("CONNECT wants host:port")
	}
	if err != nil {
		http.Error(w, "computerfs egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	v, rules := p.decide("CONNECT", host, port)
	if !v.Allowed {
		p.verdict(v)
		http.Error(w, "computerfs: denied: "+v.Reason, http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.opts.DialTimeout)
	up, err := p.dial(ctx, rules, host, port)
	cancel()
	if err != nil {
		v.Reason = "allowed, but the connection failed: " + err.Error()
		p.verdict(v)
		http.Error(w, "computerfs egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.verdict(v)
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "computerfs egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	defer p.untrack(down, up)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// What the client sent after its request (buffered) goes first.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		io.Copy(up, down)
		closeWrite(up)
	}()
	io.Copy(down, up)
	closeWrite(down)
	<-done
}

// track registers a tunnel's two connections (false once closed).
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.tunnels, c)
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Done()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// dialChecked is the transport's dial: the host is checked again (a
// redirect is followed by the client, not here, but a reused transport
// must never reach what the rules do not allow).
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr, 80)
	if err != nil {
		return nil, err
	}
	v, rules := p.decide("dial", host, port)
	if !v.Allowed {
		return nil, errors.New(v.Reason)
	}
	return p.dial(ctx, rules, host, port)
}

// dial connects to host:port, resolving the name through rules.Hosts
// first, then DNS.
func (p *Proxy) dial(ctx context.Context, rules *Rules, host string, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: p.opts.DialTimeout}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if a, ok := rules.Hosts[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		addrs = []netip.Addr{a}
	} else {
		res := p.opts.Resolver
		if res == nil {
			res = net.DefaultResolver
		}
		ips, err := res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		// A name DNS maps to this host or its link (loopback, link-local,
		// unspecified, multicast) reaches only what an address entry of
		// the allow-list names: a public name must not open the daemon's
		// own services to the sandbox.
		for _, a := range ips {
			a = a.Unmap()
			if a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
				if _, ok := rules.Allow.Match(a.String(), port); !ok {
					return nil, fmt.Errorf("%s resolves to %s, a local address the allow-list does not name", host, a)
				}
			}
			addrs = append(addrs, a)
		}
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("connect %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), errors.Join(errs...))
}

// splitHostPort splits "host:port" (port def if absent; 0 means
// required by the caller) and checks both.
func splitHostPort(hp string, def int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		if def == 0 || strings.Contains(strings.Trim(hp, "[]"), ":") && !strings.HasPrefix(hp, "[") {
			return "", 0, fmt.Errorf("bad host:port %q", hp)
		}
		host, ps = strings.Trim(hp, "[]"), strconv.Itoa(def)
	}
	port, err := parsePort(ps)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		return "", 0, fmt.Errorf("bad host:port %q: no host", hp)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		if err := checkName(strings.ToLower(strings.TrimSuffix(host, "."))); err != nil {
			return "", 0, fmt.Errorf("bad host %q: %w", host, err)
		}
	}
	return host, port, nil
}
