package containerbackend

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The container's /etc is a directory of the rootfs, made at Configure:
// the host's /etc is not bound, so its secrets (shadow, gshadow, sudoers,
// ssh host keys, ssl/private, whatever root keeps there) are not in the
// container at all, whoever the container's processes are. It holds
// passwd and group files of the container's own users, and copies of
// what a userland needs from the host's: name resolution, the dynamic
// loader's cache, certificates, alternatives, time zone, shells'
// defaults. A copy, not a bind: nothing the host changes later shows,
// and no host path appears in the container's mount table for it.

// etcAllow lists what is copied from the host's /etc, as paths below it;
// a trailing "*" matches a prefix of the name (python3.11, java-17-...).
var etcAllow = []string{
	"hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "protocols", "services", "networks", "rpc",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates.conf", "ca-certificates",
	"alternatives", "localtime", "timezone", "os-release", "debian_version", "lsb-release", "issue",
	"bash.bashrc", "profile", "profile.d", "environment", "inputrc", "shells", "login.defs", "skel",
	"mime.types", "magic", "magic.mime", "terminfo", "gitconfig", "wgetrc", "npmrc", "nanorc", "vim",
	"python3*", "java-*", "perl", "gdb", "mercurial", "subversion", "fonts", "ImageMagick-*", "gnupg", "opt",
}

// etcDeny is never copied, even if an allowed directory holds it.
var etcDeny = []string{"shadow", "gshadow", "sudoers", "ssh", "ssl/private", "security", "opasswd", "krb5.keytab", "machine-id"}

// etcPasswd and etcGroup are the container's users: root (an
// unprivileged host uid, through the user namespace: see the package
// doc) and nobody.
const etcPasswd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
const etcGroup = "root:x:0:\nnogroup:x:65534:\n"

// maxEtcFile bounds one copied file (ld.so.cache is the largest, ~50 KiB
// on Debian 12).
const maxEtcFile = 8 << 20

// makeEtc fills dst (the rootfs's /etc) from the host's /etc (src).
func makeEtc(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for name, data := range map[string]string{"passwd": etcPasswd, "group": etcGroup, "hostname": "computerfs\n"} {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var names []string
	for _, a := range etcAllow {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), p) {
					names = append(names, e.Name())
				}
			}
			continue
		}
		names = append(names, a)
	}
	for _, n := range names {
		if err := copyEtc(src, dst, n); err != nil {
			return fmt.Errorf("copy /etc/%s: %w", n, err)
		}
	}
	return nil
}

func etcDenied(rel string) bool {
	for _, d := range etcDeny {
		if rel == d || strings.HasPrefix(rel, d+"/") || strings.HasPrefix(filepath.Base(rel), d) {
			return true
		}
	}
	return false
}

// copyEtc copies src/rel into dst/rel: directories, symlinks as they are
// (they point into /usr or within /etc), and regular files that anyone
// may read (a file only root may read is a secret, whatever its name).
func copyEtc(src, dst, rel string) error {
	root := filepath.Join(src, rel)
	if _, err := os.Lstat(root); err != nil {
		return nil // absent on this host
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := os.MkdirAll(filepath.Join(dst, dir), 0o755); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: left out
		}
		r, _ := filepath.Rel(src, p)
		if etcDenied(r) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out := filepath.Join(dst, r)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			return os.Symlink(target, out)
		case fi.IsDir():
			if fi.Mode().Perm()&0o005 != 0o005 {
				return filepath.SkipDir
			}
			return os.MkdirAll(out, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			if fi.Mode().Perm()&0o004 == 0 || fi.Size() > maxEtcFile {
				return nil
			}
			return copyFile(p, out, fi.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return nil
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxEtcFile)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
