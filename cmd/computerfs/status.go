package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/computerfs/computerfs/internal/size"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/remote"
	"github.com/computerfs/computerfs/wsrpc"
)

func runStatus(ctx context.Context, e *env, o statusOptions, args []string) error {
	asJSON, execs := o.json, o.execs
	arg := defaultWorkspace()
	if len(args) == 1 {
		arg = args[0]
	}
	ws, err := workspaceArg(arg)
	if err != nil {
		return err
	}
	d, closeD, err := daemonOf(ctx, ws)
	if err != nil {
		return err
	}
	if d == nil {
		if err := requireWorkspace(ws); err != nil {
			return err
		}
		return fmt.Errorf("%s is not served: no daemon answers on its control socket; start one with 'computerfs mount %s MOUNTPOINT --daemon' (or 'computerfs serve %s --daemon' without FUSE)", ws, ws, ws)
	}
	defer closeD()
	st, err := d.Status(ctx, max(execs, 1))
	if err != nil {
		return fmt.Errorf("status of %s: %w", ws, err)
	}
	if execs <= 0 {
		st.Execs = nil
	}
	s := newStatusJSON(st)
	if ss, err := remote.ReadSyncState(ws); err == nil && ss != nil && int64(ss.Pid) == s.Pid {
		s.Sync = ss
	}
	if asJSON {
		return printJSON(e, s)
	}
	printStatus(e.stdout, s)
	return nil
}

// statusJSON is what status --json prints.
type statusJSON struct {
	Pid            int64         `json:"pid"`
	Started        time.Time     `json:"started"`
	UptimeSeconds  float64       `json:"uptime_seconds"`
	Mountpoint     string        `json:"mountpoint"`
	Store          string        `json:"store"`
	Socket         string        `json:"socket"`
	StoreFileBytes int64         `json:"store_file_bytes"`
	StoreDiskBytes int64         `json:"store_disk_bytes"`
	FormatVersion  int32         `json:"format_version"`
	ChunkSize      int32         `json:"chunk_size"`
	Chunks         chunksJSON    `json:"chunks"`
	LimitBytes     uint64        `json:"limit_bytes"`
	UsedBytes      uint64        `json:"used_bytes"`
	Commit         commitJSON    `json:"commit"`
	ReadCache      readCacheJSON `json:"read_cache"`
	Fuse           *fuseJSON     `json:"fuse,omitempty"`
	Backends       []backendJSON `json:"backends"`
	Execs          []execJSON    `json:"execs"`
	// Sync is the continuous sync's state (--push-every), if one runs.
	Sync        *remote.SyncState `json:"sync,omitempty"`
	MetricsAddr string            `json:"metrics_addr,omitempty"`
}

type chunksJSON struct {
	Chunks           uint64  `json:"chunks"`
	LogicalBytes     uint64  `json:"logical_bytes"`
	UniqueBytes      uint64  `json:"unique_bytes"`
	StoredBytes      uint64  `json:"stored_bytes"`
	DedupRatio       float64 `json:"dedup_ratio"`
	CompressionRatio float64 `json:"compression_ratio"`
}

type commitJSON struct {
	IntervalMs        float64 `json:"interval_ms"`
	Fsyncs            uint64  `json:"fsyncs"`
	FsyncMeanMs       float64 `json:"fsync_mean_ms"`
	LastFsyncMs       float64 `json:"last_fsync_ms"`
	StoreWriteSeconds float64 `json:"store_write_seconds"`
	StorePageWrites   int64   `json:"store_page_writes"`
	Commits           uint64  `json:"commits"`
	WriteMeanMs       float64 `json:"write_mean_ms"`
}

type readCacheJSON struct {
	ChunksDecoded uint64 `json:"chunks_decoded"`
}

type fuseJSON struct {
	Requests     uint64       `json:"requests"`
	Errors       uint64       `json:"errors"`
	ReadBytes    uint64       `json:"read_bytes"`
	WrittenBytes uint64       `json:"written_bytes"`
	Ops          []fuseOpJSON `json:"ops"`
}

type fuseOpJSON struct {
	Op     string  `json:"op"`
	Count  uint64  `json:"count"`
	Errors uint64  `json:"errors"`
	MeanUs float64 `json:"mean_us"`
}

type backendJSON struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Pid       int64  `json:"pid,omitempty"`
	Execs     int64  `json:"execs"`
	Restarts  int64  `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
}

// execJSON is one exec log record, as the log has it.
type execJSON = json.RawMessage

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func newStatusJSON(st *pb.StatusResponse) *statusJSON {
	started := time.Unix(0, st.StartedUnixNs)
	c := wsrpc.ChunkStats(st.Chunks)
	s := &statusJSON{
		Pid: st.Pid, Started: started.UTC(), UptimeSeconds: time.Since(started).Seconds(), Mountpoint: st.Mountpoint,
		Store: st.Store, Socket: st.Socket, StoreFileBytes: st.FileBytes, StoreDiskBytes: st.DiskBytes,
		FormatVersion: st.FormatVersion, ChunkSize: st.ChunkSize,
		Chunks:     newChunkStatsJSON(c),
		LimitBytes: st.LimitBytes, UsedBytes: st.UsedBytes,
		ReadCache:   readCacheJSON{ChunksDecoded: st.ChunksDecoded},
		Backends:    []backendJSON{},
		Execs:       []execJSON{},
		MetricsAddr: st.MetricsAddr,
	}
	if cm := st.Commit; cm != nil {
		s.Commit = commitJSON{IntervalMs: ms(cm.IntervalNs), Fsyncs: cm.Fsyncs, LastFsyncMs: ms(cm.LastFsyncNs),
			StoreWriteSeconds: float64(cm.StoreWriteNs) / 1e9, StorePageWrites: cm.StorePageWrites, Commits: cm.Commits}
		if cm.Commits > 0 {
			s.Commit.WriteMeanMs = ms(cm.StoreWriteNs) / float64(cm.Commits)
		}
		if cm.Fsyncs > 0 {
			s.Commit.FsyncMeanMs = ms(cm.FsyncTotalNs) / float64(cm.Fsyncs)
		}
	}
	if st.Mountpoint != "" {
		f := &fuseJSON{ReadBytes: st.FuseReadBytes, WrittenBytes: st.FuseWrittenBytes, Ops: []fuseOpJSON{}}
		for _, o := range st.Fuse {
			f.Requests += o.Count
			f.Errors += o.Errors
			f.Ops = append(f.Ops, fuseOpJSON{Op: o.Op, Count: o.Count, Errors: o.Errors, MeanUs: float64(o.TotalNs) / 1e3 / float64(max(o.Count, 1))})
		}
		sort.SliceStable(f.Ops, func(i, j int) bool { return f.Ops[i].Count > f.Ops[j].Count })
		s.Fuse = f
	}
	for _, b := range st.Backends {
		s.Backends = append(s.Backends, backendJSON{ID: b.Id, State: b.State, Pid: b.Pid, Execs: b.Execs, Restarts: b.Restarts, LastError: b.LastError})
	}
	for _, l := range st.Execs {
		if json.Valid([]byte(l)) {
			s.Execs = append(s.Execs, execJSON(l))
		}
	}
	return s
}

// execRecord is what status prints of an exec log record.
type execRecord struct {
	ID         string   `json:"id"`
	Time       string   `json:"time"`
	Backend    string   `json:"backend"`
	Exit       *int     `json:"exit"`
	ExitCode   int      `json:"exit_code"`
	DurationMs float64  `json:"duration_ms"`
	Ended      string   `json:"ended"`
	Changed    []string `json:"changed"`
}

func printStatus(w io.Writer, s *statusJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	line("daemon", "pid %d, up %s (since %s)", s.Pid, time.Duration(s.UptimeSeconds*float64(time.Second)).Round(time.Second), s.Started.Local().Format("2006-01-02 15:04:05"))
	line("workspace", "%s", s.Store)
	if s.Mountpoint != "" {
		line("mountpoint", "%s", s.Mountpoint)
	} else {
		line("mountpoint", "none (served without a mount: the file API only)")
	}
	line("socket", "%s", s.Socket)
	if ss := s.Sync; ss != nil {
		v := fmt.Sprintf("%s to %s (%s) every %s", ss.State, ss.Remote, ss.URL, ss.Every)
		if ss.LastPush != "" {
			v += fmt.Sprintf("; last push %s, snapshot %s, root %.12s", ss.LastPush, ss.Snapshot, ss.LastRoot)
		}
		if ss.State == "pending" {
			v += fmt.Sprintf("; %d failures, next try %s: %s", ss.Attempts, ss.NextTry, ss.Error)
		} else if ss.Error != "" {
			v += ": " + ss.Error
		}
		line("sync", "%s", v)
	}
	line("store file", "%s on disk (%s file), format %d, chunk size %s", size.Format(uint64(s.StoreDiskBytes)), size.Format(uint64(s.StoreFileBytes)), s.FormatVersion, size.Format(uint64(s.ChunkSize)))
	c := s.Chunks
	line("chunks", "%d: %s logical, %s unique (%.2fx dedup), %s stored (%.2fx compression)", c.Chunks, size.Format(c.LogicalBytes), size.Format(c.UniqueBytes), c.DedupRatio, size.Format(c.StoredBytes), c.CompressionRatio)
	line("limit", "%s (%s used, %.1f%%)", size.Format(s.LimitBytes), size.Format(s.UsedBytes), 100*float64(s.UsedBytes)/float64(max(s.LimitBytes, 1)))
	cm := s.Commit
	commit := fmt.Sprintf("every %s while changes wait (an fsync asks at once)", time.Duration(cm.IntervalMs*1e6))
	if s.Fuse != nil {
		if cm.Fsyncs > 0 {
			commit += fmt.Sprintf("; %d fsyncs, %.2f ms on average, the last %.2f ms", cm.Fsyncs, cm.FsyncMeanMs, cm.LastFsyncMs)
		} else {
			commit += "; no fsync yet"
		}
	}
	commit += fmt.Sprintf("; %d commits since start, written in %.2f ms on average", cm.Commits, cm.WriteMeanMs)
	line("commit", "%s", commit)
	line("read cache", "%d chunks decoded from the store", s.ReadCache.ChunksDecoded)
	if f := s.Fuse; f != nil {
		var top []string
		for i, o := range f.Ops {
			if i == 5 {
				break
			}
			top = append(top, fmt.Sprintf("%s %d", o.Op, o.Count))
		}
		line("fuse", "%d requests (%d failed), %s read, %s written; most: %s", f.Requests, f.Errors, size.Format(f.ReadBytes), size.Format(f.WrittenBytes), strings.Join(top, ", "))
	}
	if s.MetricsAddr != "" {
		line("metrics", "http://%s/metrics", s.MetricsAddr)
	}
	tw.Flush()
	var rows [][]any
	for _, b := range s.Backends {
		pid := "-"
		if b.Pid > 0 {
			pid = fmt.Sprint(b.Pid)
		}
		rows = append(rows, []any{b.ID, b.State, pid, b.Execs, b.Restarts, oneLine(b.LastError, 60)})
	}
	table(w, "backends", "ID\tSTATE\tPID\tEXECS\tRESTARTS\tLAST ERROR", rows)
	rows = nil
	for _, raw := range s.Execs {
		var r execRecord
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		when := r.Time
		if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
			when = t.Local().Format("2006-01-02 15:04:05")
		}
		exit := r.ExitCode // a record of a build before "exit"
		if r.Exit != nil {
			exit = *r.Exit
		}
		rows = append(rows, []any{when, r.Backend, exit, time.Duration(r.DurationMs * 1e6).Round(100 * time.Microsecond), len(r.Changed), r.ID, oneLine(r.Ended, 60)})
	}
	table(w, "last execs", "TIME\tBACKEND\tEXIT\tDURATION\tCHANGED\tID\tENDED", rows)
}

// table prints rows under a title and a header of tab-separated columns,
// indented, or nothing when there are none.
func table(w io.Writer, title, header string, rows [][]any) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", header)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = fmt.Sprint(v)
		}
		fmt.Fprintf(tw, "  %s\n", strings.Join(cells, "\t"))
	}
	tw.Flush()
}

// oneLine shortens s to n runes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
