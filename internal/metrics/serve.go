package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServeOptions say how Listen serves.
type ServeOptions struct {
	// Pprof adds net/http/pprof's handlers under /debug/pprof/.
	Pprof bool
	// AnyAddress allows an address that is not loopback. Metrics tell the
	// workspace's activity and timings, pprof its memory (paths and file
	// contents included) and goroutines, to whoever connects: off a
	// loopback address that is anyone who can reach the machine.
	AnyAddress bool
	Logger     *slog.Logger
}

// ErrNotLoopback refuses an address that is not loopback, unless forced.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckAddress accepts host:port when the host is a loopback IP or
// "localhost" (an empty host means every interface, and is refused), or
// anything when anyAddress.
func CheckAddress(addr string, anyAddress bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: want HOST:PORT, such as 127.0.0.1:9464: %w", addr, err)
	}
	if anyAddress {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("metrics address %s: %w: metrics and pprof tell paths, timings and memory to whoever connects (force it to serve there anyway)", addr, ErrNotLoopback)
}

// Server serves a Daemon's metrics over HTTP until Close.
type Server struct {
	srv  *http.Server
	lis  net.Listener
	done chan struct{}
	log  *slog.Logger
}

// Listen serves d's registry at /metrics on addr (checked by
// CheckAddress), and pprof under /debug/pprof/ if asked, until Close.
func (d *Daemon) Listen(addr string, o ServeOptions) (*Server, error) {
	if err := CheckAddress(addr, o.AnyAddress); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg, ErrorLog: slogPrinter{o.Logger}}))
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "computerfs daemon: metrics at /metrics")
		if o.Pprof {
			fmt.Fprintln(w, "pprof at /debug/pprof/")
		}
	})
	s := &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil},
		lis: lis, done: make(chan struct{}), log: o.Logger,
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server stopped", "addr", lis.Addr().String(), "err", err)
		}
	}()
	s.log.Info("metrics", "addr", lis.Addr().String(), "pprof", o.Pprof)
	return s, nil
}

// Addr is the address the server listens on (its port chosen, for :0).
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server: it waits for requests in flight until ctx is
// done (a CPU profile runs for its seconds), then ends them, and returns
// once the serving goroutine has.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return err
}

// slogPrinter is promhttp's error log, on slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Error("metrics: " + fmt.Sprint(v...)) }

func statFile(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
