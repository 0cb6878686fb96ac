// Package containerbackend is the container execution backend (ID
// "container"): each exec runs real binaries in its own runc container
// whose root is a small read-only directory with the host's /usr, /bin,
// /lib and /lib64 bind-mounted read-only, an /etc of its own (etc.go:
// passwd and group of the container's users, copies of the world-readable
// files a userland needs; never shadow, gshadow, sudoers, ssh keys or
// ssl/private), the workspace bind-mounted read-write at /workspace, a
// private tmpfs /tmp, /proc and a minimal /dev. The container has its own
// user, pid, mount, ipc, uts and network namespaces (loopback only),
// runc's default capabilities (of its user namespace), noNewPrivileges, a
// seccomp filter, and cgroup limits on memory, pids and CPU.
//
// # Users
//
// The container's user namespace maps container uids and gids
// 0..IDCount-1 to host ids HostIDBase..HostIDBase+IDCount-1 (0x70000000,
// 1879048192; see userns.go for why that range). So the container's root
// is host uid 1879048192: it has no privilege over the host's files, and
// a file that only the host's root may read (mode 0600 or 0640, uid 0) is
// unreadable even in the bound /usr; the bound host files show as owned
// by nobody (65534), the host's root being unmapped. Inside, `id` says
// root, and /etc/passwd lists root and nobody only.
//
// The workspace is an idmapped clone of the workspace's directory (the
// mount, or the policy's root below it), made at Configure with the same
// mapping: a file of host uid N shows in the container as uid N, so the
// files the other doors (the file API, the shell backend) make as uid 0
// are the container root's own, and what the container's root creates
// is stored as uid 0, as seen on the host and by every door. The mode
// bits are checked as everywhere else (the kernel's default_permissions;
// root in the container has no CAP_DAC_OVERRIDE, so a file of mode 0444
// is read-only to it). A uid the mapping does not cover shows as nobody.
//
// The daemon's FUSE mount must let the container's root in: without
// allow_other FUSE refuses every uid but its mounter's, and an idmapped
// clone of a FUSE mount needs the server to allow it (FUSE_ALLOW_IDMAP,
// Linux 6.12 or later) with default_permissions. fusefs does both with
// Options.AllowOther, and `computerfs mount` sets it by default
// (--allow-other auto) when the container backend is installed; with
// --allow-other no, or on an older kernel, Configure fails and says so.
// The cost: other host users then reach the mount, the kernel checking
// the files' modes (a workspace root of mode 0700, or a mountpoint in a
// directory of mode 0700, keeps them out), and the kernel asks for
// attributes once more after each change to a directory.
//
// The clone is taken once, of the directory itself: a directory of the
// path swapped for a symlink later changes nothing of what the containers
// get (each exec still refuses a workspace path that no longer resolves
// to itself, see checkWorkspace).
//
// # Path rules
//
// The policy's path rules (backends/policy.go, "paths") bind the
// container as they bind the other doors, and the backend itself knows
// nothing of them: what it clones is not the workspace's mount but a
// policy view of it, a second FUSE mount of the same store that the
// daemon serves under the container's rules (fusefs/rules.go), one per
// backend, mounted when the backend starts (backends.Options.ViewMount).
// In it a denied path does not exist: `cat .env` is ENOENT, `ls` and
// `find` do not list it, creating one or renaming onto one is EACCES,
// through any name (symlinks and ".." are resolved by the kernel, one
// lookup at a time, each checked); a read-only path refuses every change
// with EROFS, opening it for writing included, and so does a rename of a
// directory that holds a protected path (EACCES when what it holds is
// denied). The idmapped clone, the stage and the rest below are
// as for the plain mount. A backend with rules never gets the plain
// mount: without a way to make a view (no daemon mount), it does not
// start.
//
// The other way, checks in the one mount keyed by the caller (the
// container's cgroup or pid namespace), was not taken: the kernel caches
// entries, attributes, pages and negative lookups per mount, not per
// caller, so what one caller was shown would be shown to the next. A
// separate FUSE connection has caches of its own; the daemon tells every
// mount of the changes made through the others (fusefs.Options.Changed)
// and through the file API, so each sees the others' writes at once.
// What a view cannot know: a hard link made through another door gives
// a file a second name the view may allow; the view learns a file's
// paths as the kernel looks them up, and one whose every known name
// another door renamed away is read-only until looked up again. The
// .snapshots directory is not served in a view.
//
// # Host paths
//
// The binds' sources are in a stage: a tmpfs of the plugin's,
// /run/computerfs-stages/stage-<pid>-<tag> (StageDir; both of mode 0711:
// the mapped root must get through to the rootfs, so not under the
// StateDir, of mode 0700), holding the rootfs (a
// configured "rootfs" is bind-mounted there), a copy of the init binary
// and, under a directory only the host's root may enter, the workspace's
// clone. So the container's /proc/self/mountinfo shows /rootfs and /init
// of a tmpfs, not the state directory or the init's host path. What it
// still shows, because the kernel prints a mount's source and its root
// within its file system: the FUSE mount's source (its FsName: the
// store's path) and, for a workspace that is a directory of another file
// system or a policy root, its path within that file system; the host's
// block device and the /usr path for the userland binds.
//
// The stage's mounts are in a mount namespace of the plugin's own (one
// OS thread unshares it, a slave of the host's, and forks every `runc
// run`): the host's mount table never shows them, other host users
// cannot reach the workspace's clone through them, and a plugin killed
// with SIGKILL takes them with it (no dead mount holds the FUSE
// connection). On the host a stage is an empty directory, removed by
// Close or by the next plugin's start (never recursively).
//
// The unshare copies every mount the host has at that moment, other FUSE
// mounts included (another workspace's daemon, anyone's). A copy keeps
// its FUSE connection open, so the host's unmount of the original would
// wait forever for the connection to end. So right after the unshare the
// stage's thread lazily unmounts every FUSE mount of its namespace
// (detachFUSE), the workspace's own copy included: the workspace's
// clone is taken in the host's namespace and attached in the stage's.
// The one FUSE mount the stage holds is that clone, and Close detaches
// it; the daemon stops its backends before it unmounts the workspace.
//
// The control socket (fd 3) and the command's pipes are the plugin's:
// the pipes are given to the mapped root (fchown) so that a command can
// open /dev/stdout anew. With "network": "host" the container's
// CAP_NET_BIND_SERVICE is its user namespace's, not the host network's:
// ports below 1024 are refused there.
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
//     "proxy", with "proxy_socket" (both given by the runtime for a
//     policy's network allow-list, never by the policy itself), is
//     "none" plus a way out through the daemon's egress proxy: the
//     socket is bound in the stage, then by runc at /dev/.computerfs-proxy
//     in each container, whose init (--proxy) forwards 127.0.0.1:3128 to
//     it; HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their lower-case
//     forms) name that address, NO_PROXY loopback. Nothing else leaves
//     the namespace: no route, no DNS (the proxy resolves names).
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
// executable), copied into the stage at Configure and bind-mounted
// read-only at /dev/.computerfs-init. It sets
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
// State lives under /run/computerfs-container (runc's --root and the
// bundles) and /run/computerfs-stages, never on the FUSE mount. At start the backend deletes
// containers, bundles, stages, rootfs directories of older versions and
// cgroups left by plugin processes that are gone.
package containerbackend
