package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/internal/tailbuf"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an exec's answer keeps of each stream: its start and its end,
// about Claude Code's 30,000 characters in all.
const (
	keepHead = 20000
	keepTail = 10000
	// maxChanges listed in the text (all are in the structured result).
	maxChanges = 50
)

type execIn struct {
	Command     string            `json:"command" jsonschema:"the command: a bash script for shell and container, an ES module's source for js"`
	Backend     string            `json:"backend,omitempty" jsonschema:"the backend to run on; omit to let the policy choose"`
	Cwd         string            `json:"cwd,omitempty" jsonschema:"the working directory, a workspace path (default /)"`
	Timeout     int64             `json:"timeout,omitempty" jsonschema:"time limit in milliseconds (default: the backend's)"`
	Env         map[string]string `json:"env,omitempty" jsonschema:"environment variables for the command"`
	Input       any               `json:"input,omitempty" jsonschema:"structured input (any JSON value): the argument of a js module's default export"`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"text given to the command on its standard input"`
	Description string            `json:"description,omitempty" jsonschema:"what the command does, in 5 to 10 words (recorded in the log)"`
	Fork        string            `json:"fork,omitempty" jsonschema:"run in this fork of the workspace (made by the fork tool) instead of the workspace itself"`
}

type execChange struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	NewPath string `json:"new_path,omitempty"`
}

type execOut struct {
	ExecID   string `json:"exec_id"`
	Backend  string `json:"backend"`
	Reason   string `json:"reason"` // why this backend
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// EndReason says why the command ended, when not by itself.
	EndReason        string       `json:"end_reason,omitempty"`
	Stdout           string       `json:"stdout"`
	Stderr           string       `json:"stderr"`
	StdoutBytes      int64        `json:"stdout_bytes"`
	StderrBytes      int64        `json:"stderr_bytes"`
	OutputCut        bool         `json:"output_cut,omitempty"`
	Result           any          `json:"result,omitempty"` // a js module's return value
	Changes          []execChange `json:"changes"`
	ChangesTruncated bool         `json:"changes_truncated,omitempty"`
	DurationMs       float64      `json:"duration_ms"`
	// Sync, when the daemon syncs to a remote (--push-every): whether
	// what the exec left is pushed yet ("pushed") or "pending".
	Sync *execSync `json:"sync,omitempty"`
}

// execSync is pb.SyncStatus, as the exec result says it.
type execSync struct {
	Remote     string `json:"remote"`
	URL        string `json:"url"`
	State      string `json:"state"` // pushed, pending, conflict
	PushedRoot string `json:"pushed_root,omitempty"`
	Error      string `json:"error,omitempty"`
}

// addExecTool adds exec, its backend an enum of the backends found, each
// described by its own words.
func (s *Server) addExecTool() error {
	schema, err := jsonschema.For[execIn](nil)
	if err != nil {
		return fmt.Errorf("exec schema: %w", err)
	}
	outSchema, err := jsonschema.For[execOut](nil)
	if err != nil {
		return fmt.Errorf("exec output schema: %w", err)
	}
	// Any JSON value: {} with a description, not the schema true, which
	// some clients' validators (the TypeScript SDK's) refuse.
	schema.Properties["input"] = &jsonschema.Schema{Description: schema.Properties["input"].Description}
	outSchema.Properties["result"] = &jsonschema.Schema{Description: "a js module's return value (any JSON value)"}
	var ids []any
	var desc strings.Builder
	desc.WriteString("the backend to run on; omit it to let the policy choose the cheapest one that runs the command correctly (the shell when every command of the script is one it runs in process, js for an ES module, else the container). The backends:")
	var list strings.Builder
	for _, b := range s.backends {
		ids = append(ids, b.Id)
		d := b.GetDescription().GetDescription()
		if d == "" {
			d = "(did not describe itself: " + strings.TrimSpace(b.State+" "+b.LastError) + ")"
		}
		fmt.Fprintf(&desc, "\n- %s: %s", b.Id, d)
		fmt.Fprintf(&list, "\n- %s: %s", b.Id, d)
	}
	switch {
	case s.describeErr != nil:
		desc.WriteString(" not known (" + s.describeErr.Error() + ")")
		list.WriteString("\n(the backends could not be listed: " + s.describeErr.Error() + ")")
	case len(ids) == 0:
		desc.WriteString(" none found")
		list.WriteString("\n(no backends found: install computerfs with its plugins)")
	default:
		schema.Properties["backend"].Enum = ids
	}
	schema.Properties["backend"].Description = desc.String()
	addTool(s.mcp, &mcp.Tool{
		Name:  "exec",
		Title: "Run a command",
		Description: `Runs a command on the workspace on one of its execution backends, which all see the same files.
- Without backend, a policy picks: the in-process shell (bash syntax, the common coreutils, fast) when it can run every command, js for an ES module (source whose first line of code is an import or an export default), else a container with the host's real binaries (git, make, compilers, package managers).
- cwd is a workspace path; timeout is in milliseconds.
- The answer holds stdout and stderr (each cut past about 30,000 characters, keeping its start and end, with a notice), the exit status, the backend chosen and why, and the files the command changed.
- Use read, glob, grep, ls, write and edit for files: they are faster and need no shell.
Backends:` + list.String(),
		InputSchema:  schema,
		OutputSchema: outSchema,
		Annotations:  &mcp.ToolAnnotations{Title: "Run a command", DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(true)},
	}, s.exec)
	return nil
}

func (s *Server) exec(ctx context.Context, req *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, execOut, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, execOut{}, fmt.Errorf("exec: command is empty")
	}
	cwd, err := s.wsPath(in.Cwd, "cwd")
	if err != nil {
		return nil, execOut{}, err
	}
	if in.Timeout < 0 {
		return nil, execOut{}, fmt.Errorf("exec: timeout must not be negative")
	}
	start := &pb.ExecStart{Backend: in.Backend, Argv: []string{in.Command}, Cwd: cwd, Env: in.Env, Limits: &pb.Limits{TimeoutMs: in.Timeout}, Fork: in.Fork}
	if in.Input != nil {
		b, err := json.Marshal(in.Input)
		if err != nil {
			return nil, execOut{}, fmt.Errorf("exec: input: %w", err)
		}
		start.InputJson = b
	}
	var stdin io.Reader // nil: the command's stdin is empty
	if in.Stdin != "" {
		stdin = strings.NewReader(in.Stdin)
	}
	stdout, stderr := newKeeper(), newKeeper()
	s.log.Debug("exec", "backend", in.Backend, "cwd", cwd, "description", in.Description)

	// Progress, for a client that asked for it, until the exec ends.
	done := make(chan struct{})
	var progress sync.WaitGroup
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		progress.Add(1)
		go func() {
			defer progress.Done()
			t0 := time.Now()
			tick := time.NewTicker(s.opts.ProgressEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
					el := time.Since(t0)
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: el.Seconds(),
						Message: fmt.Sprintf("running for %s; %d bytes of output so far", el.Round(time.Second), stdout.total()+stderr.total())})
				}
			}
		}()
	}
	res, err := s.opts.Exec.Exec(ctx, start, stdin, stdout, stderr)
	close(done)
	progress.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return nil, execOut{}, fmt.Errorf("exec: cancelled: %w", context.Cause(ctx))
		}
		short := strings.ReplaceAll(in.Command, "\n", " ")
		if len(short) > 60 {
			short = short[:57] + "..."
		}
		return nil, execOut{}, toolError("exec", strconv.Quote(short), fmt.Errorf("could not run the command: %w", err))
	}
	out := execOut{ExecID: res.ID, Backend: res.Backend, Reason: res.Reason, ExitCode: backends.ExitStatus(res.Exit),
		Signal: int(res.Exit.Signal), TimedOut: res.Exit.TimedOut, EndReason: res.Exit.Reason,
		DurationMs: float64(res.Exit.DurationNs) / 1e6, Changes: []execChange{}, ChangesTruncated: res.ChangesTruncated}
	var cutOut, cutErr bool
	out.Stdout, out.StdoutBytes, cutOut = stdout.text("stdout")
	out.Stderr, out.StderrBytes, cutErr = stderr.text("stderr")
	out.OutputCut = cutOut || cutErr || res.Exit.Truncated
	if res.Result != nil {
		out.Result = json.RawMessage(res.Result)
	}
	if sy := res.Sync; sy != nil {
		out.Sync = &execSync{Remote: sy.Remote, URL: sy.Url, State: sy.State, PushedRoot: sy.PushedRoot, Error: sy.Error}
	}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, execChange{Op: c.Op, Path: c.Path, NewPath: c.NewPath})
	}
	var b strings.Builder
	b.WriteString(out.Stdout)
	if out.Stdout != "" && !strings.HasSuffix(out.Stdout, "\n") {
		b.WriteString("\n")
	}
	if out.Stderr != "" {
		b.WriteString("[stderr]\n" + out.Stderr)
		if !strings.HasSuffix(out.Stderr, "\n") {
			b.WriteString("\n")
		}
	}
	if res.Result != nil {
		if len(res.Result) > keepHead {
			fmt.Fprintf(&b, "[result] %s\n[result cut: %d bytes in all; the structured result has it whole]\n", res.Result[:keepHead], len(res.Result))
		} else {
			fmt.Fprintf(&b, "[result] %s\n", res.Result)
		}
	}
	fmt.Fprintf(&b, "[exit status %d", out.ExitCode)
	if out.EndReason != "" && out.ExitCode != 0 {
		fmt.Fprintf(&b, ": %s", out.EndReason)
	}
	fmt.Fprintf(&b, "; backend %s (%s); %s", out.Backend, out.Reason, time.Duration(res.Exit.DurationNs).Round(time.Millisecond))
	b.WriteString(changesText(out.Changes, out.ChangesTruncated))
	if sy := out.Sync; sy != nil {
		fmt.Fprintf(&b, "; sync to %s: %s", sy.Remote, sy.State)
	}
	b.WriteString("]")
	if out.ExitCode == 127 && out.Backend == "shell" && strings.Contains(out.Stderr, "command not found") {
		b.WriteString("\n[the shell runs its own commands only (the exec tool's description lists them); real binaries (git, compilers, package managers) run on the container backend")
		if !s.hasBackend("container") {
			b.WriteString(", which is not installed here")
		} else {
			b.WriteString(": pass backend container")
		}
		b.WriteString("]")
	}
	// A failing command is the command's answer, not a tool error: the
	// agent reads its output and status.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

// changesText lists the files an exec changed, each path once with its
// operations in order.
func changesText(cs []execChange, truncated bool) string {
	if len(cs) == 0 {
		return "; no files changed"
	}
	var order []string
	ops := map[string][]string{}
	for _, c := range cs {
		p := c.Path
		if c.NewPath != "" {
			p += " -> " + c.NewPath
		}
		if _, ok := ops[p]; !ok {
			order = append(order, p)
		}
		if o := ops[p]; len(o) == 0 || o[len(o)-1] != c.Op {
			ops[p] = append(o, c.Op)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; %d files changed:", len(order))
	for i, p := range order {
		if i == maxChanges {
			fmt.Fprintf(&b, " and %d more", len(order)-i)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s)", p, strings.Join(ops[p], ", "))
	}
	if truncated {
		b.WriteString(" (list cut)")
	}
	return b.String()
}

func (s *Server) hasBackend(id string) bool {
	for _, b := range s.backends {
		if b.Id == id {
			return true
		}
	}
	return false
}

// keeper keeps the start and the end of a stream, and counts it all.
type keeper struct {
	mu   sync.Mutex
	head []byte
	tail *tailbuf.Buffer
	n    int64
}

func newKeeper() *keeper { return &keeper{tail: tailbuf.New(keepTail)} }

func (k *keeper) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := len(p)
	k.n += int64(n)
	room := keepHead - len(k.head)
	if room > 0 {
		take := min(room, len(p))
		k.head = append(k.head, p[:take]...)
		p = p[take:]
	}
	if len(p) > 0 {
		k.tail.Write(p)
	}
	return n, nil
}

func (k *keeper) total() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

// text is what was kept, with a notice where the middle was cut.
func (k *keeper) text(name string) (string, int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	kept := int64(len(k.head)) + int64(len(k.tail.Bytes()))
	if kept == k.n {
		return string(k.head) + k.tail.String(), k.n, false
	}
	return fmt.Sprintf("%s\n[%s cut: %d bytes in all; %d from the middle left out]\n%s",
		k.head, name, k.n, k.n-kept, k.tail.Bytes()), k.n, true
}
