package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/computerfs/computerfs/fs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Forks are the workspace's copy-on-write branches (fs/fork.go): through
// the daemon (*wsrpc.DaemonClient is one), or on a store this process
// holds (the caller provides them).
type Forks interface {
	CreateFork(ctx context.Context, id string) (fs.ForkInfo, error)
	Forks(ctx context.Context) ([]fs.ForkInfo, error)
	ForkChanges(ctx context.Context, id string) ([]fs.ForkChange, error)
	MergeFork(ctx context.Context, id string) (*fs.RewindReport, error)
	DiscardFork(ctx context.Context, id string) (*fs.ForkDropReport, error)
}

type forkIn struct {
	Op string `json:"op" jsonschema:"create (a new fork of the workspace as it is now; exec with fork: ID runs in it), list, changes (what fork id changed), merge (apply fork id's changes to the workspace in one step; refused, naming the files, if the workspace changed them since the fork was made) or discard (drop fork id)"`
	ID string `json:"id,omitempty" jsonschema:"the fork, as create returned it (create: an ID to give it, optional)"`
}

type forkOut struct {
	ID      string          `json:"id,omitempty"`
	Forks   []fs.ForkInfo   `json:"forks,omitempty"`
	Changes []fs.ForkChange `json:"changes,omitempty"`
	Records int             `json:"records,omitempty"`
	Paths   []string        `json:"paths,omitempty"`
}

func (s *Server) addForkTool() {
	addTool(s.mcp, &mcp.Tool{
		Name:  "fork",
		Title: "Try changes in a fork of the workspace",
		Description: `A fork is a copy-on-write branch of the workspace, made instantly whatever its size: exec with fork: ID runs a command in it (any backend), and read it back with changes. Then merge applies what it changed to the workspace in one atomic step, or discard drops it. Make two forks to try two approaches side by side and merge the one that works.
A merge is refused, naming the files, if the workspace changed the same files since the fork was made.`,
		Annotations: &mcp.ToolAnnotations{Title: "Fork the workspace", DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
	}, s.fork)
}

func (s *Server) fork(ctx context.Context, req *mcp.CallToolRequest, in forkIn) (*mcp.CallToolResult, forkOut, error) {
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	f := s.opts.Forks
	if in.Op != "create" && in.Op != "list" && in.ID == "" {
		return nil, forkOut{}, fmt.Errorf("fork %s: id is empty: name the fork (op list lists them)", in.Op)
	}
	switch in.Op {
	case "create":
		fi, err := f.CreateFork(ctx, in.ID)
		if err != nil {
			return nil, forkOut{}, toolError("fork", in.ID, err)
		}
		return text(fmt.Sprintf("fork %s: the workspace as of commit %d; exec with fork: %q runs in it", fi.ID, fi.Epoch, fi.ID)), forkOut{ID: fi.ID}, nil
	case "list":
		forks, err := f.Forks(ctx)
		if err != nil {
			return nil, forkOut{}, toolError("fork", "", err)
		}
		var b strings.Builder
		for _, fi := range forks {
			fmt.Fprintf(&b, "%s  from commit %d, %d records\n", fi.ID, fi.Epoch, fi.Records)
		}
		if len(forks) == 0 {
			b.WriteString("no forks")
		}
		if forks == nil {
			forks = []fs.ForkInfo{}
		}
		return text(strings.TrimSuffix(b.String(), "\n")), forkOut{Forks: forks}, nil
	case "changes":
		ch, err := f.ForkChanges(ctx, in.ID)
		if err != nil {
			return nil, forkOut{}, toolError("fork", in.ID, err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d changes in fork %s", len(ch), in.ID)
		for i, c := range ch {
			if i == maxDiffLines {
				fmt.Fprintf(&b, "\n[and %d more: the structured result lists them all]", len(ch)-i)
				break
			}
			fmt.Fprintf(&b, "\n%-8s %s", c.Op, c.Path)
		}
		if ch == nil {
			ch = []fs.ForkChange{}
		}
		return text(b.String()), forkOut{ID: in.ID, Changes: ch}, nil
	case "merge":
		rep, err := f.MergeFork(ctx, in.ID)
		if err != nil {
			return nil, forkOut{}, toolError("fork", in.ID, err)
		}
		return text(fmt.Sprintf("merged fork %s into the workspace", in.ID) + rewindText(rep)), forkOut{ID: in.ID, Records: rep.Records, Paths: nonNil(rep.Paths)}, nil
	case "discard":
		rep, err := f.DiscardFork(ctx, in.ID)
		if err != nil {
			return nil, forkOut{}, toolError("fork", in.ID, err)
		}
		return text(fmt.Sprintf("discarded fork %s (%d records)", in.ID, rep.Records)), forkOut{ID: in.ID, Records: rep.Records}, nil
	}
	return nil, forkOut{}, fmt.Errorf("fork: op %q: want create, list, changes, merge or discard", in.Op)
}
