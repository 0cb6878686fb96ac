package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/internal/procs"
)

// Names of the built-in targets.
const (
	TargetComputerfs = "computerfs"
	TargetExt4       = "ext4"
	TargetTmpfs      = "tmpfs"
)

// DefaultTargets are the targets a run uses unless told otherwise.
func DefaultTargets() []string {
	return []string{TargetComputerfs, TargetExt4, TargetTmpfs, TargetNopt1m}
}

// Filesystem magic numbers from statfs(2).
const (
	magicExt4  = 0xEF53
	magicTmpfs = 0x01021994
	magicFuse  = 0x65735546
)

func magicName(magic int64) (string, bool) {
	switch magic {
	case magicExt4:
		return "ext4", true
	case magicTmpfs:
		return "tmpfs", true
	case magicFuse:
		return "fuse", true
	case 0x9123683E:
		return "btrfs", true
	case 0x58465342:
		return "xfs", true
	case 0x794c7630:
		return "overlayfs", true
	case 0x6969:
		return "nfs", true
	}
	return "", false
}

// FSType names the filesystem holding dir, as statfs reports it (ext2, ext3
// and ext4 share a magic number and are all reported as ext4).
func FSType(dir string) (name string, magic int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	magic = int64(st.Type)
	if n, ok := magicName(magic); ok {
		return n, magic, nil
	}
	return fmt.Sprintf("0x%x", magic), magic, nil
}

// Target is a directory the workloads run in, with what it takes to tear
// it down.
type Target struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	FSType string `json:"fstype"`
	Note   string `json:"note,omitempty"`

	// Computerfs targets: the open workspace, its store file and the
	// mount (scenarios sample them).
	FS        *fs.FS         `json:"-"`
	Workspace string         `json:"workspace,omitempty"`
	Server    *fusefs.Server `json:"-"`
	closers   []func() error // run in reverse order by Close
	// runner runs the workloads' timed commands (nil: on the host).
	runner commandRunner
	// reads counts the computerfs mount's READs (vitals.go).
	reads *readObserver
	// enter and leave, if set, bracket each run on the target: the
	// computerfs target governs the process's GOMAXPROCS between them.
	enter, leave func()
}

// Close tears the target down: unmounts, closes and removes what it made.
// It is safe to call more than once.
func (t *Target) Close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		if err := t.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	t.closers = nil
	return errors.Join(errs...)
}

// DirTarget is an existing directory: the workloads run in a fresh
// subdirectory of it, removed by Close.
func DirTarget(name, dir string) (*Target, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("target %s: %w", name, err)
	}
	sub, err := os.MkdirTemp(dir, "computerfs-bench-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", name, err)
	}
	t := &Target{Name: name, Dir: sub}
	t.closers = append(t.closers, func() error { return removeAll(sub) })
	if t.FSType, _, err = FSType(sub); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Ext4Target is a directory under root, which should be on ext4; the note
// says whether it is.
func Ext4Target(root string) (*Target, error) {
	t, err := DirTarget(TargetExt4, root)
	if err != nil {
		return nil, err
	}
	if t.FSType == "ext4" {
		t.Note = "ext4 (statfs magic 0xEF53)"
		if dev, journal, ok := ext4Journal(root); ok && !journal {
			t.Note += fmt.Sprintf(", %s has no journal: ext4 then checks the inode table for recently deleted inodes at every allocation, which makes creates slow on a disk with much deleting (perf: most of a create in recently_deleted; a journaled ext4 skips the check)", dev)
		}
	} else {
		t.Note = fmt.Sprintf("WARNING: not ext4 but %s", t.FSType)
	}
	return t, nil
}

// TmpfsTarget mounts a fresh tmpfs on a directory under root when running
// as root, and otherwise uses a directory under /dev/shm.
func TmpfsTarget(root string) (*Target, error) {
	if os.Geteuid() != 0 {
		t, err := DirTarget(TargetTmpfs, "/dev/shm")
		if err != nil {
			return nil, err
		}
		t.Note = "a directory in /dev/shm (not root: cannot mount a tmpfs)"
		return t, nil
	}
	mnt, err := os.MkdirTemp(root, "tmpfs-")
	if err != nil {
		return nil, fmt.Errorf("tmpfs mountpoint: %w", err)
	}
	if err := syscall.Mount("computerfs-bench", mnt, "tmpfs", 0, "mode=0755"); err != nil {
		os.Remove(mnt)
		return nil, fmt.Errorf("mount -t tmpfs %s: %w", mnt, err)
	}
	t := &Target{Name: TargetTmpfs, Dir: mnt, Note: "a fresh tmpfs mount"}
	t.closers = append(t.closers, func() error { return os.Remove(mnt) }, func() error { return unmount(mnt) })
	if t.FSType, _, err = FSType(mnt); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// ComputerfsOptions configure ComputerfsTarget.
type ComputerfsOptions struct {
	FS     fs.Options
	Logger *slog.Logger
	// AllowOther mounts with allow_other and default_permissions, as
	// `computerfs mount` does when the container backend is installed:
	// the containers' root is an unprivileged host uid.
	AllowOther bool
}

// ComputerfsTarget opens a new workspace in a fresh directory under root
// and mounts it in this process. Close unmounts it, closes the workspace
// and removes both.
func ComputerfsTarget(root string, opts ComputerfsOptions) (*Target, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	dir, err := os.MkdirTemp(root, "computerfs-")
	if err != nil {
		return nil, fmt.Errorf("computerfs target: %w", err)
	}
	t := &Target{Name: TargetComputerfs}
	t.closers = append(t.closers, func() error { return removeAll(dir) })
	ws, mnt := filepath.Join(dir, "ws.cfs"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Close()
		return nil, fmt.Errorf("computerfs target: %w", err)
	}
	fopts := opts.FS
	if fopts.Logger == nil {
		fopts.Logger = log
	}
	if fopts.Limit == 0 {
		fopts.Limit = 1 << 40 // the scenarios write more than the default limit
	}
	// Governed as `computerfs mount` governs its runtime (internal/procs),
	// but only while a run on this target is under way (Target.enter):
	// the other targets, nopt1m served by this same process among them,
	// run with every P.
	var gov *procs.Governor
	if fopts.Heavy == nil {
		if gov = procs.New(log); gov != nil {
			fopts.Heavy = gov
		}
	}
	f, err := fs.Open(ws, fopts)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("computerfs target: %w", err)
	}
	t.closers = append(t.closers, func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close workspace %s: %w", ws, err)
		}
		return nil
	})
	// Mounted as `computerfs mount` mounts by default: without a
	// container backend, for its owner alone (no allow_other and
	// default_permissions).
	reads := &readObserver{}
	srv, err := fusefs.Mount(f, mnt, fusefs.Options{Logger: log, FsName: ws, AllowOther: opts.AllowOther, Observer: reads})
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("computerfs target: %w", err)
	}
	t.closers = append(t.closers, func() error {
		if err := srv.Unmount(); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return nil
	})
	t.Dir, t.FS, t.Workspace, t.Server, t.reads = mnt, f, ws, srv, reads
	t.Note = "a fresh workspace mounted in-process; store " + ws
	if gov != nil {
		t.enter, t.leave = gov.Start, gov.Stop
		t.Note += fmt.Sprintf("; GOMAXPROCS governed while its runs are under way (1, or %d while background work streams)", gov.Max())
	}
	if t.FSType, _, err = FSType(mnt); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func unmount(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		if lerr := syscall.Unmount(dir, syscall.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return nil
}

func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// ChooseScratch picks the directory under which the run keeps its inputs,
// the ext4 target and the computerfs store: explicit if given, otherwise
// the first of os.TempDir(), /var/tmp and the current directory that is on
// ext4 and on the disk holding the current directory. The note says what
// was chosen and why.
func ChooseScratch(explicit string) (dir, note string, err error) {
	if explicit != "" {
		name, _, err := FSType(explicit)
		if err != nil {
			return "", "", err
		}
		return explicit, fmt.Sprintf("scratch %s is on %s (given)", explicit, name), nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("current directory: %w", err)
	}
	var cwdDev uint64
	if st, err := os.Stat(cwd); err == nil {
		cwdDev = st.Sys().(*syscall.Stat_t).Dev
	}
	var fallback string
	for _, c := range []string{os.TempDir(), "/var/tmp", cwd} {
		st, err := os.Stat(c)
		if err != nil || !st.IsDir() {
			continue
		}
		name, _, err := FSType(c)
		if err != nil {
			continue
		}
		sameDisk := st.Sys().(*syscall.Stat_t).Dev == cwdDev
		if name == "ext4" && sameDisk {
			return c, fmt.Sprintf("scratch %s is on ext4 (statfs magic 0xEF53), the disk holding %s", c, cwd), nil
		}
		if name == "ext4" && fallback == "" {
			fallback = c
		}
	}
	if fallback != "" {
		return fallback, fmt.Sprintf("scratch %s is on ext4 (statfs magic 0xEF53), but not on the disk holding %s", fallback, cwd), nil
	}
	name, _, _ := FSType(cwd)
	return cwd, fmt.Sprintf("WARNING: no ext4 directory found; scratch %s is on %s", cwd, name), nil
}

// ext4Journal says whether the ext4 file system holding dir has a
// journal: the kernel lists a journaled one's device in /proc/fs/jbd2 as
// NAME-8. ok is false when that cannot be told (no /proc/fs/jbd2, or
// the device not found in the mount table).
func ext4Journal(dir string) (dev string, journal, ok bool) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", false, false
	}
	d := st.Sys().(*syscall.Stat_t).Dev
	want := fmt.Sprintf("%d:%d", (d>>8)&0xfff, (d&0xff)|((d>>12)&0xfff00))
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return "", false, false
	}
	for _, m := range mounts {
		if m.Dev == want && m.FSType == "ext4" {
			dev = filepath.Base(m.Source)
			break
		}
	}
	if dev == "" {
		return "", false, false
	}
	ents, err := os.ReadDir("/proc/fs/jbd2")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// No journaled file system is mounted at all (the
			// directory comes with the first).
			return dev, false, true
		}
		return "", false, false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), dev+"-") {
			return dev, true, true
		}
	}
	return dev, false, true
}
