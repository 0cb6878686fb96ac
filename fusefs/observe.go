package fusefs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Op is a kind of FUSE request the mount serves, for an Observer.
type Op uint8

// The requests the mount answers itself. Requests go-fuse answers
// (INIT, INTERRUPT) and those answered ENOSYS once (OPEN, OPENDIR, FLUSH,
// ACCESS) are not observed.
const (
	OpLookup Op = iota
	OpForget
	OpGetAttr
	OpSetAttr
	OpMknod
	OpMkdir
	OpSymlink
	OpReadlink
	OpLink
	OpUnlink
	OpRmdir
	OpRename
	OpGetXAttr
	OpListXAttr
	OpSetXAttr
	OpRemoveXAttr
	OpCreate
	OpTmpfile
	OpRead
	OpWrite
	OpCopyFileRange
	OpLseek
	OpRelease
	OpFsync
	OpFsyncDir
	OpFallocate
	OpReadDir
	OpReadDirPlus
	OpStatFs
	// NumOps is the number of ops: an Observer may keep one slot per op
	// in an array of this size.
	NumOps
)

var opNames = [NumOps]string{
	OpLookup: "lookup", OpForget: "forget", OpGetAttr: "getattr", OpSetAttr: "setattr",
	OpMknod: "mknod", OpMkdir: "mkdir", OpSymlink: "symlink", OpReadlink: "readlink",
	OpLink: "link", OpUnlink: "unlink", OpRmdir: "rmdir", OpRename: "rename",
	OpGetXAttr: "getxattr", OpListXAttr: "listxattr", OpSetXAttr: "setxattr", OpRemoveXAttr: "removexattr",
	OpCreate: "create", OpTmpfile: "tmpfile", OpRead: "read", OpWrite: "write",
	OpCopyFileRange: "copy_file_range", OpLseek: "lseek", OpRelease: "release",
	OpFsync: "fsync", OpFsyncDir: "fsyncdir", OpFallocate: "fallocate",
	OpReadDir: "readdir", OpReadDirPlus: "readdirplus", OpStatFs: "statfs",
}

// String is the op's name in lower case, as metrics label it ("getattr").
func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return "unknown"
}

// Observer sees every request the mount answers, once answered: its op,
// the time the daemon took to serve it (not the kernel's queueing), the
// errno it answered with (0 for success; a lookup of a missing name is a
// success, a negative entry), and for READ, WRITE and COPY_FILE_RANGE the
// bytes moved.
//
// It is called on the request's goroutine, concurrently, on every
// request: it must be safe for concurrent use, must not block, and
// should not allocate. Without one (the default), the mount reads no
// clock.
type Observer interface {
	Request(op Op, took time.Duration, errno syscall.Errno, bytes int)
}

// begin is when a request began, for the observer, as the time since
// the mount's base: one monotonic clock read (time.Now reads the wall
// clock too), and none without an observer.
func (r *rawFS) begin() time.Duration {
	if r.obs == nil {
		return 0
	}
	return time.Since(r.base)
}

// end reports a request begun at t that answered *st (nil: one with no
// answer, such as FORGET), having moved *n bytes (n may be nil). It is
// deferred, so that every return of a handler is seen.
func (r *rawFS) end(op Op, t time.Duration, st *fuse.Status, n *int) {
	if r.obs == nil {
		return
	}
	bytes := 0
	if n != nil {
		bytes = *n
	}
	errno := syscall.Errno(0)
	if st != nil && *st != fuse.OK {
		errno = syscall.Errno(*st)
	}
	r.obs.Request(op, time.Since(r.base)-t, errno, bytes)
}
