package mcpserver

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/computerfs/computerfs/workspace"
	"github.com/computerfs/computerfs/wsrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// toolError says what failed and what the agent can do about it, keeping
// the cause (errors.Is still sees the errno or ErrConflict).
func toolError(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var hint string
	var esc *workspace.EscapeError
	switch {
	case errors.Is(err, workspace.ErrConflict):
		hint = "the file changed since you read it: read it again, then retry"
	case errors.As(err, &esc):
		hint = "the path leads outside the workspace; paths are workspace paths such as /src/main.go"
	case errors.Is(err, syscall.ENOENT):
		hint = "no such file or directory: check the path (glob and ls find files)"
	case errors.Is(err, syscall.EISDIR):
		hint = "it is a directory: list it with ls"
	case errors.Is(err, syscall.ENOTDIR):
		hint = "a name on the way is not a directory"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		hint = "the workspace is full (its size limit): remove files, or raise the limit (computerfs limit)"
	case errors.Is(err, syscall.EROFS):
		hint = "the workspace is read-only here"
	case errors.Is(err, syscall.EFBIG):
		hint = "the file is too large for this tool: use exec with a command that streams it"
	case errors.Is(err, syscall.ELOOP):
		hint = "too many symlinks on the way"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		hint = "permission denied"
	case unavailable(err):
		hint = "the workspace's daemon does not answer: is it still running (computerfs mount, or serve)? Start it again, or restart this MCP server to open the store itself"
	}
	if hint == "" {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	return fmt.Errorf("%s %s: %s (%w)", op, p, hint, err)
}

// unavailable says the daemon did not answer: a gRPC status error, or
// the plain one wsrpc makes of it.
func unavailable(err error) bool {
	var ce *wsrpc.CallError
	return status.Code(err) == codes.Unavailable || (errors.As(err, &ce) && ce.Code == codes.Unavailable)
}
