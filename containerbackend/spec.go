package containerbackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// hostDirs are the host directories the container sees read-only. On a
// merged-/usr system (Debian 12) /bin, /lib, /lib64 and /sbin are
// symlinks into /usr: the rootfs gets the same symlinks instead of mounts.
// /etc is not one of them: see etc.go.
var hostDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

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
	if err := makeEtc("/etc", filepath.Join(dir, "etc")); err != nil {
		return nil, fmt.Errorf("/etc: %w", err)
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

// userland is a configured root ("rootfs" setting): a directory, or an
// OCI bundle (config.json and rootfs/).
type userland struct {
	root string // the directory that becomes /
	path string // PATH when the exec sets none
}

// loadUserland checks the "rootfs" setting: an absolute path to an
// existing directory. A bundle's config.json gives the default PATH.
func loadUserland(dir string) (*userland, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%q is not an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	u := &userland{root: real, path: defaultPath}
	cfg := filepath.Join(real, "config.json")
	if fi, err := os.Stat(filepath.Join(real, "rootfs")); err != nil || !fi.IsDir() {
		return u, nil
	}
	js, err := os.ReadFile(cfg)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil // a plain root that happens to have a rootfs directory
	}
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(js, &spec); err != nil {
		return nil, fmt.Errorf("OCI bundle %s: %w", cfg, err)
	}
	u.root = filepath.Join(real, "rootfs")
	// The bundle's own root.path is not followed: a bundle's rootfs is
	// rootfs/ by convention, and the rest of its config is not ours to
	// apply (its mounts, namespaces and capabilities are the policy's).
	if spec.Process != nil {
		for _, kv := range spec.Process.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				u.path = v
			}
		}
	}
	return u, nil
}

// mountPoints makes the directories the container's mounts need in the
// root. Runc would create missing ones itself, in the configured
// directory on the host, before it makes the root read-only; doing it
// here turns a root where they cannot exist (a file in their place, a
// read-only file system) into a clear Configure error.
func (u *userland) mountPoints(extra []string) error {
	for _, d := range append(append([]string(nil), emptyDirs...), extra...) {
		p := filepath.Join(u.root, d)
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			// A symlink too: runc would resolve it inside the root, and
			// a mount point is no place for that.
			return fmt.Errorf("mount point %s in %s: not a directory (a file or symlink is in its place)", d, u.root)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("mount point %s in %s cannot be made: %w", d, u.root, err)
		}
	}
	return nil
}

// checkWorkspace checks, before each exec, that the workspace directory
// (the mount, or the policy root below it) still resolves to itself: a
// directory on the path below the mount could have been swapped for a
// symlink since Configure. The containers do not follow it (their
// /workspace is the stage's clone of the directory, taken at Configure),
// but an exec on a workspace whose path now names another directory is
// refused rather than run on the old one unnoticed.
func checkWorkspace(dir string) error {
	got, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", dir, err)
	}
	if got != dir {
		return fmt.Errorf("workspace %s now resolves to %s (a symlink in its path): refused", dir, got)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("workspace %s: not a directory", dir)
	}
	return nil
}

// specParams is what varies between execs.
type specParams struct {
	rootfs      string
	binds       []string
	extraBinds  []string // read-only, after the workspace
	workspace   string   // host path bind-mounted at /workspace (the stage's clone)
	workspaceRO bool
	init        string              // host path of the init binary; "": none
	hostNetwork bool                // no network namespace
	proxy       string              // the egress proxy's socket, bound at proxyPath ("": none)
	seccomp     *specs.LinuxSeccomp // nil: none
	defaultPath string              // PATH when env has none ("": defaultPath)
	args        []string
	env         map[string]string
	cwd         string // in the container
	memoryBytes int64  // 0: not in the spec (set on the parent cgroup)
	maxPids     int64
	cpuMillis   int64
	cgroupsPath string
}

var defaultCaps = []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}

// envList is the process environment: env, with a PATH.
func (p specParams) envList() []string {
	env := make([]string, 0, len(p.env)+1)
	for k, v := range p.env {
		env = append(env, k+"="+v)
	}
	if _, ok := p.env["PATH"]; !ok {
		pathEnv := p.defaultPath
		if pathEnv == "" {
			pathEnv = defaultPath
		}
		env = append(env, "PATH="+pathEnv)
	}
	sort.Strings(env)
	return env
}

func makeSpec(p specParams) *specs.Spec {
	env := p.envList()
	rw := "rw"
	if p.workspaceRO {
		rw = "ro"
	}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
	}
	args := p.args
	if p.init != "" {
		mounts = append(mounts, specs.Mount{Destination: initPath, Type: "bind", Source: p.init, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		// The command comes on the control socket (fd 3, see package containerinit).
		args = []string{initPath, InitArg, "--control", "3"}
		if p.proxy != "" {
			mounts = append(mounts, specs.Mount{Destination: proxyPath, Type: "bind", Source: p.proxy, Options: []string{"bind", "nosuid", "nodev", "noexec"}})
			args = []string{initPath, InitArg, "--proxy", proxyPath, "--control", "3"}
		}
	}
	for _, d := range p.binds {
		mounts = append(mounts, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	mounts = append(mounts,
		specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		// Not rbind: the stage's clone of the workspace has no submounts.
		specs.Mount{Destination: "/workspace", Type: "bind", Source: p.workspace, Options: []string{"bind", rw, "nosuid", "nodev"}},
	)
	for _, d := range p.extraBinds {
		mounts = append(mounts, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
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
	namespaces := []specs.LinuxNamespace{{Type: specs.PIDNamespace}}
	if !p.hostNetwork {
		namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.IPCNamespace},
		specs.LinuxNamespace{Type: specs.UTSNamespace}, specs.LinuxNamespace{Type: specs.MountNamespace},
		specs.LinuxNamespace{Type: specs.UserNamespace})
	return &specs.Spec{
		Version: "1.0.2",
		Process: &specs.Process{
			Terminal: false,
			User:     specs.User{UID: 0, GID: 0},
			Args:     args,
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
			Namespaces:  namespaces,
			UIDMappings: idMappings(),
			GIDMappings: idMappings(),
			Seccomp:     p.seccomp,
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
