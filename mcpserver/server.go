package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server.
type Options struct {
	// API is the workspace the tools work on.
	API workspace.API
	// Files, when set, replaces API: each call works on the view it
	// returns then (a daemon's file API view, swapped when its policy
	// changes).
	Files func() workspace.API
	// Exec runs the exec tool's commands; nil leaves exec out.
	Exec Executor
	// Snapshots serve the snapshot and diff tools; nil leaves them out.
	Snapshots Snapshots
	// Forks serve the fork tool (and exec's fork); nil leaves them out.
	Forks Forks
	// MountPoint is where the workspace is mounted on this host, if
	// anywhere: a path under it is taken as the workspace path it shows
	// (agents that also run a shell on the mount pass such paths).
	MountPoint string
	// Version is the server's version in the MCP handshake.
	Version string
	Logger  *slog.Logger
	// ProgressEvery is how often a running exec reports progress to a
	// client that asked for it (default 1s).
	ProgressEvery time.Duration
	// DescribeTimeout bounds the start of the backends at New, which
	// describe themselves for the exec tool's schema (default 20s).
	DescribeTimeout time.Duration
}

// Server is the MCP server of one workspace. It serves any number of
// sessions (one over stdio, many over HTTP), each with its own record of
// what it has read.
type Server struct {
	opts     Options
	log      *slog.Logger
	mcp      *mcp.Server
	backends []*pb.BackendInfo
	// describeErr is why the backends are not known, if they are not.
	describeErr error

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session

	// grepScanLimit, when set (by tests), replaces grepScanFiles and
	// grepScanLines.
	grepScanLimit int
}

const instructions = `Tools on a computerfs workspace: a durable filesystem that every backend (and the FUSE mount) shares.
Paths are workspace paths: /src/main.go is the file main.go in the workspace's src directory.
read a file before you write over it or edit it; write and edit refuse a file this session has not read, or one that changed since it read it.
Prefer read, glob, grep and ls to exec for looking at files: they are served from the store without running a shell.`

// New makes the server and its tools. With an executor, it starts the
// backends (bounded by DescribeTimeout) so that the exec tool's schema
// carries each one's own description.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.API == nil && opts.Files == nil {
		return nil, fmt.Errorf("mcpserver: no workspace API")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = time.Second
	}
	if opts.DescribeTimeout <= 0 {
		opts.DescribeTimeout = 20 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	opts.MountPoint = strings.TrimSuffix(opts.MountPoint, "/")
	s := &Server{opts: opts, log: opts.Logger, sessions: map[*mcp.ServerSession]*session{}}
	sopts := &mcp.ServerOptions{Instructions: instructions, Capabilities: &mcp.ServerCapabilities{}}
	if opts.Logger.Enabled(ctx, slog.LevelDebug) {
		sopts.Logger = opts.Logger // the SDK's session events, at info
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "computerfs", Title: "computerfs workspace", Version: opts.Version}, sopts)
	s.addFileTools()
	if opts.Snapshots != nil {
		s.addSnapshotTools()
	}
	if opts.Forks != nil {
		s.addForkTool()
	}
	if opts.Exec != nil {
		dctx, cancel := context.WithTimeout(ctx, opts.DescribeTimeout)
		list, err := opts.Exec.Backends(dctx)
		cancel()
		if err != nil {
			// exec may still run (the policy chooses): serve it, with a
			// schema that says what is not known.
			s.log.Warn("mcp: the backends did not describe themselves; exec's schema lists none", "err", err)
			s.describeErr = err
		}
		s.backends = list
		if err := s.addExecTool(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// api is the workspace view a call works on.
func (s *Server) api() workspace.API {
	if s.opts.Files != nil {
		return s.opts.Files()
	}
	return s.opts.API
}

// MCP is the server to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session on t (stdio: &mcp.StdioTransport{}) until the
// client goes or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// session is what one client session has done: the files it has read,
// by workspace path, with the content hash it saw.
type session struct {
	mu   sync.Mutex
	read map[string]readRecord
	// changing serialises the session's own writes and edits, from the
	// look-up of what it read to the record of what it wrote: hosts call
	// tools in parallel, and two edits of one file must not fail each
	// other's compare-and-swap.
	changing sync.Mutex
}

// readRecord is a file as a session last read (or wrote) it.
type readRecord struct {
	hash  string // "" for a file too large to hash: then ino, size and mtime
	ino   uint64
	size  int64
	mtime time.Time
}

// session returns the state of ss, made on its first call. Its entry goes
// when the session closes (a goroutine waits for that; the session's end
// ends it).
func (s *Server) session(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.sessions[ss]
	if !ok {
		st = &session{read: map[string]readRecord{}}
		s.sessions[ss] = st
		if ss != nil {
			go func() {
				ss.Wait()
				s.mu.Lock()
				delete(s.sessions, ss)
				s.mu.Unlock()
			}()
		}
	}
	return st
}

func (st *session) lookup(p string) (readRecord, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.read[p]
	return r, ok
}

func (st *session) remember(p string, r readRecord) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.read[p] = r
}

// wsPath turns a tool's path argument into a workspace path: empty is
// the root, a path under the mount point is the workspace path it shows,
// and a relative path starts at the root.
func (s *Server) wsPath(arg, name string) (string, error) {
	p := strings.TrimSpace(arg)
	if p == "" {
		return "/", nil
	}
	p = s.unmount(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	c, err := workspace.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w (paths are workspace paths such as /src/main.go)", name, arg, err)
	}
	return path.Clean("/" + c), nil
}

// unmount turns a host path under the mount point into the workspace
// path it shows; any other string is returned as it is.
func (s *Server) unmount(p string) string {
	if mp := s.opts.MountPoint; mp != "" && (p == mp || strings.HasPrefix(p, mp+"/")) {
		return "/" + strings.TrimPrefix(strings.TrimPrefix(p, mp), "/")
	}
	return p
}

func boolPtr(b bool) *bool { return &b }

// addTool adds a tool whose input schema is In's, with every optional
// property also accepting null: clients that fill each argument (the
// OpenAI Agents SDK's strict mode sends null for those it leaves out)
// work as those that omit them. Its output schema is Out's.
//
// It does what the SDK's generic mcp.AddTool does for a typed handler,
// for a fraction of the cost (profiled on ls: that wrapper was a third of
// a call's CPU and most of its memory, each of its JSON decodes making a
// 32 KiB buffer): the arguments are validated against the input schema,
// resolved once here, and decoded with encoding/json; the handler's error
// becomes a tool error; the output is encoded once, as the structured
// content. The output is not validated against its schema on every call:
// Out's schema is Out's by construction, and the tests validate every
// answer (validateOutput).
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if t.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("mcpserver: the input schema of %s: %v", t.Name, err)) // a programming error
		}
		t.InputSchema = schema
	}
	in, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok {
		panic(fmt.Sprintf("mcpserver: the input schema of %s is a %T, not a *jsonschema.Schema", t.Name, t.InputSchema))
	}
	nullableOptional(in)
	inResolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the input schema of %s: %v", t.Name, err))
	}
	if t.OutputSchema == nil {
		schema, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("mcpserver: the output schema of %s: %v", t.Name, err))
		}
		t.OutputSchema = schema
	}
	outResolved, err := t.OutputSchema.(*jsonschema.Schema).Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the output schema of %s: %v", t.Name, err))
	}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, err := decodeArgs[In](req.Params.Arguments, inResolved)
		if err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire // a protocol error, passed on as the SDK's wrapper does
			}
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: %s: encode the output: %w", t.Name, err)
		}
		if validateOutput {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, fmt.Errorf("mcpserver: %s: decode the output: %w", t.Name, err)
			}
			if err := outResolved.Validate(v); err != nil {
				return nil, fmt.Errorf("mcpserver: %s: the output does not fit its schema: %w", t.Name, err)
			}
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	})
}

// validateOutput makes every tool validate its output against its output
// schema: the tests set it.
var validateOutput bool

// decodeArgs validates a call's arguments against the tool's input schema
// and decodes them into In.
func decodeArgs[In any](raw json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var in In
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
		if m == nil { // null
			m = map[string]any{}
		}
	}
	if err := schema.Validate(m); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %w", err)
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, fmt.Errorf("decoding \"arguments\": %w", err)
		}
	}
	return in, nil
}

// nullableOptional lets the optional properties of an object schema be
// null.
func nullableOptional(schema *jsonschema.Schema) {
	required := map[string]bool{}
	for _, r := range schema.Required {
		required[r] = true
	}
	for name, p := range schema.Properties {
		if required[name] || p.Type == "" {
			continue // required, or any value already
		}
		p.Types, p.Type = []string{p.Type, "null"}, ""
		if p.Enum != nil {
			p.Enum = append(p.Enum, nil)
		}
	}
}
