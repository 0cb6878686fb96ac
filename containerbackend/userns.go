package containerbackend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/computerfs/computerfs/internal/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The container's users are those of a user namespace of its own:
// container ids 0..IDCount-1 are host ids HostIDBase..HostIDBase+IDCount-1
// (uids and gids alike). The container's root is host uid HostIDBase: it
// has no privilege over anything of the host's, and a file that only the
// host's root may read stays unreadable even where it is bound in.
//
// 0x70000000 is clear of the subordinate ids useradd hands out
// (SUB_UID_MIN 100000 to SUB_UID_MAX 600100000), of systemd's container
// ranges (524288 to 1879048191) and of the 32-bit sign bit.
const (
	HostIDBase uint32 = 0x70000000 // 1879048192
	IDCount    uint32 = 65536
)

func idMappings() []specs.LinuxIDMapping {
	return []specs.LinuxIDMapping{{ContainerID: 0, HostID: HostIDBase, Size: IDCount}}
}

// stage is a private tmpfs of the plugin's, StageDir/stage-<pid>-<tag>, that
// holds what the containers' binds come from: the rootfs, a copy of the
// init binary and the idmapped clone of the workspace. Bind sources in a
// tmpfs of its own show in the containers' mountinfo as /rootfs, /init
// and /ws, not as host paths.
//
// The stage's mounts are in a mount namespace of the plugin's own: one
// OS thread unshares it (a slave of the host's: the host's mounts and
// unmounts reach it, its own mounts go nowhere), makes the stage's
// mounts and forks every `runc run`, whose containers start from it. So
// the host's mount table never shows the stage, other host users cannot
// reach its workspace clone, and when the plugin dies (SIGKILL included)
// the namespace and its mounts go with it: no dead mount is left holding
// the FUSE connection. On the host, the stage is an empty directory.
type stage struct {
	dir string
	ns  *mountNS
}

// mountNS is an OS thread in a mount namespace of its own, running
// functions.
type mountNS struct {
	work chan func()
}

func newMountNS() (*mountNS, error) {
	m := &mountNS{work: make(chan func())}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, and takes
		// the namespace with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("unshare the mount namespace: %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			errc <- fmt.Errorf("make the mount namespace a slave: %w", err)
			return
		}
		if err := detachFUSE(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for f := range m.work {
			f()
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return m, nil
}

// detachFUSE lazily unmounts, in the calling thread's mount namespace,
// every FUSE mount that the unshare copied from the host's. A copy keeps
// its FUSE connection open: the host's unmount of the original would
// then wait for the filesystem's daemon (ours or anyone's) to see the
// connection end, which it never would while the plugin lives. Mounts
// made on the host later are not copied (or, from a shared host mount,
// are propagated in and unmounted with the original).
func detachFUSE() error {
	mounts, err := mountinfo.Read("/proc/thread-self/mountinfo")
	if err != nil {
		return fmt.Errorf("the plugin's mount namespace: %w", err)
	}
	// Deepest first, though a lazy unmount takes submounts along.
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Point) > len(mounts[j].Point) })
	for _, m := range mounts {
		if !isFUSE(m.FSType) {
			continue
		}
		if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			// EINVAL, ENOENT: gone with a parent already.
			return fmt.Errorf("detach the copy of FUSE mount %s from the plugin's mount namespace: %w", m.Point, err)
		}
	}
	return nil
}

func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.") || strings.HasPrefix(fstype, "fuseblk.")
}

// do runs f on the namespace's thread.
func (m *mountNS) do(f func() error) error {
	errc := make(chan error, 1)
	m.work <- func() { errc <- f() }
	return <-errc
}

// close ends the thread. Processes it forked with a parent-death signal
// (runc) get it.
func (m *mountNS) close() { close(m.work) }

func (s *stage) rootfs() string { return filepath.Join(s.dir, "rootfs") }
func (s *stage) init() string   { return filepath.Join(s.dir, "init") }
func (s *stage) ws() string     { return filepath.Join(s.dir, "priv", "ws") }

const stagePrefix = "stage-"

// StageDir holds the stages of every backend, whatever its StateDir: the
// container's root must get through every directory above its rootfs,
// which a StateDir of mode 0700 (or one under a test's temporary
// directory) would not let it do. Outside the StateDir, a stage is also
// out of reach of whoever removes that directory recursively (which
// would descend into the workspace's clone).
const StageDir = "/run/computerfs-stages"

// stageRoot is StageDir, made if need be with mode 0711 (search only).
func stageRoot() (string, error) {
	if err := os.MkdirAll(StageDir, 0o711); err != nil {
		return "", err
	}
	return StageDir, os.Chmod(StageDir, 0o711)
}

// newStage mounts the stage's tmpfs (a fresh one: a previous Configure's
// is unmounted first).
func newStage(tag uint32) (*stage, error) {
	root, err := stageRoot()
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	s := &stage{dir: filepath.Join(root, fmt.Sprintf("%s%d-%08x", stagePrefix, os.Getpid(), tag))}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	if s.ns, err = newMountNS(); err != nil {
		os.Remove(s.dir)
		return nil, err
	}
	err = s.ns.do(func() error {
		// No nosuid or nodev: a remount in the container's user
		// namespace (runc's read-only root) could not drop them, and
		// the binds add their own.
		if err := unix.Mount("tmpfs", s.dir, "tmpfs", 0, "mode=0711,size=64m"); err != nil {
			return fmt.Errorf("stage tmpfs %s: %w", s.dir, err)
		}
		return unix.Mount("", s.dir, "", unix.MS_PRIVATE, "")
	})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// start starts cmd from the stage's mount namespace.
func (s *stage) start(cmd *exec.Cmd) error {
	return s.ns.do(cmd.Start)
}

// makeRootfs builds the host userland's root in the stage.
func (s *stage) makeRootfs() (binds []string, err error) {
	err = s.ns.do(func() error {
		binds, err = makeRootfs(s.rootfs())
		return err
	})
	return binds, err
}

// unmountStage detaches a stage with everything mounted under it (the
// workspace's clone first) and removes its directory. It never removes
// files below a mount: os.Remove of the then empty directory only.
func unmountStage(dir string) {
	unix.Unmount(filepath.Join(dir, "priv", "ws"), unix.MNT_DETACH)
	for unix.Unmount(dir, unix.MNT_DETACH) == nil {
	}
	// Empty directories only, should a stage be no mount.
	for _, d := range []string{filepath.Join(dir, "priv", "ws"), filepath.Join(dir, "priv"), dir} {
		os.Remove(d)
	}
}

func (s *stage) close() {
	if s == nil {
		return
	}
	if s.ns != nil {
		s.ns.do(func() error { unmountStage(s.dir); return nil })
		s.ns.close()
	}
	unmountStage(s.dir) // the empty directory on the host
}

// bindRootfs binds a configured root at the stage's rootfs.
func (s *stage) bindRootfs(dir string) error {
	return s.ns.do(func() error { return s.bindRootfsNS(dir) })
}

func (s *stage) bindRootfsNS(dir string) error {
	if err := os.MkdirAll(s.rootfs(), 0o755); err != nil {
		return err
	}
	if err := unix.Mount(dir, s.rootfs(), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s into the stage: %w", dir, err)
	}
	return nil
}

// copyInit puts a copy of the init binary in the stage.
func (s *stage) proxy() string { return filepath.Join(s.dir, "proxy.sock") }

// bindProxy binds the egress proxy's socket sock (a host path in a
// directory the container's root cannot search) at the stage's proxy(),
// whence runc binds it into each container.
func (s *stage) bindProxy(sock string) error {
	return s.ns.do(func() error {
		fi, err := os.Stat(sock)
		if err != nil {
			return err
		}
		if fi.Mode().Type() != os.ModeSocket {
			return fmt.Errorf("%s is not a socket", sock)
		}
		f, err := os.OpenFile(s.proxy(), os.O_WRONLY|os.O_CREATE, 0o444)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount(sock, s.proxy(), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", sock, err)
		}
		return nil
	})
}

func (s *stage) copyInit(src string) error {
	return s.ns.do(func() error { return s.copyInitNS(src) })
}

func (s *stage) copyInitNS(src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(s.init(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o555)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// mountWorkspace mounts at the stage's ws an idmapped clone of the
// workspace directory: a file of host uid N shows there as uid
// HostIDBase+N, so the container's root (host HostIDBase) owns the files
// the host's root owns, and what it creates is stored as uid 0. The
// clone is of the directory itself, taken now: a symlink swapped into
// the path later changes nothing of what the containers get.
//
// The clone is taken in the host's mount namespace (the calling
// goroutine's thread is never the stage's, which runs nothing else), where
// the workspace's mount is, and attached in the stage's, which holds no
// copy of any FUSE mount (detachFUSE).
func (s *stage) mountWorkspace(dir string) error {
	if err := checkMountLetsIn(dir); err != nil {
		return err
	}
	nsfd, err := userNamespaceFd()
	if err != nil {
		return fmt.Errorf("a user namespace for the workspace's id mapping: %w", err)
	}
	defer unix.Close(nsfd)
	tfd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone the workspace mount %s: %w", dir, err)
	}
	// Closing the descriptor of a clone never attached unmounts it.
	defer unix.Close(tfd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(nsfd)}
	if err := unix.MountSetattr(tfd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("workspace %s cannot be id-mapped for the container's user namespace (%w): "+
			"a FUSE workspace needs Linux 6.12 or later and a mount with allow_other "+
			"(computerfs mount --allow-other yes, the default when the container backend is installed)", dir, err)
	}
	return s.ns.do(func() error {
		if err := os.MkdirAll(filepath.Dir(s.ws()), 0o700); err != nil {
			return err
		}
		if err := os.MkdirAll(s.ws(), 0o755); err != nil {
			return err
		}
		if err := unix.MoveMount(tfd, "", unix.AT_FDCWD, s.ws(), unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach the workspace's clone: %w", err)
		}
		return nil
	})
}

// userNamespaceFd returns a file descriptor of a user namespace with the
// containers' mapping: that of a process started in a new one, which is
// killed once the namespace is held.
func userNamespaceFd() (int, error) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		for _, p := range []string{"/usr/bin/sleep", "/bin/sleep"} {
			if _, e := os.Stat(p); e == nil {
				sleep, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return -1, err
	}
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(HostIDBase), Size: int(IDCount)}}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	return unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// checkMountLetsIn fails if dir is on a FUSE mount that refuses every
// uid but its mounter's (no allow_other): the container's root, host uid
// HostIDBase, would get EACCES on every access.
func checkMountLetsIn(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("workspace %s: %w", dir, err)
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		return nil
	}
	var fi unix.Stat_t
	if err := unix.Stat(dir, &fi); err != nil {
		return fmt.Errorf("workspace %s: %w", dir, err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(fi.Dev), unix.Minor(fi.Dev))
	mounts, err := mountinfo.Read("/proc/thread-self/mountinfo")
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if m.Dev != dev {
			continue
		}
		if !mountinfo.HasOption(m.Super, "allow_other") {
			return fmt.Errorf("workspace mount %s refuses the container's user namespace: a FUSE mount without allow_other "+
				"lets its mounter alone in, and the container's root is host uid %d; mount it with --allow-other yes "+
				"(the default when the container backend is installed)", dir, HostIDBase)
		}
		return nil
	}
	return errors.New("workspace mount " + dir + ": not in /proc/thread-self/mountinfo")
}

// chownToRoot gives the container's root the pipes of its stdio: a
// command that opens /dev/stdout (/proc/self/fd/1) anew is checked
// against the pipe's owner.
func chownToRoot(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Chown(int(HostIDBase), int(HostIDBase))
		}
	}
}
