package main

import (
	"fmt"
	"strings"
)

// mount(8) and /etc/fstab. For a filesystem of type fuse.computerfs,
// mount(8) runs mount.fuse3 (installed as /sbin/mount.fuse by Debian's
// fuse3), which drops the options it handles itself (user, nouser, users,
// auto, noauto, nofail, _netdev), adds dev and suid unless nodev or nosuid
// was given, and runs, through /bin/sh -c,
//
//	computerfs SOURCE MOUNTPOINT -o OPTIONS
//
// with mount(8)'s environment less PATH (so sh's default search path,
// which has /usr/local/bin and /usr/bin), and waits for it: the mount must
// be live when it returns. So computerfs takes that command line itself
// (run sees it before looking up a command) and mounts as `mount --daemon`
// does; no mount.fuse.computerfs helper is needed in /sbin, and the same
// binary serves fstab, mount -t, systemd's mount units and the CLI.

// helperOptions are the options mount(8), mount.fuse3 or systemd give a
// helper that computerfs has nothing to do with: mount(8) and systemd
// act on them (noauto, nofail, _netdev, x-systemd.*, user...), or they
// are mount flags the daemon sets its own way whatever fstab says: the
// mount is always nodev and nosuid, rw and exec unless ro or noexec are
// given, and atime and sync are the filesystem's business (it commits in
// groups, fsync waits).
var helperOptions = map[string]bool{
	"defaults": true, "rw": true, "auto": true, "noauto": true, "nofail": true, "_netdev": true,
	"user": true, "nouser": true, "users": true, "owner": true, "group": true,
	"dev": true, "nodev": true, "suid": true, "nosuid": true, "exec": true,
	"atime": true, "noatime": true, "relatime": true, "strictatime": true, "nodiratime": true,
	"sync": true, "async": true,
}

// helperArgs recognizes mount.fuse3's command line: SOURCE MOUNTPOINT
// -o OPTIONS, or SOURCE MOUNTPOINT alone when SOURCE is a path with a
// slash (so that a mistyped command is not taken for a workspace).
func helperArgs(args []string) (src, mnt, opts string, ok bool) {
	if len(args) < 2 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[1], "-") {
		return "", "", "", false
	}
	for _, c := range commandNames() {
		if c == args[0] {
			return "", "", "", false
		}
	}
	switch {
	case len(args) == 4 && args[2] == "-o":
		return args[0], args[1], args[3], true
	case len(args) == 2 && strings.Contains(args[0], "/"):
		return args[0], args[1], "", true
	}
	return "", "", "", false
}

// helperMountArgs turns mount(8)'s options into mount's arguments: the
// mount starts as a daemon and the helper returns once it is live.
func helperMountArgs(src, mnt, opts string) ([]string, error) {
	out := []string{src, mnt, "--daemon"}
	var unknown []string
	for _, o := range strings.Split(opts, ",") {
		name, val, hasVal := strings.Cut(o, "=")
		switch {
		case o == "" || helperOptions[o]:
		case strings.HasPrefix(o, "x-") || name == "comment":
			// x-systemd.*, x-gvfs-* and the like are for other programs.
		case o == "allow_other":
			out = append(out, "--allow-other", "yes")
		case o == "create":
			out = append(out, "--create")
		case o == "debug":
			out = append(out, "--debug")
		case (name == "limit" || name == "memory-limit" || name == "memory_limit") && hasVal && val != "":
			out = append(out, "--"+strings.ReplaceAll(name, "_", "-"), val)
		case o == "ro":
			out = append(out, "--read-only")
		case o == "noexec":
			out = append(out, "--noexec")
		default:
			unknown = append(unknown, o)
		}
	}
	if len(unknown) > 0 {
		return nil, usageError{fmt.Errorf("unknown mount option %s (computerfs takes allow_other, ro, noexec, limit=SIZE, memory-limit=SIZE, create and debug, and ignores those mount(8) handles: defaults, rw, noauto, nofail, _netdev, x-*, user, nodev, nosuid, exec...)", strings.Join(unknown, ", "))}
	}
	return out, nil
}
