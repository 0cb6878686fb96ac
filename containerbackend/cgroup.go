package containerbackend

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupParent is the cgroup directory (relative to each hierarchy's root)
// under which every container gets <id>/ctr.
const cgroupParent = "computerfs-container"

// cgroupV2 reports whether /sys/fs/cgroup is the unified hierarchy.
func cgroupV2() bool {
	var st unix.Statfs_t
	return unix.Statfs(cgroupMount, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// CgroupsAvailable says whether the memory, pids and cpu controllers can
// be used, and why not.
func CgroupsAvailable() error {
	if cgroupV2() {
		b, err := os.ReadFile(filepath.Join(cgroupMount, "cgroup.controllers"))
		if err != nil {
			return err
		}
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !strings.Contains(" "+string(b)+" ", " "+c+" ") && !strings.Contains(string(b), c) {
				return errors.New("cgroup v2 without the " + c + " controller")
			}
		}
		return nil
	}
	for _, f := range []string{"memory/memory.limit_in_bytes", "pids/cgroup.procs", "cpu/cpu.cfs_quota_us"} {
		if _, err := os.Stat(filepath.Join(cgroupMount, f)); err != nil {
			return errors.New("cgroup v1 without " + f)
		}
	}
	return nil
}

// execCgroup is the parent cgroup of one container.
type execCgroup struct {
	v2  bool
	rel string // computerfs-container/<id>
	// v1: an eventfd registered for the parent's OOM notifications. The
	// v1 oom_kill counter is kept in the victim's own memcg (the leaf,
	// which runc removes), so the parent's counter stays 0.
	efd, ofd int
}

// memDir is the directory holding the parent's memory files.
func (c *execCgroup) memDir() string {
	if c.v2 {
		return filepath.Join(cgroupMount, c.rel)
	}
	return filepath.Join(cgroupMount, "memory", c.rel)
}

// setup creates the parent; on v1 it also holds the memory limit.
func (c *execCgroup) setup(memoryBytes int64) error {
	if err := os.MkdirAll(c.memDir(), 0o755); err != nil {
		return err
	}
	if c.v2 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.memDir(), "memory.limit_in_bytes"), []byte(strconv.FormatInt(memoryBytes, 10)), 0); err != nil {
		return err
	}
	c.efd, c.ofd = -1, -1
	ofd, err := unix.Open(filepath.Join(c.memDir(), "memory.oom_control"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ofd)
		return err
	}
	c.efd, c.ofd = efd, ofd
	return os.WriteFile(filepath.Join(c.memDir(), "cgroup.event_control"), []byte(fmt.Sprintf("%d %d", efd, ofd)), 0)
}

// oomKills reads the parent's OOM-kill counter.
func (c *execCgroup) oomKills() int64 {
	if !c.v2 {
		if c.efd < 0 {
			return 0
		}
		var buf [8]byte
		if n, err := unix.Read(c.efd, buf[:]); err != nil || n != 8 {
			return 0
		}
		return int64(binary.NativeEndian.Uint64(buf[:]))
	}
	name := "memory.oom_control"
	if c.v2 {
		name = "memory.events"
	}
	f, err := os.Open(filepath.Join(c.memDir(), name))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == "oom_kill" {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the parent (and a leftover ctr) in every hierarchy.
func (c *execCgroup) remove() {
	if !c.v2 && c.efd > 0 {
		unix.Close(c.efd)
		unix.Close(c.ofd)
		c.efd, c.ofd = -1, -1
	}
	removeCgroup(c.rel)
}

// removeCgroup removes rel/ctr and rel under every hierarchy mounted in
// /sys/fs/cgroup (or in the unified one).
func removeCgroup(rel string) {
	var roots []string
	if cgroupV2() {
		roots = []string{cgroupMount}
	} else {
		ents, _ := os.ReadDir(cgroupMount)
		for _, e := range ents {
			if e.IsDir() {
				roots = append(roots, filepath.Join(cgroupMount, e.Name()))
			}
		}
	}
	for _, r := range roots {
		os.Remove(filepath.Join(r, rel, "ctr"))
		os.Remove(filepath.Join(r, rel))
	}
}

// leftoverCgroups lists the <id>s under the parent in any hierarchy.
func leftoverCgroups() []string {
	seen := map[string]bool{}
	var out []string
	roots := []string{cgroupMount}
	if !cgroupV2() {
		ents, _ := os.ReadDir(cgroupMount)
		roots = nil
		for _, e := range ents {
			roots = append(roots, filepath.Join(cgroupMount, e.Name()))
		}
	}
	for _, r := range roots {
		ents, _ := os.ReadDir(filepath.Join(r, cgroupParent))
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	return out
}
