package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/computerfs/computerfs/internal/textdiff"
	"github.com/computerfs/computerfs/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the read tool, as Claude Code's: 2000 lines by default, each
// cut at 2000 characters; and at most 256 KiB of text in one answer.
const (
	defaultReadLines = 2000
	maxLineChars     = 2000
	maxReadBytes     = 256 << 10
	// maxHashBytes: a file up to this size is read to its end, whatever
	// the window, for its content hash (the compare-and-swap of a later
	// write or edit). It is the edit API's own bound.
	maxHashBytes = workspace.MaxEditBytes
	// maxImageBytes: images up to this size are returned as images.
	maxImageBytes = 5 << 20
	sniffBytes    = 8 << 10
)

type readIn struct {
	FilePath string `json:"file_path" jsonschema:"the file to read, as a workspace path such as /src/main.go"`
	Offset   int    `json:"offset,omitempty" jsonschema:"the line number to start reading from (1-based); only for files too long to read at once"`
	Limit    int    `json:"limit,omitempty" jsonschema:"the number of lines to read (default 2000)"`
}

type readOut struct {
	Path string `json:"path"`
	// Kind is "text", "empty", "image" or "binary".
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	// Hash is the content hash (BLAKE3) that write and edit compare
	// against; empty for a file too large to hash.
	Hash      string `json:"hash,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	// NumLines is how many lines are shown; TotalLines how many the file
	// has (0 when it was not read to its end).
	NumLines   int    `json:"num_lines"`
	TotalLines int    `json:"total_lines,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	MIMEType   string `json:"mime_type,omitempty"`
	Notice     string `json:"notice,omitempty"`
}

type writeIn struct {
	FilePath string `json:"file_path" jsonschema:"the file to write, as a workspace path; missing parent directories are made"`
	Content  string `json:"content" jsonschema:"the whole new content of the file"`
}

type writeOut struct {
	Path    string `json:"path"`
	Created bool   `json:"created"`
	Size    int64  `json:"size"`
	Hash    string `json:"hash"`
}

type editIn struct {
	FilePath   string `json:"file_path" jsonschema:"the file to edit, as a workspace path"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace (without read's line-number prefixes); it must occur exactly once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place (must differ from old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string (default false)"`
}

type oneEdit struct {
	OldString  string `json:"old_string" jsonschema:"the exact text to replace; unique in the file as the earlier edits left it, unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the replacement"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

type multiEditIn struct {
	FilePath string    `json:"file_path" jsonschema:"the file to edit, as a workspace path"`
	Edits    []oneEdit `json:"edits" jsonschema:"the edits, applied in order, each to the result of the one before; all are made or none"`
}

type editOut struct {
	Path         string `json:"path"`
	Replacements []int  `json:"replacements"` // per edit
	Diff         string `json:"diff"`
	Hash         string `json:"hash"`
	Size         int64  `json:"size"`
	Created      bool   `json:"created,omitempty"`
}

func (s *Server) addFileTools() {
	addTool(s.mcp, &mcp.Tool{
		Name:  "read",
		Title: "Read a file",
		Description: `Reads a file of the workspace.
- file_path is a workspace path (/src/main.go).
- By default it reads up to 2000 lines from the start; offset (1-based line) and limit read a part of a long file.
- Lines are numbered as cat -n numbers them (number, tab, line); lines longer than 2000 characters are cut, and so is an answer past 256 KiB, each with a notice saying how to read on.
- Images (PNG, JPEG, GIF, WebP) come back as images; other binary files are described, not dumped.
- Read a file before you edit it or write over it: this session's read is what those tools compare against.`,
		Annotations: &mcp.ToolAnnotations{Title: "Read a file", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.read)
	addTool(s.mcp, &mcp.Tool{
		Name:  "write",
		Title: "Write a file",
		Description: `Writes a whole file, atomically (readers see the old content or the new), making missing parent directories.
- A new file is simply created.
- An existing file must have been read in this session first, and must not have changed since: otherwise the write is refused, and you must read it (again).
- Prefer edit for changing part of an existing file.`,
		Annotations: &mcp.ToolAnnotations{Title: "Write a file", DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.write)
	addTool(s.mcp, &mcp.Tool{
		Name:  "edit",
		Title: "Edit a file",
		Description: `Replaces exact text in a file and returns the change as a unified diff.
- old_string must occur exactly once in the file (give more surrounding lines to make it unique), unless replace_all is set, which replaces every occurrence.
- Copy old_string from read's output without the line-number prefix (number and tab); keep the indentation exactly.
- The file must have been read in this session and not changed since (a compare-and-swap against what was read); after an edit, the session knows the new content and can edit again.
- An empty old_string creates a new file with new_string as its content.`,
		Annotations: &mcp.ToolAnnotations{Title: "Edit a file", DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
	}, s.edit)
	addTool(s.mcp, &mcp.Tool{
		Name:  "multi_edit",
		Title: "Edit a file in several places",
		Description: `Makes several exact-text replacements in one file, in order, all or none, and returns one unified diff.
Each edit works as edit's does, on the result of the edits before it. The file must have been read in this session and not changed since.`,
		Annotations: &mcp.ToolAnnotations{Title: "Edit a file in several places", DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
	}, s.multiEdit)
	s.addSearchTools()
}

func (s *Server) read(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, readOut, error) {
	p, err := s.wsPath(in.FilePath, "file_path")
	if err != nil {
		return nil, readOut{}, err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return nil, readOut{}, fmt.Errorf("read %s: offset and limit must not be negative", p)
	}
	start := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	r, err := s.api().Read(ctx, p, workspace.ReadOptions{})
	if err != nil {
		return nil, readOut{}, toolError("read", p, err)
	}
	defer r.Close()
	info := r.Info()
	if info.IsDir() {
		return nil, readOut{}, toolError("read", p, syscall.EISDIR)
	}
	out := readOut{Path: p, Size: info.Size}
	br := bufio.NewReaderSize(r, int(max(sniffBytes, min(64<<10, info.Size+1))))
	head, _ := br.Peek(sniffBytes)
	if isBinary(head) {
		return s.readBinary(ctx, req, p, info, br, r, out)
	}
	// Past the window, a file small enough to hash is read on to its
	// end (for the hash and the line count); a larger one is not.
	w, err := numberLines(br, start, limit, info.Size <= maxHashBytes, int(min(info.Size+info.Size/4+64, maxReadBytes)))
	if err != nil {
		return nil, readOut{}, toolError("read", p, err)
	}
	text, line, shown, cutLines, full := w.text.String(), w.lines, w.shown, w.cut, w.full
	if w.eof {
		out.TotalLines = line
	}
	out.Hash = r.Hash()
	s.session(req.Session).remember(p, readRecord{hash: out.Hash, ino: info.Ino, size: info.Size, mtime: info.Mtime})
	out.Kind, out.StartLine, out.NumLines = "text", start, shown
	var notes []string
	switch {
	case info.Size == 0 || (line == 0 && out.TotalLines == 0):
		out.Kind = "empty"
		notes = append(notes, fmt.Sprintf("the file %s exists and is empty", p))
	case shown == 0 && !full:
		notes = append(notes, fmt.Sprintf("the file has %d lines: offset %d is past its end", line, start))
	}
	last := start + shown - 1
	if full {
		out.Truncated = true
		notes = append(notes, fmt.Sprintf("output cut at 256 KiB after line %d: read on with offset=%d", last, last+1))
	} else if shown > 0 && (out.TotalLines == 0 || out.TotalLines > last) {
		out.Truncated = true
		total := "more"
		if out.TotalLines > 0 {
			total = strconv.Itoa(out.TotalLines)
		}
		notes = append(notes, fmt.Sprintf("showing lines %d-%d of %s: read on with offset=%d", start, last, total, last+1))
	}
	if cutLines > 0 {
		notes = append(notes, fmt.Sprintf("%d lines longer than %d characters were cut", cutLines, maxLineChars))
	}
	out.Notice = strings.Join(notes, "; ")
	msg := text
	if out.Notice != "" {
		if msg != "" {
			msg += "\n"
		}
		msg += "[" + out.Notice + "]"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, out, nil
}

// readBinary answers a read of a binary file: an image as an image, any
// other file described. The file is read to its end (if not too large)
// for its hash, so that a session can write over it.
func (s *Server) readBinary(ctx context.Context, req *mcp.CallToolRequest, p string, info workspace.FileInfo, br *bufio.Reader, r workspace.FileReader, out readOut) (*mcp.CallToolResult, readOut, error) {
	head, _ := br.Peek(512)
	mime := http.DetectContentType(head)
	out.MIMEType, out.Kind = mime, "binary"
	var content []mcp.Content
	isImage := mime == "image/png" || mime == "image/jpeg" || mime == "image/gif" || mime == "image/webp"
	if isImage && info.Size <= maxImageBytes {
		data, err := io.ReadAll(io.LimitReader(br, maxImageBytes+1))
		if err != nil {
			return nil, readOut{}, toolError("read", p, err)
		}
		out.Kind = "image"
		content = append(content, &mcp.ImageContent{Data: data, MIMEType: mime})
	} else if info.Size <= maxHashBytes {
		if _, err := io.Copy(io.Discard, br); err != nil {
			return nil, readOut{}, toolError("read", p, err)
		}
	}
	out.Hash = r.Hash()
	s.session(req.Session).remember(p, readRecord{hash: out.Hash, ino: info.Ino, size: info.Size, mtime: info.Mtime})
	if out.Kind == "image" {
		out.Notice = fmt.Sprintf("image %s, %s, %d bytes", p, mime, info.Size)
	} else {
		out.Notice = fmt.Sprintf("%s is a binary file (%s, %d bytes): not shown; use exec (od, xxd, file) to look inside", p, mime, info.Size)
	}
	content = append(content, &mcp.TextContent{Text: "[" + out.Notice + "]"})
	return &mcp.CallToolResult{Content: content}, out, nil
}

// isBinary says a file is binary as grep does: a NUL byte near its start,
// or bytes that are not UTF-8 text.
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	// A multi-byte character may be cut at the end of head.
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 {
			return len(head) >= utf8.UTFMax
		}
		head = head[n:]
	}
	return false
}

// window is the lines of a file that read shows.
type window struct {
	text  strings.Builder // numbered as cat -n numbers them
	lines int             // lines read (all of them, with eof)
	shown int
	cut   int  // lines cut at maxLineChars
	full  bool // the window stopped at maxReadBytes
	eof   bool
}

// numberLines reads lines from br and keeps those from line start (1-based)
// on, limit of them at most, within maxReadBytes of numbered text. With
// toEOF it reads on to the end after the window, counting lines. sizeHint
// is the room to make for the text at first. A line's
// "\n" and a "\r" before it are not shown.
func numberLines(br *bufio.Reader, start, limit int, toEOF bool, sizeHint int) (*window, error) {
	w := &window{}
	w.text.Grow(sizeHint)
	var long []byte
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep enough of it to show,
			// and count its characters.
			var c runeCounter
			long = long[:0]
			for {
				c.add(b)
				if len(long) < (maxLineChars+1)*utf8.UTFMax {
					long = append(long, b...)
				}
				if !errors.Is(err, bufio.ErrBufferFull) {
					break
				}
				b, err = br.ReadSlice('\n')
			}
			w.addLine(long, start, limit, c.line())
		} else if len(b) > 0 {
			w.addLine(b, start, limit, -1)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, err
			}
			w.eof = true
			return w, nil
		}
		if !toEOF && (w.shown >= limit || w.full) && w.lines >= start {
			return w, nil
		}
	}
}

// runeCounter counts the characters of a line read in pieces, as
// utf8.RuneCount counts the whole line: a character cut between two
// pieces counts once.
type runeCounter struct {
	n     int
	carry []byte // the start of a character cut at the end of a piece
	last2 [2]byte
	seen  int
}

func (c *runeCounter) add(b []byte) {
	for _, x := range b {
		c.last2[0], c.last2[1] = c.last2[1], x
	}
	c.seen += len(b)
	buf := append(c.carry, b...)
	cut := len(buf)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(buf); k++ {
		if utf8.RuneStart(buf[len(buf)-k]) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	c.n += utf8.RuneCount(buf[:cut])
	c.carry = append(c.carry[:0:0], buf[cut:]...)
}

// line is the count without the line's "\n", and a "\r" before it.
func (c *runeCounter) line() int {
	n := c.n + utf8.RuneCount(c.carry)
	if c.seen > 0 && c.last2[1] == '\n' {
		n--
		if c.seen > 1 && c.last2[0] == '\r' {
			n--
		}
	}
	return n
}

// addLine adds one line (with its "\n", if any) read from the file;
// chars, when not -1, is its true length in characters (it was read in
// part).
func (w *window) addLine(b []byte, start, limit, chars int) {
	w.lines++
	if w.lines < start || w.shown >= limit || w.full {
		return
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	disp := b
	if chars > maxLineChars || (chars < 0 && len(b) > maxLineChars && utf8.RuneCount(b) > maxLineChars) {
		if chars < 0 {
			chars = utf8.RuneCount(b)
		}
		d, _ := cutChars(string(b), chars)
		disp = []byte(d)
		w.cut++
	}
	var num [20]byte
	nb := strconv.AppendInt(num[:0], int64(w.lines), 10)
	pad := max(6-len(nb), 0)
	if w.text.Len()+pad+len(nb)+len(disp)+2 > maxReadBytes {
		w.full = true
		return
	}
	for range pad {
		w.text.WriteByte(' ')
	}
	w.text.Write(nb)
	w.text.WriteByte('\t')
	w.text.Write(disp)
	w.text.WriteByte('\n')
	w.shown++
}

// cutLine cuts a line at maxLineChars characters, with a notice.
func cutLine(l string) (string, bool) { return cutChars(l, utf8.RuneCountInString(l)) }

// cutChars cuts l, a line of chars characters (l may hold only its
// start), at maxLineChars.
func cutChars(l string, chars int) (string, bool) {
	if chars <= maxLineChars {
		return l, false
	}
	n := 0
	for i := range l {
		if n == maxLineChars {
			l = l[:i]
			break
		}
		n++
	}
	return l + fmt.Sprintf("… [line cut: %d characters in all]", chars), true
}

func (s *Server) write(ctx context.Context, req *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, writeOut, error) {
	p, err := s.wsPath(in.FilePath, "file_path")
	if err != nil {
		return nil, writeOut{}, err
	}
	st := s.session(req.Session)
	st.changing.Lock()
	defer st.changing.Unlock()
	opt := workspace.WriteOptions{Parents: true}
	rec, wasRead := st.lookup(p)
	switch {
	case !wasRead:
		opt.Exclusive = true
	case rec.hash != "":
		opt.IfMatch = rec.hash
	default:
		// Too large to hash when read: it must still be the file read.
		fi, err := s.api().Stat(ctx, p)
		if err == nil && (fi.Ino != rec.ino || fi.Size != rec.size || !fi.Mtime.Equal(rec.mtime)) {
			return nil, writeOut{}, toolError("write", p, workspace.ErrConflict)
		}
	}
	res, err := s.api().Write(ctx, p, strings.NewReader(in.Content), opt)
	if wasRead && errors.Is(err, workspace.ErrConflict) {
		// Gone since it was read: a new file, which needs no read.
		if _, serr := s.api().Lstat(ctx, p); errors.Is(serr, syscall.ENOENT) {
			res, err = s.api().Write(ctx, p, strings.NewReader(in.Content), workspace.WriteOptions{Parents: true, Exclusive: true})
		}
	}
	if errors.Is(err, syscall.EEXIST) && !wasRead {
		return nil, writeOut{}, fmt.Errorf("write %s: the file exists and this session has not read it: read it first, then write (or edit it) (%w)", p, err)
	}
	if err != nil {
		return nil, writeOut{}, toolError("write", p, err)
	}
	st.remember(p, readRecord{hash: res.Hash})
	out := writeOut{Path: p, Created: res.Created, Size: res.Size, Hash: res.Hash}
	verb := "updated"
	if res.Created {
		verb = "created"
	}
	text := fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, p, res.Size, countLines(in.Content))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func (s *Server) edit(ctx context.Context, req *mcp.CallToolRequest, in editIn) (*mcp.CallToolResult, editOut, error) {
	return s.applyEdits(ctx, req, in.FilePath, []oneEdit{{OldString: in.OldString, NewString: in.NewString, ReplaceAll: in.ReplaceAll}})
}

func (s *Server) multiEdit(ctx context.Context, req *mcp.CallToolRequest, in multiEditIn) (*mcp.CallToolResult, editOut, error) {
	if len(in.Edits) == 0 {
		return nil, editOut{}, errors.New("multi_edit: no edits given")
	}
	return s.applyEdits(ctx, req, in.FilePath, in.Edits)
}

func (s *Server) applyEdits(ctx context.Context, req *mcp.CallToolRequest, filePath string, edits []oneEdit) (*mcp.CallToolResult, editOut, error) {
	p, err := s.wsPath(filePath, "file_path")
	if err != nil {
		return nil, editOut{}, err
	}
	st := s.session(req.Session)
	st.changing.Lock()
	defer st.changing.Unlock()
	if len(edits) == 1 && edits[0].OldString == "" {
		// Claude Code's convention: an empty old_string creates the file.
		res, err := s.api().Write(ctx, p, strings.NewReader(edits[0].NewString), workspace.WriteOptions{Parents: true, Exclusive: true})
		if errors.Is(err, syscall.EEXIST) {
			return nil, editOut{}, fmt.Errorf("edit %s: an empty old_string creates a new file, and this one exists: give the text to replace (%w)", p, err)
		}
		if err != nil {
			return nil, editOut{}, toolError("edit", p, err)
		}
		st.remember(p, readRecord{hash: res.Hash})
		diff := textdiff.Unified("/dev/null", p, nil, []byte(edits[0].NewString), 3)
		out := editOut{Path: p, Replacements: []int{1}, Diff: diff, Hash: res.Hash, Size: res.Size, Created: true}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created " + p + "\n" + diff}}}, out, nil
	}
	rec, ok := st.lookup(p)
	if !ok {
		if _, err := s.api().Stat(ctx, p); err != nil {
			return nil, editOut{}, toolError("edit", p, err)
		}
		return nil, editOut{}, fmt.Errorf("edit %s: this session has not read the file: read it first, then edit", p)
	}
	if rec.hash == "" {
		return nil, editOut{}, toolError("edit", p, syscall.EFBIG)
	}
	ws := make([]workspace.Edit, len(edits))
	for i, e := range edits {
		if e.OldString == e.NewString {
			return nil, editOut{}, fmt.Errorf("edit %s: edit %d: old_string and new_string are the same: nothing to change", p, i+1)
		}
		if e.OldString == "" {
			return nil, editOut{}, fmt.Errorf("edit %s: edit %d: old_string is empty: give the exact text to replace", p, i+1)
		}
		ws[i] = workspace.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll}
	}
	res, err := s.api().Edit(ctx, p, ws, workspace.EditOptions{IfMatch: rec.hash})
	if err != nil {
		return nil, editOut{}, editError(p, err)
	}
	st.remember(p, readRecord{hash: res.Hash})
	out := editOut{Path: p, Replacements: res.Counts, Diff: res.Diff, Hash: res.Hash, Size: res.Size}
	n := 0
	for _, c := range res.Counts {
		n += c
	}
	text := fmt.Sprintf("edited %s: %d replacement(s)\n%s", p, n, res.Diff)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

// editError explains an edit that could not be made.
func editError(p string, err error) error {
	var ee *workspace.EditError
	msg := err.Error()
	switch {
	case errors.Is(err, workspace.ErrConflict):
		return toolError("edit", p, err)
	case errors.As(err, &ee) && ee.Count == 0, errors.Is(err, syscall.EINVAL) && strings.Contains(msg, "not found"):
		return fmt.Errorf("edit %s: old_string was not found in the file: copy it exactly from read's output, without the line-number prefix, or read the file again (%w)", p, err)
	case errors.As(err, &ee) && ee.Count > 1, errors.Is(err, syscall.EINVAL) && strings.Contains(msg, "occurs"):
		return fmt.Errorf("edit %s: old_string is not unique: add surrounding lines until it occurs once, or set replace_all to change every occurrence (%w)", p, err)
	}
	return toolError("edit", p, err)
}
