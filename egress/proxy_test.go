package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	a, err := ParseAllow([]string{"registry.example.test", "*.example.org", "api.example.com:443", "10.1.0.0/16", "192.0.2.7", "[2001:db8::1]:8443", "2001:db8:1::/48"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"registry.example.test", 80, true},
		{"REGISTRY.example.test.", 443, true},
		{"evil.registry.example.test", 80, false},
		{"example.org", 80, false},
		{"a.b.example.org", 80, true},
		{"badexample.org", 80, false},
		{"api.example.com", 443, true},
		{"api.example.com", 80, false},
		{"10.1.2.3", 80, true},
		{"10.2.0.1", 80, false},
		{"192.0.2.7", 1, true},
		{"::ffff:192.0.2.7", 1, true},
		{"2001:db8::1", 8443, true},
		{"[2001:db8::1]", 8443, true},
		{"2001:db8::1", 443, false},
		{"2001:db8:1::5", 22, true},
		{"127.0.0.1", 80, false},
		{"localhost", 80, false},
	}
	for _, tt := range tests {
		if _, got := a.Match(tt.host, tt.port); got != tt.want {
			t.Errorf("Match(%q, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	for _, bad := range []string{"", " a", "a b", "a..b", "*.", "host:0", "host:99999", "1.2.3.4/33", "[::1]", "exa$mple.com", strings.Repeat("a", 64) + ".com"} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}

func FuzzAllow(f *testing.F) {
	for _, s := range []string{"registry.example.test", "*.example.org", "a:443", "10.0.0.0/8", "[::1]:80", "::1", "1.2.3.4:5"} {
		f.Add(s, "registry.example.test", 443)
	}
	f.Fuzz(func(t *testing.T, entry, host string, port int) {
		a, err := ParseAllow([]string{entry})
		if err != nil {
			return
		}
		a.Match(host, port)
		if a.String() != entry {
			t.Errorf("String() = %q, want %q", a.String(), entry)
		}
		// An entry always allows itself, when it names one host.
		e := a.entries[0]
		if !e.wild && !e.prefix.IsValid() {
			p := e.port
			if p == 0 {
				p = 80
			}
			if _, ok := a.Match(e.name, p); !ok {
				t.Errorf("%q does not allow %q:%d", entry, e.name, p)
			}
		}
	})
}

func FuzzSplitHostPort(f *testing.F) {
	for _, s := range []string{"a:80", "[::1]:443", "a", "::1", "[::1]", "a:b", ":80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hp string) {
		host, port, err := splitHostPort(hp, 80)
		if err != nil {
			return
		}
		if port < 1 || port > 65535 || host == "" {
			t.Errorf("splitHostPort(%q) = %q, %d", hp, host, port)
		}
	})
}

// testServer counts its requests and says who it is.
type testServer struct {
	*httptest.Server
	hits    atomic.Int64
	lastHdr atomic.Value
}

func newTestServer(t *testing.T, name string) *testServer {
	s := &testServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.lastHdr.Store(r.Header.Clone())
		fmt.Fprintf(w, "%s-OK", name)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestProxy: through a real proxy on a unix socket to real servers on
// loopback: an allowed name is reached by plain HTTP and by CONNECT; a
// name not allowed, an allowed server by its address, and a malformed
// request are refused with 403/400 before any connection (the servers
// count what reached them); every decision is a verdict; an injected
// header reaches only its host.
func TestProxy(t *testing.T) {
	good, other := newTestServer(t, "REGISTRY"), newTestServer(t, "OTHER")
	goodAddr := netip.MustParseAddrPort(strings.TrimPrefix(good.URL, "http://"))
	otherAddr := netip.MustParseAddrPort(strings.TrimPrefix(other.URL, "http://"))
	allow, err := ParseAllow([]string{"registry.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	injHosts, _ := ParseAllow([]string{"registry.example.test"})
	rules := &Rules{Allow: allow, Hosts: map[string]netip.Addr{"registry.example.test": goodAddr.Addr(), "other.example.test": otherAddr.Addr()},
		Inject: []Injection{{Hosts: injHosts, Header: "Authorization", Value: "Bearer s3cr3t-token"}}}
	var mu sync.Mutex
	var verdicts []Verdict
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	p, err := Listen(sock, Options{Rules: func() *Rules { return rules }, Name: "the test", Verdict: func(v Verdict) {
		mu.Lock()
		verdicts = append(verdicts, v)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}
	proxyURL, _ := url.Parse("http://proxy.invalid")
	plain := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: dial}}
	get := func(c *http.Client, u string) (int, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// connectGet opens a CONNECT tunnel by hand and sends a GET in it.
	connectGet := func(target string) (string, string) {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		status, _ := br.ReadString('\n')
		rest, _ := io.ReadAll(br)
		return strings.TrimSpace(status), string(rest)
	}

	gp := fmt.Sprint(goodAddr.Port())
	if code, body := get(plain, "http://registry.example.test:"+gp+"/"); code != 200 || body != "REGISTRY-OK" {
		t.Errorf("plain HTTP to the allowed name: %d %q", code, body)
	}
	if h, _ := good.lastHdr.Load().(http.Header); h.Get("Authorization") != "Bearer s3cr3t-token" {
		t.Errorf("the injected header did not reach the allowed host: %v", h)
	}
	if status, rest := connectGet("registry.example.test:" + gp); !strings.Contains(status, "200") || !strings.Contains(rest, "REGISTRY-OK") {
		t.Errorf("CONNECT to the allowed name: %q %q", status, rest)
	}
	op := fmt.Sprint(otherAddr.Port())
	refused := []func() (string, string){
		func() (string, string) {
			c, b := get(plain, "http://other.example.test:"+op+"/")
			return fmt.Sprint(c), b
		},
		func() (string, string) { return connectGet("other.example.test:" + op) },
		func() (string, string) { return connectGet(otherAddr.String()) },
		func() (string, string) { return connectGet(goodAddr.String()) }, // the allowed server by number
		func() (string, string) { c, b := get(plain, "http://"+otherAddr.String()+"/"); return fmt.Sprint(c), b },
	}
	for i, f := range refused {
		status, body := f()
		if !strings.Contains(status, "403") || !strings.Contains(status+body, "not in the network policy of the test") && !strings.Contains(body, "not in the network policy of the test") {
			t.Errorf("refusal %d: %q %q", i, status, body)
		}
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the server not allowed got %d requests", n)
	}
	if n := good.hits.Load(); n != 2 {
		t.Errorf("the allowed server got %d requests, want 2 (none by its address)", n)
	}
	if status, _ := connectGet("no-port"); !strings.Contains(status, "400") {
		t.Errorf("CONNECT without a port: %q", status)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, v := range verdicts {
		got = append(got, fmt.Sprintf("%s %s %v %v", v.Method, v.Host, v.Allowed, v.Injected))
	}
	want := []string{"GET registry.example.test true [Authorization]", "CONNECT registry.example.test true []",
		"GET other.example.test false []", "CONNECT other.example.test false []", "CONNECT 127.0.0.1 false []", "CONNECT 127.0.0.1 false []", "GET 127.0.0.1 false []"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, v := range verdicts {
		if strings.Contains(fmt.Sprint(v), "s3cr3t") {
			t.Errorf("a secret in a verdict: %+v", v)
		}
	}
}

// TestProxyClose: Close ends tunnels under way and returns.
func TestProxyClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c) // holds the tunnel open
		}
	}()
	allow, _ := ParseAllow([]string{"127.0.0.1"})
	sock := filepath.Join(t.TempDir(), "p.sock")
	p, err := Listen(sock, Options{Rules: func() *Rules { return &Rules{Allow: allow} }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr())
	br := bufio.NewReader(c)
	if s, _ := br.ReadString('\n'); !strings.Contains(s, "200") {
		t.Fatalf("CONNECT: %q", s)
	}
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on an open tunnel")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "\r\n" {
		t.Errorf("the tunnel after Close: %q, %v (want EOF)", rest, err)
	}
}

// TestProxyLocalNames: a name allowed by the list whose DNS answer is a
// loopback address is refused (the daemon's own services), unless an
// address entry names it.
func TestProxyLocalNames(t *testing.T) {
	srv := newTestServer(t, "LOCAL")
	port := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://")).Port()
	for _, tt := range []struct {
		allow []string
		want  string
	}{
		{[]string{"localhost"}, "a local address the allow-list does not name"},
		{[]string{"localhost", "127.0.0.0/8"}, "LOCAL-OK"},
	} {
		allow, err := ParseAllow(tt.allow)
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(t.TempDir(), "p.sock")
		p, err := Listen(sock, Options{Rules: func() *Rules { return &Rules{Allow: allow} }})
		if err != nil {
			t.Fatal(err)
		}
		proxyURL, _ := url.Parse("http://proxy.invalid")
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		resp, err := c.Get(fmt.Sprintf("http://localhost:%d/", port))
		var body []byte
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if !strings.Contains(string(body), tt.want) {
			t.Errorf("allow %v: %q %v; want %q", tt.allow, body, err, tt.want)
		}
		p.Close()
	}
}
