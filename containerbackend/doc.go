// Package containerbackend is the container execution backend (ID
// "container"): each exec runs real binaries in its own runc container
// whose root is a small read-only directory with the host's /usr, /bin,
// /lib and /lib64 bind-mounted read-only, an /etc of its own (etc.go:
// passwd and group of the container's users, copies of the world-readable
// files a userland needs; never shadow, gshadow, sudoers, ssh keys or
// ssl/private), the workspace's FUSE
// mount (Config.MountPath) bind-mounted read-write at /workspace, a
// private tmpfs /tmp, /proc and a minimal /dev. The container has its own
// pid, mount, ipc, uts and network namespaces (loopback only), runc's
// default capabilities, noNewPrivileges, a seccomp filter, and cgroup
// limits on memory, pids and CPU.
//
// # What is not confined yet
//
// The container's root is the host's root (uid 0, no user namespace),
// with three capabilities (audit write, kill, bind to low ports) and no
// CAP_DAC_OVERRIDE. So a root-only file inside the bound /usr and /lib
// (none on Debian 12's stock image) would be readable. A user namespace
// mapping the container's root to an unprivileged host uid needs the
// workspace mount to let that uid in: FUSE refuses every uid but the
// mounter's without allow_other, and with allow_other and
// default_permissions the mapped root could not write the files the
// other doors create as uid 0. A gate in the daemon (allow_other for
// the kernel, requests from other uids refused by the server) does not
// hold: the kernel answers cached lookups, attributes and pages without
// a request, so another user reads what was read before (tried and
// measured). The way through is an idmapped bind of
// the FUSE mount (FUSE_ALLOW_IDMAP, kernel 6.12+) for the container, or
// the daemon owning the workspace's files under the mapped uid. Also,
// /proc/self/mountinfo shows the bind sources (the mountpoint, the
// rootfs and init paths) and the mount's source, the store's path.
//
// # Settings
//
// The policy's settings for the backend (policy.json:
// {"backends": {"container": {"settings": {...}}}}) arrive in Configure;
// an unknown key or value is a Configure error, so the plugin does not
// start.
//
//   - "network": "none" (the default) gives each container a network
//     namespace of its own with loopback only. "host" leaves it in the
//     host's: it reaches what the host reaches, its 127.0.0.1 included,
//     and can listen on the host's ports (below 1024 too: it keeps
//     CAP_NET_BIND_SERVICE) and reach the host's abstract unix sockets.
//   - "rootfs": an absolute path to an existing directory that becomes the
//     container's read-only root in place of the host's userland binds.
//     If it is an OCI bundle (config.json and a rootfs/ directory), its
//     rootfs/ is the root, and the PATH of its config's process.env, if
//     any, is the default PATH; nothing else of the bundle's config is
//     applied. /workspace, /tmp, /proc and /dev are mounted as always:
//     runc would create missing mount points in the directory itself (it
//     makes the root read-only only after its mounts), so Configure makes
//     them, and fails if it cannot or if a file or symlink is in their
//     place. Scripts (kind "script") need /bin/bash in that root; argv
//     execs need only their program.
//   - "pool": how many warm containers to keep started ahead (0 to 8,
//     default 1; see Warm containers below).
//   - "seccomp": "default" (the default) installs a profile that allows
//     every system call but those a workload never needs, which fail with
//     EPERM: loading kernel code (kexec_*, *_module), bpf,
//     perf_event_open, the keyrings (keyctl, add_key, request_key),
//     open_by_handle_at, reboot, swap, acct, setting the clocks, syslog,
//     iopl/ioperm, quotactl, userfaultfd, mount and the new mount API,
//     pivot_root, and namespaces (unshare, setns, and clone with a
//     CLONE_NEW* flag); clone3 fails with ENOSYS so that libc falls back
//     to clone, whose flags the filter can see. personality stays
//     allowed. It covers the host's compat ABIs too (x86 and x32 on
//     x86_64, arm on arm64). If runc cannot filter (`runc features` says
//     so, or runc predates it), Configure fails and says to set "off".
//     "off" installs none.
//   - "read_only": "true" mounts /workspace read-only. The runtime sets it
//     from the policy's read_only; the policy's root arrives as the mount
//     path itself (the root's directory of the mount). A policy root is a
//     path below the FUSE mount, which the workspace's users can change:
//     each exec checks that the path still resolves to itself (no symlink
//     swapped in) before it starts runc, which resolves it again tens of
//     milliseconds later.
//
// The backend drives the runc binary (Debian's runc package) with
// os/exec: `runc run --bundle DIR ID` in the foreground, a child of the
// plugin, then `runc delete --force ID` if runc left the container behind
// (it deletes it itself when it sees it exit). It does not link
// libcontainer: that needs cgo and pins a large dependency tree, and the
// runc CLI is a stable interface.
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
// Init: each container's PID 1 is computerfs-container-init (package
// containerinit; the plugin finds it beside itself, else uses its own
// executable), bind-mounted read-only at /dev/.computerfs-init. It sets
// a parent-death signal, runs the command in its own process group,
// forwards SIGTERM, SIGINT and the like to that group, reaps orphans and
// exits with the command's status. runc itself runs with a parent-death
// signal too, so a plugin killed with SIGKILL, or its daemon, takes its
// containers' processes with it at once; what is left on disk (runc
// state, bundle, cgroups) is swept by the next plugin start. A plain
// `sleep` as PID 1 would ignore the timeout's SIGTERM and wait out the
// grace period. Without an init (Init empty, or a configured rootfs it
// cannot run in) the command is PID 1 and runc's stdio is its own.
//
// Warm containers: with an init, a container starts before its command
// is known. `runc run` starts the init with one end of a control socket
// (fd 3, --preserve-fds); the init says "ready", then receives one JSON
// line with the command's argv, environment and directory together with
// its stdin, stdout and stderr (SCM_RIGHTS: runc never holds them), then
// "signal N" lines to forward; it answers "exit N" when the command is
// over. So an exec's output ends and its exit is known when the command
// ends, not when runc has torn the container down (~0.1 s here): that
// teardown, and the removal of the bundle and cgroups, finish in the
// background, and Close waits for them. The backend keeps a pool of
// ready containers (setting "pool", default 1, 0 to turn it off) made
// with the default limits; an exec with those limits takes one and skips
// runc's creation of namespaces, mounts and cgroups, and its replacement
// starts once the exec is done. An exec with other limits, or with no
// warm container ready, starts its own the same way. A warm container is
// an init sleeping on a socket: a few MiB of memory.
//
// State lives under /run/computerfs-container (runc's --root, bundles and
// the per-process rootfs), never on the FUSE mount. At start the backend
// deletes containers, bundles, rootfs directories and cgroups left by
// plugin processes that are gone.
package containerbackend
