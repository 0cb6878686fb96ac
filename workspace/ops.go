package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/zeebo/blake3"
)

// FileInfo describes one file, directory or other node.
type FileInfo struct {
	Path   string    `json:"path"`
	Name   string    `json:"name"`
	Type   string    `json:"type"` // file, dir, symlink, fifo, socket, char, block
	Size   int64     `json:"size"`
	Mode   uint32    `json:"mode"` // permission bits, with setuid, setgid and sticky
	Mtime  time.Time `json:"mtime"`
	Ino    uint64    `json:"ino"`
	Nlink  uint32    `json:"nlink"`
	Uid    uint32    `json:"uid"`
	Gid    uint32    `json:"gid"`
	Target string    `json:"target,omitempty"` // symlinks
}

// IsDir reports whether the node is a directory.
func (fi *FileInfo) IsDir() bool { return fi.Type == "dir" }

// TypeName names the S_IFMT bits of a mode the way FileInfo.Type does.
func TypeName(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return "file"
	case syscall.S_IFDIR:
		return "dir"
	case syscall.S_IFLNK:
		return "symlink"
	case syscall.S_IFIFO:
		return "fifo"
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		return "char"
	case syscall.S_IFBLK:
		return "block"
	}
	return "unknown"
}

func (w *WS) info(p string, a *fs.Attr) FileInfo {
	fi := infoOf(p, a, "")
	if a.IsSymlink() {
		fi.Target, _ = w.t.Readlink(a.Ino)
	}
	return fi
}

// infoOf describes p of attributes a, a symlink leading to target.
func infoOf(p string, a *fs.Attr, target string) FileInfo {
	return FileInfo{
		Path: p, Name: path.Base(p), Type: TypeName(a.Mode), Size: int64(a.Size),
		Mode: a.Mode &^ syscall.S_IFMT, Mtime: time.Unix(0, a.Mtime), Ino: uint64(a.Ino),
		Nlink: a.Nlink, Uid: a.Uid, Gid: a.Gid, Target: target,
	}
}

// Stat describes what p leads to, following symlinks.
func (w *WS) Stat(ctx context.Context, p string) (FileInfo, error) {
	return w.stat(ctx, "stat", p, true)
}

// Lstat describes p itself: a symlink is not followed.
func (w *WS) Lstat(ctx context.Context, p string) (FileInfo, error) {
	return w.stat(ctx, "lstat", p, false)
}

func (w *WS) stat(ctx context.Context, op, p string, follow bool) (FileInfo, error) {
	r, err := w.resolve(ctx, op, p, follow)
	if err != nil {
		return FileInfo{}, err
	}
	if r.ino == 0 {
		return FileInfo{}, pathErr(op, p, syscall.ENOENT)
	}
	return w.info(r.path, &r.attr), nil
}

// Hash is the content hash the API reports and compares: hex BLAKE3-256
// of the file's bytes.
func Hash(data []byte) string {
	s := blake3.Sum256(data)
	return hex.EncodeToString(s[:])
}

// ReadOptions select part of a file. Byte and line ranges exclude each
// other.
type ReadOptions struct {
	Offset int64 `json:"offset,omitempty"`
	Length int64 `json:"length,omitempty"` // 0: to the end
	// Line is the first line to return (1-based), Lines how many (0: to
	// the end).
	Line  int `json:"line,omitempty"`
	Lines int `json:"lines,omitempty"`
}

// FileReader streams a file's content.
type FileReader interface {
	io.ReadCloser
	// Info describes the file as it was opened.
	Info() FileInfo
	// Hash is the content hash once a whole-file read reached EOF, else "".
	Hash() string
}

// Reader streams a file. It holds the file open: a concurrent unlink does
// not cut it short. Close it.
type Reader struct {
	ctx    context.Context
	w      *WS
	ino    fs.Ino
	info   FileInfo
	off    int64
	end    int64 // -1: to EOF as it is when reached
	hasher *blake3.Hasher
	lines  *bufio.Reader // line mode
	skip   int           // lines still to skip
	left   int           // lines still to return; -1: all
	pend   []byte        // the part of a line the caller's buffer missed
	closed bool
}

// Read opens p for reading. Large files are streamed, never loaded whole.
func (w *WS) Read(ctx context.Context, p string, opt ReadOptions) (FileReader, error) {
	rd, err := w.open(ctx, p, opt)
	if err != nil {
		return nil, err
	}
	return rd, nil
}

func (w *WS) open(ctx context.Context, p string, opt ReadOptions) (*Reader, error) {
	const op = "read"
	if opt.Offset < 0 || opt.Length < 0 || opt.Line < 0 || opt.Lines < 0 {
		return nil, pathErr(op, p, fmt.Errorf("negative range: %w", syscall.EINVAL))
	}
	if (opt.Line > 0 || opt.Lines > 0) && (opt.Offset > 0 || opt.Length > 0) {
		return nil, pathErr(op, p, fmt.Errorf("give a byte range or a line range, not both: %w", syscall.EINVAL))
	}
	var r resolved
	var a fs.Attr
	for attempt := 0; ; attempt++ {
		var err error
		r, err = w.resolve(ctx, op, p, true)
		if err != nil {
			return nil, err
		}
		if r.ino == 0 {
			return nil, pathErr(op, p, syscall.ENOENT)
		}
		if r.attr.IsDir() {
			return nil, pathErr(op, p, syscall.EISDIR)
		}
		if !r.attr.IsRegular() {
			return nil, pathErr(op, p, fmt.Errorf("not a regular file: %w", syscall.EINVAL))
		}
		a, err = w.t.Open(r.ino)
		if err == syscall.ENOENT && attempt < 100 {
			// Replaced (or removed) between the lookup and the open: a
			// reader must see the old content or the new, so look again.
			continue
		}
		if err != nil {
			return nil, pathErr(op, p, err)
		}
		break
	}
	rd := &Reader{ctx: ctx, w: w, ino: r.ino, info: w.info(r.path, &a), off: opt.Offset, end: -1, left: -1}
	if opt.Length > 0 {
		rd.end = opt.Offset + opt.Length
	}
	if opt.Offset == 0 && opt.Length == 0 && opt.Line <= 1 && opt.Lines == 0 {
		rd.hasher = blake3.New()
	}
	if opt.Line > 0 || opt.Lines > 0 {
		rd.lines = bufio.NewReaderSize(&rawReader{rd}, 256<<10)
		rd.skip = max(opt.Line-1, 0)
		if opt.Lines > 0 {
			rd.left = opt.Lines
		}
	}
	return rd, nil
}

// Info describes the file as it was opened.
func (r *Reader) Info() FileInfo { return r.info }

// Hash is the content hash of the file, once a whole-file read has
// reached EOF; "" otherwise.
func (r *Reader) Hash() string {
	if r.hasher == nil || r.end != -2 {
		return ""
	}
	return hex.EncodeToString(r.hasher.Sum(nil))
}

func (r *Reader) Read(b []byte) (int, error) {
	if r.closed {
		return 0, pathErr("read", r.info.Path, syscall.EBADF)
	}
	if r.lines == nil {
		return r.readRaw(b)
	}
	for r.skip > 0 {
		if _, err := r.lines.ReadSlice('\n'); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue // a long line: keep skipping it
			}
			return 0, err
		}
		r.skip--
	}
	if len(r.pend) > 0 {
		n := copy(b, r.pend)
		r.pend = r.pend[n:]
		return n, nil
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	line, err := r.lines.ReadSlice('\n')
	n := copy(b, line)
	if n < len(line) {
		r.pend = append(r.pend[:0], line[n:]...)
	}
	switch {
	case err == nil:
		if r.left > 0 {
			r.left--
		}
	case errors.Is(err, bufio.ErrBufferFull):
		err = nil
	case err == io.EOF && len(line) > 0:
		err = nil
		r.left = 0
	}
	return n, err
}

func (r *Reader) readRaw(b []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if r.end == -2 {
		return 0, io.EOF
	}
	if r.end >= 0 {
		if r.off >= r.end {
			return 0, io.EOF
		}
		if rest := r.end - r.off; int64(len(b)) > rest {
			b = b[:rest]
		}
	}
	if len(b) > maxIO {
		b = b[:maxIO]
	}
	n, err := r.w.t.Read(r.ctx, r.ino, r.off, b)
	if err != nil {
		return 0, pathErr("read", r.info.Path, err)
	}
	if n == 0 {
		if r.end == -1 {
			r.end = -2
		}
		return 0, io.EOF
	}
	if r.hasher != nil {
		r.hasher.Write(b[:n])
	}
	r.off += int64(n)
	return n, nil
}

type rawReader struct{ r *Reader }

func (rr *rawReader) Read(b []byte) (int, error) { return rr.r.readRaw(b) }

// Close releases the file.
func (r *Reader) Close() error {
	if !r.closed {
		r.closed = true
		r.w.t.Release(r.ino)
	}
	return nil
}

// maxIO is the largest single read or write the API makes to fs: one
// chunk, so that every call stays within one slot's worth of memory.
const maxIO = 1 << 20

// ReadFile reads a whole file into memory, refusing files over max bytes
// (EFBIG).
func (w *WS) ReadFile(ctx context.Context, p string, maxBytes int64) ([]byte, FileInfo, error) {
	rd, err := w.open(ctx, p, ReadOptions{})
	if err != nil {
		return nil, FileInfo{}, err
	}
	defer rd.Close()
	if maxBytes > 0 && rd.info.Size > maxBytes {
		return nil, rd.info, pathErr("read", p, fmt.Errorf("file is %d bytes, over the %d allowed: %w", rd.info.Size, maxBytes, syscall.EFBIG))
	}
	buf := bytes.NewBuffer(make([]byte, 0, rd.info.Size))
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, rd.info, err
	}
	if maxBytes > 0 && int64(buf.Len()) > maxBytes {
		return nil, rd.info, pathErr("read", p, syscall.EFBIG)
	}
	return buf.Bytes(), rd.info, nil
}

// hashFile returns the content hash of inode ino.
func (w *WS) hashFile(ctx context.Context, ino fs.Ino) (string, error) {
	h := blake3.New()
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
	buf := *bp
	for off := int64(0); ; {
		n, err := w.t.Read(ctx, ino, off, buf)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		h.Write(buf[:n])
		off += int64(n)
	}
}

// WriteOptions say how Write treats an existing file.
type WriteOptions struct {
	// Append adds to the end of the file (creating it if missing) instead
	// of replacing its content.
	Append bool `json:"append,omitempty"`
	// Exclusive fails with EEXIST if the file exists.
	Exclusive bool `json:"exclusive,omitempty"`
	// Perm is the permission of a new file (0644 if 0); an existing file
	// keeps its own unless Perm is set.
	Perm uint32 `json:"perm,omitempty"`
	// IfMatch, when set, is the content hash the file must have: the write
	// fails with ErrConflict otherwise (and if the file is missing).
	IfMatch string `json:"if_match,omitempty"`
	// Parents creates missing parent directories.
	Parents bool `json:"parents,omitempty"`
	// Sync makes the write durable before returning.
	Sync bool `json:"sync,omitempty"`
}

// WriteResult describes a write.
type WriteResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`           // of the file after the write
	Written int64  `json:"written"`        // bytes written
	Hash    string `json:"hash,omitempty"` // of the new content; not for appends
	Created bool   `json:"created,omitempty"`
}

// WriteFile is Write from a byte slice.
func (w *WS) WriteFile(ctx context.Context, p string, data []byte, opt WriteOptions) (WriteResult, error) {
	return w.Write(ctx, p, bytes.NewReader(data), opt)
}

// Write stores the bytes of r at p. A replacement is atomic: the content
// is written to a temporary file in the same directory and renamed over
// p, so readers see the old content or the new, never a mix; an error
// leaves p as it was.
func (w *WS) Write(ctx context.Context, p string, r io.Reader, opt WriteOptions) (WriteResult, error) {
	return w.write(ctx, p, r, opt, false)
}

// write is Write; haveLock says the caller already holds writeMu (Edit).
func (w *WS) write(ctx context.Context, p string, r io.Reader, opt WriteOptions, haveLock bool) (WriteResult, error) {
	const op = "write"
	if w.opts.ReadOnly {
		return WriteResult{}, pathErr(op, p, syscall.EROFS)
	}
	if opt.Perm&^0o7777 != 0 {
		return WriteResult{}, pathErr(op, p, fmt.Errorf("bad permission %o: %w", opt.Perm, syscall.EINVAL))
	}
	if opt.Append && opt.Exclusive {
		return WriteResult{}, pathErr(op, p, fmt.Errorf("append and exclusive exclude each other: %w", syscall.EINVAL))
	}
	if opt.Parents {
		if err := w.mkParents(ctx, op, p); err != nil {
			return WriteResult{}, err
		}
	}
	if opt.IfMatch != "" && !haveLock {
		if err := w.writeMu.lock(ctx); err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
		defer w.writeMu.unlock()
	}
	res, err := w.resolveChange(ctx, op, p, true)
	if err != nil {
		return WriteResult{}, err
	}
	if res.name == "" {
		return WriteResult{}, pathErr(op, p, syscall.EISDIR)
	}
	if res.ino != 0 {
		switch {
		case opt.Exclusive:
			return WriteResult{}, pathErr(op, p, syscall.EEXIST)
		case res.attr.IsDir():
			return WriteResult{}, pathErr(op, p, syscall.EISDIR)
		case !res.attr.IsRegular():
			return WriteResult{}, pathErr(op, p, fmt.Errorf("not a regular file: %w", syscall.EINVAL))
		}
	}
	// version is the checked file's, while it is held open: the final
	// replace happens only if nothing, through any door, changed it since.
	var version uint64
	if opt.IfMatch != "" {
		if res.ino == 0 {
			return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: the file does not exist", ErrConflict))
		}
		var err error
		_, version, err = w.t.OpenVersion(res.ino)
		if err == syscall.ENOENT {
			return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: the file was replaced meanwhile", ErrConflict))
		}
		if err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
		defer w.t.Release(res.ino)
		got, err := w.hashFile(ctx, res.ino)
		if err == syscall.ENOENT {
			// Replaced or removed since the lookup: not the file expected.
			return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: the file was replaced meanwhile", ErrConflict))
		}
		if err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
		if got != opt.IfMatch {
			return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: expected %s, found %s", ErrConflict, opt.IfMatch, got))
		}
	}
	if opt.Append {
		var want *uint64
		if opt.IfMatch != "" {
			want = &version
		}
		return w.appendTo(ctx, p, res, r, opt, want)
	}
	perm := uint32(0o644)
	uid, gid := w.opts.Caller.Uid, w.opts.Caller.Gid
	if res.ino != 0 {
		perm = res.attr.Mode &^ syscall.S_IFMT
		uid, gid = res.attr.Uid, res.attr.Gid
	}
	if opt.Perm != 0 {
		perm = opt.Perm
	}
	tmp, err := w.tempFile(res.parent, perm, uid, gid)
	if err != nil {
		return WriteResult{}, pathErr(op, p, err)
	}
	h := blake3.New()
	n, err := w.fill(ctx, tmp.Ino, io.TeeReader(r, h))
	if err == nil && opt.Sync {
		err = w.f.Fsync(ctx, tmp.Ino)
	}
	if err == nil && w.beforeReplace != nil {
		w.beforeReplace()
	}
	if err == nil {
		if opt.IfMatch != "" {
			_, err = w.f.ReplaceIf(w.opts.Caller, tmp.Ino, res.parent, res.name, res.ino, version)
			if errors.Is(err, fs.ErrChanged) {
				err = fmt.Errorf("%w: the file changed meanwhile", ErrConflict)
			}
		} else {
			// Someone may have made the file meanwhile: do not clobber it
			// when the caller meant to create.
			_, err = w.f.Replace(w.opts.Caller, tmp.Ino, res.parent, res.name, opt.Exclusive || res.ino == 0)
		}
	}
	w.f.Release(tmp.Ino)
	if err != nil {
		return WriteResult{}, pathErr(op, p, err)
	}
	w.invalidate(res.parent, res.name, res.ino)
	if opt.Sync {
		if err := w.f.Fsync(ctx, res.parent); err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
	}
	return WriteResult{Path: res.path, Size: n, Written: n, Hash: hex.EncodeToString(h.Sum(nil)), Created: res.ino == 0}, nil
}

// tempFile makes an open, unnamed file in dir, for fs.Replace to name.
// Release it; until named, a release deletes it.
func (w *WS) tempFile(dir fs.Ino, perm, uid, gid uint32) (fs.Attr, error) {
	return w.f.Create(fs.Caller{Uid: uid, Gid: gid}, dir, "", fs.NewNode{Mode: syscall.S_IFREG | perm, Tmpfile: true})
}

// fill writes r into the empty file ino.
func (w *WS) fill(ctx context.Context, ino fs.Ino, r io.Reader) (int64, error) {
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
	buf := *bp
	var off int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			m, err := w.writeAll(ctx, ino, off, buf[:n], false)
			off += m
			if err != nil {
				return off, err
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return off, nil
		default:
			return off, fmt.Errorf("read the data to write: %w", rerr)
		}
	}
}

// writeAll writes data at off (at the end with appendMode), going on
// after short writes: fs.Write stops early without an error when it runs
// out of space part way, and says why on the next call.
func (w *WS) writeAll(ctx context.Context, ino fs.Ino, off int64, data []byte, appendMode bool) (int64, error) {
	var done int64
	for done < int64(len(data)) {
		n, err := w.f.Write(ctx, ino, off+done, data[done:], appendMode)
		done += int64(n)
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, syscall.EIO
		}
	}
	return done, nil
}

// appendTo appends r to the file; with want (a compare-and-swap), its
// first bytes land only if the file is still at that version.
func (w *WS) appendTo(ctx context.Context, p string, res resolved, r io.Reader, opt WriteOptions, want *uint64) (WriteResult, error) {
	const op = "write"
	created := false
	ino := res.ino
	if ino == 0 {
		perm := opt.Perm
		if perm == 0 {
			perm = 0o644
		}
		a, err := w.f.Create(w.opts.Caller, res.parent, res.name, fs.NewNode{Mode: syscall.S_IFREG | perm})
		if err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
		ino, created = a.Ino, true
		w.invalidate(res.parent, res.name, 0)
	} else if opt.Perm != 0 && want == nil {
		if _, err := w.f.SetAttr(w.opts.Caller, ino, fs.SetAttrIn{Mode: &opt.Perm}); err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
	}
	if _, err := w.t.Open(ino); err != nil {
		return WriteResult{}, pathErr(op, p, err)
	}
	defer w.t.Release(ino)
	if want != nil && w.beforeReplace != nil {
		w.beforeReplace()
	}
	bp := w.bufs.Get().(*[]byte)
	defer w.bufs.Put(bp)
	buf := *bp
	var written int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n == 0 && want != nil && rerr != nil {
			// Nothing to append: the check alone decides.
			if _, v, err := w.t.OpenVersion(ino); err == nil {
				w.t.Release(ino)
				if v != *want {
					return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: the file changed meanwhile", ErrConflict))
				}
			}
			want = nil
			if opt.Perm != 0 {
				if _, err := w.f.SetAttr(w.opts.Caller, ino, fs.SetAttrIn{Mode: &opt.Perm}); err != nil {
					return WriteResult{}, pathErr(op, p, err)
				}
			}
		}
		if n > 0 {
			data := buf[:n]
			var m int64
			var err error
			if want != nil {
				// The compare-and-swap: the first bytes, only if nothing
				// changed the file since its hash was checked.
				k, werr := w.f.WriteIf(ctx, ino, *want, 0, data, true)
				m, err = int64(k), werr
				if errors.Is(err, fs.ErrChanged) {
					return WriteResult{}, pathErr(op, p, fmt.Errorf("%w: the file changed meanwhile", ErrConflict))
				}
				if err == nil && k < len(data) {
					var more int64
					more, err = w.writeAll(ctx, ino, 0, data[k:], true)
					m += more
				}
				want = nil
				if err == nil && opt.Perm != 0 {
					_, err = w.f.SetAttr(w.opts.Caller, ino, fs.SetAttrIn{Mode: &opt.Perm})
				}
			} else {
				m, err = w.writeAll(ctx, ino, 0, data, true)
			}
			written += m
			if err != nil {
				w.invalidate(0, "", ino)
				return WriteResult{}, pathErr(op, p, err)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			w.invalidate(0, "", ino)
			return WriteResult{}, pathErr(op, p, fmt.Errorf("read the data to write: %w", rerr))
		}
	}
	if opt.Sync {
		if err := w.f.Fsync(ctx, ino); err != nil {
			return WriteResult{}, pathErr(op, p, err)
		}
	}
	w.invalidate(0, "", ino)
	a, err := w.t.GetAttr(ino)
	if err != nil {
		return WriteResult{}, pathErr(op, p, err)
	}
	return WriteResult{Path: res.path, Size: int64(a.Size), Written: written, Created: created}, nil
}

// EditOptions qualify an edit.
type EditOptions struct {
	IfMatch string `json:"if_match,omitempty"`
	// DryRun computes the result and the diff without writing.
	DryRun bool `json:"dry_run,omitempty"`
}

// EditResult describes an edit.
type EditResult struct {
	Path   string `json:"path"`
	Diff   string `json:"diff"`
	Counts []int  `json:"counts"` // replacements made by each edit
	Hash   string `json:"hash"`   // of the new content
	Size   int64  `json:"size"`
}

// MaxEditBytes is the largest file Edit works on.
const MaxEditBytes = 64 << 20

// Edit applies exact-string replacements to a file, all or none, keeping
// its mode and line endings, and returns a unified diff.
func (w *WS) Edit(ctx context.Context, p string, edits []Edit, opt EditOptions) (EditResult, error) {
	const op = "edit"
	if w.opts.ReadOnly && !opt.DryRun {
		return EditResult{}, pathErr(op, p, syscall.EROFS)
	}
	if len(edits) == 0 {
		return EditResult{}, pathErr(op, p, fmt.Errorf("no edits given: %w", syscall.EINVAL))
	}
	if err := w.writeMu.lock(ctx); err != nil {
		return EditResult{}, pathErr(op, p, err)
	}
	defer w.writeMu.unlock()
	old, fi, err := w.ReadFile(ctx, p, MaxEditBytes)
	if err != nil {
		return EditResult{}, pathErr(op, p, err)
	}
	if opt.IfMatch != "" {
		if got := Hash(old); got != opt.IfMatch {
			return EditResult{}, pathErr(op, p, fmt.Errorf("%w: expected %s, found %s", ErrConflict, opt.IfMatch, got))
		}
	}
	out, counts, err := applyEdits(old, edits)
	if err != nil {
		return EditResult{}, pathErr(op, p, err)
	}
	res := EditResult{Path: fi.Path, Diff: unifiedDiff(fi.Path, fi.Path, old, out, 3), Counts: counts, Hash: Hash(out), Size: int64(len(out))}
	if opt.DryRun {
		return res, nil
	}
	// The lock is held: the write's own check would deadlock, and the
	// hash check above already covers the swap.
	wr, err := w.writeLocked(ctx, p, out, Hash(old))
	if err != nil {
		return EditResult{}, err
	}
	res.Path = wr.Path
	return res, nil
}

// writeLocked replaces p's content if it still hashes to want. The caller
// holds writeMu.
func (w *WS) writeLocked(ctx context.Context, p string, data []byte, want string) (WriteResult, error) {
	return w.write(ctx, p, bytes.NewReader(data), WriteOptions{IfMatch: want}, true)
}
