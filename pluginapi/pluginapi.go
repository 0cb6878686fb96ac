// Package pluginapi is the execution backend protocol and the SDK that
// plugin authors import: a backend is an executable that calls Serve, and
// the computerfs daemon starts it, negotiates a protocol version, asks it
// to Describe itself, and sends it execs. The plugin reaches the workspace
// through HostFS, a client of the file API the host serves back to it.
//
// The wire contract is pluginapi/proto (generated code in pluginapi/pb);
// PROTOCOL.md explains it for authors in other languages. This package
// hides go-plugin: its handshake, the broker, stream framing and the
// chunking of output.
//
// It must not import any of the daemon's packages: a third-party plugin
// gets exactly what ours get, and nothing more.
package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the newest protocol version this package speaks.
// Versions are negotiated with go-plugin's VersionedPlugins: the host
// offers every version it knows, and the plugin picks the newest it
// shares.
const ProtocolVersion = 1

// PluginName is the name of the single plugin a backend executable serves.
const PluginName = "backend"

// Handshake is the go-plugin handshake. The magic cookie only tells a
// plugin it was started by a host, not run by hand.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "COMPUTERFS_PLUGIN",
	MagicCookieValue: "5f2c1c9e-backend",
}

// MaxChunk is the most bytes of stdin, stdout or stderr one message
// carries.
const MaxChunk = 64 << 10

// TokenMetadata is the gRPC metadata key carrying an exec's HostFS token.
const TokenMetadata = "computerfs-token"

// Backend is what a plugin implements.
type Backend interface {
	// Describe says what the backend is; it may be called at any time.
	Describe(ctx context.Context) (*pb.Description, error)
	// Configure is called once, before the first Exec.
	Configure(ctx context.Context, cfg *Config) error
	// Exec runs one command and returns how it ended. Output written to
	// x.Stdout and x.Stderr streams to the host as it is written. ctx ends
	// when the host cancels the exec; the host enforces its limits
	// whatever the backend does, so a backend that overruns is killed.
	Exec(ctx context.Context, x *Exec) (*pb.Exit, error)
}

// Config is what Configure receives.
type Config struct {
	Settings  map[string]string
	MountPath string // the workspace's FUSE mount on the host, if any
}

// Exec is one command to run.
type Exec struct {
	Start  *pb.ExecStart
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Signals delivers the signals the host forwards (SIGINT, SIGTERM).
	// SIGKILL is not delivered: it cancels ctx.
	Signals <-chan syscall.Signal
	// FS is the workspace, as the exec's policy lets it see it.
	FS *HostFS

	mu     sync.Mutex
	result []byte
}

// SetResult sets the exec's structured result: JSON text.
func (x *Exec) SetResult(json []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.result = append([]byte(nil), json...)
}

// Serve runs b as a plugin until the host stops it. Call it from main,
// before anything writes to stdout: go-plugin speaks on stdout first.
func Serve(b Backend) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			ProtocolVersion: {PluginName: &GRPCPlugin{impl: b}},
		},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}

// GRPCPlugin adapts a Backend to go-plugin. Hosts use it with a nil
// backend to get a *Client.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Backend
}

// GRPCServer serves the backend (plugin side).
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("pluginapi: no backend to serve")
	}
	pb.RegisterBackendServer(s, &backendServer{impl: p.impl, broker: broker})
	return nil
}

// GRPCClient returns a *Client (host side).
func (p *GRPCPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return &Client{Backend: pb.NewBackendClient(conn), broker: broker}, nil
}

// backendServer is the plugin side of the protocol.
type backendServer struct {
	pb.UnimplementedBackendServer
	impl   Backend
	broker *plugin.GRPCBroker

	mu     sync.Mutex
	hostfs pb.WorkspaceClient
	conn   *grpc.ClientConn
}

func (s *backendServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.Description, error) {
	return s.impl.Describe(ctx)
}

func (s *backendServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	cfg := &Config{Settings: req.Settings, MountPath: req.MountPath}
	if req.HostfsBrokerId != 0 {
		conn, err := s.broker.Dial(req.HostfsBrokerId)
		if err != nil {
			return nil, fmt.Errorf("dial HostFS on broker %d: %w", req.HostfsBrokerId, err)
		}
		s.mu.Lock()
		s.conn, s.hostfs = conn, pb.NewWorkspaceClient(conn)
		s.mu.Unlock()
	}
	if err := s.impl.Configure(ctx, cfg); err != nil {
		return nil, err
	}
	return &pb.ConfigureResponse{}, nil
}

func (s *backendServer) Exec(stream grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput]) error {
	first, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("exec: the start message: %w", err)
	}
	start := first.GetStart()
	if start == nil {
		return errors.New("exec: the first message must be start")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()

	out := &streamSender{stream: stream}
	stdinR, stdinW := io.Pipe()
	signals := make(chan syscall.Signal, 8)
	s.mu.Lock()
	hostfs := s.hostfs
	s.mu.Unlock()
	x := &Exec{
		Start: start, Stdin: stdinR, Signals: signals,
		Stdout: &chunkWriter{send: func(b []byte) error { return out.send(&pb.ExecOutput{Msg: &pb.ExecOutput_Stdout{Stdout: b}}) }},
		Stderr: &chunkWriter{send: func(b []byte) error { return out.send(&pb.ExecOutput{Msg: &pb.ExecOutput_Stderr{Stderr: b}}) }},
	}
	if hostfs != nil {
		x.FS = &HostFS{c: hostfs, token: start.HostfsToken, cwd: start.Cwd}
	}
	// The receiver feeds stdin and signals until the host ends its side.
	go func() {
		defer stdinW.Close()
		for {
			in, err := stream.Recv()
			if err != nil {
				if err != io.EOF {
					cancel()
				}
				return
			}
			switch m := in.Msg.(type) {
			case *pb.ExecInput_Stdin:
				if _, err := stdinW.Write(m.Stdin); err != nil {
					// The backend stopped reading: drop the rest.
					continue
				}
			case *pb.ExecInput_StdinClose:
				stdinW.Close()
			case *pb.ExecInput_Signal:
				sig := syscall.Signal(m.Signal)
				if sig == syscall.SIGKILL {
					cancel()
					continue
				}
				select {
				case signals <- sig:
				default:
				}
			}
		}
	}()
	if err := out.send(&pb.ExecOutput{Msg: &pb.ExecOutput_Started{Started: &pb.Started{Pid: int64(os.Getpid())}}}); err != nil {
		return err
	}
	t0 := time.Now()
	var exit *pb.Exit
	if refusal := s.refuseKind(ctx, start.Kind); refusal != "" {
		// PROTOCOL.md 7: a kind the backend does not list ends at once, 2.
		exit = &pb.Exit{ExitCode: 2, Reason: refusal}
	} else {
		exit, err = s.runExec(ctx, x)
	}
	stdinR.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		exit = &pb.Exit{ExitCode: 126, Reason: err.Error()}
	}
	if exit == nil {
		exit = &pb.Exit{}
	}
	if exit.DurationNs == 0 {
		exit.DurationNs = int64(time.Since(t0))
	}
	x.mu.Lock()
	result := x.result
	x.mu.Unlock()
	if result != nil {
		if err := out.send(&pb.ExecOutput{Msg: &pb.ExecOutput_ResultJson{ResultJson: result}}); err != nil {
			return err
		}
	}
	return out.send(&pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: exit}})
}

// refuseKind says why an exec of kind must be refused ("" if it must
// not): the backend does not list it in accepts. An empty kind is the
// first it lists.
func (s *backendServer) refuseKind(ctx context.Context, kind string) string {
	if kind == "" {
		return ""
	}
	d, err := s.impl.Describe(ctx)
	if err != nil || d == nil || len(d.Accepts) == 0 {
		return "" // the backend decides
	}
	for _, k := range d.Accepts {
		if k == kind {
			return ""
		}
	}
	return fmt.Sprintf("backend %s runs %s, not %q", d.Id, strings.Join(d.Accepts, " or "), kind)
}

// runExec calls the backend, turning a panic into an error for this exec
// only.
func (s *backendServer) runExec(ctx context.Context, x *Exec) (exit *pb.Exit, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend panicked: %v", r)
		}
	}()
	return s.impl.Exec(ctx, x)
}

// streamSender serialises sends on a stream shared by stdout and stderr.
type streamSender struct {
	mu     sync.Mutex
	stream grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput]
}

func (s *streamSender) send(m *pb.ExecOutput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Send(m)
}

// chunkWriter sends what is written in messages of at most MaxChunk bytes.
type chunkWriter struct {
	send func([]byte) error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), MaxChunk)
		if err := w.send(append([]byte(nil), p[:c]...)); err != nil {
			return n, fmt.Errorf("send output: %w", err)
		}
		n += c
		p = p[c:]
	}
	return n, nil
}

// ScriptOf is the shell script that runs argv as one command: each word
// single-quoted, so that every word keeps its boundaries and its bytes
// (`sh -c 'exit 7'` stays three words). The host sends a "script" exec
// of several words as ScriptOf of them.
func ScriptOf(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}
