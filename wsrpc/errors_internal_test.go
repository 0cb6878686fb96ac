package wsrpc

import (
	"errors"
	iofs "io/fs"
	"syscall"
	"testing"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/computerfs/computerfs/workspace"
)

// TestFromPBError reads Error messages as the server sends them: the
// errno, ErrConflict and ErrJournalPruned must match through errors.Is,
// and a path error only when the message names an operation.
func TestFromPBError(t *testing.T) {
	tests := []struct {
		name    string
		in      *pb.Error
		is      []error
		isNot   []error
		message string
		pathErr bool
		wantNil bool
	}{
		{name: "none", in: nil, wantNil: true},
		{name: "errno with a path", in: &pb.Error{Errno: int32(syscall.ENOENT), Code: "ENOENT", Message: "no such file", Op: "stat", Path: "/a"},
			is: []error{syscall.ENOENT}, isNot: []error{workspace.ErrConflict, fs.ErrJournalPruned}, message: "no such file", pathErr: true},
		{name: "conflict", in: &pb.Error{Errno: int32(syscall.EAGAIN), Code: "CONFLICT", Message: "changed", Op: "edit", Path: "/a"},
			is: []error{workspace.ErrConflict, syscall.EAGAIN}, isNot: []error{fs.ErrJournalPruned}, message: "changed", pathErr: true},
		{name: "pruned, no operation", in: &pb.Error{Code: "PRUNED", Message: "gone"},
			is: []error{fs.ErrJournalPruned, syscall.EIO}, isNot: []error{workspace.ErrConflict}, message: "gone"},
		{name: "no errno, no message", in: &pb.Error{Op: "read", Path: "/b"},
			is: []error{syscall.EIO}, message: syscall.EIO.Error(), pathErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fromPBError(tc.in)
			if tc.wantNil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
			for _, target := range tc.isNot {
				if errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = true", err, target)
				}
			}
			var pe *iofs.PathError
			if got := errors.As(err, &pe); got != tc.pathErr {
				t.Errorf("a path error: %v, want %v", got, tc.pathErr)
			}
			var re *RemoteError
			if !errors.As(err, &re) || re.Message != tc.message {
				t.Errorf("remote error %+v, want message %q", re, tc.message)
			}
		})
	}
}
