package mcpserver

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Snapshots are the workspace's named read-only states: through the
// daemon (DaemonSnapshots), or on a store this process holds (the caller
// provides them: this package does not open stores).
type Snapshots interface {
	Create(ctx context.Context, name string) (Snapshot, error)
	List(ctx context.Context) ([]Snapshot, error)
	// Diff lists what differs from snapshot name to snapshot other ("" for
	// the workspace now).
	Diff(ctx context.Context, name, other string) ([]DiffEntry, error)
	// Restore puts the workspace back as snapshot name has it (only the
	// files under paths, if any), live.
	Restore(ctx context.Context, name string, paths []string) (*fs.RewindReport, error)
	// Undo reverts one exec's changes (the last that changed something
	// if opts.Exec is empty).
	Undo(ctx context.Context, opts fs.UndoOptions) (*fs.ExecRecord, *fs.RewindReport, error)
}

// Snapshot is one named state.
type Snapshot struct {
	Name    string    `json:"name"`
	Epoch   uint64    `json:"commit"` // the commit it is the state after
	Created time.Time `json:"created"`
	// Root is the root identifier in hex: two states with the same root
	// hold the same records. Empty for a snapshot from before roots.
	Root string `json:"root,omitempty"`
}

// snapshotOf is a snapshot as the daemon describes it.
func snapshotOf(s *pb.SnapshotInfo) Snapshot {
	out := Snapshot{Name: s.Name, Epoch: s.Epoch, Created: time.Unix(0, s.CreatedUnixNs)}
	if len(s.Root) > 0 {
		out.Root = hex.EncodeToString(s.Root)
	}
	return out
}

// DiffEntry is one path that differs between two states.
type DiffEntry struct {
	Kind    string `json:"kind"` // added, deleted, modified, renamed
	Path    string `json:"path"` // in the later state ("" if deleted)
	OldPath string `json:"old_path,omitempty"`
	Type    string `json:"type"` // file, dir, symlink, ...
	OldSize uint64 `json:"old_size"`
	Size    uint64 `json:"size"`
}

// DaemonSnapshots are the snapshots of the workspace a daemon serves.
func DaemonSnapshots(c *wsrpc.DaemonClient) Snapshots { return daemonSnapshots{c} }

type daemonSnapshots struct{ c *wsrpc.DaemonClient }

func (d daemonSnapshots) Create(ctx context.Context, name string) (Snapshot, error) {
	r, err := d.c.Snapshot(ctx, "create", name, "")
	if err != nil {
		return Snapshot{}, err
	}
	if len(r.Snapshots) != 1 {
		return Snapshot{}, fmt.Errorf("the daemon answered a create with %d snapshots", len(r.Snapshots))
	}
	s := r.Snapshots[0]
	return snapshotOf(s), nil
}

func (d daemonSnapshots) List(ctx context.Context) ([]Snapshot, error) {
	r, err := d.c.Snapshot(ctx, "list", "", "")
	if err != nil {
		return nil, err
	}
	out := []Snapshot{}
	for _, s := range r.Snapshots {
		out = append(out, snapshotOf(s))
	}
	return out, nil
}

func (d daemonSnapshots) Diff(ctx context.Context, name, other string) ([]DiffEntry, error) {
	r, err := d.c.Snapshot(ctx, "diff", name, other)
	if err != nil {
		return nil, err
	}
	out := []DiffEntry{}
	for _, e := range r.Diff {
		out = append(out, DiffEntry{Kind: e.Kind, Path: e.Path, OldPath: e.OldPath, Type: workspace.TypeName(e.Type), OldSize: e.OldSize, Size: e.Size})
	}
	return out, nil
}

func (d daemonSnapshots) Restore(ctx context.Context, name string, paths []string) (*fs.RewindReport, error) {
	return d.c.Restore(ctx, name, paths)
}

func (d daemonSnapshots) Undo(ctx context.Context, opts fs.UndoOptions) (*fs.ExecRecord, *fs.RewindReport, error) {
	return d.c.Undo(ctx, opts)
}

type snapshotIn struct {
	Name string `json:"name,omitempty" jsonschema:"the snapshot's name (1 to 255 bytes, no /); default: one made from the time"`
	List bool   `json:"list,omitempty" jsonschema:"list the snapshots instead of making one"`
}

type snapshotOut struct {
	Created   *Snapshot  `json:"created,omitempty"`
	Snapshots []Snapshot `json:"snapshots,omitempty"`
}

type diffIn struct {
	From string `json:"from" jsonschema:"the snapshot to compare from"`
	To   string `json:"to,omitempty" jsonschema:"the later snapshot to compare with (default: the workspace now)"`
}

type restoreIn struct {
	Name  string   `json:"name" jsonschema:"the snapshot to put the workspace back to"`
	Paths []string `json:"paths,omitempty" jsonschema:"only the files under these workspace paths (default: the whole workspace)"`
}

type undoIn struct {
	ExecID string `json:"exec_id,omitempty" jsonschema:"the exec to undo, as exec returned it in exec_id (default: the last exec that changed something and is not undone)"`
	Force  bool   `json:"force,omitempty" jsonschema:"put back files that later changes touched too (they lose those changes)"`
}

type rewindOut struct {
	ExecID  string   `json:"exec_id,omitempty"`
	Command string   `json:"command,omitempty"`
	Records int      `json:"records"`
	Paths   []string `json:"paths"`
}

type diffOut struct {
	Entries []DiffEntry `json:"entries"`
	Count   int         `json:"count"`
}

// mergeReplaced shows a path deleted and added again as modified: the
// diff is by inode, and a whole-file write or an edit puts a new file in
// the old one's place (atomically), which is a change of that path to
// whoever reads the diff.
func mergeReplaced(entries []DiffEntry) []DiffEntry {
	added := map[string]int{}
	for i, e := range entries {
		if e.Kind == "added" {
			added[e.Path] = i
		}
	}
	drop := map[int]bool{}
	for i, e := range entries {
		if e.Kind != "deleted" {
			continue
		}
		if j, ok := added[e.OldPath]; ok && !drop[j] && entries[j].Type == e.Type {
			entries[j].Kind, entries[j].OldSize = "modified", e.OldSize
			drop[i] = true
		}
	}
	out := make([]DiffEntry, 0, len(entries)-len(drop))
	for i, e := range entries {
		if !drop[i] {
			out = append(out, e)
		}
	}
	return out
}

// maxDiffLines bounds the diff tool's text; the structured result has all.
const maxDiffLines = 500

func (s *Server) addSnapshotTools() {
	addTool(s.mcp, &mcp.Tool{
		Name:  "snapshot",
		Title: "Snapshot the workspace",
		Description: `Names the workspace's state now, instantly whatever its size: a read-only snapshot to compare with later (diff), or to put the workspace back to (computerfs snapshot restore, with the workspace closed).
Take one before a risky change (a refactoring, a build that writes files, a dependency upgrade). list: true lists the snapshots.`,
		Annotations: &mcp.ToolAnnotations{Title: "Snapshot the workspace", DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, s.snapshot)
	addTool(s.mcp, &mcp.Tool{
		Name:  "diff",
		Title: "What changed since a snapshot",
		Description: `Lists the files added, deleted, modified (content or attributes) and renamed between a snapshot and the workspace now, or between two snapshots.
Use it to review what a command or a session changed; read the files for their content.`,
		Annotations: &mcp.ToolAnnotations{Title: "What changed since a snapshot", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.diff)
	addTool(s.mcp, &mcp.Tool{
		Name:  "restore",
		Title: "Put the workspace back as a snapshot has it",
		Description: `Puts the workspace back as a snapshot saw it, in one atomic step, while it is in use: every file changed since gets its content and attributes back, files made since are removed, files removed since come back. paths limits it to the files under those paths, and leaves everything else as it is now.
Everything changed since the snapshot (under paths) is lost: diff first to see what that is.`,
		Annotations: &mcp.ToolAnnotations{Title: "Restore a snapshot", DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.restore)
	addTool(s.mcp, &mcp.Tool{
		Name:  "undo",
		Title: "Undo an exec",
		Description: `Reverts exactly the files one exec changed (whichever backend ran it: shell, js, container), in one atomic step: files it wrote get their earlier content back, files it made are removed, files it removed come back. Without exec_id, the last exec that changed something.
If a later change (another exec, a write or edit) touched the same files, it refuses and names them; force: true puts them back anyway, losing those later changes. Undo the last execs first to go back step by step.`,
		Annotations: &mcp.ToolAnnotations{Title: "Undo an exec", DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
	}, s.undo)
}

func (s *Server) restore(ctx context.Context, req *mcp.CallToolRequest, in restoreIn) (*mcp.CallToolResult, rewindOut, error) {
	if in.Name == "" {
		return nil, rewindOut{}, fmt.Errorf("restore: name is empty: name a snapshot (snapshot with list: true lists them)")
	}
	paths := make([]string, 0, len(in.Paths))
	for _, p := range in.Paths {
		wp, err := s.wsPath(p, "path")
		if err != nil {
			return nil, rewindOut{}, err
		}
		paths = append(paths, wp)
	}
	rep, err := s.opts.Snapshots.Restore(ctx, in.Name, paths)
	if err != nil {
		return nil, rewindOut{}, toolError("restore", in.Name, err)
	}
	out := rewindOut{Records: rep.Records, Paths: nonNil(rep.Paths)}
	text := fmt.Sprintf("restored the workspace to snapshot %s", in.Name)
	if len(paths) > 0 {
		text += " under " + strings.Join(paths, ", ")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text + rewindText(rep)}}}, out, nil
}

func (s *Server) undo(ctx context.Context, req *mcp.CallToolRequest, in undoIn) (*mcp.CallToolResult, rewindOut, error) {
	rec, rep, err := s.opts.Snapshots.Undo(ctx, fs.UndoOptions{Exec: in.ExecID, Force: in.Force})
	if err != nil {
		return nil, rewindOut{}, toolError("undo", in.ExecID, err)
	}
	out := rewindOut{ExecID: rec.ID, Command: rec.Command, Records: rep.Records, Paths: nonNil(rep.Paths)}
	text := fmt.Sprintf("undid exec %s (%s: %s)", rec.ID, rec.Backend, firstLine(rec.Command))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text + rewindText(rep)}}}, out, nil
}

// rewindText lists what a restore or an undo changed.
func rewindText(rep *fs.RewindReport) string {
	if len(rep.Paths) == 0 {
		return fmt.Sprintf(": %d records", rep.Records)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; paths changed:")
	for i, p := range rep.Paths {
		if i == maxDiffLines {
			fmt.Fprintf(&b, "\n[and %d more: the structured result lists them all]", len(rep.Paths)-i)
			break
		}
		b.WriteString("\n" + p)
	}
	return b.String()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func firstLine(s string) string {
	line, _, cut := strings.Cut(s, "\n")
	if cut || len(line) > 80 {
		if len(line) > 80 {
			line = line[:80]
		}
		return line + " …"
	}
	return line
}

func (s *Server) snapshot(ctx context.Context, req *mcp.CallToolRequest, in snapshotIn) (*mcp.CallToolResult, snapshotOut, error) {
	if in.List {
		list, err := s.opts.Snapshots.List(ctx)
		if err != nil {
			return nil, snapshotOut{}, toolError("snapshot", "list", err)
		}
		var b strings.Builder
		for _, sn := range list {
			fmt.Fprintf(&b, "%s  commit %d  %s\n", sn.Name, sn.Epoch, sn.Created.UTC().Format(time.RFC3339))
		}
		text := strings.TrimSuffix(b.String(), "\n")
		if len(list) == 0 {
			text = "no snapshots yet"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, snapshotOut{Snapshots: list}, nil
	}
	name := in.Name
	if name == "" {
		name = "mcp-" + time.Now().UTC().Format("20060102-150405.000")
	}
	sn, err := s.opts.Snapshots.Create(ctx, name)
	if err != nil {
		return nil, snapshotOut{}, toolError("snapshot", name, err)
	}
	text := fmt.Sprintf("snapshot %s: the workspace as of commit %d; diff from=%s shows what changes from here", sn.Name, sn.Epoch, sn.Name)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, snapshotOut{Created: &sn}, nil
}

func (s *Server) diff(ctx context.Context, req *mcp.CallToolRequest, in diffIn) (*mcp.CallToolResult, diffOut, error) {
	if in.From == "" {
		return nil, diffOut{}, fmt.Errorf("diff: from is empty: name a snapshot (snapshot with list: true lists them)")
	}
	entries, err := s.opts.Snapshots.Diff(ctx, in.From, in.To)
	if err != nil {
		return nil, diffOut{}, toolError("diff", in.From, err)
	}
	entries = mergeReplaced(entries)
	to := "now"
	if in.To != "" {
		to = in.To
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d changes from %s to %s", len(entries), in.From, to)
	for i, e := range entries {
		if i == maxDiffLines {
			fmt.Fprintf(&b, "\n[and %d more: the structured result lists them all]", len(entries)-i)
			break
		}
		switch e.Kind {
		case "added":
			fmt.Fprintf(&b, "\nadded    %s (%s, %d bytes)", e.Path, e.Type, e.Size)
		case "deleted":
			p := e.OldPath
			if p == "" {
				p = e.Path
			}
			fmt.Fprintf(&b, "\ndeleted  %s (%s, %d bytes)", p, e.Type, e.OldSize)
		case "renamed":
			fmt.Fprintf(&b, "\nrenamed  %s -> %s", e.OldPath, e.Path)
			if e.Size != e.OldSize {
				fmt.Fprintf(&b, " (%d -> %d bytes)", e.OldSize, e.Size)
			}
		default:
			fmt.Fprintf(&b, "\n%-8s %s (%d -> %d bytes)", e.Kind, e.Path, e.OldSize, e.Size)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, diffOut{Entries: entries, Count: len(entries)}, nil
}
