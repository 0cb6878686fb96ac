package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/computerfs/computerfs/containerbackend"
	"github.com/computerfs/computerfs/internal/tailbuf"
	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// ContainerSuffix ends the names of targets whose workloads run in a
// container (Config.InContainer): "computerfs/container".
const ContainerSuffix = "/container"

// MetricWall is the wall-clock time of a timed step that ran in
// containers, their start and teardown included; the sample's seconds are
// the commands' own time, measured inside the containers.
const MetricWall = "wall_seconds"

// commandRunner runs one command of a workload's timed step in dir, a
// directory on the run's target. inner is the command's own time when the
// runner measures it itself (zero on the host, where the runner's wall
// clock is the time).
type commandRunner interface {
	run(ctx context.Context, dir string, env []string, name string, args ...string) (stdout []byte, inner time.Duration, err error)
}

// hostRunner runs commands as children of the bench process.
type hostRunner struct{}

func (hostRunner) run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, time.Duration, error) {
	out, err := runCmd(ctx, dir, env, name, args...)
	return out, 0, err
}

// ContainerAvailable says why the workloads cannot run in containers
// here (nil if they can): runc runs them, which needs root, the runc
// binary and the memory, pids and cpu cgroup controllers.
func ContainerAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("--in-container needs root: runc runs the containers")
	}
	if _, err := containerbackend.FindRunc(); err != nil {
		return fmt.Errorf("--in-container needs runc: %w", err)
	}
	if err := containerbackend.CgroupsAvailable(); err != nil {
		return fmt.Errorf("--in-container: cgroups: %w", err)
	}
	return nil
}

// containerEnv is the whole environment of a command in a container: what
// the host runner gives git and bash (gitEnv), without the rest of the
// bench process's environment.
var containerEnv = map[string]string{
	"PATH":                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME":                "/tmp",
	"LC_ALL":              "C",
	"GIT_CONFIG_NOSYSTEM": "1",
	"GIT_CONFIG_GLOBAL":   "/dev/null",
}

// innerMarker starts the line timerScript prints last on stderr.
const innerMarker = "computerfs-bench-inner-time"

// timerScript runs its arguments as a command inside the container and
// prints, last on stderr, bash's clock before and after it: the container's
// start and teardown stay out of the time. $EPOCHREALTIME (bash 5) forks no
// process, so the clock costs nothing beside the command.
const timerScript = `s=$EPOCHREALTIME; "$@"; rc=$?; e=$EPOCHREALTIME; printf '\n%s %s %s\n' ` + innerMarker + ` "$s" "$e" >&2; exit $rc`

// containerRunner runs each command in a fresh runc container of the
// container backend, with the target's directory as /workspace and the
// inputs read-only at their host paths.
type containerRunner struct {
	b   *containerbackend.Backend
	dir string // absolute: the target's directory, /workspace in the container
}

// newContainerRunner configures a container backend on dir, its state
// (runc's root, bundles, rootfs) in stateDir, with binds seen read-only at
// the same paths in every container.
func newContainerRunner(ctx context.Context, dir, stateDir string, binds []string) (*containerRunner, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b := &containerbackend.Backend{StateDir: stateDir, ExtraBinds: binds}
	if err := b.Configure(ctx, &pluginapi.Config{MountPath: abs}); err != nil {
		return nil, fmt.Errorf("container backend: %w", err)
	}
	return &containerRunner{b: b, dir: abs}, nil
}

func (c *containerRunner) run(ctx context.Context, dir string, _ []string, name string, args ...string) ([]byte, time.Duration, error) {
	what := describeCmd(name, args) + " (in a container)"
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	rel, err := filepath.Rel(c.dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, 0, fmt.Errorf("%s: %s is outside the container's workspace %s", what, dir, c.dir)
	}
	argv := append([]string{"/bin/bash", "-c", timerScript, "bench-timer", name}, args...)
	var stdout bytes.Buffer
	stderr := tailbuf.New(4096)
	exit, err := c.b.Exec(ctx, &pluginapi.Exec{
		Start: &pb.ExecStart{
			Kind: "argv", Argv: argv, Cwd: path.Join("/", filepath.ToSlash(rel)), Env: maps.Clone(containerEnv),
		},
		Stdin:  strings.NewReader(""),
		Stdout: &stdout,
		Stderr: stderr,
	})
	if err != nil {
		return stdout.Bytes(), 0, fmt.Errorf("%s: %w", what, err)
	}
	inner, msg, perr := splitInner(stderr.String())
	if exit.ExitCode != 0 || exit.Signal != 0 || exit.TimedOut || exit.OomKilled {
		status := fmt.Sprintf("exit status %d", exit.ExitCode)
		if exit.Reason != "" {
			status += " (" + exit.Reason + ")"
		}
		if msg != "" {
			return stdout.Bytes(), 0, fmt.Errorf("%s: %s: %s", what, status, msg)
		}
		return stdout.Bytes(), 0, fmt.Errorf("%s: %s", what, status)
	}
	if perr != nil {
		return stdout.Bytes(), 0, fmt.Errorf("%s: %w; stderr: %s", what, perr, msg)
	}
	return stdout.Bytes(), inner, nil
}

// splitInner takes timerScript's last line out of the end of stderr: it
// returns the time it gives and the rest of stderr, trimmed.
func splitInner(stderr string) (time.Duration, string, error) {
	i := strings.LastIndex(stderr, innerMarker+" ")
	if i < 0 {
		return 0, strings.TrimSpace(stderr), errors.New("the timer's line is missing from stderr")
	}
	line, _, _ := strings.Cut(stderr[i+len(innerMarker)+1:], "\n")
	msg := strings.TrimSpace(stderr[:i])
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, msg, fmt.Errorf("the timer's line %q has no start and end ($EPOCHREALTIME needs bash 5)", line)
	}
	s, err1 := parseEpochRealtime(f[0])
	e, err2 := parseEpochRealtime(f[1])
	if err := errors.Join(err1, err2); err != nil {
		return 0, msg, fmt.Errorf("the timer's line %q: %w", line, err)
	}
	if e < s {
		return 0, msg, fmt.Errorf("the timer's line %q: the clock went back", line)
	}
	return time.Duration(e - s), msg, nil
}

// parseEpochRealtime reads bash's $EPOCHREALTIME (seconds since the epoch
// with a fraction, "1700000000.123456") as nanoseconds.
func parseEpochRealtime(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	if frac == "" {
		frac = "0"
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	frac += strings.Repeat("0", 9-len(frac))
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	b, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || a < 0 || b < 0 {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return a*1e9 + b, nil
}

// putInContainer makes t's workloads run their timed commands in
// containers: one container backend per target, its state under stateDir
// (removed when the target is closed). The target's name gets
// ContainerSuffix.
func putInContainer(ctx context.Context, t *Target, stateDir string, binds []string) error {
	var r *containerRunner
	name := t.Name
	t.closers = append(t.closers, func() error {
		var err error
		if r != nil {
			// First: the backend's stage holds a clone of the target's
			// mount, which must be gone before the mount is unmounted
			// (the target's earlier closer).
			r.b.Close()
			if err = r.leftovers(); err != nil {
				err = fmt.Errorf("target %s: %w", name, err)
			}
		}
		return errors.Join(err, removeAll(stateDir))
	})
	r, err := newContainerRunner(ctx, t.Dir, stateDir, binds)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.Name, err)
	}
	t.runner = r
	t.Name += ContainerSuffix
	note := "in a runc container per command, as /workspace; times exclude container start"
	if t.Note != "" {
		note = t.Note + "; " + note
	}
	t.Note = note
	return nil
}

// leftovers reports (and deletes) containers and bundles the backend has
// left in its state directory: every exec should have removed its own.
func (c *containerRunner) leftovers() error {
	var errs []error
	out, err := exec.Command(c.b.Runc, "--root", c.b.RuncRoot(), "list", "-q").Output()
	if err != nil {
		errs = append(errs, fmt.Errorf("runc list: %w", err))
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		for _, id := range ids {
			exec.Command(c.b.Runc, "--root", c.b.RuncRoot(), "delete", "--force", id).Run()
		}
		errs = append(errs, fmt.Errorf("containers left behind (now deleted): %s", strings.Join(ids, " ")))
	}
	if ents, _ := os.ReadDir(filepath.Join(c.b.StateDir, "bundles")); len(ents) > 0 {
		errs = append(errs, fmt.Errorf("%d container bundle(s) left behind in %s", len(ents), c.b.StateDir))
	}
	return errors.Join(errs...)
}
