package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/computerfs/computerfs/internal/mountinfo"
	"github.com/computerfs/computerfs/internal/procmaps"
)

// Making another process's store cold.
//
// A workspace served by a daemon the bench did not start (a --target
// mount, such as an older build's `computerfs mount --daemon`) cannot be
// asked to drop its caches, and drop_caches is not enough: the kernel
// never drops page-cache pages that a process has mapped, and a store
// read through bbolt's map keeps every page it ever read mapped until
// bbolt remaps. Such a daemon's "cold" reads were served from memory
// (e3fc558 read 0 bytes from the disk in every counted round of
// read-64m-cold, while main, which preads bodies, read all 64 MiB).
// coldMountStore pages the daemon's map of its store out from outside,
// with process_madvise(MADV_PAGEOUT), which unmaps the pages and frees
// them from the page cache, then drops the file's remaining cached pages
// with fadvise(DONTNEED); drop_caches follows as for every target.

// mountSource returns the mount point and source of the mount holding
// dir, from /proc/self/mountinfo (the longest mount point that is a
// prefix of dir's resolved path).
func mountSource(dir string) (mountPoint, fstype, source string, err error) {
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 2 {
			continue
		}
		mp := mountinfo.Unescape(pf[4])
		if mp != "/" && abs != mp && !strings.HasPrefix(abs, mp+"/") {
			continue
		}
		if len(mp) >= len(mountPoint) { // later mounts hide earlier ones on the same point
			mountPoint, fstype, source = mp, qf[0], mountinfo.Unescape(qf[1])
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", "", fmt.Errorf("read mountinfo: %w", err)
	}
	if mountPoint == "" {
		return "", "", "", fmt.Errorf("no mount holds %s", abs)
	}
	return mountPoint, fstype, source, nil
}

// fileMapping is a range of a process's address space that maps a file.
type fileMapping struct {
	pid int
	procmaps.Mapping
}

// mappingsOf lists every mapping of the file with the given device and
// inode in every process (/proc/PID/maps), skipping processes that are
// gone or unreadable.
func mappingsOf(dev, ino uint64) ([]fileMapping, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []fileMapping
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		ms, err := procmaps.Of(ent.Name(), dev, ino)
		if err != nil {
			continue
		}
		for _, m := range ms {
			out = append(out, fileMapping{pid: pid, Mapping: m})
		}
	}
	return out, nil
}

// pageOut asks the kernel to reclaim the pages of a range of process
// pid's address space (process_madvise(2) with MADV_PAGEOUT): clean file
// pages mapped by that process alone are unmapped and dropped from the
// page cache. It needs CAP_SYS_NICE and ptrace access to pid (root).
func pageOut(pid int, start, end uintptr) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	// process_madvise takes at most MAX_RW_COUNT (2 GiB less a page) per
	// call; advise 1 GiB at a time.
	const step = 1 << 30
	for start < end {
		n := end - start
		if n > step {
			n = step
		}
		// An address in another process: a struct iovec of plain integers.
		iov := [2]uint64{uint64(start), uint64(n)}
		done, _, e := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov)), 1, unix.MADV_PAGEOUT, 0, 0)
		if e != 0 {
			if e == syscall.ESRCH {
				return nil // the process is gone, and its map with it
			}
			return fmt.Errorf("process_madvise(MADV_PAGEOUT) pid %d: %w", pid, e)
		}
		if done == 0 {
			return fmt.Errorf("process_madvise(MADV_PAGEOUT) pid %d: advised nothing", pid)
		}
		start += done
	}
	return nil
}

// coldStoreFile pages out every process's map of the file at path and
// drops its cached pages, returning how many mappings in how many
// processes it paged out.
func coldStoreFile(path string) (mappings, procs int, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	ms, err := mappingsOf(st.Dev, st.Ino)
	if err != nil {
		return 0, 0, err
	}
	seen := map[int]bool{}
	for _, m := range ms {
		// A store's map runs far past its file (chunkstore's
		// initialMap): only the part over the file's bytes has pages.
		end := m.End
		if size := uint64(st.Size); m.Offset < size && uint64(end-m.Start) > size-m.Offset {
			end = m.Start + (uintptr(size-m.Offset+uint64(os.Getpagesize())-1) &^ uintptr(os.Getpagesize()-1))
		} else if m.Offset >= size {
			continue
		}
		if err := pageOut(m.pid, m.Start, end); err != nil {
			return 0, 0, fmt.Errorf("page out %s: %w", path, err)
		}
		seen[m.pid] = true
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, 0, fmt.Errorf("fadvise %s: %w", path, err)
	}
	return len(ms), len(seen), nil
}

// coldMountStore makes the store behind the FUSE mount holding dir cold,
// if that mount's source is a file (computerfs names the mount after its
// store); it returns a note saying what it did, or "" for other mounts.
func coldMountStore(dir string) (string, error) {
	mp, fstype, source, err := mountSource(dir)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(fstype, "fuse") || !filepath.IsAbs(source) {
		return "", nil
	}
	st, err := os.Stat(source)
	if err != nil || !st.Mode().IsRegular() {
		return "", nil //nolint:nilerr // a FUSE mount whose source is not a store file
	}
	_, procs, err := coldStoreFile(source)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("cold reads: the store %s behind %s paged out of the map of each process mapping it (%d here, process_madvise MADV_PAGEOUT) and dropped (fadvise DONTNEED) before drop_caches", source, mp, procs), nil
}
