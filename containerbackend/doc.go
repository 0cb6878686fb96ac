// Package containerbackend is the container execution backend (ID
// "container"): each exec runs real binaries in its own runc container
// whose root is a small read-only directory with the host's /usr, /bin,
// /lib, /lib64 and /etc bind-mounted read-only, the workspace's FUSE
// mount (Config.MountPath) bind-mounted read-write at /workspace, a
// private tmpfs /tmp, /proc and a minimal /dev. The container has its own
// pid, mount, ipc, uts and network namespaces (loopback only), runc's
// default capabilities, noNewPrivileges, and cgroup limits on memory,
// pids and CPU.
//
// The backend drives the runc binary (Debian's runc package) with
// os/exec: `runc run --bundle DIR ID` in the foreground, with the
// process's stdio as pipes, then `runc delete --force ID` whatever
// happened. It does not link libcontainer: that needs cgo and pins a
// large dependency tree, and the runc CLI is a stable interface.
//
// Spec types: github.com/opencontainers/runtime-spec/specs-go (v1.3.0,
// served by the module proxy). It is the spec's own Go definition, has no
// dependencies and is what runc itself decodes, so hand-written structs
// would only risk drift. Fields newer than the installed runc (1.1.5,
// spec 1.0.2) are left unset, and runc ignores unknown fields anyway.
//
// OOM: runc removes the container's cgroup as soon as its init exits, so
// its counters cannot be read afterwards. The backend therefore puts each
// container's cgroup under a parent it owns
// (computerfs-container/<id>/ctr) and reads the OOM-kill counter of that
// parent after the run: on cgroup v1 the memory limit is set on the
// parent itself (v1 counters do not propagate upwards) and read from
// memory.oom_control; on cgroup v2 the limit is in the spec and the
// parent's memory.events (hierarchical) is read. The parent is removed
// after `runc delete`.
//
// State lives under /run/computerfs-container (runc's --root, bundles and
// the per-process rootfs), never on the FUSE mount. At start the backend
// deletes containers, bundles, rootfs directories and cgroups left by
// plugin processes that are gone.
package containerbackend
