// Command testplugin is a backend for the runtime's tests: it serves the
// protocol by hand, so that it can misbehave in every way a real plugin
// might — crash, hang, flood, lie — on request. argv[0] of an exec says
// what to do.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{pluginapi.ProtocolVersion: {pluginapi.PluginName: &raw{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

type raw struct {
	plugin.NetRPCUnsupportedPlugin
}

func (p *raw) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterBackendServer(s, &server{broker: broker})
	return nil
}

func (p *raw) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (interface{}, error) {
	return nil, fmt.Errorf("plugin side only")
}

type server struct {
	pb.UnimplementedBackendServer
	broker *plugin.GRPCBroker
	hostfs pb.WorkspaceClient
	// What Configure received, for the "configure" command.
	mountPath string
	settings  map[string]string
}

// ID is taken from the executable's name, so that one binary can be
// installed under several IDs.
func id() string {
	name := os.Args[0]
	if i := strings.LastIndex(name, "computerfs-plugin-"); i >= 0 {
		return name[i+len("computerfs-plugin-"):]
	}
	return "test"
}

func (s *server) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	if id() == "wrongid" {
		return &pb.Description{Id: "someone-else"}, nil
	}
	return &pb.Description{
		Id: id(), Name: "test", Version: "0", Description: "misbehaves on request",
		Accepts:       []string{"argv"},
		DefaultLimits: &pb.Limits{TimeoutMs: 10000, OutputBytes: 1 << 20},
		NeedsMount:    id() == "needsmount" || strings.HasPrefix(id(), "mnt-"),
	}, nil
}

func (s *server) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if req.HostfsBrokerId != 0 {
		conn, err := s.broker.Dial(req.HostfsBrokerId)
		if err != nil {
			return nil, err
		}
		s.hostfs = pb.NewWorkspaceClient(conn)
	}
	s.mountPath, s.settings = req.MountPath, req.Settings
	return &pb.ConfigureResponse{}, nil
}

func out(b []byte) *pb.ExecOutput { return &pb.ExecOutput{Msg: &pb.ExecOutput_Stdout{Stdout: b}} }

func exit(code int32) *pb.ExecOutput {
	return &pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: &pb.Exit{ExitCode: code}}}
}

func (s *server) Exec(stream grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	argv := st.Argv
	if len(argv) == 0 {
		argv = []string{"echo"}
	}
	started := &pb.ExecOutput{Msg: &pb.ExecOutput_Started{Started: &pb.Started{Pid: int64(os.Getpid())}}}
	if argv[0] != "early-output" {
		stream.Send(started)
	}
	switch argv[0] {
	case "echo":
		stream.Send(out([]byte(strings.Join(argv[1:], " ") + "\n")))
		return stream.Send(exit(0))
	case "exit":
		n, _ := strconv.Atoi(argv[1])
		return stream.Send(exit(int32(n)))
	case "cat": // stdin to stdout
		for {
			in, err := stream.Recv()
			if err != nil {
				return err
			}
			if b := in.GetStdin(); b != nil {
				stream.Send(out(b))
			}
			if in.GetStdinClose() {
				return stream.Send(exit(0))
			}
		}
	case "env":
		var keys []string
		for k, v := range st.Env {
			keys = append(keys, k+"="+v)
		}
		stream.Send(out([]byte(strings.Join(sorted(keys), "\n") + "\n")))
		return stream.Send(exit(0))
	case "configure": // what Configure received: mount=PATH, then the settings
		lines := []string{"mount=" + s.mountPath}
		var kv []string
		for k, v := range s.settings {
			kv = append(kv, k+"="+v)
		}
		lines = append(lines, sorted(kv)...)
		stream.Send(out([]byte(strings.Join(lines, "\n") + "\n")))
		return stream.Send(exit(0))
	case "procenv": // the plugin process's own environment
		stream.Send(out([]byte(strings.Join(sorted(os.Environ()), "\n") + "\n")))
		return stream.Send(exit(0))
	case "stdin-fd": // what the plugin's fd 0 is
		target, _ := os.Readlink("/proc/self/fd/0")
		stream.Send(out([]byte(target + "\n")))
		return stream.Send(exit(0))
	case "crash":
		os.Exit(3)
	case "crash-after-output":
		stream.Send(out([]byte("partial\n")))
		time.Sleep(50 * time.Millisecond)
		os.Exit(3)
	case "hang": // ignores every signal and never exits
		for {
			if _, err := stream.Recv(); err != nil {
				time.Sleep(time.Hour)
			}
		}
	case "sleep": // honours SIGKILL by ending the exec
		d, _ := time.ParseDuration(argv[1])
		t := time.After(d)
		msgs := make(chan *pb.ExecInput)
		go func() {
			for {
				in, err := stream.Recv()
				if err != nil {
					close(msgs)
					return
				}
				msgs <- in
			}
		}()
		for {
			select {
			case <-t:
				return stream.Send(exit(0))
			case in, ok := <-msgs:
				if !ok {
					return nil
				}
				if sig := in.GetSignal(); sig != 0 {
					return stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: &pb.Exit{Signal: sig}}})
				}
			}
		}
	case "overflow-exit0": // N bytes of output at once, then exit 0 at once
		n, _ := strconv.Atoi(argv[1])
		stream.Send(out([]byte(strings.Repeat("o", n))))
		return stream.Send(exit(0))
	case "kind": // the kind the exec was sent with
		stream.Send(out([]byte(st.Kind + "\n")))
		return stream.Send(exit(0))
	case "ignore-term": // ignores SIGTERM, ends on any other signal
		for {
			in, err := stream.Recv()
			if err != nil {
				return err
			}
			if sig := in.GetSignal(); sig != 0 && sig != int32(syscall.SIGTERM) {
				return stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Exit{Exit: &pb.Exit{Signal: sig}}})
			}
		}
	case "flood": // writes without end, in legal chunks
		chunk := make([]byte, pluginapi.MaxChunk)
		for i := range chunk {
			chunk[i] = 'x'
		}
		for {
			if err := stream.Send(out(chunk)); err != nil {
				return err
			}
		}
	case "bigchunk":
		stream.Send(out(make([]byte, pluginapi.MaxChunk+1)))
		return stream.Send(exit(0))
	case "early-output":
		stream.Send(out([]byte("before started\n")))
		return stream.Send(exit(0))
	case "noexit":
		stream.Send(out([]byte("bye\n")))
		return nil
	case "badjson":
		stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_ResultJson{ResultJson: []byte("{not json")}})
		return stream.Send(exit(0))
	case "result":
		stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_ResultJson{ResultJson: []byte(argv[1])}})
		return stream.Send(exit(0))
	case "after-exit":
		stream.Send(exit(0))
		return stream.Send(out([]byte("late\n")))
	case "read": // through HostFS with the exec's token
		return s.hostRead(stream, st, argv[1], st.HostfsToken)
	case "read-badtoken":
		return s.hostRead(stream, st, argv[1], "forged")
	case "write":
		ctx := withToken(stream.Context(), st.HostfsToken)
		w, err := s.hostfs.Write(ctx)
		if err == nil {
			w.Send(&pb.WriteRequest{Path: argv[1], Data: []byte(argv[2])})
			var r *pb.WriteResponse
			if r, err = w.CloseAndRecv(); err == nil && r.Error != nil {
				err = fmt.Errorf("%s", r.Error.Message)
			}
		}
		if err != nil {
			stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Stderr{Stderr: []byte(err.Error() + "\n")}})
			return stream.Send(exit(1))
		}
		return stream.Send(exit(0))
	case "signal-group": // a child process in the plugin's group, to check group kills
		return stream.Send(exit(int32(syscall.Getpgrp())))
	}
	stream.Send(out([]byte("unknown test command " + argv[0] + "\n")))
	return stream.Send(exit(2))
}

func withToken(ctx context.Context, tok string) context.Context {
	return metadataContext(ctx, pluginapi.TokenMetadata, tok)
}

func (s *server) hostRead(stream grpc.BidiStreamingServer[pb.ExecInput, pb.ExecOutput], st *pb.ExecStart, p, tok string) error {
	h := pluginapi.NewHostFS(s.hostfs, tok, st.Cwd)
	b, err := h.ReadFile(stream.Context(), p)
	if err != nil {
		stream.Send(&pb.ExecOutput{Msg: &pb.ExecOutput_Stderr{Stderr: []byte(err.Error() + "\n")}})
		return stream.Send(exit(1))
	}
	stream.Send(out(b))
	return stream.Send(exit(0))
}

func sorted(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func metadataContext(ctx context.Context, k, v string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, k, v)
}
