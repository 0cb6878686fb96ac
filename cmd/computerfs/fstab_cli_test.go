package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHelperArgs(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		src, mnt, opt string
		ok            bool
	}{
		{args: []string{"/ws.cfs", "/mnt/ws", "-o", "rw,dev,suid"}, src: "/ws.cfs", mnt: "/mnt/ws", opt: "rw,dev,suid", ok: true},
		{args: []string{"ws.cfs", "/mnt/ws", "-o", "rw"}, src: "ws.cfs", mnt: "/mnt/ws", opt: "rw", ok: true},
		{args: []string{"/ws.cfs", "/mnt/ws"}, src: "/ws.cfs", mnt: "/mnt/ws", ok: true},
		{args: []string{"ws.cfs", "/mnt/ws"}},                 // a mistyped command, not a path
		{args: []string{"fsck", "/ws.cfs"}},                   // a command
		{args: []string{"limit", "/ws.cfs", "-o", "x"}},       // a command, whatever follows
		{args: []string{"/ws.cfs", "/mnt/ws", "--daemon"}},    // not mount.fuse3's form
		{args: []string{"-o", "rw", "/ws.cfs", "/mnt/ws"}},    // nor this
		{args: []string{"/ws.cfs"}},                           // too short
		{args: []string{"/ws.cfs", "/mnt", "-o", "a", "-t"}},  // too long
		{args: []string{"/ws.cfs", "--help", "-o", "rw,dev"}}, // a flag is no mountpoint
	} {
		src, mnt, opt, ok := helperArgs(tc.args)
		if ok != tc.ok || src != tc.src || mnt != tc.mnt || opt != tc.opt {
			t.Errorf("helperArgs(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.args, src, mnt, opt, ok, tc.src, tc.mnt, tc.opt, tc.ok)
		}
	}
}

func TestHelperMountArgs(t *testing.T) {
	base := []string{"/ws.cfs", "/mnt", "--daemon"}
	for _, tc := range []struct {
		opts    string
		want    []string // after base
		wantErr string
	}{
		{opts: "", want: nil},
		{opts: "rw,dev,suid", want: nil},
		{opts: "allow_other,limit=20G", want: []string{"--allow-other", "yes", "--limit", "20G"}},
		{opts: "defaults,_netdev,noauto,nofail,auto,user,nouser,users,rw,nodev,nosuid,dev,suid,exec,noatime,relatime,x-systemd.automount,x-systemd.requires=network-online.target,comment=systemd.automount", want: nil},
		{opts: "create,memory-limit=256M,memory_limit=300M,debug", want: []string{"--create", "--memory-limit", "256M", "--memory-limit", "300M", "--debug"}},
		{opts: "allow_other,bogus,limit=1G,other=2", wantErr: "unknown mount option bogus, other=2"},
		{opts: "limit=", wantErr: "unknown mount option limit="},
		{opts: "limit", wantErr: "unknown mount option limit"},
		{opts: "ro,noexec", want: []string{"--read-only", "--noexec"}},
	} {
		got, err := helperMountArgs("/ws.cfs", "/mnt", tc.opts)
		if tc.wantErr != "" {
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) {
				t.Errorf("-o %s: %v, %v; want a usage error with %q", tc.opts, got, err, tc.wantErr)
			}
			continue
		}
		if want := append(append([]string{}, base...), tc.want...); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("-o %s: %q, %v; want %q", tc.opts, got, err, want)
		}
	}
}

// TestMount8 mounts a workspace the way an operator does: mount(8) with
// -t fuse.computerfs, or a line of /etc/fstab. mount(8) runs
// mount.fuse3, which runs `computerfs SRC MNT -o OPTS` through sh with
// PATH unset (sh's default search path, /usr/local/sbin first), and
// waits for it. Each case runs in a mount namespace of its own, where the
// test binary's directory is bound over /usr/local/sbin and a test fstab
// over /etc/fstab, so that nothing of the machine's is touched. The
// daemon must be gone after umount(8), and the store clean.
func TestMount8(t *testing.T) {
	needFUSE(t)
	for _, prog := range []string{"mount", "umount", "unshare", "mount.fuse3"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s not installed (util-linux, fuse3): %v", prog, err)
		}
	}
	if fi, err := os.Stat("/usr/local/sbin"); err != nil || !fi.IsDir() {
		t.Skip("no /usr/local/sbin to bind the binary over")
	}
	binDir := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink: the daemon finds its plugins beside its real path.
	if err := os.Symlink(cfsBin, filepath.Join(binDir, "computerfs")); err != nil {
		t.Fatal(err)
	}
	const live = "allow_other,limit=20G,_netdev,noauto,nofail,x-systemd.automount,x-systemd.mount-timeout=30,defaults"
	for _, tc := range []struct {
		name   string
		init   bool   // computerfs init first
		fstab  string // options of an fstab line; mount(8) is then given the mountpoint alone
		mount  string // -o of mount -t fuse.computerfs
		ok     bool
		stderr string // what a refusal says
		ro     bool   // mounted read-only and noexec
	}{
		{name: "mount -t", init: true, mount: live + ",rw,nodev,nosuid,exec,noatime", ok: true},
		{name: "fstab, create", fstab: live + ",create", ok: true},
		{name: "missing without create", mount: live, stderr: "no computerfs workspace at"},
		{name: "unknown option", init: true, mount: live + ",colour=blue", stderr: "unknown mount option colour=blue"},
		{name: "read-only, noexec", init: true, fstab: "ro,noexec,allow_other", ok: true, ro: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws, mnt := tempWorkspace(t)
			if tc.init {
				mustCLI(t, home, "init", ws)
			}
			cmd := []string{"mount", "-t", "fuse.computerfs", ws, mnt, "-o", tc.mount}
			env := []string{"BIN=" + binDir, "MNT=" + mnt}
			if tc.fstab != "" {
				fstab := filepath.Join(t.TempDir(), "fstab")
				line := ws + " " + mnt + " fuse.computerfs " + tc.fstab + " 0 0\n"
				if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd = []string{"mount", mnt}
				env = append(env, "FSTAB="+fstab)
			}
			out, pid := mount8(t, home, env, cmd)
			if !tc.ok {
				if !strings.Contains(out, "mount-rc=") || strings.Contains(out, "mount-rc=0\n") || !strings.Contains(out, tc.stderr) {
					t.Fatalf("want the mount refused with %q:\n%s", tc.stderr, out)
				}
				if pid != 0 {
					t.Errorf("a daemon (%d) started for a refused mount:\n%s", pid, out)
				}
				return
			}
			wants := []string{
				"mount-rc=0\n",
				"mountinfo: ", " - fuse.computerfs " + ws + " ", "allow_other",
				"read: through mount(8)\n",
				"umount-rc=0\n",
			}
			if tc.ro {
				// The write is refused; the mount is noexec, its superblock ro.
				wants = []string{"mount-rc=0\n", " - fuse.computerfs " + ws + " ro,", "noexec", "Read-only file system", "umount-rc=0\n"}
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in the output:\n%s", want, out)
				}
			}
			if pid == 0 {
				t.Fatalf("mount(8) did not print the daemon's pid:\n%s", out)
			}
			if !waitGone(pid, 10*time.Second) {
				t.Fatalf("daemon %d still running 10s after umount(8):\n%s", pid, out)
			}
			if !tc.init && !strings.Contains(out, "computerfs: created workspace "+ws+" (limit 20.0 GiB)") {
				t.Errorf("-o create did not say it created the workspace:\n%s", out)
			}
			fsckClean(t, home, ws)
			if tc.ro {
				if r := cli(t, home, "fs", "cat", "-w", ws, "/f"); r.code != exitFailed {
					t.Errorf("the read-only mount wrote /f: %v", r)
				}
				return
			}
			if r := mustCLI(t, home, "fs", "cat", "-w", ws, "/f"); r.stdout != "through mount(8)\n" {
				t.Errorf("fs cat /f: %q", r.stdout)
			}
			if r := mustCLI(t, home, "limit", ws); !strings.HasPrefix(r.stdout, "limit 20.0 GiB") {
				t.Errorf("limit=20G: %s", r.stdout)
			}
		})
	}
}

var helperDaemon = regexp.MustCompile(`computerfs: daemon (\d+) serving`)

// mount8 runs cmd (mount(8)) in a new mount namespace where BIN is bound
// over /usr/local/sbin (and FSTAB over /etc/fstab); when it mounts, it
// writes and reads a file through the mount and unmounts with umount(8).
// It returns the output and the pid of the daemon mount(8) started (0 if
// none), which cleanup kills if it is still there.
func mount8(t *testing.T, home string, env, cmd []string) (string, int) {
	t.Helper()
	const script = `
mount --bind "$BIN" /usr/local/sbin || exit 1
if [ -n "${FSTAB:-}" ]; then mount --bind "$FSTAB" /etc/fstab || exit 1; fi
"$@" 2>&1
echo "mount-rc=$?"
grep -q " $MNT " /proc/self/mountinfo || exit 0
grep " $MNT " /proc/self/mountinfo | sed 's/^/mountinfo: /'
echo 'through mount(8)' > "$MNT/f" && sed 's/^/read: /' "$MNT/f"
umount "$MNT" 2>&1
echo "umount-rc=$?"
`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, cmd...)...)
	c.Env = append(append(os.Environ(), "COMPUTERFS_HOME="+home), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	pid := 0
	if m := helperDaemon.FindStringSubmatch(out.String()); m != nil {
		pid, _ = strconv.Atoi(m[1])
		// The daemon holds the namespace, and the mount with it, until
		// it exits.
		t.Cleanup(func() {
			if processAlive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				if !waitGone(pid, 20*time.Second) {
					t.Errorf("daemon %d survived SIGKILL", pid)
				}
			}
		})
	}
	if err != nil {
		t.Fatalf("unshare ... %s: %v\n%s", strings.Join(cmd, " "), err, out.String())
	}
	noCrash(t, result{stdout: out.String()}, cmd...)
	return out.String(), pid
}
