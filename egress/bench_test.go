package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkEgress compares, side by side, a small GET and an 8 MiB
// download from a loopback server directly and through the proxy (plain
// HTTP, and a CONNECT tunnel opened per request).
func BenchmarkEgress(b *testing.B) {
	big := strings.Repeat("x", 8<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "ok")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	allow, _ := ParseAllow([]string{"127.0.0.1"})
	sock := filepath.Join(b.TempDir(), "p.sock")
	p, err := Listen(sock, Options{Rules: func() *Rules { return &Rules{Allow: allow} }})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	proxyURL, _ := url.Parse("http://proxy.invalid")
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	get := func(b *testing.B, c *http.Client, path string) {
		resp, err := c.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.SetBytes(n)
	}
	tunnel := func(b *testing.B, path string) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr())
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("CONNECT: %v %v", resp, err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
		r2, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, r2.Body)
		b.SetBytes(n)
	}
	for _, path := range []string{"/small", "/big"} {
		b.Run("direct"+path, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				get(b, direct, path)
			}
		})
		b.Run("proxy-http"+path, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				get(b, proxied, path)
			}
		})
		b.Run("proxy-connect"+path, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tunnel(b, path)
			}
		})
	}
}
