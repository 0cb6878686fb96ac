package workspace

import (
	"context"
	"io"
)

// API is the file API as its callers see it, whether it runs here (WS) or
// in a daemon across a socket (wsrpc.Client). Semantics are WS's.
type API interface {
	Stat(ctx context.Context, p string) (FileInfo, error)
	Lstat(ctx context.Context, p string) (FileInfo, error)
	Read(ctx context.Context, p string, opt ReadOptions) (FileReader, error)
	Write(ctx context.Context, p string, r io.Reader, opt WriteOptions) (WriteResult, error)
	Edit(ctx context.Context, p string, edits []Edit, opt EditOptions) (EditResult, error)
	List(ctx context.Context, p string, opt ListOptions) (ListResult, error)
	Mkdir(ctx context.Context, p string, opt MkdirOptions) (FileInfo, error)
	Remove(ctx context.Context, p string, opt RemoveOptions) (int, error)
	Rename(ctx context.Context, src, dst string, opt RenameOptions) error
	Copy(ctx context.Context, src, dst string, opt CopyOptions) (int, error)
	Symlink(ctx context.Context, target, linkPath string) error
	Readlink(ctx context.Context, p string) (string, error)
	SetAttr(ctx context.Context, p string, opt SetAttrOptions) (FileInfo, error)
	Glob(ctx context.Context, pattern string, opt GlobOptions) (GlobResult, error)
	Grep(ctx context.Context, p string, opt GrepOptions) (GrepResult, error)
	Tree(ctx context.Context, p string, opt TreeOptions) (*TreeNode, error)
	Du(ctx context.Context, p string) (*TreeNode, error)
	Changes(ctx context.Context, since uint64, limit int) (ChangesResult, error)
	WaitChanges(ctx context.Context, since uint64) error
}

var _ API = (*WS)(nil)
