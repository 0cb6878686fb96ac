package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Metric names. A workload's primary metric is either seconds of wall
// clock (lower is better) or MiB/s (higher is better).
const (
	MetricSeconds = "seconds"
	MetricMiBs    = "MiB/s"
	MetricIOPS    = "IOPS"
	MetricP50     = "p50_us"
	MetricP99     = "p99_us"
	MetricP999    = "p99.9_us"
)

// Metrics are the numbers one run of a workload reports beyond its wall
// clock time.
type Metrics map[string]float64

// Env is what one run of a workload works with.
type Env struct {
	Dir    string  // a fresh, empty directory on the target, removed after the run
	Target *Target // the target the run is on
	Inputs *Inputs
	Log    *slog.Logger
	// notes collects remarks about the run (say, a cache that could not
	// be dropped); the runner reports each once per workload and target.
	notes []string
	// runner runs the timed step's commands: nil for the host, or the
	// target's containers; inner sums the time they measured themselves.
	runner commandRunner
	inner  time.Duration
}

// command runs one command of the timed step in dir (e.Dir or below it),
// on the host or, under Config.InContainer, in a container of its own.
// env is the host's environment (nil: the bench process's); a container
// gets a minimal one. It returns the command's standard output.
func (e *Env) command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	r := e.runner
	if r == nil {
		r = hostRunner{}
	}
	out, inner, err := r.run(ctx, dir, env, name, args...)
	e.inner += inner
	return out, err
}

// script runs a bash script of the timed step in e.Dir, as command does.
func (e *Env) script(ctx context.Context, script string) error {
	_, err := e.command(ctx, e.Dir, gitEnv(), "bash", "-c", script)
	return err
}

// Note records a remark about this run.
func (e *Env) Note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// Workload is a named benchmark step: Setup and Cleanup are not timed, Run
// is. Runs that report only wall clock time return nil metrics.
type Workload struct {
	Name    string
	Desc    string
	Needs   []string // inputs (NeedRand, ...) to make before the first run
	Primary string   // MetricSeconds or MetricMiBs
	Setup   func(ctx context.Context, e *Env) error
	Run     func(ctx context.Context, e *Env) (Metrics, error)
	Cleanup func(ctx context.Context, e *Env) error
	// commands marks the shell workloads: Run does nothing but run
	// commands through Env.command, so it can run them in containers.
	commands bool
}

// HigherIsBetter reports whether the primary metric is a rate.
func (w *Workload) HigherIsBetter() bool { return w.Primary == MetricMiBs || w.Primary == MetricIOPS }

const (
	smallFiles = 1000
	treeFanout = 10
	// treeEntries is what find prints for the tree: the root, three
	// levels of directories and a file in each leaf.
	treeEntries = 1 + 10 + 100 + 1000 + 1000
)

// timedShell is a Run that runs one bash script in the run's directory.
func timedShell(script func(e *Env) string) func(ctx context.Context, e *Env) (Metrics, error) {
	return func(ctx context.Context, e *Env) (Metrics, error) {
		return nil, e.script(ctx, script(e))
	}
}

// ShellWorkloads are the workloads made of ordinary commands. Their timed
// steps run every command through Env.command, so that they can run in a
// container (Config.InContainer); setup and cleanup stay on the host.
func ShellWorkloads() []Workload {
	ws := []Workload{
		{
			Name: "create-1000", Desc: "create 1000 small files: one bash loop of echo x > f$i",
			Run: timedShell(func(*Env) string { return `for ((i = 0; i < 1000; i++)); do echo x > f$i; done` }),
		},
		{
			Name: "stat-1000", Desc: "stat 1000 small files with one stat process",
			Setup: func(ctx context.Context, e *Env) error { return makeSmallFiles(e.Dir, smallFiles) },
			Run:   timedShell(func(*Env) string { return `stat f* > /dev/null` }),
		},
		{
			Name: "rm-1000", Desc: "rm -rf a directory of 1000 small files",
			Setup: func(ctx context.Context, e *Env) error { return makeSmallFiles(filepath.Join(e.Dir, "d"), smallFiles) },
			Run:   timedShell(func(*Env) string { return `rm -rf d` }),
		},
		{
			Name: "tree-create", Desc: "mkdir -p a 10x10x10 tree and write a file in each leaf, from one bash",
			Run: timedShell(func(*Env) string {
				return `mkdir -p t/d{0..9}/d{0..9}/d{0..9} && for d in t/d*/d*/d*; do echo x > $d/f; done`
			}),
		},
		{
			Name: "tree-find", Desc: "find over the 10x10x10 tree",
			Setup: func(ctx context.Context, e *Env) error { return makeTree(filepath.Join(e.Dir, "t")) },
			Run: func(ctx context.Context, e *Env) (Metrics, error) {
				out, err := e.command(ctx, e.Dir, nil, "find", "t")
				if err != nil {
					return nil, err
				}
				if n := strings.Count(string(out), "\n"); n != treeEntries {
					return nil, fmt.Errorf("find t printed %d entries, want %d", n, treeEntries)
				}
				return nil, nil
			},
		},
		{
			Name: "tree-rm", Desc: "rm -rf the 10x10x10 tree",
			Setup: func(ctx context.Context, e *Env) error { return makeTree(filepath.Join(e.Dir, "t")) },
			Run:   timedShell(func(*Env) string { return `rm -rf t` }),
		},
		{
			Name: "write-64m-random", Desc: "dd bs=1M of 64 MiB of random data (from a file on ext4)", Needs: []string{NeedRand},
			Run: timedShell(func(e *Env) string { return fmt.Sprintf(`dd if=%s of=f bs=1M status=none`, e.Inputs.Rand) }),
		},
		{
			Name: "write-64m-zero", Desc: "dd bs=1M of 64 MiB from /dev/zero",
			Run: timedShell(func(*Env) string { return `dd if=/dev/zero of=f bs=1M count=64 status=none` }),
		},
		{
			Name: "write-64m-fsync", Desc: "dd bs=1M conv=fsync of 64 MiB of random data", Needs: []string{NeedRand},
			Run: timedShell(func(e *Env) string {
				return fmt.Sprintf(`dd if=%s of=f bs=1M conv=fsync status=none`, e.Inputs.Rand)
			}),
		},
		{
			Name: "read-64m-cold", Desc: "read 64 MiB with dd bs=1M after sync and drop_caches", Needs: []string{NeedRand},
			Setup: func(ctx context.Context, e *Env) error {
				f := filepath.Join(e.Dir, "f")
				if err := copyFile(e.Inputs.Rand, f); err != nil {
					return err
				}
				if err := fsyncPath(f); err != nil {
					return err
				}
				return dropCaches(e)
			},
			Run: timedShell(func(*Env) string { return `dd if=f of=/dev/null bs=1M status=none` }),
		},
		{
			Name: "read-64m-warm", Desc: "read 64 MiB with dd bs=1M after reading it once", Needs: []string{NeedRand},
			Setup: func(ctx context.Context, e *Env) error {
				if err := copyFile(e.Inputs.Rand, filepath.Join(e.Dir, "f")); err != nil {
					return err
				}
				return sh(ctx, e.Dir, `cat f > /dev/null`)
			},
			Run: timedShell(func(*Env) string { return `dd if=f of=/dev/null bs=1M status=none` }),
		},
		{
			Name: "cp-64m", Desc: "cp a 64 MiB file within the target", Needs: []string{NeedRand},
			Setup: func(ctx context.Context, e *Env) error { return copyFile(e.Inputs.Rand, filepath.Join(e.Dir, "f")) },
			Run:   timedShell(func(*Env) string { return `cp f g` }),
		},
		{
			Name: "overwrite-64m", Desc: "dd bs=1M conv=notrunc of new random data over a 64 MiB file", Needs: []string{NeedRand},
			Setup: func(ctx context.Context, e *Env) error { return copyFile(e.Inputs.Rand, filepath.Join(e.Dir, "f")) },
			Run: timedShell(func(e *Env) string {
				return fmt.Sprintf(`dd if=%s of=f bs=1M conv=notrunc status=none`, e.Inputs.Rand2)
			}),
		},
		{
			Name: "git-commit-100", Desc: "git init, add and commit 100 files",
			Setup: func(ctx context.Context, e *Env) error { return makeTextFiles(filepath.Join(e.Dir, "repo"), 100) },
			Run: func(ctx context.Context, e *Env) (Metrics, error) {
				dir := filepath.Join(e.Dir, "repo")
				for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "bench"}} {
					if _, err := e.command(ctx, dir, gitEnv(), "git", gitArgs(args...)...); err != nil {
						return nil, err
					}
				}
				return nil, nil
			},
		},
		{
			Name: "git-clone-shallow", Desc: "git clone --depth 1 of a local ~1 MB repository", Needs: []string{NeedGitRepo},
			Run: func(ctx context.Context, e *Env) (Metrics, error) {
				_, err := e.command(ctx, e.Dir, gitEnv(), "git", "clone", "-q", "--depth", "1", "file://"+e.Inputs.GitRepo, "dst")
				return nil, err
			},
		},
		{
			Name: "untar-src", Desc: "tar xf of Go's net, cmd/go and go source trees", Needs: []string{NeedSrcTar},
			Run: func(ctx context.Context, e *Env) (Metrics, error) {
				_, err := e.command(ctx, e.Dir, nil, "tar", "xf", e.Inputs.SrcTar)
				return nil, err
			},
		},
		{
			Name: "rm-src", Desc: "rm -rf the untarred source trees", Needs: []string{NeedSrcTar},
			Setup: func(ctx context.Context, e *Env) error {
				if err := os.Mkdir(filepath.Join(e.Dir, "src"), 0o755); err != nil {
					return err
				}
				_, err := runCmd(ctx, filepath.Join(e.Dir, "src"), nil, "tar", "xf", e.Inputs.SrcTar)
				return err
			},
			Run: timedShell(func(*Env) string { return `rm -rf src` }),
		},
	}
	for i := range ws {
		ws[i].commands = true
	}
	return ws
}

func makeSmallFiles(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte("x\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func makeTree(root string) error {
	for a := range treeFanout {
		for b := range treeFanout {
			for c := range treeFanout {
				d := filepath.Join(root, fmt.Sprintf("d%d/d%d/d%d", a, b, c))
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, "f"), []byte("x\n"), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func makeTextFiles(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 3))
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.txt", i)), makeText(r, 20+r.IntN(60)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func fsyncPath(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// dropCaches writes back dirty data and drops the page, dentry and inode
// caches, so that the next read comes from the filesystem; on a computerfs
// target also the daemon's own: its decoded chunks and its map of the
// store (which drop_caches leaves alone), after a sync of the workspace.
// A workspace served by another process (a --target mount of a daemon)
// gets its store paged out of that daemon's map from outside
// (coldMountStore), so that its reads are as cold as ours; the daemon's
// own caches are not reached: decoded chunks (8-16, which a 64 MiB read
// evicts before it could hit them) and, since branch hread, the outboards
// of chunks read at random (up to 1,024; a cold random-read row against
// another daemon of that build reads one page less per chunk than it
// would after a restart).
// It needs root; without it the run is noted as warm.
func dropCaches(e *Env) error {
	if e.Target != nil && e.Target.FS != nil {
		if err := e.Target.FS.Sync(context.Background()); err != nil {
			return fmt.Errorf("sync workspace: %w", err)
		}
		if err := e.Target.FS.DropCaches(); err != nil {
			return fmt.Errorf("drop the workspace's caches: %w", err)
		}
	}
	syscall.Sync() // also makes another daemon's store clean, so it can be dropped
	if e.Target != nil && e.Target.FS == nil && os.Geteuid() == 0 {
		note, err := coldMountStore(e.Dir)
		if err != nil {
			return fmt.Errorf("drop the caches of %s: %w", e.Target.Name, err)
		}
		if note != "" {
			e.Note("%s", note)
		}
	}
	err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
	if errors.Is(err, os.ErrPermission) {
		e.Note("cannot drop caches (not root): cold reads may be warm")
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	return nil
}
