// Package plugincheck checks an execution backend plugin against the
// protocol (pluginapi/PROTOCOL.md): it runs the plugin executable the way
// the daemon does, through backends.Runtime (the same launch, handshake,
// Configure, exec and shutdown code), on a temporary workspace of its own
// (FUSE-mounted when it can, for backends that need the mount), and
// reports each check as passed or failed with the reason. It is what
// `computerfs plugin check` runs.
//
// It owns the temporary workspace, mount and runtime of one check, and
// the plugin processes that runtime starts. It must not touch the user's
// workspaces, daemons or plugin directories, and it checks only what a
// plugin does: the host's own enforcement is backends' to test.
package plugincheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/backends"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
)

// Statuses of a check.
const (
	Pass = "pass"
	Fail = "fail"
	Warn = "warn" // a SHOULD not met; does not fail the plugin
	Skip = "skip" // not applicable, or an earlier check failed
)

// Check is one check's outcome.
type Check struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// Report is a plugin's checks, in order.
type Report struct {
	Path   string  `json:"path"`
	ID     string  `json:"id,omitempty"`
	OK     bool    `json:"ok"` // no check failed
	Checks []Check `json:"checks"`
	// Log is the end of the host's log of the plugin (its stderr
	// included) when a check failed.
	Log string `json:"log,omitempty"`
}

// Failed lists the checks that failed.
func (r *Report) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c.Name)
		}
	}
	return out
}

// Check names, in the order they run.
const (
	CheckName        = "name"
	CheckHandshake   = "handshake"
	CheckHealth      = "health"
	CheckDescribe    = "describe"
	CheckConfigure   = "configure"
	CheckExecPrefix  = "exec:" // + kind
	CheckOutput      = "output"
	CheckStdin       = "stdin"
	CheckExit        = "exit"
	CheckSignal      = "signal"
	CheckTimeout     = "timeout"
	CheckOutputLimit = "output_limit"
	CheckHostFS      = "hostfs"
	CheckConcurrent  = "concurrent"
	CheckUnknownKind = "unknown_kind"
	CheckShutdown    = "shutdown"
)

// Options configure a check.
type Options struct {
	// Path is the plugin executable (or a symlink to it), named
	// computerfs-plugin-ID.
	Path string
	// Probes are the plugin author's commands for the checks; nil: the
	// defaults for the kinds it accepts.
	Probes *Probes
	// Settings are passed to Configure, as a policy's would be.
	Settings map[string]string
	// NoMount skips the FUSE mount of the temporary workspace (a backend
	// that needs the mount then fails to configure).
	NoMount bool
	Logger  *slog.Logger // the check's own progress; nil: none
}

// execTimeout bounds every exec of a check but the timeout's.
const execTimeout = 30 * time.Second

// Run checks the plugin. The error is for a check that could not run at
// all (no temporary workspace); a plugin's failures are in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, err
	}
	c := &checker{opts: opts, rep: &Report{Path: abs}, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	defer func() { c.rep.OK = len(c.rep.Failed()) == 0 }()

	// name: what discovery would make of the file.
	id, ok := backends.ParseName(filepath.Base(abs))
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		c.add(CheckName, Fail, err.Error())
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		c.add(CheckName, Fail, "not an executable file: the daemon would not find it")
	case !ok:
		c.add(CheckName, Fail, fmt.Sprintf("%q is not a plugin's name: want %sID, ID of a-z, 0-9, '-' and '_'", filepath.Base(abs), backends.Prefix))
	default:
		c.add(CheckName, Pass, "ID "+id)
	}
	if c.failed() {
		return c.rep, nil
	}
	c.rep.ID, c.id = id, id

	if err := c.setup(ctx, abs); err != nil {
		return nil, err
	}
	defer c.teardown()
	c.run(ctx)
	if !c.rep.OK && len(c.rep.Failed()) > 0 {
		c.rep.Log = c.logTail(40)
	}
	return c.rep, nil
}

type checker struct {
	opts   Options
	rep    *Report
	log    *slog.Logger
	id     string
	dir    string
	owner  string
	f      *fs.FS
	ws     *workspace.WS
	srv    *fusefs.Server
	rt     *backends.Runtime
	hostLg *lockedBuf
	desc   *pb.Description
	probes *Probes
	closed bool
}

func (c *checker) add(name, status, reason string) {
	c.rep.Checks = append(c.rep.Checks, Check{Name: name, Status: status, Reason: reason})
	c.log.Debug("check", "name", name, "status", status, "reason", reason)
}

func (c *checker) failed() bool {
	return len(c.rep.Checks) > 0 && c.rep.Checks[len(c.rep.Checks)-1].Status == Fail
}

// setup makes the temporary workspace, its mount and the runtime, with
// the plugin installed alone in a plugin directory of its own (a
// symlink: the daemon finds plugins so too, named by the link).
func (c *checker) setup(ctx context.Context, abs string) error {
	dir, err := os.MkdirTemp("", "computerfs-plugin-check-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	c.dir = dir
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o700); err != nil {
		return err
	}
	if err := os.Symlink(abs, filepath.Join(plugins, backends.Prefix+c.id)); err != nil {
		return err
	}
	c.f, err = fs.Open(filepath.Join(dir, "ws.cfs"), fs.Options{Logger: c.log})
	if err != nil {
		return fmt.Errorf("temporary workspace: %w", err)
	}
	c.ws = workspace.New(c.f, workspace.Options{})
	var mnt string
	if !c.opts.NoMount {
		m := filepath.Join(dir, "mnt")
		os.Mkdir(m, 0o755)
		srv, err := fusefs.Mount(c.f, m, fusefs.Options{AllowOther: os.Geteuid() == 0, Logger: c.log, FsName: "plugin-check"})
		if err != nil {
			c.log.Warn("no mount of the temporary workspace", "err", err)
		} else {
			c.srv, mnt = srv, m
		}
	}
	c.owner = "plugin-check:" + dir
	c.hostLg = &lockedBuf{}
	pol := backends.Policy{}
	if len(c.opts.Settings) > 0 {
		pol.Backends = map[string]backends.BackendPolicy{c.id: {Settings: c.opts.Settings}}
	}
	c.rt, err = backends.New(backends.Options{
		Dirs: []string{plugins}, WS: c.ws, MountPath: mnt, Owner: c.owner, Policy: pol,
		Logger: slog.New(slog.NewTextHandler(c.hostLg, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	return err
}

func (c *checker) teardown() {
	if c.rt != nil && !c.closed {
		c.rt.Close()
	}
	if c.srv != nil {
		if err := c.srv.Unmount(); err != nil {
			c.srv.Abort()
		}
		c.srv.Wait()
	}
	if c.f != nil {
		c.f.Close()
	}
	// Leftovers of a plugin that escaped its group, marked with our owner.
	killOwned(c.owner)
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

func (c *checker) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(c.hostLg.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// run runs the checks in order; those that need a started plugin are
// skipped when it does not start.
func (c *checker) run(ctx context.Context) {
	if !c.start(ctx) {
		for _, n := range []string{CheckOutput, CheckStdin, CheckExit, CheckSignal, CheckTimeout, CheckOutputLimit, CheckHostFS, CheckConcurrent, CheckUnknownKind, CheckShutdown} {
			c.add(n, Skip, "the plugin did not start")
		}
		return
	}
	c.probes = merge(defaults(c.desc.Accepts), c.opts.Probes)
	for _, k := range c.desc.Accepts {
		c.timed(CheckExecPrefix+k, func() (string, string) { return c.checkKind(ctx, k) })
	}
	c.timed(CheckOutput, func() (string, string) { return c.checkOutput(ctx) })
	c.timed(CheckStdin, func() (string, string) { return c.checkStdin(ctx) })
	c.timed(CheckExit, func() (string, string) { return c.checkExit(ctx) })
	c.timed(CheckSignal, func() (string, string) { return c.checkSignal(ctx) })
	c.timed(CheckTimeout, func() (string, string) { return c.checkTimeout(ctx) })
	c.timed(CheckOutputLimit, func() (string, string) { return c.checkOutputLimit(ctx) })
	c.timed(CheckHostFS, func() (string, string) { return c.checkHostFS(ctx) })
	c.timed(CheckConcurrent, func() (string, string) { return c.checkConcurrent(ctx) })
	c.timed(CheckUnknownKind, func() (string, string) { return c.checkUnknownKind(ctx) })
	c.timed(CheckShutdown, func() (string, string) { return c.checkShutdown(ctx) })
}

func (c *checker) timed(name string, f func() (string, string)) {
	t0 := time.Now()
	status, reason := f()
	c.add(name, status, reason)
	c.rep.Checks[len(c.rep.Checks)-1].Duration = time.Since(t0).Round(time.Millisecond).String()
}

// start starts the plugin through the runtime and reports the start's
// steps: handshake, health, describe, configure.
func (c *checker) start(ctx context.Context) bool {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, desc, err := c.rt.Plugin(sctx, c.id)
	if err != nil {
		stage := backends.StageHandshake
		var se *backends.StartError
		if errors.As(err, &se) {
			stage, desc = se.Stage, se.Desc
		}
		steps := []string{backends.StageHandshake, backends.StageHealth, backends.StageDescribe, backends.StageConfigure}
		names := map[string]string{backends.StageHandshake: CheckHandshake, backends.StageHealth: CheckHealth, backends.StageDescribe: CheckDescribe, backends.StageConfigure: CheckConfigure}
		failedAt := slices.Index(steps, stage)
		for i, s := range steps {
			switch {
			case i < failedAt:
				if s == backends.StageDescribe {
					st, why := describeCheck(c.id, desc)
					c.add(CheckDescribe, st, why)
					continue
				}
				c.add(names[s], Pass, "")
			case i == failedAt:
				why := err.Error()
				if s == backends.StageConfigure && c.srv == nil && desc.GetNeedsMount() {
					why += " (the check could not mount its temporary workspace: run it as root, with /dev/fuse)"
				}
				c.add(names[s], Fail, why)
			default:
				c.add(names[s], Skip, "an earlier step failed")
			}
		}
		for _, k := range desc.GetAccepts() {
			c.add(CheckExecPrefix+k, Skip, "the plugin did not start")
		}
		return false
	}
	c.desc = desc
	c.add(CheckHandshake, Pass, fmt.Sprintf("protocol version %d over a unix socket with mutual TLS", 1))
	c.add(CheckHealth, Pass, `grpc.health.v1.Health/Check("plugin"): SERVING`)
	st, why := describeCheck(c.id, desc)
	c.add(CheckDescribe, st, why)
	mnt := "no mount"
	if desc.NeedsMount {
		mnt = "the mount"
	}
	set := "no settings"
	if len(c.opts.Settings) > 0 {
		set = fmt.Sprintf("settings %v", c.opts.Settings)
	}
	c.add(CheckConfigure, Pass, fmt.Sprintf("%s, %s, the HostFS broker", set, mnt))
	return st != Fail
}

// knownKinds are the kinds the host's callers send.
var knownKinds = []string{"script", "argv", "js-module"}

// describeCheck checks a description's fields.
func describeCheck(id string, d *pb.Description) (string, string) {
	if d == nil {
		return Fail, "no description"
	}
	var fails, warns []string
	if d.Id != id {
		fails = append(fails, fmt.Sprintf("id %q, but the file name says %q", d.Id, id))
	}
	if strings.TrimSpace(d.Description) == "" {
		fails = append(fails, "no description for people and agents")
	}
	if len(d.Accepts) == 0 {
		fails = append(fails, "accepts lists no kind")
	}
	seen := map[string]bool{}
	for _, k := range d.Accepts {
		switch {
		case seen[k]:
			fails = append(fails, fmt.Sprintf("accepts lists %q twice", k))
		case !slices.Contains(knownKinds, k):
			warns = append(warns, fmt.Sprintf("accepts %q, which no computerfs caller sends (known: %s)", k, strings.Join(knownKinds, ", ")))
		}
		seen[k] = true
	}
	fails = append(fails, limitProblems(d.DefaultLimits, d.MaxLimits)...)
	if d.Version == "" {
		warns = append(warns, "no version")
	}
	if d.Name == "" {
		warns = append(warns, "no name")
	}
	switch {
	case len(fails) > 0:
		return Fail, strings.Join(append(fails, warns...), "; ")
	case len(warns) > 0:
		return Warn, strings.Join(warns, "; ")
	}
	return Pass, fmt.Sprintf("%s %s accepts %s; %d features", d.Id, d.Version, strings.Join(d.Accepts, ", "), len(d.Features))
}

func limitFields(l *pb.Limits) map[string]int64 {
	if l == nil {
		return nil
	}
	return map[string]int64{"timeout_ms": l.TimeoutMs, "output_bytes": l.OutputBytes, "memory_bytes": l.MemoryBytes,
		"max_commands": l.MaxCommands, "max_loop_iterations": l.MaxLoopIterations, "input_bytes": l.InputBytes,
		"result_bytes": l.ResultBytes, "cpu_millis": l.CpuMillis, "max_pids": l.MaxPids}
}

// limitProblems: no negative limit, no default over its maximum.
func limitProblems(def, max *pb.Limits) []string {
	var out []string
	d, m := limitFields(def), limitFields(max)
	for _, set := range []struct {
		name string
		f    map[string]int64
	}{{"default_limits", d}, {"max_limits", m}} {
		for k, v := range set.f {
			if v < 0 {
				out = append(out, fmt.Sprintf("%s.%s is negative (%d)", set.name, k, v))
			}
		}
	}
	for k, v := range d {
		if mv := m[k]; mv > 0 && v > mv {
			out = append(out, fmt.Sprintf("default_limits.%s (%d) is over max_limits.%s (%d)", k, v, k, mv))
		}
	}
	slices.Sort(out)
	return out
}

// outcome is one exec through the runtime.
type outcome struct {
	res    *backends.Result
	stdout string
	stderr string
	err    error
	took   time.Duration
}

func (o outcome) String() string {
	if o.err != nil {
		return o.err.Error()
	}
	e := o.res.Exit
	s := fmt.Sprintf("status %d (exit_code %d, signal %d", backends.ExitStatus(e), e.ExitCode, e.Signal)
	if e.TimedOut {
		s += ", timed out"
	}
	if e.Truncated {
		s += ", truncated"
	}
	s += ")"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if o.stderr != "" {
		s += "; stderr: " + clip(o.stderr, 200)
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// exec runs a probe through the host's exec path.
func (c *checker) exec(ctx context.Context, p *Probe, vars map[string]string, req backends.Request) outcome {
	req.Backend, req.Kind, req.Argv = c.id, p.Kind, p.fill(vars)
	if req.Kind == "" {
		req.Kind = c.desc.Accepts[0]
	}
	if req.Timeout == 0 {
		req.Timeout = execTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout+30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	res, err := c.rt.Exec(ctx, &req, &stdout, &stderr)
	return outcome{res: res, stdout: stdout.String(), stderr: stderr.String(), err: err, took: time.Since(t0)}
}

// health is the plugin's state: "" while it runs as it did, else why
// not (the host killed it, it crashed), with its restarts so far.
func (c *checker) restarts() (int64, string) {
	for _, bi := range c.rt.List(context.Background(), false) {
		if bi.Id == c.id {
			why := ""
			if bi.State != backends.StateReady {
				why = fmt.Sprintf("the plugin is %s: %s", bi.State, bi.LastError)
			}
			return bi.Restarts, why
		}
	}
	return 0, "the plugin is gone from the runtime"
}

// stillUp reports how the plugin fared since restarts were r0: the host
// had to kill it, or it died.
func (c *checker) stillUp(r0 int64) string {
	r, why := c.restarts()
	if why != "" {
		return why
	}
	if r != r0 {
		return "the plugin was restarted meanwhile"
	}
	return ""
}

func missing(what string) (string, string) {
	return Fail, "no probe for " + what + ": give one in a probes file (PROTOCOL.md, Checking a plugin)"
}

func (c *checker) checkKind(ctx context.Context, kind string) (string, string) {
	h, ok := c.probes.Hello[kind]
	if !ok {
		return missing(fmt.Sprintf("the kind %q (hello)", kind))
	}
	o := c.exec(ctx, &Probe{Kind: kind, Argv: h.Argv}, nil, backends.Request{})
	if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 || o.stdout != h.Stdout {
		return Fail, fmt.Sprintf("%q: %s; stdout %s, want %q", h.Argv, o, clip(o.stdout, 200), h.Stdout)
	}
	return Pass, fmt.Sprintf("%q printed %q", h.Argv, h.Stdout)
}

// seqN is the size of the output check: about 240 KB, several chunks.
const seqN = 40000

func (c *checker) checkOutput(ctx context.Context) (string, string) {
	if c.probes.Seq == nil || c.probes.SeqStderr == nil {
		return missing("seq and seq_stderr")
	}
	want := seqText(seqN)
	vars := map[string]string{"n": strconv.Itoa(seqN)}
	r0, _ := c.restarts()
	for _, p := range []struct {
		name  string
		probe *Probe
	}{{"stdout", c.probes.Seq}, {"stderr", c.probes.SeqStderr}} {
		o := c.exec(ctx, p.probe, vars, backends.Request{})
		got, other := o.stdout, o.stderr
		if p.name == "stderr" {
			got, other = o.stderr, o.stdout
		}
		if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 {
			return Fail, fmt.Sprintf("%s of %d bytes: %s", p.name, len(want), o)
		}
		if got != want {
			return Fail, fmt.Sprintf("%s: got %d bytes, want %d (%s); first difference at byte %d", p.name, len(got), len(want), "1 to "+strconv.Itoa(seqN), firstDiff(got, want))
		}
		if other != "" {
			return Fail, fmt.Sprintf("the %s probe also wrote %s on the other stream", p.name, clip(other, 100))
		}
	}
	if why := c.stillUp(r0); why != "" {
		return Fail, why
	}
	return Pass, fmt.Sprintf("%d bytes on stdout, then on stderr, in chunks of at most 64 KiB, in order", len(want))
}

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (c *checker) checkStdin(ctx context.Context) (string, string) {
	if !slices.Contains(c.desc.Features, "stdin") {
		return Skip, `the plugin does not list the "stdin" feature`
	}
	if c.probes.Cat == nil {
		return missing("cat")
	}
	// 200 KiB of text in which every line differs: order, loss and
	// duplication all show.
	var b strings.Builder
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "line %06d of the stdin check\n", i)
	}
	in := b.String()
	o := c.exec(ctx, c.probes.Cat, nil, backends.Request{Stdin: strings.NewReader(in)})
	if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 {
		return Fail, fmt.Sprintf("cat of %d bytes: %s", len(in), o)
	}
	if o.stdout != in {
		return Fail, fmt.Sprintf("cat of %d bytes gave %d bytes back; first difference at byte %d", len(in), len(o.stdout), firstDiff(o.stdout, in))
	}
	// And an exec with no stdin at all must end too (stdin_close only).
	o = c.exec(ctx, c.probes.Cat, nil, backends.Request{Timeout: 10 * time.Second})
	if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 || o.stdout != "" {
		return Fail, fmt.Sprintf("cat with no stdin (only stdin_close): %s", o)
	}
	return Pass, fmt.Sprintf("%d bytes in, the same out; empty stdin ends", len(in))
}

func (c *checker) checkExit(ctx context.Context) (string, string) {
	if c.probes.Exit == nil {
		return missing("exit")
	}
	var got []string
	for _, code := range c.probes.ExitCodes {
		o := c.exec(ctx, c.probes.Exit, map[string]string{"code": strconv.Itoa(code)}, backends.Request{})
		if o.err != nil || o.res.Exit.ExitCode != int32(code) || o.res.Exit.Signal != 0 || backends.ExitStatus(o.res.Exit) != code {
			return Fail, fmt.Sprintf("exit %d: %s; want exit_code %d and no signal", code, o, code)
		}
		got = append(got, strconv.Itoa(code))
	}
	return Pass, "exit codes " + strings.Join(got, ", ")
}

// signalled runs the sleep probe and sends it sig after a moment.
func (c *checker) signalled(ctx context.Context, sig syscall.Signal) outcome {
	sigs := make(chan syscall.Signal, 1)
	t := time.AfterFunc(500*time.Millisecond, func() { sigs <- sig })
	defer t.Stop()
	return c.exec(ctx, c.probes.Sleep, nil, backends.Request{Signals: sigs, Timeout: 20 * time.Second})
}

func (c *checker) checkSignal(ctx context.Context) (string, string) {
	if c.probes.Sleep == nil {
		return missing("sleep")
	}
	r0, _ := c.restarts()
	o := c.signalled(ctx, syscall.SIGINT)
	if o.err != nil {
		return Fail, o.String()
	}
	e := o.res.Exit
	switch {
	case e.TimedOut:
		return Fail, "SIGINT did not end the sleep probe: it ran to the check's timeout"
	case e.Signal != int32(syscall.SIGINT):
		return Fail, fmt.Sprintf("SIGINT: %s; want signal 2 in Exit (status 130)", o)
	}
	if why := c.stillUp(r0); why != "" {
		return Fail, why
	}
	return Pass, fmt.Sprintf("SIGINT ended the command: signal 2, status %d, in %s", backends.ExitStatus(e), o.took.Round(time.Millisecond))
}

func (c *checker) checkTimeout(ctx context.Context) (string, string) {
	if c.probes.Sleep == nil {
		return missing("sleep")
	}
	r0, _ := c.restarts()
	o := c.exec(ctx, c.probes.Sleep, nil, backends.Request{Timeout: time.Second})
	if o.err != nil {
		return Fail, o.String()
	}
	e := o.res.Exit
	if why := c.stillUp(r0); why != "" {
		return Fail, "after the timeout's SIGTERM and SIGKILL, the plugin was not running as before (a plugin must end the exec on them): " + why
	}
	switch {
	case !e.TimedOut:
		return Fail, fmt.Sprintf("a 1s timeout: %s; want timed_out", o)
	case e.Signal == int32(syscall.SIGKILL):
		return Fail, fmt.Sprintf("the command ignored SIGTERM and ended only on SIGKILL, %s after its start (%s)", o.took.Round(time.Millisecond), o)
	case e.Signal == int32(syscall.SIGTERM):
		return Pass, fmt.Sprintf("ended on SIGTERM, %s after the start of a 1s exec", o.took.Round(time.Millisecond))
	}
	return Pass, fmt.Sprintf("the plugin ended the command at its limit itself (%s), %s after its start", o, o.took.Round(time.Millisecond))
}

func (c *checker) checkOutputLimit(ctx context.Context) (string, string) {
	if c.probes.Seq == nil {
		return missing("seq")
	}
	const limit = 64 << 10
	const n = 300000 // about 2 MB
	r0, _ := c.restarts()
	o := c.exec(ctx, c.probes.Seq, map[string]string{"n": strconv.Itoa(n)}, backends.Request{OutputLimit: limit})
	if o.err != nil {
		return Fail, o.String()
	}
	if why := c.stillUp(r0); why != "" {
		return Fail, "after the host cut the output and sent SIGKILL, the plugin was not running as before (a plugin must end the exec on SIGKILL): " + why
	}
	want := seqText(n)[:limit]
	switch {
	case !o.res.Exit.Truncated:
		return Fail, fmt.Sprintf("seq 1 %d with an output limit of %d: %s; want truncated", n, limit, o)
	case o.stdout != want:
		return Fail, fmt.Sprintf("%d bytes kept, want the first %d of the output", len(o.stdout), limit)
	}
	return Pass, fmt.Sprintf("cut at %d bytes, stopped in %s", limit, o.took.Round(time.Millisecond))
}

func (c *checker) checkHostFS(ctx context.Context) (string, string) {
	if c.probes.Read == nil || c.probes.Write == nil {
		return missing("read and write")
	}
	const text = "written0by0the0plugin0check"
	content := "read by the plugin check\nsecond line\n"
	if _, err := c.ws.WriteFile(ctx, "/plugin-check/read.txt", []byte(content), workspace.WriteOptions{Parents: true}); err != nil {
		return Fail, fmt.Sprintf("(the check's own workspace) %v", err)
	}
	o := c.exec(ctx, c.probes.Read, map[string]string{"path": "plugin-check/read.txt"}, backends.Request{})
	if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 || strings.TrimSuffix(o.stdout, "\n") != strings.TrimSuffix(content, "\n") {
		return Fail, fmt.Sprintf("read plugin-check/read.txt: %s; stdout %s, want %q", o, clip(o.stdout, 200), content)
	}
	o = c.exec(ctx, c.probes.Write, map[string]string{"path": "plugin-check/written.txt", "text": text}, backends.Request{})
	if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 {
		return Fail, fmt.Sprintf("write plugin-check/written.txt: %s", o)
	}
	got, _, err := c.ws.ReadFile(ctx, "/plugin-check/written.txt", 1<<20)
	if err != nil || strings.TrimSuffix(string(got), "\n") != text {
		return Fail, fmt.Sprintf("after the write probe, plugin-check/written.txt holds %s (%v), want %q", clip(string(got), 100), err, text)
	}
	how := "through HostFS (the broker)"
	if c.desc.NeedsMount {
		how = "through the mount"
	}
	return Pass, "read a workspace file and wrote one " + how
}

func (c *checker) checkConcurrent(ctx context.Context) (string, string) {
	if c.probes.Seq == nil {
		return missing("seq")
	}
	const k = 4
	var wg sync.WaitGroup
	outs := make([]outcome, k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = c.exec(ctx, c.probes.Seq, map[string]string{"n": strconv.Itoa(5000 * (i + 1))}, backends.Request{})
		}()
	}
	wg.Wait()
	for i, o := range outs {
		n := 5000 * (i + 1)
		if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 || o.stdout != seqText(n) {
			return Fail, fmt.Sprintf("exec %d of %d at once (seq 1 %d): %s; %d bytes out, want %d", i+1, k, n, o, len(o.stdout), len(seqText(n)))
		}
	}
	return Pass, fmt.Sprintf("%d execs at once, each with its own output", k)
}

// checkUnknownKind sends the plugin an exec of a kind it does not list,
// bypassing the host (which refuses one itself): the plugin must end it
// with a non-zero exit_code, and keep working.
func (c *checker) checkUnknownKind(ctx context.Context) (string, string) {
	pc, _, err := c.rt.Plugin(ctx, c.id)
	if err != nil {
		return Fail, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	const kind = "plugin-check-no-such-kind"
	stream, err := pc.Backend.Exec(ctx)
	if err != nil {
		return Fail, fmt.Sprintf("open an exec stream: %v", err)
	}
	start := &pb.ExecStart{ExecId: "plugin-check-unknown-kind", Kind: kind, Argv: []string{"hello"}, Cwd: "/",
		Env: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/"}, Limits: &pb.Limits{TimeoutMs: 10000, OutputBytes: 1 << 20}}
	if err := stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_Start{Start: start}}); err != nil {
		return Fail, fmt.Sprintf("send start: %v", err)
	}
	stream.Send(&pb.ExecInput{Msg: &pb.ExecInput_StdinClose{StdinClose: true}})
	var exit *pb.Exit
	for {
		m, err := stream.Recv()
		if err != nil {
			if exit == nil {
				return Fail, fmt.Sprintf("an exec of kind %q ended without an Exit: %v", kind, err)
			}
			break
		}
		if e := m.GetExit(); e != nil {
			exit = e
		}
	}
	cancel()
	if exit.ExitCode == 0 && exit.Signal == 0 {
		return Fail, fmt.Sprintf("the plugin ran an exec of kind %q, which it does not list, and exited 0; it must refuse it with a non-zero exit_code", kind)
	}
	// And it still works.
	k := c.desc.Accepts[0]
	if h, ok := c.probes.Hello[k]; ok {
		o := c.exec(context.WithoutCancel(ctx), &Probe{Kind: k, Argv: h.Argv}, nil, backends.Request{})
		if o.err != nil || backends.ExitStatus(o.res.Exit) != 0 || o.stdout != h.Stdout {
			return Fail, fmt.Sprintf("after the refusal, the hello probe: %s", o)
		}
	}
	reason := exit.Reason
	if reason == "" {
		return Warn, fmt.Sprintf("refused with exit_code %d but no reason (it SHOULD say why)", exit.ExitCode)
	}
	return Pass, fmt.Sprintf("refused: exit_code %d, %q", exit.ExitCode, reason)
}

func (c *checker) checkShutdown(ctx context.Context) (string, string) {
	if _, why := c.restarts(); why != "" {
		return Fail, why
	}
	c.rt.Close()
	c.closed = true
	pid, graceful, ok := c.rt.Stopped(c.id)
	if !ok {
		return Fail, "no plugin process to stop"
	}
	var left []int
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if left = owned(c.owner); len(left) == 0 {
			break
		}
	}
	switch {
	case !graceful:
		return Fail, fmt.Sprintf("the plugin (pid %d) did not exit within 2s of GRPCController.Shutdown: the host killed its process group", pid)
	case len(left) > 0:
		return Fail, fmt.Sprintf("processes left after the plugin exited: %v", left)
	}
	return Pass, "exited on GRPCController.Shutdown; no process left"
}
