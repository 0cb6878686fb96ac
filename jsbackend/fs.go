package jsbackend

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"sort"
	"syscall"
	"unicode/utf8"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

// fsArgs are the arguments of every file operation the prelude asks for.
type fsArgs struct {
	Path       string   `json:"path"`
	Dest       string   `json:"dest"`
	Data       *string  `json:"data"`
	B64        *string  `json:"b64"`
	Text       bool     `json:"text"`
	Append     bool     `json:"append"`
	Exclusive  bool     `json:"exclusive"`
	Recursive  bool     `json:"recursive"`
	Force      bool     `json:"force"`
	Mode       any      `json:"mode"`
	Size       int64    `json:"size"`
	Pattern    string   `json:"pattern"`
	Regex      bool     `json:"regex"`
	IgnoreCase bool     `json:"ignoreCase"`
	Include    []string `json:"include"`
	Exclude    []string `json:"exclude"`
	Limit      int32    `json:"limit"`
}

// fsReply is what goes back: a value or a node-style error.
type fsReply struct {
	V any      `json:"v,omitempty"`
	E *jsError `json:"e,omitempty"`
}

type jsError struct {
	Code    string `json:"code"`
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message"`
	Syscall string `json:"syscall,omitempty"`
	Path    string `json:"path,omitempty"`
	Dest    string `json:"dest,omitempty"`
}

// syscalls are node's names for our operations, for error messages.
var syscalls = map[string]string{
	"readFile": "open", "writeFile": "open", "mkdir": "mkdir", "readdir": "scandir", "stat": "stat", "lstat": "lstat",
	"rm": "rm", "rmdir": "rmdir", "unlink": "unlink", "rename": "rename", "copy": "copyfile", "symlink": "symlink",
	"readlink": "readlink", "realpath": "realpath", "chmod": "chmod", "truncate": "open", "glob": "glob", "grep": "grep",
}

func (r *run) hostFS(args []any) (any, error) {
	op := argString(args, 0)
	var a fsArgs
	raw := []byte(argString(args, 1))
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("bad arguments to %s: %v", op, err)
	}
	// mode is a number for files, a string for grep.
	v, err := r.fsOp(op, &a, a.Mode)
	var reply fsReply
	if err != nil {
		reply.E = nodeError(op, &a, err)
	} else {
		reply.V = v
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func perm(m any) uint32 {
	switch v := m.(type) {
	case float64:
		return uint32(v) & 0o7777
	}
	return 0
}

func (r *run) fsOp(op string, a *fsArgs, mode any) (any, error) {
	ctx, fs := r.ctx, r.x.FS
	switch op {
	case "readFile":
		data, err := fs.ReadFile(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if a.Text {
			if !utf8.Valid(data) {
				return string([]rune(string(data))), nil
			}
			return string(data), nil
		}
		return base64.StdEncoding.EncodeToString(data), nil
	case "writeFile":
		var data []byte
		switch {
		case a.B64 != nil:
			d, err := base64.StdEncoding.DecodeString(*a.B64)
			if err != nil {
				return nil, err
			}
			data = d
		case a.Data != nil:
			data = []byte(*a.Data)
		}
		_, err := fs.WriteFile(ctx, a.Path, data, pluginapi.WriteOptions{Append: a.Append, Exclusive: a.Exclusive, Perm: perm(mode)})
		return nil, err
	case "mkdir":
		return nil, fs.Mkdir(ctx, a.Path, perm(mode), a.Recursive)
	case "readdir":
		ents, err := fs.List(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		out := make([]map[string]string, len(ents))
		for i, e := range ents {
			out[i] = map[string]string{"name": e.Name, "type": e.Type}
		}
		return out, nil
	case "stat", "lstat":
		var info *pb.FileInfo
		var err error
		if op == "stat" {
			info, err = fs.Stat(ctx, a.Path)
		} else {
			info, err = fs.Lstat(ctx, a.Path)
		}
		if err != nil {
			return nil, err
		}
		return statObject(info), nil
	case "rm":
		err := fs.Remove(ctx, a.Path, a.Recursive)
		if err != nil && a.Force && errors.Is(err, syscall.ENOENT) {
			return nil, nil
		}
		return nil, err
	case "rmdir":
		info, err := fs.Lstat(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if info.Type != "dir" {
			return nil, syscall.ENOTDIR
		}
		return nil, fs.Remove(ctx, a.Path, a.Recursive)
	case "unlink":
		info, err := fs.Lstat(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if info.Type == "dir" {
			return nil, syscall.EISDIR
		}
		return nil, fs.Remove(ctx, a.Path, false)
	case "rename":
		return nil, fs.Rename(ctx, a.Path, a.Dest)
	case "copy":
		return nil, fs.Copy(ctx, a.Path, a.Dest, a.Recursive)
	case "symlink":
		return nil, fs.Symlink(ctx, a.Dest, a.Path)
	case "readlink":
		return fs.Readlink(ctx, a.Path)
	case "realpath":
		// Resolve symlinks one component at a time through the host.
		info, err := fs.Stat(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if info.Path != "" {
			return info.Path, nil
		}
		return fs.Abs(a.Path), nil
	case "chmod":
		p := perm(mode)
		_, err := fs.SetAttr(ctx, a.Path, &pb.SetAttrRequest{Perm: &p})
		return nil, err
	case "truncate":
		size := a.Size
		_, err := fs.SetAttr(ctx, a.Path, &pb.SetAttrRequest{Size: &size})
		return nil, err
	case "glob":
		paths, err := fs.Glob(ctx, a.Pattern)
		if paths == nil {
			paths = []string{}
		}
		return paths, err
	case "grep":
		gm, _ := mode.(string)
		req := &pb.GrepRequest{Path: a.Path, Pattern: a.Pattern, Regex: a.Regex, IgnoreCase: a.IgnoreCase,
			Include: a.Include, Exclude: a.Exclude, Mode: gm, Limit: a.Limit}
		var lines []map[string]any
		var files []map[string]any
		for {
			resp, err := fs.Grep(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, l := range resp.Lines {
				m := map[string]any{"path": l.Path, "line": l.Line, "text": l.Text}
				if l.Context {
					m["context"] = true
				}
				lines = append(lines, m)
			}
			for _, f := range resp.Files {
				files = append(files, map[string]any{"path": f.Path, "count": f.Count})
			}
			if resp.Next == 0 || a.Limit > 0 {
				break
			}
			req.Offset = resp.Next
		}
		if gm == "files" || gm == "count" {
			if files == nil {
				files = []map[string]any{}
			}
			return files, nil
		}
		if lines == nil {
			lines = []map[string]any{}
		}
		return lines, nil
	}
	return nil, fmt.Errorf("unknown file operation %q", op)
}

// typeBits are the S_IF* bits of a file type.
var typeBits = map[string]uint32{
	"file": 0o100000, "dir": 0o040000, "symlink": 0o120000, "fifo": 0o010000, "socket": 0o140000, "char": 0o020000, "block": 0o060000,
}

func statObject(i *pb.FileInfo) map[string]any {
	return map[string]any{
		"size": i.Size, "mode": i.Mode | typeBits[i.Type], "mtimeMs": float64(i.MtimeNs) / 1e6,
		"ino": i.Ino, "nlink": i.Nlink, "uid": i.Uid, "gid": i.Gid, "dev": 0, "blksize": 4096, "blocks": (i.Size + 511) / 512,
	}
}

// nodeError makes err look like node's: "ENOENT: no such file or
// directory, open '/a'" with code, errno, syscall and path.
func nodeError(op string, a *fsArgs, err error) *jsError {
	e := &jsError{Code: "EIO", Syscall: syscalls[op], Path: a.Path}
	if op == "glob" || op == "grep" {
		e.Path = ""
	}
	var errno syscall.Errno
	var fe *pluginapi.FSError
	var pe *iofs.PathError
	msg := err.Error()
	switch {
	case errors.As(err, &fe):
		errno = fe.Errno
		if fe.Code != "" {
			e.Code = fe.Code
		}
		msg = fe.Message
	case errors.As(err, &errno):
		msg = errno.Error()
	case errors.As(err, &pe):
		msg = pe.Err.Error()
	}
	if errno != 0 {
		e.Errno = int(errno)
		if name := errnoName(errno); name != "" && (fe == nil || fe.Code == "") {
			e.Code = name
		}
	}
	e.Message = e.Code + ": " + msg + ", " + e.Syscall
	if e.Path != "" {
		e.Message += " '" + e.Path + "'"
	}
	if a.Dest != "" && (op == "rename" || op == "copy" || op == "symlink") {
		e.Dest = a.Dest
		e.Message += " -> '" + a.Dest + "'"
	}
	return e
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENOTDIR:
		return "ENOTDIR"
	case syscall.EISDIR:
		return "EISDIR"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOTEMPTY:
		return "ENOTEMPTY"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EROFS:
		return "EROFS"
	case syscall.ELOOP:
		return "ELOOP"
	case syscall.ENAMETOOLONG:
		return "ENAMETOOLONG"
	case syscall.EXDEV:
		return "EXDEV"
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EIO:
		return "EIO"
	}
	return ""
}
