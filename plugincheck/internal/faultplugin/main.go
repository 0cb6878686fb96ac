// Command faultplugin is a deliberately broken backend for plugincheck's
// tests: a plugin that passes every check, but for one fault, chosen by
// the name it is installed under (the host runs plugins with no
// arguments and a bare environment): computerfs-plugin-fault-FAULT, for
// FAULT one of
//
//	none        no fault: passes every check
//	nohandshake writes a log line on stdout instead of the handshake
//	wrongid     describes itself under another ID
//	ignoreterm  a command ignores SIGTERM (it ends on SIGKILL)
//	flood       a command past the output limit writes on forever,
//	            ignoring the host's SIGKILL
//	crash       the plugin process dies in the middle of seq's output
//	noexit      every exec ends its stream without an Exit
//	anykind     runs an exec of a kind it does not list
//
// It serves the protocol by hand, as a plugin in another language would,
// with the commands of testdata/fault.check.json (argv[0]): hello, seq N,
// seq-stderr N, cat, exit N, sleep, read PATH, write PATH TEXT.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

var id, fault = func() (string, string) {
	id := strings.TrimPrefix(filepath.Base(os.Args[0]), "computerfs-plugin-")
	return id, strings.TrimPrefix(id, "fault-")
}()

func main() {
	if fault == "nohandshake" {
		// What a dependency's init() printing on stdout does.
		fmt.Println("faultplugin: starting up")
		time.Sleep(time.Hour)
		return
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{pluginapi.ProtocolVersion: {pluginapi.PluginName: &raw{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

type raw struct{ plugin.NetRPCUnsupportedPlugin }

func (p *raw) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterBackendServer(s, &server{broker: broker})
	return nil
}

func (p *raw) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (interface{}, error) {
	return nil, errors.New("plugin side only")
}

type server struct {
	pb.UnimplementedBackendServer
	broker *plugin.GRPCBroker
	hostfs pb.WorkspaceClient
}

func (s *server) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	d := &pb.Description{
		Id: id, Name: "fault", Version: "0.0.1", Description: "a plugin with one fault, for plugincheck's tests: " + fault,
		Accepts: []string{"argv"}, Features: []string{"stdin"},
		DefaultLimits: &pb.Limits{TimeoutMs: 30000, OutputBytes: 4 << 20},
	}
	if fault == "wrongid" {
		d.Id = "someone-else"
	}
	return d, nil
}

func (s *server) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	conn, err := s.broker.Dial(req.HostfsBrokerId)
	if err != nil {
		return nil, err
	}
	s.hostfs = pb.NewWorkspaceClient(conn)
	return &pb.ConfigureResponse{}, nil
}

type stream = grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput]

func stdout(b []byte) *pb.ExecOutput { return &pb.ExecOutput{Msg: &pb.ExecOutput_Stdout{Stdout: b}} }
func stderr(b []byte) *pb.ExecOutput { return &pb.ExecOutput{Msg: &pb.ExecOutput_Stderr{Stderr: b}} }

// send sends data in chunks of at most 64 KiB.
func send(st stream, data []byte, mk func([]byte) *pb.ExecOutput) error {
	for len(data) > 0 {
		n := min(len(data), pluginapi.MaxChunk)
		if err := st.Send(mk(data[:n])); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (s *server) Exec(st stream) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return errors.New("the first message must be start")
	}
	// The rest of the input: stdin and signals, read by one goroutine.
	stdin := make(chan []byte, 64)
	signals := make(chan int32, 8)
	go func() {
		defer close(stdin)
		for {
			in, err := st.Recv()
			if err != nil {
				return
			}
			switch m := in.Msg.(type) {
			case *pb.ExecInput_Stdin:
				stdin <- m.Stdin
			case *pb.ExecInput_StdinClose:
				stdin <- nil
			case *pb.ExecInput_Signal:
				select {
				case signals <- m.Signal:
				default:
				}
			}
		}
	}()
	if err := st.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Started{Started: &pb.Started{Pid: int64(os.Getpid())}}}); err != nil {
		return err
	}
	exit := s.run(st, start, stdin, signals)
	if fault == "noexit" {
		return nil
	}
	return st.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: exit}})
}

func signalled(sig int32) *pb.Exit { return &pb.Exit{ExitCode: 128 + sig, Signal: sig} }

func (s *server) run(st stream, start *pb.ExecStart, stdin <-chan []byte, signals <-chan int32) *pb.Exit {
	if start.Kind != "argv" && fault != "anykind" {
		return &pb.Exit{ExitCode: 2, Reason: fmt.Sprintf("the fault plugin runs argv, not %q", start.Kind)}
	}
	argv := start.Argv
	if len(argv) == 0 {
		return &pb.Exit{ExitCode: 2, Reason: "no command"}
	}
	arg := func(i int) string {
		if i < len(argv) {
			return argv[i]
		}
		return ""
	}
	switch argv[0] {
	case "hello":
		st.Send(stdout([]byte("hello\n")))
		return &pb.Exit{}
	case "seq", "seq-stderr":
		n, _ := strconv.Atoi(arg(1))
		mk := stdout
		if argv[0] == "seq-stderr" {
			mk = stderr
		}
		var b []byte
		for i := 1; i <= n; i++ {
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, '\n')
			if fault == "crash" && len(b) > 100<<10 {
				send(st, b, mk)
				time.Sleep(50 * time.Millisecond)
				os.Exit(3)
			}
		}
		if fault == "flood" && int64(len(b)) > start.GetLimits().GetOutputBytes() {
			// Past the limit: write on, whatever the host says.
			for {
				if err := send(st, b, mk); err != nil {
					return &pb.Exit{ExitCode: 1}
				}
			}
		}
		for len(b) > 0 {
			select {
			case sig := <-signals:
				return signalled(sig)
			default:
			}
			k := min(len(b), pluginapi.MaxChunk)
			if err := st.Send(mk(b[:k])); err != nil {
				return &pb.Exit{ExitCode: 1}
			}
			b = b[k:]
		}
		return &pb.Exit{}
	case "cat":
		for {
			select {
			case data, ok := <-stdin:
				if !ok || data == nil {
					return &pb.Exit{}
				}
				st.Send(stdout(data))
			case sig := <-signals:
				return signalled(sig)
			}
		}
	case "exit":
		n, _ := strconv.Atoi(arg(1))
		return &pb.Exit{ExitCode: int32(n)}
	case "sleep":
		for sig := range signals {
			if sig == int32(syscall.SIGTERM) && fault == "ignoreterm" {
				continue
			}
			return signalled(sig)
		}
	case "read":
		h := pluginapi.NewHostFS(s.hostfs, start.HostfsToken, start.Cwd)
		b, err := h.ReadFile(st.Context(), arg(1))
		if err != nil {
			st.Send(stderr([]byte(err.Error() + "\n")))
			return &pb.Exit{ExitCode: 1}
		}
		send(st, b, stdout)
		return &pb.Exit{}
	case "write":
		h := pluginapi.NewHostFS(s.hostfs, start.HostfsToken, start.Cwd)
		if _, err := h.WriteFile(st.Context(), arg(1), []byte(arg(2)+"\n"), pluginapi.WriteOptions{}); err != nil {
			st.Send(stderr([]byte(err.Error() + "\n")))
			return &pb.Exit{ExitCode: 1}
		}
		return &pb.Exit{}
	}
	st.Send(stderr([]byte("unknown command " + argv[0] + "\n")))
	return &pb.Exit{ExitCode: 127}
}
