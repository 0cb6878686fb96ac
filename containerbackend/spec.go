package containerbackend

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// hostDirs are the host directories the container sees read-only. On a
// merged-/usr system (Debian 12) /bin, /lib, /lib64 and /sbin are
// symlinks into /usr: the rootfs gets the same symlinks instead of mounts.
var hostDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// emptyDirs are the mount points the rootfs holds besides hostDirs.
var emptyDirs = []string{"/proc", "/dev", "/tmp", "/workspace"}

// makeRootfs builds the read-only root: empty directories and symlinks
// only. It returns the host directories to bind-mount.
func makeRootfs(dir string) (binds []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, d := range emptyDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	for _, d := range hostDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue // absent on this host
		}
		dst := filepath.Join(dir, d)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, err
			}
			if cur, err := os.Readlink(dst); err == nil && cur == target {
				continue
			}
			os.Remove(dst)
			if err := os.Symlink(target, dst); err != nil {
				return nil, err
			}
		case fi.IsDir():
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, err
			}
			binds = append(binds, d)
		}
	}
	return binds, nil
}

// specParams is what varies between execs.
type specParams struct {
	rootfs      string
	binds       []string
	workspace   string // host path bind-mounted at /workspace
	args        []string
	env         map[string]string
	cwd         string // in the container
	memoryBytes int64  // 0: not in the spec (set on the parent cgroup)
	maxPids     int64
	cpuMillis   int64
	cgroupsPath string
}

var defaultCaps = []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}

func makeSpec(p specParams) *specs.Spec {
	env := make([]string, 0, len(p.env)+1)
	for k, v := range p.env {
		env = append(env, k+"="+v)
	}
	if _, ok := p.env["PATH"]; !ok {
		env = append(env, "PATH="+defaultPath)
	}
	sort.Strings(env)
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
	}
	for _, d := range p.binds {
		mounts = append(mounts, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	mounts = append(mounts,
		specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		specs.Mount{Destination: "/workspace", Type: "bind", Source: p.workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
	)
	period := uint64(100_000)
	quota := p.cpuMillis * int64(period) / 1000
	maxPids := p.maxPids
	res := &specs.LinuxResources{
		Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
		Pids:    &specs.LinuxPids{Limit: &maxPids},
		CPU:     &specs.LinuxCPU{Quota: &quota, Period: &period},
	}
	if p.memoryBytes > 0 {
		mem := p.memoryBytes
		res.Memory = &specs.LinuxMemory{Limit: &mem}
	}
	return &specs.Spec{
		Version: "1.0.2",
		Process: &specs.Process{
			Terminal: false,
			User:     specs.User{UID: 0, GID: 0},
			Args:     p.args,
			Env:      env,
			Cwd:      p.cwd,
			Capabilities: &specs.LinuxCapabilities{
				Bounding: defaultCaps, Effective: defaultCaps, Permitted: defaultCaps,
			},
			Rlimits:         []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: p.rootfs, Readonly: true},
		Hostname: "computerfs",
		Mounts:   mounts,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
			Resources:   res,
			CgroupsPath: p.cgroupsPath,
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (p specParams) String() string { return fmt.Sprint(p.args) }
